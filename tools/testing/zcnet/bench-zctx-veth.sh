#!/bin/bash
# bench-zctx-veth.sh: zcddp RDMA Write bandwidth on veth with zero-copy
# transmit (zctx) and in-order direct placement (rxdirect) on and off, by
# hand (Documentation/networking/zcddp.rst, "On veth, side by side"):
#
#   scripts/run-guest.sh --topo veth --timeout 500 --log out/zctx-veth.log \
#     tools/testing/zcnet/bench-zctx-veth.sh
#
# Three rounds of the four settings in turn, zcbench ddp 2 s at 64 KiB and
# 1 MiB; each line: total bytes:MB/s,every CPU's ns/B per size, and a's
# lent and kernel-copied transmit bytes.
. "$ZCNET_ROOT/scripts/topology.sh"
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
B=$ZC_IP_B
jbw() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["bandwidth"]; print(" ".join("%s:%.1fMB/s,%.2fns/B" % (r["bytes"], r["mbytes_per_s"], r["sys_cpu_ns_per_byte"]) for r in d))' "$1"; }
insmod "$ZCNET_ROOT/net/ddp/zcddp.ko"
for r in 1 2 3; do
  for mode in 1:1 0:1 1:0 0:0; do
    zc=${mode%:*} rxd=${mode#*:}
    rmmod zcddp; insmod "$ZCNET_ROOT/net/ddp/zcddp.ko" zctx=$zc rxdirect=$rxd
    ip netns exec b zcbench ddp-serve --listen "$B:5303" > /tmp/serve.log 2>&1 &
    p=$!
    listening b 5303
    ip netns exec a zcbench ddp --connect "$B:5303" --json /tmp/z.json --label x --lat-sizes none --bw-sizes 65536,1048576 --seconds 2 > /tmp/z.txt 2>&1
    echo "# round $r zctx=$zc rxdirect=$rxd: $(jbw /tmp/z.json) kcopied=$(ip netns exec a awk '$1=="ZcddpTxZcCopiedByKernel"{print $2}' /proc/net/zcddp_stat) byref=$(ip netns exec a awk '$1=="ZcddpTxBytesByRef"{print $2}' /proc/net/zcddp_stat)"
    kill $p 2>/dev/null; wait $p 2>/dev/null
  done
done
