#!/usr/bin/env python3
"""Every fragment boundary of a wire MTU, crossed byte-exact, TCP and UDP.

Used by zcfrag.sh (the stacked device) and zcfrag-native.sh (the native
front end): zcfrag cuts an IPv4 payload larger than the wire's MTU into
fragments (rust/wire/ipv4.rs, FragPlan::train), padded to the fragment
count of a page train. The sizes sent are the IP payloads around every
place where that plan changes shape, +-8 bytes each (see sizes()).

  zcfrag_sizes.py sizes WIRE_MTU
      prints the IP payload sizes, one line.
  zcfrag_sizes.py serve tcp|udp IP PORT WIRE_MTU
      the receiver (run in the receiving namespace): for each message,
      replies with its MD5. TCP reads the sizes in order on one connection;
      UDP answers every datagram until an empty one (or 300 s of silence).
      Touches /tmp/sizes-ready once bound.
  zcfrag_sizes.py send tcp|udp IP PORT WIRE_MTU TIMEOUT
      the sender: each size's seeded message in turn, one at a time (TCP
      with TCP_NODELAY: each message one segment), each answered with the
      right MD5 within TIMEOUT seconds (UDP: three tries of TIMEOUT / 5
      each). Prints
      "ok N" or "lost SIZE..." (IP payload sizes; TCP stops at the first,
      its connection stalled).
"""

import hashlib
import random
import socket
import sys
import time

from zcfrag_stream import accept_one

# IP payload of a page train: a page behind a TCP header with timestamps.
TRAIN_PAYLOAD = 32 + 4096
IP_HDR = 20
HDR = {"tcp": 32, "udp": 8}


def sizes(mtu):
    """IP payloads 1..TRAIN_PAYLOAD around every boundary of the plan."""
    per = (mtu - IP_HDR) // 8 * 8
    train = -(-TRAIN_PAYLOAD // per)
    edges = {1, 8, mtu - IP_HDR, TRAIN_PAYLOAD}
    for k in range(1, train + 1):
        # The natural fragment count changes.
        edges.add(k * per)
    for n in range(2, train):
        # n natural fragments: the last one is split into train - n + 1
        # pieces once it has more than 8 bytes for each but the last.
        edges.add((n - 1) * per + 8 * (train - n) + 1)
    out = set()
    for e in edges:
        for d in range(-8, 9):
            if 1 <= e + d <= TRAIN_PAYLOAD:
                out.add(e + d)
    return sorted(out)


def message(proto, ip_payload):
    """The seeded message whose IP payload is ip_payload bytes."""
    n = ip_payload - HDR[proto]
    return random.Random(ip_payload).randbytes(n) if n > 0 else None


def messages(proto, mtu):
    return [(p, m) for p in sizes(mtu) if (m := message(proto, p)) is not None]


READY = "/tmp/sizes-ready"


def ready():
    open(READY, "w").close()


def serve_tcp(ip, port, mtu):
    s = accept_one(ip, port, READY, 60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for _, m in messages("tcp", mtu):
        buf = bytearray()
        while len(buf) < len(m):
            d = s.recv(len(m) - len(buf))
            if not d:
                return
            buf += d
        s.sendall(hashlib.md5(buf).digest())


def serve_udp(ip, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((ip, port))
    s.settimeout(300)
    ready()
    while True:
        try:
            d, peer = s.recvfrom(65536)
        except socket.timeout:
            return
        if not d:
            return
        s.sendto(hashlib.md5(d).digest(), peer)


def send_tcp(ip, port, mtu, timeout):
    for _ in range(400):
        try:
            s = socket.create_connection((ip, port), timeout=timeout)
            break
        except OSError:
            time.sleep(0.05)
    else:
        return ["connect"]
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(timeout)
    for p, m in messages("tcp", mtu):
        s.sendall(m)
        got = b""
        try:
            while len(got) < 16:
                d = s.recv(16 - len(got))
                if not d:
                    break
                got += d
        except socket.timeout:
            pass
        if got != hashlib.md5(m).digest():
            return [p]
    s.close()
    return []


def send_udp(ip, port, mtu, timeout):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((ip, port))
    s.settimeout(timeout / 5)
    lost = []
    for p, m in messages("udp", mtu):
        want = hashlib.md5(m).digest()
        for _ in range(3):
            try:
                s.send(m)
                while s.recv(64) != want:
                    pass
                break
            except OSError:
                # A timeout, or the port unreachable (no receiver).
                pass
        else:
            lost.append(p)
    s.send(b"")
    return lost


def main(argv):
    if argv[1] == "sizes":
        print(*sizes(int(argv[2])))
        return 0
    mode, proto, ip, port, mtu = argv[1], argv[2], argv[3], int(argv[4]), int(argv[5])
    if mode == "serve":
        if proto == "tcp":
            serve_tcp(ip, port, mtu)
        else:
            serve_udp(ip, port)
        return 0
    timeout = float(argv[6])
    send = send_tcp if proto == "tcp" else send_udp
    lost = send(ip, port, mtu, timeout)
    n = len(messages(proto, mtu))
    print(f"lost {' '.join(map(str, lost))}" if lost else f"ok {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
