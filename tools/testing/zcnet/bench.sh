#!/bin/bash
# zcbench in the guest, side by side in one run: plain TCP between the
# namespaces at the lower devices' MTU 1500, at MTU 9000 (for reference), and
# through zcfrag (MTU 4148) over the same devices at MTU 1500. JSON goes to
# $ZCNET_ARTIFACTS (copied to the host next to the log by the runner).
# Works in the veth and virtio2 topologies (make bench TOPO=virtio2).
set -u
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
ITERS=${ZCBENCH_ITERS:-1000}
SECONDS_PER_SIZE=${ZCBENCH_SECONDS:-2}
REPEAT=${ZCBENCH_REPEAT:-3}
out=${ZCNET_ARTIFACTS:-/tmp}
mkdir -p "$out"
mode() { # LABEL MTU [DST_IP]
  ip -n a link set va mtu "$2" && ip -n b link set vb mtu "$2" || return 1
  local r dst=${3:-$ZC_IP_B}
  for r in $(seq "$REPEAT"); do
    ip netns exec b zcbench serve --listen "$dst:5301" &
    local srv=$!
    ip netns exec a zcbench tcp --connect "$dst:5301" --label "$1" \
      --iters "$ITERS" --seconds "$SECONDS_PER_SIZE" --json "$out/$1-$r.json" || return 1
    wait $srv
  done
  # A real peer for reference: iperf3 (128 KiB writes), receiver's rate.
  ip netns exec b iperf3 -s -1 -D -I /tmp/iperf3.pid >/dev/null 2>&1
  ip netns exec a iperf3 -c "$dst" -t "$((SECONDS_PER_SIZE * 2))" --connect-timeout 10000 -J \
    > "$out/iperf3-$1.iperf" || return 1
}
echo "zcbench: $(uname -r), $(nproc) CPUs, accel ${ZCNET_ACCEL:-unknown}, topology $ZCNET_TOPO (wire ${ZCNET_WIRE:-udp}), $REPEAT runs per mode"
mode plain-mtu1500 1500 && mode plain-mtu9000 9000 || exit 1
# zcfrag on both ends, over the same devices at MTU 1500; its own subnet.
zcfrag_up || exit 1
p0=$(zs zc_potential); s0=$(zs zc_successful); f0=$(zs zc_full_pages)
mode zcfrag-mtu1500 1500 198.19.0.2 || exit 1
p=$(( $(zs zc_potential) - p0 )); s=$(( $(zs zc_successful) - s0 )); f=$(( $(zs zc_full_pages) - f0 ))
echo "speculation (receiver zf1, zcfrag-mtu1500 runs): $s of $p trains delivered as page packets ($(python3 -c "print(f'{100 * $s / max($p, 1):.2f}')")%), $f full 4096-byte pages" | tee "$out/speculation.txt"
# The same with a copying transmit (scatter-gather off on zf0): what the
# zero-copy fragmenter saves on the sender.
ip -n a link set zf0 down; ip netns exec a ethtool -K zf0 sg off; ip -n a link set zf0 up
mode zcfrag-copytx 1500 198.19.0.2 || exit 1
ip netns exec a ethtool -S zf0 | grep -E "tx_(referenced|copied)_bytes|tx_fragment" | sed 's/^/# zf0 /'
rmmod zcfrag
python3 "$ZCNET_ROOT/tools/testing/zcnet/bench-summary.py" "$out"/*.json | tee "$out/summary.txt"
