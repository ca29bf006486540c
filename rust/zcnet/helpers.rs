// SPDX-License-Identifier: GPL-2.0

//! Safe access to the C helpers of `rust/helpers/module.c`.

use super::ext;
use kernel::prelude::*;

/// A random number from the kernel's CSPRNG (`get_random_u32`): admission
/// tokens, which a station that did not see the request must not guess.
pub fn random_u32() -> u32 {
    // SAFETY: `get_random_u32` takes no argument and may be called from any
    // context (it uses per-CPU batches under a local lock).
    unsafe { ext::zcnet_helper_random_u32() }
}

/// The release string of the running kernel (`uname -r`).
pub fn kernel_release() -> &'static CStr {
    // SAFETY: `zcnet_helper_kernel_release` returns `init_utsname()->release`, a
    // NUL-terminated string in static storage that lives as long as the kernel.
    unsafe { CStr::from_char_ptr(ext::zcnet_helper_kernel_release().cast()) }
}
