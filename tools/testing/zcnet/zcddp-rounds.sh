#!/bin/bash
# zcddp-rounds.sh: the long interop run with siw, by hand (not in make
# check: about 2 to 2.5 min a run under TCG at 1 MiB x 1000):
#
#   scripts/run-guest.sh --topo veth --timeout 3000 --log out/rounds.log \
#     tools/testing/zcnet/zcddp-rounds.sh [DIR,SIZE,COUNT[,ZARGS]] ...
#
# Each argument one connection: siw_verbs (rdma-core on siw) with
# zcddp-verbs, COUNT rounds of Send, RDMA Read and RDMA Write both ways of
# SIZE bytes (siw_verbs.c describes the exchange), every byte seeded and
# hashed on both sides. DIR c: siw_verbs connects from a (siw the MPA
# initiator), zcddp-verbs accepts in b; DIR s: the reverse. ZARGS go to
# zcddp-verbs (--crc, --sge N; several joined by "+"). The default: 1 MiB x
# 1000 each way, CRC on and off (Documentation/networking/zcddp.rst).
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/siw-lib.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
PORT=7300
modprobe -a siw rdma_ucm || { t_skip "siw interop" "no siw in this kernel"; t_done; exit; }
ip netns exec a rdma link add siwa type siw netdev va && ip netns exec b rdma link add siwb type siw netdev vb ||
  { t_fail "siw on va and vb"; t_done; exit; }
insmod "$ZCNET_ROOT/net/ddp/zcddp.ko"
[ $# -gt 0 ] || set -- c,1048576,1000,--crc c,1048576,1000 s,1048576,1000,--crc s,1048576,1000
for run in "$@"; do
  IFS=, read -r dir size count zargs <<< "$run"
  zargs=${zargs//+/ }
  PORT=$((PORT + 1)) t=$SECONDS
  # shellcheck disable=SC2086 # zcddp-verbs's words
  sv_run "$dir" "$size" "$count" 3000 $zargs
  rv=$RV rz=$RZ
  [ "$rv $rz" = "0 0" ] || sed 's/^/# /' /tmp/vs /tmp/vz | tail -n 20
  t_expect "siw_verbs -$dir, $size B x $count${zargs:+, $zargs}: every round checked on both sides ($((SECONDS - t)) s)" \
    "0 0 $count $count 0" \
    "$rv $rz $(grep -o '^siw_verbs: [0-9]* rounds' /tmp/vs | cut -d' ' -f2) $(grep -o '^zcddp-verbs: [0-9]* rounds' /tmp/vz | cut -d' ' -f2) $(cat /tmp/vs /tmp/vz | grep -c MISMATCH)"
done
t_run "rmmod zcddp" rmmod zcddp
t_done
