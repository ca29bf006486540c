# Helpers of the benchmark scripts (sourced by bench.sh, bench-zcsock.sh,
# bench-native.sh, bench-ddp.sh, bench-zctx.sh, bench-ddp-modes.sh and
# bench-ddp-ab.sh).
#
# listening NS PORT: waits (10 s at most) for a listener.
listening() {
  local i
  for i in $(seq 200); do
    ip netns exec "$1" ss -Hltn "sport = :$2" | grep -q . && return 0; sleep 0.05
  done
  return 1
}

# zcfrag_up: zcfrag on both ends (zf0 in a over va, zf1 in b over vb, MTU
# 4148) over the devices as they are; the lower devices' addresses move to
# zcfrag's own subnet, 198.19.0.1 and 198.19.0.2.
zcfrag_up() {
  insmod "$ZCNET_ROOT/drivers/net/zcfrag/zcfrag.ko" || return 1
  ip -n a link add zf0 link va type zcfrag && ip -n b link add zf1 link vb type zcfrag || return 1
  ip -n a addr flush dev va; ip -n b addr flush dev vb
  ip -n a addr add 198.19.0.1/24 dev zf0 && ip -n b addr add 198.19.0.2/24 dev zf1 || return 1
  ip -n a link set zf0 up && ip -n b link set zf1 up
}
# zs NAME: a counter of the receiver's zcfrag device (ethtool -S zf1).
zs() { ip netns exec b ethtool -S zf1 | awk -v n="$1" '$1 == n":" { print $2 }'; }
# native_both IP_A IP_B: both virtio-net NICs move from virtio_net to
# zcfrag's native front end (the module loaded with both MACs in `devices`),
# named va in a and vb in b again, with these addresses (/24), up.
native_both() {
  local v a b i
  a=$(basename "$(ip netns exec a readlink -f /sys/class/net/va/device)")
  b=$(basename "$(ip netns exec b readlink -f /sys/class/net/vb/device)")
  for v in "$a" "$b"; do
    echo "$v" > /sys/bus/virtio/drivers/virtio_net/unbind && echo "$v" > /sys/bus/virtio/drivers/zcfrag/bind || return 1
  done
  local da db
  for i in $(seq 100); do
    da=$(ls /sys/bus/virtio/devices/$a/net 2>/dev/null) db=$(ls /sys/bus/virtio/devices/$b/net 2>/dev/null)
    [ -n "$da" ] && [ -n "$db" ] && break
    sleep 0.05
  done
  ip link set "$da" netns a && ip link set "$db" netns b || return 1
  ip -n a link set "$da" name va && ip -n b link set "$db" name vb || return 1
  ip -n a addr add "$1/24" dev va && ip -n b addr add "$2/24" dev vb || return 1
  ip -n a link set va up && ip -n b link set vb up
}

# insn_mark reset | dump | name "BUILD OP SIZE" UNITS: with MARK=1, the
# window of the zcinsn QEMU plugin (scripts/run-guest.sh ZCNET_INSN_DIR,
# tools/qemu-plugin/zcinsn.c) around one run: reset clears the counts, dump
# writes them (insn-N.txt, N counted from 0) and keeps the guest's
# /proc/kallsyms beside them in the artifacts, name prints the line
# scripts/insn-report.py reads for the last dump ("# insn-N: BUILD OP SIZE
# UNITS", UNITS the iterations or bytes of the run, known after it).
INSN_DUMPS=0
insn_mark() {
  [ "${MARK:-0}" = 1 ] || return 0
  case $1 in
    name) echo "# insn-$((INSN_DUMPS - 1)): $2 $3" ;;
    dump)
      zcmark dump || return 1
      cat /proc/kallsyms > "${ZCNET_ARTIFACTS:-/tmp}/kallsyms-$INSN_DUMPS"
      INSN_DUMPS=$((INSN_DUMPS + 1))
      ;;
    *) zcmark "$1" ;;
  esac
}
