#!/bin/bash
# zcfrag admission control (paper §4.1, §4.2) and tuning: Fast_Req, Fast_Ack,
# Fast_NAck and Fast_Rel between two zcfrag devices; explicit (zcctl, ioctl)
# and implicit (the driver asks for a flow sending page-sized packets);
# grant, refusal when every slot is busy, release on close, release on
# timeout, and a sender that never gets an answer. Settings through sysfs and
# ethtool -C. Byte-exact transfers throughout (md5 of seeded data).
#
# ZCFRAG_FRONT=native (zcfrag-admission-native.sh; virtio2 only): zf0 and zf1
# are va's and vb's virtio-net devices themselves on zcfrag's native front
# end; deleting and creating a device is unbinding and binding it, and the
# raw frames of the attacks leave from zf0 and zf1 themselves.
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
SEED=11
stat() { ip netns exec "$1" ethtool -S "$2" | awk -v n="$3" '$1 == n":" { print $2 }'; }
sys() { ip netns exec "$1" cat "/sys/class/net/$2/zcfrag/$3"; }
setsys() { ip netns exec "$1" sh -c "echo '$4' > /sys/class/net/$2/zcfrag/$3" 2>&1; }
# A debug kernel (KASAN, lockdep, kmemleak) under TCG runs timers hundreds
# of milliseconds late: the timing-bound checks stretch by SLOW there.
SLOW=1; [ "${ZCNET_FLAVOUR:-default}" = debug ] && SLOW=4
. "$ZCNET_ROOT/tools/testing/zcnet/zcfrag-lib.sh"
zcctl_a() { ip netns exec a zcctl "$@"; }

NATIVE=0; [ "${ZCFRAG_FRONT:-stacked}" = native ] && NATIVE=1
if [ $NATIVE = 1 ] && [ "$ZCNET_TOPO" != virtio2 ]; then
  t_skip "admission on the native front end" "needs the virtio2 topology"
  t_done; exit
fi
MAC_A=$(ip netns exec a cat /sys/class/net/va/address)
MAC_B=$(ip netns exec b cat /sys/class/net/vb/address)
# The devices under the zcfrag ones (native: none, their virtio devices).
VDEV_A=$(basename "$(ip netns exec a readlink -f /sys/class/net/va/device)")
VDEV_B=$(basename "$(ip netns exec b readlink -f /sys/class/net/vb/device)")
# zf_add NS: zcfrag's device in NS (zf0 in a, zf1 in b), with its address
# (a also 198.18.0.11), up. Stacked: on va or vb. Native: the NIC's virtio
# device bound to zcfrag, its netdev renamed.
zf_add() {
  local ns=$1 dev lower vd ip d
  if [ "$ns" = a ]; then dev=zf0 lower=va vd=$VDEV_A ip=$ZC_IP_A; else dev=zf1 lower=vb vd=$VDEV_B ip=$ZC_IP_B; fi
  if [ $NATIVE = 1 ]; then
    echo "$vd" > /sys/bus/virtio/drivers/zcfrag/bind && d=$(vdev_netdev "$vd") || return 1
    ip link set "$d" netns $ns && ip -n $ns link set "$d" name $dev || return 1
  else
    ip -n $ns link add $dev link $lower type zcfrag || return 1
  fi
  ip -n $ns addr add "$ip/24" dev $dev
  [ "$ns" = a ] && ip -n a addr add 198.18.0.11/24 dev zf0
  ip -n $ns link set $dev up
}
# zf_del NS: deletes it (native: unbinds the virtio device from zcfrag).
zf_del() {
  if [ $NATIVE = 1 ]; then
    if [ "$1" = a ]; then echo "$VDEV_A"; else echo "$VDEV_B"; fi > /sys/bus/virtio/drivers/zcfrag/unbind
  elif [ "$1" = a ]; then
    ip -n a link del zf0
  else
    ip -n b link del zf1
  fi
}
# vb_plain: b without zcfrag: vb on virtio_net (native) or alone, addressed.
vb_plain() {
  local d
  if [ $NATIVE = 1 ]; then
    echo "$VDEV_B" > /sys/bus/virtio/drivers/virtio_net/bind && d=$(vdev_netdev "$VDEV_B") || return 1
    ip link set "$d" netns b && ip -n b link set "$d" name vb && ip -n b link set vb up || return 1
  fi
  ip -n b addr add "$ZC_IP_B/24" dev vb
}
# Where raw frames leave a and b.
if [ $NATIVE = 1 ]; then
  RAW_A=zf0 RAW_B=zf1
  t_run "insmod zcfrag devices=$VDEV_A,$VDEV_B" insmod "$(ko zcfrag)" devices="$VDEV_A,$VDEV_B"
  echo "$VDEV_A" > /sys/bus/virtio/drivers/virtio_net/unbind
  echo "$VDEV_B" > /sys/bus/virtio/drivers/virtio_net/unbind
else
  RAW_A=va RAW_B=vb
  t_run "insmod zcfrag" insmod "$(ko zcfrag)"
  ip -n a addr flush dev va; ip -n b addr flush dev vb
fi
t_run "zf0 in a" zf_add a
t_run "zf1 in b" zf_add b

# --- settings: sysfs and ethtool ---
t_expect "sysfs defaults: slots timeout_us admission implicit grant_timeout_ms" "8 10000 open 1 2000" \
  "$(sys a zf0 slots) $(sys a zf0 timeout_us) $(sys a zf0 admission) $(sys a zf0 implicit_admission) $(sys a zf0 grant_timeout_ms)"
t_expect "ethtool -c: rx-usecs is the speculation timeout" 10000 "$(ip netns exec a ethtool -c zf0 | awk '$1 == "rx-usecs:" { print $2 }')"
t_run "ethtool -C zf0 rx-usecs 5000" ip netns exec a ethtool -C zf0 rx-usecs 5000
t_expect "timeout_us follows ethtool -C" 5000 "$(sys a zf0 timeout_us)"
ip netns exec a ethtool -C zf0 rx-usecs 50 >/dev/null 2>&1 && t_fail "rx-usecs 50 refused (below 100)" || t_ok "rx-usecs 50 refused (below 100)"
bad=0
for kv in "slots 0" "slots 33" "slots x" "admission bogus" "implicit_admission 2" "grant_timeout_ms 1" "timeout_us 99"; do
  set -- $kv
  setsys a zf0 "$1" "$2" >/dev/null && { echo "# accepted $kv"; bad=$((bad + 1)); }
done
t_expect "out-of-range sysfs values refused (EINVAL)" 0 "$bad"
out=$(ip netns exec a sh -c 'echo 1 > /sys/class/net/zf0/zcfrag/admissions' 2>&1) && t_fail "admissions is read-only" || t_ok "admissions is read-only"
setsys a zf0 timeout_us 10000 >/dev/null
t_run "slots settable (4)" setsys a zf0 slots 4
t_expect "slots reads back" 4 "$(sys a zf0 slots)"
setsys a zf0 slots 8 >/dev/null

# --- explicit admission: grant ---
# b speculates only on admitted flows, with one slot; a asks by itself only
# when told.
setsys b zf1 admission required; setsys b zf1 slots 1; setsys a zf0 implicit_admission 0
out=$(zcctl_a admit zf0 "$ZC_IP_B" tcp); rc=$?
echo "# $out"
case "$out" in *"granted, slot 0"*) t_ok "zcctl admit: granted (slot 0)" ;; *) t_fail "zcctl admit: granted (slot 0)" "rc $rc: $out" ;; esac
t_expect "receiver counts the grant (adm_granted, grants_active)" "1 1" "$(stat b zf1 adm_granted) $(stat b zf1 grants_active)"
[ "$(stat a zf0 adm_answers_ack)" -ge 1 ] && t_ok "requester counts the Fast_Ack" || t_fail "requester counts the Fast_Ack"
sys b zf1 admissions | grep -q "grant slot 0 $ZC_IP_A > $ZC_IP_B proto 6" && t_ok "receiver's admissions list the grant" || t_fail "receiver's admissions list the grant" "$(sys b zf1 admissions)"
out=$(zcctl_a query zf0 "$ZC_IP_B" tcp)
case "$out" in *granted*) t_ok "zcctl query: granted" ;; *) t_fail "zcctl query: granted" "$out" ;; esac
out=$(ip netns exec a zcctl frag zf0)
case "$out" in *"request $ZC_IP_A:0 > $ZC_IP_B:0 proto 6 state granted slot 0 explicit"*) t_ok "zcctl frag lists the request" ;; *) t_fail "zcctl frag lists the request" "$(printf '%s' "$out" | grep request)" ;; esac
ok0=$(stat b zf1 zc_successful)
tcp_xfer a b "$ZC_IP_B" 4194304 "TCP 4 MiB on the granted flow, md5"
ok=$(( $(stat b zf1 zc_successful) - ok0 ))
[ $ok -ge 900 ] && t_ok "granted flow is speculated on ($ok page packets)" || t_fail "granted flow is speculated on" "$ok"

# --- refusal: the only slot is taken ---
out=$(zcctl_a admit zf0 "$ZC_IP_B" tcp src 198.18.0.11); rc=$?
echo "# $out"
case "$out" in *refused*) t_ok "second flow refused: every slot busy (exit $rc)" ;; *) t_fail "second flow refused" "rc $rc: $out" ;; esac
[ "$(stat b zf1 adm_refused)" -ge 1 ] && t_ok "receiver counts the refusal (adm_refused)" || t_fail "receiver counts the refusal (adm_refused)"
na0=$(stat b zf1 rx_not_admitted); ok0=$(stat b zf1 zc_successful)
tcp_xfer a b "$ZC_IP_B" 4194304 "TCP 4 MiB on the refused flow (normal path), md5" 198.18.0.11
na=$(( $(stat b zf1 rx_not_admitted) - na0 ))
[ $na -ge 900 ] && t_ok "refused flow runs on the normal path (rx_not_admitted $na)" || t_fail "refused flow runs on the normal path" "rx_not_admitted $na"
t_expect "refused flow never speculated on" 0 "$(( $(stat b zf1 zc_successful) - ok0 ))"

# --- release, then the slot goes to the next request ---
out=$(zcctl_a release zf0 "$ZC_IP_B" tcp)
wait_for "grant released" sh -c "[ \"\$(ip netns exec b ethtool -S zf1 | awk '\$1 == \"grants_active:\" { print \$2 }')\" = 0 ]" && t_ok "zcctl release: Fast_Rel frees the slot" || t_fail "zcctl release: Fast_Rel frees the slot"
t_expect "receiver counts the Fast_Rel" 1 "$(stat b zf1 adm_releases_received)"
out=$(zcctl_a admit zf0 "$ZC_IP_B" tcp src 198.18.0.11)
case "$out" in *granted*) t_ok "after the release the refused flow is granted" ;; *) t_fail "after the release the refused flow is granted" "$out" ;; esac
zcctl_a release zf0 "$ZC_IP_B" tcp src 198.18.0.11 >/dev/null
wait_for "no grant" sh -c "[ \"\$(ip netns exec b ethtool -S zf1 | awk '\$1 == \"grants_active:\" { print \$2 }')\" = 0 ]"

# --- implicit admission, released when the connection closes ---
setsys a zf0 implicit_admission 1
rq0=$(stat a zf0 adm_requests_sent); rl0=$(stat a zf0 adm_releases_sent); ok0=$(stat b zf1 zc_successful)
gr0=$(stat b zf1 adm_granted); rr0=$(stat b zf1 adm_releases_received); ex0=$(stat b zf1 adm_grants_expired)
tcp_xfer a b "$ZC_IP_B" 8388608 "TCP 8 MiB with implicit admission, md5"
[ "$(( $(stat a zf0 adm_requests_sent) - rq0 ))" -ge 1 ] && t_ok "the driver asked by itself (Fast_Req sent)" \
  || t_fail "the driver asked by itself" "no Fast_Req sent"
ok=$(( $(stat b zf1 zc_successful) - ok0 ))
[ $ok -ge 1800 ] && t_ok "implicitly admitted flow speculated on ($ok of 2048 pages)" || t_fail "implicitly admitted flow speculated on" "$ok"
wait_for "grant released on close" sh -c "[ \"\$(ip netns exec b ethtool -S zf1 | awk '\$1 == \"grants_active:\" { print \$2 }')\" = 0 ]" && t_ok "connection close (FIN) released the slot" || t_fail "connection close released the slot" "$(sys b zf1 admissions)"
# One grant, given back at the close; a stall longer than the requester's
# idle time (TCP backing off after losses on the virtio2 wire, late TCG
# timers) ends a grant early and the flow asks again: every grant given
# back all the same.
g=$(( $(stat b zf1 adm_granted) - gr0 )); r=$(( $(stat b zf1 adm_releases_received) - rr0 )); e=$(( $(stat b zf1 adm_grants_expired) - ex0 ))
echo "# implicit admission: $g granted, $r released, $e expired"
[ "$g" -ge 1 ] && [ "$g" -le $(( r + e )) ] && t_ok "every grant the driver asked for was given back ($g granted, $r released, $e expired)" ||
  t_fail "every grant the driver asked for was given back" "$g granted, $r released, $e expired"
[ "$(( $(stat a zf0 adm_releases_sent) - rl0 ))" -ge 1 ] && t_ok "requester sent the Fast_Rel" || t_fail "requester sent the Fast_Rel"

# --- release on timeout: a requester that went away loses its grant ---
# A Fast_Req from a raw socket on a's lower device: a sender that asks once
# and never renews (an explicit grant of a live zcfrag requester is renewed
# every half grant_timeout_ms, see below).
setsys b zf1 grant_timeout_ms 300
ex0=$(stat b zf1 adm_grants_expired); gr0=$(stat b zf1 adm_granted)
ip netns exec a python3 - "$MAC_B" "$MAC_A" "$RAW_A" <<'PY'
import socket, struct, sys
mac = lambda s: bytes(int(x, 16) for x in s.split(":"))
body = struct.pack("!BBBBI4s4sHHII", 1, 1, 0, 17, 77, bytes([198, 18, 0, 99]), bytes([198, 18, 0, 2]), 5000, 5001, 0, 0)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[3], 0))
s.send(mac(sys.argv[1]) + mac(sys.argv[2]) + b"\x88\xb5" + body)
PY
wait_for "grant given" sh -c "[ \$(( \$(ip netns exec b ethtool -S zf1 | awk '\$1 == \"adm_granted:\" { print \$2 }') - $gr0 )) -ge 1 ]" && t_ok "raw Fast_Req granted" || t_fail "raw Fast_Req granted"
wait_for "grant expired" sh -c "[ \"\$(ip netns exec b ethtool -S zf1 | awk '\$1 == \"grants_active:\" { print \$2 }')\" = 0 ]" && t_ok "grant of a silent requester taken back after grant_timeout_ms" || t_fail "grant of a silent requester taken back"
t_expect "adm_grants_expired counted it" 1 "$(( $(stat b zf1 adm_grants_expired) - ex0 ))"
# A live explicit requester renews its grant: it outlives grant_timeout_ms.
# (1 s here: under TCG timers run late by a hundred milliseconds at times.)
setsys b zf1 grant_timeout_ms $((1000 * SLOW))
setsys a zf0 implicit_admission 0
zcctl_a admit zf0 "$ZC_IP_B" udp >/dev/null
rn0=$(stat b zf1 adm_requests_received)
wait_for "three renewals" sh -c "[ \$(( \$(ip netns exec b ethtool -S zf1 | awk '\$1 == \"adm_requests_received:\" { print \$2 }') - $rn0 )) -ge 3 ]" && t_ok "explicit grant renewed (Fast_Req every grant_timeout_ms / 3)" || t_fail "explicit grant renewed"
t_expect "renewed grant still held after 3 renewals (> grant_timeout_ms)" 1 "$(stat b zf1 grants_active)"
[ "$(stat b zf1 adm_renewals)" -ge 3 ] && t_ok "adm_renewals counts them" || t_fail "adm_renewals counts them"
t_expect "and not expired" 1 "$(( $(stat b zf1 adm_grants_expired) - ex0 ))"
zcctl_a release zf0 "$ZC_IP_B" udp >/dev/null

# --- a malformed admission frame is counted and ignored ---
bf0=$(stat a zf0 adm_bad_frames)
ip netns exec b python3 - "$MAC_A" "$MAC_B" "$RAW_B" <<'PY'
import socket, sys
mac = lambda s: bytes(int(x, 16) for x in s.split(":"))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[3], 0))
for body in (b"\x02\x01" + bytes(26), b"\x01\x09" + bytes(26), b"\x01\x02" + bytes(26)):
    s.send(mac(sys.argv[1]) + mac(sys.argv[2]) + b"\x88\xb5" + body)
PY
wait_for "bad frames counted" sh -c "[ \$(( \$(ip netns exec a ethtool -S zf0 | awk '\$1 == \"adm_bad_frames:\" { print \$2 }') - $bf0 )) -ge 3 ]" && t_ok "bad version, unknown kind, stray answer: adm_bad_frames" || t_fail "bad admission frames counted" "$(( $(stat a zf0 adm_bad_frames) - bf0 ))"

# --- a station on the segment attacks admission (raw sockets) ---
# zcfrag_adm_agent.py sends crafted admission frames with any source MAC
# address: out of va (namespace a) at zf1, or out of vb at zf0 (native:
# out of zf0 and zf1 themselves).
AGENT="$ZCNET_ROOT/tools/testing/zcnet/zcfrag_adm_agent.py"
EVIL=02:00:00:00:00:66
# The agent counts the answers to its forged source addresses on va: a
# virtio-net NIC filters unicast frames for other MACs unless promiscuous.
ip -n a link set $RAW_A promisc on
grants_b() { [ "$(stat b zf1 grants_active)" = "$1" ]; }
# grew NS DEV COUNTER BASE MIN: the counter grew by MIN or more since BASE.
grew() { [ $(( $(stat "$1" "$2" "$3") - $4 )) -ge "$5" ]; }
# req_a PATTERN: a line of zf0's admissions (the requester's view) matches.
req_a() { sys a zf0 admissions | grep -q -- "$1"; }
# (10 s: on a slow debug kernel a late renewal must not let the grant expire
# and come back, which would look like a release)
setsys b zf1 slots 8; setsys b zf1 grant_timeout_ms 10000
zcctl_a admit zf0 "$ZC_IP_B" tcp >/dev/null
wait_for "grant" grants_b 1
rr0=$(stat b zf1 adm_releases_received); nh0=$(stat b zf1 adm_rel_not_holder); gr0=$(stat b zf1 adm_granted)
ip netns exec a python3 "$AGENT" $RAW_A "$MAC_B" rel "$EVIL" "$ZC_IP_A" "$ZC_IP_B" 6 0
wait_for "Fast_Rel handled" grew b zf1 adm_releases_received "$rr0" 1
# (held all along: not released and granted anew by the holder's next renewal)
t_expect "spoofed Fast_Rel from another MAC does not end the grant" "1 0" \
  "$(stat b zf1 grants_active) $(( $(stat b zf1 adm_granted) - gr0 ))"
t_expect "adm_rel_not_holder counts it" 1 "$(( $(stat b zf1 adm_rel_not_holder) - nh0 ))"
# Refusals for the granted flow from the peer's own MAC, with every token of
# 0..255 (tokens counted up from 1 fell to this).
bf0=$(stat a zf0 adm_bad_frames); nk0=$(stat a zf0 adm_answers_nack)
ip netns exec b python3 "$AGENT" $RAW_B "$MAC_A" nacks "$MAC_B" "$ZC_IP_A" "$ZC_IP_B" 6 256
nacks_in() { [ $(( $(stat a zf0 adm_bad_frames) - bf0 + $(stat a zf0 adm_answers_nack) - nk0 )) -ge 256 ]; }
wait_for "256 NAcks handled" nacks_in
t_expect "NAcks with guessed tokens (0..255) refuse nothing" 0 "$(( $(stat a zf0 adm_answers_nack) - nk0 ))"
out=$(zcctl_a query zf0 "$ZC_IP_B" tcp)
case "$out" in *granted*) t_ok "the request is still granted after the guessed NAcks" ;; *) t_fail "the request is still granted after the guessed NAcks" "$out" ;; esac
zcctl_a release zf0 "$ZC_IP_B" tcp >/dev/null
wait_for "no grant" grants_b 0
setsys b zf1 grant_timeout_ms 2000
# A Fast_Req flood from one MAC address for 1000 distinct flows: half the
# 8 slots granted at most, and at most a burst of 16 answers plus 100 a
# second (the agent counts them on the wire, and releases what it got).
rc0=$(stat b zf1 adm_refused_cap); rl0=$(stat b zf1 adm_rate_limited)
out=$(ip netns exec a python3 "$AGENT" $RAW_A "$MAC_B" flood "$EVIL" "$ZC_IP_B" 1000)
echo "# flood: $out"
set -- $out
t_expect "a Fast_Req flood from one MAC: 4 grants (the per-station cap, half of 8 slots)" 4 "${10:-}"
awk -v a="${8:-1000}" -v s="${6:-0}" 'BEGIN { exit !(a < 1000 && a <= 16 + 100 * s + 5) }' \
  && t_ok "answers to the flood rate limited (${8:-?} for 1000 requests in ${6:-?} s)" \
  || t_fail "answers to the flood rate limited" "${8:-?} answers in ${6:-?} s"
[ $(( $(stat b zf1 adm_rate_limited) - rl0 )) -ge 1 ] && t_ok "adm_rate_limited counts the unanswered requests" || t_fail "adm_rate_limited counts the unanswered requests"
[ $(( $(stat b zf1 adm_refused_cap) - rc0 )) -ge 1 ] && t_ok "adm_refused_cap counts the refusals over the cap" || t_fail "adm_refused_cap counts the refusals over the cap"
wait_for "the flood's grants released by their holder" grants_b 0
# Requests from a group source (multicast, broadcast) and from 00:00:00:00:00:00
# would turn each answer into a broadcast: dropped, not answered.
bs0=$(stat b zf1 adm_bad_source)
out=$(ip netns exec a python3 "$AGENT" $RAW_A "$MAC_B" groupsrc 02:00:00:00:00:67 "$ZC_IP_B")
t_expect "Fast_Req from a group or all-zero source MAC: no answer (a unicast one: answered)" "answers_to_group_or_zero 0 sentinel_answered 1" "$out"
t_expect "adm_bad_source counts them" 3 "$(( $(stat b zf1 adm_bad_source) - bs0 ))"
wait_for "no grant" grants_b 0

ip -n a link set $RAW_A promisc off
# --- implicit grants are renewed: a receiver reload is noticed ---
# A UDP flow of page-sized datagrams (one every 50 ms); the receiver takes
# idle grants back after 600 ms, so the sender renews every 200 ms.
setsys b zf1 grant_timeout_ms 600; setsys a zf0 implicit_admission 1
rq0=$(stat a zf0 adm_requests_sent)
rm -f /tmp/udp-stop
ip netns exec a python3 -c 'import os, socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.monotonic() + 120
while not os.path.exists("/tmp/udp-stop") and time.monotonic() < end:
    s.sendto(bytes(4096), ("'"$ZC_IP_B"'", 9)); time.sleep(0.05)' &
UDP=$!
wait_for "implicit grant" grants_b 1 && t_ok "a live UDP flow holds an implicit grant" || t_fail "a live UDP flow holds an implicit grant"
wait_for "renewals" grew a zf0 adm_requests_sent "$rq0" 4 && t_ok "implicit grant renewed while the flow sends (Fast_Req every grant_timeout_ms / 3)" || t_fail "implicit grant renewed while the flow sends" "$(( $(stat a zf0 adm_requests_sent) - rq0 )) Fast_Req"
# The receiver reloads (its zcfrag device deleted and created again): the
# renewals go unanswered, the sender stops believing in its grant, and asks
# the new device once its entry settled (grant_timeout_ms, 2 s, later).
zf_del b
wait_for "the sender notices" req_a "proto 17 state no-answer" && t_ok "receiver gone: the sender's implicit grant ends (renewal unanswered)" || t_fail "receiver gone: the sender's implicit grant ends" "$(sys a zf0 admissions)"
zf_add b
setsys b zf1 admission required; setsys b zf1 grant_timeout_ms 600
wait_for "asked again" grants_b 1 && t_ok "the live flow asks the reloaded receiver again: granted" || t_fail "the live flow asks the reloaded receiver again" "$(sys a zf0 admissions)"
wait_for "granted again" req_a "proto 17 state granted" && t_ok "the sender's state follows: granted" || t_fail "the sender's state follows: granted" "$(sys a zf0 admissions)"
wait_for "speculated" grew b zf1 zc_successful 0 5 && t_ok "the flow is speculated on again (admission required)" || t_fail "the flow is speculated on again" "zc_successful $(stat b zf1 zc_successful)"
touch /tmp/udp-stop; wait $UDP
# Its entry goes once the flow is idle (with a Fast_Rel).
no_req_a() { ! req_a "$1"; }
wait_for "UDP entry forgotten" no_req_a "proto 17"
setsys b zf1 grant_timeout_ms 2000

# --- a FIN releases only the implicit grant of the connection that asked ---
# (the sender's grant_timeout_ms long, so that only a FIN can send a Fast_Rel
# while the first connection runs, however slowly)
setsys a zf0 grant_timeout_ms 10000
ip netns exec b socat -u TCP-LISTEN:7101,reuseaddr - >/dev/null 2>&1 & L1=$!
ip netns exec b socat -u TCP-LISTEN:7102,reuseaddr - >/dev/null 2>&1 & L2=$!
rm -f /tmp/conn1-close
ip netns exec a python3 -c 'import os, socket, time
for i in range(200):
    try:
        s = socket.create_connection(("'"$ZC_IP_B"'", 7101)); break
    except OSError:
        time.sleep(0.05)
end = time.monotonic() + 120
while not os.path.exists("/tmp/conn1-close") and time.monotonic() < end:
    s.sendall(bytes(65536)); time.sleep(0.05)
s.close()' &
C1=$!
wait_for "first connection granted" req_a ":7101 proto 6 state granted" && t_ok "first connection holds an implicit grant" || t_fail "first connection holds an implicit grant" "$(sys a zf0 admissions)"
rl0=$(stat a zf0 adm_releases_sent)
echo hello | ip netns exec a socat -u - "TCP:$ZC_IP_B:7102,retry=200,interval=0.05"
t_expect "FIN of a second connection between the same hosts: no Fast_Rel" 0 "$(( $(stat a zf0 adm_releases_sent) - rl0 ))"
req_a ":7101 proto 6 state granted" && sys b zf1 admissions | grep -q "$ZC_IP_A > $ZC_IP_B proto 6" \
  && t_ok "the first connection's grant stays (sender and receiver)" || t_fail "the first connection's grant stays" "$(sys a zf0 admissions)"
touch /tmp/conn1-close; wait $C1
wait_for "released on its own FIN" grew a zf0 adm_releases_sent "$rl0" 1 && t_ok "the first connection's FIN releases it" || t_fail "the first connection's FIN releases it"
wait_for "no grant" grants_b 0
wait $L1 $L2 2>/dev/null
setsys a zf0 implicit_admission 0; setsys a zf0 grant_timeout_ms 2000

# --- deleting the requester's device gives its grants back at once ---
# (grant_timeout_ms is long here: only the Fast_Rel can free the slot in time)
grants_b() { [ "$(ip netns exec b ethtool -S zf1 | awk '$1 == "grants_active:" { print $2 }')" = "$1" ]; }
setsys b zf1 grant_timeout_ms 600000
zcctl_a admit zf0 "$ZC_IP_B" udp >/dev/null
wait_for "grant" grants_b 1 && t_ok "explicit grant held before the delete" || t_fail "explicit grant held before the delete" "$(sys b zf1 admissions)"
rr0=$(stat b zf1 adm_releases_received)
zf_del a
wait_for "grant released by the delete" grants_b 0 && t_ok "deleting zf0 sends Fast_Rel: the peer's slot is free at once" || t_fail "deleting zf0 sends Fast_Rel" "$(sys b zf1 admissions)"
t_expect "the peer counts that Fast_Rel" 1 "$(( $(stat b zf1 adm_releases_received) - rr0 ))"
zf_add a
setsys b zf1 grant_timeout_ms 2000

# --- a sender that never gets an answer: the receiver runs no zcfrag ---
zf_del b
vb_plain
setsys a zf0 implicit_admission 1
na0=$(stat a zf0 adm_no_answer); rt0=$(stat a zf0 adm_request_retries)
tcp_xfer a b "$ZC_IP_B" 8388608 "TCP 8 MiB to an unmodified receiver with implicit admission, md5"
# TCP to an unmodified receiver never sends page-sized packets (the peer's MSS
# fits its MTU); 8000-byte UDP datagrams do, so the driver asks.
ip netns exec a python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(20): s.sendto(bytes(8000), ("'"$ZC_IP_B"'", 9))'
wait_for "request given up" sh -c "[ \$(( \$(ip netns exec a ethtool -S zf0 | awk '\$1 == \"adm_no_answer:\" { print \$2 }') - $na0 )) -ge 1 ]" && t_ok "unanswered request given up (adm_no_answer)" || t_fail "unanswered request given up"
t_expect "two retries before giving up" 2 "$(( $(stat a zf0 adm_request_retries) - rt0 ))"
out=$(zcctl_a admit zf0 "$ZC_IP_B" udp); rc=$?
case "$out" in *"no answer"*) t_expect "zcctl admit: no answer (exit 4)" 4 $rc ;; *) t_fail "zcctl admit: no answer" "$out" ;; esac
out=$(ip netns exec a zcctl frag zf0)
printf '%s\n' "$out" | grep -E "slots|admission|request|grant" | sed 's/^/# /'
case "$out" in *implicit_admission*adm_no_answer*) t_ok "zcctl frag shows settings and admission counters" ;; *) t_fail "zcctl frag shows settings and admission counters" ;; esac

# --- unprivileged requests are refused ---
out=$(ip netns exec a setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all zcctl admit zf0 "$ZC_IP_B" tcp mac "$MAC_B" 2>&1)
case "$out" in *"CAP_NET_ADMIN"*) t_ok "admit without CAP_NET_ADMIN: EPERM" ;; *) t_fail "admit without CAP_NET_ADMIN: EPERM" "$out" ;; esac
out=$(ip netns exec b zcctl admit vb "$ZC_IP_A" tcp mac "$MAC_B" 2>&1)
case "$out" in *"not a zcfrag device"*) t_ok "admit on a non-zcfrag device: EOPNOTSUPP" ;; *) t_fail "admit on a non-zcfrag device" "$out" ;; esac

[ $NATIVE = 1 ] && zf_del a
t_run "rmmod zcfrag" rmmod zcfrag
kmemleak_clean "kmemleak: nothing leaked (debug kernel)"
t_done
