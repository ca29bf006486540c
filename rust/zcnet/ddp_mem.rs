// SPDX-License-Identifier: GPL-2.0

//! Registered memory (Balaji §4.4.1): user pages pinned long-term (writable
//! only with write access), charged to the user's `RLIMIT_MEMLOCK`
//! ([`MemlockCharge`], before anything is allocated), mapped into the kernel
//! once at registration (read-only without write access), and released
//! from a workqueue ([`ReleaseQueue`], which the module owns and drains on
//! unload), where the pages are unpinned (dirtied only when writable) and
//! uncounted.
//!
//! C header: [`rust/helpers/ddp_mem.h`](../helpers/ddp_mem.h)

use super::errno::to_result;
use super::ext;
use super::memlock::MemlockCharge;
use super::netstat::Net;
use super::ulp::{Locked, RxLocked};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering},
};
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
/// `self.raw` is a registration from `zcnet_helper_ddp_mr_pin`, owned by this
/// value until `drop` queues its release. `self.base`, when not null, is
/// the kernel address of its first byte in its mapping of all pages, and
/// `self.len` its length: `[base, base + len)` stays mapped until `drop`,
/// writable only when `self.writable` (the pages pinned writable).
pub struct Mr {
    raw: NonNull<ext::zcnet_ddp_mr>,
    base: *mut u8,
    len: u64,
    writable: bool,
}

/// How [`Mr::read`] and [`Mr::write`] copy a small piece without a call.
enum Units {
    /// Whole 64-bit words from here, 8-byte aligned.
    Words(*mut u64),
    /// Bytes from here.
    Bytes(*mut u8),
}

// SAFETY: The registration holds its own references (pages, mm); it may be
// used and released from any thread.
unsafe impl Send for Mr {}
// SAFETY: `&Mr` offers `pages` (a constant field), copies, CRCs and sends
// of the registered bytes, done by the C helpers with `memcpy`, `crc32c` and
// TCP's page references, and atomic loads and stores of its words and
// bytes (`load_u32`, `store_u32`, small copies): the bytes are user memory that the owner
// may change at any time anyway; no other Rust reference to them exists.
unsafe impl Sync for Mr {}

impl Mr {
    /// Pins `len` bytes at `uaddr` of the caller's memory (writable pages,
    /// mapped writable, when `write`), charged to the calling user first
    /// (`ENOMEM` past its `RLIMIT_MEMLOCK`, nothing allocated), the pages
    /// counted in counter `pinned` of `net` until they are unpinned:
    /// `EFAULT`, `EINVAL`, `ENOMEM`.
    pub fn pin(uaddr: usize, len: usize, write: bool, net: Net<'_>, pinned: usize) -> Result<Self> {
        // SAFETY: Pure arithmetic and `access_ok` on the caller's range.
        let pages = unsafe { ext::zcnet_helper_ddp_mr_span(uaddr, len) } as usize;
        if pages == 0 {
            return Err(EINVAL);
        }
        let charge = MemlockCharge::new(pages)?;
        let mut err = 0;
        // SAFETY: The helper checks the range (`access_ok`, overflow) and
        // pins through the caller's own mm; `charge` covers the `pages` it
        // spans and is taken over only on success (below); `net` is live
        // for the call and the registration takes its own reference.
        let p = unsafe {
            ext::zcnet_helper_ddp_mr_pin(
                uaddr,
                len,
                write,
                charge.as_raw(),
                net.as_raw(),
                pinned as u32,
                &mut err,
            )
        };
        let Some(raw) = NonNull::new(p) else {
            // The charge is still ours: given back as it drops.
            return Err(Error::from_errno(if err < 0 { err } else { -22 }));
        };
        // The registration gives the charge back when it is released.
        let _ = charge.into_raw();
        let mut len = 0u64;
        // SAFETY: `raw` is the live registration just made; `len` is
        // writable.
        let base = unsafe { ext::zcnet_helper_ddp_mr_base(raw.as_ptr(), &mut len) }.cast::<u8>();
        // INVARIANT: a registration the helper made for us; its mapping (or
        // none), writable as pinned, and length, as the helper says.
        Ok(Self {
            raw,
            base,
            len,
            writable: write,
        })
    }

    /// The pages were pinned writable (and are mapped so): the only
    /// registrations anything is stored into.
    pub fn writable(&self) -> bool {
        self.writable
    }

    /// Pages pinned.
    pub fn pages(&self) -> usize {
        // SAFETY: By the type invariant the registration is live.
        unsafe { ext::zcnet_helper_ddp_mr_pages(self.raw.as_ptr()) as usize }
    }

    /// Copies the registration's bytes at `off` into `buf`.
    pub fn read(&self, off: u64, buf: &mut [u8]) -> Result {
        match self.inline_units(off, buf.len()) {
            Some(Units::Words(w)) => {
                for (i, d) in buf.chunks_exact_mut(8).enumerate() {
                    // SAFETY: `inline_units` checked that the bytes are in
                    // the registration's mapping, which stays while `self`
                    // lives (type invariant); `w` is 8-byte aligned. The
                    // application may access them at any time: they are
                    // only accessed atomically here.
                    let v = unsafe { AtomicU64::from_ptr(w.wrapping_add(i)) };
                    d.copy_from_slice(&v.load(Ordering::Relaxed).to_ne_bytes());
                }
                Ok(())
            }
            Some(Units::Bytes(b)) => {
                for (i, d) in buf.iter_mut().enumerate() {
                    // SAFETY: As for the words, one byte at a time.
                    *d = unsafe { AtomicU8::from_ptr(b.wrapping_add(i)) }.load(Ordering::Relaxed);
                }
                Ok(())
            }
            // SAFETY: The registration is live (type invariant); the helper
            // checks `off + len` against its length; `buf` is writable.
            None => to_result(unsafe {
                ext::zcnet_helper_ddp_mr_copy(
                    self.raw.as_ptr(),
                    off,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    false,
                )
            }),
        }
    }

    /// The 32-bit word at `off` (4-byte aligned in memory, else `EINVAL`),
    /// read with acquire ordering: a ring index the application writes,
    /// whatever it wrote before it visible after. Untrusted: any value.
    pub fn load_u32(&self, off: u64) -> Result<u32> {
        if let Some(w) = self.word(off) {
            return Ok(w.load(Ordering::Acquire));
        }
        let mut v = 0u32;
        // SAFETY: The registration is live (type invariant); the helper
        // checks the range and alignment; `v` is writable.
        to_result(unsafe { ext::zcnet_helper_ddp_mr_load_u32(self.raw.as_ptr(), off, &mut v) })?;
        Ok(v)
    }

    /// Writes the 32-bit word at `off` (4-byte aligned in memory, else
    /// `EINVAL`) with release ordering: a ring index the application
    /// reads, everything written into the registration before it visible
    /// first.
    pub fn store_u32(&self, off: u64, v: u32) -> Result {
        if !self.writable {
            return Err(EPERM);
        }
        if let Some(w) = self.word(off) {
            w.store(v, Ordering::Release);
            return Ok(());
        }
        // SAFETY: As in `load_u32`.
        to_result(unsafe { ext::zcnet_helper_ddp_mr_store_u32(self.raw.as_ptr(), off, v) })
    }

    /// The aligned 32-bit word at `off` in the registration's mapping, for
    /// [`Mr::load_u32`] and [`Mr::store_u32`] without a call; `None`
    /// without a mapping, out of range or unaligned (the helpers then map
    /// the page, or say `EINVAL`).
    #[inline(always)]
    fn word(&self, off: u64) -> Option<&AtomicU32> {
        let p = self.inline_at(off, 4)?;
        if p as usize % 4 != 0 {
            return None;
        }
        // SAFETY: `inline_at` checked that the 4 bytes are in the
        // registration's mapping, which stays while `self` lives (type
        // invariant); `p` is 4-byte aligned. The application may access the
        // word at any time, which is why it is only accessed atomically here.
        Some(unsafe { AtomicU32::from_ptr(p.cast()) })
    }

    /// Where the `len` bytes at `off` are in the registration's mapping,
    /// for the small copies done without a call (a completion, a posted
    /// receive, a small payload): `None` without a mapping, out of range or
    /// longer than [`Mr::INLINE_MAX`] (the helper then copies, or says
    /// `EINVAL`).
    #[inline(always)]
    fn inline_at(&self, off: u64, len: usize) -> Option<*mut u8> {
        if self.base.is_null()
            || len > Self::INLINE_MAX
            || off > self.len
            || self.len - off < len as u64
        {
            return None;
        }
        Some(self.base.wrapping_add(off as usize))
    }

    /// The longest copy [`Mr::read`] and [`Mr::write`] do without a call.
    const INLINE_MAX: usize = 64;

    /// The `len` bytes at `off` in the registration's mapping
    /// ([`Mr::inline_at`]) as 64-bit words when they are whole aligned
    /// words, else as bytes when there are at most 16 of them; `None`
    /// otherwise (the helper copies, or says `EINVAL`).
    #[inline(always)]
    fn inline_units(&self, off: u64, len: usize) -> Option<Units> {
        let p = self.inline_at(off, len)?;
        if p as usize % 8 == 0 && len % 8 == 0 {
            Some(Units::Words(p.cast()))
        } else if len <= 16 {
            Some(Units::Bytes(p))
        } else {
            None
        }
    }

    /// Copies `buf` into the registration at `off` (`EPERM` when it is
    /// read-only).
    pub fn write(&self, off: u64, buf: &[u8]) -> Result {
        if !self.writable {
            return Err(EPERM);
        }
        match self.inline_units(off, buf.len()) {
            Some(Units::Words(w)) => {
                for (i, c) in buf.chunks_exact(8).enumerate() {
                    let mut v = [0u8; 8];
                    v.copy_from_slice(c);
                    // SAFETY: As in `read`.
                    let d = unsafe { AtomicU64::from_ptr(w.wrapping_add(i)) };
                    d.store(u64::from_ne_bytes(v), Ordering::Relaxed);
                }
                Ok(())
            }
            Some(Units::Bytes(b)) => {
                for (i, v) in buf.iter().enumerate() {
                    // SAFETY: As in `read`.
                    unsafe { AtomicU8::from_ptr(b.wrapping_add(i)) }.store(*v, Ordering::Relaxed);
                }
                Ok(())
            }
            // SAFETY: As in `read`; the helper only reads `buf` when `to_mr`.
            None => to_result(unsafe {
                ext::zcnet_helper_ddp_mr_copy(
                    self.raw.as_ptr(),
                    off,
                    buf.as_ptr().cast_mut().cast(),
                    buf.len(),
                    true,
                )
            }),
        }
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
        to_result(unsafe {
            ext::zcnet_helper_ddp_mr_crc32c(self.raw.as_ptr(), off, len, &mut crc)
        })?;
        Ok(crc)
    }

    pub(crate) fn as_raw(&self) -> *mut ext::zcnet_ddp_mr {
        self.raw.as_ptr()
    }

    /// Copies `len` bytes of `sk`'s stream, at stream offset `qoff` of its
    /// receive queue ([`RxLocked::peek`]), into the registration at `off`:
    /// the one copy of in-order direct placement. `EINVAL` outside the
    /// registration, `ENODATA` when fewer bytes are queued.
    pub fn fill_from_queue(&self, off: u64, sk: &RxLocked<'_>, qoff: u32, len: usize) -> Result {
        if !self.writable {
            return Err(EPERM);
        }
        // SAFETY: The registration is live (type invariant) and the helper
        // checks `off + len` against its length; the socket is locked
        // (`RxLocked`'s invariant), which keeps its receive queue's head.
        to_result(unsafe {
            ext::zcnet_helper_ddp_mr_from_queue(self.raw.as_ptr(), off, sk.as_raw(), qoff, len)
        })
    }
}

/// The wait of `ZCDDP_DEREG_MR` for TCP to give back pages lent from a
/// registration: up to the socket's send timeout (`SO_SNDTIMEO`, as a
/// blocking send waits for room), woken by the kernel's `MSG_ZEROCOPY`
/// notifications.
pub struct LentWait(kernel::ffi::c_long);

impl LentWait {
    /// The whole send timeout of `sk` from now.
    pub fn new(sk: &Locked<'_>) -> Self {
        // SAFETY: `sk` is locked (`Locked`'s invariant); a plain read.
        Self(unsafe { ext::zcnet_helper_ddp_lent_timeo(sk.as_raw()) })
    }

    /// The linger time of `sk` from now (`SO_LINGER`; none when unset):
    /// the wait of its close.
    pub fn linger(sk: &Locked<'_>) -> Self {
        // SAFETY: `sk` is locked (`Locked`'s invariant); plain reads.
        Self(unsafe { ext::zcnet_helper_ddp_linger_timeo(sk.as_raw()) })
    }

    /// Sleeps, `sk`'s lock released meanwhile, until the socket is woken
    /// (a notification, data, an error) or the time is out (`ETIMEDOUT`
    /// when none was left); `EINTR` / `ERESTARTSYS` on a signal.
    pub fn wait(&mut self, sk: &Locked<'_>) -> Result {
        // SAFETY: `sk` is locked (`Locked`'s invariant), which the helper
        // releases while it sleeps and takes again; `self.0` is writable.
        to_result(unsafe { ext::zcnet_helper_ddp_lent_wait(sk.as_raw(), &mut self.0) })
    }
}

/// Makes TCP's close, which follows the ULP's, reset the connection and
/// drop everything it queued (a zero `SO_LINGER`), pages lent from a
/// registration included.
pub fn abort_on_close(sk: &Locked<'_>) {
    // SAFETY: `sk` is locked (`Locked`'s invariant); the helper sets a flag
    // and a field of the socket.
    unsafe { ext::zcnet_helper_ddp_abort_on_close(sk.as_raw()) };
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the registration is ours; the
        // release queue outlives it (the module drains it on exit).
        unsafe { ext::zcnet_helper_ddp_mr_release(self.raw.as_ptr()) };
    }
}
