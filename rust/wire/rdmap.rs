// SPDX-License-Identifier: GPL-2.0

//! RDMAP (RFC 5040): the control byte carried in DDP's RsvdULP, the opcodes,
//! the RDMA Read Request header, and the checks that classify an inbound DDP
//! segment as an RDMAP message.
//!
//! ```text
//! RDMAP control byte: RV(2) Rsvd(2) Opcode(4); RV = 1, so 0x40 | opcode.
//!
//! RDMA Read Request header (the untagged segment's payload, 28 bytes):
//!  0  u32 Data Sink STag
//!  4  u64 Data Sink Tagged Offset
//! 12  u32 RDMA Read Message Size
//! 16  u32 Data Source STag
//! 20  u64 Data Source Tagged Offset
//! ```
//!
//! Untagged queues: 0 Send (all four Send variants), 1 RDMA Read Request,
//! 2 Terminate. RDMA Write and Read Response are tagged. The Invalidate
//! STag of the Send-with-Invalidate variants is DDP's 32-bit untagged
//! RsvdULP field. RFC 7306 atomics (opcodes 0x8-0xc) are not implemented
//! and are refused as unexpected opcodes, as siw does.

use super::ddp::{self, DdpError, Header};
use super::terminate::TermCode;

/// The RDMAP version (RV) this implementation speaks.
pub const VERSION: u8 = 1;
/// Untagged queue of the Send variants.
pub const QN_SEND: u32 = 0;
/// Untagged queue of RDMA Read Requests.
pub const QN_READ_REQ: u32 = 1;
/// Untagged queue of Terminate messages.
pub const QN_TERMINATE: u32 = 2;
/// Number of untagged queues RDMAP uses.
pub const QUEUES: u32 = 3;
/// Length of the RDMA Read Request header.
pub const READ_REQ_LEN: usize = 28;

/// RDMAP opcodes (RFC 5040 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Opcode {
    /// RDMA Write (tagged).
    Write = 0x0,
    /// RDMA Read Request (untagged, QN 1).
    ReadRequest = 0x1,
    /// RDMA Read Response (tagged).
    ReadResponse = 0x2,
    /// Send (untagged, QN 0).
    Send = 0x3,
    /// Send with Invalidate.
    SendInvalidate = 0x4,
    /// Send with Solicited Event.
    SendSe = 0x5,
    /// Send with Solicited Event and Invalidate.
    SendSeInvalidate = 0x6,
    /// Terminate (untagged, QN 2).
    Terminate = 0x7,
}

impl Opcode {
    /// The opcode for a 4-bit value, `None` for reserved ones.
    pub const fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0x0 => Self::Write,
            0x1 => Self::ReadRequest,
            0x2 => Self::ReadResponse,
            0x3 => Self::Send,
            0x4 => Self::SendInvalidate,
            0x5 => Self::SendSe,
            0x6 => Self::SendSeInvalidate,
            0x7 => Self::Terminate,
            _ => return None,
        })
    }

    /// True for the opcodes carried in tagged DDP segments.
    pub const fn is_tagged(self) -> bool {
        matches!(self, Self::Write | Self::ReadResponse)
    }

    /// The untagged queue of an untagged opcode.
    pub const fn queue(self) -> Option<u32> {
        match self {
            Self::Write | Self::ReadResponse => None,
            Self::ReadRequest => Some(QN_READ_REQ),
            Self::Terminate => Some(QN_TERMINATE),
            Self::Send | Self::SendInvalidate | Self::SendSe | Self::SendSeInvalidate => {
                Some(QN_SEND)
            }
        }
    }

    /// True for the four Send variants.
    pub const fn is_send(self) -> bool {
        matches!(
            self,
            Self::Send | Self::SendInvalidate | Self::SendSe | Self::SendSeInvalidate
        )
    }

    /// True for the variants that carry an Invalidate STag.
    pub const fn invalidates(self) -> bool {
        matches!(self, Self::SendInvalidate | Self::SendSeInvalidate)
    }

    /// True for the Solicited Event variants.
    pub const fn solicited(self) -> bool {
        matches!(self, Self::SendSe | Self::SendSeInvalidate)
    }
}

/// The RDMAP control byte for `op` (RV 1, reserved bits zero).
pub const fn control_byte(op: Opcode) -> u8 {
    (VERSION << 6) | op as u8
}

/// The fields of an RDMAP control byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Control {
    /// RDMAP version (RV).
    pub version: u8,
    /// The two reserved bits (ignored on receive).
    pub reserved: u8,
    /// The 4-bit opcode as received.
    pub opcode: u8,
}

impl Control {
    /// Splits a control byte.
    pub const fn parse(b: u8) -> Self {
        Self {
            version: b >> 6,
            reserved: (b >> 4) & 0x3,
            opcode: b & 0xf,
        }
    }
}

/// An RDMA Read Request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRequest {
    /// STag of the requester's sink buffer (the Read Responses go there).
    pub sink_stag: u32,
    /// Tagged Offset in the sink buffer.
    pub sink_to: u64,
    /// Bytes to read.
    pub size: u32,
    /// STag of the responder's source buffer.
    pub src_stag: u32,
    /// Tagged Offset in the source buffer.
    pub src_to: u64,
}

impl ReadRequest {
    /// Parses the 28-byte header at the start of `b`.
    pub fn parse(b: &[u8]) -> Option<Self> {
        let h: &[u8; READ_REQ_LEN] = b.get(..READ_REQ_LEN)?.try_into().ok()?;
        let u32_at = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let u64_at = |i: usize| (u64::from(u32_at(i)) << 32) | u64::from(u32_at(i + 4));
        Some(Self {
            sink_stag: u32_at(0),
            sink_to: u64_at(4),
            size: u32_at(12),
            src_stag: u32_at(16),
            src_to: u64_at(20),
        })
    }

    /// The 28-byte header.
    pub fn to_bytes(self) -> [u8; READ_REQ_LEN] {
        let mut b = [0u8; READ_REQ_LEN];
        b[0..4].copy_from_slice(&self.sink_stag.to_be_bytes());
        b[4..12].copy_from_slice(&self.sink_to.to_be_bytes());
        b[12..16].copy_from_slice(&self.size.to_be_bytes());
        b[16..20].copy_from_slice(&self.src_stag.to_be_bytes());
        b[20..28].copy_from_slice(&self.src_to.to_be_bytes());
        b
    }
}

/// Why an inbound segment is not an acceptable RDMAP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdmapError {
    /// The DDP header is malformed.
    Ddp(DdpError),
    /// RV is not 1.
    BadVersion(u8),
    /// A reserved opcode, or an opcode in the wrong kind of segment (a
    /// tagged Send, an untagged Write).
    UnexpectedOpcode(u8),
    /// A Read Request that is not a single whole segment (L=0 or MO≠0) or
    /// carries bytes after its header.
    BadReadRequest,
}

impl From<DdpError> for RdmapError {
    fn from(e: DdpError) -> Self {
        Self::Ddp(e)
    }
}

impl RdmapError {
    /// The Terminate code for this error.
    pub const fn term_code(self) -> TermCode {
        match self {
            Self::Ddp(e) => e.term_code(),
            Self::BadVersion(_) => TermCode::RDMAP_VERSION,
            Self::UnexpectedOpcode(_) => TermCode::RDMAP_OPCODE,
            Self::BadReadRequest => TermCode::RDMAP_OP_UNSPECIFIED,
        }
    }
}

/// An inbound DDP segment classified as RDMAP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment<'a> {
    /// The opcode.
    pub opcode: Opcode,
    /// The DDP header.
    pub ddp: Header,
    /// The bytes after the DDP header: data for Write, Read Response and
    /// Sends, the 28-byte header for a Read Request, the Terminate payload
    /// for a Terminate.
    pub payload: &'a [u8],
}

impl<'a> Segment<'a> {
    /// Parses and classifies one ULPDU. Checks, in siw's order: the DDP
    /// header and version, RV, the opcode and whether it matches the T
    /// flag, the queue number of untagged opcodes, and that a Read Request
    /// is one 28-byte segment at MO 0. MSN, MO and STag checks need the
    /// connection's state and are left to the caller (see [`super::ddp`]).
    pub fn parse(ulpdu: &'a [u8]) -> Result<Self, RdmapError> {
        let (ddp, payload) = Header::parse(ulpdu)?;
        let ctl = Control::parse(ddp.ulp_ctrl());
        if ctl.version != VERSION {
            return Err(RdmapError::BadVersion(ctl.version));
        }
        let opcode = Opcode::from_u8(ctl.opcode).ok_or(RdmapError::UnexpectedOpcode(ctl.opcode))?;
        match ddp {
            Header::Tagged(_) if !opcode.is_tagged() => {
                return Err(RdmapError::UnexpectedOpcode(ctl.opcode))
            }
            Header::Untagged(_) if opcode.is_tagged() => {
                return Err(RdmapError::UnexpectedOpcode(ctl.opcode))
            }
            Header::Tagged(_) => {}
            Header::Untagged(u) => {
                if Some(u.qn) != opcode.queue() {
                    return Err(DdpError::InvalidQn.into());
                }
                if opcode == Opcode::ReadRequest
                    && (!u.last || u.mo != 0 || payload.len() != READ_REQ_LEN)
                {
                    if payload.len() < READ_REQ_LEN {
                        return Err(DdpError::Truncated.into());
                    }
                    return Err(RdmapError::BadReadRequest);
                }
            }
        }
        Ok(Self {
            opcode,
            ddp,
            payload,
        })
    }

    /// The Read Request header, for a Read Request.
    pub fn read_request(&self) -> Option<ReadRequest> {
        if self.opcode == Opcode::ReadRequest {
            ReadRequest::parse(self.payload)
        } else {
            None
        }
    }

    /// The Invalidate STag, for the Send-with-Invalidate variants.
    pub fn invalidate_stag(&self) -> Option<u32> {
        match self.ddp {
            Header::Untagged(u) if self.opcode.invalidates() => Some(u.ulp_word),
            _ => None,
        }
    }
}

/// The DDP header of a tagged RDMAP segment (Write or Read Response).
/// `None` for an untagged opcode.
pub const fn tagged_header(op: Opcode, last: bool, stag: u32, to: u64) -> Option<Header> {
    if !op.is_tagged() {
        return None;
    }
    Some(Header::Tagged(ddp::Tagged {
        last,
        ulp_ctrl: control_byte(op),
        stag,
        to,
    }))
}

/// The DDP header of an untagged RDMAP segment on the opcode's queue;
/// `inval_stag` goes into RsvdULP for the invalidating Sends and is ignored
/// otherwise. `None` for a tagged opcode.
pub const fn untagged_header(
    op: Opcode,
    last: bool,
    msn: u32,
    mo: u32,
    inval_stag: u32,
) -> Option<Header> {
    let qn = match op.queue() {
        Some(q) => q,
        None => return None,
    };
    Some(Header::Untagged(ddp::Untagged {
        last,
        ulp_ctrl: control_byte(op),
        ulp_word: if op.invalidates() { inval_stag } else { 0 },
        qn,
        msn,
        mo,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siw_control_words() {
        // iwarp_pktinfo[] in siw_qp.c: ddp_rdmap_ctrl for each opcode.
        let expect = [
            (Opcode::Write, true, 0xc140u16),
            (Opcode::ReadRequest, false, 0x4141),
            (Opcode::ReadResponse, true, 0xc142),
            (Opcode::Send, false, 0x4143),
            (Opcode::SendInvalidate, false, 0x4144),
            (Opcode::SendSe, false, 0x4145),
            (Opcode::SendSeInvalidate, false, 0x4146),
            (Opcode::Terminate, false, 0x4147),
        ];
        for (op, tagged, word) in expect {
            assert_eq!(op.is_tagged(), tagged);
            let h = if tagged {
                tagged_header(op, true, 0, 0).unwrap()
            } else {
                untagged_header(op, true, 1, 0, 0).unwrap()
            };
            assert_eq!(u16::from_be_bytes([h.control_byte(), h.ulp_ctrl()]), word);
            assert_eq!(Opcode::from_u8(op as u8), Some(op));
        }
        assert_eq!(Opcode::from_u8(8), None);
        assert!(tagged_header(Opcode::Send, true, 0, 0).is_none());
        assert!(untagged_header(Opcode::Write, true, 0, 0, 0).is_none());
    }

    fn ulpdu(h: Header, payload: &[u8], out: &mut [u8]) -> usize {
        let n = h.encode(out).unwrap();
        out[n..n + payload.len()].copy_from_slice(payload);
        n + payload.len()
    }

    #[test]
    fn read_request_round_trip() {
        let rr = ReadRequest {
            sink_stag: 0x0102_0304,
            sink_to: 0x1122_3344_5566_7788,
            size: 4096,
            src_stag: 0xa0b0_c0d0,
            src_to: 0x99,
        };
        let body = rr.to_bytes();
        assert_eq!(body[..4], [1, 2, 3, 4]);
        assert_eq!(body[12..16], [0, 0, 0x10, 0]);
        let mut buf = [0u8; 64];
        let h = untagged_header(Opcode::ReadRequest, true, 1, 0, 0).unwrap();
        let n = ulpdu(h, &body, &mut buf);
        assert_eq!(n, 18 + 28);
        let s = Segment::parse(&buf[..n]).unwrap();
        assert_eq!(s.opcode, Opcode::ReadRequest);
        assert_eq!(s.read_request(), Some(rr));
        // Not last, MO != 0, short, long.
        let h = untagged_header(Opcode::ReadRequest, false, 1, 0, 0).unwrap();
        let n = ulpdu(h, &body, &mut buf);
        assert_eq!(Segment::parse(&buf[..n]), Err(RdmapError::BadReadRequest));
        let h = untagged_header(Opcode::ReadRequest, true, 1, 4, 0).unwrap();
        let n = ulpdu(h, &body, &mut buf);
        assert_eq!(Segment::parse(&buf[..n]), Err(RdmapError::BadReadRequest));
        let h = untagged_header(Opcode::ReadRequest, true, 1, 0, 0).unwrap();
        let n = ulpdu(h, &body[..27], &mut buf);
        assert_eq!(
            Segment::parse(&buf[..n]).unwrap_err().term_code(),
            TermCode::LLP_FPDU_START
        );
        let n = ulpdu(h, &[0u8; 29], &mut buf);
        assert_eq!(Segment::parse(&buf[..n]), Err(RdmapError::BadReadRequest));
    }

    #[test]
    fn classification_errors() {
        let mut buf = [0u8; 32];
        // RV 2.
        let mut h = untagged_header(Opcode::Send, true, 1, 0, 0).unwrap();
        if let Header::Untagged(u) = &mut h {
            u.ulp_ctrl = 0x83;
        }
        let n = ulpdu(h, b"x", &mut buf);
        let e = Segment::parse(&buf[..n]).unwrap_err();
        assert_eq!(e, RdmapError::BadVersion(2));
        assert_eq!(e.term_code(), TermCode::RDMAP_VERSION);
        // Reserved opcode 8 (an RFC 7306 atomic).
        if let Header::Untagged(u) = &mut h {
            u.ulp_ctrl = 0x48;
        }
        let n = ulpdu(h, b"x", &mut buf);
        assert_eq!(
            Segment::parse(&buf[..n]),
            Err(RdmapError::UnexpectedOpcode(8))
        );
        // Tagged Send.
        let t = Header::Tagged(ddp::Tagged {
            last: true,
            ulp_ctrl: control_byte(Opcode::Send),
            stag: 1,
            to: 0,
        });
        let n = ulpdu(t, b"", &mut buf);
        assert_eq!(
            Segment::parse(&buf[..n]).unwrap_err().term_code(),
            TermCode::RDMAP_OPCODE
        );
        // Untagged Write.
        if let Header::Untagged(u) = &mut h {
            u.ulp_ctrl = control_byte(Opcode::Write);
        }
        let n = ulpdu(h, b"", &mut buf);
        assert_eq!(
            Segment::parse(&buf[..n]),
            Err(RdmapError::UnexpectedOpcode(0))
        );
        // Send on QN 1.
        if let Header::Untagged(u) = &mut h {
            u.ulp_ctrl = control_byte(Opcode::Send);
            u.qn = 1;
        }
        let n = ulpdu(h, b"", &mut buf);
        assert_eq!(
            Segment::parse(&buf[..n]).unwrap_err().term_code(),
            TermCode::DDP_UT_INVALID_QN
        );
        // DDP version is checked before RV.
        buf[0] = 0x42;
        buf[1] = 0x83;
        assert_eq!(
            Segment::parse(&buf[..18]).unwrap_err().term_code(),
            TermCode::DDP_UT_VERSION
        );
    }

    #[test]
    fn sends_and_invalidate() {
        let mut buf = [0u8; 32];
        let h = untagged_header(Opcode::SendSeInvalidate, true, 9, 0, 0xdead_beef).unwrap();
        let n = ulpdu(h, b"hi", &mut buf);
        assert_eq!(buf[2..6], [0xde, 0xad, 0xbe, 0xef]);
        let s = Segment::parse(&buf[..n]).unwrap();
        assert!(s.opcode.solicited() && s.opcode.is_send());
        assert_eq!(s.invalidate_stag(), Some(0xdead_beef));
        assert_eq!(s.payload, b"hi");
        let h = untagged_header(Opcode::Send, true, 9, 0, 0xdead_beef).unwrap();
        let n = ulpdu(h, b"hi", &mut buf);
        assert_eq!(buf[2..6], [0, 0, 0, 0]);
        assert_eq!(Segment::parse(&buf[..n]).unwrap().invalidate_stag(), None);
        let h = tagged_header(Opcode::ReadResponse, false, 7, 100).unwrap();
        let n = ulpdu(h, b"data", &mut buf);
        let s = Segment::parse(&buf[..n]).unwrap();
        assert_eq!(s.opcode, Opcode::ReadResponse);
        assert!(!s.ddp.last());
        assert_eq!(s.read_request(), None);
    }
}
