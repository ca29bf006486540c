#!/bin/bash
# The native front end's benchmark (issue 10), in one guest run (virtio2, best
# on the tap wire: two queue pairs and RSS): a TCP stream from namespace a to
# namespace b, zcbench writes of WRITE bytes, over
#   virtio_net-1500+tso  the stock driver with its offloads (64 KiB frames)
#   virtio_net-1500    the stock driver on both NICs, MTU 1500, offloads off
#   virtio_net-4148    the same at MTU 4148 (one page of payload a segment)
#   virtio_net-9000    the same at MTU 9000
#   stacked            zcfrag stacked on virtio_net (MTU 4148 over 1500)
#   native             zcfrag's native front end on both NICs (4148 over 1500)
# each plain (recv copies) and with zcsock regions (/zcsock: receive by
# remapping where the payload is whole pages). The receiver is pinned: its
# thread and its NIC's interrupts on CPU 1, the sender and its NIC's on CPU 0
# (with MSI-X; with shared interrupt lines the receiver's softirq may run on
# either CPU, and the summary says so). Receiver CPU per byte is CPU 1's busy
# time from /proc/stat over the stream, split into interrupt and softirq time
# (driver, IP, TCP: the network layers) and user and system time (the
# receiving program, the socket layer's copy or remap). Copies per received
# byte: the driver's (zcfrag's rx_copied_bytes; virtio_net copies no payload)
# plus the socket's (all of it for plain TCP, zcsock's count otherwise).
# bench-native.py prints medians, ratios against virtio_net-1500 and the
# per-packet cost model fitted on the three virtio_net MTUs.
#
#   bench-native.sh [ZCBENCH_SECONDS=3] [ZCBENCH_REPEAT=3] [ZCBENCH_WRITE=512K]
#                   [MODES="virtio_net-1500 native ..."] [MARK=1]
#
# MODES: the modes to run (all by default; a label without /zcsock runs
# both). MARK=1 counts instructions instead (the guest booted with
# ZCNET_INSN_DIR, as for bench-ddp-ab.sh): run R of a mode streams for R *
# ZCBENCH_SECONDS, each run between a zcmark reset and a zcmark dump, and
# scripts/insn-report.py --per 4096 LOG gives the instructions per page
# received, by function, from the last two runs of each mode.
set -u
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
for a in "$@"; do
  case "$a" in
    "") ;;
    ZCBENCH_SECONDS=*|ZCBENCH_REPEAT=*|ZCBENCH_WRITE=*) export "${a?}" ;;
    MODES=*|MARK=*) declare "$a" ;;
    *) echo "bench-native: unknown argument $a"; exit 2 ;;
  esac
done
SECS=${ZCBENCH_SECONDS:-3}
REPEAT=${ZCBENCH_REPEAT:-3}
WRITE=${ZCBENCH_WRITE:-512K}
MODES=${MODES:-} MARK=${MARK:-0}
out=${ZCNET_ARTIFACTS:-/tmp}
mkdir -p "$out"
Z="$ZCNET_ROOT/tools/testing/zcnet"
RX_CPU=1 TX_CPU=0
runs=$out/runs.tsv
printf 'label\trun\tbytes\tsecs\tirq\tsoftirq\tuser\tsys\tidle\tdriver_copied\tsocket_copied\tretrans\twire_frames\n' > "$runs"
insmod "$ZCNET_ROOT/net/zcsock/zcsock.ko" || exit 1
insmod "$ZCNET_ROOT/drivers/net/zcfrag/zcfrag.ko" devices="$ZC_MAC_A,$ZC_MAC_B" || exit 1

# cpu_ticks CPU: irq softirq user+nice system idle (USER_HZ ticks).
cpu_ticks() { awk -v c="cpu$1" '$1 == c { print $7, $8, $2 + $3, $4, $5 }' /proc/stat; }
# pin_irqs VIRTIO_DEV CPU: the device's interrupts (MSI-X vectors) to CPU.
pin_irqs() {
  local irq n=0
  for irq in $(awk -v d="$1" '$0 ~ d"-" { sub(":", "", $1); print $1 }' /proc/interrupts); do
    echo "$2" > "/proc/irq/$irq/smp_affinity_list" 2>/dev/null && n=$((n + 1))
  done
  echo "$n"
}
VA=$(basename "$(ip netns exec a readlink -f /sys/class/net/va/device)")
VB=$(basename "$(ip netns exec b readlink -f /sys/class/net/vb/device)")
# The receiver's driver-copy counter, as the current mode names it.
DRV_COPIED="echo 0"
# Frames the receiving NIC took off the wire.
WIRE_FRAMES="ip netns exec b cat /sys/class/net/vb/statistics/rx_packets"

# one LABEL DST RUN [ZCBENCH ARGS]: one stream, its receiver CPU and copies.
one() {
  local label=$1 dst=$2 run=$3; shift 3
  local json="$out/${label//\//-}-$run.json" c0 c1 d0 d1 r0 r1 f0 f1
  ip netns exec b taskset -c $RX_CPU zcbench serve --listen "$dst:5301" &
  local srv=$!
  d0=$(eval "$DRV_COPIED") r0=$(ip netns exec a nstat -az TcpRetransSegs | awk '$1 == "TcpRetransSegs" { print $2 }')
  f0=$(eval "$WIRE_FRAMES")
  c0=$(cpu_ticks $RX_CPU)
  local secs=$SECS
  [ "$MARK" = 1 ] && secs=$((SECS * run))
  insn_mark reset
  if ! timeout $((secs * 20 + 60)) ip netns exec a taskset -c $TX_CPU zcbench tcp --connect "$dst:5301" \
    --label "$label" --lat-sizes none --bw-sizes "$WRITE" --seconds "$secs" --check-every 64 \
    --json "$json" "$@" > "$out/client.txt" 2>&1; then
    echo "bench-native: $label run $run failed:"; tail -n 5 "$out/client.txt"
    kill $srv; return 1
  fi
  c1=$(cpu_ticks $RX_CPU)
  wait $srv
  insn_mark dump
  d1=$(eval "$DRV_COPIED") r1=$(ip netns exec a nstat -az TcpRetransSegs | awk '$1 == "TcpRetransSegs" { print $2 }')
  f1=$(eval "$WIRE_FRAMES")
  python3 - "$json" "$label" "$run" "$c0" "$c1" $((d1 - d0)) $((r1 - r0)) $((f1 - f0)) >> "$runs" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
bw = j["bandwidth"][0]
c0, c1 = [list(map(int, s.split())) for s in sys.argv[4:6]]
d = [b - a for a, b in zip(c0, c1)]
sock = bw.get("rx_bytes_copied")
if sock is None or sock < 0:
    sock = bw["bytes"]
print("\t".join(map(str, [sys.argv[2], sys.argv[3], bw["bytes"], bw["seconds"], *d,
                          sys.argv[6], sock, sys.argv[7], sys.argv[8]])))
EOF
  insn_mark name "$label stream $WRITE" "$(tail -n 1 "$runs" | cut -f 3)"
}
# mode LABEL DST: plain and zcsock, REPEAT times each, alternating.
mode() {
  local r
  case " ${MODES:-$1} " in *" $1 "*) ;; *) return 0 ;; esac
  for r in $(seq "$REPEAT"); do
    echo "== $1, run $r of $REPEAT"
    one "$1" "$2" "$r" && one "$1/zcsock" "$2" "$r" --zcsock region || return 1
  done
}

irq_a=$(pin_irqs "$VA" $TX_CPU) irq_b=$(pin_irqs "$VB" $RX_CPU)
echo "bench-native: $(uname -r), $(nproc) CPUs, accel ${ZCNET_ACCEL:-unknown}, topology $ZCNET_TOPO (wire ${ZCNET_WIRE:-udp}), $REPEAT runs per mode of $SECS s, writes of $WRITE; receiver on CPU $RX_CPU ($irq_b interrupt vectors of $VB pinned there), sender on CPU $TX_CPU ($irq_a of $VA)" |
  tee "$out/setup.txt"
[ "$irq_b" -gt 0 ] || echo "bench-native: no per-device interrupt vectors (no MSI-X): the receiver's softirq is not pinned" | tee -a "$out/setup.txt"

# virtio_net on one queue pair: QEMU 7.2, steering in software (RSS), holds
# a frame for an empty ring in the queue of the pair it came in on and
# retries it only when that pair's ring is notified, which virtio_net does
# not do: under load the stream stalls for seconds (seen here). With one pair
# the backend has one queue. (The native front end notifies every pair.)
ip netns exec a ethtool -L va combined 1 && ip netns exec b ethtool -L vb combined 1 || exit 1
# With its offloads, virtio_net on a tap carries 64 KiB frames between the
# NICs (TSO out of the sender, GUEST_TSO into the receiver): not a 1500-byte
# wire. Measured once for reference; then off (the sender segments in
# software, the receiver asks for frames of the wire's size), as on the wire
# zcfrag speaks to.
mode virtio_net-1500+tso "$ZC_IP_B" || exit 1
ip netns exec a ethtool -K va tso off >/dev/null 2>&1
ip netns exec b ethtool -K vb rx-gro-hw off >/dev/null 2>&1
ip netns exec b ethtool -k vb | grep -E "^rx-gro-hw" | sed 's/^/virtio_net receiver: /' | tee -a "$out/setup.txt"
for mtu in 1500 4148 9000; do
  ip -n a link set va mtu $mtu && ip -n b link set vb mtu $mtu || exit 1
  mode "virtio_net-$mtu" "$ZC_IP_B" || exit 1
done
ip -n a link set va mtu 1500 && ip -n b link set vb mtu 1500

# Stacked zcfrag over the same virtio_net devices.
ip -n a link add zf0 link va type zcfrag && ip -n b link add zf1 link vb type zcfrag || exit 1
ip -n a addr flush dev va; ip -n b addr flush dev vb
ip -n a addr add 198.19.0.1/24 dev zf0 && ip -n b addr add 198.19.0.2/24 dev zf1 || exit 1
ip -n a link set zf0 up && ip -n b link set zf1 up
DRV_COPIED="zs rx_copied_bytes"
mode stacked 198.19.0.2 || exit 1
ip -n a link del zf0; ip -n b link del zf1

# Both NICs on the native front end.
native_both 198.20.0.1 198.20.0.2 || exit 1
pin_irqs "$VA" $TX_CPU >/dev/null; pin_irqs "$VB" $RX_CPU >/dev/null
ip netns exec a ping -c 1 -W 5 198.20.0.2 >/dev/null || { echo "bench-native: no ping over the native NICs"; exit 1; }
DRV_COPIED="ip netns exec b ethtool -S vb | awk '\$1 == \"rx_copied_bytes:\" { print \$2 }'"
WIRE_FRAMES="ip netns exec b ethtool -S vb | awk '/^ *rx_queue_[0-9]+_packets:/ { s += \$2 } END { print s }'"
p0=$(ip netns exec b ethtool -S vb | awk '$1 == "rx_placed_bytes:" { print $2 }')
mode native 198.20.0.2 || exit 1
p1=$(ip netns exec b ethtool -S vb | awk '$1 == "rx_placed_bytes:" { print $2 }')
ip netns exec b ethtool -S vb | grep -E "rx_(placed|copied)_bytes|rx_chains|rx_kicks|zc_(successful|potential)|rx_queue" | sed 's/^/# native receiver: /' | tee "$out/native-counters.txt"
ip netns exec a ethtool -S va | grep -E "tx_(copied|referenced)_bytes|tx_fragments:|tx_kicks|tx_queue" | sed 's/^/# native sender: /' | tee -a "$out/native-counters.txt"
echo "native: $((p1 - p0)) payload bytes placed by the receiving device" | tee -a "$out/native-counters.txt"
python3 "$Z/bench-native.py" "$runs" | tee "$out/summary.txt"
