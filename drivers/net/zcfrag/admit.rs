// SPDX-License-Identifier: GPL-2.0

//! Admission control glue (paper §4): frames in and out, implicit and
//! explicit requests.

use crate::counters::c;
use crate::device::ZcFrag;
use crate::port::Port;
use crate::wire::admission::{self, Asked, Frame, Kind, Requests, State};
use crate::wire::ipv4;
use crate::wire::spec::{FlowKey, Grant, Released};
use crate::zcnet::bh::{now_ns, BhGuard};
use crate::zcnet::netdev::NetDevice;
use crate::zcnet::skbuff::SkBuff;
use crate::zcnet::text::TextBuf;
use crate::zcnet::uapi::{adm_cmd, adm_state, ZcfragAdmission};
use crate::{ETH_HLEN, REQUESTS, SLOTS};
use core::fmt::Write;
use core::mem::size_of;
use kernel::{
    prelude::*,
    sync::atomic::Relaxed,
    uaccess::{UserPtr, UserSlice},
};

/// The sub-command (`SIOCDEVPRIVATE` + 0) of explicit admission; its
/// argument is a `struct zcfrag_admission` (`include/uapi/zcnet/zcfrag.h`).
pub(crate) const ADMISSION_IOCTL: u32 = 0;

/// A request's state as the ioctl reports it: state, slot, tries.
pub(crate) fn state_code(st: Option<State>) -> (u32, u8, u32) {
    match st {
        None => (adm_state::NONE, 0, 0),
        Some(State::Pending { tries }) => (adm_state::PENDING, 0, u32::from(tries)),
        Some(State::Granted { slot }) => (adm_state::GRANTED, slot, 0),
        Some(State::Refused) => (adm_state::REFUSED, 0, 0),
        Some(State::NoAnswer) => (adm_state::NO_ANSWER, 0, 0),
    }
}

/// Admission frames to send once the locks are dropped.
pub(crate) struct Outbox {
    pub(crate) frames: [Option<(Frame, [u8; 6])>; REQUESTS + 1],
    pub(crate) n: usize,
}

impl Outbox {
    pub(crate) const fn new() -> Self {
        Self {
            frames: [None; REQUESTS + 1],
            n: 0,
        }
    }

    pub(crate) fn push(&mut self, f: Frame, peer: [u8; 6]) {
        if let Some(slot) = self.frames.get_mut(self.n) {
            *slot = Some((f, peer));
            self.n += 1;
        }
    }
}

impl ZcFrag {
    /// Sends one admission frame to `peer` on the wire.
    pub(crate) fn send_adm(&self, port: &dyn Port, peer: [u8; 6], f: &Frame) {
        let mut b = [0u8; ETH_HLEN + admission::FRAME_LEN];
        b[..6].copy_from_slice(&peer);
        b[6..12].copy_from_slice(&port.wire().mac_addr());
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
        match SkBuff::frame(port.wire(), &b) {
            Some(skb) => {
                if !port.send(skb) {
                    self.counters.inc(c::TX_DROP_LOWER);
                }
            }
            None => self.counters.inc(c::TX_DROP_NOMEM),
        }
    }

    pub(crate) fn flush_outbox(&self, port: &dyn Port, out: &Outbox) {
        for (f, peer) in out.frames.iter().take(out.n).flatten() {
            self.send_adm(port, *peer, f);
        }
    }

    pub(crate) fn update_requests(&self, adm: &Requests<REQUESTS>) {
        let n = adm.len() as u32;
        self.nrequests.store(n, Relaxed);
        self.counters.set(c::REQUESTS_ACTIVE, u64::from(n));
    }

    /// An admission frame arrived (rx handler).
    pub(crate) fn on_adm_frame(&self, skb: SkBuff, port: &dyn Port) {
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
        if peer == [0; 6] || peer[0] & 1 != 0 {
            // No station sends from a group or an all-zero address: an
            // answer to it would go to every station (or none).
            self.counters.inc(c::ADM_BAD_SOURCE);
            return;
        }
        let now = now_ns();
        match f.kind {
            Kind::Req => {
                self.counters.inc(c::ADM_REQUESTS_RECEIVED);
                let grant_ms = self.cfg.grant_ms.load(Relaxed);
                let answer = {
                    let mut st = self.rx.lock();
                    if !st.answers.allow(now) {
                        // Past the answer budget: neither considered nor
                        // answered (the requester retries).
                        self.counters.inc(c::ADM_RATE_LIMITED);
                        return;
                    }
                    self.apply_cfg(&mut st);
                    let g = st.engine.grant(f.key, peer, now);
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
                        Grant::Refused => f.nack(admission::NACK_BUSY),
                        Grant::OverCap => {
                            self.counters.inc(c::ADM_REFUSED_CAP);
                            f.nack(admission::NACK_CAP)
                        }
                        Grant::HeldByOther => {
                            self.counters.inc(c::ADM_REFUSED_HELD);
                            f.nack(admission::NACK_HELD)
                        }
                    }
                };
                if answer.kind == Kind::Ack {
                    // Idle grants are taken back by the timer.
                    port.arm_timer(u64::from(grant_ms) * 250);
                }
                self.send_adm(port, peer, &answer);
            }
            Kind::Rel => {
                self.counters.inc(c::ADM_RELEASES_RECEIVED);
                let mut st = self.rx.lock();
                // Only the station the grant went to gives it back.
                if st.engine.release(&f.key, &peer) == Released::NotHolder {
                    self.counters.inc(c::ADM_REL_NOT_HOLDER);
                }
                self.counters
                    .set(c::GRANTS_ACTIVE, st.engine.grants() as u64);
            }
            Kind::Ack | Kind::NAck => {
                let mut adm = self.adm.lock();
                match adm.on_answer(&f, peer, now) {
                    Some(State::Granted { .. }) => {
                        self.counters.inc(c::ADM_ANSWERS_ACK);
                        // The grant is renewed every third of the
                        // receiver's idle timeout (`Requests::on_timer`).
                        if let Some(at) = adm.next_due() {
                            port.arm_timer(at.saturating_sub(now) / 1000);
                        }
                    }
                    Some(_) => self.counters.inc(c::ADM_ANSWERS_NACK),
                    None => self.counters.inc(c::ADM_BAD_FRAMES),
                }
            }
        }
    }

    /// The requester's look at an outgoing packet: asks for a slot for a
    /// flow sending page-sized packets (implicit admission), keeps its entry
    /// alive, and releases the slot when a TCP connection closes.
    pub(crate) fn watch_tx(&self, skb: &SkBuff, big: bool, port: &dyn Port) {
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
            if port.dying() {
                // Teardown released every request under this lock; a new
                // one now would outlive it.
                return;
            }
            if closing {
                // Release on close is for the driver's own requests, by the
                // connection that asked (another connection between the
                // same hosts may close while it runs); an explicit grant
                // stays until zcctl releases it.
                if let Some((rel, p)) = adm.close(&key, (sport, dport)) {
                    out.push(rel, p);
                }
            } else if big && !adm.touch(&key, now) && implicit {
                match adm.request(key, (sport, dport), peer, false, now) {
                    Asked::Send(f) => {
                        out.push(f, peer);
                        port.arm_timer(adm.timing().retry_ns / 1000);
                    }
                    Asked::Full => self.counters.inc(c::ADM_TABLE_FULL),
                    Asked::Already => {}
                }
            }
            self.update_requests(&adm);
        }
        self.flush_outbox(port, &out);
    }

    /// Explicit admission (zcctl, `SIOCDEVPRIVATE`): `arg` points to a
    /// `struct zcfrag_admission`, read and written back whole.
    pub(crate) fn admission_ioctl(&self, dev: &NetDevice, port: &dyn Port, arg: UserPtr) -> Result {
        let (mut rd, mut wr) = UserSlice::new(arg, size_of::<ZcfragAdmission>()).reader_writer();
        let mut a: ZcfragAdmission = rd.read()?;
        let key = FlowKey {
            src: a.src,
            dst: a.dst,
            protocol: a.protocol,
        };
        if a.cmd != adm_cmd::QUERY && !dev.net_admin_capable() {
            return Err(EPERM);
        }
        if !(key.protocol == 6 || key.protocol == 17) {
            return Err(EINVAL);
        }
        let mut out = Outbox::new();
        let st = {
            let _bh = BhGuard::new();
            let mut adm = self.adm.lock();
            match a.cmd {
                adm_cmd::REQUEST => {
                    // A unicast MAC address: not all zero, group bit clear.
                    if a.peer == [0; 6] || a.peer[0] & 1 != 0 {
                        return Err(EINVAL);
                    }
                    match adm.request(key, (a.sport, a.dport), a.peer, true, now_ns()) {
                        Asked::Send(f) => {
                            out.push(f, a.peer);
                            port.arm_timer(adm.timing().retry_ns / 1000);
                        }
                        Asked::Already => {}
                        Asked::Full => {
                            self.counters.inc(c::ADM_TABLE_FULL);
                            return Err(ENOSPC);
                        }
                    }
                }
                adm_cmd::QUERY => {}
                adm_cmd::RELEASE => {
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
            self.flush_outbox(port, &out);
        }
        (a.state, a.slot, a.tries) = state_code(st);
        wr.write(&a)
    }

    /// The `admissions` sysfs file: grants held (receiver) and requests
    /// (requester).
    pub(crate) fn show_admissions(&self, out: &mut TextBuf<'_>) -> Result {
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
                State::Granted { slot } => i32::from(slot),
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
}
