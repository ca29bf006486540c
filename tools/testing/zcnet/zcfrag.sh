#!/bin/bash
# zcfrag: the stacked device, its fragmenting transmit and its receive path,
# against itself and against the unmodified Linux stack. Byte-exact transfers
# are checked by md5 of seeded data. Runs in the veth and virtio2 topologies.
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
SEED=7
stat() { ip netns exec "$1" ethtool -S "$2" | awk -v n="$3" '$1 == n":" { print $2 }'; }
. "$ZCNET_ROOT/tools/testing/zcnet/zcfrag-lib.sh"
t_run "insmod zcfrag" insmod "$(ko zcfrag)"

# --- creation and its errors ---
out=$(ip -n a link add zf0 type zcfrag 2>&1)
case "$out" in *"lower device is needed"*) t_ok "no lower device: refused, explained" ;; *) t_fail "no lower device: refused, explained" "$out" ;; esac
out=$(ip -n a link add zf0 link lo type zcfrag 2>&1)
case "$out" in *"must be an Ethernet device"*) t_ok "loopback lower: refused" ;; *) t_fail "loopback lower: refused" "$out" ;; esac
t_run "ip link add zf0 link va type zcfrag" ip -n a link add zf0 link va type zcfrag
out=$(ip -n a link add zf9 link va type zcfrag 2>&1)
case "$out" in *"already in use"*) t_ok "second device on one lower: EBUSY" ;; *) t_fail "second device on one lower: EBUSY" "$out" ;; esac
t_expect "default MTU 4148 (4096 + 20 + 32)" 4148 "$(ip -n a -j link show zf0 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["mtu"])')"
ip -n a -d link show zf0 | grep -q "zcfrag" && t_ok "ip -d link shows kind zcfrag" || t_fail "ip -d link shows kind zcfrag"

# --- link options through ip and the plugin (tools/iproute2/link_zcfrag.c) ---
export IP_LIB_DIR=$ZCNET_ROOT/tools/target/ip
zsys() { ip netns exec a cat "/sys/class/net/$1/zcfrag/$2"; }
opts() { ip -n a -d link show "$1" | grep -oE "slots [0-9]+ timeout [0-9]+ admission [a-z]+ implicit [a-z]+ grant_timeout [0-9]+"; }
t_expect "ip -d link shows the options (defaults)" "slots 8 timeout 10000 admission open implicit on grant_timeout 2000" "$(opts zf0)"
t_expect "ip -j -d link: info_data" "8 10000 open on 2000" "$(ip -n a -j -d link show zf0 | python3 -c 'import json,sys
d = json.load(sys.stdin)[0]["linkinfo"]["info_data"]
print(d["slots"], d["timeout_us"], d["admission"], d["implicit"], d["grant_timeout_ms"])')"
ip -n a link add t0 type veth peer name t1
t_run "ip link add ... type zcfrag with every option" ip -n a link add zf8 link t0 type zcfrag slots 4 timeout 5000 admission required implicit off grant_timeout 3000
t_expect "options reach the device (sysfs)" "4 5000 required 0 3000" "$(zsys zf8 slots) $(zsys zf8 timeout_us) $(zsys zf8 admission) $(zsys zf8 implicit_admission) $(zsys zf8 grant_timeout_ms)"
t_expect "ip -d link shows them" "slots 4 timeout 5000 admission required implicit off grant_timeout 3000" "$(opts zf8)"
t_run "ip link set ... type zcfrag slots 16" ip -n a link set zf8 type zcfrag slots 16
t_expect "only slots changed" "slots 16 timeout 5000 admission required implicit off grant_timeout 3000" "$(opts zf8)"
out=$(ip -n a link set zf8 type zcfrag timeout 2000 slots 33 2>&1)
case "$out" in *"slots must be 1..32"*) t_ok "slots 33 refused, explained" ;; *) t_fail "slots 33 refused, explained" "$out" ;; esac
t_expect "a refused request changes nothing (timeout stays 5000)" "slots 16 timeout 5000" "$(opts zf8 | cut -d' ' -f1-4)"
for bad in "timeout 99" "grant_timeout 5" "slots 0"; do
  out=$(ip -n a link set zf8 type zcfrag $bad 2>&1)
  case "$out" in *"zcfrag: "*" must be"*) t_ok "$bad refused by the kernel" ;; *) t_fail "$bad refused by the kernel" "$out" ;; esac
done
for bad in "slots x" "admission maybe" "implicit 2" "speed 9" "slots"; do
  ip -n a link set zf8 type zcfrag $bad >/dev/null 2>&1 && t_fail "ip refuses '$bad'" || t_ok "ip refuses '$bad'"
done
ip -n a link add zf7 link t1 type zcfrag slots 64 >/dev/null 2>&1 && t_fail "ip link add with slots 64 refused" || t_ok "ip link add with slots 64 refused"
ip -n a link show zf7 >/dev/null 2>&1 && t_fail "no device left by the refused add" || t_ok "no device left by the refused add"
ip netns exec a ethtool -C zf8 rx-usecs 7000
t_expect "ethtool -C and ip agree on the timeout" "timeout 7000" "$(opts zf8 | cut -d" " -f3-4)"
ip -n a link del zf8; ip -n a link del t0
unset IP_LIB_DIR
t_expect "same MAC as the lower device" "$(cat /sys/class/net/va/address 2>/dev/null || ip netns exec a cat /sys/class/net/va/address)" "$(ip netns exec a cat /sys/class/net/zf0/address)"
ip netns exec a ethtool -i zf0 | grep -q "^driver: zcfrag" && t_ok "ethtool -i: driver zcfrag" || t_fail "ethtool -i: driver zcfrag"
ip netns exec a ethtool -S zf0 | grep -q "tx_fragmented_packets" && t_ok "ethtool -S lists the counters" || t_fail "ethtool -S lists the counters"
t_run "mtu 9000 settable" ip -n a link set zf0 mtu 9000
ip -n a link set zf0 mtu 4148

# Addresses move from the lower device to zcfrag.
ip -n a addr flush dev va
ip -n a addr add "$ZC_IP_A/24" dev zf0
t_run "zf0 up" ip -n a link set zf0 up

# --- zcfrag -> unmodified stack, and back ---
t_run "ping -s 4000 (fragments) zcfrag -> stack" ip netns exec a ping -c 3 -i 0.2 -W 10 -s 4000 -M dont "$ZC_IP_B"
t_expect "tx_fragmented_packets counted the pings (3 requests)" 3 "$(stat a zf0 tx_fragmented_packets)"
t_expect "3 fragments per 4008-byte ICMP packet at MTU 1500" 9 "$(stat a zf0 tx_fragments)"
# A packet shorter than a page train leaves as a full one (its last fragment
# split), and the unmodified stack reassembles it.
t_run "ping -s 2000: a short train padded to 3 fragments, answered by the stack" ip netns exec a ping -c 3 -i 0.2 -W 10 -s 2000 -M dont "$ZC_IP_B"
t_expect "3 fragments per 2008-byte ICMP packet too" 18 "$(stat a zf0 tx_fragments)"
tcp_xfer a b "$ZC_IP_B" 16777216 "TCP 16 MiB zcfrag -> unmodified stack, md5"
tcp_xfer b a "$ZC_IP_A" 16777216 "TCP 16 MiB unmodified stack -> zcfrag, md5"
udp_xfer a b "$ZC_IP_B" 200 4000 "UDP 200 x 4000 B zcfrag -> unmodified stack"
udp_xfer b a "$ZC_IP_A" 200 4000 "UDP 200 x 4000 B unmodified stack -> zcfrag"
r=$(stat a zf0 rx_ipv4_fragments)
[ "${r:-0}" -ge 600 ] && t_ok "rx_ipv4_fragments counts the stack's fragments ($r)" || t_fail "rx_ipv4_fragments counts the stack's fragments" "got $r"

# --- IPv6 over zf0 (issue 44 minor) ---
# IPv6 is never fragmented on the way: a packet over the wire's MTU is
# answered with Packet Too Big carrying it, and the sender's stack then
# fragments (ping) or segments (TCP) for the path; no connection stalls.
ip -n a addr add fd00:7a::1/64 dev zf0 nodad
ip -n b addr add fd00:7a::2/64 dev vb nodad
nstat6() { ip netns exec "$1" nstat -az "$2" | awk -v k="$2" '$1 == k { print $2 }'; }
wire_mtu=$(ip -n b -o link show vb | sed -n 's/.* mtu \([0-9]*\) .*/\1/p')
ptb0=$(nstat6 a Icmp6OutPktTooBigs)
out=$(ip netns exec a ping -6 -c 4 -i 0.2 -W 5 -s 3000 fd00:7a::2 2>&1)
rcvd=$(printf '%s\n' "$out" | sed -n 's/.* \([0-9]*\) received.*/\1/p')
[ "${rcvd:-0}" -ge 3 ] && t_ok "IPv6 ping -s 3000 through zf0: answered after Packet Too Big ($rcvd of 4)" ||
  t_fail "IPv6 ping -s 3000 through zf0: answered after Packet Too Big" "$(printf '%s\n' "$out" | tail -n 2 | tr '\n' ' ')"
ptb1=$(nstat6 a Icmp6OutPktTooBigs)
[ "$((ptb1 - ptb0))" -ge 1 ] && t_ok "zf0 answered IPv6 over the wire's MTU with Packet Too Big (+$((ptb1 - ptb0)))" ||
  t_fail "zf0 answered IPv6 over the wire's MTU with Packet Too Big" "Icmp6OutPktTooBigs +$((ptb1 - ptb0))"
t_expect "the sender's stack learnt the wire's MTU as the path MTU" "mtu $wire_mtu" \
  "$(ip -n a -6 route get fd00:7a::2 | grep -o 'mtu [0-9]*' | head -n 1)"
# TCP, the path MTU forgotten first, and the peer advertising a page-sized
# MSS (as a zcfrag or jumbo-frame peer does): segments over the wire's MTU
# at first, then the path's.
ip -n a -6 route flush cache
ip -n b -6 route add fd00:7a::1/128 dev vb advmss 4088
port=$((8000 + RANDOM % 1000))
seeded_bytes "$SEED" 4194304 > /tmp/tx6
ip netns exec b bash -c "timeout 180 socat -u TCP6-LISTEN:$port,reuseaddr - | md5sum > /tmp/rx6-sum" &
rx6=$!
ip netns exec a timeout 150 socat -u OPEN:/tmp/tx6 "TCP6:[fd00:7a::2]:$port,retry=200,interval=0.05" || echo "# IPv6 TCP: the sender failed or timed out"
wait $rx6
t_expect "TCP over IPv6, 4 MiB zcfrag -> unmodified stack, md5" "$(md5sum < /tmp/tx6 | cut -d' ' -f1)" "$(cut -d' ' -f1 /tmp/rx6-sum)"
rm -f /tmp/tx6
ip -n a addr del fd00:7a::1/64 dev zf0
ip -n b -6 route del fd00:7a::1/128 dev vb
ip -n b addr del fd00:7a::2/64 dev vb

# --- every boundary of the fragment plan, against the unmodified stack ---
# IP payloads around each place where the plan changes shape, at three
# lower MTUs: an empty fragment made Linux drop the whole datagram, so UDP
# lost those sizes and TCP stalled on them (issue 44). vb's MTU lets b
# advertise an MSS of a page.
ip -n b link set vb mtu 4148
for m in 576 1280 1500; do
  ip -n a link set va mtu $m
  frag_sizes a b "$ZC_IP_B" $m "zcfrag -> unmodified stack"
done
ip -n a link set va mtu 1500
ip -n b link set vb mtu 1500

# --- zcfrag <-> zcfrag: 4096-byte TCP segments travel as 3 fragments ---
t_run "zf1 on vb" ip -n b link add zf1 link vb type zcfrag
ip -n b addr flush dev vb
ip -n b addr add "$ZC_IP_B/24" dev zf1
ip -n b link set zf1 up
before=$(stat a zf0 tx_fragmented_packets)
cp0=$(stat a zf0 tx_copied_bytes); rf0=$(stat a zf0 tx_referenced_bytes)
tcp_xfer b a "$ZC_IP_A" 16777216 "TCP 16 MiB zcfrag -> zcfrag (reverse), md5"
tcp_xfer a b "$ZC_IP_B" 1048576 "TCP 1 MiB zcfrag -> zcfrag, md5"
# 256 MiB on virtio2 (the wire that fragments), 64 MiB on veth: the
# test-time budget (2026-11-27).
mib=256
[ "$ZCNET_TOPO" = veth ] && mib=64
tcp_xfer a b "$ZC_IP_B" $((mib << 20)) "TCP $mib MiB zcfrag -> zcfrag, md5"
rm -f /tmp/tx
n=$(( $(stat a zf0 tx_fragmented_packets) - before ))
[ $n -ge 16000 ] && t_ok "page-sized segments were fragmented ($n packets for $((mib + 1)) MiB)" || t_fail "page-sized segments were fragmented" "only $n"
cp=$(( $(stat a zf0 tx_copied_bytes) - cp0 )); rf=$(( $(stat a zf0 tx_referenced_bytes) - rf0 ))
echo "# transmit: $rf payload bytes referenced, $cp copied"
if ip netns exec a ethtool -k va | grep -q "^scatter-gather: on"; then
  [ $rf -ge 60000000 ] && [ $((cp * 100)) -le $rf ] && t_ok "TCP fragments reference the payload pages (copied $cp of $((rf + cp)) bytes)" || t_fail "TCP fragments reference the payload pages" "referenced $rf, copied $cp"
else
  # A lower device without scatter-gather (virtio-net on QEMU's socket
  # backend offers no checksum offload, hence no SG): the core would
  # linearise each fragment, so zcfrag copies, counted.
  [ $rf = 0 ] && [ $cp -ge 60000000 ] && t_ok "lower device without SG: fragments copied, counted ($cp bytes)" || t_fail "lower device without SG: fragments copied" "referenced $rf, copied $cp"
fi
# With scatter-gather off on zf0 the stack hands over linear packets: the
# fragments are then copied (the baseline the counters compare against).
ip -n a link set zf0 down; ethtool_out=$(ip netns exec a ethtool -K zf0 sg off 2>&1); ip -n a link set zf0 up
cp0=$(stat a zf0 tx_copied_bytes)
tcp_xfer a b "$ZC_IP_B" 4194304 "TCP 4 MiB with sg off on zf0 (copying transmit), md5"
cp=$(( $(stat a zf0 tx_copied_bytes) - cp0 ))
[ $cp -ge 4000000 ] && t_ok "sg off: fragments copied ($cp bytes)" || t_fail "sg off: fragments copied" "$cp bytes; $ethtool_out"
ip netns exec a ethtool -K zf0 sg on
ip netns exec a ethtool -k zf0 | grep -q "^scatter-gather: on" && t_ok "ethtool -k: scatter-gather on" || t_fail "ethtool -k: scatter-gather on"
udp_xfer a b "$ZC_IP_B" 200 8000 "UDP 200 x 8000 B zcfrag -> zcfrag"

# --- receive speculation: clean traffic lands in single pages ---
pot0=$(stat b zf1 zc_potential); ok0=$(stat b zf1 zc_successful); full0=$(stat b zf1 zc_full_pages)
pn0=$(stat b zf1 rx_pages_new); pr0=$(stat b zf1 rx_pages_reused); ps0=$(stat b zf1 rx_pages_stashed)
page_segs_start a zf0 "$ZC_IP_A"
tcp_xfer a b "$ZC_IP_B" 33554432 "TCP 32 MiB zcfrag -> zcfrag (speculated), md5"
sent=$(page_segs_stop)
pot=$(( $(stat b zf1 zc_potential) - pot0 )); ok=$(( $(stat b zf1 zc_successful) - ok0 )); full=$(( $(stat b zf1 zc_full_pages) - full0 ))
pn=$(( $(stat b zf1 rx_pages_new) - pn0 )); pr=$(( $(stat b zf1 rx_pages_reused) - pr0 ))
# (Pages from the stash, which zcsock fills, count as new here: none
# without zcsock.)
pn=$(( pn + $(stat b zf1 rx_pages_stashed) - ps0 ))
echo "# speculation: $ok of $pot trains completed, $full full pages; pages: $pr reused, $pn new"
# The md5 above proves no page was reused while the stack still held it.
[ $pr -gt 0 ] && t_ok "receive pages come back for reuse ($pr reused, $pn new)" || t_fail "receive pages come back for reuse" "$pr reused, $pn new"
# Each completed train takes its page away; a missed one leaves it in the
# slot for the next (at most one per slot, 32, also from before the run).
[ $((pr + pn)) -ge $((ok - 32)) ] && [ $((pr + pn)) -le $((ok + 32)) ] && t_ok "one page per completed train ($((pr + pn)) for $ok)" || t_fail "one page per completed train" "$((pr + pn)) pages for $ok"
[ $pot -gt 8000 ] && [ $((ok * 100)) -ge $((pot * 99)) ] && t_ok "at least 99% of trains complete ($ok/$pot)" || t_fail "at least 99% of trains complete" "$ok/$pot"
# The sender's TCP decides how many of the 8192 pages leave as whole
# 4096-byte segments (7782 to 8185 seen; CI failed a fixed 95% of 8192 at
# 7782 on 2026-11-28): each of those must arrive as one full page.
if [ -n "$sent" ] && [ "$sent" -ge 4096 ]; then
  [ $((full * 100)) -ge $((sent * 99)) ] && t_ok "page-sized segments arrive as single page fragments ($full full pages for the $sent the sender sent, 32 MiB)" || t_fail "page-sized segments arrive as single page fragments" "$full full pages for $sent whole-page segments sent"
else
  t_fail "page-sized segments arrive as single page fragments" "sender capture: '${sent}' whole-page segments (need 4096 or more)"
fi
t_expect "no slot left busy after the transfer" 0 "$(stat b zf1 slots_in_use)"

# --- backpressure: a slow lower device queues fragments, it does not drop ---
# Each fragment stays charged to the sending socket until it leaves, so TCP
# Small Queues holds the sender back; freed with the packet right after
# fragmenting, TCP would fill the lower qdisc until it drops. The shaper is
# tbf: netem with a rate orphans what it queues, which hides the queue from
# TCP for any sender.
qdrops() { ip netns exec a tc -s qdisc show dev va | grep -o "dropped [0-9]*" | head -n1 | cut -d' ' -f2; }
# A receive window that does not cap the sender (1 MiB from the start).
d0=$(stat a zf0 tx_drop_lower); rmem=$(ip netns exec b sysctl -n net.ipv4.tcp_rmem)
ip netns exec b sysctl -q -w net.ipv4.tcp_rmem="4096 1048576 4194304"
t_run "tbf 40 Mbit/s on the lower device" ip netns exec a tc qdisc replace dev va root tbf rate 40mbit burst 16kb limit 150kb
tcp_xfer a b "$ZC_IP_B" 16777216 "TCP 16 MiB through the 40 Mbit/s lower device, md5"
qd=$(qdrops)
ip netns exec a tc qdisc del dev va root
ip netns exec b sysctl -q -w net.ipv4.tcp_rmem="$rmem"
t_expect "the lower qdisc dropped nothing" 0 "$qd"
t_expect "no fragment refused by the lower device (tx_drop_lower)" 0 "$(( $(stat a zf0 tx_drop_lower) - d0 ))"

# --- misses: netem on a's lower device damages the a -> b trains ---
# miss_check NETEM_ARGS COUNTER NAME: a 4 MiB transfer stays byte-exact and
# the named miss counter moves.
miss_check() {
  local before after
  before=$(stat b zf1 "$2")
  ip netns exec a tc qdisc replace dev va root netem $1
  tcp_xfer a b "$ZC_IP_B" 4194304 "TCP 4 MiB through netem $1, md5"
  ip netns exec a tc qdisc del dev va root
  after=$(stat b zf1 "$2")
  [ "$after" -gt "$before" ] && t_ok "$3 counted as $2 ($((after - before)))" || t_fail "$3 counted as $2" "$before -> $after"
}
miss_check "loss 5%" zc_miss_gap "loss"
miss_check "delay 1ms reorder 50% 50%" zc_miss_gap "reordering"
miss_check "duplicate 5%" zc_miss_duplicate "duplication"
# Corrupted payload completes a page packet that TCP's checksum (over the
# whole reassembled segment) then rejects; the transfer stays exact. Only
# first fragments are corrupted (corrupt_first_frags, zcfrag-lib.sh): netem
# flips one bit a frame with no link CRC behind it, and two flipped fragments
# of one segment could cancel in the Internet checksum.
csum() { ip netns exec b awk '/^Tcp:/ { n++; if (n == 1) for (i = 1; i <= NF; i++) k[i] = $i; else for (i = 1; i <= NF; i++) if (k[i] == "InCsumErrors") print $i }' /proc/net/snmp; }
c0=$(csum)
corrupt_first_frags a va 2 || t_fail "netem corrupt on first fragments set up"
tcp_xfer a b "$ZC_IP_B" 4194304 "TCP 4 MiB through netem corrupt 2% of first fragments, md5"
ip netns exec a tc -s qdisc show dev va | sed -n '/netem/,+1s/^/# /p'
ip netns exec a tc qdisc del dev va root
c1=$(csum)
[ "$c1" -gt "$c0" ] && t_ok "corrupted page packets rejected by TCP's checksum ($((c1 - c0)))" || t_fail "corrupted page packets rejected by TCP's checksum" "$c0 -> $c1"
ip netns exec b ethtool -S zf1 | grep -E "zc_|fallback|slots" | sed 's/^/# /'
ip -s -n a link show zf0 | sed 's/^/# /'
out=$(ip netns exec a zcctl frag)
printf '%s\n' "$out" | head -4 | sed 's/^/# /'
case "$out" in *"zf0: lower va, mtu 4148"*tx_fragmented_packets*) t_ok "zcctl frag shows zf0 and its counters" ;; *) t_fail "zcctl frag shows zf0 and its counters" ;; esac

# --- lower device down and up ---
ip -n a link set va down
t_expect "zf0 follows its lower down (operstate)" LOWERLAYERDOWN "$(ip netns exec a cat /sys/class/net/zf0/operstate | tr a-z A-Z)"
ip -n a link set va up
for _ in $(seq 100); do [ "$(ip netns exec a cat /sys/class/net/zf0/operstate)" = up ] && break; sleep 0.05; done
t_expect "zf0 follows its lower up" up "$(ip netns exec a cat /sys/class/net/zf0/operstate)"
tcp_xfer a b "$ZC_IP_B" 4194304 "TCP after lower down/up, md5"

# --- deleting, lower removal, rmmod with devices present ---
t_run "ip link del zf1" ip -n b link del zf1
# Remove the lower device under zf0: delete the veth pair, or unbind the
# virtio-net driver from the NIC (the netdev disappears as on hot-unplug).
if [ "$ZCNET_TOPO" = veth ]; then
  ip -n a link del va
else
  vdev=$(basename "$(ip netns exec a readlink -f /sys/class/net/va/device)")
  echo "$vdev" > /sys/bus/virtio/drivers/virtio_net/unbind
fi
ip netns exec a test -e /sys/class/net/zf0 && t_fail "zf0 removed with its lower device" || t_ok "zf0 removed with its lower device"
if [ "$ZCNET_TOPO" = veth ]; then
  ip link add va netns a type veth peer name vb netns b
else
  echo "$vdev" > /sys/bus/virtio/drivers/virtio_net/bind
  dev=$(ifname_by_mac "$ZC_MAC_A") && ip link set "$dev" netns a && ip -n a link set "$dev" name va
fi
ip -n a link set va up; ip -n b link set vb up
bad=0
for i in $(seq 10); do
  ip -n a link add zf0 link va type zcfrag || bad=$((bad + 1))
  ip -n a link set zf0 up || bad=$((bad + 1))
  ip -n a link del zf0 || bad=$((bad + 1))
done
t_expect "10 create/delete cycles" 0 "$bad"
ip -n a link add zf0 link va type zcfrag && ip -n b link add zf1 link vb type zcfrag
t_run "rmmod with two devices present" rmmod zcfrag
ip netns exec a test -e /sys/class/net/zf0 && t_fail "devices gone with the module" || t_ok "devices gone with the module"
t_done
