// SPDX-License-Identifier: GPL-2.0

//! zcddp: DDP / RDMAP / MPA (iWARP wire format) beside kernel TCP.
//!
//! This is the skeleton its issue grows: it registers the TCP upper-layer
//! protocol `zcddp` (so `setsockopt(SOL_TCP, TCP_ULP, "zcddp")` reaches this module
//! and is refused with `EOPNOTSUPP` for now) and counts what it sees in
//! `/sys/kernel/debug/zcddp/counters`.

use kernel::{debugfs, prelude::*};

/// The files of zcnet's kernel layer (`rust/zcnet/`) this module uses; their
/// C helpers are in `zcddp_helpers.c`.
#[path = "../../rust/zcnet"]
#[allow(dead_code, unreachable_pub)]
mod zcnet {
    pub mod counters;
    pub mod errno;
    pub mod ext;
    pub mod helpers;
    pub mod netstat;
    pub mod pageref;
    pub mod ulp;
}

use zcnet::counters::Counters;

module! {
    type: Module,
    name: "zcddp",
    authors: ["zcnet developers"],
    description: "zcnet DDP/RDMAP/MPA layer (skeleton)",
    license: "GPL",
}

const ULP_INIT_CALLS: usize = 0;
const ULP_INIT_REFUSED: usize = 1;
static COUNTERS: Counters<2> = Counters::new(&["ulp_init_calls", "ulp_init_refused"]);

struct Ulp;

#[vtable]
impl zcnet::ulp::Ulp for Ulp {
    const NAME: &'static CStr = c"zcddp";
    type Ctx = ();

    fn init(_sk: &zcnet::ulp::TcpSock) -> Result {
        COUNTERS.inc(ULP_INIT_CALLS);
        COUNTERS.inc(ULP_INIT_REFUSED);
        Err(zcnet::errno::eopnotsupp())
    }
}

#[pin_data]
struct Module {
    #[pin]
    counters: debugfs::File<&'static Counters<2>>,
    #[pin]
    ulp: zcnet::ulp::Registration<Ulp>,
    _dir: debugfs::Dir,
}

impl kernel::InPlaceModule for Module {
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        let dir = debugfs::Dir::new(c"zcddp");
        pr_info!(
            "loaded on Linux {}\n",
            zcnet::helpers::kernel_release().to_str().unwrap_or("?")
        );
        try_pin_init!(Self {
            counters <- dir.read_only_file(c"counters", &COUNTERS),
            ulp <- zcnet::ulp::Registration::register(module),
            _dir: dir,
        })
    }
}
