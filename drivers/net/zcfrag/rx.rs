// SPDX-License-Identifier: GPL-2.0

//! Receive speculation glue: slots, pages and held fragments around the
//! engine of `rust/wire/spec.rs`.

/// What one speculation slot holds.
use crate::counters::{c, MISS_BASE};
use crate::device::ZcFrag;
use crate::port::Port;
use crate::wire::admission::RateLimit;
use crate::wire::ipv4;
use crate::wire::spec::{Admission, Engine, Miss, This};
use crate::zcnet::bh::now_ns;
use crate::zcnet::netdev::NetDevice;
use crate::zcnet::page::{PageFrom, PageRing, RxPage, PAGE_SIZE};
use crate::zcnet::skbuff::{SkBuff, SkbChain};
use crate::zcnet::stacked::Rx;
use crate::{ETH_HLEN, HDR_ROOM, MAX_HELD, PAGE_RING, SLOTS};
use kernel::sync::atomic::Relaxed;

pub(crate) struct SlotBuf {
    /// The page the payload lands in (kept across trains until a packet takes it).
    pub(crate) page: Option<RxPage>,
    /// Ethernet, IPv4 and transport header of the packet being placed.
    pub(crate) hdr: [u8; HDR_ROOM],
    pub(crate) eth_len: usize,
    /// The original fragments, for the fallback.
    pub(crate) held: [Option<SkBuff>; MAX_HELD],
    pub(crate) nheld: usize,
    /// Held fragments whose payload the device wrote in place in `page`
    /// (they point into it).
    pub(crate) inplace: usize,
}

impl SlotBuf {
    pub(crate) const EMPTY: SlotBuf = SlotBuf {
        page: None,
        hdr: [0; HDR_ROOM],
        eth_len: 0,
        held: [const { None }; MAX_HELD],
        nheld: 0,
        inplace: 0,
    };
}

/// Receive state: touched only in softirq (rx handler, timer) and in
/// `teardown`, with bottom halves off.
pub(crate) struct RxState {
    pub(crate) engine: Engine<SLOTS>,
    pub(crate) slots: [SlotBuf; SLOTS],
    /// Pages for new trains, reused once the stack is done with them.
    pub(crate) pages: PageRing<PAGE_RING>,
    /// Admission answers this device may send (a Fast_Req flood draws no
    /// more than this).
    pub(crate) answers: RateLimit,
}

impl ZcFrag {
    /// Brings the engine up to date with the settings (under the rx lock).
    pub(crate) fn apply_cfg(&self, st: &mut RxState) {
        st.engine.set_limit(self.cfg.slots.load(Relaxed) as usize);
        st.engine
            .set_timeout_ns(u64::from(self.cfg.timeout_us.load(Relaxed)) * 1000);
        st.engine
            .set_admission(if self.cfg.required.load(Relaxed) != 0 {
                Admission::Required
            } else {
                Admission::Open
            });
    }

    /// Ends the speculation of `slot`: its held fragments, in arrival order,
    /// go onto `out` for the normal path (or are dropped when `out` is
    /// `None`: teardown). The caller hands `out` up (`Ctx::receive_all`)
    /// after dropping the rx lock, and before the frame in hand: the
    /// fragments then reach reassembly in the order they came, and no page
    /// packet of the flow overtakes them.
    pub(crate) fn flush(&self, st: &mut RxState, slot: usize, mut out: Option<&mut SkbChain>) {
        let Some(sb) = st.slots.get_mut(slot) else {
            return;
        };
        for h in sb.held.iter_mut().take(sb.nheld) {
            if let Some(skb) = h.take() {
                self.counters.inc(c::RX_FALLBACK_FRAGMENTS);
                self.counters
                    .add(c::RX_FALLBACK_BYTES, u64::from(skb.len()));
                match out.as_deref_mut() {
                    Some(o) => o.push(skb),
                    None => drop(skb),
                }
            }
        }
        sb.nheld = 0;
        if sb.inplace > 0 {
            // The fragments going up point into the page: it is theirs now.
            sb.page = None;
            sb.inplace = 0;
        }
        self.counters.inc(c::ZC_FAILED);
    }

    /// Counts a miss by its reason, and ends the speculation of `slot`
    /// (`zc_failed`), or, for `usize::MAX`, that of no slot: the packet's
    /// first fragment itself was not speculated on (`zc_refused`). So the
    /// reason counters add up to `zc_failed + zc_refused`.
    pub(crate) fn miss(
        &self,
        st: &mut RxState,
        slot: usize,
        reason: Miss,
        out: Option<&mut SkbChain>,
    ) {
        self.counters.inc(MISS_BASE + reason as usize);
        if slot == usize::MAX {
            self.counters.inc(c::ZC_REFUSED);
        } else {
            self.flush(st, slot, out);
        }
    }

    pub(crate) fn update_gauge(&self, st: &RxState) {
        self.counters.set(c::SLOTS_IN_USE, st.engine.busy() as u64);
    }

    /// The speculation path for an IPv4 frame. Fragments a miss ends go up
    /// first, once the rx lock is dropped (see `flush`), then the frame the
    /// inner path hands back as `Rx::Pass`.
    pub(crate) fn speculate(&self, skb: SkBuff, dev: &NetDevice, port: &dyn Port) -> Rx {
        let mut out = SkbChain::new();
        let rx = self.speculate_locked(skb, dev, port, &mut out);
        port.receive_all(&mut out);
        rx
    }

    /// [`Self::speculate`] up to the hand-over: takes the rx lock and puts
    /// what a miss ends on `out`.
    pub(crate) fn speculate_locked(
        &self,
        mut skb: SkBuff,
        dev: &NetDevice,
        port: &dyn Port,
        out: &mut SkbChain,
    ) -> Rx {
        // The whole header, options included (IHL says how long), so that a
        // fragment with options reaches the engine and counts as such.
        let mut ip_hdr = [0u8; ipv4::MAX_HEADER_LEN];
        let hl = match skb.pull_linear(ipv4::MIN_HEADER_LEN as u32) {
            Some(h) => {
                (usize::from(h[0] & 0x0f) * 4).clamp(ipv4::MIN_HEADER_LEN, ipv4::MAX_HEADER_LEN)
            }
            None => {
                // Fewer bytes than an IPv4 header (or than its IHL says).
                self.counters.inc(c::RX_BAD_HEADER);
                self.counters.inc(c::RX_BAD_TRUNCATED);
                return Rx::Pass(skb);
            }
        };
        match skb.pull_linear(hl as u32) {
            Some(h) => ip_hdr[..hl].copy_from_slice(&h[..hl]),
            None => {
                // Fewer bytes than an IPv4 header (or than its IHL says).
                self.counters.inc(c::RX_BAD_HEADER);
                self.counters.inc(c::RX_BAD_TRUNCATED);
                return Rx::Pass(skb);
            }
        }
        let h = match ipv4::Header::parse(&ip_hdr[..hl]) {
            Ok(h) => h,
            Err(e) => {
                self.counters.inc(c::RX_BAD_HEADER);
                self.counters.inc(match e {
                    ipv4::HeaderError::Truncated | ipv4::HeaderError::BadTotalLength => {
                        c::RX_BAD_TRUNCATED
                    }
                    ipv4::HeaderError::BadChecksum => c::RX_BAD_CHECKSUM,
                    ipv4::HeaderError::OffsetOverflow => c::RX_BAD_OVERSIZE,
                    ipv4::HeaderError::NotIpv4 | ipv4::HeaderError::BadHeaderLength => {
                        c::RX_BAD_VERSION
                    }
                });
                if e == ipv4::HeaderError::BadChecksum && ip_hdr[6..8] != [0, 0] {
                    // A fragment (or DF packet) whose header is corrupt: its
                    // flow's train cannot complete.
                    let src = [ip_hdr[12], ip_hdr[13], ip_hdr[14], ip_hdr[15]];
                    let dst = [ip_hdr[16], ip_hdr[17], ip_hdr[18], ip_hdr[19]];
                    let mut st = self.rx.lock();
                    if let Some(slot) = st.engine.on_bad_fragment(src, dst, ip_hdr[9]) {
                        self.miss(&mut st, slot, Miss::BadChecksum, Some(out));
                        self.update_gauge(&st);
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
        if h.frag_offset == 0 && !dev.is_local_ipv4(h.dst) {
            // Not for this host: forwarded as it is (with its DF and
            // fragment sizes), never reassembled here.
            self.counters.inc(c::RX_NOT_LOCAL);
            return Rx::Pass(skb);
        }
        if (skb.len() as usize) < h.total_len {
            // Shorter than its header says: the normal path drops it.
            self.counters.inc(c::RX_BAD_TRUNCATED);
            return Rx::Pass(skb);
        }
        if skb.len() as usize != h.total_len {
            // Ethernet padding: leave it to the normal path.
            return Rx::Pass(skb);
        }
        if h.payload_len() == 0 {
            // A fragment without payload: counted; the engine ends any train
            // it disturbs, and the normal path discards it.
            self.counters.inc(c::RX_EMPTY_FRAGMENTS);
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
        self.apply_cfg(&mut st);
        let step = st.engine.on_fragment(&h, &l4[..l4n], now_ns());
        if let Some((slot, reason)) = step.flush {
            self.miss(&mut st, slot, reason, Some(&mut *out));
        }
        let place = match step.this {
            This::Place(p) => p,
            This::Pass | This::NoSlot | This::NotAdmitted => {
                if step.this == This::NoSlot {
                    self.counters.inc(c::RX_NO_SLOT);
                } else if step.this == This::NotAdmitted {
                    self.counters.inc(c::RX_NOT_ADMITTED);
                }
                self.update_gauge(&st);
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
            port.arm_timer(rst.engine.params().timeout_ns / 1000);
            let mac = skb.mac_header();
            let eth_len = if mac.len() == ETH_HLEN { ETH_HLEN } else { 0 };
            sb.hdr[..eth_len].copy_from_slice(&mac[..eth_len]);
            sb.eth_len = eth_len;
            sb.hdr[eth_len..eth_len + ipv4::MIN_HEADER_LEN]
                .copy_from_slice(&ip_hdr[..ipv4::MIN_HEADER_LEN]);
            let from = (h.header_len + place.header_bytes) as u32;
            match skb.payload_frag(from).filter(|_| port.placed()) {
                // The device wrote the payload at the start of a page (a
                // speculative receive chain of the native front end): that
                // page is the train's.
                Some(f) if f.off() == 0 && f.len() == place.page_len => {
                    sb.page = Some(f.page());
                    self.counters.inc(c::RX_PAGES_PLACED);
                }
                // A page the wire may still write into is no train's.
                _ if sb.page.as_ref().is_some_and(|p| port.holds(p)) => sb.page = None,
                _ => {}
            }
            if sb.page.is_none() {
                sb.page = rst.pages.get().map(|(page, from)| {
                    self.counters.inc(match from {
                        PageFrom::Reused => c::RX_PAGES_REUSED,
                        PageFrom::Stash => c::RX_PAGES_STASHED,
                        PageFrom::New => c::RX_PAGES_NEW,
                    });
                    page
                });
            }
        }
        let hdr_at = sb.eth_len + ipv4::MIN_HEADER_LEN + place.header_off;
        // A fragment that does not complete the packet is held until it does;
        // the engine never lets a train need more than `MAX_HELD` of them.
        let room = place.complete.is_some() || sb.nheld < MAX_HELD;
        let from = (h.header_len + place.header_bytes) as u32;
        // Payload the device wrote where it belongs: nothing to copy.
        let in_place = port.placed()
            && sb.page.as_ref().is_some_and(|p| {
                skb.payload_frag(from).is_some_and(|f| {
                    f.is_in(p) && f.off() == place.page_off && f.len() == place.page_len
                })
            });
        if !in_place && sb.page.as_ref().is_some_and(|p| port.holds(p)) {
            // Never copy into a page the device may still write.
            rst.engine.abandon(place.slot);
            self.miss(rst, place.slot, Miss::Displaced, Some(&mut *out));
            self.update_gauge(rst);
            return Rx::Pass(skb);
        }
        let hdr_dst = sb.hdr.get_mut(hdr_at..hdr_at + place.header_bytes);
        let copied = match (room, hdr_dst, sb.page.as_ref()) {
            (true, Some(hdr_dst), Some(page)) => {
                if !in_place {
                    port.owned(page);
                }
                skb.copy_bits(h.header_len as u32, hdr_dst).is_ok()
                    && (in_place || skb.copy_to_page(from, page, place.page_off, place.page_len))
            }
            _ => false,
        };
        if !copied {
            // No page, no room to hold, or a short frame: give the train up.
            // The engine may already have ended it (this fragment completed
            // it), so the slot's held fragments are flushed either way.
            if sb.page.is_none() {
                self.counters.inc(c::RX_NOMEM);
            }
            if in_place {
                // This frame goes up pointing into the page.
                sb.page = None;
            }
            rst.engine.abandon(place.slot);
            self.miss(rst, place.slot, Miss::NoMem, Some(&mut *out));
            self.update_gauge(rst);
            return Rx::Pass(skb);
        }
        if in_place {
            self.counters
                .add(c::RX_COPIED_BYTES, place.header_bytes as u64);
            self.counters.add(c::RX_PLACED_BYTES, place.page_len as u64);
        } else {
            self.counters.add(
                c::RX_COPIED_BYTES,
                (place.header_bytes + place.page_len) as u64,
            );
        }
        let Some(done) = place.complete else {
            if let Some(h) = sb.held.get_mut(sb.nheld) {
                *h = Some(skb);
                sb.nheld += 1;
                sb.inplace += usize::from(in_place);
            }
            self.update_gauge(rst);
            return Rx::Consumed;
        };
        // The last fragment: one packet, its payload the page at offset 0.
        let hl = sb.eth_len + ipv4::MIN_HEADER_LEN + done.l4_header_len;
        let total = ipv4::MIN_HEADER_LEN + done.l4_header_len + done.data_len;
        let ip_at = sb.eth_len;
        let ok = match sb.hdr.get_mut(ip_at..ip_at + ipv4::MIN_HEADER_LEN) {
            Some(ip) => {
                // CE on any fragment marks the packet (ip_frag_ecn_table).
                ip[1] |= done.ecn;
                ipv4::rewrite(ip, total, h.id, 0, false)
            }
            None => false,
        };
        if sb.page.as_ref().is_some_and(|p| port.holds(p)) {
            // Never hand up a page the device may still write; the fragments
            // going up may point into it: it is theirs now.
            sb.page = None;
            self.miss(rst, place.slot, Miss::Displaced, Some(&mut *out));
            self.counters.inc(c::RX_FALLBACK_FRAGMENTS);
            self.counters
                .add(c::RX_FALLBACK_BYTES, u64::from(skb.len()));
            self.update_gauge(rst);
            return Rx::Pass(skb);
        }
        sb.inplace = 0;
        let page = sb.page.take().inspect(|page| {
            // Bytes past the data may be another packet's or stale: a page
            // handed up never shows them (zcsock may map it to user space).
            page.fill(done.data_len, PAGE_SIZE.saturating_sub(done.data_len), 0);
            port.owned(page);
        });
        let pkt = match (ok, page, sb.hdr.get(..hl)) {
            (true, Some(page), Some(hdr)) => {
                SkBuff::from_page(hdr, sb.eth_len, page, done.data_len, dev, &skb)
            }
            _ => None,
        };
        let Some(pkt) = pkt else {
            // Could not build it: the fragments go the normal way, this one
            // last.
            self.counters.inc(c::RX_NOMEM);
            self.miss(rst, place.slot, Miss::NoMem, Some(&mut *out));
            self.counters.inc(c::RX_FALLBACK_FRAGMENTS);
            self.counters
                .add(c::RX_FALLBACK_BYTES, u64::from(skb.len()));
            self.update_gauge(rst);
            return Rx::Pass(skb);
        };
        for held in sb.held.iter_mut().take(sb.nheld) {
            if let Some(f) = held.take() {
                f.consume();
            }
        }
        sb.nheld = 0;
        skb.consume();
        self.counters.inc(c::ZC_SUCCESS);
        if done.data_len == PAGE_SIZE {
            self.counters.inc(c::ZC_FULL_PAGES);
        }
        self.update_gauge(rst);
        Rx::Pass(pkt)
    }
}
