// SPDX-License-Identifier: GPL-2.0

//! Bottom halves, time and sysfs text: small pieces the data paths share.
//!
//! C headers: [`include/linux/bottom_half.h`](srctree/include/linux/bottom_half.h),
//! [`include/linux/timekeeping.h`](srctree/include/linux/timekeeping.h)
//!
//! `now_ns` stays here because `kernel::time::Instant` gives no nanosecond
//! value to a module (`as_nanos` is crate-private), and the speculation
//! engine keeps plain `u64` times; `TextBuf` because `kernel::str::Formatter`
//! fails a write past the end instead of cutting it, and sysfs wants what fits.

use super::ext;

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
