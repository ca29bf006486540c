// SPDX-License-Identifier: GPL-2.0

//! Admission control for speculation slots (paper §4.1, §4.2): the frames and
//! the requester's state.
//!
//! A sender that is about to stream page-sized packets asks the receiver's
//! driver for a speculation slot with a `Fast_Req` frame; the receiver answers
//! `Fast_Ack` (a slot is reserved for the flow) or `Fast_NAck` (every slot is
//! busy). The data never waits for the answer: it flows on the normal path
//! from the first packet, and speculation starts once a slot is granted. A
//! refused stream keeps running on the normal path. `Fast_Rel` gives the slot
//! back when the sender is done (its connection closed, or its flow stayed
//! idle); a grant that stays idle is taken back by the receiver. A grant asked
//! for explicitly is held until released: the requester renews it with a new
//! `Fast_Req` every third of the idle timeout the receiver announced in its
//! `Fast_Ack`, so only a requester that went away loses it. A grant the
//! driver asked for by itself (implicit) is renewed the same way while its
//! flow sends, so a receiver that lost it (reloaded, a shorter timeout, a
//! spoofed release) is noticed: a `Fast_NAck` or no answer to a renewal ends
//! the requester's belief that it holds a slot, and the flow asks again later.
//!
//! Tokens come from a source the table is given (the kernel's random numbers
//! in the driver, a counter in the tests); an answer must carry the token of
//! the request it answers, come from the station asked, and find that
//! request pending or renewing, or it is ignored.
//!
//! The frames are Ethernet frames of their own EtherType, handled by the
//! drivers at both ends and never seen by the IP stack:
//!
//! ```text
//!  Ethernet: destination, source, EtherType 0x88b5 (IEEE 802 local
//!            experimental EtherType 1)
//!  0  u8   version (1)
//!  1  u8   kind: 1 Fast_Req, 2 Fast_Ack, 3 Fast_NAck, 4 Fast_Rel
//!  2  u8   slot (Fast_Ack: the slot granted) or reason (Fast_NAck: 1, all
//!          slots busy; 2, the requester holds its share of the slots; 3,
//!          another station holds the flow's grant); Fast_Rel: the slot; 0
//!          otherwise
//!  3  u8   IP protocol of the flow (6 TCP, 17 UDP)
//!  4  u32  token, chosen by the requester and echoed in the answer
//!  8  4B   IPv4 source address of the flow (the data sender)
//! 12  4B   IPv4 destination address of the flow (the data receiver)
//! 16  u16  source port (informational)
//! 18  u16  destination port (informational)
//! 20  u32  idle timeout in milliseconds after which the receiver takes an
//!          unused grant back (Fast_Ack), 0 otherwise
//! 24  u32  reserved, 0
//! ```
//!
//! All fields are in network byte order; the frame is padded to the Ethernet
//! minimum. A receiver ignores (and counts) frames of another version, an
//! unknown kind, or a short length.

use super::spec::FlowKey;

/// The EtherType of admission frames (IEEE 802 local experimental 1).
pub const ETHERTYPE: u16 = 0x88b5;
/// The frame format version.
pub const VERSION: u8 = 1;
/// Bytes of an admission frame after the Ethernet header.
pub const FRAME_LEN: usize = 28;
/// Fast_NAck reason: every slot is reserved or busy.
pub const NACK_BUSY: u8 = 1;
/// Fast_NAck reason: the requesting station already holds its share of the
/// slots ([`spec::Engine::grant_cap`](super::spec::Engine::grant_cap)).
pub const NACK_CAP: u8 = 2;
/// Fast_NAck reason: another station holds the flow's grant.
pub const NACK_HELD: u8 = 3;

/// The kinds of admission frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Asks for a slot.
    Req = 1,
    /// Grants one.
    Ack = 2,
    /// Refuses.
    NAck = 3,
    /// Gives a slot back.
    Rel = 4,
}

/// One admission frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// What the frame says.
    pub kind: Kind,
    /// The slot granted (Ack) or the reason (NAck).
    pub arg: u8,
    /// The requester's token.
    pub token: u32,
    /// The flow.
    pub key: FlowKey,
    /// Source port (informational).
    pub sport: u16,
    /// Destination port (informational).
    pub dport: u16,
    /// Idle timeout of a grant, in milliseconds (Ack).
    pub idle_ms: u32,
}

/// Why a frame was not understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// Shorter than [`FRAME_LEN`].
    Short,
    /// Not [`VERSION`].
    Version,
    /// Not a known [`Kind`].
    Kind,
}

impl Frame {
    /// Writes the frame.
    pub fn encode(&self, out: &mut [u8; FRAME_LEN]) {
        out.fill(0);
        out[0] = VERSION;
        out[1] = self.kind as u8;
        out[2] = self.arg;
        out[3] = self.key.protocol;
        out[4..8].copy_from_slice(&self.token.to_be_bytes());
        out[8..12].copy_from_slice(&self.key.src);
        out[12..16].copy_from_slice(&self.key.dst);
        out[16..18].copy_from_slice(&self.sport.to_be_bytes());
        out[18..20].copy_from_slice(&self.dport.to_be_bytes());
        out[20..24].copy_from_slice(&self.idle_ms.to_be_bytes());
    }

    /// Reads a frame (the bytes after the Ethernet header).
    pub fn decode(b: &[u8]) -> Result<Frame, FrameError> {
        let b: &[u8; FRAME_LEN] = b
            .get(..FRAME_LEN)
            .and_then(|b| b.try_into().ok())
            .ok_or(FrameError::Short)?;
        if b[0] != VERSION {
            return Err(FrameError::Version);
        }
        let kind = match b[1] {
            1 => Kind::Req,
            2 => Kind::Ack,
            3 => Kind::NAck,
            4 => Kind::Rel,
            _ => return Err(FrameError::Kind),
        };
        let u16_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Ok(Frame {
            kind,
            arg: b[2],
            token: u32_at(4),
            key: FlowKey {
                src: [b[8], b[9], b[10], b[11]],
                dst: [b[12], b[13], b[14], b[15]],
                protocol: b[3],
            },
            sport: u16_at(16),
            dport: u16_at(18),
            idle_ms: u32_at(20),
        })
    }

    /// The refusal of this request, with `reason` (`NACK_*`).
    pub fn nack(&self, reason: u8) -> Frame {
        Frame {
            kind: Kind::NAck,
            arg: reason,
            idle_ms: 0,
            ..*self
        }
    }

    /// The answer to this request: Ack of `slot`, or NAck ([`NACK_BUSY`]).
    pub fn answer(&self, slot: Option<usize>, idle_ms: u32) -> Frame {
        Frame {
            kind: if slot.is_some() {
                Kind::Ack
            } else {
                Kind::NAck
            },
            arg: match slot {
                Some(s) => s as u8,
                None => NACK_BUSY,
            },
            idle_ms: if slot.is_some() { idle_ms } else { 0 },
            ..*self
        }
    }
}

/// Answers a receiver sends at once at most ([`RateLimit`]).
pub const ANSWER_BURST: u32 = 16;
/// Answers a receiver sends per second at most, over time.
pub const ANSWER_RATE: u32 = 100;

/// A token bucket: `burst` events at once, refilled at `per_s` a second. A
/// receiver answers (and considers) a Fast_Req only when it allows one, so a
/// flood of requests draws at most this many answers: no amplifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    burst: u32,
    per_s: u32,
    /// Tokens held, in billionths (one token is `NS_PER_S`).
    credit: u64,
    last_ns: u64,
}

const NS_PER_S: u64 = 1_000_000_000;

impl RateLimit {
    /// A full bucket.
    pub const fn new(burst: u32, per_s: u32) -> Self {
        Self {
            burst,
            per_s,
            credit: burst as u64 * NS_PER_S,
            last_ns: 0,
        }
    }

    /// Takes one token at `now_ns`: false when the bucket is empty.
    pub fn allow(&mut self, now_ns: u64) -> bool {
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        let full = u64::from(self.burst) * NS_PER_S;
        self.credit = self
            .credit
            .saturating_add(dt.saturating_mul(u64::from(self.per_s)))
            .min(full);
        if self.credit >= NS_PER_S {
            self.credit -= NS_PER_S;
            true
        } else {
            false
        }
    }
}

/// Where a request stands, as the requester sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Sent `tries` times, no answer yet.
    Pending {
        /// Requests sent so far.
        tries: u8,
    },
    /// Granted: the receiver reserved this slot.
    Granted {
        /// The slot at the receiver.
        slot: u8,
    },
    /// Refused: the stream runs on the normal path.
    Refused,
    /// No answer after every retry (the receiver runs no zcfrag, or frames
    /// are lost): the stream runs on the normal path.
    NoAnswer,
}

impl State {
    /// A short name, for listings.
    pub fn name(&self) -> &'static str {
        match self {
            State::Pending { .. } => "pending",
            State::Granted { .. } => "granted",
            State::Refused => "refused",
            State::NoAnswer => "no-answer",
        }
    }
}

/// One request of the requester.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// The flow.
    pub key: FlowKey,
    /// Ports of the connection that asked (informational).
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// The receiver's MAC address.
    pub peer: [u8; 6],
    /// The token of the request (or renewal) in flight, or of the last one.
    pub token: u32,
    /// Where it stands.
    pub state: State,
    /// Asked for explicitly (zcctl) rather than by the driver itself.
    pub explicit: bool,
    /// When to retry (Pending), or to renew or retry a renewal (Granted).
    next_ns: u64,
    /// Renewal period of a grant (a third of the receiver's idle timeout),
    /// 0 for none.
    renew_ns: u64,
    /// Renewal requests sent without an answer yet (Granted), 0 when none
    /// is outstanding.
    renew_tries: u8,
    /// Last time the flow sent something, or the state changed.
    pub last_ns: u64,
    /// When the state last changed (a refused or unanswered entry is
    /// forgotten this long after it settled, so that its flow asks again).
    since_ns: u64,
}

impl Request {
    /// A frame of `kind` about this request (`arg`: the slot of a Fast_Rel).
    fn frame(&self, kind: Kind, arg: u8) -> Frame {
        Frame {
            kind,
            arg,
            token: self.token,
            key: self.key,
            sport: self.sport,
            dport: self.dport,
            idle_ms: 0,
        }
    }
}

/// Timing of the requester.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Between two requests of one flow.
    pub retry_ns: u64,
    /// Requests sent before giving up (`NoAnswer`).
    pub tries: u8,
    /// An entry whose flow sent nothing for this long is forgotten (a
    /// granted one with a Fast_Rel).
    pub idle_ns: u64,
}

impl Timing {
    /// 100 ms between tries, 3 tries, 2 s idle.
    pub const DEFAULT: Timing = Timing {
        retry_ns: 100_000_000,
        tries: 3,
        idle_ns: 2_000_000_000,
    };
}

/// What the requester asks its caller to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Send `frame` to `peer`.
    Send {
        /// The frame.
        frame: Frame,
        /// Its destination MAC address.
        peer: [u8; 6],
        /// A retry of an earlier request.
        retry: bool,
    },
    /// A request went unanswered after every try.
    NoAnswer(FlowKey),
    /// An idle entry was forgotten.
    Forgotten(FlowKey),
}

/// Outcome of [`Requests::request`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// A request frame to send.
    Send(Frame),
    /// The flow already has a pending or granted request.
    Already,
    /// The table is full of live requests.
    Full,
}

/// The requester's table: at most `M` flows.
#[derive(Debug)]
pub struct Requests<const M: usize> {
    entries: [Option<Request>; M],
    /// Where tokens come from: unpredictable ones in the kernel, so that a
    /// station that cannot see the request cannot answer it.
    tokens: fn() -> u32,
    timing: Timing,
}

impl<const M: usize> Requests<M> {
    /// An empty table that takes its tokens from `tokens`.
    pub const fn new(timing: Timing, tokens: fn() -> u32) -> Self {
        Self {
            entries: [None; M],
            tokens,
            timing,
        }
    }

    /// The timing.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// Sets the idle time after which an entry is forgotten.
    pub fn set_idle_ns(&mut self, ns: u64) {
        self.timing.idle_ns = ns;
    }

    fn find(&self, key: &FlowKey) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.is_some_and(|e| e.key == *key))
    }

    /// The entry of `key`.
    pub fn get(&self, key: &FlowKey) -> Option<&Request> {
        self.entries[self.find(key)?].as_ref()
    }

    /// Every entry.
    pub fn iter(&self) -> impl Iterator<Item = &Request> {
        self.entries.iter().flatten()
    }

    /// Entries in the table.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// True when the table holds nothing (the transmit path then skips it).
    pub fn is_empty(&self) -> bool {
        self.entries.iter().all(|e| e.is_none())
    }

    /// Asks for a slot for `key` at `peer`. An explicit request restarts a
    /// refused or unanswered one; the driver's own (implicit) requests do not
    /// repeat until the entry is forgotten. A full table makes room by
    /// forgetting the oldest refused or unanswered entry.
    pub fn request(
        &mut self,
        key: FlowKey,
        ports: (u16, u16),
        peer: [u8; 6],
        explicit: bool,
        now_ns: u64,
    ) -> Asked {
        let at = match self.find(&key) {
            Some(i) => {
                let Some(e) = self.entries[i] else {
                    return Asked::Full;
                };
                let settled = matches!(e.state, State::Refused | State::NoAnswer);
                if !(explicit && settled) {
                    return Asked::Already;
                }
                i
            }
            None => match self.entries.iter().position(|e| e.is_none()) {
                Some(i) => i,
                None => {
                    let old = self
                        .entries
                        .iter()
                        .enumerate()
                        .filter_map(|(i, e)| e.map(|e| (i, e)))
                        .filter(|(_, e)| matches!(e.state, State::Refused | State::NoAnswer))
                        .min_by_key(|(_, e)| e.last_ns);
                    match old {
                        Some((i, _)) => i,
                        None => return Asked::Full,
                    }
                }
            },
        };
        let token = (self.tokens)();
        self.entries[at] = Some(Request {
            key,
            sport: ports.0,
            dport: ports.1,
            peer,
            token,
            state: State::Pending { tries: 1 },
            explicit,
            next_ns: now_ns.saturating_add(self.timing.retry_ns),
            renew_ns: 0,
            renew_tries: 0,
            last_ns: now_ns,
            since_ns: now_ns,
        });
        Asked::Send(Frame {
            kind: Kind::Req,
            arg: 0,
            token,
            key,
            sport: ports.0,
            dport: ports.1,
            idle_ms: 0,
        })
    }

    /// An answer arrived from the station `from`: returns the new state when
    /// it answers a pending request or the renewal of a grant (matching
    /// flow, token and the station asked), `None` for a stray frame.
    pub fn on_answer(&mut self, f: &Frame, from: [u8; 6], now_ns: u64) -> Option<State> {
        let i = self.find(&f.key)?;
        let e = self.entries[i].as_mut()?;
        // Waiting for an answer: a request, or the renewal of a grant.
        let live = match e.state {
            State::Pending { .. } => true,
            State::Granted { .. } => e.renew_tries > 0,
            State::Refused | State::NoAnswer => false,
        };
        if e.token != f.token || e.peer != from || !live {
            return None;
        }
        let first = matches!(e.state, State::Pending { .. });
        e.state = match f.kind {
            Kind::Ack => State::Granted { slot: f.arg },
            Kind::NAck => State::Refused,
            Kind::Req | Kind::Rel => return None,
        };
        if first {
            // The answer to a renewal is no sign of the flow's activity.
            e.last_ns = now_ns;
        }
        e.since_ns = now_ns;
        e.renew_tries = 0;
        // Every grant is renewed: an explicit one for as long as it is held,
        // an implicit one while its flow sends.
        e.renew_ns = if f.kind == Kind::Ack {
            u64::from(f.idle_ms) * 1_000_000 / 3
        } else {
            0
        };
        if e.renew_ns > 0 {
            e.next_ns = now_ns.saturating_add(e.renew_ns);
        }
        Some(e.state)
    }

    /// When the timer should next run for this table (`None`: nothing to
    /// do), without changing anything.
    pub fn next_due(&self) -> Option<u64> {
        let t = self.timing;
        self.iter()
            .map(|e| match e.state {
                State::Pending { .. } => e.next_ns,
                State::Granted { .. } if e.renew_ns > 0 && e.explicit => e.next_ns,
                State::Granted { .. } if e.renew_ns > 0 => {
                    e.next_ns.min(e.last_ns.saturating_add(t.idle_ns))
                }
                State::Granted { .. } => e.last_ns.saturating_add(t.idle_ns),
                State::Refused | State::NoAnswer => e.since_ns.saturating_add(t.idle_ns),
            })
            .min()
    }

    /// The flow sent a packet: keeps its entry alive. True when it has one.
    pub fn touch(&mut self, key: &FlowKey, now_ns: u64) -> bool {
        match self.find(key).and_then(|i| self.entries[i].as_mut()) {
            Some(e) => {
                e.last_ns = now_ns;
                true
            }
            None => false,
        }
    }

    /// A TCP connection of flow `key` with these ports closed (FIN or RST):
    /// forgets the driver's own (implicit) request when that connection is
    /// the one that asked, and returns the Fast_Rel to send when it held a
    /// grant. Another connection between the same hosts closing changes
    /// nothing, nor does any close for an explicit request (zcctl releases
    /// it).
    pub fn close(&mut self, key: &FlowKey, ports: (u16, u16)) -> Option<(Frame, [u8; 6])> {
        let e = self.get(key)?;
        if e.explicit || (e.sport, e.dport) != ports {
            return None;
        }
        self.release(key)
    }

    /// The flow is done (closed, or released by zcctl): forgets it, and
    /// returns the Fast_Rel to send when it held a grant.
    pub fn release(&mut self, key: &FlowKey) -> Option<(Frame, [u8; 6])> {
        let e = self.entries[self.find(key)?].take()?;
        match e.state {
            State::Granted { slot } => Some((e.frame(Kind::Rel, slot), e.peer)),
            _ => None,
        }
    }

    /// The device is going away: forgets every entry, calling `out` with
    /// the Fast_Rel (and the peer) of each that held a grant.
    pub fn release_all(&mut self, mut out: impl FnMut(Frame, [u8; 6])) {
        for r in self.entries.iter_mut().filter_map(Option::take) {
            if let State::Granted { slot } = r.state {
                out(r.frame(Kind::Rel, slot), r.peer);
            }
        }
    }

    /// Retries, renews, gives up, and forgets idle entries; calls `out` for
    /// each thing to do. Returns when it next wants to run (`None`: nothing
    /// pending and nothing to forget).
    ///
    /// A grant is renewed every third of the idle timeout the receiver
    /// announced, with a fresh token, and the renewal retried like a request;
    /// a renewal left unanswered after every try ends the grant (`NoAnswer`),
    /// as a `Fast_NAck` to it does (`Refused`). An explicit grant is renewed
    /// until released; an implicit one while its flow sends, and forgotten
    /// with a Fast_Rel once the flow is idle. A refused or unanswered entry is
    /// forgotten `idle_ns` after it settled, so that a flow still sending
    /// asks again.
    pub fn on_timer(&mut self, now_ns: u64, mut out: impl FnMut(Event)) -> Option<u64> {
        let t = self.timing;
        let tokens = self.tokens;
        for slot in self.entries.iter_mut() {
            let Some(e) = slot.as_mut() else { continue };
            match e.state {
                State::Pending { tries } if now_ns >= e.next_ns => {
                    if tries >= t.tries {
                        e.state = State::NoAnswer;
                        e.last_ns = now_ns;
                        e.since_ns = now_ns;
                        out(Event::NoAnswer(e.key));
                    } else {
                        e.state = State::Pending { tries: tries + 1 };
                        e.next_ns = now_ns.saturating_add(t.retry_ns);
                        out(Event::Send {
                            frame: e.frame(Kind::Req, 0),
                            peer: e.peer,
                            retry: true,
                        });
                    }
                }
                State::Pending { .. } => {}
                State::Granted { slot: s } => {
                    let idle = now_ns >= e.last_ns.saturating_add(t.idle_ns);
                    if idle && (!e.explicit || e.renew_ns == 0) {
                        // The flow went quiet: give the slot back.
                        let gone = *e;
                        *slot = None;
                        out(Event::Send {
                            frame: gone.frame(Kind::Rel, s),
                            peer: gone.peer,
                            retry: false,
                        });
                        out(Event::Forgotten(gone.key));
                        continue;
                    }
                    if e.renew_ns > 0 && now_ns >= e.next_ns {
                        if e.renew_tries >= t.tries {
                            // The receiver no longer answers: whatever it
                            // holds, this side stops counting on it.
                            e.state = State::NoAnswer;
                            e.renew_tries = 0;
                            e.last_ns = now_ns;
                            e.since_ns = now_ns;
                            out(Event::NoAnswer(e.key));
                        } else {
                            if e.renew_tries == 0 {
                                e.token = tokens();
                            }
                            e.renew_tries += 1;
                            e.next_ns = now_ns.saturating_add(t.retry_ns);
                            out(Event::Send {
                                frame: e.frame(Kind::Req, 0),
                                peer: e.peer,
                                retry: e.renew_tries > 1,
                            });
                        }
                    }
                }
                State::Refused | State::NoAnswer => {
                    if now_ns >= e.since_ns.saturating_add(t.idle_ns) {
                        let gone = e.key;
                        *slot = None;
                        out(Event::Forgotten(gone));
                    }
                }
            }
        }
        self.next_due()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

    const PEER: [u8; 6] = [2, 0, 0, 0, 0, 2];

    /// Distinct tokens for the tests (the driver draws random ones).
    fn seq() -> u32 {
        static N: AtomicU32 = AtomicU32::new(0x5eed_0000);
        N.fetch_add(1, Relaxed)
    }

    fn key(n: u8) -> FlowKey {
        FlowKey {
            src: [198, 18, 0, n],
            dst: [198, 18, 0, 2],
            protocol: 6,
        }
    }

    #[test]
    fn frames_round_trip_and_reject_garbage() {
        let f = Frame {
            kind: Kind::Req,
            arg: 0,
            token: 0x0102_0304,
            key: key(1),
            sport: 40000,
            dport: 5201,
            idle_ms: 0,
        };
        let mut b = [0u8; FRAME_LEN];
        f.encode(&mut b);
        assert_eq!(&b[..8], &[1, 1, 0, 6, 1, 2, 3, 4]);
        assert_eq!(Frame::decode(&b), Ok(f));
        let a = f.answer(Some(3), 2000);
        a.encode(&mut b);
        assert_eq!(
            Frame::decode(&b).map(|f| (f.kind, f.arg, f.idle_ms)),
            Ok((Kind::Ack, 3, 2000))
        );
        let n = f.answer(None, 2000);
        assert_eq!((n.kind, n.arg, n.idle_ms), (Kind::NAck, NACK_BUSY, 0));
        assert_eq!(Frame::decode(&b[..FRAME_LEN - 1]), Err(FrameError::Short));
        b[0] = 2;
        assert_eq!(Frame::decode(&b), Err(FrameError::Version));
        b[0] = 1;
        b[1] = 9;
        assert_eq!(Frame::decode(&b), Err(FrameError::Kind));
        // Every byte string decodes or is refused; none panics.
        let mut x = 1u32;
        for _ in 0..20000 {
            for v in b.iter_mut() {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *v = (x & 7) as u8;
            }
            let _ = Frame::decode(&b[..(x as usize % (FRAME_LEN + 4)).min(FRAME_LEN)]);
        }
    }

    #[test]
    fn grant_refuse_release_and_idle() {
        let mut r = Requests::<4>::new(Timing::DEFAULT, seq);
        let Asked::Send(req) = r.request(key(1), (1, 2), PEER, false, 0) else {
            panic!("no request")
        };
        assert_eq!(r.request(key(1), (1, 2), PEER, false, 1), Asked::Already);
        // A stray answer (wrong token) changes nothing.
        let mut stray = req.answer(Some(0), 0);
        stray.token ^= 1;
        assert_eq!(r.on_answer(&stray, PEER, 1), None);
        assert_eq!(
            r.on_answer(&req.answer(Some(5), 0), PEER, 2),
            Some(State::Granted { slot: 5 })
        );
        // Release on close: a Fast_Rel for the granted slot.
        let (rel, peer) = r.release(&key(1)).expect("granted: Fast_Rel");
        assert_eq!((rel.kind, rel.arg, peer), (Kind::Rel, 5, PEER));
        assert!(r.is_empty());
        // Refused, then an explicit request asks again; an implicit one not.
        let Asked::Send(req) = r.request(key(2), (1, 2), PEER, false, 10) else {
            panic!()
        };
        assert_eq!(
            r.on_answer(&req.answer(None, 0), PEER, 11),
            Some(State::Refused)
        );
        assert_eq!(r.request(key(2), (1, 2), PEER, false, 12), Asked::Already);
        assert!(matches!(
            r.request(key(2), (1, 2), PEER, true, 13),
            Asked::Send(_)
        ));
        // An idle granted entry is forgotten with a Fast_Rel.
        let mut r = Requests::<4>::new(Timing::DEFAULT, seq);
        let Asked::Send(req) = r.request(key(3), (1, 2), PEER, false, 0) else {
            panic!()
        };
        r.on_answer(&req.answer(Some(1), 0), PEER, 0);
        let mut ev = [None; 4];
        let mut n = 0;
        let next = r.on_timer(Timing::DEFAULT.idle_ns, |e| {
            ev[n] = Some(e);
            n += 1;
        });
        assert_eq!(next, None);
        assert!(matches!(
            ev[0],
            Some(Event::Send {
                frame: Frame {
                    kind: Kind::Rel,
                    ..
                },
                ..
            })
        ));
        assert_eq!(ev[1], Some(Event::Forgotten(key(3))));
    }

    #[test]
    fn release_all_sends_rel_for_grants_only() {
        let mut r = Requests::<4>::new(Timing::DEFAULT, seq);
        let Asked::Send(a) = r.request(key(1), (1, 2), PEER, false, 0) else {
            panic!()
        };
        let Asked::Send(b) = r.request(key(2), (1, 2), PEER, true, 0) else {
            panic!()
        };
        let Asked::Send(_) = r.request(key(3), (1, 2), PEER, false, 0) else {
            panic!()
        };
        r.on_answer(&a.answer(Some(3), 0), PEER, 1);
        r.on_answer(&b.answer(Some(7), 0), PEER, 1);
        let mut rels = [None; 4];
        let mut n = 0;
        r.release_all(|f, peer| {
            rels[n] = Some((f.kind, f.arg, f.key, peer));
            n += 1;
        });
        assert_eq!(n, 2, "one Fast_Rel per grant, none for the pending request");
        assert!(rels.contains(&Some((Kind::Rel, 3, key(1), PEER))));
        assert!(rels.contains(&Some((Kind::Rel, 7, key(2), PEER))));
        assert!(r.is_empty());
    }

    #[test]
    fn explicit_grants_are_renewed_not_forgotten() {
        let t = Timing::DEFAULT;
        let mut r = Requests::<2>::new(t, seq);
        let Asked::Send(req) = r.request(key(1), (1, 2), PEER, true, 0) else {
            panic!()
        };
        // The receiver takes idle grants back after 300 ms: renew at 100.
        assert_eq!(
            r.on_answer(&req.answer(Some(0), 300), PEER, 0),
            Some(State::Granted { slot: 0 })
        );
        let mut renewals = 0;
        let mut now = 0;
        let mut last = req;
        for _ in 0..100 {
            let mut renewal = None;
            let Some(at) = r.on_timer(now, |e| {
                if let Event::Send {
                    frame,
                    retry: false,
                    ..
                } = e
                {
                    assert_eq!(frame.kind, Kind::Req);
                    renewal = Some(frame);
                }
            }) else {
                panic!("an explicit grant keeps the timer going")
            };
            if let Some(f) = renewal {
                // Each renewal has a token of its own; the receiver answers.
                assert_ne!(f.token, last.token);
                last = f;
                renewals += 1;
                assert_eq!(
                    r.on_answer(&f.answer(Some(0), 300), PEER, now),
                    Some(State::Granted { slot: 0 })
                );
            }
            now = at;
        }
        assert_eq!(renewals, 99);
        assert_eq!(now, 100 * 100_000_000, "every 100 ms");
        assert_eq!(
            r.get(&key(1)).map(|e| e.state),
            Some(State::Granted { slot: 0 })
        );
        // A renewal the receiver refuses (its grant expired and the slot went
        // to another flow) ends the grant; a refusal carrying an older
        // renewal's token does not.
        let mut renewal = None;
        r.on_timer(now, |e| {
            if let Event::Send { frame, .. } = e {
                renewal = Some(frame);
            }
        });
        let renewal = renewal.expect("renewal due");
        assert_eq!(r.on_answer(&last.answer(None, 300), PEER, now), None);
        assert_eq!(r.on_answer(&req.answer(None, 300), PEER, now), None);
        assert_eq!(
            r.on_answer(&renewal.answer(None, 300), PEER, now),
            Some(State::Refused)
        );
    }

    /// Runs the timer up to `until` (each time it asks to run, and at most
    /// every `step`), calling `each(now, event)`.
    fn run<const M: usize>(
        r: &mut Requests<M>,
        from: u64,
        until: u64,
        step: u64,
        mut each: impl FnMut(&mut Requests<M>, u64, Event),
    ) {
        let mut now = from;
        while now <= until {
            let mut ev = [None; 8];
            let mut n = 0;
            let at = r.on_timer(now, |e| {
                if let Some(slot) = ev.get_mut(n) {
                    *slot = Some(e);
                    n += 1;
                }
            });
            for e in ev.iter().flatten() {
                each(r, now, *e);
            }
            now = at.map_or(now + step, |a| a.min(now + step)).max(now + 1);
        }
    }

    #[test]
    fn implicit_grants_are_renewed_while_the_flow_sends() {
        let t = Timing::DEFAULT;
        let ms = 1_000_000;
        let mut r = Requests::<2>::new(t, seq);
        let Asked::Send(req) = r.request(key(1), (40000, 5201), PEER, false, 0) else {
            panic!()
        };
        // The receiver announces 300 ms: renewals every 100 ms.
        r.on_answer(&req.answer(Some(2), 300), PEER, 0);
        let mut renewals = 0;
        let mut rels = 0;
        let mut stop_at = 0;
        run(&mut r, 0, 3100 * ms, 10 * ms, |r, now, e| match e {
            Event::Send { frame, retry, .. } if frame.kind == Kind::Req => {
                assert!(!retry, "answered renewals need no retry");
                assert_eq!((frame.sport, frame.dport), (40000, 5201));
                renewals += 1;
                // The flow sends until 1 s.
                if now <= 1000 * ms {
                    r.touch(&key(1), now);
                    stop_at = now;
                }
                r.on_answer(&frame.answer(Some(2), 300), PEER, now);
            }
            Event::Send { frame, .. } => {
                assert_eq!((frame.kind, frame.arg), (Kind::Rel, 2));
                rels += 1;
                // Forgotten one idle time after the flow's last packet.
                assert!(now >= stop_at + t.idle_ns && now < stop_at + t.idle_ns + 20 * ms);
            }
            _ => {}
        });
        // Renewed while the flow sent and until it went idle, then
        // released once.
        assert!((28..=31).contains(&renewals), "{renewals} renewals");
        assert_eq!(rels, 1);
        assert!(r.is_empty());
    }

    #[test]
    fn a_grant_the_receiver_lost_ends_and_the_flow_asks_again() {
        let t = Timing::DEFAULT;
        let ms = 1_000_000;
        let mut r = Requests::<2>::new(t, seq);
        let Asked::Send(req) = r.request(key(1), (1, 2), PEER, false, 0) else {
            panic!()
        };
        r.on_answer(&req.answer(Some(0), 600), PEER, 0);
        // The receiver went away (reloaded): renewals at 200 ms, then every
        // retry, go unanswered while the flow keeps sending.
        let mut sent = [0u64; 4];
        let mut n = 0;
        let mut gave_up = None;
        run(&mut r, 0, 600 * ms, 10 * ms, |r, now, e| {
            r.touch(&key(1), now);
            match e {
                Event::Send { frame, retry, .. } => {
                    assert_eq!(frame.kind, Kind::Req);
                    assert_eq!(retry, n > 0);
                    sent[n] = now;
                    n += 1;
                }
                Event::NoAnswer(k) => {
                    assert_eq!(k, key(1));
                    gave_up = Some(now);
                }
                Event::Forgotten(_) => panic!("the flow still sends"),
            }
        });
        assert_eq!(n, 3, "one renewal and two retries");
        assert_eq!(sent[..3], [200 * ms, 300 * ms, 400 * ms]);
        assert_eq!(gave_up, Some(500 * ms));
        assert_eq!(r.get(&key(1)).map(|e| e.state), Some(State::NoAnswer));
        // While it is settled the flow does not ask again at every packet...
        assert_eq!(
            r.request(key(1), (1, 2), PEER, false, 600 * ms),
            Asked::Already
        );
        // ... but one idle time after it settled, even though the flow
        // keeps sending, the entry goes and the next packet asks again.
        let mut forgot = None;
        run(&mut r, 600 * ms, 3000 * ms, 10 * ms, |r, now, e| {
            r.touch(&key(1), now);
            if e == Event::Forgotten(key(1)) {
                forgot = Some(now);
            }
        });
        assert_eq!(forgot, Some(500 * ms + t.idle_ns));
        let Asked::Send(again) = r.request(key(1), (1, 2), PEER, false, 3000 * ms) else {
            panic!("asks again")
        };
        // The reloaded receiver grants it anew, maybe another slot.
        assert_eq!(
            r.on_answer(&again.answer(Some(5), 2000), PEER, 3000 * ms),
            Some(State::Granted { slot: 5 })
        );
        // A NAck to a renewal ends an implicit grant too.
        let mut renewal = None;
        r.on_timer(3000 * ms + 2000 * ms / 3, |e| {
            if let Event::Send { frame, .. } = e {
                renewal = Some(frame);
            }
        });
        let renewal = renewal.expect("renewal due");
        assert_eq!(
            r.on_answer(&renewal.nack(NACK_BUSY), PEER, 3700 * ms),
            Some(State::Refused)
        );
    }

    #[test]
    fn answers_must_carry_the_token_and_come_from_the_peer() {
        let mut r = Requests::<2>::new(Timing::DEFAULT, || 0x9e37_79b9);
        let Asked::Send(req) = r.request(key(1), (1, 2), PEER, true, 0) else {
            panic!()
        };
        assert_eq!(req.token, 0x9e37_79b9, "the token comes from the source");
        // A station guessing small or sequential tokens refuses nothing.
        for guess in 0..4096u32 {
            let mut n = req.nack(NACK_BUSY);
            n.token = guess;
            assert_eq!(r.on_answer(&n, PEER, 1), None);
        }
        // The right token from another station: ignored too.
        assert_eq!(
            r.on_answer(&req.nack(NACK_BUSY), [2, 0, 0, 0, 0, 9], 1),
            None
        );
        assert_eq!(
            r.get(&key(1)).map(|e| e.state),
            Some(State::Pending { tries: 1 })
        );
        // Only the exact token, from the peer asked.
        let mut near = req.answer(Some(1), 2000);
        near.token ^= 0x8000_0000;
        assert_eq!(r.on_answer(&near, PEER, 1), None);
        assert_eq!(
            r.on_answer(&req.answer(Some(1), 2000), PEER, 2),
            Some(State::Granted { slot: 1 })
        );
        // Nothing is waiting for an answer now (no renewal in flight): a
        // replay of the right one changes nothing.
        assert_eq!(r.on_answer(&req.nack(NACK_BUSY), PEER, 3), None);
        assert_eq!(
            r.request(key(2), (1, 2), PEER, true, 0),
            Asked::Send(Frame {
                kind: Kind::Req,
                arg: 0,
                token: 0x9e37_79b9,
                key: key(2),
                sport: 1,
                dport: 2,
                idle_ms: 0,
            })
        );
    }

    #[test]
    fn close_releases_only_the_connection_that_asked() {
        let mut r = Requests::<4>::new(Timing::DEFAULT, seq);
        let Asked::Send(req) = r.request(key(1), (40000, 5201), PEER, false, 0) else {
            panic!()
        };
        r.on_answer(&req.answer(Some(3), 2000), PEER, 1);
        // Another connection between the same hosts closes: the grant stays.
        assert_eq!(r.close(&key(1), (40002, 5201)), None);
        assert_eq!(r.close(&key(1), (40000, 5202)), None);
        assert_eq!(r.close(&key(1), (5201, 40000)), None);
        assert_eq!(
            r.get(&key(1)).map(|e| e.state),
            Some(State::Granted { slot: 3 })
        );
        // The connection that asked closes: Fast_Rel of its slot.
        let (rel, peer) = r.close(&key(1), (40000, 5201)).expect("Fast_Rel");
        assert_eq!((rel.kind, rel.arg, peer), (Kind::Rel, 3, PEER));
        assert!(r.is_empty());
        // An explicit request is released by zcctl only.
        let Asked::Send(req) = r.request(key(2), (0, 0), PEER, true, 2) else {
            panic!()
        };
        r.on_answer(&req.answer(Some(1), 2000), PEER, 3);
        assert_eq!(r.close(&key(2), (0, 0)), None);
        assert!(r.get(&key(2)).is_some());
    }

    #[test]
    fn answers_are_rate_limited() {
        let s = 1_000_000_000u64;
        let mut l = RateLimit::new(ANSWER_BURST, ANSWER_RATE);
        // A flood at one instant: the burst, then nothing.
        let now = 5 * s;
        let n = (0..1000).filter(|_| l.allow(now)).count();
        assert_eq!(n, 16);
        // Then 100 a second, whatever the flood.
        let mut n = 0;
        for i in 1..=10_000u64 {
            n += usize::from(l.allow(now + i * s / 1000));
        }
        assert_eq!(n, 1000, "10 s at 100/s");
        // Idle time refills the burst, no more.
        let later = now + 100 * s;
        assert_eq!((0..100).filter(|_| l.allow(later)).count(), 16);
        // Time going backwards (another CPU's clock) does not mint tokens.
        assert!(!l.allow(later - s));
    }

    #[test]
    fn unanswered_requests_retry_then_give_up() {
        let t = Timing::DEFAULT;
        let mut r = Requests::<2>::new(t, seq);
        assert!(matches!(
            r.request(key(1), (1, 2), PEER, false, 0),
            Asked::Send(_)
        ));
        let mut sent = 1;
        let mut gave_up = false;
        let mut now = 0;
        while let Some(at) = r.on_timer(now, |e| match e {
            Event::Send { retry: true, .. } => sent += 1,
            Event::NoAnswer(k) => {
                assert_eq!(k, key(1));
                gave_up = true
            }
            _ => {}
        }) {
            assert!(at > now, "the timer moves on");
            now = at;
            if gave_up {
                break;
            }
        }
        assert_eq!((sent, gave_up), (t.tries as usize, true));
        assert_eq!(r.get(&key(1)).map(|e| e.state), Some(State::NoAnswer));
        // The sender never stalls: its data path only looks the flow up.
        assert!(r.touch(&key(1), now));
        // A full table evicts the oldest settled entry, never a live one.
        assert!(matches!(
            r.request(key(2), (1, 2), PEER, false, now),
            Asked::Send(_)
        ));
        assert!(matches!(
            r.request(key(3), (1, 2), PEER, false, now),
            Asked::Send(_)
        ));
        assert!(r.get(&key(1)).is_none());
        assert_eq!(r.request(key(4), (1, 2), PEER, false, now), Asked::Full);
    }
}
