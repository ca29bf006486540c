#!/usr/bin/env python3
"""A station on the segment attacking zcfrag's admission protocol
(zcfrag-admission.sh). Frames go out of IFACE through an AF_PACKET socket,
with whatever source MAC address the attack needs.

  adm-agent.py IFACE DST_MAC rel SRC_MAC FLOW_SRC FLOW_DST PROTO SLOT
  adm-agent.py IFACE DST_MAC nacks SRC_MAC FLOW_SRC FLOW_DST PROTO N
  adm-agent.py IFACE DST_MAC flood SRC_MAC FLOW_DST N
  adm-agent.py IFACE DST_MAC groupsrc SENTINEL_MAC FLOW_DST
"""
import select
import socket
import struct
import sys
import time

ETH_P_ADM = 0x88B5
REQ, ACK, NACK, REL = 1, 2, 3, 4


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def ip(s):
    return socket.inet_aton(s)


def body(kind, arg, proto, token, src, dst, sport=5000, dport=5001):
    return struct.pack("!BBBBI4s4sHHII", 1, kind, arg, proto, token, src, dst, sport, dport, 0, 0)


class Station:
    def __init__(self, iface, dmac):
        self.dmac = dmac
        self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.tx.bind((iface, 0))
        self.rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ADM))
        self.rx.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE
        self.rx.bind((iface, ETH_P_ADM))
        self.rx.setblocking(False)

    def send(self, smac, b, dmac=None):
        self.tx.send((dmac or self.dmac) + smac + struct.pack("!H", ETH_P_ADM) + b)

    def answers(self, quiet, until=None, stop=None):
        """Yields (time, dst MAC, kind, arg, token, flow src) of the answers
        (Fast_Ack and Fast_NAck) seen until nothing came for `quiet` s,
        `until` passed, or `stop(answer)` is true."""
        while True:
            now = time.monotonic()
            wait = quiet if until is None else min(quiet, max(0.0, until - now))
            if not select.select([self.rx], [], [], wait)[0]:
                return
            while True:
                try:
                    f, addr = self.rx.recvfrom(2048)
                except BlockingIOError:
                    break
                if addr[2] == socket.PACKET_OUTGOING or len(f) < 14 + 28:
                    continue
                kind, arg, _, token, src = struct.unpack_from("!BBBI4s", f, 15)
                if kind in (ACK, NACK):
                    a = (time.monotonic(), f[:6], kind, arg, token, src)
                    yield a
                    if stop and stop(a):
                        return


def main():
    iface, dmac, cmd, args = sys.argv[1], mac(sys.argv[2]), sys.argv[3], sys.argv[4:]
    st = Station(iface, dmac)
    if cmd == "rel":
        smac, fsrc, fdst, proto, slot = mac(args[0]), ip(args[1]), ip(args[2]), int(args[3]), int(args[4])
        st.send(smac, body(REL, slot, proto, 0, fsrc, fdst))
    elif cmd == "nacks":
        # Refusals with every token in 0..N-1: sequential tokens fall to this.
        smac, fsrc, fdst, proto, n = mac(args[0]), ip(args[1]), ip(args[2]), int(args[3]), int(args[4])
        for token in range(n):
            st.send(smac, body(NACK, 1, proto, token, fsrc, fdst))
    elif cmd == "flood":
        # Fast_Req for N distinct flows from one MAC address, as fast as the
        # socket goes; counts the answers on the wire, then releases what
        # was granted (this MAC holds it).
        smac, fdst, n = mac(args[0]), ip(args[1]), int(args[2])
        seen = []
        t0 = time.monotonic()
        for i in range(n):
            st.send(smac, body(REQ, 0, 17, 0x10000 + i, bytes([10, 66, i >> 8, i & 255]), fdst))
            if i % 64 == 63:
                seen.extend(st.answers(0))
        t1 = time.monotonic()
        seen.extend(st.answers(0.5))
        mine = [a for a in seen if a[1] == smac]
        acks = [a for a in mine if a[2] == ACK]
        last = max([a[0] for a in mine], default=t1)
        for a in acks:
            st.send(smac, body(REL, a[3], 17, a[4], a[5], fdst))
        print("sent %d send_s %.3f span_s %.3f answers %d acks %d nacks %d"
              % (n, t1 - t0, last - t0, len(mine), len(acks), len(mine) - len(acks)))
    elif cmd == "groupsrc":
        # Fast_Req from a group source and from the all-zero address, then
        # one from a unicast sentinel; frames are handled in order, so once
        # the sentinel's answer is in, no answer to the others is coming.
        sentinel, fdst = mac(args[0]), ip(args[1])
        bad = (mac("03:00:5e:00:00:01"), mac("ff:ff:ff:ff:ff:ff"), bytes(6))
        for i, smac in enumerate(bad):
            st.send(smac, body(REQ, 0, 17, 0x20000 + i, bytes([10, 67, 0, i]), fdst))
        st.send(sentinel, body(REQ, 0, 17, 0x20010, bytes([10, 67, 1, 0]), fdst))
        got = list(st.answers(5, until=time.monotonic() + 10, stop=lambda a: a[1] == sentinel))
        to_bad = [a for a in got if a[1] in bad]
        sent = [a for a in got if a[1] == sentinel]
        for a in sent:
            if a[2] == ACK:
                st.send(sentinel, body(REL, a[3], 17, a[4], a[5], fdst))
        print("answers_to_group_or_zero %d sentinel_answered %d" % (len(to_bad), len(sent)))
    else:
        sys.exit("unknown command " + cmd)


main()
