#!/usr/bin/python3
"""Region to region over zcsock: the sender fills its region with seeded
bytes once and sends it whole ROUNDS times (never writing it again, so no
copy-on-write copy either), the receiver reads whole regions (MSG_WAITALL)
into its own; both print the stream's sha256 and their socket's counters.

  zcsock_remap.py server PORT PAGES [RCVBUF] (prints "rx SHA BYTES" and stats;
                                            RCVBUF: SO_RCVBUF, a window-bound sender)
  zcsock_remap.py client HOST PORT PAGES ROUNDS SEED
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


def server(port, pages, rcvbuf):
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
    h, n = hashlib.sha256(), 0
    while True:
        k = c.recv_into(mv, pages * PAGE, socket.MSG_WAITALL)
        if k == 0:
            break
        h.update(mv[:k])
        n += k
    print("rx", h.hexdigest(), n)
    print("stats", stats(c))


def client(host, port, pages, rounds, seed):
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, TCP_ULP, b"zcsock")
    r = region(pages)
    mv = memoryview(r)
    data = random.Random(seed).randbytes(pages * PAGE)
    r[:] = data
    h = hashlib.sha256()
    for _ in range(rounds):
        h.update(data)
        s.sendall(mv)
    print("tx", h.hexdigest(), rounds * pages * PAGE)
    print("stats", stats(s))
    s.close()


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "server":
        server(int(a[2]), int(a[3]), int(a[4]) if len(a) > 4 else 0)
    else:
        client(a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]))
