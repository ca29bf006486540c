#!/bin/bash
# zcddp (issue 11), TCP between namespace a (198.18.0.1) and b (198.18.0.2):
#   - the ULP: attach on a connected socket only; plain send/recv refused
#   - MPA start-up zcddp <-> zcddp: revisions 1 and 2, private data both
#     ways, CRC, markers, the peer-to-peer RTR types, IRD/ORD, the
#     refusals (strict CRC, markers refused), a second start-up refused
#   - the bytes on the wire checked by an independent peer
#     (zcddp_peer.py builds and checks frames, RTR FPDUs with CRC and
#     markers, from the RFCs)
#   - interop with soft-iWARP (siw, unmodified rping on it) both ways, CRC
#     off and on, siw's refusal of markers
#   - bad input: silence (timeout), garbage, a bad revision, private data
#     over 512, data before the reply, a close mid-frame, a wrong RTR, a
#     bad CRC, a rejecting / wrong-key / silent responder
#   - /proc/net/zcddp_stat moves as it must; rmmod after close
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
PEER="$ZCNET_ROOT/tools/testing/zcnet/zcddp_peer.py"
PORT=7174

t_run "insmod zcddp" insmod "$(ko zcddp)"
t0=$(date +%s)

# procv NS NAME: a counter of /proc/net/zcddp_stat in namespace NS.
procv() { ip netns exec "$1" awk -v n="$2" '$1 == n { print $2 }' /proc/net/zcddp_stat; }
# listening NS PORT: waits (5 s at most) until something listens there.
listening() {
  local i
  for i in $(seq 100); do
    ip netns exec "$1" ss -Hltn "sport = :$2" | grep -q . && return 0; sleep 0.05
  done
  return 1
}
# outcome FILE: "ok" or the errno of zcddp-mpa's start-up line.
outcome() {
  awk '$1 == "startup" { print ($2 == "ok") ? "ok" : $3; f = 1 } END { if (!f) print "none" }' "$1"
}
# field FILE KEY: KEY=value of the start-up line.
field() { grep -o "\<$2=[^ ]*" "$1" | head -n1 | cut -d= -f2; }

# pair NAME WANT_B WANT_A [B ARGS] -- [A ARGS]: zcddp-mpa responder in b,
# initiator in a; their outcomes. The outputs stay in /tmp/zb /tmp/za.
pair() {
  local name=$1 wb=$2 wa=$3 bargs=() aargs=(); shift 3
  while [ $# -gt 0 ] && [ "$1" != -- ]; do bargs+=("$1"); shift; done
  [ $# -gt 0 ] && shift; aargs=("$@")
  ip netns exec b timeout 30 zcddp-mpa -s -a "$ZC_IP_B" -p $PORT "${bargs[@]}" > /tmp/zb 2>&1 &
  local pb=$!
  listening b $PORT
  ip netns exec a timeout 30 zcddp-mpa -c -a "$ZC_IP_B" -p $PORT "${aargs[@]}" > /tmp/za 2>&1
  wait $pb
  t_expect "$name: responder" "$wb" "$(outcome /tmp/zb)"
  t_expect "$name: initiator" "$wa" "$(outcome /tmp/za)"
}

# The ULP itself.
out=$(python3 -c 'import socket,errno
s = socket.socket()
try:
    s.setsockopt(socket.IPPROTO_TCP, 31, b"zcddp"); print("accepted")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))')
t_expect "TCP_ULP zcddp on an unconnected socket: ENOTCONN" ENOTCONN "$out"
ip netns exec b python3 -c 'import socket,time
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("'$ZC_IP_B'", '$PORT')); l.listen(1); s, _ = l.accept(); time.sleep(1)' &
pl=$!
listening b $PORT
out=$(ip netns exec a python3 -c 'import socket,errno,struct
s = socket.create_connection(("'$ZC_IP_B'", '$PORT'))
s.setsockopt(socket.IPPROTO_TCP, 31, b"zcddp")
r = []
for f in (lambda: s.send(b"x"), lambda: s.recv(1, socket.MSG_DONTWAIT)):
    try:
        f(); r.append("done")
    except OSError as e:
        r.append("EOPNOTSUPP" if e.errno == errno.EOPNOTSUPP else errno.errorcode.get(e.errno, str(e.errno)))
st = s.getsockopt(301, 2, 24)
r.append("state=%d" % struct.unpack("I", st[:4])[0])
# A start-up with a bad role, then with unknown flags: EINVAL, still idle.
for role, flags in ((7, 0), (1, 0x100)):
    try:
        s.setsockopt(301, 1, struct.pack("IIBBHHHII", role, flags, 2, 2, 0, 1, 1, 0, 0) + bytes(16))
    except OSError as e:
        r.append(errno.errorcode.get(e.errno, str(e.errno)))
st = s.getsockopt(301, 2, 24)
r.append("state=%d" % struct.unpack("I", st[:4])[0])
print(" ".join(r))')
wait $pl
t_expect "attached: send, recv refused; idle; bad parameters EINVAL" "EOPNOTSUPP EOPNOTSUPP state=0 EINVAL EINVAL state=0" "$out"

# zcddp <-> zcddp.
pair "revision 2, private data both ways" ok ok --pd from-b -- --pd from-a
t_expect "initiator got the responder's private data" from-b "$(field /tmp/za peer_pd)"
t_expect "responder got the initiator's private data" from-a "$(field /tmp/zb peer_pd)"
t_expect "revision 2 negotiated" "2 2" "$(field /tmp/za rev) $(field /tmp/zb rev)"
pair "revision 1 initiator" ok ok -- --rev 1
t_expect "revision 1 negotiated, IRD/ORD 1" "1 1 1" "$(field /tmp/zb rev) $(field /tmp/zb ird) $(field /tmp/zb ord)"
pair "CRC asked by the initiator" ok ok -- --crc
t_expect "CRC on for both" "1 1" "$(field /tmp/za crc) $(field /tmp/zb crc)"
pair "CRC asked by the responder" ok ok --crc --
t_expect "CRC on for both (responder's wish)" "1 1" "$(field /tmp/za crc) $(field /tmp/zb crc)"
pair "IRD/ORD" ok ok --ird 8 --ord 2 -- --ird 4 --ord 16
t_expect "responder IRD covers the initiator's ORD; mirrored" "16 2 2 16" \
  "$(field /tmp/zb ird) $(field /tmp/zb ord) $(field /tmp/za ird) $(field /tmp/za ord)"
pair "markers asked both ways" ok ok --markers -- --markers
t_expect "markers both ways" "1 1 1 1" \
  "$(field /tmp/za markers_tx) $(field /tmp/za markers_rx) $(field /tmp/zb markers_tx) $(field /tmp/zb markers_rx)"
pair "peer-to-peer, Write RTR, CRC and markers" ok ok --markers --p2p write,read -- --p2p write,send --crc --markers
t_expect "Write RTR chosen (2)" "1 2 1 2" "$(field /tmp/za p2p) $(field /tmp/za rtr) $(field /tmp/zb p2p) $(field /tmp/zb rtr)"
pair "peer-to-peer, Send RTR" ok ok --p2p send -- --p2p send,write
t_expect "Send RTR chosen (1)" "1 1" "$(field /tmp/za rtr) $(field /tmp/zb rtr)"
pair "no RTR type in common" ECONNREFUSED ECONNREFUSED --p2p read -- --p2p send
pair "strict responder without CRC refuses a CRC request" ECONNREFUSED ECONNREFUSED --crc-strict -- --crc
pair "strict initiator asking for CRC gets it" ok ok -- --crc --crc-strict
pair "strict initiator without CRC refuses the responder's CRC" ok ECONNREFUSED --crc -- --crc-strict
pair "responder refusing to send markers" ECONNREFUSED ECONNREFUSED --no-markers -- --markers
pair "initiator offering only a Read RTR: EINVAL before the wire (the responder sees the close)" ECONNRESET EINVAL --timeout 1000 -- --p2p read

# A second start-up on the same socket.
ip netns exec b timeout 30 zcddp-mpa -s -a "$ZC_IP_B" -p $PORT --hold 500 > /tmp/zb 2>&1 &
pb=$!
listening b $PORT
out=$(ip netns exec a python3 -c 'import socket,errno,struct
s = socket.create_connection(("'$ZC_IP_B'", '$PORT'))
s.setsockopt(socket.IPPROTO_TCP, 31, b"zcddp")
p = struct.pack("IIBBHHHII", 1, 0, 2, 2, 0, 1, 1, 0, 0) + bytes(16)
s.setsockopt(301, 1, p)
try:
    s.setsockopt(301, 1, p); print("again")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno), struct.unpack("I", s.getsockopt(301, 2, 24)[:4])[0])')
wait $pb
t_expect "second start-up: EALREADY, still RTS (2)" "EALREADY 2" "$out"

# The wire, checked by an independent peer.
# peer NAME WANT MODE [zcddp-mpa ARGS]: zcddp responder in b, raw client in a.
peer_client() {
  local name=$1 want=$2 mode=$3; shift 3
  ip netns exec b timeout 30 zcddp-mpa -s -a "$ZC_IP_B" -p $PORT "$@" > /tmp/zb 2>&1 &
  local pb=$!
  listening b $PORT
  ip netns exec a timeout 30 python3 "$PEER" client "$ZC_IP_B" $PORT "$mode" > /tmp/zp 2>&1
  echo $? > /tmp/zp.rc
  wait $pb
  sed 's/^/# peer: /' /tmp/zp
  t_expect "$name" "$want" "$(outcome /tmp/zb)"
}
# peer_server NAME WANT MODE [zcddp-mpa ARGS] [-- PEER ARGS]: raw responder in b, zcddp initiator in a.
peer_server() {
  local name=$1 want=$2 mode=$3 zargs=() pargs=(); shift 3
  while [ $# -gt 0 ] && [ "$1" != -- ]; do zargs+=("$1"); shift; done
  [ $# -gt 0 ] && shift; pargs=("$@")
  ip netns exec b timeout 30 python3 "$PEER" server "$ZC_IP_B" $PORT "$mode" "${pargs[@]}" > /tmp/zp 2>&1 &
  local pb=$!
  listening b $PORT
  ip netns exec a timeout 30 zcddp-mpa -c -a "$ZC_IP_B" -p $PORT "${zargs[@]}" > /tmp/za 2>&1
  wait $pb; echo $? > /tmp/zp.rc
  sed 's/^/# peer: /' /tmp/zp
  t_expect "$name" "$want" "$(outcome /tmp/za)"
}
peer_client "RTR Write from an RFC-built peer" ok p2p-ok --p2p write
peer_client "RTR Write with CRC and markers from an RFC-built peer" ok p2p-ok-crc-markers --p2p write --crc --markers
t_expect "the reply asked for markers and CRC (flags 0xd0)" 1 "$(grep -c 'flags=0xd0' /tmp/zp)"
peer_server "our request and RTR Write, byte for byte (no CRC)" ok check-rtr --p2p write
t_expect "peer: RTR bytes as the RFCs build them" 0 "$(cat /tmp/zp.rc)"
peer_server "our RTR Write with CRC and markers, byte for byte" ok check-rtr --p2p write --crc -- markers
t_expect "peer: RTR bytes with CRC and a marker as the RFCs build them" 0 "$(cat /tmp/zp.rc)"

# Bad input.
before=$(procv b ZcddpStartupTimeout)
peer_client "a silent initiator: ETIMEDOUT" ETIMEDOUT silent --timeout 1000
ms=$(field /tmp/zb ms)
[ "${ms:-99999}" -ge 900 ] && [ "${ms:-99999}" -lt 2500 ] && t_ok "timed out at the bound ($ms ms for 1000)" || t_fail "timed out at the bound" "${ms:-no} ms for 1000"
t_expect "ZcddpStartupTimeout counted" $((before + 1)) "$(procv b ZcddpStartupTimeout)"
peer_client "garbage instead of a request: EPROTO" EPROTO garbage
peer_client "revision 3: EPROTO" EPROTO badrev
peer_client "private data length 600: EPROTO" EPROTO longpd
peer_client "data after the request before the reply: EPROTO" EPROTO extra
peer_client "a close in the middle of the key: ECONNRESET" ECONNRESET close-mid
peer_client "a Send RTR where Write was chosen: EPROTO" EPROTO p2p-wrong-rtr --p2p write
before=$(procv b ZcddpCrcErrors)
peer_client "an RTR with a bad CRC: EPROTO" EPROTO p2p-bad-crc --p2p write
t_expect "ZcddpCrcErrors counted" $((before + 1)) "$(procv b ZcddpCrcErrors)"
peer_server "a rejecting responder: ECONNREFUSED" ECONNREFUSED reject
peer_server "a Request key in the reply: EPROTO" EPROTO wrong-key
peer_server "a reply revision above the request's: EPROTO" EPROTO rev-up --rev 1
peer_server "a reply asking for markers we refuse: ECONNREFUSED" ECONNREFUSED markers-reply --no-markers
peer_server "a silent responder: ETIMEDOUT" ETIMEDOUT silent --timeout 1000

# soft-iWARP, unmodified rping on it, both ways.
if modprobe -a siw rdma_ucm 2>/dev/null &&
   ip netns exec a rdma link add siwa type siw netdev va 2>/dev/null &&
   ip netns exec b rdma link add siwb type siw netdev vb 2>/dev/null; then
  t_ok "siw on va and vb"
  # rping -s -P: a server on siw in b for every connection below.
  ip netns exec b timeout 60 rping -s -P -a "$ZC_IP_B" -p $PORT > /tmp/rping-s.log 2>&1 &
  rs=$!
  listening b $PORT
  for crc in "" --crc; do
    ip netns exec a timeout 20 zcddp-mpa -c -a "$ZC_IP_B" -p $PORT $crc --hold 200 > /tmp/za 2>&1
    t_expect "zcddp initiator to rping -s on siw ${crc:-(no CRC)}" ok "$(outcome /tmp/za)"
    t_expect "  siw answered revision 2, CRC ${crc:+on}${crc:-off}" "2 $([ -n "$crc" ] && echo 1 || echo 0)" \
      "$(field /tmp/za rev) $(field /tmp/za crc)"
  done
  ip netns exec a timeout 20 zcddp-mpa -c -a "$ZC_IP_B" -p $PORT --p2p write,send --hold 200 > /tmp/za 2>&1
  t_expect "zcddp initiator, peer-to-peer, to siw: Write RTR (2)" "ok 2" "$(outcome /tmp/za) $(field /tmp/za rtr)"
  ip netns exec a timeout 20 zcddp-mpa -c -a "$ZC_IP_B" -p $PORT --markers > /tmp/za 2>&1
  t_expect "siw rejects markers: ECONNREFUSED" ECONNREFUSED "$(outcome /tmp/za)"
  ip netns exec a timeout 20 zcddp-mpa -c -a "$ZC_IP_B" -p $PORT --p2p send > /tmp/za 2>&1
  t_expect "siw has no Send RTR: ECONNREFUSED" ECONNREFUSED "$(outcome /tmp/za)"
  kill $rs 2>/dev/null; wait $rs 2>/dev/null
  for crc in "" --crc; do
    ip netns exec b timeout 20 zcddp-mpa -s -a "$ZC_IP_B" -p $PORT $crc --pd zcddp --hold 500 > /tmp/zb 2>&1 &
    pb=$!
    listening b $PORT
    ip netns exec a timeout 10 rping -c -a "$ZC_IP_B" -p $PORT -C 1 > /tmp/rping-c.log 2>&1
    wait $pb
    t_expect "rping -c on siw to a zcddp responder ${crc:-(no CRC)}" ok "$(outcome /tmp/zb)"
    t_expect "  revision 2, CRC ${crc:+on}${crc:-off}, IRD/ORD 1" "2 $([ -n "$crc" ] && echo 1 || echo 0) 1 1" \
      "$(field /tmp/zb rev) $(field /tmp/zb crc) $(field /tmp/zb ird) $(field /tmp/zb ord)"
  done
else
  t_skip "siw interop" "no siw in this kernel"
fi

t_expect "no zcddp socket left in a" 0 "$(procv a ZcddpCurrSockets)"
t_expect "no zcddp socket left in b" 0 "$(procv b ZcddpCurrSockets)"
echo "# counters of b: $(ip netns exec b awk '$2 != 0 { printf "%s=%s ", $1, $2 }' /proc/net/zcddp_stat)"
echo "# suite took $(( $(date +%s) - t0 )) s"
t_run "rmmod zcddp" rmmod zcddp
t_done
