#!/usr/bin/env python3
"""A raw TCP peer for zcddp's MPA start-up tests (tools/testing/zcnet/zcddp.sh).

    zcddp_peer.py client ADDR PORT MODE    connect, then play MODE as initiator
    zcddp_peer.py server ADDR PORT MODE    accept one, then play MODE as responder

Frames are built here from the RFCs (RFC 5044 §7.1, RFC 6581, RFC 5041,
RFC 5040), independently of rust/wire, so a test can tell whether zcddp's
bytes are the standard's. Prints one line about what it saw ("rtr ok",
"reply rev=2 flags=0x40 ..."), exit status 0 unless the peer's bytes were
not what the mode expects.
"""
import socket
import struct
import sys
import time

KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"
M, C, R, E = 0x80, 0x40, 0x20, 0x10


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def frame(key, flags, rev, pd=b"", enh=None):
    if enh is not None:
        pd = struct.pack(">HH", *enh) + pd
    return key + bytes([flags, rev]) + struct.pack(">H", len(pd)) + pd


def read_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError("peer closed after %d of %d bytes" % (len(b), n))
        b += c
    return b


def read_frame(s):
    h = read_exact(s, 20)
    pd = read_exact(s, struct.unpack(">H", h[18:20])[0])
    return h[:16], h[16], h[17], pd


def fpdu(ulpdu, crc, markers, pos=0):
    """One FPDU at stream position pos (markers every 512 bytes)."""
    body = struct.pack(">H", len(ulpdu)) + ulpdu + bytes((-(2 + len(ulpdu))) % 4)
    out = b""
    hdr = None
    for b in body:
        if markers and (pos + len(out)) % 512 == 0:
            p = 0 if hdr is None else pos + len(out) - hdr
            out += struct.pack(">HH", 0, p)
        if hdr is None:
            hdr = pos + len(out)
        out += bytes([b])
    if markers and (pos + len(out)) % 512 == 0:
        out += struct.pack(">HH", 0, pos + len(out) - hdr)
    return out + struct.pack("<I", crc32c(out) if crc else 0)


# RDMAP over DDP: ctrl byte (T, L, DV=1), RDMAP byte (RV=1 << 6 | opcode).
def tagged(op, stag, to, last=True):
    return bytes([0x80 | (0x40 if last else 0) | 1, 0x40 | op]) + struct.pack(">IQ", stag, to)


def untagged(op, qn, msn, mo, last=True):
    return bytes([(0x40 if last else 0) | 1, 0x40 | op]) + struct.pack(">IIII", 0, qn, msn, mo)


def client(s, mode):
    if mode == "silent":
        time.sleep(4)
    elif mode == "garbage":
        s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        time.sleep(1)
    elif mode == "badrev":
        s.sendall(frame(KEY_REQ, 0, 3))
        time.sleep(1)
    elif mode == "longpd":
        s.sendall(KEY_REQ + bytes([0, 1]) + struct.pack(">H", 600) + bytes(100))
        time.sleep(1)
    elif mode == "extra":
        s.sendall(frame(KEY_REQ, 0, 1, b"pd") + b"EXTRABYTES")
        time.sleep(1)
    elif mode == "close-mid":
        s.sendall(KEY_REQ[:10])
    elif mode.startswith("p2p"):
        # p2p-ok, p2p-ok-crc-markers, p2p-wrong-rtr, p2p-bad-crc: a
        # revision 2 request offering a Write RTR, then the RTR.
        crc = "crc" in mode
        markers = "markers" in mode
        flags = E | (C if crc else 0)
        s.sendall(frame(KEY_REQ, flags, 2, b"", (0x8000 | 1, 0x8000 | 1)))
        key, rflags, rev, pd = read_frame(s)
        print("reply key=%s flags=0x%02x rev=%d pd=%s" % (key == KEY_REP, rflags, rev, pd.hex()))
        if not rflags & C == (C if crc else 0):
            print("bad: reply CRC flag")
            return 1
        # The responder's M asks us for markers.
        markers = bool(rflags & M)
        if mode == "p2p-wrong-rtr":
            u = untagged(3, 0, 1, 0)
        else:
            u = tagged(0, 1, 0)
        f = fpdu(u, crc, markers)
        if mode == "p2p-bad-crc":
            f = f[:-4] + bytes(b ^ 0xFF for b in f[-4:])
        s.sendall(f)
        time.sleep(1)
    else:
        print("unknown mode", mode)
        return 2
    return 0


def server(s, mode):
    key, flags, rev, pd = read_frame(s)
    print("request key=%s flags=0x%02x rev=%d pdlen=%d" % (key == KEY_REQ, flags, rev, len(pd)))
    if key != KEY_REQ:
        return 1
    enh = struct.unpack(">HH", pd[:4]) if flags & E else None
    if mode == "silent":
        time.sleep(4)
    elif mode == "reject":
        s.sendall(frame(KEY_REP, R, rev))
        time.sleep(1)
    elif mode == "wrong-key":
        s.sendall(frame(KEY_REQ, 0, rev, b"", (1, 1) if enh else None))
        time.sleep(1)
    elif mode == "rev-up":
        s.sendall(frame(KEY_REP, 0, rev + 1, b"", (1, 1)))
        time.sleep(1)
    elif mode == "markers-reply":
        s.sendall(frame(KEY_REP, M | (E if enh else 0), rev, b"", (1, 1) if enh else None))
        time.sleep(1)
    elif mode == "check-rtr":
        # Choose a Write RTR, CRC as asked, ask for markers when the request
        # asked for none (M only matters to the peer): then read and check
        # the RTR FPDU byte for byte.
        crc = bool(flags & C)
        want_m = "markers" in sys.argv[5:]
        s.sendall(frame(KEY_REP, (flags & C) | E | (M if want_m else 0), 2, b"rtr",
                        (0x8000 | 1, 0x8000 | 1)))
        want = fpdu(tagged(0, 1, 0), crc, want_m)
        got = read_exact(s, len(want))
        if got != want:
            print("bad rtr: got %s want %s" % (got.hex(), want.hex()))
            return 1
        print("rtr ok %s" % got.hex())
        time.sleep(0.5)
    else:
        print("unknown mode", mode)
        return 2
    return 0


def main():
    role, addr, port, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    if role == "client":
        for _ in range(100):
            try:
                s = socket.create_connection((addr, port))
                break
            except ConnectionRefusedError:
                time.sleep(0.05)
        else:
            print("no listener")
            return 2
        try:
            return client(s, mode)
        except (EOFError, ConnectionError) as e:
            print("peer:", e)
            return 1
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((addr, port))
    l.listen(1)
    s, _ = l.accept()
    try:
        return server(s, mode)
    except (EOFError, ConnectionError) as e:
        print("peer:", e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
