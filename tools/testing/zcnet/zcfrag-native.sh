#!/bin/bash
# zcfrag's native front end (drivers/net/zcfrag/native.rs): zcfrag drives
# va's virtio-net device itself, in place of virtio_net, while vb stays on the
# unmodified virtio_net. Binding by the `devices` parameter (and only that
# device); the engine on it (MTU 4148, fragments on a 1500-byte wire) against
# the unmodified stack on vb and against a stacked zcfrag device on vb, both
# ways byte-exact, with the speculation counters; ethtool; unbind and rebind
# under traffic, rmmod while bound, and the device given back to virtio_net.
# Runs in the virtio2 topology (in twoguests: zcfrag-native-twoguests.sh,
# native on both guests); on its tap wire (run-guest.sh --wire tap) the
# NICs have two queue pairs and RSS: the front end steers IPv4 fragments to
# pair 0, whose receive list it speculates on, and the rest to pair 1.
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/zcfrag-lib.sh"
SEED=11
if [ "$ZCNET_TOPO" = twoguests ]; then
  . "$ZCNET_ROOT/tools/testing/zcnet/zcfrag-native-twoguests.sh"
  t_done; exit
elif [ "$ZCNET_TOPO" != virtio2 ]; then
  t_skip "native front end" "needs the virtio2 or twoguests topology"
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
  local d
  # (a driverless device named by `devices` is bound when zcfrag loads)
  [ "$(drv)" = zcfrag ] || echo "$VD" > /sys/bus/virtio/drivers/zcfrag/bind || return 1
  d=$(vdev_netdev "$VD") || return 1
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
chans=$(ip netns exec $A ethtool -l $ZC_IF_A 2>&1 | awk '/^Current/ { c = 1 } c && $1 == "Combined:" { print $2; exit }')
# q N rx|tx: frames through queue pair N.
q() { st $A $ZC_IF_A "$2_queue_$1_packets"; }
if [ "${ZCNET_WIRE:-}" = tap ]; then
  # vb's virtio_net on one queue pair: QEMU 7.2's software RSS holds a frame
  # for an empty ring in the queue of the pair it came in on until that
  # pair's ring is notified, which virtio_net does not do (a stalled stream,
  # seen here). The native front end notifies every pair.
  ip netns exec $B ethtool -L $ZC_IF_B combined 1
  t_expect "ethtool -l: two combined channels (both of the device's queue pairs)" 2 "$chans"
  t_expect "two transmit and two receive queues" "rx-0 rx-1 tx-0 tx-1" "$(ip netns exec $A ls /sys/class/net/$ZC_IF_A/queues | tr '\n' ' ' | sed 's/ $//')"
  dmesg | grep -q "zcfrag: .* bound (2 of 2 queue pairs, fragments steered to pair 0" &&
    t_ok "the device took the RSS setting: fragments to pair 0" || t_fail "the device took the RSS setting" "$(dmesg | grep 'zcfrag: .*bound' | tail -1)"
else
  t_expect "ethtool -l: one combined channel" 1 "$chans"
fi

st() { ip netns exec "$1" ethtool -S "$2" 2>/dev/null | awk -v n="$3" '$1 == n":" { print $2 }'; }
t_expect "the device's MTU is a page of payload with IPv4 and TCP headers" 4148 "$(ip netns exec $A cat /sys/class/net/$ZC_IF_A/mtu)"
if ip -n $A link set $ZC_IF_A mtu 20000 2>/dev/null; then
  t_fail "an MTU past 16384 is refused"
else
  t_ok "an MTU past 16384 is refused"
fi
t_run "ping vb from the native va" ip netns exec $A ping -c 3 -i 0.2 -W 2 $ZC_IP_B
t_run "ping the native va from vb" ip netns exec $B ping -c 3 -i 0.2 -W 2 $ZC_IP_A
f0=$(st $A $ZC_IF_A tx_fragments)
t_run "4028-byte pings, fragmented on the 1500-byte wire both ways" ip netns exec $A ping -c 3 -i 0.2 -W 2 -s 4000 $ZC_IP_B
f1=$(st $A $ZC_IF_A tx_fragments)
[ $((f1 - f0)) -ge 9 ] && t_ok "ethtool -S: tx_fragments counts them ($((f1 - f0)))" || t_fail "ethtool -S: tx_fragments" "$f0 -> $f1"

# (a) Against the unmodified stack on vb: at vb's MTU 1500 TCP segments fit
# the wire; at 4148, va's segments leave as fragments vb reassembles and
# vb's arrive whole.
tcp_xfer $A $B $ZC_IP_B $((16 << 20)) "TCP 16 MiB native -> virtio_net at 1500, byte-exact"
r00=$(q 0 rx) r10=$(q 1 rx)
tcp_xfer $B $A $ZC_IP_A $((16 << 20)) "TCP 16 MiB virtio_net at 1500 -> native, byte-exact"
if [ "${ZCNET_WIRE:-}" = tap ]; then
  r01=$(q 0 rx) r11=$(q 1 rx)
  echo "# whole TCP segments: $((r01 - r00)) frames on queue pair 0, $((r11 - r10)) on pair 1"
  [ $((r11 - r10)) -ge 10000 ] && [ $(((r01 - r00) * 100)) -le $((r11 - r10)) ] &&
    t_ok "RSS: unfragmented TCP arrives on pair 1 (the ordinary receive list)" ||
    t_fail "RSS: unfragmented TCP arrives on pair 1" "pair 0: $((r01 - r00)), pair 1: $((r11 - r10))"
fi
udp_xfer $A $B $ZC_IP_B 200 4000 "UDP 200 x 4000 B native -> virtio_net (fragments reassembled by the stack)"
udp_xfer $B $A $ZC_IP_A 200 4000 "UDP 200 x 4000 B virtio_net -> native (the stack's fragments)"
ip -n $B link set $ZC_IF_B mtu 4148
p0=$(st $A $ZC_IF_A tx_fragmented_packets)
tcp_xfer $A $B $ZC_IP_B $((16 << 20)) "TCP 16 MiB native -> virtio_net at 4148 (fragments reassembled by the stack), byte-exact"
p1=$(st $A $ZC_IF_A tx_fragmented_packets)
[ $((p1 - p0)) -ge 4000 ] && t_ok "va fragmented the stream ($((p1 - p0)) packets)" || t_fail "va fragmented the stream" "$p0 -> $p1"
tcp_xfer $B $A $ZC_IP_A $((16 << 20)) "TCP 16 MiB virtio_net at 4148 -> native (whole frames), byte-exact"
# Every boundary of the fragment plan at three wire MTUs (issue 44: an
# empty fragment made the stack drop whole datagrams of some sizes).
for m in 576 1280 1500; do
  ip netns exec $A sh -c "echo $m > /sys/class/net/$ZC_IF_A/zcfrag/wire_mtu"
  frag_sizes $A $B $ZC_IP_B $m "native -> virtio_net"
done

# (a2) Frames of the device's MTU while trains flow (issue 44, major 3).
# vb's fragment trains (UDP, cut for a 1500-byte wire by vb's route to va)
# keep va's speculation on, so va's ring holds speculative chains (3262 to
# 3574 bytes before their pages); vb's pings to va's second address go out
# whole at vb's MTU 4148. A frame no chain holds is dropped by the device
# unseen (QEMU tells the guest nothing), and the pings that were not
# answered are the only trace: every size must be answered, the boundaries
# of the chain's buffers among them, during the trains and after, then at
# MTU 9000 on both ends (va's raised while up: its rings are reset).
A2=198.18.0.11
ip -n $A addr add $A2/32 dev $ZC_IF_A
ip -n $B link set $ZC_IF_B mtu 4148
ip -n $B route add $ZC_IP_A/32 dev $ZC_IF_B mtu lock 1500
# big_pings WHEN SIZE...: 3 pings of each ICMP payload SIZE from vb to A2;
# a size is answered when at least 2 of its 3 are (the udp wire may drop
# one); the sizes that are not are listed.
big_pings() {
  local when=$1 s got bad= n=0; shift
  for s in "$@"; do
    got=$(ip netns exec $B ping -c 3 -i 0.1 -W 1 -s "$s" $A2 2>/dev/null | awk '/packets transmitted/ { print $4 }')
    n=$((n + ${got:-0}))
    [ "${got:-0}" -ge 2 ] || bad="$bad $s:${got:-0}/3"
  done
  [ -z "$bad" ] && t_ok "pings of every size to the MTU answered $when ($n of $((3 * $#)))" ||
    t_fail "pings of every size to the MTU answered $when" "not answered (size:got):$bad"
}
rm -f /tmp/udp-stop
# trains: vb sends va UDP datagrams of 4096 bytes (three fragments on a
# 1500-byte wire) every 2 ms until /tmp/udp-stop exists (120 s at most);
# TRAINS is its pid.
trains() {
  ip netns exec $B python3 -c 'import os, socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.monotonic() + 120
while not os.path.exists("/tmp/udp-stop") and time.monotonic() < end:
    s.sendto(bytes(4096), ("'"$ZC_IP_A"'", 9)); time.sleep(0.002)' &
  TRAINS=$!
}
speculating() { [ "$(st $A $ZC_IF_A rx_chains_speculative)" -gt "$1" ]; }
# ICMP payloads: the smallest, one frame of the 1500-byte wire and one past
# it, the shortest speculative chain's header, slice and overflow buffer
# exactly (3262 bytes written, the virtio-net header counted) and one past,
# the longest's (3574) and one past, the review's 4000, the MTU's 4120.
sizes="1 1472 1473 3208 3209 3520 3521 4000 4120"
trains
wait_for "trains speculated on" speculating "$(st $A $ZC_IF_A rx_chains_speculative)" ||
  t_fail "va speculates on vb's trains"
sp0=$(st $A $ZC_IF_A rx_chains_speculative) pu0=$(st $A $ZC_IF_A rx_chains_pages_used)
big_pings "while trains flow" $sizes
sp1=$(st $A $ZC_IF_A rx_chains_speculative) pu1=$(st $A $ZC_IF_A rx_chains_pages_used)
echo "# during the pings: $((sp1 - sp0)) speculative chains posted, $((${pu1:-0} - ${pu0:-0})) frames went on into their pages"
[ $((sp1 - sp0)) -gt 0 ] && [ $((${pu1:-0} - ${pu0:-0})) -gt 0 ] &&
  t_ok "the long pings landed in speculative chains, on into the pages after them (rx_chains_pages_used)" ||
  t_fail "the long pings landed in speculative chains" "speculative $sp0 -> $sp1, pages used '$pu0' -> '$pu1'"
touch /tmp/udp-stop; wait $TRAINS
big_pings "after the trains" 3209 3521 4000 4120
t_run "va's MTU raised to 9000 while up" ip -n $A link set $ZC_IF_A mtu 9000
ip -n $B link set $ZC_IF_B mtu 9000
rm -f /tmp/udp-stop
trains
wait_for "trains speculated on at MTU 9000" speculating "$(st $A $ZC_IF_A rx_chains_speculative)" ||
  t_fail "va speculates on vb's trains at MTU 9000"
big_pings "at MTU 9000 while trains flow" 4121 8192 8972
touch /tmp/udp-stop; wait $TRAINS
big_pings "at MTU 9000 after the trains" 8972
ip -n $B route del $ZC_IP_A/32 dev $ZC_IF_B
ip -n $A addr del $A2/32 dev $ZC_IF_A
ip -n $A link set $ZC_IF_A mtu 4148
ip -n $B link set $ZC_IF_B mtu 1500

# (b) Against a stacked zcfrag device on vb: speculation on both ends.
ip -n $B addr flush dev $ZC_IF_B
ip -n $B link add zf1 link $ZC_IF_B type zcfrag && ip -n $B addr add $ZC_IP_B/24 dev zf1 &&
  ip -n $B link set zf1 up
# No interference: zf1 asks for no slot (va's admission is open), so no
# admission frame comes between the trains the native va speculates on.
ip netns exec $B sh -c "echo 0 > /sys/class/net/zf1/zcfrag/implicit_admission"
ip netns exec $A ip neigh flush dev $ZC_IF_A
s0=$(st $A $ZC_IF_A zc_successful) t0=$(st $B zf1 zc_successful)
pl0=$(st $A $ZC_IF_A rx_placed_bytes) cp0=$(st $A $ZC_IF_A rx_copied_bytes)
r00=$(q 0 rx) r10=$(q 1 rx)
XFER_BLOCK=65536 tcp_xfer $B $A $ZC_IP_A $((64 << 20)) "TCP 64 MiB stacked zcfrag -> native (64 KiB writes), byte-exact"
pl1=$(st $A $ZC_IF_A rx_placed_bytes) cp1=$(st $A $ZC_IF_A rx_copied_bytes)
if [ "${ZCNET_WIRE:-}" = tap ]; then
  r01=$(q 0 rx) r11=$(q 1 rx)
  echo "# fragment trains: $((r01 - r00)) frames on queue pair 0, $((r11 - r10)) on pair 1"
  [ $((r01 - r00)) -ge 48000 ] && [ $(((r11 - r10) * 100)) -le $((r01 - r00)) ] &&
    t_ok "RSS: the fragments arrive on pair 0 (the speculative receive list)" ||
    t_fail "RSS: the fragments arrive on pair 0" "pair 0: $((r01 - r00)), pair 1: $((r11 - r10))"
fi
echo "# native receive: $((pl1 - pl0)) payload bytes placed by the device, $((cp1 - cp0)) bytes copied by the driver (headers and misses)"
ip netns exec $A ethtool -S $ZC_IF_A | grep -E 'rx_chains|rx_pages_placed|zc_miss_displaced|zc_failed|rx_kicks' | sed 's/^/# /'
# At least 99% of the payload placed by the device (issue 10), in tenths of
# a percent. An unmodified TCP sender's short segments (a push at the end of
# a write, a window's edge) shift the speculative chains in flight, and those
# miss until the trains realign: few chains are in flight (6), so that costs
# little. On the tap wire whole short segments go to pair 1 and shift
# nothing; a two-fragment train still does (Documentation/networking/
# zcfrag.rst, "Native front end"). On one queue pair it is just 99%, and a
# slow run may miss it: 97% there.
pm=$(( (pl1 - pl0) * 1000 / (64 << 20) ))
want=990
[ "${ZCNET_WIRE:-}" = tap ] || want=970
[ "$pm" -ge $want ] &&
  t_ok "the device placed at least $((want / 10))% of the payload where it belongs, no CPU copy ($((pm / 10)).$((pm % 10))%)" ||
  t_fail "the device placed at least $((want / 10))% of the payload where it belongs" "placed $((pl1 - pl0)) of $((64 << 20)) ($((pm / 10)).$((pm % 10))%)"
c0=$(st $A $ZC_IF_A tx_copied_bytes) r0=$(st $A $ZC_IF_A tx_referenced_bytes)
k0=$(st $A $ZC_IF_A tx_kicks) n0=$(st $A $ZC_IF_A tx_fragments) q0=$(st $A $ZC_IF_A tx_fragmented_packets)
g0=$(st $A $ZC_IF_A tx_gso_packets) d0=$(st $A $ZC_IF_A tx_drop_lower)
zc0=$(st $B zf1 rx_copied_bytes)
tcp_xfer $A $B $ZC_IP_B $((64 << 20)) "TCP 64 MiB native -> stacked zcfrag, byte-exact"
zc1=$(st $B zf1 rx_copied_bytes)
echo "# the stacked zf1, same stream the other way: $((zc1 - zc0)) bytes copied into pages"
c1=$(st $A $ZC_IF_A tx_copied_bytes) r1=$(st $A $ZC_IF_A tx_referenced_bytes)
k1=$(st $A $ZC_IF_A tx_kicks) n1=$(st $A $ZC_IF_A tx_fragments) q1=$(st $A $ZC_IF_A tx_fragmented_packets)
g1=$(st $A $ZC_IF_A tx_gso_packets) d1=$(st $A $ZC_IF_A tx_drop_lower)
s1=$(st $A $ZC_IF_A zc_successful) t1=$(st $B zf1 zc_successful)
# TSO: va's TCP hands the front end whole GSO packets, which it cuts into
# segments (on page boundaries) and fragments itself, none lost for room.
t_expect "ethtool -k: va offers TSO" on "$(ip netns exec $A ethtool -k $ZC_IF_A | awk '$1 == "tcp-segmentation-offload:" { print $2 }')"
[ $((g1 - g0)) -gt 0 ] && [ $((d1 - d0)) = 0 ] &&
  t_ok "va cut TSO packets into segments itself ($((g1 - g0)) packets, tx_gso_packets), none dropped for room" ||
  t_fail "va cut TSO packets into segments itself, none dropped for room" "tx_gso_packets +$((g1 - g0)), tx_drop_lower +$((d1 - d0))"
echo "# native transmit: $((r1 - r0)) payload bytes by reference, $((c1 - c0)) copied; $((k1 - k0)) kicks for $((n1 - n0)) fragments"
# The IP payload of a first fragment starts with the 32-byte TCP header,
# which lies in the skb's head: copied into the fragment. No data byte is.
# (Short segments go out whole, unfragmented: not counted by reference.)
[ $((c1 - c0)) -le $((32 * (q1 - q0))) ] && [ $((r1 - r0)) -ge $((63 << 20)) ] &&
  t_ok "native transmit copies no data byte (64 MiB by reference; $((c1 - c0)) TCP header bytes)" ||
  t_fail "native transmit copies no data byte" "copied $((c1 - c0)) for $((q1 - q0)) packets, by reference $((r1 - r0))"
[ $((n1 - n0)) -gt 0 ] && [ $(((k1 - k0) * 2)) -lt $((n1 - n0)) ] && t_ok "fewer than one kick per two fragments sent" ||
  t_fail "fewer than one kick per two fragments sent" "$((k1 - k0)) kicks, $((n1 - n0)) fragments"
[ $((s1 - s0)) -ge 8000 ] && t_ok "the native va delivered page packets ($((s1 - s0)) trains)" ||
  t_fail "the native va delivered page packets" "zc_successful $s0 -> $s1"
[ $((t1 - t0)) -ge 8000 ] && t_ok "the stacked zf1 delivered page packets from the native va ($((t1 - t0)) trains)" ||
  t_fail "the stacked zf1 delivered page packets" "zc_successful $t0 -> $t1"

# (b3) A device that uses receive chains out of order (issue 44, major 7):
# without VIRTIO_F_IN_ORDER a device may fill and complete chains in
# another order than they were posted in (QEMU keeps the order: the test
# knob test_rx_reorder makes every 5th chain and the two after it reach the
# device after the next four). A page the engine took (a fragment copied
# into it, or handed up whole, perhaps mapped by zcsock) never gets another
# chain: rx_chains_into_retired counts chains posted into such a page and
# stays 0 while pages are retired (rx_pages_retired), and the stream
# arrives byte-exact. (With the predictor not retiring pages, a mutant:
# 225 chains into taken pages and a corrupted stream.)
knob7=/sys/module/zcfrag/parameters/test_rx_reorder
ri0=$(st $A $ZC_IF_A rx_chains_into_retired) rp0=$(st $A $ZC_IF_A rx_pages_retired)
echo 5 > $knob7
XFER_BLOCK=65536 tcp_xfer $B $A $ZC_IP_A $((8 << 20)) "TCP 8 MiB stacked zcfrag -> native on chains used out of order, byte-exact"
echo 0 > $knob7
ri1=$(st $A $ZC_IF_A rx_chains_into_retired) rp1=$(st $A $ZC_IF_A rx_pages_retired)
[ $((rp1 - rp0)) -gt 0 ] && [ "$ri1" = "$ri0" ] &&
  t_ok "no chain posted into a page the engine took ($((rp1 - rp0)) pages retired)" ||
  t_fail "no chain posted into a page the engine took" "rx_pages_retired $rp0 -> $rp1, rx_chains_into_retired $ri0 -> $ri1"

# (b2) Faults on the wire between the stacked zf1 and the native va: netem on
# vb's egress damages the trains va speculates on. Every transfer stays
# byte-exact and the misses are counted; then an interleaving flow (pings
# from vb between the trains) on a clean wire.
misses() { ip netns exec $A ethtool -S $ZC_IF_A | awk '$1 ~ /^zc_miss_/ || $1 == "rx_chains_missed:" { s += $2 } END { print s + 0 }'; }
# (corruption: first fragments only, see corrupt_first_frags in zcfrag-lib.sh;
# netem corrupt 1% on every fragment failed once, 2026-11-25, with every byte
# received and a wrong hash: two corrupted fragments of one segment can cancel
# in TCP's checksum.)
for ne in "loss 1%" "delay 1ms reorder 10% 50%" "duplicate 2%" "corrupt 2% of first fragments"; do
  m0=$(misses)
  case "$ne" in
    corrupt*) corrupt_first_frags $B $ZC_IF_B 2 ;;
    *) ip netns exec $B tc qdisc replace dev $ZC_IF_B root netem $ne ;;
  esac
  XFER_BLOCK=65536 tcp_xfer $B $A $ZC_IP_A $((4 << 20)) "TCP 4 MiB stacked -> native through netem $ne, byte-exact"
  ip netns exec $B tc qdisc del dev $ZC_IF_B root
  m1=$(misses)
  case "$ne" in
    corrupt*) echo "# netem $ne: $((m1 - m0)) misses" ;;
    *) [ $((m1 - m0)) -gt 0 ] && t_ok "netem $ne: misses counted and recovered ($((m1 - m0)))" ||
      t_fail "netem $ne: misses counted" "$m0 -> $m1" ;;
  esac
done
ip netns exec $A ethtool -S $ZC_IF_A | grep -E 'zc_miss_(gap|duplicate|displaced|bad_checksum)|rx_chains_missed' | sed 's/^/# /'
ip netns exec $A tc qdisc replace dev $ZC_IF_A root netem loss 1%
XFER_BLOCK=65536 tcp_xfer $A $B $ZC_IP_B $((4 << 20)) "TCP 4 MiB native -> stacked through netem loss 1% on va, byte-exact"
ip netns exec $A tc qdisc del dev $ZC_IF_A root
ip netns exec $B ping -q -i 0.005 -c 1000 -s 300 $ZC_IP_A > /tmp/native-ping.out 2>&1 &
pp=$!
XFER_BLOCK=65536 tcp_xfer $B $A $ZC_IP_A $((16 << 20)) "TCP 16 MiB stacked -> native with pings interleaved, byte-exact"
wait $pp
got=$(awk '/packets transmitted/ { print $4 }' /tmp/native-ping.out)
# The UDP wire drops about 0.5% under a stream; a debug kernel's receiver
# falls behind it too (986 of 1000 answered there, 2026-11-28), and a ping
# lost with the frames that found the ring empty is no fault of the
# interleaving: nine tenths are asked of it.
want=990
[ "${ZCNET_FLAVOUR:-default}" = debug ] && want=900
[ "${got:-0}" -ge $want ] && t_ok "the interleaved pings answered ($got of 1000)" ||
  t_fail "the interleaved pings answered" "$(cat /tmp/native-ping.out)"

# sys, sv: the sysfs group of va, a sysfs value (wait_for: zcfrag-lib.sh).
sys=/sys/class/net/$ZC_IF_A/zcfrag
sv() { ip netns exec $A cat "$sys/$1" 2>/dev/null; }
# (c) and (c2) run on the udp wire only: they test the front end's settings,
# not its queues, and the tap wire's run is the same suite again (the
# test-time budget, 2026-11-27).
if [ "${ZCNET_WIRE:-}" != tap ]; then
# (c) What a user of the stacked device has, on the native one: the sysfs
# group, ethtool -c/-C, explicit admission through the ioctl, zcctl.
t_expect "sysfs: the zcfrag group on the native device (slots)" 8 "$(sv slots)"
ip netns exec $A sh -c "echo 16 > $sys/slots" && t_expect "sysfs: slots written" 16 "$(sv slots)" ||
  t_fail "sysfs: slots written"
if ip netns exec $A sh -c "echo 0 > $sys/slots" 2>/dev/null; then
  t_fail "sysfs: slots 0 is refused (EINVAL)"
else
  t_ok "sysfs: slots 0 is refused (EINVAL)"
fi
ip netns exec $A sh -c "echo 8 > $sys/slots"
to0=$(sv timeout_us)
ip netns exec $A ethtool -C $ZC_IF_A rx-usecs 700 &&
  t_expect "ethtool -C rx-usecs sets timeout_us" 700 "$(sv timeout_us)" || t_fail "ethtool -C rx-usecs"
t_expect "ethtool -c shows it" 700 "$(ip netns exec $A ethtool -c $ZC_IF_A | awk '$1 == "rx-usecs:" { print $2 }')"
ip netns exec $A ethtool -C $ZC_IF_A rx-usecs "$to0"
out=$(ip netns exec $A zcctl admit $ZC_IF_A "$ZC_IP_B" tcp 2>&1); rc=$?
echo "# $out"
case "$out" in *granted*) t_ok "zcctl admit through the native device: zf1 grants a slot" ;;
  *) t_fail "zcctl admit through the native device" "rc $rc: $out" ;; esac
case "$(sv admissions)" in *"> $ZC_IP_B:0 proto 6 state granted"*) t_ok "sysfs admissions lists the request" ;;
  *) t_fail "sysfs admissions lists the request" "$(sv admissions)" ;; esac
ip netns exec $A zcctl release $ZC_IF_A "$ZC_IP_B" tcp > /dev/null
wait_for "the grant released" sh -c "[ \"\$(ip netns exec $B ethtool -S zf1 | awk '\$1 == \"grants_active:\" { print \$2 }')\" = 0 ]" &&
  t_ok "zcctl release: zf1's slot is free again" || t_fail "zcctl release: zf1's slot is free again"
out=$(ip netns exec $A zcctl frag 2>&1)
case "$out" in *"$ZC_IF_A: native on $VD, mtu 4148"*) t_ok "zcctl frag lists the native device" ;;
  *) t_fail "zcctl frag lists the native device" "$out" ;; esac
# (c2) The wire's MTU: a stacked device's is its lower device's (shown,
# not set); the native device's is the sysfs setting wire_mtu. Both ends on
# a 1000-byte wire: va cuts fragments for it and speculates on zf1's; then
# both go back to 1500 in the middle of a transfer, with chains for the old
# trains in flight (each is checked against the trains it was posted for).
zsv() { ip netns exec $B cat /sys/class/net/zf1/zcfrag/$1 2>/dev/null; }
t_expect "sysfs: the native device's wire_mtu is 1500" 1500 "$(sv wire_mtu)"
t_expect "sysfs: the stacked zf1's wire_mtu is its lower device's MTU" 1500 "$(zsv wire_mtu)"
for bad in 575 4199 1x; do
  if ip netns exec $A sh -c "echo $bad > $sys/wire_mtu" 2>/dev/null; then
    t_fail "sysfs: wire_mtu $bad is refused (EINVAL)"
  else
    t_ok "sysfs: wire_mtu $bad is refused (EINVAL)"
  fi
done
dmesg | grep -q "zcfrag: $ZC_IF_A: wire_mtu must be 576 to 4198" &&
  t_ok "the refusal is logged, with the range" || t_fail "the refusal is logged" "$(dmesg | tail -3)"
# (bash, not sh: dash's echo reports every write error as EIO)
err=$(ip netns exec $B bash -c "echo 1000 > /sys/class/net/zf1/zcfrag/wire_mtu" 2>&1)
case "$?:$err" in 0:*) t_fail "sysfs: a stacked device's wire_mtu is refused (EOPNOTSUPP)" ;;
  *"not supported"*) t_ok "sysfs: a stacked device's wire_mtu is refused (EOPNOTSUPP)" ;;
  *) t_fail "sysfs: a stacked device's wire_mtu is refused (EOPNOTSUPP)" "$err" ;; esac
ip -n $B link set $ZC_IF_B mtu 1000
ip netns exec $A sh -c "echo 1000 > $sys/wire_mtu"
t_expect "sysfs: wire_mtu 1000 written" 1000 "$(sv wire_mtu)"
t_expect "sysfs: zf1's wire_mtu follows its lower device" 1000 "$(zsv wire_mtu)"
n0=$(st $A $ZC_IF_A tx_fragments) q0=$(st $A $ZC_IF_A tx_fragmented_packets) t0=$(st $B zf1 zc_successful)
tcp_xfer $A $B $ZC_IP_B $((16 << 20)) "TCP 16 MiB native -> stacked on a 1000-byte wire, byte-exact"
n1=$(st $A $ZC_IF_A tx_fragments) q1=$(st $A $ZC_IF_A tx_fragmented_packets) t1=$(st $B zf1 zc_successful)
# A page segment (4128 bytes of IPv4 payload) is 3 fragments of 1480 bytes
# on a 1500-byte wire, 5 of 976 on this one.
fpp=$(( (n1 - n0) * 10 / ((q1 - q0) > 0 ? (q1 - q0) : 1) ))
echo "# va: $((n1 - n0)) fragments for $((q1 - q0)) packets; zf1: $((t1 - t0)) page trains"
[ "$fpp" -ge 45 ] && t_ok "va cut fragments for the 1000-byte wire ($((fpp / 10)).$((fpp % 10)) a packet)" ||
  t_fail "va cut fragments for the 1000-byte wire" "$((n1 - n0)) fragments, $((q1 - q0)) packets"
[ $((t1 - t0)) -ge 2000 ] && t_ok "zf1 delivered va's 5-fragment trains as page packets ($((t1 - t0)))" ||
  t_fail "zf1 delivered va's trains as page packets" "zc_successful $t0 -> $t1"
pl0=$(st $A $ZC_IF_A rx_placed_bytes)
XFER_BLOCK=65536 tcp_xfer $B $A $ZC_IP_A $((16 << 20)) "TCP 16 MiB stacked -> native on a 1000-byte wire, byte-exact"
pl1=$(st $A $ZC_IF_A rx_placed_bytes)
pm=$(( (pl1 - pl0) * 1000 / (16 << 20) ))
[ "$pm" -ge 900 ] && t_ok "va's device placed the payload of the 1000-byte wire's trains ($((pm / 10)).$((pm % 10))%)" ||
  t_fail "va's device placed the payload of the 1000-byte wire's trains" "placed $((pl1 - pl0)) of $((16 << 20))"
# Back to 1500 on both ends in the middle of one connection: vb sends the
# first half of the 16 MiB, va's receive chains for the 1000-byte trains
# still posted, both ends change, then vb sends the rest.
port=$((7000 + RANDOM % 1000))
rm -f /tmp/flip-half /tmp/flip-go
ip netns exec $A bash -c "socat -u TCP-LISTEN:$port,reuseaddr - | md5sum > /tmp/rx-sum" &
rx=$!
ip netns exec $B python3 - "$ZC_IP_A" $port <<'PY' &
import os, socket, sys, time
d = open("/tmp/tx", "rb").read()
h = len(d) // 2
for _ in range(400):
    try:
        s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
        break
    except OSError:
        time.sleep(0.05)
s.sendall(d[:h])
open("/tmp/flip-half", "w").close()
for _ in range(2400):
    if os.path.exists("/tmp/flip-go"):
        break
    time.sleep(0.05)
s.sendall(d[h:])
s.close()
PY
tx=$!
for i in $(seq 2400); do [ -e /tmp/flip-half ] && break; sleep 0.05; done
ip -n $B link set $ZC_IF_B mtu 1500
ip netns exec $A sh -c "echo 1500 > $sys/wire_mtu"
fl=$(st $A $ZC_IF_A rx_placed_bytes)
touch /tmp/flip-go
wait $tx
wait $rx
t_expect "TCP 16 MiB stacked -> native, both ends back to a 1500-byte wire mid-stream, byte-exact" \
  "$(cat /tmp/tx.sum)" "$(cut -d' ' -f1 /tmp/rx-sum)"
pl2=$(st $A $ZC_IF_A rx_placed_bytes)
echo "# placed: $((pl2 - pl1)) bytes of 16 MiB, $((pl2 - fl)) after the change"
t_expect "sysfs: wire_mtu back to 1500" 1500 "$(sv wire_mtu)"
[ $((pl2 - fl)) -ge $((4 << 20)) ] &&
  t_ok "speculation followed the wire back to 1500 mid-stream ($((pl2 - fl)) bytes placed after)" ||
  t_fail "speculation followed the wire back to 1500 mid-stream" "placed $pl1 -> $fl at the change -> $pl2"
fi
ip -n $B link del zf1
ip -n $B addr add $ZC_IP_B/24 dev $ZC_IF_B
ip netns exec $A ip neigh flush dev $ZC_IF_A

# (d) ethtool -L: the queue pairs in use, from one to what the device offers,
# changed while the device is up.
chans_a() { ip netns exec $A ethtool -l $ZC_IF_A 2>&1 | awk '/^Current/ { c = 1 } c && $1 == "Combined:" { print $2; exit }'; }
maxq=$(ip netns exec $A ethtool -l $ZC_IF_A 2>&1 | awk '/^Pre-set/ { c = 1 } c && $1 == "Combined:" { print $2; exit }')
if ip netns exec $A ethtool -L $ZC_IF_A combined $((maxq + 1)) 2>/dev/null; then
  t_fail "ethtool -L past the device's $maxq queue pairs is refused"
else
  t_ok "ethtool -L past the device's $maxq queue pairs is refused"
fi
if [ "${maxq:-1}" -ge 2 ]; then
  ip netns exec $A ethtool -L $ZC_IF_A combined 1 && t_expect "ethtool -L combined 1, up" 1 "$(chans_a)" ||
    t_fail "ethtool -L combined 1"
  t_expect "one transmit and one receive queue" "rx-0 tx-0" "$(ip netns exec $A ls /sys/class/net/$ZC_IF_A/queues | tr '\n' ' ' | sed 's/ $//')"
  # (ethtool -S lists only the pairs in use: pair 1's count is not there
  # to compare; every frame of the stream must be on pair 0.)
  r00=$(q 0 rx)
  tcp_xfer $B $A $ZC_IP_A $((4 << 20)) "TCP 4 MiB virtio_net -> native on one queue pair, byte-exact"
  r01=$(q 0 rx)
  [ $((r01 - r00)) -ge 2000 ] && t_ok "the stream arrives on pair 0, the one pair in use ($((r01 - r00)) frames)" ||
    t_fail "the stream arrives on pair 0, the one pair in use" "$r00 -> $r01"
  ip netns exec $A ethtool -L $ZC_IF_A combined 2 && t_expect "ethtool -L combined 2, up" 2 "$(chans_a)" ||
    t_fail "ethtool -L combined 2"
  r10=$(q 1 rx)
  tcp_xfer $B $A $ZC_IP_A $((4 << 20)) "TCP 4 MiB virtio_net -> native on two queue pairs again, byte-exact"
  [ $(($(q 1 rx) - r10)) -ge 2000 ] && t_ok "pair 1 takes the unfragmented stream again (RSS set again)" ||
    t_fail "pair 1 takes the unfragmented stream again" "$(($(q 1 rx) - r10)) frames"
  tcp_xfer $A $B $ZC_IP_B $((4 << 20)) "TCP 4 MiB native -> virtio_net after the changes, byte-exact"
fi
# (e) Native to native: vb's device goes to the native front end too.
VB=$(basename "$(ip netns exec $B readlink -f /sys/class/net/$ZC_IF_B/device)")
# bind_b DRIVER: vb's device to DRIVER, its netdev set up as vb in ns b.
bind_b() { vdev_bind "$VB" "$1" $B $ZC_IF_B $ZC_IP_B; }
echo "$ZC_MAC_A,$ZC_MAC_B" > /sys/module/zcfrag/parameters/devices
t_run "vb's device to the native front end too" bind_b zcfrag
t_expect "vb's MTU is zcfrag's" 4148 "$(ip netns exec $B cat /sys/class/net/$ZC_IF_B/mtu)"
ip netns exec $A ip neigh flush dev $ZC_IF_A
pl0=$(st $B $ZC_IF_B rx_placed_bytes)
# The stacked device's range of sizes, 1 MiB to 256 MiB (the 256 MiB run on
# the udp wire only: 64 MiB on the tap wire, whose run checks the queues).
mib=256
[ "${ZCNET_WIRE:-}" = tap ] && mib=64
XFER_BLOCK=65536 tcp_xfer $A $B $ZC_IP_B $((mib << 20)) "TCP $mib MiB native -> native, byte-exact"
pl1=$(st $B $ZC_IF_B rx_placed_bytes)
pm=$(( (pl1 - pl0) * 1000 / (mib << 20) ))
echo "# native vb placed $((pl1 - pl0)) of $((mib << 20)) payload bytes"
# (98.0 to 99.1% seen; 98.8 on the tap wire with the host busy: the 99% of
# issue 10 is checked in (b), here most of it). A debug kernel's receiver
# falls behind the UDP wire, which then drops fragments, and each loss
# costs the chains in flight: 92.6% there (2026-11-28, 653 s for the
# 256 MiB); 90% is asked of it.
want=970
[ "${ZCNET_FLAVOUR:-default}" = debug ] && want=900
[ "$pm" -ge $want ] && t_ok "native -> native: the device placed at least $((want / 10))% ($((pm / 10)).$((pm % 10))%)" ||
  t_fail "native -> native: the device placed at least $((want / 10))%" "$((pm / 10)).$((pm % 10))%"
XFER_BLOCK=65536 tcp_xfer $B $A $ZC_IP_A $((16 << 20)) "TCP 16 MiB native -> native the other way, byte-exact"
tcp_xfer $A $B $ZC_IP_B $((1 << 20)) "TCP 1 MiB native -> native, byte-exact"
udp_xfer $A $B $ZC_IP_B 200 4000 "UDP 200 x 4000 B native -> native"
udp_xfer $B $A $ZC_IP_A 200 8000 "UDP 200 x 8000 B native -> native the other way"
# ethtool -G on va while vb's trains come in: the rings are reset one by
# one, the speculative chains they held come back unused (counted), and the
# stream goes on byte-exact at the new sizes.
ring_a() { ip netns exec $A ethtool -g $ZC_IF_A 2>&1 | awk -v s="$1" -v k="$2" '$0 ~ "^" s { c = 1 } c && $1 == k":" { print $2; exit }'; }
rmax=$(ring_a Pre-set RX) tmax=$(ring_a Pre-set TX)
echo "# rings: at most $rmax receive, $tmax transmit descriptors; now $(ring_a Current RX) and $(ring_a Current TX)"
if ip netns exec $A ethtool -G $ZC_IF_A rx 32 2>/dev/null; then
  t_fail "ethtool -G rx 32 is refused (fewer than 64)"
else
  t_ok "ethtool -G rx 32 is refused (fewer than 64)"
fi
if ip netns exec $A ethtool -G $ZC_IF_A rx $((rmax + 1)) 2>/dev/null; then
  t_fail "ethtool -G past the device's $rmax is refused"
else
  t_ok "ethtool -G past the device's $rmax is refused"
fi
rc0=$(st $A $ZC_IF_A rx_chains_recycled)
rm -f /tmp/udp-stop
trains; UDPG=$TRAINS
wait_for "trains speculated on" speculating "$(st $A $ZC_IF_A rx_chains_speculative)" ||
  t_fail "va speculates on vb's trains before the resize"
t_run "ethtool -G rx 128 tx 128 under traffic" ip netns exec $A ethtool -G $ZC_IF_A rx 128 tx 128
t_expect "ethtool -g: the new sizes" "128 128" "$(ring_a Current RX) $(ring_a Current TX)"
wait_for "trains speculated on again" speculating "$(st $A $ZC_IF_A rx_chains_speculative)" ||
  t_fail "va speculates on vb's trains again after the resize"
t_run "ethtool -G back to $rmax/$tmax under traffic" ip netns exec $A ethtool -G $ZC_IF_A rx "$rmax" tx "$tmax"
touch /tmp/udp-stop; wait $UDPG
rc1=$(st $A $ZC_IF_A rx_chains_recycled)
[ $((rc1 - rc0)) -gt 0 ] && t_ok "speculative chains given back by the resizes ($((rc1 - rc0)), rx_chains_recycled)" ||
  t_fail "speculative chains given back by the resizes" "rx_chains_recycled $rc0 -> $rc1"
ip netns exec $A ethtool -G $ZC_IF_A rx 128
pl0=$(st $A $ZC_IF_A rx_placed_bytes)
XFER_BLOCK=65536 tcp_xfer $B $A $ZC_IP_A $((16 << 20)) "TCP 16 MiB native -> native on 128 receive descriptors, byte-exact"
pm=$(( ($(st $A $ZC_IF_A rx_placed_bytes) - pl0) * 1000 / (16 << 20) ))
echo "# placed on 128 receive descriptors: $((pm / 10)).$((pm % 10))%"
ip netns exec $A ethtool -G $ZC_IF_A rx "$rmax"
# The smallest transmit ring: a TSO packet it could never take whole goes
# to the core's segmentation first (ndo_features_check), smaller ones stay
# whole; nothing is dropped for room.
ip netns exec $A ethtool -G $ZC_IF_A tx 64
d0=$(st $A $ZC_IF_A tx_drop_lower)
XFER_BLOCK=65536 tcp_xfer $A $B $ZC_IP_B $((4 << 20)) "TCP 4 MiB native -> native on 64 transmit descriptors, byte-exact"
t_expect "on 64 transmit descriptors: nothing dropped for room (tx_drop_lower)" 0 $(( $(st $A $ZC_IF_A tx_drop_lower) - d0 ))
ip netns exec $A ethtool -G $ZC_IF_A tx "$tmax"
XFER_BLOCK=65536 tcp_xfer $A $B $ZC_IP_B $((4 << 20)) "TCP 4 MiB native -> native after the resizes, byte-exact"

# One TCP stream alone from va through 12 transmit ring resizes (64 and
# 256 descriptors). What the qdisc took while transmit was stopped must go
# out after: a queue only started again (not woken) is not run until
# something new is queued, and TCP queues nothing while its own packets
# wait in the host (TSQ): the stream stopped for good in cycle 2 or so,
# its packets in the qdisc's backlog (issue 44).
stream_start $A $B $ZC_IP_B s_one || t_fail "a TCP stream started"
stream_moving s_one || t_fail "the stream moves before the resizes"
stuck=0
for i in $(seq 12); do
  ip netns exec $A ethtool -G $ZC_IF_A tx $(( i % 2 ? 64 : tmax ))
  stream_moving s_one && continue
  stuck=$i
  ip netns exec $A tc -s qdisc show dev $ZC_IF_A | sed 's/^/# va tc /'
  break
done
t_expect "one TCP stream alone: moved after each of 12 -G tx cycles (0: none stopped)" 0 "$stuck"
stream_stop s_one "TCP stream native va -> vb through the transmit ring resizes"

# ethtool -G and -L cycles under load (issue 44): TCP streams both ways and
# UDP fragment floods both ways while va's rings are resized 20 times
# (receive and transmit sizes) and, with two queue pairs, its pairs changed
# 20 times. A transmit during a resize hung the machine, BQL's BUG killed
# it, and streams stopped for good; each cycle here waits until both
# streams moved another MiB, and both arrive byte-exact.
# (A send blocked for 10 s ends the flood, so a stopped queue cannot hang
# the suite: its sender is blocked for good.)
flood() {
  ip netns exec "$1" python3 -c 'import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(10)
end = time.monotonic() + 600
try:
    while not os.path.exists("/tmp/udp-stop") and time.monotonic() < end:
        s.sendto(bytes(4096), (sys.argv[1], 9)); time.sleep(0.002)
except OSError as e:
    print("# flood to", sys.argv[1], "stopped:", e)' "$2" &
}
dm0=$(dmesg | wc -l)
rm -f /tmp/udp-stop
flood $B $ZC_IP_A; fl1=$!
flood $A $ZC_IP_B; fl2=$!
stream_start $A $B $ZC_IP_B s_ab && stream_start $B $A $ZC_IP_A s_ba || t_fail "two TCP streams started"
moving() { stream_moving s_ab && stream_moving s_ba; }
moving || t_fail "both streams move before the cycles"
sizes=(64 128 256 "$rmax")
tsizes=(256 64 "$tmax" 128)
# cycle_diag WHAT: what a stopped stream left behind (the first time only):
# both devices' non-zero counters, the sockets, the queues' byte limits.
cycle_diag() {
  [ -n "${CYCLE_DIAG:-}" ] && return
  CYCLE_DIAG=1
  echo "# $1: a->b at $(_stream_bytes s_ab), b->a at $(_stream_bytes s_ba)"
  ip netns exec $A ethtool -S $ZC_IF_A | awk '$2 != 0' | sed 's/^ */# va /'
  ip netns exec $B ethtool -S $ZC_IF_B | awk '$2 != 0' | sed 's/^ */# vb /'
  ip netns exec $A ss -tin | sed 's/^/# va ss /'
  ip netns exec $B ss -tin | sed 's/^/# vb ss /'
  ip netns exec $A sh -c "cd /sys/class/net/$ZC_IF_A/queues && grep . tx-*/byte_queue_limits/inflight tx-*/byte_queue_limits/limit" | sed 's/^/# va /'
  ip netns exec $A tc -s qdisc show dev $ZC_IF_A | sed 's/^/# va tc /'
}
bad=0 stuck=0
for i in $(seq 20); do
  ip netns exec $A ethtool -G $ZC_IF_A rx "${sizes[i % 4]}" tx "${tsizes[i % 4]}" || bad=$((bad + 1))
  moving || { stuck=$((stuck + 1)); cycle_diag "stopped after -G cycle $i (rx ${sizes[i % 4]} tx ${tsizes[i % 4]})"; }
  [ "$stuck" -ge 2 ] && break
done
t_expect "20 ethtool -G cycles (rx and tx) under two streams and UDP floods: each done" 0 "$bad"
t_expect "both streams moved after each -G cycle" 0 "$stuck"
ip netns exec $A ethtool -G $ZC_IF_A rx "$rmax" tx "$tmax"
if [ "${maxq:-1}" -ge 2 ]; then
  bad=0 stuck=0
  for i in $(seq 20); do
    ip netns exec $A ethtool -L $ZC_IF_A combined $(( i % 2 ? 1 : maxq )) || bad=$((bad + 1))
    moving || { stuck=$((stuck + 1)); cycle_diag "stopped after -L cycle $i"; }
    [ "$stuck" -ge 2 ] && break
  done
  t_expect "20 ethtool -L cycles (1 and $maxq pairs) under the same load: each done" 0 "$bad"
  t_expect "both streams moved after each -L cycle" 0 "$stuck"
  t_expect "ethtool -l: back to $maxq pairs" "$maxq" "$(chans_a)"
else
  t_skip "ethtool -L cycles under load" "one queue pair (the tap wire has two)"
fi
stream_stop s_ab "TCP stream native va -> vb through the cycles"
stream_stop s_ba "TCP stream vb -> native va through the cycles"
touch /tmp/udp-stop; wait $fl1 $fl2
t_expect "ethtool -g: back to $rmax/$tmax" "$rmax $tmax" "$(ring_a Current RX) $(ring_a Current TX)"
sp=$(dmesg | tail -n +$((dm0 + 1)) | grep -E "BUG|WARNING|lockup|hung_task|Call Trace" | head -3)
[ -z "$sp" ] && t_ok "no splat in the kernel log during the cycles" || t_fail "no splat in the kernel log during the cycles" "$sp"

# Receive rings that get no page (the test knob test_rx_no_pages, as when
# an atomic page allocation fails) run empty under 2000 datagrams from vb;
# the poll stays scheduled and tries again (rx_refill_retries), so once
# pages can be had vb's pings are answered with nothing sent by va in
# between to poll the rings (issue 44: an emptied ring stayed empty).
knob=/sys/module/zcfrag/parameters/test_rx_no_pages
rr0=$(st $A $ZC_IF_A rx_refill_retries)
echo 1 > $knob
ip netns exec $B python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(2000):
    s.sendto(bytes(64), (sys.argv[1], 9))' "$ZC_IP_A"
wait_for "the rings ran empty" eval '[ "$(st $A $ZC_IF_A rx_refill_retries)" -gt "$rr0" ]' &&
  t_ok "rings that get no page run empty and are polled again (rx_refill_retries +$(( $(st $A $ZC_IF_A rx_refill_retries) - rr0 )))" ||
  t_fail "rings that get no page are polled again" "rx_refill_retries $rr0 -> $(st $A $ZC_IF_A rx_refill_retries)"
echo 0 > $knob
t_run "pages again: vb's pings answered" ip netns exec $B ping -c 3 -i 0.3 -W 3 $ZC_IP_A

echo "$ZC_MAC_A" > /sys/module/zcfrag/parameters/devices
t_run "vb back to virtio_net" bind_b virtio_net
[ "${ZCNET_WIRE:-}" = tap ] && ip netns exec $B ethtool -L $ZC_IF_B combined 1
ip netns exec $A ip neigh flush dev $ZC_IF_A
t_run "ping vb on virtio_net again" ip netns exec $A ping -c 2 -i 0.2 -W 2 $ZC_IP_B

read -r rxp txp < <(ip netns exec $A cat /sys/class/net/$ZC_IF_A/statistics/rx_packets /sys/class/net/$ZC_IF_A/statistics/tx_packets | tr '\n' ' ')
[ "${rxp:-0}" -gt 10000 ] && [ "${txp:-0}" -gt 10000 ] && t_ok "ip -s link counts packets ($rxp received, $txp sent)" ||
  t_fail "ip -s link counts packets" "rx $rxp tx $txp"

# Unbind and rebind under traffic (both directions), 8 times (20 before the
# test-time cut of 2026-11-27). The unbind
# comes once the floods have had replies (traffic in flight both ways).
ok=1
for i in $(seq 8); do
  ip netns exec $B timeout 8 ping -q -f -w 1 $ZC_IP_A > /dev/null 2>&1 &
  ip netns exec $A timeout 8 ping -q -f -w 1 $ZC_IP_B > /dev/null 2>&1 &
  r0=$(ip netns exec $A cat /sys/class/net/$ZC_IF_A/statistics/rx_packets)
  for _ in $(seq 100); do
    [ "$(ip netns exec $A cat /sys/class/net/$ZC_IF_A/statistics/rx_packets)" -gt $((r0 + 20)) ] && break
    sleep 0.01
  done
  echo "$VD" > /sys/bus/virtio/drivers/zcfrag/unbind || ok=0
  kill $(jobs -p) 2>/dev/null
  wait
  native_up || ok=0
done
[ $ok = 1 ] && t_ok "unbind and rebind under flood ping, 8 times" || t_fail "unbind and rebind under flood ping, 8 times"
tcp_xfer $A $B $ZC_IP_B $((4 << 20)) "TCP 4 MiB after the rebinds, byte-exact"

# rmmod after unbind; loaded again, zcfrag binds the driverless device its
# `devices` parameter names by itself.
echo "$VD" > /sys/bus/virtio/drivers/zcfrag/unbind
t_run "rmmod zcfrag after unbind" rmmod zcfrag
t_expect "va has no driver after the unbind and rmmod" "" "$(drv)"
t_run "insmod zcfrag again" insmod "$(ko zcfrag)" devices="$ZC_MAC_A"
t_expect "loading binds the driverless device it names" zcfrag "$(drv)"
t_run "va up again after reloading" native_up
tcp_xfer $B $A $ZC_IP_A $((4 << 20)) "TCP 4 MiB after the reload, byte-exact"

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
# Back on virtio_net, va too runs one queue pair on the tap wire (see vb above).
[ "${ZCNET_WIRE:-}" = tap ] && ip netns exec $A ethtool -L $ZC_IF_A combined 1
t_expect "va is back on virtio_net" virtio_net "$(drv)"
t_run "virtio_net carries va again" ip netns exec $A ping -c 2 -i 0.2 -W 2 $ZC_IP_B
kmemleak_clean "no leak (kmemleak, debug kernel)"
t_done
