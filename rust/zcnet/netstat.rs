// SPDX-License-Identifier: GPL-2.0

//! Network namespaces, and per-namespace counters shown as `/proc/net/NAME`
//! (`Name value` lines, as `/proc/net/tls_stat`), counted per CPU.
//!
//! C header: [`include/net/net_namespace.h`](srctree/include/net/net_namespace.h)

use super::ext;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{bindings, prelude::*};

/// A counted reference to a network namespace.
///
/// # Invariants
///
/// `self.0` is a namespace this value holds one reference to (`get_net`).
pub struct NetRef(NonNull<bindings::net>);

// SAFETY: A namespace reference may move between contexts; `put_net` may be
// called from any context.
unsafe impl Send for NetRef {}
// SAFETY: `&NetRef` only counts into per-CPU counters.
unsafe impl Sync for NetRef {}

impl NetRef {
    /// A new reference to `net`.
    ///
    /// # Safety
    ///
    /// `net` is a valid namespace for the call (the caller holds it alive).
    pub(crate) unsafe fn get(net: *mut bindings::net) -> Self {
        // SAFETY: The caller keeps `net` alive; `get_net` takes our reference
        // and returns its argument, never null.
        let p = unsafe { ext::zcnet_helper_get_net(net) };
        // INVARIANT: the reference taken above is ours.
        Self(NonNull::new(p).unwrap_or(NonNull::dangling()))
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::net {
        self.0.as_ptr()
    }
}

impl Clone for NetRef {
    fn clone(&self) -> Self {
        // SAFETY: We hold a reference, so the namespace is alive.
        unsafe { Self::get(self.as_raw()) }
    }
}

impl Drop for NetRef {
    fn drop(&mut self) {
        // SAFETY: By the type invariant this value owns one reference.
        unsafe { ext::zcnet_helper_put_net(self.as_raw()) };
    }
}

/// The counters of `/proc/net/NAME` in every namespace, `N` of them; one
/// registration per module, unregistered on drop.
pub struct NetStat<const N: usize> {
    _p: PhantomData<[(); N]>,
}

/// A namespace the caller knows alive for the call: a socket's, a held
/// [`NetRef`]'s.
///
/// # Invariants
///
/// `self.0` is a live namespace for `'a`.
#[derive(Clone, Copy)]
pub struct Net<'a>(NonNull<bindings::net>, PhantomData<&'a ()>);

impl<'a> Net<'a> {
    /// # Safety
    ///
    /// `net` is valid for `'a`.
    pub(crate) unsafe fn from_raw(net: *mut bindings::net) -> Self {
        // INVARIANT: the caller guarantees `net` lives for `'a`.
        Self(
            NonNull::new(net).unwrap_or(NonNull::dangling()),
            PhantomData,
        )
    }
}

impl Net<'_> {
    /// The namespace, for a C call made while it is borrowed.
    pub(crate) fn as_raw(self) -> *mut bindings::net {
        self.0.as_ptr()
    }

    /// A counted reference to the namespace, to count into it later (from
    /// an object that outlives the call).
    pub fn to_ref(self) -> NetRef {
        // SAFETY: By the type invariant the namespace is alive for the call.
        unsafe { NetRef::get(self.0.as_ptr()) }
    }
}

impl NetRef {
    /// The namespace, borrowed.
    pub fn net(&self) -> Net<'_> {
        // INVARIANT: our reference keeps it alive while borrowed.
        Net(self.0, PhantomData)
    }
}

/// Counts gathered where one owner counts often (a connection's data path,
/// per FPDU), added to the namespace's counters at once
/// ([`NetStat::add_batch`]): an addition each here, one call for the
/// counters touched (a bit each in `dirty`), which leaves the others alone.
pub struct Batch<const N: usize> {
    /// The C side's `long`s.
    v: [isize; N],
    /// Bit `i`: `v[i]` was added to since the last flush.
    dirty: u64,
}

impl<const N: usize> Batch<N> {
    pub const fn new() -> Self {
        const { assert!(N <= 64) };
        Self {
            v: [0; N],
            dirty: 0,
        }
    }

    /// Nothing counted since the last [`NetStat::add_batch`].
    pub fn is_empty(&self) -> bool {
        self.dirty == 0
    }

    /// Adds `delta` to counter `idx` (out of range: ignored).
    pub fn add(&mut self, idx: usize, delta: i64) {
        if let Some(x) = self.v.get_mut(idx) {
            *x = x.wrapping_add(delta as isize);
            self.dirty |= 1 << idx;
        }
    }
}

impl<const N: usize> Default for Batch<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> NetStat<N> {
    /// Registers `/proc/net/NAME` with these counter names (one per module).
    pub fn register(name: &'static CStr, names: [&'static CStr; N]) -> Result<Self> {
        const { assert!(N <= ext::ZCNET_NETSTAT_MAX as usize) };
        for (i, n) in names.iter().enumerate() {
            // SAFETY: `n` is a static NUL-terminated string; the C side keeps
            // the pointer, `i` is below ZCNET_NETSTAT_MAX.
            unsafe { ext::zcnet_helper_netstat_name(i as u32, n.as_char_ptr()) };
        }
        // SAFETY: `name` is static; undone in `drop`.
        super::errno::to_result(unsafe {
            ext::zcnet_helper_netstat_register(name.as_char_ptr(), N as u32)
        })?;
        Ok(Self { _p: PhantomData })
    }

    /// Adds `delta` to counter `idx` of `net` (while the module's
    /// registration lives: only its sockets and files count).
    pub fn add(net: Net<'_>, idx: usize, delta: i64) {
        if idx < N {
            // SAFETY: `net` is alive (its invariant) and registered with the
            // pernet subsystem, which this value keeps registered.
            unsafe { ext::zcnet_helper_netstat_add(net.0.as_ptr(), idx as u32, delta as isize) };
        }
    }

    /// Adds the counts of `b` to `net` and empties it (one call for all).
    pub fn add_batch(net: Net<'_>, b: &mut Batch<N>) {
        if b.is_empty() {
            return;
        }
        // SAFETY: As in `add`; `b.v` holds `N` C longs, and `b.dirty` has
        // bits below `N` only (`Batch::add`): the C side adds and zeroes
        // those.
        unsafe {
            ext::zcnet_helper_netstat_add_all(net.0.as_ptr(), b.v.as_mut_ptr().cast(), b.dirty)
        };
        b.dirty = 0;
    }

    /// Counter `idx` of `net`, summed over the CPUs (as for `add`).
    pub fn get(net: Net<'_>, idx: usize) -> i64 {
        // SAFETY: As in `add`.
        unsafe { ext::zcnet_helper_netstat_get(net.0.as_ptr(), idx as u32) as i64 }
    }
}

impl<const N: usize> Drop for NetStat<N> {
    fn drop(&mut self) {
        // SAFETY: Registered in `register`.
        unsafe { ext::zcnet_helper_netstat_unregister() };
    }
}
