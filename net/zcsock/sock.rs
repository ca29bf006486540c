// SPDX-License-Identifier: GPL-2.0

//! The ULP `zcsock`: per-socket state, its options (`SOL_ZCSOCK`) and the
//! data calls, which go to [`crate::tx`] and [`crate::rx`].

use crate::stat;
use crate::stat::s;
use crate::zcnet::uapi::zcsock_stats;
use crate::zcnet::ulp::{Msg, TcpSock, Ulp};
use crate::{ZCSOCK_COPY_THRESHOLD, ZCSOCK_STATS};
use kernel::{
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
    transmute::AsBytes,
};

/// Sends and receives shorter than this many bytes copy (SOVIA §4.1 found
/// about 2 KiB on its hardware; see Documentation/networking/zcsock.rst).
pub(crate) const DEFAULT_COPY_THRESHOLD: u32 = 2048;

/// `TCP_CORK` (`SOL_TCP`).
const TCP_CORK: i32 = 3;

/// A socket's per-socket counters, `struct zcsock_stats` in order.
pub(crate) mod st {
    pub(crate) const TX_PAGES_BY_REF: usize = 0;
    pub(crate) const TX_BYTES_BY_REF: usize = 1;
    pub(crate) const TX_BYTES_COPIED: usize = 2;
    pub(crate) const RX_PAGES_REMAPPED: usize = 3;
    pub(crate) const RX_BYTES_REMAPPED: usize = 4;
    pub(crate) const RX_BYTES_COPIED: usize = 5;
    pub(crate) const N: usize = 6;
}

/// The state of one zcsock socket.
pub(crate) struct Ctx {
    pub(crate) copy_threshold: Atomic<u32>,
    /// The socket's cork bit is zcsock's (see [`crate::tx::page_cork`]);
    /// changed with the socket locked.
    pub(crate) cork_ours: Atomic<bool>,
    stats: [Atomic<u64>; st::N],
}

impl Ctx {
    fn new(copy_threshold: u32) -> Self {
        Self {
            copy_threshold: Atomic::new(copy_threshold),
            cork_ours: Atomic::new(false),
            stats: core::array::from_fn(|_| Atomic::new(0)),
        }
    }

    /// Counts `v` into per-socket counter `i`.
    pub(crate) fn add(&self, i: usize, v: u64) {
        if let Some(c) = self.stats.get(i) {
            c.fetch_add(v, Relaxed);
        }
    }

    fn snapshot(&self) -> zcsock_stats {
        let g = |i: usize| self.stats.get(i).map_or(0, |c| c.load(Relaxed));
        zcsock_stats {
            tx_pages_by_ref: g(st::TX_PAGES_BY_REF),
            tx_bytes_by_ref: g(st::TX_BYTES_BY_REF),
            tx_bytes_copied: g(st::TX_BYTES_COPIED),
            rx_pages_remapped: g(st::RX_PAGES_REMAPPED),
            rx_bytes_remapped: g(st::RX_BYTES_REMAPPED),
            rx_bytes_copied: g(st::RX_BYTES_COPIED),
        }
    }
}

/// Counts `n` into a socket's counter `per_socket` and its namespace's
/// counter `per_ns`.
pub(crate) fn count(sk: &TcpSock, ctx: &Ctx, per_socket: usize, per_ns: usize, n: usize) {
    if n > 0 {
        ctx.add(per_socket, n as u64);
        stat::add(sk.net(), per_ns, n as i64);
    }
}

/// The ULP.
pub(crate) struct ZcSock;

#[vtable]
impl Ulp for ZcSock {
    const NAME: &'static CStr = c"zcsock";
    const SOL: i32 = crate::SOL_ZCSOCK;
    type Ctx = Ctx;

    fn init(sk: &TcpSock) -> Result<Ctx> {
        // A live listener clones children without its lock
        // (`sk_clone_lock()` copies `sk_prot` and the ULP state before the
        // ULP is set): a child could keep state it does not own. Set before
        // `listen()`, every accepted socket inherits it (as kTLS refuses
        // sockets that are not established).
        if sk.is_listening() {
            return Err(EINVAL);
        }
        stat::add(sk.net(), s::CURR_SOCKETS, 1);
        Ok(Ctx::new(DEFAULT_COPY_THRESHOLD))
    }

    fn clone(parent: &Ctx, newsk: &TcpSock) -> Option<Ctx> {
        stat::add(newsk.net(), s::CURR_SOCKETS, 1);
        Some(Ctx::new(parent.copy_threshold.load(Relaxed)))
    }

    fn release(sk: &TcpSock, _ctx: &Ctx) {
        stat::add(sk.net(), s::CURR_SOCKETS, -1);
    }

    fn sendmsg(sk: &TcpSock, ctx: &Ctx, msg: &mut Msg, size: usize) -> i32 {
        crate::tx::sendmsg(sk, ctx, msg, size)
    }

    fn recvmsg(sk: &TcpSock, ctx: &Ctx, msg: &mut Msg, len: usize, flags: i32) -> i32 {
        crate::rx::recvmsg(sk, ctx, msg, len, flags)
    }

    fn setopt(_sk: &TcpSock, ctx: &Ctx, name: i32, val: &[u8]) -> Result {
        match name {
            ZCSOCK_COPY_THRESHOLD => {
                let b: [u8; 4] = val.get(..4).and_then(|b| b.try_into().ok()).ok_or(EINVAL)?;
                ctx.copy_threshold.store(u32::from_ne_bytes(b), Relaxed);
                Ok(())
            }
            ZCSOCK_STATS => Err(EINVAL),
            _ => Err(crate::zcnet::errno::enoprotoopt()),
        }
    }

    fn tcp_option_set(_sk: &TcpSock, ctx: &Ctx, name: i32) {
        // The application's own TCP_CORK: the bit is its own from now on.
        if name == TCP_CORK {
            ctx.cork_ours.store(false, Relaxed);
        }
    }

    fn getopt(_sk: &TcpSock, ctx: &Ctx, name: i32, out: &mut [u8]) -> Result<usize> {
        let put = |out: &mut [u8], b: &[u8]| {
            let n = b.len().min(out.len());
            out[..n].copy_from_slice(&b[..n]);
            n
        };
        match name {
            ZCSOCK_COPY_THRESHOLD => Ok(put(out, &ctx.copy_threshold.load(Relaxed).to_ne_bytes())),
            ZCSOCK_STATS => Ok(put(out, ctx.snapshot().as_bytes())),
            _ => Err(crate::zcnet::errno::enoprotoopt()),
        }
    }
}
