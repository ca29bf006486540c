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

use core::fmt::Write;
use kernel::{
    new_spinlock,
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
    sync::SpinLock,
    uaccess::{UserPtr, UserSlice},
};

#[path = "../../../rust/zcnet/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod zcnet;

#[path = "../../../rust/wire/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod wire;

use wire::admission::{self, Asked, Event, Frame, Kind, Requests, State};
use wire::ipv4;
use wire::spec::{self, Admission, Engine, FlowKey, Grant, Miss, This};
use zcnet::counters::Counters;
use zcnet::netdev::{now_ns, BhGuard, NetDevice, PageRing, RxPage, SkBuff, SkbChain, TextBuf};
use zcnet::rtnl::ExtAck;
use zcnet::stacked::{self, Ctx, Rx, TxResult};

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

/// Speculation slots a device can have (`slots` in sysfs: 1 to this).
const SLOTS: usize = 32;
/// Slots of a new device.
const DEFAULT_SLOTS: u32 = 8;
/// Flows the admission requester follows at once.
const REQUESTS: usize = 16;
/// Admission frames' EtherType in network byte order.
const ETH_P_ADM_BE: u16 = admission::ETHERTYPE.to_be();
/// Grants idle this long are taken back (`grant_timeout_ms`).
const DEFAULT_GRANT_MS: u32 = 2000;
/// Fragments one slot holds at most (a page over a lower MTU of 576 needs 8).
const MAX_HELD: usize = 16;
/// Receive pages kept for reuse (a page comes back once the stack is done
/// with its packet; a reader that keeps more than this many pages queued
/// makes new ones be allocated).
const PAGE_RING: usize = 64;
/// Ethernet + IPv4 (no options) + the longest transport header speculated on.
const HDR_ROOM: usize = ETH_HLEN + ipv4::MIN_HEADER_LEN + 60;

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
    pub(crate) const RX_FRAMES_LARGE: usize = 11;
    pub(crate) const RX_FRAMES_SMALL: usize = 12;
    pub(crate) const ZC_POTENTIAL: usize = 13;
    pub(crate) const ZC_SUCCESS: usize = 14;
    pub(crate) const ZC_FULL_PAGES: usize = 15;
    pub(crate) const ZC_FAILED: usize = 16;
    /// `MISS_BASE + Miss as usize`: one counter per miss reason.
    pub(crate) const MISS_BASE: usize = 17;
    pub(crate) const RX_NO_SLOT: usize = 26;
    pub(crate) const RX_NOMEM: usize = 27;
    pub(crate) const RX_FALLBACK_FRAGMENTS: usize = 28;
    pub(crate) const RX_FALLBACK_BYTES: usize = 29;
    pub(crate) const RX_COPIED_BYTES: usize = 30;
    pub(crate) const RX_BAD_HEADER: usize = 31;
    pub(crate) const SLOTS_IN_USE: usize = 32;
    pub(crate) const TX_REFERENCED_BYTES: usize = 33;
    pub(crate) const RX_NOT_FOR_HOST: usize = 34;
    pub(crate) const ADM_REQUESTS_SENT: usize = 35;
    pub(crate) const ADM_REQUEST_RETRIES: usize = 36;
    pub(crate) const ADM_ANSWERS_ACK: usize = 37;
    pub(crate) const ADM_ANSWERS_NACK: usize = 38;
    pub(crate) const ADM_NO_ANSWER: usize = 39;
    pub(crate) const ADM_RELEASES_SENT: usize = 40;
    pub(crate) const ADM_REQUESTS_RECEIVED: usize = 41;
    pub(crate) const ADM_GRANTED: usize = 42;
    pub(crate) const ADM_REFUSED: usize = 43;
    pub(crate) const ADM_RELEASES_RECEIVED: usize = 44;
    pub(crate) const ADM_GRANTS_EXPIRED: usize = 45;
    pub(crate) const ADM_BAD_FRAMES: usize = 46;
    pub(crate) const RX_NOT_ADMITTED: usize = 47;
    pub(crate) const GRANTS_ACTIVE: usize = 48;
    pub(crate) const REQUESTS_ACTIVE: usize = 49;
    pub(crate) const ADM_TABLE_FULL: usize = 50;
    pub(crate) const ADM_RENEWALS: usize = 51;
    pub(crate) const ADM_ACKS_SENT: usize = 52;
    pub(crate) const RX_BAD_TRUNCATED: usize = 53;
    pub(crate) const RX_BAD_CHECKSUM: usize = 54;
    pub(crate) const RX_BAD_OVERSIZE: usize = 55;
    pub(crate) const RX_BAD_VERSION: usize = 56;
    pub(crate) const RX_EMPTY_FRAGMENTS: usize = 57;
    pub(crate) const RX_PAGES_NEW: usize = 58;
    pub(crate) const RX_PAGES_REUSED: usize = 59;
}
const NCOUNTERS: usize = 60;
const NAMES: [&str; NCOUNTERS] = [
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
    "rx_frames_large",
    "rx_frames_small",
    "zc_potential",
    "zc_successful",
    "zc_full_pages",
    "zc_failed",
    "zc_miss_other_packet",
    "zc_miss_gap",
    "zc_miss_duplicate",
    "zc_miss_header_length",
    "zc_miss_ip_options",
    "zc_miss_too_big",
    "zc_miss_timeout",
    "zc_miss_bad_length",
    "zc_miss_bad_checksum",
    "rx_no_slot",
    "rx_drop_nomem",
    "rx_fallback_fragments",
    "rx_fallback_bytes",
    "rx_copied_bytes",
    "rx_bad_header",
    "slots_in_use",
    "tx_referenced_bytes",
    "rx_not_for_host",
    "adm_requests_sent",
    "adm_request_retries",
    "adm_answers_ack",
    "adm_answers_nack",
    "adm_no_answer",
    "adm_releases_sent",
    "adm_requests_received",
    "adm_granted",
    "adm_refused",
    "adm_releases_received",
    "adm_grants_expired",
    "adm_bad_frames",
    "rx_not_admitted",
    "grants_active",
    "requests_active",
    "adm_table_full",
    "adm_renewals",
    "adm_acks_sent",
    "rx_bad_truncated",
    "rx_bad_checksum",
    "rx_bad_oversize",
    "rx_bad_version",
    "rx_empty_fragments",
    "rx_pages_new",
    "rx_pages_reused",
];

/// sysfs attributes (`/sys/class/net/DEV/zcfrag/`), in `SYSFS` order.
mod attr {
    pub(crate) const SLOTS: usize = 0;
    pub(crate) const TIMEOUT_US: usize = 1;
    pub(crate) const ADMISSION: usize = 2;
    pub(crate) const IMPLICIT: usize = 3;
    pub(crate) const GRANT_MS: usize = 4;
    pub(crate) const ADMISSIONS: usize = 5;
}
const SYSFS: [(&CStr, bool); 6] = [
    (c"slots", true),
    (c"timeout_us", true),
    (c"admission", true),
    (c"implicit_admission", true),
    (c"grant_timeout_ms", true),
    (c"admissions", false),
];

/// The private ioctl (`SIOCDEVPRIVATE`) of explicit admission: its argument
/// is a 32-byte `struct zcfrag_admission` (Documentation/networking/zcfrag.rst).
mod ioc {
    pub(crate) const CMD: u32 = 0;
    pub(crate) const LEN: usize = 32;
    pub(crate) const REQUEST: u32 = 1;
    pub(crate) const QUERY: u32 = 2;
    pub(crate) const RELEASE: u32 = 3;
}

/// Parses a decimal sysfs value in `lo..=hi`.
fn parse_u32(input: &[u8], lo: u32, hi: u32) -> Result<u32> {
    let t = core::str::from_utf8(input).map_err(|_| EINVAL)?.trim();
    let v: u32 = t.parse().map_err(|_| EINVAL)?;
    if v < lo || v > hi {
        return Err(EINVAL);
    }
    Ok(v)
}

fn state_code(st: Option<State>) -> (u32, u32, u32) {
    match st {
        None => (0, 0, 0),
        Some(State::Pending { tries }) => (1, 0, u32::from(tries)),
        Some(State::Granted { slot }) => (2, u32::from(slot), 0),
        Some(State::Refused) => (3, 0, 0),
        Some(State::NoAnswer) => (4, 0, 0),
    }
}

/// Settings, read by the data path without a lock. Each is a sysfs attribute
/// (index `attr::*`) and a link attribute (`IFLA_ZCFRAG_*` = index + 1,
/// `include/uapi/zcnet/zcfrag.h`), with the range of [`KNOBS`].
struct Config {
    slots: Atomic<u32>,
    timeout_us: Atomic<u32>,
    required: Atomic<u32>,
    implicit: Atomic<u32>,
    grant_ms: Atomic<u32>,
}

/// The settings' ranges, and what `ip link` prints when a value is outside.
const KNOBS: [(u32, u32, &CStr); 5] = [
    (1, SLOTS as u32, c"zcfrag: slots must be 1..32"),
    // 100 us to 1 s: a train of one page over MTU 576 takes 8 frames.
    (100, 1_000_000, c"zcfrag: timeout must be 100..1000000 us"),
    (0, 1, c"zcfrag: admission must be open (0) or required (1)"),
    (0, 1, c"zcfrag: implicit must be on (1) or off (0)"),
    (10, 600_000, c"zcfrag: grant_timeout must be 10..600000 ms"),
];
const _: () = assert!(SLOTS == 32);

impl Config {
    fn cell(&self, knob: usize) -> Result<&Atomic<u32>> {
        Ok(match knob {
            attr::SLOTS => &self.slots,
            attr::TIMEOUT_US => &self.timeout_us,
            attr::ADMISSION => &self.required,
            attr::IMPLICIT => &self.implicit,
            attr::GRANT_MS => &self.grant_ms,
            _ => return Err(EINVAL),
        })
    }

    fn get(&self, knob: usize) -> u32 {
        self.cell(knob).map_or(0, |c| c.load(Relaxed))
    }

    /// Whether `v` is in the range of `knob`.
    fn valid(knob: usize, v: u32) -> bool {
        KNOBS
            .get(knob)
            .is_some_and(|&(lo, hi, _)| (lo..=hi).contains(&v))
    }

    fn set(&self, knob: usize, v: u32) -> Result {
        if !Self::valid(knob, v) {
            return Err(EINVAL);
        }
        self.cell(knob)?.store(v, Relaxed);
        Ok(())
    }
}
const _: () = assert!(c::MISS_BASE + spec::MISS_REASONS == c::RX_NO_SLOT);

/// What one speculation slot holds.
struct SlotBuf {
    /// The page the payload lands in (kept across trains until a packet takes it).
    page: Option<RxPage>,
    /// Ethernet, IPv4 and transport header of the packet being placed.
    hdr: [u8; HDR_ROOM],
    eth_len: usize,
    /// The original fragments, for the fallback.
    held: [Option<SkBuff>; MAX_HELD],
    nheld: usize,
}

impl SlotBuf {
    const EMPTY: SlotBuf = SlotBuf {
        page: None,
        hdr: [0; HDR_ROOM],
        eth_len: 0,
        held: [const { None }; MAX_HELD],
        nheld: 0,
    };
}

/// Receive state: touched only in softirq (rx handler, timer) and in
/// `teardown`, with bottom halves off.
struct RxState {
    engine: Engine<SLOTS>,
    slots: [SlotBuf; SLOTS],
    /// Pages for new trains, reused once the stack is done with them.
    pages: PageRing<PAGE_RING>,
}

/// One zcfrag device.
#[pin_data]
struct ZcFrag {
    counters: Counters<NCOUNTERS>,
    /// IP identification of the next fragmented packet: one per packet, for
    /// the whole device, so fragments of different sockets never share one.
    next_id: Atomic<u32>,
    cfg: Config,
    /// Entries in `adm` (the transmit path skips the lock when zero).
    nrequests: Atomic<u32>,
    /// The receiver: speculation slots and the grants reserving them.
    #[pin]
    rx: SpinLock<RxState>,
    /// The requester: admission requests this device sent. Taken in the
    /// transmit path, the rx handler and the timer (bottom halves off), and
    /// by the ioctl under a [`BhGuard`].
    #[pin]
    adm: SpinLock<Requests<REQUESTS>>,
}

/// Admission frames to send once the locks are dropped.
struct Outbox {
    frames: [Option<(Frame, [u8; 6])>; REQUESTS + 1],
    n: usize,
}

impl Outbox {
    const fn new() -> Self {
        Self {
            frames: [None; REQUESTS + 1],
            n: 0,
        }
    }

    fn push(&mut self, f: Frame, peer: [u8; 6]) {
        if let Some(slot) = self.frames.get_mut(self.n) {
            *slot = Some((f, peer));
            self.n += 1;
        }
    }
}

impl ZcFrag {
    /// Brings the engine up to date with the settings (under the rx lock).
    fn apply_cfg(&self, st: &mut RxState) {
        st.engine.set_limit(self.cfg.slots.load(Relaxed) as usize);
        st.engine
            .set_timeout_ns(u64::from(self.cfg.timeout_us.load(Relaxed)) * 1000);
        st.engine
            .set_admission(if self.cfg.required.load(Relaxed) != 0 {
                Admission::Required
            } else {
                Admission::Open
            });
    }

    fn grant_ns(&self) -> u64 {
        u64::from(self.cfg.grant_ms.load(Relaxed)) * 1_000_000
    }

    /// Sends one admission frame to `peer` through `lower`.
    fn send_adm(&self, lower: &NetDevice, peer: [u8; 6], f: &Frame) {
        let mut b = [0u8; ETH_HLEN + admission::FRAME_LEN];
        b[..6].copy_from_slice(&peer);
        b[6..12].copy_from_slice(&lower.mac_addr());
        b[12..14].copy_from_slice(&admission::ETHERTYPE.to_be_bytes());
        let mut body = [0u8; admission::FRAME_LEN];
        f.encode(&mut body);
        b[ETH_HLEN..].copy_from_slice(&body);
        let c = match f.kind {
            Kind::Req => c::ADM_REQUESTS_SENT,
            Kind::Rel => c::ADM_RELEASES_SENT,
            Kind::Ack => c::ADM_ACKS_SENT,
            Kind::NAck => c::ADM_REFUSED,
        };
        self.counters.inc(c);
        match SkBuff::frame(lower, &b) {
            Some(skb) => {
                if !skb.xmit(lower) {
                    self.counters.inc(c::TX_DROP_LOWER);
                }
            }
            None => self.counters.inc(c::TX_DROP_NOMEM),
        }
    }

    fn flush_outbox(&self, lower: &NetDevice, out: &Outbox) {
        for (f, peer) in out.frames.iter().take(out.n).flatten() {
            self.send_adm(lower, *peer, f);
        }
    }

    fn update_requests(&self, adm: &Requests<REQUESTS>) {
        let n = adm.len() as u32;
        self.nrequests.store(n, Relaxed);
        self.counters.set(c::REQUESTS_ACTIVE, u64::from(n));
    }

    /// An admission frame arrived (rx handler).
    fn on_adm_frame(&self, skb: SkBuff, ctx: &Ctx<'_>) {
        let mut body = [0u8; admission::FRAME_LEN];
        let mac = skb.mac_header();
        let mut peer = [0u8; 6];
        let ok = mac.len() == ETH_HLEN && skb.copy_bits(0, &mut body).is_ok();
        if ok {
            peer.copy_from_slice(&mac[6..12]);
        }
        skb.consume();
        let f = match (ok, Frame::decode(&body)) {
            (true, Ok(f)) => f,
            _ => {
                self.counters.inc(c::ADM_BAD_FRAMES);
                return;
            }
        };
        let now = now_ns();
        match f.kind {
            Kind::Req => {
                self.counters.inc(c::ADM_REQUESTS_RECEIVED);
                let grant_ms = self.cfg.grant_ms.load(Relaxed);
                let answer = {
                    let mut st = self.rx.lock();
                    self.apply_cfg(&mut st);
                    let g = st.engine.grant(f.key, now);
                    self.counters
                        .set(c::GRANTS_ACTIVE, st.engine.grants() as u64);
                    match g {
                        Grant::Granted(slot) => {
                            self.counters.inc(c::ADM_GRANTED);
                            f.answer(Some(slot), grant_ms)
                        }
                        Grant::Renewed(slot) => {
                            self.counters.inc(c::ADM_RENEWALS);
                            f.answer(Some(slot), grant_ms)
                        }
                        Grant::Refused => f.answer(None, grant_ms),
                    }
                };
                if answer.kind == Kind::Ack {
                    // Idle grants are taken back by the timer.
                    ctx.arm_timer(u64::from(grant_ms) * 250);
                }
                self.send_adm(ctx.lower(), peer, &answer);
            }
            Kind::Rel => {
                self.counters.inc(c::ADM_RELEASES_RECEIVED);
                let mut st = self.rx.lock();
                st.engine.release(&f.key);
                self.counters
                    .set(c::GRANTS_ACTIVE, st.engine.grants() as u64);
            }
            Kind::Ack | Kind::NAck => {
                let mut adm = self.adm.lock();
                match adm.on_answer(&f, now) {
                    Some(State::Granted { .. }) => self.counters.inc(c::ADM_ANSWERS_ACK),
                    Some(_) => self.counters.inc(c::ADM_ANSWERS_NACK),
                    None => self.counters.inc(c::ADM_BAD_FRAMES),
                }
            }
        }
    }

    /// The requester's look at an outgoing packet: asks for a slot for a
    /// flow sending page-sized packets (implicit admission), keeps its entry
    /// alive, and releases the slot when a TCP connection closes.
    fn watch_tx(&self, skb: &SkBuff, big: bool, ctx: &Ctx<'_>) {
        let implicit = self.cfg.implicit.load(Relaxed) != 0;
        if !(big && implicit) && self.nrequests.load(Relaxed) == 0 {
            return;
        }
        let mut b = [0u8; ETH_HLEN + ipv4::MIN_HEADER_LEN + 14];
        if skb.copy_bits(0, &mut b).is_err() {
            return;
        }
        let Ok(ip) = ipv4::Header::parse(&b[ETH_HLEN..]) else {
            return;
        };
        if ip.frag_offset != 0 || !(ip.protocol == 6 || ip.protocol == 17) {
            return;
        }
        let l4 = ETH_HLEN + ip.header_len;
        let mut ports = [0u8; 14];
        if skb.copy_bits(l4 as u32, &mut ports).is_err() {
            return;
        }
        let key = FlowKey {
            src: ip.src,
            dst: ip.dst,
            protocol: ip.protocol,
        };
        let sport = u16::from_be_bytes([ports[0], ports[1]]);
        let dport = u16::from_be_bytes([ports[2], ports[3]]);
        // FIN or RST: the connection is closing.
        let closing = ip.protocol == 6 && ports[13] & 0x05 != 0;
        let mut peer = [0u8; 6];
        peer.copy_from_slice(&b[..6]);
        let now = now_ns();
        let mut out = Outbox::new();
        {
            let mut adm = self.adm.lock();
            if closing {
                // Release on close is for the driver's own requests; an
                // explicit grant stays until zcctl releases it.
                if adm.get(&key).is_some_and(|e| !e.explicit) {
                    if let Some((rel, p)) = adm.release(&key) {
                        out.push(rel, p);
                    }
                }
            } else if big && !adm.touch(&key, now) && implicit {
                match adm.request(key, (sport, dport), peer, false, now) {
                    Asked::Send(f) => {
                        out.push(f, peer);
                        ctx.arm_timer(adm.timing().retry_ns / 1000);
                    }
                    Asked::Full => self.counters.inc(c::ADM_TABLE_FULL),
                    Asked::Already => {}
                }
            }
            self.update_requests(&adm);
        }
        self.flush_outbox(ctx.lower(), &out);
    }

    /// Explicit admission (zcctl, `SIOCDEVPRIVATE`).
    fn admission_ioctl(&self, dev: &NetDevice, ctx: &Ctx<'_>, arg: UserPtr) -> Result {
        let (mut rd, mut wr) = UserSlice::new(arg, ioc::LEN).reader_writer();
        let mut b = [0u8; ioc::LEN];
        rd.read_slice(&mut b)?;
        let cmd = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        let mut peer = [0u8; 6];
        peer.copy_from_slice(&b[8..14]);
        let key = FlowKey {
            src: [b[16], b[17], b[18], b[19]],
            dst: [b[20], b[21], b[22], b[23]],
            protocol: b[14],
        };
        let sport = u16::from_ne_bytes([b[24], b[25]]);
        let dport = u16::from_ne_bytes([b[26], b[27]]);
        if cmd != ioc::QUERY && !dev.net_admin_capable() {
            return Err(EPERM);
        }
        if !(key.protocol == 6 || key.protocol == 17) {
            return Err(EINVAL);
        }
        let mut out = Outbox::new();
        let st = {
            let _bh = BhGuard::new();
            let mut adm = self.adm.lock();
            match cmd {
                ioc::REQUEST => {
                    // A unicast MAC address: not all zero, group bit clear.
                    if peer == [0; 6] || peer[0] & 1 != 0 {
                        return Err(EINVAL);
                    }
                    match adm.request(key, (sport, dport), peer, true, now_ns()) {
                        Asked::Send(f) => {
                            out.push(f, peer);
                            ctx.arm_timer(adm.timing().retry_ns / 1000);
                        }
                        Asked::Already => {}
                        Asked::Full => {
                            self.counters.inc(c::ADM_TABLE_FULL);
                            return Err(ENOSPC);
                        }
                    }
                }
                ioc::QUERY => {}
                ioc::RELEASE => {
                    if let Some((rel, p)) = adm.release(&key) {
                        out.push(rel, p);
                    }
                }
                _ => return Err(EINVAL),
            }
            self.update_requests(&adm);
            adm.get(&key).map(|e| e.state)
        };
        if out.n > 0 {
            let _bh = BhGuard::new();
            self.flush_outbox(ctx.lower(), &out);
        }
        let (code, slot, tries) = state_code(st);
        b[4..8].copy_from_slice(&code.to_ne_bytes());
        b[15] = slot as u8;
        b[28..32].copy_from_slice(&tries.to_ne_bytes());
        wr.write_slice(&b)
    }

    /// The `admissions` sysfs file: grants held (receiver) and requests
    /// (requester).
    fn show_admissions(&self, out: &mut TextBuf<'_>) -> Result {
        let now = now_ns();
        let ip = |a: [u8; 4]| (a[0], a[1], a[2], a[3]);
        let mut grants = [None; SLOTS];
        let mut reqs = [None; REQUESTS];
        {
            let _bh = BhGuard::new();
            let st = self.rx.lock();
            for (i, g) in grants.iter_mut().enumerate() {
                *g = st.engine.grant_at(i);
            }
            drop(st);
            let adm = self.adm.lock();
            for (r, e) in reqs.iter_mut().zip(adm.iter()) {
                *r = Some(*e);
            }
        }
        for (i, g) in grants.iter().enumerate() {
            if let Some((k, last)) = g {
                let (a, b, c2, d) = ip(k.src);
                let (e, f, g2, h) = ip(k.dst);
                let _ = writeln!(
                    out,
                    "grant slot {i} {a}.{b}.{c2}.{d} > {e}.{f}.{g2}.{h} proto {} idle_ms {}",
                    k.protocol,
                    now.saturating_sub(*last) / 1_000_000
                );
            }
        }
        for r in reqs.iter().flatten() {
            let (a, b, c2, d) = ip(r.key.src);
            let (e, f, g2, h) = ip(r.key.dst);
            let slot = match r.state {
                State::Granted { slot } => slot as i32,
                _ => -1,
            };
            let _ = writeln!(
                out,
                "request {a}.{b}.{c2}.{d}:{} > {e}.{f}.{g2}.{h}:{} proto {} state {} slot {} {}",
                r.sport,
                r.dport,
                r.key.protocol,
                r.state.name(),
                slot,
                if r.explicit { "explicit" } else { "implicit" },
            );
        }
        Ok(())
    }

    /// Ends the speculation of `slot`: its held fragments, in arrival order,
    /// go onto `out` for the normal path (or are dropped when `out` is
    /// `None`: teardown). The caller hands `out` up (`Ctx::receive_all`)
    /// after dropping the rx lock, and before the frame in hand: the
    /// fragments then reach reassembly in the order they came, and no page
    /// packet of the flow overtakes them.
    fn flush(&self, st: &mut RxState, slot: usize, mut out: Option<&mut SkbChain>) {
        let Some(sb) = st.slots.get_mut(slot) else {
            return;
        };
        for h in sb.held.iter_mut().take(sb.nheld) {
            if let Some(skb) = h.take() {
                self.counters.inc(c::RX_FALLBACK_FRAGMENTS);
                self.counters
                    .add(c::RX_FALLBACK_BYTES, u64::from(skb.len()));
                match out.as_deref_mut() {
                    Some(o) => o.push(skb),
                    None => drop(skb),
                }
            }
        }
        sb.nheld = 0;
        self.counters.inc(c::ZC_FAILED);
    }

    fn miss(&self, st: &mut RxState, slot: usize, reason: Miss, out: Option<&mut SkbChain>) {
        self.counters.inc(c::MISS_BASE + reason as usize);
        if slot != usize::MAX {
            self.flush(st, slot, out);
        }
    }

    fn update_gauge(&self, st: &RxState) {
        self.counters.set(c::SLOTS_IN_USE, st.engine.busy() as u64);
    }

    /// The speculation path for an IPv4 frame. Fragments a miss ends go up
    /// first, once the rx lock is dropped (see `flush`), then the frame the
    /// inner path hands back as `Rx::Pass`.
    fn speculate(&self, skb: SkBuff, dev: &NetDevice, ctx: &Ctx<'_>) -> Rx {
        let mut out = SkbChain::new();
        let rx = self.speculate_locked(skb, dev, ctx, &mut out);
        ctx.receive_all(&mut out);
        rx
    }

    /// [`Self::speculate`] up to the hand-over: takes the rx lock and puts
    /// what a miss ends on `out`.
    fn speculate_locked(
        &self,
        mut skb: SkBuff,
        dev: &NetDevice,
        ctx: &Ctx<'_>,
        out: &mut SkbChain,
    ) -> Rx {
        // The whole header, options included (IHL says how long), so that a
        // fragment with options reaches the engine and counts as such.
        let mut ip_hdr = [0u8; ipv4::MAX_HEADER_LEN];
        let hl = match skb.pull_linear(ipv4::MIN_HEADER_LEN as u32) {
            Some(h) => {
                (usize::from(h[0] & 0x0f) * 4).clamp(ipv4::MIN_HEADER_LEN, ipv4::MAX_HEADER_LEN)
            }
            None => {
                // Fewer bytes than an IPv4 header (or than its IHL says).
                self.counters.inc(c::RX_BAD_HEADER);
                self.counters.inc(c::RX_BAD_TRUNCATED);
                return Rx::Pass(skb);
            }
        };
        match skb.pull_linear(hl as u32) {
            Some(h) => ip_hdr[..hl].copy_from_slice(&h[..hl]),
            None => {
                // Fewer bytes than an IPv4 header (or than its IHL says).
                self.counters.inc(c::RX_BAD_HEADER);
                self.counters.inc(c::RX_BAD_TRUNCATED);
                return Rx::Pass(skb);
            }
        }
        let h = match ipv4::Header::parse(&ip_hdr[..hl]) {
            Ok(h) => h,
            Err(e) => {
                self.counters.inc(c::RX_BAD_HEADER);
                self.counters.inc(match e {
                    ipv4::HeaderError::Truncated | ipv4::HeaderError::BadTotalLength => {
                        c::RX_BAD_TRUNCATED
                    }
                    ipv4::HeaderError::BadChecksum => c::RX_BAD_CHECKSUM,
                    ipv4::HeaderError::OffsetOverflow => c::RX_BAD_OVERSIZE,
                    ipv4::HeaderError::NotIpv4 | ipv4::HeaderError::BadHeaderLength => {
                        c::RX_BAD_VERSION
                    }
                });
                if e == ipv4::HeaderError::BadChecksum && ip_hdr[6..8] != [0, 0] {
                    // A fragment (or DF packet) whose header is corrupt: its
                    // flow's train cannot complete.
                    let src = [ip_hdr[12], ip_hdr[13], ip_hdr[14], ip_hdr[15]];
                    let dst = [ip_hdr[16], ip_hdr[17], ip_hdr[18], ip_hdr[19]];
                    let mut st = self.rx.lock();
                    if let Some(slot) = st.engine.on_bad_fragment(src, dst, ip_hdr[9]) {
                        self.miss(&mut st, slot, Miss::BadChecksum, Some(out));
                        self.update_gauge(&st);
                    }
                }
                return Rx::Pass(skb);
            }
        };
        if !h.is_fragment() {
            self.counters.inc(c::RX_FRAMES_SMALL);
            return Rx::Pass(skb);
        }
        self.counters.inc(c::RX_IPV4_FRAGMENTS);
        self.counters.inc(c::RX_FRAMES_LARGE);
        if (skb.len() as usize) < h.total_len {
            // Shorter than its header says: the normal path drops it.
            self.counters.inc(c::RX_BAD_TRUNCATED);
            return Rx::Pass(skb);
        }
        if skb.len() as usize != h.total_len {
            // Ethernet padding: leave it to the normal path.
            return Rx::Pass(skb);
        }
        if h.payload_len() == 0 {
            // A fragment without payload: counted; the engine ends any train
            // it disturbs, and the normal path discards it.
            self.counters.inc(c::RX_EMPTY_FRAGMENTS);
        }
        let mut l4 = [0u8; 16];
        let l4n = if h.frag_offset == 0 {
            let n = h.payload_len().min(l4.len());
            if skb.copy_bits(h.header_len as u32, &mut l4[..n]).is_err() {
                return Rx::Pass(skb);
            }
            n
        } else {
            0
        };

        let mut st = self.rx.lock();
        self.apply_cfg(&mut st);
        let step = st.engine.on_fragment(&h, &l4[..l4n], now_ns());
        if let Some((slot, reason)) = step.flush {
            self.miss(&mut st, slot, reason, Some(&mut *out));
        }
        let place = match step.this {
            This::Place(p) => p,
            This::Pass | This::NoSlot | This::NotAdmitted => {
                if step.this == This::NoSlot {
                    self.counters.inc(c::RX_NO_SLOT);
                } else if step.this == This::NotAdmitted {
                    self.counters.inc(c::RX_NOT_ADMITTED);
                }
                self.update_gauge(&st);
                return Rx::Pass(skb);
            }
        };
        let rst = &mut *st;
        let Some(sb) = rst.slots.get_mut(place.slot) else {
            return Rx::Pass(skb);
        };
        if place.page_off == 0 && place.header_bytes > 0 {
            // A new train: headers apart, a page for the payload.
            self.counters.inc(c::ZC_POTENTIAL);
            ctx.arm_timer(rst.engine.params().timeout_ns / 1000);
            let mac = skb.mac_header();
            let eth_len = if mac.len() == ETH_HLEN { ETH_HLEN } else { 0 };
            sb.hdr[..eth_len].copy_from_slice(&mac[..eth_len]);
            sb.eth_len = eth_len;
            sb.hdr[eth_len..eth_len + ipv4::MIN_HEADER_LEN]
                .copy_from_slice(&ip_hdr[..ipv4::MIN_HEADER_LEN]);
            if sb.page.is_none() {
                sb.page = rst.pages.get().map(|(page, reused)| {
                    self.counters.inc(if reused {
                        c::RX_PAGES_REUSED
                    } else {
                        c::RX_PAGES_NEW
                    });
                    page
                });
            }
        }
        let hdr_at = sb.eth_len + ipv4::MIN_HEADER_LEN + place.header_off;
        let copied = match sb.page.as_mut() {
            Some(page) if sb.nheld < MAX_HELD && hdr_at + place.header_bytes <= HDR_ROOM => {
                let from = (h.header_len + place.header_bytes) as u32;
                skb.copy_bits(
                    h.header_len as u32,
                    &mut sb.hdr[hdr_at..hdr_at + place.header_bytes],
                )
                .is_ok()
                    && skb
                        .copy_bits(
                            from,
                            &mut page.as_mut_slice()
                                [place.page_off..place.page_off + place.page_len],
                        )
                        .is_ok()
            }
            _ => false,
        };
        if !copied {
            // No page, no room to hold, or a short frame: give the train up.
            if sb.page.is_none() {
                self.counters.inc(c::RX_NOMEM);
            }
            if let Some(slot) = rst.engine.abandon(place.slot) {
                self.miss(rst, slot, Miss::TooBig, Some(&mut *out));
            }
            self.update_gauge(rst);
            return Rx::Pass(skb);
        }
        self.counters.add(
            c::RX_COPIED_BYTES,
            (place.header_bytes + place.page_len) as u64,
        );
        let Some(done) = place.complete else {
            sb.held[sb.nheld] = Some(skb);
            sb.nheld += 1;
            self.update_gauge(rst);
            return Rx::Consumed;
        };
        // The last fragment: one packet, its payload the page at offset 0.
        let hl = sb.eth_len + ipv4::MIN_HEADER_LEN + done.l4_header_len;
        let total = ipv4::MIN_HEADER_LEN + done.l4_header_len + done.data_len;
        let ip_at = sb.eth_len;
        let ok = ipv4::rewrite(
            &mut sb.hdr[ip_at..ip_at + ipv4::MIN_HEADER_LEN],
            total,
            h.id,
            0,
            false,
        );
        let page = sb.page.take();
        let pkt = match (ok, page) {
            (true, Some(page)) => {
                SkBuff::from_page(&sb.hdr[..hl], sb.eth_len, page, done.data_len, dev)
            }
            _ => None,
        };
        let Some(pkt) = pkt else {
            // Could not build it: the fragments go the normal way, this one
            // last.
            self.counters.inc(c::RX_NOMEM);
            self.flush(rst, place.slot, Some(&mut *out));
            self.counters.inc(c::RX_FALLBACK_FRAGMENTS);
            self.counters
                .add(c::RX_FALLBACK_BYTES, u64::from(skb.len()));
            self.update_gauge(rst);
            return Rx::Pass(skb);
        };
        for held in sb.held.iter_mut().take(sb.nheld) {
            if let Some(f) = held.take() {
                f.consume();
            }
        }
        sb.nheld = 0;
        skb.consume();
        self.counters.inc(c::ZC_SUCCESS);
        if done.data_len == zcnet::netdev::PAGE_SIZE {
            self.counters.inc(c::ZC_FULL_PAGES);
        }
        self.update_gauge(rst);
        Rx::Pass(pkt)
    }

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
        // Referencing the payload pages needs a lower device that takes
        // non-linear frames; otherwise the core would linearise (copy) each
        // fragment anyway, so copy here, where it is counted.
        let by_ref = lower.has_sg();
        let mut sent = TxResult {
            frames: 0,
            bytes: 0,
            dropped: false,
        };
        let mut fh = [0u8; ETH_HLEN + ipv4::MIN_HEADER_LEN];
        fh.copy_from_slice(&hdr[..ETH_HLEN + hl]);
        for f in plan.iter() {
            let len = ETH_HLEN + hl + f.len;
            if !ipv4::rewrite(
                &mut fh[ETH_HLEN..],
                hl + f.len,
                id,
                ip.frag_offset + f.offset,
                f.mf || ip.mf,
            ) {
                return self.drop_tx(c::TX_DROP_MALFORMED, skb);
            }
            let Some((frag, copied)) = skb.tx_fragment(
                &fh,
                (ETH_HLEN + hl + f.offset) as u32,
                f.len as u32,
                headroom,
                by_ref,
            ) else {
                return self.drop_tx(c::TX_DROP_NOMEM, skb);
            };
            self.counters.add(c::TX_COPIED_BYTES, u64::from(copied));
            self.counters
                .add(c::TX_REFERENCED_BYTES, f.len as u64 - u64::from(copied));
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
    const VERSION: &'static CStr = c"0.2";
    const STATS: &'static [&'static str] = &NAMES;
    const SYSFS: &'static [(&'static CStr, bool)] = &SYSFS;

    fn default_mtu(_lower: &NetDevice) -> u32 {
        DEFAULT_MTU
    }

    fn new(_lower: &NetDevice) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            counters: Counters::new(&NAMES),
            next_id: Atomic::new(0),
            cfg: Config {
                slots: Atomic::new(DEFAULT_SLOTS),
                timeout_us: Atomic::new((spec::Params::DEFAULT.timeout_ns / 1000) as u32),
                required: Atomic::new(0),
                implicit: Atomic::new(1),
                grant_ms: Atomic::new(DEFAULT_GRANT_MS),
            },
            nrequests: Atomic::new(0),
            rx <- new_spinlock!(RxState {
                engine: Engine::new(spec::Params::DEFAULT),
                slots: [const { SlotBuf::EMPTY }; SLOTS],
                pages: PageRing::new(),
            }),
            adm <- new_spinlock!(Requests::new(admission::Timing::DEFAULT)),
        })
    }

    fn xmit(&self, skb: SkBuff, lower: &NetDevice, ctx: &Ctx<'_>) -> TxResult {
        let len = skb.len();
        let ipv4 = skb.protocol_be() == ETH_P_IP_BE;
        let big = len as usize > ETH_HLEN + lower.mtu() as usize;
        if ipv4 {
            self.watch_tx(&skb, big, ctx);
        }
        if !big {
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
        if !ipv4 {
            // IPv6 is never fragmented on the way: its MTU on this device
            // must fit the lower device (Documentation/networking/zcfrag.rst).
            return self.drop_tx(c::TX_DROP_NOT_IPV4, skb);
        }
        self.fragment(skb, lower)
    }

    fn rx(&self, skb: SkBuff, dev: &NetDevice, ctx: &Ctx<'_>) -> Rx {
        self.counters.inc(c::RX_FRAMES);
        let proto = skb.protocol_be();
        if proto == ETH_P_ADM_BE && skb.is_for_host() {
            self.on_adm_frame(skb, ctx);
            return Rx::Consumed;
        }
        if proto != ETH_P_IP_BE {
            self.counters.inc(c::RX_FRAMES_SMALL);
            return Rx::Pass(skb);
        }
        if !skb.is_for_host() {
            // Broadcast, multicast, or another host's frame (promiscuous
            // mode): never speculated on, never delivered as this host's.
            self.counters.inc(c::RX_NOT_FOR_HOST);
            return Rx::Pass(skb);
        }
        self.speculate(skb, dev, ctx)
    }

    fn on_timer(&self, _dev: &NetDevice, ctx: &Ctx<'_>) {
        let now = now_ns();
        let grant_ns = self.grant_ns();
        let mut expired = SkbChain::new();
        {
            let mut st = self.rx.lock();
            self.apply_cfg(&mut st);
            while let Some(slot) = st.engine.expire(now) {
                self.miss(&mut st, slot, Miss::Timeout, Some(&mut expired));
            }
            while st.engine.expire_grants(now, grant_ns).is_some() {
                self.counters.inc(c::ADM_GRANTS_EXPIRED);
            }
            if st.engine.busy() > 0 {
                ctx.arm_timer(st.engine.params().timeout_ns / 1000);
            }
            if st.engine.grants() > 0 {
                ctx.arm_timer(grant_ns / 4000);
            }
            self.counters
                .set(c::GRANTS_ACTIVE, st.engine.grants() as u64);
            self.update_gauge(&st);
        }
        ctx.receive_all(&mut expired);
        let mut out = Outbox::new();
        {
            let mut adm = self.adm.lock();
            adm.set_idle_ns(grant_ns);
            let next = adm.on_timer(now, |ev| match ev {
                Event::Send { frame, peer, retry } => {
                    if retry {
                        self.counters.inc(c::ADM_REQUEST_RETRIES);
                    }
                    out.push(frame, peer);
                }
                Event::NoAnswer(_) => self.counters.inc(c::ADM_NO_ANSWER),
                Event::Forgotten(_) => {}
            });
            if let Some(at) = next {
                ctx.arm_timer(at.saturating_sub(now) / 1000);
            }
            self.update_requests(&adm);
        }
        self.flush_outbox(ctx.lower(), &out);
    }

    fn teardown(&self, lower: &NetDevice) {
        {
            let mut st = self.rx.lock();
            while let Some(slot) = st.engine.drain() {
                self.flush(&mut st, slot, None);
            }
            for sb in st.slots.iter_mut() {
                sb.page = None;
            }
            st.pages = PageRing::new();
            self.update_gauge(&st);
        }
        // Give the peers their slots back now rather than at their idle
        // timeout: a Fast_Rel for every grant this device holds.
        let mut out = Outbox::new();
        {
            let mut adm = self.adm.lock();
            adm.release_all(|f, peer| out.push(f, peer));
            self.update_requests(&adm);
        }
        self.flush_outbox(lower, &out);
    }

    fn stats(&self, out: &mut [u64]) {
        self.counters.snapshot(out);
    }

    fn sysfs_show(&self, idx: usize, out: &mut TextBuf<'_>) -> Result {
        let cfg = &self.cfg;
        let _ = match idx {
            attr::SLOTS => writeln!(out, "{}", cfg.slots.load(Relaxed)),
            attr::TIMEOUT_US => writeln!(out, "{}", cfg.timeout_us.load(Relaxed)),
            attr::ADMISSION => writeln!(
                out,
                "{}",
                if cfg.required.load(Relaxed) != 0 {
                    "required"
                } else {
                    "open"
                }
            ),
            attr::IMPLICIT => writeln!(out, "{}", cfg.implicit.load(Relaxed)),
            attr::GRANT_MS => writeln!(out, "{}", cfg.grant_ms.load(Relaxed)),
            attr::ADMISSIONS => return self.show_admissions(out),
            _ => return Err(EINVAL),
        };
        Ok(())
    }

    fn sysfs_store(&self, idx: usize, input: &[u8]) -> Result {
        let v = match (idx, core::str::from_utf8(input).map(str::trim)) {
            (attr::ADMISSION, Ok("open")) => 0,
            (attr::ADMISSION, Ok("required")) => 1,
            (attr::ADMISSION, _) => return Err(EINVAL),
            _ => parse_u32(input, 0, u32::MAX)?,
        };
        self.cfg.set(idx, v)
    }

    const LINK_ATTRS: u16 = KNOBS.len() as u16;

    fn link_attr(&self, ty: u16) -> u32 {
        self.cfg.get(usize::from(ty).wrapping_sub(1))
    }

    fn set_link_attrs(&self, attrs: &stacked::LinkAttrs, extack: &mut ExtAck) -> Result {
        // All or nothing: check every given value before storing any.
        for (knob, &(_, _, why)) in KNOBS.iter().enumerate() {
            if let Some(v) = attrs.get(knob as u16 + 1) {
                if !Config::valid(knob, v) {
                    extack.set_msg(why);
                    return Err(EINVAL);
                }
            }
        }
        for knob in 0..KNOBS.len() {
            if let Some(v) = attrs.get(knob as u16 + 1) {
                self.cfg.set(knob, v)?;
            }
        }
        Ok(())
    }

    fn rx_usecs(&self) -> Option<u32> {
        Some(self.cfg.timeout_us.load(Relaxed))
    }

    fn set_rx_usecs(&self, usecs: u32) -> Result {
        self.cfg.set(attr::TIMEOUT_US, usecs)
    }

    fn private_ioctl(&self, dev: &NetDevice, ctx: &Ctx<'_>, cmd: u32, arg: UserPtr) -> Result {
        match cmd {
            ioc::CMD => self.admission_ioctl(dev, ctx, arg),
            _ => Err(zcnet::errno::eopnotsupp()),
        }
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
