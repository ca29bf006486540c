// SPDX-License-Identifier: GPL-2.0

//! Native virtio-net devices: a front end that drives a virtio-net device's
//! virtqueues itself instead of stacking on `virtio_net`.
//!
//! C header: [`include/linux/virtio.h`](srctree/include/linux/virtio.h)
//!
//! The C side (`rust/helpers/vnet.c`) owns the virtio driver, the
//! `net_device`, the queue pairs (two virtqueues and a NAPI context each)
//! and the control virtqueue; this file turns its callbacks into a
//! [`Driver`] implementation and gives the driver each queue pair's rings as
//! safe types. The rings own every buffer they post ([`RxRing`] its
//! header buffers and pages, [`TxRing`] its skbs) until the device gives it
//! back, and only this file can make or drop a ring: it drops them after the
//! device is reset, so no buffer is freed while the device may still write
//! into it or read from it.

use super::bh::BhGuard;
use super::ext;
use super::netdev::{DevStats, NetDevice};
use super::page::{RxPage, PAGE_SIZE};
use super::skbuff::SkBuff;
use super::text::TextBuf;
use core::{marker::PhantomData, pin::Pin, ptr::NonNull};
use kernel::{
    bindings,
    error::VTABLE_DEFAULT_ERROR,
    ffi, new_spinlock,
    prelude::*,
    sync::SpinLock,
    time::{delay::fsleep, Delta},
    types::ForeignOwnable,
    uaccess::UserPtr,
};

/// Bytes of the virtio-net header the device writes in front of each
/// received frame (and reads in front of each frame sent).
pub const HDR_LEN: usize = ext::ZCNET_VNET_HDR_LEN as usize;
/// Transmit descriptors a frame may take; a packet of `len` bytes needs
/// `TX_STOP_FREE + len / TX_BYTES_PER_DESC` free (`rust/helpers/vnet.h`).
pub const TX_STOP_FREE: usize = ext::ZCNET_VNET_TX_STOP_FREE as usize;
/// See [`TX_STOP_FREE`].
pub const TX_BYTES_PER_DESC: usize = ext::ZCNET_VNET_TX_BYTES_PER_DESC as usize;
/// Bytes of a receive chain's header buffer: the virtio-net header and the
/// frame's first bytes; the rest of the frame goes to the chain's page.
pub const RX_HDR: usize = 128;
/// Bytes of an Ethernet header.
const ETH_HLEN: usize = 14;
/// The largest MTU a receive chain of a header buffer and one page holds.
pub const MAX_MTU: usize = RX_HDR - HDR_LEN + PAGE_SIZE - ETH_HLEN;
/// The largest MTU a driver may give its device ([`Vnet::set_mtu`]): every
/// receive chain, ordinary or speculative, ends with as many of at most
/// [`RX_PAGES`] whole pages as a frame of the device's MTU needs.
pub const DEV_MAX_MTU: usize = 16 * 1024;
/// Whole pages a receive chain may end with.
pub const RX_PAGES: usize = ext::ZCNET_VNET_RX_PAGES as usize;
/// Bytes of a VLAN tag (a frame of the MTU may carry one).
const VLAN_HLEN: usize = 4;

/// Bytes the device writes for a frame of `mtu`: the virtio-net header, an
/// Ethernet header with a VLAN tag, the packet.
pub const fn rx_frame_len(mtu: usize) -> usize {
    HDR_LEN + ETH_HLEN + VLAN_HLEN + mtu
}

/// Pages a chain needs past its first `before` bytes (header buffer, and a
/// speculative chain's slice and overflow buffer) for a frame of `mtu`.
const fn rx_pages(mtu: usize, before: usize) -> usize {
    rx_frame_len(mtu).saturating_sub(before).div_ceil(PAGE_SIZE)
}

// An ordinary chain holds a frame of the largest MTU, and so does a
// speculative one, whose header buffer holds at least the virtio-net,
// Ethernet and IPv4 headers and whose slice at least a byte.
const _: () = assert!(rx_pages(DEV_MAX_MTU, RX_HDR) <= RX_PAGES);
const _: () = assert!(rx_pages(DEV_MAX_MTU, HDR_LEN + ETH_HLEN + 20 + 1 + RX_OVF) <= RX_PAGES);
// The default MTU's frames need one page after the header buffer (as
// before chains had tails).
const _: () = assert!(rx_pages(4148, RX_HDR) == 1);
/// How long (ms) an unbind waits for the device to send what the front
/// end's teardown posted.
const TEARDOWN_DRAIN_MS: usize = 200;

/// A bound virtio-net device, lent to a [`Driver`]'s callbacks.
///
/// # Invariants
///
/// `self.0` is the C side's state of a bound device, valid while the
/// driver's state lives (the C side drops that state before it frees it).
pub struct Vnet(NonNull<ext::zcnet_vnet>);

// SAFETY: The device's state may be used from any context; the helpers
// called through `&Vnet` are the virtio and netdev calls the datapath makes
// from process context, softirq or with bottom halves off.
unsafe impl Send for Vnet {}
// SAFETY: As above.
unsafe impl Sync for Vnet {}

impl Vnet {
    fn raw(&self) -> *mut ext::zcnet_vnet {
        self.0.as_ptr()
    }

    /// The network device.
    pub fn netdev(&self) -> &NetDevice {
        // SAFETY: By the type invariant the device is bound, so its net_device
        // lives as long as `self`.
        unsafe { NetDevice::from_raw(ext::zcnet_helper_vnet_netdev(self.raw())) }
    }

    /// Queue pairs in use now (`ethtool -L` changes it, RTNL held).
    pub fn queues(&self) -> usize {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_queues(self.raw()) as usize }
    }

    /// Queue pairs the device offers (at most 8): each ring's
    /// [`RxRing::queue`] is below this; the front end has a ring pair for
    /// each, used or not.
    pub fn max_queues(&self) -> usize {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_max_queues(self.raw()) as usize }
    }

    /// True when the device steers IPv4 fragments (and what else it does
    /// not classify: ARP, ICMP) to queue pair 0, and TCP and UDP that is
    /// not fragmented to the others (RSS).
    pub fn steered(&self) -> bool {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_steered(self.raw()) }
    }

    /// Descriptors of a receive ring.
    pub fn rx_size(&self) -> usize {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_rx_size(self.raw()) as usize }
    }

    /// Descriptors of a transmit ring.
    pub fn tx_size(&self) -> usize {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_tx_size(self.raw()) as usize }
    }

    /// The most descriptors a receive ring may get (`ethtool -G`).
    pub fn rx_max(&self) -> usize {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_rx_max(self.raw()) as usize }
    }

    /// The most descriptors a transmit ring may get (`ethtool -G`).
    pub fn tx_max(&self) -> usize {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_tx_max(self.raw()) as usize }
    }

    /// Sets the device's MTU and the largest one a user may set (`ip link
    /// set mtu`); only while the device is not registered yet
    /// ([`Driver::new`]).
    pub fn set_mtu(&self, mtu: u32, max: u32) {
        let max = max.min(DEV_MAX_MTU as u32);
        // SAFETY: By the type invariant the device is bound; `Driver::new`
        // runs before registration, so nothing reads the fields meanwhile.
        unsafe { ext::zcnet_helper_vnet_set_mtu(self.raw(), mtu, max) }
    }

    /// How many bytes of a packet one transmit descriptor stands for when
    /// the core decides whether a TSO packet fits the ring ([`TX_STOP_FREE`];
    /// [`TX_BYTES_PER_DESC`] until set).
    pub fn set_tx_bytes_per_desc(&self, bytes: u32) {
        // SAFETY: By the type invariant the device is bound; the field is
        // one word, read once by the transmit path.
        unsafe { ext::zcnet_helper_vnet_set_tx_bytes_per_desc(self.raw(), bytes) }
    }

    /// Arms the device's timer to fire in `us` microseconds
    /// ([`Driver::on_timer`]) unless it is armed already; nothing once the
    /// device is going.
    pub fn arm_timer(&self, us: u64) {
        // SAFETY: By the type invariant the device is bound; its timer lives
        // until after the driver's state is dropped.
        unsafe { ext::zcnet_helper_vnet_arm_timer(self.raw(), us as ffi::c_ulong) }
    }

    /// True once the device is being unbound: start nothing new.
    pub fn dying(&self) -> bool {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_dying(self.raw()) }
    }

    /// Whether the test knob `test_rx_no_pages` is set: receive rings are
    /// to get no new page, as if allocation failed.
    pub fn test_rx_no_pages(&self) -> bool {
        // SAFETY: Reads a module parameter; no other state.
        unsafe { ext::zcnet_helper_vnet_test_rx_no_pages() }
    }

    /// Notifies the device of new receive buffers, when it asked to be:
    /// whether it was notified.
    pub fn kick_rx(&self, q: usize) -> bool {
        // SAFETY: By the type invariant the device is bound; the rings' users
        // hold their locks.
        unsafe { ext::zcnet_helper_vnet_kick_rx(self.raw(), q as u32) }
    }

    /// Notifies the device of frames to send, when it asked to be: whether
    /// it was notified.
    pub fn kick_tx(&self, q: usize) -> bool {
        // SAFETY: As above.
        unsafe { ext::zcnet_helper_vnet_kick_tx(self.raw(), q as u32) }
    }

    /// Free descriptors in a transmit ring.
    pub fn tx_free(&self, q: usize) -> usize {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_tx_free(self.raw(), q as u32) as usize }
    }

    /// Stops a transmit queue (its ring is full).
    pub fn tx_stop(&self, q: usize) {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_tx_stop(self.raw(), q as u32) }
    }

    /// Restarts a transmit queue if it was stopped.
    pub fn tx_wake(&self, q: usize) {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_tx_wake(self.raw(), q as u32) }
    }

    /// Counts `bytes` queued to the device (byte queue limits); `more`:
    /// another frame follows at once. Whether to kick the device now.
    pub fn tx_sent(&self, q: usize, bytes: u32, more: bool) -> bool {
        // SAFETY: By the type invariant the device is bound; called from the
        // transmit path.
        unsafe { ext::zcnet_helper_vnet_tx_sent(self.raw(), q as u32, bytes, more) }
    }

    /// Counts frames the device has sent (byte queue limits).
    pub fn tx_completed(&self, q: usize, frames: u32, bytes: u32) {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_tx_completed(self.raw(), q as u32, frames, bytes) }
    }

    /// Hands a frame received on queue pair `q` to the stack (NAPI, GRO):
    /// from that pair's poll only.
    pub fn receive(&self, q: usize, skb: SkBuff) {
        // SAFETY: By the type invariant the device is bound; the skb passes
        // to the stack.
        unsafe { ext::zcnet_helper_vnet_receive(self.raw(), q as u32, skb.into_raw()) }
    }
}

/// Bytes of a speculative chain's overflow buffer: where the rest of a frame
/// that is not the one speculated on spills (a header buffer, a page slice
/// and this hold any frame of a wire MTU up to 1500 whatever the slice);
/// whole pages after it hold the rest of a frame of the device's MTU.
pub const RX_OVF: usize = 2048;

/// A speculative receive chain ([`RxRing::post_spec`]): the headers of the
/// frame expected, then its payload's place in a page.
pub struct Spec {
    /// Bytes of header buffer: the virtio-net header and the frame's
    /// headers up to its payload.
    pub hdr_len: usize,
    /// The page the payload belongs in.
    pub page: RxPage,
    /// Where in it.
    pub off: usize,
    /// How much of it at most.
    pub len: usize,
    /// The driver's, back with the frame.
    pub tag: u32,
}

/// One receive chain's buffers.
struct RxSlot {
    hdr: KBox<[u8; RX_HDR]>,
    ovf: KBox<[u8; RX_OVF]>,
    /// Whole pages: an ordinary chain's after its header buffer, a
    /// speculative chain's after its overflow buffer (kept for the next
    /// chain when no frame used them).
    pages: [Option<RxPage>; RX_PAGES],
    /// How many of `pages` the posted chain has.
    npages: usize,
    /// A speculative chain's place.
    spec: Option<Spec>,
    posted: bool,
}

impl RxSlot {
    /// Fills `pages[..n]` from `page`: whether they all are there.
    fn get_pages(&mut self, n: usize, page: &mut impl FnMut() -> Option<RxPage>) -> bool {
        self.pages.iter_mut().take(n).all(|p| {
            if p.is_none() {
                *p = page();
            }
            p.is_some()
        }) && n <= RX_PAGES
    }

    /// Posts the chain: the header buffer's first `hdr_len` bytes, a
    /// speculative chain's slice and overflow buffer, `pages[..n]`
    /// (there: [`Self::get_pages`]), as slot `token`'s chain. 0 or -errno.
    fn post(
        &mut self,
        vn: &Vnet,
        q: u32,
        hdr_len: usize,
        spec: Option<&Spec>,
        n: usize,
        token: u32,
    ) -> i32 {
        let mut raw = [core::ptr::null_mut(); RX_PAGES];
        for (r, p) in raw.iter_mut().zip(self.pages.iter().take(n)) {
            *r = p.as_ref().map_or(core::ptr::null_mut(), RxPage::as_raw);
        }
        if n > RX_PAGES || raw.iter().take(n).any(|r| r.is_null()) || hdr_len > RX_HDR {
            return -(bindings::EINVAL as i32);
        }
        let (slice, off, len, ovf, ovf_len) = match spec {
            Some(s) => (s.page.as_raw(), s.off, s.len, self.ovf.as_mut_ptr(), RX_OVF),
            None => (core::ptr::null_mut(), 0, 0, core::ptr::null_mut(), 0),
        };
        // SAFETY: `vn` is bound (`Vnet`); the header and overflow buffers and
        // the pages stay in the slot, and a speculative chain's slice in its
        // `Spec`, untouched while it is posted (see [`RxRing`]); the helper
        // checks `n` and the slice against the page; the token is the
        // non-zero.
        unsafe {
            ext::zcnet_helper_vnet_post_rx(
                vn.raw(),
                q,
                self.hdr.as_mut_ptr().cast(),
                hdr_len as u32,
                slice,
                off as u32,
                len as u32,
                ovf.cast(),
                ovf_len as u32,
                raw.as_mut_ptr(),
                n as u32,
                token as ffi::c_ulong + 1,
            )
        }
    }
}

/// The receive ring: one slot per descriptor chain, each either ordinary
/// (a header buffer of [`RX_HDR`] bytes and a page) or speculative
/// ([`Spec`]: header bytes, a page slice, an overflow buffer), either
/// ending with as many more whole pages as a frame of the device's MTU
/// needs; the buffers are allocated once.
///
/// # Invariants
///
/// A slot with `posted` set is in the device's ring: its buffers and page
/// (or its speculative page's slice) are not touched or freed until the
/// device gives the chain back or is reset (the ring is dropped only after
/// the reset). `free` holds the other slots' indices, with room for all of
/// them.
pub struct RxRing {
    vn: Vnet,
    q: u32,
    slots: KVec<RxSlot>,
    free: KVec<u32>,
}

impl RxRing {
    fn new(vn: Vnet, q: u32, n: usize) -> Result<Self> {
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut free = KVec::with_capacity(n, GFP_KERNEL)?;
        for i in 0..n {
            slots.push(
                RxSlot {
                    hdr: KBox::new([0u8; RX_HDR], GFP_KERNEL)?,
                    ovf: KBox::new([0u8; RX_OVF], GFP_KERNEL)?,
                    pages: [const { None }; RX_PAGES],
                    npages: 0,
                    spec: None,
                    posted: false,
                },
                GFP_KERNEL,
            )?;
            free.push((n - 1 - i) as u32, GFP_KERNEL)?;
        }
        Ok(Self { vn, q, slots, free })
    }

    /// Its queue pair.
    pub fn queue(&self) -> usize {
        self.q as usize
    }

    /// Notifies the device of new buffers, when it asked to be: whether it
    /// was notified.
    pub fn kick(&self) -> bool {
        self.vn.kick_rx(self.q as usize)
    }

    /// Whether the ring is to get no new page (the `test_rx_no_pages` knob).
    pub fn no_pages(&self) -> bool {
        self.vn.test_rx_no_pages()
    }

    /// Chains posted and not yet given back.
    pub fn posted(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Whether a slot is free for a chain.
    pub fn has_free(&self) -> bool {
        !self.free.is_empty()
    }

    /// The device's MTU now: chains posted hold a frame of it.
    fn mtu(&self) -> usize {
        (self.vn.netdev().mtu() as usize).min(DEV_MAX_MTU)
    }

    /// Posts ordinary chains in free slots until `limit` chains are posted,
    /// pages from `page` for a slot that has too few (it keeps pages no
    /// frame used). How many chains went to the device; kick it after.
    pub fn fill(&mut self, limit: usize, page: &mut impl FnMut() -> Option<RxPage>) -> usize {
        let n = rx_pages(self.mtu(), RX_HDR).max(1);
        let mut posted = 0;
        while self.posted() < limit {
            let Some(i) = self.free.pop() else {
                break;
            };
            let Some(s) = self.slots.get_mut(i as usize) else {
                continue;
            };
            if !s.get_pages(n, page) || s.post(&self.vn, self.q, RX_HDR, None, n, i) != 0 {
                let _ = self.free.push_within_capacity(i);
                break;
            }
            // INVARIANT: the chain is in the device's ring now.
            s.npages = n;
            s.posted = true;
            posted += 1;
        }
        posted
    }

    /// Posts one speculative chain in a free slot, with the pages after
    /// its overflow buffer that a frame of the device's MTU needs from
    /// `page`; kick the device after. The chain comes back with `spec` when
    /// no slot is free, no page is to be had or the ring refuses it.
    pub fn post_spec(
        &mut self,
        spec: Spec,
        page: &mut impl FnMut() -> Option<RxPage>,
    ) -> core::result::Result<(), Spec> {
        if spec.hdr_len > RX_HDR || spec.off > PAGE_SIZE || spec.len > PAGE_SIZE - spec.off {
            return Err(spec);
        }
        let n = rx_pages(self.mtu(), spec.hdr_len + spec.len + RX_OVF);
        let Some(i) = self.free.pop() else {
            return Err(spec);
        };
        let Some(s) = self.slots.get_mut(i as usize) else {
            return Err(spec);
        };
        if !s.get_pages(n, page) || s.post(&self.vn, self.q, spec.hdr_len, Some(&spec), n, i) != 0 {
            let _ = self.free.push_within_capacity(i);
            return Err(spec);
        }
        // INVARIANT: the chain is in the device's ring now.
        s.npages = n;
        s.spec = Some(spec);
        s.posted = true;
        Ok(())
    }

    /// The chain of `token` came back unused (the ring was resized): its
    /// slot is free again, its page kept; a speculative chain's place is
    /// handed back. `None` for a token that names no posted chain.
    fn recycle(&mut self, token: usize) -> Option<Option<Spec>> {
        let i = token.checked_sub(1)?;
        let s = self.slots.get_mut(i)?;
        if !s.posted {
            return None;
        }
        // INVARIANT: the device no longer has the chain: it is ours again.
        s.posted = false;
        let _ = self.free.push_within_capacity(i as u32);
        Some(s.spec.take())
    }

    /// The next chain the device filled, if any.
    pub fn next(&mut self) -> Option<RxFrame<'_>> {
        let mut len = 0u32;
        // SAFETY: By the type invariant the device is bound; `len` is
        // writable.
        let t = unsafe { ext::zcnet_helper_vnet_get_rx(self.vn.raw(), self.q, &mut len) };
        let i = t.checked_sub(1)? as usize;
        // The chains posted besides this one.
        let posted_after = (self.slots.len() - self.free.len()).saturating_sub(1);
        let s = self.slots.get_mut(i)?;
        if !s.posted {
            return None;
        }
        // INVARIANT: the device gave the chain back: it is ours again.
        s.posted = false;
        let _ = self.free.push_within_capacity(i as u32);
        let spec = s.spec.take();
        Some(RxFrame {
            vn: &self.vn,
            q: self.q,
            slot: s,
            spec,
            len: len as usize,
            posted_after,
        })
    }
}

/// A chain the device filled; its slot goes back to the ring (an ordinary
/// chain's with its page unless taken).
pub struct RxFrame<'a> {
    vn: &'a Vnet,
    q: u32,
    slot: &'a mut RxSlot,
    spec: Option<Spec>,
    len: usize,
    posted_after: usize,
}

impl RxFrame<'_> {
    /// Chains still posted: the frames that land in them come before one
    /// in a chain posted now.
    pub fn posted_after(&self) -> usize {
        self.posted_after
    }

    /// The bytes the device wrote, virtio-net header included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the device wrote nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A speculative chain's place.
    pub fn spec(&self) -> Option<&Spec> {
        self.spec.as_ref()
    }

    /// What the device wrote to the header buffer.
    pub fn head(&self) -> &[u8] {
        let cap = self.spec.as_ref().map_or(RX_HDR, |s| s.hdr_len);
        &self.slot.hdr[..self.len.min(cap)]
    }

    /// Takes the slot's first pages holding `len` bytes of the frame (the
    /// slot gets new ones when posted again) for the C side.
    fn take_pages(&mut self, len: usize) -> ([*mut bindings::page; RX_PAGES], usize) {
        let mut raw = [core::ptr::null_mut(); RX_PAGES];
        let mut n = 0;
        let k = len.div_ceil(PAGE_SIZE).min(self.slot.npages);
        for p in self.slot.pages.iter_mut().take(k) {
            if let (Some(p), Some(r)) = (p.take(), raw.get_mut(n)) {
                *r = p.into_raw();
                n += 1;
            }
        }
        (raw, n)
    }

    /// Whether the frame went on past a speculative chain's overflow
    /// buffer, into the pages after it.
    pub fn used_pages(&self) -> bool {
        self.spec
            .as_ref()
            .is_some_and(|s| self.len > s.hdr_len + s.len + RX_OVF)
    }

    /// An ordinary chain's frame: its first bytes (from the Ethernet header
    /// on) copied into the skb's head, the rest its pages as fragments.
    /// `None` for a speculative chain, a frame without an Ethernet header,
    /// or when memory is short.
    pub fn ordinary_skb(&mut self) -> Option<SkBuff> {
        if self.spec.is_some() {
            return None;
        }
        let rest = self.len.saturating_sub(RX_HDR);
        let (mut raw, n) = self.take_pages(rest);
        let head = self
            .slot
            .hdr
            .get(HDR_LEN..self.len.clamp(HDR_LEN, RX_HDR))
            .unwrap_or(&[]);
        // SAFETY: The device is bound (`Vnet`) and gave this chain back;
        // `head` is valid for its length; the `n` page references pass to
        // the helper.
        unsafe {
            SkBuff::from_raw(ext::zcnet_helper_vnet_rx_skb(
                self.vn.raw(),
                self.q,
                head.as_ptr().cast(),
                head.len() as u32,
                raw.as_mut_ptr(),
                n as u32,
                rest as u32,
            ))
        }
    }

    /// A speculative chain's frame as the device placed it: the headers
    /// (from the Ethernet header on) in the skb's head, the payload its
    /// fragment where it lies in the page. `None` unless the frame filled
    /// the header buffer and ended in the page slice, or memory is short.
    pub fn placed_skb(&self) -> Option<SkBuff> {
        let s = self.spec.as_ref()?;
        let n = self
            .len
            .checked_sub(s.hdr_len)
            .filter(|&n| n > 0 && n <= s.len)?;
        let head = self.slot.hdr.get(HDR_LEN..s.hdr_len)?;
        let page = s.page.share().into_raw();
        // SAFETY: The device is bound (`Vnet`) and gave this chain back;
        // `head` is valid for its length; the page reference passes to the
        // helper, which checks the range against the page.
        unsafe {
            SkBuff::from_raw(ext::zcnet_helper_vnet_rx_skb_frag(
                self.vn.raw(),
                self.q,
                head.as_ptr().cast(),
                head.len() as u32,
                page,
                s.off as u32,
                n as u32,
            ))
        }
    }

    /// A speculative chain's frame as a new skb, wherever the device put
    /// its bytes: header buffer, page slice and overflow buffer copied into
    /// its head, the pages after those (a frame longer than they hold) its
    /// fragments. `None` for an ordinary chain, a frame without an Ethernet
    /// header, or when memory is short.
    pub fn copied_skb(&mut self) -> Option<SkBuff> {
        let (hdr_len, plen, rest) = {
            let s = self.spec.as_ref()?;
            let rest = self.len.saturating_sub(s.hdr_len);
            (s.hdr_len, rest.min(s.len), rest)
        };
        let blen = (rest - plen).min(RX_OVF);
        let tail = rest - plen - blen;
        let (mut raw, n) = self.take_pages(tail);
        let s = self.spec.as_ref()?;
        let a = self
            .slot
            .hdr
            .get(HDR_LEN..self.len.min(hdr_len).max(HDR_LEN))
            .unwrap_or(&[]);
        let b = self.slot.ovf.get(..blen).unwrap_or(&[]);
        // SAFETY: The device is bound (`Vnet`) and gave this chain back; `a`
        // and `b` are valid for their lengths; the helper checks the slice's
        // range and takes no reference to it; the `n` page references pass
        // to the helper, which puts them when it fails.
        unsafe {
            SkBuff::from_raw(ext::zcnet_helper_vnet_rx_skb_copy(
                self.vn.raw(),
                self.q,
                a.as_ptr().cast(),
                a.len() as u32,
                s.page.as_raw(),
                s.off as u32,
                plen as u32,
                b.as_ptr().cast(),
                b.len() as u32,
                raw.as_mut_ptr(),
                n as u32,
                tail as u32,
            ))
        }
    }
}

/// The transmit ring: the skbs the device is sending, each with the length
/// it was counted with.
///
/// # Invariants
///
/// A `Some` slot's skb is in the device's ring (untouched until the device
/// gives it back or is reset; the ring is dropped only after the reset);
/// `free` holds the other slots' indices, with room for all of them.
pub struct TxRing {
    vn: Vnet,
    q: u32,
    slots: KVec<Option<(SkBuff, u32)>>,
    free: KVec<u32>,
}

/// Why [`TxRing::post`] gave an skb back.
pub enum TxFull {
    /// The ring has no room: stop the queue, try again later.
    Busy(SkBuff),
    /// The skb cannot be sent (no memory for its checksum): drop it.
    Failed(SkBuff),
}

impl TxRing {
    fn new(vn: Vnet, q: u32, n: usize) -> Result<Self> {
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut free = KVec::with_capacity(n, GFP_KERNEL)?;
        for i in 0..n {
            slots.push(None, GFP_KERNEL)?;
            free.push((n - 1 - i) as u32, GFP_KERNEL)?;
        }
        Ok(Self { vn, q, slots, free })
    }

    /// Its queue pair.
    pub fn queue(&self) -> usize {
        self.q as usize
    }

    /// Frames posted that the device has not given back yet.
    pub fn in_flight(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Free descriptors.
    pub fn free(&self) -> usize {
        self.vn.tx_free(self.q as usize)
    }

    /// Notifies the device of frames to send, when it asked to be: whether
    /// it was notified.
    pub fn kick(&self) -> bool {
        self.vn.kick_tx(self.q as usize)
    }

    /// Stops its transmit queue (the ring is full).
    pub fn stop(&self) {
        self.vn.tx_stop(self.q as usize)
    }

    /// Restarts its transmit queue if it was stopped.
    pub fn wake(&self) {
        self.vn.tx_wake(self.q as usize)
    }

    /// Counts `bytes` queued (byte queue limits); `more`: another frame
    /// follows at once. Whether to kick the device now.
    pub fn sent(&self, bytes: u32, more: bool) -> bool {
        self.vn.tx_sent(self.q as usize, bytes, more)
    }

    /// Counts frames the device has sent (byte queue limits).
    pub fn completed(&self, frames: u32, bytes: u32) {
        self.vn.tx_completed(self.q as usize, frames, bytes)
    }

    /// Queues `skb` for the device, its head and fragments as they are
    /// (no copy) behind a virtio-net header; kick the device after.
    /// `counted`: the bytes [`TxRing::reap`] reports for it, the ones the
    /// caller counts with [`Vnet::tx_sent`] (0 for a frame sent outside the
    /// transmit path, which byte queue limits must not see).
    pub fn post(&mut self, skb: SkBuff, counted: u32) -> core::result::Result<(), TxFull> {
        let Some(i) = self.free.pop() else {
            return Err(TxFull::Busy(skb));
        };
        let len = counted;
        let raw = skb.into_raw();
        // SAFETY: By the type invariant the device is bound; `raw` is a valid
        // skb we own, kept in slot `i` while posted; the token is non-zero.
        let r = unsafe {
            ext::zcnet_helper_vnet_post_tx(self.vn.raw(), self.q, raw, i as ffi::c_ulong + 1)
        };
        // SAFETY: `raw` is still ours (the helper takes no reference).
        let Some(skb) = (unsafe { SkBuff::from_raw(raw) }) else {
            return Ok(());
        };
        if r != 0 {
            let _ = self.free.push_within_capacity(i);
            return Err(if r == -(bindings::ENOSPC as i32) {
                TxFull::Busy(skb)
            } else {
                TxFull::Failed(skb)
            });
        }
        match self.slots.get_mut(i as usize) {
            // INVARIANT: the skb is in the device's ring now.
            Some(s) => *s = Some((skb, len)),
            None => core::mem::forget(skb),
        }
        Ok(())
    }

    /// The skb of `token` came back unsent (the ring was resized).
    fn recycle(&mut self, token: usize) -> Option<SkBuff> {
        let i = token.checked_sub(1)?;
        // INVARIANT: the device no longer has it.
        let (skb, _) = self.slots.get_mut(i)?.take()?;
        let _ = self.free.push_within_capacity(i as u32);
        Some(skb)
    }

    /// The next skb the device has sent, with the bytes it was counted with.
    pub fn reap(&mut self) -> Option<(SkBuff, u32)> {
        // SAFETY: By the type invariant the device is bound.
        let t = unsafe { ext::zcnet_helper_vnet_get_tx(self.vn.raw(), self.q) };
        let i = t.checked_sub(1)? as usize;
        // INVARIANT: the device gave it back.
        let done = self.slots.get_mut(i)?.take()?;
        let _ = self.free.push_within_capacity(i as u32);
        Some(done)
    }
}

/// A front end of native virtio-net devices.
///
/// Optional callbacks (the sysfs group, `rx_usecs`/`set_rx_usecs`,
/// `private_ioctl`) are gated at compile time as [`super::stacked::Stacked`]'s
/// are (`HAS_*`): the device gets them only when the driver implements them.
#[vtable]
pub trait Driver: Send + Sync + Sized + 'static {
    /// The virtio driver's name (`/sys/bus/virtio/drivers/NAME`).
    const NAME: &'static CStr;

    /// The state of a newly bound device (not registered yet). May sleep.
    fn new(vn: &Vnet) -> impl PinInit<Self, Error>;

    /// The device comes up: post receive buffers (`ip link set up`), for
    /// each queue pair.
    fn open(&self, vn: &Vnet, rx: &mut RxRing) -> Result;

    /// Sends `skb` on `tx`'s queue pair (the one the stack chose); `Err`
    /// gives it back with the queue stopped.
    fn xmit(
        &self,
        vn: &Vnet,
        tx: &mut TxRing,
        skb: SkBuff,
        more: bool,
    ) -> core::result::Result<(), SkBuff>;

    /// The NAPI poll's first step: what the device has sent.
    fn tx_done(&self, vn: &Vnet, tx: &mut TxRing);

    /// A queue pair's NAPI poll: up to `budget` frames received on `rx`,
    /// and the ring refilled; how many frames it received. Take `tx` (the
    /// same pair's) only to send, and never while handing a frame to the
    /// stack: it may be answered at once, through [`Driver::xmit`], which
    /// takes it.
    fn poll(&self, vn: &Vnet, rx: &mut RxRing, tx: &SpinLock<TxRing>, budget: usize) -> usize;

    /// The device's timer fired ([`Vnet::arm_timer`]; softirq); `tx` is
    /// queue pair 0's.
    fn on_timer(&self, _vn: &Vnet, _tx: &SpinLock<TxRing>) {}

    /// A speculative chain of queue pair `q` came back unused (`ethtool
    /// -G` resized the ring; the device is stopped): its place is the
    /// driver's again. Process context, RTNL held, bottom halves off.
    fn rx_recycled(&self, _vn: &Vnet, _q: usize, _spec: Spec) {}

    /// The device is being unbound: no transmit, poll or timer any more;
    /// frames posted now on `tx` (queue pair 0's) leave before the device
    /// is reset: the unbind waits for [`Driver::tx_done`] to see them sent
    /// (up to 200 ms). Bottom halves off.
    fn teardown(&self, _vn: &Vnet, _tx: &SpinLock<TxRing>) {}

    /// The standard statistics.
    fn stats(&self) -> &DevStats;

    /// The names of `ethtool -S`'s statistics.
    const STATS: &'static [&'static str] = &[];

    /// The values of `ethtool -S`'s statistics (`STATS.len()` of them).
    fn ethtool_stats(&self, _out: &mut [u64]) {}

    /// Writes the text of attribute `idx` of the module's sysfs group
    /// (`/sys/class/net/DEV/GROUP/`, the one a stacked kind of the module
    /// registered: [`super::stacked::Stacked::SYSFS`]).
    fn sysfs_show(&self, _vn: &Vnet, _idx: usize, _out: &mut TextBuf<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Stores a value written to sysfs attribute `idx` (process context).
    fn sysfs_store(&self, _vn: &Vnet, _idx: usize, _input: &[u8]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -c`: the receive coalescing time in microseconds.
    fn rx_usecs(&self) -> u32 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ethtool -C DEV rx-usecs N` (process context, RTNL held).
    fn set_rx_usecs(&self, _usecs: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// A private ioctl (`SIOCDEVPRIVATE + cmd`) with its user-space
    /// argument (process context, RTNL held; `tx`: queue pair 0's, taken
    /// with bottom halves off).
    fn private_ioctl(
        &self,
        _vn: &Vnet,
        _tx: &SpinLock<TxRing>,
        _cmd: u32,
        _arg: UserPtr,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// A queue pair's rings.
#[pin_data]
struct QueuePair {
    #[pin]
    rx: SpinLock<RxRing>,
    #[pin]
    tx: SpinLock<TxRing>,
}

/// A bound device: its queue pairs' rings (at least one) and the front
/// end's state.
#[pin_data]
struct Dev<T> {
    vn: Vnet,
    qs: KVec<Pin<KBox<QueuePair>>>,
    #[pin]
    state: T,
}

impl<T> Dev<T> {
    fn qp(&self, q: usize) -> Option<&QueuePair> {
        self.qs.get(q).map(|p| &**p)
    }
}

/// The registered virtio driver; unregistered (every device unbound) on drop.
pub struct Registration<T: Driver> {
    _t: PhantomData<T>,
}

impl<T: Driver> Registration<T> {
    const OPS: ext::zcnet_vnet_ops = ext::zcnet_vnet_ops {
        probe: Some(Self::probe_cb),
        remove: Some(Self::remove_cb),
        open: Some(Self::open_cb),
        xmit: Some(Self::xmit_cb),
        poll: Some(Self::poll_cb),
        stats: Some(Self::stats_cb),
        timer: Some(Self::timer_cb),
        teardown: Some(Self::teardown_cb),
        nstats: T::STATS.len() as u32,
        stat_names: Some(Self::stat_names_cb),
        stat_values: Some(Self::stat_values_cb),
        sysfs_show: if T::HAS_SYSFS_SHOW && T::HAS_SYSFS_STORE {
            Some(Self::sysfs_show_cb)
        } else {
            None
        },
        sysfs_store: if T::HAS_SYSFS_SHOW && T::HAS_SYSFS_STORE {
            Some(Self::sysfs_store_cb)
        } else {
            None
        },
        rx_usecs: if T::HAS_RX_USECS && T::HAS_SET_RX_USECS {
            Some(Self::rx_usecs_cb)
        } else {
            None
        },
        set_rx_usecs: if T::HAS_RX_USECS && T::HAS_SET_RX_USECS {
            Some(Self::set_rx_usecs_cb)
        } else {
            None
        },
        ioctl: if T::HAS_PRIVATE_IOCTL {
            Some(Self::ioctl_cb)
        } else {
            None
        },
        recycle_rx: Some(Self::recycle_rx_cb),
        recycle_tx: Some(Self::recycle_tx_cb),
    };

    /// Registers the driver (one per module).
    pub fn register() -> Result<Self> {
        // SAFETY: `T::NAME` and `OPS` are static; one registration per
        // module, undone in `drop`.
        super::errno::to_result(unsafe {
            ext::zcnet_helper_vnet_register(T::NAME.as_char_ptr(), &Self::OPS)
        })?;
        Ok(Self { _t: PhantomData })
    }

    /// # Safety
    ///
    /// `state` came from `probe_cb` and is not yet removed.
    unsafe fn dev<'a>(state: *mut ffi::c_void) -> Pin<&'a Dev<T>> {
        // SAFETY: As the caller guarantees.
        unsafe { <Pin<KBox<Dev<T>>> as ForeignOwnable>::borrow(state) }
    }

    /// # Safety
    ///
    /// The C side calls it from the virtio probe with the device's state.
    unsafe extern "C" fn probe_cb(vn: *mut ext::zcnet_vnet) -> *mut ffi::c_void {
        let Some(raw) = NonNull::new(vn) else {
            return EINVAL.to_ptr();
        };
        // INVARIANT: the C side frees its state only after `remove_cb`.
        let (a, d) = (Vnet(raw), Vnet(raw));
        // Slots for the largest rings `ethtool -G` may ask for.
        let (nrx, ntx, nq) = (a.rx_max(), a.tx_max(), a.max_queues().max(1));
        a.set_mtu(1500, MAX_MTU as u32);
        let qs = (|| -> Result<KVec<Pin<KBox<QueuePair>>>> {
            let mut qs = KVec::with_capacity(nq, GFP_KERNEL)?;
            for q in 0..nq as u32 {
                let qp = try_pin_init!(QueuePair {
                    rx <- new_spinlock!(RxRing::new(Vnet(raw), q, nrx)?),
                    tx <- new_spinlock!(TxRing::new(Vnet(raw), q, ntx)?),
                });
                qs.push(KBox::pin_init(qp, GFP_KERNEL)?, GFP_KERNEL)?;
            }
            Ok(qs)
        })();
        let init = try_pin_init!(Dev {
            vn: a,
            qs: qs?,
            state <- T::new(&d),
        });
        match KBox::pin_init(init, GFP_KERNEL) {
            Ok(d) => d.into_foreign(),
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// The C side calls it once, after the device is reset and unregistered.
    unsafe extern "C" fn remove_cb(state: *mut ffi::c_void) {
        // SAFETY: The caller hands back what `probe_cb` made; the device owns
        // no buffer of the rings any more (it was reset).
        drop(unsafe { <Pin<KBox<Dev<T>>> as ForeignOwnable>::from_foreign(state) });
    }

    /// # Safety
    ///
    /// `ndo_open` of a bound device (RTNL held, NAPI off).
    unsafe extern "C" fn open_cb(state: *mut ffi::c_void, q: u32) -> ffi::c_int {
        // SAFETY: The device is bound.
        let d = unsafe { Self::dev(state) };
        let Some(qp) = d.qp(q as usize) else {
            return EINVAL.to_errno();
        };
        // The poll takes the ring's lock in softirq.
        let _bh = BhGuard::new();
        let mut rx = qp.rx.lock();
        match d.state.open(&d.vn, &mut rx) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// `ethtool -G` or `-L` on a bound device (RTNL held, NAPI off, no
    /// transmit): `token` names a chain of queue pair `q`'s receive ring
    /// the device gave back unused.
    unsafe extern "C" fn recycle_rx_cb(state: *mut ffi::c_void, q: u32, token: ffi::c_ulong) {
        // SAFETY: The device is bound.
        let d = unsafe { Self::dev(state) };
        let Some(qp) = d.qp(q as usize) else {
            return;
        };
        // The poll takes these locks in softirq.
        let _bh = BhGuard::new();
        let spec = qp.rx.lock().recycle(token);
        if let Some(Some(spec)) = spec {
            d.state.rx_recycled(&d.vn, q as usize, spec);
        }
    }

    /// # Safety
    ///
    /// As for `recycle_rx_cb`, for queue pair `q`'s transmit ring: the skb
    /// was not sent.
    unsafe extern "C" fn recycle_tx_cb(state: *mut ffi::c_void, q: u32, token: ffi::c_ulong) {
        // SAFETY: The device is bound.
        let d = unsafe { Self::dev(state) };
        let Some(qp) = d.qp(q as usize) else {
            return;
        };
        let skb = {
            let _bh = BhGuard::new();
            // The guard is a named local, dropped before `_bh`: the lock
            // must be free before bottom halves are enabled again, which
            // may run a transmit that takes it (a temporary in the block's
            // tail expression would outlive `_bh` in Rust 2021).
            let mut tx = qp.tx.lock();
            tx.recycle(token)
        };
        // Freed as dropped (not sent).
        drop(skb);
    }

    /// # Safety
    ///
    /// `ndo_start_xmit` of a bound device (bottom halves off); `skb` is
    /// handed over.
    unsafe extern "C" fn xmit_cb(
        state: *mut ffi::c_void,
        q: u32,
        skb: *mut bindings::sk_buff,
        more: bool,
    ) -> ffi::c_int {
        // SAFETY: The device is bound; the skb is ours.
        let (d, skb) = unsafe { (Self::dev(state), SkBuff::from_raw(skb)) };
        let Some(skb) = skb else {
            return ext::netdev_tx_NETDEV_TX_OK as ffi::c_int;
        };
        let Some(qp) = d.qp(q as usize).or_else(|| d.qp(0)) else {
            drop(skb);
            return ext::netdev_tx_NETDEV_TX_OK as ffi::c_int;
        };
        let mut tx = qp.tx.lock();
        match d.state.xmit(&d.vn, &mut tx, skb, more) {
            Ok(()) => ext::netdev_tx_NETDEV_TX_OK as ffi::c_int,
            Err(skb) => {
                // The caller keeps it and tries again when the queue wakes.
                skb.into_raw();
                ext::netdev_tx_NETDEV_TX_BUSY as ffi::c_int
            }
        }
    }

    /// # Safety
    ///
    /// The NAPI poll of a bound device (softirq).
    unsafe extern "C" fn poll_cb(
        state: *mut ffi::c_void,
        q: u32,
        budget: ffi::c_int,
    ) -> ffi::c_int {
        // SAFETY: The device is bound.
        let d = unsafe { Self::dev(state) };
        let Some(qp) = d.qp(q as usize) else {
            return 0;
        };
        d.state.tx_done(&d.vn, &mut qp.tx.lock());
        let budget = budget.max(0) as usize;
        let n = d.state.poll(&d.vn, &mut qp.rx.lock(), &qp.tx, budget);
        n.min(budget) as ffi::c_int
    }

    /// # Safety
    ///
    /// The device's timer callback (softirq), for a bound device.
    unsafe extern "C" fn timer_cb(state: *mut ffi::c_void) {
        // SAFETY: The timer is shut down before the state is dropped.
        let d = unsafe { Self::dev(state) };
        if let Some(qp) = d.qp(0) {
            d.state.on_timer(&d.vn, &qp.tx);
        }
    }

    /// # Safety
    ///
    /// Called once while the device is unbound, after unregistration and
    /// the timer's shutdown, before the reset (process context).
    unsafe extern "C" fn teardown_cb(state: *mut ffi::c_void) {
        // SAFETY: The device is still bound.
        let d = unsafe { Self::dev(state) };
        let Some(qp) = d.qp(0) else {
            return;
        };
        {
            let _bh = BhGuard::new();
            d.state.teardown(&d.vn, &qp.tx);
        }
        // What the teardown posted (a release a peer waits for) must reach
        // the wire before the reset drops it: the device sends it in its
        // own time, so wait for the ring to empty, bounded (a device that
        // never completes only delays the unbind).
        for _ in 0..TEARDOWN_DRAIN_MS {
            let busy = {
                let _bh = BhGuard::new();
                let mut tx = qp.tx.lock();
                d.state.tx_done(&d.vn, &mut tx);
                tx.in_flight() != 0
            };
            if !busy {
                break;
            }
            fsleep(Delta::from_millis(1));
        }
    }

    /// # Safety
    ///
    /// `data` holds `STATS.len() * ETH_GSTRING_LEN` bytes.
    unsafe extern "C" fn stat_names_cb(data: *mut u8) {
        // SAFETY: ethtool gives a buffer of `get_sset_count * ETH_GSTRING_LEN`
        // bytes.
        unsafe { super::netdev::ethtool_strings(data, T::STATS) };
    }

    /// # Safety
    ///
    /// A bound device; `data` holds `STATS.len()` values.
    unsafe extern "C" fn stat_values_cb(state: *mut ffi::c_void, data: *mut u64) {
        // SAFETY: The device is bound; ethtool gives `get_sset_count` u64s.
        let (d, out) = unsafe {
            (
                Self::dev(state),
                core::slice::from_raw_parts_mut(data, T::STATS.len()),
            )
        };
        d.state.ethtool_stats(out);
    }

    /// # Safety
    ///
    /// sysfs reads a file of a bound device's group (the group goes with
    /// the device's unregistration, before `remove_cb`) into a `PAGE_SIZE`
    /// buffer.
    unsafe extern "C" fn sysfs_show_cb(
        state: *mut ffi::c_void,
        idx: ffi::c_uint,
        buf: *mut ffi::c_char,
    ) -> isize {
        // SAFETY: As the caller guarantees: the device is bound and `buf`
        // holds PAGE_SIZE writable bytes.
        let (d, out) = unsafe {
            (
                Self::dev(state),
                core::slice::from_raw_parts_mut(buf.cast::<u8>(), PAGE_SIZE),
            )
        };
        let mut tb = TextBuf::new(out);
        match d.state.sysfs_show(&d.vn, idx as usize, &mut tb) {
            Ok(()) => tb.len() as isize,
            Err(e) => e.to_errno() as isize,
        }
    }

    /// # Safety
    ///
    /// sysfs writes `len` bytes at `buf` to a file of a bound device's group.
    unsafe extern "C" fn sysfs_store_cb(
        state: *mut ffi::c_void,
        idx: ffi::c_uint,
        buf: *const ffi::c_char,
        len: usize,
    ) -> isize {
        // SAFETY: As the caller guarantees: the device is bound and `buf`
        // holds `len` bytes.
        let (d, input) = unsafe {
            (
                Self::dev(state),
                core::slice::from_raw_parts(buf.cast::<u8>(), len),
            )
        };
        match d.state.sysfs_store(&d.vn, idx as usize, input) {
            Ok(()) => len as isize,
            Err(e) => e.to_errno() as isize,
        }
    }

    /// # Safety
    ///
    /// `ethtool -c` on a bound device.
    unsafe extern "C" fn rx_usecs_cb(state: *mut ffi::c_void) -> u32 {
        // SAFETY: The device is bound.
        unsafe { Self::dev(state) }.state.rx_usecs()
    }

    /// # Safety
    ///
    /// `ethtool -C` on a bound device (RTNL held).
    unsafe extern "C" fn set_rx_usecs_cb(state: *mut ffi::c_void, usecs: u32) -> ffi::c_int {
        // SAFETY: The device is bound.
        match unsafe { Self::dev(state) }.state.set_rx_usecs(usecs) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// `ndo_siocdevprivate` of a bound, registered device (RTNL held);
    /// `arg` is the request's user pointer.
    unsafe extern "C" fn ioctl_cb(
        state: *mut ffi::c_void,
        cmd: ffi::c_uint,
        arg: *mut ffi::c_void,
    ) -> ffi::c_int {
        // SAFETY: The device is bound.
        let d = unsafe { Self::dev(state) };
        let Some(qp) = d.qp(0) else {
            return EINVAL.to_errno();
        };
        match d
            .state
            .private_ioctl(&d.vn, &qp.tx, cmd, UserPtr::from_ptr(arg))
        {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// `ndo_get_stats64` of a bound device; the pointers are writable.
    unsafe extern "C" fn stats_cb(state: *mut ffi::c_void, s: *mut ext::rtnl_link_stats64) {
        // SAFETY: The device is bound; the caller gives its statistics,
        // writable.
        unsafe { Self::dev(state).state.stats().fill(&mut *s) };
    }
}

impl<T: Driver> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: Registered in `register`; unregistering unbinds every
        // device (remove_cb for each) before it returns.
        unsafe { ext::zcnet_helper_vnet_unregister() };
    }
}
