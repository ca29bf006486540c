#!/bin/bash
# A reproducer, not part of make check: zcddp-ping -c in a pings rping -s on
# siw in b (64 B x 1000) round after round, while short rping -c (siw in a)
# to zcddp-ping -s (b) connections of 20 to 69 pings come and go beside it.
# A round whose client is still running after 7 s (they take 3 to 6 s)
# gets a dump of both namespaces: /proc/net/zcddp_conns, ss -tnoi, and
# siw's QPs. It finds siw's accept race (Documentation/networking/zcddp.rst,
# "siw loses a first FPDU that comes too soon"): on 2026-11-28, 3 rounds of
# 21 stalled with "no completion of opcode 5 in 10000 ms", siw's socket
# holding zcddp's first FPDU (Recv-Q 40) unread; with SIW_KO, a siw built
# with tools/testing/zcnet/siw-accept-order.patch, none of 30.
#   scripts/run-guest.sh --topo veth tools/testing/zcnet/zcddp-siw-churn.sh [ROUNDS [SIW_KO]]
# SIW_KO, built against the test kernel (kmake: scripts/lib.sh):
#   d=$(mktemp -d); cp -r "$(kernel_src_dir)"/drivers/infiniband/sw/siw/. "$d"
#   patch -d "$d" -p5 < tools/testing/zcnet/siw-accept-order.patch
#   kmake -C "$(kernel_build_dir)" M="$d" modules    # then SIW_KO=$d/siw.ko
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
ROUNDS=${1:-10} SIW_KO=${2:-}
t_run "insmod zcddp" insmod "$(ko zcddp)"
siw_load() {
  if [ -n "$SIW_KO" ]; then
    modprobe -a ib_core ib_uverbs iw_cm rdma_cm rdma_ucm && insmod "$SIW_KO"
  else
    modprobe -a siw rdma_ucm
  fi
}
if ! { siw_load &&
  ip netns exec a rdma link add siwa type siw netdev va &&
  ip netns exec b rdma link add siwb type siw netdev vb; }; then
  t_skip "siw on va and vb" "no siw in this kernel"; t_done; exit
fi
# ns_listening reads the namespaces through ns_anchor's processes (without
# them it read the root namespace's sockets, and every wait ran its 10 s).
ns_anchor a b || t_fail "a process in namespaces a and b (ns_anchor)"
listening() { for _ in $(seq 200); do ns_listening "$1" "$2" && return 0; sleep 0.05; done; return 1; }
dump() {
  echo "# --- $1"
  for ns in a b; do
    ip netns exec $ns cat /proc/net/zcddp_conns | sed "s/^/# conns $ns: /"
    ip netns exec $ns ss -tnoi | sed "s/^/# ss $ns: /"
    ip netns exec $ns rdma res show qp | sed "s/^/# qp $ns: /"
  done
}
churn() {
  local i=0 p s
  while [ ! -e /tmp/churn-stop ]; do
    i=$((i + 1)) p=$((7600 + i % 100)) s=$((i % 2 ? 65535 : 64))
    ip netns exec b timeout 60 zcddp-ping -s -a "$ZC_IP_B" -p $p -S $s > /dev/null 2>&1 &
    local pb=$!
    listening b $p
    ip netns exec a timeout 60 rping -c -a "$ZC_IP_B" -p $p -S $s -C $((20 + i % 50)) -V > /dev/null 2>&1
    wait $pb
  done
  echo "# churn: $i connections"
}
rm -f /tmp/churn-stop
churn &
ch=$!
for r in $(seq "$ROUNDS"); do
  p=$((7300 + r))
  ip netns exec b timeout 120 rping -s -a "$ZC_IP_B" -p $p -S 64 -C 1000 > /dev/null 2>&1 &
  rs=$!
  listening b $p
  t=$SECONDS dumped=0
  ip netns exec a timeout 120 zcddp-ping -c -a "$ZC_IP_B" -p $p -S 64 -C 1000 -V > /tmp/pc 2>&1 &
  pc=$!
  while kill -0 $pc 2>/dev/null; do
    if [ $((SECONDS - t)) -ge 7 ] && [ $dumped = 0 ]; then
      dumped=1
      dump "round $r: the client still runs after $((SECONDS - t)) s"
    fi
    sleep 0.2
  done
  wait $pc
  rc=$?
  if [ $rc = 0 ]; then t_ok "round $r: $(tail -n 1 /tmp/pc) in $((SECONDS - t)) s"; else t_fail "round $r" "$(tail -n 1 /tmp/pc)"; fi
  kill $rs 2>/dev/null
  wait $rs
done
touch /tmp/churn-stop
wait $ch
t_run "rmmod zcddp" rmmod zcddp
t_done
