#!/bin/bash
# zcddp (issue 11), TCP between namespace a (198.18.0.1) and b (198.18.0.2):
#   - the data path: zcddp-ping (rping's Send / RDMA Read / RDMA Write
#     sequence, verified) zcddp <-> zcddp (64 B to 1 MiB, CRC, markers) and
#     against unmodified rping on siw both ways (64 B and 65535 B, rping's
#     largest, 1000 iterations each, 65535 B with CRC off and on); the Terminate codes of the RFCs for
#     every access, bound, STag, MSN, queue, opcode, version and CRC fault
#     from a raw peer, the registered memory unchanged (hashed);
#     registrations released with the socket; RLIMIT_MEMLOCK
#   - the ULP: attach on a connected socket only; plain send/recv refused
#   - MPA start-up zcddp <-> zcddp: revisions 1 and 2, private data both
#     ways, CRC, markers, the peer-to-peer RTR types, IRD/ORD, the
#     refusals (strict CRC, markers refused), a second start-up refused
#   - the bytes on the wire checked by an independent peer
#     (zcddp_peer.py builds and checks frames, RTR FPDUs with CRC and
#     markers, from the RFCs)
#   - interop with soft-iWARP (siw, unmodified rping on it) both ways, CRC
#     off and on, siw's refusal of markers; siw_verbs (rdma-core on siw)
#     with zcddp-verbs: Send, RDMA Write and RDMA Read both ways, 64 B x
#     1000 and 1 MiB x 10 rounds, siw active and passive, seeded data
#     hashed on both sides
#   - bad input: silence (timeout), garbage, a bad revision, private data
#     over 512, data before the reply, a close mid-frame, a wrong RTR, a
#     bad CRC, a rejecting / wrong-key / silent responder
#   - /proc/net/zcddp_stat moves as it must; rmmod after close
#   - zcddp-poll: a peer's RDMA Read served and a Send's completion
#     queued while the application sleeps; poll(2) POLLIN for pending
#     completions only
#   - the send queue: posts to a peer that never reads return at once
#     until the queue (ZCDDP_SEND_QUEUE) is full, then ENOMEM; a reset
#     flushes the queued Writes; close with a full queue is prompt and
#     releases every page; /proc/net/zcddp_conns and zcctl ddp list the
#     connection, its queues and registration (uid 65534 sees its own
#     connection's lines, not root's; root, CAP_NET_ADMIN, both); poll(2)
#     reports no POLLIN for FPDUs that complete nothing, and POLLOUT only
#     while the send queue has room
#   - zcddp-copy: a 4 MiB file (CRC) and a 1-byte file RDMA-Written,
#     Read back and compared byte for byte, the server's hash checked
#   - out-of-order placement (issue 12; issue 45, major 8: only from a
#     known FPDU start): zcddp-copy through netem reordering on a's
#     egress: without markers the segments ahead of a hole wait, counted
#     in ZcddpOooRefusedNoStart; with markers b places Writes ahead of a
#     hole (ZcddpBytesPlacedOutOfOrder), a thread in the server sees bytes
#     behind a hole before it fills, the in-order path skips exactly those
#     bytes; with ZCDDP_OOO 0 nothing is placed out of order or seen ahead;
#     byte-exact under 1% and 5% loss, duplication and corruption on top;
#     siw_verbs with zcddp-verbs under the same faults both ways: siw's
#     segments ahead of a hole refused (no markers, no start known), none
#     seen in zcddp's region ahead of a hole unless placed;
#     one hole held open with nothing after it in order, the length field
#     of the FPDU in the hole known (IPv4, IPv6): the Writes ahead of it
#     placed from that start by the netfilter hook's kick alone, in its
#     run under TCP's spinlock (ZcddpOooBytesSoftirq), met in order with
#     no second CRC pass; a Write that fills a gap behind the walk while
#     the hole before it is open placed out of order too, the Write after
#     it then as well; a Send whose payload looks like a Write FPDU, cut
#     before it, ahead of a hole that is a whole FPDU: never placed, the
#     segment refused (ZcddpOooRefusedNoStart); the receiver
#     killed mid-stream while placing out of order, three times: sockets
#     and pinned pages gone
#   - in-order direct placement (issue 12): the payload copied once from
#     TCP's skbs (ZcddpRxBytesDirect) for zcddp-copy's 4 MiB both ways and
#     for siw's Writes and Read Responses, staged with rxdirect=0 (whole
#     FPDUs in a staging read parsed in place: ZcddpRxBytesReassembled
#     below the staged bytes); most FPDUs received in softirq or the
#     owner's backlog (ZcddpRxFpdusSoftirq), none with rxbh=0;
#     the security cases again with 1 KiB payloads (checked in TCP's
#     queue), a corrupted one never placed
#   - zero-copy transmit (issue 12): a Write's source overwritten as soon
#     as the Write completes, round after round (CRC on and off, under
#     netem loss): the sink holds only the bytes written before each
#     completion; every payload byte counted once, lent (ZcddpTxBytesByRef)
#     or copied (ZcddpTxBytesCopied); on veth the kernel reports every lent
#     byte copied on delivery (ZcddpTxZcCopiedByKernel), and with zctx=1
#     (the default) the connection stops lending (ZcddpTxZcStopped); with
#     zctx=2 it lends on; 1 MiB without CRC
#     and odd sizes byte-exact; rmmod while lent pages sit in a netem queue
#     of a reset connection, then freed: no kernel report; zctx=0 copies
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/siw-lib.sh"
# zcddp_peer.py runs as a module (python3 -m zcddp_peer, PYTHONPATH set by
# guest-init.sh): its bytecode is read from __pycache__ (compiled by
# build-test-progs.sh), not compiled at each run.
PORT=7174
# TS: the scale of the programs' outer time-outs (their bound, never a
# wait): the debug kernel (KASAN under TCG) runs 3 to 5 times slower, and
# the batches below run cases side by side.
TS=1
[ "${ZCNET_FLAVOUR:-default}" = debug ] && TS=5

# The wire mode: each NIC on one queue pair. QEMU's software RSS on the
# tap wire holds a frame for an empty ring in the queue of the pair it came
# in on until that pair's ring is notified, which virtio_net does not do
# (zcfrag-native.sh found it; here the first ARP replies went unanswered).
if [ "${1:-}" = wire ]; then
  t_run "va and vb on one queue pair each" sh -c "ip netns exec a ethtool -L va combined 1 && ip netns exec b ethtool -L vb combined 1"
  t_run "ping vb over the wire" ip netns exec a ping -c 3 -i 0.2 -W 2 -q "$ZC_IP_B"
fi
t_run "insmod zcddp" insmod "$(ko zcddp)"
t0=$(date +%s)

# procv NS NAME: a counter of /proc/net/zcddp_stat in namespace NS.
ns_anchor a b || t_fail "a process in namespaces a and b (ns_anchor)"
procv() { ns_stat "$1" zcddp_stat "$2"; }
# Files the case functions below write (a batch gives each case its own).
ZA=/tmp/za ZB=/tmp/zb ZP=/tmp/zp
# bg N CMD...: runs case CMD in the background on port PORT+20+N with its
# own files; its results, as "ok NAME" / "not ok NAME # WHY" lines, go to
# /tmp/bg.N for bg_collect. At most BG_MAX cases run at once: 21 at once
# (a Python peer and a zcddp-mpa each) overran their bounds under TCG on a
# host at half the usual speed (CI, 2026-11-27), 7 did not.
BG_MAX=${BG_MAX:-7}
bg() {
  local n=$1 p live; shift
  while :; do
    live=()
    for p in $BG_PIDS; do kill -0 "$p" 2>/dev/null && live+=("$p"); done
    [ ${#live[@]} -lt "$BG_MAX" ] && break
    wait -n "${live[@]}"
  done
  (
    PORT=$((PORT + 20 + n)) ZA=/tmp/za.$n ZB=/tmp/zb.$n ZP=/tmp/zp.$n
    t_ok() { echo "ok $1"; }
    t_fail() { echo "not ok $1${2:+ # $2}"; }
    local s=$SECONDS
    "$@"
    echo "# case $n: $((SECONDS - s)) s"
  ) > "/tmp/bg.$n" 2>&1 &
  BG_PIDS+=" $!" BG_N+=" $n"
}
# bg_collect: waits for the batch; its results in order.
bg_collect() {
  local n
  wait $BG_PIDS
  for n in $BG_N; do t_report "/tmp/bg.$n"; done
  BG_PIDS= BG_N=
}
BG_PIDS= BG_N=
# listening NS PORT: waits (5 s at most, times TS) until something listens there.
listening() {
  local i
  for i in $(seq $((200 * TS))); do
    ns_listening "$1" "$2" && return 0; sleep 0.05
  done
  return 1
}
# outcome FILE: "ok" or the errno of zcddp-mpa's start-up line.
# A socket that is no longer connected when the program attaches zcddp
# ("error attach: ENOTCONN": the peer closed first) gives that errno.
# (Shell builtins here and in peer_out: under TCG each awk, sed, grep or
# cut process costs about 0.1 s, and the batches below run dozens.)
outcome() {
  local a b c rest
  while read -r a b c rest; do
    [ "$a" = startup ] && { if [ "$b" = ok ]; then echo ok; else echo "$c"; fi; return; }
    [ "$a" = error ] && [ "$b" = attach: ] && { echo "$c"; return; }
  done < "$1"
  echo none
}
# peer_out FILE: the raw peer's output as comments.
peer_out() {
  local line
  while IFS= read -r line || [ -n "$line" ]; do echo "# peer: $line"; done < "$1"
}
# field FILE KEY: KEY=value of the start-up line.
field() { grep -o "\<$2=[^ ]*" "$1" | head -n1 | cut -d= -f2; }

# pair NAME WANT_B WANT_A [B ARGS] -- [A ARGS]: zcddp-mpa responder in b,
# initiator in a; their outcomes (a WANT may name alternatives, A|B). The
# outputs stay in /tmp/zb /tmp/za.
pair() {
  local name=$1 wb=$2 wa=$3 bargs=() aargs=(); shift 3
  while [ $# -gt 0 ] && [ "$1" != -- ]; do bargs+=("$1"); shift; done
  [ $# -gt 0 ] && shift; aargs=("$@")
  ip netns exec b timeout $((30 * TS)) zcddp-mpa -s -a "$ZC_IP_B" -p $PORT "${bargs[@]}" > /tmp/zb 2>&1 &
  local pb=$!
  listening b $PORT
  ip netns exec a timeout $((30 * TS)) zcddp-mpa -c -a "$ZC_IP_B" -p $PORT "${aargs[@]}" > /tmp/za 2>&1
  wait $pb
  one_of "$name: responder" "$wb" "$(outcome /tmp/zb)"
  one_of "$name: initiator" "$wa" "$(outcome /tmp/za)"
}
# one_of NAME WANT GOT: ok when GOT is one of WANT's |-separated values.
one_of() {
  case "|$2|" in *"|$3|"*) t_ok "$1" ;; *) t_fail "$1" "wanted '$2', got '$3'" ;; esac
}

# Zero-copy transmit: the payload of Writes, Sends and Read Responses goes
# to TCP by reference (MSG_ZEROCOPY), FPDU by FPDU (1 KiB or more, not the
# last of a message), and a completion waits for the kernel to be done
# with the pages. zc-reuse (in a)
# overwrites each Write's source with 0xee as soon as the Write completes;
# were the completion early, TCP would still send (or resend, under loss)
# the source's pages and the sink (in b) would hold some 0xee.
# zreuse NAME ROUNDS SIZE CRC [NETEM]: the sink's hash against the one
# expected; BYREF, COPIED, KCOPIED: a's counter deltas (lent, copied,
# lent but copied by the kernel), FALLBACK (lending refused, copied);
# PAYLOAD: the payload a sent. ZMEMLOCK=KiB: a without CAP_IPC_LOCK and
# with that RLIMIT_MEMLOCK.
zreuse() {
  local name=$1 rounds=$2 size=$3 crc=$4 ne=${5:-} rc rs br0 bc0 kc0 fb0
  br0=$(procv a ZcddpTxBytesByRef) bc0=$(procv a ZcddpTxBytesCopied) kc0=$(procv a ZcddpTxZcCopiedByKernel)
  fb0=$(procv a ZcddpTxZcFallback)
  [ -n "$ne" ] && ip netns exec a tc qdisc replace dev va root netem $ne
  ip netns exec b timeout $((120 * TS)) python3 -m zcddp_peer zc-sink "$ZC_IP_B" $PORT $((rounds * size)) "$crc" > $ZB 2>&1 &
  local pb=$!
  listening b $PORT
  local cmd="timeout $((120 * TS)) python3 -m zcddp_peer zc-reuse $ZC_IP_B $PORT $rounds $size $crc 7"
  [ -n "${ZMEMLOCK:-}" ] && cmd="capsh --drop=cap_ipc_lock -- -c 'ulimit -l $ZMEMLOCK && exec $cmd'"
  ip netns exec a sh -c "$cmd" > $ZA 2>&1
  rc=$?
  wait $pb
  rs=$?
  [ -n "$ne" ] && ip netns exec a tc qdisc del dev va root
  BYREF=$(( $(procv a ZcddpTxBytesByRef) - br0 )) COPIED=$(( $(procv a ZcddpTxBytesCopied) - bc0 ))
  KCOPIED=$(( $(procv a ZcddpTxZcCopiedByKernel) - kc0 )) PAYLOAD=$(( rounds * size + 4 ))
  FALLBACK=$(( $(procv a ZcddpTxZcFallback) - fb0 ))
  sed 's/^/# /' $ZA $ZB
  echo "# lent $BYREF, copied $COPIED, lent but copied by the kernel $KCOPIED, lending refused $FALLBACK times"
  t_expect "$name: the sink holds only what each Write carried before its completion" \
    "0 0 $(grep -o 'expect=[0-9a-f]*' $ZA | cut -d= -f2)" "$rc $rs $(grep -o 'hash=[0-9a-f]*' $ZB | cut -d= -f2)"
  t_expect "  every payload byte lent or copied, once" "$PAYLOAD" "$((BYREF + COPIED))"
}

# zcddp.sh wire (make check, virtio2): zero-copy transmit over virtio-net,
# where TCP's skbs leave through the NIC and the kernel copies nothing.
if [ "${1:-}" = wire ]; then
  st0=$(procv a ZcddpTxZcStopped)
  zreuse "virtio-net: 64 KiB Writes x 48, source reused at once, CRC" 48 65536 1
  [ "$BYREF" -ge $((48 * 65536 * 9 / 10)) ] && t_ok "  at least 90% of it lent ($BYREF of $PAYLOAD)" || t_fail "  at least 90% of it lent" "$BYREF of $PAYLOAD"
  t_expect "  the kernel reports none of the lent bytes copied, lending goes on" "0 0" \
    "$KCOPIED $(( $(procv a ZcddpTxZcStopped) - st0 ))"
  zreuse "virtio-net: 1 MiB Writes x 8, no CRC, netem delay 5ms loss 2%" 8 1048576 0 "delay 5ms loss 2%"
  # Under loss retransmissions keep pages and notifications queued longer:
  # the kernel may refuse lending for a while (optmem; seen once, 273
  # times, 86% lent), and those FPDUs are copied.
  [ "$BYREF" -ge $((8 * 1048576 / 2)) ] && t_ok "  most of it lent ($BYREF of $PAYLOAD, refused $FALLBACK times)" || t_fail "  most of it lent" "$BYREF of $PAYLOAD"
  t_expect "  the kernel reports none of the lent bytes copied" 0 "$KCOPIED"
  t_run "rmmod zcddp" rmmod zcddp
  t_done
  exit
fi

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

# ---- issue 45, Major 7: a zcddp socket stays one connection ----
# zcddp's state belongs to the connection it was attached to, as kTLS's
# does: connect(AF_UNSPEC) (tcp_disconnect, which would make the socket a
# fresh one) is refused with EOPNOTSUPP and leaves it established; listen()
# is refused with EINVAL (the ULP has no clone: accepted children would
# inherit its hooks without its data), also once the peer reset the
# connection and the socket is closed, where TCP itself would let it listen.
ip netns exec b python3 -c 'import socket,struct
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("'$ZC_IP_B'", '$PORT')); l.listen(2)
s1, _ = l.accept(); s2, _ = l.accept()
s2.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); s2.close()
s1.recv(1)' &
pl=$!
listening b $PORT
out=$(ip netns exec a python3 -c 'import socket,errno,ctypes,select,struct
libc = ctypes.CDLL(None, use_errno=True)
def err(e): return "EOPNOTSUPP" if e == errno.EOPNOTSUPP else errno.errorcode.get(e, str(e))
def state(s): return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]
def listen(s):
    try:
        s.listen(1); return "listening"
    except OSError as e:
        return err(e.errno)
r = []
s = socket.create_connection(("'$ZC_IP_B'", '$PORT'))
s.setsockopt(socket.IPPROTO_TCP, 31, b"zcddp")
unspec = struct.pack("H14x", socket.AF_UNSPEC)
rc = libc.connect(s.fileno(), unspec, len(unspec))
r.append("connect=" + ("0" if rc == 0 else err(ctypes.get_errno())))
r.append("state=%d" % state(s))
r.append("listen=" + listen(s))
# The peer resets the second connection: poll(2) says so (no sleep).
t = socket.create_connection(("'$ZC_IP_B'", '$PORT'))
t.setsockopt(socket.IPPROTO_TCP, 31, b"zcddp")
p = select.poll(); p.register(t, select.POLLHUP | select.POLLERR)
p.poll(5000)
r.append("reset_state=%d" % state(t))
r.append("listen=" + listen(t))
s.close(); t.close()
print(" ".join(r))' 2>&1)
kill $pl 2>/dev/null; wait $pl 2>/dev/null
t_expect "zcddp socket: connect(AF_UNSPEC) refused, still established; listen refused, also after the peer's reset" \
  "connect=EOPNOTSUPP state=1 listen=EINVAL reset_state=7 listen=EINVAL" "$out"
# ---- end of issue 45, Major 7 ----
# ZCDDP_POST_RECV_SG's refusals, on an attached socket before start-up
# (receives may be posted then): two registrations, one without local
# write; more than ZCDDP_RECV_SGE_MAX (6) elements, reserved not 0, an
# element past its registration's end, one in the registration without
# local write, an unknown lkey, a list at an unmapped address (EFAULT):
# each refused, then a list of 6 (one of length 0, skipped) and of none
# taken, as is a plain receive after them.
ip netns exec b python3 -c 'import socket,time
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("'$ZC_IP_B'", '$PORT')); l.listen(1); s, _ = l.accept(); time.sleep(1)' &
pl=$!
listening b $PORT
out=$(ip netns exec a python3 -c 'import socket,errno,struct,ctypes
s = socket.create_connection(("'$ZC_IP_B'", '$PORT'))
s.setsockopt(socket.IPPROTO_TCP, 31, b"zcddp")
bufs = [ctypes.create_string_buffer(8192) for _ in range(2)]
keys = []
for b, acc in zip(bufs, (1, 4)):
    k = ctypes.c_uint32()
    s.setsockopt(301, 3, struct.pack("QQIIQ", ctypes.addressof(b), 8192, acc, 0, ctypes.addressof(k)))
    keys.append(k.value)
a0, a1 = ctypes.addressof(bufs[0]), ctypes.addressof(bufs[1])
def post(sges, reserved=0, at=None):
    lst = b"".join(struct.pack("QII", *e) for e in sges)
    buf = ctypes.create_string_buffer(lst, max(len(lst), 1))
    try:
        s.setsockopt(301, 10, struct.pack("QQII", 1, at if at is not None else ctypes.addressof(buf), len(sges), reserved))
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
k = keys[0]
r = [post([(a0, 100, k)] * 7), post([(a0, 100, k)], reserved=1), post([(a0 + 8000, 200, k)]),
     post([(a1, 100, keys[1])]), post([(a0, 100, k ^ 0x100)]), post([(a0, 100, k)] * 2, at=8)]
r += [post([(a0, 1000, k), (a0 + 1000, 0, k), (a0 + 2000, 3000, k), (a0 + 5000, 3192, k), (a0, 8192, k), (a0 + 7, 1, k)]), post([])]
try:
    s.setsockopt(301, 5, struct.pack("QQII", 2, a0, 64, k)); r.append("ok")
except OSError as e:
    r.append(errno.errorcode.get(e.errno, str(e.errno)))
print(" ".join(r))')
wait $pl
t_expect "scatter-list receives: too many, reserved, past the end, no local write, bad lkey, bad list; then taken" \
  "EINVAL EINVAL EINVAL EINVAL EINVAL EFAULT ok ok ok" "$out"

echo "# t=$(( $(date +%s) - t0 )) s: start-up"
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
# The responder sees the close as ECONNRESET when it comes during its
# start-up, ENOTCONN when it came first (the socket past ESTABLISHED when
# start-up begins, or already when the responder attaches zcddp; each once
# in a run on 2026-11-27, the initiator's programs starting faster).
pair "initiator offering only a Read RTR: EINVAL before the wire (the responder sees the close)" "ECONNRESET|ENOTCONN" EINVAL --timeout 1000 -- --p2p read

# A second start-up on the same socket.
ip netns exec b timeout $((30 * TS)) zcddp-mpa -s -a "$ZC_IP_B" -p $PORT --hold 500 > /tmp/zb 2>&1 &
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

echo "# t=$(( $(date +%s) - t0 )) s: the wire"
# The wire, checked by an independent peer.
# peer NAME WANT MODE [zcddp-mpa ARGS]: zcddp responder in b, raw client in a.
peer_client() {
  local name=$1 want=$2 mode=$3; shift 3
  ip netns exec b timeout $((30 * TS)) zcddp-mpa -s -a "$ZC_IP_B" -p $PORT "$@" > $ZB 2>&1 &
  local pb=$!
  listening b $PORT
  # The responder's listing, for a peer that waits for its start-up
  # (close-mid): ip netns exec became the timeout in b, zcddp-mpa's parent.
  ZCDDP_CONNS=/proc/$pb/net/zcddp_conns ip netns exec a timeout $((30 * TS)) python3 -m zcddp_peer client "$ZC_IP_B" $PORT "$mode" > $ZP 2>&1
  echo $? > $ZP.rc
  wait $pb
  peer_out $ZP
  t_expect "$name" "$want" "$(outcome $ZB)"
}
# peer_server NAME WANT MODE [zcddp-mpa ARGS] [-- PEER ARGS]: raw responder in b, zcddp initiator in a.
peer_server() {
  local name=$1 want=$2 mode=$3 zargs=() pargs=(); shift 3
  while [ $# -gt 0 ] && [ "$1" != -- ]; do zargs+=("$1"); shift; done
  [ $# -gt 0 ] && shift; pargs=("$@")
  ip netns exec b timeout $((30 * TS)) python3 -m zcddp_peer server "$ZC_IP_B" $PORT "$mode" "${pargs[@]}" > $ZP 2>&1 &
  local pb=$!
  listening b $PORT
  ip netns exec a timeout $((30 * TS)) zcddp-mpa -c -a "$ZC_IP_B" -p $PORT "${zargs[@]}" > $ZA 2>&1
  wait $pb; echo $? > $ZP.rc
  peer_out $ZP
  t_expect "$name" "$want" "$(outcome $ZA)"
}
peer_client "RTR Write from an RFC-built peer" ok p2p-ok --p2p write
peer_client "RTR Write with CRC and markers from an RFC-built peer" ok p2p-ok-crc-markers --p2p write --crc --markers
t_expect "the reply asked for markers and CRC (flags 0xd0)" 1 "$(grep -c 'flags=0xd0' /tmp/zp)"
peer_server "our request and RTR Write, byte for byte (no CRC)" ok check-rtr --p2p write
t_expect "peer: RTR bytes as the RFCs build them" 0 "$(cat /tmp/zp.rc)"
peer_server "our RTR Write with CRC and markers, byte for byte" ok check-rtr --p2p write --crc -- markers
t_expect "peer: RTR bytes with CRC and a marker as the RFCs build them" 0 "$(cat /tmp/zp.rc)"

echo "# t=$(( $(date +%s) - t0 )) s: bad input"
# Bad input.
before=$(procv b ZcddpStartupTimeout)
peer_client "a silent initiator: ETIMEDOUT" ETIMEDOUT silent --timeout 1000
ms=$(field /tmp/zb ms)
[ "${ms:-99999}" -ge 900 ] && [ "${ms:-99999}" -lt 2500 ] && t_ok "timed out at the bound ($ms ms for 1000)" || t_fail "timed out at the bound" "${ms:-no} ms for 1000"
t_expect "ZcddpStartupTimeout counted" $((before + 1)) "$(procv b ZcddpStartupTimeout)"
before=$(procv b ZcddpCrcErrors)
bg 1 peer_client "garbage instead of a request: EPROTO" EPROTO garbage
bg 2 peer_client "revision 3: EPROTO" EPROTO badrev
bg 3 peer_client "private data length 600: EPROTO" EPROTO longpd
bg 4 peer_client "data after the request before the reply: EPROTO" EPROTO extra
bg 5 peer_client "a close in the middle of the key: ECONNRESET" ECONNRESET close-mid
bg 6 peer_client "a Send RTR where Write was chosen: EPROTO" EPROTO p2p-wrong-rtr --p2p write
bg 7 peer_client "an RTR with a bad CRC: EPROTO" EPROTO p2p-bad-crc --p2p write
bg 8 peer_server "a rejecting responder: ECONNREFUSED" ECONNREFUSED reject
bg 9 peer_server "a Request key in the reply: EPROTO" EPROTO wrong-key
bg 10 peer_server "a reply revision above the request's: EPROTO" EPROTO rev-up --rev 1
bg 11 peer_server "a reply asking for markers we refuse: ECONNREFUSED" ECONNREFUSED markers-reply --no-markers
bg_collect
t_expect "ZcddpCrcErrors counted (the RTR's)" $((before + 1)) "$(procv b ZcddpCrcErrors)"
peer_server "a silent responder: ETIMEDOUT" ETIMEDOUT silent --timeout 1000

echo "# t=$(( $(date +%s) - t0 )) s: siw start-up"
# soft-iWARP, unmodified rping on it, both ways.
if modprobe -a siw rdma_ucm 2>/dev/null &&
   ip netns exec a rdma link add siwa type siw netdev va 2>/dev/null &&
   ip netns exec b rdma link add siwb type siw netdev vb 2>/dev/null; then
  t_ok "siw on va and vb"
  # rping -s -P: a server on siw in b for every connection below.
  ip netns exec b timeout $((60 * TS)) rping -s -P -a "$ZC_IP_B" -p $PORT > /tmp/rping-s.log 2>&1 &
  rs=$!
  listening b $PORT
  for crc in "" --crc; do
    ip netns exec a timeout $((20 * TS)) zcddp-mpa -c -a "$ZC_IP_B" -p $PORT $crc --hold 200 > /tmp/za 2>&1
    t_expect "zcddp initiator to rping -s on siw ${crc:-(no CRC)}" ok "$(outcome /tmp/za)"
    t_expect "  siw answered revision 2, CRC $([ -n "$crc" ] && echo on || echo off)" "2 $([ -n "$crc" ] && echo 1 || echo 0)" \
      "$(field /tmp/za rev) $(field /tmp/za crc)"
  done
  # Not run against siw either: siw as a peer-to-peer responder sends its
  # Reply before it hooks the socket for the RTR (siw_accept calls
  # siw_send_mpareqrep, then siw_sk_assign_rtr_upcalls), and in between
  # its data_ready drops the wake-up of anything that arrives in RDMA mode.
  # An RTR that lands in that window stays unread until more data comes;
  # a peer that sends nothing more and closes makes siw report the close
  # to a CM that never saw the connection established: the same
  # iwcm.c:966 BUG as below (make check on CI, 2026-11-28, in this case).
  # Our RTR Write is checked byte for byte against the RFC-built peer
  # above, and zcddp to zcddp. (On the debug kernel siw's RTR wait also
  # gets a lockdep report of its own, sk_callback_lock with and without
  # BHs off.)
  t_skip "zcddp initiator, peer-to-peer, to siw: Write RTR" "siw may miss an early RTR, then its close hits iwcm.c:966 BUG (upstream)"
  ip netns exec a timeout $((20 * TS)) zcddp-mpa -c -a "$ZC_IP_B" -p $PORT --markers > /tmp/za 2>&1
  t_expect "siw rejects markers: ECONNREFUSED" ECONNREFUSED "$(outcome /tmp/za)"
  # Not run against siw: zcddp refuses siw's reply (siw offers no Send
  # RTR) and closes while siw, a peer-to-peer responder, waits for the
  # RTR; siw then reports the close to the iWARP CM in a state the CM
  # does not expect (kernel BUG at drivers/infiniband/core/iwcm.c:966),
  # an upstream bug any initiator can trigger: siw-iwcm-crash.sh does it
  # with a plain TCP client that resets after siw's Reply, no zcddp
  # loaded (2026-11-26). zcddp's refusal of a reply without a usable RTR type
  # is checked against the raw peer above.
  t_skip "siw has no Send RTR: ECONNREFUSED" "closing before the RTR hits siw's iwcm.c:966 BUG (upstream)"
  kill $rs 2>/dev/null; wait $rs 2>/dev/null
  for crc in "" --crc; do
    ip netns exec b timeout $((20 * TS)) zcddp-mpa -s -a "$ZC_IP_B" -p $PORT $crc --pd zcddp --hold 500 > /tmp/zb 2>&1 &
    pb=$!
    listening b $PORT
    ip netns exec a timeout $((10 * TS)) rping -c -a "$ZC_IP_B" -p $PORT -C 1 > /tmp/rping-c.log 2>&1
    wait $pb
    t_expect "rping -c on siw to a zcddp responder ${crc:-(no CRC)}" ok "$(outcome /tmp/zb)"
    t_expect "  revision 2, CRC $([ -n "$crc" ] && echo on || echo off), IRD/ORD 1" "2 $([ -n "$crc" ] && echo 1 || echo 0) 1 1" \
      "$(field /tmp/zb rev) $(field /tmp/zb crc) $(field /tmp/zb ird) $(field /tmp/zb ord)"
  done
else
  t_skip "siw interop" "no siw in this kernel"
fi

echo "# t=$(( $(date +%s) - t0 )) s: data path"
# The data path: zcddp-ping (rping's sequence: Send, RDMA Read, RDMA Write,
# verified) between two zcddp sockets, then against rping on siw.
# ping NAME SARGS -- CARGS: zcddp-ping server in b, client (-V) in a.
zping() {
  local name=$1 sargs=() cargs=(); shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
  [ $# -gt 0 ] && shift; cargs=("$@")
  ip netns exec b timeout $((120 * TS)) zcddp-ping -s -a "$ZC_IP_B" -p $PORT "${sargs[@]}" > /tmp/ps 2>&1 &
  local pb=$!
  listening b $PORT
  ip netns exec a timeout $((120 * TS)) zcddp-ping -c -a "$ZC_IP_B" -p $PORT -V "${cargs[@]}" > /tmp/pc 2>&1
  local rc=$?
  wait $pb
  [ $rc = 0 ] || sed 's/^/# client: /' /tmp/pc | tail -n 3
  t_expect "$name" "0 $(grep -o -- '-C [0-9]*' <<<"${cargs[*]}" | cut -d' ' -f2) pings" "$rc $(grep -o '^client [0-9]* pings' /tmp/pc | cut -d' ' -f2-)"
}
placed0=$(procv b ZcddpBytesPlaced)
zping "zcddp-ping <-> zcddp-ping, 64 B x 200" -S 64 -- -S 64 -C 200
zping "zcddp-ping <-> zcddp-ping, 4 KiB x 100, CRC" -S 4096 --crc -- -S 4096 -C 100 --crc
zping "zcddp-ping <-> zcddp-ping, 64 KiB x 20, CRC and markers" -S 65536 --crc --markers -- -S 65536 -C 20 --crc --markers
zping "zcddp-ping <-> zcddp-ping, 1 MiB x 3, CRC" -S 1048576 --crc -- -S 1048576 -C 3 --crc
zping "zcddp-ping <-> zcddp-ping, 1 MiB x 3, no CRC" -S 1048576 -- -S 1048576 -C 3
placed=$(( $(procv b ZcddpBytesPlaced) - placed0 ))
# Each ping places the client's buffer in the server (the Read) and 16 B
# of two Sends; the rest is in the client.
want=$(( 200 * (64 + 32) + 100 * (4096 + 32) + 20 * (65536 + 32) + 6 * (1048576 + 32) ))
t_expect "ZcddpBytesPlaced in b: every byte read and sent" "$want" "$placed"

echo "# t=$(( $(date +%s) - t0 )) s: data path with siw"
# In-guest unmodified programs: the registration of the other side is
# siw's; the data checked by -V on the client side.
# siw_lockdep NAME: true (and NAME skipped) on the debug kernel, where siw's
# data path after an RTR makes lockdep report siw's own sk_callback_lock
# use (write_lock_bh in siw_rtr_data_ready in softirq, read_lock with BHs
# on in siw_qp_llp_data_ready from a process's release_sock: seen on the
# debug kernel 2026-11-25 with rping as the siw side; see the Write RTR
# case above). Lockdep turns itself off after a first report, so the cases
# after it would run unwatched.
siw_lockdep() {
  [ "${ZCNET_FLAVOUR:-default}" = debug ] || return 1
  t_skip "$1" "siw's own lockdep report (sk_callback_lock) on the debug kernel"
}
# siw_first_lost: siw's accept race (siw-lib.sh): zcddp-ping completed no
# ping, and siw's end of the connection still holds bytes it never read.
# Both ends may have closed before the look (zcddp-ping gives up, then
# rping -s sees the disconnect and exits: seen in CI at 6147a42 under
# load, no socket of the port left in either namespace and no zcddp
# connection): the first ping never completed and nothing is left to look
# at counts the same. A zcddp fault that loses the first ping every time
# still fails all SIW_TRIES tries.
siw_first_lost() {
  grep -q 'no completion of opcode' /tmp/pc && ! grep -q '^client [0-9]* pings' /tmp/pc &&
    { ip netns exec b cat /proc/net/tcp /proc/net/tcp6 | siw_unread || [ -z "${1:-}" ]; }
}
siw_ping() {
  local name=$1 size=$2 count=$3 crc=$4 t=$SECONDS try rc pb
  siw_lockdep "$name" && return
  for try in $(seq $SIW_TRIES); do
    ip netns exec b timeout $((300 * TS)) rping -s -a "$ZC_IP_B" -p $PORT -S "$size" -C "$count" > /tmp/rs 2>&1 &
    pb=$!
    listening b $PORT
    ip netns exec a timeout $((300 * TS)) zcddp-ping -c -a "$ZC_IP_B" -p $PORT -S "$size" -C "$count" -V $crc > /tmp/pc 2>&1
    rc=$?
    # What a failure left, for the log: both ends' sockets and zcddp's
    # connection (a stall that is not siw_first_lost's had none of it).
    left=
    if [ $rc != 0 ]; then
      left=$(for ns in a b; do ip netns exec $ns ss -Htnoi "( sport = :$PORT or dport = :$PORT )" | sed "s/^/# ss $ns: /"; done)
      [ -n "$left" ] && printf '%s\n' "$left"
      ip netns exec a cat /proc/net/zcddp_conns | sed 's/^/# conns a: /'
    fi
    # A failed client leaves rping -s waiting for its timeout: stopped.
    if [ $rc != 0 ] && [ $try -lt $SIW_TRIES ] && siw_first_lost "$left"; then
      ip netns exec b ss -Htn "sport = :$PORT" | sed 's/^/# siw stalled: /'
      echo "# siw left zcddp-ping's first FPDU unread (its accept race, not zcddp's): once more"
      kill $pb 2>/dev/null; wait $pb
      continue
    fi
    [ $rc = 0 ] || kill $pb 2>/dev/null
    wait $pb
    break
  done
  [ $rc = 0 ] || sed 's/^/# client: /' /tmp/pc | tail -n 3
  t_expect "$name" "0 $count pings" "$rc $(grep -o '^client [0-9]* pings' /tmp/pc | cut -d' ' -f2-)"
  echo "# $((SECONDS - t)) s"
}
# rping -c on siw hangs after a failed rdma_connect() until its timeout
# (seen once, 2026-11-29: "rdma_connect: Address already in use"; the
# RDMA CM picks the local port apart from TCP, siw binds its TCP socket
# to it, and a TCP socket of a on that port without SO_REUSEADDR, an
# earlier connection's TIME_WAIT, makes the bind fail; 300 s lost, zcddp
# never saw a connection). That failure, seen in its stderr while it
# runs, stops it, and the pairing runs once more.
rping_c() {
  local name=$1 size=$2 count=$3 crc=$4 t=$SECONDS try rc pb pr
  siw_lockdep "$name" && { t_skip "  zcddp-ping served them" "see above"; return; }
  for try in 1 2; do
    ip netns exec b timeout $((300 * TS)) zcddp-ping -s -a "$ZC_IP_B" -p $PORT -S "$size" $crc > /tmp/ps 2>&1 &
    pb=$!
    listening b $PORT
    # stderr apart: rping's "DISCONNECT EVENT" would land inside a line.
    ip netns exec a timeout $((300 * TS)) rping -c -a "$ZC_IP_B" -p $PORT -S "$size" -C "$count" -V -v > /tmp/rc 2>/tmp/rc.err &
    pr=$!
    while kill -0 $pr 2>/dev/null && ! grep -q 'connect error' /tmp/rc.err; do sleep 0.1; done
    if [ $try = 1 ] && grep -q 'rdma_connect: Address already in use' /tmp/rc.err; then
      sed 's/^/# rping: /' /tmp/rc.err | tail -n 2
      echo "# rping's rdma_connect found its port taken (siw's, not zcddp's): once more"
      pkill -KILL -P $pr; wait $pr 2>/dev/null
      kill $pb 2>/dev/null; wait $pb 2>/dev/null
      continue
    fi
    wait $pr
    rc=$?
    [ $rc = 0 ] || kill $pb 2>/dev/null
    wait $pb
    break
  done
  [ $rc = 0 ] || sed 's/^/# rping: /' /tmp/rc.err | tail -n 3
  t_expect "$name" "0 $count" "$rc $(grep -c '^ping data: rdma-ping' /tmp/rc)"
  t_expect "  zcddp-ping served them" "server $count pings" "$(grep -o '^server [0-9]* pings' /tmp/ps)"
  echo "# $((SECONDS - t)) s"
}
if [ -e /sys/class/infiniband/siwb ]; then
  # The acceptance's sizes and counts: 1000 iterations both ways, CRC off
  # and on; 65535 B is rping's largest (-S), 1 MiB is covered by
  # zcddp-ping <-> zcddp-ping, zcddp-copy and siw_verbs below.
  siw_ping "zcddp-ping -c -V to rping -s on siw, 64 B x 1000" 64 1000 ""
  siw_ping "zcddp-ping -c -V to rping -s on siw, 65535 B x 1000" 65535 1000 ""
  siw_ping "zcddp-ping -c -V to rping -s on siw, 65535 B x 1000, CRC" 65535 1000 --crc
  rping_c "rping -c -V on siw to zcddp-ping -s, 64 B x 1000" 64 1000 ""
  rping_c "rping -c -V on siw to zcddp-ping -s, 65535 B x 1000" 65535 1000 ""
  rping_c "rping -c -V on siw to zcddp-ping -s, 65535 B x 1000, CRC" 65535 1000 --crc
fi

# siw_verbs (tools/testing/zcnet/siw_verbs.c, rdma-core on siw) against
# zcddp-verbs: a Send into a receive posted on the zcddp side, siw's RDMA
# Read and RDMA Write of zcddp's region, zcddp's RDMA Read and RDMA Write of
# siw's region, every byte seeded and hashed on both sides; siw as
# rdma_cm's active side (MPA initiator) and as its passive side.
# sverbs NAME DIR SIZE [ZARGS] [COUNT]: DIR c: siw_verbs -c in a,
# zcddp-verbs -s in b; DIR s: siw_verbs -s in b, zcddp-verbs -c in a;
# ZARGS zcddp-verbs's (--crc, --sge N, --no-remote-inv); COUNT rounds of
# the exchange on the connection (-C, 1 by default), the first round's
# checks printed, every round's made.
sverbs() {
  local name=$1 dir=$2 size=$3 crc=${4:-} n=${5:-1} rz rv t=$SECONDS d0
  siw_lockdep "$name" && { t_skip "  every check made on both sides" "see above"; return; }
  d0=$(procv "$([ "$dir" = c ] && echo b || echo a)" ZcddpRxBytesDirect)
  # shellcheck disable=SC2086 # zcddp-verbs's words
  sv_run "$dir" "$size" "$n" $((60 * TS)) --wait $((20000 * TS)) $crc
  rv=$RV rz=$RZ
  sed 's/^/# /' /tmp/vs /tmp/vz
  local zns=b
  [ "$dir" = c ] || zns=a
  local dd=$(( $(procv $zns ZcddpRxBytesDirect) - d0 ))
  echo "# zcddp's side placed $dd bytes directly from TCP's queue"
  if [ "$size" -ge 65536 ] && [ -z "${SV_NETEM:-}" ]; then
    # siw's Write into zcddp's region and its Read Response: siw's FPDUs
    # (an MSS each, not aligned to segments) placed from the queue, but
    # for each message's short tail.
    [ "$dd" -ge $((n * (2 * size - 8192))) ] && t_ok "  siw's Write and Read Response placed directly ($dd bytes)" ||
      t_fail "  siw's Write and Read Response placed directly" "$dd bytes of $((n * 2 * size))"
  fi
  if [ "$n" -gt 1 ]; then
    t_expect "  $n rounds on both sides" "$n $n" \
      "$(grep -o '^siw_verbs: [0-9]* rounds' /tmp/vs | cut -d' ' -f2) $(grep -o '^zcddp-verbs: [0-9]* rounds' /tmp/vz | cut -d' ' -f2)"
  fi
  t_expect "$name" "0 0 1 1" "$rv $rz $(grep -c '^siw_verbs: all checked' /tmp/vs) $(grep -c '^zcddp-verbs: all checked' /tmp/vz)"
  local on=0
  [[ " $crc " == *" --crc "* ]] && on=1
  t_expect "  CRC $([ $on = 1 ] && echo on || echo off), every check made on both sides" "crc=$on 5 4 0" \
    "$(grep -o 'crc=[01]' /tmp/vz) $(grep -c ' ok (hash' /tmp/vs) $(grep -c ' ok (hash' /tmp/vz) $(cat /tmp/vs /tmp/vz | grep -c MISMATCH)"
  echo "# $((SECONDS - t)) s"
}
if [ -e /sys/class/infiniband/siwb ]; then
  # 64 B x 1000 and 1 MiB x 10 rounds here; 1 MiB x 1000 each way, CRC
  # on and off, was run once (notes/2026-12-08-zcddp-history.md: 2 to 2.5 min each under TCG).
  # siw's data Sends go into a receive over a scatter list on zcddp's
  # side (--sge: each element its own registration, cut off the FPDUs'
  # boundaries): 64 B staged, 64 KiB placed from TCP's queue.
  sverbs "siw_verbs -c on siw with zcddp-verbs -s: Send, Write, Read both ways, 64 B x 1000, Send into 3 elements" c 64 "--sge 3" 1000
  sverbs "siw_verbs -c on siw with zcddp-verbs -s: Send, Write, Read both ways, 1 MiB x 10, CRC, Send into 6 elements" c 1048576 "--crc --sge 6" 10
  sverbs "siw_verbs -s on siw with zcddp-verbs -c: Send, Write, Read both ways, 64 B x 1000, CRC" s 64 --crc 1000
  sverbs "siw_verbs -s on siw with zcddp-verbs -c: Send, Write, Read both ways, 1 MiB x 10" s 1048576 "" 10
  # Under faults both ways (netem on va and vb), CRC, siw the MPA
  # initiator, zcddp's regions open to out-of-order placement
  # (--no-remote-inv). siw sends no markers and aligns its FPDUs with
  # segments, so a hole lies between FPDUs and nothing tells zcddp where
  # the FPDUs after it start: since issue 45 (major 8) siw's segments that
  # overtake a hole wait for the in-order path, each counted in
  # ZcddpOooRefusedNoStart (the module before placed them, taking each
  # segment's first byte as an FPDU start). zcddp-verbs --watch: a thread
  # watches zcddp's region while siw RDMA-Writes it and counts blocks of
  # siw's Write seen in memory before the hole before them was filled
  # (tools/zcddp/src/watch.rs): none may be seen unless something was
  # placed out of order. Last, the control: the same at 1% with a region
  # the peer may invalidate, so nothing is placed out of order, and the
  # watch sees nothing ahead.
  ahead= ahead_n=0 placed_n=0
  for rate in 1 5 1c; do
    siw_lockdep "siw_verbs with zcddp-verbs through netem, ${rate%c}%" && continue
    SV_NETEM="delay 20ms reorder 25% loss ${rate%c}% duplicate ${rate%c}% corrupt ${rate%c}%"
    ip netns exec a tc qdisc replace dev va root netem $SV_NETEM
    ip netns exec b tc qdisc replace dev vb root netem $SV_NETEM
    o0=$(procv b ZcddpBytesPlacedOutOfOrder) n0=$(procv b ZcddpOooRefusedNoStart)
    if [ "$rate" = 1c ]; then
      sverbs "the same into a region siw may invalidate (no placement out of order), 1%" c 262144 "--crc --watch"
    else
      sverbs "siw_verbs -c with zcddp-verbs -s, 256 KiB, CRC, through netem $SV_NETEM both ways" c 262144 "--crc --no-remote-inv --watch"
    fi
    ip netns exec a tc qdisc del dev va root
    ip netns exec b tc qdisc del dev vb root
    o1=$(( $(procv b ZcddpBytesPlacedOutOfOrder) - o0 )) n1=$(( $(procv b ZcddpOooRefusedNoStart) - n0 ))
    ah=$(grep -o 'watch scans=[0-9]* ahead=[0-9]*' /tmp/vz | grep -o 'ahead=[0-9]*' | cut -d= -f2)
    if [ "$rate" = 1c ]; then
      t_expect "  nothing placed out of order, no byte seen ahead of a hole" "0 0" "$o1 ${ah:-none}"
      continue
    fi
    [ "$n1" -gt 0 ] 2>/dev/null && t_ok "  siw's segments that overtook a hole refused: no FPDU start known ($n1; placed $o1 bytes)" ||
      t_fail "  siw's segments that overtook a hole refused: no FPDU start known" "ZcddpOooRefusedNoStart moved by ${n1:-?}, placed ${o1:-?}"
    ahead+="${ahead:+, }$rate%: $(grep -o 'watch .*' /tmp/vz || echo no watch line)"
    ahead_n=$((ahead_n + ${ah:-0})) placed_n=$((placed_n + ${o1:-0}))
  done
  if [ -n "$ahead" ]; then
    [ "$placed_n" -gt 0 ] || [ "$ahead_n" = 0 ] && t_ok "  no byte of siw's seen ahead of a hole unless placed out of order ($ahead_n sightings, $placed_n bytes placed; $ahead)" ||
      t_fail "  no byte of siw's seen ahead of a hole unless placed out of order" "$ahead_n sightings with nothing placed; $ahead"
  fi
  SV_NETEM=
  # The timing modes (-L) that make bench-ddp runs against siw, briefly:
  # zcddp-verbs takes its completions from a completion ring and posts its
  # receives into a receive ring, siw_verbs uses rdma-core's; both check
  # the last Send and the last Write of 200 each way.
  if siw_lockdep "zcddp-verbs -L with siw_verbs -L, 64 B x 200"; then
    t_skip "  zcddp-verbs's completions and receives through its rings" "see above"
  else
    SV_ARGS="-L 200" sv_run s 64 1 $((60 * TS)) -L 200
    [ "$RZ $RV" = "0 0" ] || sed 's/^/# /' /tmp/vz /tmp/vs | tail -n 8
    grep -h 'median' /tmp/vz | sed 's/^/# /'
    t_expect "zcddp-verbs -L with siw_verbs -L, 64 B x 200: Send and Write latency, checked on both sides" \
      "0 0 1 1 2" "$RZ $RV $(grep -c '^zcddp-verbs: all checked' /tmp/vz) $(grep -c '^siw_verbs: all checked' /tmp/vs) $(grep -c '^zcddp-verbs: result' /tmp/vz)"
    t_expect "  zcddp-verbs's completions and receives through its rings" rings \
      "$(grep -o 'completions and receives by [a-z]*' /tmp/vz | awk '{ print $NF }')"
  fi
fi

echo "# t=$(( $(date +%s) - t0 )) s: data path security"
# Security and bad input on the data path: a raw peer after start-up; the
# zcddp side (zcddp-mpa --serve) has a 4 KiB registration with a pattern.
# data_case NAME WANT_TERM ACCESS MODE: the Terminate the peer gets
# ("layer etype ecode", or "none"), and the registration unchanged.
data_case() {
  local name=$1 want=$2 access=$3 mode=$4 keep=${5:-unchanged}
  ip netns exec b timeout $((60 * TS)) zcddp-mpa -s -a "${DADDR:-$ZC_IP_B}" -p $PORT --serve "${SERVE_MS:-10000}" "$access" > $ZB 2>&1 &
  local pb=$!
  listening b $PORT
  ip netns exec a timeout $((60 * TS)) python3 -m zcddp_peer data "${DADDR:-$ZC_IP_B}" $PORT "$mode" $ZB /tmp/zb2 > $ZP 2>&1
  wait $pb
  peer_out $ZP
  local line got=none h0= h1= re_term='^term layer=([0-9]+) etype=([0-9]+) ecode=([0-9]+)'
  while IFS= read -r line; do
    [ "$got" = none ] && [[ $line =~ $re_term ]] && got="${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
  done < $ZP
  t_expect "$name: Terminate (layer etype ecode)" "$want" "$got"
  while IFS= read -r line; do
    [ -z "$h0" ] && [[ $line =~ hash0=([0-9a-f]*) ]] && h0=${BASH_REMATCH[1]}
    [ -z "$h1" ] && [[ $line =~ \ hash=([0-9a-f]*) ]] && h1=${BASH_REMATCH[1]}
  done < $ZB
  # Nothing lands beside the registration (a guard page on each side) or
  # in the deregistered registration's memory, whatever the case did.
  local g0 d0
  g0=$(field $ZB guard0) d0=$(field $ZB deadmem0)
  t_expect "$name: guard pages on both sides and the deregistered memory unchanged" \
    "${g0:-missing} ${d0:-missing}" "$(field $ZB guard) $(field $ZB deadmem)"
  if [ "$keep" = unchanged ]; then
    t_expect "$name: registered memory unchanged" "$h0" "${h1:-none}"
  else
    [ -n "$h1" ] && [ "$h0" != "$h1" ] && t_ok "$name: registered memory written" || t_fail "$name: registered memory written" "$h0 -> ${h1:-none}"
  fi
}
before=$(procv b ZcddpCrcErrors)
write_ok() {
  data_case "Write inside the region" none lwr write-ok written
  t_expect "  the Send after it completed (wr 77, 12 bytes) with its text" "1 hello zcddp" \
    "$(grep -c 'cqe wr_id=77 opcode=5 status=0 len=12' $ZB) $(grep -o 'recv=.*' $ZB | cut -d= -f2)"
}
read_ok() {
  data_case "Read inside the region" none lwr read-ok
  t_expect "  the Read Response carried the registered bytes" 1 "$(grep -c 'readresp .* ok=1' $ZP)"
}
bg 1 write_ok
bg 2 data_case "Write inside the region, CRC" none lwr write-ok-crc written
bg 3 data_case "Write past the end" "1 1 1" lwr write-oob
bg 4 data_case "Write below the base" "1 1 1" lwr write-below
bg 5 data_case "Write to an unknown STag" "1 1 0" lwr write-badstag
bg 6 data_case "Write to a deregistered STag" "1 1 0" lwr write-dead
bg 7 data_case "Write without remote write access" "0 1 2" lr write-noaccess
bg 8 data_case "Write wrapping the TO space" "1 1 3" lwr write-wrap
bg 9 read_ok
bg 10 data_case "Read past the end" "0 1 1" lwr read-oob
bg 11 data_case "Read without remote read access" "0 1 2" lw read-noaccess
bg 12 data_case "a second Send with one receive posted" "1 2 2" lwr send-nobuf
bg 13 data_case "a Send longer than the receive" "1 2 5" lwr send-toolong
bg 14 data_case "a Send with an MSN ahead" "1 2 2" lwr send-badmsn
bg 15 data_case "an unknown opcode" "0 2 6" lwr bad-opcode
bg 16 data_case "an untagged queue number 5" "1 2 1" lwr bad-qn
bg 17 data_case "a DDP version 2" "1 2 6" lwr bad-version
bg 18 data_case "a truncated DDP header" "2 0 3" lwr truncated
bg 19 data_case "a bad CRC" "2 0 2" lwr bad-crc-crc
bg 20 data_case "an FPDU announced at 65535 bytes and never finished" none lwr huge-length
send_inv() {
  data_case "Send with SE and Invalidate, then a Write to the STag" "1 1 0" lwr send-inv
  t_expect "  the receive completed solicited and invalidated (flags 3)" 1 "$(grep -c 'cqe wr_id=77 opcode=5 status=0 len=4 flags=3' $ZB)"
}
bg 21 send_inv
# The listing read over and over while the 21 connections come and go
# (it locks no socket: it reads what each connection published): every
# read whole and well formed (the header, then connection lines and their
# registrations), no kernel report meanwhile.
k0=$(dmesg | grep -cE 'BUG:|WARNING:|KASAN|UBSAN|circular locking')
ip netns exec b sh -c 'n=0; for i in $(seq 200); do cat /proc/net/zcddp_conns > /tmp/zl1 &&
  awk "NR <= 2 && /^# / || /^[0-9\[][^ ]* [^ ]* (initiator|responder|-) rev=.* zctx=[a-z]+ rings\(cq\/rq\)=[0-9]+\/[0-9]+\$/ || /^\tmr / { next } { exit 1 }" /tmp/zl1 &&
  n=$((n + 1)); done; echo $n' > /tmp/zlist &
pl=$!
bg_collect
wait $pl
t_expect "/proc/net/zcddp_conns read 200 times while connections close, each well formed, no kernel report" \
  "200 0" "$(cat /tmp/zlist) $(( $(dmesg | grep -cE 'BUG:|WARNING:|KASAN|UBSAN|circular locking') - k0 ))"
# Another user's lines (their buffer addresses and STags) only to
# CAP_NET_ADMIN: a connection of root's and one of uid 65534's, each with a
# registration; each reader's count of each one's line/registration line.
ip netns exec b timeout $((30 * TS)) python3 -m zcddp_peer conns-uid "$ZC_IP_B" $((PORT + 9)) > /tmp/zuid 2>&1
kv() { grep -o "\<$1=[^ ]*" /tmp/zuid | head -n1 | cut -d= -f2; }
t_expect "/proc/net/zcddp_conns to uid 65534: its own connection, not root's (line/registration)" \
  "1/1 0/0" "$(kv nobody_own) $(kv nobody_root)"
t_expect "  to root (CAP_NET_ADMIN): both" "1/1 1/1" "$(kv root_own) $(kv root_nobody)"
[ "$(kv nobody_own) $(kv nobody_root) $(kv root_own) $(kv root_nobody)" = "1/1 0/0 1/1 1/1" ] ||
  sed 's/^/# conns-uid: /' /tmp/zuid
# A large registration holds nothing up (issue 45 minors): a child
# registers 64 MiB of untouched memory (the pages faulted in as they are
# pinned); once 8 MiB are in, the listing is read, then ZCDDP_INFO of the
# socket: each must return while the pinning is still under way (the
# child's resident memory then below the region's 64 MiB). Before the
# fixes REG_MR pinned with the socket locked, and the listing locked each
# socket: both waited for the registration (68280 and 69888 KiB resident).
# The listing now locks no socket at all; REG_MR pins before it locks.
ip netns exec a timeout $((60 * TS)) python3 -m zcddp_mem pinlock $PORT 64 > /tmp/zpl 2>&1
sed 's/^/# pinlock: /' /tmp/zpl
lk=$(field /tmp/zpl list_kib) ik=$(field /tmp/zpl info_kib)
[ "$(field /tmp/zpl listed) $(field /tmp/zpl reg)" = "1 ok" ] && [ "${lk:-0}" -gt 0 ] && [ "$lk" -lt 65536 ] &&
  t_ok "/proc/net/zcddp_conns lists a connection while a REG_MR pins for it (${lk} KiB of 64 MiB pinned)" ||
  t_fail "/proc/net/zcddp_conns lists a connection while a REG_MR pins for it" "$(cat /tmp/zpl)"
[ "${ik:-0}" -gt 0 ] && [ "$ik" -lt 65536 ] &&
  t_ok "  ZCDDP_INFO on the socket returns meanwhile (${ik} KiB pinned): REG_MR pins without the socket lock" ||
  t_fail "  ZCDDP_INFO on the socket returns while REG_MR pins" "$(cat /tmp/zpl)"
# After a Terminate the connection is closed as RFC 5040 asks (issue 45
# minor): a raw peer sends one (received) or a Send to queue 5 (sent:
# zcddp answers with a Terminate), reads zcddp's stream to its end (the
# FIN after the Terminate), then sends 200 FPDUs of 1 KiB. zcddp's socket
# is in FIN_WAIT2 (5), its posted receive completed with ZCDDP_WC_REM_ERR
# (2) after a Terminate received, ZCDDP_WC_FLUSH_ERR (3) after one sent,
# every byte of the 200 FPDUs read and dropped (nothing left unread), and
# its work item ran at most 4 times meanwhile, not once a segment.
for tc in "received no 2" "sent yes 3"; do
  read -r tm tt tst <<<"$tc"
  ip netns exec a timeout $((60 * TS)) python3 -m zcddp_mem termclose $PORT $tm > /tmp/ztc 2>&1
  sed "s/^/# termclose $tm: /" /tmp/ztc
  t_expect "a Terminate $tm: zcddp's Terminate, its stream's end, TCP state, receive status, bytes unread, all 200 FPDUs after it dropped" \
    "$tt eof 5 $tst 0 $(field /tmp/ztc flood)" \
    "$(field /tmp/ztc term) $(field /tmp/ztc end) $(field /tmp/ztc state) $(field /tmp/ztc status) $(field /tmp/ztc inq) $(field /tmp/ztc discarded)"
  r=$(field /tmp/ztc runs)
  [ "${r:-99}" -le 4 ] 2>/dev/null && t_ok "  the work item ran $r times meanwhile (at most 4)" ||
    t_fail "  the work item ran at most 4 times meanwhile" "${r:-none}"
done
t_expect "ZcddpCrcErrors counted (the bad CRC)" $((before + 1)) "$(procv b ZcddpCrcErrors)"
# The same checks on FPDUs with 1 KiB of payload, which in-order direct
# placement checks in TCP's receive queue and copies from there (issue
# 12): only the good Write is placed, from the queue (ZcddpRxBytesDirect
# moves by its 1024 bytes, nothing more); the corrupted one (a payload bit
# flipped after the CRC was made) is never placed.
before=$(procv b ZcddpCrcErrors) d0=$(procv b ZcddpRxBytesDirect)
write_ok_big() {
  data_case "Write of 1 KiB inside the region (direct)" none lwr write-ok-big written
  t_expect "  the Send after it completed (wr 77, 12 bytes) with its text" "1 hello zcddp" \
    "$(grep -c 'cqe wr_id=77 opcode=5 status=0 len=12' $ZB) $(grep -o 'recv=.*' $ZB | cut -d= -f2)"
}
bg 1 write_ok_big
bg 2 data_case "Write of 1 KiB past the end (direct)" "1 1 1" lwr write-oob-big
bg 3 data_case "Write of 1 KiB to an unknown STag (direct)" "1 1 0" lwr write-badstag-big
bg 4 data_case "Write of 1 KiB without remote write access (direct)" "0 1 2" lr write-big
bg 5 data_case "Write of 1 KiB with a payload bit flipped, CRC" "2 0 2" lwr bad-crc-big-crc
bg 6 data_case "a Send of 1 KiB longer than the receive (direct)" "1 2 5" lwr send-toolong-big
bg 7 data_case "a Write of 1 KiB sent in part, then whole (a sender's race), CRC" "2 0 2" lwr resent-big-crc
bg_collect
t_expect "  the corrupted FPDUs counted as CRC errors" $((before + 2)) "$(procv b ZcddpCrcErrors)"
# The log says where, both CRCs, and that the FPDU's header recurs inside
# it: the mark of a sender that sent part of an FPDU, then all of it.
dmesg | grep -q "zcddp: CRC of the FPDU from .* its first 16 bytes recur at its byte 600" &&
  t_ok "  the log line for the resent FPDU says its header recurs at byte 600" ||
  t_fail "  the log line for the resent FPDU says its header recurs" "$(dmesg | grep 'zcddp: CRC' | tail -3)"
t_expect "  ZcddpRxBytesDirect: the good Write's 1024 bytes, nothing of the refused ones" 1024 $(( $(procv b ZcddpRxBytesDirect) - d0 ))
# Another connection's STag: a second zcddp socket (port+1) registers too;
# its STag and address, named on the first connection, are unknown there.
ip netns exec b timeout $((30 * TS)) zcddp-mpa -s -a "$ZC_IP_B" -p $((PORT + 1)) --serve 3000 lwr > /tmp/zb2 2>&1 &
pb2=$!
listening b $((PORT + 1))
ip netns exec a timeout $((30 * TS)) python3 -m zcddp_peer data "$ZC_IP_B" $((PORT + 1)) idle /tmp/zb2 > /dev/null 2>&1 &
pi=$!
data_case "Write to another connection's STag" "1 1 0" lwr write-other
wait $pi $pb2
t_expect "  the other connection's memory unchanged" \
  "$(grep -o 'hash0=[0-9a-f]*' /tmp/zb2 | cut -d= -f2)" "$(grep -o ' hash=[0-9a-f]*' /tmp/zb2 | cut -d= -f2)"
g0=$(field /tmp/zb2 guard0) d0=$(field /tmp/zb2 deadmem0)
t_expect "  nor its guard pages and deregistered memory" \
  "${g0:-missing} ${d0:-missing}" "$(field /tmp/zb2 guard) $(field /tmp/zb2 deadmem)"
# Out of order (issue 12): with CRC, into registrations that take
# out-of-order placement (n: the peer cannot invalidate them), the
# attacks overtake a first FPDU that netem (set by the peer on a's egress)
# holds back 200 ms, all but its first 8 bytes: those, with its length
# field, came in order, so b knows where the next FPDU starts (issue 45:
# only from a known start is anything placed out of order). b's walk scans
# the attack ahead of the hole from that start and the registration check
# refuses it (ZcddpOooRefusedAccess moves); the in-order path then
# Terminates as above and the memory stays unchanged.
# ooo_refused NAME: ZcddpOooRefusedAccess moved since the last call.
R0=$(procv b ZcddpOooRefusedAccess)
ooo_refused() {
  local r
  r=$(procv b ZcddpOooRefusedAccess)
  [ "$r" -gt "$R0" ] 2>/dev/null && t_ok "$1: refused out of order by the registration check ($((r - R0)))" ||
    t_fail "$1: refused out of order by the registration check" "ZcddpOooRefusedAccess $R0 -> $r"
  R0=$r
}
data_case "out of order: Write past the end" "1 1 1" lwrn ooo-write-oob-crc
ooo_refused "out of order: Write past the end"
# The same over IPv6 (the scan is refused there too). With the IPv6 hook
# disabled this passed as well on 2026-11-26 (a walk that in-order bytes
# started); with both hooks off on 2026-11-29 all four out-of-order
# refusals failed (the counter stayed), as did the hole cases below.
DADDR=$ZC_IP6_B data_case "over IPv6, out of order: Write past the end" "1 1 1" lwrn ooo-write-oob-crc
ooo_refused "over IPv6, out of order: Write past the end"
ip netns exec b timeout $((30 * TS)) zcddp-mpa -s -a "$ZC_IP_B" -p $((PORT + 1)) --serve 3000 lwrn > /tmp/zb2 2>&1 &
pb2=$!
listening b $((PORT + 1))
ip netns exec a timeout $((30 * TS)) python3 -m zcddp_peer data "$ZC_IP_B" $((PORT + 1)) idle /tmp/zb2 > /dev/null 2>&1 &
pi=$!
data_case "out of order: Write to another connection's STag" "1 1 0" lwrn ooo-write-other-crc
wait $pi $pb2
t_expect "  the other connection's memory unchanged" \
  "$(grep -o 'hash0=[0-9a-f]*' /tmp/zb2 | cut -d= -f2)" "$(grep -o ' hash=[0-9a-f]*' /tmp/zb2 | cut -d= -f2)"
ooo_refused "out of order: Write to another connection's STag"
# The invalidation overtaken: a Send with Invalidate of an invalidatable
# registration held in the hole, a Write to it arriving first. Only
# registrations the peer cannot invalidate take out-of-order placement,
# so the Write waits for its turn and finds the STag dead.
data_case "out of order: Send with Invalidate in the hole, a Write to its STag ahead" "1 1 0" lwr ooo-send-inv-crc
t_expect "  the receive completed invalidated (flags 3)" 1 "$(grep -c 'cqe wr_id=77 opcode=5 status=0 len=4 flags=3' $ZB)"
ooo_refused "out of order: the Write to an invalidatable registration"
# The netfilter hook's own kick, IPv4 and IPv6: one FPDU lost for
# HOLE_MS but its first 8 bytes (zcddp_peer.py's hole-*: a prio qdisc on
# va sends its packets, retransmissions too, to a netem band that loses
# them; the 8 bytes with its length field come in order, so b knows where
# the next FPDU starts), three Writes of 1000 bytes and a Send ahead of it,
# nothing behind it in order until an RTO after HOLE_MS retransmits it,
# and zcddp-mpa asleep in one completion wait (no verb call walks the
# out-of-order queue). The Writes can be placed before the hole fills
# only if the hook kicks the socket's receive path: with the hooks disabled
# this case saw 0 bytes placed out of order (2026-11-26). In a: no
# autocorking (each FPDU a segment of its own), no tail loss probe or
# early retransmit. RACK stays on whatever tcp_recovery says (kernel
# 7.2): it resent the first FPDU a few ms after the first SACK, which
# filled the hole at once while the case held that FPDU in netem instead
# of losing it (tcpdump, 2026-11-28). The hold and the minimum RTO (host
# routes to b in a) scale with TS.
a_tcp() { for kv in "$@"; do ip netns exec a sysctl -qw "net.ipv4.$kv"; done; }
a_tcp tcp_autocorking=0 tcp_recovery=0 tcp_early_retrans=0 tcp_reordering=100
ip -n a route add "$ZC_IP_B/32" dev va rto_min $((3 * TS))s
ip -n a -6 route add "$ZC_IP6_B/128" dev va rto_min $((3 * TS))s
export HOLE_MS=$((1500 * TS))
# zcddp-mpa serves until the peer's close: the hole fills at the RTO
# after HOLE_MS, over 10 s on the debug kernel.
SERVE_MS=$((10000 * TS))
for d in "$ZC_IP_B" "$ZC_IP6_B"; do
  v=IPv4
  [ "$d" = "$ZC_IP6_B" ] && v=IPv6
  o0=$(procv b ZcddpBytesPlacedOutOfOrder) k0=$(procv b ZcddpOooSkippedCopy)
  s0=$(procv b ZcddpOooBytesSoftirq) c0=$(procv b ZcddpOooSkippedCrc)
  DADDR=$d data_case "one hole, nothing after it in order ($v): Writes ahead of it" none lwrn hole-write-crc written
  t_expect "  placed out of order by the hook's kick, not copied again in order ($v)" "3000 3000" \
    "$(( $(procv b ZcddpBytesPlacedOutOfOrder) - o0 )) $(( $(procv b ZcddpOooSkippedCopy) - k0 ))"
  # The direct path meets the placed FPDUs in TCP's queue and makes no
  # second CRC pass over them (the staging path, for small ones, checks
  # the CRC as it parses).
  t_expect "  placed FPDUs met in order without a second CRC pass ($v)" 3000 \
    "$(( $(procv b ZcddpOooSkippedCrc) - c0 ))"
  # The kick's run takes TCP's spinlock, not the socket (no thread owns
  # it: the server sleeps in a completion wait): the work item, which
  # locks the socket and sends TCP's segments to its backlog meanwhile,
  # placed none of it.
  t_expect "  placed by the kick's run under TCP's spinlock, not by the work item ($v)" "3000" \
    "$(( $(procv b ZcddpOooBytesSoftirq) - s0 ))"
  t_expect "  the region as written, the Send after them completed ($v)" \
    "$(grep -o 'want hash=[0-9a-f]*' $ZP | cut -d= -f2) hello zcddp" \
    "$(grep -o ' hash=[0-9a-f]*' $ZB | cut -d= -f2) $(grep -o 'recv=.*' $ZB | cut -d= -f2)"
done
# A gap behind the walk (zcddp_peer.py's hole-gap): the same hole, then
# 'X' held half of HOLE_MS in another netem band, and 'Y' and the Send at
# once, so that 'X' lands in the gap before 'Y' after the walk went past
# it, the hole before it still open. The walk records the gaps it passes
# over and looks into them on each run: both Writes placed out of order
# (without that, 1000 bytes: 'X' waited for the hole; a mutant module
# showed it, 2026-11-28).
o0=$(procv b ZcddpBytesPlacedOutOfOrder) k0=$(procv b ZcddpOooSkippedCopy)
data_case "a gap behind the walk filled while the hole before it is open" none lwrn hole-gap-crc written
t_expect "  the Write that filled the gap placed out of order too, none copied again in order" "2000 2000" \
  "$(( $(procv b ZcddpBytesPlacedOutOfOrder) - o0 )) $(( $(procv b ZcddpOooSkippedCopy) - k0 ))"
t_expect "  the region as written, the Send after them completed" \
  "$(grep -o 'want hash=[0-9a-f]*' $ZP | cut -d= -f2) hello zcddp" \
  "$(grep -o ' hash=[0-9a-f]*' $ZB | cut -d= -f2) $(grep -o 'recv=.*' $ZB | cut -d= -f2)"
# Issue 45, major 8: a Send whose payload holds a Write FPDU of 'Z' to the
# region (CRC and all, 4 bytes in), cut into 3 segments so that one is
# exactly that Write FPDU, all ahead of a hole that is a whole FPDU (the
# same 'H' Write, lost for HOLE_MS): nothing tells b where an FPDU starts
# ahead of the hole, so nothing is placed out of order and the segments
# are counted in ZcddpOooRefusedNoStart (once each as the walk first sees
# them; TCP may have merged them by then); once the hole fills, the
# in-order path takes the Send as a Send. The module before the fix took
# the segment's first byte as an FPDU start and placed the 'Z's.
o0=$(procv b ZcddpBytesPlacedOutOfOrder) n0=$(procv b ZcddpOooRefusedNoStart)
data_case "a Send whose payload looks like a Write FPDU, cut before it, ahead of a hole" none lwrn hole-smuggle-crc written
t_expect "  never placed as a Write: the region holds only the 'H' Write, the Send's text received" \
  "$(grep -o 'want hash=[0-9a-f]*' $ZP | cut -d= -f2) smg" \
  "$(grep -o ' hash=[0-9a-f]*' $ZB | cut -d= -f2) $(grep -o 'recv=.*' $ZB | cut -d= -f2)"
n1=$(procv b ZcddpOooRefusedNoStart)
[ "$(( $(procv b ZcddpBytesPlacedOutOfOrder) - o0 ))" = 0 ] && [ "$((n1 - n0))" -ge 1 ] 2>/dev/null &&
  t_ok "  nothing placed out of order, the segments ahead refused: no FPDU start known ($((n1 - n0)))" ||
  t_fail "  nothing placed out of order, the segments ahead refused: no FPDU start known" \
    "placed $(( $(procv b ZcddpBytesPlacedOutOfOrder) - o0 )), ZcddpOooRefusedNoStart ${n0:-none} -> ${n1:-none}"
a_tcp tcp_autocorking=1 tcp_recovery=1 tcp_early_retrans=3 tcp_reordering=3
ip -n a route del "$ZC_IP_B/32" dev va
ip -n a -6 route del "$ZC_IP6_B/128" dev va
unset HOLE_MS SERVE_MS
ip netns exec a tc qdisc del dev va root 2>/dev/null
data_case "Send with Invalidate naming a registration the peer cannot invalidate" "0 2 9" lwrn send-inv
t_expect "Terminates sent and counted" "yes" "$([ "$(procv b ZcddpTerminatesSent)" -ge 15 ] && echo yes || procv b ZcddpTerminatesSent)"

# Registrations go with the socket: the release runs on a workqueue.
for i in $(seq $((50 * TS))); do [ "$(procv b ZcddpPinnedPages)" = 0 ] && break; sleep 0.1; done
t_expect "every pinned page released (b)" "0 0" "$(procv b ZcddpPinnedPages) $(procv b ZcddpRegistrations)"
t_expect "every pinned page released (a)" "0 0" "$(procv a ZcddpPinnedPages) $(procv a ZcddpRegistrations)"
# RLIMIT_MEMLOCK, without CAP_IPC_LOCK: 64 KiB allowed, 1 MiB refused.
ip netns exec b timeout $((30 * TS)) zcddp-mpa -s -a "$ZC_IP_B" -p $PORT --hold 1500 > /tmp/zb 2>&1 &
pb=$!
listening b $PORT
out=$(ip netns exec a capsh --drop=cap_ipc_lock -- -c "ulimit -l 64 && exec python3 -m zcddp_peer memlock $ZC_IP_B $PORT" 2>&1)
wait $pb
t_expect "RLIMIT_MEMLOCK 64 KiB: 16 KiB registered, 1 MiB ENOMEM" "ok ENOMEM" "$out"

echo "# t=$(( $(date +%s) - t0 )) s: the send queue"
# Posting never waits: a raw responder in b answers start-up and never
# reads (4 KiB receive buffer); a's zcddp initiator, with a send queue of
# 16, posts 64 KiB RDMA Writes until the queue is full. Each post returns
# at once, then ENOMEM (siw's error for a full send queue). The peer's
# reset flushes the 16 queued signaled Writes with WC_FLUSH_ERR; on a second
# connection close() with the queue full is prompt and every pinned page
# is released.
ip netns exec b timeout $((60 * TS)) python3 -m zcddp_peer stall "$ZC_IP_B" $PORT > /tmp/zs 2>&1 &
pb=$!
listening b $PORT
ip netns exec a timeout $((60 * TS)) python3 -m zcddp_peer sqfull "$ZC_IP_B" $PORT 16 > /tmp/zq 2>&1
wait $pb
sed 's/^/# sqfull: /' /tmp/zq
kv() { grep -o "\<$1=[^ ]*" /tmp/zq | head -n1 | cut -d= -f2; }
t_expect "ZCDDP_SEND_QUEUE set to 16 and read back" "16 16" "$(kv depth) $(kv depth2)"
t_expect "posts to a peer that never reads: queued until full, then ENOMEM" "ENOMEM ENOMEM" "$(kv err) $(kv err2)"
ok=$(awk -v a="$(kv worst_ms)" -v b="$(kv worst2_ms)" -v p="$(kv posts)" 'BEGIN { print (a + 0 < 500 && b + 0 < 500 && p >= 16) ? "yes" : "no" }')
t_expect "every post returned at once (slowest $(kv worst_ms) / $(kv worst2_ms) ms, $(kv posts) posts)" yes "$ok"
t_expect "ZCDDP_POLL_CQ into an unmapped array: EFAULT (the flushes then all polled: none lost)" EFAULT "$(kv bad_poll)"
t_expect "the peer's reset flushes the 16 queued Writes (WC_FLUSH_ERR)" 16 "$(kv flushed)"
ok=$(awk -v c="$(kv close_ms)" 'BEGIN { print (c != "" && c + 0 < 1000) ? "yes" : "no" }')
t_expect "close() with a full send queue is prompt ($(kv close_ms) ms)" yes "$ok"
t_expect "  and releases every pinned page" "$(kv pinned_before) yes" \
  "$(kv pinned_after) $([ "$(kv pinned_full)" -gt "$(kv pinned_before)" ] 2>/dev/null && echo yes || echo no)"
# Readiness is zcddp's own: 50 FPDUs that complete nothing arrive, and
# poll(2) does not report the socket readable for their bytes.
t_expect "EPOLLIN only for zcddp events: no POLLIN for 50 FPDUs completing nothing" "no 50" "$(kv pollin) $(kv fpdus)"
# EPOLLOUT is the send queue's room: none while the queue is full against
# a peer that does not read; once the peer drains, POLLOUT comes, and each
# one lets a post through (a POLLOUT from TCP's room alone, with the queue
# still full, would end in ENOMEM). 32 Writes of 64 KiB posted that way.
t_expect "EPOLLOUT: none with the send queue full (ENOMEM), the peer not reading" "ENOMEM no" "$(kv out_full) $(kv out_stalled)"
t_expect "EPOLLOUT: the peer drains, every POLLOUT lets a post through (first after $(kv out_first_ms) ms, $(kv out_ms) ms in all, $(kv out_slow) waits over 5 s$([ "$(kv out_diag)" != - ] && echo ", the first with $(kv out_diag)"))" \
  "32 0" "$(kv out_posts) $(kv out_spurious)"
# A wait over 5 s for room (CI at stops 22 and 26, see zcddp_peer.py stall): the state then.
[ -s /tmp/zq_diag ] && sed 's/^/# no room for 5 s: /' /tmp/zq_diag
rm -f /tmp/zq_diag
# The listing (/proc/net/zcddp_conns, zcctl ddp) taken with the queue full.
sed 's/^/# zcddp_conns: /' /tmp/zconns
line=$(grep -F "$ZC_IP_B:$PORT" /tmp/zconns | head -n1)
t_expect "/proc/net/zcddp_conns: the connection, its parameters and full send queue" \
  "initiator rev=2 crc=0 markers=0/0 ird=1 ord=1 state=rts error=0 sq=16/16 rq=0/64" \
  "$(echo "$line" | grep -o 'initiator.* rq=[0-9]*/[0-9]*')"
t_expect "  its registration: 64 KiB, local write, its pinned pages" \
  "len=65536 access=l-- pages=$(( $(kv pinned_full) - $(kv pinned_before) ))" \
  "$(grep -P '^\tmr ' /tmp/zconns | grep -o 'len=.*')"
sed 's/^/# zcctl ddp: /' /tmp/zcctl.out
t_expect "zcctl ddp lists it, its registration and the counters" "1 1 1" \
  "$(grep -c '1 connections, 1 registrations' /tmp/zcctl.out) $(grep -c "^    mr stag=.*len=65536" /tmp/zcctl.out) $(grep -c 'ZcddpPinnedPages' /tmp/zcctl.out)"

echo "# t=$(( $(date +%s) - t0 )) s: zcddp-poll"
# Progress without the application and readiness: b's server makes no zcddp
# call for 3 s while a's client RDMA-Reads its region (the Read must
# complete within 2 s) and Writes a page into it; b's socket must then not
# be readable (nothing to poll), become readable (poll(2) POLLIN) when a's
# Send arrives, and give that receive to a completion poll that does not
# wait.
ip netns exec b timeout $((60 * TS)) zcddp-poll -s -a "$ZC_IP_B" -p $PORT > /tmp/ps 2>&1 &
pb=$!
listening b $PORT
ip netns exec a timeout $((60 * TS)) zcddp-poll -c -a "$ZC_IP_B" -p $PORT > /tmp/pc 2>&1
rc=$?
wait $pb
rs=$?
[ $rc = 0 ] || sed 's/^/# client: /' /tmp/pc | tail -n 3
[ $rs = 0 ] || sed 's/^/# server: /' /tmp/ps | tail -n 3
t_expect "a peer's RDMA Read served while the application sleeps" 0 "$rc"
t_expect "poll: not readable with nothing to poll, POLLIN on a completion" 0 "$rs"
echo "# zcddp-poll: $(cat /tmp/pc /tmp/ps | tr '\n' ' ')"
# The completion ring (ZCDDP_CQ_RING): zcbench ddp's Send latency on both
# sides takes every completion from a ring in registered memory, spinning
# on it as ib_send_lat spins on siw's CQ, and posts every receive into a
# receive ring (ZCDDP_RQ_RING): 300 Sends each way of 4 B and 4 KiB, each
# checked for its length.
ip netns exec b timeout $((60 * TS)) zcbench ddp-serve --listen "$ZC_IP_B:$((PORT + 2))" > /tmp/zbs 2>&1 &
pb=$!
listening b $((PORT + 2))
ip netns exec a timeout $((60 * TS)) zcbench ddp --connect "$ZC_IP_B:$((PORT + 2))" --lat-ops send \
  --lat-sizes 4,4096 --bw-sizes none --iters 300 > /tmp/zbc 2>&1
rc=$?
kill $pb 2>/dev/null
wait $pb 2>/dev/null
[ $rc = 0 ] || sed 's/^/# zcbench: /' /tmp/zbc /tmp/zbs | tail -n 5
t_expect "completion ring: 300 Sends each way, 4 B and 4 KiB, completions read from the ring" \
  "0 ring" "$rc $(grep -o 'cq [a-z]*' /tmp/zbc | cut -d' ' -f2)"
t_expect "  receives posted through a receive ring (ZCDDP_RQ_RING)" \
  "ring" "$(grep -o 'rq [a-z]*' /tmp/zbc | cut -d' ' -f2)"
# The ring's rules, against a raw peer sending Sends (zcddp_peer.py
# cqring): refused unless a power of two, 64-byte aligned, inside a
# registration of this connection with local write access only (EACCES
# for remote access); set once (EBUSY), its registration not deregistered
# while set (EBUSY); empty when set whatever head said (tail = head = 77);
# six Sends into a ring of four: four shown, ZCDDP_POLL_CQ hands out none,
# the other two shown once the application took the four, in order; a
# head claiming more room than the ring has: nothing written; cleared,
# the registration goes; a Send with Invalidate naming a ring's STag is
# refused with a Terminate, the receives left are flushed into the ring
# and the poll then reports the error; the ring stays.
# ring_case CASE: zcddp_peer.py CASE-peer in b, CASE in a; their key=value
# results in /tmp/zring.out, read with kv.
ring_case() {
  ip netns exec b timeout $((30 * TS)) python3 -m zcddp_peer "$1-peer" "$ZC_IP_B" $PORT > /tmp/zring.p 2>&1 &
  local pb=$!
  listening b $PORT
  ip netns exec a timeout $((30 * TS)) python3 -m zcddp_peer "$1" "$ZC_IP_B" $PORT > /tmp/zring.out 2>&1
  wait $pb
  cat /tmp/zring.p >> /tmp/zring.out
  sed "s/^/# $1: /" /tmp/zring.out
}
kv() { grep -o "\<$1=[^ ]*" /tmp/zring.out | head -n1 | cut -d= -f2; }
ring_case cqring
t_expect "ring refused: 3 entries, unaligned, remote write access, too large, unknown STag" \
  "EINVAL EINVAL EACCES EINVAL EINVAL" "$(kv pow2) $(kv align) $(kv access) $(kv big) $(kv stag)"
t_expect "ring set; again EBUSY; its registration not deregistered (EBUSY); empty from head 77" \
  "ok EBUSY EBUSY 77" "$(kv set) $(kv again) $(kv dereg) $(kv tail0)"
t_expect "six Sends into a ring of four: four shown, ZCDDP_POLL_CQ hands out none" \
  "4/4 0 0" "$(kv full) $(kv poll_ring) $(kv after_take)"
t_expect "  the other two once the four are taken, in order, each a receive of 8 bytes" \
  "100,101,102,103,104,105 6" "$(kv order) $(kv recv_ok)"
t_expect "a head claiming more room than the ring has: nothing written; put right, the rest" \
  "0 106,107" "$(kv bogus_head_tail) $(kv third)"
t_expect "ring cleared, then its registration deregistered" "ok ok" "$(kv clear) $(kv dereg_after)"
t_expect "a Send with Invalidate naming the ring's STag: Terminate, the 4 receives left flushed into the ring, then EPROTO; the ring stays" \
  "ok yes 4/0 EPROTO EBUSY" "$(kv set2) $(kv peer_terminate) $(kv inv_flushed) $(kv inv_poll) $(kv dereg2)"
# The receive ring's rules (zcddp_peer.py rqring), against a raw peer
# sending 8-byte Sends, each its MSN: refused unless a power of two and
# local write only; set once, its registration kept, ZCDDP_POST_RECV
# refused while set; a receive posted before it first, then the ring's
# entries in order (two written before it was set), each buffer holding
# its message; full at four, room again once zcddp took them; an entry
# naming an unknown STag completes with LOC_PROT_ERR and takes no
# message; cleared, ZCDDP_POST_RECV again; a tail 1000 ahead of head
# posts nothing (the Send finds no buffer: Terminate), and once the tail
# is put right the three entries are flushed, then EPROTO.
ring_case rqring
t_expect "receive ring: refused for 3 entries and remote write; set; again, dereg, ZCDDP_POST_RECV: EBUSY" \
  "EINVAL EACCES ok EBUSY EBUSY EBUSY" "$(kv pow2) $(kv access) $(kv set) $(kv again) $(kv dereg) $(kv post_recv)"
t_expect "  five Sends: the receive posted first, then the ring's four in order, 8 bytes each" \
  "200:0:8,1:0:8,2:0:8,3:0:8,4:0:8" "$(kv order)"
t_expect "  each buffer holds its message; full at four, all four taken, room again" \
  "00000001,00000002,00000003,00000004,00000005 yes 4 yes" "$(kv bytes) $(kv full) $(kv taken) $(kv room)"
t_expect "  an entry naming an unknown STag: LOC_PROT_ERR, no message taken" \
  "5:0,7:1,8:0 00000006,00000007" "$(kv bad) $(kv bad_bytes)"
t_expect "  cleared: ZCDDP_POST_RECV again" "ok ok 30:0:00000008" "$(kv clear) $(kv post_after) $(kv after)"
t_expect "  a tail 1000 ahead posts nothing: Terminate; put right, three flushed, then EPROTO" \
  "ok EPROTO yes 40:3,41:3,42:3 EPROTO 3" \
  "$(kv set2) $(kv nobuf) $(kv peer_terminate) $(kv flushed) $(kv then) $(kv head_end)"

echo "# t=$(( $(date +%s) - t0 )) s: zcddp-copy"
# zcddp-copy: a file RDMA-Written into b's region, Read back and compared
# byte for byte by the client; the server checks its region against the
# client's hash of the file and saves it (-o), compared here with cmp.
# zcopy NAME FILE [ARGS]: server in b, client in a; exit statuses and cmp.
zcopy() {
  local name=$1 file=$2 rc rs; shift 2
  rm -f /tmp/copy-out
  ip netns exec b timeout $((120 * TS)) zcddp-copy -s -a "$ZC_IP_B" -p $PORT -o /tmp/copy-out "$@" > /tmp/cs 2>&1 &
  local pb=$!
  listening b $PORT
  ip netns exec a timeout $((120 * TS)) zcddp-copy -c -a "$ZC_IP_B" -p $PORT "$@" "$file" > /tmp/cc 2>&1
  rc=$?
  wait $pb
  rs=$?
  [ $rc = 0 ] || sed 's/^/# client: /' /tmp/cc | tail -n 3
  [ $rs = 0 ] || sed 's/^/# server: /' /tmp/cs | tail -n 3
  t_expect "$name" "0 0 same" "$rc $rs $(cmp -s "$file" /tmp/copy-out && echo same || echo differ)"
}
python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(11).randbytes(4 << 20))' > /tmp/copy-4m
printf 'x' > /tmp/copy-1
# rxd NS: the receive counters of NS: direct, staged small, staged other,
# reassembled (staged bytes copied through the parser's FPDU buffer too).
rxd() { echo "$(procv "$1" ZcddpRxBytesDirect) $(procv "$1" ZcddpRxBytesStagedSmall) $(procv "$1" ZcddpRxBytesStagedFraming) $(procv "$1" ZcddpRxBytesReassembled)"; }
# rxd_delta BEFORE AFTER: their differences.
rxd_delta() { set -- $1 $2; echo "$(($5 - $1)) $(($6 - $2)) $(($7 - $3)) $(($8 - $4))"; }
rb0=$(rxd b) ra0=$(rxd a) sb0=$(procv b ZcddpRxFpdusSoftirq) fb0=$(procv b ZcddpFpdusReceived)
zcopy "zcddp-copy of a 4 MiB file, CRC: written, read back, byte-exact" /tmp/copy-4m --crc
# Receiving in softirq (rxbh=1, the default): FPDUs taken as TCP queues
# them, in softirq or in the owner's backlog, most of them there (the rest
# in the work item: the data path was busy, or something had to be sent).
sb=$(( $(procv b ZcddpRxFpdusSoftirq) - sb0 )) fb=$(( $(procv b ZcddpFpdusReceived) - fb0 ))
echo "# b received $fb FPDUs, $sb of them in softirq"
[ "$sb" -gt $((fb / 2)) ] && t_ok "  b: most FPDUs received in softirq ($sb of $fb)" || t_fail "  b: most FPDUs received in softirq" "$sb of $fb"
# In-order direct placement (issue 12): the 4 MiB Written into b and the
# 4 MiB Read back into a are copied once, from TCP's skbs into the
# registrations; only the two 16-byte Sends of zcddp-copy's own exchange
# are staged (small), each read whole and parsed where it lies (not
# reassembled).
# An FPDU the direct path cannot wait for (a hole in TCP's queue, or the
# queue past half the receive buffer: Qp::direct_step, can_wait) is staged
# instead, counted as "staged other": seen once in a run on 2026-11-27
# (one 1408-byte FPDU of the Read back into a). So: every payload byte
# counted once, the Sends staged small, at most 1% staged otherwise.
rb=$(rxd_delta "$rb0" "$(rxd b)") ra=$(rxd_delta "$ra0" "$(rxd a)")
echo "# received payload (direct, staged small, staged other, reassembled): b $rb, a $ra"
# direct_ok NAME DELTA: the check above on one side's counters.
direct_ok() {
  local d sm o re
  read -r d sm o re <<< "$2"
  [ $((d + o)) = 4194304 ] && [ "$sm" = 32 ] && [ "$o" -le 41943 ] && t_ok "$1 ($o bytes staged otherwise)" ||
    t_fail "$1" "wanted 4194304 bytes direct or staged with at most 41943 staged, 32 staged small; got $2"
}
direct_ok "  b: the 4 MiB Written placed directly from TCP's queue, only the Sends staged" "$rb"
direct_ok "  a: the 4 MiB Read back placed directly, only the Sends staged" "$ra"
# The comparison modes: rxdirect=0 stages (two or three copies); rxbh=0
# receives in the socket's work item only.
if rmmod zcddp && insmod "$(ko zcddp)" rxdirect=0 rxbh=0; then
  rb0=$(rxd b) sb0=$(procv b ZcddpRxFpdusSoftirq) sk0=$(procv b ZcddpOooSkippedCopy)
  zcopy "the same with rxdirect=0 rxbh=0 (staged, in the work item): byte-exact" /tmp/copy-4m --crc
  rb=$(rxd_delta "$rb0" "$(rxd b)")
  # Payload placed out of order before the work item reached it (a
  # segment TCP queued behind a hole) is not copied again: counted in
  # ZcddpOooSkippedCopy, not staged. (A run on 2026-11-27 staged 13696
  # bytes fewer than 4194336, every byte exact; by the code that is the
  # one path that places payload without counting it staged.)
  sk=$(( $(procv b ZcddpOooSkippedCopy) - sk0 ))
  echo "# received payload (direct, staged small, staged other, reassembled): b $rb; placed out of order before: $sk"
  read -r rd_direct rd_small rd_other rd_reasm <<< "$rb"
  t_expect "  b: nothing placed directly, the 4 MiB and the Sends staged (or placed out of order before), nothing in softirq" \
    "0 0 4194336 0" "$rd_direct $rd_small $((rd_other + sk)) $(( $(procv b ZcddpRxFpdusSoftirq) - sb0 ))"
  # Whole FPDUs in a staging read are parsed where they lie; only those
  # split between reads go through the parser's FPDU buffer.
  [ "$rd_reasm" -lt "$rd_other" ] &&
    t_ok "  b: staged FPDUs parsed in place, not all reassembled ($rd_reasm of $rd_other bytes)" ||
    t_fail "  b: staged FPDUs parsed in place" "$rd_reasm of $rd_other bytes reassembled"
  rmmod zcddp
  t_run "zcddp reloaded with its defaults" insmod "$(ko zcddp)"
else
  t_fail "zcddp reloaded with rxdirect=0" "rmmod or insmod failed"
fi
zcopy "zcddp-copy of a 1-byte file: byte-exact" /tmp/copy-1
python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(13).randbytes((1 << 20) + 3))' > /tmp/copy-1m3
zcopy "zcddp-copy of a 1 MiB + 3 B file, no CRC: byte-exact" /tmp/copy-1m3
ip netns exec a timeout $((10 * TS)) zcddp-copy -c -a "$ZC_IP_B" -p $PORT /nonexistent > /tmp/cc 2>&1
t_expect "zcddp-copy of a missing file fails" 1 "$?"

echo "# t=$(( $(date +%s) - t0 )) s: zero-copy transmit"
# zctx=1 (the default): on veth the kernel copies every lent byte on
# delivery and says so (SO_EE_CODE_ZEROCOPY_COPIED); after two such
# notifications in a row the connection stops lending.
st0=$(procv a ZcddpTxZcStopped)
zreuse "zctx=1: 64 KiB Writes x 48, source reused at once, CRC" 48 65536 1
t_expect "  veth: the kernel reports every lent byte copied, and a's connection stops lending" \
  "$BYREF 1" "$KCOPIED $(( $(procv a ZcddpTxZcStopped) - st0 ))"
[ "$BYREF" -gt 0 ] && [ "$BYREF" -le $((PAYLOAD / 4)) ] && t_ok "  lent only at first ($BYREF of $PAYLOAD)" ||
  t_fail "  lent only at first" "$BYREF of $PAYLOAD"
# zctx=2 lends regardless: the cases below exercise lent pages on veth.
t_run "zcddp reloaded with zctx=2" sh -c "rmmod zcddp && insmod $(ko zcddp) zctx=2"
zreuse "zctx=2: 64 KiB Writes x 48, source reused at once, CRC" 48 65536 1
[ "$BYREF" -ge $((48 * 65536 * 9 / 10)) ] && t_ok "  at least 90% of it lent ($BYREF of $PAYLOAD)" || t_fail "  at least 90% of it lent" "$BYREF of $PAYLOAD"
t_expect "  veth: the kernel reports every lent byte copied on delivery" "$BYREF" "$KCOPIED"
zreuse "64 KiB Writes x 48, no CRC, netem delay 5ms loss 2%" 48 65536 0 "delay 5ms loss 2%"
[ "$BYREF" -gt 0 ] && t_ok "  lent under loss ($BYREF)" || t_fail "  lent under loss" "$BYREF"
zreuse "100003 B Writes x 12 (pad, pages cut anywhere), CRC" 12 100003 1
zreuse "5 KiB Writes x 16, no CRC: the first FPDU (4 KiB) lent, the last copied" 16 5120 0
t_expect "  64 KiB lent" 65536 "$BYREF"
zreuse "4 KiB Writes x 16, CRC: one FPDU or more of a message, the last copied" 16 4096 1
[ "$BYREF" -gt 0 ] && [ "$BYREF" -lt $((16 * 4096)) ] && t_ok "  some lent ($BYREF)" || t_fail "  some lent" "$BYREF"
zreuse "1023 B Writes x 16: copied (one FPDU, under 1 KiB)" 16 1023 1
t_expect "  none lent" 0 "$BYREF"
# Lent pages count against RLIMIT_MEMLOCK (MSG_ZEROCOPY charges the user's
# locked_vm while TCP holds them): without CAP_IPC_LOCK, under 48 KiB, the
# kernel refuses (ENOBUFS) once the pages in flight pass it, and zcddp
# copies those FPDUs instead. The registration itself fits (32 KiB).
ZMEMLOCK=48 zreuse "RLIMIT_MEMLOCK 48 KiB, no CAP_IPC_LOCK: 32 KiB Writes x 16, CRC" 16 32768 1
[ "$FALLBACK" -gt 0 ] && [ "$COPIED" -gt 4 ] && t_ok "  lending refused past the limit, those FPDUs copied ($FALLBACK times, $COPIED bytes)" ||
  t_fail "  lending refused past the limit, those FPDUs copied" "refused $FALLBACK times, $COPIED bytes copied"

echo "# t=$(( $(date +%s) - t0 )) s: out-of-order placement"
# Out-of-order placement (issue 12): zcddp-copy Writes 256 KiB (CRC) from
# a into b's region (one the peer cannot invalidate) through netem on a's
# egress; b places tagged FPDUs that arrive ahead of a hole at once.
# ocopy NAME NETEM [SERVER ARGS]: the copy, byte-exact on both sides (the
# client reads the region back, the server hashes it, cmp); the deltas of
# b's counters in OOO (placed out of order), INO (placed in order), SKIP
# (not copied again in order), DIFF (recorded, then other bytes), REF
# (refused, by reason: "NoStart Framing InOrderOnly Access", the deltas
# of ZcddpOooRefused*), NOSTART (the first of them), and the server's
# watch line (--watch) in WATCH. OADDR: b's
# address (IPv4 unless set); OCARGS: the client's extra arguments.
# ocopy_run NETEM [SERVER ARGS]: the same without the result, which it
# leaves in OCOPY ("CLIENT SERVER same|differ").
python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(12).randbytes(256 << 10))' > /tmp/copy-ooo
# refusals: b's ZcddpOooRefused* counters, by reason.
refusals() {
  local r out=
  for r in NoStart Framing InOrderOnly Access; do out+="${out:+ }$(procv b ZcddpOooRefused$r)"; done
  echo "$out"
}
ocopy() {
  local name=$1; shift
  ocopy_run "$@"
  t_expect "$name: byte-exact" "0 0 same" "$OCOPY"
}
ocopy_run() {
  local ne=$1 rc rs o0 i0 k0 d0 r0; shift
  rm -f /tmp/copy-out
  ip netns exec a tc qdisc replace dev va root netem $ne
  o0=$(procv b ZcddpBytesPlacedOutOfOrder) i0=$(procv b ZcddpBytesPlacedInOrder)
  k0=$(procv b ZcddpOooSkippedCopy) d0=$(procv b ZcddpOooRetransDiffer) r0=$(refusals)
  c0=$(procv b ZcddpOooSkippedCrc)
  ip netns exec b timeout $((120 * TS)) zcddp-copy -s -a "${OADDR:-$ZC_IP_B}" -p $PORT -o /tmp/copy-out --crc "$@" > /tmp/cs 2>&1 &
  local pb=$!
  listening b $PORT
  ip netns exec a timeout $((120 * TS)) zcddp-copy -c -a "${OADDR:-$ZC_IP_B}" -p $PORT --crc ${OCARGS:-} /tmp/copy-ooo > /tmp/cc 2>&1
  rc=$?
  wait $pb
  rs=$?
  ip netns exec a tc qdisc del dev va root
  [ $rc = 0 ] || sed 's/^/# client: /' /tmp/cc | tail -n 3
  [ $rs = 0 ] || sed 's/^/# server: /' /tmp/cs | tail -n 3
  OOO=$(( $(procv b ZcddpBytesPlacedOutOfOrder) - o0 )) INO=$(( $(procv b ZcddpBytesPlacedInOrder) - i0 ))
  SKIP=$(( $(procv b ZcddpOooSkippedCopy) - k0 )) DIFF=$(( $(procv b ZcddpOooRetransDiffer) - d0 ))
  local x y r1
  r1=$(refusals) REF=
  for x in $r0; do y=${r1%% *} r1=${r1#* }; REF+="${REF:+ }$((y - x))"; done
  NOSTART=${REF%% *} WATCH=$(grep -o 'watch .*' /tmp/cs)
  SKIPCRC=$(( $(procv b ZcddpOooSkippedCrc) - c0 ))
  echo "# netem $ne: placed out of order $OOO, in order $INO, skipped in order $SKIP (no CRC pass $SKIPCRC), other bytes $DIFF, refused $REF (no start, framing, in order only, access); ${WATCH:-no watch}; $(grep -o 'write_s=[^ ]* ([^)]*)' /tmp/cc)"
  OCOPY="$rc $rs $(cmp -s /tmp/copy-ooo /tmp/copy-out && echo same || echo differ)"
}
# ahead N: the watch's sightings of bytes behind a hole.
ahead() { echo "$WATCH" | grep -o 'ahead=[0-9]*' | cut -d= -f2; }
REORDER="delay 20ms reorder 25%"
# Without markers (issue 45, major 8): zcddp aligns its FPDUs with
# segments, so a hole lies between FPDUs and nothing tells b where the
# FPDUs after it start (its in-order parser knows only the hole's start):
# the segments ahead of the hole wait for the in-order path, each counted
# once in ZcddpOooRefusedNoStart. (The module before took each such
# segment's first byte as an FPDU start and placed them.)
ocopy "through netem $REORDER without markers" "$REORDER"
[ "$NOSTART" -gt 0 ] 2>/dev/null && t_ok "  the segments ahead of a hole refused: no FPDU start known ($NOSTART; placed $OOO)" ||
  t_fail "  the segments ahead of a hole refused: no FPDU start known" "refused ${REF:-?}, placed $OOO"
t_expect "  every byte placed out of order skipped in order, every other one copied in order" "$OOO $(( (256 << 10) + 32 ))" "$SKIP $((INO + SKIP))"
# With markers both ways (RFC 5044 section 5): the walk finds the FPDUs in
# the segments ahead of a hole by the markers and skips them in the
# payload. A copy's sightings depend on how far segments overtake a hole
# (two FPDUs at least): 11 watched copies on 2026-11-28 saw 17 to 529, and
# one none (47872 bytes placed out of order, 2185 scans, its segments never
# that far ahead). Up to three copies watch, until one sees; each must be
# byte-exact.
for try in 1 2 3; do
  OCARGS=--markers ocopy_run "$REORDER" --watch --markers
  [ "$OCOPY" = "0 0 same" ] && [ "$(ahead)" = 0 ] || break
done
t_expect "with markers: out-of-order placement through netem $REORDER: byte-exact" "0 0 same" "$OCOPY"
[ "$OOO" -gt 0 ] && t_ok "  placed out of order with markers, ZcddpBytesPlacedOutOfOrder counts it ($OOO)" ||
  t_fail "  placed out of order with markers, ZcddpBytesPlacedOutOfOrder counts it" "$OOO"
[ "$(ahead)" -gt 0 ] 2>/dev/null && t_ok "  the region held bytes behind a hole before the hole filled ($(ahead) sightings, copy $try)" ||
  t_fail "  the region held bytes behind a hole before the hole filled" "${WATCH:-no watch line} (copy $try)"
t_expect "  every byte placed out of order skipped in order, every other one copied in order" "$OOO $(( (256 << 10) + 32 ))" "$SKIP $((INO + SKIP))"
OCARGS=--markers ocopy "the same with placement off (ZCDDP_OOO 0)" "$REORDER" --watch --markers --no-ooo
t_expect "  nothing placed out of order, no byte seen ahead of a hole" "0 0" "$OOO $(ahead)"
# Out-of-order placement over IPv6.
OADDR=$ZC_IP6_B OCARGS=--markers ocopy "over IPv6, with markers: out-of-order placement through netem $REORDER" "$REORDER" --markers
[ "$OOO" -gt 0 ] && t_ok "  placed out of order over IPv6 ($OOO)" || t_fail "  placed out of order over IPv6" "$OOO"
t_expect "  every byte placed once, in order or out of order" "$(( (256 << 10) + 32 ))" "$((INO + SKIP))"
for rate in 1 5; do
  OCARGS=--markers ocopy "with markers, placement on through netem $REORDER loss $rate% duplicate $rate% corrupt $rate%" "$REORDER loss $rate% duplicate $rate% corrupt $rate%" --markers
  t_expect "  every byte placed once, in order or out of order (none differed)" "$(( (256 << 10) + 32 )) 0" "$((INO + SKIP)) $DIFF"
done

# ---- issue 45, Critical 4: large copies through netem, CRC on and off ----
# zcddp-copy of 64 MiB (RDMA-Written, Read back and compared byte for byte
# by the client; the server's region hashed against the client's hash)
# through netem on both a's and b's egress (the Writes, and the Read
# Responses), under each fault: loss, reordering, both, duplication,
# corruption; each with CRC and without, the two copies side by side (their
# own ports). Each byte-exact on both sides, and no Terminate sent or
# received by either side. The 40 MiB copies of the issue died because
# zcddp-copy's server gave up after 10 s in all and deregistered its
# region, whose STag the Writes still coming then met (a Terminate RFC 5040
# asks for); it now waits while the connection moves bytes.
# BIGCOPY_MIB: the size (64 unless set, for a by-hand run).
python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(45).randbytes('"${BIGCOPY_MIB:-64}"' << 20))' > /tmp/copy-big
# bigcopy PORT ARGS...: one copy of /tmp/copy-big in the background; its
# result ("CLIENT SERVER" exit statuses) in /tmp/big.PORT once done.
bigcopy() {
  local port=$1; shift
  (
    ip netns exec b timeout $((300 * TS)) zcddp-copy -s -a "$ZC_IP_B" -p "$port" "$@" > "/tmp/bigs.$port" 2>&1 &
    pb=$!
    listening b "$port"
    ip netns exec a timeout $((300 * TS)) zcddp-copy -c -a "$ZC_IP_B" -p "$port" "$@" /tmp/copy-big > "/tmp/bigc.$port" 2>&1
    rc=$?
    wait $pb
    echo "$rc $?" > "/tmp/big.$port"
  ) &
  BIG_PIDS+=" $!"
}
terms() { echo "$(procv a ZcddpTerminatesSent) $(procv a ZcddpTerminatesReceived) $(procv b ZcddpTerminatesSent) $(procv b ZcddpTerminatesReceived)"; }
for ne in "loss 1%" "delay 1ms reorder 25% 50%" "delay 1ms reorder 25% 50% loss 1%" "duplicate 2%" "corrupt 1%"; do
  ip netns exec a tc qdisc replace dev va root netem $ne
  ip netns exec b tc qdisc replace dev vb root netem $ne
  t0c=$SECONDS tm0=$(terms) BIG_PIDS=
  bigcopy $((PORT + 5)) --crc
  bigcopy $((PORT + 6))
  wait $BIG_PIDS
  ip netns exec a tc qdisc del dev va root
  ip netns exec b tc qdisc del dev vb root
  for p in $((PORT + 5)) $((PORT + 6)); do
    [ "$(cat /tmp/big.$p)" = "0 0" ] || { sed 's/^/# client: /' /tmp/bigc.$p | tail -n 2; sed 's/^/# server: /' /tmp/bigs.$p | tail -n 2; }
  done
  echo "# netem $ne: $(grep -o 'write_s=.*MB/s)' /tmp/bigc.$((PORT + 5))) with CRC, $(grep -o 'write_s=.*MB/s)' /tmp/bigc.$((PORT + 6))) without"
  t_expect "${BIGCOPY_MIB:-64} MiB copies through netem $ne, CRC and no CRC: byte-exact both sides, no Terminate ($((SECONDS - t0c)) s)" \
    "0 0 0 0 $tm0" "$(cat /tmp/big.$((PORT + 5)) /tmp/big.$((PORT + 6)) | tr '\n' ' ')$(terms)"
done
rm -f /tmp/copy-big
# ---- end of issue 45, Critical 4 ----

# A racing teardown: the receiver killed (SIGKILL) while out-of-order
# segments keep coming, so that its close meets the hook's runs queued
# (at once and a jiffy later) and running under TCP's spinlock. Three
# times, each kill once b placed bytes out of order in that run (with
# markers on what b receives: zcbench aligns its FPDUs with segments, so
# without them nothing would be placed, issue 45); the
# sockets and pinned pages go, the client sees the connection fail, and
# the log stays clean (the suite's end; on the debug kernel KASAN and
# kmemleak watch the cancels).
kills=0
for k in 1 2 3; do
  ip netns exec a tc qdisc replace dev va root netem $REORDER loss 1%
  # Not under timeout (its child would outlive the kill): killed below.
  ip netns exec b zcbench ddp-serve --listen "$ZC_IP_B:$((PORT + 3))" --markers > /tmp/zks 2>&1 &
  pb=$!
  listening b $((PORT + 3))
  o0=$(procv b ZcddpBytesPlacedOutOfOrder)
  ip netns exec a timeout $((60 * TS)) zcbench ddp --connect "$ZC_IP_B:$((PORT + 3))" --crc \
    --lat-sizes none --bw-sizes 65536 --seconds $((10 * TS)) > /tmp/zkc 2>&1 &
  pc=$!
  for i in $(seq $((200 * TS))); do [ "$(procv b ZcddpBytesPlacedOutOfOrder)" -gt "$o0" ] && break; sleep 0.05; done
  placed=$(( $(procv b ZcddpBytesPlacedOutOfOrder) - o0 ))
  kill -KILL $pb 2>/dev/null
  wait $pb 2>/dev/null
  wait $pc
  rc=$?
  ip netns exec a tc qdisc del dev va root
  echo "# kill $k: $placed bytes placed out of order before it, client exit $rc: $(tail -n 1 /tmp/zkc)"
  [ "$placed" -gt 0 ] && [ $rc != 0 ] && [ $rc != 124 ] && kills=$((kills + 1))
done
t_expect "receiver killed mid-stream while placing out of order, 3 times: the client fails each time" 3 "$kills"
for i in $(seq $((100 * TS))); do
  [ "$(procv b ZcddpCurrSockets) $(procv b ZcddpPinnedPages)" = "0 0" ] && break
  sleep 0.1
done
t_expect "  its sockets and pinned pages gone" "0 0" "$(procv b ZcddpCurrSockets) $(procv b ZcddpPinnedPages)"
for i in $(seq $((100 * TS))); do [ "$(procv a ZcddpCurrSockets)" = 0 ] && break; sleep 0.1; done

t_expect "no zcddp socket left in a" 0 "$(procv a ZcddpCurrSockets)"
t_expect "no zcddp socket left in b" 0 "$(procv b ZcddpCurrSockets)"
echo "# counters of a: $(ip netns exec a awk '$2 != 0 { printf "%s=%s ", $1, $2 }' /proc/net/zcddp_stat)"
echo "# counters of b: $(ip netns exec b awk '$2 != 0 { printf "%s=%s ", $1, $2 }' /proc/net/zcddp_stat)"

echo "# t=$(( $(date +%s) - t0 )) s: rmmod with lent pages in flight"
# Lent pages outliving the connection and the module: a's Writes (64 KiB
# x 16, lent) sit in a netem queue on a's egress (delay 60 s) when the
# client exits (close) and the sink resets the connection; the socket is
# destroyed, zcddp unloaded, and only then are the skbs freed: the
# kernel's MSG_ZEROCOPY completion runs with no zcddp code left (the
# error_report hook was put back in close; no notification for a dead
# socket), the pages were held by TCP's own references.
rm -f /tmp/zi.go /tmp/zi.rst
ip netns exec b timeout $((60 * TS)) python3 -m zcddp_peer zc-sink "$ZC_IP_B" $PORT 65536 1 /tmp/zi.rst > /tmp/zb 2>&1 &
pb=$!
listening b $PORT
coproc ZI { exec ip netns exec a timeout $((60 * TS)) python3 -m zcddp_peer zc-reuse "$ZC_IP_B" $PORT 16 65536 1 7 hold /tmp/zi.go 2>&1; }
zi_pid=$ZI_PID
read -r -t 30 line <&"${ZI[0]}"
br0=$(procv a ZcddpTxBytesByRef)
ip netns exec a tc qdisc replace dev va root netem delay 60s
touch /tmp/zi.go
read -r -t 30 line2 <&"${ZI[0]}"
wait $zi_pid
held=$(ip netns exec a tc -s qdisc show dev va | awk '$1 == "backlog" { sub("p", "", $3); print $3; exit }')
lent=$(( $(procv a ZcddpTxBytesByRef) - br0 ))
touch /tmp/zi.rst
wait $pb
case "$line $line2 ${held:-0} $lent" in
  "ready posted 16 "[1-9]*" "[1-9]*) t_ok "Writes lent ($lent bytes), the client gone, $held packets held in netem" ;;
  *) t_fail "Writes lent, the client gone, packets held in netem" "'$line' '$line2', ${held:-no} packets, $lent lent" ;;
esac
for i in $(seq $((100 * TS))); do [ "$(procv a ZcddpCurrSockets)" = 0 ] && break; sleep 0.1; done
t_expect "the reset connection destroyed (a)" 0 "$(procv a ZcddpCurrSockets)"
rmmod_retry() { local i; for i in $(seq 50); do rmmod zcddp 2>/dev/null && return 0; sleep 0.1; done; rmmod zcddp; }
t_run "rmmod zcddp with lent pages held in netem" rmmod_retry
t_run "the held skbs freed after rmmod" ip netns exec a tc qdisc del dev va root
sleep 1
t_expect "no kernel report after freeing them" 0 "$(dmesg | grep -cE 'BUG:|Oops|general protection')"

# zctx=0: every payload byte copied, none lent (the bench's comparison).
t_run "insmod zcddp zctx=0" insmod "$(ko zcddp)" zctx=0
zreuse "zctx=0: 64 KiB Writes x 16, CRC" 16 65536 1
t_expect "  none lent, all copied" "0 $PAYLOAD" "$BYREF $COPIED"

# ---- Registered memory under attack (issue 45, the memory items;
# zcddp_mem.py). Loopback connections in namespace a; "nobody" is a local
# user without privileges. zctx=0 is loaded here (above).
echo "# t=$(( $(date +%s) - t0 )) s: registered memory (issue 45)"
mem_pinned0() {
  local i
  for i in $(seq $((100 * TS))); do [ "$(procv a ZcddpPinnedPages)" = 0 ] && return 0; sleep 0.1; done
  return 1
}
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
# A read-only registration is released clean: nobody maps a file of a
# read-only mount (tmpfs: the guest kernel has no block device; its
# folios are clean until written) read-only, registers it with remote read,
# deregisters it. The pages stay clean (/proc/kpageflags DIRTY), and a
# registration of it with write access is refused (the pin is FOLL_WRITE
# only then). Before the fix: 16 of 16 dirty.
mkdir -p /tmp/ro45
t_run "a read-only mount with a 64 KiB sparse file" sh -c \
  "mount -t tmpfs -o size=1m tmpfs /tmp/ro45 && truncate -s 65536 /tmp/ro45/f && chmod 644 /tmp/ro45/f && mount -o remount,ro /tmp/ro45"
kb=$(python3 -m zcddp_mem kpf /tmp/ro45/f 2>&1)
w0=$(dmesg | grep -c 'WARNING:')
out=$(ip netns exec a $NOBODY timeout $((30 * TS)) python3 -m zcddp_mem rofile /tmp/ro45/f $PORT 2>&1)
mem_pinned0
ka=$(python3 -m zcddp_mem kpf /tmp/ro45/f 2>&1)
t_expect "nobody registers a read-only mapping of a file on a read-only mount, deregisters; write access refused" \
  "rofile reg=ok dereg=ok wreg=EFAULT" "$out"
t_expect "  its pages clean before and after the release (/proc/kpageflags)" \
  "pages=16 dirty=0 pages=16 dirty=0" "$kb $ka"
t_expect "  no kernel warning" 0 $(( $(dmesg | grep -c 'WARNING:') - w0 ))
umount /tmp/ro45
# A pending Read is bound to the registration it was checked against: a
# peer's 1 MiB Read of a remote-read registration stalls (the peer stops
# reading); the application deregisters it, writes 'L' into the memory and
# registers the same address 300 times with local write only (keeping any
# that got the old STag). The peer reads on: none of the 'L' bytes, and no
# STag recurred. Before the fix: the 256th got the old STag and the peer
# read the local-only registration.
ip netns exec a timeout $((60 * TS)) python3 -m zcddp_mem rread $PORT 300 > /tmp/zm 2>&1
sed 's/^/# rread: /' /tmp/zm
t_expect "a stalled Read, the address re-registered 300 times local-only: no STag recurs, no byte of it read" \
  "0 0" "$(field /tmp/zm collided) $(field /tmp/zm L)"
a=$(field /tmp/zm A)
[ "${a:-0}" -gt 0 ] && [ "${a:-0}" -lt 1048576 ] && t_ok "  the Read stalled mid-way ($a bytes of 1 MiB before the deregistration)" ||
  t_fail "  the Read stalled mid-way" "${a:-no} bytes"
mem_pinned0
t_run "zcddp reloaded with zctx=2 (Read Responses lent)" sh -c "rmmod zcddp && insmod $(ko zcddp) zctx=2"
# Deregistration waits for TCP to give back lent pages: a peer's 1 MiB
# Read stalls with Read Response pages lent to TCP. ZCDDP_DEREG_MR waits up
# to SO_SNDTIMEO (1 s) and fails with EBUSY, the pages still pinned and
# counted; the peer reads on, the call is repeated and returns 0 once TCP
# let go (another registration made meanwhile does not drop it); only
# then does the application write 'Z' into the memory. The
# peer receives none of it. Before the fix: DEREG_MR returned at once, the
# counter fell with it, and the peer read the 'Z' bytes TCP still held.
ip netns exec a timeout $((90 * TS)) python3 -m zcddp_mem stall $PORT > /tmp/zm 2>&1
sed 's/^/# stall: /' /tmp/zm
t_expect "a stalled Read with lent pages: DEREG_MR waits, then EBUSY; repeated, 0 once TCP let go; no byte written after it leaves" \
  "EBUSY ok 0" "$(field /tmp/zm first) $(field /tmp/zm dereg) $(field /tmp/zm Z)"
p=$(field /tmp/zm pinned_during)
[ "${p:-0}" -ge 256 ] && t_ok "  the pages counted pinned while TCP held them ($p)" || t_fail "  the pages counted pinned while TCP held them" "${p:-none}"
mem_pinned0 && t_ok "  ZcddpPinnedPages back to 0 once the last lent page came back" || t_fail "  ZcddpPinnedPages back to 0" "$(procv a ZcddpPinnedPages)"
# close() too: the same stalled Read, the socket closed without
# deregistering (no SO_LINGER). close() stays prompt; TCP still holds lent
# pages, so its close resets the connection and drops them; only then do
# the pins go and close() return, and the application writes 'Z' into the
# memory. The peer receives none of it. Before the fix close() released
# the pins and left TCP's queue as it was: the peer read the 'Z' bytes TCP
# still held.
ip netns exec a timeout $((90 * TS)) python3 -m zcddp_mem closestall $PORT > /tmp/zm 2>&1
sed 's/^/# closestall: /' /tmp/zm
t_expect "a stalled Read with lent pages, the socket closed: no byte written after close() leaves" \
  "0" "$(field /tmp/zm Z)"
ms=$(field /tmp/zm close_ms)
[ "${ms:-1000}" -lt 1000 ] && [ "$(field /tmp/zm end)" = ConnectionResetError ] &&
  t_ok "  close() prompt (${ms} ms), the connection reset" ||
  t_fail "  close() prompt, the connection reset" "${ms:-none} ms, peer: $(field /tmp/zm end)"
mem_pinned0 && t_ok "  ZcddpPinnedPages back to 0 after the close" || t_fail "  ZcddpPinnedPages back to 0 after the close" "$(procv a ZcddpPinnedPages)"
# With SO_LINGER (1 s) close() waits that long for TCP to give the pages
# back, then resets the same way: a Read of 48 KiB this time, all of its
# FPDUs handed to TCP when it stalled (an FPDU cut mid-way, as the 1 MiB
# Read's is, can never be finished: its close resets at once).
ip netns exec a timeout $((90 * TS)) python3 -m zcddp_mem closestall $PORT 1 > /tmp/zm 2>&1
sed 's/^/# closestall linger: /' /tmp/zm
ms=$(field /tmp/zm close_ms)
[ "$(field /tmp/zm Z)" = 0 ] && [ "${ms:-0}" -ge 900 ] && [ "$(field /tmp/zm end)" = ConnectionResetError ] &&
  t_ok "  with SO_LINGER 1 s: close() waited for TCP (${ms} ms), then the connection was reset, no byte written after it left" ||
  t_fail "  with SO_LINGER 1 s: close() waited for TCP, then the connection was reset, no byte written after it left" \
    "Z=$(field /tmp/zm Z), ${ms:-none} ms, peer: $(field /tmp/zm end)"
mem_pinned0 || t_fail "  ZcddpPinnedPages back to 0 after the lingering close" "$(procv a ZcddpPinnedPages)"
# The same with the peer reading on as close() begins (SO_LINGER 10 s):
# TCP gives the pages back, close() returns without a reset, and the peer
# gets the whole Read, none of the 'Z' written after close().
ip netns exec a timeout $((90 * TS)) python3 -m zcddp_mem closestall $PORT 10 read > /tmp/zm 2>&1
sed 's/^/# closestall linger, read: /' /tmp/zm
ms=$(field /tmp/zm close_ms)
t_expect "  with SO_LINGER and the peer reading: no reset, the whole Read, nothing written after close()" \
  "49152 0 last" "$(field /tmp/zm A) $(field /tmp/zm Z) $(field /tmp/zm end)"
mem_pinned0 || t_fail "  ZcddpPinnedPages back to 0 after the close" "$(procv a ZcddpPinnedPages)"
# RLIMIT_MEMLOCK before any allocation: nobody (limit 64 KiB) registers
# 1 GiB, then 32 GiB (more than the guest has): ENOMEM, and the kernel
# allocated next to nothing meanwhile (/proc/vmstat pgalloc_*; the page
# arrays were 2 MiB, 512 pages, and 64 MiB, 16384 pages). 2 TiB as root
# (CAP_IPC_LOCK, exempt): ENOMEM, no allocator warning.
for sz in 30 35; do
  ip netns exec a $NOBODY sh -c "ulimit -l 64 && exec timeout $((30 * TS)) python3 -m zcddp_mem bigreg $PORT $((1 << sz))" > /tmp/zm 2>&1
  sed 's/^/# bigreg: /' /tmp/zm
  g=$(field /tmp/zm pgalloc)
  t_expect "nobody, RLIMIT_MEMLOCK 64 KiB, registers $((1 << (sz - 30))) GiB: ENOMEM" "bigreg ENOMEM" "$(grep -o 'bigreg [A-Z]*' /tmp/zm)"
  [ "${g:-99999}" -lt 128 ] && t_ok "  next to nothing allocated meanwhile ($g pages)" || t_fail "  next to nothing allocated meanwhile" "${g:-none} pages"
done
w0=$(dmesg | grep -c 'WARNING:')
out=$(ip netns exec a timeout $((30 * TS)) python3 -m zcddp_mem bigreg $PORT $((1 << 41)) 2>&1)
t_expect "root registers 2 TiB: ENOMEM, no kernel warning" "bigreg ENOMEM 0" \
  "$(echo "$out" | grep -o 'bigreg [A-Z]*') $(( $(dmesg | grep -c 'WARNING:') - w0 ))"
# The charge is the user's: 8 children of nobody (RLIMIT_MEMLOCK 64 KiB)
# each register 32 KiB on the one socket and exit, their registrations
# staying: 2 fit, 6 are refused. Before the fix each child's mm was
# charged, and all 8 (256 KiB) stayed pinned.
mem_pinned0
ip netns exec a $NOBODY sh -c "ulimit -l 64 && exec timeout $((60 * TS)) python3 -m zcddp_mem children $PORT 8 32" > /tmp/zm 2>&1
sed 's/^/# children: /' /tmp/zm
t_expect "nobody's 8 children register 32 KiB each on a shared socket and exit: the user's 64 KiB hold 2" \
  "2 6 16" "$(field /tmp/zm ok) $(field /tmp/zm refused) $(field /tmp/zm pinned)"
mem_pinned0 && t_ok "  their pages unpinned with the socket" || t_fail "  their pages unpinned with the socket" "$(procv a ZcddpPinnedPages)"
# ---- end of issue 45's registered memory
echo "# suite took $(( $(date +%s) - t0 )) s"
t_run "rmmod zcddp" rmmod zcddp
kmemleak_clean "kmemleak: nothing leaked (debug kernel)"
t_done
