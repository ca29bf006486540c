// SPDX-License-Identifier: GPL-2.0

//! Receiving (paper §3.2.1): when the next bytes of the stream are a whole
//! page-aligned page in an skb fragment (what zcfrag delivers), or in pieces
//! of one in consecutive fragments or skbs (a sender's page by reference on
//! loopback or veth, its segment cut inside the page), and the
//! destination is a page-aligned page of a region, the page itself goes into
//! the region at that address; everything else is copied. The replaced
//! region page is freed (or lives on where it is still held).

use crate::sock::{count, st, Ctx};
use crate::stat;
use crate::stat::s;
use crate::zcnet::mapdev;
use crate::zcnet::ulp::{Msg, PageAt, Received, RxSkb, TcpSock, Took};
use kernel::{page::PAGE_SIZE, prelude::*, sync::atomic::Relaxed};

/// `MSG_PEEK`: the bytes stay queued.
const MSG_PEEK: i32 = 0x2;
/// `MSG_PEEK`, `MSG_OOB`, `MSG_TRUNC`, `MSG_ERRQUEUE`: TCP's own recvmsg.
const MSG_SPECIAL: i32 = MSG_PEEK | 0x1 | 0x20 | 0x2000;

/// How many bytes to copy at user position `upos` when no page is mapped
/// there: up to the next user page boundary, so that the following bytes
/// can land page-aligned.
pub(crate) fn copy_len(upos: usize, avail: usize) -> usize {
    let to_boundary = PAGE_SIZE - upos % PAGE_SIZE;
    avail.min(to_boundary)
}

/// The ULP's `recvmsg`.
pub(crate) fn recvmsg(sk: &TcpSock, ctx: &Ctx, msg: &mut Msg, len: usize, flags: i32) -> i32 {
    let plain = msg.plain_user();
    // A receive of nothing is TCP's (its errors).
    let (addr, ulen) = match plain {
        Some((a, l, _))
            if flags & MSG_SPECIAL == 0
                && l == len
                && len > 0
                && len >= ctx.copy_threshold.load(Relaxed) as usize =>
        {
            (a, l)
        }
        _ => return copied(sk, ctx, sk.base_recvmsg(msg, len, flags), flags),
    };
    let (mut pages, mut mapped_bytes, mut copied_bytes) = (0usize, 0usize, 0usize);
    let mut refused = 0usize;
    let mut upos = addr;
    // Remapped pages leave the old ones' mappings together (dropped last).
    let mut batch = mapdev::RxBatch::new();
    let mut take = |skb: &RxSkb<'_>, off: u32, n: usize, defer_ok: bool| -> Result<Took> {
        let left = addr + ulen - upos;
        let n = n.min(left);
        // A whole page, maybe in pieces across skbs: said taken whole; the
        // first pieces of one wait for the rest where the call allows.
        if upos % PAGE_SIZE == 0 && left >= PAGE_SIZE {
            match skb.page_at(off) {
                PageAt::Whole(page) => {
                    if mapdev::install_user(upos, &page, &mut batch)? {
                        upos += PAGE_SIZE;
                        pages += 1;
                        mapped_bytes += PAGE_SIZE;
                        return Ok(Took::Bytes(PAGE_SIZE));
                    }
                }
                PageAt::Head if defer_ok => return Ok(Took::Defer),
                // Copied: a page others may write never enters a region.
                PageAt::Refused => refused += 1,
                PageAt::Head | PageAt::No => {}
            }
        }
        let k = copy_len(upos, n);
        skb.copy_to_user(off, upos, k)?;
        upos += k;
        copied_bytes += k;
        Ok(Took::Bytes(k))
    };
    let r = match sk.recv_with(ulen, flags, &mut take) {
        Received::Done(r) => r,
        Received::Fallback => return copied(sk, ctx, sk.base_recvmsg(msg, len, flags), flags),
    };
    if r > 0 {
        // recvmsg's caller advances the message's iterator by the result.
        msg.advance(r as usize);
    }
    // Counted: what the call returned, never more.
    let got = r.max(0) as usize;
    let mapped_bytes = mapped_bytes.min(got);
    let pages = pages.min(mapped_bytes / PAGE_SIZE);
    let copied_bytes = copied_bytes.min(got - mapped_bytes);
    if refused > 0 {
        stat::add(sk.net(), s::RX_PAGES_REFUSED, refused as i64);
    }
    if pages > 0 {
        count(sk, ctx, st::RX_PAGES_REMAPPED, s::RX_PAGES_REMAPPED, pages);
        ctx.add(st::RX_BYTES_REMAPPED, mapped_bytes as u64);
    }
    count(
        sk,
        ctx,
        st::RX_BYTES_COPIED,
        s::RX_BYTES_COPIED,
        copied_bytes,
    );
    r
}

/// Counts what TCP's own recvmsg copied (not a peek).
fn copied(sk: &TcpSock, ctx: &Ctx, r: i32, flags: i32) -> i32 {
    if r > 0 && flags & MSG_PEEK == 0 {
        count(sk, ctx, st::RX_BYTES_COPIED, s::RX_BYTES_COPIED, r as usize);
    }
    r
}
