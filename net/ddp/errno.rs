// SPDX-License-Identifier: GPL-2.0

//! Error codes zcddp returns that `kernel::error::code` does not declare.

use kernel::{bindings, error::Error};

fn e(n: u32) -> Error {
    Error::from_errno(-(n as i32))
}

pub(crate) use crate::zcnet::errno::{enoprotoopt, eopnotsupp};

/// `ENOTCONN`: the socket is not connected.
pub(crate) fn enotconn() -> Error {
    e(bindings::ENOTCONN)
}

/// `EALREADY`: start-up ran or runs.
pub(crate) fn ealready() -> Error {
    e(bindings::EALREADY)
}

/// `EPROTO`: the peer broke the protocol.
pub(crate) fn eproto() -> Error {
    e(bindings::EPROTO)
}

/// `ECONNREFUSED`: a side refused the connection's parameters.
pub(crate) fn econnrefused() -> Error {
    e(bindings::ECONNREFUSED)
}

/// `ENOSPC`: a queue is full.
pub(crate) fn enospc() -> Error {
    e(bindings::ENOSPC)
}

/// `ENOBUFS`: a `MSG_ZEROCOPY` send found no notification (socket option
/// memory, `RLIMIT_MEMLOCK`).
pub(crate) fn enobufs() -> Error {
    e(bindings::ENOBUFS)
}
