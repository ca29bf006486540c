#!/bin/bash
# ddp-syscalls.sh: system calls per Send of zcbench ddp's Send latency (4 B,
# spinning), receives posted by ZCDDP_POST_RECV against the receive ring
# (Documentation/notes/2026-12-08-zcddp-history.md, "The receive ring"): strace -c on
# the client, which exits by itself; the server untraced. By hand:
#
#   scripts/run-guest.sh --topo veth --timeout 400 --log out/rqsys.log \
#     tools/testing/zcnet/ddp-syscalls.sh
. "$ZCNET_ROOT/scripts/topology.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
B=$ZC_IP_B
insmod "$ZCNET_ROOT/net/ddp/zcddp.ko"
N=${N:-500}
port=5304
for rq in syscall ring; do
  port=$((port + 1))
  ZCBENCH_RQ=$rq ip netns exec b timeout 120 zcbench ddp-serve --listen "$B:$port" > /tmp/srv.$rq 2>&1 &
  ps=$!
  listening b $port
  ZCBENCH_RQ=$rq ip netns exec a timeout 120 strace -c -o /tmp/st.$rq zcbench ddp --connect "$B:$port" --lat-ops send \
    --lat-sizes 4 --bw-sizes none --iters "$N" > /tmp/cl.$rq 2>&1
  echo "== rq $rq rc=$?: $(grep -m1 '^zcbench ddp' /tmp/cl.$rq | grep -o 'cq [a-z]*  rq [a-z]*') iters $N"
  grep -E "calls|setsockopt|getsockopt|total" /tmp/st.$rq
  kill $ps 2>/dev/null; wait $ps 2>/dev/null
done
