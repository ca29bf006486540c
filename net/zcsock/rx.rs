// SPDX-License-Identifier: GPL-2.0

//! Receiving. This increment copies (TCP's own `recvmsg`), counted; page
//! remapping into regions comes next (Documentation/networking/zcsock.rst).

use crate::sock::{st, Ctx};
use crate::stat::s;
use crate::zcnet::ulp::{Msg, TcpSock};
use crate::STATS;

/// `MSG_PEEK`: the bytes stay queued.
const MSG_PEEK: i32 = 2;

/// The ULP's `recvmsg`.
pub(crate) fn recvmsg(sk: &TcpSock, ctx: &Ctx, msg: &mut Msg, len: usize, flags: i32) -> i32 {
    let r = sk.base_recvmsg(msg, len, flags);
    if r > 0 && flags & MSG_PEEK == 0 {
        ctx.add(st::RX_BYTES_COPIED, r as u64);
        STATS.add(sk.net(), s::RX_BYTES_COPIED, i64::from(r));
    }
    r
}
