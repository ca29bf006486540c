#!/bin/bash
# The main job's demo: what zcnet is and what exists so far, in a live guest.
say() { printf '\n=== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@" 2>&1; }
say "guest: $(uname -sr), $(nproc) CPUs, topology $ZCNET_TOPO"
run ip -n a -br addr show va
run ip -n b -br addr show vb
say "load the three zcnet modules"
for k in drivers/net/zcfrag/zcfrag.ko net/zcsock/zcsock.ko net/ddp/zcddp.ko; do run insmod "$ZCNET_ROOT/$k"; done
run zcctl status
run dmesg --notime | grep -E 'zcfrag|zcsock|zcddp'
say "zcfrag answers 'ip link add ... type zcfrag' (device creation lands with the zcfrag issue)"
run ip link add zf0 link lo type zcfrag
say "zcsock and zcddp are TCP upper-layer protocols, reached through setsockopt(TCP_ULP)"
run cat /proc/sys/net/ipv4/tcp_available_ulp
python3 -c 'import socket
for name in ("zcsock", "zcddp"):
    s = socket.socket()
    try:
        s.setsockopt(socket.IPPROTO_TCP, 31, name.encode()); print(name, "attached")
    except OSError as e:
        print("setsockopt(TCP_ULP, %s): %s" % (name, e.strerror))'
run zcctl counters
say "plain TCP between the namespaces, measured by zcbench (the baseline later modes are compared with)"
ip netns exec b zcbench serve --listen "$ZC_IP_B:5301" &
srv=$!
run ip netns exec a zcbench tcp --connect "$ZC_IP_B:5301" --iters 200 --seconds 0.5 --lat-sizes 4,1K,32K --bw-sizes 4K,64K,1M
wait $srv
say "unload"
for m in zcddp zcsock zcfrag; do run rmmod $m; done
run zcctl status
