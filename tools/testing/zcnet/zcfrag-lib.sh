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
