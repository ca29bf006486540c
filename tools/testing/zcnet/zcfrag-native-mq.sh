#!/bin/bash
# zcfrag's native front end on a device with more queue pairs than it uses
# (issue 44): virtio2 on the tap wire with 16 queue pairs per NIC
# (scripts/run-guest.sh --topo virtio2 --wire tap --queues 16). The front
# end uses at most 8; the device's control queue comes after all 16 pairs'
# queues, and taking the ninth pair's receive queue for it hung the bind
# in a busy wait. Binds, steers (RSS over the pairs in use) and carries
# TCP both ways byte-exact; ethtool -L over the 8.
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/zcfrag-lib.sh"
SEED=13
A=$ZC_NS_A B=$ZC_NS_B
chans() { ip netns exec "$1" ethtool -l "$2" 2>&1 | awk -v s="$3" '$0 ~ "^" s { c = 1 } c && $1 == "Combined:" { print $2; exit }'; }
offered=$(chans $A $ZC_IF_A Pre-set)
if [ "$ZCNET_TOPO" != virtio2 ] || [ "${offered:-0}" -le 8 ]; then
  t_skip "native front end on more than 8 queue pairs" "needs virtio2 --wire tap --queues 16 (the device offers ${offered:-?})"
  t_done; exit
fi
echo "# va's device offers $offered queue pairs"
VD=$(basename "$(ip netns exec $A readlink -f /sys/class/net/$ZC_IF_A/device)")
st() { ip netns exec "$1" ethtool -S "$2" 2>/dev/null | awk -v n="$3" '$1 == n":" { print $2 }'; }
# vb on one queue pair: see zcfrag-native.sh (QEMU's software RSS).
ip netns exec $B ethtool -L $ZC_IF_B combined 1
insmod "$(ko zcfrag)" devices="$ZC_MAC_A" || { t_fail "insmod"; t_done; exit 1; }
echo "$VD" > /sys/bus/virtio/drivers/virtio_net/unbind
s0=$(date +%s)
t_run "bind va's $offered-pair device to zcfrag" vdev_bind "$VD" zcfrag $A $ZC_IF_A $ZC_IP_A
echo "# bound in $(( $(date +%s) - s0 )) s"
b=$(dmesg | grep "zcfrag: .* bound (" | tail -1)
echo "# $b"
case "$b" in *"of 8 queue pairs, fragments steered to pair 0"*) t_ok "bound on at most 8 pairs, the RSS setting taken" ;;
  *) t_fail "bound on at most 8 pairs, the RSS setting taken" "$b" ;; esac
t_expect "ethtool -l: at most 8 pairs" 8 "$(chans $A $ZC_IF_A Pre-set)"
dmesg | grep -q "no answer from the device to control command" &&
  t_fail "every control command answered" "$(dmesg | grep 'no answer' | tail -1)" || t_ok "every control command answered"
t_run "ping vb" ip netns exec $A ping -c 3 -i 0.2 -W 2 $ZC_IP_B
tcp_xfer $A $B $ZC_IP_B $((8 << 20)) "TCP 8 MiB native -> virtio_net, byte-exact"
# rx_queue_N_packets: pair 0 and the others, in use.
rxq() { ip netns exec $A ethtool -S $ZC_IF_A | awk '$1 == "rx_queue_0_packets:" { z = $2 } $1 ~ /^rx_queue_[0-9]+_packets:$/ && $1 != "rx_queue_0_packets:" { o += $2 } END { print z + 0, o + 0 }'; }
read -r z0 o0 < <(rxq)
tcp_xfer $B $A $ZC_IP_A $((8 << 20)) "TCP 8 MiB virtio_net -> native, byte-exact"
read -r z1 o1 < <(rxq)
[ $((o1 - o0)) -ge 4000 ] && [ $(((z1 - z0) * 100)) -le $((o1 - o0)) ] &&
  t_ok "RSS: unfragmented TCP arrives on pairs 1 and up ($((o1 - o0)) frames, $((z1 - z0)) on pair 0)" ||
  t_fail "RSS: unfragmented TCP arrives on pairs 1 and up" "pair 0: $((z1 - z0)), the others: $((o1 - o0))"
udp_xfer $B $A $ZC_IP_A 100 4000 "UDP 100 x 4000 B virtio_net -> native, byte-exact"
read -r z2 o2 < <(rxq)
[ $((z2 - z1)) -ge 300 ] && t_ok "RSS: the fragments arrive on pair 0 ($((z2 - z1)) frames)" ||
  t_fail "RSS: the fragments arrive on pair 0" "pair 0: $((z2 - z1)), the others: $((o2 - o1))"
bad=0
for n in 1 8 3 8; do
  ip netns exec $A ethtool -L $ZC_IF_A combined $n && [ "$(chans $A $ZC_IF_A Current)" = $n ] || bad=$((bad + 1))
done
t_expect "ethtool -L 1, 8, 3, 8: each taken" 0 "$bad"
tcp_xfer $B $A $ZC_IP_A $((4 << 20)) "TCP 4 MiB virtio_net -> native after -L, byte-exact"
echo "$VD" > /sys/bus/virtio/drivers/zcfrag/unbind
t_run "rmmod zcfrag" rmmod zcfrag
echo "$VD" > /sys/bus/virtio/drivers/virtio_net/bind
t_done
