// SPDX-License-Identifier: GPL-2.0

//! The running kernel: its release string and its random numbers.
//!
//! Both are reached through the bindings directly (an exported variable and
//! an exported function), so this file needs no C helper.

use super::ext;
use kernel::{bindings, prelude::*};

/// A random number from the kernel's CSPRNG (`get_random_u32`): admission
/// tokens, which a station that did not see the request must not guess.
pub fn random_u32() -> u32 {
    // SAFETY: `get_random_u32` takes no argument and may be called from any
    // context (it uses per-CPU batches under a local lock).
    unsafe { bindings::get_random_u32() }
}

/// The release string of the running kernel (`uname -r`).
pub fn kernel_release() -> &'static CStr {
    // SAFETY: `init_uts_ns` is a static that lives as long as the kernel;
    // `name.release` is a plain NUL-terminated array of it, set at build time
    // and never written (sethostname and setdomainname change other fields),
    // so a shared `'static` view of it is sound. Only its address is taken
    // here, no reference to the `static mut` as a whole.
    unsafe {
        let release = core::ptr::addr_of!(ext::init_uts_ns.name.release);
        CStr::from_char_ptr(release.cast())
    }
}
