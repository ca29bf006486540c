// SPDX-License-Identifier: GPL-2.0

//! zcsock: copy-on-write, page-remapping zero-copy TCP sockets
//! (Documentation/networking/zcsock.rst).
//!
//! - `setsockopt(fd, SOL_TCP, TCP_ULP, "zcsock")` turns it on for a socket
//!   ([`sock`]); accepted sockets of a listener inherit it.
//! - `mmap()` of `/dev/zcsock` gives a region, memory mapped in user and
//!   kernel space ahead of time ([`region`]).
//! - Sends from a region hand whole pages to TCP by reference, copy-on-write
//!   protected ([`tx`]); receives copy for now ([`rx`]).
//! - `/proc/net/zcsock_stat` counts per namespace ([`stat`]); `getsockopt`
//!   at `SOL_ZCSOCK` per socket.

use kernel::prelude::*;

/// The files of zcnet's kernel layer (`rust/zcnet/`) this module uses; their
/// C helpers are in `zcsock_helpers.c`.
#[path = "../../rust/zcnet"]
#[allow(dead_code, unreachable_pub)]
mod zcnet {
    pub mod counters;
    pub mod errno;
    pub mod ext;
    pub mod helpers;
    pub mod mapdev;
    pub mod memlock;
    pub mod netstat;
    pub mod pageref;
    pub mod uapi;
    pub mod ulp;
}

mod region;
mod rx;
mod sock;
mod stat;
mod tx;

use stat::{NAMES, NSTATS};
use zcnet::netstat::NetStat;

module! {
    type: Module,
    name: "zcsock",
    authors: ["zcnet developers"],
    description: "zcnet copy-on-write zero-copy TCP sockets",
    license: "GPL",
    alias: ["tcp-ulp-zcsock"],
}

/// `SOL_ZCSOCK` and the option names (`include/uapi/zcnet/zcsock.h`).
const SOL_ZCSOCK: i32 = zcnet::ext::SOL_ZCSOCK as i32;
const ZCSOCK_STATS: i32 = zcnet::ext::ZCSOCK_STATS as i32;
const ZCSOCK_COPY_THRESHOLD: i32 = zcnet::ext::ZCSOCK_COPY_THRESHOLD as i32;

#[pin_data]
struct Module {
    // Dropped in declaration order: the ULP and the device go before the
    // counters they count into.
    #[pin]
    ulp: zcnet::ulp::Registration<sock::ZcSock>,
    _dev: zcnet::mapdev::Registration<region::Regions>,
    _stats: NetStat<NSTATS>,
}

impl kernel::InPlaceModule for Module {
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            _stats: NetStat::register(c"zcsock_stat", NAMES)?,
            _dev: zcnet::mapdev::Registration::register(c"zcsock", module)?,
            ulp <- zcnet::ulp::Registration::register(module),
        })
    }
}
