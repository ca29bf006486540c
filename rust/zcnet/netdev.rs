// SPDX-License-Identifier: GPL-2.0

//! Network devices.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h)
//!
//! Every field is read through a C helper (`rust/helpers/netdev.c`):
//! `kernel::bindings` has `struct net_device` only as an opaque type, and
//! `mtu`, `flags` and `type` want `READ_ONCE` anyway.

use super::ext;
use kernel::{
    bindings,
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
    types::Opaque,
};

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

    /// The IP identification the stack would give a packet with the IPv4
    /// header `ip` sent from this device's namespace: per destination, from
    /// a secret-keyed hash and a random start (`__ip_select_ident`).
    pub fn ip_ident(&self, ip: &[u8; 20]) -> u16 {
        // SAFETY: By the type invariant the device is valid; the helper reads
        // 20 bytes from `ip`.
        unsafe { ext::zcnet_helper_ip_ident(self.as_raw(), ip.as_ptr().cast()) }
    }

    /// True when `addr` is one of this host's addresses as seen from this
    /// device (a local route), so a packet to it is delivered, not forwarded.
    pub fn is_local_ipv4(&self, addr: [u8; 4]) -> bool {
        // SAFETY: By the type invariant the device is valid; the helper reads
        // 4 bytes from `addr`.
        unsafe { ext::zcnet_helper_ipv4_is_local(self.as_raw(), addr.as_ptr()) }
    }

    /// Logs `MODULE: DEV: why`, rate-limited: why a request for this device
    /// was refused.
    pub fn warn(&self, why: &CStr) {
        // SAFETY: By the type invariant the device is valid; `why` is a
        // NUL-terminated string the helper only reads.
        unsafe { ext::zcnet_helper_netdev_warn(self.as_raw(), why.as_char_ptr()) }
    }

    /// Bytes the device wants reserved in front of a frame it transmits.
    pub fn reserved_headroom(&self) -> u32 {
        // SAFETY: By the type invariant the device is valid.
        unsafe { ext::zcnet_helper_ll_reserved_space(self.as_raw()) }
    }
}

/// Standard device statistics (`ip -s link`): relaxed atomic counters, all
/// zero a valid value (as `alloc_netdev` leaves a private area).
pub struct DevStats {
    rx_packets: Atomic<u64>,
    rx_bytes: Atomic<u64>,
    rx_dropped: Atomic<u64>,
    tx_packets: Atomic<u64>,
    tx_bytes: Atomic<u64>,
    tx_dropped: Atomic<u64>,
}

impl DevStats {
    /// All zero.
    pub const fn new() -> Self {
        Self {
            rx_packets: Atomic::new(0),
            rx_bytes: Atomic::new(0),
            rx_dropped: Atomic::new(0),
            tx_packets: Atomic::new(0),
            tx_bytes: Atomic::new(0),
            tx_dropped: Atomic::new(0),
        }
    }

    /// Counts a packet of `bytes` received.
    pub fn rx(&self, bytes: u64) {
        self.rx_packets.add(1, Relaxed);
        self.rx_bytes.add(bytes, Relaxed);
    }

    /// Counts a packet dropped on receive.
    pub fn rx_drop(&self) {
        self.rx_dropped.add(1, Relaxed);
    }

    /// Counts `frames` frames of `bytes` in all sent.
    pub fn tx(&self, frames: u64, bytes: u64) {
        self.tx_packets.add(frames, Relaxed);
        self.tx_bytes.add(bytes, Relaxed);
    }

    /// Counts a packet dropped on transmit.
    pub fn tx_drop(&self) {
        self.tx_dropped.add(1, Relaxed);
    }

    /// Fills `ndo_get_stats64`'s statistics.
    pub(crate) fn fill(&self, s: &mut ext::rtnl_link_stats64) {
        s.rx_packets = self.rx_packets.load(Relaxed);
        s.rx_bytes = self.rx_bytes.load(Relaxed);
        s.rx_dropped = self.rx_dropped.load(Relaxed);
        s.tx_packets = self.tx_packets.load(Relaxed);
        s.tx_bytes = self.tx_bytes.load(Relaxed);
        s.tx_dropped = self.tx_dropped.load(Relaxed);
    }
}

impl Default for DevStats {
    fn default() -> Self {
        Self::new()
    }
}

/// Writes `names` into ethtool's string set at `data`, one
/// `ETH_GSTRING_LEN`-byte, NUL-padded entry each (longer names cut).
///
/// # Safety
///
/// `data` is writable for `names.len() * ETH_GSTRING_LEN` bytes.
pub(crate) unsafe fn ethtool_strings(data: *mut u8, names: &[&str]) {
    const LEN: usize = bindings::ETH_GSTRING_LEN as usize;
    // SAFETY: As the caller guarantees.
    let buf = unsafe { core::slice::from_raw_parts_mut(data, names.len() * LEN) };
    for (chunk, name) in buf.chunks_exact_mut(LEN).zip(names) {
        chunk.fill(0);
        let n = name.len().min(LEN - 1);
        chunk[..n].copy_from_slice(&name.as_bytes()[..n]);
    }
}
