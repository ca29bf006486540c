// SPDX-License-Identifier: GPL-2.0

//! Registered memory (Balaji §4.4.1): user pages pinned long-term, charged
//! to `RLIMIT_MEMLOCK`, mapped into the kernel once at registration, and
//! released from a workqueue ([`ReleaseQueue`], which the module owns and
//! drains on unload).
//!
//! C header: [`rust/helpers/ddp_mem.h`](../helpers/ddp_mem.h)

use super::errno::to_result;
use super::ext;
use super::ulp::RxLocked;
use core::ptr::NonNull;
use kernel::prelude::*;

/// The workqueue registrations are released on; drained and destroyed on
/// drop (module exit, after every socket is gone).
pub struct ReleaseQueue(());

impl ReleaseQueue {
    /// Creates it (once per module).
    pub fn new() -> Result<Self> {
        // SAFETY: No argument; called once, at module init.
        to_result(unsafe { ext::zcnet_helper_ddp_mem_init() })?;
        Ok(Self(()))
    }
}

impl Drop for ReleaseQueue {
    fn drop(&mut self) {
        // SAFETY: Created in `new`; `destroy_workqueue` runs the queued
        // releases first. No registration outlives the module's sockets.
        unsafe { ext::zcnet_helper_ddp_mem_fini() };
    }
}

/// A registration: pinned, charged, mapped pages of the calling process.
///
/// # Invariants
///
/// `self.0` is a registration from `zcnet_helper_ddp_mr_pin`, owned by this
/// value until `drop` queues its release.
pub struct Mr(NonNull<ext::zcnet_ddp_mr>);

// SAFETY: The registration holds its own references (pages, mm); it may be
// used and released from any thread.
unsafe impl Send for Mr {}
// SAFETY: `&Mr` offers `pages` (a constant field), and copies, CRCs and
// sends of the registered bytes, done by the C helpers with `memcpy`,
// `crc32c` and TCP's page references: the bytes are user memory that the
// owner may change at any time anyway; no Rust reference to them exists.
unsafe impl Sync for Mr {}

impl Mr {
    /// Pins `len` bytes at `uaddr` of the caller's memory (writable pages
    /// when `write`): `ENOMEM` past `RLIMIT_MEMLOCK`, `EFAULT`, `EINVAL`.
    pub fn pin(uaddr: usize, len: usize, write: bool) -> Result<Self> {
        let mut err = 0;
        // SAFETY: The helper checks the range (`access_ok`, overflow) and
        // pins through the caller's own mm.
        let p = unsafe { ext::zcnet_helper_ddp_mr_pin(uaddr, len, write, &mut err) };
        match NonNull::new(p) {
            // INVARIANT: a registration the helper made for us.
            Some(p) => Ok(Self(p)),
            None => Err(Error::from_errno(if err < 0 { err } else { -22 })),
        }
    }

    /// Pages pinned.
    pub fn pages(&self) -> usize {
        // SAFETY: By the type invariant the registration is live.
        unsafe { ext::zcnet_helper_ddp_mr_pages(self.0.as_ptr()) as usize }
    }

    /// Copies the registration's bytes at `off` into `buf`.
    pub fn read(&self, off: u64, buf: &mut [u8]) -> Result {
        // SAFETY: The registration is live (type invariant); the helper
        // checks `off + len` against its length; `buf` is writable.
        to_result(unsafe {
            ext::zcnet_helper_ddp_mr_copy(
                self.0.as_ptr(),
                off,
                buf.as_mut_ptr().cast(),
                buf.len(),
                false,
            )
        })
    }

    /// The 32-bit word at `off` (4-byte aligned in memory, else `EINVAL`),
    /// read with acquire ordering: a ring index the application writes,
    /// whatever it wrote before it visible after. Untrusted: any value.
    pub fn load_u32(&self, off: u64) -> Result<u32> {
        let mut v = 0u32;
        // SAFETY: The registration is live (type invariant); the helper
        // checks the range and alignment; `v` is writable.
        to_result(unsafe { ext::zcnet_helper_ddp_mr_load_u32(self.0.as_ptr(), off, &mut v) })?;
        Ok(v)
    }

    /// Writes the 32-bit word at `off` (4-byte aligned in memory, else
    /// `EINVAL`) with release ordering: a ring index the application
    /// reads, everything written into the registration before it visible
    /// first.
    pub fn store_u32(&self, off: u64, v: u32) -> Result {
        // SAFETY: As in `load_u32`.
        to_result(unsafe { ext::zcnet_helper_ddp_mr_store_u32(self.0.as_ptr(), off, v) })
    }

    /// Copies `buf` into the registration at `off`.
    pub fn write(&self, off: u64, buf: &[u8]) -> Result {
        // SAFETY: As in `read`; the helper only reads `buf` when `to_mr`.
        to_result(unsafe {
            ext::zcnet_helper_ddp_mr_copy(
                self.0.as_ptr(),
                off,
                buf.as_ptr().cast_mut().cast(),
                buf.len(),
                true,
            )
        })
    }
}

impl Mr {
    /// Feeds the `len` registered bytes at `off` to the CRC32c register
    /// `reg` (read through the kernel mapping, not copied): the new
    /// register.
    pub fn crc32c(&self, off: u64, len: usize, reg: u32) -> Result<u32> {
        let mut crc = reg;
        // SAFETY: The registration is live (type invariant); the helper
        // checks `off + len` against its length; `crc` is writable.
        to_result(unsafe { ext::zcnet_helper_ddp_mr_crc32c(self.0.as_ptr(), off, len, &mut crc) })?;
        Ok(crc)
    }

    pub(crate) fn as_raw(&self) -> *mut ext::zcnet_ddp_mr {
        self.0.as_ptr()
    }

    /// Copies `len` bytes of `sk`'s stream, at stream offset `qoff` of its
    /// receive queue ([`RxLocked::peek`]), into the registration at `off`:
    /// the one copy of in-order direct placement. `EINVAL` outside the
    /// registration, `ENODATA` when fewer bytes are queued.
    pub fn fill_from_queue(&self, off: u64, sk: &RxLocked<'_>, qoff: u32, len: usize) -> Result {
        // SAFETY: The registration is live (type invariant) and the helper
        // checks `off + len` against its length; the socket is locked
        // (`RxLocked`'s invariant), which keeps its receive queue's head.
        to_result(unsafe {
            ext::zcnet_helper_ddp_mr_from_queue(self.0.as_ptr(), off, sk.as_raw(), qoff, len)
        })
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the registration is ours; the
        // release queue outlives it (the module drains it on exit).
        unsafe { ext::zcnet_helper_ddp_mr_release(self.0.as_ptr()) };
    }
}
