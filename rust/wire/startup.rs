// SPDX-License-Identifier: GPL-2.0

//! MPA start-up decisions (RFC 5044 §7.1, RFC 6581): what an initiator
//! asks for, what a responder answers to a request, and whether an
//! initiator accepts a reply. Pure: the frames are [`super::mpa::Startup`];
//! the caller moves the bytes.
//!
//! The rules follow the RFCs and, where they leave a choice, siw
//! (`drivers/infiniband/sw/siw/siw_cm.c`), the peer zcddp must interoperate
//! with:
//!
//! - CRC: on for both directions when either frame has C (RFC 5044 §7.1.2:
//!   a responder must use CRCs when asked). A side that is *strict* refuses
//!   a connection whose outcome differs from its own wish (siw's
//!   `mpa_crc_strict` without `mpa_crc_required` refuses CRCs; with
//!   `mpa_crc_required` it refuses their absence).
//! - Markers: per direction; M in a frame asks the *other* side to send
//!   them. A side that cannot send them refuses (siw always does).
//! - Revision: the responder answers `min(request, own)`; a reply above the
//!   request's revision is a protocol error. An initiator that sent
//!   enhanced data needs a revision 2 reply with enhanced data (siw).
//! - IRD/ORD (enhanced data): the responder's IRD is at least the
//!   initiator's ORD and its ORD at most the initiator's IRD, within its
//!   limit (siw's "relaxed" negotiation); an initiator takes the reply's
//!   values mirrored, and refuses ([`TermCode::LLP_INSUFFICIENT_IRD`]) a
//!   responder ORD above its limit.
//! - Peer-to-peer: the responder picks one of the offered RTR types it
//!   accepts (Write, then Read, then Send, as siw; siw picks Write when
//!   none is offered); none in common is [`TermCode::LLP_NO_MATCHING_RTR`].

use super::mpa::{Enhanced, FrameKind, RtrTypes, Startup, REVISION_1, REVISION_2};
use super::terminate::TermCode;

/// One side's wishes and limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Highest MPA revision (1 or 2).
    pub revision: u8,
    /// Ask for CRCs.
    pub crc: bool,
    /// Refuse an outcome with CRC use other than `crc`.
    pub crc_strict: bool,
    /// Ask the peer for markers.
    pub markers: bool,
    /// Refuse to send markers.
    pub no_markers: bool,
    /// Peer-to-peer model (revision 2).
    pub p2p: bool,
    /// RTR types offered (initiator) or accepted (responder).
    pub rtr: RtrTypes,
    /// Inbound RDMA Read depth wanted.
    pub ird: u16,
    /// Outbound RDMA Read depth wanted.
    pub ord: u16,
    /// Largest IRD/ORD this side can take.
    pub ird_ord_max: u16,
}

/// What a connection runs with after start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Negotiated {
    /// MPA revision.
    pub revision: u8,
    /// CRCs in both directions.
    pub crc: bool,
    /// This side sends markers.
    pub markers_tx: bool,
    /// The peer sends markers.
    pub markers_rx: bool,
    /// The RTR message (peer-to-peer model): the one type chosen.
    pub rtr: Option<RtrTypes>,
    /// This side's inbound RDMA Read depth.
    pub ird: u16,
    /// This side's outbound RDMA Read depth.
    pub ord: u16,
}

/// Why start-up fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The parameters do not match: a responder answers with a Reject
    /// reply; an initiator closes (and may send the Terminate, if any).
    Refuse(Option<TermCode>),
    /// The peer rejected (R in the reply).
    Rejected,
    /// The frame is not what the protocol allows here (wrong key, a reply
    /// revision above the request's, enhanced data missing).
    Protocol,
}

impl Policy {
    /// Whether the policy can be used at all.
    pub const fn valid(&self) -> bool {
        if self.revision != REVISION_1 && self.revision != REVISION_2 {
            return false;
        }
        if self.ird > self.ird_ord_max || self.ord > self.ird_ord_max {
            return false;
        }
        // The peer-to-peer model is revision 2's, and needs an RTR type.
        let any_rtr = self.rtr.send || self.rtr.write || self.rtr.read;
        !self.p2p || (self.revision == REVISION_2 && any_rtr)
    }

    /// The enhanced data this side sends in a request.
    const fn enhanced(&self) -> Option<Enhanced> {
        if self.revision != REVISION_2 {
            return None;
        }
        Some(Enhanced {
            peer_to_peer: self.p2p,
            ird: self.ird,
            ord: self.ord,
            rtr: if self.p2p { self.rtr } else { RtrTypes::NONE },
        })
    }

    /// The MPA Request an initiator with this policy sends.
    pub const fn request<'a>(&self, private_data: &'a [u8]) -> Startup<'a> {
        Startup {
            kind: FrameKind::Request,
            markers: self.markers,
            crc: self.crc,
            reject: false,
            revision: self.revision,
            reserved: 0,
            enhanced: self.enhanced(),
            private_data,
        }
    }

    /// A responder's answer to `req`: the reply to send (a Reject reply
    /// when refused) and the outcome. `Err(Refusal::Protocol)` sends
    /// nothing.
    pub fn respond<'a>(
        &self,
        req: &Startup<'_>,
        private_data: &'a [u8],
    ) -> Result<(Startup<'a>, Negotiated), (Option<Startup<'a>>, Refusal)> {
        if req.kind != FrameKind::Request {
            return Err((None, Refusal::Protocol));
        }
        let revision = if req.revision < self.revision {
            req.revision
        } else {
            self.revision
        };
        let crc = req.crc || self.crc;
        let mut n = Negotiated {
            revision,
            crc,
            markers_tx: req.markers,
            markers_rx: self.markers,
            rtr: None,
            ird: self.ird,
            ord: self.ord,
        };
        let mut refuse = (self.crc_strict && crc != self.crc) || (req.markers && self.no_markers);
        let mut term = None;
        let enhanced = match req.enhanced {
            Some(e) if revision == REVISION_2 => {
                // Our IRD covers the initiator's ORD, our ORD stays within
                // its IRD, both within our limit.
                n.ird = max(self.ird, e.ord);
                if n.ird > self.ird_ord_max {
                    n.ird = self.ird_ord_max;
                    refuse = true;
                    term = Some(TermCode::LLP_INSUFFICIENT_IRD);
                }
                n.ord = min(self.ord, e.ird);
                let mut rtr = RtrTypes::NONE;
                if e.peer_to_peer {
                    let offered = if !e.rtr.send && !e.rtr.write && !e.rtr.read {
                        RtrTypes {
                            write: true,
                            ..RtrTypes::NONE
                        }
                    } else {
                        e.rtr
                    };
                    match RtrTypes::choose(offered, self.rtr) {
                        Some(c) => {
                            n.rtr = Some(c);
                            rtr = c;
                        }
                        None => {
                            refuse = true;
                            term = Some(TermCode::LLP_NO_MATCHING_RTR);
                        }
                    }
                }
                Some(Enhanced {
                    peer_to_peer: e.peer_to_peer,
                    ird: n.ird,
                    ord: n.ord,
                    rtr,
                })
            }
            // Revision 1 has no IRD/ORD exchange: one Read each way.
            _ => {
                n.ird = min(self.ird, 1);
                n.ord = min(self.ord, 1);
                None
            }
        };
        let reply = Startup {
            kind: FrameKind::Reply,
            markers: self.markers && !refuse,
            crc: if refuse && self.crc_strict {
                self.crc
            } else {
                crc
            },
            reject: refuse,
            revision,
            reserved: 0,
            enhanced,
            private_data: if refuse { &[] } else { private_data },
        };
        if refuse {
            Err((Some(reply), Refusal::Refuse(term)))
        } else {
            Ok((reply, n))
        }
    }

    /// An initiator's verdict on the reply `rep` to its request `req`.
    pub fn accept(&self, req: &Startup<'_>, rep: &Startup<'_>) -> Result<Negotiated, Refusal> {
        if rep.kind != FrameKind::Reply || rep.revision > req.revision {
            return Err(Refusal::Protocol);
        }
        if rep.reject {
            return Err(Refusal::Rejected);
        }
        let crc = req.crc || rep.crc;
        if (self.crc_strict && crc != self.crc) || (rep.markers && self.no_markers) {
            return Err(Refusal::Refuse(None));
        }
        let mut n = Negotiated {
            revision: rep.revision,
            crc,
            markers_tx: rep.markers,
            markers_rx: req.markers,
            rtr: None,
            ird: min(self.ird, 1),
            ord: min(self.ord, 1),
        };
        let Some(mine) = req.enhanced else {
            return Ok(n);
        };
        let e = match rep.enhanced {
            Some(e) if rep.revision == REVISION_2 => e,
            _ => return Err(Refusal::Protocol),
        };
        // The responder's ORD is what we must take in, its IRD what we may
        // send out.
        if e.ord > self.ird_ord_max {
            return Err(Refusal::Refuse(Some(TermCode::LLP_INSUFFICIENT_IRD)));
        }
        n.ird = e.ord;
        n.ord = e.ird;
        if mine.peer_to_peer {
            let got = RtrTypes {
                send: e.rtr.send && mine.rtr.send,
                write: e.rtr.write && mine.rtr.write,
                read: e.rtr.read && mine.rtr.read,
            };
            // Exactly one, and one we offered.
            let count = u8::from(got.send) + u8::from(got.write) + u8::from(got.read);
            if count != 1 {
                return Err(Refusal::Refuse(Some(TermCode::LLP_NO_MATCHING_RTR)));
            }
            n.rtr = Some(got);
        }
        Ok(n)
    }
}

const fn max(a: u16, b: u16) -> u16 {
    if a > b {
        a
    } else {
        b
    }
}

const fn min(a: u16, b: u16) -> u16 {
    if a < b {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WRITE: RtrTypes = RtrTypes {
        write: true,
        ..RtrTypes::NONE
    };
    const ALL: RtrTypes = RtrTypes {
        send: true,
        write: true,
        read: true,
    };

    /// siw's defaults: revision 2, no CRC asked, not strict, never markers,
    /// no peer-to-peer; IRD/ORD up to 128.
    fn siw() -> Policy {
        Policy {
            revision: 2,
            crc: false,
            crc_strict: false,
            markers: false,
            no_markers: true,
            p2p: false,
            rtr: RtrTypes {
                write: true,
                read: true,
                send: false,
            },
            ird: 16,
            ord: 16,
            ird_ord_max: 128,
        }
    }

    fn zc() -> Policy {
        Policy {
            no_markers: false,
            rtr: ALL,
            ird: 4,
            ord: 4,
            ..siw()
        }
    }

    fn roundtrip(
        i: Policy,
        r: Policy,
    ) -> (Result<Negotiated, Refusal>, Result<Negotiated, Refusal>) {
        let req = i.request(b"hello");
        let mut buf = [0u8; 600];
        let n = req.encode(&mut buf).unwrap();
        let (req2, _) = Startup::parse(&buf[..n]).unwrap();
        assert_eq!(req2, req);
        match r.respond(&req2, b"world") {
            Ok((rep, rn)) => (i.accept(&req, &rep), Ok(rn)),
            Err((Some(rep), why)) => (i.accept(&req, &rep), Err(why)),
            Err((None, why)) => (Err(why), Err(why)),
        }
    }

    #[test]
    fn defaults_agree() {
        let (a, b) = roundtrip(zc(), siw());
        let a = a.unwrap();
        let b = b.unwrap();
        assert_eq!(a.revision, 2);
        assert!(!a.crc && !b.crc);
        // The responder's IRD covers our ORD; mirrored on our side.
        assert_eq!((b.ird, b.ord), (16, 4));
        assert_eq!((a.ird, a.ord), (4, 16));
    }

    #[test]
    fn crc_either_side_turns_it_on() {
        let (a, b) = roundtrip(Policy { crc: true, ..zc() }, siw());
        assert!(a.unwrap().crc && b.unwrap().crc);
        let (a, b) = roundtrip(zc(), Policy { crc: true, ..siw() });
        assert!(a.unwrap().crc && b.unwrap().crc);
    }

    #[test]
    fn crc_strict_refuses() {
        // siw with mpa_crc_strict (no CRC) refuses a request with C.
        let (a, b) = roundtrip(
            Policy { crc: true, ..zc() },
            Policy {
                crc_strict: true,
                ..siw()
            },
        );
        assert_eq!(a, Err(Refusal::Rejected));
        assert_eq!(b, Err(Refusal::Refuse(None)));
        // A strict initiator refuses a reply that switches CRC on.
        let (a, _) = roundtrip(
            Policy {
                crc_strict: true,
                ..zc()
            },
            Policy { crc: true, ..siw() },
        );
        assert_eq!(a, Err(Refusal::Refuse(None)));
    }

    #[test]
    fn markers_refused_by_siw_accepted_by_us() {
        let (a, b) = roundtrip(
            Policy {
                markers: true,
                ..zc()
            },
            siw(),
        );
        assert_eq!(a, Err(Refusal::Rejected));
        assert_eq!(b, Err(Refusal::Refuse(None)));
        let (a, b) = roundtrip(
            Policy {
                markers: true,
                ..zc()
            },
            zc(),
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert!(a.markers_rx && !a.markers_tx && b.markers_tx && !b.markers_rx);
    }

    #[test]
    fn revision_is_the_lower() {
        let (a, b) = roundtrip(
            Policy {
                revision: 1,
                ird: 1,
                ord: 1,
                ..zc()
            },
            siw(),
        );
        assert_eq!(a.unwrap().revision, 1);
        assert_eq!(b.unwrap().revision, 1);
        // A revision 2 initiator with enhanced data refuses a revision 1 reply.
        let (a, _) = roundtrip(
            zc(),
            Policy {
                revision: 1,
                ..siw()
            },
        );
        assert_eq!(a, Err(Refusal::Protocol));
    }

    #[test]
    fn p2p_rtr_choice() {
        let p2p = |rtr| Policy {
            p2p: true,
            rtr,
            ..zc()
        };
        let (a, b) = roundtrip(p2p(ALL), siw());
        assert_eq!(a.unwrap().rtr, Some(WRITE));
        assert_eq!(b.unwrap().rtr, Some(WRITE));
        let send = RtrTypes {
            send: true,
            ..RtrTypes::NONE
        };
        let (a, b) = roundtrip(p2p(send), siw());
        assert_eq!(a, Err(Refusal::Rejected));
        assert_eq!(b, Err(Refusal::Refuse(Some(TermCode::LLP_NO_MATCHING_RTR))));
        let (a, b) = roundtrip(p2p(send), zc());
        assert_eq!(a.unwrap().rtr, Some(send));
        assert_eq!(b.unwrap().rtr, Some(send));
    }

    #[test]
    fn ird_limit() {
        let (a, b) = roundtrip(
            Policy {
                ord: 100,
                ird_ord_max: 128,
                ..zc()
            },
            Policy {
                ird_ord_max: 64,
                ird: 8,
                ..siw()
            },
        );
        assert_eq!(a, Err(Refusal::Rejected));
        assert_eq!(
            b,
            Err(Refusal::Refuse(Some(TermCode::LLP_INSUFFICIENT_IRD)))
        );
    }

    #[test]
    fn wrong_frames() {
        let i = zc();
        let req = i.request(&[]);
        assert_eq!(i.accept(&req, &req), Err(Refusal::Protocol));
        let rep = Startup {
            kind: FrameKind::Reply,
            ..req
        };
        assert!(matches!(
            siw().respond(&rep, &[]),
            Err((None, Refusal::Protocol))
        ));
        let v1 = Policy {
            revision: 1,
            ..zc()
        };
        let req1 = v1.request(&[]);
        let rep2 = Startup {
            revision: 2,
            ..siw().respond(&req, &[]).unwrap().0
        };
        assert_eq!(v1.accept(&req1, &rep2), Err(Refusal::Protocol));
    }

    #[test]
    fn policy_validity() {
        assert!(zc().valid());
        assert!(!Policy {
            revision: 3,
            ..zc()
        }
        .valid());
        assert!(!Policy {
            revision: 1,
            p2p: true,
            ..zc()
        }
        .valid());
        assert!(!Policy { ird: 129, ..zc() }.valid());
        assert!(!Policy {
            p2p: true,
            rtr: RtrTypes::NONE,
            ..zc()
        }
        .valid());
    }
}
