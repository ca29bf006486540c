#!/usr/bin/env python3
"""zcsock's isolation (issue 43): no page anyone else holds becomes writable
through a region, no page others may write enters one, and each open file's
offsets stay its own. Over loopback in the current namespace.

  zcsock_iso.py race [--rounds N] [--cpu C]
      Process B sends pages of its region to process A's region by
      reference; then A writes one (B's bytes must not change), B writes one
      (A's must not change), and A writes the page of a pending MSG_WAITALL
      receive that has installed one page and waits for the next (a thread
      of A): B's page it replaced must not change. --cpu pins both to CPU C.
  zcsock_iso.py zeropage
      sendfile() of a memfd with holes (the zero page in the skbs) into a
      region: same bytes, the zero page never in the region (a write to a
      hole's slot takes no copy-on-write fault), every page copied and
      counted (ZcsockRxPagesRefused); then the pending
      receive write of race on that region page; /dev/zero and fresh
      anonymous memory must still read as zeros.
  zcsock_iso.py wrap --left N
      zcsock loaded with mapdev_first_id N ids before the last: N regions
      map, the next is refused (ENOMEM), one closed makes room again, and
      copy-on-write (sender overwrites after send()) holds in each.
  zcsock_iso.py memlock [--cycles N]
      Run as a user without CAP_IPC_LOCK under a small RLIMIT_MEMLOCK of L
      pages: regions are charged to the user, not to a process. L pages
      map (the mapping process's VmPin shows them); one more page is
      ENOMEM in this process, in a fork() child and in an exec()ed
      program; children mapping L/2 pages each on descriptors the parent
      keeps: 2 map, the others ENOMEM; L + 1 pages at once: ENOMEM with
      nothing charged; RLIMIT_MEMLOCK 0: EPERM; N cycles of open, mmap of
      L pages, a refused mmap of L + 1, close: every one as the first (no
      charge leaks), and L pages map again at the end, VmPin back where it
      started.

  zcsock_iso.py killed [--pages R]
      Run as a user without CAP_IPC_LOCK under RLIMIT_MEMLOCK of R + 16
      pages: a child mapping a region of R pages is killed (SIGKILL) once a
      quarter of them is allocated (MemFree down by that much): it stops
      there (MemFree never down by half the region) and never returns
      from mmap(); its charge comes back (17 pages map after it).

  zcsock_iso.py protoswap
      With zcsock fresh (no IPv6 socket seen yet) and the test module
      zcnet_protoswap loaded: an IPv6 (and an IPv4) socket whose proto the
      module swapped as a BPF sockmap does is refused (EBUSY); an ordinary
      IPv6 socket after it still gets zcsock, and its bytes never pass
      through the swapped proto (the module's hits stay 0).

  zcsock_iso.py zerosend
      A zero-length send() and recv() through zcsock (copy threshold 0)
      give what plain TCP gives: on a socket never connected, a connected
      one, one shut down for writing, one whose peer reset it (twice).

  zcsock_iso.py listener [--conns N]
      TCP_ULP on a live listener: EINVAL (tried while N connects flood
      it); set before listen(): all N sockets accepted under a flood carry
      zcsock.
  zcsock_iso.py oob [--mode zcsock|plain] [--first P] [--last P] [--server-ns B
                 --client-ns A --server-ip IP]
      Urgent data (MSG_OOB) from an unmodified sender at every position of
      a page the receiver could take whole: the same bytes and calls as
      plain TCP ("= transcript", "= calls"), no kernel warning, and the
      counters say what the calls returned.

Output: ok / not ok lines (ktap.sh's t_report) and "= KEY VALUE" results.
"""
import argparse
import ctypes
import fcntl
import hashlib
import mmap
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import threading

from zcsock_test import (DEVICE, IO_TIMEOUT, PAGE, PROT_RW, Fail, Report, enable, ename, in_child, inq,
                         outcome, parse_proc, set_io_timeout, set_threshold, setns, sock_stats, ulp_of, wait_inq)

TIOCOUTQ = 0x5411


def region(pages):
    fd = os.open(DEVICE, os.O_RDWR)
    try:
        return mmap.mmap(fd, pages * PAGE, mmap.MAP_SHARED, PROT_RW)
    finally:
        os.close(fd)


def addr_of(m):
    c = ctypes.c_char.from_buffer(m)
    a = ctypes.addressof(c)
    del c
    return a


def pat(tag, k):
    """A page of bytes that says who wrote it (tag, a str) and when."""
    return hashlib.sha256(b"%s %d" % (tag.encode(), k)).digest() * (PAGE // 32)


def pair():
    """A loopback pair, zcsock on both ends, copy threshold one page."""
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    enable(lst)
    lst.listen(1)
    c = socket.socket()
    enable(c)
    c.connect(lst.getsockname())
    s, _ = lst.accept()
    lst.close()
    for x in (c, s):
        set_io_timeout(x)
        set_threshold(x, PAGE)
    return c, s


def outq(s):
    return struct.unpack("i", fcntl.ioctl(s.fileno(), TIOCOUTQ, b"\0" * 4))[0]


def send_acked(s, mv):
    """Sends mv (a region's pages: by reference) and waits until the peer
    acknowledged it all, so that only the receiver's skbs hold the pages."""
    if s.send(mv) != len(mv):
        raise Fail("short send")
    while outq(s):
        os.sched_yield()


def proc_stat():
    with open("/proc/net/zcsock_stat") as f:
        return parse_proc(f.read())


class Peer:
    """Process B: a child with its own region, driven over a pipe pair."""

    def __init__(self, sock, pages, cpu):
        self.r1, w1 = os.pipe()
        r2, self.w2 = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self.r1)
            os.close(self.w2)
            self.run(sock, pages, r2, w1)
            os._exit(0)
        os.close(w1)
        os.close(r2)
        self.cpu = cpu

    @staticmethod
    def run(sock, pages, rfd, wfd):
        rb = region(pages)
        fin = os.fdopen(rfd, "r")
        out = os.fdopen(wfd, "w", buffering=1)
        for line in fin:
            f = line.split()
            try:
                if f[0] == "fill":  # fill IDX TAG K: the page's bytes
                    i, tag, k = int(f[1]), f[2], int(f[3])
                    rb[i * PAGE:(i + 1) * PAGE] = pat(tag, k)
                    out.write("ok\n")
                elif f[0] == "send":  # send IDX N [acked]: pages by reference
                    i, n = int(f[1]), int(f[2])
                    mv = memoryview(rb)[i * PAGE:(i + n) * PAGE]
                    if len(f) > 3:
                        send_acked(sock, mv)
                    elif sock.send(mv) != len(mv):
                        raise Fail("short send")
                    out.write("ok\n")
                elif f[0] == "is":  # is IDX TAG K: still those bytes?
                    i, tag, k = int(f[1]), f[2], int(f[3])
                    got = rb[i * PAGE:(i + 1) * PAGE]
                    out.write("ok\n" if got == pat(tag, k) else "changed %s\n" % got[:8].hex())
                elif f[0] == "quit":
                    out.write("ok\n")
                    return
            except Exception as e:  # noqa: BLE001 (reported to the parent)
                out.write("error %r\n" % e)

    def ask(self, *words):
        os.write(self.w2, (" ".join(str(w) for w in words) + "\n").encode())
        line = b""
        while not line.endswith(b"\n"):
            b = os.read(self.r1, 256)
            if not b:
                raise Fail("peer gone")
            line += b
        return line.decode().strip()

    def do(self, *words):
        r = self.ask(*words)
        if r != "ok":
            raise Fail("peer: %s: %s" % (" ".join(map(str, words)), r))

    def close(self):
        self.ask("quit")
        os.waitpid(self.pid, 0)


class PendingRecv(threading.Thread):
    """A MSG_WAITALL receive of n bytes into mv, in a thread."""

    def __init__(self, s, mv):
        super().__init__()
        self.s, self.mv, self.r, self.err = s, mv, None, None
        self.start()

    def run(self):
        try:
            self.r = self.s.recv_into(self.mv, len(self.mv), socket.MSG_WAITALL)
        except OSError as e:
            self.err = e


def pending_write(s, b, ra, slot, bidx, k):
    """A's receive of two pages at slot: B's page bidx (sent, acknowledged,
    then overwritten by B, so only A's socket holds it) is installed and the
    call waits for the second; then A writes the slot. Returns the thread
    once the receive completed (B sends page bidx + 1)."""
    b.do("fill", bidx, "q", k)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)  # no delayed ACK to wait for
    b.do("send", bidx, 1, "acked")
    b.do("fill", bidx, "qq", k)
    wait_inq(s, PAGE)
    t = PendingRecv(s, memoryview(ra)[slot * PAGE:(slot + 2) * PAGE])
    # Installed: the first page is taken off the queue while the call waits.
    while inq(s) and t.is_alive():
        os.sched_yield()
    ra[slot * PAGE:(slot + 1) * PAGE] = pat("a", k)
    b.do("fill", bidx + 1, "c", k)
    b.do("send", bidx + 1, 1)
    t.join()
    if t.err or t.r != 2 * PAGE:
        raise Fail("pending receive: %s" % (t.err or t.r))
    if ra[(slot + 1) * PAGE:(slot + 2) * PAGE] != pat("c", k):
        raise Fail("pending receive: second page's bytes wrong")


def race(a, rep):
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    c, s = pair()
    b = Peer(c, 8, a.cpu)
    c.close()
    ra = region(8)
    before = sock_stats(s)["rx_pages_remapped"]
    bad = {"A's write reached B": 0, "B's write reached A": 0, "pending write reached B": 0}
    first = {}
    try:
        for k in range(a.rounds):
            # B's pages 0..2 become A's 0..2, shared.
            for i in range(3):
                b.do("fill", i, "b%d" % i, k)
            b.do("send", 0, 3)
            if s.recv_into(memoryview(ra)[:3 * PAGE], 3 * PAGE, socket.MSG_WAITALL) != 3 * PAGE:
                raise Fail("short receive")
            # A writes page 1: B's stays.
            ra[PAGE:2 * PAGE] = pat("a1", k)
            if b.ask("is", 1, "b1", k) != "ok":
                bad["A's write reached B"] += 1
                first.setdefault("A's write reached B", k)
            # B writes page 2: A's stays.
            b.do("fill", 2, "x", k)
            if ra[2 * PAGE:3 * PAGE] != pat("b2", k):
                bad["B's write reached A"] += 1
                first.setdefault("B's write reached A", k)
            # A writes page 0 while a receive that replaced it waits.
            pending_write(s, b, ra, 0, 4, k)
            if b.ask("is", 0, "b0", k) != "ok":
                bad["pending write reached B"] += 1
                first.setdefault("pending write reached B", k)
        remapped = sock_stats(s)["rx_pages_remapped"] - before
    finally:
        s.close()
        b.close()
    where = "pinned to CPU %d" % a.cpu if a.cpu is not None else "unpinned"
    rep.result("remapped", remapped)
    # Every page went by reference and was remapped: the path ran.
    rep.expect("race %s: %d rounds, every page remapped" % (where, a.rounds), 5 * a.rounds, remapped)
    for what, n in bad.items():
        rep.check(n == 0, "race %s: %s in no round" % (where, what),
                  "in %d of %d rounds, first round %s" % (n, a.rounds, first.get(what)))


def zeropage(a, rep):
    npages = 16
    holes = [i for i in range(npages) if i % 4 in (1, 2)]
    fd = os.memfd_create("zcsock-iso")
    data = bytearray(npages * PAGE)
    for i in range(npages):
        if i not in holes:
            data[i * PAGE:(i + 1) * PAGE] = pat("f", i)
            os.pwrite(fd, pat("f", i), i * PAGE)
    os.ftruncate(fd, npages * PAGE)
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    enable(lst)
    lst.listen(1)
    c = socket.socket()  # an unmodified sender
    c.connect(lst.getsockname())
    s, _ = lst.accept()
    lst.close()
    set_io_timeout(s)
    set_threshold(s, PAGE)
    ra = region(npages + 2)
    st0, ss0 = proc_stat(), sock_stats(s)
    if os.sendfile(c.fileno(), fd, 0, npages * PAGE) != npages * PAGE:
        raise Fail("short sendfile")
    r = s.recv_into(memoryview(ra)[:npages * PAGE], npages * PAGE, socket.MSG_WAITALL)
    st1, ss1 = proc_stat(), sock_stats(s)
    rep.expect("sendfile of a memfd with holes: same bytes", hashlib.md5(data).hexdigest(),
               hashlib.md5(ra[:npages * PAGE]).hexdigest() if r == npages * PAGE else "short %s" % r)
    # A page in a slot that is not the region's own (the zero page, held by
    # everyone) takes a copy-on-write fault at the first write; the region's
    # own copy takes none.
    cow0 = proc_stat().get("ZcsockTxCowFaults", 0)
    for i in holes[2:]:
        ra[i * PAGE:(i + 1) * PAGE] = pat("h", i)
    cow = proc_stat().get("ZcsockTxCowFaults", 0) - cow0
    rep.expect("the zero page is not in the region: writes to the holes' slots take no copy-on-write fault",
               0, cow)
    refused = st1.get("ZcsockRxPagesRefused", 0) - st0.get("ZcsockRxPagesRefused", 0)
    rep.expect("sendfile: no page remapped, every byte copied, every page refused (counted)",
               (0, npages * PAGE, npages),
               (ss1["rx_pages_remapped"] - ss0["rx_pages_remapped"],
                ss1["rx_bytes_copied"] - ss0["rx_bytes_copied"], refused))
    # The write of race, where the first hole was received (holes[:2] not
    # written above): on a zero page there it would write the system's zero
    # page.
    c.close()
    s.close()
    c, s = pair()
    b = Peer(c, 8, None)
    c.close()
    try:
        pending_write(s, b, ra, holes[0], 4, 0)
    finally:
        s.close()
        b.close()
    anon = mmap.mmap(-1, 64 * PAGE, mmap.MAP_PRIVATE, mmap.PROT_READ)
    zfd = os.open("/dev/zero", os.O_RDONLY)
    dz = mmap.mmap(zfd, 64 * PAGE, mmap.MAP_PRIVATE, mmap.PROT_READ)
    os.close(zfd)
    rep.check(anon[:] == bytes(64 * PAGE), "fresh anonymous memory reads as zeros after it",
              "first bytes %s" % anon[:8].hex())
    rep.check(dz[:] == bytes(64 * PAGE), "/dev/zero-backed memory reads as zeros after it",
              "first bytes %s" % dz[:8].hex())


def wrap(a, rep):
    """Regions at the last ids: the last maps, one more is refused."""
    regions, why = [], "ok"
    for _ in range(a.left + 1):
        try:
            regions.append(region(2))
        except OSError as e:
            why = os.strerror(e.errno)
            break
    rep.expect("%d ids left: %d regions map, the next is refused" % (a.left, a.left),
               (a.left, "Cannot allocate memory"), (len(regions), why))
    if len(regions) == a.left:
        regions.pop(0).close()
        try:
            regions.append(region(2))
            rep.check(True, "a closed region's ids serve the next")
        except OSError as e:
            rep.check(False, "a closed region's ids serve the next", os.strerror(e.errno))
    # Copy-on-write in each: the sender overwrites right after send().
    c, s = pair()
    cow0 = proc_stat().get("ZcsockTxCowFaults", 0)
    bad = 0
    for k, r in enumerate(regions):
        r[:PAGE] = pat("w", k)
        if c.send(memoryview(r)[:PAGE]) != PAGE:
            raise Fail("short send")
        r[:PAGE] = pat("over", k)
        got = bytearray(PAGE)
        if s.recv_into(got, PAGE, socket.MSG_WAITALL) != PAGE or bytes(got) != pat("w", k):
            bad += 1
    cow = proc_stat().get("ZcsockTxCowFaults", 0) - cow0
    rep.expect("copy-on-write in every region at the last ids (bad pages, COW faults)",
               (0, len(regions)), (bad, cow))
    c.close()
    s.close()


def vm_pin():
    """This process's VmPin (kB): pages pinned on its behalf."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmPin:"):
                return int(line.split()[1])
    return -1


def try_region(pages, fd=None):
    """'ok' (the region written through and closed again: its charge
    stays while the file is open) or the errno name of mmap()."""
    own = fd is None
    if own:
        fd = os.open(DEVICE, os.O_RDWR)
    try:
        m = mmap.mmap(fd, pages * PAGE, mmap.MAP_SHARED, PROT_RW)
    except OSError as e:
        return ename(e)
    finally:
        if own:
            os.close(fd)
    m[-PAGE:] = pat("memlock", pages)
    ok = m[-PAGE:] == pat("memlock", pages)
    m.close()
    return "ok" if ok else "bad bytes"


# An exec()ed program of the same user maps a region of PAGES pages.
EXEC_REGION = """
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    mmap.mmap(fd, int(sys.argv[2]) * mmap.PAGESIZE, mmap.MAP_SHARED).close()
    print("ok")
except OSError as e:
    import errno
    print(errno.errorcode.get(e.errno, e.errno))
"""


def memlock(a, rep):
    """Regions charged to the user's RLIMIT_MEMLOCK (see the usage)."""
    lim = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]
    if os.geteuid() == 0 or lim == resource.RLIM_INFINITY or not 4 <= lim // PAGE <= 1024:
        raise Fail("run as a user without CAP_IPC_LOCK under RLIMIT_MEMLOCK of 4 to 1024 pages")
    L = lim // PAGE
    rep.diag("RLIMIT_MEMLOCK %d pages, uid %d" % (L, os.geteuid()))
    pin0 = vm_pin()

    fd = os.open(DEVICE, os.O_RDWR)
    m = mmap.mmap(fd, L * PAGE, mmap.MAP_SHARED, PROT_RW)
    m[:] = pat("full", 0) * L
    rep.expect("a region of the whole limit (%d pages) maps, its bytes hold" % L, True,
               m[:] == pat("full", 0) * L)
    rep.expect("VmPin shows the region's pages", pin0 + L * PAGE // 1024, vm_pin())
    rep.expect("the user at its limit: 1 more page in this process: ENOMEM", "ENOMEM", try_region(1))
    rep.expect("the user at its limit: 1 more page in a fork() child: ENOMEM", "ENOMEM",
               in_child(lambda: try_region(1)))
    out = subprocess.run([sys.executable, "-c", EXEC_REGION, DEVICE, "1"], capture_output=True,
                         text=True, timeout=60)
    rep.expect("the user at its limit: 1 more page in an exec()ed program: ENOMEM", "ENOMEM",
               out.stdout.strip() or out.stderr.strip()[-200:])
    m.close()
    os.close(fd)
    rep.expect("VmPin back where it started after close", pin0, vm_pin())

    # Children map on descriptors the parent keeps, and exit: the regions
    # stay (and stay charged) while the parent holds the files.
    half = L // 2
    fds = [os.open(DEVICE, os.O_RDWR) for _ in range(4)]
    got = [in_child(lambda f=f: try_region(half, f)) for f in fds]
    rep.diag("4 children, %d pages each on the parent's descriptors: %s" % (half, " ".join(got)))
    rep.expect("children map %d pages each on kept descriptors: 2 map, 2 ENOMEM" % half,
               ["ok", "ok", "ENOMEM", "ENOMEM"], got)
    rep.expect("their regions outlive them: the parent's 1 page: ENOMEM", "ENOMEM", try_region(1))
    for f in fds:
        os.close(f)
    rep.expect("the parent's files closed: the whole limit maps again", "ok", try_region(L))

    rep.expect("a region of the limit + 1 page: ENOMEM", "ENOMEM", try_region(L + 1))

    def zero_limit():
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (0, 0))
        return try_region(1)
    rep.expect("RLIMIT_MEMLOCK 0: EPERM", "EPERM", in_child(zero_limit))

    # No leak: every cycle is the first (a page kept per cycle would refuse
    # the next whole-limit region).
    res = {}
    for _ in range(a.cycles):
        fd = os.open(DEVICE, os.O_RDWR)
        try:
            m = mmap.mmap(fd, L * PAGE, mmap.MAP_SHARED, PROT_RW)
            m[:PAGE] = pat("cycle", 0)
            r = try_region(L + 1) + "," + try_region(1)
            m.close()
        except OSError as e:
            r = ename(e)
        os.close(fd)
        res[r] = res.get(r, 0) + 1
    rep.expect("%d cycles of a whole-limit region, with 1 page and the limit + 1 refused beside it" % a.cycles,
               {"ENOMEM,ENOMEM": a.cycles}, res)
    rep.expect("after them the whole limit maps", "ok", try_region(L))
    rep.expect("VmPin back where it started at the end", pin0, vm_pin())


def mem_free():
    """MemFree of /proc/meminfo, kB."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemFree:"):
                return int(line.split()[1])
    raise Fail("no MemFree in /proc/meminfo")


def killed(a, rep):
    """A region's allocation stops when its process is killed."""
    size_kb = a.pages * PAGE // 1024
    lim = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]
    if os.geteuid() == 0 or lim != (a.pages + 16) * PAGE:
        raise Fail("run as a user without CAP_IPC_LOCK under RLIMIT_MEMLOCK of --pages + 16 pages")
    free0 = mem_free()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        fd = os.open(DEVICE, os.O_RDWR)
        os.write(w, b"go\n")
        try:
            mmap.mmap(fd, a.pages * PAGE, mmap.MAP_SHARED, PROT_RW)
            os.write(w, b"mapped\n")
        except OSError as e:
            os.write(w, (ename(e) + "\n").encode())
        os._exit(0)
    os.close(w)
    f = os.fdopen(r)
    if f.readline() != "go\n":
        raise Fail("the child did not start")
    # A quarter allocated (or the child gone: the region done, or failed).
    peak, done = 0, 0
    while peak < size_kb // 4 and not done:
        peak = max(peak, free0 - mem_free())
        done = os.waitpid(pid, os.WNOHANG)[0]
    if done:
        raise Fail("the child finished before a quarter was allocated (%s)" % f.read().strip())
    os.kill(pid, signal.SIGKILL)
    while not done:
        peak = max(peak, free0 - mem_free())
        done = os.waitpid(pid, os.WNOHANG)[0]
    said = f.read().strip()
    rep.diag("region of %d kB: killed at a quarter; MemFree down by %d kB at most; the child said %r"
             % (size_kb, peak, said))
    rep.check(peak < size_kb // 2, "killed at a quarter of a %d-page region: the allocation stopped (MemFree "
              "never down by half of it)" % a.pages, "down by %d of %d kB" % (peak, size_kb))
    rep.expect("killed in mmap(): it never returned", "", said)
    rep.expect("the killed region's charge came back: 17 pages map", "ok", try_region(17))


SWAP_HITS = "/sys/module/zcnet_protoswap/parameters/hits"


def protoswap(a, rep):
    """A proto swapped as by a sockmap never becomes zcsock's base."""
    def swap(fam):
        s = socket.socket(fam, socket.SOCK_STREAM)
        return s, outcome(lambda: s.setsockopt(socket.SOL_TCP, 31, b"zcnet_protoswap"))
    a6, r = swap(socket.AF_INET6)
    rep.expect("the test module swaps an IPv6 socket's proto (EALREADY, no ULP)", "EALREADY", r)
    rep.expect("zcsock on the swapped IPv6 socket (the first IPv6 socket zcsock sees): EBUSY", "EBUSY",
               outcome(lambda: enable(a6)))
    a4, r = swap(socket.AF_INET)
    rep.expect("zcsock on a swapped IPv4 socket: EBUSY", "EBUSY", r == "EALREADY" and outcome(lambda: enable(a4)))
    with open(SWAP_HITS) as f:
        hits0 = int(f.read())
    lst = socket.socket(socket.AF_INET6)
    lst.bind(("::1", 0))
    lst.listen(1)
    c = socket.socket(socket.AF_INET6)
    rep.expect("zcsock on an ordinary IPv6 socket after them", "ok", outcome(lambda: enable(c)))
    c.connect(lst.getsockname()[:2])
    p, _ = lst.accept()
    data = pat("v6", 0) * 16
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    got = bytearray()
    while True:
        b = p.recv(65536)
        if not b:
            break
        got += b
    with open(SWAP_HITS) as f:
        hits = int(f.read()) - hits0
    rep.expect("its 64 KiB arrive (sha256, its ULP) through TCPv6's own proto (swapped proto's sendmsg calls)",
               (hashlib.sha256(data).hexdigest(), "zcsock", 0), (hashlib.sha256(got).hexdigest(), ulp_of(c), hits))
    for s in (c, p, lst, a6, a4):
        s.close()


def zerosend_results(zc):
    """send() and recv() of 0 bytes (MSG_DONTWAIT) on sockets in each state
    (zcsock with copy threshold 0)."""
    def sock():
        s = socket.socket()
        if zc:
            enable(s)
            set_threshold(s, 0)
        return s
    def calls(c):
        out.append(outcome(lambda: c.send(b"")))
        out.append(outcome(lambda: c.recv_into(bytearray(1), 0, socket.MSG_DONTWAIT)))
    out = []
    s = sock()
    calls(s)
    s.close()
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(4)
    for case in ("connected", "shut", "reset"):
        c = sock()
        c.connect(lst.getsockname())
        p, _ = lst.accept()
        if case == "shut":
            c.shutdown(socket.SHUT_WR)
        elif case == "reset":
            p.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            p.close()
            # The reset has arrived once the socket reports an error.
            po = select.poll()
            po.register(c, select.POLLERR)
            if not po.poll(IO_TIMEOUT * 1000):
                raise Fail("no reset arrived")
        calls(c)
        if case == "reset":
            calls(c)
        c.close()
        p.close()
    lst.close()
    return [str(x) for x in out]


def zerosend(a, rep):
    """Zero-length sends and receives give TCP's own results."""
    plain, zc = zerosend_results(False), zerosend_results(True)
    rep.diag("send, recv: plain TCP: %s; zcsock: %s (never connected, connected, shut down, reset, "
             "reset)" % (" ".join(plain), " ".join(zc)))
    rep.expect("zero-length send and recv give plain TCP's results in every state", plain, zc)


def listener(a, rep):
    """TCP_ULP on a live listener is refused (EINVAL), also while a connect
    flood fills its queue; set before listen(), every accepted socket of a
    flood carries zcsock."""
    live = socket.socket()
    live.bind(("127.0.0.1", 0))
    live.listen(a.conns)
    pre = socket.socket()
    pre.bind(("127.0.0.1", 0))
    enable(pre)
    pre.listen(a.conns)

    def flood(port, out):
        for _ in range(a.conns):
            c = socket.socket()
            c.setblocking(False)
            c.connect_ex(("127.0.0.1", port))
            out.append(c)

    clients, tries = [], []
    t = threading.Thread(target=flood, args=(live.getsockname()[1], clients))
    t.start()
    while t.is_alive() or len(tries) < 16:
        try:
            enable(live)
            tries.append("ok")
        except OSError as e:
            tries.append(os.strerror(e.errno))
    t.join()
    rep.expect("TCP_ULP on a live listener, %d tries during a flood of %d connects: each EINVAL"
               % (len(tries), a.conns), {os.strerror(22)}, set(tries))
    t = threading.Thread(target=flood, args=(pre.getsockname()[1], clients))
    t.start()
    ulps = []
    pre.settimeout(IO_TIMEOUT)
    for _ in range(a.conns):
        s, _ = pre.accept()
        ulps.append(ulp_of(s))
        s.close()
    t.join()
    rep.expect("set before listen(): all %d sockets accepted under a connect flood carry zcsock" % a.conns,
               ["zcsock"] * a.conns, ulps)
    for c in clients:
        c.close()
    live.close()
    pre.close()


def warn_count():
    try:
        with open("/sys/kernel/warn_count") as f:
            return int(f.read())
    except OSError:
        return None


def proc_state(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def oob_round(p):
    return pat("o0", p) + pat("o1", p) + pat("o2", p)


def oob(a, rep):
    """An unmodified sender (TCP copies its bytes into order-0 pages with
    net.core.high_order_alloc_disable=1, page-aligned in the stream: pages
    a receiver may take whole) sends three pages a round, the byte at
    position p of the second urgent (MSG_OOB), p = 0..4095; the receiver
    (zcsock and a region, or plain TCP and anonymous memory) waits in a
    MSG_WAITALL receive of the in-band bytes when they arrive."""
    zc = a.mode == "zcsock"
    if a.server_ns:
        setns(a.server_ns)
    lst = socket.socket()
    lst.bind((a.server_ip, 0))
    if zc:
        enable(lst)
    lst.listen(1)
    if a.client_ns:
        setns(a.client_ns)
    c = socket.socket()
    c.connect((a.server_ip, lst.getsockname()[1]))
    s, _ = lst.accept()
    lst.close()
    set_io_timeout(s)
    if zc:
        set_threshold(s, PAGE)
        buf = region(3)
    else:
        buf = mmap.mmap(-1, 3 * PAGE, mmap.MAP_SHARED, PROT_RW)
    go_r, go_w = os.pipe()
    me = os.getpid()
    pid = os.fork()
    if pid == 0:
        # A new process: its page fragment starts empty, so the stream's
        # pages are the fragment's pages.
        s.close()
        for p in range(a.first, a.last + 1):
            if os.read(go_r, 1) != b"g":
                os._exit(1)
            while proc_state(me) != "S":  # the receive waits
                os.sched_yield()
            data = oob_round(p)
            u = PAGE + p
            c.sendall(data[:u])
            c.send(data[u:u + 1], socket.MSG_OOB)
            c.sendall(data[u + 1:])
        os._exit(0)
    c.close()
    os.close(go_r)
    w0, st0 = warn_count(), (sock_stats(s) if zc else None)
    h, total, calls = hashlib.md5(), 0, []
    mv = memoryview(buf)
    for p in range(a.first, a.last + 1):
        os.write(go_w, b"g")
        got, rs, n = 0, [], 3 * PAGE - 1
        while got < n:
            try:
                r = s.recv_into(mv[got:n], n - got, socket.MSG_WAITALL)
            except OSError as e:
                raise Fail("position %d: recv after %s: %s" % (p, rs, os.strerror(e.errno)))
            if r <= 0:
                raise Fail("position %d: recv %d" % (p, r))
            rs.append(r)
            got += r
        data, u = oob_round(p), PAGE + p
        if buf[:n] != data[:u] + data[u + 1:]:
            raise Fail("position %d: wrong bytes (calls %s)" % (p, rs))
        h.update(buf[:n])
        calls.append("%d:%s" % (p, ",".join(map(str, rs))))
        total += got
    os.waitpid(pid, 0)
    rep.result("transcript", h.hexdigest(), total)
    rep.result("calls", hashlib.md5(" ".join(calls).encode()).hexdigest())
    rep.diag("calls: " + " ".join(calls[:8]) + " ... " + " ".join(calls[-4:]))
    w1 = warn_count()
    if w0 is not None:
        rep.expect("%s: no kernel warning (warn_count)" % a.mode, 0, w1 - w0)
    if zc:
        st1 = sock_stats(s)
        d = {k: st1[k] - st0[k] for k in st1}
        rep.result("stats", d["rx_pages_remapped"], d["rx_bytes_remapped"], d["rx_bytes_copied"])
        rep.expect("zcsock: counters are what the calls returned (remapped + copied bytes)", total,
                   d["rx_bytes_remapped"] + d["rx_bytes_copied"])
    s.close()


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("race")
    sp.add_argument("--rounds", type=int, default=1000)
    sp.add_argument("--cpu", type=int)
    sub.add_parser("zeropage")
    sp = sub.add_parser("listener")
    sp.add_argument("--conns", type=int, default=256)
    sp = sub.add_parser("oob")
    sp.add_argument("--mode", choices=("zcsock", "plain"), default="zcsock")
    sp.add_argument("--first", type=int, default=0)
    sp.add_argument("--last", type=int, default=PAGE - 1)
    sp.add_argument("--server-ns")
    sp.add_argument("--client-ns")
    sp.add_argument("--server-ip", default="127.0.0.1")
    sub.add_parser("zerosend")
    sub.add_parser("protoswap")
    sp = sub.add_parser("killed")
    sp.add_argument("--pages", type=int, default=65536)
    sp = sub.add_parser("memlock")
    sp.add_argument("--cycles", type=int, default=200)
    sp = sub.add_parser("wrap")
    sp.add_argument("--left", type=int, default=3)
    a = ap.parse_args()
    rep = Report("")
    try:
        {"race": race, "zeropage": zeropage, "wrap": wrap, "oob": oob, "listener": listener,
         "memlock": memlock, "zerosend": zerosend, "killed": killed, "protoswap": protoswap}[a.cmd](a, rep)
    except Fail as e:
        rep.check(False, a.cmd, str(e))
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
