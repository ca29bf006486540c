#!/bin/bash
# The zcsock benchmark (issue 9), in one guest run: six ways of moving a TCP
# stream from namespace a to namespace b,
#   plain            zcbench, plain TCP (copies on both ends)
#   tcp_mmap         the kernel's selftest, unmodified: TCP_ZEROCOPY_RECEIVE
#                    (-z on both ends: MSG_ZEROCOPY send, mmap() receive)
#   msg_zerocopy     the kernel's selftest, unmodified: MSG_ZEROCOPY send
#   zcsock-region    zcbench --zcsock region: regions on both ends
#   zcsock-region-read  the same, the receiver reading every page it got
#   zcsock-ordinary  zcbench --zcsock ordinary: zcsock on, heap buffers
# over two paths:
#   veth4148         the veth pair at MTU 4148 (one page of payload a segment)
#   zcfrag           zcfrag (MTU 4148) on both ends over the veth pair at 1500
# zcbench's receiver checks the tags of every CHECK_EVERY-th page of each
# write (a different one each write, so every position is checked): a page
# remapped into a region is mapped only when the program touches it, and that
# fault is the receiving program's cost, not the stream's; tcp_mmap does not
# touch its data at all. zcsock-region-read checks every page, so it pays one
# fault per remapped page: what a program that reads all of its data pays.
# Each mode runs REPEAT times (round robin, so drift hits every mode alike); then
# bench-summary.py --by-mode prints medians and ratios against plain TCP of
# the same path. JSON, logs and the summary go to $ZCNET_ARTIFACTS.
#
#   bench-zcsock.sh [ZCBENCH_SECONDS=3] [ZCBENCH_REPEAT=3] [ZCBENCH_WRITE=512K]
#                   [ZCBENCH_CHECK_EVERY=64] [MODES="plain zcsock-region ..."]
#                   [PATHS="veth4148 zcfrag"] [MARK=1]
# (the ZCBENCH_ ones also taken from the environment; make bench-zcsock
# passes them on). MODES and PATHS pick some of the modes and paths (all by
# default). MARK=1 counts guest instructions instead of timing, which the
# host's speed does not move (the guest booted with ZCNET_INSN_DIR, as for
# bench-native.sh): run R of a mode streams for R * ZCBENCH_SECONDS between
# a zcmark reset and a zcmark dump, and scripts/insn-report.py --per 4096
# LOG gives the instructions per page received on all CPUs, by function,
# from the last two runs of each mode (use ZCBENCH_REPEAT=2 or more).
# The baselines come from scripts/build-baselines.sh (make baselines).
set -u
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
for a in "$@"; do
  case "$a" in
    "") ;; # run-guest.sh passes one empty argument when it has none
    ZCBENCH_SECONDS=*|ZCBENCH_REPEAT=*|ZCBENCH_WRITE=*|ZCBENCH_CHECK_EVERY=*) export "${a?}" ;;
    MODES=*|PATHS=*|MARK=*) declare "$a" ;;
    *) echo "bench-zcsock: unknown argument $a"; exit 2 ;;
  esac
done
SECS=${ZCBENCH_SECONDS:-3}
REPEAT=${ZCBENCH_REPEAT:-3}
WRITE=${ZCBENCH_WRITE:-512K}
CHECK_EVERY=${ZCBENCH_CHECK_EVERY:-64}
MODES=${MODES:-plain tcp_mmap msg_zerocopy zcsock-region zcsock-region-read zcsock-ordinary}
PATHS=${PATHS:-veth4148 zcfrag} MARK=${MARK:-0}
BIN=$ZCNET_ROOT/out/baselines
out=${ZCNET_ARTIFACTS:-/tmp}
mkdir -p "$out"
Z="$ZCNET_ROOT/tools/testing/zcnet"
for p in tcp_mmap msg_zerocopy; do
  [ -x "$BIN/$p" ] || { echo "bench-zcsock: no $BIN/$p: run 'make baselines' on the host"; exit 1; }
done
insmod "$ZCNET_ROOT/net/zcsock/zcsock.ko" || exit 1

# wanted LABEL: whether MODES and PATHS ask for the mode and path of LABEL.
wanted() {
  case " $PATHS " in *" ${1%%/*} "*) ;; *) return 1 ;; esac
  case " $MODES " in *" ${1#*/} "*) return 0 ;; esac
  return 1
}
# secs RUN: the run's length (MARK=1: RUN times as long, so that the
# difference of the last two runs leaves the start-up out).
secs() { if [ "$MARK" = 1 ]; then echo $((SECS * $1)); else echo "$SECS"; fi; }
# counted LABEL JSON: with MARK=1, dump the counts of the run just ended and
# name them with the bytes it moved.
counted() {
  [ "$MARK" = 1 ] || return 0
  insn_mark dump || return 1
  insn_mark name "${1//\//-} stream $WRITE" "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["bandwidth"][0]["bytes"])' "$2")"
}
# zcb LABEL DST RUN [ARGS...]: one zcbench stream run.
zcb() {
  local label=$1 dst=$2 run=$3; shift 3
  wanted "$label" || return 0
  local json=$out/${label//\//-}-$run.json
  ip netns exec b zcbench serve --listen "$dst:5301" &
  local srv=$!
  insn_mark reset
  ip netns exec a zcbench tcp --connect "$dst:5301" --label "$label" --lat-sizes none \
    --bw-sizes "$WRITE" --seconds "$(secs "$run")" --check-every "$CHECK_EVERY" --json "$json" "$@" ||
    { kill $srv; return 1; }
  wait $srv
  counted "$label" "$json"
}
# base TEST LABEL DST SRC RUN: one run of a kernel selftest.
base() {
  wanted "$2" || return 0
  local json=$out/${2//\//-}-$5.json
  insn_mark reset
  python3 "$Z/bench-baseline.py" "$1" --bin "$BIN" --dst "$3" --src "$4" --seconds "$(secs "$5")" \
    --port $((8700 + RANDOM % 200)) --label "$2" --json "$json" &&
    counted "$2" "$json"
}
# path NAME DST SRC: every mode REPEAT times over one path.
path() {
  local r
  for r in $(seq "$REPEAT"); do
    echo "== $1, run $r of $REPEAT"
    zcb "$1/plain" "$2" "$r" &&
      base tcp_mmap "$1/tcp_mmap" "$2" "$3" "$r" &&
      base msg_zerocopy "$1/msg_zerocopy" "$2" "$3" "$r" &&
      zcb "$1/zcsock-region" "$2" "$r" --zcsock region &&
      zcb "$1/zcsock-region-read" "$2" "$r" --zcsock region --check-every 1 &&
      zcb "$1/zcsock-ordinary" "$2" "$r" --zcsock ordinary || return 1
  done
}

echo "bench-zcsock: $(uname -r), $(nproc) CPUs, accel ${ZCNET_ACCEL:-unknown}, topology $ZCNET_TOPO, $REPEAT runs per mode of $SECS s, zcbench writes of $WRITE checking every ${CHECK_EVERY}th page"
# (a) veth at MTU 4148.
ip -n a link set va mtu 4148 && ip -n b link set vb mtu 4148 || exit 1
path veth4148 "$ZC_IP_B" "$ZC_IP_A" || exit 1
if [[ " $PATHS " == *" zcfrag "* ]]; then
  # (b) zcfrag (MTU 4148) on both ends over the same devices at MTU 1500.
  ip -n a link set va mtu 1500 && ip -n b link set vb mtu 1500 || exit 1
  zcfrag_up || exit 1
  p0=$(zs zc_potential) s0=$(zs zc_successful) f0=$(zs zc_full_pages)
  path zcfrag 198.19.0.2 198.19.0.1 || exit 1
  p=$(( $(zs zc_potential) - p0 )) s=$(( $(zs zc_successful) - s0 )) f=$(( $(zs zc_full_pages) - f0 ))
  echo "zcfrag speculation (receiver zf1, every zcfrag run): $s of $p trains delivered as page packets, $f full pages" |
    tee "$out/speculation.txt"
fi
ip netns exec a zcctl sock | sed 's/^/# sender namespace: /'
ip netns exec b zcctl sock | sed 's/^/# receiver namespace: /'
python3 "$Z/bench-summary.py" --by-mode "$out"/*.json | tee "$out/summary.txt"
