// SPDX-License-Identifier: GPL-2.0

//! The device: its state and the stacked front end's callbacks.

/// One zcfrag device.
use crate::admit::{self, Outbox};
use crate::config::{attr, parse_u32, Config, KNOBS, SYSFS};
use crate::counters::{c, NAMES};
use crate::port::Port;
use crate::rx::{RxState, SlotBuf};
use crate::wire::admission::{self, Event, RateLimit, Requests};
use crate::wire::spec::{self, Engine, Miss};
use crate::zcnet::bh::now_ns;
use crate::zcnet::helpers::random_u32;
use crate::zcnet::netdev::NetDevice;
use crate::zcnet::page::PageRing;
use crate::zcnet::percpu::PerCpuCounters;
use crate::zcnet::rtnl::ExtAck;
use crate::zcnet::skbuff::{SkBuff, SkbChain};
use crate::zcnet::stacked::{self, Ctx, Rx, TxResult};
use crate::zcnet::text::TextBuf;
use crate::{
    counters::NCOUNTERS, zcnet, DEFAULT_GRANT_MS, DEFAULT_MTU, DEFAULT_SLOTS, ETH_HLEN,
    ETH_P_ADM_BE, ETH_P_IPV6_BE, ETH_P_IP_BE, REQUESTS, SLOTS,
};
use core::fmt::Write;
use kernel::{
    new_spinlock,
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
    sync::SpinLock,
    uaccess::UserPtr,
};

#[pin_data]
pub(crate) struct ZcFrag {
    /// Counted per CPU: the datapath bumps them on every frame.
    pub(crate) counters: PerCpuCounters<NCOUNTERS>,
    pub(crate) cfg: Config,
    /// Entries in `adm` (the transmit path skips the lock when zero).
    pub(crate) nrequests: Atomic<u32>,
    /// The receiver: speculation slots and the grants reserving them.
    #[pin]
    pub(crate) rx: SpinLock<RxState>,
    /// The requester: admission requests this device sent. Taken in the
    /// transmit path, the rx handler and the timer (bottom halves off), and
    /// by the ioctl under a [`BhGuard`].
    #[pin]
    pub(crate) adm: SpinLock<Requests<REQUESTS>>,
}

impl ZcFrag {
    pub(crate) fn grant_ns(&self) -> u64 {
        u64::from(self.cfg.grant_ms.load(Relaxed)) * 1_000_000
    }

    /// A new device's engine state, whichever front end it has.
    pub(crate) fn init() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            counters: PerCpuCounters::new(&NAMES)?,
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
                answers: RateLimit::new(admission::ANSWER_BURST, admission::ANSWER_RATE),
            }),
            adm <- new_spinlock!(Requests::new(admission::Timing::DEFAULT, random_u32)),
        })
    }

    /// Sends a packet the stack gave the device: on the wire as it is when
    /// it fits, as fragments when it is an IPv4 packet that does not.
    pub(crate) fn transmit(&self, skb: SkBuff, port: &dyn Port) -> TxResult {
        if skb.is_gso() {
            return self.transmit_gso(skb, port);
        }
        let len = skb.len();
        let ipv4 = skb.protocol_be() == ETH_P_IP_BE;
        let big = len as usize > ETH_HLEN + port.wire_mtu() as usize;
        if ipv4 {
            self.watch_tx(&skb, big, port);
        }
        if !big {
            self.counters.inc(c::TX_PASSTHROUGH);
            let ok = port.send(skb);
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
            // IPv6 is never fragmented on the way (RFC 8200: only its
            // source does): answered with Packet Too Big and the wire's
            // MTU, as a tunnel does, so the sender's stack learns the path
            // MTU and fragments or segments for it; then dropped.
            if skb.protocol_be() == ETH_P_IPV6_BE {
                skb.icmpv6_too_big(port.wire_mtu());
            }
            return self.drop_tx(c::TX_DROP_NOT_IPV4, skb);
        }
        self.fragment(skb, port)
    }

    /// A frame from the wire.
    pub(crate) fn rx_frame(&self, skb: SkBuff, port: &dyn Port) -> Rx {
        self.counters.inc(c::RX_FRAMES);
        if skb.vlan_tagged() {
            // A tag for a VLAN with no device here: the stack drops it as
            // another host's (PACKET_OTHERHOST). Speculating, or answering
            // an admission frame, would carry it across VLANs untagged.
            self.counters.inc(c::RX_VLAN_TAGGED);
            return Rx::Pass(skb);
        }
        let proto = skb.protocol_be();
        if proto == ETH_P_ADM_BE && skb.is_for_host() {
            self.on_adm_frame(skb, port);
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
        self.speculate(skb, port.dev(), port)
    }

    /// The engine's timer fired (softirq).
    pub(crate) fn tick(&self, port: &dyn Port) {
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
                port.arm_timer(st.engine.params().timeout_ns / 1000);
            }
            if st.engine.grants() > 0 {
                port.arm_timer(grant_ns / 4000);
            }
            self.counters
                .set(c::GRANTS_ACTIVE, st.engine.grants() as u64);
            self.update_gauge(&st);
        }
        port.receive_all(&mut expired);
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
                port.arm_timer(at.saturating_sub(now) / 1000);
            }
            self.update_requests(&adm);
        }
        self.flush_outbox(port, &out);
    }

    /// Attribute `idx` of the sysfs group (`/sys/class/net/DEV/zcfrag/`),
    /// whichever front end the device has (its wire's MTU `wire_mtu`).
    pub(crate) fn show_setting(&self, idx: usize, out: &mut TextBuf<'_>, wire_mtu: u32) -> Result {
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
            attr::WIRE_MTU => writeln!(out, "{wire_mtu}"),
            _ => return Err(EINVAL),
        };
        Ok(())
    }

    /// Stores a value written to sysfs attribute `idx` (process context).
    pub(crate) fn store_setting(&self, idx: usize, input: &[u8]) -> Result {
        let v = match (idx, core::str::from_utf8(input).map(str::trim)) {
            (attr::ADMISSION, Ok("open")) => 0,
            (attr::ADMISSION, Ok("required")) => 1,
            (attr::ADMISSION, _) => return Err(EINVAL),
            _ => parse_u32(input, 0, u32::MAX)?,
        };
        self.cfg.set(idx, v)
    }

    /// The device is going: every slot and request let go, a Fast_Rel
    /// for every grant it holds.
    pub(crate) fn shutdown(&self, port: &dyn Port) {
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
        self.flush_outbox(port, &out);
    }
}

#[vtable]
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
        Self::init()
    }

    fn xmit(&self, skb: SkBuff, _lower: &NetDevice, ctx: &Ctx<'_>) -> TxResult {
        self.transmit(skb, ctx)
    }

    fn rx(&self, skb: SkBuff, _dev: &NetDevice, ctx: &Ctx<'_>) -> Rx {
        self.rx_frame(skb, ctx)
    }

    fn on_timer(&self, _dev: &NetDevice, ctx: &Ctx<'_>) {
        self.tick(ctx)
    }

    fn teardown(&self, ctx: &Ctx<'_>) {
        self.shutdown(ctx)
    }

    fn stats(&self, out: &mut [u64]) {
        self.counters.snapshot(out);
    }

    fn sysfs_show(&self, idx: usize, out: &mut TextBuf<'_>, ctx: &Ctx<'_>) -> Result {
        self.show_setting(idx, out, ctx.lower().mtu())
    }

    fn sysfs_store(&self, idx: usize, input: &[u8], ctx: &Ctx<'_>) -> Result {
        if idx == attr::WIRE_MTU {
            ctx.dev()
                .warn(c"the wire MTU of a stacked device is its lower device's: set that (ip link set LOWER mtu N)");
            return Err(zcnet::errno::eopnotsupp());
        }
        self.store_setting(idx, input)
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

    fn rx_usecs(&self) -> u32 {
        self.cfg.timeout_us.load(Relaxed)
    }

    fn set_rx_usecs(&self, usecs: u32) -> Result {
        self.cfg.set(attr::TIMEOUT_US, usecs)
    }

    fn private_ioctl(&self, dev: &NetDevice, ctx: &Ctx<'_>, cmd: u32, arg: UserPtr) -> Result {
        match cmd {
            admit::ADMISSION_IOCTL => self.admission_ioctl(dev, ctx, arg),
            _ => Err(zcnet::errno::eopnotsupp()),
        }
    }
}
