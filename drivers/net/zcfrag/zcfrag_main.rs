// SPDX-License-Identifier: GPL-2.0

//! zcfrag: a fragmenting / defragmenting Ethernet device stacked on a lower
//! Ethernet device: `ip link add zf0 link eth0 type zcfrag`.
//!
//! The device offers a page-sized MTU (4096 bytes of TCP payload plus IPv4 and
//! TCP headers with timestamps: 4096 + 20 + 32 = 4148) and sends every IPv4
//! packet larger than the lower device's MTU as standard IPv4 fragments, so an
//! unmodified receiver reassembles it.
//!
//! Transmit: each fragment is a fresh Ethernet + IPv4 header followed by page
//! fragments that reference the packet's own payload pages
//! (`tx_referenced_bytes`); only payload that sits in a non-page linear head,
//! or a lower device without scatter-gather, costs a copy (`tx_copied_bytes`).
//!
//! Receive speculation (paper §3.2.3): the fragments of a packet are placed as
//! they arrive, payload straight at its offset in a page, headers apart
//! (`rust/wire/spec.rs` decides); the original fragments are held. When the
//! last one arrives the stack gets one IPv4 packet whose payload is that page
//! at offset 0; on a miss (or the timeout) the held fragments go, unchanged, to
//! the normal reassembly: nothing lost, nothing delivered twice. This front end
//! copies each fragment's payload out of the lower device's buffers into the
//! page (`rx_copied_bytes`); a device that writes into the page itself saves it.

use kernel::prelude::*;

/// The files of zcnet's kernel layer (`rust/zcnet/`) this module uses;
/// `zcfrag_helpers.c` links the C helpers they call.
#[path = "../../../rust/zcnet"]
#[allow(dead_code, unreachable_pub)]
mod zcnet {
    pub mod bh;
    pub mod counters;
    pub mod errno;
    pub mod ext;
    pub mod helpers;
    pub mod netdev;
    pub mod page;
    pub mod percpu;
    pub mod rtnl;
    pub mod skbuff;
    pub mod stacked;
    pub mod text;
    pub mod uapi;
    pub mod vnet;
}

#[path = "../../../rust/wire/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod wire;

use device::ZcFrag;
use wire::ipv4;
use zcnet::stacked;

module! {
    type: Module,
    name: "zcfrag",
    authors: ["zcnet developers"],
    description: "zcnet fragmenting/defragmenting Ethernet device",
    license: "GPL",
    alias: ["rtnl-link-zcfrag"],
}

/// Bytes of an Ethernet header.
const ETH_HLEN: usize = 14;
/// `ETH_P_IP` in network byte order, as `skb->protocol` holds it.
const ETH_P_IP_BE: u16 = (kernel::bindings::ETH_P_IP as u16).to_be();
/// `ETH_P_IPV6` in network byte order.
const ETH_P_IPV6_BE: u16 = (kernel::bindings::ETH_P_IPV6 as u16).to_be();
/// One page of TCP payload plus IPv4 (20) and TCP-with-timestamps (32) headers.
const DEFAULT_MTU: u32 = 4096 + 20 + 32;

/// Speculation slots a device can have (`slots` in sysfs: 1 to this).
const SLOTS: usize = 32;
/// Slots of a new device.
const DEFAULT_SLOTS: u32 = 8;
/// Flows the admission requester follows at once.
const REQUESTS: usize = 16;
/// Admission frames' EtherType in network byte order.
const ETH_P_ADM_BE: u16 = wire::admission::ETHERTYPE.to_be();
/// Grants idle this long are taken back (`grant_timeout_ms`).
const DEFAULT_GRANT_MS: u32 = 2000;
/// Fragments one slot holds at most: every fragment of a train but its last
/// (a page over a lower MTU of 576 needs 8 fragments, over 276 needs 17).
/// The engine misses a train that would need more (`zc_miss_too_many_fragments`).
const MAX_HELD: usize = 32;
const _: () = assert!(wire::spec::Params::DEFAULT.max_fragments == MAX_HELD + 1);
/// Receive pages kept for reuse (a page comes back once the stack is done
/// with its packet; a reader that keeps more than this many pages queued
/// makes new ones be allocated).
const PAGE_RING: usize = 64;
/// Ethernet + IPv4 (no options) + the longest transport header speculated on.
const HDR_ROOM: usize = ETH_HLEN + ipv4::MIN_HEADER_LEN + 60;

mod admit;
mod config;
mod counters;
mod device;
mod native;
mod port;
mod rx;
mod tx;

#[pin_data]
struct Module {
    #[pin]
    kind: stacked::Registration<ZcFrag>,
    native: zcnet::vnet::Registration<native::Native>,
    /// Dropped last, after every device whose rings take from the stash.
    stash: zcnet::page::StashDrain,
}

impl kernel::InPlaceModule for Module {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        pr_info!(
            "loaded on Linux {}\n",
            zcnet::helpers::kernel_release().to_str().unwrap_or("?")
        );
        try_pin_init!(Self {
            kind <- stacked::Registration::register(),
            native: zcnet::vnet::Registration::register()?,
            stash: zcnet::page::StashDrain,
        })
    }
}
