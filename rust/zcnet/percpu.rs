// SPDX-License-Identifier: GPL-2.0

//! Named event counters kept per CPU, for a datapath's hot counters: a
//! count is a `this_cpu_add` (no cache line shared between CPUs, safe in any
//! context), a read sums the CPUs. Gauges (a value set, not counted: slots
//! in use) live beside them in one relaxed atomic each. The same name table
//! as [`super::counters`] gives `ethtool -S` its strings and values.
//!
//! C header: [`include/linux/percpu.h`](srctree/include/linux/percpu.h)

use super::counters::MAX_NAME_LEN;
use super::ext;
use core::{fmt, ptr::NonNull};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};

/// A set of named per-CPU counters; `N` is the length of the name table.
///
/// # Invariants
///
/// `pc` is a live counter block of `N` counters per CPU, owned by `self`
/// and freed on drop.
pub struct PerCpuCounters<const N: usize> {
    names: &'static [&'static str; N],
    pc: NonNull<ext::zcnet_percpu>,
    gauges: [Atomic<u64>; N],
}

// SAFETY: The counter block may be used from any context on any CPU: adds
// are per-CPU operations, reads only load.
unsafe impl<const N: usize> Send for PerCpuCounters<N> {}
// SAFETY: As above.
unsafe impl<const N: usize> Sync for PerCpuCounters<N> {}

impl<const N: usize> PerCpuCounters<N> {
    /// Counters for `names`, all zero. May sleep.
    pub fn new(names: &'static [&'static str; N]) -> Result<Self> {
        if names.iter().any(|n| n.len() > MAX_NAME_LEN) {
            return Err(EINVAL);
        }
        // SAFETY: Allocates a new block; no precondition.
        let pc = NonNull::new(unsafe { ext::zcnet_helper_percpu_new(N as u32) }).ok_or(ENOMEM)?;
        // INVARIANT: the block is new, of `N` counters, and ours.
        Ok(Self {
            names,
            pc,
            gauges: [const { Atomic::new(0u64) }; N],
        })
    }

    /// Adds `v` to counter `i` on this CPU (an index out of range is
    /// ignored).
    #[inline]
    pub fn add(&self, i: usize, v: u64) {
        if i < N {
            // SAFETY: By the type invariant the block is live; `i` is in it.
            unsafe { ext::zcnet_helper_percpu_add(self.pc.as_ptr(), i as u32, v) }
        }
    }

    /// Adds one to counter `i`.
    #[inline]
    pub fn inc(&self, i: usize) {
        self.add(i, 1);
    }

    /// Sets gauge `i` to `v` (a gauge is only ever set, never added to).
    #[inline]
    pub fn set(&self, i: usize, v: u64) {
        if let Some(g) = self.gauges.get(i) {
            g.store(v, Relaxed);
        }
    }

    /// Reads counter or gauge `i` (zero when `i` is out of range).
    pub fn get(&self, i: usize) -> u64 {
        let Some(g) = self.gauges.get(i) else {
            return 0;
        };
        // SAFETY: By the type invariant the block is live; `i` is in it.
        let sum = unsafe { ext::zcnet_helper_percpu_sum(self.pc.as_ptr(), i as u32) };
        sum.wrapping_add(g.load(Relaxed))
    }

    /// The number of counters.
    pub const fn len(&self) -> usize {
        N
    }

    /// The counter names, in order.
    pub fn names(&self) -> &'static [&'static str; N] {
        self.names
    }

    /// Copies the values into `out` (as `ethtool_ops.get_ethtool_stats`
    /// wants); returns how many were copied.
    pub fn snapshot(&self, out: &mut [u64]) -> usize {
        let n = out.len().min(N);
        for (i, o) in out.iter_mut().enumerate().take(n) {
            *o = self.get(i);
        }
        n
    }
}

impl<const N: usize> Drop for PerCpuCounters<N> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the block is ours; nothing uses it
        // after `self`.
        unsafe { ext::zcnet_helper_percpu_free(self.pc.as_ptr()) }
    }
}

/// One `name value` line per counter, the format of the debugfs and sysfs
/// files.
impl<const N: usize> fmt::Debug for PerCpuCounters<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        super::counters::write_lines(f, self.names, |i| self.get(i))
    }
}
