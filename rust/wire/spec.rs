// SPDX-License-Identifier: GPL-2.0

//! Speculative defragmentation: the decision engine (paper §3.2.2, §3.2.3).
//!
//! The engine follows trains of IPv4 fragments, one train per slot, and says
//! for each fragment what to do with it: place its payload at its final offset
//! in the slot's page, complete the packet, or end the speculation (a *miss*)
//! so that what was placed goes to the normal reassembly path. It never sees
//! payload bytes and owns no memory: how the bytes arrive (copied from a lower
//! device's buffers, or written by a device into the page) is the caller's
//! business, so every front end shares it.
//!
//! Layout of a speculated packet: the IP payload starts with the transport
//! header of the speculated length (`l4_header_len`: 32 for TCP with
//! timestamps, 8 for UDP), which is kept apart; the data after it goes to page
//! offset 0. A fragment at IP payload offset `o` carrying `n` bytes therefore
//! lands at page offset `o - l4_header_len`, its first
//! `max(0, l4_header_len - o)` bytes going to the header buffer.
//!
//! Slots are matched per flow (source, destination, protocol); the paper's
//! hardware could follow a single stream, software can follow `N`.

use super::ipv4::{self, Header};

/// Why a speculation ended without a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Miss {
    /// A fragment of another packet of the same flow arrived mid-train.
    OtherPacket = 0,
    /// A fragment arrived beyond the next expected offset (a fragment was lost
    /// or the train reordered).
    Gap = 1,
    /// A fragment arrived at an offset already placed (duplicate or overlap).
    Duplicate = 2,
    /// The first fragment's transport header is not the speculated length.
    HeaderLength = 3,
    /// The header carries IP options.
    IpOptions = 4,
    /// The packet would not fit the page.
    TooBig = 5,
    /// The train did not complete within the timeout.
    Timeout = 6,
    /// A fragment not ending on an 8-byte boundary before the last.
    BadLength = 7,
    /// A fragment of the flow failed its header checksum.
    BadChecksum = 8,
    /// The train needs more fragments than a slot may hold
    /// ([`Params::max_fragments`]).
    TooManyFragments = 9,
    /// The fragments' ECN fields cannot be combined (Not-ECT mixed with
    /// ECT or CE, RFC 3168 §5.3): the normal path drops the datagram.
    Ecn = 10,
    /// The front end could not place the fragment (no page, no memory, a
    /// frame shorter than its header said): never decided by the engine.
    NoMem = 11,
    /// The device did not write the fragment where the train's page wanted
    /// it while it may still write into that page (a receive chain of the
    /// native front end points into it): the front end neither copies into
    /// nor hands up such a page. Never decided by the engine.
    Displaced = 12,
}

/// Number of [`Miss`] reasons (for counter tables).
pub const MISS_REASONS: usize = 13;

/// Per-protocol speculation parameters (paper §3.2.2: "the header lengths
/// speculated on are parameters").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Size of the page payload lands in.
    pub page_size: usize,
    /// Speculated transport header length for TCP (protocol 6).
    pub tcp_header_len: usize,
    /// Speculated transport header length for UDP (protocol 17).
    pub udp_header_len: usize,
    /// Nanoseconds a train may take from its first fragment to its last.
    pub timeout_ns: u64,
    /// Fragments one train may have, the last one included (every earlier
    /// one is held until the packet completes).
    pub max_fragments: usize,
}

impl Params {
    /// 4 KiB pages, TCP with timestamps (32), UDP (8), 10 ms, 33 fragments
    /// (a page over a lower MTU of 160).
    pub const DEFAULT: Params = Params {
        page_size: 4096,
        tcp_header_len: 32,
        udp_header_len: 8,
        timeout_ns: 10_000_000,
        max_fragments: 33,
    };

    fn l4_header_len(&self, protocol: u8) -> Option<usize> {
        match protocol {
            6 => Some(self.tcp_header_len),
            17 => Some(self.udp_header_len),
            _ => None,
        }
    }
}

/// Where one fragment's payload goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The slot (and page) of the train.
    pub slot: usize,
    /// The first `header_bytes` bytes of the fragment's payload go to the
    /// header buffer at offset `header_off`.
    pub header_bytes: usize,
    /// Offset in the header buffer.
    pub header_off: usize,
    /// The rest goes to the page at this offset.
    pub page_off: usize,
    /// Bytes that go to the page.
    pub page_len: usize,
    /// This fragment completes the packet: deliver it (its data is
    /// `data_len` bytes at page offset 0, its transport header
    /// `l4_header_len` bytes in the header buffer).
    pub complete: Option<Complete>,
}

/// A completed packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Complete {
    /// Transport header bytes in the header buffer.
    pub l4_header_len: usize,
    /// Data bytes in the page, from offset 0.
    pub data_len: usize,
    /// Fragments the packet came in.
    pub fragments: usize,
    /// ECN bits to OR into the rebuilt header's TOS byte (CE when a later
    /// fragment carried it), as `ip_frag_reasm` does.
    pub ecn: u8,
}

/// What to do with one fragment. `flush` comes first: the slot's speculation
/// ended, so its held fragments go to the normal path; then `this` says what
/// happens to the fragment at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// A speculation that ended, and why.
    pub flush: Option<(usize, Miss)>,
    /// What happens to this fragment.
    pub this: This,
}

/// What happens to the fragment at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum This {
    /// Not speculated on: give it to the normal path as it is.
    Pass,
    /// Place it (and keep it until the packet completes or misses).
    Place(Place),
    /// No free slot: give it to the normal path.
    NoSlot,
    /// Admission is required and the flow holds no grant: the normal path.
    NotAdmitted,
}

/// A flow as the slots see it: fragments after the first carry no ports, so
/// a slot follows one (source, destination, protocol) triple.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowKey {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// IP protocol.
    pub protocol: u8,
}

/// Which flows may start a train in a free slot (paper §4.1, §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Any flow takes a free slot that is not reserved; a grant reserves one.
    Open,
    /// Only flows holding a grant are speculated on.
    Required,
}

/// The answer to an admission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// The flow holds the slot (reserved for it until released or idle).
    Granted(usize),
    /// The flow held the slot already: the grant is renewed.
    Renewed(usize),
    /// Every usable slot is reserved or busy with another flow.
    Refused,
    /// The requesting station holds its share of the slots already
    /// ([`Engine::grant_cap`]).
    OverCap,
    /// Another station holds the flow's grant.
    HeldByOther,
}

/// The outcome of a release (Fast_Rel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// The grant of this slot ended.
    Slot(usize),
    /// The flow holds no grant.
    NoGrant,
    /// Another station holds the flow's grant: it stays.
    NotHolder,
}

/// A station's link-layer (MAC) address.
pub type Station = [u8; 6];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reservation {
    key: FlowKey,
    /// The station that asked: only it renews or releases the grant.
    holder: Station,
    last_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Train {
    src: [u8; 4],
    dst: [u8; 4],
    protocol: u8,
    id: u16,
    l4_header_len: usize,
    /// Next expected IP payload offset.
    next: usize,
    fragments: usize,
    started_ns: u64,
    /// The fragments' ECN codepoints so far ([`ipv4::ecn_mask`]).
    ecn: u8,
}

/// The engine, with room for `N` slots of which the first `limit` are used.
#[derive(Debug)]
pub struct Engine<const N: usize> {
    params: Params,
    slots: [Option<Train>; N],
    grants: [Option<Reservation>; N],
    limit: usize,
    admission: Admission,
}

impl<const N: usize> Engine<N> {
    /// An engine with every slot free.
    pub const fn new(params: Params) -> Self {
        Self {
            params,
            slots: [None; N],
            grants: [None; N],
            limit: N,
            admission: Admission::Open,
        }
    }

    /// Uses the first `n` slots (1 to `N`) for new trains and grants. Trains
    /// and grants in slots beyond run to their end.
    pub fn set_limit(&mut self, n: usize) {
        self.limit = n.clamp(1, N);
    }

    /// Slots in use for new trains.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Sets the admission policy.
    pub fn set_admission(&mut self, a: Admission) {
        self.admission = a;
    }

    /// The admission policy.
    pub fn admission(&self) -> Admission {
        self.admission
    }

    /// Sets the train timeout.
    pub fn set_timeout_ns(&mut self, ns: u64) {
        self.params.timeout_ns = ns;
    }

    fn grant_of(&self, key: &FlowKey) -> Option<usize> {
        self.grants
            .iter()
            .position(|g| g.is_some_and(|g| g.key == *key))
    }

    /// Grants one station may hold at once: half the usable slots, at least
    /// one, so that one station (or one forged source address) cannot
    /// reserve every slot.
    pub fn grant_cap(&self) -> usize {
        (self.limit / 2).max(1)
    }

    /// Grants `key` a slot for the station `holder` (paper §4.1 Fast_Ack),
    /// or refuses (Fast_NAck) when every usable slot is reserved or following
    /// another flow, when `holder` already holds [`Self::grant_cap`] grants,
    /// or when another station holds the flow's grant. The holder asking
    /// again renews the grant.
    pub fn grant(&mut self, key: FlowKey, holder: Station, now_ns: u64) -> Grant {
        if let Some(s) = self.grant_of(&key) {
            return match self.grants[s].as_mut() {
                Some(g) if g.holder == holder => {
                    g.last_ns = now_ns;
                    Grant::Renewed(s)
                }
                _ => Grant::HeldByOther,
            };
        }
        let held = self
            .grants
            .iter()
            .filter(|g| g.is_some_and(|g| g.holder == holder))
            .count();
        if held >= self.grant_cap() {
            return Grant::OverCap;
        }
        let free = (0..self.limit).find(|&i| {
            self.grants[i].is_none()
                && self.slots[i].is_none_or(|t| {
                    t.src == key.src && t.dst == key.dst && t.protocol == key.protocol
                })
        });
        match free {
            Some(s) => {
                self.grants[s] = Some(Reservation {
                    key,
                    holder,
                    last_ns: now_ns,
                });
                Grant::Granted(s)
            }
            None => Grant::Refused,
        }
    }

    /// Ends the grant of `key` when `holder` holds it (a Fast_Rel from the
    /// station it was granted to); its slot's running train, if any,
    /// completes normally. A release from any other station changes nothing.
    pub fn release(&mut self, key: &FlowKey, holder: &Station) -> Released {
        let Some(s) = self.grant_of(key) else {
            return Released::NoGrant;
        };
        match self.grants[s] {
            Some(g) if g.holder == *holder => {
                self.grants[s] = None;
                Released::Slot(s)
            }
            _ => Released::NotHolder,
        }
    }

    /// Ends one grant idle for `idle_ns` or more; returns its flow (call
    /// again until `None`).
    pub fn expire_grants(&mut self, now_ns: u64, idle_ns: u64) -> Option<FlowKey> {
        let s = self
            .grants
            .iter()
            .position(|g| g.is_some_and(|g| now_ns.saturating_sub(g.last_ns) >= idle_ns))?;
        self.grants[s].take().map(|g| g.key)
    }

    /// Grants held now.
    pub fn grants(&self) -> usize {
        self.grants.iter().filter(|g| g.is_some()).count()
    }

    /// The grant of slot `i`, if any: its flow and when it was last used.
    pub fn grant_at(&self, i: usize) -> Option<(FlowKey, u64)> {
        self.grants.get(i)?.map(|g| (g.key, g.last_ns))
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Slots following a train now.
    pub fn busy(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    fn slot_of_flow(&self, h: &Header) -> Option<usize> {
        self.slots.iter().position(|s| {
            s.is_some_and(|t| t.src == h.src && t.dst == h.dst && t.protocol == h.protocol)
        })
    }

    /// Decides what to do with the fragment whose (valid, checksum-verified)
    /// header is `h`. `l4` is the start of its payload (at least 13 bytes for a
    /// first TCP fragment, or what there is), used to check the speculated
    /// transport header length. `now_ns` is a monotonic clock.
    pub fn on_fragment(&mut self, h: &Header, l4: &[u8], now_ns: u64) -> Step {
        let flow = self.slot_of_flow(h);
        let len = h.payload_len();
        if !h.is_fragment() {
            return Step {
                flush: None,
                this: This::Pass,
            };
        }
        if h.frag_offset == 0 {
            // A first fragment: end the flow's current train, if any, and
            // start speculating on this one; a second first fragment of the
            // same packet is a duplicate, and the packet goes the normal way.
            if let Some(s) = flow {
                let dup = self.slots[s].is_some_and(|t| t.id == h.id);
                self.slots[s] = None;
                if dup {
                    return Step {
                        flush: Some((s, Miss::Duplicate)),
                        this: This::Pass,
                    };
                }
            }
            let flush = flow.map(|s| (s, Miss::OtherPacket));
            let miss_now = |reason| {
                Step {
                    flush,
                    this: This::Pass,
                }
                .with_reason(reason)
            };
            if h.header_len != super::ipv4::MIN_HEADER_LEN {
                return miss_now(Miss::IpOptions);
            }
            let Some(l4len) = self.params.l4_header_len(h.protocol) else {
                return Step {
                    flush,
                    this: This::Pass,
                };
            };
            if h.protocol == 6 {
                let doff = l4.get(12).map(|b| usize::from(b >> 4) * 4);
                if doff != Some(l4len) {
                    return miss_now(Miss::HeaderLength);
                }
            }
            if len < l4len || len % 8 != 0 {
                return miss_now(Miss::BadLength);
            }
            if len - l4len > self.params.page_size {
                return miss_now(Miss::TooBig);
            }
            let key = FlowKey {
                src: h.src,
                dst: h.dst,
                protocol: h.protocol,
            };
            let granted = self.grant_of(&key);
            if let Some(g) = granted.and_then(|s| self.grants[s].as_mut()) {
                g.last_ns = now_ns;
            }
            let free =
                || (0..self.limit).find(|&i| self.slots[i].is_none() && self.grants[i].is_none());
            let slot = match (flow.or(granted), self.admission) {
                (Some(s), _) => s,
                (None, Admission::Required) => {
                    return Step {
                        flush,
                        this: This::NotAdmitted,
                    }
                }
                (None, Admission::Open) => match free() {
                    Some(s) => s,
                    None => {
                        return Step {
                            flush,
                            this: This::NoSlot,
                        }
                    }
                },
            };
            self.slots[slot] = Some(Train {
                src: h.src,
                dst: h.dst,
                protocol: h.protocol,
                id: h.id,
                l4_header_len: l4len,
                next: len,
                fragments: 1,
                started_ns: now_ns,
                ecn: ipv4::ecn_mask(h.tos),
            });
            return Step {
                flush,
                this: This::Place(Place {
                    slot,
                    header_bytes: l4len,
                    header_off: 0,
                    page_off: 0,
                    page_len: len - l4len,
                    complete: None,
                }),
            };
        }
        // A later fragment: it must continue its flow's train exactly.
        let Some(slot) = flow else {
            return Step {
                flush: None,
                this: This::Pass,
            };
        };
        let Some(t) = self.slots[slot] else {
            return Step {
                flush: None,
                this: This::Pass,
            };
        };
        let fragments = t.fragments + 1;
        let ecn = t.ecn | ipv4::ecn_mask(h.tos);
        let reason = if t.id != h.id {
            Some(Miss::OtherPacket)
        } else if h.frag_offset < t.next {
            Some(Miss::Duplicate)
        } else if h.frag_offset > t.next {
            Some(Miss::Gap)
        } else if len == 0 || (h.mf && len % 8 != 0) {
            // ip_frag_queue() kills the whole queue on an empty fragment:
            // the normal path then does what the stack always does.
            Some(Miss::BadLength)
        } else if h.frag_offset + len - t.l4_header_len > self.params.page_size {
            Some(Miss::TooBig)
        } else if h.mf && fragments >= self.params.max_fragments {
            // This one would be held beyond the limit; the last one is not.
            Some(Miss::TooManyFragments)
        } else if !h.mf && ipv4::reassembled_ecn(ecn).is_none() {
            Some(Miss::Ecn)
        } else {
            None
        };
        if let Some(r) = reason {
            self.slots[slot] = None;
            return Step {
                flush: Some((slot, r)),
                this: This::Pass,
            };
        }
        let page_off = h.frag_offset - t.l4_header_len;
        let complete = if h.mf {
            self.slots[slot] = Some(Train {
                next: h.frag_offset + len,
                fragments,
                ecn,
                ..t
            });
            None
        } else {
            self.slots[slot] = None;
            Some(Complete {
                l4_header_len: t.l4_header_len,
                data_len: page_off + len,
                fragments,
                ecn: ipv4::reassembled_ecn(ecn).unwrap_or(0),
            })
        };
        Step {
            flush: None,
            this: This::Place(Place {
                slot,
                header_bytes: 0,
                header_off: 0,
                page_off,
                page_len: len,
                complete,
            }),
        }
    }

    /// A fragment from `src` to `dst` failed its header check: end the flow's
    /// train, if any (returns its slot, to flush as [`Miss::BadChecksum`]).
    pub fn on_bad_fragment(&mut self, src: [u8; 4], dst: [u8; 4], protocol: u8) -> Option<usize> {
        let slot = self.slots.iter().position(|s| {
            s.is_some_and(|t| t.src == src && t.dst == dst && t.protocol == protocol)
        })?;
        self.slots[slot] = None;
        Some(slot)
    }

    /// Gives up the train of `slot` (the caller could not place a fragment);
    /// returns the slot to flush.
    pub fn abandon(&mut self, slot: usize) -> Option<usize> {
        self.slots.get_mut(slot)?.take().map(|_| slot)
    }

    /// Ends every train older than the timeout; returns a slot to flush (call
    /// again until `None`).
    pub fn expire(&mut self, now_ns: u64) -> Option<usize> {
        let timeout = self.params.timeout_ns;
        let slot = self
            .slots
            .iter()
            .position(|s| s.is_some_and(|t| now_ns.saturating_sub(t.started_ns) >= timeout))?;
        self.slots[slot] = None;
        Some(slot)
    }

    /// Ends every train (device going down); returns a slot to flush (call
    /// again until `None`).
    pub fn drain(&mut self) -> Option<usize> {
        let slot = self.slots.iter().position(|s| s.is_some())?;
        self.slots[slot] = None;
        Some(slot)
    }
}

impl Step {
    /// A miss of the fragment at hand itself (it passes, counted as `reason`):
    /// reported as a flush of no slot when nothing else was flushed.
    fn with_reason(self, reason: Miss) -> Step {
        Step {
            flush: self.flush.or(Some((usize::MAX, reason))),
            this: This::Pass,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ipv4::{FragPlan, FLAG_MF};

    const SRC: [u8; 4] = [198, 18, 0, 1];
    const DST: [u8; 4] = [198, 18, 0, 2];

    fn hdr(id: u16, off: usize, len: usize, mf: bool, proto: u8) -> Header {
        Header {
            header_len: 20,
            tos: 0,
            total_len: 20 + len,
            id,
            df: false,
            mf,
            frag_offset: off,
            ttl: 64,
            protocol: proto,
            src: SRC,
            dst: DST,
        }
    }

    fn tcp_l4() -> [u8; 32] {
        let mut t = [0u8; 32];
        t[12] = 8 << 4; // doff 8: 32 bytes
        t
    }

    /// The fragments of one page-sized TCP packet over MTU 1500.
    fn page_train(id: u16) -> [Header; 3] {
        let p = FragPlan::new(20, 32 + 4096, 1500).unwrap();
        let f = |i| {
            let f = p.get(i).unwrap();
            hdr(id, f.offset, f.len, f.mf, 6)
        };
        [f(0), f(1), f(2)]
    }

    fn place(s: Step) -> Place {
        match s.this {
            This::Place(p) => p,
            other => panic!("expected a placement, got {other:?} (flush {:?})", s.flush),
        }
    }

    #[test]
    fn in_order_page_train_completes() {
        let mut e = Engine::<4>::new(Params::DEFAULT);
        let t = page_train(1);
        let a = place(e.on_fragment(&t[0], &tcp_l4(), 0));
        assert_eq!((a.header_bytes, a.page_off, a.page_len), (32, 0, 1448));
        let b = place(e.on_fragment(&t[1], &[], 1));
        assert_eq!((b.page_off, b.page_len, b.complete), (1448, 1480, None));
        let c = place(e.on_fragment(&t[2], &[], 2));
        assert_eq!((c.page_off, c.page_len), (2928, 1168));
        assert_eq!(
            c.complete,
            Some(Complete {
                l4_header_len: 32,
                data_len: 4096,
                fragments: 3,
                ecn: 0
            })
        );
        assert_eq!(e.busy(), 0);
        // Every page byte was placed exactly once.
        assert_eq!(a.page_len + b.page_len + c.page_len, 4096);
    }

    #[test]
    fn misses_name_their_reason() {
        let t = page_train(1);
        // Loss of the middle fragment: the last one leaves a gap.
        let mut e = Engine::<4>::new(Params::DEFAULT);
        place(e.on_fragment(&t[0], &tcp_l4(), 0));
        let s = e.on_fragment(&t[2], &[], 1);
        assert_eq!((s.flush, s.this), (Some((0, Miss::Gap)), This::Pass));
        assert_eq!(e.busy(), 0);
        // Duplicate.
        place(e.on_fragment(&t[0], &tcp_l4(), 0));
        place(e.on_fragment(&t[1], &[], 0));
        let s = e.on_fragment(&t[1], &[], 0);
        assert_eq!(s.flush, Some((0, Miss::Duplicate)));
        // Another packet's fragment mid-train.
        place(e.on_fragment(&t[0], &tcp_l4(), 0));
        let s = e.on_fragment(&page_train(2)[1], &[], 0);
        assert_eq!(s.flush, Some((0, Miss::OtherPacket)));
        // A new first fragment mid-train ends the old train and starts anew.
        place(e.on_fragment(&t[0], &tcp_l4(), 0));
        let s = e.on_fragment(&page_train(2)[0], &tcp_l4(), 0);
        assert_eq!(s.flush, Some((0, Miss::OtherPacket)));
        assert!(matches!(s.this, This::Place(_)));
        // Reordered: the second fragment first is not ours (no train), then
        // the first starts one, then the third leaves a gap.
        let mut e = Engine::<4>::new(Params::DEFAULT);
        assert_eq!(e.on_fragment(&t[1], &[], 0).this, This::Pass);
        place(e.on_fragment(&t[0], &tcp_l4(), 0));
        assert_eq!(e.on_fragment(&t[2], &[], 0).flush, Some((0, Miss::Gap)));
    }

    #[test]
    fn header_checks() {
        let mut e = Engine::<4>::new(Params::DEFAULT);
        let t = page_train(1);
        let mut l4 = tcp_l4();
        l4[12] = 5 << 4; // no timestamps: 20-byte TCP header
        let s = e.on_fragment(&t[0], &l4, 0);
        assert_eq!(s.flush, Some((usize::MAX, Miss::HeaderLength)));
        assert_eq!(s.this, This::Pass);
        let mut h = t[0];
        h.header_len = 24;
        assert_eq!(
            e.on_fragment(&h, &tcp_l4(), 0).flush,
            Some((usize::MAX, Miss::IpOptions))
        );
        // Truncated first fragment: no TCP header to check.
        assert_eq!(
            e.on_fragment(&t[0], &[0; 4], 0).flush,
            Some((usize::MAX, Miss::HeaderLength))
        );
        // ICMP is not speculated on.
        let icmp = hdr(9, 0, 1480, true, 1);
        assert_eq!(e.on_fragment(&icmp, &[], 0).this, This::Pass);
        // A plain packet passes.
        assert_eq!(
            e.on_fragment(&hdr(9, 0, 100, false, 6), &[], 0).this,
            This::Pass
        );
        assert_eq!(e.busy(), 0);
    }

    #[test]
    fn too_big_for_the_page() {
        let mut e = Engine::<4>::new(Params::DEFAULT);
        let p = FragPlan::new(20, 32 + 8192, 1500).unwrap();
        let f: [Header; 6] = core::array::from_fn(|i| {
            let f = p.get(i).unwrap();
            hdr(3, f.offset, f.len, f.mf, 6)
        });
        place(e.on_fragment(&f[0], &tcp_l4(), 0));
        place(e.on_fragment(&f[1], &[], 0));
        assert_eq!(e.on_fragment(&f[2], &[], 0).flush, Some((0, Miss::TooBig)));
        // A first fragment larger than the page misses at once.
        let big = hdr(4, 0, 32 + 4104, true, 6);
        assert_eq!(
            e.on_fragment(&big, &tcp_l4(), 0).flush,
            Some((usize::MAX, Miss::TooBig))
        );
    }

    #[test]
    fn slots_per_flow_and_no_slot() {
        let mut e = Engine::<2>::new(Params::DEFAULT);
        let mut other = page_train(1);
        for h in other.iter_mut() {
            h.src = [198, 18, 0, 3];
        }
        let mut third = page_train(1);
        for h in third.iter_mut() {
            h.src = [198, 18, 0, 4];
        }
        let t = page_train(1);
        let a = place(e.on_fragment(&t[0], &tcp_l4(), 0));
        let b = place(e.on_fragment(&other[0], &tcp_l4(), 0));
        assert_ne!(a.slot, b.slot);
        assert_eq!(e.on_fragment(&third[0], &tcp_l4(), 0).this, This::NoSlot);
        // Interleaved trains of two flows both complete.
        place(e.on_fragment(&other[1], &[], 0));
        place(e.on_fragment(&t[1], &[], 0));
        assert!(place(e.on_fragment(&t[2], &[], 0)).complete.is_some());
        assert!(place(e.on_fragment(&other[2], &[], 0)).complete.is_some());
        assert_eq!(e.busy(), 0);
    }

    #[test]
    fn bad_fragment_ends_its_flow() {
        let mut e = Engine::<2>::new(Params::DEFAULT);
        let t = page_train(1);
        place(e.on_fragment(&t[0], &tcp_l4(), 0));
        assert_eq!(e.on_bad_fragment([1, 2, 3, 4], DST, 6), None);
        assert_eq!(e.on_bad_fragment(SRC, DST, 6), Some(0));
        assert_eq!(e.busy(), 0);
    }

    #[test]
    fn timeout_and_drain() {
        let mut e = Engine::<2>::new(Params::DEFAULT);
        let t = page_train(1);
        place(e.on_fragment(&t[0], &tcp_l4(), 1_000));
        assert_eq!(e.expire(1_000 + Params::DEFAULT.timeout_ns - 1), None);
        assert_eq!(e.expire(1_000 + Params::DEFAULT.timeout_ns), Some(0));
        assert_eq!(e.expire(u64::MAX), None);
        place(e.on_fragment(&t[0], &tcp_l4(), 0));
        assert_eq!(e.drain(), Some(0));
        assert_eq!(e.drain(), None);
        // After the timeout the late fragments are not ours any more.
        assert_eq!(e.on_fragment(&t[1], &[], 0).this, This::Pass);
    }

    #[test]
    fn udp_trains() {
        let mut e = Engine::<1>::new(Params::DEFAULT);
        let p = FragPlan::new(20, 8 + 4096, 1500).unwrap();
        let mut last = None;
        for f in p.iter() {
            let h = hdr(5, f.offset, f.len, f.mf, 17);
            last = Some(place(e.on_fragment(&h, &[0; 8], 0)));
        }
        assert_eq!(last.unwrap().complete.unwrap().data_len, 4096);
        // The flag constant is what the wire uses.
        assert_eq!(FLAG_MF, 0x2000);
    }

    /// Seeded random traffic (several flows, loss, duplication, reordering,
    /// interleaving, timeouts): every fragment ends in exactly one place (a
    /// completed packet, the normal path, or the final drain), and every
    /// completed packet tiles its page exactly once.
    #[test]
    fn random_traffic_conserves_fragments() {
        extern crate std;
        use std::vec::Vec;
        let mut rng = 0x2026_1121_u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        const SLOTS: usize = 3;
        let mut e = Engine::<SLOTS>::new(Params::DEFAULT);
        let mut held: [Vec<(usize, usize)>; SLOTS] = Default::default();
        let (mut normal, mut completed_frags, mut input) = (0usize, 0usize, 0usize);
        let mut completions = 0;
        let mut now = 0u64;
        for round in 0..4000u32 {
            // A train of one of 4 flows, with random damage.
            let flow = (next() % 4) as u8;
            let id = (round % 65536) as u16;
            let mut train: Vec<Header> = page_train(id).to_vec();
            for h in train.iter_mut() {
                h.src = [198, 18, 0, 10 + flow];
            }
            match next() % 10 {
                0 => {
                    train.remove((next() % 3) as usize);
                }
                1 => {
                    let i = (next() % 3) as usize;
                    train.insert(i, train[i]);
                }
                2 => train.swap(1, 2),
                _ => {}
            }
            now += next() % 4_000_000;
            while let Some(s) = e.expire(now) {
                normal += held[s].len();
                held[s].clear();
            }
            for h in train {
                input += 1;
                let st = e.on_fragment(&h, &tcp_l4(), now);
                if let Some((slot, _)) = st.flush {
                    if slot != usize::MAX {
                        normal += held[slot].len();
                        held[slot].clear();
                    }
                }
                match st.this {
                    This::Pass | This::NoSlot | This::NotAdmitted => normal += 1,
                    This::Place(p) => {
                        held[p.slot].push((p.page_off, p.page_len));
                        if let Some(c) = p.complete {
                            let mut tiles = [0u8; 4096];
                            for &(off, len) in &held[p.slot] {
                                for b in &mut tiles[off..off + len] {
                                    *b += 1;
                                }
                            }
                            assert!(tiles[..c.data_len].iter().all(|&b| b == 1));
                            assert_eq!(c.fragments, held[p.slot].len());
                            completed_frags += held[p.slot].len();
                            completions += 1;
                            held[p.slot].clear();
                        }
                    }
                }
                assert!(e.busy() <= SLOTS);
            }
        }
        while let Some(s) = e.drain() {
            normal += held[s].len();
            held[s].clear();
        }
        assert!(held.iter().all(|h| h.is_empty()));
        assert_eq!(normal + completed_frags, input);
        // Most undamaged trains complete.
        assert!(completions > 2000, "{completions}");
    }

    /// Any order, loss or duplication of a train's fragments: every page byte
    /// is placed at most once, and a completion means all were placed in order.
    #[test]
    fn exhaustive_small_orders() {
        let t = page_train(7);
        let seqs: [&[usize]; 12] = [
            &[0, 1, 2],
            &[0, 2, 1],
            &[1, 0, 2],
            &[2, 1, 0],
            &[0, 1, 1, 2],
            &[0, 0, 1, 2],
            &[0, 1],
            &[1, 2],
            &[0, 2],
            &[2],
            &[0, 1, 2, 2],
            &[0, 1, 2, 0, 1, 2],
        ];
        for seq in seqs {
            let mut e = Engine::<1>::new(Params::DEFAULT);
            let mut placed = [0u8; 4096];
            let mut completed = 0;
            for &i in seq {
                let s = e.on_fragment(&t[i], &tcp_l4(), 0);
                if let Some((slot, _)) = s.flush {
                    if slot != usize::MAX {
                        placed = [0; 4096];
                    }
                }
                if let This::Place(p) = s.this {
                    if p.page_off == 0 {
                        placed = [0; 4096];
                    }
                    for b in &mut placed[p.page_off..p.page_off + p.page_len] {
                        *b += 1;
                    }
                    if p.complete.is_some() {
                        assert!(placed.iter().all(|&b| b == 1), "{seq:?}");
                        completed += 1;
                        placed = [0; 4096];
                    }
                }
            }
            let want = match seq {
                [0, 1, 2] | [0, 1, 2, 2] => 1,
                [0, 1, 2, 0, 1, 2] => 2,
                _ => 0,
            };
            assert_eq!(completed, want, "{seq:?}");
        }
    }

    fn key(src_last: u8) -> FlowKey {
        FlowKey {
            src: [198, 18, 0, src_last],
            dst: DST,
            protocol: 6,
        }
    }

    fn train_from(src_last: u8, id: u16) -> [Header; 3] {
        page_train(id).map(|mut h| {
            h.src[3] = src_last;
            h
        })
    }

    #[test]
    fn grants_reserve_slots_and_refuse_when_full() {
        let mut e = Engine::<4>::new(Params::DEFAULT);
        e.set_limit(2);
        assert_eq!(e.grant(key(1), mac(1), 0), Grant::Granted(0));
        assert_eq!(
            e.grant(key(1), mac(1), 5),
            Grant::Renewed(0),
            "asking again renews"
        );
        assert_eq!(e.grant(key(2), mac(2), 0), Grant::Granted(1));
        assert_eq!(e.grant(key(3), mac(3), 0), Grant::Refused, "limit 2: full");
        assert_eq!(e.grants(), 2);
        // Open admission: an ungranted flow finds no unreserved slot.
        let t3 = train_from(3, 9);
        assert_eq!(e.on_fragment(&t3[0], &tcp_l4(), 0).this, This::NoSlot);
        // The granted flows speculate in their own slots.
        let t1 = train_from(1, 1);
        assert_eq!(place(e.on_fragment(&t1[0], &tcp_l4(), 1)).slot, 0);
        let t2 = train_from(2, 1);
        assert_eq!(place(e.on_fragment(&t2[0], &tcp_l4(), 1)).slot, 1);
        // Release: the slot goes to the next request once its train ends.
        assert_eq!(e.release(&key(2), &mac(2)), Released::Slot(1));
        assert_eq!(
            e.grant(key(3), mac(3), 2),
            Grant::Refused,
            "slot 1 still follows flow 2"
        );
        place(e.on_fragment(&t2[1], &[], 2));
        assert!(place(e.on_fragment(&t2[2], &[], 2)).complete.is_some());
        assert_eq!(e.grant(key(3), mac(3), 3), Grant::Granted(1));
        assert_eq!(e.release(&key(9), &mac(9)), Released::NoGrant);
    }

    fn mac(n: u8) -> Station {
        [2, 0, 0, 0, 0, n]
    }

    #[test]
    fn one_station_holds_at_most_half_the_slots() {
        let mut e = Engine::<32>::new(Params::DEFAULT);
        e.set_limit(8);
        assert_eq!(e.grant_cap(), 4);
        // A flood of requests for distinct flows from one address: four
        // grants, then refusals, while slots stay free for others.
        let mut granted = 0;
        for n in 1..=200u8 {
            match e.grant(key(n), mac(0x66), 0) {
                Grant::Granted(_) => granted += 1,
                g => assert_eq!(g, Grant::OverCap, "flow {n}"),
            }
        }
        assert_eq!((granted, e.grants()), (4, 4));
        assert_eq!(e.grant(key(201), mac(1), 0), Grant::Granted(4));
        // Renewing what it holds is not a new grant.
        assert_eq!(e.grant(key(1), mac(0x66), 1), Grant::Renewed(0));
        // A released grant makes room for one more.
        assert_eq!(e.release(&key(1), &mac(0x66)), Released::Slot(0));
        assert!(matches!(e.grant(key(100), mac(0x66), 2), Grant::Granted(_)));
        // At least one, even with one slot; the cap follows the limit.
        e.set_limit(1);
        assert_eq!(e.grant_cap(), 1);
        e.set_limit(3);
        assert_eq!(e.grant_cap(), 1);
        e.set_limit(32);
        assert_eq!(e.grant_cap(), 16);
    }

    #[test]
    fn only_the_holder_renews_or_releases_a_grant() {
        let mut e = Engine::<4>::new(Params::DEFAULT);
        assert_eq!(e.grant(key(1), mac(1), 0), Grant::Granted(0));
        // Another station asks for the same flow, or releases it: refused,
        // ignored; the grant stays with its holder.
        assert_eq!(e.grant(key(1), mac(9), 1), Grant::HeldByOther);
        assert_eq!(e.release(&key(1), &mac(9)), Released::NotHolder);
        assert_eq!(e.grant_at(0), Some((key(1), 0)), "not renewed by others");
        // The holder releases only the flow it names.
        assert_eq!(e.release(&key(2), &mac(1)), Released::NoGrant);
        assert_eq!(e.grants(), 1);
        assert_eq!(e.release(&key(1), &mac(1)), Released::Slot(0));
        assert_eq!(e.grants(), 0);
        assert_eq!(e.grant(key(1), mac(9), 2), Grant::Granted(0));
    }

    #[test]
    fn required_admission_speculates_only_on_grants() {
        let mut e = Engine::<4>::new(Params::DEFAULT);
        e.set_admission(Admission::Required);
        let t1 = train_from(1, 1);
        assert_eq!(e.on_fragment(&t1[0], &tcp_l4(), 0).this, This::NotAdmitted);
        assert_eq!(e.busy(), 0);
        assert_eq!(e.grant(key(1), mac(1), 0), Grant::Granted(0));
        let l4 = tcp_l4();
        for (i, f) in t1.iter().enumerate() {
            let p = place(e.on_fragment(f, if i == 0 { &l4[..] } else { &[] }, 1));
            assert_eq!(p.complete.is_some(), i == 2);
        }
        // An idle grant expires; then the flow is not admitted any more.
        assert_eq!(
            e.expire_grants(1_000, 1_000),
            None,
            "used at 1, idle 999 ns"
        );
        assert_eq!(e.expire_grants(1_001, 1_000), Some(key(1)));
        assert_eq!(e.grants(), 0);
        let t1 = train_from(1, 2);
        assert_eq!(e.on_fragment(&t1[0], &tcp_l4(), 2).this, This::NotAdmitted);
    }

    #[test]
    fn slot_limit_applies_to_new_trains() {
        let mut e = Engine::<4>::new(Params::DEFAULT);
        e.set_limit(1);
        place(e.on_fragment(&train_from(1, 1)[0], &tcp_l4(), 0));
        assert_eq!(
            e.on_fragment(&train_from(2, 1)[0], &tcp_l4(), 0).this,
            This::NoSlot
        );
        e.set_limit(0);
        assert_eq!(e.limit(), 1, "at least one slot");
        e.set_limit(99);
        assert_eq!(e.limit(), 4, "at most N");
        place(e.on_fragment(&train_from(2, 1)[0], &tcp_l4(), 0));
        assert_eq!(e.busy(), 2);
    }

    /// A train of `n` fragments of `each` bytes (UDP, 8-byte header), the
    /// last one shorter.
    fn long_train(id: u16, n: usize, each: usize) -> impl Iterator<Item = Header> {
        (0..n).map(move |i| {
            hdr(
                id,
                i * each,
                if i + 1 == n { 16 } else { each },
                i + 1 != n,
                17,
            )
        })
    }

    #[test]
    fn trains_up_to_the_fragment_limit_complete() {
        let mut e = Engine::<2>::new(Params::DEFAULT);
        let n = Params::DEFAULT.max_fragments;
        let mut last = None;
        for h in long_train(7, n, 120) {
            last = Some(place(e.on_fragment(&h, &[], 0)));
        }
        assert_eq!(last.and_then(|p| p.complete).map(|c| c.fragments), Some(n));
        assert_eq!(e.busy(), 0);
    }

    #[test]
    fn a_train_beyond_the_fragment_limit_misses_before_holding_too_many() {
        let mut e = Engine::<2>::new(Params::DEFAULT);
        let n = Params::DEFAULT.max_fragments + 1;
        let mut placed = 0;
        let mut missed = None;
        for h in long_train(8, n, 120) {
            let s = e.on_fragment(&h, &[], 0);
            match s.this {
                This::Place(_) => placed += 1,
                _ => {
                    if missed.is_none() {
                        missed = s.flush;
                    }
                }
            }
        }
        // At most max_fragments - 1 are ever held; the slot is free again.
        assert_eq!(placed, Params::DEFAULT.max_fragments - 1);
        assert_eq!(missed, Some((0, Miss::TooManyFragments)));
        assert_eq!(e.busy(), 0);
    }

    #[test]
    fn an_empty_fragment_ends_the_train() {
        let mut e = Engine::<2>::new(Params::DEFAULT);
        let t = page_train(3);
        place(e.on_fragment(&t[0], &tcp_l4(), 0));
        // An empty last fragment at the next offset must not complete it.
        let empty = hdr(3, t[1].frag_offset, 0, false, 6);
        let s = e.on_fragment(&empty, &[], 1);
        assert_eq!(s.this, This::Pass);
        assert_eq!(s.flush, Some((0, Miss::BadLength)));
        // Nor may an empty middle one be placed.
        place(e.on_fragment(&hdr(4, 0, t[0].payload_len(), true, 6), &tcp_l4(), 2));
        let s = e.on_fragment(&hdr(4, t[1].frag_offset, 0, true, 6), &[], 3);
        assert_eq!((s.this, s.flush), (This::Pass, Some((0, Miss::BadLength))));
        assert_eq!(e.busy(), 0);
    }

    fn with_tos(mut h: Header, tos: u8) -> Header {
        h.tos = tos;
        h
    }

    #[test]
    fn ecn_of_all_fragments_combines_as_ip_defrag_does() {
        // ECT(0) first, CE on a later fragment: the packet is CE.
        let mut e = Engine::<2>::new(Params::DEFAULT);
        let t = page_train(5);
        place(e.on_fragment(&with_tos(t[0], 2), &tcp_l4(), 0));
        place(e.on_fragment(&with_tos(t[1], 3), &[], 1));
        let c = place(e.on_fragment(&with_tos(t[2], 2), &[], 2)).complete;
        assert_eq!(c.map(|c| c.ecn), Some(3));
        // All ECT(1): nothing to add.
        let t = page_train(6);
        place(e.on_fragment(&with_tos(t[0], 1), &tcp_l4(), 3));
        place(e.on_fragment(&with_tos(t[1], 1), &[], 4));
        let c = place(e.on_fragment(&with_tos(t[2], 1), &[], 5)).complete;
        assert_eq!(c.map(|c| c.ecn), Some(0));
        // Not-ECT mixed with CE: a miss, the normal path drops it.
        let t = page_train(7);
        place(e.on_fragment(&with_tos(t[0], 0), &tcp_l4(), 6));
        place(e.on_fragment(&with_tos(t[1], 3), &[], 7));
        let s = e.on_fragment(&with_tos(t[2], 0), &[], 8);
        assert_eq!((s.this, s.flush), (This::Pass, Some((0, Miss::Ecn))));
    }

    #[test]
    fn ecn_table_matches_the_kernels() {
        use crate::wire::ipv4::reassembled_ecn;
        // ip_frag_ecn_table: index = OR of NOT_ECT 1, ECT_1 2, ECT_0 4, CE 8.
        for m in 1u8..16 {
            let want = match m {
                8 | 10 | 12 | 14 => Some(3),
                1 | 2 | 4 | 6 => Some(0),
                _ => None,
            };
            assert_eq!(reassembled_ecn(m), want, "mask {m}");
        }
    }
}
