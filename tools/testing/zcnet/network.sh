#!/bin/bash
# Checks the topology the runner built: addresses, reachability, and a
# byte-exact TCP transfer (md5 of seeded data) between the two namespaces,
# plus iperf3 as a real peer. Runs in every topology; in twoguests guest `a`
# sends and guest `b` receives.
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
SIZE=${1:-8388608}
SEED=20261121
want=$(seeded_bytes $SEED "$SIZE" | md5sum | cut -d' ' -f1)
role=${ZCNET_ROLE:-a}
[ "$ZCNET_TOPO" = twoguests ] || role=both

if [ $role = both ] || [ $role = a ]; then
  t_run "ping a -> b" ip netns exec a ping -c 3 -i 0.2 -W 10 "$ZC_IP_B"
  t_run "ping6 a -> b" ip netns exec a ping -6 -c 3 -i 0.2 -W 10 "$ZC_IP6_B"
fi
if [ $role = both ]; then
  # The receiver hashes as it reads; the sender retries until it is listening.
  ip netns exec b sh -c 'socat -u TCP-LISTEN:7000,reuseaddr - | md5sum > /tmp/rx-sum' &
  rx=$!
  seeded_bytes $SEED "$SIZE" > /tmp/tx
  t_run "send $SIZE bytes a -> b" ip netns exec a socat -u OPEN:/tmp/tx "TCP:$ZC_IP_B:7000,retry=200,interval=0.05"
  wait $rx
  t_expect "bytes arrive intact (md5)" "$want" "$(cut -d' ' -f1 /tmp/rx-sum)"
  ip netns exec b iperf3 -s -1 -D -I /tmp/iperf3.pid >/dev/null 2>&1
  t_run "iperf3 a -> b" ip netns exec a iperf3 -c "$ZC_IP_B" -n 4M --connect-timeout 10000
  # soft-iWARP, the in-kernel iWARP peer zcddp will talk to: the test kernel's
  # own modules load through modprobe, and rping moves data over it.
  t_run "modprobe siw rdma_ucm" modprobe -a siw rdma_ucm
  t_run "rdma link add siw on va and vb" sh -c 'ip netns exec a rdma link add siwa type siw netdev va && ip netns exec b rdma link add siwb type siw netdev vb'
  # Every rping is bounded: a client that loses its connection setup on the
  # lossy virtio2 wire must not leave the server (or the suite) waiting.
  ip netns exec b timeout 120 rping -s -a "$ZC_IP_B" -C 3 >/tmp/rping-s.log 2>&1 &
  rs=$!
  # rping has no retry of its own: poll (bounded) until the server listens.
  for _ in $(seq 100); do ip netns exec a timeout 30 rping -c -a "$ZC_IP_B" -C 3 -v >/tmp/rping-c.log 2>&1 && break; sleep 0.1; done
  wait $rs || sed 's/^/# rping server: /' /tmp/rping-s.log
  t_expect "rping over soft-iWARP: 3 verified exchanges" 3 "$(grep -c 'ping data' /tmp/rping-c.log)"
elif [ $role = a ]; then
  seeded_bytes $SEED "$SIZE" > /tmp/tx
  t_run "send $SIZE bytes to guest b" ip netns exec a socat -u OPEN:/tmp/tx "TCP:$ZC_IP_B:7000,retry=600,interval=0.1"
else
  got=$(ip netns exec b socat -u TCP-LISTEN:7000,reuseaddr - | md5sum | cut -d' ' -f1)
  t_expect "bytes from guest a arrive intact (md5)" "$want" "$got"
fi
t_done
