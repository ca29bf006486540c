#!/bin/bash
# zcfrag under traffic: the lower device goes down and up, is removed, and the
# zcfrag links are deleted and the module unloaded, all while data flows
# (zf0 on va in ns a, zf1 on vb in ns b, a -> b TCP and UDP both ways).
# Byte-exact checks use a seeded stream the receiver verifies as it reads; the
# run's kernel-log splat check (WARNING, BUG, KASAN, lockdep, kmemleak) is the
# real assertion of the teardown paths. Runs in the veth and virtio2 topologies.
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
SEED=7
stat() { timeout 20 ip netns exec "$1" ethtool -S "$2" 2>/dev/null | awk -v n="$3" '$1 == n":" { print $2 }'; }
. "$ZCNET_ROOT/tools/testing/zcnet/zcfrag-lib.sh"
# moving NS DEV COUNTER DELTA: waits (bounded, 60 s) until the counter moved
# by DELTA from now; on a timeout, shows the state of the transfer.
moving() {
  local c0 c end=$((SECONDS + 60))
  c0=$(stat "$1" "$2" "$3"); [ -n "$c0" ] || return 1
  while [ $SECONDS -lt $end ]; do
    c=$(stat "$1" "$2" "$3")
    [ -n "$c" ] && [ $((c - c0)) -ge "$4" ] && return 0
    sleep 0.1
  done
  echo "# $2 $3 stayed at $c0 -> $c for 60 s"
  stuck
  return 1
}
stuck() {
  {
    ip -n a -s link; ip -n b -s link; ip -n a neigh; ip -n b neigh
    ip netns exec a ss -tin; ip netns exec b ss -tin
    ip netns exec a ethtool -S zf0; ip netns exec b ethtool -S zf1
  } 2>&1 | sed 's/^/#   /'
}
# operstate NS DEV WANT: waits (bounded) until DEV's operstate is WANT; prints it.
operstate() {
  local s end=$((SECONDS + 10))
  while [ $SECONDS -lt $end ]; do
    s=$(ip netns exec "$1" cat "/sys/class/net/$2/operstate" 2>/dev/null)
    [ "$s" = "$3" ] && break
    sleep 0.05
  done
  echo "$s"
}
# gone NS PATTERN: true when no device of NS matches PATTERN.
gone() { ! ip netns exec "$1" ls /sys/class/net | grep -q "$2"; }
setup_zf() {
  ip -n a link add zf0 link va type zcfrag && ip -n b link add zf1 link vb type zcfrag &&
  ip -n a addr flush dev va && ip -n b addr flush dev vb &&
  ip -n a addr add "$ZC_IP_A/24" dev zf0 && ip -n b addr add "$ZC_IP_B/24" dev zf1 &&
  ip -n a link set zf0 up && ip -n b link set zf1 up
}
# stream_start: a seeded TCP stream a -> b through zf0/zf1, in the background,
# until /tmp/st-stop appears (or it is killed). Each side runs in its own
# process group (setsid) so that it can be ended by its id.
stream_start() {
  local port=$((7000 + RANDOM % 1000))
  rm -f /tmp/st-ready /tmp/st-stop /tmp/st-rx /tmp/st-tx
  setsid ip netns exec b python3 /tmp/zf-stream.py recv "$ZC_IP_B" $port > /tmp/st-rx 2>&1 &
  SRX=$!
  for _ in $(seq 200); do [ -e /tmp/st-ready ] && break; sleep 0.05; done
  setsid ip netns exec a python3 /tmp/zf-stream.py send "$ZC_IP_B" $port > /tmp/st-tx 2>&1 &
  STX=$!
}
stream_kill() { kill -- -"$STX" -"$SRX" 2>/dev/null; exited "$STX" "$SRX" || blocked "stream processes did not exit"; }
# blocked WHY: shows the tasks in D state and where they wait.
blocked() {
  echo "# $1; tasks in D state:"
  ps -eo pid,stat,wchan:32,cmd | awk 'NR == 1 || $2 ~ /D/' | sed 's/^/#   /'
  for p in $(ps -eo pid,stat | awk '$2 ~ /D/ { print $1 }'); do sed "s/^/#   $p: /" /proc/$p/stack 2>/dev/null; done
}
# exited PID...: waits (bounded, 120 s) until the processes have exited.
exited() {
  local p alive end=$((SECONDS + 120))
  while [ $SECONDS -lt $end ]; do
    alive=0
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && return 0
    sleep 0.1
  done
  return 1
}
# lower_remove NS DEV: removes a lower device as hot-unplug would (veth: the
# pair goes; virtio2: the virtio-net driver is unbound). lower_restore puts
# va and vb back, up, without addresses.
lower_remove() {
  if [ "$ZCNET_TOPO" = veth ]; then
    ip -n "$1" link del "$2"
  else
    basename "$(ip netns exec "$1" readlink -f "/sys/class/net/$2/device")" >> /tmp/unbound
    tail -n 1 /tmp/unbound > /sys/bus/virtio/drivers/virtio_net/unbind
  fi
}
lower_restore() {
  local v dev
  if [ "$ZCNET_TOPO" = veth ]; then
    ip link add va netns a type veth peer name vb netns b
  else
    while read -r v; do echo "$v" > /sys/bus/virtio/drivers/virtio_net/bind; done < /tmp/unbound
    rm -f /tmp/unbound
    for m in "$ZC_MAC_A a va" "$ZC_MAC_B b vb"; do
      set -- $m
      dev=$(ifname_by_mac "$1") && ip link set "$dev" netns "$2" && ip -n "$2" link set "$dev" name "$3"
    done
  fi
  ip -n a link set va up && ip -n b link set vb up
}

# [ -e /dev/fd ] for tcp_xfer's process substitution (the guest's /dev is devtmpfs).
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
cat > /tmp/zf-stream.py <<'PY'
# zf-stream.py recv|send HOST PORT [READY]: a TCP stream of a seeded 4 MiB
# pattern, repeated. The sender sends until /tmp/st-stop exists, then closes
# and prints "sent N"; the receiver creates READY (/tmp/st-ready) when it
# listens, checks every byte as it reads and prints "received N ok" (or the
# offset of the first wrong byte).
import os, random, socket, sys, time
mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
ready = sys.argv[4] if len(sys.argv) > 4 else "/tmp/st-ready"
buf = random.Random(11).randbytes(1 << 22)
ring = buf + buf
N, CH = len(buf), 1 << 16
if mode == "recv":
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port)); ls.listen(1)
    open(ready, "w").close()
    c, _ = ls.accept()
    got = bytearray(CH); mv = memoryview(got)
    pos = total = 0; bad = None
    while True:
        n = c.recv_into(mv)
        if n == 0:
            break
        if bad is None and got[:n] != ring[pos:pos + n]:
            bad = total + next(i for i in range(n) if got[i] != ring[pos + i])
        total += n; pos = (pos + n) % N
    print("received %d %s" % (total, "ok" if bad is None else "bad at %d" % bad), flush=True)
else:
    for _ in range(400):
        try:
            s = socket.create_connection((host, port), timeout=5); break
        except OSError:
            time.sleep(0.05)
    s.settimeout(None)
    view = memoryview(ring)
    pos = total = 0
    # Paced to 8 MB/s at most: enough traffic to tear down under, without
    # starving the suite on a slow (TCG, shared) host.
    t0 = time.monotonic()
    while not os.path.exists("/tmp/st-stop"):
        n = s.send(view[pos:pos + CH])
        total += n; pos = (pos + n) % N
        ahead = total / 8e6 - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # the receiver's close: everything arrived
    print("sent %d" % total, flush=True)
PY
cat > /tmp/zf-udpflood.py <<'PY'
# zf-udpflood.py HOST: 8000-byte datagrams (seeded) to HOST:9 in a loop until
# killed, about 1000 a second at most; errors (the device going away) are
# not fatal.
import random, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
data = random.Random(5).randbytes(8000)
while True:
    try:
        s.sendto(data, (sys.argv[1], 9))
    except OSError:
        pass
    time.sleep(0.001)
PY

# Watchdog: should the suite hang (its steps are bounded, but a kernel bug
# could block one in D state), show where after 780 s, before the runner's
# 900 s bound kills the guest without a word.
( sleep 780; blocked "suite still running after 780 s" ) &
watchdog=$!
t_run "insmod zcfrag" insmod "$(ko zcfrag)"
t_run "zf0 on va, zf1 on vb, addresses moved" setup_zf
t_run "ping -s 3000 through zf0/zf1" ip netns exec a ping -c 1 -W 10 -s 3000 "$ZC_IP_B"

# --- (1) lower device down and up in the middle of a transfer ---
echo "# t=${SECONDS}s"
stream_start
moving a zf0 tx_fragmented_packets 200 && t_ok "stream a -> b flowing (tx_fragmented_packets)" || t_fail "stream a -> b flowing"
ip -n a link set va down
t_expect "va down mid-transfer: zf0 LOWERLAYERDOWN" lowerlayerdown "$(operstate a zf0 lowerlayerdown)"
ip -n a link set va up
t_expect "va up: zf0 up" up "$(operstate a zf0 up)"
operstate b zf1 up >/dev/null
moving a zf0 tx_fragmented_packets 200 && t_ok "transfer continues after va down/up" || t_fail "transfer continues after va down/up"
echo "# receiver: slots_in_use $(stat b zf1 slots_in_use) before vb goes down"
ip -n b link set vb down
t_expect "vb (receiving, speculating) down: zf1 LOWERLAYERDOWN" lowerlayerdown "$(operstate b zf1 lowerlayerdown)"
ip -n b link set vb up
t_expect "vb up: zf1 up" up "$(operstate b zf1 up)"
moving b zf1 zc_successful 100 && t_ok "speculation continues after vb down/up (zc_successful)" || t_fail "speculation continues after vb down/up"
touch /tmp/st-stop
if exited "$STX" "$SRX"; then
  sent=$(awk '{ print $2 }' /tmp/st-tx)
  echo "# stream: $(cat /tmp/st-tx), $(cat /tmp/st-rx)"
  t_expect "stream across both down/up: every byte arrived, exact" "received $sent ok" "$(cat /tmp/st-rx)"
else
  t_fail "stream across both down/up: every byte arrived, exact" "the stream did not end"
  stream_kill
fi

# --- (2) links deleted mid-transfer, module unloaded at once ---
echo "# t=${SECONDS}s"
stream_start
moving a zf0 tx_fragmented_packets 200 && t_ok "second stream flowing" || t_fail "second stream flowing"
echo "# receiver: slots_in_use $(stat b zf1 slots_in_use) before the links go"
t_run "ip link del zf0 mid-transfer" ip -n a link del zf0
t_run "ip link del zf1 mid-transfer" ip -n b link del zf1
t_run "rmmod zcfrag right after" rmmod zcfrag
gone a zf && gone b zf && t_ok "no zf device left" || t_fail "no zf device left" "$(ip -n a -br link; ip -n b -br link)"
grep -q "^zcfrag " /proc/modules && t_fail "module gone" || t_ok "module gone"
stream_kill
t_run "insmod zcfrag again" insmod "$(ko zcfrag)"
t_run "zf0 and zf1 again" setup_zf
tcp_xfer a b "$ZC_IP_B" 1048576 "fresh TCP 1 MiB a -> b after the reload, md5"

# --- (2b) UDP flood both ways while the links go and the module unloads ---
echo "# t=${SECONDS}s"
setsid ip netns exec a nice python3 /tmp/zf-udpflood.py "$ZC_IP_B" &
fa=$!
setsid ip netns exec b nice python3 /tmp/zf-udpflood.py "$ZC_IP_A" &
fb=$!
moving a zf0 tx_fragmented_packets 100 && moving b zf1 tx_fragmented_packets 100 && t_ok "UDP 8000-byte floods a <-> b flowing" || t_fail "UDP 8000-byte floods a <-> b flowing"
echo "# zf0 slots_in_use $(stat a zf0 slots_in_use), zf1 slots_in_use $(stat b zf1 slots_in_use), zf1 zc_successful $(stat b zf1 zc_successful)"
t_run "UDP flood: ip link del zf0" ip -n a link del zf0
t_run "UDP flood: ip link del zf1" ip -n b link del zf1
t_run "UDP flood: rmmod zcfrag" rmmod zcfrag
gone a zf && gone b zf && t_ok "UDP flood: no zf device left" || t_fail "UDP flood: no zf device left"
kill -- -"$fa" -"$fb"
exited "$fa" "$fb" && t_ok "UDP flood senders ended" || { blocked "UDP flood senders did not exit"; t_fail "UDP flood senders ended"; }

# --- (3) the lower device removed mid-transfer ---
echo "# t=${SECONDS}s"
t_run "insmod zcfrag (third time)" insmod "$(ko zcfrag)"
t_run "zf0 and zf1 (third time)" setup_zf
stream_start
moving b zf1 zc_successful 100 && t_ok "third stream flowing, speculated" || t_fail "third stream flowing, speculated"
echo "# receiver: slots_in_use $(stat b zf1 slots_in_use) before its lower goes"
rm -f /tmp/unbound
if [ "$ZCNET_TOPO" = veth ]; then
  lower_remove a va
  gone a zf0 && t_ok "veth pair deleted mid-transfer: zf0 gone" || t_fail "veth pair deleted mid-transfer: zf0 gone"
  gone b zf1 && t_ok "veth pair deleted mid-transfer: zf1 gone" || t_fail "veth pair deleted mid-transfer: zf1 gone"
else
  # The receiving NIC first (its slots hold fragments), then the sending one.
  lower_remove b vb
  gone b zf1 && t_ok "vb unbound mid-transfer: zf1 gone" || t_fail "vb unbound mid-transfer: zf1 gone"
  lower_remove a va
  gone a zf0 && t_ok "va unbound mid-transfer: zf0 gone" || t_fail "va unbound mid-transfer: zf0 gone"
fi
stream_kill
t_run "lower devices back" lower_restore
t_run "zf0 and zf1 rebuilt" setup_zf
tcp_xfer a b "$ZC_IP_B" 1048576 "TCP 1 MiB a -> b after the lower came back, md5"
tcp_xfer b a "$ZC_IP_A" 1048576 "TCP 1 MiB b -> a after the lower came back, md5"
t_run "rmmod with both devices present" rmmod zcfrag
gone a zf && gone b zf && t_ok "devices gone with the module" || t_fail "devices gone with the module"

# --- (4) delete and recreate, over and over, under bulk TCP both ways ---
# The review's critical defect: deletion ran the device's teardown (which
# released every admission request) and freed its timer while transmit could
# still run; the next page-sized packet made a new implicit request and armed
# the freed timer. Each cycle deletes zf0 or zf1 while both streams send
# through it (its transmit counter moving), then recreates it.
echo "# t=${SECONDS}s"
# 20 on veth, 5 on virtio2 (60 and 10 before the test-time cut of
# 2026-11-27): zcnet_slowclose holds the window open in every cycle, so
# each one exercises it.
CYCLES=${CYCLES:-20}
[ "$ZCNET_TOPO" = veth ] || CYCLES=${CYCLES_VIRTIO:-5}
t_run "insmod zcfrag (fourth time)" insmod "$(ko zcfrag)"
# zcnet_slowclose sleeps 100 ms in each zf device's NETDEV_GOING_DOWN, after
# dellink and before the device stops transmitting: the window in which the
# old code armed its freed timer, held open for every cycle.
t_run "insmod zcnet_slowclose (100 ms in each zf close)" insmod "$(ko zcnet_slowclose)" ms=100
t_run "zf0 and zf1 (fourth time)" setup_zf
rm -f /tmp/st-stop /tmp/bs-ready1 /tmp/bs-ready2
p1=$((7000 + RANDOM % 500)) p2=$((7500 + RANDOM % 500))
setsid ip netns exec b python3 /tmp/zf-stream.py recv "$ZC_IP_B" $p1 /tmp/bs-ready1 > /tmp/bs-rx1 2>&1 &
R1=$!
setsid ip netns exec a python3 /tmp/zf-stream.py recv "$ZC_IP_A" $p2 /tmp/bs-ready2 > /tmp/bs-rx2 2>&1 &
R2=$!
for _ in $(seq 200); do [ -e /tmp/bs-ready1 ] && [ -e /tmp/bs-ready2 ] && break; sleep 0.05; done
setsid ip netns exec a python3 /tmp/zf-stream.py send "$ZC_IP_B" $p1 > /tmp/bs-tx1 2>&1 &
S1=$!
setsid ip netns exec b python3 /tmp/zf-stream.py send "$ZC_IP_A" $p2 > /tmp/bs-tx2 2>&1 &
S2=$!
# A deleted device must start nothing: before the fix, transmit after
# teardown (which had released every grant with a Fast_Rel) made new implicit
# requests, so the peer granted slots to a device that was going away (and
# the request armed the device timer dellink had freed). zf1 keeps grants for
# ten minutes here, so a grant it holds after zf0 is gone came from a request
# zf0 made after its teardown.
grants_from_a() { ip netns exec b cat /sys/class/net/zf1/zcfrag/admissions | grep -c "^grant slot .* $ZC_IP_A > "; }
ip netns exec b sh -c 'echo 600000 > /sys/class/net/zf1/zcfrag/grant_timeout_ms'
for _ in $(seq 200); do [ "$(grants_from_a)" -ge 1 ] && break; sleep 0.05; done
t_expect "zf1 granted zf0's stream a slot (implicit admission)" 1 "$(grants_from_a)"
ip -n a link del zf0
# The Fast_Rel of the teardown may still be on its way: wait (bounded) for it.
for _ in $(seq 60); do [ "$(grants_from_a)" = 0 ] && break; sleep 0.05; done
t_expect "zf0 deleted under traffic: zf1 holds no grant for it (none asked after teardown)" 0 "$(grants_from_a)"
ip -n a link add zf0 link va type zcfrag && ip -n a addr add "$ZC_IP_A/24" dev zf0 && ip -n a link set zf0 up
ip netns exec b sh -c 'echo 2000 > /sys/class/net/zf1/zcfrag/grant_timeout_ms'

# txp NS DEV: the device's transmitted packets (/proc/net/dev of NS).
txp() { ip netns exec "$1" awk -v d="$2:" '$1 == d { print $11 }' /proc/net/dev; }
bad=0 idle=0 hits0=$(cat /sys/module/zcnet_slowclose/parameters/hits)
for i in $(seq "$CYCLES"); do
  if [ $((i % 2)) = 1 ]; then ns=a dev=zf0 lower=va addr=$ZC_IP_A; else ns=b dev=zf1 lower=vb addr=$ZC_IP_B; fi
  # Both streams send through DEV (data one way, ACKs and data the other).
  t0=$(txp $ns $dev) end=$((SECONDS + 20))
  until [ $(( $(txp $ns $dev || echo 0) - ${t0:-0} )) -ge 20 ] || [ $SECONDS -ge $end ]; do :; done
  [ $SECONDS -ge $end ] && idle=$((idle + 1))
  [ $((i % 10)) = 0 ] && echo "# cycle $i at t=${SECONDS}s, idle so far $idle"
  ip -n $ns link del $dev || bad=$((bad + 1))
  { ip -n $ns link add $dev link $lower type zcfrag && ip -n $ns addr add "$addr/24" dev $dev &&
    ip -n $ns link set $dev up; } || bad=$((bad + 1))
done
t_expect "$CYCLES delete/recreate cycles under bulk TCP both ways" 0 "$bad"
t_expect "every deletion went through the slow close" "$CYCLES" "$(( $(cat /sys/module/zcnet_slowclose/parameters/hits) - hits0 ))"
rmmod zcnet_slowclose
echo "# cycles with no traffic through the device within 20 s: $idle"
[ "$idle" -le $((CYCLES / 10)) ] && t_ok "traffic flowed through the device at most deletions ($idle idle of $CYCLES)" ||
  t_fail "traffic flowed through the device at most deletions" "$idle of $CYCLES cycles idle"
touch /tmp/st-stop
if exited "$S1" "$S2" "$R1" "$R2"; then
  echo "# streams: $(cat /tmp/bs-tx1) / $(cat /tmp/bs-rx1); $(cat /tmp/bs-tx2) / $(cat /tmp/bs-rx2)"
  t_expect "stream a -> b across the cycles: every byte arrived, exact" "received $(awk '{ print $2 }' /tmp/bs-tx1) ok" "$(cat /tmp/bs-rx1)"
  t_expect "stream b -> a across the cycles: every byte arrived, exact" "received $(awk '{ print $2 }' /tmp/bs-tx2) ok" "$(cat /tmp/bs-rx2)"
else
  t_fail "streams across the cycles ended" "$(cat /tmp/bs-tx1 /tmp/bs-rx1 /tmp/bs-tx2 /tmp/bs-rx2 2>&1 | tr '\n' ' ')"
  kill -- -"$S1" -"$S2" -"$R1" -"$R2" 2>/dev/null
fi
t_run "rmmod after the cycles, devices present" rmmod zcfrag
kill "$watchdog" 2>/dev/null
kmemleak_clean "kmemleak: nothing leaked (debug kernel)"
t_done
