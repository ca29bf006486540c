#!/bin/bash
# zcfrag's native front end (drivers/net/zcfrag/native.rs): zcfrag drives
# va's virtio-net device itself, in place of virtio_net, while vb stays on the
# unmodified virtio_net. Binding by the `devices` parameter (and only that
# device), ordinary traffic both ways byte-exact at MTU 1500 and 4000,
# ethtool, counters, unbind and rebind under traffic, rmmod while bound, and
# the device given back to virtio_net. Runs in the virtio2 topology.
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/zcfrag-lib.sh"
SEED=11
if [ "$ZCNET_TOPO" != virtio2 ]; then
  t_skip "native front end" "needs the virtio2 topology"
  t_done; exit
fi
A=$ZC_NS_A B=$ZC_NS_B
VD=$(basename "$(ip netns exec $A readlink -f /sys/class/net/$ZC_IF_A/device)")
echo "# va is $VD"
drv() {
  local l=/sys/bus/virtio/devices/$VD/driver
  [ -e "$l" ] && basename "$(readlink -f "$l")"
}

# native_up: binds $VD to zcfrag and sets its netdev up as va in ns a.
native_up() {
  local d end=$((SECONDS + 10))
  echo "$VD" > /sys/bus/virtio/drivers/zcfrag/bind || return 1
  while [ $SECONDS -lt $end ]; do
    d=$(ls /sys/bus/virtio/devices/$VD/net 2>/dev/null | head -1)
    [ -n "$d" ] && break
    sleep 0.05
  done
  [ -n "$d" ] || return 1
  ip link set "$d" netns $A && ip -n $A link set "$d" name $ZC_IF_A &&
    ip -n $A addr add $ZC_IP_A/24 dev $ZC_IF_A && ip -n $A link set $ZC_IF_A up
}
# to_virtio_net: gives $VD back to virtio_net, set up as before.
to_virtio_net() {
  [ "$(drv)" = zcfrag ] && echo "$VD" > /sys/bus/virtio/drivers/zcfrag/unbind
  [ -n "$(drv)" ] || echo "$VD" > /sys/bus/virtio/drivers/virtio_net/bind
}

insmod "$(ko zcfrag)" devices="$ZC_MAC_A" || { t_fail "insmod"; t_done; exit 1; }
t_expect "loading binds nothing by itself (va stays on virtio_net)" virtio_net "$(drv)"
t_run "unbind va from virtio_net" sh -c "echo $VD > /sys/bus/virtio/drivers/virtio_net/unbind"
t_run "bind va to zcfrag" native_up
t_expect "va's driver is zcfrag" zcfrag "$(drv)"
t_expect "ethtool -i: driver" zcfrag "$(ip netns exec $A ethtool -i $ZC_IF_A | awk '$1 == "driver:" { print $2 }')"
t_expect "ethtool -i: bus-info" "$VD" "$(ip netns exec $A ethtool -i $ZC_IF_A | awk '$1 == "bus-info:" { print $2 }')"
t_expect "the MAC address is the device's" "$ZC_MAC_A" "$(ip netns exec $A cat /sys/class/net/$ZC_IF_A/address)"
ring=$(ip netns exec $A ethtool -g $ZC_IF_A 2>&1 | awk '/^Current/ { c = 1 } c && $1 == "RX:" { print $2; exit }')
[ "${ring:-0}" -gt 0 ] && t_ok "ethtool -g: $ring receive descriptors" || t_fail "ethtool -g" "got '$ring'"
t_expect "ethtool -l: one combined channel" 1 "$(ip netns exec $A ethtool -l $ZC_IF_A 2>&1 | awk '/^Current/ { c = 1 } c && $1 == "Combined:" { print $2; exit }')"

t_run "ping vb from the native va" ip netns exec $A ping -c 3 -i 0.2 -W 2 $ZC_IP_B
t_run "ping the native va from vb" ip netns exec $B ping -c 3 -i 0.2 -W 2 $ZC_IP_A
tcp_xfer $A $B $ZC_IP_B $((16 << 20)) "TCP 16 MiB native -> virtio_net, byte-exact"
tcp_xfer $B $A $ZC_IP_A $((16 << 20)) "TCP 16 MiB virtio_net -> native, byte-exact"
ip -n $A link set $ZC_IF_A mtu 4000 && ip -n $B link set $ZC_IF_B mtu 4000
t_expect "MTU 4000 set" 4000 "$(ip netns exec $A cat /sys/class/net/$ZC_IF_A/mtu)"
tcp_xfer $A $B $ZC_IP_B $((16 << 20)) "TCP 16 MiB at MTU 4000 native -> virtio_net, byte-exact"
tcp_xfer $B $A $ZC_IP_A $((16 << 20)) "TCP 16 MiB at MTU 4000 virtio_net -> native, byte-exact"
t_run "ping with 3972-byte payloads (4000-byte packets)" ip netns exec $A ping -c 3 -i 0.2 -W 2 -s 3972 -M do $ZC_IP_B
if ip -n $A link set $ZC_IF_A mtu 5000 2>/dev/null; then
  t_fail "an MTU past what a receive chain holds is refused"
else
  t_ok "an MTU past what a receive chain holds is refused"
fi
ip -n $A link set $ZC_IF_A mtu 1500 && ip -n $B link set $ZC_IF_B mtu 1500
read -r rxp txp < <(ip netns exec $A cat /sys/class/net/$ZC_IF_A/statistics/rx_packets /sys/class/net/$ZC_IF_A/statistics/tx_packets | tr '\n' ' ')
[ "${rxp:-0}" -gt 10000 ] && [ "${txp:-0}" -gt 10000 ] && t_ok "ip -s link counts frames ($rxp received, $txp sent)" ||
  t_fail "ip -s link counts frames" "rx $rxp tx $txp"

# Unbind and rebind under traffic (both directions), five times.
ok=1
for i in 1 2 3 4 5; do
  ip netns exec $B timeout 8 ping -q -f -w 2 $ZC_IP_A > /dev/null 2>&1 &
  ip netns exec $A timeout 8 ping -q -f -w 2 $ZC_IP_B > /dev/null 2>&1 &
  sleep 0.3
  echo "$VD" > /sys/bus/virtio/drivers/zcfrag/unbind || ok=0
  wait
  native_up || ok=0
done
[ $ok = 1 ] && t_ok "unbind and rebind under flood ping, 5 times" || t_fail "unbind and rebind under flood ping, 5 times"
tcp_xfer $A $B $ZC_IP_B $((4 << 20)) "TCP 4 MiB after the rebinds, byte-exact"

# rmmod while bound and under traffic: the device is unbound with the driver.
ip netns exec $B timeout 8 ping -q -f -w 2 $ZC_IP_A > /dev/null 2>&1 &
sleep 0.3
t_run "rmmod zcfrag while bound, under traffic" rmmod zcfrag
wait
t_expect "va has no driver after rmmod" "" "$(drv)"
to_virtio_net
d=$(ls /sys/bus/virtio/devices/$VD/net 2>/dev/null | head -1)
[ -n "$d" ] && ip link set "$d" netns $A && ip -n $A link set "$d" name $ZC_IF_A &&
  ip -n $A addr add $ZC_IP_A/24 dev $ZC_IF_A && ip -n $A link set $ZC_IF_A up
t_expect "va is back on virtio_net" virtio_net "$(drv)"
t_run "virtio_net carries va again" ip netns exec $A ping -c 2 -i 0.2 -W 2 $ZC_IP_B
t_done
