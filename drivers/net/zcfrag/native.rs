// SPDX-License-Identifier: GPL-2.0

//! The native front end: zcfrag drives a virtio-net device itself
//! (`rust/zcnet/vnet.rs`) instead of stacking on `virtio_net`; the engine
//! (fragmenting transmit, receive speculation, admission) is the stacked
//! device's, through a [`Port`] whose wire is the device's own rings.
//!
//! Bind a device with the module parameter `devices` (its virtioN name or
//! MAC address), then move it from `virtio_net` to this driver:
//!
//! ```text
//! echo virtio1 > /sys/module/zcfrag/parameters/devices
//! echo virtio1 > /sys/bus/virtio/drivers/virtio_net/unbind
//! echo virtio1 > /sys/bus/virtio/drivers/zcfrag/bind
//! ```
//!
//! Each queue pair's receive ring holds speculative chains while page trains
//! come in (a header buffer exactly as long as the expected fragment's
//! headers, the slice of a page where its payload belongs, an overflow
//! buffer: the device writes the payload in place, paper §3.2.2) and
//! ordinary chains otherwise (a header buffer of [`vnet::RX_HDR`] bytes,
//! copied into the skb's head, and a page, its fragment); either ends with
//! as many more pages as a frame of the device's MTU needs. With RSS the
//! device sends IPv4 fragments to pair 0 and the rest to the other pairs
//! (§6.2's second receive list). Each frame sent is a scatter-gather chain
//! of its head and fragments; a packet's fragments, and packets the stack
//! sends back to back (`xmit_more`), share one kick, and byte queue limits
//! bound the ring's fill.

use crate::admit;
use crate::config::{attr, parse_u32};
use crate::counters::c;
use crate::device::ZcFrag;
use crate::port::Port;
use crate::zcnet::bh::BhGuard;
use crate::zcnet::netdev::{DevStats, NetDevice};
use crate::zcnet::page::{PageRing, RxPage, PAGE_SIZE};
use crate::zcnet::skbuff::SkBuff;
use crate::zcnet::stacked::Rx;
use crate::zcnet::text::TextBuf;
use crate::zcnet::vnet::{self, RxFrame, RxRing, Spec, TxFull, TxRing, Vnet};
use crate::{counters::NAMES, zcnet, DEFAULT_MTU};
use core::cell::{Cell, RefCell};
use core::num::NonZeroUsize;
use kernel::{
    new_spinlock,
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
    sync::SpinLock,
    uaccess::UserPtr,
};

/// Receive pages kept for reuse.
const PAGE_RING: usize = 256;
/// Descriptors a frame may take (its head and every fragment, and the
/// virtio-net header): the queue stops while fewer are free.
const TX_STOP_FREE: usize = vnet::TX_STOP_FREE;
/// The wire's MTU until the `wire_mtu` setting says otherwise: what QEMU's
/// and every Ethernet's default is.
const WIRE_MTU: u32 = 1500;
/// The smallest wire MTU (`wire_mtu`): IPv4's 576, a page train of eight
/// fragments. The largest is what an ordinary receive chain holds,
/// [`vnet::MAX_MTU`].
const MIN_WIRE_MTU: u32 = 576;
const _: () = assert!(vnet::MAX_MTU == 4198);
const WIRE_MTU_RANGE: &CStr = c"wire_mtu must be 576 to 4198";
/// The largest MTU of the device: an IPv4 packet of up to 16 fragments of
/// the smallest wire MTU's payload is still one the engine handles whole;
/// every receive chain holds a frame of it ([`vnet::DEV_MAX_MTU`]).
const MAX_MTU: u32 = vnet::DEV_MAX_MTU as u32;
const _: () = assert!(MAX_MTU == 16 * 1024);

/// One bound device.
#[pin_data]
pub(crate) struct Native {
    /// The engine, as on a stacked device.
    #[pin]
    zf: ZcFrag,
    /// Each queue pair's receive side, beside its ring.
    rxq: KVec<Pin<KBox<RxQueue>>>,
    /// The `wire_mtu` setting.
    wire_mtu: Atomic<u32>,
    stats: DevStats,
}

/// How many bytes of a packet one transmit descriptor stands for on a wire
/// of `wire_mtu` ([`vnet::TX_BYTES_PER_DESC`] at 1500): the smaller the
/// fragments, the more frames a packet becomes.
fn tx_bytes_per_desc(wire_mtu: u32) -> u32 {
    let f = wire_mtu.saturating_sub(20) & !7;
    (vnet::TX_BYTES_PER_DESC as u32 * f / (WIRE_MTU - 20)).max(1)
}

/// TCP header length speculated on (with timestamps, what Linux sends).
const SPEC_TCP_HDR: usize = 32;
/// Bytes of Ethernet and IPv4 (no options) headers.
const ETH_IP: usize = 14 + 20;
/// Train pages with chains posted at once, at most (a ring of 256 chains
/// holds 86 trains of three fragments).
const TRAINS: usize = 128;
/// Frames in a row that are not page-train fragments before the device
/// goes back to ordinary chains.
const QUIET: u32 = 64;
/// Speculative chains in flight at most, and at least: a surprise (a frame
/// the speculation did not expect) shifts every chain in flight by one, and
/// they all miss, so after one the front end halves how many it keeps in
/// flight; each [`SPEC_GROW`] chains placed in a row give back one train's
/// worth. Few chains in flight cost little per surprise, many keep the device
/// from running dry between polls (both measured: zcfrag.rst).
const SPEC_MAX: usize = 48;
const SPEC_MIN: usize = 6;
const SPEC_GROW: u32 = 64;

/// Where a page train's fragments lie on a wire (paper §3.2.2): a TCP
/// segment of one page with a [`SPEC_TCP_HDR`]-byte header, as IPv4
/// fragments of `f` payload bytes each.
#[derive(Clone, Copy, PartialEq)]
struct Geometry {
    /// IPv4 payload bytes of a fragment but the last.
    f: NonZeroUsize,
    /// Fragments of a train.
    n: NonZeroUsize,
}

impl Geometry {
    /// The trains of a wire of this MTU, if every chain of them holds any
    /// frame of the wire besides.
    fn new(wire_mtu: u32) -> Option<Self> {
        let f = NonZeroUsize::new((wire_mtu as usize).checked_sub(20)? & !7)?;
        if f.get() < 256 {
            return None;
        }
        let n = NonZeroUsize::new((SPEC_TCP_HDR + PAGE_SIZE + f.get() - 1) / f)?;
        let g = Self { f, n };
        let frame = vnet::HDR_LEN + 14 + wire_mtu as usize;
        (0..n.get())
            .all(|k| {
                let (h, _, len) = g.layout(k);
                h <= vnet::RX_HDR && h + len + vnet::RX_OVF >= frame
            })
            .then_some(g)
    }

    /// Fragment `k`'s chain: header bytes (the virtio-net header, Ethernet,
    /// IPv4 and, for the first, TCP), its payload's offset in the page and
    /// length.
    fn layout(&self, k: usize) -> (usize, usize, usize) {
        let f = self.f.get();
        let start = k * f;
        let end = ((k + 1) * f).min(SPEC_TCP_HDR + PAGE_SIZE);
        if k == 0 {
            (vnet::HDR_LEN + ETH_IP + SPEC_TCP_HDR, 0, end - SPEC_TCP_HDR)
        } else {
            (vnet::HDR_LEN + ETH_IP, start - SPEC_TCP_HDR, end - start)
        }
    }

    /// Which fragment of a train a frame (from its Ethernet header on) is,
    /// with its datagram's identity (addresses, IP ID, protocol).
    fn fragment(&self, frame: &[u8]) -> Option<(usize, [u8; 11])> {
        let ip = frame.get(14..ETH_IP)?;
        if frame.get(12..14)? != [0x08, 0x00] || ip[0] != 0x45 {
            return None;
        }
        let fo = u16::from_be_bytes([ip[6], ip[7]]);
        let off = usize::from(fo & 0x1fff) * 8;
        if (off == 0 && fo & 0x2000 == 0) || off % self.f != 0 || off / self.f >= self.n.get() {
            return None;
        }
        let mut id = [0u8; 11];
        id[..8].copy_from_slice(&ip[12..20]);
        id[8..10].copy_from_slice(&ip[4..6]);
        id[10] = ip[9];
        Some((off / self.f, id))
    }
}

/// A train page with speculative chains posted into it.
struct TrainPage {
    page: RxPage,
    /// Its chains still posted.
    outstanding: u32,
    /// The datagram its first fragment placed in it: later fragments are
    /// in place only if they are that datagram's.
    id: Option<[u8; 11]>,
    /// The trains its chains were posted for: a frame is checked against
    /// these, whatever the wire's MTU has become since.
    geo: Geometry,
    /// The engine wrote into it itself or handed it up: no chain is posted
    /// into it any more.
    retired: bool,
}

/// A queue pair's receive side: its speculation and its pages, owned by
/// its poll (taken in the poll and in `open`, after the receive ring's
/// lock). Pages never move from one queue's ring to another's, so only a
/// queue's own chains point into its pages.
#[pin_data]
struct RxQueue {
    #[pin]
    st: SpinLock<RxState>,
    /// Whether a speculative chain of this queue is posted (read by other
    /// queues' polls without the lock).
    speculating: Atomic<bool>,
    /// Another queue's poll retired a page while this queue's lock was
    /// busy (its poll ran): the next chain starts a fresh page.
    retire_cur: Atomic<bool>,
}

struct RxState {
    pred: Predictor,
    /// Pages for receive chains, reused once the stack lets go of them.
    pages: PageRing<PAGE_RING>,
}

/// The speculative receive chains (paper §3.2.2): which fragment of which
/// train the next chain posted waits for.
struct Predictor {
    geo: Option<Geometry>,
    trains: KVec<Option<TrainPage>>,
    /// The train being posted.
    cur: usize,
    /// Its fragment the next chain is for.
    next_k: usize,
    /// The next chain starts a new page.
    fresh: bool,
    /// Posting speculative chains.
    on: bool,
    /// Frames in a row that were not train fragments.
    quiet: u32,
    /// Speculative chains posted.
    outstanding: u32,
    /// Speculative chains to keep in flight now (`SPEC_MIN..=SPEC_MAX`).
    depth: usize,
    /// Chains placed in a row since the depth last changed.
    streak: u32,
    /// The last speculative chain missed.
    missing: bool,
}

impl Predictor {
    fn new(wire_mtu: u32) -> Result<Self> {
        let mut trains = KVec::with_capacity(TRAINS, GFP_KERNEL)?;
        for _ in 0..TRAINS {
            trains.push(None, GFP_KERNEL)?;
        }
        Ok(Self {
            geo: Geometry::new(wire_mtu),
            trains,
            cur: 0,
            next_k: 0,
            fresh: true,
            on: false,
            quiet: 0,
            outstanding: 0,
            depth: SPEC_MAX,
            streak: 0,
            missing: false,
        })
    }

    /// The engine wrote into `page` itself or handed it up: retires it (no
    /// chain is posted into it any more, whatever order the device uses the
    /// chains in); whether it was one of this queue's train pages.
    fn retire(&mut self, page: &RxPage) -> bool {
        let mut found = false;
        for t in self.trains.iter_mut().flatten() {
            if t.page.same(page) {
                t.retired = true;
                found = true;
            }
        }
        found
    }

    /// Whether a chain still posted points into `page`.
    fn holds(&self, page: &RxPage) -> bool {
        self.trains
            .iter()
            .flatten()
            .any(|t| t.outstanding > 0 && t.page.same(page))
    }

    /// A speculative chain came back with its frame in place, or not:
    /// adapts how many chains stay in flight.
    fn placed(&mut self, hit: bool) {
        if hit {
            self.missing = false;
            self.streak += 1;
            if self.streak >= SPEC_GROW {
                self.streak = 0;
                self.depth = (self.depth + 1).min(SPEC_MAX);
            }
        } else if !self.missing {
            // The first miss of a surprise: the rest of it is its cascade.
            self.missing = true;
            self.streak = 0;
            self.depth = (self.depth / 2).max(SPEC_MIN);
        }
    }

    /// A chain of train `idx` came back.
    fn returned(&mut self, idx: usize) {
        self.outstanding = self.outstanding.saturating_sub(1);
        let cur = self.cur;
        if let Some(slot) = self.trains.get_mut(idx) {
            if let Some(t) = slot.as_mut() {
                t.outstanding = t.outstanding.saturating_sub(1);
                if t.outstanding == 0 && idx != cur {
                    *slot = None;
                }
            }
        }
    }

    /// Whether a speculative chain's frame lies where the chain wanted it:
    /// the fragment it waited for, of the datagram its page holds, headers
    /// of the speculated lengths, payload ending in the slice.
    fn in_place(&mut self, spec: &Spec, written: usize, head: &[u8]) -> bool {
        let (idx, k) = ((spec.tag >> 4) as usize, (spec.tag & 0xf) as usize);
        let Some(n) = written
            .checked_sub(spec.hdr_len)
            .filter(|&n| n > 0 && n <= spec.len)
        else {
            return false;
        };
        let Some(frame) = head.get(vnet::HDR_LEN..) else {
            return false;
        };
        let Some(Some(t)) = self.trains.get_mut(idx) else {
            return false;
        };
        let Some((fk, id)) = t.geo.fragment(frame) else {
            return false;
        };
        let total = usize::from(u16::from_be_bytes([frame[16], frame[17]]));
        let l4 = if k == 0 { SPEC_TCP_HDR } else { 0 };
        if fk != k || total != 20 + l4 + n {
            return false;
        }
        if k == 0 {
            // TCP with the speculated header length.
            let doff = frame
                .get(ETH_IP + 12)
                .map_or(0, |b| usize::from(b >> 4) * 4);
            if frame[14 + 9] != 6 || doff != SPEC_TCP_HDR {
                return false;
            }
            t.id = Some(id);
            true
        } else {
            t.id == Some(id)
        }
    }

    /// A frame came (any chain): follows the trains on the wire. `posted`:
    /// chains posted after the one it came in.
    fn saw(&mut self, frame: &[u8], posted: usize) {
        let Some(geo) = self.geo else {
            return;
        };
        match frame.get(vnet::HDR_LEN..).and_then(|f| geo.fragment(f)) {
            Some((k, _)) => {
                self.quiet = 0;
                if !self.on {
                    self.on = true;
                    self.fresh = true;
                }
                // The frame that lands in the next chain posted.
                let want = (k + posted + 1) % geo.n;
                if want != self.next_k {
                    self.next_k = want;
                    self.fresh = true;
                }
            }
            None => {
                self.quiet = self.quiet.saturating_add(1);
                if self.quiet >= QUIET {
                    self.on = false;
                }
            }
        }
    }

    /// Posts speculative chains in the free slots while it is on: how many,
    /// and how many of them went into a page the engine had taken (never:
    /// [`Self::retire`]; counted as a check).
    fn post(&mut self, rx: &mut RxRing, pages: &mut PageRing<PAGE_RING>) -> (usize, usize) {
        let Some(geo) = self.geo.filter(|_| self.on) else {
            return (0, 0);
        };
        let (mut posted, mut into_retired) = (0, 0);
        // A frame the speculation did not expect (an ARP, an admission
        // frame) shifts every chain posted after it by one: at most this
        // many of them miss before the trains realign.
        while rx.has_free() && rx.posted() < self.depth {
            if self.fresh
                || self.next_k == 0
                || self
                    .trains
                    .get(self.cur)
                    .is_none_or(|t| t.as_ref().is_none_or(|t| t.geo != geo || t.retired))
            {
                // A new train page, in an entry no chain points into.
                let Some(idx) = (0..TRAINS).map(|i| (self.cur + 1 + i) % TRAINS).find(|&i| {
                    self.trains
                        .get(i)
                        .is_some_and(|t| t.as_ref().is_none_or(|t| t.outstanding == 0))
                }) else {
                    break;
                };
                let Some((page, _)) = pages.get() else {
                    break;
                };
                // The old current train keeps only what is still posted.
                let old = self.cur;
                self.cur = idx;
                self.returned_none(old);
                if let Some(slot) = self.trains.get_mut(idx) {
                    *slot = Some(TrainPage {
                        page,
                        outstanding: 0,
                        id: None,
                        geo,
                        retired: false,
                    });
                }
                self.fresh = false;
            }
            let Some(Some(t)) = self.trains.get_mut(self.cur) else {
                break;
            };
            let (hdr_len, off, len) = geo.layout(self.next_k);
            let spec = Spec {
                hdr_len,
                page: t.page.share(),
                off,
                len,
                tag: ((self.cur as u32) << 4) | self.next_k as u32,
            };
            if rx
                .post_spec(spec, &mut || pages.get().map(|(p, _)| p))
                .is_err()
            {
                break;
            }
            t.outstanding += 1;
            into_retired += usize::from(t.retired);
            self.outstanding += 1;
            self.next_k = (self.next_k + 1) % geo.n;
            posted += 1;
        }
        (posted, into_retired)
    }

    /// The wire's MTU is now `wire_mtu`: chains posted from now on are for
    /// its trains, in fresh pages, once the next fragment seen realigns
    /// them. Chains in flight keep the trains they were posted for.
    fn set_wire_mtu(&mut self, wire_mtu: u32) {
        self.geo = Geometry::new(wire_mtu);
        self.on = false;
        self.fresh = true;
        self.next_k = 0;
        self.quiet = 0;
    }

    /// Drops train `idx`'s entry if no chain points into it any more.
    fn returned_none(&mut self, idx: usize) {
        if let Some(slot) = self.trains.get_mut(idx) {
            if slot.as_ref().is_some_and(|t| t.outstanding == 0) {
                *slot = None;
            }
        }
    }
}

/// How a [`NativePort`] reaches the transmit ring.
enum TxAccess<'a> {
    /// The caller holds it (transmit): frames are counted for byte queue
    /// limits and the caller kicks once at the end.
    Held(RefCell<&'a mut TxRing>),
    /// Locked for each frame and kicked at once (receive, timer, teardown).
    Lock(&'a SpinLock<TxRing>),
}

/// The engine's view of a native device in one callback.
struct NativePort<'a> {
    n: &'a Native,
    vn: &'a Vnet,
    /// The queue pair of the poll or transmit it serves.
    q: usize,
    tx: TxAccess<'a>,
    /// From the NAPI poll: packets go up through GRO.
    napi: bool,
    /// Bytes posted while the ring was held (for byte queue limits).
    sent: Cell<u32>,
    /// Whether a speculative chain points into a page, in the poll
    /// (elsewhere the engine must assume every page may still be written).
    holds: Option<&'a dyn Fn(&RxPage) -> bool>,
    /// The frame being handled is one the device placed (in the poll).
    placed: Cell<bool>,
    /// Retires a page the engine takes (in the poll).
    retire: Option<&'a dyn Fn(&RxPage)>,
}

impl Port for NativePort<'_> {
    fn dev(&self) -> &NetDevice {
        self.vn.netdev()
    }

    fn wire(&self) -> &NetDevice {
        self.vn.netdev()
    }

    fn wire_mtu(&self) -> u32 {
        self.n.wire_mtu.load(Relaxed)
    }

    fn send(&self, skb: SkBuff) -> bool {
        let len = skb.len();
        let r = match &self.tx {
            TxAccess::Held(tx) => match tx.try_borrow_mut() {
                Ok(mut tx) => tx.post(skb, len),
                Err(_) => Err(TxFull::Busy(skb)),
            },
            TxAccess::Lock(tx) => {
                // Outside the transmit path: not for byte queue limits,
                // whose counts only the transmit path may change.
                let mut tx = tx.lock();
                let r = tx.post(skb, 0);
                if r.is_ok() {
                    self.n.kick_tx(&tx);
                }
                r
            }
        };
        match r {
            Ok(()) => {
                if let TxAccess::Held(_) = self.tx {
                    self.sent.set(self.sent.get().wrapping_add(len));
                }
                true
            }
            Err(TxFull::Busy(skb) | TxFull::Failed(skb)) => {
                self.n.stats.tx_drop();
                drop(skb);
                false
            }
        }
    }

    fn receive(&self, skb: SkBuff) {
        self.n.stats.rx(u64::from(skb.len()));
        if self.napi {
            self.vn.receive(self.q, skb);
        } else {
            skb.receive(self.vn.netdev());
        }
    }

    fn arm_timer(&self, us: u64) {
        self.vn.arm_timer(us)
    }

    fn dying(&self) -> bool {
        self.vn.dying()
    }

    fn placed(&self) -> bool {
        self.placed.get()
    }

    fn holds(&self, page: &RxPage) -> bool {
        self.holds.is_none_or(|h| h(page))
    }

    fn owned(&self, page: &RxPage) {
        if let Some(r) = self.retire {
            r(page);
        }
    }
}

impl Native {
    /// The `wire_mtu` setting (process context): transmit cuts fragments
    /// for it at once; each queue's receive speculation follows it.
    fn set_wire_mtu(&self, vn: &Vnet, wire_mtu: u32) {
        self.wire_mtu.store(wire_mtu, Relaxed);
        vn.set_tx_bytes_per_desc(tx_bytes_per_desc(wire_mtu));
        for q in self.rxq.iter() {
            // The poll takes the lock in softirq.
            let _bh = BhGuard::new();
            q.st.lock().pred.set_wire_mtu(wire_mtu);
        }
    }

    fn kick_tx(&self, tx: &TxRing) {
        if tx.kick() {
            self.zf.counters.inc(c::TX_KICKS);
        }
    }

    fn port<'a>(&'a self, vn: &'a Vnet, q: usize, tx: TxAccess<'a>, napi: bool) -> NativePort<'a> {
        NativePort {
            n: self,
            vn,
            q,
            tx,
            napi,
            sent: Cell::new(0),
            holds: None,
            placed: Cell::new(false),
            retire: None,
        }
    }

    /// Refills the receive ring: speculative chains while page trains come
    /// in, ordinary ones otherwise.
    fn refill(&self, rx: &mut RxRing, st: &mut RxState) -> usize {
        if rx.no_pages() {
            return 0;
        }
        let RxState { pred, pages } = st;
        if self
            .rxq
            .get(rx.queue())
            .is_some_and(|q| q.retire_cur.xchg(false, Relaxed))
        {
            pred.fresh = true;
        }
        let (spec, into_retired) = pred.post(rx, pages);
        self.zf.counters.add(c::RX_CHAINS_SPECULATIVE, spec as u64);
        self.zf
            .counters
            .add(c::RX_CHAINS_RETIRED, into_retired as u64);
        // Ordinary chains in what speculation left: all of the ring when
        // off; when on, only if the ring would otherwise run dry (no page
        // for a train), and the trains realign on the next fragment seen.
        let limit = if !pred.on {
            usize::MAX
        } else if rx.posted() == 0 {
            1
        } else {
            0
        };
        let n = spec + rx.fill(limit, &mut || pages.get().map(|(p, _)| p));
        if let Some(q) = self.rxq.get(rx.queue()) {
            q.speculating.store(pred.outstanding > 0, Relaxed);
        }
        if n > 0 && rx.kick() {
            self.zf.counters.inc(c::RX_KICKS);
        }
        n
    }

    /// A frame the device filled a chain with, as an skb: in place when a
    /// speculative chain's frame is the one it waited for, copied when it
    /// is not (but for what went on into the pages after the overflow
    /// buffer: those are its fragments), headers copied and the pages as
    /// its fragments for an ordinary chain.
    fn frame_skb(
        &self,
        f: &mut RxFrame<'_>,
        pred: &mut Predictor,
        placed: &Cell<bool>,
    ) -> Option<SkBuff> {
        placed.set(false);
        pred.saw(f.head(), f.posted_after());
        if let Some(spec) = f.spec() {
            let ok = pred.in_place(spec, f.len(), f.head());
            pred.placed(ok);
            pred.returned((spec.tag >> 4) as usize);
            if ok {
                placed.set(true);
                return f.placed_skb();
            }
            // A frame longer than the slice and the overflow buffer (one
            // of the device's MTU) ends in the pages after them: a miss,
            // counted apart too.
            let copied = f.len().min(spec.hdr_len + spec.len + vnet::RX_OVF);
            self.zf.counters.inc(c::RX_CHAINS_MISSED);
            if f.used_pages() {
                self.zf.counters.inc(c::RX_CHAINS_PAGES_USED);
            }
            self.zf.counters.add(
                c::RX_COPIED_BYTES,
                copied.saturating_sub(vnet::HDR_LEN) as u64,
            );
            return f.copied_skb();
        }
        f.ordinary_skb()
    }

    /// Frees what the device has sent and counts it.
    fn reap(&self, tx: &mut TxRing) {
        let (mut frames, mut bytes) = (0u32, 0u32);
        while let Some((skb, len)) = tx.reap() {
            frames += 1;
            bytes = bytes.wrapping_add(len);
            skb.consume();
        }
        if frames > 0 {
            tx.completed(frames, bytes);
            if tx.free() >= TX_STOP_FREE {
                tx.wake();
            }
        }
    }

    /// Retires `page` in the queue other than `q` whose train page it is
    /// (a queue whose lock is taken, its poll running, starts its next
    /// chain in a fresh page instead): whether one did.
    fn others_retire(&self, q: usize, page: &RxPage) -> bool {
        let mut any = false;
        for (_, r) in self.rxq.iter().enumerate().filter(|(i, _)| *i != q) {
            match r.st.try_lock() {
                Some(mut st) => any |= st.pred.retire(page),
                None => {
                    r.retire_cur.store(true, Relaxed);
                    any = true;
                }
            }
        }
        any
    }

    /// Whether a speculative chain of a queue other than `q` points into
    /// `page` (pages never move between queues, but the engine's trains
    /// may span them): a queue whose lock is taken (its poll runs) counts
    /// as holding it.
    fn others_hold(&self, q: usize, page: &RxPage) -> bool {
        self.rxq
            .iter()
            .enumerate()
            .filter(|(i, r)| *i != q && r.speculating.load(Relaxed))
            .any(|(_, r)| r.st.try_lock().is_none_or(|st| st.pred.holds(page)))
    }
}

#[vtable]
impl vnet::Driver for Native {
    const NAME: &'static CStr = c"zcfrag";
    const STATS: &'static [&'static str] = &NAMES;

    fn new(vn: &Vnet) -> impl PinInit<Self, Error> {
        vn.set_mtu(DEFAULT_MTU, MAX_MTU);
        let rxq = (|| -> Result<KVec<Pin<KBox<RxQueue>>>> {
            let n = vn.max_queues().max(1);
            let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
            for _ in 0..n {
                let st = RxState {
                    pred: Predictor::new(WIRE_MTU)?,
                    pages: PageRing::new(),
                };
                let q = pin_init!(RxQueue {
                    st <- new_spinlock!(st),
                    speculating: Atomic::new(false),
                    retire_cur: Atomic::new(false),
                });
                v.push(KBox::pin_init(q, GFP_KERNEL)?, GFP_KERNEL)?;
            }
            Ok(v)
        })();
        try_pin_init!(Self {
            zf <- ZcFrag::init(),
            rxq: rxq?,
            wire_mtu: Atomic::new(WIRE_MTU),
            stats: DevStats::new(),
        })
    }

    fn open(&self, _vn: &Vnet, rx: &mut RxRing) -> Result {
        let q = self.rxq.get(rx.queue()).ok_or(EINVAL)?;
        self.refill(rx, &mut q.st.lock());
        Ok(())
    }

    fn xmit(
        &self,
        vn: &Vnet,
        tx: &mut TxRing,
        skb: SkBuff,
        more: bool,
    ) -> core::result::Result<(), SkBuff> {
        self.reap(tx);
        // Room for a whole packet's fragments, or the stack waits.
        // (A TSO packet needing more than the ring holds was segmented by
        // the core: ndo_features_check, rust/helpers/vnet.c.)
        let per_desc = tx_bytes_per_desc(self.wire_mtu.load(Relaxed)).max(1) as usize;
        let need = TX_STOP_FREE + skb.len() as usize / per_desc;
        if tx.free() < need.min(vn.tx_size()) {
            tx.stop();
            self.kick_tx(tx);
            return Err(skb);
        }
        let q = tx.queue();
        let port = self.port(vn, q, TxAccess::Held(RefCell::new(tx)), false);
        let r = self.zf.transmit(skb, &port);
        if r.dropped {
            self.stats.tx_drop();
        } else {
            self.stats.tx(r.frames, r.bytes);
        }
        let sent = port.sent.get();
        let TxAccess::Held(tx) = port.tx else {
            return Ok(());
        };
        let tx = tx.into_inner();
        let mut kick = tx.sent(sent, more);
        if tx.free() < TX_STOP_FREE {
            tx.stop();
            kick = true;
        }
        if kick {
            self.kick_tx(tx);
        }
        Ok(())
    }

    fn tx_done(&self, _vn: &Vnet, tx: &mut TxRing) {
        self.reap(tx);
    }

    fn poll(&self, vn: &Vnet, rx: &mut RxRing, tx: &SpinLock<TxRing>, budget: usize) -> usize {
        let q = rx.queue();
        let Some(rxq) = self.rxq.get(q) else {
            return 0;
        };
        let st = RefCell::new(rxq.st.lock());
        // Unreadable (never: nothing holds it across a call) counts as held.
        let holds = |p: &RxPage| {
            st.try_borrow().map_or(true, |st| st.pred.holds(p)) || self.others_hold(q, p)
        };
        // A page the engine takes is retired by the queue whose train page
        // it is (pages never move between queues).
        let retire = |p: &RxPage| {
            if st.try_borrow_mut().is_ok_and(|mut st| st.pred.retire(p)) || self.others_retire(q, p)
            {
                self.zf.counters.inc(c::RX_PAGES_RETIRED);
            }
        };
        let mut port = self.port(vn, q, TxAccess::Lock(tx), true);
        port.holds = Some(&holds);
        port.retire = Some(&retire);
        let mut done = 0;
        while done < budget {
            let Some(mut f) = rx.next() else {
                break;
            };
            done += 1;
            let skb = match st.try_borrow_mut() {
                Ok(mut st) => self.frame_skb(&mut f, &mut st.pred, &port.placed),
                Err(_) => None,
            };
            drop(f);
            let Some(skb) = skb else {
                self.stats.rx_drop();
                continue;
            };
            if let Rx::Pass(skb) = self.zf.rx_frame(skb, &port) {
                port.receive(skb);
            }
        }
        if let Ok(mut st) = st.try_borrow_mut() {
            self.refill(rx, &mut st);
        }
        // An empty ring (no page to be had: memory is short) gets no frame
        // and so no interrupt that would poll it again: stay scheduled and
        // try again, as virtio_net does.
        if rx.posted() == 0 {
            self.zf.counters.inc(c::RX_REFILL_RETRIES);
            return budget;
        }
        done
    }

    fn rx_recycled(&self, _vn: &Vnet, q: usize, spec: Spec) {
        let Some(rxq) = self.rxq.get(q) else {
            return;
        };
        let mut st = rxq.st.lock();
        st.pred.returned((spec.tag >> 4) as usize);
        // The trains realign on the next fragment seen, in a fresh page.
        st.pred.on = false;
        st.pred.fresh = true;
        if st.pred.outstanding == 0 {
            rxq.speculating.store(false, Relaxed);
        }
        self.zf.counters.inc(c::RX_CHAINS_RECYCLED);
    }

    fn on_timer(&self, vn: &Vnet, tx: &SpinLock<TxRing>) {
        self.zf.tick(&self.port(vn, 0, TxAccess::Lock(tx), false));
    }

    fn teardown(&self, vn: &Vnet, tx: &SpinLock<TxRing>) {
        self.zf
            .shutdown(&self.port(vn, 0, TxAccess::Lock(tx), false));
    }

    fn stats(&self) -> &DevStats {
        &self.stats
    }

    fn ethtool_stats(&self, out: &mut [u64]) {
        self.zf.counters.snapshot(out);
    }

    fn sysfs_show(&self, _vn: &Vnet, idx: usize, out: &mut TextBuf<'_>) -> Result {
        self.zf.show_setting(idx, out, self.wire_mtu.load(Relaxed))
    }

    fn sysfs_store(&self, vn: &Vnet, idx: usize, input: &[u8]) -> Result {
        if idx != attr::WIRE_MTU {
            return self.zf.store_setting(idx, input);
        }
        let Ok(mtu) = parse_u32(input, MIN_WIRE_MTU, vnet::MAX_MTU as u32) else {
            vn.netdev().warn(WIRE_MTU_RANGE);
            return Err(EINVAL);
        };
        self.set_wire_mtu(vn, mtu);
        Ok(())
    }

    fn rx_usecs(&self) -> u32 {
        self.zf.cfg.timeout_us.load(Relaxed)
    }

    fn set_rx_usecs(&self, usecs: u32) -> Result {
        self.zf.cfg.set(attr::TIMEOUT_US, usecs)
    }

    fn private_ioctl(&self, vn: &Vnet, tx: &SpinLock<TxRing>, cmd: u32, arg: UserPtr) -> Result {
        match cmd {
            admit::ADMISSION_IOCTL => {
                let port = self.port(vn, 0, TxAccess::Lock(tx), false);
                self.zf.admission_ioctl(vn.netdev(), &port, arg)
            }
            _ => Err(zcnet::errno::eopnotsupp()),
        }
    }
}
