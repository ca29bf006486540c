#!/bin/bash
# bench-ddp-ab.sh: small-message latency of zcddp module builds side by
# side, and of siw, by hand (Documentation/notes/2026-12-08-zcddp-history.md, "Small
# Writes: where the time went"):
#
#   scripts/run-guest.sh --topo veth --timeout 1800 --log out/ab.log \
#     tools/testing/zcnet/bench-ddp-ab.sh [ITERS=2000] [ROUNDS=7] \
#     [SIZES=4,64,1024] [OPS=write] BUILD ...
#
# BUILD: a zcddp.ko, or FILE@syscall to have zcbench take completions and
# post receives by system calls where the build has rings, FILE@rqsyscall
# to post receives by system call beside the completion ring (each loaded
# in turn, zcbench ddp --lat-ops OPS
# --lat-sizes SIZES --iters ITERS against zcbench ddp-serve), or "siw"
# (ib_write_lat and ib_send_lat on a veth pair of soft-iWARP devices,
# t_typical; Write and Send). ROUNDS rounds of every build in turn; one line per round, build,
# operation and size, then the medians over the rounds and their ratios to
# the first build. Builds made from other commits must have the running
# kernel's vermagic (scripts/build-modules.sh on the same cached kernel).
#
# MARK=1 counts instructions instead of timing (the guest booted with
# ZCNET_INSN_DIR: scripts/run-guest.sh, tools/qemu-plugin/zcinsn.c): round
# R runs R * ITERS iterations, each run between a zcmark reset and a zcmark
# dump, and the guest's /proc/kallsyms at each dump goes to the artifacts;
# scripts/insn-report.py then gives the instructions per iteration of
# every build, by function, from the last two rounds (so give three: the
# first translates and warms what the others run), for one size and one
# operation.
. "$ZCNET_ROOT/scripts/topology.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
B=$ZC_IP_B
ITERS=2000 ROUNDS=7 SIZES=4,64,1024 OPS=write MARK=0
builds=()
for a in "$@"; do
  case $a in
    ITERS=* | ROUNDS=* | SIZES=* | OPS=* | MARK=*) declare "$a" ;;
    *) builds+=("$a") ;;
  esac
done
[ ${#builds[@]} -gt 0 ] || { echo "bench-ddp-ab: name zcddp.ko builds (or siw)"; exit 2; }
echo "# kernel $(uname -r), $(nproc) CPUs, $(grep -q hypervisor /proc/cpuinfo && echo guest)," \
  "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)," \
  "$ITERS iterations, $ROUNDS rounds: ${builds[*]}"
PB=198.18.1.2
base_iters=$ITERS
siw_up() {
  modprobe -a siw rdma_ucm &&
    ip link add pa index 31 netns a type veth peer name pb index 32 netns b &&
    ip -n a link set pa up && ip -n a addr add 198.18.1.1/24 dev pa &&
    ip -n b link set pb up && ip -n b addr add "$PB/24" dev pb &&
    ip netns exec a rdma link add siwpa type siw netdev pa &&
    ip netns exec b rdma link add siwpb type siw netdev pb
}
# siw_lat ROUND SIZE OP: one ib_write_lat (OP write) or ib_send_lat (OP
# send) run's line (perftest's server is ready when it says it waits: an
# rdma_cm listen is no socket ss shows).
siw_lat() {
  local ps i t=ib_${3}_lat
  rm -f /tmp/ab-s.log
  ip netns exec b timeout 120 "$t" -d siwpb -R -p 18515 -s "$2" -n "$ITERS" > /tmp/ab-s.log 2>&1 &
  ps=$!
  for i in $(seq 200); do grep -q "Waiting for client" /tmp/ab-s.log && break; sleep 0.05; done
  ip netns exec a timeout 120 "$t" -d siwpa -R -p 18515 -s "$2" -n "$ITERS" "$PB" > /tmp/ab-c.log 2>&1
  wait $ps
  awk -v s="$2" -v r="$1" -v o="$3" -v t="$t" '$1 == s && $2 ~ /^[0-9]+$/ { print "R", r, "siw", o, s, $5, $6; f = 1; exit }
    END { if (!f) print "# round " r ": " t " " s " failed" }' /tmp/ab-c.log
}
for b in "${builds[@]}"; do
  if [ "$b" = siw ]; then siw_up || { echo "# no siw"; exit 1; }; fi
done
for r in $(seq "$ROUNDS"); do
  [ "$MARK" = 1 ] && ITERS=$((base_iters * r))
  for b in "${builds[@]}"; do
    if [ "$b" = siw ]; then
      for o in ${OPS//,/ }; do
        case $o in write | send) for s in ${SIZES//,/ }; do
          insn_mark reset
          siw_lat "$r" "$s" "$o"
          insn_mark dump
          insn_mark name "siw $o $s" "$ITERS"
        done ;; esac
      done
      continue
    fi
    # FILE@syscall: completions and receives by system calls even where
    # the build has rings (zcbench's ZCBENCH_CQ); FILE@rqsyscall: receives
    # (ZCBENCH_RQ).
    ko=${b%@*} cq=ring rq=ring
    case ${b#"$ko"} in @syscall) cq=syscall ;; @rqsyscall) rq=syscall ;; esac
    # The same module file as before stays loaded (a reload costs TCG a
    # fresh translation of its code).
    if [ "$ko" != "${loaded:-}" ]; then
      rmmod zcddp 2>/dev/null
      insmod "$ko" || { echo "# insmod $ko failed"; exit 1; }
      loaded=$ko
    fi
    ZCBENCH_CQ=$cq ZCBENCH_RQ=$rq ip netns exec b zcbench ddp-serve --listen "$B:5304" > /tmp/ab-serve.log 2>&1 &
    ps=$!
    listening b 5304
    insn_mark reset
    ZCBENCH_CQ=$cq ZCBENCH_RQ=$rq ip netns exec a timeout 300 zcbench ddp --connect "$B:5304" --lat-ops "$OPS" \
      --lat-sizes "$SIZES" --bw-sizes none --iters "$ITERS" > /tmp/ab-z.log 2>&1 ||
      sed 's/^/# zcbench: /' /tmp/ab-z.log
    insn_mark dump
    insn_mark name "$(basename "$b") $OPS $SIZES" "$ITERS"
    grep -m1 "^zcbench ddp" /tmp/ab-z.log | sed "s/^/# $(basename "$b"): /"
    awk -v r="$r" -v b="$(basename "$b")" '$1 == "send" || $1 == "write" || $1 == "read" {
      print "R", r, b, $1, $2, $3, $4 }' /tmp/ab-z.log
    kill $ps 2>/dev/null
    wait $ps 2>/dev/null
  done
done | tee /tmp/ab.txt
python3 - /tmp/ab.txt <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
builds = []
for l in open(sys.argv[1]):
    if not l.startswith("R "):
        continue
    _, _, b, op, size, med, _ = l.split()
    d[(op, int(size), b)].append(float(med))
    if b not in builds:
        builds.append(b)
print("# medians of the rounds' medians, us; then ratios to " + builds[0])
print("op size " + " ".join(builds))
for op, size in sorted({(op, size) for op, size, _ in d}):
    m = [statistics.median(d[(op, size, b)]) if d[(op, size, b)] else None for b in builds]
    cells = ["--" if x is None else "%.2f" % x for x in m]
    ratios = ["--" if x is None or not m[0] else "%.3f" % (x / m[0]) for x in m]
    print(op, size, " ".join(cells), " ".join(ratios))
PY
