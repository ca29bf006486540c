# KTAP output helpers for zcnet's in-guest suites (sourced).
#   t_ok NAME | t_fail NAME REASON | t_skip NAME REASON
#   t_run NAME CMD...        ok when CMD exits 0 (its output is shown as diagnostics)
#   t_done                   prints the plan and exits 1 if anything failed
KTAP_N=0 KTAP_FAILED=0
echo "KTAP version 1"
_ktap_diag() { sed 's/^/# /'; }
# Where a suite's time goes: a "# +N s" line before a result that took 5 s
# or more since the one before (SECONDS counts from the suite's start).
# Every result's own time (since the result before, in ms) is kept too and
# written to $ZCNET_ARTIFACTS/ktap-times by t_done ("ms number name" lines).
_KTAP_T=$SECONDS _KTAP_US=${EPOCHREALTIME/./} _KTAP_TIMES=
_ktap_time() {
  [ $((SECONDS - _KTAP_T)) -ge 5 ] && echo "# +$((SECONDS - _KTAP_T)) s (t=${SECONDS} s)"
  _KTAP_T=$SECONDS
  local us=${EPOCHREALTIME/./}
  _KTAP_TIMES+="$(((us - _KTAP_US) / 1000)) $((KTAP_N + 1)) $1"$'\n'
  _KTAP_US=$us
}
t_ok() { _ktap_time "$1"; KTAP_N=$((KTAP_N + 1)); echo "ok $KTAP_N $1"; }
t_fail() { _ktap_time "$1"; KTAP_N=$((KTAP_N + 1)); KTAP_FAILED=$((KTAP_FAILED + 1)); echo "not ok $KTAP_N $1${2:+ # $2}"; }
t_skip() { _ktap_time "$1"; KTAP_N=$((KTAP_N + 1)); echo "ok $KTAP_N $1 # SKIP ${2:-}"; }
t_run() {
  local name=$1 out rc; shift
  out=$("$@" 2>&1); rc=$?
  [ $rc != 0 ] && [ -n "$out" ] && printf '%s\n' "$out" | tail -n 20 | _ktap_diag
  if [ $rc = 0 ]; then t_ok "$name"; else t_fail "$name" "exit $rc"; fi
}
# t_report FILE: a program's "ok NAME" and "not ok NAME # WHY" lines as KTAP
# results, its other lines as diagnostics.
t_report() {
  local line l
  while IFS= read -r line; do
    case "$line" in
      "ok "*) t_ok "${line#ok }" ;;
      "not ok "*) l=${line#not ok }; t_fail "${l%% # *}" "${l#* # }" ;;
      *) echo "# ${line#\# }" ;;
    esac
  done < "$1"
}
# t_expect NAME WANT GOT: ok when the two strings are equal.
t_expect() {
  if [ "$2" = "$3" ]; then t_ok "$1"; else t_fail "$1" "wanted '$2', got '$3'"; fi
}
t_done() {
  [ -n "${ZCNET_ARTIFACTS:-}" ] && mkdir -p "$ZCNET_ARTIFACTS" && printf '%s' "$_KTAP_TIMES" >> "$ZCNET_ARTIFACTS/ktap-times"
  echo "# done at t=${SECONDS} s"
  echo "1..$KTAP_N"
  echo "# $((KTAP_N - KTAP_FAILED)) passed, $KTAP_FAILED failed"
  [ $KTAP_FAILED = 0 ]
}
# ko NAME: path of a zcnet module built in this checkout.
ko() {
  case "$1" in
    zcfrag) echo "$ZCNET_ROOT/drivers/net/zcfrag/zcfrag.ko" ;;
    zcsock) echo "$ZCNET_ROOT/net/zcsock/zcsock.ko" ;;
    zcddp) echo "$ZCNET_ROOT/net/ddp/zcddp.ko" ;;
    *) echo "$ZCNET_ROOT/tools/testing/zcnet/modules/$1.ko" ;;
  esac
}
# counter MODULE NAME: a counter's value from debugfs.
counter() { awk -v n="$2" '$1 == n { print $2 }' "/sys/kernel/debug/$1/counters"; }
# seeded_bytes SEED COUNT: COUNT deterministic pseudo-random bytes on stdout
# (zcseeded.c, built into tools/target/release by build-test-progs.sh).
seeded_bytes() { zcseeded "$1" "$2"; }
# kmemleak_clean NAME: on a kernel with kmemleak (the debug flavour), scans
# twice (a leak must survive two scans to be reported) and is ok only when
# nothing is reported; required there, a SKIP on kernels without it.
kmemleak_clean() {
  local f=/sys/kernel/debug/kmemleak leaks
  if [ ! -w "$f" ]; then
    if [ "${ZCNET_FLAVOUR:-default}" = debug ]; then t_fail "$1" "no kmemleak on the debug kernel"; else t_skip "$1" "no kmemleak on this kernel (ZCNET_FLAVOUR=debug has it)"; fi
    return
  fi
  echo scan > "$f"; echo scan > "$f"
  leaks=$(grep -c '^unreferenced object' "$f")
  [ "$leaks" = 0 ] || head -n 40 "$f" | _ktap_diag
  t_expect "$1" 0 "$leaks"
}
