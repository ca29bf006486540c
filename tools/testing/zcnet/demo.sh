#!/bin/bash
# The main job's demo (make demo): the three parts of zcnet at work in a live
# guest, with real traffic between namespaces a and b (topology virtio2) and
# the counters that show what each part did:
#   1. zcfrag: page-MTU devices stacked on the 1500-byte NICs; a TCP transfer
#      leaves as IPv4 fragments and arrives as whole pages (ethtool -S);
#   2. zcsock over them: region-to-region TCP with the receiver's pages
#      remapped (zcsock_remap.py), pages overwritten in flight sent
#      copy-on-write (zcsock_test.py cow); md5s of both ends, zcsock_stat;
#   3. zcddp: zcddp-copy RDMA-Writes a file into b's memory over kernel TCP,
#      Reads it back; md5s, zcddp_stat;
# then zcfrag's native front end, a summary, and the three modules unloaded.
# Any step that fails ends the demo with "demo: FAILED" and exit status 1.
. "$ZCNET_ROOT/tools/testing/zcnet/bench-lib.sh"
SUMMARY=()
say() { printf '\n=== %s\n' "$*"; }
fail() { printf '\ndemo: FAILED: %s\n' "$*"; exit 1; }
# run CMD...: prints the command, runs it; the demo fails with it.
run() { printf '$ %s\n' "$*"; "$@" 2>&1 || fail "$* (exit status $?)"; }
# runto FILE CMD...: run, its output also kept in FILE.
runto() { local f=$1; shift; printf '$ %s\n' "$*"; "$@" > "$f" 2>&1; local rc=$?; indent < "$f"; [ $rc = 0 ] || fail "$* (exit status $rc)"; }
# need WHAT COND: the demo goes on only if COND is 1 (as $(( )) gives it);
# WHAT is printed.
need() { [ "$2" = 1 ] && printf '  ok: %s\n' "$1" || fail "$1"; }
# same A B: 1 if the strings A and B are the same and not empty.
same() { [ -n "$1" ] && [ "$1" = "$2" ] && echo 1; }
indent() { sed 's/^/    /'; }
# snap NS FILE: /proc/net/FILE of namespace NS kept as the "before" of moved.
snap() { ip netns exec "$1" cat "/proc/net/$2" > "/tmp/demo.$1.$2" || fail "read /proc/net/$2 in $1"; }
# moved NS FILE NAME...: how much each counter grew since snap NS FILE;
# prints them and keeps them in D[NS.NAME].
declare -A D
moved() {
  local ns=$1 f=$2 n v; shift 2
  ip netns exec "$ns" cat "/proc/net/$f" > "/tmp/demo.$ns.$f.after" || fail "read /proc/net/$f in $ns"
  awk -v names="$*" 'BEGIN { k = split(names, w, " ") }
    FNR == NR { b[$1] = $2; next } { a[$1] = $2 }
    END { for (i = 1; i <= k; i++) print w[i], a[w[i]] - b[w[i]] }' "/tmp/demo.$ns.$f" "/tmp/demo.$ns.$f.after" > /tmp/demo.moved
  while read -r n v; do
    D[$ns.$n]=$v
    printf '    %s: %-26s +%s\n' "$ns" "$n" "$v"
  done < /tmp/demo.moved
}
# ethtool_S NS DEV NAME...: these counters of ethtool -S DEV, kept in E[NAME].
declare -A E
ethtool_S() {
  local ns=$1 dev=$2 n v; shift 2
  printf '$ ip netns exec %s ethtool -S %s   (of its counters:)\n' "$ns" "$dev"
  ip netns exec "$ns" ethtool -S "$dev" > /tmp/demo.ethtool || fail "ethtool -S $dev in $ns"
  for n; do
    v=$(awk -v n="$n:" '$1 == n { print $2 }' /tmp/demo.ethtool)
    E[$n]=${v:-0}
    printf '    %-24s %s\n' "$n:" "${v:-0}"
  done
}

say "guest: $(uname -sr), $(nproc) CPUs, topology $ZCNET_TOPO: namespaces a and b joined by va <-> vb (two virtio-net NICs, MTU 1500)"
say "load the three zcnet modules"
for k in drivers/net/zcfrag/zcfrag.ko net/zcsock/zcsock.ko net/ddp/zcddp.ko; do run insmod "$ZCNET_ROOT/$k"; done
run zcctl status

say "1. zcfrag: a network device with a page-sized MTU (4148) stacked on each 1500-byte NIC. It sends a 4 KiB TCP segment as three IPv4 fragments; the receiver speculates that a first fragment starts a page and builds the train into one page, so TCP gets whole pages."
export IP_LIB_DIR=$ZCNET_ROOT/tools/target/ip
run ip -n a link add zf0 link va type zcfrag slots 16
run ip -n b link add zf1 link vb type zcfrag slots 16 timeout 5000
ip -n a addr flush dev va; ip -n b addr flush dev vb
run ip -n a addr add "$ZC_IP_A/24" dev zf0
run ip -n b addr add "$ZC_IP_B/24" dev zf1
ip -n a link set zf0 up && ip -n b link set zf1 up || fail "set zf0, zf1 up"
run ip -n a -d link show zf0
# tcpdump on b's wire, for the first fragments of the transfer; it is ready
# when it says "listening on".
ip netns exec b timeout 120 tcpdump -l -v -c 3 -n -i vb 'ip[6:2] & 0x3fff != 0' > /tmp/demo.frags 2> /tmp/demo.td &
td=$!
for _ in $(seq 200); do grep -q 'listening on' /tmp/demo.td && break; sleep 0.05; done
ip netns exec b zcbench serve --listen "$ZC_IP_B:5301" 2>/dev/null &
srv=$!
listening b 5301 || fail "zcbench serve did not listen"
run ip netns exec a zcbench tcp --connect "$ZC_IP_B:5301" --lat-sizes none --bw-sizes 1M --seconds 1 --label zcfrag
wait $srv || fail "zcbench serve"
wait $td || fail "tcpdump saw no fragments"
echo "one segment as tcpdump saw it on the wire (vb): three fragments, at offsets 0, 1480 and 2960"
indent < /tmp/demo.frags
ethtool_S a zf0 tx_fragmented_packets tx_fragments tx_copied_bytes
need "zf0 sent its segments as fragments" $((E[tx_fragments] > 0))
frag_tx=${E[tx_fragments]}
ethtool_S b zf1 rx_ipv4_fragments zc_potential zc_successful zc_full_pages zc_failed rx_fallback_fragments rx_copied_bytes
need "zf1 built fragment trains into whole pages (zc_successful: the speculation hit)" $((E[zc_full_pages] > 0))
SUMMARY+=("zcfrag  stacked: $frag_tx fragments sent; ${E[zc_successful]} of ${E[zc_potential]} trains built into pages (${E[zc_full_pages]} whole 4 KiB pages), ${E[zc_failed]} missed")
echo "(this stacked front end copies the payload on both ends: tx_copied_bytes, rx_copied_bytes; the native front end below has the NICs read and write it in place)"

say "2. zcsock: a TCP upper-layer protocol (setsockopt(TCP_ULP, \"zcsock\")) that sends from and receives into regions of memory mapped from /dev/zcsock: the sender's pages go to TCP by reference instead of being copied, and received pages are remapped into the receiver's region. Here over zcfrag's page packets: 8 MiB (a 2 MiB region sent 4 times), md5 on both ends."
snap a zcsock_stat; snap b zcsock_stat
ZRM=$ZCNET_ROOT/tools/testing/zcnet/zcsock_remap.py
ip netns exec b python3 "$ZRM" server 5303 512 > /tmp/demo.rm.srv 2>&1 &
srv=$!
listening b 5303 || fail "zcsock_remap.py server did not listen"
runto /tmp/demo.rm.cli ip netns exec a python3 "$ZRM" client "$ZC_IP_B" 5303 512 4 7
wait $srv || { cat /tmp/demo.rm.srv; fail "zcsock_remap.py server"; }
echo "$ ip netns exec b python3 $ZRM server 5303 512   (its output)"
indent < /tmp/demo.rm.srv
tx=$(awk '$1 == "tx" { print $2, $3 }' /tmp/demo.rm.cli) rx=$(awk '$1 == "rx" { print $2, $3 }' /tmp/demo.rm.srv)
need "md5 and length the same on both ends: $rx" "$(same "$tx" "$rx")"
moved a zcsock_stat ZcsockTxPagesByRef ZcsockTxBytesCopied
moved b zcsock_stat ZcsockRxPagesRemapped ZcsockRxBytesCopied
need "a sent pages by reference, b remapped received pages" $((D[a.ZcsockTxPagesByRef] > 0 && D[b.ZcsockRxPagesRemapped] > 0))
SUMMARY+=("zcsock  8 MiB region to region, md5 ${rx%% *} both ends: ${D[a.ZcsockTxPagesByRef]} pages sent by reference, ${D[b.ZcsockRxPagesRemapped]} pages remapped, ${D[b.ZcsockRxBytesCopied]} bytes copied at b")
echo
echo "Copy-on-write: the sender overwrites each page right after send() while TCP still holds it; zcsock has made the pages copy-on-write, so the receiver gets the bytes of the send() call (zcsock_test.py checks every page)."
snap a zcsock_stat
runto /tmp/demo.cow python3 -m zcsock_test --timeout 120 --client-ns a --server-ns b --server-ip "$ZC_IP_B" cow --pages 256
moved a zcsock_stat ZcsockTxPagesByRef ZcsockTxCowFaults
need "pages written in flight were copied on write" $((D[a.ZcsockTxCowFaults] > 0))
SUMMARY+=("zcsock  copy-on-write: 256 pages overwritten after send() arrived as sent; ${D[a.ZcsockTxCowFaults]} copy-on-write faults")

say "3. zcddp: iWARP (RDMA over MPA/DDP/RDMAP) on kernel TCP sockets, setsockopt(TCP_ULP, \"zcddp\"). zcddp-copy RDMA-Writes a 4 MiB file into memory b registered, Reads it back and compares; the two ends exchange addresses and results with RDMA Sends; b saves its memory to a file."
python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(11).randbytes(4 << 20))' > /tmp/demo.copy-in
rm -f /tmp/demo.copy-out
snap a zcddp_stat; snap b zcddp_stat
ip netns exec b timeout 120 zcddp-copy -s -a "$ZC_IP_B" -p 5304 -o /tmp/demo.copy-out --crc > /tmp/demo.cs 2>&1 &
srv=$!
listening b 5304 || fail "zcddp-copy -s did not listen"
run ip netns exec a timeout 120 zcddp-copy -c -a "$ZC_IP_B" -p 5304 --crc /tmp/demo.copy-in
wait $srv || { cat /tmp/demo.cs; fail "zcddp-copy -s"; }
echo "$ ip netns exec b zcddp-copy -s -a $ZC_IP_B -p 5304 -o /tmp/demo.copy-out --crc   (its output)"
indent < /tmp/demo.cs
run md5sum /tmp/demo.copy-in /tmp/demo.copy-out
m_in=$(md5sum < /tmp/demo.copy-in) m_out=$(md5sum < /tmp/demo.copy-out)
need "the file and what landed in b's memory have the same md5" "$(same "$m_in" "$m_out")"
moved a zcddp_stat ZcddpFpdusSent ZcddpFpdusReceived ZcddpBytesPlaced
moved b zcddp_stat ZcddpFpdusSent ZcddpFpdusReceived ZcddpBytesPlaced ZcddpRxBytesDirect ZcddpCrcErrors ZcddpTerminatesSent
need "b placed the 4 MiB Written (and the Sends), a the 4 MiB Read back" $((D[b.ZcddpBytesPlaced] >= 4 << 20 && D[a.ZcddpBytesPlaced] >= 4 << 20))
SUMMARY+=("zcddp   4 MiB RDMA Write + Read over TCP, md5 ${m_in%% *} both ends: ${D[b.ZcddpFpdusReceived]} FPDUs into b (CRC on, ${D[b.ZcddpCrcErrors]} errors), ${D[b.ZcddpRxBytesDirect]} bytes placed from TCP's queue at b")

say "zcfrag's native front end: zcfrag drives both virtio-net NICs itself (in place of virtio_net) and posts receive chains so that the NIC writes each fragment's payload at its place in a page"
ip -n a link del zf0; ip -n b link del zf1
echo "$ echo $ZC_MAC_A,$ZC_MAC_B > /sys/module/zcfrag/parameters/devices"
echo "$ZC_MAC_A,$ZC_MAC_B" > /sys/module/zcfrag/parameters/devices || fail "zcfrag devices parameter"
echo "unbind both NICs from virtio_net, bind them to zcfrag (/sys/bus/virtio/drivers/zcfrag/bind)"
native_both "$ZC_IP_A" "$ZC_IP_B" || fail "native_both"
run ip netns exec b ethtool -i vb
run ip netns exec a ping -c 1 -W 5 "$ZC_IP_B"
ip netns exec b zcbench serve --listen "$ZC_IP_B:5301" 2>/dev/null &
srv=$!
listening b 5301 || fail "zcbench serve did not listen"
run ip netns exec a zcbench tcp --connect "$ZC_IP_B:5301" --lat-sizes none --bw-sizes 512K --seconds 1 --label native
wait $srv || fail "zcbench serve"
echo "the receiving NIC placed the payload (rx_placed_bytes); only headers and misses were copied (rx_copied_bytes); the sender's pages went by reference (tx_referenced_bytes)"
ethtool_S a va tx_fragments tx_referenced_bytes tx_copied_bytes tx_kicks
ethtool_S b vb rx_pages_placed rx_placed_bytes rx_copied_bytes zc_successful
need "vb's NIC placed pages" $((E[rx_pages_placed] > 0))
SUMMARY+=("zcfrag  native: ${E[rx_pages_placed]} pages placed by the NIC, ${E[rx_placed_bytes]} bytes placed, ${E[rx_copied_bytes]} copied")

say "unload (the zcfrag devices go with the module; closed zcsock sockets may take a moment to finish)"
for m in zcddp zcsock zcfrag; do
  printf '$ rmmod %s\n' "$m"
  for _ in $(seq 100); do rmmod "$m" 2>/dev/null && break; sleep 0.1; done
  ! grep -q "^$m " /proc/modules || { rmmod "$m"; fail "rmmod $m"; }
done
run zcctl status
run ip -n a -br link
echo "(va and vb went with zcfrag, which drove them: their NICs stay without a driver until virtio_net is bound again)"

say "summary"
for l in "${SUMMARY[@]}"; do echo "  $l"; done
echo "  modules: zcfrag, zcsock and zcddp loaded, used and unloaded cleanly"
echo "demo: PASSED"
