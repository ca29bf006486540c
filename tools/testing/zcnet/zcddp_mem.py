#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""zcddp's registered memory under attack (issue 45, the memory items), for
zcddp.sh; run as python3 -m zcddp_mem MODE ARGS. Each connection is a
loopback one in the caller's namespace (a local user needs nothing more):
the zcddp side and, where a peer is needed, a raw iWARP peer built from
zcddp_peer's frames, both in this process.

  kpf PATH             maps PATH read-only, touches its pages: "pages=N
                       dirty=D" (/proc/kpageflags; root only)
  rofile PATH PORT     registers PATH's read-only shared mapping (remote
                       read), deregisters it: "rofile reg=ok dereg=ok
                       wreg=ERR" (a registration with write access must fail)
  rread PORT N         a peer's 1 MiB RDMA Read of a remote-read
                       registration stalls (the peer stops reading); the
                       application deregisters it, writes 'L' into the
                       memory and registers it N times with local write
                       only, keeping those that got the old STag; the peer
                       reads on: "rread collided=C A=a L=l term=T"
  stall PORT           a peer's 1 MiB RDMA Read stalls with pages lent to
                       TCP (zctx=2); the application deregisters (SO_SNDTIMEO
                       1 s; EBUSY: registers another buffer, then calls
                       again), and once that returned 0 writes 'Z' into the
                       memory; the peer reads on: "stall first=ERR
                       pinned_during=P dereg=ok A=a Z=z"
  closestall PORT [L [read]]
                       the same stalled Read; the application closes the
                       socket (SO_LINGER L seconds, the Read of 48 KiB;
                       none without L; with read the peer starts reading
                       just before the close)
                       without deregistering, then
                       writes 'Z' into the memory; the peer reads on:
                       "closestall pinned_during=P close_ms=T pinned_after=Q
                       A=a Z=z end=E"
  bigreg PORT LEN      REG_MR of LEN bytes (far beyond RLIMIT_MEMLOCK): the
                       errno name, and the pages the kernel allocated
                       meanwhile ("pgalloc=N", /proc/vmstat)
  children PORT N KIB  N children register KIB KiB each on one shared
                       socket and exit: "children ok=K refused=R"
  pinlock PORT MIB     a child registers MIB MiB of untouched memory (its
                       pages faulted in as they are pinned); once it has
                       faulted in 8 MiB, this process reads
                       /proc/net/zcddp_conns, then ZCDDP_INFO of the
                       socket, each noting the child's resident memory when
                       it returned: "pinlock listed=L list_kib=K
                       info_kib=I region_kib=R reg=ok" (K or I below R:
                       returned while the pinning was under way; the
                       child stays until both were read)
  termclose PORT MODE  a zcddp responder with a receive posted; its raw
                       peer sends a Terminate (MODE received) or a Send to
                       queue 5 (sent: zcddp terminates), reads what comes
                       back until the end of the stream (5 s at most),
                       then sends 200 FPDUs of 1 KiB: "termclose term=T
                       end=E state=S inq=Q status=C runs=R discarded=D
                       flood=F" (a Terminate from zcddp; how its stream
                       ended; the zcddp socket's TCP state and unread
                       bytes; the receive's completion status; its work
                       item's runs and the bytes it dropped meanwhile)
"""
import ctypes
import errno
import mmap
import os
import socket
import struct
import sys
import threading
import time

from zcddp_peer import E, KEY_REQ, Zc, acked, fpdu, read_exact, read_frame, frame, untagged

SOL_ZCDDP, REG_MR, DEREG_MR = 301, 3, 4
ACC_LW, ACC_RR = 0x1, 0x4
TCP_ULP = 31
L_READ = 1 << 20


def ename(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def reg(s, addr, n, access):
    stag = ctypes.c_uint32()
    s.setsockopt(SOL_ZCDDP, REG_MR, struct.pack("QQIIQ", addr, n, access, 0,
                                                ctypes.addressof(stag)))
    return stag.value


def dereg(s, stag):
    s.setsockopt(SOL_ZCDDP, DEREG_MR, struct.pack("I", stag))


def addr_of(m):
    return ctypes.addressof(ctypes.c_char.from_buffer(m))


def stat(name):
    for l in open("/proc/net/zcddp_stat"):
        k, v = l.split()
        if k == name:
            return int(v)
    return -1


def pair(port, rcvbuf=None):
    """A loopback TCP connection: (the side that connected, the accepted
    side)."""
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", port))
    l.listen(1)
    c = socket.socket()
    if rcvbuf:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    c.connect(("127.0.0.1", port))
    s, _ = l.accept()
    l.close()
    return c, s


def kpf(path):
    n = os.path.getsize(path) // mmap.PAGESIZE
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), n * mmap.PAGESIZE, mmap.MAP_SHARED, mmap.PROT_READ)
    # The mapping's address, from /proc/self/maps (a read-only mmap cannot
    # be taken by from_buffer).
    base = None
    for line in open("/proc/self/maps"):
        w = line.split()
        if len(w) >= 6 and w[5] == path:
            base = int(w[0].split("-")[0], 16)
            break
    total = 0
    for i in range(n):
        total += m[i * mmap.PAGESIZE]  # faults it in
    dirty = 0
    with open("/proc/self/pagemap", "rb") as pm, open("/proc/kpageflags", "rb") as kf:
        for i in range(n):
            pm.seek((base // mmap.PAGESIZE + i) * 8)
            e = struct.unpack("<Q", pm.read(8))[0]
            if not e >> 63:
                print("page %d not present (%x, base %x)" % (i, e, base))
                return 1
            kf.seek((e & ((1 << 55) - 1)) * 8)
            if struct.unpack("<Q", kf.read(8))[0] >> 4 & 1:
                dirty += 1
    m.close()
    print("pages=%d dirty=%d" % (n, dirty))
    return 0


def rofile(path, port):
    c, s = pair(port)
    s.setsockopt(socket.IPPROTO_TCP, TCP_ULP, b"zcddp")
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    a = libc_mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd)
    out = {}
    try:
        st = reg(s, a, size, ACC_RR)
        out["reg"] = "ok"
        try:
            dereg(s, st)
            out["dereg"] = "ok"
        except OSError as e:
            out["dereg"] = ename(e)
    except OSError as e:
        out["reg"] = ename(e)
    try:
        st = reg(s, a, size, ACC_LW)
        out["wreg"] = "ok"
        dereg(s, st)
    except OSError as e:
        out["wreg"] = ename(e)
    s.close()
    c.close()
    os.close(fd)
    print("rofile reg=%s dereg=%s wreg=%s" % (out.get("reg"), out.get("dereg"), out.get("wreg")))
    return 0


def tcp_info(s):
    """(bytes sent, bytes not sent, the peer's window) of s (struct
    tcp_info: tcpi_notsent_bytes at 144, tcpi_bytes_sent at 200,
    tcpi_snd_wnd at 228)."""
    b = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    if len(b) < 232:
        return None
    return (struct.unpack_from("Q", b, 200)[0], struct.unpack_from("I", b, 144)[0],
            struct.unpack_from("I", b, 228)[0])


def read_peer(c, out):
    """Reads the zcddp side's FPDUs (no CRC, no markers) until the Read
    Response's last segment, a Terminate, the end or 10 s of silence:
    counts the payload bytes by value into out."""
    c.settimeout(10)
    try:
        while True:
            n = struct.unpack(">H", read_exact(c, 2))[0]
            rest = read_exact(c, n + (-(2 + n)) % 4 + 4)
            u = rest[:n]
            op = u[1] & 0x0F
            if op == 2:
                for ch in set(u[14:]):
                    out[ch] = out.get(ch, 0) + u[14:].count(ch)
                if u[0] & 0x40:
                    out["last"] = 1
                    return
            elif op == 7:
                out["term"] = "%d/%d/%d" % (u[18] >> 4, u[18] & 0xF, u[19])
                return
    except (socket.timeout, EOFError, ConnectionError) as e:
        out["end"] = type(e).__name__


def stalled_read(port, sndtimeo_s=None, size=L_READ):
    """A zcddp responder (the accepted side) and a raw initiator whose
    1 MiB RDMA Read of a remote-read registration ('A') stalls: the
    initiator reads nothing until told. (c, s, z, memory, STag)."""
    c, s = pair(port, rcvbuf=16384)
    # Small: TCP takes far less than the 1 MiB Read while it stalls.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32768)
    if sndtimeo_s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", sndtimeo_s, 0))
    c.sendall(frame(KEY_REQ, E, 2, b"", (1, 1)))
    z = Zc(s, 2, False, 1)
    key, _, _, _ = read_frame(c)
    m = mmap.mmap(-1, L_READ)
    m.write(b"A" * L_READ)
    stag = reg(s, addr_of(m), L_READ, ACC_RR)
    rr = struct.pack(">IQIIQ", 0xD00D, 0, size, stag, addr_of(m))
    c.sendall(fpdu(untagged(1, 1, 1, 0) + rr, False, False))
    # Stalled: the peer's window closed with bytes queued behind it
    # (bounded wait on a state, 30 s).
    end = time.monotonic() + 30
    while time.monotonic() < end:
        i = tcp_info(s)
        if i and i[0] > 8192 and i[1] > 0 and i[2] == 0:
            break
        time.sleep(0.01)
    else:
        print("# no stall: tcp_info", tcp_info(s))
    return c, s, z, m, stag


def rread(port, n):
    c, s, z, m, stag = stalled_read(port)
    dereg(s, stag)
    m.seek(0)
    m.write(b"L" * L_READ)
    collided = 0
    for _ in range(n):
        st = reg(s, addr_of(m), L_READ, ACC_LW)
        if st == stag:
            collided += 1
        else:
            dereg(s, st)
    out = {}
    read_peer(c, out)
    print("rread collided=%d A=%d L=%d term=%s" % (collided, out.get(ord("A"), 0),
                                                   out.get(ord("L"), 0), out.get("term", "none")))
    del z
    return 0


def stall(port):
    c, s, z, m, stag = stalled_read(port, sndtimeo_s=1)
    out = {}
    reader = threading.Thread(target=read_peer, args=(c, out))
    first = "ok"
    try:
        dereg(s, stag)
    except OSError as e:
        first = ename(e)
    # Pages still pinned now, TCP holding the lent ones (1 MiB: 256).
    pinned = stat("ZcddpPinnedPages")
    if first == "ok":
        # Deregistered: the memory is the application's again.
        m.seek(0)
        m.write(b"Z" * L_READ)
        reader.start()
        final = "ok"
    else:
        # Another registration meanwhile (dead ones are dropped then, but
        # not this one: its STag stays known until the call returned 0).
        other = mmap.mmap(-1, 4096)
        reg(s, addr_of(other), 4096, ACC_LW)
        # The peer reads on; the call returns once TCP let go.
        reader.start()
        final = "EBUSY"
        for _ in range(30):
            try:
                dereg(s, stag)
                final = "ok"
                break
            except OSError as e:
                final = ename(e)
                if e.errno != errno.EBUSY:
                    break
        if final == "ok":
            m.seek(0)
            m.write(b"Z" * L_READ)
    reader.join()
    print("stall first=%s pinned_during=%d dereg=%s A=%d Z=%d term=%s" % (
        first, pinned, final, out.get(ord("A"), 0), out.get(ord("Z"), 0), out.get("term", "none")))
    del z
    return 0


def closestall(port, linger=None, read=False):
    # With SO_LINGER: a Read of 48 KiB, all of it handed to TCP when it
    # stalls, so that no FPDU is cut mid-way at the close (the close of
    # one that is resets at once).
    c, s, z, m, stag = stalled_read(port, size=49152 if linger is not None else L_READ)
    if linger is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, linger))
    pinned = stat("ZcddpPinnedPages")
    out = {}
    reader = threading.Thread(target=read_peer, args=(c, out))
    if read:
        reader.start()
    t0 = time.monotonic()
    s.close()
    took = time.monotonic() - t0
    # Closed: the memory is the application's again.
    m.seek(0)
    m.write(b"Z" * L_READ)
    if not read:
        reader.start()
    reader.join()
    # The pins go with the socket, on the release workqueue (bounded wait
    # on the counter, 10 s).
    end = time.monotonic() + 10
    while stat("ZcddpPinnedPages") > 0 and time.monotonic() < end:
        time.sleep(0.01)
    print("closestall pinned_during=%d close_ms=%d pinned_after=%d A=%d Z=%d end=%s" % (
        pinned, took * 1000, stat("ZcddpPinnedPages"), out.get(ord("A"), 0), out.get(ord("Z"), 0),
        out.get("end", out.get("term", "last" if out.get("last") else "none"))))
    del z
    return 0


def vm_pgalloc():
    return sum(int(l.split()[1]) for l in open("/proc/vmstat") if l.startswith("pgalloc_"))


def libc_mmap(hint, size, prot, flags, fd):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    return libc.mmap(hint, size, prot, flags, fd, 0)


def bigreg(port, n):
    c, s = pair(port)
    s.setsockopt(socket.IPPROTO_TCP, TCP_ULP, b"zcddp")
    # Low in the address space (8 GiB), so that the range passes
    # access_ok() however long it is.
    a = libc_mmap(8 << 30, 1 << 16, mmap.PROT_READ | mmap.PROT_WRITE,
                  mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1)
    p0 = vm_pgalloc()
    try:
        reg(s, a, n, ACC_LW)
        r = "ok"
    except OSError as e:
        r = ename(e)
    p1 = vm_pgalloc()
    print("bigreg %s pgalloc=%d" % (r, p1 - p0))
    return 0


def children(port, n, kib):
    c, s = pair(port)
    s.setsockopt(socket.IPPROTO_TCP, TCP_ULP, b"zcddp")
    ok = refused = 0
    for _ in range(n):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            m = mmap.mmap(-1, kib * 1024)
            m.write(b"c" * (kib * 1024))
            try:
                reg(s, addr_of(m), kib * 1024, ACC_LW)
                os.write(w, b"ok")
            except OSError as e:
                os.write(w, ename(e).encode())
            os._exit(0)
        os.close(w)
        got = os.read(r, 16).decode()
        os.close(r)
        os.waitpid(pid, 0)
        if got == "ok":
            ok += 1
        else:
            refused += 1
    print("children ok=%d refused=%d pinned=%d" % (ok, refused, stat("ZcddpPinnedPages")))
    s.close()
    c.close()
    return 0


def vm_rss_kib(pid):
    for l in open("/proc/%d/status" % pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
    return 0


def pinlock(port, mib):
    c, s = pair(port)
    c.setsockopt(socket.IPPROTO_TCP, TCP_ULP, b"zcddp")
    n = mib << 20
    m = mmap.mmap(-1, n)
    rd, wr = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rd)
        os.close(go_w)
        try:
            reg(c, addr_of(m), n, ACC_LW)
            r = "ok"
        except OSError as e:
            r = ename(e)
        os.write(wr, r.encode())
        # Resident until told: its memory says how far the pinning got.
        os.read(go_r, 1)
        os._exit(0)
    os.close(wr)
    os.close(go_r)
    base = vm_rss_kib(pid)
    end = time.monotonic() + 60
    # The child is pinning (its socket locked by REG_MR until the fix of
    # issue 45's minor) once 8 MiB of the region are resident.
    while vm_rss_kib(pid) < base + 8192 and time.monotonic() < end:
        pass
    with open("/proc/net/zcddp_conns") as f:
        text = f.read()
    list_kib = vm_rss_kib(pid) - base
    c.getsockopt(SOL_ZCDDP, 2, 64)
    info_kib = vm_rss_kib(pid) - base
    r = os.read(rd, 64).decode()
    os.close(go_w)
    os.waitpid(pid, 0)
    me = "%s:%d " % c.getsockname()
    listed = sum(1 for l in text.splitlines() if l.startswith(me))
    print("pinlock listed=%d list_kib=%d info_kib=%d region_kib=%d reg=%s"
          % (listed, list_kib, info_kib, n >> 10, r))
    c.close()
    s.close()
    return 0


def termclose(port, mode):
    import fcntl
    import termios
    c, s = pair(port)
    c.sendall(frame(KEY_REQ, E, 2, b"", (1, 1)))
    z = Zc(s, 2, False, 77)
    read_frame(c)
    runs, dropped = stat("ZcddpWorkRuns"), stat("ZcddpRxBytesDiscarded")
    if mode == "received":
        # Layer 1 (RDMAP), type 1 (remote protection), code 0.
        c.sendall(fpdu(untagged(7, 2, 1, 0) + bytes([0x11, 0, 0, 0]), False, False))
    else:
        c.sendall(fpdu(bytes([0x41, 0x40 | 3]) + struct.pack(">IIII", 0, 5, 1, 0) + b"x",
                       False, False))
    got, end = b"", "timeout"
    c.settimeout(5)
    try:
        while True:
            b = c.recv(65536)
            if not b:
                end = "eof"
                break
            got += b
    except socket.timeout:
        pass
    except ConnectionError as e:
        end = type(e).__name__
    term = "yes" if b"\x41\x47" in got else "no"
    # The peer sends on: zcddp must neither stall its window nor run its
    # work item for each segment.
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    flood = 0
    try:
        for i in range(200):
            f = fpdu(untagged(3, 0, 2 + i, 0) + bytes(1024), False, False)
            c.sendall(f)
            flood += len(f)
    except OSError as e:
        print("# flood:", e)
    try:
        acked(c, 5)
    except EOFError:
        print("# the flood not all acknowledged")
    inq = struct.unpack("i", fcntl.ioctl(s, termios.FIONREAD, b"\0" * 4))[0]
    state = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]
    status = "none"
    try:
        for cq in z.poll(0):
            if cq[0] == 77:
                status = cq[2]
    except OSError as e:
        status = ename(e)
    # -1: no such counter (a module without them).
    runs = stat("ZcddpWorkRuns") - runs if runs >= 0 else "none"
    dropped = stat("ZcddpRxBytesDiscarded") - dropped if dropped >= 0 else "none"
    print("termclose term=%s end=%s state=%d inq=%d status=%s runs=%s discarded=%s flood=%d"
          % (term, end, state, inq, status, runs, dropped, flood))
    c.close()
    s.close()
    return 0


def main():
    a = sys.argv[1:]
    if a[0] == "kpf":
        return kpf(a[1])
    if a[0] == "rofile":
        return rofile(a[1], int(a[2]))
    if a[0] == "rread":
        return rread(int(a[1]), int(a[2]))
    if a[0] == "stall":
        return stall(int(a[1]))
    if a[0] == "closestall":
        return closestall(int(a[1]), int(a[2]) if len(a) > 2 else None,
                          len(a) > 3 and a[3] == "read")
    if a[0] == "bigreg":
        return bigreg(int(a[1]), int(a[2]))
    if a[0] == "children":
        return children(int(a[1]), int(a[2]), int(a[3]))
    if a[0] == "termclose":
        return termclose(int(a[1]), a[2])
    if a[0] == "pinlock":
        return pinlock(int(a[1]), int(a[2]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
