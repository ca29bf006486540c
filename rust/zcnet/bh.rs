// SPDX-License-Identifier: GPL-2.0

//! Bottom halves and time: what the data paths and process context share.
//!
//! C headers: [`include/linux/bottom_half.h`](srctree/include/linux/bottom_half.h),
//! [`include/linux/timekeeping.h`](srctree/include/linux/timekeeping.h)
//!
//! `now_ns` stays here because `kernel::time::Instant` gives no nanosecond
//! value to a module (`as_nanos` is crate-private), and the speculation
//! engine keeps plain `u64` times.

use super::ext;
use kernel::bindings;

/// Monotonic time in nanoseconds (`ktime_get_ns`).
pub fn now_ns() -> u64 {
    // SAFETY: `ktime_get` may be called from any context but NMI, which no
    // zcnet code runs in.
    let t = unsafe { bindings::ktime_get() };
    // `ktime_t` is a signed count of nanoseconds; the monotonic clock starts
    // at zero and never goes back.
    t as u64
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
