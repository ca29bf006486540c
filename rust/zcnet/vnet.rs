// SPDX-License-Identifier: GPL-2.0

//! Native virtio-net devices: a front end that drives a virtio-net device's
//! virtqueues itself instead of stacking on `virtio_net`.
//!
//! C header: [`include/linux/virtio.h`](srctree/include/linux/virtio.h)
//!
//! The C side (`rust/helpers/vnet.c`) owns the virtio driver, the
//! `net_device`, the two virtqueues and the NAPI context; this file turns its
//! callbacks into a [`Driver`] implementation and gives the driver the rings
//! as safe types. The rings own every buffer they post ([`RxRing`] its
//! header buffers and pages, [`TxRing`] its skbs) until the device gives it
//! back, and only this file can make or drop a ring: it drops them after the
//! device is reset, so no buffer is freed while the device may still write
//! into it or read from it.

use super::bh::BhGuard;
use super::ext;
use super::netdev::{DevStats, NetDevice};
use super::page::{RxPage, PAGE_SIZE};
use super::skbuff::SkBuff;
use core::{marker::PhantomData, pin::Pin, ptr::NonNull};
use kernel::{bindings, ffi, new_spinlock, prelude::*, sync::SpinLock, types::ForeignOwnable};

/// Bytes of the virtio-net header the device writes in front of each
/// received frame (and reads in front of each frame sent).
pub const HDR_LEN: usize = ext::ZCNET_VNET_HDR_LEN as usize;
/// Bytes of a receive chain's header buffer: the virtio-net header and the
/// frame's first bytes; the rest of the frame goes to the chain's page.
pub const RX_HDR: usize = 128;
/// Bytes of an Ethernet header.
const ETH_HLEN: usize = 14;
/// The largest MTU a receive chain (header buffer and one page) holds.
pub const MAX_MTU: usize = RX_HDR - HDR_LEN + PAGE_SIZE - ETH_HLEN;

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

    /// Descriptors of the receive ring.
    pub fn rx_size(&self) -> usize {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_rx_size(self.raw()) as usize }
    }

    /// Descriptors of the transmit ring.
    pub fn tx_size(&self) -> usize {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_tx_size(self.raw()) as usize }
    }

    /// Sets the largest MTU a user may set (`ip link set mtu`).
    pub fn set_max_mtu(&self, mtu: u32) {
        // SAFETY: By the type invariant the device is bound; called before
        // registration.
        unsafe { ext::zcnet_helper_vnet_set_max_mtu(self.raw(), mtu) }
    }

    /// Notifies the device of new receive buffers, when it asked to be.
    pub fn kick_rx(&self) {
        // SAFETY: By the type invariant the device is bound; the rings' users
        // hold their locks.
        unsafe { ext::zcnet_helper_vnet_kick_rx(self.raw()) }
    }

    /// Notifies the device of frames to send, when it asked to be.
    pub fn kick_tx(&self) {
        // SAFETY: As above.
        unsafe { ext::zcnet_helper_vnet_kick_tx(self.raw()) }
    }

    /// Free descriptors in the transmit ring.
    pub fn tx_free(&self) -> usize {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_tx_free(self.raw()) as usize }
    }

    /// Stops the transmit queue (the ring is full).
    pub fn tx_stop(&self) {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_tx_stop(self.raw()) }
    }

    /// Restarts the transmit queue if it was stopped.
    pub fn tx_wake(&self) {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_tx_wake(self.raw()) }
    }

    /// Counts `bytes` queued to the device (byte queue limits); `more`:
    /// another frame follows at once. Whether to kick the device now.
    pub fn tx_sent(&self, bytes: u32, more: bool) -> bool {
        // SAFETY: By the type invariant the device is bound; called from the
        // transmit path.
        unsafe { ext::zcnet_helper_vnet_tx_sent(self.raw(), bytes, more) }
    }

    /// Counts frames the device has sent (byte queue limits).
    pub fn tx_completed(&self, frames: u32, bytes: u32) {
        // SAFETY: By the type invariant the device is bound.
        unsafe { ext::zcnet_helper_vnet_tx_completed(self.raw(), frames, bytes) }
    }

    /// A received frame: `head` (from its Ethernet header on, copied into
    /// the skb's head) and `page_len` bytes of `page` as its fragment.
    /// `None` when memory is short or `head` holds no Ethernet header.
    pub fn rx_skb(&self, head: &[u8], page: Option<RxPage>, page_len: usize) -> Option<SkBuff> {
        let page_len = if page.is_some() {
            page_len.min(PAGE_SIZE)
        } else {
            0
        };
        let p = page.map_or(core::ptr::null_mut(), RxPage::into_raw);
        // SAFETY: By the type invariant the device is bound; `head` is valid
        // for its length; the page reference (if any) passes to the helper.
        unsafe {
            SkBuff::from_raw(ext::zcnet_helper_vnet_rx_skb(
                self.raw(),
                head.as_ptr().cast(),
                head.len() as u32,
                p,
                page_len as u32,
            ))
        }
    }

    /// Hands a received frame to the stack (NAPI, GRO): from the poll only.
    pub fn receive(&self, skb: SkBuff) {
        // SAFETY: By the type invariant the device is bound; the skb passes
        // to the stack.
        unsafe { ext::zcnet_helper_vnet_receive(self.raw(), skb.into_raw()) }
    }
}

/// One receive chain's buffers.
struct RxSlot {
    hdr: KBox<[u8; RX_HDR]>,
    page: Option<RxPage>,
    posted: bool,
}

/// The receive ring: one slot per descriptor chain, each a header buffer
/// ([`RX_HDR`] bytes, allocated once) and a page.
///
/// # Invariants
///
/// A slot with `posted` set is in the device's ring: its header buffer and
/// page are not touched or freed until the device gives the chain back or
/// is reset (the ring is dropped only after the reset). `free` holds the
/// other slots' indices, with room for all of them.
pub struct RxRing {
    vn: Vnet,
    slots: KVec<RxSlot>,
    free: KVec<u32>,
}

impl RxRing {
    fn new(vn: Vnet, n: usize) -> Result<Self> {
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut free = KVec::with_capacity(n, GFP_KERNEL)?;
        for i in 0..n {
            slots.push(
                RxSlot {
                    hdr: KBox::new([0u8; RX_HDR], GFP_KERNEL)?,
                    page: None,
                    posted: false,
                },
                GFP_KERNEL,
            )?;
            free.push((n - 1 - i) as u32, GFP_KERNEL)?;
        }
        Ok(Self { vn, slots, free })
    }

    /// Posts every free slot, a page from `page` for a slot that has none
    /// (it keeps a page no frame used). How many chains went to the device;
    /// kick it after.
    pub fn fill(&mut self, page: &mut impl FnMut() -> Option<RxPage>) -> usize {
        let mut n = 0;
        while let Some(i) = self.free.pop() {
            let Some(s) = self.slots.get_mut(i as usize) else {
                continue;
            };
            if s.page.is_none() {
                s.page = page();
            }
            let Some(p) = s.page.as_ref() else {
                let _ = self.free.push_within_capacity(i);
                break;
            };
            // SAFETY: By the type invariant the device is bound; the header
            // buffer and the page stay in the slot, untouched, while it is
            // posted (see the type invariant); the token is non-zero.
            let r = unsafe {
                ext::zcnet_helper_vnet_post_rx(
                    self.vn.raw(),
                    s.hdr.as_mut_ptr().cast(),
                    RX_HDR as u32,
                    p.as_raw(),
                    0,
                    PAGE_SIZE as u32,
                    i as ffi::c_ulong + 1,
                )
            };
            if r != 0 {
                let _ = self.free.push_within_capacity(i);
                break;
            }
            // INVARIANT: the chain is in the device's ring now.
            s.posted = true;
            n += 1;
        }
        n
    }

    /// The next chain the device filled, if any.
    pub fn next(&mut self) -> Option<RxFrame<'_>> {
        let mut len = 0u32;
        // SAFETY: By the type invariant the device is bound; `len` is
        // writable.
        let t = unsafe { ext::zcnet_helper_vnet_get_rx(self.vn.raw(), &mut len) };
        let i = t.checked_sub(1)? as usize;
        let s = self.slots.get_mut(i)?;
        if !s.posted {
            return None;
        }
        // INVARIANT: the device gave the chain back: it is ours again.
        s.posted = false;
        let _ = self.free.push_within_capacity(i as u32);
        Some(RxFrame {
            slot: s,
            len: len as usize,
        })
    }
}

/// A chain the device filled: [`RX_HDR`] bytes of header buffer, then the
/// page; its slot goes back to the ring (with its page unless taken).
pub struct RxFrame<'a> {
    slot: &'a mut RxSlot,
    len: usize,
}

impl RxFrame<'_> {
    /// The bytes the device wrote, virtio-net header included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the device wrote nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// What the device wrote to the header buffer.
    pub fn head(&self) -> &[u8] {
        &self.slot.hdr[..self.len.min(RX_HDR)]
    }

    /// The page, with the frame's bytes past the header buffer at offset 0
    /// (`len() - RX_HDR` of them); the slot gets a new one when refilled.
    pub fn take_page(&mut self) -> Option<RxPage> {
        self.slot.page.take()
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
    fn new(vn: Vnet, n: usize) -> Result<Self> {
        let mut slots = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut free = KVec::with_capacity(n, GFP_KERNEL)?;
        for i in 0..n {
            slots.push(None, GFP_KERNEL)?;
            free.push((n - 1 - i) as u32, GFP_KERNEL)?;
        }
        Ok(Self { vn, slots, free })
    }

    /// Queues `skb` for the device, its head and fragments as they are
    /// (no copy) behind a virtio-net header; kick the device after.
    pub fn post(&mut self, skb: SkBuff) -> core::result::Result<(), TxFull> {
        let Some(i) = self.free.pop() else {
            return Err(TxFull::Busy(skb));
        };
        let len = skb.len();
        let raw = skb.into_raw();
        // SAFETY: By the type invariant the device is bound; `raw` is a valid
        // skb we own, kept in slot `i` while posted; the token is non-zero.
        let r =
            unsafe { ext::zcnet_helper_vnet_post_tx(self.vn.raw(), raw, i as ffi::c_ulong + 1) };
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

    /// The next skb the device has sent, with its length.
    pub fn reap(&mut self) -> Option<(SkBuff, u32)> {
        // SAFETY: By the type invariant the device is bound.
        let t = unsafe { ext::zcnet_helper_vnet_get_tx(self.vn.raw()) };
        let i = t.checked_sub(1)? as usize;
        // INVARIANT: the device gave it back.
        let done = self.slots.get_mut(i)?.take()?;
        let _ = self.free.push_within_capacity(i as u32);
        Some(done)
    }
}

/// A front end of native virtio-net devices.
pub trait Driver: Send + Sync + Sized + 'static {
    /// The virtio driver's name (`/sys/bus/virtio/drivers/NAME`).
    const NAME: &'static CStr;

    /// The state of a newly bound device (not registered yet). May sleep.
    fn new(vn: &Vnet) -> impl PinInit<Self, Error>;

    /// The device comes up: post receive buffers (`ip link set up`).
    fn open(&self, vn: &Vnet, rx: &mut RxRing) -> Result;

    /// Sends `skb`; [`TxFull::Busy`] gives it back with the queue stopped.
    fn xmit(
        &self,
        vn: &Vnet,
        tx: &mut TxRing,
        skb: SkBuff,
        more: bool,
    ) -> core::result::Result<(), SkBuff>;

    /// The NAPI poll's first step: what the device has sent.
    fn tx_done(&self, vn: &Vnet, tx: &mut TxRing);

    /// The NAPI poll: up to `budget` received frames, and the receive ring
    /// refilled; how many frames it received. The transmit ring's lock is
    /// not held: frames handed to the stack may be answered at once,
    /// through [`Driver::xmit`].
    fn poll(&self, vn: &Vnet, rx: &mut RxRing, budget: usize) -> usize;

    /// The standard statistics.
    fn stats(&self) -> &DevStats;
}

/// A bound device: its rings and the front end's state.
#[pin_data]
struct Dev<T> {
    vn: Vnet,
    #[pin]
    rx: SpinLock<RxRing>,
    #[pin]
    tx: SpinLock<TxRing>,
    #[pin]
    state: T,
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
    };

    /// Registers the driver (one per module).
    pub fn register() -> Result<Self> {
        // SAFETY: `T::NAME` and `OPS` are static; one registration per
        // module, undone in `drop`.
        kernel::error::to_result(unsafe {
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
        let (a, b, c, d) = (Vnet(raw), Vnet(raw), Vnet(raw), Vnet(raw));
        let (nrx, ntx) = (a.rx_size(), a.tx_size());
        a.set_max_mtu(MAX_MTU as u32);
        let init = try_pin_init!(Dev {
            vn: a,
            rx <- new_spinlock!(RxRing::new(b, nrx)?),
            tx <- new_spinlock!(TxRing::new(c, ntx)?),
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
    unsafe extern "C" fn open_cb(state: *mut ffi::c_void) -> ffi::c_int {
        // SAFETY: The device is bound.
        let d = unsafe { Self::dev(state) };
        // The poll takes the ring's lock in softirq.
        let _bh = BhGuard::new();
        let mut rx = d.rx.lock();
        match d.state.open(&d.vn, &mut rx) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// `ndo_start_xmit` of a bound device (bottom halves off); `skb` is
    /// handed over.
    unsafe extern "C" fn xmit_cb(
        state: *mut ffi::c_void,
        skb: *mut bindings::sk_buff,
        more: bool,
    ) -> ffi::c_int {
        // SAFETY: The device is bound; the skb is ours.
        let (d, skb) = unsafe { (Self::dev(state), SkBuff::from_raw(skb)) };
        let Some(skb) = skb else {
            return ext::netdev_tx_NETDEV_TX_OK as ffi::c_int;
        };
        let mut tx = d.tx.lock();
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
    unsafe extern "C" fn poll_cb(state: *mut ffi::c_void, budget: ffi::c_int) -> ffi::c_int {
        // SAFETY: The device is bound.
        let d = unsafe { Self::dev(state) };
        d.state.tx_done(&d.vn, &mut d.tx.lock());
        let budget = budget.max(0) as usize;
        let n = d.state.poll(&d.vn, &mut d.rx.lock(), budget);
        n.min(budget) as ffi::c_int
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
