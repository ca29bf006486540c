#!/bin/bash
# zcbench in the guest: plain TCP between the namespaces, side by side in one
# run, at the lower device's MTU 1500 and at MTU 9000 (for reference). Later
# issues add the zcnet modes. JSON goes to $ZCNET_ARTIFACTS (copied to the
# host next to the log by the runner).
set -u
ITERS=${ZCBENCH_ITERS:-1000}
SECONDS_PER_SIZE=${ZCBENCH_SECONDS:-2}
REPEAT=${ZCBENCH_REPEAT:-3}
out=${ZCNET_ARTIFACTS:-/tmp}
mkdir -p "$out"
mode() { # LABEL MTU
  ip -n a link set va mtu "$2" && ip -n b link set vb mtu "$2" || return 1
  local r
  for r in $(seq "$REPEAT"); do
    ip netns exec b zcbench serve --listen "$ZC_IP_B:5301" &
    local srv=$!
    ip netns exec a zcbench tcp --connect "$ZC_IP_B:5301" --label "$1" \
      --iters "$ITERS" --seconds "$SECONDS_PER_SIZE" --json "$out/$1-$r.json" || return 1
    wait $srv
  done
  # A real peer for reference: iperf3 (128 KiB writes), receiver's rate.
  ip netns exec b iperf3 -s -1 -D -I /tmp/iperf3.pid >/dev/null 2>&1
  ip netns exec a iperf3 -c "$ZC_IP_B" -t "$((SECONDS_PER_SIZE * 2))" --connect-timeout 10000 -J \
    > "$out/iperf3-$1.iperf" || return 1
}
echo "zcbench: $(uname -r), $(nproc) CPUs, accel ${ZCNET_ACCEL:-unknown}, topology $ZCNET_TOPO, $REPEAT runs per mode"
mode plain-mtu1500 1500 && mode plain-mtu9000 9000 || exit 1
python3 "$ZCNET_ROOT/tools/testing/zcnet/bench-summary.py" "$out"/*.json | tee "$out/summary.txt"
