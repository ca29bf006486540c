#!/bin/bash
# zcfrag: the defects of the review of commit f65289e (issue "zcfrag: fix what
# a hostile network and a busy teardown can break"), each a check that failed
# on that commit's code:
#   - trains of 17 and more fragments (a lone datagram was stranded), and a
#     lower MTU of 276 (17 fragments per page) under TCP
#   - page trains tagged for a VLAN with no device here (were delivered)
#   - CE on a later fragment (was lost); Not-ECT mixed with CE (dropped)
#   - IP IDs toward two destinations (one device-wide counter from 0)
#   - an empty last fragment (completed a packet), fragments for another
#     host (were reassembled), a page-sized packet with IP options on
#     transmit (counted as malformed)
# zf0 on va in ns a, zf1 on vb in ns b; crafted frames come from ns b through
# an AF_PACKET socket on vb (zcfrag_review.py).
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
SEED=7
. "$ZCNET_ROOT/tools/testing/zcnet/zcfrag-lib.sh"
stat() { ip netns exec "$1" ethtool -S "$2" | awk -v n="$3" '$1 == n":" { print $2 }'; }

t_run "insmod zcfrag" insmod "$(ko zcfrag)"
t_run "zf0 on va, zf1 on vb" bash -c "
  ip -n a link add zf0 link va type zcfrag && ip -n b link add zf1 link vb type zcfrag &&
  ip -n a addr flush dev va && ip -n b addr flush dev vb &&
  ip -n a addr add $ZC_IP_A/24 dev zf0 && ip -n b addr add $ZC_IP_B/24 dev zf1 &&
  ip -n b addr add 198.18.0.3/24 dev zf1 &&
  ip -n a link set zf0 up && ip -n b link set zf1 up"
# A crafted train comes from one Python process; a TCG guest can take longer
# than the default 10 ms between two of its frames.
ip netns exec a sh -c 'echo 1000000 > /sys/class/net/zf0/zcfrag/timeout_us'
ip netns exec a sysctl -qw net.ipv4.ip_forward=0
t_run "ping -s 3000 through zf0/zf1" ip netns exec a ping -c 1 -W 10 -s 3000 "$ZC_IP_B"

# The crafted checks, one Python process (forks are slow under TCG).
python3 "$ZCNET_ROOT/tools/testing/zcnet/zcfrag_review.py" \
  "$(ip netns exec a cat /sys/class/net/va/address)" long vlan ecn empty notlocal ipid txopts \
  > /tmp/review.out 2>&1
rc=$?
t_report /tmp/review.out
t_expect "zcfrag_review.py ran to the end" 0 "$rc"

# A lower MTU of 276: 17 fragments a page, both ways through zcfrag.
ip -n a link set va mtu 276 && ip -n b link set vb mtu 276
s0=$(stat b zf1 zc_successful) p0=$(stat b zf1 zc_potential) f0=$(stat b zf1 zc_failed)
r0=$(ip netns exec a nstat -az TcpRetransSegs | awk '/TcpRetransSegs/ { print $2 }')
tcp_xfer a b "$ZC_IP_B" 1048576 "lower MTU 276: TCP 1 MiB a -> b, md5"
s1=$(stat b zf1 zc_successful) p1=$(stat b zf1 zc_potential) f1=$(stat b zf1 zc_failed)
r1=$(ip netns exec a nstat -az TcpRetransSegs | awk '/TcpRetransSegs/ { print $2 }')
echo "# MTU 276: zc_potential +$((p1 - p0)), zc_successful +$((s1 - s0)), zc_failed +$((f1 - f0)), sender TcpRetransSegs +$((r1 - r0))"
ok=$(( (s1 - s0) * 10 >= (p1 - p0) * 9 && p1 - p0 >= 200 ))
[ $ok = 1 ] && t_ok "lower MTU 276: 17-fragment trains speculated (>= 90% of $((p1 - p0)))" ||
  t_fail "lower MTU 276: 17-fragment trains speculated" "zc_successful +$((s1 - s0)) of zc_potential +$((p1 - p0))"
ip -n a link set va mtu 1500 && ip -n b link set vb mtu 1500

ip netns exec a ethtool -S zf0 | awk 'NR > 1 && $2 != 0 { printf "%s %s ", $1, $2 }' | fold -w 200 | sed 's/^/# zf0: /'; echo
t_run "ip link del zf0 zf1; rmmod zcfrag" bash -c "ip -n a link del zf0 && ip -n b link del zf1 && rmmod zcfrag"
kmemleak_clean "kmemleak: nothing leaked (debug kernel)"
t_done
