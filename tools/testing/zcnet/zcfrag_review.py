#!/usr/bin/env python3
"""Checks for the zcfrag review's defects (zcfrag-review.sh runs it).

Namespace a: zf0 on va (198.18.0.1); namespace b: zf1 on vb (198.18.0.2 and
198.18.0.3). Crafted frames go from b through an AF_PACKET socket on vb (so
they bypass zf1) to va's MAC, where zf0 speculates on them. Each check prints
one line, "ok NAME" or "not ok NAME # REASON", and diagnostics as "# ...";
zcfrag-review.sh turns them into KTAP results.

  zcfrag_review.py VA_MAC CHECK...
"""
import ctypes
import fcntl
import hashlib
import os
import random
import select
import socket
import struct
import sys
import time

SEED = 7
PORT = 9999
PAGE = 4096
A_IP = bytes([198, 18, 0, 1])
B_IP = bytes([198, 18, 0, 2])
B2_IP = bytes([198, 18, 0, 3])
UDP = 17

libc = ctypes.CDLL(None, use_errno=True)


def setns(name):
    fd = os.open("/run/netns/" + name, os.O_RDONLY)
    if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
        sys.exit("setns %s: errno %d" % (name, ctypes.get_errno()))
    os.close(fd)


def say(ok, name, why=""):
    print(("ok %s" % name) if ok else ("not ok %s # %s" % (name, why)), flush=True)


def diag(msg):
    print("# " + msg, flush=True)


class Counters:
    """A device's ethtool -S counters through the ioctl (no fork per read)."""

    SIOCETHTOOL, GSSET_INFO, GSTRINGS, GSTATS, SS_STATS = 0x8946, 0x37, 0x1B, 0x1D, 1

    def __init__(self, dev):
        self.dev = dev.encode()
        self.ctl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        b = ctypes.create_string_buffer(struct.pack("IIQI", self.GSSET_INFO, 0, 1 << self.SS_STATS, 0))
        self.ioctl(b)
        self.n = struct.unpack_from("I", b, 16)[0]
        b = ctypes.create_string_buffer(struct.pack("III", self.GSTRINGS, self.SS_STATS, self.n) + bytes(32 * self.n))
        self.ioctl(b)
        self.names = [b.raw[12 + 32 * i:44 + 32 * i].split(b"\0")[0].decode() for i in range(self.n)]
        self.buf = ctypes.create_string_buffer(8 + 8 * self.n)

    def ioctl(self, buf):
        ifr = struct.pack("16sP", self.dev, ctypes.addressof(buf)).ljust(40, b"\0")
        fcntl.ioctl(self.ctl, self.SIOCETHTOOL, ifr)

    def get(self):
        struct.pack_into("II", self.buf, 0, self.GSTATS, self.n)
        self.ioctl(self.buf)
        return dict(zip(self.names, struct.unpack_from("%dQ" % self.n, self.buf, 8)))


def delta(before, after, *names):
    return sum(after.get(n, 0) - before.get(n, 0) for n in names)


def wait(cond, seconds):
    end = time.monotonic() + seconds
    while not cond() and time.monotonic() < end:
        time.sleep(0.01)
    return cond()


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def iph(src, dst, ident, off, mf, plen, tos=0, proto=UDP):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + plen, ident,
                    (off // 8) | (0x2000 if mf else 0), 64, proto, 0, src, dst)
    return h[:10] + struct.pack("!H", csum(h)) + h[12:]


def udp_payload(src, dst, data, sport=40001):
    u = struct.pack("!HHHH", sport, PORT, 8 + len(data), 0) + data
    pseudo = src + dst + struct.pack("!BBH", 0, UDP, len(u))
    c = csum(pseudo + u) or 0xFFFF
    return u[:6] + struct.pack("!H", c) + u[8:]


class Wire:
    """Crafted frames out of vb (namespace b), at va's MAC."""

    def __init__(self, dmac):
        self.dmac = dmac
        self.pkt = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.pkt.bind(("vb", 0))
        self.smac = self.pkt.getsockname()[4]

    def eth(self, payload, vid=None):
        if vid is None:
            return self.dmac + self.smac + b"\x08\x00" + payload
        return self.dmac + self.smac + struct.pack("!HH", 0x8100, vid) + b"\x08\x00" + payload

    def train(self, ident, data, each, src=B_IP, dst=A_IP, tos=None, vid=None, empty_at=None):
        """Sends one UDP datagram carrying `data` as fragments of `each` payload
        bytes (a multiple of 8); `tos(i)` gives fragment i's TOS byte. With
        `empty_at`, an empty last fragment stands at that offset instead of
        the rest. Returns the number of fragments sent."""
        ip_payload = udp_payload(src, dst, data)
        frames = []
        off = 0
        while off < len(ip_payload):
            n = min(each, len(ip_payload) - off)
            frames.append((off, ip_payload[off:off + n], off + n < len(ip_payload)))
            off += n
        if empty_at is not None:
            frames = [f for f in frames if f[0] < empty_at] + [(empty_at, b"", False)]
        for i, (off, chunk, mf) in enumerate(frames):
            t = tos(i) if tos else 0
            self.pkt.send(self.eth(iph(src, dst, ident, off, mf, len(chunk), tos=t) + chunk, vid))
        return len(frames)


def datagram(i):
    r = random.Random(SEED * 100003 + i)
    return struct.pack("!Q", i) + r.randbytes(PAGE - 8)


class Receiver:
    """UDP socket on 198.18.0.1:9999 in namespace a, with IP_RECVTOS."""

    def __init__(self):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        self.s.bind(("198.18.0.1", PORT))
        self.s.setblocking(False)

    def drain(self):
        while select.select([self.s], [], [], 0)[0]:
            self.s.recvmsg(PAGE + 64, 64)

    def recv(self, timeout):
        """(data, tos) of the next datagram, or None after `timeout` s."""
        if not select.select([self.s], [], [], timeout)[0]:
            return None
        data, anc, _, _ = self.s.recvmsg(PAGE + 64, 64)
        tos = None
        for level, kind, val in anc:
            if level == socket.IPPROTO_IP and kind == socket.IP_TOS:
                tos = val[0]
        return data, tos


def check_long_trains(w, rx, zf0):
    """Defect 2: a lone datagram in 17 fragments (and up to the 33 a slot
    allows) completes at once; beyond that the train misses and the normal
    path still delivers it at once. Before the fix the 17th fragment found
    no room, the engine had already freed the slot, and the 16 held
    fragments stayed until another train came (never, for a lone one)."""
    for each, nfrag, spec in ((256, 17, True), (128, 33, True), (104, 40, False)):
        rx.drain()
        before = zf0.get()
        late = bad = 0
        for k in range(5):
            d = datagram(1000 + k)
            sent = w.train(0x4000 + nfrag * 8 + k, d, each)
            got = rx.recv(3.0)
            if got is None:
                late += 1
            elif got[0] != d:
                bad += 1
        after = zf0.get()
        succ = delta(before, after, "zc_successful")
        many = delta(before, after, "zc_miss_too_many_fragments")
        diag("%d fragments (%d sent): zc_successful +%d, zc_miss_too_many_fragments +%d, "
             "not delivered within 3 s: %d, corrupt %d" % (nfrag, sent, succ, many, late, bad))
        say(sent == nfrag and late == 0 and bad == 0,
            "lone %d-fragment datagrams each delivered at once, intact" % nfrag,
            "%d of 5 not delivered within 3 s, %d corrupt" % (late, bad))
        if spec:
            say(succ == 5, "%d-fragment trains speculated to completion" % nfrag, "zc_successful +%d" % succ)
        else:
            say(many == 5 and succ == 0, "%d-fragment trains miss as too many fragments" % nfrag,
                "zc_miss_too_many_fragments +%d, zc_successful +%d" % (many, succ))
    wait(lambda: zf0.get()["slots_in_use"] == 0, 5)
    say(zf0.get()["slots_in_use"] == 0, "no slot left holding fragments")


def check_vlan(w, rx, zf0):
    """Defect 3: page trains tagged for a VLAN with no device here must not be
    delivered (the untagged control must be)."""
    rx.drain()
    before = zf0.get()
    for k in range(20):
        w.train(0x5000 + k, datagram(2000 + k), 1480, vid=5)
    got = 0
    while rx.recv(0.5) is not None:
        got += 1
    after = zf0.get()
    tagged = delta(before, after, "rx_vlan_tagged")
    diag("tagged VID 5: %d of 20 delivered, rx_vlan_tagged +%d, zc_successful +%d"
         % (got, tagged, delta(before, after, "zc_successful")))
    say(got == 0, "trains tagged for an unconfigured VLAN are not delivered", "%d of 20 delivered" % got)
    say(tagged >= 60, "tagged frames counted in rx_vlan_tagged", "+%d" % tagged)
    rx.drain()
    ok = 0
    for k in range(20):
        d = datagram(2100 + k)
        w.train(0x5100 + k, d, 1480)
        r = rx.recv(3.0)
        ok += r is not None and r[0] == d
    say(ok == 20, "control: the same trains untagged are delivered", "%d of 20" % ok)


def check_ecn(w, rx, zf0):
    """Defect 4: CE on a later fragment marks the datagram (ip_frag_ecn_table),
    and Not-ECT mixed with CE is dropped, as the plain stack does."""
    rx.drain()
    before = zf0.get()
    ce = 0
    for k in range(20):
        d = datagram(3000 + k)
        w.train(0x6000 + k, d, 1480, tos=lambda i: 3 if i == 1 else 2)
        r = rx.recv(3.0)
        ce += r is not None and r[0] == d and r[1] is not None and r[1] & 3 == 3
    after = zf0.get()
    succ = delta(before, after, "zc_successful")
    diag("ECT(0) with CE on the middle fragment: %d of 20 arrive CE, zc_successful +%d" % (ce, succ))
    say(ce == 20, "CE on a later fragment reaches the socket", "%d of 20 CE" % ce)
    say(succ == 20, "those trains were speculated (not the normal path)", "zc_successful +%d" % succ)
    rx.drain()
    before = zf0.get()
    got = 0
    for k in range(10):
        w.train(0x6100 + k, datagram(3100 + k), 1480, tos=lambda i: 3 if i == 2 else 0)
        got += rx.recv(0.3) is not None
    after = zf0.get()
    miss = delta(before, after, "zc_miss_ecn")
    say(got == 0 and miss == 10, "Not-ECT mixed with CE is dropped (zc_miss_ecn)",
        "%d delivered, zc_miss_ecn +%d" % (got, miss))


def check_empty(w, rx, zf0):
    """Minor: an empty fragment ends the train (ip_frag_queue kills the queue
    on one) and never completes a packet."""
    rx.drain()
    before = zf0.get()
    for k in range(5):
        w.train(0x7000 + k, datagram(4000 + k), 1480, empty_at=1480)
    got = 0
    while rx.recv(0.3) is not None:
        got += 1
    after = zf0.get()
    succ = delta(before, after, "zc_successful")
    bad = delta(before, after, "zc_miss_bad_length")
    say(succ == 0 and bad == 5 and got == 0, "an empty last fragment completes nothing",
        "zc_successful +%d, zc_miss_bad_length +%d, delivered %d" % (succ, bad, got))


def check_not_local(w, rx, zf0):
    """Minor: fragments to an address that is not local are not reassembled
    here (they are forwarded or dropped as they are)."""
    before = zf0.get()
    for k in range(5):
        w.train(0x7100 + k, datagram(5000 + k), 1480, dst=bytes([198, 18, 0, 77]))
    wait(lambda: delta(before, zf0.get(), "rx_not_local") >= 5, 3)
    after = zf0.get()
    nl = delta(before, after, "rx_not_local")
    pot = delta(before, after, "zc_potential")
    say(nl == 5 and pot == 0, "fragments for another host are passed on, not speculated",
        "rx_not_local +%d, zc_potential +%d" % (nl, pot))


def check_ip_id(zf0_ns_a_send, cap):
    """Defect 5: IDs toward two destinations come from independent,
    unpredictable counters. The old device-wide counter continued at every
    switch between the two destinations (562 of 1402 in the review)."""
    def first_fragment(f):
        """(destination, ID) of a first fragment zf0 sent, else None."""
        if len(f) < 34 or f[12:14] != b"\x08\x00" or f[26:30] != A_IP or f[23] != UDP:
            return None
        ident, frag = struct.unpack("!HH", f[18:22])
        return (f[30:34], ident) if frag & 0x1FFF == 0 and frag & 0x2000 else None

    def take(timeout):
        while select.select([cap], [], [], timeout)[0]:
            x = first_fragment(cap.recv(2048))
            if x:
                seen.append(x)

    seen = []
    take(0)
    seen.clear()
    for i in range(400):
        dst = "198.18.0.2" if (i // 2) % 2 == 0 else "198.18.0.3"
        zf0_ns_a_send.sendto(b"\x5a" * 4000, (dst, 9))
        take(0)
    end = time.monotonic() + 3
    while time.monotonic() < end and len(seen) < 400:
        take(0.2)
    switches = cont = 0
    for (d0, i0), (d1, i1) in zip(seen, seen[1:]):
        if d0 != d1:
            switches += 1
            cont += i1 == (i0 + 1) & 0xFFFF
    first = {}
    for d, i in seen:
        first.setdefault(d, i)
    diag("IP IDs: %d first fragments captured, %d switches of destination, %d continue "
         "the other destination's ID; first IDs %s" % (len(seen), switches, cont, sorted(first.values())))
    say(len(seen) >= 380 and switches >= 150, "captured the fragments of both destinations",
        "%d captured, %d switches" % (len(seen), switches))
    say(cont <= switches // 20, "IDs toward two destinations are independent",
        "%d of %d switches continue one counter" % (cont, switches))
    say(len(first) == 2 and all(v > 1 for v in first.values()),
        "IDs do not start from a guessable 0", "first IDs %s" % sorted(first.values()))


def check_tx_options(snd_opts, zf0):
    """Minor: a page-sized packet with IP options is counted as such (the
    transmit path used to read only 34 header bytes and called it malformed)."""
    before = zf0.get()
    snd_opts.sendto(b"\x11" * 3000, ("198.18.0.2", 9))
    wait(lambda: delta(before, zf0.get(), "tx_drop_ip_options", "tx_drop_malformed") >= 1, 3)
    after = zf0.get()
    o = delta(before, after, "tx_drop_ip_options")
    m = delta(before, after, "tx_drop_malformed")
    say(o == 1 and m == 0, "transmit counts a packet with IP options in tx_drop_ip_options",
        "tx_drop_ip_options +%d, tx_drop_malformed +%d" % (o, m))


def main():
    dmac = bytes.fromhex(sys.argv[1].replace(":", ""))
    checks = sys.argv[2:]
    setns("b")
    w = Wire(dmac)
    # ETH_P_ALL: taps see frames before zf1's rx_handler consumes them.
    cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    cap.bind(("vb", 0))
    setns("a")
    zf0 = Counters("zf0")
    rx = Receiver()
    snd = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    snd_opts = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    snd_opts.setsockopt(socket.IPPROTO_IP, socket.IP_OPTIONS, b"\x01\x01\x01\x00")
    for c in checks:
        t0 = time.monotonic()
        if c == "long":
            check_long_trains(w, rx, zf0)
        elif c == "vlan":
            check_vlan(w, rx, zf0)
        elif c == "ecn":
            check_ecn(w, rx, zf0)
        elif c == "empty":
            check_empty(w, rx, zf0)
        elif c == "notlocal":
            check_not_local(w, rx, zf0)
        elif c == "ipid":
            check_ip_id(snd, cap)
        elif c == "txopts":
            check_tx_options(snd_opts, zf0)
        else:
            say(False, "check " + c, "unknown check")
        diag("%s took %.1f s" % (c, time.monotonic() - t0))


if __name__ == "__main__":
    main()
