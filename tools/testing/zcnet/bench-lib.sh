# Helpers of the benchmark scripts (sourced by bench.sh and bench-zcsock.sh).
#
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
