#!/usr/bin/env python3
"""zcsock's randomized stress (issue 43): sends, receives, writes, fork(),
munmap(), exit(), close(), urgent data and threads, mixed at random with a
fixed seed, over loopback in the current namespace.

  zcsock_stress.py [--seconds S] [--seed N] [--workers W] [--links L]
                   [--mode zcsock|plain] [--inject]

W worker processes (seeds N*1000+w) each map a region of /dev/zcsock and
open L zcsock pairs (copy threshold one page, SO_OOBINLINE on). Each link
carries one stream whose byte at offset o is fixed by (worker, link, o), so
a receiver checks every byte it gets whatever the sizes and alignments. Each
step is one of:

  send       the stream's next bytes written into a slot of the region and
             sent (MSG_DONTWAIT, partial sends allowed); then the slot is
             overwritten at once (copy-on-write) or kept, and a kept slot
             must still hold what was written when it is next used: no
             receiver's write reaches a sender's page
  recv       received into a slot (at times MSG_WAITALL), checked, then
             overwritten (the remapped pages are the receiver's alone)
  oob        one byte of the stream sent with MSG_OOB (inline at the peer)
  thread     a thread sends while the worker receives the same link
  fork-send  a child sends from the shared region, overwrites and exits
             with its pages in flight, never closing
  fork-recv  a child receives, checks, overwrites and exits
  fork-write a child overwrites the slot just sent, and exits
  munmap     the region unmapped with pages in flight, a new one mapped
  close      a link closed with bytes unread, a new pair opened

At the end every stream is drained and checked. Checks: every byte received
is the stream's, no kept slot changed, no step failed, every worker exited
0; ZcsockCurrSockets and ZcsockRegionPages come back to where they were.

--mode plain runs the same on plain TCP and anonymous shared memory (the
harness's own check, runs without zcsock); --inject flips one byte of a
kept slot once: the run must fail.

Output: ok / not ok lines (ktap.sh's t_report), "# " diagnostics.
"""
import argparse
import hashlib
import mmap
import os
import random
import socket
import sys
import threading
import time

from zcsock_test import PAGE, Fail, Report, parse_proc
from zcsock_iso import pair, region

PLAIN = False


def new_region(pages):
    if PLAIN:
        return mmap.mmap(-1, pages * PAGE, mmap.MAP_SHARED)
    return region(pages)


def new_pair():
    if not PLAIN:
        return pair()
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(1)
    c = socket.create_connection(lst.getsockname())
    s, _ = lst.accept()
    lst.close()
    for x in (c, s):
        x.settimeout(120)
    return c, s

SLOT_PAGES = 8
SLOTS = 24  # slots of the region; the last ones are for children
CHILD_SLOTS = 4
INFLIGHT = 64 << 10  # bytes sent and not yet received, per link, at most
STEPS = (("send", 36), ("recv", 36), ("oob", 3), ("thread", 4), ("fork-send", 3),
         ("fork-recv", 3), ("fork-write", 3), ("munmap", 2), ("close", 2))


def read_all(fd):
    """Everything a pipe gives until its writers close it; closes it."""
    msg = b""
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        msg += chunk
    os.close(fd)
    return msg


def stream_bytes(key, off, n):
    """Bytes off..off+n of the stream of key (a str)."""
    out = bytearray()
    k, skip = divmod(off, PAGE)
    while len(out) < skip + n:
        out += hashlib.sha256(b"%s %d" % (key.encode(), k)).digest() * (PAGE // 32)
        k += 1
    return bytes(out[skip:skip + n])


class Link:
    gen = 0

    def __init__(self, wid):
        Link.gen += 1
        self.key = "w%d.l%d" % (wid, Link.gen)
        self.c, self.s = new_pair()
        for x in (self.c, self.s):
            x.setsockopt(socket.SOL_SOCKET, socket.SO_OOBINLINE, 1)
        self.sent = self.got = 0

    def inflight(self):
        return self.sent - self.got

    def close(self):
        self.c.close()
        self.s.close()


class Worker:
    def __init__(self, a, wid):
        self.wid = wid
        self.r = random.Random(a.seed * 1000 + wid)
        self.m = new_region(SLOTS * SLOT_PAGES)
        self.kept = {}  # slot -> (offset in the region, bytes it must still hold)
        self.next_slot = 0
        self.links = [Link(wid) for _ in range(a.links)]
        self.counts = {name: 0 for name, _ in STEPS}
        self.bytes_checked = 0
        self.inject = a.inject and wid == 0

    # -- the region's slots
    def slot(self):
        """A parent slot to use now: a kept one is checked first."""
        i = self.next_slot
        self.next_slot = (i + 1) % (SLOTS - CHILD_SLOTS)
        self.check_kept(i)
        return i * SLOT_PAGES * PAGE

    def check_kept(self, i):
        k = self.kept.pop(i, None)
        if k is not None:
            at, want = k
            if self.m[at:at + len(want)] != want:
                raise Fail("worker %d: kept slot %d changed after its bytes were sent (someone else wrote it)"
                           % (self.wid, i))

    def place(self, maxlen):
        """An offset within a slot and a length (page-aligned most often)."""
        if self.r.random() < 0.7:
            align = 0
            n = PAGE * self.r.randint(1, SLOT_PAGES)
        else:
            align = self.r.randrange(PAGE)
            n = self.r.randint(1, SLOT_PAGES * PAGE - align)
        return align, min(n, maxlen)

    # -- steps
    def send(self, ln, at, n, flags=socket.MSG_DONTWAIT, scribble=None):
        data = stream_bytes(ln.key, ln.sent, n)
        self.m[at:at + n] = data
        with memoryview(self.m) as mv, mv[at:at + n] as part:
            try:
                done = ln.c.send(part, flags)
            except BlockingIOError:
                done = 0
        ln.sent += done
        if scribble is None:
            scribble = self.r.random() < 0.5 and not self.inject
        if scribble:
            self.m[at:at + n] = b"\xa5" * n
        elif done:
            self.kept[at // (SLOT_PAGES * PAGE)] = (at, data[:done])
            if self.inject:
                self.m[at] ^= 1  # the harness must be able to fail
                self.inject = False
        return done

    def recv(self, ln, at, n, flags=0, m=None):
        m = self.m if m is None else m
        with memoryview(m) as mv, mv[at:at + n] as part:
            got = ln.s.recv_into(part, n, flags)
        if got <= 0:
            raise Fail("%s: recv of %d returned %d with %d in flight" % (ln.key, n, got, ln.inflight()))
        if m[at:at + got] != stream_bytes(ln.key, ln.got, got):
            raise Fail("%s: bytes at stream offset %d..%d are not the stream's" % (ln.key, ln.got, ln.got + got))
        ln.got += got
        self.bytes_checked += got
        m[at:at + got] = b"\x5a" * got
        return got

    def recv_all(self, ln, total):
        while total > 0:
            at = self.slot()
            total -= self.recv(ln, at, min(total, SLOT_PAGES * PAGE), socket.MSG_WAITALL)

    def step(self, name):
        ln = self.r.choice(self.links)
        if name == "send":
            if ln.inflight() < INFLIGHT:
                at = self.slot()
                align, n = self.place(INFLIGHT - ln.inflight())
                self.send(ln, at + align, n)
        elif name == "recv":
            if ln.inflight():
                at = self.slot()
                align, n = self.place(ln.inflight())
                flags = socket.MSG_WAITALL if self.r.random() < 0.5 else 0
                self.recv(ln, at + align, n, flags)
        elif name == "oob":
            if ln.inflight() < INFLIGHT:
                ln.sent += ln.c.send(stream_bytes(ln.key, ln.sent, 1), socket.MSG_OOB)
        elif name == "thread":
            self.recv_all(ln, ln.inflight())
            base = (SLOTS - CHILD_SLOTS) * SLOT_PAGES * PAGE
            slots = [base + self.r.randrange(CHILD_SLOTS) * SLOT_PAGES * PAGE for _ in range(CHILD_SLOTS * 2)]
            want = ln.got + len(slots) * SLOT_PAGES * PAGE
            err = []

            def sender():
                try:
                    for at in slots:
                        if self.send(ln, at, SLOT_PAGES * PAGE, 0, True) != SLOT_PAGES * PAGE:
                            raise Fail("%s: short blocking send" % ln.key)
                except Exception as e:  # reported by the worker
                    err.append(e)

            t = threading.Thread(target=sender)
            t.start()
            while ln.got < want and not err:
                self.recv(ln, self.slot(), min(want - ln.got, SLOT_PAGES * PAGE))
            t.join()
            if err:
                raise err[0]
        elif name.startswith("fork"):
            self.fork_step(name, ln)
        elif name == "munmap":
            for i in list(self.kept):
                self.check_kept(i)
            if self.r.random() < 0.5 and ln.inflight() < INFLIGHT:
                self.send(ln, 0, SLOT_PAGES * PAGE, scribble=False)
                self.kept.clear()
            self.m.close()
            self.m = new_region(SLOTS * SLOT_PAGES)
        elif name == "close":
            self.links.remove(ln)
            ln.close()
            self.links.append(Link(self.wid))
        self.counts[name] += 1

    def fork_step(self, name, ln):
        base = (SLOTS - CHILD_SLOTS) * SLOT_PAGES * PAGE
        if name == "fork-recv" and not ln.inflight():
            return
        if name == "fork-write" and ln.inflight() + SLOT_PAGES * PAGE > INFLIGHT:
            return
        rd, wr = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                os.close(rd)
                os.close(go_w)
                if name == "fork-send":
                    n = 0
                    for i in range(CHILD_SLOTS):
                        if ln.inflight() + SLOT_PAGES * PAGE > INFLIGHT:
                            break
                        n += self.send(ln, base + i * SLOT_PAGES * PAGE, SLOT_PAGES * PAGE, scribble=True)
                    os.write(wr, b"%d" % n)
                elif name == "fork-recv":
                    n = self.recv(ln, base, min(ln.inflight(), CHILD_SLOTS * SLOT_PAGES * PAGE), socket.MSG_WAITALL)
                    os.write(wr, b"%d" % n)
                else:
                    os.read(go_r, 1)  # the parent's send() has returned
                    self.m[base:base + SLOT_PAGES * PAGE] = b"\xc3" * (SLOT_PAGES * PAGE)
                    os.write(wr, b"0")
                status = 0
            except Exception as e:  # the parent reports it
                os.write(wr, b"E " + str(e).encode()[:200])
            finally:
                os._exit(status)  # everything still mapped, open and in flight
        os.close(wr)
        os.close(go_r)
        if name == "fork-write":
            # the child overwrites the slot once this send returned: the
            # receiver must still get what was sent
            self.send(ln, base, SLOT_PAGES * PAGE, scribble=False)
            self.kept.pop(base // (SLOT_PAGES * PAGE), None)
            os.write(go_w, b"!")
        os.close(go_w)
        msg = read_all(rd)
        _, status = os.waitpid(pid, 0)
        if status != 0 or msg.startswith(b"E") or not msg:
            raise Fail("%s child on %s: status %d, %s" % (name, ln.key, status, msg.decode(errors="replace")))
        if name == "fork-send":
            ln.sent += int(msg)
        elif name == "fork-recv":
            ln.got += int(msg)
            self.bytes_checked += int(msg)

    def run(self, deadline):
        names = [n for n, _ in STEPS]
        weights = [w for _, w in STEPS]
        if self.inject:
            self.step("send")  # a kept slot to change
        while time.monotonic() < deadline:
            self.step(self.r.choices(names, weights)[0])
        for ln in self.links:
            self.recv_all(ln, ln.inflight())
        for i in list(self.kept):
            self.check_kept(i)
        for ln in self.links:
            ln.close()
        self.m.close()


def proc_stat():
    with open("/proc/net/zcsock_stat") as f:
        return parse_proc(f.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--links", type=int, default=4)
    ap.add_argument("--mode", choices=("zcsock", "plain"), default="zcsock")
    ap.add_argument("--inject", action="store_true", help="change a kept slot once: the run must fail")
    a = ap.parse_args()
    global PLAIN
    PLAIN = a.mode == "plain"
    rep = Report("stress: ")
    before = {} if PLAIN else proc_stat()
    deadline = time.monotonic() + a.seconds
    kids = {}
    for wid in range(a.workers):
        rd, wr = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rd)
            out, status = "", 1
            try:
                w = Worker(a, wid)
                try:
                    w.run(deadline)
                    status = 0
                finally:
                    out = "worker %d: %s, %d bytes checked" % (
                        wid, " ".join("%s %d" % kv for kv in w.counts.items()), w.bytes_checked)
            except Exception as e:
                out += "\nworker %d FAILED: %s: %s" % (wid, type(e).__name__, e)
            finally:
                os.write(wr, out.encode())
                os._exit(status)
        os.close(wr)
        kids[pid] = (wid, rd)
    for pid, (wid, rd) in kids.items():
        msg = read_all(rd)
        _, status = os.waitpid(pid, 0)
        rep.diag(msg.decode(errors="replace"))
        rep.expect("worker %d: every byte received was the stream's, no kept page changed, every step ran" % wid,
                   0, status)
    if PLAIN:
        return 1 if rep.failed else 0
    names = ("ZcsockCurrSockets", "ZcsockRegionPages")
    end = time.monotonic() + 20
    while time.monotonic() < end:
        now = proc_stat()
        if all(now.get(k) == before.get(k) for k in names):
            break
        time.sleep(0.1)
    rep.expect("ZcsockCurrSockets and ZcsockRegionPages back where they were",
               [before.get(k) for k in names], [now.get(k) for k in names])
    c = [before.get("ZcsockTxPagesByRef", 0), now.get("ZcsockTxPagesByRef", 0),
         before.get("ZcsockRxPagesRemapped", 0), now.get("ZcsockRxPagesRemapped", 0),
         before.get("ZcsockTxCowFaults", 0), now.get("ZcsockTxCowFaults", 0)]
    rep.diag("pages sent by reference %d, remapped %d, copy-on-write faults %d"
             % (c[1] - c[0], c[3] - c[2], c[5] - c[4]))
    rep.check(c[1] > c[0] and c[3] > c[2] and c[5] > c[4],
              "pages went by reference, were remapped and took copy-on-write faults", "counters did not move")
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
