// SPDX-License-Identifier: GPL-2.0

//! zcsock: copy-on-write, page-remapping zero-copy TCP sockets.
//!
//! This is the skeleton its issue grows: it registers the TCP upper-layer
//! protocol `zcsock` (so `setsockopt(SOL_TCP, TCP_ULP, "zcsock")` reaches this module
//! and is refused with `EOPNOTSUPP` for now) and counts what it sees in
//! `/sys/kernel/debug/zcsock/counters`.

use kernel::{debugfs, prelude::*};

/// The files of zcnet's kernel layer (`rust/zcnet/`) this module uses (none
/// of them calls a C helper).
#[path = "../../rust/zcnet"]
#[allow(dead_code, unreachable_pub)]
mod zcnet {
    pub mod counters;
    pub mod errno;
    pub mod ext;
    pub mod helpers;
    pub mod ulp;
}

use zcnet::counters::Counters;

module! {
    type: Module,
    name: "zcsock",
    authors: ["zcnet developers"],
    description: "zcnet zero-copy TCP sockets (skeleton)",
    license: "GPL",
}

const ULP_INIT_CALLS: usize = 0;
const ULP_INIT_REFUSED: usize = 1;
static COUNTERS: Counters<2> = Counters::new(&["ulp_init_calls", "ulp_init_refused"]);

struct Ulp;

impl zcnet::ulp::Ulp for Ulp {
    const NAME: &'static CStr = c"zcsock";

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
        let dir = debugfs::Dir::new(c"zcsock");
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
