// SPDX-License-Identifier: GPL-2.0

//! Sending: whole region pages go to TCP by reference (the region
//! write-protects them first, [`crate::region`]); unaligned heads and tails,
//! ordinary memory and sends below the copy threshold are copied by TCP.

use crate::sock::{count, st, Ctx};
use crate::stat::s;
use crate::zcnet::mapdev::{self, GRAB_MAX};
use crate::zcnet::pageref::PageRef;
use crate::zcnet::ulp::{Msg, SockGuard, TcpSock};
use kernel::{page::PAGE_SIZE, prelude::*, sync::atomic::Relaxed};

/// `MSG_MORE`: more data follows the piece being sent.
const MSG_MORE: u32 = 0x8000;

/// The next piece of a send from `pos` to `end`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Copy this many bytes (an unaligned head, a tail, ordinary memory).
    Copy(usize),
    /// Try whole pages by reference: at most this many.
    Pages(usize),
}

/// What to do with the bytes from `pos` to `end` (a user buffer): whole,
/// page-aligned pages are candidates for reference, the rest is copied.
pub(crate) fn next_piece(pos: usize, end: usize) -> Piece {
    let left = end - pos;
    let misalign = pos % PAGE_SIZE;
    if misalign != 0 {
        return Piece::Copy(left.min(PAGE_SIZE - misalign));
    }
    if left < PAGE_SIZE {
        return Piece::Copy(left);
    }
    Piece::Pages((left / PAGE_SIZE).min(GRAB_MAX))
}

/// The ULP's `sendmsg`.
pub(crate) fn sendmsg(sk: &TcpSock, ctx: &Ctx, msg: &mut Msg, size: usize) -> i32 {
    let plain = msg.plain_user();
    let (addr, len, flags) = match plain {
        // A region's pages; a send of nothing is TCP's (its errors).
        Some(p) if p.1 == size && size > 0 && size >= ctx.copy_threshold.load(Relaxed) as usize => {
            p
        }
        _ => {
            let r = sk.base_sendmsg(msg, size);
            if r > 0 {
                count_copied(sk, ctx, r as usize);
            }
            // A part page may be queued behind zcsock's cork now.
            if ctx.cork_ours.load(Relaxed) {
                let guard = sk.lock();
                let uncork = page_cork(&guard, ctx);
                drop(guard);
                if uncork {
                    sk.uncork();
                }
            }
            return r;
        }
    };
    // A buffer running into unmapped memory fails whole, before any byte
    // leaves, as TCP's copy of it does.
    if !crate::zcnet::ulp::user_readable(addr, len) {
        return EFAULT.to_errno();
    }
    let guard = sk.lock();
    // Corked from the first page on, when the queue ends on a whole page.
    let mut uncork = page_cork(&guard, ctx);
    let (sent, err) = send_locked(&guard, sk, ctx, addr, len, flags);
    uncork |= page_cork(&guard, ctx);
    drop(guard);
    if uncork {
        sk.uncork();
    }
    // What was sent counts; an error only when nothing was (as TCP does).
    if sent > 0 {
        sent.min(i32::MAX as usize) as i32
    } else {
        err.map_or(0, |e| e.to_errno())
    }
}

/// Whole pages stay whole on the wire: while the socket's unsent bytes are
/// all whole-page segments, its cork bit makes a sender held back by the
/// receive window cut at a page boundary rather than at the window's edge,
/// which would shift every later page off its segment (the receiver would
/// copy them, and zcfrag's page packets would not be the stream's pages).
/// True when the caller must uncork the socket once it is unlocked: a send
/// left a part page queued, which the cork would hold back.
pub(crate) fn page_cork(g: &SockGuard<'_>, ctx: &Ctx) -> bool {
    let mut ours = ctx.cork_ours.load(Relaxed);
    let uncork = g.page_cork(&mut ours);
    ctx.cork_ours.store(ours, Relaxed);
    uncork
}

fn count_copied(sk: &TcpSock, ctx: &Ctx, n: usize) {
    count(sk, ctx, st::TX_BYTES_COPIED, s::TX_BYTES_COPIED, n);
}

/// Sends `len` bytes from `addr`, piece by piece: bytes sent and the error
/// that stopped it early, if any.
fn send_locked(
    g: &SockGuard<'_>,
    sk: &TcpSock,
    ctx: &Ctx,
    addr: usize,
    len: usize,
    flags: u32,
) -> (usize, Option<Error>) {
    let Some(end) = addr.checked_add(len) else {
        return (0, Some(EFAULT));
    };
    let mut pos = addr;
    while pos < end {
        let (want, r) = match next_piece(pos, end) {
            Piece::Copy(n) => (n, copy(g, sk, ctx, pos, n, more(pos + n, end, flags))),
            Piece::Pages(n) => {
                let mut pages: [Option<PageRef>; GRAB_MAX] = Default::default();
                match mapdev::grab_user(pos, n, &mut pages) {
                    // Not a region: the rest is copied in one go.
                    Ok(0) => (end - pos, copy(g, sk, ctx, pos, end - pos, flags)),
                    Ok(k) => {
                        let k = k.min(n);
                        let f = more(pos + k * PAGE_SIZE, end, flags);
                        (k * PAGE_SIZE, by_ref(g, sk, ctx, &pages[..k], f))
                    }
                    Err(e) => (0, Err(e)),
                }
            }
        };
        match r {
            Ok(done) => {
                pos += done;
                if done < want {
                    break;
                }
            }
            Err(e) => return (pos - addr, Some(e)),
        }
    }
    (pos - addr, None)
}

/// `flags`, with `MSG_MORE` when bytes follow `next`.
fn more(next: usize, end: usize, flags: u32) -> u32 {
    if next < end {
        flags | MSG_MORE
    } else {
        flags
    }
}

fn copy(
    g: &SockGuard<'_>,
    sk: &TcpSock,
    ctx: &Ctx,
    pos: usize,
    n: usize,
    flags: u32,
) -> Result<usize> {
    let done = g.send_user(pos, n, flags)?;
    count_copied(sk, ctx, done);
    Ok(done)
}

fn by_ref(
    g: &SockGuard<'_>,
    sk: &TcpSock,
    ctx: &Ctx,
    pages: &[Option<PageRef>],
    flags: u32,
) -> Result<usize> {
    // TCP takes its own references; ours drop with the caller's array.
    let done = g.send_pages(pages, flags)?;
    // Pages handed over, the last maybe in part (a non-blocking send).
    count(
        sk,
        ctx,
        st::TX_PAGES_BY_REF,
        s::TX_PAGES_BY_REF,
        done.div_ceil(PAGE_SIZE),
    );
    count(sk, ctx, st::TX_BYTES_BY_REF, s::TX_BYTES_BY_REF, done);
    Ok(done)
}
