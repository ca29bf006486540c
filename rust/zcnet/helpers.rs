// SPDX-License-Identifier: GPL-2.0

//! Safe access to the C helpers of `rust/helpers/zcnet_helpers.c`.

use super::ext;
use kernel::prelude::*;

/// The release string of the running kernel (`uname -r`).
pub fn kernel_release() -> &'static CStr {
    // SAFETY: `zcnet_helper_kernel_release` returns `init_utsname()->release`, a
    // NUL-terminated string in static storage that lives as long as the kernel.
    unsafe { CStr::from_char_ptr(ext::zcnet_helper_kernel_release().cast()) }
}
