// SPDX-License-Identifier: GPL-2.0

//! Socket buffers, owned one at a time ([`SkBuff`]) or in an ordered chain
//! ([`SkbChain`]).
//!
//! C header: [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h)
//!
//! Plain fields (`len`, `data_len`, `data`) are read through
//! `kernel::bindings::sk_buff`. The others go through C helpers
//! (`rust/helpers/skbuff.c`): `dev` and `next` lie in anonymous unions;
//! `protocol`, `mac_header` and the VLAN tag in the `headers` struct group,
//! an anonymous union too; `pkt_type` is a bitfield. Their binding names
//! (`__bindgen_anon_N`, bitfield units) depend on the kernel configuration.

use super::ext;
use super::netdev::NetDevice;
use super::page::{RxPage, PAGE_SIZE};
use core::ptr::NonNull;
use kernel::{bindings, prelude::*};

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

    /// The raw pointer; the skb stays `self`'s.
    pub(crate) fn as_raw(&self) -> *mut bindings::sk_buff {
        self.raw()
    }

    /// Copies `len` bytes from byte `from` to offset `off` of `page`:
    /// whether they were all there (and fit the page).
    pub fn copy_to_page(&self, from: u32, page: &RxPage, off: usize, len: usize) -> bool {
        if off > PAGE_SIZE || len > PAGE_SIZE - off {
            return false;
        }
        // SAFETY: By the type invariants the skb is valid and the page mapped;
        // the helper checks the range against the page and the skb's length.
        unsafe {
            ext::zcnet_helper_page_from_skb(page.as_raw(), off as u32, self.raw(), from, len as u32)
                == 0
        }
    }

    /// When the bytes from `from` on are exactly one page fragment (the
    /// linear part ends at `from`, one fragment, no frag list): that
    /// fragment.
    pub fn payload_frag(&self, from: u32) -> Option<PayloadFrag<'_>> {
        let (mut page, mut off, mut len) = (core::ptr::null_mut(), 0u32, 0u32);
        // SAFETY: By the type invariant the skb is valid; the out-pointers
        // are writable.
        let ok = unsafe {
            ext::zcnet_helper_skb_payload_frag(self.raw(), from, &mut page, &mut off, &mut len)
        };
        let page = NonNull::new(page).filter(|_| ok)?;
        Some(PayloadFrag {
            page,
            off: off as usize,
            len: len as usize,
            _skb: core::marker::PhantomData,
        })
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

    /// True when the frame arrived with a VLAN tag (held out of band, as
    /// receive VLAN offload and `skb_vlan_untag` leave it) that no VLAN
    /// device of the lower device took.
    pub fn vlan_tagged(&self) -> bool {
        // SAFETY: By the type invariant the skb is valid.
        unsafe { ext::zcnet_helper_skb_vlan_tagged(self.raw()) }
    }

    /// Total length of the data (linear part and page fragments).
    pub fn len(&self) -> u32 {
        // SAFETY: By the type invariant the skb is valid and owned, so nobody
        // changes it under us; `len` is a plain `unsigned int` outside any
        // union.
        unsafe { (*self.raw()).len }
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

    /// Answers this packet (an IPv6 packet given to `ndo_start_xmit`) with
    /// an ICMPv6 Packet Too Big carrying `mtu`, as a tunnel does for a
    /// packet over its path MTU, so that the sender's stack learns it.
    /// Rate-limited as every ICMPv6 error; nothing is sent for a packet
    /// the kernel would not answer (no IPv6 header in the linear part, a
    /// source that is not unicast, an ICMPv6 error).
    pub fn icmpv6_too_big(&self, mtu: u32) {
        // SAFETY: By the type invariant the skb is valid; `icmp6_send()`
        // only reads it, checking that its network header lies inside the
        // linear part before it reads the IPv6 header.
        unsafe { ext::zcnet_helper_icmpv6_too_big(self.raw(), mtu) }
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
        // SAFETY: By the type invariant the skb is valid and owned; `len`,
        // `data_len` and `data` are plain fields outside any union. `data`
        // points to the linear part, `len - data_len` bytes (`skb_headlen`)
        // in the skb's head, which stays as it is while `&self` is borrowed
        // (changing it takes `&mut self`).
        unsafe {
            let skb = self.raw();
            let n = ((*skb).len - (*skb).data_len) as usize;
            core::slice::from_raw_parts((*skb).data, n)
        }
    }

    /// Copies `out.len()` bytes from `offset` of the data (linear part and
    /// fragments alike) into `out`.
    pub fn copy_bits(&self, offset: u32, out: &mut [u8]) -> Result {
        let len = i32::try_from(out.len()).map_err(|_| EINVAL)?;
        let off = i32::try_from(offset).map_err(|_| EINVAL)?;
        // SAFETY: `out` is valid for `len` bytes; `skb_copy_bits` checks the range.
        super::errno::to_result(unsafe {
            bindings::skb_copy_bits(self.raw(), off, out.as_mut_ptr().cast(), len)
        })
    }

    /// Computes a pending (`CHECKSUM_PARTIAL`) transport checksum in software.
    pub fn resolve_checksum(&mut self) -> Result {
        // SAFETY: By the type invariant the skb is valid and owned.
        super::errno::to_result(unsafe { ext::zcnet_helper_skb_resolve_csum(self.raw()) })
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

    /// Whether this is a GSO packet, to be cut into segments before it
    /// leaves ([`SkBuff::gso_segment_paged`]).
    pub fn is_gso(&self) -> bool {
        // SAFETY: By the type invariant the skb is valid.
        unsafe { ext::zcnet_helper_skb_is_gso(self.raw()) }
    }

    /// Cuts this TCP/IPv4 GSO packet into its segments in software, as the
    /// core would, except that a segment ends short wherever an order-0 page
    /// would otherwise begin inside it (a window-edge cut, or a copied
    /// message header, moved the pages off the segment boundaries), so that
    /// each whole page the sender gave travels in a segment of its own
    /// (`rust/helpers/tx_gso.c`). Returns the segments in order and how many
    /// were cut short so; `Err` when memory is short or the packet cannot be
    /// segmented (it has been freed as dropped).
    pub fn gso_segment_paged(self) -> Result<(SkbChain, u32)> {
        let mut segs = core::ptr::null_mut();
        let mut realigned = 0u32;
        // SAFETY: The skb is valid and handed over: the helper frees it or
        // turns it into the chain of segments it returns, which we own.
        let r = unsafe {
            ext::zcnet_helper_gso_segment_paged(self.into_raw(), &mut segs, &mut realigned)
        };
        if r < 0 {
            return Err(Error::from_errno(r));
        }
        // SAFETY: On success `segs` is a chain of valid skbs, linked by
        // `next`, that we own.
        Ok((unsafe { SkbChain::from_raw(segs) }, realigned))
    }

    /// Frees the skb as consumed, not dropped (it did its job).
    pub fn consume(self) {
        // SAFETY: The skb is valid and owned.
        unsafe { ext::zcnet_helper_consume_skb(self.into_raw()) };
    }
}

/// An skb's payload, one lowmem page fragment ([`SkBuff::payload_frag`]),
/// valid while the skb is borrowed.
pub struct PayloadFrag<'a> {
    page: NonNull<bindings::page>,
    off: usize,
    len: usize,
    _skb: core::marker::PhantomData<&'a SkBuff>,
}

impl PayloadFrag<'_> {
    /// Its offset in the page.
    pub fn off(&self) -> usize {
        self.off
    }

    /// Its length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty fragment.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether it lies in `page`.
    pub fn is_in(&self, page: &RxPage) -> bool {
        self.page.as_ptr() == page.as_raw()
    }

    /// A reference of its own to the page.
    pub fn page(&self) -> RxPage {
        // SAFETY: The skb holds the page while borrowed; the helper only
        // reports lowmem pages; `get_page` takes the reference the new value
        // owns.
        unsafe {
            ext::zcnet_helper_get_page(self.page.as_ptr());
            RxPage::from_raw(self.page)
        }
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own one reference to a valid skb.
        unsafe { ext::zcnet_helper_kfree_skb(self.raw()) };
    }
}

impl SkBuff {
    /// Builds a received packet for `dev`: `hdr` (an Ethernet header of
    /// `eth_len` bytes, then the IP and transport headers) in the linear part
    /// and `data_len` bytes of `page` as its only fragment, at offset 0.
    /// Its metadata (mark, priority, hash, receive timestamp, queue) is that
    /// of `meta`, the frame that completed it, as `ip_frag_reasm` keeps it.
    pub fn from_page(
        hdr: &[u8],
        eth_len: usize,
        page: RxPage,
        data_len: usize,
        dev: &NetDevice,
        meta: &SkBuff,
    ) -> Option<Self> {
        if eth_len > hdr.len() || data_len > PAGE_SIZE {
            return None;
        }
        let p = page.into_raw();
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
                meta.raw(),
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

    /// Takes ownership of the chain starting at `head` (null: empty).
    ///
    /// # Safety
    ///
    /// `head` must be null or the first of a chain of valid skbs, linked by
    /// `next` and ending with a null `next`, whose references the caller
    /// hands over.
    pub(crate) unsafe fn from_raw(head: *mut bindings::sk_buff) -> Self {
        let mut tail = head;
        // SAFETY: The caller guarantees a well-formed, null-terminated chain.
        // INVARIANT: `tail` ends as the chain's last skb.
        unsafe {
            while !tail.is_null() {
                let next = ext::zcnet_helper_skb_next(tail);
                if next.is_null() {
                    break;
                }
                tail = next;
            }
        }
        Self { head, tail }
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
