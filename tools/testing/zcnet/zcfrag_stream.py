#!/usr/bin/env python3
"""A TCP stream that runs until told to stop, checked byte-exact.

Used by zcfrag-native.sh to keep traffic flowing while the rings and queue
pairs change (ethtool -G/-L cycles).

  zcfrag_stream.py recv IP PORT NAME
      accepts one connection on IP:PORT and reads it to its end; writes the
      bytes received so far to /tmp/NAME.progress (at least every MiB) and
      prints "BYTES MD5" at the end. Touches /tmp/NAME.ready once bound.
  zcfrag_stream.py send IP PORT NAME
      sends seeded bytes (a 1 MiB pool from seed 5, over and over) until
      /tmp/NAME.stop exists, then closes; prints "BYTES MD5" of what it
      sent, or "stalled BYTES" when a send made no progress for 60 s.
"""

import hashlib
import os
import random
import socket
import sys
import time

POOL = random.Random(5).randbytes(1 << 20)
CHUNK = 64 << 10


def accept_one(ip, port, ready, timeout):
    """One TCP connection accepted on ip:port (the file ready touched once
    listening), its operations bounded by timeout seconds."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((ip, port))
    ls.listen(1)
    ls.settimeout(timeout)
    open(ready, "w").close()
    s, _ = ls.accept()
    s.settimeout(timeout)
    return s


def recv(ip, port, name):
    s = accept_one(ip, port, f"/tmp/{name}.ready", 120)
    h, n, mark = hashlib.md5(), 0, 0
    prog = f"/tmp/{name}.progress"
    try:
        while True:
            d = s.recv(1 << 16)
            if not d:
                break
            h.update(d)
            n += len(d)
            if n - mark >= 1 << 20:
                mark = n
                with open(prog + ".tmp", "w") as f:
                    f.write(f"{n}\n")
                os.replace(prog + ".tmp", prog)
    except socket.timeout:
        pass
    print(n, h.hexdigest())


def send(ip, port, name):
    for _ in range(400):
        try:
            s = socket.create_connection((ip, port), timeout=60)
            break
        except OSError:
            time.sleep(0.05)
    else:
        print("stalled 0")
        return
    h, n = hashlib.md5(), 0
    stop = f"/tmp/{name}.stop"
    try:
        while not os.path.exists(stop):
            off = n % len(POOL)
            d = POOL[off:off + CHUNK]
            s.sendall(d)
            h.update(d)
            n += len(d)
    except (socket.timeout, OSError):
        print("stalled", n)
        return
    s.close()
    print(n, h.hexdigest())


def main(argv):
    mode, ip, port, name = argv[1], argv[2], int(argv[3]), argv[4]
    (recv if mode == "recv" else send)(ip, port, name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
