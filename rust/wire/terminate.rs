// SPDX-License-Identifier: GPL-2.0

//! The RDMAP Terminate message (RFC 5040 §4.8) and its error codes (RFC 5040
//! §7.2 for RDMAP, RFC 5041 §7.2 for DDP, RFC 5044 §8 and RFC 6581 §9 for
//! the MPA "LLP" layer).
//!
//! A Terminate is an untagged DDP message (QN 2, MO 0, L=1, RDMAP opcode 7)
//! whose payload is:
//!
//! ```text
//!  0  4B  Terminate Control: Layer(4) EType(4) ErrorCode(8) M D R Rsvd(13)
//!  4  u16 DDP Segment Length of the faulting segment   } only if M, D or R
//!  6  14/18B its DDP header (from the control byte on)   } only if D
//!  .. up to 28B its RDMA header (Read Request body)      } only if R
//! ```
//!
//! M: the DDP Segment Length is valid; D: the DDP header is included; R: the
//! RDMA header is included.
//!
//! # siw's Terminate Control layout
//!
//! soft-iWARP declares the Terminate Control word as C bit-fields in a
//! `__be32` (`struct iwarp_terminate` in `iwarp.h`), so on a little-endian
//! host it sends **layer in the low nibble and error type in the high
//! nibble of byte 0, and M, D, R as bits 0, 1, 2 of byte 2**; RFC 5040 puts
//! the layer in the high nibble and M, D, R in bits 7, 6, 5. The error code
//! (byte 1) agrees. [`Layout`] selects either form; [`Layout::Auto`] reads
//! whichever the bytes show (see [`Layout::detect`]).

use super::ddp;
use super::rdmap;

/// The layer that reports an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Layer {
    /// RDMAP (RFC 5040).
    Rdmap = 0,
    /// DDP (RFC 5041).
    Ddp = 1,
    /// The lower layer protocol: MPA (RFC 5044).
    Llp = 2,
}

/// RDMAP error type: local catastrophic error.
pub const RDMAP_ETYPE_CATASTROPHIC: u8 = 0x0;
/// RDMAP error type: remote protection error.
pub const RDMAP_ETYPE_REMOTE_PROTECTION: u8 = 0x1;
/// RDMAP error type: remote operation error.
pub const RDMAP_ETYPE_REMOTE_OPERATION: u8 = 0x2;

/// RDMAP error code: invalid STag.
pub const RDMAP_ECODE_INVALID_STAG: u8 = 0x00;
/// RDMAP error code: base or bounds violation.
pub const RDMAP_ECODE_BASE_BOUNDS: u8 = 0x01;
/// RDMAP error code: access rights violation.
pub const RDMAP_ECODE_ACCESS_RIGHTS: u8 = 0x02;
/// RDMAP error code: STag not associated with this RDMAP stream.
pub const RDMAP_ECODE_STAG_NOT_ASSOC: u8 = 0x03;
/// RDMAP error code: TO wrap.
pub const RDMAP_ECODE_TO_WRAP: u8 = 0x04;
/// RDMAP error code: invalid RDMAP version.
pub const RDMAP_ECODE_VERSION: u8 = 0x05;
/// RDMAP error code: unexpected opcode.
pub const RDMAP_ECODE_OPCODE: u8 = 0x06;
/// RDMAP error code: catastrophic error localized to the RDMAP stream.
pub const RDMAP_ECODE_CATASTROPHIC_STREAM: u8 = 0x07;
/// RDMAP error code: catastrophic error, global.
pub const RDMAP_ECODE_CATASTROPHIC_GLOBAL: u8 = 0x08;
/// RDMAP error code: STag cannot be invalidated.
pub const RDMAP_ECODE_CANNOT_INVALIDATE: u8 = 0x09;
/// RDMAP error code: unspecified error.
pub const RDMAP_ECODE_UNSPECIFIED: u8 = 0xff;

/// DDP error type: local catastrophic error.
pub const DDP_ETYPE_CATASTROPHIC: u8 = 0x0;
/// DDP error type: tagged buffer error.
pub const DDP_ETYPE_TAGGED_BUF: u8 = 0x1;
/// DDP error type: untagged buffer error.
pub const DDP_ETYPE_UNTAGGED_BUF: u8 = 0x2;
/// DDP error type: reserved (siw's `DDP_ETYPE_RSVD`).
pub const DDP_ETYPE_RSVD: u8 = 0x3;

/// DDP error code (catastrophic): unspecified, zero.
pub const DDP_ECODE_CATASTROPHIC: u8 = 0x00;
/// DDP tagged error code: invalid STag.
pub const DDP_ECODE_T_INVALID_STAG: u8 = 0x00;
/// DDP tagged error code: base or bounds violation.
pub const DDP_ECODE_T_BASE_BOUNDS: u8 = 0x01;
/// DDP tagged error code: STag not associated with this DDP stream.
pub const DDP_ECODE_T_STAG_NOT_ASSOC: u8 = 0x02;
/// DDP tagged error code: TO wrap.
pub const DDP_ECODE_T_TO_WRAP: u8 = 0x03;
/// DDP tagged error code: invalid DDP version.
pub const DDP_ECODE_T_VERSION: u8 = 0x04;
/// DDP untagged error code: invalid QN.
pub const DDP_ECODE_UT_INVALID_QN: u8 = 0x01;
/// DDP untagged error code: invalid MSN, no buffer available.
pub const DDP_ECODE_UT_INVALID_MSN_NOBUF: u8 = 0x02;
/// DDP untagged error code: invalid MSN, MSN range not valid.
pub const DDP_ECODE_UT_INVALID_MSN_RANGE: u8 = 0x03;
/// DDP untagged error code: invalid MO.
pub const DDP_ECODE_UT_INVALID_MO: u8 = 0x04;
/// DDP untagged error code: message too long for the available buffer.
pub const DDP_ECODE_UT_MSG_TOOLONG: u8 = 0x05;
/// DDP untagged error code: invalid DDP version.
pub const DDP_ECODE_UT_VERSION: u8 = 0x06;

/// LLP error type: MPA.
pub const LLP_ETYPE_MPA: u8 = 0x0;
/// MPA error code: TCP connection closed, terminated or lost.
pub const LLP_ECODE_TCP_STREAM_LOST: u8 = 0x01;
/// MPA error code: received MPA CRC does not match.
pub const LLP_ECODE_RECEIVED_CRC: u8 = 0x02;
/// MPA error code: marker and ULPDU_Length do not agree on the FPDU start.
pub const LLP_ECODE_FPDU_START: u8 = 0x03;
/// MPA error code: invalid MPA request or reply frame.
pub const LLP_ECODE_INVALID_REQ_RESP: u8 = 0x04;
/// MPA error code (RFC 6581): local catastrophic error.
pub const LLP_ECODE_LOCAL_CATASTROPHIC: u8 = 0x05;
/// MPA error code (RFC 6581): insufficient IRD resources.
pub const LLP_ECODE_INSUFFICIENT_IRD: u8 = 0x06;
/// MPA error code (RFC 6581): no matching RTR option.
pub const LLP_ECODE_NO_MATCHING_RTR: u8 = 0x07;

/// A Terminate error: layer, error type and error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermCode {
    /// The layer (0 RDMAP, 1 DDP, 2 LLP; 4 bits on the wire).
    pub layer: u8,
    /// The error type (4 bits on the wire).
    pub etype: u8,
    /// The error code.
    pub ecode: u8,
}

impl TermCode {
    /// A code from its parts.
    pub const fn new(layer: Layer, etype: u8, ecode: u8) -> Self {
        Self {
            layer: layer as u8,
            etype,
            ecode,
        }
    }

    /// RDMAP local catastrophic error.
    pub const RDMAP_CATASTROPHIC: Self = Self::new(Layer::Rdmap, RDMAP_ETYPE_CATASTROPHIC, 0);
    /// RDMAP local catastrophic error as siw sends it (code 0xff).
    pub const RDMAP_CATASTROPHIC_UNSPECIFIED: Self = Self::new(
        Layer::Rdmap,
        RDMAP_ETYPE_CATASTROPHIC,
        RDMAP_ECODE_UNSPECIFIED,
    );
    /// Remote protection error: invalid STag.
    pub const RDMAP_INVALID_STAG: Self = Self::prot(RDMAP_ECODE_INVALID_STAG);
    /// Remote protection error: base or bounds violation.
    pub const RDMAP_BASE_BOUNDS: Self = Self::prot(RDMAP_ECODE_BASE_BOUNDS);
    /// Remote protection error: access rights violation.
    pub const RDMAP_ACCESS_RIGHTS: Self = Self::prot(RDMAP_ECODE_ACCESS_RIGHTS);
    /// Remote protection error: STag not associated with the stream.
    pub const RDMAP_STAG_NOT_ASSOC: Self = Self::prot(RDMAP_ECODE_STAG_NOT_ASSOC);
    /// Remote protection error: TO wrap.
    pub const RDMAP_TO_WRAP: Self = Self::prot(RDMAP_ECODE_TO_WRAP);
    /// Remote protection error: unspecified.
    pub const RDMAP_PROT_UNSPECIFIED: Self = Self::prot(RDMAP_ECODE_UNSPECIFIED);
    /// Remote operation error: invalid RDMAP version.
    pub const RDMAP_VERSION: Self = Self::op(RDMAP_ECODE_VERSION);
    /// Remote operation error: unexpected opcode.
    pub const RDMAP_OPCODE: Self = Self::op(RDMAP_ECODE_OPCODE);
    /// Remote operation error: catastrophic, localized to the stream.
    pub const RDMAP_CATASTROPHIC_STREAM: Self = Self::op(RDMAP_ECODE_CATASTROPHIC_STREAM);
    /// Remote operation error: catastrophic, global.
    pub const RDMAP_CATASTROPHIC_GLOBAL: Self = Self::op(RDMAP_ECODE_CATASTROPHIC_GLOBAL);
    /// Remote operation error: STag cannot be invalidated.
    pub const RDMAP_CANNOT_INVALIDATE: Self = Self::op(RDMAP_ECODE_CANNOT_INVALIDATE);
    /// Remote operation error: unspecified.
    pub const RDMAP_OP_UNSPECIFIED: Self = Self::op(RDMAP_ECODE_UNSPECIFIED);

    /// DDP local catastrophic error.
    pub const DDP_CATASTROPHIC: Self =
        Self::new(Layer::Ddp, DDP_ETYPE_CATASTROPHIC, DDP_ECODE_CATASTROPHIC);
    /// DDP tagged buffer error: invalid STag.
    pub const DDP_T_INVALID_STAG: Self = Self::ddp_t(DDP_ECODE_T_INVALID_STAG);
    /// DDP tagged buffer error: base or bounds violation.
    pub const DDP_T_BASE_BOUNDS: Self = Self::ddp_t(DDP_ECODE_T_BASE_BOUNDS);
    /// DDP tagged buffer error: STag not associated with the stream.
    pub const DDP_T_STAG_NOT_ASSOC: Self = Self::ddp_t(DDP_ECODE_T_STAG_NOT_ASSOC);
    /// DDP tagged buffer error: TO wrap.
    pub const DDP_T_TO_WRAP: Self = Self::ddp_t(DDP_ECODE_T_TO_WRAP);
    /// DDP tagged buffer error: invalid DDP version.
    pub const DDP_T_VERSION: Self = Self::ddp_t(DDP_ECODE_T_VERSION);
    /// DDP untagged buffer error: invalid QN.
    pub const DDP_UT_INVALID_QN: Self = Self::ddp_ut(DDP_ECODE_UT_INVALID_QN);
    /// DDP untagged buffer error: invalid MSN, no buffer.
    pub const DDP_UT_MSN_NOBUF: Self = Self::ddp_ut(DDP_ECODE_UT_INVALID_MSN_NOBUF);
    /// DDP untagged buffer error: invalid MSN range.
    pub const DDP_UT_MSN_RANGE: Self = Self::ddp_ut(DDP_ECODE_UT_INVALID_MSN_RANGE);
    /// DDP untagged buffer error: invalid MO.
    pub const DDP_UT_INVALID_MO: Self = Self::ddp_ut(DDP_ECODE_UT_INVALID_MO);
    /// DDP untagged buffer error: message too long.
    pub const DDP_UT_MSG_TOOLONG: Self = Self::ddp_ut(DDP_ECODE_UT_MSG_TOOLONG);
    /// DDP untagged buffer error: invalid DDP version.
    pub const DDP_UT_VERSION: Self = Self::ddp_ut(DDP_ECODE_UT_VERSION);

    /// MPA: TCP stream lost.
    pub const LLP_TCP_STREAM_LOST: Self = Self::mpa(LLP_ECODE_TCP_STREAM_LOST);
    /// MPA: CRC mismatch.
    pub const LLP_RECEIVED_CRC: Self = Self::mpa(LLP_ECODE_RECEIVED_CRC);
    /// MPA: marker and length disagree on the FPDU start.
    pub const LLP_FPDU_START: Self = Self::mpa(LLP_ECODE_FPDU_START);
    /// MPA: invalid request or reply frame.
    pub const LLP_INVALID_REQ_RESP: Self = Self::mpa(LLP_ECODE_INVALID_REQ_RESP);
    /// MPA (RFC 6581): local catastrophic error.
    pub const LLP_LOCAL_CATASTROPHIC: Self = Self::mpa(LLP_ECODE_LOCAL_CATASTROPHIC);
    /// MPA (RFC 6581): insufficient IRD.
    pub const LLP_INSUFFICIENT_IRD: Self = Self::mpa(LLP_ECODE_INSUFFICIENT_IRD);
    /// MPA (RFC 6581): no matching RTR option.
    pub const LLP_NO_MATCHING_RTR: Self = Self::mpa(LLP_ECODE_NO_MATCHING_RTR);

    const fn prot(ecode: u8) -> Self {
        Self::new(Layer::Rdmap, RDMAP_ETYPE_REMOTE_PROTECTION, ecode)
    }
    const fn op(ecode: u8) -> Self {
        Self::new(Layer::Rdmap, RDMAP_ETYPE_REMOTE_OPERATION, ecode)
    }
    const fn ddp_t(ecode: u8) -> Self {
        Self::new(Layer::Ddp, DDP_ETYPE_TAGGED_BUF, ecode)
    }
    const fn ddp_ut(ecode: u8) -> Self {
        Self::new(Layer::Ddp, DDP_ETYPE_UNTAGGED_BUF, ecode)
    }
    const fn mpa(ecode: u8) -> Self {
        Self::new(Layer::Llp, LLP_ETYPE_MPA, ecode)
    }

    /// True for a combination the RFCs (or siw) define.
    pub const fn is_known(&self) -> bool {
        match (self.layer, self.etype) {
            (0, RDMAP_ETYPE_CATASTROPHIC) => matches!(self.ecode, 0x00 | 0xff),
            (0, RDMAP_ETYPE_REMOTE_PROTECTION) => matches!(self.ecode, 0x00..=0x04 | 0x09 | 0xff),
            (0, RDMAP_ETYPE_REMOTE_OPERATION) => matches!(self.ecode, 0x05..=0x09 | 0xff),
            (1, DDP_ETYPE_CATASTROPHIC) => self.ecode == 0,
            (1, DDP_ETYPE_TAGGED_BUF) => self.ecode <= 0x04,
            (1, DDP_ETYPE_UNTAGGED_BUF) => matches!(self.ecode, 0x01..=0x06),
            (1, DDP_ETYPE_RSVD) => true,
            (2, LLP_ETYPE_MPA) => matches!(self.ecode, 0x01..=0x07),
            _ => false,
        }
    }
}

/// Length of the Terminate Control field.
pub const CONTROL_LEN: usize = 4;
/// Length of the DDP Segment Length field.
pub const SEG_LEN_LEN: usize = 2;
/// Longest Terminated RDMA header (an RDMA Read Request body).
pub const MAX_RDMA_HDR_LEN: usize = rdmap::READ_REQ_LEN;
/// Longest Terminate payload.
pub const MAX_LEN: usize = CONTROL_LEN + SEG_LEN_LEN + ddp::UNTAGGED_HDR_LEN + MAX_RDMA_HDR_LEN;

/// How the Terminate Control word is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// RFC 5040: layer in bits 0-3 (high nibble of byte 0), M D R = 0x80,
    /// 0x40, 0x20 of byte 2.
    Rfc,
    /// soft-iWARP on a little-endian host: layer in the low nibble of byte
    /// 0, error type in the high nibble, M D R = 0x01, 0x02, 0x04 of byte 2.
    SiwLe,
    /// Decode only: pick the layout the bytes show ([`Layout::detect`]),
    /// RFC when they fit both.
    Auto,
}

impl Layout {
    /// Which layout a Terminate payload (`body`, starting at the Terminate
    /// Control) is in, judged from its flag bits (each layout's reserved
    /// bits must be clear), then from whether its layer/type/code makes
    /// sense; `None` when it fits both equally (for
    /// instance layer and type equal and no flags).
    pub fn detect(body: &[u8]) -> Option<Self> {
        let c: [u8; 4] = body.get(..CONTROL_LEN)?.try_into().ok()?;
        let rfc_ok = c[2] & 0x1f == 0 && c[3] == 0;
        let siw_ok = c[2] & 0xf8 == 0 && c[3] == 0;
        let rfc_flags = c[2] & 0xe0 != 0;
        let siw_flags = c[2] & 0x07 != 0;
        match (rfc_ok && rfc_flags, siw_ok && siw_flags) {
            (true, false) => return Some(Self::Rfc),
            (false, true) => return Some(Self::SiwLe),
            _ => {}
        }
        let rfc = Control::decode(c, Self::Rfc).code.is_known();
        let siw = Control::decode(c, Self::SiwLe).code.is_known();
        match (rfc, siw) {
            (true, false) => Some(Self::Rfc),
            (false, true) => Some(Self::SiwLe),
            // Both plausible (or neither): no more evidence in the word.
            _ => None,
        }
    }
}

/// The Terminate Control word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Control {
    /// Layer, type and code.
    pub code: TermCode,
    /// M: the DDP Segment Length is valid.
    pub m: bool,
    /// D: the DDP header is included.
    pub d: bool,
    /// R: the RDMA header is included.
    pub r: bool,
}

impl Control {
    /// Reads the word in `layout` ([`Layout::Auto`] reads as RFC).
    pub const fn decode(c: [u8; 4], layout: Layout) -> Self {
        match layout {
            Layout::SiwLe => Self {
                code: TermCode {
                    layer: c[0] & 0xf,
                    etype: c[0] >> 4,
                    ecode: c[1],
                },
                m: c[2] & 0x01 != 0,
                d: c[2] & 0x02 != 0,
                r: c[2] & 0x04 != 0,
            },
            Layout::Rfc | Layout::Auto => Self {
                code: TermCode {
                    layer: c[0] >> 4,
                    etype: c[0] & 0xf,
                    ecode: c[1],
                },
                m: c[2] & 0x80 != 0,
                d: c[2] & 0x40 != 0,
                r: c[2] & 0x20 != 0,
            },
        }
    }

    /// The word in `layout` ([`Layout::Auto`] writes RFC). Layer and type
    /// are cut to 4 bits.
    pub const fn encode(&self, layout: Layout) -> [u8; 4] {
        let (l, t) = (self.code.layer & 0xf, self.code.etype & 0xf);
        match layout {
            Layout::SiwLe => [
                l | (t << 4),
                self.code.ecode,
                (self.m as u8) | ((self.d as u8) << 1) | ((self.r as u8) << 2),
                0,
            ],
            Layout::Rfc | Layout::Auto => [
                (l << 4) | t,
                self.code.ecode,
                ((self.m as u8) << 7) | ((self.d as u8) << 6) | ((self.r as u8) << 5),
                0,
            ],
        }
    }
}

/// Why a Terminate payload is malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TermError {
    /// Shorter than its flags announce.
    Truncated,
    /// Bytes after what the flags announce, or an RDMA header longer than
    /// any RDMAP header.
    TrailingBytes,
    /// The included DDP header has a DDP version other than 1 (the length
    /// of a header of another version is unknown).
    BadDdpHeader,
    /// [`Layout::Auto`] could not tell the layout and the two readings
    /// differ.
    Ambiguous,
    /// Output buffer too small (encode).
    NoSpace,
}

/// A Terminate message payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminate<'a> {
    /// Layer, type and code.
    pub code: TermCode,
    /// M: the DDP Segment Length is valid.
    pub seg_len_valid: bool,
    /// The DDP Segment Length field (sent when M, D or R is set; 0 when
    /// absent). siw puts the faulting segment's payload length here (its
    /// ULPDU_Length minus the DDP/RDMAP header), not the whole segment's.
    pub seg_len: u16,
    /// D: the faulting segment's DDP header (14 or 18 bytes from its DDP
    /// control byte on).
    pub ddp_hdr: Option<&'a [u8]>,
    /// R: the faulting message's RDMA header (the 28-byte Read Request body;
    /// siw sets R with an empty RDMA header for Sends).
    pub rdma_hdr: Option<&'a [u8]>,
}

impl<'a> Terminate<'a> {
    /// A Terminate with no headers included.
    pub const fn bare(code: TermCode) -> Self {
        Self {
            code,
            seg_len_valid: false,
            seg_len: 0,
            ddp_hdr: None,
            rdma_hdr: None,
        }
    }

    /// The Terminate Control word of this message.
    pub const fn control(&self) -> Control {
        Control {
            code: self.code,
            m: self.seg_len_valid,
            d: self.ddp_hdr.is_some(),
            r: self.rdma_hdr.is_some(),
        }
    }

    const fn has_extension(&self) -> bool {
        self.seg_len_valid || self.ddp_hdr.is_some() || self.rdma_hdr.is_some()
    }

    /// Parses a Terminate payload (the RDMAP payload after the untagged DDP
    /// header).
    pub fn parse(body: &'a [u8], layout: Layout) -> Result<Self, TermError> {
        let c: [u8; 4] = body
            .get(..CONTROL_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(TermError::Truncated)?;
        let layout = match layout {
            Layout::Auto => match Layout::detect(body) {
                Some(l) => l,
                None => {
                    let a = Control::decode(c, Layout::Rfc);
                    let b = Control::decode(c, Layout::SiwLe);
                    if a != b {
                        return Err(TermError::Ambiguous);
                    }
                    Layout::Rfc
                }
            },
            l => l,
        };
        let ctl = Control::decode(c, layout);
        let mut rest = body.get(CONTROL_LEN..).unwrap_or(&[]);
        let mut t = Self::bare(ctl.code);
        t.seg_len_valid = ctl.m;
        if !(ctl.m || ctl.d || ctl.r) {
            return if rest.is_empty() {
                Ok(t)
            } else {
                Err(TermError::TrailingBytes)
            };
        }
        let (sl, r) = rest
            .split_at_checked(SEG_LEN_LEN)
            .ok_or(TermError::Truncated)?;
        t.seg_len = u16::from_be_bytes([sl[0], sl[1]]);
        rest = r;
        if ctl.d {
            let first = *rest.first().ok_or(TermError::Truncated)?;
            if first & ddp::MASK_VERSION != ddp::VERSION {
                return Err(TermError::BadDdpHeader);
            }
            let n = if first & ddp::FLAG_TAGGED != 0 {
                ddp::TAGGED_HDR_LEN
            } else {
                ddp::UNTAGGED_HDR_LEN
            };
            let (h, r) = rest.split_at_checked(n).ok_or(TermError::Truncated)?;
            t.ddp_hdr = Some(h);
            rest = r;
        }
        if ctl.r {
            if rest.len() > MAX_RDMA_HDR_LEN {
                return Err(TermError::TrailingBytes);
            }
            t.rdma_hdr = Some(rest);
        } else if !rest.is_empty() {
            return Err(TermError::TrailingBytes);
        }
        Ok(t)
    }

    /// Length of the encoded payload.
    pub fn len(&self) -> usize {
        let mut n = CONTROL_LEN;
        if self.has_extension() {
            n += SEG_LEN_LEN;
        }
        n + self.ddp_hdr.map_or(0, <[u8]>::len) + self.rdma_hdr.map_or(0, <[u8]>::len)
    }

    /// Never true (the control word is always there).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the payload into `out`; returns its length. Fails with
    /// [`TermError::TrailingBytes`] for an RDMA header over 28 bytes or a
    /// DDP header over 18.
    pub fn encode(&self, out: &mut [u8], layout: Layout) -> Result<usize, TermError> {
        if self.rdma_hdr.map_or(0, <[u8]>::len) > MAX_RDMA_HDR_LEN
            || self.ddp_hdr.map_or(0, <[u8]>::len) > ddp::UNTAGGED_HDR_LEN
        {
            return Err(TermError::TrailingBytes);
        }
        let len = self.len();
        let dst = out.get_mut(..len).ok_or(TermError::NoSpace)?;
        let (c, mut rest) = dst.split_at_mut(CONTROL_LEN);
        c.copy_from_slice(&self.control().encode(layout));
        if self.has_extension() {
            let (s, r) = rest.split_at_mut(SEG_LEN_LEN);
            s.copy_from_slice(&self.seg_len.to_be_bytes());
            rest = r;
        }
        for part in [self.ddp_hdr, self.rdma_hdr].into_iter().flatten() {
            let (d, r) = rest.split_at_mut(part.len());
            d.copy_from_slice(part);
            rest = r;
        }
        Ok(len)
    }

    /// Writes a whole Terminate ULPDU into `out`: the untagged DDP header
    /// (QN 2, the given MSN, MO 0, L=1, RDMAP opcode Terminate) and the
    /// payload. Returns its length.
    pub fn encode_message(
        &self,
        out: &mut [u8],
        msn: u32,
        layout: Layout,
    ) -> Result<usize, TermError> {
        let hdr = ddp::Header::Untagged(ddp::Untagged {
            last: true,
            ulp_ctrl: rdmap::control_byte(rdmap::Opcode::Terminate),
            ulp_word: 0,
            qn: rdmap::QN_TERMINATE,
            msn,
            mo: 0,
        });
        let n = hdr.encode(out).ok_or(TermError::NoSpace)?;
        let body = out.get_mut(n..).ok_or(TermError::NoSpace)?;
        Ok(n + self.encode(body, layout)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_layouts() {
        let c = Control {
            code: TermCode::DDP_UT_MSN_NOBUF,
            m: true,
            d: true,
            r: false,
        };
        // RFC 5040: layer 1 / type 2 -> 0x12; M|D -> 0xc0.
        assert_eq!(c.encode(Layout::Rfc), [0x12, 0x02, 0xc0, 0x00]);
        // siw's bit-fields on x86: low nibble layer -> 0x21; M|D -> 0x03.
        assert_eq!(c.encode(Layout::SiwLe), [0x21, 0x02, 0x03, 0x00]);
        for l in [Layout::Rfc, Layout::SiwLe] {
            assert_eq!(Control::decode(c.encode(l), l), c);
        }
        assert_eq!(Layout::detect(&[0x12, 0x02, 0xc0, 0]), Some(Layout::Rfc));
        assert_eq!(Layout::detect(&[0x21, 0x02, 0x03, 0]), Some(Layout::SiwLe));
        // No flags: LLP/MPA CRC error reads as layer 2 type 0 only in one layout.
        assert_eq!(Layout::detect(&[0x20, 0x02, 0, 0]), Some(Layout::Rfc));
        assert_eq!(Layout::detect(&[0x02, 0x02, 0, 0]), Some(Layout::SiwLe));
        // RDMAP/DDP catastrophic 0x00/0x11 read the same both ways.
        assert_eq!(Layout::detect(&[0x00, 0x00, 0, 0]), None);
    }

    #[test]
    fn siw_image() {
        // What siw (x86) sends for a DDP untagged "no buffer" error on an
        // inbound Send: control, segment length, the 18-byte DDP header.
        let mut img = [0u8; 24];
        img[..4].copy_from_slice(&[0x21, 0x02, 0x03, 0x00]);
        img[4..6].copy_from_slice(&[0x00, 0x10]);
        img[6] = 0x41;
        img[7] = 0x43;
        img[19] = 7; // MSN 7 (DDP header bytes 10..14)
        let t = Terminate::parse(&img, Layout::Auto).unwrap();
        assert_eq!(t.code, TermCode::DDP_UT_MSN_NOBUF);
        assert!(t.seg_len_valid);
        assert_eq!(t.seg_len, 16);
        assert_eq!(t.ddp_hdr.unwrap().len(), 18);
        assert_eq!(t.rdma_hdr, None);
        let (h, _) = ddp::Header::parse(t.ddp_hdr.unwrap()).unwrap();
        assert!(matches!(h, ddp::Header::Untagged(u) if u.msn == 7));
        let mut out = [0u8; MAX_LEN];
        let n = t.encode(&mut out, Layout::SiwLe).unwrap();
        assert_eq!(&out[..n], &img[..]);
        // The same message in RFC layout.
        let n = t.encode(&mut out, Layout::Rfc).unwrap();
        assert_eq!(&out[..4], &[0x12, 0x02, 0xc0, 0x00]);
        assert_eq!(Terminate::parse(&out[..n], Layout::Auto).unwrap(), t);
    }

    #[test]
    fn read_request_with_rdma_header() {
        let mut ddp_hdr = [0u8; 18];
        ddp_hdr[0] = 0x41;
        ddp_hdr[1] = 0x41;
        ddp_hdr[9] = 1; // QN 1
        let body = [0x5au8; 28];
        let t = Terminate {
            code: TermCode::RDMAP_ACCESS_RIGHTS,
            seg_len_valid: true,
            seg_len: 0,
            ddp_hdr: Some(&ddp_hdr),
            rdma_hdr: Some(&body),
        };
        let mut out = [0u8; MAX_LEN];
        let n = t.encode(&mut out, Layout::Rfc).unwrap();
        assert_eq!(n, MAX_LEN);
        assert_eq!(out[0..3], [0x01, 0x02, 0xe0]);
        assert_eq!(Terminate::parse(&out[..n], Layout::Rfc).unwrap(), t);
        // Whole ULPDU.
        let mut msg = [0u8; 18 + MAX_LEN];
        let m = t.encode_message(&mut msg, 1, Layout::Rfc).unwrap();
        assert_eq!(m, 18 + MAX_LEN);
        assert_eq!(msg[..2], [0x41, 0x47]);
        assert_eq!(msg[6..10], [0, 0, 0, 2]);
        assert_eq!(msg[10..14], [0, 0, 0, 1]);
    }

    #[test]
    fn malformed() {
        assert_eq!(
            Terminate::parse(&[], Layout::Rfc),
            Err(TermError::Truncated)
        );
        assert_eq!(
            Terminate::parse(&[0x20, 2, 0], Layout::Rfc),
            Err(TermError::Truncated)
        );
        // No flags but trailing bytes.
        assert_eq!(
            Terminate::parse(&[0x20, 2, 0, 0, 1], Layout::Rfc),
            Err(TermError::TrailingBytes)
        );
        // M set, no segment length.
        assert_eq!(
            Terminate::parse(&[0x20, 2, 0x80, 0], Layout::Rfc),
            Err(TermError::Truncated)
        );
        // D set, DDP header cut short.
        assert_eq!(
            Terminate::parse(&[0x12, 2, 0x40, 0, 0, 0, 0xc1, 0x40], Layout::Rfc),
            Err(TermError::Truncated)
        );
        // D set, DDP header of an unknown version.
        assert_eq!(
            Terminate::parse(&[0x12, 2, 0x40, 0, 0, 0, 0xc2], Layout::Rfc),
            Err(TermError::BadDdpHeader)
        );
        // R with an over-long RDMA header.
        let mut long = [0u8; 4 + 2 + 29];
        long[..4].copy_from_slice(&[0x01, 0x00, 0x20, 0]);
        assert_eq!(
            Terminate::parse(&long, Layout::Rfc),
            Err(TermError::TrailingBytes)
        );
        // Ambiguous in Auto: type/layer swap with no flags.
        assert_eq!(
            Terminate::parse(&[0x01, 0x00, 0, 0], Layout::Auto),
            Err(TermError::Ambiguous)
        );
        let mut small = [0u8; 3];
        assert_eq!(
            Terminate::bare(TermCode::LLP_RECEIVED_CRC).encode(&mut small, Layout::Rfc),
            Err(TermError::NoSpace)
        );
    }

    #[test]
    fn codes() {
        assert_eq!(
            TermCode::LLP_RECEIVED_CRC,
            TermCode {
                layer: 2,
                etype: 0,
                ecode: 2
            }
        );
        assert_eq!(
            TermCode::RDMAP_OPCODE,
            TermCode {
                layer: 0,
                etype: 2,
                ecode: 6
            }
        );
        assert_eq!(
            TermCode::RDMAP_BASE_BOUNDS,
            TermCode {
                layer: 0,
                etype: 1,
                ecode: 1
            }
        );
        assert!(TermCode::DDP_UT_VERSION.is_known());
        assert!(!TermCode {
            layer: 3,
            etype: 0,
            ecode: 0
        }
        .is_known());
        assert!(!TermCode {
            layer: 2,
            etype: 1,
            ecode: 2
        }
        .is_known());
    }
}
