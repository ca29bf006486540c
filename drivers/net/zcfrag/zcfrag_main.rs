// SPDX-License-Identifier: GPL-2.0

//! zcfrag: a fragmenting / defragmenting Ethernet device stacked on a lower
//! Ethernet device: `ip link add zf0 link eth0 type zcfrag`.
//!
//! The device offers a page-sized MTU (4096 bytes of TCP payload plus IPv4 and
//! TCP headers with timestamps: 4096 + 20 + 32 = 4148) and sends every IPv4
//! packet larger than the lower device's MTU as standard IPv4 fragments, so an
//! unmodified receiver reassembles it.
//!
//! Transmit: each fragment is a fresh Ethernet + IPv4 header followed by page
//! fragments that reference the packet's own payload pages
//! (`tx_referenced_bytes`); only payload that sits in a non-page linear head,
//! or a lower device without scatter-gather, costs a copy (`tx_copied_bytes`).
//!
//! Receive speculation (paper §3.2.3): the fragments of a packet are placed as
//! they arrive, payload straight at its offset in a page, headers apart
//! (`rust/wire/spec.rs` decides); the original fragments are held. When the
//! last one arrives the stack gets one IPv4 packet whose payload is that page
//! at offset 0; on a miss (or the timeout) the held fragments go, unchanged, to
//! the normal reassembly: nothing lost, nothing delivered twice. This front end
//! copies each fragment's payload out of the lower device's buffers into the
//! page (`rx_copied_bytes`); a device that writes into the page itself saves it.

use kernel::{
    new_spinlock,
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
    sync::SpinLock,
};

#[path = "../../../rust/zcnet/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod zcnet;

#[path = "../../../rust/wire/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod wire;

use wire::ipv4;
use wire::spec::{self, Engine, Miss, This};
use zcnet::counters::Counters;
use zcnet::netdev::{now_ns, NetDevice, RxPage, SkBuff};
use zcnet::stacked::{self, Ctx, Rx, TxResult};

module! {
    type: Module,
    name: "zcfrag",
    authors: ["zcnet developers"],
    description: "zcnet fragmenting/defragmenting Ethernet device",
    license: "GPL",
}

/// Bytes of an Ethernet header.
const ETH_HLEN: usize = 14;
/// `ETH_P_IP` in network byte order, as `skb->protocol` holds it.
const ETH_P_IP_BE: u16 = (kernel::bindings::ETH_P_IP as u16).to_be();
/// One page of TCP payload plus IPv4 (20) and TCP-with-timestamps (32) headers.
const DEFAULT_MTU: u32 = 4096 + 20 + 32;

/// Speculation slots (concurrent fragment trains followed, one per flow).
const SLOTS: usize = 8;
/// Fragments one slot holds at most (a page over a lower MTU of 576 needs 8).
const MAX_HELD: usize = 16;
/// Ethernet + IPv4 (no options) + the longest transport header speculated on.
const HDR_ROOM: usize = ETH_HLEN + ipv4::MIN_HEADER_LEN + 60;

/// Counter indices; the names below are `ethtool -S zf0`'s.
mod c {
    pub(crate) const RX_FRAMES: usize = 0;
    pub(crate) const RX_IPV4_FRAGMENTS: usize = 1;
    pub(crate) const TX_PASSTHROUGH: usize = 2;
    pub(crate) const TX_FRAGMENTED_PACKETS: usize = 3;
    pub(crate) const TX_FRAGMENTS: usize = 4;
    pub(crate) const TX_COPIED_BYTES: usize = 5;
    pub(crate) const TX_DROP_NOT_IPV4: usize = 6;
    pub(crate) const TX_DROP_IP_OPTIONS: usize = 7;
    pub(crate) const TX_DROP_MALFORMED: usize = 8;
    pub(crate) const TX_DROP_NOMEM: usize = 9;
    pub(crate) const TX_DROP_LOWER: usize = 10;
    pub(crate) const RX_FRAMES_LARGE: usize = 11;
    pub(crate) const RX_FRAMES_SMALL: usize = 12;
    pub(crate) const ZC_POTENTIAL: usize = 13;
    pub(crate) const ZC_SUCCESS: usize = 14;
    pub(crate) const ZC_FULL_PAGES: usize = 15;
    pub(crate) const ZC_FAILED: usize = 16;
    /// `MISS_BASE + Miss as usize`: one counter per miss reason.
    pub(crate) const MISS_BASE: usize = 17;
    pub(crate) const RX_NO_SLOT: usize = 26;
    pub(crate) const RX_NOMEM: usize = 27;
    pub(crate) const RX_FALLBACK_FRAGMENTS: usize = 28;
    pub(crate) const RX_FALLBACK_BYTES: usize = 29;
    pub(crate) const RX_COPIED_BYTES: usize = 30;
    pub(crate) const RX_BAD_HEADER: usize = 31;
    pub(crate) const SLOTS_IN_USE: usize = 32;
    pub(crate) const TX_REFERENCED_BYTES: usize = 33;
    pub(crate) const RX_NOT_FOR_HOST: usize = 34;
}
const NCOUNTERS: usize = 35;
const NAMES: [&str; NCOUNTERS] = [
    "rx_frames",
    "rx_ipv4_fragments",
    "tx_passthrough",
    "tx_fragmented_packets",
    "tx_fragments",
    "tx_copied_bytes",
    "tx_drop_not_ipv4",
    "tx_drop_ip_options",
    "tx_drop_malformed",
    "tx_drop_nomem",
    "tx_drop_lower",
    "rx_frames_large",
    "rx_frames_small",
    "zc_potential",
    "zc_successful",
    "zc_full_pages",
    "zc_failed",
    "zc_miss_other_packet",
    "zc_miss_gap",
    "zc_miss_duplicate",
    "zc_miss_header_length",
    "zc_miss_ip_options",
    "zc_miss_too_big",
    "zc_miss_timeout",
    "zc_miss_bad_length",
    "zc_miss_bad_checksum",
    "rx_no_slot",
    "rx_drop_nomem",
    "rx_fallback_fragments",
    "rx_fallback_bytes",
    "rx_copied_bytes",
    "rx_bad_header",
    "slots_in_use",
    "tx_referenced_bytes",
    "rx_not_for_host",
];
const _: () = assert!(c::MISS_BASE + spec::MISS_REASONS == c::RX_NO_SLOT);

/// What one speculation slot holds.
struct SlotBuf {
    /// The page the payload lands in (kept across trains until a packet takes it).
    page: Option<RxPage>,
    /// Ethernet, IPv4 and transport header of the packet being placed.
    hdr: [u8; HDR_ROOM],
    eth_len: usize,
    /// The original fragments, for the fallback.
    held: [Option<SkBuff>; MAX_HELD],
    nheld: usize,
}

impl SlotBuf {
    const EMPTY: SlotBuf = SlotBuf {
        page: None,
        hdr: [0; HDR_ROOM],
        eth_len: 0,
        held: [const { None }; MAX_HELD],
        nheld: 0,
    };
}

/// Receive state: touched only in softirq (rx handler, timer) and in
/// `teardown`, with bottom halves off.
struct RxState {
    engine: Engine<SLOTS>,
    slots: [SlotBuf; SLOTS],
}

/// One zcfrag device.
#[pin_data]
struct ZcFrag {
    counters: Counters<NCOUNTERS>,
    /// IP identification of the next fragmented packet: one per packet, for
    /// the whole device, so fragments of different sockets never share one.
    next_id: Atomic<u32>,
    #[pin]
    rx: SpinLock<RxState>,
}

impl ZcFrag {
    /// Ends the speculation of `slot`: its held fragments go to the normal
    /// path on `dev` (or are dropped when `dev` is `None`: teardown).
    fn flush(&self, st: &mut RxState, slot: usize, dev: Option<&NetDevice>) {
        let Some(sb) = st.slots.get_mut(slot) else {
            return;
        };
        for h in sb.held.iter_mut().take(sb.nheld) {
            if let Some(skb) = h.take() {
                self.counters.inc(c::RX_FALLBACK_FRAGMENTS);
                self.counters
                    .add(c::RX_FALLBACK_BYTES, u64::from(skb.len()));
                match dev {
                    Some(d) => skb.deliver(d),
                    None => drop(skb),
                }
            }
        }
        sb.nheld = 0;
        self.counters.inc(c::ZC_FAILED);
    }

    fn miss(&self, st: &mut RxState, slot: usize, reason: Miss, dev: Option<&NetDevice>) {
        self.counters.inc(c::MISS_BASE + reason as usize);
        if slot != usize::MAX {
            self.flush(st, slot, dev);
        }
    }

    fn update_gauge(&self, st: &RxState) {
        self.counters.set(c::SLOTS_IN_USE, st.engine.busy() as u64);
    }

    /// The speculation path for an IPv4 frame; `Err(skb)` hands the frame
    /// back for the normal path (after anything flushed was queued first).
    fn speculate(&self, mut skb: SkBuff, dev: &NetDevice, ctx: &Ctx<'_>) -> Rx {
        let mut ip_hdr = [0u8; ipv4::MIN_HEADER_LEN];
        match skb.pull_linear(ipv4::MIN_HEADER_LEN as u32) {
            Some(h) => ip_hdr.copy_from_slice(&h[..ipv4::MIN_HEADER_LEN]),
            None => return Rx::Pass(skb),
        }
        let h = match ipv4::Header::parse(&ip_hdr) {
            Ok(h) => h,
            Err(e) => {
                self.counters.inc(c::RX_BAD_HEADER);
                if e == ipv4::HeaderError::BadChecksum && ip_hdr[6..8] != [0, 0] {
                    // A fragment (or DF packet) whose header is corrupt: its
                    // flow's train cannot complete.
                    let src = [ip_hdr[12], ip_hdr[13], ip_hdr[14], ip_hdr[15]];
                    let dst = [ip_hdr[16], ip_hdr[17], ip_hdr[18], ip_hdr[19]];
                    let mut st = self.rx.lock();
                    if let Some(slot) = st.engine.on_bad_fragment(src, dst, ip_hdr[9]) {
                        self.miss(&mut st, slot, Miss::BadChecksum, Some(dev));
                        self.update_gauge(&st);
                        drop(st);
                        skb.deliver(dev);
                        return Rx::Consumed;
                    }
                }
                return Rx::Pass(skb);
            }
        };
        if !h.is_fragment() {
            self.counters.inc(c::RX_FRAMES_SMALL);
            return Rx::Pass(skb);
        }
        self.counters.inc(c::RX_IPV4_FRAGMENTS);
        self.counters.inc(c::RX_FRAMES_LARGE);
        if skb.len() as usize != h.total_len {
            // Ethernet padding or truncation: leave it to the normal path.
            return Rx::Pass(skb);
        }
        let mut l4 = [0u8; 16];
        let l4n = if h.frag_offset == 0 {
            let n = h.payload_len().min(l4.len());
            if skb.copy_bits(h.header_len as u32, &mut l4[..n]).is_err() {
                return Rx::Pass(skb);
            }
            n
        } else {
            0
        };

        let mut st = self.rx.lock();
        let step = st.engine.on_fragment(&h, &l4[..l4n], now_ns());
        let mut flushed = false;
        if let Some((slot, reason)) = step.flush {
            self.miss(&mut st, slot, reason, Some(dev));
            flushed = slot != usize::MAX;
        }
        let place = match step.this {
            This::Place(p) => p,
            This::Pass | This::NoSlot => {
                if step.this == This::NoSlot {
                    self.counters.inc(c::RX_NO_SLOT);
                }
                self.update_gauge(&st);
                drop(st);
                if flushed {
                    // Keep the flow's order: the flushed fragments went first.
                    skb.deliver(dev);
                    return Rx::Consumed;
                }
                return Rx::Pass(skb);
            }
        };
        let rst = &mut *st;
        let Some(sb) = rst.slots.get_mut(place.slot) else {
            return Rx::Pass(skb);
        };
        if place.page_off == 0 && place.header_bytes > 0 {
            // A new train: headers apart, a page for the payload.
            self.counters.inc(c::ZC_POTENTIAL);
            ctx.arm_timer(rst.engine.params().timeout_ns / 1000);
            let mac = skb.mac_header();
            let eth_len = if mac.len() == ETH_HLEN { ETH_HLEN } else { 0 };
            sb.hdr[..eth_len].copy_from_slice(&mac[..eth_len]);
            sb.eth_len = eth_len;
            sb.hdr[eth_len..eth_len + ipv4::MIN_HEADER_LEN].copy_from_slice(&ip_hdr);
            if sb.page.is_none() {
                sb.page = RxPage::alloc();
            }
        }
        let hdr_at = sb.eth_len + ipv4::MIN_HEADER_LEN + place.header_off;
        let copied = match sb.page.as_mut() {
            Some(page) if sb.nheld < MAX_HELD && hdr_at + place.header_bytes <= HDR_ROOM => {
                let from = (h.header_len + place.header_bytes) as u32;
                skb.copy_bits(
                    h.header_len as u32,
                    &mut sb.hdr[hdr_at..hdr_at + place.header_bytes],
                )
                .is_ok()
                    && skb
                        .copy_bits(
                            from,
                            &mut page.as_mut_slice()
                                [place.page_off..place.page_off + place.page_len],
                        )
                        .is_ok()
            }
            _ => false,
        };
        if !copied {
            // No page, no room to hold, or a short frame: give the train up.
            if sb.page.is_none() {
                self.counters.inc(c::RX_NOMEM);
            }
            if let Some(slot) = rst.engine.abandon(place.slot) {
                self.miss(rst, slot, Miss::TooBig, Some(dev));
            }
            self.update_gauge(rst);
            drop(st);
            skb.deliver(dev);
            return Rx::Consumed;
        }
        self.counters.add(
            c::RX_COPIED_BYTES,
            (place.header_bytes + place.page_len) as u64,
        );
        let Some(done) = place.complete else {
            sb.held[sb.nheld] = Some(skb);
            sb.nheld += 1;
            self.update_gauge(rst);
            return Rx::Consumed;
        };
        // The last fragment: one packet, its payload the page at offset 0.
        let hl = sb.eth_len + ipv4::MIN_HEADER_LEN + done.l4_header_len;
        let total = ipv4::MIN_HEADER_LEN + done.l4_header_len + done.data_len;
        let ip_at = sb.eth_len;
        let ok = ipv4::rewrite(
            &mut sb.hdr[ip_at..ip_at + ipv4::MIN_HEADER_LEN],
            total,
            h.id,
            0,
            false,
        );
        let page = sb.page.take();
        let pkt = match (ok, page) {
            (true, Some(page)) => {
                SkBuff::from_page(&sb.hdr[..hl], sb.eth_len, page, done.data_len, dev)
            }
            _ => None,
        };
        let Some(pkt) = pkt else {
            // Could not build it: the fragments go the normal way.
            self.counters.inc(c::RX_NOMEM);
            sb.held[sb.nheld] = Some(skb);
            sb.nheld += 1;
            self.flush(rst, place.slot, Some(dev));
            self.update_gauge(rst);
            return Rx::Consumed;
        };
        for held in sb.held.iter_mut().take(sb.nheld) {
            if let Some(f) = held.take() {
                f.consume();
            }
        }
        sb.nheld = 0;
        skb.consume();
        self.counters.inc(c::ZC_SUCCESS);
        if done.data_len == zcnet::netdev::PAGE_SIZE {
            self.counters.inc(c::ZC_FULL_PAGES);
        }
        self.update_gauge(rst);
        drop(st);
        Rx::Pass(pkt)
    }

    fn drop_tx(&self, counter: usize, skb: SkBuff) -> TxResult {
        self.counters.inc(counter);
        drop(skb);
        TxResult {
            frames: 0,
            bytes: 0,
            dropped: true,
        }
    }

    /// Sends `skb` (Ethernet + IPv4, larger than the lower MTU) as fragments.
    fn fragment(&self, mut skb: SkBuff, lower: &NetDevice) -> TxResult {
        if skb.resolve_checksum().is_err() {
            return self.drop_tx(c::TX_DROP_MALFORMED, skb);
        }
        let mut hdr = [0u8; ETH_HLEN + ipv4::MAX_HEADER_LEN];
        if skb
            .copy_bits(0, &mut hdr[..ETH_HLEN + ipv4::MIN_HEADER_LEN])
            .is_err()
        {
            return self.drop_tx(c::TX_DROP_MALFORMED, skb);
        }
        let ip = match ipv4::Header::parse(&hdr[ETH_HLEN..]) {
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
        let Some(plan) = ipv4::FragPlan::new(hl, payload, lower.mtu() as usize) else {
            return self.drop_tx(c::TX_DROP_MALFORMED, skb);
        };
        // A packet that is already a fragment (the stack fragmented it at this
        // device's MTU) keeps its ID: its siblings carry the same one.
        let id = if ip.is_fragment() {
            ip.id
        } else {
            self.next_id.fetch_add(1, Relaxed) as u16
        };
        let headroom = lower.reserved_headroom();
        // Referencing the payload pages needs a lower device that takes
        // non-linear frames; otherwise the core would linearise (copy) each
        // fragment anyway, so copy here, where it is counted.
        let by_ref = lower.has_sg();
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
            if !frag.xmit(lower) {
                // The lower device's queue dropped it; TCP will retransmit.
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

impl stacked::Stacked for ZcFrag {
    const KIND: &'static CStr = c"zcfrag";
    const DRIVER: &'static CStr = c"zcfrag";
    const VERSION: &'static CStr = c"0.1";
    const STATS: &'static [&'static str] = &NAMES;

    fn default_mtu(_lower: &NetDevice) -> u32 {
        DEFAULT_MTU
    }

    fn new(_lower: &NetDevice) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            counters: Counters::new(&NAMES),
            next_id: Atomic::new(0),
            rx <- new_spinlock!(RxState {
                engine: Engine::new(spec::Params::DEFAULT),
                slots: [const { SlotBuf::EMPTY }; SLOTS],
            }),
        })
    }

    fn xmit(&self, skb: SkBuff, lower: &NetDevice) -> TxResult {
        let len = skb.len();
        if len as usize <= ETH_HLEN + lower.mtu() as usize {
            self.counters.inc(c::TX_PASSTHROUGH);
            let ok = skb.xmit(lower);
            if !ok {
                self.counters.inc(c::TX_DROP_LOWER);
            }
            return TxResult {
                frames: 1,
                bytes: u64::from(len),
                dropped: false,
            };
        }
        if skb.protocol_be() != ETH_P_IP_BE {
            // IPv6 is never fragmented on the way: its MTU on this device
            // must fit the lower device (Documentation/networking/zcfrag.rst).
            return self.drop_tx(c::TX_DROP_NOT_IPV4, skb);
        }
        self.fragment(skb, lower)
    }

    fn rx(&self, skb: SkBuff, dev: &NetDevice, ctx: &Ctx<'_>) -> Rx {
        self.counters.inc(c::RX_FRAMES);
        if skb.protocol_be() != ETH_P_IP_BE {
            self.counters.inc(c::RX_FRAMES_SMALL);
            return Rx::Pass(skb);
        }
        if !skb.is_for_host() {
            // Broadcast, multicast, or another host's frame (promiscuous
            // mode): never speculated on, never delivered as this host's.
            self.counters.inc(c::RX_NOT_FOR_HOST);
            return Rx::Pass(skb);
        }
        self.speculate(skb, dev, ctx)
    }

    fn on_timer(&self, dev: &NetDevice, ctx: &Ctx<'_>) {
        let mut st = self.rx.lock();
        let now = now_ns();
        while let Some(slot) = st.engine.expire(now) {
            self.miss(&mut st, slot, Miss::Timeout, Some(dev));
        }
        if st.engine.busy() > 0 {
            ctx.arm_timer(st.engine.params().timeout_ns / 1000);
        }
        self.update_gauge(&st);
    }

    fn teardown(&self) {
        let mut st = self.rx.lock();
        while let Some(slot) = st.engine.drain() {
            self.flush(&mut st, slot, None);
        }
        for sb in st.slots.iter_mut() {
            sb.page = None;
        }
        self.update_gauge(&st);
    }

    fn stats(&self, out: &mut [u64]) {
        self.counters.snapshot(out);
    }
}

#[pin_data]
struct Module {
    #[pin]
    kind: stacked::Registration<ZcFrag>,
}

impl kernel::InPlaceModule for Module {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        pr_info!(
            "loaded on Linux {}\n",
            zcnet::helpers::kernel_release().to_str().unwrap_or("?")
        );
        try_pin_init!(Self {
            kind <- stacked::Registration::register(),
        })
    }
}
