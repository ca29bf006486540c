// SPDX-License-Identifier: GPL-2.0

//! DDP segment headers (RFC 5041 §5) and the receive-side checks whose
//! failures have Terminate codes (RFC 5041 §7.2).
//!
//! ```text
//! Tagged (T=1), 14 bytes:          Untagged (T=0), 18 bytes:
//!  0  u8  control: T L Rsvd(4) DV(2)   0  u8  control: T L Rsvd(4) DV(2)
//!  1  u8  RsvdULP (RDMAP control)      1  u8  RsvdULP (RDMAP control)
//!  2  u32 STag                         2  u32 RsvdULP (RDMAP: Invalidate STag)
//!  6  u64 Tagged Offset (TO)           6  u32 Queue Number (QN)
//!                                     10  u32 Message Sequence Number (MSN)
//!                                     14  u32 Message Offset (MO)
//! ```
//!
//! All fields are big-endian. DV is 1. The reserved control bits are zero on
//! transmit and not checked on receive (siw does not check them either).
//! On the wire the header follows MPA's 2-byte ULPDU_Length: siw's
//! `struct iwarp_ctrl_tagged` / `iwarp_ctrl_untagged` are this header with
//! that length in front (16 / 20 bytes).

use super::terminate::TermCode;

/// The DDP version (DV) this implementation speaks.
pub const VERSION: u8 = 1;
/// Length of a tagged DDP header.
pub const TAGGED_HDR_LEN: usize = 14;
/// Length of an untagged DDP header.
pub const UNTAGGED_HDR_LEN: usize = 18;

/// Control byte: Tagged flag.
pub const FLAG_TAGGED: u8 = 0x80;
/// Control byte: Last flag.
pub const FLAG_LAST: u8 = 0x40;
/// Control byte: reserved bits.
pub const MASK_RESERVED: u8 = 0x3c;
/// Control byte: DDP version bits.
pub const MASK_VERSION: u8 = 0x03;

/// Why a DDP segment is refused, each with its RFC 5041 §7.2 Terminate code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DdpError {
    /// The ULPDU is shorter than the header its T flag announces. RFC 5041
    /// has no code for it; like siw this reports MPA's "FPDU start" error
    /// (the length and the header disagree).
    Truncated,
    /// DV is not 1 (tagged: code 0x04, untagged: 0x06).
    BadVersion {
        /// The T flag of the offending segment.
        tagged: bool,
        /// The version received.
        version: u8,
    },
    /// Tagged: invalid STag (0x00).
    InvalidStag,
    /// Tagged: base or bounds violation (0x01).
    BaseBounds,
    /// Tagged: STag not associated with this DDP stream (0x02).
    StagNotAssociated,
    /// Tagged: TO plus length wraps (0x03).
    ToWrap,
    /// Untagged: invalid Queue Number (0x01).
    InvalidQn,
    /// Untagged: MSN names a message with no buffer posted (0x02).
    MsnNoBuffer,
    /// Untagged: MSN outside the valid range (0x03).
    MsnRange,
    /// Untagged: invalid Message Offset (0x04).
    InvalidMo,
    /// Untagged: message too long for the posted buffer (0x05).
    MessageTooLong,
}

impl DdpError {
    /// The Terminate layer / error type / error code for this error.
    pub const fn term_code(self) -> TermCode {
        match self {
            Self::Truncated => TermCode::LLP_FPDU_START,
            Self::BadVersion { tagged: true, .. } => TermCode::DDP_T_VERSION,
            Self::BadVersion { tagged: false, .. } => TermCode::DDP_UT_VERSION,
            Self::InvalidStag => TermCode::DDP_T_INVALID_STAG,
            Self::BaseBounds => TermCode::DDP_T_BASE_BOUNDS,
            Self::StagNotAssociated => TermCode::DDP_T_STAG_NOT_ASSOC,
            Self::ToWrap => TermCode::DDP_T_TO_WRAP,
            Self::InvalidQn => TermCode::DDP_UT_INVALID_QN,
            Self::MsnNoBuffer => TermCode::DDP_UT_MSN_NOBUF,
            Self::MsnRange => TermCode::DDP_UT_MSN_RANGE,
            Self::InvalidMo => TermCode::DDP_UT_INVALID_MO,
            Self::MessageTooLong => TermCode::DDP_UT_MSG_TOOLONG,
        }
    }
}

/// A tagged DDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tagged {
    /// Last segment of the message.
    pub last: bool,
    /// The upper layer's byte (RDMAP control).
    pub ulp_ctrl: u8,
    /// Steering Tag of the sink buffer.
    pub stag: u32,
    /// Tagged Offset of this segment's first byte.
    pub to: u64,
}

/// An untagged DDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Untagged {
    /// Last segment of the message.
    pub last: bool,
    /// The upper layer's byte (RDMAP control).
    pub ulp_ctrl: u8,
    /// The upper layer's 32-bit field (RDMAP: the Invalidate STag of Send
    /// with Invalidate, zero otherwise).
    pub ulp_word: u32,
    /// Queue Number.
    pub qn: u32,
    /// Message Sequence Number (the first message on a queue is 1).
    pub msn: u32,
    /// Message Offset of this segment's first byte.
    pub mo: u32,
}

/// A DDP segment header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// T=1.
    Tagged(Tagged),
    /// T=0.
    Untagged(Untagged),
}

fn be32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(at..at.saturating_add(4)) {
        w.copy_from_slice(s);
    }
    u32::from_be_bytes(w)
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(s) = b.get(at..at.saturating_add(8)) {
        w.copy_from_slice(s);
    }
    u64::from_be_bytes(w)
}

impl Header {
    /// Parses the header at the start of `ulpdu` (the MPA ULPDU, i.e. after
    /// ULPDU_Length) and returns it with the segment payload (for RDMAP
    /// messages with their own header, such as Read Request and Terminate,
    /// that header is the start of the payload).
    ///
    /// Checks the length and DV only: the reserved bits are ignored as RFC
    /// 5041 asks.
    pub fn parse(ulpdu: &[u8]) -> Result<(Self, &[u8]), DdpError> {
        let ctrl = *ulpdu.first().ok_or(DdpError::Truncated)?;
        let tagged = ctrl & FLAG_TAGGED != 0;
        let len = if tagged {
            TAGGED_HDR_LEN
        } else {
            UNTAGGED_HDR_LEN
        };
        let (h, payload) = ulpdu.split_at_checked(len).ok_or(DdpError::Truncated)?;
        let version = ctrl & MASK_VERSION;
        if version != VERSION {
            return Err(DdpError::BadVersion { tagged, version });
        }
        let last = ctrl & FLAG_LAST != 0;
        let ulp_ctrl = h.get(1).copied().unwrap_or(0);
        let hdr = if tagged {
            Self::Tagged(Tagged {
                last,
                ulp_ctrl,
                stag: be32(h, 2),
                to: be64(h, 6),
            })
        } else {
            Self::Untagged(Untagged {
                last,
                ulp_ctrl,
                ulp_word: be32(h, 2),
                qn: be32(h, 6),
                msn: be32(h, 10),
                mo: be32(h, 14),
            })
        };
        Ok((hdr, payload))
    }

    /// The header's length on the wire.
    pub const fn len(&self) -> usize {
        match self {
            Self::Tagged(_) => TAGGED_HDR_LEN,
            Self::Untagged(_) => UNTAGGED_HDR_LEN,
        }
    }

    /// Never true: a header has a length. (For clippy's `len_without_is_empty`.)
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// The Last flag.
    pub const fn last(&self) -> bool {
        match self {
            Self::Tagged(t) => t.last,
            Self::Untagged(u) => u.last,
        }
    }

    /// The upper layer's control byte (RDMAP control).
    pub const fn ulp_ctrl(&self) -> u8 {
        match self {
            Self::Tagged(t) => t.ulp_ctrl,
            Self::Untagged(u) => u.ulp_ctrl,
        }
    }

    /// The DDP control byte this header is sent with (reserved bits zero).
    pub const fn control_byte(&self) -> u8 {
        let mut c = VERSION;
        match self {
            Self::Tagged(t) => {
                c |= FLAG_TAGGED;
                if t.last {
                    c |= FLAG_LAST;
                }
            }
            Self::Untagged(u) => {
                if u.last {
                    c |= FLAG_LAST;
                }
            }
        }
        c
    }

    /// Writes the header at the start of `out`; returns its length, or
    /// `None` (writing nothing) when `out` is too short.
    pub fn encode(&self, out: &mut [u8]) -> Option<usize> {
        let len = self.len();
        let dst = out.get_mut(..len)?;
        dst[0] = self.control_byte();
        dst[1] = self.ulp_ctrl();
        match self {
            Self::Tagged(t) => {
                dst[2..6].copy_from_slice(&t.stag.to_be_bytes());
                dst[6..14].copy_from_slice(&t.to.to_be_bytes());
            }
            Self::Untagged(u) => {
                dst[2..6].copy_from_slice(&u.ulp_word.to_be_bytes());
                dst[6..10].copy_from_slice(&u.qn.to_be_bytes());
                dst[10..14].copy_from_slice(&u.msn.to_be_bytes());
                dst[14..18].copy_from_slice(&u.mo.to_be_bytes());
            }
        }
        Some(len)
    }
}

/// Checks that `len` bytes at tagged offset `to` do not wrap the 64-bit TO
/// space (RFC 5041 §7.2, tagged code 0x03).
pub const fn check_to(to: u64, len: usize) -> Result<(), DdpError> {
    match to.checked_add(len as u64) {
        Some(_) => Ok(()),
        None => Err(DdpError::ToWrap),
    }
}

/// Checks a tagged segment of `len` bytes at `to` against a registered
/// region `[base, base + region_len)`: base or bounds violation (0x01) when
/// any byte falls outside, TO wrap (0x03) when `to + len` overflows.
pub const fn check_bounds(to: u64, len: usize, base: u64, region_len: u64) -> Result<(), DdpError> {
    let end = match to.checked_add(len as u64) {
        Some(e) => e,
        None => return Err(DdpError::ToWrap),
    };
    let region_end = match base.checked_add(region_len) {
        Some(e) => e,
        None => u64::MAX,
    };
    if to < base || end > region_end {
        return Err(DdpError::BaseBounds);
    }
    Ok(())
}

/// Classifies an untagged segment's MSN against the receive queue: `next` is
/// the MSN of the oldest message not yet complete on the queue, `posted` the
/// number of buffers posted from there on. Returns the index of the buffer
/// (0 for `next`), [`DdpError::MsnNoBuffer`] for an MSN ahead of the posted
/// buffers, or [`DdpError::MsnRange`] for an MSN behind `next` (a message
/// already completed) or more than 2^31 ahead. MSN arithmetic is modulo 2^32
/// (RFC 5041 §5.3).
pub const fn check_msn(msn: u32, next: u32, posted: u32) -> Result<u32, DdpError> {
    let d = msn.wrapping_sub(next);
    if d < posted {
        Ok(d)
    } else if d < 0x8000_0000 {
        Err(DdpError::MsnNoBuffer)
    } else {
        Err(DdpError::MsnRange)
    }
}

/// Checks an untagged segment of `len` bytes at message offset `mo` against
/// a posted buffer of `buf_len` bytes: [`DdpError::InvalidMo`] when the
/// offset itself lies past the buffer, [`DdpError::MessageTooLong`] when the
/// segment runs past its end.
pub const fn check_mo(mo: u32, len: usize, buf_len: usize) -> Result<(), DdpError> {
    let mo = mo as usize;
    if mo > buf_len {
        return Err(DdpError::InvalidMo);
    }
    match mo.checked_add(len) {
        Some(end) if end <= buf_len => Ok(()),
        _ => Err(DdpError::MessageTooLong),
    }
}

/// A piece of an untagged segment's payload in a receive's scatter list:
/// `len` bytes from byte `at` of the payload go to byte `offset` of
/// element `index`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Piece {
    /// The element.
    pub index: usize,
    /// Where in the element.
    pub offset: u64,
    /// How many bytes.
    pub len: usize,
    /// Where in the payload.
    pub at: usize,
}

/// Cuts `len` payload bytes at message offset `mo` over the scatter
/// elements of lengths `elems` (filled in order; elements of length 0 hold
/// nothing), into `out`: how many pieces. The message must fit the sum of
/// the elements ([`check_mo`]'s errors); more pieces than `out` holds is
/// [`DdpError::MessageTooLong`] too (no receive has more elements than
/// that).
pub fn scatter(elems: &[u32], mo: u32, len: usize, out: &mut [Piece]) -> Result<usize, DdpError> {
    let total = elems.iter().map(|&l| l as usize).sum();
    check_mo(mo, len, total)?;
    let (mut skip, mut at, mut n) = (u64::from(mo), 0usize, 0usize);
    for (index, &el) in elems.iter().enumerate() {
        if at == len {
            break;
        }
        let el = u64::from(el);
        if skip >= el {
            skip -= el;
            continue;
        }
        let take = (el - skip).min((len - at) as u64) as usize;
        *out.get_mut(n).ok_or(DdpError::MessageTooLong)? = Piece {
            index,
            offset: skip,
            len: take,
            at,
        };
        n += 1;
        at += take;
        skip = 0;
    }
    Ok(n)
}

/// Checks a queue number against the number of queues the upper layer uses
/// (RDMAP: 3, see [`super::rdmap::QUEUES`]).
pub const fn check_qn(qn: u32, queues: u32) -> Result<(), DdpError> {
    if qn < queues {
        Ok(())
    } else {
        Err(DdpError::InvalidQn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::terminate::{Layer, TermCode};

    #[test]
    fn scatter_pieces() {
        let p = |index, offset, len, at| Piece {
            index,
            offset,
            len,
            at,
        };
        let mut out = [Piece::default(); 6];
        // One element: one piece, at the message offset.
        assert_eq!(scatter(&[100], 10, 20, &mut out), Ok(1));
        assert_eq!(out[..1], [p(0, 10, 20, 0)]);
        // Across three elements (one empty), starting in the first.
        assert_eq!(scatter(&[10, 0, 5, 100], 7, 20, &mut out), Ok(3));
        assert_eq!(out[..3], [p(0, 7, 3, 0), p(2, 0, 5, 3), p(3, 0, 12, 8)]);
        // Starting past the first element, ending exactly at the last's end.
        assert_eq!(scatter(&[10, 5, 5], 12, 8, &mut out), Ok(2));
        assert_eq!(out[..2], [p(1, 2, 3, 0), p(2, 0, 5, 3)]);
        // Nothing to place (a zero-length Send, or a last segment's end).
        assert_eq!(scatter(&[], 0, 0, &mut out), Ok(0));
        assert_eq!(scatter(&[10], 10, 0, &mut out), Ok(0));
        // Past the elements: check_mo's errors.
        assert_eq!(
            scatter(&[10, 5], 11, 5, &mut out),
            Err(DdpError::MessageTooLong)
        );
        assert_eq!(scatter(&[10, 5], 16, 0, &mut out), Err(DdpError::InvalidMo));
        // More pieces than room.
        assert_eq!(
            scatter(&[1, 1, 1], 0, 3, &mut out[..2]),
            Err(DdpError::MessageTooLong)
        );
        // Every byte of the payload once, in order, for every cut.
        let elems = [3u32, 0, 7, 1, 9, 4];
        for mo in 0..24u32 {
            for len in 0..(24 - mo as usize + 1) {
                let n = scatter(&elems, mo, len, &mut out).unwrap();
                let mut next = 0;
                for p in &out[..n] {
                    assert_eq!(p.at, next);
                    assert!(p.len > 0 && p.offset + p.len as u64 <= u64::from(elems[p.index]));
                    next += p.len;
                }
                assert_eq!(next, len);
            }
        }
    }

    #[test]
    fn tagged_byte_image() {
        // siw's RDMA Write header after ULPDU_Length: ctrl 0xc1 (T, L, DV=1),
        // RDMAP 0x40 (RV=1, Write), STag, TO.
        let img = [
            0xc1, 0x40, 0x00, 0x00, 0x12, 0x34, 0x00, 0x00, 0x7f, 0x00, 0xde, 0xad, 0xbe, 0xef,
            0xaa, 0xbb,
        ];
        let (h, payload) = Header::parse(&img).unwrap();
        assert_eq!(
            h,
            Header::Tagged(Tagged {
                last: true,
                ulp_ctrl: 0x40,
                stag: 0x1234,
                to: 0x7f00_dead_beef,
            })
        );
        assert_eq!(payload, &[0xaa, 0xbb]);
        let mut out = [0u8; 14];
        assert_eq!(h.encode(&mut out), Some(14));
        assert_eq!(out, img[..14]);
    }

    #[test]
    fn untagged_byte_image() {
        // Send, L=1: ctrl 0x41, RDMAP 0x43, rsvd, QN 0, MSN 1, MO 0.
        let img = [0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
        let (h, payload) = Header::parse(&img).unwrap();
        assert!(payload.is_empty());
        let Header::Untagged(u) = h else {
            panic!("tagged")
        };
        assert_eq!(
            (u.last, u.ulp_ctrl, u.qn, u.msn, u.mo),
            (true, 0x43, 0, 1, 0)
        );
        let mut out = [0u8; 18];
        h.encode(&mut out).unwrap();
        assert_eq!(out, img);
    }

    #[test]
    fn malformed() {
        assert_eq!(Header::parse(&[]), Err(DdpError::Truncated));
        assert_eq!(Header::parse(&[0xc1; 13]), Err(DdpError::Truncated));
        assert_eq!(Header::parse(&[0x41; 17]), Err(DdpError::Truncated));
        let e = Header::parse(&[0xc2; 14]).unwrap_err();
        assert_eq!(
            e,
            DdpError::BadVersion {
                tagged: true,
                version: 2
            }
        );
        assert_eq!(e.term_code(), TermCode::new(Layer::Ddp, 1, 4));
        let e = Header::parse(&[0x40; 18]).unwrap_err();
        assert_eq!(e.term_code(), TermCode::new(Layer::Ddp, 2, 6));
        // Reserved bits are ignored.
        let mut img = [0u8; 18];
        img[0] = 0x41 | MASK_RESERVED;
        assert!(Header::parse(&img).is_ok());
        let mut small = [0u8; 13];
        let h = Header::parse(&[0xc1; 14]).unwrap().0;
        assert_eq!(h.encode(&mut small), None);
    }

    #[test]
    fn checks() {
        assert_eq!(check_to(u64::MAX - 3, 3), Ok(()));
        assert_eq!(check_to(u64::MAX - 3, 4), Err(DdpError::ToWrap));
        assert_eq!(check_bounds(100, 10, 100, 10), Ok(()));
        assert_eq!(check_bounds(99, 1, 100, 10), Err(DdpError::BaseBounds));
        assert_eq!(check_bounds(105, 6, 100, 10), Err(DdpError::BaseBounds));
        assert_eq!(
            check_bounds(u64::MAX, 2, 0, u64::MAX),
            Err(DdpError::ToWrap)
        );
        assert_eq!(check_bounds(5, 0, 0, u64::MAX), Ok(()));
        assert_eq!(check_msn(5, 5, 1), Ok(0));
        assert_eq!(check_msn(7, 5, 3), Ok(2));
        assert_eq!(check_msn(8, 5, 3), Err(DdpError::MsnNoBuffer));
        assert_eq!(check_msn(4, 5, 3), Err(DdpError::MsnRange));
        assert_eq!(check_msn(1, u32::MAX, 3), Ok(2));
        assert_eq!(check_mo(0, 10, 10), Ok(()));
        assert_eq!(check_mo(11, 0, 10), Err(DdpError::InvalidMo));
        assert_eq!(check_mo(5, 6, 10), Err(DdpError::MessageTooLong));
        assert_eq!(
            check_mo(u32::MAX, usize::MAX, usize::MAX),
            Err(DdpError::MessageTooLong)
        );
        assert_eq!(check_qn(2, 3), Ok(()));
        assert_eq!(check_qn(3, 3), Err(DdpError::InvalidQn));
        assert_eq!(
            DdpError::InvalidQn.term_code(),
            TermCode::new(Layer::Ddp, 2, 1)
        );
    }

    #[test]
    fn seeded_round_trip() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..2000 {
            let r = next();
            let h = if r & 1 == 0 {
                Header::Tagged(Tagged {
                    last: r & 2 != 0,
                    ulp_ctrl: (r >> 8) as u8,
                    stag: (r >> 16) as u32,
                    to: next(),
                })
            } else {
                let s = next();
                Header::Untagged(Untagged {
                    last: r & 2 != 0,
                    ulp_ctrl: (r >> 8) as u8,
                    ulp_word: (r >> 16) as u32,
                    qn: s as u32,
                    msn: (s >> 32) as u32,
                    mo: (r >> 40) as u32,
                })
            };
            let mut buf = [0u8; 32];
            let n = h.encode(&mut buf).unwrap();
            let (back, rest) = Header::parse(&buf[..n + 3]).unwrap();
            assert_eq!(back, h);
            assert_eq!(rest.len(), 3);
        }
    }
}
