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
# 1000 each way, CRC on and off (Documentation/notes/2026-12-08-zcddp-history.md, "Tests").
#
#   DIR,SIZE,COUNT,ZARGS,NETEM: the run through netem NETEM on both
#   egresses (va and vb), and no Terminate sent or received on zcddp's
#   side. Issue 45's large transfers against siw, e.g. (166 s in all in
#   the guest, too long for make check):
#     c,4194304,16,--crc,delay 1ms reorder 25% 50% loss 1%
#     s,4194304,16,--crc,delay 1ms reorder 25% 50% loss 1%
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/siw-lib.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
PORT=7300
modprobe -a siw rdma_ucm || { t_skip "siw interop" "no siw in this kernel"; t_done; exit; }
ip netns exec a rdma link add siwa type siw netdev va && ip netns exec b rdma link add siwb type siw netdev vb ||
  { t_fail "siw on va and vb"; t_done; exit; }
insmod "$ZCNET_ROOT/net/ddp/zcddp.ko"
ns_anchor a b
terms() { echo "$(ns_stat a zcddp_stat ZcddpTerminatesSent) $(ns_stat a zcddp_stat ZcddpTerminatesReceived) $(ns_stat b zcddp_stat ZcddpTerminatesSent) $(ns_stat b zcddp_stat ZcddpTerminatesReceived)"; }
[ $# -gt 0 ] || set -- c,1048576,1000,--crc c,1048576,1000 s,1048576,1000,--crc s,1048576,1000
for run in "$@"; do
  IFS=, read -r dir size count zargs netem <<< "$run"
  zargs=${zargs//+/ }
  PORT=$((PORT + 1)) t=$SECONDS tm0=$(terms)
  if [ -n "$netem" ]; then
    # shellcheck disable=SC2086 # netem's words
    ip netns exec a tc qdisc replace dev va root netem $netem
    # shellcheck disable=SC2086
    ip netns exec b tc qdisc replace dev vb root netem $netem
  fi
  # shellcheck disable=SC2086 # zcddp-verbs's words
  sv_run "$dir" "$size" "$count" 3000 $zargs
  rv=$RV rz=$RZ
  if [ -n "$netem" ]; then
    ip netns exec a tc qdisc del dev va root
    ip netns exec b tc qdisc del dev vb root
  fi
  [ "$rv $rz" = "0 0" ] || sed 's/^/# /' /tmp/vs /tmp/vz | tail -n 20
  t_expect "siw_verbs -$dir, $size B x $count${zargs:+, $zargs}${netem:+, through netem $netem}: every round checked on both sides ($((SECONDS - t)) s)" \
    "0 0 $count $count 0" \
    "$rv $rz $(grep -o '^siw_verbs: [0-9]* rounds' /tmp/vs | cut -d' ' -f2) $(grep -o '^zcddp-verbs: [0-9]* rounds' /tmp/vz | cut -d' ' -f2) $(cat /tmp/vs /tmp/vz | grep -c MISMATCH)"
  [ -z "$netem" ] || t_expect "  no Terminate sent or received" "$tm0" "$(terms)"
done
t_run "rmmod zcddp" rmmod zcddp
t_done
