#!/usr/bin/env python3
"""Region to region over zcsock: the sender fills its region with seeded
bytes once and sends it whole ROUNDS times (never writing it again, so no
copy-on-write copy either), the receiver reads whole regions (MSG_WAITALL)
into its own; both print the stream's md5 and their socket's counters.

  zcsock_remap.py server PORT PAGES [RCVBUF [HDR]] (prints "rx SHA BYTES" and
                                   stats; RCVBUF: SO_RCVBUF, a window-bound
                                   sender, 0 for the default)
  zcsock_remap.py client HOST PORT PAGES ROUNDS SEED [HDR]
  zcsock_remap.py sendfile HOST PORT PAGES ROUNDS SEED HDR   (a plain TCP
                                   sender: the header, then the pages with
                                   sendfile() from a tmpfs file)

HDR: each round starts with a HDR-byte message header from ordinary memory
(copied; sent with MSG_MORE, so TCP puts it in one skb with the region's
first pages), which the receiver reads into ordinary memory before the pages.
"""
import hashlib
import mmap
import os
import random
import socket
import struct
import sys

TCP_ULP, SOL_ZCSOCK, ZCSOCK_STATS, PAGE = 31, 300, 1, 4096
NAMES = ("tx_pages_by_ref", "tx_bytes_by_ref", "tx_bytes_copied",
         "rx_pages_remapped", "rx_bytes_remapped", "rx_bytes_copied")


def region(pages):
    fd = os.open("/dev/zcsock", os.O_RDWR)
    r = mmap.mmap(fd, pages * PAGE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    os.close(fd)
    return r


def stats(s):
    v = struct.unpack("6Q", s.getsockopt(SOL_ZCSOCK, ZCSOCK_STATS, 48))
    return " ".join("%s=%d" % kv for kv in zip(NAMES, v))


def server(port, pages, rcvbuf, hdr):
    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if rcvbuf:
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    lst.setsockopt(socket.IPPROTO_TCP, TCP_ULP, b"zcsock")
    lst.bind(("0.0.0.0", port))
    lst.listen(1)
    print("listening", flush=True)
    c, _ = lst.accept()
    r = region(pages)
    mv = memoryview(r)
    h, n = hashlib.md5(), 0
    hbuf = bytearray(hdr)
    while True:
        if hdr:
            k = c.recv_into(hbuf, hdr, socket.MSG_WAITALL)
            if k == 0:
                break
            h.update(hbuf[:k])
            n += k
        k = c.recv_into(mv, pages * PAGE, socket.MSG_WAITALL)
        if k == 0:
            break
        h.update(mv[:k])
        n += k
    print("rx", h.hexdigest(), n)
    print("stats", stats(c))


def client(host, port, pages, rounds, seed, hdr):
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, TCP_ULP, b"zcsock")
    r = region(pages)
    mv = memoryview(r)
    data = random.Random(seed).randbytes(pages * PAGE)
    r[:] = data
    head = random.Random(seed + 1).randbytes(hdr)
    h = hashlib.md5()
    for _ in range(rounds):
        if hdr:
            h.update(head)
            s.sendall(head, socket.MSG_MORE)
        h.update(data)
        s.sendall(mv)
    print("tx", h.hexdigest(), rounds * (hdr + pages * PAGE))
    print("stats", stats(s))
    s.close()


def sendfile(host, port, pages, rounds, seed, hdr):
    """No zcsock on this side: TCP takes the file's page-cache pages by
    reference (splice), in the same skb as the header before them."""
    s = socket.create_connection((host, port))
    data = random.Random(seed).randbytes(pages * PAGE)
    d = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"
    path = os.path.join(d, "zcsock-remap.%d" % os.getpid())
    with open(path, "wb") as f:
        f.write(data)
    fd = os.open(path, os.O_RDONLY)
    os.unlink(path)
    head = random.Random(seed + 1).randbytes(hdr)
    h = hashlib.md5()
    for _ in range(rounds):
        h.update(head)
        s.sendall(head, socket.MSG_MORE)
        off = 0
        while off < len(data):
            off += os.sendfile(s.fileno(), fd, off, len(data) - off)
        h.update(data)
    os.close(fd)
    print("tx", h.hexdigest(), rounds * (hdr + pages * PAGE))
    print("stats plain")
    s.close()


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "server":
        server(int(a[2]), int(a[3]), int(a[4]) if len(a) > 4 else 0,
               int(a[5]) if len(a) > 5 else 0)
    elif a[1] == "sendfile":
        sendfile(a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]), int(a[7]))
    else:
        client(a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]),
               int(a[7]) if len(a) > 7 else 0)
