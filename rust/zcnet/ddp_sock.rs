// SPDX-License-Identifier: GPL-2.0

//! Byte-exact kernel I/O on a locked TCP socket, for a ULP's own protocol
//! exchange in process context (zcddp's MPA start-up): read exactly the
//! bytes of a frame, never more (what follows belongs to the next layer),
//! and send kernel bytes, both bounded by a [`Deadline`].
//!
//! C header: [`rust/helpers/ddp_sock.h`](../helpers/ddp_sock.h)

use super::ddp_mem::Mr;
use super::errno::to_result;
use super::ext;
use super::ulp::{Locked, RxLocked, TcpSock};
use kernel::prelude::*;

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
    /// `eor`: once all of `buf` is taken, later bytes start a new segment;
    /// `more`: more bytes of the segment follow at once (`MSG_MORE`).
    pub fn send_some(&self, buf: &[u8], eor: bool, more: bool) -> Result<usize> {
        // SAFETY: By the type invariant the socket is locked; `buf` is
        // readable for its length.
        let r = unsafe {
            ext::zcnet_helper_ddp_send_some(
                self.as_raw(),
                buf.as_ptr().cast(),
                buf.len(),
                eor,
                more,
            )
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

    /// Shuts the sending side, as `shutdown(SHUT_WR)`: TCP sends a FIN
    /// after what it has queued (nothing more may be sent).
    pub fn shutdown_send(&self) {
        // SAFETY: By the type invariant the socket is locked.
        unsafe { ext::zcnet_helper_ddp_shutdown_send(self.as_raw()) }
    }
}

/// What also runs in softirq ([`RxLocked`]): the receive and error queues,
/// TCP's sequence state, the log.
impl RxLocked<'_> {
    /// Logs (rate-limited) that the connection is terminated with a
    /// Terminate of this layer, type and code, the received stream parsed
    /// up to byte `pos` (counted after start-up), with the DDP/RDMAP header
    /// of the faulting segment `hdr` (up to 32 bytes shown; none if empty).
    pub fn log_term(&self, layer: u8, etype: u8, ecode: u8, pos: u32, hdr: &[u8]) {
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`); the helper only reads
        // its addresses, and `hdr` for its length at most.
        unsafe {
            ext::zcnet_helper_ddp_log_term(
                self.as_raw(),
                layer,
                etype,
                ecode,
                pos,
                hdr.as_ptr(),
                hdr.len(),
            )
        }
    }

    /// Logs (rate-limited) an FPDU of `len` bytes at stream byte `pos`
    /// whose CRC is `got` where it carries `want`, with its first bytes
    /// `head` (up to 32 shown) and where its first 16 bytes occur again
    /// inside it, if that was looked for and they do.
    pub fn log_crc(
        &self,
        pos: u32,
        len: u32,
        got: u32,
        want: u32,
        head: &[u8],
        recurs: Option<usize>,
    ) {
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`); `head` is valid for
        // its length, which the helper reads at most.
        unsafe {
            ext::zcnet_helper_ddp_log_crc(
                self.as_raw(),
                pos,
                len,
                got,
                want,
                head.as_ptr(),
                head.len(),
                recurs.map_or(-1, |r| r.min(i32::MAX as usize) as i32),
            )
        }
    }

    /// The MSS TCP sends with now.
    pub fn mss(&self) -> u32 {
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`).
        unsafe { ext::zcnet_helper_ddp_mss(self.as_raw()) }
    }

    /// Bytes queued for reading.
    pub fn inq(&self) -> u32 {
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`).
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

impl RxLocked<'_> {
    /// Copies what the stream has queued, up to `buf.len()` bytes, without
    /// waiting: the count (0 when nothing is queued).
    pub fn recv_avail(&self, buf: &mut [u8]) -> Result<usize> {
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`); `buf` is writable for
        // its length.
        let r = unsafe {
            ext::zcnet_helper_ddp_recv_avail(self.as_raw(), buf.as_mut_ptr().cast(), buf.len())
        };
        to_result(r.min(0))?;
        Ok(r as usize)
    }
}

impl Locked<'_> {
    /// Waits (lock released) until the stream holds at least `need` bytes
    /// (more than one when the reader left an incomplete frame queued) or
    /// the socket is marked readable ([`RxLocked::set_ready`]) -- with
    /// `need` 0, for any wake-up ([`Locked::wake`]) -- at most until `d`
    /// runs out: `Ok` to look again, or why nothing more can come.
    pub fn wait(&self, d: &mut Deadline, need: u32) -> Result {
        // SAFETY: By the type invariant the socket is locked; `d.0` is
        // writable.
        to_result(unsafe { ext::zcnet_helper_ddp_wait(self.as_raw(), &mut d.0, need) })
    }
}

/// Bytes of one skb of TCP's out-of-order queue, read where they lie
/// ([`RxLocked::ofo_next`]); valid while the socket stays locked, which
/// keeps the queue still.
pub struct OfoSeg<'a> {
    sk: &'a RxLocked<'a>,
    /// Sequence number of the first byte.
    pub seq: u32,
    /// Bytes (at most to the skb's end).
    pub len: usize,
    /// Sequence number just past the skb's data.
    pub end: u32,
}

impl<'a> OfoSeg<'a> {
    /// The first `len` bytes of it (fewer when it holds fewer).
    pub fn head(&self, len: usize) -> OfoSeg<'a> {
        OfoSeg {
            sk: self.sk,
            seq: self.seq,
            len: len.min(self.len),
            end: self.end,
        }
    }

    /// Sequence number of the byte at offset `off`, when `len` bytes from
    /// there lie in it.
    fn at(&self, off: usize, len: usize) -> Option<u32> {
        let end = off.checked_add(len)?;
        (end <= self.len).then(|| self.seq.wrapping_add(off as u32))
    }

    /// Copies the `out.len()` bytes at offset `off` into `out`: false when
    /// they are not all queued.
    pub fn read(&self, off: usize, out: &mut [u8]) -> bool {
        let Some(seq) = self.at(off, out.len()) else {
            return false;
        };
        if out.is_empty() {
            return true;
        }
        // SAFETY: By `RxLocked`'s invariant TCP's queues hold still (TCP changes its out-of-order
        // queue only under the socket lock, or with the owner absent); the helper finds the skb
        // holding the bytes again and copies only from it; `out` is writable for its length.
        let r = unsafe {
            ext::zcnet_helper_ddp_ofo_read(
                self.sk.as_raw(),
                seq,
                out.as_mut_ptr().cast(),
                out.len(),
            )
        };
        r == 0
    }

    /// The CRC32c of the `len` bytes at offset `off`, computed where they
    /// lie; `None` when they are not all queued.
    pub fn crc32c(&self, off: usize, len: usize) -> Option<u32> {
        let seq = self.at(off, len)?;
        let mut crc = 0u32;
        // SAFETY: As in `read`; `crc` is writable.
        let r = unsafe { ext::zcnet_helper_ddp_ofo_crc32c(self.sk.as_raw(), seq, len, &mut crc) };
        (r == 0).then_some(crc)
    }

    /// Copies the `len` bytes at offset `off` into `mr` at `mr_off`: the
    /// one copy of out-of-order placement. `EINVAL` outside the
    /// registration or this segment, `ENODATA` when they are not all
    /// queued.
    pub fn fill(&self, mr: &Mr, mr_off: u64, off: usize, len: usize) -> Result {
        let seq = self.at(off, len).ok_or(EINVAL)?;
        // SAFETY: The registration is live (`Mr`'s invariant) and the helper checks `mr_off +
        // len` against its length; the socket is locked, as in `read`.
        to_result(unsafe {
            ext::zcnet_helper_ddp_mr_from_ofo(mr.as_raw(), mr_off, self.sk.as_raw(), seq, len)
        })
    }
}

impl RxLocked<'_> {
    /// TCP's `copied_seq` (the next byte the stream gives) and `rcv_nxt`
    /// (the next byte TCP expects).
    pub fn rcv_seqs(&self) -> (u32, u32) {
        let (mut copied, mut nxt) = (0u32, 0u32);
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`); both pointers are
        // writable.
        unsafe { ext::zcnet_helper_ddp_rcv_seqs(self.as_raw(), &mut copied, &mut nxt) };
        (copied, nxt)
    }

    /// TCP payload that TCP accepted out of order and holds in its
    /// out-of-order queue, read in place: of the first queued skb whose
    /// data ends after sequence number `from`, its bytes from `from` (or
    /// its first byte, when later) on. `None` when no such skb is queued.
    pub fn ofo_next(&self, from: u32) -> Option<OfoSeg<'_>> {
        let (mut seq, mut end) = (0u32, 0u32);
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`: TCP changes its
        // out-of-order queue only under that lock, or with the owner absent); `seq` and `end` are
        // writable.
        let r = unsafe { ext::zcnet_helper_ddp_ofo_next(self.as_raw(), from, &mut seq, &mut end) };
        (r > 0).then(|| OfoSeg {
            sk: self,
            seq,
            len: end.wrapping_sub(seq) as usize,
            end,
        })
    }

    /// The socket's receive path runs ([`TcpSock::kick_rx`]) when a TCP
    /// segment with payload arrives for it ahead of `rcv_nxt` (`on`), or no
    /// longer; off by itself when the socket closes. Needs the module's [`super::ulp::OfoHook`].
    pub fn set_ofo_kick(&self, on: bool) {
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`); its ULP data is live
        // in the ULP's callbacks.
        unsafe { ext::zcnet_helper_tcp_ulp_set_ofo_kick(self.as_raw(), on) }
    }
}

/// A `MSG_ZEROCOPY` notification ([`Locked::zc_reap`]).
pub struct ZcNote {
    /// The first and last notification id of the range (inclusive; ids
    /// wrap).
    pub lo: u32,
    /// See `lo`.
    pub hi: u32,
    /// The kernel copied the data instead (`SO_EE_CODE_ZEROCOPY_COPIED`).
    pub copied: bool,
}

impl Locked<'_> {
    /// Sends with `MSG_ZEROCOPY` from now on (see
    /// `zcnet_helper_tcp_ulp_zerocopy()`): false without a work item.
    pub fn zerocopy_on(&self) -> bool {
        // SAFETY: By the type invariant the socket is locked; its ULP data
        // is live in the ULP's callbacks.
        unsafe { ext::zcnet_helper_tcp_ulp_zerocopy(self.as_raw()) }
    }

    /// Hands TCP the `len` registered bytes of `mr` at `off` by reference
    /// (`MSG_ZEROCOPY`, never waiting; `more`: `MSG_MORE`): the bytes taken
    /// and the notification id the call consumed (whenever it took bytes),
    /// or `EAGAIN` (no space), `ENOBUFS` (no notification), the socket's
    /// error. TCP holds a reference on each page until its skbs are freed.
    pub fn send_zc(
        &self,
        mr: &Mr,
        off: u64,
        len: usize,
        more: bool,
    ) -> Result<(usize, Option<u32>)> {
        let (mut id, mut used) = (0u32, false);
        // SAFETY: By the type invariant the socket is locked; `mr` is a live
        // registration (borrowed for the call; TCP takes its own page
        // references); the helper checks `off + len`; `id` and `used` are
        // writable.
        let r = unsafe {
            ext::zcnet_helper_ddp_send_zc(
                self.as_raw(),
                mr.as_raw(),
                off,
                len,
                more,
                &mut id,
                &mut used,
            )
        };
        to_result(r.min(0))?;
        Ok((r as usize, used.then_some(id)))
    }
}

impl RxLocked<'_> {
    /// The next `MSG_ZEROCOPY` notification queued on the socket's error
    /// queue (other entries are dropped), if any.
    pub fn zc_reap(&self) -> Option<ZcNote> {
        let (mut lo, mut hi, mut copied) = (0u32, 0u32, false);
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`; the error queue has
        // its own lock); the pointers are writable.
        let r =
            unsafe { ext::zcnet_helper_ddp_zc_reap(self.as_raw(), &mut lo, &mut hi, &mut copied) };
        (r > 0).then_some(ZcNote { lo, hi, copied })
    }
}

/// In-order direct placement reads TCP's receive queue in place: stream
/// offsets below count from `copied_seq`, the next byte the stream gives.
impl RxLocked<'_> {
    /// Copies the queued bytes at stream offset `off` into `buf`, leaving
    /// them queued: `false` when fewer are queued.
    pub fn peek(&self, off: u32, buf: &mut [u8]) -> Result<bool> {
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`: TCP changes its
        // receive queue's head only under that lock); `buf` is writable for its length.
        let r = unsafe {
            ext::zcnet_helper_ddp_peek(self.as_raw(), off, buf.as_mut_ptr().cast(), buf.len())
        };
        no_data(r)
    }

    /// The CRC32c of the `len` queued bytes at stream offset `off`, read
    /// in place (`None` when fewer are queued).
    pub fn queue_crc32c(&self, off: u32, len: usize) -> Result<Option<u32>> {
        let mut crc = 0u32;
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`); `crc` is writable.
        let r = unsafe { ext::zcnet_helper_ddp_queue_crc32c(self.as_raw(), off, len, &mut crc) };
        Ok(no_data(r)?.then_some(crc))
    }

    /// Consumes `len` bytes of the stream without copying them (TCP's
    /// window opens as with a read): the bytes consumed.
    pub fn consume(&self, len: usize) -> Result<usize> {
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`).
        let r = unsafe { ext::zcnet_helper_ddp_consume(self.as_raw(), len) };
        to_result(r.min(0))?;
        Ok(r as usize)
    }

    /// The socket's receive buffer (`sk_rcvbuf`), in bytes.
    pub fn rcvbuf(&self) -> usize {
        // SAFETY: By the type invariant the socket is live; one field read.
        unsafe { ext::zcnet_helper_ddp_rcvbuf(self.as_raw()) as usize }
    }

    /// Whether TCP holds segments out of order (a hole before them).
    pub fn ofo_queued(&self) -> bool {
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`); the helper reads its
        // out-of-order queue's root.
        unsafe { ext::zcnet_helper_ddp_ofo_queued(self.as_raw()) }
    }

    /// Whether a reader may leave the queued bytes and wait for `missing`
    /// more: nothing is held out of order, receive memory is under half
    /// the buffer, and the window advertised lets the peer send them (TCP
    /// opens its window only as bytes are read, and drops what it has no
    /// memory for).
    pub fn can_wait(&self, missing: usize) -> bool {
        let m = u32::try_from(missing).unwrap_or(u32::MAX);
        // SAFETY: By the type invariant TCP's queues hold still (`RxLocked`); the helper reads
        // fields of it.
        unsafe { ext::zcnet_helper_ddp_can_wait(self.as_raw(), m) }
    }
}

/// A queue walk's result: whether the bytes were there (`ENODATA`: not).
fn no_data(r: kernel::ffi::c_int) -> Result<bool> {
    if r == -(kernel::bindings::ENODATA as kernel::ffi::c_int) {
        return Ok(false);
    }
    to_result(r)?;
    Ok(true)
}
