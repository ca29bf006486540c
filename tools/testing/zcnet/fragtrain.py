#!/usr/bin/env python3
"""Seeded page-sized UDP datagrams as IPv4 fragment trains, with interferers.

Used by zcfrag-table1.sh (the paper's Table 1) and zcfrag-interleave.sh.

  fragtrain.py recv IP COUNT INTERFERERS PROGRESS
      UDP receiver on IP:7999 (run in the receiving namespace): checks every
      datagram against its seeded content, publishes the highest sequence
      number seen in the file PROGRESS (for the sender's window) and prints
      one JSON line of results.
  fragtrain.py send raw IFACE DST_MAC SRC_IP DST_IP COUNT INTERFERERS WINDOW PROGRESS
      crafts every fragment itself and sends it on IFACE (an AF_PACKET socket
      bypassing zcfrag), inserting the interferers at seeded positions;
      prints one JSON line (the schedule: how many interferers landed inside
      trains and how many trains they broke).
  fragtrain.py send pairs IFACE DST_MAC SRC_IP DST_IP COUNT SRC2_IP WINDOW PROGRESS
      crafted like raw, no interferers, but datagrams 2j and 2j+1 (the
      second from SRC2_IP) go out with their fragments interleaved one by
      one: A0 B0 A1 B1 A2 B2 (two flows when SRC2_IP differs, else one).
  fragtrain.py send kernel - - SRC_IP DST_IP COUNT 0 WINDOW PROGRESS
      the same datagrams through an ordinary UDP socket (the kernel, and
      zcfrag's transmit path, fragment them).

Datagram i: UDP payload of 4096 bytes (so its data fills a page exactly):
8 bytes of i, then block i % 61 of a pool of seeded 4088-byte blocks. It
leaves as three fragments (IP payload 1480 + 1480 + 1144, the train zcfrag's
transmit path builds at a lower MTU of 1500), IP ID i mod 32768.

Interferer k: a 56-byte UDP datagram of the same flow (same addresses, UDP)
with IP ID 32768 + k mod 32768, in two fragments sent back to back:
  I0  offset 0, 24 bytes, MF, with 4 bytes of IP options (NOP NOP NOP EOL)
  I1  offset 24, 32 bytes (last)
Inserted inside a train (after its first or second fragment), I0 is a
fragment of another packet of the flow mid-train: the speculation ends
(zc_miss_other_packet) and the held fragments go to the kernel's reassembly;
I1 then finds no train and passes. Between trains (before a train's first
fragment) I0 finds no train; zcfrag does not speculate on a packet with IP
options (counted as zc_miss_ip_options only, no failed speculation), so an
interferer costs exactly one failed speculation when it lands inside a train
and none otherwise, and the kernel reassembles the interferer itself (the
receiver counts it). A second interferer inside an already broken train also
finds no train. Frames are at least 60 bytes, so no Ethernet padding.
"""
import json
import mmap
import os
import random
import socket
import struct
import sys
import time
from array import array

SEED = 7
PORT = 7999
SPORT = 40001
PAGE = 4096
NPOOL = 61
BLOCK = PAGE - 8
FRAG = (0, 1480, 2960, 8 + PAGE)  # IP payload offsets of the three fragments
IDATA = 48  # interferer UDP data bytes


def pool():
    r = random.Random(SEED)
    return [r.randbytes(BLOCK) for _ in range(NPOOL)], r.randbytes(IDATA - 8)


def wsum(b):
    """Sum of the big-endian 16-bit words of b (even length)."""
    a = array("H", b)
    if sys.byteorder == "little":
        a.byteswap()
    return sum(a)


def fold(s):
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def ip_header(src, dst, ident, off, mf, plen, opts=b""):
    ihl = 5 + len(opts) // 4
    frag = (off // 8) | (0x2000 if mf else 0)
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + plen, ident, frag, 64, 17, 0, src, dst) + opts
    c = ~fold(wsum(h)) & 0xFFFF
    return h[:10] + struct.pack("!H", c) + h[12:]


def udp(src, dst, data, dsum=None):
    """UDP header + data, with the checksum (dsum: the data's word sum)."""
    ln = 8 + len(data)
    s = wsum(src + dst) + 17 + ln + SPORT + PORT + ln + (wsum(data) if dsum is None else dsum)
    c = ~fold(s) & 0xFFFF
    return struct.pack("!HHHH", SPORT, PORT, ln, c or 0xFFFF) + data


def progress_map(path, create):
    if create:
        with open(path, "wb") as f:
            f.write(b"\0" * 16)
    f = open(path, "r+b")
    return mmap.mmap(f.fileno(), 16)


def recv(ip, count, ninterf, path):
    blocks, idata = pool()
    mm = progress_map(path, True)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE
    s.bind((ip, PORT))
    s.settimeout(0.5)
    open(path + ".ready", "w").close()
    seen = bytearray(count)
    good = dup = bad = inter = inter_bad = 0
    hi = -1
    buf = bytearray(65536)
    mv = memoryview(buf)
    t_first = t_last = None
    idle_since = time.monotonic()
    deadline = time.monotonic() + 3600
    while good < count or inter < ninterf:
        try:
            n = s.recv_into(buf)
        except socket.timeout:
            now = time.monotonic()
            # The sender is done (flag in the progress file) and nothing came
            # for 3 s: what is missing is lost. Bounded in any case.
            if (mm[8] and now - idle_since > 3) or now > deadline:
                break
            continue
        idle_since = time.monotonic()
        if n == PAGE:
            (i,) = struct.unpack_from("!Q", buf)
            if i < count and mv[8:PAGE] == blocks[i % NPOOL]:
                if seen[i]:
                    dup += 1
                else:
                    seen[i] = 1
                    good += 1
                    t_last = idle_since
                    if t_first is None:
                        t_first = idle_since
                if i > hi:
                    hi = i
                    mm[0:8] = struct.pack("<q", hi + 1)
            else:
                bad += 1
        elif n == IDATA:
            if mv[8:IDATA] == idata:
                inter += 1
            else:
                inter_bad += 1
        else:
            bad += 1
        if good == count:
            mm[0:8] = struct.pack("<q", count)
    el = (t_last - t_first) if good > 1 else 0.0
    print(json.dumps({
        "received": good, "duplicates": dup, "corrupt": bad,
        "interferers_received": inter, "interferers_corrupt": inter_bad,
        "missing": count - good, "seconds": round(el, 3),
        "mb_per_s": round(good * PAGE / el / 1e6, 2) if el > 0 else 0.0,
    }))


def schedule(count, ninterf):
    """Seeded positions: interferer k goes into gap g of train i (0: before
    its first fragment, 1: after the first, 2: after the second)."""
    r = random.Random(SEED * 1000003 + ninterf)
    at = {}
    for k in range(ninterf):
        i, g = r.randrange(count), r.randrange(3)
        at.setdefault((i, g), []).append(k)
    inside = sum(len(v) for (i, g), v in at.items() if g)
    first_gap = {}
    for (i, g) in at:
        if g and (i not in first_gap or g < first_gap[i]):
            first_gap[i] = g
    return at, {
        "interferers": ninterf, "inside": inside, "between": ninterf - inside,
        "trains_hit": len(first_gap),
        # Fragments a broken train held when it broke: 1 or 2.
        "held_at_break": sum(first_gap.values()),
    }


def send(mode, iface, dmac, src, dst, count, ninterf, window, path):
    blocks, idata = pool()
    bsum = [wsum(b) for b in blocks]
    sa, da = socket.inet_aton(src), socket.inet_aton(dst)
    for _ in range(1000):  # bounded wait for the receiver to be bound
        if os.path.exists(path + ".ready"):
            break
        time.sleep(0.01)
    mm = progress_map(path, False)
    if mode in ("raw", "pairs"):
        if mode == "pairs":
            sa2 = socket.inet_aton(ninterf)
            ninterf = 0
        at, info = schedule(count, ninterf)
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((iface, 0))
        with open(f"/sys/class/net/{iface}/address") as f:
            smac = bytes.fromhex(f.read().strip().replace(":", ""))
        eth = bytes.fromhex(dmac.replace(":", "")) + smac + b"\x08\x00"
        opts = b"\x01\x01\x01\x00"

        def interferer(k):
            ident = 0x8000 | (k & 0x7FFF)
            u = udp(sa, da, struct.pack("!Q", k) + idata)
            s.send(eth + ip_header(sa, da, ident, 0, True, 24, opts) + u[:24])
            s.send(eth + ip_header(sa, da, ident, 24, False, 32) + u[24:])
    else:
        at, info = {}, {"interferers": 0, "inside": 0, "between": 0, "trains_hit": 0, "held_at_break": 0}
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        s.bind((src, SPORT))
    stalls = 0
    t0 = time.monotonic()
    for i in range(count):
        if i & 7 == 0:
            # Window: at most `window` datagrams ahead of the receiver; a
            # stall (the window's datagrams all lost) gives up after 1 s.
            t_wait = None
            while i - struct.unpack_from("<q", mm)[0] > window:
                now = time.monotonic()
                if t_wait is None:
                    t_wait = now
                elif now - t_wait > 1:
                    stalls += 1
                    break
                time.sleep(0.0002)
        seq = struct.pack("!Q", i)
        if mode == "pairs":
            if i & 1:
                continue
            js = [j for j in (i, i + 1) if j < count]
            us = [udp(sa if j == i else sa2, da, struct.pack("!Q", j) + blocks[j % NPOOL],
                      wsum(struct.pack("!Q", j)) + bsum[j % NPOOL]) for j in js]
            for g in range(3):
                for j, u in zip(js, us):
                    a, b = FRAG[g], FRAG[g + 1]
                    src_j = sa if j == i else sa2
                    s.send(eth + ip_header(src_j, da, j & 0x7FFF, a, g < 2, b - a) + u[a:b])
            continue
        if mode == "kernel":
            s.sendto(seq + blocks[i % NPOOL], (dst, PORT))
            continue
        u = udp(sa, da, seq + blocks[i % NPOOL], wsum(seq) + bsum[i % NPOOL])
        ident = i & 0x7FFF
        for g in range(3):
            for k in at.get((i, g), ()):
                interferer(k)
            a, b = FRAG[g], FRAG[g + 1]
            s.send(eth + ip_header(sa, da, ident, a, g < 2, b - a) + u[a:b])
    info["sent"] = count
    info["send_seconds"] = round(time.monotonic() - t0, 3)
    info["window_stalls"] = stalls
    mm[8] = 1
    print(json.dumps(info))


def main():
    a = sys.argv[1:]
    if a[0] == "recv":
        recv(a[1], int(a[2]), int(a[3]), a[4])
    elif a[0] == "send":
        send(a[1], a[2], a[3], a[4], a[5], int(a[6]), a[7] if a[1] == "pairs" else int(a[7]), int(a[8]), a[9])
    elif a[0] == "schedule":
        print(json.dumps(schedule(int(a[1]), int(a[2]))[1]))
    else:
        sys.exit("usage: see the docstring")


if __name__ == "__main__":
    main()
