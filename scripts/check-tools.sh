#!/usr/bin/env bash
# make check's host step tools-cli: the tools' command lines, without the
# modules. For every binary of tools/ (cargo metadata): --help exits 0 and
# names the options the suites and scripts use, --version prints NAME
# VERSION, a bad argument exits 2 with a message, its man page is written;
# a module that is not loaded is named with a hint; zcctl --json (each view,
# on fake sysfs, debugfs and proc trees) and zcbench -J / --json FILE (a
# loopback run, a label with control characters) parse as JSON.
#   usage: check-tools.sh [BINDIR]   (default tools/target/release)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
BIN=${1:-$ZCNET_ROOT/tools/target/release}
MAN=$ZCNET_ROOT/tools/target/man
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
bad=0
ok() { echo "ok: $*"; }
no() { echo "FAILED: $*"; bad=1; }

# The options each tool's callers use (tools/testing/zcnet, scripts,
# Documentation): each must be in its --help.
declare -A OPTS=(
  [zcctl]="--json status frag admit release query counters sock ddp"
  [zcbench]="serve tcp ddp-serve ddp"
  [zcbench tcp]="--connect --json -J --label --zcsock --lat-sizes --bw-sizes --iters --seconds --check-every"
  [zcbench ddp]="--connect --json -J --label --crc --lat-sizes --lat-ops --bw-sizes --iters --seconds"
  [zcbench serve]="--listen"
  [zcbench ddp-serve]="--listen --markers"
  [zcddp-mpa]="-s -c -a -p --crc --crc-strict --markers --no-markers --p2p --rev --ird --ord --pd --timeout --hold --no-startup --serve"
  [zcddp-ping]="-s -c -a -p -C -S -V -v --crc --markers"
  [zcddp-copy]="-s -c -a -p -o -v --crc --markers --no-ooo --watch FILE"
  [zcddp-poll]="-s -c -a -p --idle-ms --hold-ms --max-read-ms"
  [zcddp-verbs]="-s -c -a -p -S -r -C --sge --crc --no-remote-inv --watch --wait -L -B --syscall"
)

# Every [[bin]] of the workspace.
bins=$(cd "$ZCNET_ROOT/tools" && cargo metadata --format-version 1 --no-deps --offline 2>/dev/null |
  python3 -c 'import json, sys; print(" ".join(t["name"] for p in json.load(sys.stdin)["packages"] for t in p["targets"] if "bin" in t["kind"]))')
[ -n "$bins" ] || { no "cargo metadata listed no binary"; exit 1; }
for b in $bins; do
  x=$BIN/$b
  [ -x "$x" ] || { no "$b: $x is not built"; continue; }
  out=$("$x" --help 2>&1); rc=$?
  [ $rc = 0 ] && grep -q '^Usage: ' <<<"$out" && ok "$b --help" || no "$b --help: exit $rc: $(head -n 3 <<<"$out")"
  for k in "$b" "$b serve" "$b tcp" "$b ddp" "$b ddp-serve"; do
    [ -n "${OPTS[$k]:-}" ] || continue
    # shellcheck disable=SC2086
    h=$("$x" ${k#"$b"} --help 2>&1)
    for o in ${OPTS[$k]}; do
      grep -qE -- "(^|[ ,\[<])$o([ ,>]|$)" <<<"$h" || no "$k --help does not name $o"
    done
  done
  out=$("$x" --version 2>&1); rc=$?
  [ $rc = 0 ] && [[ "$out" =~ ^$b\ [0-9]+\.[0-9]+ ]] && ok "$b --version: $out" || no "$b --version: exit $rc: $out"
  out=$("$x" --no-such-option 2>&1 </dev/null); rc=$?
  [ $rc = 2 ] && grep -q "no-such-option" <<<"$out" && ok "$b --no-such-option: exit 2" || no "$b --no-such-option: exit $rc (wanted 2): $out"
  case $b in zcman) ;; *) [ -s "$MAN/$b.1" ] && ok "$b.1" || no "no man page $MAN/$b.1" ;; esac
done
# Values out of range exit 2 too.
for c in "zcbench tcp --connect x --iters 0" "zcddp-ping -a x -S 8" "zcddp-verbs -a x --wait 0" "zcctl sock notapid" "zcctl admit zf0 198.18.0.2 sctp"; do
  # shellcheck disable=SC2086
  out=$("$BIN"/$c 2>&1); rc=$?
  [ $rc = 2 ] && ok "$c: exit 2" || no "$c: exit $rc (wanted 2): $out"
done

# json CMD...: CMD's stdout parses as JSON (python3 -m json.tool); exit 0.
json() {
  local out rc
  out=$("$@" 2>"$T/err"); rc=$?
  if [ $rc = 0 ] && python3 -m json.tool <<<"$out" > /dev/null; then ok "JSON: ${*##*/}"; else no "JSON: $*: exit $rc: $out $(cat "$T/err")"; fi
  printf '%s' "$out" > "$T/last.json"
}
# Fake trees: zcfrag live, zcsock's debugfs counters, zcsock's and zcddp's
# /proc/net files (a connection with a registration).
mkdir -p "$T/sys/module/zcfrag" "$T/dbg/zcsock" "$T/proc/net" "$T/empty/net"
echo live > "$T/sys/module/zcfrag/initstate"; echo 2 > "$T/sys/module/zcfrag/refcnt"
printf 'ulp_init_calls 3\nulp_init_refused 1\n' > "$T/dbg/zcsock/counters"
printf 'ZcsockTxPagesByRef 5\nZcsockCurrSockets 1\n' > "$T/proc/net/zcsock_stat"
printf '# local remote role\n198.18.0.1:4000 198.18.0.2:7174 initiator rev=2 error=0 sq=1/16\n\tmr stag=0x00001234 addr=0x1000 len=65536 access=l-- pages=16\n' > "$T/proc/net/zcddp_conns"
printf 'ZcddpCurrSockets 1\nZcddpPinnedPages 16\n' > "$T/proc/net/zcddp_stat"
export ZCCTL_SYSFS=$T/sys ZCCTL_DEBUGFS=$T/dbg ZCCTL_PROC=$T/proc
json "$BIN/zcctl" --json
python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["modules"]; assert m[0]["state"] == "live" and m[0]["refs"] == 2, m' "$T/last.json" || no "zcctl --json: zcfrag live, 2 references"
json "$BIN/zcctl" --json status
json "$BIN/zcctl" counters --json
json "$BIN/zcctl" -j counters zcsock
json "$BIN/zcctl" --json sock
json "$BIN/zcctl" --json ddp
python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["connections"][0]; assert c["role"] == "initiator" and c["registrations"][0]["len"] == 65536, c' "$T/last.json" || no "zcctl --json ddp: the connection and its registration"
json "$BIN/zcctl" --json frag
# A process without zcsock sockets: exit 1, and still a JSON document.
out=$(ZCCTL_PROC=/proc "$BIN/zcctl" --json sock $$ 2>/dev/null); rc=$?
[ $rc = 1 ] && python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["sockets"] == [], d' <<<"$out" &&
  ok "zcctl --json sock PID (no zcsock socket): exit 1, JSON" || no "zcctl --json sock PID: exit $rc: $out"
# Modules not loaded: named, with the hint, exit 1.
for v in sock ddp; do
  out=$(ZCCTL_PROC=$T/empty "$BIN/zcctl" $v 2>&1); rc=$?
  [ $rc = 1 ] && grep -q "not loaded.*modprobe" <<<"$out" && ok "zcctl $v without the module: $out" || no "zcctl $v without the module: exit $rc: $out"
done
out=$(ZCCTL_DEBUGFS=$T/empty "$BIN/zcctl" counters zcddp 2>&1); rc=$?
[ $rc = 1 ] && grep -q "modprobe zcddp" <<<"$out" && ok "zcctl counters without the module" || no "zcctl counters without the module: exit $rc: $out"
unset ZCCTL_SYSFS ZCCTL_DEBUGFS ZCCTL_PROC

# zcbench over loopback (plain TCP), a label with control characters; -J
# on stdout, --json to a file, both parsed, the label as given.
label=$(printf 'ctl\001\033[0m"q\\\tend')
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
p=$(port)
"$BIN/zcbench" serve --listen "127.0.0.1:$p" 2>/dev/null & srv=$!
json timeout 120 "$BIN/zcbench" tcp --connect "127.0.0.1:$p" -J --json "$T/bench.json" --label "$label" --lat-sizes 4,64 --bw-sizes 64K --iters 20 --seconds 0.05
# (A client that failed leaves the server waiting.)
kill $srv 2>/dev/null; wait $srv 2>/dev/null
python3 - "$T/last.json" "$T/bench.json" "$label" <<'EOF' && ok "zcbench -J and --json FILE: the label round-trips" || no "zcbench -J / --json: label or layout"
import json, sys
for f in sys.argv[1:3]:
    d = json.load(open(f))
    assert d["label"] == sys.argv[3], d["label"]
    assert d["test"] == "tcp" and len(d["latency"]) == 2 and d["bandwidth"][0]["write"] == 65536, d
EOF

# zcddp's tools and zcbench ddp on a host without zcddp: the attach fails
# with the hint (a TCP listener takes the connection).
if [ ! -e /proc/net/zcddp_stat ]; then
  for c in "zcddp-copy -c -a 127.0.0.1 -p PORT /etc/hostname" "zcddp-mpa -c -a 127.0.0.1 -p PORT" "zcbench ddp --connect 127.0.0.1:PORT"; do
    p=$(port)
    python3 -c 'import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); s.settimeout(30); c = s.accept()[0]; c.recv(1)' "$p" & l=$!
    # shellcheck disable=SC2086
    out=$(timeout 60 "$BIN"/${c//PORT/$p} 2>&1); rc=$?
    kill $l 2>/dev/null; wait $l 2>/dev/null
    [ $rc != 0 ] && grep -q "zcddp is not loaded.*modprobe zcddp" <<<"$out" && ok "${c%% *} without zcddp: exit $rc, the hint" || no "${c%% *} without zcddp: exit $rc: $out"
  done
fi
[ $bad = 0 ] && echo "check-tools: all passed" || echo "check-tools: FAILED"
exit $bad
