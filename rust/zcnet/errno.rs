// SPDX-License-Identifier: GPL-2.0

//! Error codes that `kernel::error::code` does not declare.

use kernel::{bindings, error::Error};

/// `EOPNOTSUPP`: operation not supported (on this socket or device).
pub fn eopnotsupp() -> Error {
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}

/// `ENOPROTOOPT`: no such option at this socket level.
pub fn enoprotoopt() -> Error {
    Error::from_errno(-(bindings::ENOPROTOOPT as i32))
}

/// As `kernel::error::to_result`, with the check inlined. That function is
/// not `#[inline]`, so from a module every call is a call and a return even
/// for success, which the data paths pay per helper call (28 a zcddp Send
/// round trip, counted with `tools/qemu-plugin/zcinsn.c`).
#[inline(always)]
pub fn to_result(rc: kernel::ffi::c_int) -> kernel::error::Result {
    if rc < 0 {
        Err(Error::from_errno(rc))
    } else {
        Ok(())
    }
}
