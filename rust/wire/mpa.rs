// SPDX-License-Identifier: GPL-2.0

//! MPA (RFC 5044, revision 2 from RFC 6581): the start-up frames, FPDU
//! framing with pad and CRC, marker arithmetic, and a streaming FPDU parser
//! with bounded memory.
//!
//! # Start-up frames (RFC 5044 §7.1, RFC 6581 §9)
//!
//! ```text
//!  0  16B key "MPA ID Req Frame" / "MPA ID Rep Frame"
//! 16  u8  flags: M(0x80) C(0x40) R(0x20) Enhanced(0x10, rev 2) Res(0x0f)
//! 17  u8  revision (1 or 2)
//! 18  u16 private data length (at most 512; includes the 4 bytes below)
//! 20  [rev 2 with Enhanced] u16 A B IRD(14), u16 C D ORD(14)
//!     private data
//! ```
//!
//! M asks the *peer* to send markers to the frame's sender (so markers are
//! negotiated per direction); C in either frame switches CRC on for both
//! directions; R (reply only) rejects. In the enhanced data A is the
//! peer-to-peer model, B/C/D offer (request) or choose (reply) a zero-length
//! Send / RDMA Write / RDMA Read as the ready-to-receive message.
//!
//! siw quirks: it refuses any frame with M set (it implements no markers);
//! it refuses private data longer than 256 bytes (`RDMA_MAX_PRIVATE_DATA`,
//! the enhanced data included) although MPA allows 512; it uses reserved
//! bit 0x08 as an experimental "GSO" flag (off by default), which a
//! receiver must ignore.
//!
//! # FPDUs (RFC 5044 §4)
//!
//! ```text
//!  u16 ULPDU_Length | ULPDU | pad (0-3 zero bytes) | u32 CRC
//! ```
//!
//! The pad makes `2 + ULPDU_Length + pad` a multiple of 4; the CRC field is
//! always present (any value, ignored, when CRC is off; siw sends zero).
//! The CRC ([`super::crc32c`]) covers every byte before the CRC field,
//! markers included, and is stored little-endian as siw does.
//!
//! # Markers (RFC 5044 §4.3)
//!
//! When negotiated, a 4-byte marker `u16 reserved (0) | u16 FPDUPTR` sits at
//! every stream position that is a multiple of 512, positions counted from
//! the first byte after the start-up frames (marker bytes counted too). So
//! the first FPDU begins with a marker. Markers are inserted wherever they
//! fall inside an FPDU (header, payload, before the CRC) and lengthen it by
//! 4 bytes each; they are not counted in ULPDU_Length. Because FPDUs start
//! on 4-byte boundaries and are multiples of 4 long, a marker never splits
//! a field. A marker that falls exactly where an FPDU begins belongs to
//! that FPDU (and to its CRC).
//!
//! FPDUPTR is the distance back from the marker to the FPDU's ULPDU_Length
//! field; a marker in front of the ULPDU_Length field (the FPDU's first
//! marker when the FPDU starts on a 512 boundary) carries 0. Receivers
//! ignore its two low bits. (This is this implementation's reading of
//! §4.3; siw has no markers to compare with.)

use super::crc32c::{self, Crc32c};
use super::terminate::TermCode;

/// Key of the MPA Request frame.
pub const KEY_REQ: &[u8; 16] = b"MPA ID Req Frame";
/// Key of the MPA Reply frame.
pub const KEY_REP: &[u8; 16] = b"MPA ID Rep Frame";
/// Length of a start-up frame without private data.
pub const STARTUP_HDR_LEN: usize = 20;
/// Largest private data length MPA allows (enhanced data included).
pub const MAX_PRIVATE_DATA: usize = 512;
/// Largest private data length siw accepts (enhanced data included).
pub const SIW_MAX_PRIVATE_DATA: usize = 256;
/// MPA revision 1 (RFC 5044).
pub const REVISION_1: u8 = 1;
/// MPA revision 2 (RFC 6581).
pub const REVISION_2: u8 = 2;
/// Flags byte: markers wanted by the sender of the frame.
pub const FLAG_MARKERS: u8 = 0x80;
/// Flags byte: CRC wanted.
pub const FLAG_CRC: u8 = 0x40;
/// Flags byte: reject (reply only).
pub const FLAG_REJECT: u8 = 0x20;
/// Flags byte: enhanced connection data follows (revision 2).
pub const FLAG_ENHANCED: u8 = 0x10;
/// Flags byte: reserved bits.
pub const MASK_RESERVED: u8 = 0x0f;
/// siw's experimental use of a reserved bit ("GSO", `MPA_RR_FLAG_GSO_EXP`).
pub const SIW_FLAG_GSO_EXP: u8 = 0x08;
/// Length of the enhanced connection data.
pub const ENHANCED_LEN: usize = 4;
/// Largest IRD or ORD value (14 bits).
pub const IRD_ORD_MAX: u16 = 0x3fff;

/// Which start-up frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// MPA Request (initiator).
    Request,
    /// MPA Reply (responder).
    Reply,
}

impl FrameKind {
    /// The frame's key.
    pub const fn key(self) -> &'static [u8; 16] {
        match self {
            Self::Request => KEY_REQ,
            Self::Reply => KEY_REP,
        }
    }
}

/// Why a start-up frame is refused. Every one of these is Terminate code
/// [`TermCode::LLP_INVALID_REQ_RESP`] (or a refused connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartupError {
    /// More bytes are needed: the frame is at least this long. Not an error
    /// of the peer.
    Incomplete(usize),
    /// The key is neither the request nor the reply key (detected as soon
    /// as a byte differs).
    BadKey,
    /// A revision other than 1 or 2.
    BadRevision(u8),
    /// A private data length over 512.
    PrivateDataTooLong(usize),
    /// Enhanced flag set on revision 2 but fewer than 4 bytes of private
    /// data.
    EnhancedTruncated,
    /// Encode: enhanced data with a revision other than 2, or IRD/ORD over
    /// 0x3fff.
    BadEnhanced,
    /// Encode: the output buffer is too small.
    NoSpace,
}

impl StartupError {
    /// The Terminate code for a malformed frame.
    pub const fn term_code(self) -> TermCode {
        TermCode::LLP_INVALID_REQ_RESP
    }
}

/// The ready-to-receive message types of RFC 6581 (the B, C, D bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtrTypes {
    /// Zero-length Send (B, in the IRD word).
    pub send: bool,
    /// Zero-length RDMA Write (C, in the ORD word).
    pub write: bool,
    /// Zero-length RDMA Read (D, in the ORD word).
    pub read: bool,
}

impl RtrTypes {
    /// None offered.
    pub const NONE: Self = Self {
        send: false,
        write: false,
        read: false,
    };

    /// The responder's choice among `offered` types it `supports`: Write,
    /// then Read, then Send (siw's preference). `None` when nothing matches
    /// (Terminate [`TermCode::LLP_NO_MATCHING_RTR`]).
    pub const fn choose(offered: Self, supports: Self) -> Option<Self> {
        let pick = if offered.write && supports.write {
            Self {
                write: true,
                ..Self::NONE
            }
        } else if offered.read && supports.read {
            Self {
                read: true,
                ..Self::NONE
            }
        } else if offered.send && supports.send {
            Self {
                send: true,
                ..Self::NONE
            }
        } else {
            return None;
        };
        Some(pick)
    }
}

/// RFC 6581 enhanced connection data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enhanced {
    /// A: peer-to-peer model (an RTR message follows the start-up).
    pub peer_to_peer: bool,
    /// Inbound RDMA Read queue depth (14 bits).
    pub ird: u16,
    /// Outbound RDMA Read queue depth (14 bits).
    pub ord: u16,
    /// RTR types offered (request) or chosen (reply).
    pub rtr: RtrTypes,
}

impl Enhanced {
    /// Reads the 4 bytes.
    pub const fn parse(b: [u8; 4]) -> Self {
        let ird = u16::from_be_bytes([b[0], b[1]]);
        let ord = u16::from_be_bytes([b[2], b[3]]);
        Self {
            peer_to_peer: ird & 0x8000 != 0,
            ird: ird & IRD_ORD_MAX,
            ord: ord & IRD_ORD_MAX,
            rtr: RtrTypes {
                send: ird & 0x4000 != 0,
                write: ord & 0x8000 != 0,
                read: ord & 0x4000 != 0,
            },
        }
    }

    /// The 4 bytes; `None` when IRD or ORD exceed 14 bits.
    pub const fn to_bytes(self) -> Option<[u8; 4]> {
        if self.ird > IRD_ORD_MAX || self.ord > IRD_ORD_MAX {
            return None;
        }
        let mut ird = self.ird;
        let mut ord = self.ord;
        if self.peer_to_peer {
            ird |= 0x8000;
        }
        if self.rtr.send {
            ird |= 0x4000;
        }
        if self.rtr.write {
            ord |= 0x8000;
        }
        if self.rtr.read {
            ord |= 0x4000;
        }
        let i = ird.to_be_bytes();
        let o = ord.to_be_bytes();
        Some([i[0], i[1], o[0], o[1]])
    }
}

/// An MPA Request or Reply frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Startup<'a> {
    /// Request or Reply.
    pub kind: FrameKind,
    /// M: the sender wants to receive markers.
    pub markers: bool,
    /// C: the sender wants CRCs.
    pub crc: bool,
    /// R: the responder rejects the connection.
    pub reject: bool,
    /// The revision (1 or 2).
    pub revision: u8,
    /// The reserved flag bits as received (sent as given; siw's GSO bit
    /// lives here).
    pub reserved: u8,
    /// Enhanced connection data (revision 2 with the Enhanced flag).
    pub enhanced: Option<Enhanced>,
    /// The private data (after the enhanced data).
    pub private_data: &'a [u8],
}

fn key_prefix_ok(b: &[u8]) -> bool {
    let n = b.len().min(16);
    let p = b.get(..n).unwrap_or(&[]);
    KEY_REQ.get(..n) == Some(p) || KEY_REP.get(..n) == Some(p)
}

impl<'a> Startup<'a> {
    /// Parses a start-up frame at the start of `b`; returns it and its
    /// length. Bytes after the frame are not looked at (siw refuses a peer
    /// that sends anything before the handshake is done; that is the
    /// caller's policy).
    pub fn parse(b: &'a [u8]) -> Result<(Self, usize), StartupError> {
        if !key_prefix_ok(b) {
            return Err(StartupError::BadKey);
        }
        let h: &[u8; STARTUP_HDR_LEN] = b
            .get(..STARTUP_HDR_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(StartupError::Incomplete(STARTUP_HDR_LEN))?;
        let kind = if h[..16] == KEY_REQ[..] {
            FrameKind::Request
        } else {
            FrameKind::Reply
        };
        let flags = h[16];
        let revision = h[17];
        if revision != REVISION_1 && revision != REVISION_2 {
            return Err(StartupError::BadRevision(revision));
        }
        let pd_len = usize::from(u16::from_be_bytes([h[18], h[19]]));
        if pd_len > MAX_PRIVATE_DATA {
            return Err(StartupError::PrivateDataTooLong(pd_len));
        }
        let total = STARTUP_HDR_LEN + pd_len;
        let pd = b
            .get(STARTUP_HDR_LEN..total)
            .ok_or(StartupError::Incomplete(total))?;
        let (enhanced, private_data) = if revision == REVISION_2 && flags & FLAG_ENHANCED != 0 {
            let (e, rest) = pd
                .split_at_checked(ENHANCED_LEN)
                .ok_or(StartupError::EnhancedTruncated)?;
            let e: [u8; 4] = e.try_into().map_err(|_| StartupError::EnhancedTruncated)?;
            (Some(Enhanced::parse(e)), rest)
        } else {
            (None, pd)
        };
        Ok((
            Self {
                kind,
                markers: flags & FLAG_MARKERS != 0,
                crc: flags & FLAG_CRC != 0,
                reject: flags & FLAG_REJECT != 0,
                revision,
                reserved: flags & MASK_RESERVED,
                enhanced,
                private_data,
            },
            total,
        ))
    }

    /// The encoded length.
    pub fn len(&self) -> usize {
        STARTUP_HDR_LEN
            + self.private_data.len()
            + if self.enhanced.is_some() {
                ENHANCED_LEN
            } else {
                0
            }
    }

    /// Never true.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the frame into `out`; returns its length.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, StartupError> {
        let pd_len = self.len() - STARTUP_HDR_LEN;
        if pd_len > MAX_PRIVATE_DATA {
            return Err(StartupError::PrivateDataTooLong(pd_len));
        }
        if self.revision != REVISION_1 && self.revision != REVISION_2 {
            return Err(StartupError::BadRevision(self.revision));
        }
        let enh = match self.enhanced {
            Some(e) if self.revision == REVISION_2 => {
                Some(e.to_bytes().ok_or(StartupError::BadEnhanced)?)
            }
            Some(_) => return Err(StartupError::BadEnhanced),
            None => None,
        };
        let dst = out.get_mut(..self.len()).ok_or(StartupError::NoSpace)?;
        let (h, rest) = dst.split_at_mut(STARTUP_HDR_LEN);
        h[..16].copy_from_slice(self.kind.key());
        let mut flags = self.reserved & MASK_RESERVED;
        if self.markers {
            flags |= FLAG_MARKERS;
        }
        if self.crc {
            flags |= FLAG_CRC;
        }
        if self.reject {
            flags |= FLAG_REJECT;
        }
        if enh.is_some() {
            flags |= FLAG_ENHANCED;
        }
        h[16] = flags;
        h[17] = self.revision;
        h[18..20].copy_from_slice(&(pd_len as u16).to_be_bytes());
        let rest = match enh {
            Some(e) => {
                let (a, b) = rest.split_at_mut(ENHANCED_LEN);
                a.copy_from_slice(&e);
                b
            }
            None => rest,
        };
        rest.copy_from_slice(self.private_data);
        Ok(self.len())
    }
}

/// True when CRCs are in use for the connection: when either frame has C.
pub const fn crc_in_use(request: &Startup<'_>, reply: &Startup<'_>) -> bool {
    request.crc || reply.crc
}

/// Length of the ULPDU_Length field.
pub const HDR_LEN: usize = 2;
/// Length of the CRC field.
pub const CRC_LEN: usize = 4;
/// Length of a marker.
pub const MARKER_LEN: usize = 4;
/// Markers sit at stream positions that are multiples of this.
pub const MARKER_INTERVAL: u32 = 512;
/// Largest ULPDU (the 16-bit length field).
pub const MAX_ULPDU_LEN: usize = 0xffff;

/// Pad bytes after a ULPDU of `ulpdu_len` bytes.
pub const fn pad_len(ulpdu_len: usize) -> usize {
    ulpdu_len.wrapping_add(HDR_LEN).wrapping_neg() & 3
}

/// Length of an FPDU without markers: length field, ULPDU, pad, CRC
/// (saturating, so any argument is safe).
pub const fn fpdu_len(ulpdu_len: usize) -> usize {
    ulpdu_len
        .saturating_add(HDR_LEN + CRC_LEN)
        .saturating_add(pad_len(ulpdu_len))
}

/// Why an FPDU cannot be built or is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FpduError {
    /// The ULPDU (or, receiving, the FPDU it announces) does not fit: over
    /// 65535 bytes, or longer than the receive buffer.
    TooLong(usize),
    /// The CRC does not verify.
    Crc,
    /// A marker's FPDUPTR does not point at the current FPDU.
    Marker,
    /// A stream position not on a 4-byte boundary (FPDUs always start on
    /// one).
    Unaligned,
    /// The FPDU would put a marker more than 65535 bytes past its header.
    MarkerRange,
    /// Encode: output buffer too small.
    NoSpace,
}

impl FpduError {
    /// The Terminate code (LLP layer).
    pub const fn term_code(self) -> TermCode {
        match self {
            Self::Crc => TermCode::LLP_RECEIVED_CRC,
            Self::TooLong(_) | Self::Marker | Self::Unaligned | Self::MarkerRange => {
                TermCode::LLP_FPDU_START
            }
            Self::NoSpace => TermCode::LLP_LOCAL_CATASTROPHIC,
        }
    }
}

/// Where the markers of one FPDU fall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FpduLayout {
    /// Stream position of the FPDU's first byte.
    pub start: u32,
    /// ULPDU length.
    pub ulpdu_len: usize,
    /// Length field + ULPDU + pad + CRC.
    pub content_len: usize,
    /// Bytes on the wire, markers included.
    pub wire_len: usize,
    /// Offset of the first marker from `start` (meaningless when there are
    /// none).
    first_marker: usize,
    /// Number of markers inside the FPDU.
    markers: usize,
}

impl FpduLayout {
    /// The layout of an FPDU carrying `ulpdu_len` bytes whose first byte is
    /// at stream position `start` (relative to the first byte after the
    /// start-up frames), with or without markers.
    pub fn new(start: u32, ulpdu_len: usize, markers: bool) -> Result<Self, FpduError> {
        if ulpdu_len > MAX_ULPDU_LEN {
            return Err(FpduError::TooLong(ulpdu_len));
        }
        if start % 4 != 0 {
            return Err(FpduError::Unaligned);
        }
        let content_len = fpdu_len(ulpdu_len);
        let mut l = Self {
            start,
            ulpdu_len,
            content_len,
            wire_len: content_len,
            first_marker: 0,
            markers: 0,
        };
        if markers {
            let m = (start % MARKER_INTERVAL) as usize;
            let first = if m == 0 { 0 } else { 512 - m };
            // Marker k precedes content byte first + 508k; it is inside
            // the FPDU when that byte exists.
            let n = if first < content_len {
                (content_len - 1 - first) / 508 + 1
            } else {
                0
            };
            l.first_marker = first;
            l.markers = n;
            l.wire_len = content_len + n * MARKER_LEN;
            if n > 0 && l.fpduptr(first + (n - 1) * 512) > 0xffff {
                return Err(FpduError::MarkerRange);
            }
        }
        Ok(l)
    }

    /// Number of markers inside the FPDU.
    pub const fn marker_count(&self) -> usize {
        self.markers
    }

    /// True when the FPDU starts with a marker.
    pub const fn leading_marker(&self) -> bool {
        self.markers > 0 && self.first_marker == 0
    }

    /// Offset of the ULPDU_Length field from the FPDU's first byte.
    pub const fn header_offset(&self) -> usize {
        if self.leading_marker() {
            MARKER_LEN
        } else {
            0
        }
    }

    const fn fpduptr(&self, off: usize) -> usize {
        if off == 0 {
            0
        } else {
            off - self.header_offset()
        }
    }

    /// The `k`-th marker: its offset from the FPDU's first byte and its
    /// FPDUPTR value.
    pub fn marker(&self, k: usize) -> Option<(usize, u16)> {
        if k >= self.markers {
            return None;
        }
        let off = self.first_marker + k * 512;
        Some((off, self.fpduptr(off) as u16))
    }

    /// The markers, in order.
    pub fn markers(&self) -> impl Iterator<Item = (usize, u16)> + '_ {
        (0..self.markers).filter_map(|k| self.marker(k))
    }

    /// Stream position just after this FPDU (where the next one starts).
    pub const fn next_start(&self) -> u32 {
        self.start.wrapping_add(self.wire_len as u32)
    }
}

/// The 4 bytes of a marker with this FPDUPTR.
pub const fn marker_bytes(fpduptr: u16) -> [u8; 4] {
    let p = fpduptr.to_be_bytes();
    [0, 0, p[0], p[1]]
}

/// FPDU framing options negotiated at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Framing {
    /// CRCs generated and checked.
    pub crc: bool,
    /// Markers inserted (transmit) or expected (receive) in this direction.
    pub markers: bool,
}

/// Writes wire bytes, inserting markers, feeding the CRC.
struct Writer<'o> {
    out: &'o mut [u8],
    at: usize,
    pos: u32,
    hdr_pos: Option<u32>,
    markers: bool,
    crc: Crc32c,
    /// Whether the CRC is computed (CRC negotiated).
    crc_on: bool,
}

impl Writer<'_> {
    fn raw(&mut self, b: &[u8], crc: bool) -> Result<(), FpduError> {
        let end = self.at.checked_add(b.len()).ok_or(FpduError::NoSpace)?;
        self.out
            .get_mut(self.at..end)
            .ok_or(FpduError::NoSpace)?
            .copy_from_slice(b);
        if crc && self.crc_on {
            self.crc.feed(b);
        }
        self.at = end;
        self.pos = self.pos.wrapping_add(b.len() as u32);
        Ok(())
    }

    fn maybe_marker(&mut self) -> Result<(), FpduError> {
        if self.markers && self.pos % MARKER_INTERVAL == 0 {
            let p = match self.hdr_pos {
                None => 0,
                Some(h) => self.pos.wrapping_sub(h),
            };
            let p = u16::try_from(p).map_err(|_| FpduError::MarkerRange)?;
            self.raw(&marker_bytes(p), true)?;
        }
        Ok(())
    }

    fn content(&mut self, mut b: &[u8]) -> Result<(), FpduError> {
        while !b.is_empty() {
            self.maybe_marker()?;
            if self.hdr_pos.is_none() {
                self.hdr_pos = Some(self.pos);
            }
            let room = if self.markers {
                (MARKER_INTERVAL - self.pos % MARKER_INTERVAL) as usize
            } else {
                usize::MAX
            };
            let (now, later) = b.split_at(room.min(b.len()));
            self.raw(now, true)?;
            b = later;
        }
        Ok(())
    }
}

/// Writes one FPDU carrying `ulpdu` into `out`, its first byte at stream
/// position `start`; returns the bytes written (the layout's wire length).
/// With CRC off the CRC field is zero.
pub fn encode_fpdu(
    out: &mut [u8],
    start: u32,
    ulpdu: &[u8],
    framing: Framing,
) -> Result<usize, FpduError> {
    let layout = FpduLayout::new(start, ulpdu.len(), framing.markers)?;
    if out.len() < layout.wire_len {
        return Err(FpduError::NoSpace);
    }
    let mut w = Writer {
        out,
        at: 0,
        pos: start,
        hdr_pos: None,
        markers: framing.markers,
        crc: Crc32c::new(),
        crc_on: framing.crc,
    };
    w.content(&(ulpdu.len() as u16).to_be_bytes())?;
    w.content(ulpdu)?;
    let pad = [0u8; 3];
    w.content(pad.get(..pad_len(ulpdu.len())).unwrap_or(&[]))?;
    // A marker due where the CRC starts goes before it, inside the CRC.
    w.maybe_marker()?;
    let crc = if framing.crc { w.crc.to_wire() } else { [0; 4] };
    w.raw(&crc, false)?;
    Ok(w.at)
}

/// The pad and CRC that end an FPDU whose length field and ULPDU were fed to
/// `crc` (for senders that gather the ULPDU from pages; no markers). Returns
/// the trailer bytes and how many of them to send (pad + 4).
pub fn trailer(ulpdu_len: usize, crc: Option<Crc32c>) -> ([u8; 7], usize) {
    let pad = pad_len(ulpdu_len);
    let mut t = [0u8; 7];
    let field = match crc {
        Some(mut c) => {
            c.feed_zeros(pad);
            c.to_wire()
        }
        None => [0; 4],
    };
    if let Some(dst) = t.get_mut(pad..pad + CRC_LEN) {
        dst.copy_from_slice(&field);
    }
    (t, pad + CRC_LEN)
}

/// Parses one FPDU without markers from contiguous bytes, in place:
/// `Ok(None)` when `b` does not yet hold all of it, else the ULPDU and the
/// FPDU's length. `max_ulpdu` bounds the length field.
pub fn parse_fpdu(
    b: &[u8],
    crc: bool,
    max_ulpdu: usize,
) -> Result<Option<(&[u8], usize)>, FpduError> {
    let Some(h) = b.get(..HDR_LEN) else {
        return Ok(None);
    };
    let u = usize::from(u16::from_be_bytes([h[0], h[1]]));
    if u > max_ulpdu {
        return Err(FpduError::TooLong(u));
    }
    let total = fpdu_len(u);
    let Some(f) = b.get(..total) else {
        return Ok(None);
    };
    let (body, field) = f.split_at(total - CRC_LEN);
    if crc {
        let field: [u8; 4] = field.try_into().map_err(|_| FpduError::Crc)?;
        if crc32c::checksum(body) != crc32c::from_wire(field) {
            return Err(FpduError::Crc);
        }
    }
    Ok(Some((body.get(HDR_LEN..HDR_LEN + u).unwrap_or(&[]), total)))
}

/// Where the first `head` bytes of `fpdu` occur again inside it, if they
/// do: an FPDU whose CRC fails because its sender sent part of it, then
/// all of it again, carries its own header a second time (a diagnostic for
/// the error path, not for the data path).
pub fn header_recurs(fpdu: &[u8], head: usize) -> Option<usize> {
    let h = fpdu.get(..head).filter(|h| !h.is_empty())?;
    fpdu.windows(head)
        .skip(1)
        .position(|w| w == h)
        .map(|i| i + 1)
}

/// A complete FPDU assembled by [`FpduParser`] in the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fpdu {
    /// ULPDU length; the ULPDU is `buf[2..2 + ulpdu_len]`.
    pub ulpdu_len: usize,
    /// Stream position of the FPDU's first byte.
    pub start: u32,
}

impl Fpdu {
    /// The ULPDU inside the buffer the parser filled.
    pub fn ulpdu<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        buf.get(HDR_LEN..HDR_LEN + self.ulpdu_len).unwrap_or(&[])
    }
}

/// A streaming FPDU receiver: fed the TCP byte stream in arbitrary chunks,
/// it strips and checks markers, checks the CRC, and assembles each FPDU's
/// length field, ULPDU, pad and CRC (markers removed) in a buffer the caller
/// passes to every call (the same one each time, at least as long as the
/// longest FPDU to accept: `fpdu_len(max ULPDU)`). It holds no memory of
/// its own beyond a few words.
#[derive(Debug, Clone)]
pub struct FpduParser {
    framing: Framing,
    /// Stream position of the next byte.
    pos: u32,
    /// Stream position of the current FPDU's first byte.
    start: u32,
    /// Stream position of its ULPDU_Length field.
    hdr_pos: u32,
    /// Content bytes collected.
    have: usize,
    /// Content bytes of the current FPDU (2 until the length is known).
    need: usize,
    /// Its ULPDU length, once known.
    ulpdu_len: usize,
    header_known: bool,
    /// Largest ULPDU accepted.
    max_ulpdu: usize,
    mark: [u8; 4],
    crc: Crc32c,
    failed: Option<FpduError>,
}

impl FpduParser {
    /// A parser whose first byte will be at stream position `pos` (0 for
    /// the first byte after the start-up frames).
    pub fn new(framing: Framing, pos: u32) -> Result<Self, FpduError> {
        if pos % 4 != 0 {
            return Err(FpduError::Unaligned);
        }
        Ok(Self {
            framing,
            pos,
            start: pos,
            hdr_pos: pos,
            have: 0,
            need: HDR_LEN,
            ulpdu_len: 0,
            header_known: false,
            max_ulpdu: MAX_ULPDU_LEN,
            mark: [0; 4],
            crc: Crc32c::new(),
            failed: None,
        })
    }

    /// Refuses FPDUs whose ULPDU is longer than `max` (the receiver's
    /// MULPDU) with [`FpduError::TooLong`], whatever the buffer's size.
    /// By default only the buffer's size limits them.
    #[must_use]
    pub const fn with_max_ulpdu(mut self, max: usize) -> Self {
        self.max_ulpdu = max;
        self
    }

    /// The longest ULPDU accepted.
    pub const fn max_ulpdu(&self) -> usize {
        self.max_ulpdu
    }

    /// Stream position of the next byte expected.
    pub const fn position(&self) -> u32 {
        self.pos
    }

    /// Stream position of the first byte of the FPDU being received (or
    /// the one that failed).
    pub const fn fpdu_start(&self) -> u32 {
        self.start
    }

    /// Stream position where the FPDU after the current one starts, once
    /// known: the next byte between FPDUs (without markers), the current
    /// FPDU's end once its length field is read. `None` while the length
    /// field is incomplete, after an error, and between FPDUs with markers
    /// (the next FPDU may begin at a marker before the next byte).
    pub fn next_fpdu_start(&self) -> Option<u32> {
        if self.failed.is_some() {
            return None;
        }
        if self.header_known {
            return FpduLayout::new(self.start, self.ulpdu_len, self.framing.markers)
                .ok()
                .map(|l| l.next_start());
        }
        (self.have == 0 && !self.framing.markers).then_some(self.pos)
    }

    /// True between FPDUs (nothing of the next one received yet, markers
    /// aside).
    pub const fn at_boundary(&self) -> bool {
        self.have == 0
    }

    /// Stream bytes still to come of the FPDU begun, as far as known (the
    /// length field's while it is incomplete); without markers (with them,
    /// content bytes: the stream holds more).
    pub const fn remaining(&self) -> usize {
        self.need - self.have
    }

    /// Passes over one whole FPDU of `len` stream bytes that the caller took
    /// from the stream and checked itself, between FPDUs and without
    /// markers: the position moves past it. [`FpduError::Unaligned`]
    /// otherwise (or after an error, that error).
    pub fn skip(&mut self, len: usize) -> Result<(), FpduError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if !self.at_boundary() || self.framing.markers || len % 4 != 0 {
            return Err(FpduError::Unaligned);
        }
        self.pos = self.pos.wrapping_add(len as u32);
        self.start = self.pos;
        self.hdr_pos = self.pos;
        Ok(())
    }

    /// Whether the byte at hand counts in the CRC (none do when the
    /// framing has no CRC: nothing checks it).
    fn in_crc(&self) -> bool {
        self.framing.crc && (!self.header_known || self.have + CRC_LEN <= self.need)
    }

    fn fail(&mut self, e: FpduError) -> Result<(usize, Option<Fpdu>), FpduError> {
        self.failed = Some(e);
        Err(e)
    }

    /// Consumes bytes of `data` until one FPDU is complete or `data` is
    /// used up. Returns the bytes consumed and the FPDU, if one completed
    /// (its bytes are in `buf` until the next call). Once it has returned an
    /// error it returns that error for ever: the stream cannot be resynced.
    pub fn push(
        &mut self,
        buf: &mut [u8],
        data: &[u8],
    ) -> Result<(usize, Option<Fpdu>), FpduError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let mut i = 0;
        while let Some(rest) = data.get(i..).filter(|r| !r.is_empty()) {
            let m = (self.pos % MARKER_INTERVAL) as usize;
            if self.framing.markers && m < MARKER_LEN {
                let take = (MARKER_LEN - m).min(rest.len());
                let src = rest.get(..take).unwrap_or(&[]);
                if let Some(dst) = self.mark.get_mut(m..m + take) {
                    dst.copy_from_slice(src);
                }
                if self.in_crc() {
                    self.crc.feed(src);
                }
                self.pos = self.pos.wrapping_add(take as u32);
                i += take;
                if m + take == MARKER_LEN {
                    let at = self.pos.wrapping_sub(MARKER_LEN as u32);
                    let expect = if self.have == 0 {
                        self.start = at;
                        0
                    } else {
                        at.wrapping_sub(self.hdr_pos)
                    };
                    let got = u32::from(u16::from_be_bytes([self.mark[2], self.mark[3]])) & !3;
                    if got != expect {
                        return self.fail(FpduError::Marker);
                    }
                }
                continue;
            }
            if self.have == 0 {
                self.hdr_pos = self.pos;
                if !(self.framing.markers && m == MARKER_LEN) {
                    self.start = self.pos;
                }
            }
            let room = if self.framing.markers {
                MARKER_INTERVAL as usize - m
            } else {
                usize::MAX
            };
            let take = (self.need - self.have).min(rest.len()).min(room);
            let src = rest.get(..take).unwrap_or(&[]);
            let Some(dst) = buf.get_mut(self.have..self.have + take) else {
                return self.fail(FpduError::TooLong(self.need));
            };
            dst.copy_from_slice(src);
            // (No CRC: nothing checks it.)
            if self.framing.crc && self.header_known {
                let crc_end = self.need - CRC_LEN;
                if self.have < crc_end {
                    let n = (crc_end - self.have).min(take);
                    self.crc.feed(src.get(..n).unwrap_or(&[]));
                }
            } else if self.framing.crc {
                self.crc.feed(src);
            }
            self.have += take;
            self.pos = self.pos.wrapping_add(take as u32);
            i += take;
            if !self.header_known && self.have == HDR_LEN {
                let u = match buf.get(..HDR_LEN) {
                    Some(h) => usize::from(u16::from_be_bytes([h[0], h[1]])),
                    None => 0,
                };
                let need = fpdu_len(u);
                if u > self.max_ulpdu || need > buf.len() {
                    return self.fail(FpduError::TooLong(u));
                }
                self.need = need;
                self.ulpdu_len = u;
                self.header_known = true;
            }
            if self.header_known && self.have == self.need {
                let crc_ok = !self.framing.crc
                    || match buf.get(self.need - CRC_LEN..self.need) {
                        Some(f) => {
                            let f = [f[0], f[1], f[2], f[3]];
                            crc32c::from_wire(f) == self.crc.finish()
                        }
                        None => false,
                    };
                if !crc_ok {
                    return self.fail(FpduError::Crc);
                }
                let fpdu = Fpdu {
                    ulpdu_len: self.ulpdu_len,
                    start: self.start,
                };
                self.have = 0;
                self.need = HDR_LEN;
                self.header_known = false;
                self.crc = Crc32c::new();
                return Ok((i, Some(fpdu)));
            }
        }
        Ok((i, None))
    }
}

/// Copies the FPDU bytes of `wire` (stream bytes starting at position
/// `start`) into `out` without the markers, checking nothing; returns the
/// bytes written (stops when `out` is full).
pub fn strip_markers(wire: &[u8], start: u32, out: &mut [u8]) -> usize {
    let mut pos = start;
    let mut n = 0;
    for &b in wire {
        if pos % MARKER_INTERVAL >= MARKER_LEN as u32 {
            match out.get_mut(n) {
                Some(d) => *d = b,
                None => break,
            }
            n += 1;
        }
        pos = pos.wrapping_add(1);
    }
    n
}

#[cfg(test)]
mod tests {
    #[test]
    fn header_recurs_finds_a_resent_fpdu() {
        let mut f = [0u8; 64];
        for (i, b) in f.iter_mut().enumerate() {
            *b = i as u8;
        }
        assert_eq!(header_recurs(&f, 18), None);
        // 30 bytes of the FPDU, then all of it again.
        let mut g = [0u8; 64];
        g[..30].copy_from_slice(&f[..30]);
        g[30..].copy_from_slice(&f[..34]);
        assert_eq!(header_recurs(&g, 18), Some(30));
        assert_eq!(header_recurs(&g[..47], 18), None);
        assert_eq!(header_recurs(&g[..48], 18), Some(30));
        assert_eq!(header_recurs(&[], 18), None);
        assert_eq!(header_recurs(&f, 0), None);
    }

    use super::*;

    #[test]
    fn startup_byte_image_v2() {
        // A siw initiator (rev 2, no CRC required, IRD 16 ORD 16, no p2p)
        // with 4 bytes of private data "abcd".
        let mut img = [0u8; 28];
        img[..16].copy_from_slice(KEY_REQ);
        img[16] = 0x10;
        img[17] = 2;
        img[18..20].copy_from_slice(&[0, 8]);
        img[20..24].copy_from_slice(&[0x00, 0x10, 0x00, 0x10]);
        img[24..].copy_from_slice(b"abcd");
        let (f, n) = Startup::parse(&img).unwrap();
        assert_eq!(n, 28);
        assert_eq!(f.kind, FrameKind::Request);
        assert!(!f.markers && !f.crc && !f.reject);
        let e = f.enhanced.unwrap();
        assert_eq!((e.ird, e.ord, e.peer_to_peer), (16, 16, false));
        assert_eq!(f.private_data, b"abcd");
        let mut out = [0u8; 64];
        assert_eq!(f.encode(&mut out), Ok(28));
        assert_eq!(out[..28], img);
    }

    #[test]
    fn startup_p2p_rtr_bits() {
        // siw p2p request: A in IRD, Write|Read RTR in ORD (rtr_type default).
        let e = Enhanced::parse([0x80, 0x08, 0xc0, 0x04]);
        assert!(e.peer_to_peer);
        assert_eq!((e.ird, e.ord), (8, 4));
        assert_eq!(
            e.rtr,
            RtrTypes {
                send: false,
                write: true,
                read: true
            }
        );
        assert_eq!(e.to_bytes(), Some([0x80, 0x08, 0xc0, 0x04]));
        let e = Enhanced::parse([0x40, 0x00, 0x00, 0x00]);
        assert!(e.rtr.send && !e.peer_to_peer);
        let chosen = RtrTypes::choose(
            RtrTypes {
                send: true,
                write: false,
                read: true,
            },
            RtrTypes {
                send: true,
                write: true,
                read: true,
            },
        );
        assert_eq!(
            chosen,
            Some(RtrTypes {
                read: true,
                ..RtrTypes::NONE
            })
        );
        let only_send = RtrTypes {
            send: true,
            ..RtrTypes::NONE
        };
        let only_write = RtrTypes {
            write: true,
            ..RtrTypes::NONE
        };
        assert_eq!(RtrTypes::choose(only_send, only_write), None);
        assert_eq!(Enhanced { ird: 0x4000, ..e }.to_bytes(), None);
    }

    #[test]
    fn startup_reply_reject_v1() {
        let f = Startup {
            kind: FrameKind::Reply,
            markers: false,
            crc: true,
            reject: true,
            revision: 1,
            reserved: SIW_FLAG_GSO_EXP,
            enhanced: None,
            private_data: b"no",
        };
        let mut out = [0u8; 22];
        assert_eq!(f.encode(&mut out), Ok(22));
        assert_eq!(&out[..16], KEY_REP);
        assert_eq!(out[16..20], [0x68, 1, 0, 2]);
        assert_eq!(Startup::parse(&out), Ok((f, 22)));
        // Rev 1 with the enhanced bit: the bit is ignored.
        out[16] |= FLAG_ENHANCED;
        assert_eq!(Startup::parse(&out).unwrap().0.enhanced, None);
        let mut small = [0u8; 21];
        assert_eq!(f.encode(&mut small), Err(StartupError::NoSpace));
        let bad = Startup {
            enhanced: Some(Enhanced::parse([0; 4])),
            ..f
        };
        assert_eq!(bad.encode(&mut out), Err(StartupError::BadEnhanced));
    }

    #[test]
    fn startup_malformed() {
        assert_eq!(Startup::parse(b""), Err(StartupError::Incomplete(20)));
        assert_eq!(
            Startup::parse(b"MPA ID R"),
            Err(StartupError::Incomplete(20))
        );
        assert_eq!(Startup::parse(b"MPA ID X"), Err(StartupError::BadKey));
        assert_eq!(
            Startup::parse(b"GET / HTTP/1.1\r\n"),
            Err(StartupError::BadKey)
        );
        let mut img = [0u8; 20];
        img[..16].copy_from_slice(KEY_REQ);
        img[17] = 3;
        assert_eq!(Startup::parse(&img), Err(StartupError::BadRevision(3)));
        img[17] = 0;
        assert_eq!(Startup::parse(&img), Err(StartupError::BadRevision(0)));
        img[17] = 2;
        img[18..20].copy_from_slice(&513u16.to_be_bytes());
        assert_eq!(
            Startup::parse(&img),
            Err(StartupError::PrivateDataTooLong(513))
        );
        img[18..20].copy_from_slice(&512u16.to_be_bytes());
        assert_eq!(Startup::parse(&img), Err(StartupError::Incomplete(532)));
        let mut img = [0u8; 23];
        img[..16].copy_from_slice(KEY_REQ);
        img[16] = FLAG_ENHANCED;
        img[17] = 2;
        img[19] = 3;
        assert_eq!(Startup::parse(&img), Err(StartupError::EnhancedTruncated));
        assert_eq!(
            StartupError::BadKey.term_code(),
            TermCode::LLP_INVALID_REQ_RESP
        );
        let big = [0u8; 509];
        let f = Startup {
            kind: FrameKind::Request,
            markers: false,
            crc: false,
            reject: false,
            revision: 2,
            reserved: 0,
            enhanced: Some(Enhanced::parse([0; 4])),
            private_data: &big,
        };
        let mut out = [0u8; 600];
        assert_eq!(
            f.encode(&mut out),
            Err(StartupError::PrivateDataTooLong(513))
        );
    }

    #[test]
    fn pad_and_lengths() {
        assert_eq!(pad_len(0), 2);
        assert_eq!(pad_len(1), 1);
        assert_eq!(pad_len(2), 0);
        assert_eq!(pad_len(3), 3);
        assert_eq!(fpdu_len(0), 8);
        assert_eq!(fpdu_len(14), 20);
        // siw's Send header: ULPDU 18 -> 2 + 18 + 0 + 4 = 24.
        assert_eq!(fpdu_len(18), 24);
        for u in 0..100 {
            assert_eq!(fpdu_len(u) % 4, 0);
        }
    }

    #[test]
    fn fpdu_known_image_with_crc() {
        // A Send of "abc" (siw layout): ULPDU = 18-byte DDP header + 3.
        let mut ulpdu = [0u8; 21];
        ulpdu[0] = 0x41;
        ulpdu[1] = 0x43;
        ulpdu[13] = 1;
        ulpdu[18..].copy_from_slice(b"abc");
        let mut out = [0u8; 64];
        let f = Framing {
            crc: true,
            markers: false,
        };
        let n = encode_fpdu(&mut out, 0, &ulpdu, f).unwrap();
        assert_eq!(n, 2 + 21 + 1 + 4);
        assert_eq!(out[..2], [0, 21]);
        assert_eq!(out[23], 0);
        let crc = crc32c::checksum(&out[..24]);
        assert_eq!(out[24..28], crc.to_le_bytes());
        let (got, len) = parse_fpdu(&out[..n], true, 100).unwrap().unwrap();
        assert_eq!((got, len), (&ulpdu[..], 28));
        // The trailer helper agrees.
        let c = Crc32c::new().update(&out[..23]);
        let (t, tn) = trailer(21, Some(c));
        assert_eq!(&t[..tn], &out[23..28]);
        let (t, tn) = trailer(21, None);
        assert_eq!(&t[..tn], &[0, 0, 0, 0, 0]);
        // Corrupt one byte.
        out[5] ^= 1;
        assert_eq!(parse_fpdu(&out[..n], true, 100), Err(FpduError::Crc));
        assert!(parse_fpdu(&out[..n], false, 100).is_ok());
        assert_eq!(
            parse_fpdu(&out[..n], false, 20),
            Err(FpduError::TooLong(21))
        );
        assert_eq!(parse_fpdu(&out[..n - 1], true, 100), Ok(None));
        assert_eq!(parse_fpdu(&out[..1], true, 100), Ok(None));
    }

    #[test]
    fn marker_layouts() {
        // First FPDU at stream position 0: leading marker, FPDUPTR 0.
        let l = FpduLayout::new(0, 18, true).unwrap();
        assert_eq!(l.content_len, 24);
        assert_eq!(l.wire_len, 28);
        assert!(l.leading_marker());
        assert_eq!(l.markers().collect::<heapless_vec::V>().0[..1], [(0, 0)]);
        // An FPDU starting at 500: 12 content bytes, then a marker at 512
        // (offset 12, FPDUPTR 12), then the rest.
        let l = FpduLayout::new(500, 18, true).unwrap();
        assert_eq!(l.wire_len, 28);
        assert_eq!(l.marker(0), Some((12, 12)));
        assert_eq!(l.next_start(), 528);
        // FPDU ending exactly at 512: marker belongs to the next FPDU.
        let l = FpduLayout::new(488, 18, true).unwrap();
        assert_eq!(l.marker_count(), 0);
        assert_eq!(l.next_start(), 512);
        // Marker right before the CRC: 20 bytes of header, ULPDU and pad
        // from 492 end at 512, where the marker goes, then the CRC.
        let l = FpduLayout::new(492, 18, true).unwrap();
        assert_eq!(l.content_len, 24);
        assert_eq!(l.marker(0), Some((20, 20)));
        assert_eq!(l.wire_len, 28);
        // Long FPDU from 0: markers every 512, FPDUPTR = offset - 4.
        let l = FpduLayout::new(0, 2000, true).unwrap();
        assert_eq!(l.content_len, 2008);
        assert_eq!(l.marker_count(), 4);
        assert_eq!(l.wire_len, 2024);
        let m = l.markers().collect::<heapless_vec::V>();
        assert_eq!(m.0[..4], [(0, 0), (512, 508), (1024, 1020), (1536, 1532)]);
        // Wraps at 2^32 like TCP sequence numbers.
        let l = FpduLayout::new(u32::MAX - 3, 8, true).unwrap(); // 16 content bytes
        assert_eq!(l.marker(0), Some((4, 4)));
        assert_eq!(l.next_start(), 16);
        assert_eq!(FpduLayout::new(2, 8, true), Err(FpduError::Unaligned));
        assert_eq!(
            FpduLayout::new(0, 65536, false),
            Err(FpduError::TooLong(65536))
        );
        // The largest ULPDU from position 4 puts its last marker past 65535.
        assert_eq!(FpduLayout::new(4, 65535, true), Err(FpduError::MarkerRange));
        assert!(FpduLayout::new(4, 65535, false).is_ok());
        assert_eq!(marker_bytes(0x1234), [0, 0, 0x12, 0x34]);
    }

    /// A tiny fixed-capacity collector for the tests (no alloc in the crate).
    mod heapless_vec {
        pub struct V(pub [(usize, u16); 8], pub usize);
        impl FromIterator<(usize, u16)> for V {
            fn from_iter<I: IntoIterator<Item = (usize, u16)>>(it: I) -> Self {
                let mut v = V([(0, 0); 8], 0);
                for x in it {
                    v.0[v.1] = x;
                    v.1 += 1;
                }
                v
            }
        }
    }

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    /// Encodes a stream of FPDUs, feeds it to the parser in random chunks,
    /// and checks every ULPDU comes back, for all four framings.
    #[test]
    fn seeded_stream_round_trip() {
        let mut seed = 0x0123_4567_89ab_cdefu64;
        for framing in [
            Framing {
                crc: false,
                markers: false,
            },
            Framing {
                crc: true,
                markers: false,
            },
            Framing {
                crc: false,
                markers: true,
            },
            Framing {
                crc: true,
                markers: true,
            },
        ] {
            for round in 0..20 {
                let start = if round % 2 == 0 {
                    0
                } else {
                    (xorshift(&mut seed) as u32) & !3
                };
                let mut wire = [0u8; 16384];
                let mut wn = 0;
                let mut pos = start;
                let mut lens = [0usize; 16];
                let mut payload = [0u8; 1500];
                for (k, len) in lens.iter_mut().enumerate() {
                    *len = (xorshift(&mut seed) % 1200) as usize;
                    for (j, b) in payload[..*len].iter_mut().enumerate() {
                        *b = (k * 31 + j) as u8;
                    }
                    let n = encode_fpdu(&mut wire[wn..], pos, &payload[..*len], framing).unwrap();
                    let l = FpduLayout::new(pos, *len, framing.markers).unwrap();
                    assert_eq!(n, l.wire_len);
                    pos = l.next_start();
                    wn += n;
                }
                let mut p = FpduParser::new(framing, start).unwrap();
                let mut buf = [0u8; fpdu_len(1500)];
                let mut at = 0;
                let mut got = 0;
                while at < wn {
                    let chunk = 1 + (xorshift(&mut seed) % 700) as usize;
                    let end = (at + chunk).min(wn);
                    let mut data = &wire[at..end];
                    while !data.is_empty() {
                        let (used, fpdu) = p.push(&mut buf, data).unwrap();
                        data = &data[used..];
                        if let Some(f) = fpdu {
                            let u = f.ulpdu(&buf);
                            assert_eq!(u.len(), lens[got]);
                            for (j, b) in u.iter().enumerate() {
                                assert_eq!(*b, (got * 31 + j) as u8);
                            }
                            got += 1;
                        }
                    }
                    at = end;
                }
                assert_eq!(got, lens.len());
                assert!(p.at_boundary());
                assert_eq!(p.position(), pos);
            }
        }
    }

    #[test]
    fn parser_skip_and_remaining() {
        let f = Framing {
            crc: true,
            markers: false,
        };
        let mut wire = [0u8; 3000];
        let a = encode_fpdu(&mut wire, 0, &[1u8; 1000], f).unwrap();
        let b = encode_fpdu(&mut wire[a..], a as u32, &[2u8; 600], f).unwrap();
        let mut buf = [0u8; 4096];
        let mut p = FpduParser::new(f, 0).unwrap();
        assert_eq!(p.remaining(), HDR_LEN);
        // The first FPDU taken from the stream by the caller...
        p.skip(a).unwrap();
        assert_eq!(p.position(), a as u32);
        assert_eq!(p.next_fpdu_start(), Some(a as u32));
        // ...the second parsed after it, in two pieces.
        assert_eq!(p.push(&mut buf, &wire[a..a + 1]).unwrap(), (1, None));
        assert_eq!(p.next_fpdu_start(), None);
        assert_eq!(p.push(&mut buf, &wire[a + 1..a + 10]).unwrap(), (9, None));
        assert_eq!(p.next_fpdu_start(), Some((a + b) as u32));
        assert!(!p.at_boundary());
        assert_eq!(p.remaining(), b - 10);
        assert_eq!(p.skip(b), Err(FpduError::Unaligned));
        let (n, got) = p.push(&mut buf, &wire[a + 10..a + b]).unwrap();
        assert_eq!(n, b - 10);
        assert_eq!(got.unwrap().start, a as u32);
        assert!(p.at_boundary());
        // Not with markers, not unaligned, not after an error.
        let mut m = FpduParser::new(
            Framing {
                crc: true,
                markers: true,
            },
            0,
        )
        .unwrap();
        assert_eq!(m.skip(a), Err(FpduError::Unaligned));
        assert_eq!(p.skip(a + 2), Err(FpduError::Unaligned));
        let mut bad = [0u8; 8];
        bad[1] = 1;
        let mut q = FpduParser::new(f, 0).unwrap();
        assert_eq!(q.push(&mut buf, &bad), Err(FpduError::Crc));
        assert_eq!(q.skip(8), Err(FpduError::Crc));
    }

    #[test]
    fn parser_errors() {
        let f = Framing {
            crc: true,
            markers: true,
        };
        let mut wire = [0u8; 2100];
        let n = encode_fpdu(&mut wire, 0, &[7u8; 2000], f).unwrap();
        let mut buf = [0u8; 4096];
        // Good.
        let mut p = FpduParser::new(f, 0).unwrap();
        assert_eq!(p.push(&mut buf, &wire[..n]).unwrap().0, n);
        // Bad CRC.
        let mut bad = wire;
        bad[100] ^= 0x80;
        let mut p = FpduParser::new(f, 0).unwrap();
        assert_eq!(p.push(&mut buf, &bad[..n]), Err(FpduError::Crc));
        assert_eq!(p.push(&mut buf, &bad[..4]), Err(FpduError::Crc));
        // A marker pointing elsewhere.
        let mut bad = wire;
        bad[512 + 3] ^= 4;
        let mut p = FpduParser::new(f, 0).unwrap();
        assert_eq!(p.push(&mut buf, &bad[..n]), Err(FpduError::Marker));
        assert_eq!(FpduError::Marker.term_code(), TermCode::LLP_FPDU_START);
        // Low two FPDUPTR bits and the reserved half are ignored... except
        // that the CRC covers them: check with CRC off.
        let g = Framing {
            crc: false,
            markers: true,
        };
        let n2 = encode_fpdu(&mut wire, 0, &[7u8; 2000], g).unwrap();
        let mut ok = wire;
        ok[512 + 3] |= 3;
        ok[512] = 0xff;
        let mut p = FpduParser::new(g, 0).unwrap();
        assert!(p.push(&mut buf, &ok[..n2]).unwrap().1.is_some());
        // Longer than the buffer.
        let mut p = FpduParser::new(f, 0).unwrap();
        let mut small = [0u8; 100];
        assert_eq!(
            p.push(&mut small, &wire[..n]),
            Err(FpduError::TooLong(2000))
        );
        assert_eq!(FpduParser::new(f, 6).err(), Some(FpduError::Unaligned));
        // A MULPDU limit below the buffer size (2001 would fit the buffer).
        let n = encode_fpdu(&mut wire, 0, &[7u8; 2000], f).unwrap();
        let mut p = FpduParser::new(f, 0).unwrap().with_max_ulpdu(1999);
        assert_eq!(p.push(&mut buf, &wire[..n]), Err(FpduError::TooLong(2000)));
        let mut p = FpduParser::new(f, 0).unwrap().with_max_ulpdu(2000);
        assert!(p.push(&mut buf, &wire[..n]).unwrap().1.is_some());
        // strip_markers undoes the insertion.
        let mut plain = [0u8; 2100];
        let k = strip_markers(&wire[..n2], 0, &mut plain);
        assert_eq!(k, fpdu_len(2000));
        assert_eq!(plain[..2], [0x07, 0xd0]);
        assert!(plain[2..2002].iter().all(|&b| b == 7));
    }
}
