#!/bin/bash
# bench-ddp-modes.sh: zcddp to zcddp on veth with the module's settings
# side by side, by hand (Documentation/notes/2026-12-08-zcddp-history.md, "On veth, side
# by side" and "Receiving in softirq, measured"):
#
#   scripts/run-guest.sh --topo veth --timeout 1500 --log out/modes.log \
#     tools/testing/zcnet/bench-ddp-modes.sh [MODE ...]
#
# Arguments LAT=, BW=, ITERS=, SECS= and ROUNDS= set those (below). MODE:
# module parameters joined by commas ("zctx=0,rxdirect=1"; "-" for the
# defaults); by default the zero-copy transmit and direct placement
# pairs (zctx 2, 1, 0 with rxdirect 1, then 0). ROUNDS rounds (3) of every
# mode in turn, zcddp reloaded with its parameters, zcbench ddp (LAT sizes
# for Send, Write and Read latency, ITERS iterations; BW sizes for Write
# bandwidth, SECS seconds each; CRC off); one line per round and mode, then
# the medians over the rounds per mode and their ratios to the first mode.
. "$ZCNET_ROOT/scripts/topology.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
B=$ZC_IP_B
LAT=none BW=65536,1048576 ITERS=200 SECS=2 ROUNDS=3
modes=()
for a in "$@"; do
  case $a in
    LAT=* | BW=* | ITERS=* | SECS=* | ROUNDS=*) declare "$a" ;;
    *) modes+=("$a") ;;
  esac
done
set -- "${modes[@]}"
[ $# -gt 0 ] || set -- zctx=2,rxdirect=1 zctx=1,rxdirect=1 zctx=0,rxdirect=1 zctx=2,rxdirect=0 zctx=1,rxdirect=0 zctx=0,rxdirect=0
astat() { ip netns exec a awk -v k="$1" '$1==k{print $2}' /proc/net/zcddp_stat; }
echo "# kernel $(uname -r), $(nproc) CPUs, $(grep -q hypervisor /proc/cpuinfo && echo guest) modes: $*"
insmod "$ZCNET_ROOT/net/ddp/zcddp.ko"
for r in $(seq "$ROUNDS"); do
  for mode in "$@"; do
    rmmod zcddp
    # shellcheck disable=SC2046 # the parameters' words
    insmod "$ZCNET_ROOT/net/ddp/zcddp.ko" $( [ "$mode" = - ] || echo "${mode//,/ }")
    ip netns exec b zcbench ddp-serve --listen "$B:5303" > /tmp/serve.log 2>&1 &
    p=$!
    listening b 5303
    ip netns exec a zcbench ddp --connect "$B:5303" --json "/tmp/mode-$r-$mode.json" --label "$mode" \
      --lat-sizes "$LAT" --bw-sizes "$BW" --iters "$ITERS" --seconds "$SECS" > /tmp/z.txt 2>&1 ||
      sed 's/^/# zcbench: /' /tmp/z.txt
    echo "# round $r $mode: kcopied=$(astat ZcddpTxZcCopiedByKernel) byref=$(astat ZcddpTxBytesByRef) stopped=$(astat ZcddpTxZcStopped)"
    kill $p 2>/dev/null
    wait $p 2>/dev/null
  done
done
python3 - "$ROUNDS" "$@" <<'EOF'
import json, statistics, sys
rounds, modes = int(sys.argv[1]), sys.argv[2:]
runs = {m: [json.load(open(f"/tmp/mode-{r}-{m}.json")) for r in range(1, rounds + 1)] for m in modes}
def med(m, pick):
    v = [x for x in (pick(j) for j in runs[m]) if x is not None]
    return statistics.median(v) if v else None
def cell(v, fmt="%.1f"):
    return "--" if v is None else fmt % v
lat_keys = sorted({(l["op"], l["bytes"]) for j in runs[modes[0]] for l in j["latency"]}, key=lambda k: (k[0], k[1]))
bw_keys = sorted({b["write"] for j in runs[modes[0]] for b in j["bandwidth"]})
def lat(op, n):
    return lambda j: next((l["median_us"] for l in j["latency"] if l["op"] == op and l["bytes"] == n), None)
def bw(n, k):
    return lambda j: next((b[k] for b in j["bandwidth"] if b["write"] == n), None)
print("# medians of %d rounds; ratio: to %s" % (rounds, modes[0]))
for op, n in lat_keys:
    base = med(modes[0], lat(op, n))
    print("# %s latency %7d B, us: " % (op, n) + "  ".join(
        "%s %s (%s)" % (m, cell(med(m, lat(op, n))), cell(med(m, lat(op, n)) / base if base and med(m, lat(op, n)) else None, "%.2f")) for m in modes))
for n in bw_keys:
    for k, unit in (("mbytes_per_s", "MB/s"), ("sys_cpu_ns_per_byte", "ns/B")):
        base = med(modes[0], bw(n, k))
        print("# write bandwidth %7d B, %s: " % (n, unit) + "  ".join(
            "%s %s (%s)" % (m, cell(med(m, bw(n, k)), "%.2f"), cell(med(m, bw(n, k)) / base if base and med(m, bw(n, k)) else None, "%.2f")) for m in modes))
EOF
