// SPDX-License-Identifier: GPL-2.0

//! Transmit: IPv4 packets over the lower MTU leave as fragments that
//! reference the payload pages.

use crate::counters::c;
use crate::device::ZcFrag;
use crate::port::Port;
use crate::wire::ipv4;
use crate::zcnet::page::PAGE_SIZE;
use crate::zcnet::skbuff::SkBuff;
use crate::zcnet::stacked::TxResult;
use crate::ETH_HLEN;

/// The IP payload of a page train: a page of data behind a TCP header with
/// timestamps (what the receivers' speculation expects).
const TRAIN_PAYLOAD: usize = 32 + PAGE_SIZE;

impl ZcFrag {
    pub(crate) fn drop_tx(&self, counter: usize, skb: SkBuff) -> TxResult {
        self.counters.inc(counter);
        drop(skb);
        TxResult {
            frames: 0,
            bytes: 0,
            dropped: true,
        }
    }

    /// Sends a TCP/IPv4 GSO packet (the device offers TSO) segment by
    /// segment, cut so that a whole page the sender gave travels alone: a
    /// segment ends short where such a page begins (counted), for the
    /// receiver's speculation puts each segment's payload in a page of its
    /// own, which zcsock remaps (`rust/helpers/tx_gso.c`).
    pub(crate) fn transmit_gso(&self, skb: SkBuff, port: &dyn Port) -> TxResult {
        let mut sent = TxResult {
            frames: 0,
            bytes: 0,
            dropped: false,
        };
        let (mut segs, realigned) = match skb.gso_segment_paged() {
            Ok(s) => s,
            Err(_) => {
                self.counters.inc(c::TX_DROP_NOMEM);
                sent.dropped = true;
                return sent;
            }
        };
        self.counters.add(c::TX_GSO_REALIGNED, u64::from(realigned));
        self.counters.inc(c::TX_GSO_PACKETS);
        while let Some(seg) = segs.pop() {
            let r = if seg.is_gso() {
                // The helper never returns one; never loop on it.
                self.drop_tx(c::TX_DROP_MALFORMED, seg)
            } else {
                self.transmit(seg, port)
            };
            sent.frames += r.frames;
            sent.bytes += r.bytes;
            sent.dropped |= r.dropped;
        }
        sent
    }

    /// Sends `skb` (Ethernet + IPv4, larger than the wire's MTU) as fragments.
    pub(crate) fn fragment(&self, mut skb: SkBuff, port: &dyn Port) -> TxResult {
        let wire = port.wire();
        if skb.resolve_checksum().is_err() {
            return self.drop_tx(c::TX_DROP_MALFORMED, skb);
        }
        // The fixed header first, then as much as its IHL says, so that a
        // header with options is seen whole (and counted as such).
        let mut hdr = [0u8; ETH_HLEN + ipv4::MAX_HEADER_LEN];
        let ihl_len = match skb.copy_bits(0, &mut hdr[..ETH_HLEN + ipv4::MIN_HEADER_LEN]) {
            Ok(()) => usize::from(hdr[ETH_HLEN] & 0x0f) * 4,
            Err(_) => return self.drop_tx(c::TX_DROP_MALFORMED, skb),
        };
        let whole = ETH_HLEN + ihl_len.clamp(ipv4::MIN_HEADER_LEN, ipv4::MAX_HEADER_LEN);
        if skb.copy_bits(0, &mut hdr[..whole]).is_err() {
            return self.drop_tx(c::TX_DROP_MALFORMED, skb);
        }
        let ip = match ipv4::Header::parse(&hdr[ETH_HLEN..whole]) {
            Ok(ip) => ip,
            Err(_) => return self.drop_tx(c::TX_DROP_MALFORMED, skb),
        };
        if ip.header_len != ipv4::MIN_HEADER_LEN {
            // Options would have to be split by their copy flag; the stack
            // sends none on the paths zcfrag serves.
            return self.drop_tx(c::TX_DROP_IP_OPTIONS, skb);
        }
        let hl = ip.header_len;
        let payload = ip.payload_len();
        if ETH_HLEN + ip.total_len > skb.len() as usize {
            return self.drop_tx(c::TX_DROP_MALFORMED, skb);
        }
        let mtu = port.wire_mtu() as usize;
        // A packet shorter than a page train leaves as one anyway (its last
        // fragment split): a receiver speculating on page trains, first in
        // first out, stays in step (the native front end's receive chains).
        let plan = if ip.is_fragment() {
            ipv4::FragPlan::new(hl, payload, mtu)
        } else {
            ipv4::FragPlan::train(hl, payload, mtu, TRAIN_PAYLOAD)
        };
        let Some(plan) = plan else {
            return self.drop_tx(c::TX_DROP_MALFORMED, skb);
        };
        // A packet that is already a fragment (the stack fragmented it at this
        // device's MTU) keeps its ID: its siblings carry the same one. Any
        // other gets the ID the stack gives a datagram it fragments itself:
        // per destination, from a keyed hash and a random start, so an
        // off-path host can neither predict it nor see one counter wrap
        // across every flow (RFC 4963).
        let id = if ip.is_fragment() {
            ip.id
        } else {
            let mut ip20 = [0u8; ipv4::MIN_HEADER_LEN];
            ip20.copy_from_slice(&hdr[ETH_HLEN..ETH_HLEN + ipv4::MIN_HEADER_LEN]);
            wire.ip_ident(&ip20)
        };
        let headroom = wire.reserved_headroom();
        // Referencing the payload pages needs a lower device that takes
        // non-linear frames; otherwise the core would linearise (copy) each
        // fragment anyway, so copy here, where it is counted.
        let by_ref = wire.has_sg();
        let mut sent = TxResult {
            frames: 0,
            bytes: 0,
            dropped: false,
        };
        let mut fh = [0u8; ETH_HLEN + ipv4::MIN_HEADER_LEN];
        fh.copy_from_slice(&hdr[..ETH_HLEN + hl]);
        for f in plan.iter() {
            let len = ETH_HLEN + hl + f.len;
            if !ipv4::rewrite(
                &mut fh[ETH_HLEN..],
                hl + f.len,
                id,
                ip.frag_offset + f.offset,
                f.mf || ip.mf,
            ) {
                return self.drop_tx(c::TX_DROP_MALFORMED, skb);
            }
            let Some((frag, copied)) = skb.tx_fragment(
                &fh,
                (ETH_HLEN + hl + f.offset) as u32,
                f.len as u32,
                headroom,
                by_ref,
            ) else {
                return self.drop_tx(c::TX_DROP_NOMEM, skb);
            };
            self.counters.add(c::TX_COPIED_BYTES, u64::from(copied));
            self.counters
                .add(c::TX_REFERENCED_BYTES, f.len as u64 - u64::from(copied));
            if !port.send(frag) {
                // The wire's queue dropped it; TCP will retransmit.
                self.counters.inc(c::TX_DROP_LOWER);
            }
            self.counters.inc(c::TX_FRAGMENTS);
            sent.frames += 1;
            sent.bytes += len as u64;
        }
        self.counters.inc(c::TX_FRAGMENTED_PACKETS);
        skb.consume();
        sent
    }
}
