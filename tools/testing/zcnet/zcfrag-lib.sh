# Helpers shared by the zcfrag suites (sourced after ktap.sh and topology.sh).
# Process substitution needs /dev/fd (the guest's /dev is devtmpfs).
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
#
# tcp_xfer NS_FROM NS_TO DST_IP BYTES NAME [SRC_IP]: BYTES seeded bytes ($SEED)
# over one TCP connection, the receiver's md5 checked against the sender's.
# XFER_BLOCK=N: the sender writes N bytes at a time (socat's default: 8192).
tcp_xfer() {
  local want got port=$((7000 + RANDOM % 1000)) bind=
  [ -n "${6:-}" ] && bind=",bind=$6"
  # The seeded data is made once per size and seed (a TCG guest makes it
  # slowly), its md5 with it.
  if [ ! -f /tmp/tx ] || [ "$(cat /tmp/tx.key 2>/dev/null)" != "$SEED $4" ]; then
    seeded_bytes "$SEED" "$4" > /tmp/tx
    md5sum < /tmp/tx | cut -d' ' -f1 > /tmp/tx.sum
    echo "$SEED $4" > /tmp/tx.key
  fi
  want=$(cat /tmp/tx.sum)
  ip netns exec "$2" bash -c "socat -u TCP-LISTEN:$port,reuseaddr - | tee >(wc -c > /tmp/rx-count) | md5sum > /tmp/rx-sum" &
  local rx=$!
  ip netns exec "$1" socat ${XFER_BLOCK:+-b "$XFER_BLOCK"} -u OPEN:/tmp/tx "TCP:$3:$port,retry=200,interval=0.05$bind" || { kill $rx; t_fail "$5" "send failed"; return; }
  wait $rx
  got=$(cut -d' ' -f1 /tmp/rx-sum)
  [ "$want" = "$got" ] || echo "# $5: received $(cat /tmp/rx-count 2>/dev/null) of $4 bytes"
  t_expect "$5" "$want" "$got"
}

# wait_for DESC CMD...: polls CMD (bounded, 10 s, times SLOW) until it succeeds.
wait_for() {
  local d=$1 i; shift
  for i in $(seq $((200 * ${SLOW:-1}))); do "$@" && return 0; sleep 0.05; done
  echo "# timed out waiting for: $d"; return 1
}

# page_segs_start NS DEV SRC / page_segs_stop: count the whole-page (4096-byte)
# TCP segments SRC hands DEV, as the stack built them (GSO packets are cut
# at gso_size from their start, so a packet of L bytes holds L / 4096 whole
# pages). What the receiver can build as full pages is bounded by these: the
# sender's TCP ends a packet short of a page whenever the receive window or
# Nagle says so, which no receive path can undo. A retransmission counts
# again: it is another train to the receiver (a cold run's veth counted 12
# more full pages than whole-page segments when each range counted once,
# 2026-11-29). page_segs_stop (after the transfer) waits until the capture
# holds the sender's FIN, since tcpdump drops what its ring still holds
# when it is stopped, and prints the count, or nothing when tcpdump
# reports packets it dropped (its report goes to the log).
page_segs_start() {
  ip netns exec "$1" tcpdump -i "$2" -s 96 -B 16384 --immediate-mode -U -w /tmp/pseg.pcap "tcp and src $3" 2>/tmp/pseg.err &
  PSEG_PID=$!
  wait_for "tcpdump on $2" grep -q "listening on" /tmp/pseg.err || t_fail "tcpdump on $2 started" "$(cat /tmp/pseg.err)"
}
_pseg_fin() { tcpdump -r /tmp/pseg.pcap -c 1 'tcp[tcpflags] & tcp-fin != 0' 2>/dev/null | grep -q .; }
page_segs_stop() {
  # Without the FIN the capture is short of segments: no count (the caller
  # fails), not a smaller one that would pass more easily.
  if ! wait_for "the sender's FIN in the capture" _pseg_fin; then
    kill -INT "$PSEG_PID"; wait "$PSEG_PID"; return
  fi
  kill -INT "$PSEG_PID"; wait "$PSEG_PID"
  grep -q "^0 packets dropped by kernel" /tmp/pseg.err || { sed 's/^/# /' /tmp/pseg.err >&2; return; }
  tcpdump -r /tmp/pseg.pcap -nn 2>/dev/null |
    awk 'match($0, / seq [0-9]+:[0-9]+,/) {
        r = substr($0, RSTART + 5, RLENGTH - 6); split(r, b, ":"); n += int((b[2] - b[1]) / 4096)
        if (r in s) again++; s[r] = 1; p++ }
      END { print n + 0; printf "# capture: %d data packets, %d of them a range sent before\n", p, again > "/dev/stderr" }'
  rm -f /tmp/pseg.pcap
}

# corrupt_first_frags NS DEV PCT: netem on DEV's egress flips one bit in PCT%
# of the first fragments (more fragments set, offset 0: a u32 match on the IP
# header) and leaves every other frame alone. So a TCP segment carries one
# flipped bit at most, which its checksum always catches; netem on every
# fragment could flip two of one segment, and two flips the same bit position
# mod 16 apart in opposite directions cancel in the Internet checksum (about
# one 4 MiB run in a thousand at 0.3%). Two bands, every priority to the
# first, so nothing else waits behind the netem band. `tc qdisc del dev DEV
# root` undoes it.
corrupt_first_frags() {
  ip netns exec "$1" tc qdisc replace dev "$2" root handle 1: prio bands 2 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 &&
    ip netns exec "$1" tc qdisc add dev "$2" parent 1:2 handle 20: netem corrupt "$3%" &&
    ip netns exec "$1" tc filter add dev "$2" parent 1: protocol ip prio 1 u32 match u16 0x2000 0x3fff at 6 flowid 1:2
}

# udp_rx NS IP PORT COUNT SIZE: receives COUNT datagrams of SIZE bytes on
# IP:PORT (20 s without one ends it), touches /tmp/udp-ready once bound,
# and prints "GOT SHA256" of them. udp_tx NS IP PORT COUNT SIZE: sends the
# seeded datagrams, paced. udp_want COUNT SIZE: what udp_rx prints when all
# of them arrive intact.
udp_rx() {
  rm -f /tmp/udp-ready
  ip netns exec "$1" python3 - "$2" "$3" "$4" "$5" <<'PY'
import hashlib, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2]))); s.settimeout(20)
open("/tmp/udp-ready", "w").close()
n, size, h, got = int(sys.argv[3]), int(sys.argv[4]), hashlib.md5(), 0
try:
    while got < n:
        d = s.recv(65536)
        if len(d) == size: h.update(d); got += 1
except socket.timeout:
    pass
print(got, h.hexdigest())
PY
}
udp_tx() {
  ip netns exec "$1" python3 - "$2" "$3" "$4" "$5" <<'PY'
import random, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n, size, r = int(sys.argv[3]), int(sys.argv[4]), random.Random(7)
for i in range(n):
    s.sendto(r.randbytes(size), (sys.argv[1], int(sys.argv[2])))
    time.sleep(0.002)
PY
}
udp_want() {
  python3 -c 'import hashlib,random,sys
r=random.Random(7); h=hashlib.md5()
for _ in range(int(sys.argv[1])): h.update(r.randbytes(int(sys.argv[2])))
print(sys.argv[1], h.hexdigest())' "$1" "$2"
}
# udp_rx_ready: waits (bounded, 10 s) until udp_rx in this guest is bound.
udp_rx_ready() {
  for _ in $(seq 200); do [ -e /tmp/udp-ready ] && return 0; sleep 0.05; done
  return 1
}

# udp_xfer NS_FROM NS_TO DST_IP COUNT SIZE NAME: datagrams, each checked.
udp_xfer() {
  rm -f /tmp/udp-ready
  udp_rx "$2" "$3" 7999 "$4" "$5" > /tmp/udp-rx &
  local rx=$!
  udp_rx_ready
  udp_tx "$1" "$3" 7999 "$4" "$5"
  wait $rx
  t_expect "$6" "$(udp_want "$4" "$5")" "$(cat /tmp/udp-rx)"
}

# vdev_netdev VDEV: the name of virtio device VDEV's netdev once its driver
# made one (bounded wait, 10 s); fails without one.
vdev_netdev() {
  local d
  for _ in $(seq 200); do
    d=$(ls /sys/bus/virtio/devices/$1/net 2>/dev/null | head -1)
    [ -n "$d" ] && { echo "$d"; return 0; }
    sleep 0.05
  done
  return 1
}

# vdev_bind VDEV DRIVER NS IF IP: virtio device VDEV from its driver (if it
# has one) to DRIVER, its netdev moved into NS as IF with IP/24, up.
vdev_bind() {
  local d l=/sys/bus/virtio/devices/$1/driver
  [ -e "$l" ] && echo "$1" > "$l/unbind"
  echo "$1" > "/sys/bus/virtio/drivers/$2/bind" && d=$(vdev_netdev "$1") || return 1
  ip link set "$d" netns "$3" && ip -n "$3" link set "$d" name "$4" &&
    ip -n "$3" addr add "$5/24" dev "$4" && ip -n "$3" link set "$4" up
}

# frag_sizes NS_FROM NS_TO DST_IP WIRE_MTU WHAT: TCP segments and UDP
# datagrams whose IP payloads sit around every boundary of zcfrag's
# fragment plan at WIRE_MTU (zcfrag_sizes.py), from NS_FROM to DST_IP in
# NS_TO, one at a time, each answered with its MD5; one check for each
# protocol. NS_TO's MSS must allow 4096-byte segments (an MTU of 4148).
frag_sizes() {
  local proto port out py=$ZCNET_ROOT/tools/testing/zcnet/zcfrag_sizes.py
  for proto in tcp udp; do
    port=$((9000 + RANDOM % 1000))
    rm -f /tmp/sizes-ready
    ip netns exec "$2" python3 "$py" serve $proto "$3" $port "$4" &
    local rx=$!
    if wait_for "the $proto sizes receiver" test -e /tmp/sizes-ready; then
      out=$(ip netns exec "$1" python3 "$py" send $proto "$3" $port "$4" $((5 * ${SLOW:-1})))
    else
      out="no receiver"
    fi
    kill $rx 2>/dev/null; wait $rx 2>/dev/null
    case "$out" in
      ok*) t_ok "$5: $proto, every fragment boundary at wire MTU $4 +-8 bytes, byte-exact (${out#ok } sizes)" ;;
      *) t_fail "$5: $proto, every fragment boundary at wire MTU $4 +-8 bytes, byte-exact" "IP payloads $out" ;;
    esac
  done
}

# stream_start NS_FROM NS_TO DST_IP NAME: a TCP stream (zcfrag_stream.py)
# from NS_FROM to DST_IP in NS_TO that runs until stream_stop NAME.
# stream_moving NAME: waits (wait_for) until NAME has received another MiB.
# stream_stop NAME WHAT: stops it; one check that it arrived byte-exact.
declare -A STREAM_TX STREAM_RX
stream_start() {
  local py=$ZCNET_ROOT/tools/testing/zcnet/zcfrag_stream.py port=$((10000 + RANDOM % 1000))
  rm -f /tmp/$4.ready /tmp/$4.stop /tmp/$4.progress /tmp/$4.rx /tmp/$4.tx
  ip netns exec "$2" python3 "$py" recv "$3" $port "$4" > /tmp/$4.rx &
  STREAM_RX[$4]=$!
  wait_for "the $4 receiver" test -e /tmp/$4.ready || return 1
  ip netns exec "$1" python3 "$py" send "$3" $port "$4" > /tmp/$4.tx &
  STREAM_TX[$4]=$!
}
_stream_bytes() { cat /tmp/$1.progress 2>/dev/null || echo 0; }
_stream_past() { [ "$(_stream_bytes "$1")" -gt "$2" ]; }
stream_moving() { wait_for "$1 another MiB" _stream_past "$1" "$(( $(_stream_bytes "$1") + (1 << 20) - 1 ))"; }
stream_stop() {
  local tx rx
  touch /tmp/$1.stop
  wait "${STREAM_TX[$1]}"; wait "${STREAM_RX[$1]}"
  tx=$(cat /tmp/$1.tx) rx=$(cat /tmp/$1.rx)
  case "$tx" in
    stalled*) t_fail "$2: byte-exact" "the sender stalled after ${tx#stalled } bytes; received $rx" ;;
    *) t_expect "$2: byte-exact (${tx%% *} bytes)" "$tx" "$rx" ;;
  esac
}
