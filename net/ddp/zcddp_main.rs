// SPDX-License-Identifier: GPL-2.0

//! zcddp: DDP / RDMAP over MPA (the iWARP wire format) directly on kernel
//! TCP (Documentation/networking/zcddp.rst).
//!
//! - `setsockopt(fd, SOL_TCP, TCP_ULP, "zcddp")` on a connected socket
//!   attaches it ([`conn`]);
//! - `setsockopt(SOL_ZCDDP, ZCDDP_STARTUP)` runs MPA start-up as initiator
//!   or responder ([`startup`], decisions in `rust/wire/startup.rs`);
//! - `getsockopt(SOL_ZCDDP, ZCDDP_INFO)` reports the outcome;
//! - `/proc/net/zcddp_stat` counts per namespace ([`stat`]);
//!   `/sys/kernel/debug/zcddp/counters` counts ULP attach calls.

use kernel::{debugfs, prelude::*};

/// The files of zcnet's kernel layer (`rust/zcnet/`) this module uses; their
/// C helpers are in `zcddp_helpers.c`.
#[path = "../../rust/zcnet"]
#[allow(dead_code, unreachable_pub)]
mod zcnet {
    pub mod counters;
    pub mod ddp_mem;
    pub mod ddp_sock;
    pub mod errno;
    pub mod ext;
    pub mod helpers;
    pub mod memlock;
    pub mod netstat;
    pub mod pageref;
    pub mod trylock;
    pub mod ulp;
}

/// The pure wire codecs (`rust/wire/`), shared with the user-space tests.
#[path = "../../rust/wire/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod wire;

mod conn;
mod errno;
mod listed;
mod qp;
mod startup;
mod stat;
mod uapi;
mod verbs;

use stat::{NAMES, NSTATS};
use zcnet::counters::Counters;
use zcnet::netstat::NetStat;

module! {
    type: Module,
    name: "zcddp",
    authors: ["zcnet developers"],
    description: "zcnet DDP/RDMAP/MPA layer on kernel TCP",
    license: "GPL",
    alias: ["tcp-ulp-zcddp"],
    params: {
        ooo: u32 {
            default: 1,
            description: "Out-of-order placement on new connections (1, the default) or off (0); ZCDDP_OOO per socket",
        },
        zctx: u32 {
            default: 1,
            description: "Zero-copy transmit on new connections (1, the default: payload of 1024 B or more, without markers, goes to TCP by reference with MSG_ZEROCOPY, until the kernel reports it copied what was lent), always (2: lend even then) or off (0: copied)",
        },
        rxbh: u32 {
            default: 1,
            description: "Receive in softirq as TCP queues the data (1, the default: FPDUs placed and receives completed at once), or only in the socket's work item (0)",
        },
        rxdirect: u32 {
            default: 1,
            description: "In-order direct placement on new connections: payload copied once, from TCP's skbs into the registration (1, the default), or staged and copied three times (0)",
        },
    },
}

/// Out-of-order placement on new connections (the parameter `ooo`).
pub(crate) fn ooo_default() -> bool {
    *module_parameters::ooo.value() != 0
}

/// Zero-copy transmit on new connections (the parameter `zctx`).
pub(crate) fn zctx_default() -> bool {
    *module_parameters::zctx.value() != 0
}

/// Whether new connections lend even where the kernel reports that it
/// copied what they lent (`zctx=2`; tests and measurements).
pub(crate) fn zctx_always() -> bool {
    *module_parameters::zctx.value() == 2
}

/// Receiving in softirq (the parameter `rxbh`).
pub(crate) fn rx_bh_on() -> bool {
    *module_parameters::rxbh.value() != 0
}

/// In-order direct placement on new connections (the parameter
/// `rxdirect`).
pub(crate) fn rx_direct_default() -> bool {
    *module_parameters::rxdirect.value() != 0
}

/// The largest ULPDU zcddp sends (and takes, receiving).
pub(crate) const TX_ULPDU_MAX: usize = 8192;

const ULP_INIT_CALLS: usize = 0;
static COUNTERS: Counters<1> = Counters::new(&["ulp_init_calls"]);

/// Counts a `setsockopt(TCP_ULP, "zcddp")`.
pub(crate) fn count_init() {
    COUNTERS.inc(ULP_INIT_CALLS);
}

#[pin_data]
struct Module {
    // Dropped in declaration order: the ULP goes before the counters it
    // counts into.
    #[pin]
    ulp: zcnet::ulp::Registration<conn::ZcDdp>,
    // After the ULP (no socket of it is left): the out-of-order kicks'
    // netfilter hook.
    _ofo: zcnet::ulp::OfoHook,
    // After the sockets: drains the registrations' releases.
    _release: zcnet::ddp_mem::ReleaseQueue,
    _stats: NetStat<NSTATS>,
    #[pin]
    counters: debugfs::File<&'static Counters<1>>,
    _dir: debugfs::Dir,
}

impl kernel::InPlaceModule for Module {
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        let dir = debugfs::Dir::new(c"zcddp");
        try_pin_init!(Self {
            counters <- dir.read_only_file(c"counters", &COUNTERS),
            _dir: dir,
            _stats: NetStat::register(c"zcddp_stat", NAMES)?,
            _release: zcnet::ddp_mem::ReleaseQueue::new()?,
            _ofo: zcnet::ulp::OfoHook::register()?,
            ulp <- zcnet::ulp::Registration::register(module),
        })
    }
}
