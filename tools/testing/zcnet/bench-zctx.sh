#!/bin/bash
# bench-zctx.sh (make bench-zctx; virtio2, tap wire): zcddp's zero-copy
# transmit on and off, side by side in one run. zcbench ddp RDMA Write
# bandwidth from a to b at 64 KiB and 1 MiB, CRC off, zcddp loaded with
# zctx=1 and zctx=0 in turn, ROUNDS rounds; per mode and size the median
# MB/s, the median busy time of every CPU per byte (zcbench's
# sys_cpu_ns_per_byte) and of the sender's thread (tx_cpu_ns_per_byte), and
# what a's counters say it lent, copied, and the kernel copied after all.
# On the tap wire virtio-net has scatter-gather, checksum offload and TSO:
# lent pages leave as they are (on veth the receive path copies them).
#
#   bench-zctx.sh [ZCBENCH_SECONDS=S] [ZCBENCH_REPEAT=ROUNDS]
set -u
for a in "$@"; do
  case "$a" in
    "") ;;
    ZCBENCH_SECONDS=*|ZCBENCH_REPEAT=*) export "${a?}" ;;
    *) echo "bench-zctx: unknown argument $a"; exit 2 ;;
  esac
done
SECS=${ZCBENCH_SECONDS:-3}
ROUNDS=${ZCBENCH_REPEAT:-3}
SIZES="65536 1048576"
out=${ZCNET_ARTIFACTS:-/tmp}/bench-zctx
mkdir -p "$out"
. "$ZCNET_ROOT/scripts/topology.sh"
B=$ZC_IP_B
echo "# kernel $(uname -r) ($ZCNET_FLAVOUR), accel $ZCNET_ACCEL, $(nproc) CPUs, wire ${ZCNET_WIRE:-udp}, ${SECS} s per size, $ROUNDS rounds"
# One queue pair per NIC: QEMU's software RSS on the tap wire holds frames
# of a pair whose ring virtio_net does not notify (zcddp.sh, wire mode).
ip netns exec a ethtool -L va combined 1 2>/dev/null
ip netns exec b ethtool -L vb combined 1 2>/dev/null
ip netns exec a ping -c 3 -i 0.2 -W 2 -q "$B" > /dev/null || echo "# no ping over the wire"
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
astat() { ip netns exec a awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }' /proc/net/zcddp_stat; }
printf 'mode\tround\tbytes\tmbps\tsys_ns\ttx_ns\tlent\tcopied\tkcopied\n' > "$out/runs.tsv"
for r in $(seq "$ROUNDS"); do
  for zctx in 1 0; do
    rmmod zcddp 2>/dev/null
    insmod "$ZCNET_ROOT/net/ddp/zcddp.ko" zctx=$zctx || { echo "# insmod zctx=$zctx failed"; exit 1; }
    for s in $SIZES; do
      ip netns exec b zcbench ddp-serve --listen "$B:5310" > "$out/serve-$zctx-$s-$r.log" 2>&1 &
      fps=$!
      listening b 5310
      l0=$(astat ZcddpTxBytesByRef) c0=$(astat ZcddpTxBytesCopied) k0=$(astat ZcddpTxZcCopiedByKernel)
      j="$out/zctx$zctx-$s-$r.json"
      if ip netns exec a zcbench ddp --connect "$B:5310" --json "$j" --label "zctx$zctx" \
        --lat-sizes none --bw-sizes "$s" --seconds "$SECS" > "$out/zctx$zctx-$s-$r.txt" 2>&1; then
        python3 - "$j" "$zctx" "$r" "$(( $(astat ZcddpTxBytesByRef) - l0 ))" \
          "$(( $(astat ZcddpTxBytesCopied) - c0 ))" "$(( $(astat ZcddpTxZcCopiedByKernel) - k0 ))" >> "$out/runs.tsv" <<'EOF'
import json, sys
b = json.load(open(sys.argv[1]))["bandwidth"][0]
print("\t".join([sys.argv[2], sys.argv[3], str(b["write"]), "%.1f" % b["mbytes_per_s"],
                 "%.3f" % b["sys_cpu_ns_per_byte"], "%.3f" % b["tx_cpu_ns_per_byte"]] + sys.argv[4:7]))
EOF
      else
        echo "# zctx=$zctx $s B round $r failed: $(tail -n 2 "$out/zctx$zctx-$s-$r.txt" | tr '\n' ' ')"
      fi
      kill $fps 2>/dev/null; wait $fps 2>/dev/null
    done
  done
done
rmmod zcddp
sed 's/^/# /' "$out/runs.tsv"
python3 - "$out/runs.tsv" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
med = lambda m, s, i: statistics.median(float(r[i]) for r in rows if r[0] == m and r[2] == s)
print("zcddp RDMA Write, CRC off, zero-copy transmit on (zctx=1) and off (zctx=0): medians")
print("%-8s %10s %10s %8s %12s %12s %8s %10s %10s" % ("bytes", "on MB/s", "off MB/s", "on/off",
      "on sys ns/B", "off sys ns/B", "on/off", "on tx ns/B", "off tx ns/B"))
for s in sorted({r[2] for r in rows}, key=int):
    try:
        a, b = med("1", s, 3), med("0", s, 3)
        ca, cb = med("1", s, 4), med("0", s, 4)
        ta, tb = med("1", s, 5), med("0", s, 5)
    except statistics.StatisticsError:
        continue
    print("%-8s %10.1f %10.1f %8.2f %12.3f %12.3f %8.2f %10.3f %10.3f" % (
        s, a, b, a / b if b else 0, ca, cb, ca / cb if cb else 0, ta, tb))
for m in ("1", "0"):
    lent = sum(int(r[6]) for r in rows if r[0] == m)
    cop = sum(int(r[7]) for r in rows if r[0] == m)
    kc = sum(int(r[8]) for r in rows if r[0] == m)
    print("zctx=%s: lent %d bytes, copied %d, of the lent copied by the kernel %d" % (m, lent, cop, kc))
EOF
