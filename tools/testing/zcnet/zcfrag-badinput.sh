#!/bin/bash
# zcfrag: bad input from a raw socket. Crafted Ethernet + IPv4 frames are
# injected from namespace b (AF_PACKET on vb) at va's MAC, where zf0 sits on va
# (198.18.0.1/24 on zf0, va without an address). Every kind must leave the
# system up (no splat, no leak), hit a counter, and stay within the documented
# memory limits: 8 speculation slots of at most 32 held fragments each
# (zcfrag), and net.ipv4.ipfrag_high_thresh for the normal reassembly (whose
# queues go after net.ipv4.ipfrag_time, lowered to 1 s here).
#
# ZCFRAG_FRONT=native (zcfrag-badinput-native.sh; virtio2 only): zf0 is va's
# virtio-net device itself on zcfrag's native front end, and the same frames
# meet its speculative receive chains first.
#
# Kinds without a distinct counter today are listed in PENDING: their
# "distinct counter" check is a SKIP ("no counter yet"). When the counter
# exists, drop the kind from PENDING (or run with PENDING= set) and the check
# turns on; the proposed counter names are in the distinct() calls below.
. "$ZCNET_ROOT/tools/testing/zcnet/ktap.sh"
. "$ZCNET_ROOT/scripts/topology.sh"
SEED=7
PENDING=${PENDING-""}
. "$ZCNET_ROOT/tools/testing/zcnet/zcfrag-lib.sh"
# ask CMD...: one command to the agent (below); its answer goes to D[KEY].
declare -A D
ask() {
  local k v
  D=()
  echo "$*" >&"${AGENT[1]}"
  while read -r -u "${AGENT[0]}" k v; do [ "$k" = END ] && break; D[$k]=$v; done
  [ -z "${D[error]:-}" ] || echo "# agent: $* failed: ${D[error]}"
}
# inject CASE [COUNTER]: the case's frames, then its counter changes (see the agent).
inject() {
  ask case "$@"
  echo "# $1 (t=${SECONDS}s, ${D[sent]:-?} frames, ${D[tries]:-?} tries): ${D[moved]:-}"
}
# ge NAME WANT COUNTERS...: ok when the counters' summed change is at least WANT.
ge() {
  local name=$1 want=$2 sum=0 c; shift 2
  for c in "$@"; do sum=$((sum + ${D[$c]:-0})); done
  [ "$sum" -ge "$want" ] && t_ok "$name ($* +$sum)" || t_fail "$name" "$* moved by $sum, wanted >= $want"
}
# distinct KIND COUNTER WANT: the kind's own counter moved by WANT (SKIP while
# KIND is in PENDING: no counter yet).
distinct() {
  case " $PENDING " in *" $1 "*) t_skip "$1: distinct counter $2" "no counter yet"; return ;; esac
  [ "${D[$2]:-0}" -ge "$3" ] && t_ok "$1: distinct counter $2 (+${D[$2]})" || t_fail "$1: distinct counter $2" "moved by ${D[$2]:-missing}, wanted >= $3"
}
# alive NAME: a fragmented ping through zf0 and back still works.
alive() { t_run "$1: system up (ping -s 3000 through zf0)" ip netns exec a ping -c 1 -W 10 -s 3000 "$ZC_IP_B"; }
meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }

# The agent: one Python process for the whole suite (a TCG guest forks and
# starts Python slowly).
cat > /tmp/zf-agent.py <<'PY'
# zf-agent.py DST_MAC: one process for the whole suite (a TCG guest forks
# slowly). It holds an AF_PACKET socket on vb (ns b) to inject crafted frames
# at DST_MAC, and reads zf0's ethtool counters and ns a's IP MIBs and
# /proc/net/sockstat (opened in ns a). Commands on stdin, one a line; each
# answer is "KEY VALUE" lines and then "END":
#   case NAME [COUNTER [THEN]]  inject NAME's frames, wait (bounded) until zf0 saw
#                        them all and every slot is free; answer every
#                        counter's change, "sent N", "tries N", "moved ..."
#                        With COUNTER: send again (4 tries in all) until it
#                        moved (trains must arrive within zcfrag's 10 ms).
#                        With THEN too (a counter of the stack that the
#                        frames reach after zcfrag, later): then wait
#                        (bounded) until that one moved, without resending.
#   udp                  the datagram received on 198.18.0.1:9999 ("got LEN SHA")
#   slots                wait (bounded) for slots_in_use 0; answer it
#   frag                 wait (bounded) for "FRAG: inuse 0 memory 0"; answer it
import ctypes, fcntl, hashlib, os, random, socket, struct, sys, time

libc = ctypes.CDLL(None, use_errno=True)
def setns(name):
    fd = os.open("/run/netns/" + name, os.O_RDONLY)
    if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
        sys.exit("setns %s: errno %d" % (name, ctypes.get_errno()))
    os.close(fd)

dmac = bytes.fromhex(sys.argv[1].replace(":", ""))
setns("b")
pkt = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
pkt.bind(("vb", 0))
smac = pkt.getsockname()[4]
setns("a")
ctl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("198.18.0.1", 9999))
sockstat = open("/proc/net/sockstat")
mibs = [open("/proc/net/snmp"), open("/proc/net/netstat")]

# --- zf0's counters through the ethtool ioctl ---
SIOCETHTOOL, GSSET_INFO, GSTRINGS, GSTATS, SS_STATS = 0x8946, 0x37, 0x1B, 0x1D, 1
def ethtool(buf):
    ifr = struct.pack("16sP", b"zf0", ctypes.addressof(buf)).ljust(40, b"\0")
    fcntl.ioctl(ctl, SIOCETHTOOL, ifr)
b = ctypes.create_string_buffer(struct.pack("IIQI", GSSET_INFO, 0, 1 << SS_STATS, 0))
ethtool(b)
NSTATS = struct.unpack_from("I", b, 16)[0]
b = ctypes.create_string_buffer(struct.pack("III", GSTRINGS, SS_STATS, NSTATS) + bytes(32 * NSTATS))
ethtool(b)
NAMES = [b.raw[12 + 32 * i:44 + 32 * i].split(b"\0")[0].decode() for i in range(NSTATS)]
STATS = ctypes.create_string_buffer(8 + 8 * NSTATS)
def stats():
    struct.pack_into("II", STATS, 0, GSTATS, NSTATS)
    ethtool(STATS)
    return dict(zip(NAMES, struct.unpack_from("%dQ" % NSTATS, STATS, 8)))
def stat(name):
    return stats()[name]
def frag():
    sockstat.seek(0)
    for l in sockstat.read().splitlines():
        if l.startswith("FRAG:"):
            f = l.split()
            return int(f[2]), int(f[4])
def snap():
    s = stats()
    for f in mibs:
        f.seek(0)
        hdr = {}
        for l in f.read().splitlines():
            k, *v = l.split()
            if k not in ("Ip:", "IpExt:"):
                continue
            if k in hdr:
                s.update(("kernel_" + n, int(x)) for n, x in zip(hdr[k], v))
            else:
                hdr[k] = v
    return s
def wait(cond, seconds):
    end = time.monotonic() + seconds
    while not cond() and time.monotonic() < end:
        time.sleep(0.01)
def arrived(counter, want, seconds, quiet=2.0):
    """Waits (SECONDS at most) until COUNTER reaches WANT, or has not moved
    for QUIET seconds: frames the device dropped (a flood finds the native
    front end's ring empty) never arrive, and waiting the whole bound for
    them cost 20 s."""
    end = time.monotonic() + seconds
    last, since = stat(counter), time.monotonic()
    while last < want and time.monotonic() < end and time.monotonic() - since < quiet:
        time.sleep(0.01)
        v = stat(counter)
        if v != last:
            last, since = v, time.monotonic()

# --- crafted frames ---
rnd = random.Random(7)
DST = bytes([198, 18, 0, 1])
TCP, UDP = 6, 17
def src(n):
    return bytes([198, 18, 0, n])
def csum(b):
    if len(b) % 2:
        b += b"\0"
    x = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while x >> 16:
        x = (x & 0xFFFF) + (x >> 16)
    return ~x & 0xFFFF
def iph(sa, ident, off, mf, proto, plen, ihl=5, total=None):
    """An IPv4 header (IHL words, NOP options past 20 bytes), checksum valid."""
    tl = ihl * 4 + plen if total is None else total
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, tl, ident,
                    (off // 8) | (0x2000 if mf else 0), 64, proto, 0, sa, DST)
    h += b"\x01" * (ihl * 4 - 20)
    return h[:10] + struct.pack("!H", csum(h)) + h[12:]
def eth(ip):
    return dmac + smac + b"\x08\x00" + ip
def tcp_first(n):
    """n payload bytes of a first TCP fragment: a 32-byte TCP header (data
    offset 8, what zcfrag speculates on), then seeded data."""
    t = bytearray(rnd.randbytes(n))
    t[12] = 8 << 4
    return bytes(t)
def udp_train(sa, ident, data, sizes, opts_at=()):
    """The fragments of a UDP datagram (checksum 0) of the given payload sizes
    (the rest in the last); those whose index is in opts_at carry IP options."""
    dg = struct.pack("!HHHH", 4000, 9999, 8 + len(data), 0) + data
    out, off, i = [], 0, 0
    while off < len(dg):
        n = min(sizes[i] if i < len(sizes) else len(dg), len(dg) - off)
        ihl = 6 if i in opts_at else 5
        out.append(eth(iph(sa, ident, off, off + n < len(dg), UDP, n, ihl=ihl) + dg[off:off + n]))
        off += n; i += 1
    return out

want_udp = None
def frames(case):
    """The frames of a case (built first: they go back to back); the same on
    every try."""
    global want_udp, rnd
    rnd = random.Random("7-" + case)
    if case == "control":
        # A clean train of a 3000-byte UDP datagram: speculated and delivered.
        data = rnd.randbytes(3000)
        want_udp = "%d %s" % (len(data), hashlib.sha256(data).hexdigest())
        return udp_train(src(2), 0x0100, data, [1480, 1480])
    if case == "truncated":
        # total_len 1500, but the frame carries 200 (first) or 100 (later) bytes.
        return [eth(iph(src(30), 0x1001, 0, True, TCP, 0, total=1500) + tcp_first(200)),
                eth(iph(src(30), 0x1002, 1480, True, TCP, 0, total=1500) + rnd.randbytes(100))]
    if case == "short_header":
        # 10 and 19 bytes of IP header after the Ethernet header.
        h = iph(src(31), 0x1101, 0, True, TCP, 1480)
        return [eth(h[:10]), eth(h[:19])]
    if case == "overlap":
        # The second fragment starts at 1400, inside the first (0..1480).
        return [eth(iph(src(32), 0x2001, 0, True, TCP, 1480) + tcp_first(1480)),
                eth(iph(src(32), 0x2001, 1400, True, TCP, 1480) + rnd.randbytes(1480))]
    if case == "mismatched_id":
        return [eth(iph(src(33), 0x3001, 0, True, TCP, 1480) + tcp_first(1480)),
                eth(iph(src(33), 0x3002, 1480, True, TCP, 1480) + rnd.randbytes(1480))]
    if case == "zero_length":
        # Payload 0, MF, offset 0, UDP and TCP; then a train whose first
        # fragment is followed by 16 zero-length fragments at the next offset
        # (the first of them ends the train, as ip_frag_queue kills a queue
        # on one; the others find no train).
        return ([eth(iph(src(34), 0x4001, 0, True, UDP, 0)),
                 eth(iph(src(35), 0x4002, 0, True, TCP, 0)),
                 eth(iph(src(36), 0x4003, 0, True, TCP, 1480) + tcp_first(1480))] +
                [eth(iph(src(36), 0x4003, 1480, True, TCP, 0))] * 16)
    if case == "ip_options":
        # First fragments with IHL 6..15 (NOP options), valid checksums.
        return [eth(iph(src(37), 0x5000 + ihl, 0, True, TCP, 1400, ihl=ihl) + tcp_first(1400))
                for ihl in range(6, 16)]
    if case == "ip_options_mid":
        # A UDP datagram whose middle fragment carries options.
        data = rnd.randbytes(3000)
        want_udp = "%d %s" % (len(data), hashlib.sha256(data).hexdigest())
        return udp_train(src(2), 0x5100, data, [1480, 1472], opts_at=(1,))
    if case == "oversize":
        # A lone fragment at offset 65528 with 16 bytes (ends at 65544), and a
        # whole UDP train 0..65544 (45 fragments) reassembling past 64 KiB.
        dg = rnd.randbytes(65544)
        return ([eth(iph(src(38), 0x6001, 65528, False, UDP, 16) + rnd.randbytes(16))] +
                [eth(iph(src(39), 0x6002, off, off + 1480 < 65544, UDP, min(1480, 65544 - off)) + dg[off:off + 1480])
                 for off in range(0, 65544, 1480)])
    raise ValueError(case)

def flood(out):
    """20000 first fragments that never complete: distinct IDs, 16 sources.
    Samples slots_in_use and the FRAG memory every 50 frames."""
    body = tcp_first(1480)
    ms = mm = n = 0
    t0 = time.monotonic()
    for i in range(20000):
        pkt.send(eth(iph(src(10 + i % 16), i, 0, True, TCP, 1480) + body))
        if i % 50 == 0:
            ms = max(ms, stat("slots_in_use")); mm = max(mm, frag()[1]); n += 1
    out.append("flood_ms %d" % ((time.monotonic() - t0) * 1000))
    out.append("max_slots %d" % ms)
    out.append("max_frag_mem %d" % mm)
    out.append("samples %d" % n)
    return 20000

def run_case(case, counter=None, then=None):
    out = []
    s0 = snap()
    sent = tries = 0
    while True:
        tries += 1
        if case == "flood":
            n = flood(out)
        else:
            fs = frames(case)
            for f in fs:
                pkt.send(f)
            n = len(fs)
        sent += n
        arrived("rx_frames", s0["rx_frames"] + sent, 20)
        wait(lambda: stat("slots_in_use") == 0, 10)
        s1 = snap()
        if not counter or s1[counter] > s0[counter] or tries == 4:
            break
        out.append("retry %d" % tries)
    if then:
        # The held fragment reaches the stack's reassembly after zcfrag
        # counted it (seen once on virtio2: the snapshot came first).
        wait(lambda: snap()[then] > s0[then], 5)
        s1 = snap()
    d = {k: s1[k] - s0.get(k, 0) for k in s1}
    out += ["%s %d" % kv for kv in d.items()]
    out.append("sent %d" % sent)
    out.append("tries %d" % tries)
    out.append("moved " + "  ".join("%s %+d" % (k, v) for k, v in d.items() if v and k != "slots_in_use"))
    return out

for line in sys.stdin:
    cmd = line.split()
    try:
        if cmd[0] == "case":
            out = run_case(cmd[1], *cmd[2:4])
        elif cmd[0] == "udp":
            # The first datagram (waited for), then any more already queued.
            got = []
            udp.settimeout(10)
            try:
                while True:
                    d = udp.recv(65536)
                    got.append("%d %s" % (len(d), hashlib.sha256(d).hexdigest()))
                    udp.settimeout(0.2)
            except (socket.timeout, BlockingIOError):
                pass
            out = ["got " + (got[0] if got else "timeout"), "want " + str(want_udp),
                   "count %d" % len(got), "same %d" % len(set(got))]
        elif cmd[0] == "slots":
            wait(lambda: stat("slots_in_use") == 0, 10)
            out = ["slots_in_use %d" % stat("slots_in_use")]
        elif cmd[0] == "frag":
            t0 = time.monotonic()
            wait(lambda: frag() == (0, 0), 60)
            out = ["frag %d %d" % frag(), "waited_ms %d" % ((time.monotonic() - t0) * 1000)]
        else:
            out = ["error unknown command"]
    except Exception as e:
        out = ["error %r" % e]
    print("\n".join(out + ["END"]), flush=True)
PY

# tcp_xfer's process substitution needs /dev/fd (the guest's /dev is devtmpfs).
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
if [ "${ZCFRAG_FRONT:-stacked}" = native ] && [ "$ZCNET_TOPO" != virtio2 ]; then
  t_skip "bad input on the native front end" "needs the virtio2 topology"
  t_done; exit
fi
MAC_A=$(ip netns exec a cat /sys/class/net/va/address)
if [ "${ZCFRAG_FRONT:-stacked}" = native ]; then
  # va's virtio-net device on zcfrag's native front end, named zf0.
  VD=$(basename "$(ip netns exec a readlink -f /sys/class/net/va/device)")
  t_run "insmod zcfrag devices=$VD" insmod "$(ko zcfrag)" devices="$VD"
  echo "$VD" > /sys/bus/virtio/drivers/virtio_net/unbind
  echo "$VD" > /sys/bus/virtio/drivers/zcfrag/bind
  d=$(vdev_netdev "$VD")
  t_run "va's device bound to the native front end, as zf0" sh -c "ip link set '$d' netns a && ip -n a link set '$d' name zf0"
else
  t_run "insmod zcfrag" insmod "$(ko zcfrag)"
  t_run "ip link add zf0 link va type zcfrag" ip -n a link add zf0 link va type zcfrag
  ip -n a addr flush dev va
fi
ip -n a addr add "$ZC_IP_A/24" dev zf0
ip -n a link set zf0 up
ip netns exec a sysctl -qw net.ipv4.ipfrag_time=1
HIGH=$(ip netns exec a sysctl -n net.ipv4.ipfrag_high_thresh)
echo "# ns a: ipfrag_high_thresh $HIGH, ipfrag_time $(ip netns exec a sysctl -n net.ipv4.ipfrag_time)"
alive "setup"
# settle: drop the caches, and drain the per-CPU page lists (compaction
# does), so that free memory compares before and after.
settle() { echo 3 > /proc/sys/vm/drop_caches; echo 1 > /proc/sys/vm/compact_memory; }
settle
avail0=$(meminfo MemAvailable) slab0=$(meminfo SUnreclaim)
coproc AGENT { python3 /tmp/zf-agent.py "$MAC_A" 2>/tmp/zf-agent.err; }

# --- positive control: a clean crafted train is speculated and delivered ---
inject control zc_successful
ge "control: crafted clean UDP train speculated to completion" 1 zc_successful
tries=${D[tries]}
ask udp
t_expect "control: delivered intact" "${D[want]}" "${D[got]}"
t_expect "control: delivered once per try, all intact" "$tries 1" "${D[count]} ${D[same]}"

# --- truncated: total_len larger than the frame ---
inject truncated
ge "truncated: dropped by the kernel as truncated" 2 kernel_InTruncatedPkts
t_expect "truncated: no speculation started" 0 "${D[zc_potential]}"
distinct truncated rx_bad_truncated 2
alive truncated

# --- fewer than 20 bytes of IP header ---
inject short_header
ge "short header: dropped by the kernel as a header error" 2 kernel_InHdrErrors
t_expect "short header: no speculation started" 0 "${D[zc_potential]}"
distinct short_header rx_bad_header 2
alive short_header

# --- overlapping offsets ---
inject overlap zc_miss_duplicate kernel_ReasmOverlaps
ge "overlap: counted as a speculation miss" 1 zc_miss_duplicate
ge "overlap: held fragment handed to the normal path" 1 rx_fallback_fragments
ge "overlap: the kernel's reassembly saw the overlap" 1 kernel_ReasmOverlaps
alive overlap

# --- mismatched IDs inside one train ---
inject mismatched_id zc_miss_other_packet
ge "mismatched ID: counted as a speculation miss" 1 zc_miss_other_packet
ge "mismatched ID: held fragment handed to the normal path" 1 rx_fallback_fragments
alive mismatched_id

# --- zero-length fragments ---
inject zero_length zc_failed
ge "zero length at offset 0: counted as a miss (UDP and TCP)" 2 zc_miss_bad_length zc_miss_header_length
ge "zero length mid-train: the first empty fragment ends the train (bad_length, not placed)" 1 zc_failed
t_expect "zero length mid-train: nothing completes" 0 "${D[zc_successful]:-0}"
ge "zero length mid-train: the held first fragment goes to the normal path" 1 rx_fallback_fragments
distinct zero_length rx_empty_fragments 18
alive zero_length

# --- IP options (IHL 6..15) ---
inject ip_options
ge "IP options: all 10 counted" 10 rx_bad_header zc_miss_ip_options
t_expect "IP options: no speculation started" 0 "${D[zc_potential]}"
distinct ip_options zc_miss_ip_options 10
inject ip_options_mid
ask udp
t_expect "IP options in a middle fragment: datagram delivered intact" "${D[want]}" "${D[got]}"
t_expect "IP options in a middle fragment: delivered once" 1 "${D[count]}"
alive ip_options

# --- reassembled size over 64 KiB ---
inject oversize zc_miss_too_big kernel_ReasmFails
ge "oversize: the fragments ending past 65535 counted" 2 rx_bad_header
ge "oversize: the train left the page (miss)" 1 zc_miss_too_big
ge "oversize: the kernel refused to reassemble it" 1 kernel_ReasmFails
distinct oversize rx_bad_oversize 2
alive oversize

# --- a flood of first fragments that never complete ---
# What the device under zf0 delivered (va's rx_packets; on the native front
# end zf0 is the device) and, over veth, what it dropped (a frame va's
# backlog refused is counted by veth on the sender, vb's tx_dropped). A
# virtio device drops what finds its ring empty without telling the guest.
lowdev=va
[ "${ZCFRAG_FRONT:-stacked}" = native ] && lowdev=zf0
lower() {
  echo "$(ip netns exec a cat /sys/class/net/$lowdev/statistics/rx_packets) $(ip netns exec b cat /sys/class/net/vb/statistics/tx_dropped)"
}
read -r low0 drop0 <<< "$(lower)"
inject flood
read -r low1 drop1 <<< "$(lower)"
delivered=$((low1 - low0)) dropped=$((drop1 - drop0))
echo "# flood: ${D[sent]} frames in ${D[flood_ms]} ms; max slots_in_use ${D[max_slots]}, max FRAG memory ${D[max_frag_mem]} (limit $HIGH), ${D[samples]} samples; $lowdev delivered $delivered, vb counted $dropped dropped"
seen=${D[rx_ipv4_fragments]:-0}
# The bounds below prove something only if the flood filled the slots and
# the normal reassembly: zf0 must have seen more first fragments than
# ipfrag_high_thresh holds. How much more depends on how fast this guest
# receives (a loaded host or a KASAN kernel falls behind the sender, and the
# device drops the rest), so what zf0 saw is bound by what its device
# delivered, not by what was sent: every IPv4 frame the device delivered
# reached zf0 (the rest of what it delivered, at most 64, is other traffic:
# neighbour discovery and the like), and over veth every frame sent was
# delivered or counted dropped.
[ $((seen * 1480)) -gt "$HIGH" ] && t_ok "flood: zf0 saw more first fragments than the reassembly memory holds ($seen of ${D[sent]} sent)" ||
  t_fail "flood: zf0 saw more first fragments than the reassembly memory holds" "$seen of ${D[sent]} sent, $((HIGH / 1480)) needed"
[ "$seen" -le "$delivered" ] && [ "$seen" -ge $((delivered - 64)) ] && t_ok "flood: zf0 saw what its device delivered ($seen of $delivered)" ||
  t_fail "flood: zf0 saw what its device delivered" "$seen of $delivered"
if [ "$ZCNET_TOPO" = veth ]; then
  t_expect "flood: over veth every frame sent was delivered or counted dropped" "${D[sent]}" "$((seen + dropped))"
fi
t_expect "flood: each first fragment took a slot or was counted rx_no_slot" "$seen" $(( ${D[zc_potential]:-0} + ${D[rx_no_slot]:-0} ))
ge "flood: more flows than slots (rx_no_slot)" 1 rx_no_slot
t_expect "flood: every held fragment went to the normal path" "${D[zc_potential]}" "${D[rx_fallback_fragments]}"
t_expect "flood: every speculation counted as failed" "${D[zc_potential]}" "${D[zc_failed]}"
[ "${D[max_slots]:-99}" -le 8 ] && t_ok "flood: slots_in_use never above 8 (max ${D[max_slots]})" || t_fail "flood: slots_in_use never above 8" "max ${D[max_slots]:-?}"
# The kernel checks the limit before it adds a new queue and its fragment
# (inet_frag_find: "frag_mem_limit() > high_thresh"), so the memory may pass
# the limit by one queue and fragment per CPU: 16 KiB per CPU of slack.
lim=$((HIGH + 16384 * $(nproc)))
[ "${D[max_frag_mem]:-$((lim + 1))}" -le "$lim" ] && t_ok "flood: FRAG memory within ipfrag_high_thresh + one fragment per CPU (max ${D[max_frag_mem]}, limit $HIGH)" || t_fail "flood: FRAG memory within ipfrag_high_thresh + one fragment per CPU" "max ${D[max_frag_mem]:-?} > $lim"
[ "${D[max_frag_mem]:-0}" -gt $((HIGH / 2)) ] && t_ok "flood: the normal reassembly filled up (sampled ${D[max_frag_mem]})" || t_fail "flood: the normal reassembly filled up" "sampled ${D[max_frag_mem]:-?}"

# --- afterwards ---
ask slots
t_expect "slots_in_use back to 0 after the timeout" 0 "${D[slots_in_use]}"
ask frag
echo "# normal reassembly drained in ${D[waited_ms]} ms"
t_expect "normal reassembly empty after ipfrag_time (FRAG: inuse memory)" "0 0" "${D[frag]}"
eval "exec ${AGENT[1]}>&-"
wait "$AGENT_PID"
[ -s /tmp/zf-agent.err ] && sed 's/^/# agent: /' /tmp/zf-agent.err
tcp_xfer a b "$ZC_IP_B" 4194304 "TCP 4 MiB zcfrag -> stack after the bad input, md5"
tcp_xfer b a "$ZC_IP_A" 4194304 "TCP 4 MiB stack -> zcfrag after the bad input, md5"
ip netns exec a ethtool -S zf0 | awk 'NR > 1 && $2 != 0 { printf "%s %s ", $1, $2 }' | fold -w 200 | sed 's/^/# /'; echo
if [ "${ZCFRAG_FRONT:-stacked}" = native ]; then
  t_run "unbind zf0's device from zcfrag" sh -c "echo $VD > /sys/bus/virtio/drivers/zcfrag/unbind"
else
  t_run "ip link del zf0" ip -n a link del zf0
fi
t_run "rmmod zcfrag" rmmod zcfrag
rm -f /tmp/tx /tmp/rx-* /tmp/zf-*
settle
avail1=$(meminfo MemAvailable) slab1=$(meminfo SUnreclaim)
echo "# memory: MemAvailable $avail0 -> $avail1 kB, SUnreclaim $slab0 -> $slab1 kB"
# Leak smoke check (kmemleak on the debug kernel is the real one): slab within
# 16 MiB; MemAvailable, noisier (page tables, per-CPU lists), within 32 MiB.
[ $((avail0 - avail1)) -le 32768 ] && t_ok "MemAvailable within 32 MiB of before ($(( (avail0 - avail1) / 1024 )) MiB less)" || t_fail "MemAvailable within 32 MiB of before" "$(( (avail0 - avail1) / 1024 )) MiB less"
# A KASAN kernel keeps freed objects in its quarantine, up to 1/32 of RAM,
# and they still count as slab (the debug kernel, 2026-11-28: 21 MiB more
# after the flood, kmemleak clean).
slab_lim=16384 slab_why=
if zcat /proc/config.gz 2>/dev/null | grep -q '^CONFIG_KASAN=y'; then
  q=$(($(meminfo MemTotal) / 32))
  slab_lim=$((slab_lim + q)) slab_why=" + KASAN's quarantine, $((q / 1024)) MiB"
fi
[ $((slab1 - slab0)) -le $slab_lim ] && t_ok "unreclaimable slab within 16 MiB of before$slab_why ($(( (slab1 - slab0) / 1024 )) MiB more)" || t_fail "unreclaimable slab within 16 MiB of before$slab_why" "$(( (slab1 - slab0) / 1024 )) MiB more"
kmemleak_clean "kmemleak: nothing leaked (debug kernel)"
t_done
