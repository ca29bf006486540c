// SPDX-License-Identifier: GPL-2.0

//! Memory pinned on behalf of user space, charged to the user
//! (`user_struct::locked_vm`) against `RLIMIT_MEMLOCK`, as io_uring's
//! `__io_account_mem` and AF_XDP's `xdp_umem_account_pages` do: the charge
//! follows the user, so pages pinned by a process that exited (a
//! registration on a socket shared with another process) still count
//! against its limit. `CAP_IPC_LOCK` is exempt. Every zcnet part that pins
//! user pages beyond a system call takes its charge here, before it
//! allocates anything for them.
//!
//! C header: [`rust/helpers/memlock.h`](../helpers/memlock.h)

use super::errno::to_result;
use super::ext;
use core::ptr;
use kernel::{bindings, prelude::*};

/// Pages charged to the calling user, given back on drop.
///
/// # Invariants
///
/// `self.user` is null (exempt: nothing charged) or a user this value
/// holds one reference to and `self.pages` pages of whose `locked_vm` it
/// owns.
pub struct MemlockCharge {
    user: *mut bindings::user_struct,
    pages: usize,
}

// SAFETY: The charge is an atomic count and a reference, both given back
// from any thread (`free_uid` may be called from any context).
unsafe impl Send for MemlockCharge {}
// SAFETY: `&MemlockCharge` reads only its fields.
unsafe impl Sync for MemlockCharge {}

impl MemlockCharge {
    /// Charges `pages` to the calling user; or, nothing charged and a
    /// rate-limited kernel log line saying why, as `mlock(2)` fails: `EPERM`
    /// when its `RLIMIT_MEMLOCK` is 0, `ENOMEM` over it (or more pages than
    /// the machine has).
    pub fn new(pages: usize) -> Result<Self> {
        let mut user = ptr::null_mut();
        // SAFETY: Runs in the calling task (`current`); `user` is writable.
        to_result(unsafe { ext::zcnet_helper_memlock_charge(pages, &mut user) })?;
        // INVARIANT: the helper took a reference and the charge (or neither:
        // null).
        Ok(Self { user, pages })
    }

    /// The pages the charge covers (counted also when exempt).
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// Gives the charge to C code that gives it back with
    /// `zcnet_helper_memlock_uncharge(user, pages)`: the user (null when
    /// exempt).
    pub(crate) fn into_raw(self) -> *mut bindings::user_struct {
        let user = self.user;
        core::mem::forget(self);
        user
    }

    /// The user, for a C call that may take the charge over
    /// ([`MemlockCharge::into_raw`] once it did).
    pub(crate) fn as_raw(&self) -> *mut bindings::user_struct {
        self.user
    }
}

impl Drop for MemlockCharge {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the charge and the reference (or
        // neither, null) are ours.
        unsafe { ext::zcnet_helper_memlock_uncharge(self.user, self.pages) };
    }
}
