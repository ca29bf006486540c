// SPDX-License-Identifier: GPL-2.0

//! zcfrag: a fragmenting / defragmenting Ethernet device with speculative
//! defragmentation into page-aligned pages.
//!
//! This is the skeleton the zcfrag issue grows: it registers the link kind
//! `zcfrag` (so `ip link add ... type zcfrag` reaches this module and is
//! refused with `EOPNOTSUPP` for now) and counts what it sees in
//! `/sys/kernel/debug/zcfrag/counters`.

use kernel::{debugfs, prelude::*};

#[path = "../../../rust/zcnet/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod zcnet;

use zcnet::counters::Counters;

module! {
    type: ZcFrag,
    name: "zcfrag",
    authors: ["zcnet developers"],
    description: "zcnet fragmenting/defragmenting netdev (skeleton)",
    license: "GPL",
}

const NEWLINK_CALLS: usize = 0;
const NEWLINK_REFUSED: usize = 1;
static COUNTERS: Counters<2> = Counters::new(&["newlink_calls", "newlink_refused"]);

struct Link;

impl zcnet::rtnl::LinkKind for Link {
    const KIND: &'static CStr = c"zcfrag";

    fn newlink(_dev: &zcnet::rtnl::NewDevice, extack: &mut zcnet::rtnl::ExtAck) -> Result {
        COUNTERS.inc(NEWLINK_CALLS);
        COUNTERS.inc(NEWLINK_REFUSED);
        extack.set_msg(c"zcfrag: device creation is not implemented yet");
        Err(zcnet::errno::eopnotsupp())
    }
}

#[pin_data]
struct ZcFrag {
    #[pin]
    counters: debugfs::File<&'static Counters<2>>,
    #[pin]
    link: zcnet::rtnl::Registration<Link>,
    _dir: debugfs::Dir,
}

impl kernel::InPlaceModule for ZcFrag {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        let dir = debugfs::Dir::new(c"zcfrag");
        pr_info!(
            "loaded on Linux {}\n",
            zcnet::helpers::kernel_release().to_str().unwrap_or("?")
        );
        try_pin_init!(Self {
            counters <- dir.read_only_file(c"counters", &COUNTERS),
            link <- zcnet::rtnl::Registration::register(),
            _dir: dir,
        })
    }
}
