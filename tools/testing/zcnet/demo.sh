#!/bin/bash
# The main job's demo: what zcnet is and what exists so far, in a live guest.
say() { printf '\n=== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@" 2>&1; }
say "guest: $(uname -sr), $(nproc) CPUs, topology $ZCNET_TOPO: namespaces a and b joined by va <-> vb (two virtio-net NICs, MTU 1500)"
say "load the three zcnet modules"
for k in drivers/net/zcfrag/zcfrag.ko net/zcsock/zcsock.ko net/ddp/zcddp.ko; do run insmod "$ZCNET_ROOT/$k"; done
run zcctl status

say "zcfrag: a page-MTU device stacked on each NIC (virtio_net) (ip reads its options through tools/iproute2/link_zcfrag.so)"
export IP_LIB_DIR=$ZCNET_ROOT/tools/target/ip
run ip -n a link add zf0 link va type zcfrag slots 16
run ip -n b link add zf1 link vb type zcfrag slots 16 timeout 5000
ip -n a addr flush dev va; ip -n b addr flush dev vb
ip -n a addr add "$ZC_IP_A/24" dev zf0; ip -n b addr add "$ZC_IP_B/24" dev zf1
ip -n a link set zf0 up; ip -n b link set zf1 up
run ip -n a -d link show zf0
run ip netns exec a ethtool -i zf0
say "4096-byte TCP segments leave as three standard IPv4 fragments each (MTU 1500 below)"
ip netns exec b tcpdump -c 6 -n -i vb 'ip[6:2] & 0x3fff != 0' 2>/dev/null > /tmp/frags &
td=$!
ip netns exec b zcbench serve --listen "$ZC_IP_B:5301" &
srv=$!
run ip netns exec a zcbench tcp --connect "$ZC_IP_B:5301" --iters 200 --seconds 0.5 --lat-sizes 4,4K --bw-sizes 64K,1M --label zcfrag
wait $srv
wait $td
sed 's/^/    /' /tmp/frags
run ip netns exec a zcctl frag
run ip -s -n a link show zf0
say "zcsock and zcddp are TCP upper-layer protocols, reached through setsockopt(TCP_ULP)"
run cat /proc/sys/net/ipv4/tcp_available_ulp
python3 -c 'import socket
for name in ("zcsock", "zcddp"):
    s = socket.socket()
    try:
        s.setsockopt(socket.IPPROTO_TCP, 31, name.encode()); print(name, "attached")
    except OSError as e:
        print("setsockopt(TCP_ULP, %s): %s (zcddp needs a connected socket)" % (name, e.strerror))'
run cat /proc/net/zcsock_stat
say "zcfrag's native front end: zcfrag drives both virtio-net NICs itself (in place of virtio_net) and posts receive chains so that the device writes each fragment's payload at its place in a page"
ip -n a link del zf0; ip -n b link del zf1
run sh -c "echo $ZC_MAC_A,$ZC_MAC_B > /sys/module/zcfrag/parameters/devices"
say "unbind both NICs from virtio_net, bind them to zcfrag (/sys/bus/virtio/drivers/zcfrag/bind)"
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
native_both "$ZC_IP_A" "$ZC_IP_B"
run ip netns exec b ethtool -i vb
run ip -n b link show vb
ip netns exec a ping -c 1 -W 5 "$ZC_IP_B" >/dev/null
ip netns exec b zcbench serve --listen "$ZC_IP_B:5301" &
srv=$!
run ip netns exec a zcbench tcp --connect "$ZC_IP_B:5301" --lat-sizes none --bw-sizes 512K --seconds 2 --label native
wait $srv
say "the receiving device placed the payload (rx_placed_bytes), nothing but headers and misses copied (rx_copied_bytes); the sender referenced its pages (tx_referenced_bytes) and kicked the device about once per 30 fragments"
ip netns exec b ethtool -S vb | grep -E "rx_(placed|copied)_bytes|rx_chains|rx_pages_placed|zc_successful" | sed 's/^/    /'
ip netns exec a ethtool -S va | grep -E "tx_(referenced|copied)_bytes|tx_fragments:|tx_kicks" | sed 's/^/    /'
say "unload (the zcfrag devices go with the module)"
for m in zcddp zcsock zcfrag; do run rmmod $m; done
run zcctl status
run ip -n a -br link
