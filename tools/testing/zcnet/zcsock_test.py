#!/usr/bin/env python3
"""zcsock from user space: the checks of zcsock.sh (issue 9's acceptance).

  zcsock_test.py [OPTIONS] probe       device, region, ULP and counters usable?
  zcsock_test.py [OPTIONS] same-bytes [--budget B] [--largest N]
                 [--align-step S] [--log FILE]
  zcsock_test.py [OPTIONS] cow|cow-fork|cow-unmap|cow-exit [--pages N]
  zcsock_test.py [OPTIONS] baduse      every bad use gives its errno
  zcsock_test.py [OPTIONS] hold socket|region|inflight
                 holds zcsock sockets or a region, prints "ready PID ...",
                 and lets go when stdin closes (zcsock.sh's rmmod checks);
                 inflight: an accepted socket sends and closes on a line
                 of stdin, its segments held back by the caller
  OPTIONS: --mode zcsock|plain --seed N --local --client-ns A --server-ns B
           --server-ip IP --threshold BYTES --timeout S --inject N

same-bytes: messages of a seeded plan (1 B to --largest, 8 MiB), each one
way, in lockstep: the sender's calls (send, write, sendmsg with 1 to 4
pieces, MSG_MORE, non-blocking with poll or epoll) from region or ordinary
buffers at any alignment; the receiver's (MSG_WAITALL, recv and readv after
the bytes are queued, short reads at a message's end, MSG_PEEK, recvmsg,
non-blocking with poll or epoll, EAGAIN once a message is read) into region
or ordinary buffers. Then a sweep without lockstep sending from every
alignment a with a % S == seed % S (one head, one whole page, one tail),
then shutdown(SHUT_WR), end of file, EPIPE, and a last stream sent and
closed at once. Every call whose result does not depend on timing is
logged; what does (non-blocking loops, the last stream's reads) logs totals.

cow*: k-page sends whose pages carry their sequence numbers, overwritten
right after send() (cow: by the sender; cow-fork: by a forked child sharing
the region), or unmapped at once (cow-unmap), or left behind by a sender
process exiting at once (cow-exit); the receiver checks every page.

--inject N corrupts message or chunk N on purpose: the check must fail.

The server end lives in network namespace b (198.18.0.2) and the client in a
(the topologies of scripts/topology.sh); the program enters them itself with
setns(2), so one process drives both ends and compares them call by call.
--local keeps everything in the current namespace on 127.0.0.1 (the host's
loopback: how the harness is checked without the guest).

--mode plain runs the same program on plain TCP: no ULP, and anonymous
MAP_SHARED memory where zcsock mode has regions (/dev/zcsock). Same seed,
same plan: both modes must print the same "= transcript" and "= calls".

Output, one line each, for zcsock.sh (ktap.sh's t_report):
  ok NAME / not ok NAME # WHY     a check
  # TEXT                          a diagnostic
  = KEY VALUE...                  a result (hashes, counters, deltas)
Exit status: 0 when every check passed, 1 when one failed, 2 when the set-up
failed (no device, ULP refused), 3 on the --timeout watchdog.
"""
import argparse
import ctypes
import errno
import fcntl
import hashlib
import mmap
import os
import random
import resource
import select
import signal
import socket
import struct
import sys
import termios
import threading
import time
import traceback

PAGE = mmap.PAGESIZE
MAX_XFER = 8 << 20  # the largest transfer of one call
SOL_TCP, TCP_ULP = 6, 31
SOL_ZCSOCK, ZCSOCK_STATS, ZCSOCK_COPY_THRESHOLD = 300, 1, 2
ULP = b"zcsock"
DEVICE = "/dev/zcsock"
STATS = ("tx_pages_by_ref", "tx_bytes_by_ref", "tx_bytes_copied",
         "rx_pages_remapped", "rx_bytes_remapped", "rx_bytes_copied")
PROC_NAMES = ("ZcsockTxPagesByRef", "ZcsockTxCowFaults", "ZcsockTxBytesCopied",
              "ZcsockRxPagesRemapped", "ZcsockRxBytesCopied", "ZcsockRegionPages",
              "ZcsockCurrSockets")
SIOCINQ = termios.FIONREAD
IO_TIMEOUT = 120  # SO_RCVTIMEO/SO_SNDTIMEO of every socket: a hang becomes EAGAIN
GATE = 32 << 10  # reads whose result must not depend on timing wait for this much at most
RSIZE = MAX_XFER + 64 * PAGE  # a region of same-bytes: the largest call at any alignment
RPAGES = RSIZE // PAGE
PROT_RW = mmap.PROT_READ | mmap.PROT_WRITE
CAP_IPC_LOCK = 14

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.send.restype = libc.recv.restype = ctypes.c_ssize_t
libc.send.argtypes = libc.recv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
MAP_FAILED = ctypes.c_void_p(-1).value


class Fail(Exception):
    """A step that cannot go on (the run stops with a failed check)."""


# -- output ----------------------------------------------------------------

class Report:
    def __init__(self, prefix):
        self.prefix = prefix
        self.failed = 0
        self.lock = threading.Lock()

    def check(self, ok, name, why=""):
        with self.lock:
            if ok:
                print("ok %s%s" % (self.prefix, name), flush=True)
            else:
                self.failed += 1
                why = " / ".join(str(why or "failed").splitlines())
                print("not ok %s%s # %s" % (self.prefix, name, why), flush=True)
        return ok

    def expect(self, name, want, got):
        return self.check(want == got, name, "wanted %s, got %s" % (want, got))

    def skip(self, name, why):
        print("ok %s%s # SKIP %s" % (self.prefix, name, why), flush=True)

    @staticmethod
    def diag(msg):
        for line in str(msg).splitlines():
            print("# " + line, flush=True)

    @staticmethod
    def result(key, *vals):
        print("= %s %s" % (key, " ".join(str(v) for v in vals)), flush=True)


def ename(e):
    """An errno (or OSError) by its name (EOPNOTSUPP, not Python's ENOTSUP)."""
    n = e.errno if isinstance(e, OSError) else e
    return "EOPNOTSUPP" if n == errno.EOPNOTSUPP else errno.errorcode.get(n, str(n))


def outcome(fn):
    """'ok' (or the value) when fn() returns, the errno name when it raises OSError."""
    try:
        v = fn()
        return "ok" if v is None else v
    except OSError as e:
        return ename(e)


# -- namespaces, sockets, regions --------------------------------------------

def setns(name):
    fd = os.open("/run/netns/" + name, os.O_RDONLY)
    try:
        if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
            raise Fail("setns %s: %s" % (name, ename(ctypes.get_errno())))
    finally:
        os.close(fd)


def set_io_timeout(s, secs=IO_TIMEOUT):
    tv = struct.pack("ll", secs, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)


def enable(s):
    s.setsockopt(SOL_TCP, TCP_ULP, ULP)


def ulp_of(s):
    return s.getsockopt(SOL_TCP, TCP_ULP, 16).split(b"\0")[0].decode()


def sock_stats(s):
    return dict(zip(STATS, struct.unpack("6Q", s.getsockopt(SOL_ZCSOCK, ZCSOCK_STATS, 48))))


def threshold(s):
    return struct.unpack("I", s.getsockopt(SOL_ZCSOCK, ZCSOCK_COPY_THRESHOLD, 4))[0]


def set_threshold(s, n):
    s.setsockopt(SOL_ZCSOCK, ZCSOCK_COPY_THRESHOLD, struct.pack("I", n))


def inq(s):
    return struct.unpack("i", fcntl.ioctl(s.fileno(), SIOCINQ, b"\0" * 4))[0]


def wait_inq(s, n, secs=IO_TIMEOUT):
    """Waits until n bytes are queued to read (then a read of n is not short)."""
    end = time.monotonic() + secs
    while inq(s) < n:
        if time.monotonic() > end:
            raise Fail("waited %d s for %d queued bytes, have %d" % (secs, n, inq(s)))
        time.sleep(0.0005)


def parse_proc(text):
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 2 and f[1].isdigit():
            out[f[0]] = int(f[1])
    return out


class Env:
    """Where the ends live and what they use (zcsock or plain)."""

    def __init__(self, a):
        self.zc = a.mode == "zcsock"
        self.local = a.local
        self.srv_ns = None if a.local else a.server_ns
        self.cli_ns = None if a.local else a.client_ns
        self.ip = "127.0.0.1" if a.local else a.server_ip
        self.threshold = a.threshold
        if self.zc:
            # Regions count against RLIMIT_MEMLOCK; root may raise it (and
            # with CAP_IPC_LOCK it does not apply anyway).
            try:
                resource.setrlimit(resource.RLIMIT_MEMLOCK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            except (ValueError, OSError):
                pass

    def enter(self, ns):
        if ns:
            setns(ns)

    def proc(self, ns):
        """/proc/net/zcsock_stat of namespace ns, or None without it."""
        self.enter(ns)
        try:
            with open("/proc/thread-self/net/zcsock_stat") as f:
                return parse_proc(f.read())
        except FileNotFoundError:
            return None

    @staticmethod
    def small_rcvbuf(s):
        """Reads that wait for GATE queued bytes need a receive buffer that
        holds them: where tcp_rmem starts below 4 * GATE (not by default),
        the socket gets that much, fixed."""
        with open("/proc/sys/net/ipv4/tcp_rmem") as f:
            if int(f.read().split()[1]) < 4 * GATE:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * GATE)

    def pair(self, ulp=None, order=("before", "before")):
        """A connected (client in a, server in b) pair; with the ULP set on
        the listener (before or after listen: the server inherits it) and on
        the client (before or after connect)."""
        ulp = self.zc if ulp is None else ulp
        self.enter(self.srv_ns)
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.small_rcvbuf(lst)
        lst.bind((self.ip, 0))
        if ulp and order[0] == "before":
            enable(lst)
        lst.listen(8)
        if ulp and order[0] == "after":
            enable(lst)
        self.enter(self.cli_ns)
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.small_rcvbuf(c)
        if ulp and order[1] == "before":
            enable(c)
        set_io_timeout(c)
        c.connect((self.ip, lst.getsockname()[1]))
        if ulp and order[1] == "after":
            enable(c)
        s, _ = lst.accept()
        lst.close()
        set_io_timeout(s)
        if ulp and self.threshold is not None:
            for x in (c, s):
                set_threshold(x, self.threshold)
        return c, s

    def region(self, size):
        """A region (zcsock) or anonymous shared memory (plain) of size bytes."""
        if not self.zc:
            return mmap.mmap(-1, size, mmap.MAP_SHARED, PROT_RW)
        fd = os.open(DEVICE, os.O_RDWR)
        try:
            return mmap.mmap(fd, size, mmap.MAP_SHARED, PROT_RW)
        finally:
            os.close(fd)  # the mmap object holds its own duplicate


def aligned(n, align):
    """n bytes of ordinary (malloc'd) memory starting at align within a page."""
    ba = bytearray(n + PAGE)
    c = ctypes.c_char.from_buffer(ba)
    addr = ctypes.addressof(c)
    del c
    off = (align - addr) % PAGE
    return memoryview(ba)[off:off + n]


def both(fa, fb, what, socks=()):
    """fa here and fb on a second thread, at once; the first error stops the
    run (and shuts socks down, so the other end does not wait on)."""
    errs = []

    def run(fn, end):
        try:
            fn()
        except BaseException as e:  # any error ends the step
            errs.append("%s, end %s: %s\n%s" % (what, end, e, traceback.format_exc()))
            for x in socks:
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    t = threading.Thread(target=run, args=(fb, "b"), daemon=True)
    t.start()
    run(fa, "a")
    t.join(IO_TIMEOUT + 60)
    if t.is_alive():
        errs.append("%s: end b did not finish" % what)
    if errs:
        raise Fail("\n".join(errs))


def watchdog(secs, rep, name):
    def fire(*_):
        rep.check(False, name, "timed out after %d s" % secs)
        os._exit(3)
    signal.signal(signal.SIGALRM, fire)
    signal.alarm(secs)


# -- same-bytes: the plan ------------------------------------------------------

def pick_align(r, zero=0.25):
    if r.random() < zero:
        return 0
    return r.choice((1, 8, 511, PAGE // 2, PAGE - 1, r.randrange(PAGE), r.randrange(PAGE)))


def pick_size(r, cap):
    k = r.random()
    if k < 0.2:
        n = r.choice((1, 2, 3, 63, 100, 1000, 1460, 2047, 2048, 2049, 4095))
    elif k < 0.45:
        n = PAGE * r.randint(1, 48) + r.choice((-1, 0, 0, 1))
    else:
        n = int(2 ** r.uniform(0, 21))
    return max(1, min(n, cap))


def split(r, n, parts):
    parts = max(1, min(parts, n))
    cuts = sorted(r.sample(range(1, n), parts - 1)) if parts > 1 else []
    edges = [0] + cuts + [n]
    return [edges[i + 1] - edges[i] for i in range(parts)]


def place(r, lens, p_region, zero=0.25):
    """Buffers for pieces of lens bytes: ("r", offset) in the end's region,
    the pieces of one call apart from each other, or ("o", align) ordinary."""
    kinds = ["r" if r.random() < p_region else "o" for _ in lens]
    aligns = [pick_align(r, zero) for _ in lens]
    pages = [(a + n + PAGE - 1) // PAGE for a, n in zip(aligns, lens)]
    need = sum(p for k, p in zip(kinds, pages) if k == "r")
    page = r.randrange(RPAGES - need + 1)
    specs = []
    for k, a, n, p in zip(kinds, aligns, lens, pages):
        if k == "r":
            specs.append(("r", page * PAGE + a, n))
            page += p
        else:
            specs.append(("o", a, n))
    return specs


def plan_send(r, n):
    ops = []
    for part in split(r, n, r.choice((1, 1, 1, 2, 3, 4))):
        m = r.choice(("send", "send", "write", "sendmsg", "sendmsg", "nb-poll", "nb-epoll"))
        lens = split(r, part, r.randint(1, 4)) if m == "sendmsg" else [part]
        flags = socket.MSG_MORE if m in ("send", "sendmsg") and r.random() < 0.3 else 0
        ops.append((m, flags, place(r, lens, 0.6)))
    m, _, specs = ops[-1]
    ops[-1] = (m, 0, specs)  # nothing held back at the end of a message
    return ops


def plan_recv(r, n):
    ops, left = [], n
    while left:
        if len(ops) >= 10:
            kind, size = "waitall", left
        else:
            kinds = ["waitall", "waitall", "recv", "peek", "readv", "recvmsg", "nb-poll", "nb-epoll"]
            if left <= GATE:
                kinds.append("short")
            kind = r.choice(kinds)
            size = left if r.random() < 0.4 else min(left, max(1, int(2 ** r.uniform(0, 23))))
            if kind in ("recv", "peek", "readv"):
                size = min(size, GATE)
        if kind == "short":
            size = left
            specs = place(r, [size + r.randint(1, 1000)], 0.5, zero=0.5)
        elif kind in ("readv", "recvmsg"):
            specs = place(r, split(r, size, r.randint(1, 3)), 0.5, zero=0.5)
        else:
            specs = place(r, [size], 0.5, zero=0.5)
        ops.append((kind, size, specs))
        if kind != "peek":
            left -= size
    if r.random() < 0.3:
        ops.append(("eagain", 0, [("o", 0, 16)]))
    return ops


def make_plan(seed, budget, messages, align_step, largest):
    r = random.Random(seed)
    sizes, cap = [], max(4 * PAGE, min(2 << 20, (budget - largest) // 4))
    for _ in range(messages):
        sizes.append(pick_size(r, cap))
        if sum(sizes) > budget - largest:
            break
    if largest:
        sizes.insert(r.randrange(len(sizes) + 1), largest)
    msgs = []
    for i, n in enumerate(sizes):
        data = random.Random("%d-%d" % (seed, i)).randbytes(n)
        d = "ab" if r.random() < 0.6 else "ba"
        msgs.append((d, data, plan_send(r, n), plan_recv(r, n)))
    # The alignment sweep: every alignment a with a % step == seed % step
    # (and 0, 1, PAGE - 1), a head to the page end, one whole page, a tail.
    aligns = sorted({0, 1, PAGE - 1} | set(range(seed % align_step, PAGE, align_step)))
    sweep_dir = "ab" if seed % 2 else "ba"
    sweep = [(a, (PAGE - a) % PAGE + PAGE + (a * 7) % 301 + 1) for a in aligns]
    sweep_data = random.Random("%d-sweep" % seed).randbytes(sum(n for _, n in sweep))
    final = random.Random("%d-final" % seed).randbytes(pick_size(r, 1 << 20) + (256 << 10))
    final_ops = plan_send(r, len(final))
    # Where the ULP goes on: the listener before listen() (a live listener
    # refuses it), the client before or after connect() by the seed.
    order = ("before", ("before", "after")[seed % 2])
    return msgs, (sweep_dir, sweep, sweep_data), (final, final_ops), order


# -- same-bytes: the ends -------------------------------------------------------

class End:
    def __init__(self, name, sock, region):
        self.name, self.sock, self.region = name, sock, region
        self.rv = memoryview(region)
        self.log = []
        self.sent = self.rcvd = self.peeked = 0
        self.h = None  # the sha256 of the stream it is receiving
        self.region_pages = 0  # whole region pages in the buffers it sent
        self.big_region_sends = 0  # region buffers holding a whole page, of at least the threshold
        self.threshold = 0

    def L(self, *parts):
        self.log.append(" ".join(str(p) for p in parts))

    def buf(self, spec):
        kind, where, n = spec
        if kind == "r":
            return self.rv[where:where + n]
        return aligned(n, where)

    @staticmethod
    def tag(specs):
        return ",".join("%s%d:%d" % (k, w % PAGE, n) for k, w, n in specs)

    def count_tx(self, specs):
        for kind, where, n in specs:
            if kind != "r":
                continue
            whole = max(0, (where + n) // PAGE - (where + PAGE - 1) // PAGE)
            self.region_pages += whole
            if whole and n >= self.threshold:
                self.big_region_sends += 1

    # sending
    def send_op(self, op, data, pos):
        m, flags, specs = op
        views = []
        for spec in specs:
            v = self.buf(spec)
            v[:] = data[pos:pos + spec[2]]
            pos += spec[2]
            views.append(v)
        total = sum(s[2] for s in specs)
        self.count_tx(specs)
        s = self.sock
        if m.startswith("nb-"):
            done = self.nb_io(views[0], total, m, True)
            self.L(m, self.tag(specs), "->", done)
        else:
            done = 0
            while done < total:  # a blocking send is whole; a short one is logged
                if m == "send":
                    k = s.send(views[0][done:], flags)
                elif m == "write":
                    k = os.write(s.fileno(), views[0][done:])
                else:
                    k = s.sendmsg(views, [], flags) if done == 0 else s.send(b"".join(views)[done:])
                self.L(m, flags, self.tag(specs), "->", k)
                done += k
        self.sent += total
        return pos

    def nb_io(self, view, size, how, send):
        """send (or receive) size bytes of view on the socket made
        non-blocking, waiting in poll or epoll; how many moved."""
        s = self.sock
        s.setblocking(False)
        p = select.epoll() if how == "nb-epoll" else select.poll()
        if how == "nb-epoll":
            p.register(s.fileno(), select.EPOLLOUT if send else select.EPOLLIN)
        else:
            p.register(s.fileno(), select.POLLOUT if send else select.POLLIN)
        done, end = 0, time.monotonic() + IO_TIMEOUT
        try:
            while done < size:
                try:
                    k = s.send(view[done:size]) if send else s.recv_into(view[done:], size - done)
                    if k == 0:
                        break
                    done += k
                except BlockingIOError:
                    if time.monotonic() > end:
                        raise Fail("non-blocking %s stuck at %d of %d" % ("send" if send else "receive", done, size))
                    p.poll(1.0)
        finally:
            if how == "nb-epoll":
                p.close()
            s.setblocking(True)
            set_io_timeout(s)
        return done

    # receiving
    def recv_op(self, op, data, pos, rep):
        kind, size, specs = op
        s = self.sock
        size = min(size, len(data) - pos) if kind != "eagain" else 0
        views = [self.buf(sp) for sp in specs]
        v = views[0]
        if kind == "waitall":
            k = s.recv_into(v, size, socket.MSG_WAITALL)
        elif kind == "recv":
            wait_inq(s, size)
            k = s.recv_into(v, size)
        elif kind == "short":
            wait_inq(s, size)
            k = s.recv_into(v, len(v))
        elif kind == "peek":
            wait_inq(s, size)
            k = s.recv_into(v, size, socket.MSG_PEEK)
        elif kind == "readv":
            wait_inq(s, size)
            k = os.readv(s.fileno(), views)
        elif kind == "recvmsg":
            k, _, mflags, _ = s.recvmsg_into(views, 0, socket.MSG_WAITALL)
            self.L("recvmsg-flags", mflags)
        elif kind.startswith("nb-"):
            k = self.nb_io(v, size, kind, False)
        else:  # eagain: nothing more of this message may be readable
            s.setblocking(False)
            try:
                k = "data %d" % s.recv_into(v, len(v))
            except BlockingIOError:
                k = "EAGAIN"
            finally:
                s.setblocking(True)
                set_io_timeout(s)
            self.L(kind, "->", k)
            return pos
        self.L(kind, size, self.tag(specs), "->", k)
        got = b"".join(bytes(x) for x in views)[:k]
        if got != data[pos:pos + k]:
            bad = next(i for i in range(k) if got[i] != data[pos + i])
            rep.check(False, "%s: bytes of %s at stream offset +%d" % (self.name, kind, pos + bad),
                      "differ from those sent")
            raise Fail("stream corrupted")
        if kind == "peek":
            self.peeked += k
            return pos
        self.h.update(got)
        self.rcvd += k
        return pos + k


def same_bytes(a, rep):
    env = Env(a)
    msgs, (sweep_dir, sweep, sweep_data), (final, final_ops), order = make_plan(
        a.seed, a.budget, a.messages, a.align_step, a.largest)
    total = sum(len(m[1]) for m in msgs) + len(sweep_data) + len(final)
    rep.diag("seed %d: %d messages, %d sweep alignments, %d bytes in all, ULP %s listen / %s connect"
             % (a.seed, len(msgs), len(sweep), total, *order))
    before = {ns: env.proc(ns) for ns in (env.cli_ns, env.srv_ns)} if env.zc else {}
    c, s = env.pair(order=order)
    ea, eb = End("a", c, env.region(RSIZE)), End("b", s, env.region(RSIZE))
    if env.zc:
        rep.expect("client socket has the ULP", "zcsock", ulp_of(c))
        rep.expect("accepted socket inherits the listener's ULP", "zcsock", ulp_of(s))
        for e in (ea, eb):
            e.threshold = threshold(e.sock)
        rep.result("threshold", ea.threshold, eb.threshold)
        if env.threshold is not None:
            rep.expect("ZCSOCK_COPY_THRESHOLD reads back what was set", (env.threshold,) * 2,
                       (ea.threshold, eb.threshold))
    streams = {"ab": [hashlib.sha256(), hashlib.sha256(), 0], "ba": [hashlib.sha256(), hashlib.sha256(), 0]}
    if a.inject is not None:
        # The harness must be able to fail: one byte of one message flips on
        # the sender's side only.
        i = a.inject % len(msgs)
        d, data, so, ro = msgs[i]
        bad = bytearray(data)
        bad[len(bad) // 2] ^= 0x40
        msgs[i] = (d, data, so, ro, bytes(bad))
    t0 = time.monotonic()
    for i, m in enumerate(msgs):
        d, data, sops, rops = m[:4]
        tx_data = m[4] if len(m) > 4 else data
        tx, rx = (ea, eb) if d == "ab" else (eb, ea)
        tx.L("msg", i, d, len(data))
        rx.L("msg", i, d, len(data))

        def send(tx=tx, sops=sops, tx_data=tx_data):
            pos = 0
            for op in sops:
                pos = tx.send_op(op, tx_data, pos)

        def recv(rx=rx, rops=rops, data=data, d=d):
            pos = 0
            for op in rops:
                pos = rx.recv_op(op, data, pos, rep)
            if pos < len(data):  # someone read short: fetch the rest
                v = aligned(len(data) - pos, 0)
                k = rx.sock.recv_into(v, len(v), socket.MSG_WAITALL)
                rx.L("drain", len(v), "->", k)
                if bytes(v[:k]) != data[pos:pos + k]:
                    raise Fail("stream corrupted (drain)")
                rx.h.update(v[:k])
                rx.rcvd += k
                pos += k
        rx.h = streams[d][1]
        streams[d][0].update(data)
        streams[d][2] += len(data)
        if tx is ea:
            both(send, recv, "message %d" % i, (c, s))
        else:
            both(recv, send, "message %d" % i, (c, s))
    rep.diag("messages took %.1f s" % (time.monotonic() - t0))

    # The sweep, without lockstep: exact lengths both sides.
    t0 = time.monotonic()
    tx, rx = (ea, eb) if sweep_dir == "ab" else (eb, ea)

    def sweep_send():
        pos = 0
        for i, (al, n) in enumerate(sweep):
            spec = ("r", (i % 256) * 3 * PAGE + al, n)
            pos = tx.send_op(("send", 0, [spec]), sweep_data, pos)

    def sweep_recv():
        pos = 0
        for i, (al, n) in enumerate(sweep):
            kind = "o" if i % 3 == 2 else "r"
            ra = (al * 1031) % PAGE
            spec = (kind, (i % 256) * 3 * PAGE + ra if kind == "r" else ra, n)
            pos = rx.recv_op(("waitall", n, [spec]), sweep_data, pos, rep)
    rx.h = streams[sweep_dir][1]
    streams[sweep_dir][0].update(sweep_data)
    streams[sweep_dir][2] += len(sweep_data)
    if tx is ea:
        both(sweep_send, sweep_recv, "sweep", (c, s))
    else:
        both(sweep_recv, sweep_send, "sweep", (c, s))
    rep.diag("sweep took %.1f s" % (time.monotonic() - t0))

    # Per-socket counters, before the end.
    if env.zc:
        for e in (ea, eb):
            st = sock_stats(e.sock)
            rep.result("stats " + e.name, " ".join("%s=%d" % kv for kv in st.items()))
            rep.expect("%s: tx_bytes_by_ref + tx_bytes_copied = bytes sent" % e.name, e.sent,
                       st["tx_bytes_by_ref"] + st["tx_bytes_copied"])
            # (a non-blocking send may leave with part of its last page)
            rep.check(0 < st["tx_bytes_by_ref"] <= PAGE * st["tx_pages_by_ref"]
                      or st["tx_bytes_by_ref"] == st["tx_pages_by_ref"] == 0,
                      "%s: tx_bytes_by_ref fits its pages" % e.name, "%d bytes, %d pages"
                      % (st["tx_bytes_by_ref"], st["tx_pages_by_ref"]))
            rep.check((st["tx_pages_by_ref"] > 0 or e.big_region_sends == 0)
                      and st["tx_pages_by_ref"] <= e.region_pages,
                      "%s: 0 < tx_pages_by_ref <= whole region pages sent" % e.name,
                      "%d pages by reference, %d whole region pages in %d sends of at least %d bytes"
                      % (st["tx_pages_by_ref"], e.region_pages, e.big_region_sends, e.threshold))
            rx_all = st["rx_bytes_remapped"] + st["rx_bytes_copied"]
            rep.check(e.rcvd <= rx_all <= e.rcvd + e.peeked,
                      "%s: rx_bytes_remapped + rx_bytes_copied = bytes received (+ peeked)" % e.name,
                      "%d, received %d, peeked %d" % (rx_all, e.rcvd, e.peeked))

    # The end: a shuts its sending side, b reads end of file; b sends a last
    # stream and closes at once, with data in flight; a reads to the end.
    def shut_a():
        c.shutdown(socket.SHUT_WR)
        ea.L("shutdown SHUT_WR")

    def eof_b():
        v = aligned(100, 0)
        eb.L("recv after FIN ->", s.recv_into(v, 100), s.recv_into(v, 100))
    both(shut_a, eof_b, "shutdown", (c, s))
    ea.L("send after SHUT_WR ->", outcome(lambda: c.send(b"x")))

    def last_b():
        pos = 0
        for op in final_ops:
            pos = eb.send_op(op, final, pos)
        s.close()
        eb.L("close")

    def last_a():
        r, pos, h = random.Random(a.seed), 0, hashlib.sha256()
        calls = 0
        while True:
            spec = ("r", r.randrange(RPAGES // 2) * PAGE + pick_align(r), 1 << r.randint(0, 20)) \
                if r.random() < 0.5 else ("o", pick_align(r), 1 << r.randint(0, 20))
            v = ea.buf(spec)
            k = c.recv_into(v, len(v))
            calls += 1
            if k == 0:
                break
            if bytes(v[:k]) != final[pos:pos + k]:
                raise Fail("last stream corrupted at +%d" % pos)
            h.update(v[:k])
            pos += k
        ea.L("read to end of file ->", pos)
        streams["final"] = [hashlib.sha256(final), h, len(final)]
        rep.expect("last stream, sent then closed at once, arrives whole", len(final), pos)
    both(last_a, last_b, "close with data in flight", (c,))
    c.close()

    transcript = hashlib.sha256()
    for d in ("ab", "ba", "final"):
        want, got, n = streams[d]
        rep.check(want.digest() == got.digest(), "%s stream intact (%d bytes)" % (d.replace("ab", "a>b").replace("ba", "b>a"), n),
                  "sent %s, received %s" % (want.hexdigest()[:16], got.hexdigest()[:16]))
        rep.result("rx", d, got.hexdigest(), n)
        transcript.update(got.digest())
    log = ["a " + x for x in ea.log] + ["b " + x for x in eb.log]
    rep.result("transcript", transcript.hexdigest())
    rep.result("calls", hashlib.sha256("\n".join(log).encode()).hexdigest(), len(log))
    if a.log:
        with open(a.log, "w") as f:
            f.write("\n".join(log) + "\n")
    if env.zc:
        for ns, tag in ((env.cli_ns, "a"), (env.srv_ns, "b")):
            after = env.proc(ns)
            if before.get(ns) is None or after is None:
                rep.check(False, "/proc/net/zcsock_stat in namespace %s" % tag, "missing")
                continue
            rep.result("proc " + tag, " ".join("%s=+%d" % (k, after.get(k, 0) - before[ns].get(k, 0))
                                               for k in PROC_NAMES))
            rep.check(after.get("ZcsockTxPagesByRef", 0) > before[ns].get("ZcsockTxPagesByRef", 0),
                      "ZcsockTxPagesByRef grew in namespace %s" % tag)


# -- copy-on-write ------------------------------------------------------------

def pat(seq):
    return struct.pack("<Q", seq) * (PAGE // 8)


def poison(seq):
    return struct.pack("<Q", seq | (1 << 63)) * (PAGE // 8)


def page_verdict(page, seq):
    """'' when page holds pat(seq), else what it holds."""
    if page == pat(seq):
        return ""
    words = struct.unpack("<%dQ" % (PAGE // 8), page)
    mine = sum(w == seq for w in words)
    late = sum(w == seq | (1 << 63) for w in words)
    return "page %d: %d words its own, %d overwritten after send, %d other (first %#x)" % (
        seq, mine, late, len(words) - mine - late, words[0])


class PageReceiver:
    """Reads count chunks of k pages and checks page i of the stream is pat(i)."""

    def __init__(self, sock, count, k, rep, name):
        self.sock, self.count, self.k, self.rep, self.name = sock, count, k, rep, name
        self.bad = 0
        self.pages = 0
        self.error = None

    def run(self):
        try:
            self.receive()
        except (Fail, OSError) as e:
            self.error = e

    def receive(self):
        v = aligned(self.k * PAGE, 0)
        for i in range(self.count):
            n = self.sock.recv_into(v, len(v), socket.MSG_WAITALL)
            if n != len(v):
                raise Fail("chunk %d: received %d of %d bytes" % (i, n, len(v)))
            for j in range(self.k):
                why = page_verdict(bytes(v[j * PAGE:(j + 1) * PAGE]), i * self.k + j)
                if why:
                    self.bad += 1
                    if self.bad <= 5:
                        self.rep.diag(why)
            self.pages += self.k

    def report(self):
        want = self.count * self.k
        self.rep.check(self.bad == 0 and self.pages == want and not self.error,
                       "%s: each of %d pages arrived as it was at send()" % (self.name, want),
                       "%d pages differ, %d arrived%s" % (self.bad, self.pages,
                                                         ", then %s" % self.error if self.error else ""))


def cow_counters(env, rep, name, before, pages_sent):
    if not env.zc:
        return
    after = env.proc(env.cli_ns)
    if before is None or after is None:
        rep.check(False, name + ": /proc/net/zcsock_stat", "missing")
        return
    d = {k: after.get(k, 0) - before.get(k, 0) for k in PROC_NAMES}
    rep.result("proc a", " ".join("%s=+%d" % kv for kv in d.items()))
    rep.check(d["ZcsockTxCowFaults"] > 0, name + ": ZcsockTxCowFaults grew",
              "+%d with %d pages sent and overwritten" % (d["ZcsockTxCowFaults"], pages_sent))
    rep.check(d["ZcsockTxPagesByRef"] > 0, name + ": ZcsockTxPagesByRef grew", "+0")


def settle(env, rep, name, ns, base, names=("ZcsockCurrSockets", "ZcsockRegionPages"), secs=20):
    """Counters of gauges back at their values of before (sockets closed,
    regions gone), polled for a bounded time."""
    if not env.zc or base is None:
        return
    end = time.monotonic() + secs
    while True:
        now = env.proc(ns) or {}
        diff = {k: now.get(k, 0) - base.get(k, 0) for k in names}
        if not any(diff.values()) or time.monotonic() > end:
            break
        time.sleep(0.1)
    rep.check(not any(diff.values()), name + ": %s back where they were" % " and ".join(names),
              " ".join("%s %+d" % kv for kv in diff.items()))


def cow(a, rep):
    """The sender fills k region pages with their sequence numbers, sends
    them and at once overwrites them (cow: itself; cow-fork: a forked child
    sharing the region, while the parent goes on sending)."""
    env = Env(a)
    k, chunks = a.chunk, max(1, a.pages // a.chunk)
    slots = 4 if a.cmd == "cow-fork" else 2
    name = a.cmd
    before = env.proc(env.cli_ns) if env.zc else None
    region = env.region(slots * k * PAGE)
    rv = memoryview(region)
    child = None
    if a.cmd == "cow-fork":
        p2c, c2p = os.pipe(), os.pipe()
        child = os.fork()
        if child == 0:  # the writer: poison the pages of each sent chunk
            os.close(p2c[1])
            os.close(c2p[0])
            signal.alarm(a.timeout)
            with os.fdopen(p2c[0], "rb", 0) as cmd, os.fdopen(c2p[1], "wb", 0) as ack:
                while True:
                    b = cmd.read(16)
                    if len(b) < 16:
                        os._exit(0)
                    slot, seq = struct.unpack("<QQ", b)
                    for j in range(k):
                        off = (slot * k + j) * PAGE
                        rv[off:off + PAGE] = poison(seq + j)
                    ack.write(b"!")
        os.close(p2c[0])
        os.close(c2p[1])
        to_child, from_child = os.fdopen(p2c[1], "wb", 0), os.fdopen(c2p[0], "rb", 0)
    c, s = env.pair()
    if env.zc:
        set_threshold(c, PAGE)
    rx = PageReceiver(s, chunks, k, rep, name)
    t = threading.Thread(target=rx.run, daemon=True)
    t.start()
    pending = [None] * slots  # cow-fork: the chunk each slot's poison is on its way for
    unseen = 0
    for i in range(chunks):
        slot = i % slots
        base = slot * k * PAGE
        if pending[slot] is not None:  # the child's poison of this slot is done; the parent sees it
            from_child.read(1)
            seq0 = pending[slot]
            unseen += sum(bytes(rv[base + j * PAGE:base + (j + 1) * PAGE]) != poison(seq0 + j) for j in range(k))
            pending[slot] = None
        for j in range(k):
            rv[base + j * PAGE:base + (j + 1) * PAGE] = pat(i * k + j)
        if a.inject is not None and i == a.inject:
            rv[base:base + PAGE] = poison(i * k)  # the harness must be able to fail
        with rv[base:base + k * PAGE] as part:
            n = c.send(part)
        if n != k * PAGE:
            raise Fail("send returned %d of %d" % (n, k * PAGE))
        if child:
            to_child.write(struct.pack("<QQ", slot, i * k))
            pending[slot] = i * k
        else:
            for j in range(k):
                rv[base + j * PAGE:base + (j + 1) * PAGE] = poison(i * k + j)
    t.join(IO_TIMEOUT + 60)
    if t.is_alive():
        raise Fail("the receiver did not finish")
    rx.report()
    if child:
        for slot, seq0 in enumerate(pending):
            if seq0 is not None:
                from_child.read(1)
                base = slot * k * PAGE
                unseen += sum(bytes(rv[base + j * PAGE:base + (j + 1) * PAGE]) != poison(seq0 + j)
                              for j in range(k))
        to_child.close()
        _, status = os.waitpid(child, 0)
        rep.expect(name + ": the writer child exited cleanly", 0, status)
        rep.check(unseen == 0, name + ": the parent sees the child's writes (the region stays shared)",
                  "%d pages kept the parent's old bytes" % unseen)
    if env.zc:
        st = sock_stats(c)
        rep.result("stats a", " ".join("%s=%d" % kv for kv in st.items()))
    cow_counters(env, rep, name, before, chunks * k)
    c.close()
    s.close()
    rv.release()
    region.close()
    settle(env, rep, name, env.cli_ns, before)


def cow_unmap(a, rep):
    """Each round: a fresh region filled, sent, and unmapped at once with its
    pages in flight (alternately poisoned first); then a new region scribbled
    over, which may reuse freed pages."""
    env = Env(a)
    k, rounds = a.chunk, max(1, a.pages // a.chunk)
    before = env.proc(env.cli_ns) if env.zc else None
    c, s = env.pair()
    if env.zc:
        set_threshold(c, PAGE)
    rx = PageReceiver(s, rounds, k, rep, a.cmd)
    t = threading.Thread(target=rx.run, daemon=True)
    t.start()
    r = random.Random(a.seed)
    for i in range(rounds):
        extra = r.randrange(4)
        m = env.region((k + extra) * PAGE)
        with memoryview(m) as mv:
            for j in range(k):
                mv[j * PAGE:(j + 1) * PAGE] = pat(i * k + j)
            if a.inject is not None and i == a.inject:
                mv[:PAGE] = poison(i * k)  # the harness must be able to fail
            with mv[:k * PAGE] as part:
                n = c.send(part)
            if i % 2:
                for j in range(k):
                    mv[j * PAGE:(j + 1) * PAGE] = poison(i * k + j)
        m.close()
        if n != k * PAGE:
            raise Fail("send returned %d of %d" % (n, k * PAGE))
        scribble = env.region((k + extra) * PAGE)
        scribble.write(b"\xee" * len(scribble))
        scribble.close()
    t.join(IO_TIMEOUT + 60)
    if t.is_alive():
        raise Fail("the receiver did not finish")
    rx.report()
    cow_counters(env, rep, a.cmd, before, rounds * k)
    c.close()
    s.close()
    settle(env, rep, a.cmd, env.cli_ns, before)


def cow_exit(a, rep):
    """Each round: a forked sender maps a region, sends k-page chunks,
    overwrites them and exits at once (no close, no munmap) with its pages in
    flight; the parent receives everything."""
    env = Env(a)
    k = a.chunk
    chunks = max(1, a.pages // a.chunk // a.rounds)
    before = env.proc(env.cli_ns) if env.zc else None
    for rnd in range(a.rounds):
        c, s = env.pair()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                os.close(go_w)
                s.close()
                os.read(go_r, 1)  # the parent has let go of the socket
                if env.zc:
                    set_threshold(c, PAGE)
                m = env.region(2 * k * PAGE)
                mv = memoryview(m)
                for i in range(chunks):
                    base = (i % 2) * k * PAGE
                    for j in range(k):
                        mv[base + j * PAGE:base + (j + 1) * PAGE] = pat(i * k + j)
                    if a.inject is not None and (rnd, i) == (0, a.inject):
                        mv[base:base + PAGE] = poison(i * k)  # the harness must be able to fail
                    if c.send(mv[base:base + k * PAGE]) != k * PAGE:
                        os._exit(4)
                    for j in range(k):
                        mv[base + j * PAGE:base + (j + 1) * PAGE] = poison(i * k + j)
                status = 0
            finally:
                os._exit(status)  # everything still mapped, open and in flight
        os.close(go_r)
        c.close()
        os.write(go_w, b"!")
        os.close(go_w)
        rx = PageReceiver(s, chunks, k, rep, "%s round %d" % (a.cmd, rnd))
        rx.run()
        v = bytearray(16)
        rep.expect("%s round %d: end of file after the last page" % (a.cmd, rnd), 0, s.recv_into(v))
        _, status = os.waitpid(pid, 0)
        rep.expect("%s round %d: the sender exited cleanly" % (a.cmd, rnd), 0, status)
        rx.report()
        s.close()
    cow_counters(env, rep, a.cmd, before, a.rounds * chunks * k)
    settle(env, rep, a.cmd, env.cli_ns, before)


# -- bad use --------------------------------------------------------------------

def raw_mmap(length, flags, fd, off=0, prot=PROT_RW, addr=None):
    """mmap(2) itself (Python's mmap would refuse or adjust some of these)."""
    p = libc.mmap(addr, length, prot, flags, fd, off)
    if p == MAP_FAILED or p is None:
        return None, ename(ctypes.get_errno())
    return p, "ok"


def drop_ipc_lock():
    """Clears CAP_IPC_LOCK from the effective and permitted sets (else
    RLIMIT_MEMLOCK does not apply to root)."""
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (ctypes.c_uint32 * 6)()
    if libc.capget(hdr, data) != 0:
        return False
    data[0] &= ~(1 << CAP_IPC_LOCK)  # effective
    data[1] &= ~(1 << CAP_IPC_LOCK)  # permitted
    return libc.capset(hdr, data) == 0


def in_child(fn):
    """fn() in a forked child; its return value (a short string) back."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = str(fn())
        except BaseException as e:
            out = "exception %r" % e
        os.write(w, out.encode()[:4000])
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    return out


def spanning(kind, npages):
    """npages of a region (zcsock) or anonymous shared memory (plain), with
    the page after it unmapped: (address, fd or -1)."""
    base, why = raw_mmap((npages + 1) * PAGE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, prot=0)  # PROT_NONE
    if base is None:
        raise Fail("reserving address space: " + why)
    fd = -1
    if kind == "zcsock":
        fd = os.open(DEVICE, os.O_RDWR)
        p, why = raw_mmap(npages * PAGE, mmap.MAP_SHARED | 0x10, fd, addr=base)  # MAP_FIXED
    else:
        p, why = raw_mmap(npages * PAGE, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS | 0x10, -1, addr=base)
    if p != base:
        raise Fail("mapping %s at %#x: %s" % (kind, base, why))
    libc.munmap(base + npages * PAGE, PAGE)
    ctypes.memmove(base, random.Random(kind).randbytes(npages * PAGE), npages * PAGE)
    return base, fd


def read_to_eof(s):
    got = b""
    while True:
        b = s.recv(1 << 16)
        if not b:
            return got
        got += b


def send_spanning(env, ulp, addr, length, inside):
    """send(2) of length bytes at addr (inside of them mapped) on a fresh
    connection, from a fresh thread (so TCP's per-thread page fragment starts
    empty, as the plain reference's did); what the call returned and what the
    peer received."""
    c, s = env.pair(ulp=ulp)
    res = {}

    def go():
        rc = libc.send(c.fileno(), addr, length, socket.MSG_NOSIGNAL)
        res["ret"] = rc if rc >= 0 else ename(ctypes.get_errno())
        c.sendall(b"END!")
        c.shutdown(socket.SHUT_WR)
    t = threading.Thread(target=go)
    t.start()
    got = read_to_eof(s)
    t.join()
    c.close()
    s.close()
    want = ctypes.string_at(addr, inside)
    ok = got.endswith(b"END!") and (
        (res["ret"] == "EFAULT" and len(got) == 4) or
        (isinstance(res["ret"], int) and 0 < res["ret"] <= inside and got[:-4] == want[:res["ret"]]))
    return res["ret"], len(got) - 4, ok


def recv_spanning(env, ulp, addr, length, inside):
    """recv(2) into length bytes at addr (inside of them mapped) with 3 pages
    queued: what it returned, and whether the bytes it took and those left
    are the stream's."""
    c, s = env.pair(ulp=ulp)
    data = random.Random("recv-span").randbytes(3 * PAGE)
    c.sendall(data)
    wait_inq(s, len(data))
    rc = libc.recv(s.fileno(), addr, length, 0)
    ret = rc if rc >= 0 else ename(ctypes.get_errno())
    c.close()
    rest = read_to_eof(s)
    s.close()
    took = rc if rc > 0 else 0
    ok = (ret == "EFAULT" or 0 < rc <= inside) and \
        ctypes.string_at(addr, took) == data[:took] and rest == data[took:]
    return ret, ok


def baduse(a, rep):
    env = Env(a)
    env.enter(env.cli_ns)
    try:
        fd = os.open(DEVICE, os.O_RDWR)
    except OSError as e:
        rep.check(False, "open " + DEVICE, ename(e))
        return 2
    sh = mmap.MAP_SHARED
    p, r = raw_mmap(PAGE, sh, fd, off=PAGE)
    rep.expect("mmap at offset 4096: EINVAL", "EINVAL", r)
    p, r = raw_mmap(PAGE, mmap.MAP_PRIVATE, fd)
    rep.expect("mmap MAP_PRIVATE: EINVAL", "EINVAL", r)
    p, r = raw_mmap(0, sh, fd)
    rep.expect("mmap of length 0: EINVAL", "EINVAL", r)
    os.close(fd)
    # An unaligned length: the kernel rounds it up before the driver sees it,
    # so a whole page or EINVAL are both clean; the page must be usable.
    fd = os.open(DEVICE, os.O_RDWR)
    p, r = raw_mmap(PAGE + 1, sh, fd)
    if p:
        ctypes.memset(p, 0x5a, 2 * PAGE)
        libc.munmap(p, 2 * PAGE)
    rep.check(r in ("ok", "EINVAL"), "mmap of length 4097: a usable rounded region or EINVAL (%s)" % r, r)
    os.close(fd)

    fd = os.open(DEVICE, os.O_RDWR)
    p1, r1 = raw_mmap(4 * PAGE, sh, fd)
    rep.expect("first mmap of an open file", "ok", r1)
    p2, r2 = raw_mmap(4 * PAGE, sh, fd)
    rep.expect("second mmap of the same open file: EBUSY", "EBUSY", r2)
    if p2:
        libc.munmap(p2, 4 * PAGE)
    # Another process with the same open file (fork or SCM_RIGHTS) gets no
    # second mapping of it either: a region is one process's mapping.
    r3 = in_child(lambda: raw_mmap(4 * PAGE, sh, fd)[1])
    rep.expect("another process's mmap of a mapped region's file: EBUSY", "EBUSY", r3)
    if p1:
        libc.munmap(p1, 4 * PAGE)
    os.close(fd)

    def over_limit():
        fds = [os.open(DEVICE, os.O_RDWR) for _ in range(3)]
        if not drop_ipc_lock():
            return "capset failed"
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (64 << 10, 64 << 10))
        r1 = raw_mmap(16 << 10, sh, fds[0])[1]
        r2 = raw_mmap(1 << 20, sh, fds[1])[1]
        r3 = raw_mmap(56 << 10, sh, fds[2])[1]
        return "%s %s %s" % (r1, r2, r3)
    r = (in_child(over_limit).split() + ["?"] * 3)[:3]
    rep.diag("RLIMIT_MEMLOCK 64 KiB without CAP_IPC_LOCK: a region of 16 KiB %s, then of 1 MiB %s, "
             "then of 56 KiB %s" % tuple(r))
    rep.expect("region within RLIMIT_MEMLOCK (16 of 64 KiB)", "ok", r[0])
    rep.expect("region beyond RLIMIT_MEMLOCK (1 MiB): ENOMEM", "ENOMEM", r[1])
    rep.expect("regions count together against RLIMIT_MEMLOCK (16 + 56 KiB > 64 KiB): ENOMEM", "ENOMEM", r[2])

    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rep.expect("TCP_ULP zcsock on a UDP socket: ENOPROTOOPT", "ENOPROTOOPT", outcome(lambda: enable(u)))
    u.close()
    try:
        m = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)  # IPPROTO_MPTCP
        rep.expect("TCP_ULP zcsock on an MPTCP socket: EOPNOTSUPP", "EOPNOTSUPP", outcome(lambda: enable(m)))
        m.close()
    except OSError as e:
        rep.skip("TCP_ULP zcsock on an MPTCP socket", "no MPTCP here (%s)" % ename(e))
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    rep.expect("TCP_ULP zcsock on a TCP socket", "ok", outcome(lambda: enable(t)))
    rep.expect("TCP_ULP zcsock twice: EEXIST", "EEXIST", outcome(lambda: enable(t)))
    rep.expect("TCP_ULP reads back zcsock", "zcsock", outcome(lambda: ulp_of(t)))
    rep.expect("ZCSOCK_COPY_THRESHOLD with a 2-byte value: EINVAL", "EINVAL",
               outcome(lambda: t.setsockopt(SOL_ZCSOCK, ZCSOCK_COPY_THRESHOLD, b"\0\1")))
    rep.expect("unknown SOL_ZCSOCK option 99: ENOPROTOOPT", "ENOPROTOOPT",
               outcome(lambda: t.getsockopt(SOL_ZCSOCK, 99, 8)))
    t.close()
    try:
        c, s = env.pair(ulp=True, order=("before", "after"))
        rep.expect("ULP on a socket before listen(): the accepted socket inherits it", "zcsock", ulp_of(s))
        rep.expect("ULP after connect()", "zcsock", ulp_of(c))
        c.close()
        s.close()
    except OSError as e:
        rep.check(False, "ULP before listen() and after connect()", ename(e))

    # A buffer that runs off a region's end into an unmapped page: whatever
    # plain TCP does for the same buffer in ordinary memory (measured here),
    # zcsock does: EFAULT with nothing sent, or a short count whose bytes,
    # and only they, arrive.
    cases = (("300 bytes, 100 in the region", 100, 300),
             ("4 pages, 3 in the region", 3 * PAGE, 4 * PAGE),
             ("3 pages + 200 bytes unaligned, 3 pages + 123 in the region", 3 * PAGE + 123, 3 * PAGE + 200))
    maps = {k: spanning(k, 4) for k in ("plain", "zcsock")}
    for what, inside, length in cases:
        res = {}
        for k, (base, _) in maps.items():
            res[k] = send_spanning(env, k == "zcsock", base + 4 * PAGE - inside, length, inside)
        rep.diag("send of %s: plain TCP %s (%d bytes arrived), zcsock %s (%d bytes arrived)"
                 % (what, res["plain"][0], res["plain"][1], res["zcsock"][0], res["zcsock"][1]))
        same = res["plain"][0] == res["zcsock"][0] or (
            isinstance(res["plain"][0], int) and isinstance(res["zcsock"][0], int))
        rep.check(res["zcsock"][2] and same, "send of %s: what plain TCP does (%s)" % (what, res["plain"][0]),
                  "zcsock: %s with %d bytes arriving" % res["zcsock"][:2])
    for what, inside, length in (("2 pages, 1 + 100 bytes in the region", PAGE + 100, 2 * PAGE),):
        res = {k: recv_spanning(env, k == "zcsock", base + 4 * PAGE - inside, length, inside)
               for k, (base, _) in maps.items()}
        rep.diag("recv into %s: plain TCP %s, zcsock %s" % (what, res["plain"][0], res["zcsock"][0]))
        rep.check(res["zcsock"][1], "recv into %s: what plain TCP may do (%s)" % (what, res["plain"][0]),
                  "zcsock returned %s, or took or left other bytes" % res["zcsock"][0])
    for base, fd in maps.values():
        libc.munmap(base, 4 * PAGE)
        if fd >= 0:
            os.close(fd)
    return 0


# -- probe, hold ---------------------------------------------------------------

def probe(a, rep):
    env = Env(a)
    env.enter(env.cli_ns)
    ok = rep.check(os.path.exists(DEVICE), DEVICE + " exists", "missing")
    if ok:
        try:
            m = env.region(PAGE)
            m[:4] = b"zcsk"
            m.close()
            rep.check(True, "a one-page region maps and is writable")
        except OSError as e:
            ok = rep.check(False, "a one-page region maps and is writable", ename(e))
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ok &= rep.expect("setsockopt(TCP_ULP, zcsock) accepted", "ok", outcome(lambda: enable(t)))
    t.close()
    p = env.proc(env.cli_ns)
    missing = [n for n in PROC_NAMES if p is None or n not in p]
    ok &= rep.check(not missing, "/proc/net/zcsock_stat has its seven counters",
                    "file missing" if p is None else "missing " + " ".join(missing))
    return 0 if ok else 2


def loopback_pair(ulp_client):
    """A connected pair over loopback: the accepted end inherits the ULP of
    its listener (closed), the client has it if ulp_client."""
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.bind(("127.0.0.1", 0))
    enable(lst)
    lst.listen(1)
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if ulp_client:
        enable(c)
    c.connect(lst.getsockname())
    s, _ = lst.accept()
    lst.close()
    return c, s


def hold(a, rep):
    """Holds zcsock sockets (a connected pair over loopback, both with the
    ULP, the listener closed) or a region, prints 'ready PID ...', and lets go
    when stdin closes."""
    env = Env(a)
    env.enter(env.cli_ns)
    keep = []
    if a.what == "socket":
        c, s = loopback_pair(True)
        c.sendall(b"x" * 3 * PAGE)
        keep = [c, s]
        print("ready %d fds %d %d" % (os.getpid(), c.fileno(), s.fileno()), flush=True)
    elif a.what == "inflight":
        # An accepted socket (a clone of a zcsock listener) whose last
        # segments outlive it: after "ready", the caller holds back lo's
        # egress and writes a line; the accepted socket sends, both close at
        # once (SO_LINGER 0: destroyed now), "closed" follows. The segments
        # still hold the socket's memory, freed when the caller lets them go.
        c, s = loopback_pair(False)
        print("ready %d fds %d %d" % (os.getpid(), c.fileno(), s.fileno()), flush=True)
        sys.stdin.readline()
        s.setblocking(False)
        sent = s.send(b"y" * 4 * PAGE)
        for x in (s, c):
            x.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            x.close()
        print("closed %d" % sent, flush=True)
    else:
        m = env.region(a.pages * PAGE)
        m.write(b"\x11" * len(m))
        keep = [m]
        print("ready %d pages %d" % (os.getpid(), a.pages), flush=True)
    sys.stdin.read()
    for x in keep:
        x.close()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--local", action="store_true", help="both ends here on 127.0.0.1 (no namespaces)")
    ap.add_argument("--server-ns", default="b")
    ap.add_argument("--client-ns", default="a")
    ap.add_argument("--server-ip", default=os.environ.get("ZC_IP_B", "198.18.0.2"))
    ap.add_argument("--mode", choices=("zcsock", "plain"), default="zcsock")
    ap.add_argument("--threshold", type=int, help="ZCSOCK_COPY_THRESHOLD to set on every zcsock socket")
    ap.add_argument("--timeout", type=int, default=600, help="watchdog, seconds")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--inject", type=int, help="corrupt on purpose (message/chunk N): the check must fail")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("same-bytes")
    sp.add_argument("--budget", type=int, default=16 << 20, help="bytes of the messages, about")
    sp.add_argument("--largest", type=int, default=MAX_XFER, help="one message of this size among them (0: none)")
    sp.add_argument("--messages", type=int, default=40)
    sp.add_argument("--align-step", type=int, default=16, help="1: every alignment in a page")
    sp.add_argument("--log", help="write the per-call result log here")
    for c in ("cow", "cow-fork", "cow-unmap", "cow-exit"):
        sp = sub.add_parser(c)
        sp.add_argument("--pages", type=int, default=1024, help="pages sent in all")
        sp.add_argument("--chunk", type=int, default=4, help="pages a send")
        sp.add_argument("--rounds", type=int, default=4, help="cow-exit: sender processes")
    sub.add_parser("baduse")
    sub.add_parser("probe")
    sp = sub.add_parser("hold")
    sp.add_argument("what", choices=("socket", "region", "inflight"))
    sp.add_argument("--pages", type=int, default=16)
    a = ap.parse_args()
    if a.cmd == "same-bytes" and not 0 <= a.largest <= MAX_XFER:
        ap.error("--largest: 0 to %d" % MAX_XFER)
    if a.cmd in ("baduse", "probe", "hold"):
        a.mode = "zcsock"
    prefix = {"same-bytes": "same-bytes seed %d %s: " % (a.seed, a.mode)}.get(a.cmd, "")
    if a.cmd.startswith("cow") and a.mode == "plain":
        prefix = "plain: "
    rep = Report(prefix)
    watchdog(a.timeout, rep, a.cmd)
    fn = {"same-bytes": same_bytes, "cow": cow, "cow-fork": cow, "cow-unmap": cow_unmap, "cow-exit": cow_exit,
          "baduse": baduse, "probe": probe, "hold": hold}[a.cmd]
    t0 = time.monotonic()
    try:
        rc = fn(a, rep) or 0
    except (Fail, OSError) as e:
        rep.check(False, a.cmd + " ran to the end", ("%s: %s" % (type(e).__name__, e)).splitlines()[0])
        rep.diag(str(e) if isinstance(e, Fail) else traceback.format_exc())
        rc = 2 if isinstance(e, OSError) and a.mode == "zcsock" else 1
    rep.diag("%s took %.1f s" % (a.cmd, time.monotonic() - t0))
    sys.exit(rc or (1 if rep.failed else 0))


if __name__ == "__main__":
    main()
