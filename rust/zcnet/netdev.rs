// SPDX-License-Identifier: GPL-2.0

//! Network devices and socket buffers.
//!
//! C headers: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h),
//! [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h)

use super::ext;
use core::ptr::NonNull;
use kernel::{bindings, prelude::*, types::Opaque};

/// A network device, borrowed for the duration of a callback.
///
/// # Invariants
///
/// The wrapped `struct net_device` is registered (or being set up by its
/// driver) and stays valid while the reference lives.
#[repr(transparent)]
pub struct NetDevice(Opaque<bindings::net_device>);

impl NetDevice {
    /// # Safety
    ///
    /// `ptr` must point to a valid `struct net_device` that outlives `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: The caller guarantees validity; `NetDevice` is transparent.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The raw pointer.
    pub(crate) fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The device's MTU.
    pub fn mtu(&self) -> u32 {
        // SAFETY: By the type invariant the device is valid.
        unsafe { ext::zcnet_helper_dev_mtu(self.as_raw()) }
    }

    /// The interface index.
    pub fn ifindex(&self) -> i32 {
        // SAFETY: By the type invariant the device is valid.
        unsafe { ext::zcnet_helper_dev_ifindex(self.as_raw()) }
    }

    /// True for an Ethernet device that is not a loopback device.
    pub fn is_ethernet(&self) -> bool {
        // SAFETY: By the type invariant the device is valid.
        unsafe { ext::zcnet_helper_dev_is_ether(self.as_raw()) }
    }

    /// True while the device is administratively up.
    pub fn is_up(&self) -> bool {
        // SAFETY: By the type invariant the device is valid.
        unsafe { ext::zcnet_helper_dev_is_up(self.as_raw()) }
    }

    /// True when the device takes non-linear skbs (`NETIF_F_SG`): fragments
    /// that reference pages go out without being linearised (copied) first.
    pub fn has_sg(&self) -> bool {
        // SAFETY: By the type invariant the device is valid.
        unsafe { ext::zcnet_helper_dev_has_sg(self.as_raw()) }
    }

    /// The device's MAC address.
    pub fn mac_addr(&self) -> [u8; 6] {
        let mut a = [0u8; 6];
        // SAFETY: By the type invariant the device is valid; `a` has 6 bytes.
        unsafe { ext::zcnet_helper_dev_addr(self.as_raw(), a.as_mut_ptr()) };
        a
    }

    /// True when the current task holds `CAP_NET_ADMIN` in the device's
    /// network namespace (for configuration requests from user space).
    pub fn net_admin_capable(&self) -> bool {
        // SAFETY: By the type invariant the device is valid.
        unsafe { ext::zcnet_helper_net_admin_capable(self.as_raw()) }
    }

    /// Bytes the device wants reserved in front of a frame it transmits.
    pub fn reserved_headroom(&self) -> u32 {
        // SAFETY: By the type invariant the device is valid.
        unsafe { ext::zcnet_helper_ll_reserved_space(self.as_raw()) }
    }
}

/// An owned socket buffer: dropped (counted as a drop) unless handed on.
///
/// # Invariants
///
/// `self.0` is a valid `struct sk_buff` this value owns one reference to.
pub struct SkBuff(NonNull<bindings::sk_buff>);

// SAFETY: An owned skb may be handed from one context to another.
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// Takes ownership of `ptr` (null gives `None`).
    ///
    /// # Safety
    ///
    /// `ptr` must be null or a valid skb whose reference the caller hands over.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::sk_buff) -> Option<Self> {
        NonNull::new(ptr).map(Self)
    }

    /// Gives up ownership without freeing.
    pub(crate) fn into_raw(self) -> *mut bindings::sk_buff {
        let p = self.0.as_ptr();
        core::mem::forget(self);
        p
    }

    fn raw(&self) -> *mut bindings::sk_buff {
        self.0.as_ptr()
    }

    /// A frame for `dev` holding `bytes` (Ethernet header included), padded
    /// to the Ethernet minimum; `None` when memory is short.
    pub fn frame(dev: &NetDevice, bytes: &[u8]) -> Option<Self> {
        // SAFETY: `bytes` is readable for its length; the helper copies it
        // into a fresh skb we own, or returns null.
        unsafe {
            Self::from_raw(ext::zcnet_helper_build_frame(
                dev.as_raw(),
                bytes.as_ptr().cast(),
                bytes.len() as u32,
            ))
        }
    }

    /// Total length of the data (linear part and page fragments).
    pub fn len(&self) -> u32 {
        // SAFETY: By the type invariant the skb is valid.
        unsafe { ext::zcnet_helper_skb_len(self.raw()) }
    }

    /// True when the skb carries no data.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The protocol field (network byte order, as `skb->protocol`).
    pub fn protocol_be(&self) -> u16 {
        // SAFETY: By the type invariant the skb is valid.
        unsafe { ext::zcnet_helper_skb_protocol(self.raw()) }
    }

    /// Makes sure the first `len` bytes are in the linear part; returns the
    /// linear part (at least `len` bytes), or `None` when the skb is shorter.
    pub fn pull_linear(&mut self, len: u32) -> Option<&[u8]> {
        // SAFETY: By the type invariant the skb is valid and owned.
        if !unsafe { ext::zcnet_helper_skb_may_pull(self.raw(), len) } {
            return None;
        }
        Some(self.linear())
    }

    /// The linear part of the data.
    pub fn linear(&self) -> &[u8] {
        // SAFETY: `data` points to `skb_headlen` readable bytes of the owned skb.
        unsafe {
            let n = ext::zcnet_helper_skb_headlen(self.raw()) as usize;
            core::slice::from_raw_parts(ext::zcnet_helper_skb_data(self.raw()), n)
        }
    }

    /// Copies `out.len()` bytes from `offset` of the data (linear part and
    /// fragments alike) into `out`.
    pub fn copy_bits(&self, offset: u32, out: &mut [u8]) -> Result {
        let len = i32::try_from(out.len()).map_err(|_| EINVAL)?;
        let off = i32::try_from(offset).map_err(|_| EINVAL)?;
        // SAFETY: `out` is valid for `len` bytes; `skb_copy_bits` checks the range.
        kernel::error::to_result(unsafe {
            bindings::skb_copy_bits(self.raw(), off, out.as_mut_ptr().cast(), len)
        })
    }

    /// Computes a pending (`CHECKSUM_PARTIAL`) transport checksum in software.
    pub fn resolve_checksum(&mut self) -> Result {
        // SAFETY: By the type invariant the skb is valid and owned.
        kernel::error::to_result(unsafe { ext::zcnet_helper_skb_resolve_csum(self.raw()) })
    }

    /// Sets the device the skb belongs to.
    pub fn set_dev(&mut self, dev: &NetDevice) {
        // SAFETY: By the type invariant the skb is valid and owned; `dev` is valid.
        unsafe { ext::zcnet_helper_skb_set_dev(self.raw(), dev.as_raw()) };
    }

    /// Transmits on `dev` (`dev_queue_xmit`). The skb is consumed either way;
    /// returns false when the device or its queue dropped it.
    pub fn xmit(mut self, dev: &NetDevice) -> bool {
        self.set_dev(dev);
        // SAFETY: The skb is valid and owned; `__dev_queue_xmit` takes it over.
        let rc = unsafe { ext::__dev_queue_xmit(self.into_raw(), core::ptr::null_mut()) };
        rc == 0
    }

    /// True for a frame addressed to this host (`PACKET_HOST`), not a
    /// broadcast, multicast or another host's frame seen in promiscuous mode.
    pub fn is_for_host(&self) -> bool {
        // SAFETY: By the type invariant the skb is valid.
        unsafe { ext::zcnet_helper_skb_for_host(self.raw()) }
    }

    /// Builds one IPv4 fragment of this packet for transmission: `hdr`
    /// (Ethernet and the fragment's IPv4 header) in front, then `len` bytes
    /// from `off` of this skb's data. With `allow_ref` the payload is not
    /// copied: the fragment references this skb's pages (which stay alive
    /// while it does). Returns the fragment and how many payload bytes had to
    /// be copied anyway (payload in a non-page head, or an skb the helper
    /// cannot reference); `None` when memory is short or the range is wrong.
    pub fn tx_fragment(
        &self,
        hdr: &[u8],
        off: u32,
        len: u32,
        headroom: u32,
        allow_ref: bool,
    ) -> Option<(SkBuff, u32)> {
        let mut copied = 0u32;
        // SAFETY: The skb is valid; `hdr` is readable for its length; the
        // helper takes page references (never ownership) from `self` and
        // returns a new skb we own, or null.
        let skb = unsafe {
            Self::from_raw(ext::zcnet_helper_build_tx_frag(
                self.raw(),
                hdr.as_ptr().cast(),
                hdr.len() as u32,
                off,
                len,
                headroom,
                allow_ref,
                &mut copied,
            ))
        }?;
        Some((skb, copied))
    }

    /// Frees the skb as consumed, not dropped (it did its job).
    pub fn consume(self) {
        // SAFETY: The skb is valid and owned.
        unsafe { ext::zcnet_helper_consume_skb(self.into_raw()) };
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own one reference to a valid skb.
        unsafe { ext::zcnet_helper_kfree_skb(self.raw()) };
    }
}

/// A page that receives payload at its final offset; its reference passes to
/// the skb built from it, or is dropped with it.
///
/// # Invariants
///
/// `self.0` is a page this value holds one reference to, mapped in the
/// kernel's linear map (allocated without `__GFP_HIGHMEM`).
pub struct RxPage(NonNull<bindings::page>);

// SAFETY: A page reference may move between contexts.
unsafe impl Send for RxPage {}

/// Bytes in an [`RxPage`].
pub const PAGE_SIZE: usize = 4096;

/// Receive pages handed out again once their last user let go of them: the
/// ring keeps a reference on up to `N` pages; [`PageRing::get`] looks at the
/// next one and reuses it if that reference is the only one left (the stack
/// freed the packet), or else lets it go and allocates a fresh page in its
/// place. A page someone keeps (a socket's queue, a remapping) is never
/// reused. Not synchronised: the caller serialises (a lock or one context).
///
/// # Invariants
///
/// Each non-null entry of `pages` is a lowmem page the ring holds one
/// reference to.
pub struct PageRing<const N: usize> {
    pages: [*mut bindings::page; N],
    next: usize,
}

// SAFETY: Page references may move between contexts.
unsafe impl<const N: usize> Send for PageRing<N> {}

impl<const N: usize> PageRing<N> {
    /// An empty ring.
    pub const fn new() -> Self {
        Self {
            pages: [core::ptr::null_mut(); N],
            next: 0,
        }
    }

    /// A page for new payload, and whether it was a reused one; `None` when
    /// memory is short.
    pub fn get(&mut self) -> Option<(RxPage, bool)> {
        let i = self.next % N.max(1);
        self.next = i + 1;
        let slot = self.pages.get_mut(i)?;
        let p = *slot;
        if !p.is_null() {
            // SAFETY: By the type invariant the ring holds a reference to `p`.
            unsafe {
                if ext::zcnet_helper_page_reusable(p) {
                    // INVARIANT: the ring keeps its reference; the returned
                    // page holds a new one. Nobody else holds any, so nobody
                    // reads what is written into it now.
                    ext::zcnet_helper_get_page(p);
                    return Some((RxPage(NonNull::new_unchecked(p)), true));
                }
                // Still in use: let it go (its last user frees it).
                ext::zcnet_helper_put_page(p);
            }
            *slot = core::ptr::null_mut();
        }
        let page = RxPage::alloc()?;
        let q = page.0.as_ptr();
        // SAFETY: `page` holds a reference to `q`, a fresh lowmem page.
        // INVARIANT: the ring takes a reference of its own.
        unsafe {
            if ext::zcnet_helper_page_reusable(q) {
                ext::zcnet_helper_get_page(q);
                *slot = q;
            }
        }
        Some((page, false))
    }
}

impl<const N: usize> Default for PageRing<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Drop for PageRing<N> {
    fn drop(&mut self) {
        for p in self.pages.iter_mut().filter(|p| !p.is_null()) {
            // SAFETY: By the type invariant the ring holds this reference.
            unsafe { ext::zcnet_helper_put_page(*p) };
            *p = core::ptr::null_mut();
        }
    }
}

impl RxPage {
    /// Allocates a page in atomic context; `None` when memory is short.
    pub fn alloc() -> Option<Self> {
        // SAFETY: The helper returns a fresh lowmem page or null.
        NonNull::new(unsafe { ext::zcnet_helper_alloc_page() }).map(Self)
    }

    /// The page's bytes, for placing payload.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: By the type invariant the page is mapped; `&mut self` makes
        // this the only access while the slice lives.
        unsafe {
            let p = ext::zcnet_helper_page_address(self.0.as_ptr()).cast::<u8>();
            core::slice::from_raw_parts_mut(p, PAGE_SIZE)
        }
    }
}

impl Drop for RxPage {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we hold one reference.
        unsafe { ext::zcnet_helper_put_page(self.0.as_ptr()) };
    }
}

impl SkBuff {
    /// Builds a received packet for `dev`: `hdr` (an Ethernet header of
    /// `eth_len` bytes, then the IP and transport headers) in the linear part
    /// and `data_len` bytes of `page` as its only fragment, at offset 0.
    pub fn from_page(
        hdr: &[u8],
        eth_len: usize,
        page: RxPage,
        data_len: usize,
        dev: &NetDevice,
    ) -> Option<Self> {
        if eth_len > hdr.len() || data_len > PAGE_SIZE {
            return None;
        }
        let p = page.0.as_ptr();
        core::mem::forget(page);
        // SAFETY: `hdr` is valid for its length; the page reference passes to
        // the helper, which puts it on failure.
        unsafe {
            Self::from_raw(ext::zcnet_helper_build_page_skb(
                hdr.as_ptr().cast(),
                hdr.len() as u32,
                eth_len as u32,
                p,
                data_len as u32,
                dev.as_raw(),
            ))
        }
    }

    /// Hands the skb to the receive path of `dev` now (`netif_receive_skb`,
    /// bottom halves off): it reaches the protocols before anything the
    /// caller delivers next. Do not hold a lock the stack may want (the
    /// protocols may transmit, through this very device).
    pub fn receive(mut self, dev: &NetDevice) {
        self.set_dev(dev);
        // SAFETY: The skb is valid and owned; the receive path takes it over.
        unsafe { ext::zcnet_helper_netif_receive_skb(self.into_raw()) };
    }

    /// The Ethernet header in front of the data of a received frame (empty
    /// when there is none).
    pub fn mac_header(&self) -> &[u8] {
        // SAFETY: The MAC header lies in the skb's head, `mac_len` bytes in
        // front of `data` (zero when no MAC header was set).
        unsafe {
            let n = ext::zcnet_helper_skb_mac_len(self.raw()) as usize;
            if n == 0 {
                return &[];
            }
            core::slice::from_raw_parts(ext::zcnet_helper_skb_mac_header(self.raw()), n)
        }
    }
}

/// An owned, ordered chain of skbs (linked through `skb->next`), for packets
/// collected under a lock and handed on after it is dropped. What is still on
/// the chain when it is dropped is freed.
///
/// # Invariants
///
/// `head` is null or the first of a chain of skbs this value owns, linked by
/// `next` and ending at `tail` (whose `next` is null); both are null together.
pub struct SkbChain {
    head: *mut bindings::sk_buff,
    tail: *mut bindings::sk_buff,
}

// SAFETY: The chain owns its skbs, which may move between contexts.
unsafe impl Send for SkbChain {}

impl SkbChain {
    /// An empty chain.
    pub const fn new() -> Self {
        Self {
            head: core::ptr::null_mut(),
            tail: core::ptr::null_mut(),
        }
    }

    /// Whether the chain is empty.
    pub fn is_empty(&self) -> bool {
        self.head.is_null()
    }

    /// Appends `skb`.
    pub fn push(&mut self, skb: SkBuff) {
        let p = skb.into_raw();
        // SAFETY: `p` is owned and valid; `tail` is null or the chain's last
        // skb (type invariant). INVARIANT: `p` becomes the new tail.
        unsafe {
            ext::zcnet_helper_skb_set_next(p, core::ptr::null_mut());
            if self.tail.is_null() {
                self.head = p;
            } else {
                ext::zcnet_helper_skb_set_next(self.tail, p);
            }
        }
        self.tail = p;
    }

    /// Takes the first skb off the chain.
    pub fn pop(&mut self) -> Option<SkBuff> {
        let p = self.head;
        if p.is_null() {
            return None;
        }
        // SAFETY: `p` is the chain's first skb (type invariant); unlinked
        // here, its ownership passes to the caller with `next` cleared.
        // INVARIANT: `head` moves on; the chain stays well formed.
        unsafe {
            self.head = ext::zcnet_helper_skb_next(p);
            ext::zcnet_helper_skb_set_next(p, core::ptr::null_mut());
            if self.head.is_null() {
                self.tail = core::ptr::null_mut();
            }
            SkBuff::from_raw(p)
        }
    }
}

impl Default for SkbChain {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for SkbChain {
    fn drop(&mut self) {
        while let Some(skb) = self.pop() {
            drop(skb);
        }
    }
}

/// Monotonic time in nanoseconds.
pub fn now_ns() -> u64 {
    // SAFETY: `ktime_get_ns` may be called from any context.
    unsafe { ext::zcnet_helper_now_ns() }
}

/// Bottom halves disabled on this CPU until dropped: process context takes a
/// lock the softirq paths take only under this guard.
pub struct BhGuard(());

impl BhGuard {
    /// Disables bottom halves.
    pub fn new() -> Self {
        // SAFETY: Paired with the enable in `drop`.
        unsafe { ext::zcnet_helper_bh_disable() };
        BhGuard(())
    }
}

impl Drop for BhGuard {
    fn drop(&mut self) {
        // SAFETY: Paired with the disable in `new`.
        unsafe { ext::zcnet_helper_bh_enable() };
    }
}

/// Text for a sysfs file: a `fmt::Write` into the page sysfs hands over;
/// output beyond it is cut.
pub struct TextBuf<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> TextBuf<'a> {
    /// Writes into `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }

    /// Bytes written.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl core::fmt::Write for TextBuf<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}
