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
//! `Fast_Ack`, so only a requester that went away loses it.
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
//!          slots busy); 0 otherwise
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

    /// The answer to this request: Ack of `slot`, or NAck.
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
    /// The token of the last request sent.
    pub token: u32,
    /// Where it stands.
    pub state: State,
    /// Asked for explicitly (zcctl) rather than by the driver itself.
    pub explicit: bool,
    /// When to retry (Pending) or renew (explicit, Granted).
    next_ns: u64,
    /// Renewal period of an explicit grant (a third of the receiver's idle
    /// timeout), 0 for none.
    renew_ns: u64,
    /// Last time the flow sent something, or the state changed.
    pub last_ns: u64,
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
    next_token: u32,
    timing: Timing,
}

impl<const M: usize> Requests<M> {
    /// An empty table.
    pub const fn new(timing: Timing) -> Self {
        Self {
            entries: [None; M],
            next_token: 1,
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
        let token = self.next_token;
        self.next_token = self.next_token.wrapping_add(1).max(1);
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
            last_ns: now_ns,
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

    /// An answer arrived: returns the new state when it answers a pending
    /// request or the renewal of a grant (matching flow and token), `None`
    /// for a stray frame.
    pub fn on_answer(&mut self, f: &Frame, now_ns: u64) -> Option<State> {
        let i = self.find(&f.key)?;
        let e = self.entries[i].as_mut()?;
        let live = matches!(e.state, State::Pending { .. } | State::Granted { .. });
        if e.token != f.token || !live {
            return None;
        }
        e.state = match f.kind {
            Kind::Ack => State::Granted { slot: f.arg },
            Kind::NAck => State::Refused,
            Kind::Req | Kind::Rel => return None,
        };
        e.last_ns = now_ns;
        e.renew_ns = if e.explicit && f.kind == Kind::Ack {
            u64::from(f.idle_ms) * 1_000_000 / 3
        } else {
            0
        };
        if e.renew_ns > 0 {
            e.next_ns = now_ns.saturating_add(e.renew_ns);
        }
        Some(e.state)
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

    /// Retries, gives up, and forgets idle entries; calls `out` for each
    /// thing to do. Returns when it next wants to run (`None`: nothing
    /// pending and nothing to forget).
    pub fn on_timer(&mut self, now_ns: u64, mut out: impl FnMut(Event)) -> Option<u64> {
        let t = self.timing;
        let mut next: Option<u64> = None;
        let mut want = |at: u64| next = Some(next.map_or(at, |n| n.min(at)));
        for slot in self.entries.iter_mut() {
            let Some(e) = slot.as_mut() else { continue };
            if let State::Pending { tries } = e.state {
                if now_ns >= e.next_ns {
                    if tries >= t.tries {
                        e.state = State::NoAnswer;
                        e.last_ns = now_ns;
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
                if matches!(e.state, State::Pending { .. }) {
                    want(e.next_ns);
                    continue;
                }
            }
            if matches!(e.state, State::Granted { .. }) && e.renew_ns > 0 {
                // An explicit grant: renewed, never forgotten while idle.
                if now_ns >= e.next_ns {
                    e.next_ns = now_ns.saturating_add(e.renew_ns);
                    out(Event::Send {
                        frame: e.frame(Kind::Req, 0),
                        peer: e.peer,
                        retry: false,
                    });
                }
                want(e.next_ns);
                continue;
            }
            // Granted entries go when the flow is idle; refused and
            // unanswered ones too, so that a later stream may ask again.
            let idle_at = e.last_ns.saturating_add(t.idle_ns);
            if now_ns >= idle_at {
                let gone = *e;
                *slot = None;
                if let State::Granted { slot } = gone.state {
                    out(Event::Send {
                        frame: gone.frame(Kind::Rel, slot),
                        peer: gone.peer,
                        retry: false,
                    });
                }
                out(Event::Forgotten(gone.key));
            } else {
                want(idle_at);
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEER: [u8; 6] = [2, 0, 0, 0, 0, 2];

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
        let mut r = Requests::<4>::new(Timing::DEFAULT);
        let Asked::Send(req) = r.request(key(1), (1, 2), PEER, false, 0) else {
            panic!("no request")
        };
        assert_eq!(r.request(key(1), (1, 2), PEER, false, 1), Asked::Already);
        // A stray answer (wrong token) changes nothing.
        let mut stray = req.answer(Some(0), 0);
        stray.token ^= 1;
        assert_eq!(r.on_answer(&stray, 1), None);
        assert_eq!(
            r.on_answer(&req.answer(Some(5), 0), 2),
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
        assert_eq!(r.on_answer(&req.answer(None, 0), 11), Some(State::Refused));
        assert_eq!(r.request(key(2), (1, 2), PEER, false, 12), Asked::Already);
        assert!(matches!(
            r.request(key(2), (1, 2), PEER, true, 13),
            Asked::Send(_)
        ));
        // An idle granted entry is forgotten with a Fast_Rel.
        let mut r = Requests::<4>::new(Timing::DEFAULT);
        let Asked::Send(req) = r.request(key(3), (1, 2), PEER, false, 0) else {
            panic!()
        };
        r.on_answer(&req.answer(Some(1), 0), 0);
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
        let mut r = Requests::<4>::new(Timing::DEFAULT);
        let Asked::Send(a) = r.request(key(1), (1, 2), PEER, false, 0) else {
            panic!()
        };
        let Asked::Send(b) = r.request(key(2), (1, 2), PEER, true, 0) else {
            panic!()
        };
        let Asked::Send(_) = r.request(key(3), (1, 2), PEER, false, 0) else {
            panic!()
        };
        r.on_answer(&a.answer(Some(3), 0), 1);
        r.on_answer(&b.answer(Some(7), 0), 1);
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
        let mut r = Requests::<2>::new(t);
        let Asked::Send(req) = r.request(key(1), (1, 2), PEER, true, 0) else {
            panic!()
        };
        // The receiver takes idle grants back after 300 ms: renew at 100.
        assert_eq!(
            r.on_answer(&req.answer(Some(0), 300), 0),
            Some(State::Granted { slot: 0 })
        );
        let mut renewals = 0;
        let mut now = 0;
        for _ in 0..100 {
            let mut renewed = false;
            let Some(at) = r.on_timer(now, |e| {
                if let Event::Send {
                    frame,
                    retry: false,
                    ..
                } = e
                {
                    assert_eq!((frame.kind, frame.token), (Kind::Req, req.token));
                    renewed = true;
                }
            }) else {
                panic!("an explicit grant keeps the timer going")
            };
            if renewed {
                // The receiver answers the renewal.
                renewals += 1;
                r.on_answer(&req.answer(Some(0), 300), now);
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
        // to another flow) ends the grant.
        assert_eq!(
            r.on_answer(&req.answer(None, 300), now),
            Some(State::Refused)
        );
    }

    #[test]
    fn unanswered_requests_retry_then_give_up() {
        let t = Timing::DEFAULT;
        let mut r = Requests::<2>::new(t);
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
