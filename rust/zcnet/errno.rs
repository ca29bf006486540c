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
