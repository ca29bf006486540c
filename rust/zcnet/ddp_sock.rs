// SPDX-License-Identifier: GPL-2.0

//! Byte-exact kernel I/O on a locked TCP socket, for a ULP's own protocol
//! exchange in process context (zcddp's MPA start-up): read exactly the
//! bytes of a frame, never more (what follows belongs to the next layer),
//! and send kernel bytes, both bounded by a [`Deadline`].
//!
//! C header: [`rust/helpers/ddp_sock.h`](../helpers/ddp_sock.h)

use super::ext;
use super::ulp::{Locked, TcpSock};
use kernel::{error::to_result, prelude::*};

/// Time left for an exchange, in jiffies; the waits use it up.
pub struct Deadline(kernel::ffi::c_long);

impl Deadline {
    /// `ms` milliseconds from now.
    pub fn after_ms(ms: u32) -> Self {
        // SAFETY: A pure conversion.
        Self(unsafe { ext::zcnet_helper_ddp_ms_to_jiffies(ms) })
    }
}

impl Locked<'_> {
    /// Reads exactly `buf.len()` bytes of the stream into `buf`, waiting
    /// (lock released) until `d` runs out: `ETIMEDOUT`, `ECONNRESET` (the
    /// peer closed), `EINTR`, `ENOTCONN` or the socket's error otherwise.
    pub fn recv_exact(&self, buf: &mut [u8], d: &mut Deadline) -> Result {
        // SAFETY: By the type invariant the socket is locked; `buf` is
        // writable for its length; `d.0` is writable.
        to_result(unsafe {
            ext::zcnet_helper_ddp_recv_exact(
                self.as_raw(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut d.0,
            )
        })
    }

    /// Sends all of `buf` (copied), waiting for send space until `d` runs
    /// out.
    pub fn send_exact(&self, buf: &[u8], d: &mut Deadline) -> Result {
        // SAFETY: By the type invariant the socket is locked; `buf` is
        // readable for its length; `d.0` is writable.
        to_result(unsafe {
            ext::zcnet_helper_ddp_send_exact(
                self.as_raw(),
                buf.as_ptr().cast(),
                buf.len(),
                &mut d.0,
            )
        })
    }

    /// Hands TCP what it takes of `buf` now, never waiting: the bytes
    /// taken (maybe fewer), `EAGAIN` for none (the socket's work item runs
    /// when space frees, [`super::ulp::Ulp::work`]), or the socket's error.
    pub fn send_some(&self, buf: &[u8]) -> Result<usize> {
        // SAFETY: By the type invariant the socket is locked; `buf` is
        // readable for its length.
        let r = unsafe {
            ext::zcnet_helper_ddp_send_some(self.as_raw(), buf.as_ptr().cast(), buf.len())
        };
        to_result(r.min(0))?;
        Ok(r as usize)
    }

    /// Sets `TCP_NODELAY` (as siw does on its sockets): small FPDUs go
    /// out at once instead of waiting for the ACK of the previous one.
    pub fn nodelay(&self) {
        // SAFETY: By the type invariant the socket is locked.
        unsafe { ext::zcnet_helper_ddp_nodelay(self.as_raw()) }
    }

    /// Bytes queued for reading.
    pub fn inq(&self) -> u32 {
        // SAFETY: By the type invariant the socket is locked.
        unsafe { ext::zcnet_helper_ddp_inq(self.as_raw()) }
    }
}

impl TcpSock {
    /// Whether the socket is an established TCP connection.
    pub fn established(&self) -> bool {
        // SAFETY: The socket is live; the helper reads two fields.
        unsafe { ext::zcnet_helper_ddp_established(self.as_raw()) }
    }
}

impl Locked<'_> {
    /// Copies what the stream has queued, up to `buf.len()` bytes, without
    /// waiting: the count (0 when nothing is queued).
    pub fn recv_avail(&self, buf: &mut [u8]) -> Result<usize> {
        // SAFETY: By the type invariant the socket is locked; `buf` is
        // writable for its length.
        let r = unsafe {
            ext::zcnet_helper_ddp_recv_avail(self.as_raw(), buf.as_mut_ptr().cast(), buf.len())
        };
        to_result(r.min(0))?;
        Ok(r as usize)
    }

    /// Waits (lock released) for more bytes or for the socket to be marked
    /// readable ([`Locked::set_readable`]) -- without `data`, for any
    /// wake-up ([`Locked::wake`]) -- at most until `d` runs out: `Ok` to
    /// look again, or why nothing more can come.
    pub fn wait(&self, d: &mut Deadline, data: bool) -> Result {
        // SAFETY: By the type invariant the socket is locked; `d.0` is
        // writable.
        to_result(unsafe { ext::zcnet_helper_ddp_wait(self.as_raw(), &mut d.0, data) })
    }
}
