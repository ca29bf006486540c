# Helpers shared by the zcfrag suites (sourced after ktap.sh and topology.sh).
# Process substitution needs /dev/fd (the guest's /dev is devtmpfs).
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
#
# tcp_xfer NS_FROM NS_TO DST_IP BYTES NAME [SRC_IP]: BYTES seeded bytes ($SEED)
# over one TCP connection, the receiver's sha256 checked against the sender's.
# XFER_BLOCK=N: the sender writes N bytes at a time (socat's default: 8192).
tcp_xfer() {
  local want got port=$((7000 + RANDOM % 1000)) bind=
  [ -n "${6:-}" ] && bind=",bind=$6"
  # The seeded data is made once per size and seed (a TCG guest makes it
  # slowly), its sha256 with it.
  if [ ! -f /tmp/tx ] || [ "$(cat /tmp/tx.key 2>/dev/null)" != "$SEED $4" ]; then
    seeded_bytes "$SEED" "$4" > /tmp/tx
    sha256sum < /tmp/tx | cut -d' ' -f1 > /tmp/tx.sum
    echo "$SEED $4" > /tmp/tx.key
  fi
  want=$(cat /tmp/tx.sum)
  ip netns exec "$2" bash -c "socat -u TCP-LISTEN:$port,reuseaddr - | tee >(wc -c > /tmp/rx-count) | sha256sum > /tmp/rx-sum" &
  local rx=$!
  ip netns exec "$1" socat ${XFER_BLOCK:+-b "$XFER_BLOCK"} -u OPEN:/tmp/tx "TCP:$3:$port,retry=200,interval=0.05$bind" || { kill $rx; t_fail "$5" "send failed"; return; }
  wait $rx
  got=$(cut -d' ' -f1 /tmp/rx-sum)
  [ "$want" = "$got" ] || echo "# $5: received $(cat /tmp/rx-count 2>/dev/null) of $4 bytes"
  t_expect "$5" "$want" "$got"
}

# udp_xfer NS_FROM NS_TO DST_IP COUNT SIZE NAME: datagrams, each checked.
udp_xfer() {
  rm -f /tmp/udp-ready
  ip netns exec "$2" python3 - "$3" "$4" "$5" > /tmp/udp-rx <<'PY' &
import hashlib, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 7999)); s.settimeout(20)
open("/tmp/udp-ready", "w").close()
n, size, h, got = int(sys.argv[2]), int(sys.argv[3]), hashlib.sha256(), 0
try:
    while got < n:
        d = s.recv(65536)
        if len(d) == size: h.update(d); got += 1
except socket.timeout:
    pass
print(got, h.hexdigest())
PY
  local rx=$!
  ip netns exec "$1" python3 - "$3" "$4" "$5" <<'PY'
import hashlib, random, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n, size = int(sys.argv[2]), int(sys.argv[3])
r = random.Random(7)
# Wait (bounded) until the receiver is bound.
for _ in range(400):
    try:
        open("/tmp/udp-ready").close(); break
    except OSError:
        time.sleep(0.05)
for i in range(n):
    s.sendto(r.randbytes(size), (sys.argv[1], 7999))
    time.sleep(0.002)
PY
  wait $rx
  local want
  want=$(python3 -c 'import hashlib,random,sys
r=random.Random(7); h=hashlib.sha256()
for _ in range(int(sys.argv[1])): h.update(r.randbytes(int(sys.argv[2])))
print(sys.argv[1], h.hexdigest())' "$4" "$5")
  t_expect "$6" "$want" "$(cat /tmp/udp-rx)"
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
