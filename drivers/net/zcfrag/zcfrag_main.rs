// SPDX-License-Identifier: GPL-2.0

//! zcfrag: a fragmenting / defragmenting Ethernet device stacked on a lower
//! Ethernet device: `ip link add zf0 link eth0 type zcfrag`.
//!
//! The device offers a page-sized MTU (4096 bytes of TCP payload plus IPv4 and
//! TCP headers with timestamps: 4096 + 20 + 32 = 4148) and sends every IPv4
//! packet larger than the lower device's MTU as standard IPv4 fragments, so an
//! unmodified receiver reassembles it.
//!
//! This increment: fragmenting transmit (fragments are built by copying; the
//! zero-copy fragmenter that references the payload pages comes next, and
//! `tx_copied_bytes` counts what is still copied) and a receive path that
//! passes every frame up and counts IPv4 fragments (the speculation engine
//! comes next).

use kernel::{
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
};

#[path = "../../../rust/zcnet/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod zcnet;

#[path = "../../../rust/wire/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod wire;

use wire::ipv4;
use zcnet::counters::Counters;
use zcnet::netdev::{NetDevice, SkBuff};
use zcnet::stacked::{self, Rx, TxResult};

module! {
    type: Module,
    name: "zcfrag",
    authors: ["zcnet developers"],
    description: "zcnet fragmenting/defragmenting Ethernet device",
    license: "GPL",
}

/// Bytes of an Ethernet header.
const ETH_HLEN: usize = 14;
/// `ETH_P_IP` in network byte order, as `skb->protocol` holds it.
const ETH_P_IP_BE: u16 = (kernel::bindings::ETH_P_IP as u16).to_be();
/// One page of TCP payload plus IPv4 (20) and TCP-with-timestamps (32) headers.
const DEFAULT_MTU: u32 = 4096 + 20 + 32;

/// Counter indices; the names below are `ethtool -S zf0`'s.
mod c {
    pub(crate) const RX_FRAMES: usize = 0;
    pub(crate) const RX_IPV4_FRAGMENTS: usize = 1;
    pub(crate) const TX_PASSTHROUGH: usize = 2;
    pub(crate) const TX_FRAGMENTED_PACKETS: usize = 3;
    pub(crate) const TX_FRAGMENTS: usize = 4;
    pub(crate) const TX_COPIED_BYTES: usize = 5;
    pub(crate) const TX_DROP_NOT_IPV4: usize = 6;
    pub(crate) const TX_DROP_IP_OPTIONS: usize = 7;
    pub(crate) const TX_DROP_MALFORMED: usize = 8;
    pub(crate) const TX_DROP_NOMEM: usize = 9;
    pub(crate) const TX_DROP_LOWER: usize = 10;
}
const NAMES: [&str; 11] = [
    "rx_frames",
    "rx_ipv4_fragments",
    "tx_passthrough",
    "tx_fragmented_packets",
    "tx_fragments",
    "tx_copied_bytes",
    "tx_drop_not_ipv4",
    "tx_drop_ip_options",
    "tx_drop_malformed",
    "tx_drop_nomem",
    "tx_drop_lower",
];

/// One zcfrag device.
struct ZcFrag {
    counters: Counters<11>,
    /// IP identification of the next fragmented packet: one per packet, for
    /// the whole device, so fragments of different sockets never share one.
    next_id: Atomic<u32>,
}

impl ZcFrag {
    fn drop_tx(&self, counter: usize, skb: SkBuff) -> TxResult {
        self.counters.inc(counter);
        drop(skb);
        TxResult {
            frames: 0,
            bytes: 0,
            dropped: true,
        }
    }

    /// Sends `skb` (Ethernet + IPv4, larger than the lower MTU) as fragments.
    fn fragment(&self, mut skb: SkBuff, lower: &NetDevice) -> TxResult {
        if skb.resolve_checksum().is_err() {
            return self.drop_tx(c::TX_DROP_MALFORMED, skb);
        }
        let mut hdr = [0u8; ETH_HLEN + ipv4::MAX_HEADER_LEN];
        if skb
            .copy_bits(0, &mut hdr[..ETH_HLEN + ipv4::MIN_HEADER_LEN])
            .is_err()
        {
            return self.drop_tx(c::TX_DROP_MALFORMED, skb);
        }
        let ip = match ipv4::Header::parse(&hdr[ETH_HLEN..]) {
            Ok(ip) => ip,
            Err(_) => return self.drop_tx(c::TX_DROP_MALFORMED, skb),
        };
        if ip.header_len != ipv4::MIN_HEADER_LEN {
            // Options would have to be split by their copy flag; the stack
            // sends none on the paths zcfrag serves.
            return self.drop_tx(c::TX_DROP_IP_OPTIONS, skb);
        }
        let hl = ip.header_len;
        let payload = ip.payload_len();
        if ETH_HLEN + ip.total_len > skb.len() as usize {
            return self.drop_tx(c::TX_DROP_MALFORMED, skb);
        }
        let Some(plan) = ipv4::FragPlan::new(hl, payload, lower.mtu() as usize) else {
            return self.drop_tx(c::TX_DROP_MALFORMED, skb);
        };
        // A packet that is already a fragment (the stack fragmented it at this
        // device's MTU) keeps its ID: its siblings carry the same one.
        let id = if ip.is_fragment() {
            ip.id
        } else {
            self.next_id.fetch_add(1, Relaxed) as u16
        };
        let headroom = lower.reserved_headroom();
        let mut sent = TxResult {
            frames: 0,
            bytes: 0,
            dropped: false,
        };
        for f in plan.iter() {
            let len = ETH_HLEN + hl + f.len;
            let Some(mut frag) = SkBuff::alloc(headroom, len as u32) else {
                return self.drop_tx(c::TX_DROP_NOMEM, skb);
            };
            let Ok(buf) = frag.put(len as u32) else {
                return self.drop_tx(c::TX_DROP_NOMEM, skb);
            };
            buf[..ETH_HLEN + hl].copy_from_slice(&hdr[..ETH_HLEN + hl]);
            let ok = ipv4::rewrite(
                &mut buf[ETH_HLEN..ETH_HLEN + hl],
                hl + f.len,
                id,
                ip.frag_offset + f.offset,
                f.mf || ip.mf,
            );
            if !ok
                || skb
                    .copy_bits((ETH_HLEN + hl + f.offset) as u32, &mut buf[ETH_HLEN + hl..])
                    .is_err()
            {
                return self.drop_tx(c::TX_DROP_MALFORMED, skb);
            }
            self.counters.add(c::TX_COPIED_BYTES, f.len as u64);
            frag.set_protocol_be(ETH_P_IP_BE);
            frag.copy_meta_from(&skb);
            if !frag.xmit(lower) {
                // The lower device's queue dropped it; TCP will retransmit.
                self.counters.inc(c::TX_DROP_LOWER);
            }
            self.counters.inc(c::TX_FRAGMENTS);
            sent.frames += 1;
            sent.bytes += len as u64;
        }
        self.counters.inc(c::TX_FRAGMENTED_PACKETS);
        skb.consume();
        sent
    }
}

impl stacked::Stacked for ZcFrag {
    const KIND: &'static CStr = c"zcfrag";
    const DRIVER: &'static CStr = c"zcfrag";
    const VERSION: &'static CStr = c"0.1";
    const STATS: &'static [&'static str] = &NAMES;

    fn default_mtu(_lower: &NetDevice) -> u32 {
        DEFAULT_MTU
    }

    fn new(_lower: &NetDevice) -> Result<Self> {
        Ok(Self {
            counters: Counters::new(&NAMES),
            next_id: Atomic::new(0),
        })
    }

    fn xmit(&self, skb: SkBuff, lower: &NetDevice) -> TxResult {
        let len = skb.len();
        if len as usize <= ETH_HLEN + lower.mtu() as usize {
            self.counters.inc(c::TX_PASSTHROUGH);
            let ok = skb.xmit(lower);
            if !ok {
                self.counters.inc(c::TX_DROP_LOWER);
            }
            return TxResult {
                frames: 1,
                bytes: u64::from(len),
                dropped: false,
            };
        }
        if skb.protocol_be() != ETH_P_IP_BE {
            // IPv6 is never fragmented on the way: its MTU on this device
            // must fit the lower device (Documentation/networking/zcfrag.rst).
            return self.drop_tx(c::TX_DROP_NOT_IPV4, skb);
        }
        self.fragment(skb, lower)
    }

    fn rx(&self, mut skb: SkBuff, _dev: &NetDevice) -> Rx {
        self.counters.inc(c::RX_FRAMES);
        if skb.protocol_be() == ETH_P_IP_BE {
            if let Some(h) = skb.pull_linear(ipv4::MIN_HEADER_LEN as u32) {
                if let Ok(ip) = ipv4::Header::parse(h) {
                    if ip.is_fragment() {
                        self.counters.inc(c::RX_IPV4_FRAGMENTS);
                    }
                }
            }
        }
        Rx::Pass(skb)
    }

    fn stats(&self, out: &mut [u64]) {
        self.counters.snapshot(out);
    }
}

#[pin_data]
struct Module {
    #[pin]
    kind: stacked::Registration<ZcFrag>,
}

impl kernel::InPlaceModule for Module {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        pr_info!(
            "loaded on Linux {}\n",
            zcnet::helpers::kernel_release().to_str().unwrap_or("?")
        );
        try_pin_init!(Self {
            kind <- stacked::Registration::register(),
        })
    }
}
