// SPDX-License-Identifier: GPL-2.0

//! Out-of-order direct placement: the decision engine (RFC 5044 §4, §5;
//! RFC 5041 §5.1, §7; Balaji proposal §4.4.1).
//!
//! A TCP segment that arrives ahead of a hole is handed to [`scan`] with
//! the connection's receive state as known in order ([`Stream`]). The
//! engine finds the FPDUs the segment holds whole, checks their framing,
//! markers and CRC, parses their DDP/RDMAP headers and says, FPDU by FPDU,
//! either "place these payload bytes at this STag and tagged offset"
//! ([`Placement`]) or why not ([`Refusal`]). It owns no memory, never
//! allocates and never panics; the STag table is the caller's, which checks
//! each placement against its registration with [`Region::check`], records
//! it in a [`PlacedSet`] and only then copies the bytes.
//!
//! # Finding FPDUs in a segment
//!
//! Stream positions count from the first byte after the MPA start-up frames
//! ([`Stream::mpa_seq`]), as in [`super::mpa`]; FPDUs start on 4-byte
//! boundaries. Only an FPDU start that is *known* is used:
//!
//! 1. [`Stream::next_fpdu`], when it lies in the segment: a boundary the
//!    caller derived from framing it has read (the in-order parser's current
//!    FPDU length, the length fields of FPDUs queued in order, and the ends
//!    of the FPDUs earlier scans went through, [`Scan::next_start`]: the
//!    kernel's walk follows them through contiguous out-of-order data);
//! 2. with markers (RFC 5044 §4.3, every 512 stream bytes): where the first
//!    marker that points into the segment says (its FPDUPTR leads back to
//!    the ULPDU_Length field of the FPDU around it; 0 means the FPDU starts
//!    at the marker);
//! 3. the end of an FPDU found and verified from one of these (chaining).
//!
//! Nothing else: a segment's first byte is never assumed to start an
//! FPDU, even though an MPA-aware sender aligns FPDUs with segments (RFC
//! 5044 §5): the receiver cannot tell such a sender from one whose TCP cut
//! an FPDU, and the bytes after such a cut may be payload of a Send that
//! looks like a Write FPDU, CRC included (anyone can compute it). A segment
//! with no known start is refused ([`Refusal::NoFpduStart`]) and waits for
//! the in-order path; with markers, bytes before the first anchor too.
//!
//! Every FPDU must lie whole in the segment: the CRC covers all of it
//! (markers included), and nothing is placed that the CRC has not covered.
//!
//! # What is refused, and why
//!
//! A refusal is never a protocol error: the in-order path sees the same
//! bytes later, places them the ordinary way and sends any Terminate. So the
//! engine refuses whenever it is not sure:
//!
//! - CRC off: there is nothing to validate a guessed FPDU with (a marker
//!   alone does not prove the bytes), and a segment TCP later rejects
//!   must never have been placed;
//! - a segment not ahead of the in-order position, or beyond a 2^31 window;
//! - no trusted FPDU start, an unaligned one, a length over the receiver's
//!   limit or one that runs past the segment, a marker that disagrees with
//!   the FPDU it sits in, a bad CRC;
//! - untagged DDP segments (Sends, Read Requests, Terminate: their buffers
//!   and MSNs are consumed in order), RDMAP opcodes other than RDMA Write
//!   and RDMA Read Response, empty payloads, a TO range that wraps.
//!
//! # Bookkeeping
//!
//! The caller records the TCP sequence range of every FPDU it placed out of
//! order in a [`PlacedSet`]. When the in-order stream reaches an FPDU whose
//! range is fully recorded it parses its headers as usual (so completions
//! keep RFC 5040 order: the Last flag is acted on in order) but skips the
//! copy. A full set refuses to record; the caller then does not place, and
//! the in-order path copies: only speed is lost, never correctness.
//!
//! The kernel must call the engine only for segments TCP has accepted
//! (checksum verified, inside the window), under the socket lock that
//! serialises it with the in-order path.
//!
//! # Where the bytes lie
//!
//! [`scan`] reads a slice; [`scan_in`] reads any [`SegmentBytes`], which
//! the kernel implements over an skb of TCP's out-of-order queue: the
//! engine reads headers, markers and CRC fields a few bytes at a time and
//! has the CRC computed where the bytes lie, so a segment is never copied
//! to be scanned. Both make the same decisions.

use core::ops::Range;

use super::crc32c;
use super::ddp::{self, DdpError, Header};
use super::mpa::{self, FpduError, FpduLayout, Framing, CRC_LEN, HDR_LEN, MARKER_LEN};
use super::rdmap::{self, Control, Opcode};

/// Largest distance between two sequence numbers that are compared: half
/// the sequence space, as TCP's own `before()` / `after()` assume.
pub const MAX_WINDOW: u32 = 0x7fff_ffff;

/// Marker interval as a `usize`.
const INTERVAL: usize = mpa::MARKER_INTERVAL as usize;
/// Content bytes between two markers.
const BETWEEN: usize = INTERVAL - MARKER_LEN;
/// Offset of a tagged segment's payload from the ULPDU_Length field.
const PAYLOAD_OFF: usize = HDR_LEN + ddp::TAGGED_HDR_LEN;
/// The bytes of a placement's [`Placement::head`].
pub const HEAD_LEN: usize = PAYLOAD_OFF;

/// A segment's bytes where they lie, read by the engine a few bytes at a
/// time, with the CRC computed in place.
pub trait SegmentBytes {
    /// The number of bytes.
    fn size(&self) -> usize;
    /// Copies `out.len()` bytes from offset `off` into `out`; false (and
    /// `out` unspecified) when they are not all there.
    fn read(&self, off: usize, out: &mut [u8]) -> bool;
    /// The CRC32c of `len` bytes from offset `off` (as
    /// [`crc32c::checksum`] computes it), or `None` when they are not all
    /// there.
    fn crc32c(&self, off: usize, len: usize) -> Option<u32>;
}

impl SegmentBytes for [u8] {
    fn size(&self) -> usize {
        self.len()
    }

    fn read(&self, off: usize, out: &mut [u8]) -> bool {
        match off
            .checked_add(out.len())
            .and_then(|end| self.get(off..end))
        {
            Some(b) => {
                out.copy_from_slice(b);
                true
            }
            None => false,
        }
    }

    fn crc32c(&self, off: usize, len: usize) -> Option<u32> {
        let end = off.checked_add(len)?;
        self.get(off..end).map(crc32c::checksum)
    }
}

/// True when sequence number `a` comes before `b` (TCP's `before()`).
pub const fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// True when sequence number `a` comes after `b` (TCP's `after()`).
pub const fn after(a: u32, b: u32) -> bool {
    before(b, a)
}

/// A range of TCP sequence numbers `[start, end)`, modulo 2^32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqRange {
    /// First sequence number.
    pub start: u32,
    /// Sequence number just past the last one.
    pub end: u32,
}

impl SeqRange {
    /// The range `[start, end)`.
    pub const fn new(start: u32, end: u32) -> Self {
        Self { start, end }
    }

    /// Number of sequence numbers in the range (modulo 2^32).
    pub const fn len(&self) -> u32 {
        self.end.wrapping_sub(self.start)
    }

    /// True when the range is empty.
    pub const fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// The connection's receive state, as the in-order path knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    /// TCP sequence number of stream position 0: the first byte after the
    /// MPA start-up frames, where FPDUs and marker counting begin.
    pub mpa_seq: u32,
    /// CRC and markers of the receive direction.
    pub framing: Framing,
    /// Largest ULPDU accepted (the receiver's MULPDU).
    pub max_ulpdu: usize,
    /// Sequence number of the next byte the in-order path will consume.
    /// Segments must lie after it.
    pub rcv_nxt: u32,
    /// Sequence number of the next FPDU boundary at or after `rcv_nxt`,
    /// when the in-order parser knows it (it stands between FPDUs, or has
    /// read the current one's length). Bytes between `rcv_nxt` and it
    /// belong to the FPDU being received and hold no FPDU start.
    pub next_fpdu: Option<u32>,
}

/// Why a segment, or one FPDU in it, is not placed out of order. None of
/// these is a protocol error: the in-order path decides later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// CRC is off on the connection: nothing to validate with.
    CrcOff,
    /// The segment carries no payload.
    NoData,
    /// The segment does not lie after the in-order position.
    NotAhead,
    /// The segment ends more than [`MAX_WINDOW`] after the in-order
    /// position.
    OutOfWindow,
    /// [`Stream::next_fpdu`] lies before [`Stream::rcv_nxt`] or too far
    /// after it (the caller's state is inconsistent).
    BadState,
    /// The whole segment lies inside the FPDU the in-order parser is
    /// receiving.
    InsideKnownFpdu,
    /// No known FPDU start in the segment: none derived from framing read
    /// before, and no marker pointing into it.
    NoFpduStart,
    /// A known FPDU start not on a 4-byte stream boundary (or just after a
    /// marker position).
    NotAligned,
    /// A ULPDU length over the limit, or too short for a DDP header.
    BadLength,
    /// An FPDU runs past the end of the segment ([`Scan::next_start`] then
    /// says where it ends).
    Straddles,
    /// A marker's FPDUPTR disagrees with the FPDU it sits in.
    MarkerInconsistent,
    /// The MPA CRC does not verify.
    BadCrc,
    /// An untagged DDP segment (placed in order only).
    Untagged,
    /// DDP or RDMAP version not 1.
    BadVersion,
    /// An RDMAP opcode other than RDMA Write and RDMA Read Response.
    UnsupportedOpcode(u8),
    /// A tagged segment with no payload.
    Empty,
    /// The tagged offset plus the length wraps.
    ToWrap,
}

/// What a refusal is counted as: the reasons grouped as an operator reads
/// them (each its own counter in the kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalClass {
    /// No FPDU start known in the segment: it waits for the in-order path.
    NoStart,
    /// Framing the engine does not take: an FPDU not whole in the bytes
    /// scanned, alignment, length, markers, CRC, versions, CRC off, a
    /// segment outside the window.
    Framing,
    /// Left to the in-order path: untagged DDP segments, RDMAP opcodes
    /// other than RDMA Write and Read Response, empty payloads (and, in the
    /// kernel, an FPDU its record of placed FPDUs has no room for).
    InOrderOnly,
    /// The registration does not take it: unknown or foreign STag, no
    /// access, out of bounds, a TO range that wraps (and, in the kernel, a
    /// registration the peer may invalidate, or not an outstanding Read's
    /// sink).
    Access,
}

impl Refusal {
    /// The class this refusal counts under.
    pub const fn class(self) -> RefusalClass {
        match self {
            Refusal::NoFpduStart | Refusal::InsideKnownFpdu => RefusalClass::NoStart,
            Refusal::Untagged | Refusal::UnsupportedOpcode(_) | Refusal::Empty => {
                RefusalClass::InOrderOnly
            }
            Refusal::ToWrap => RefusalClass::Access,
            Refusal::CrcOff
            | Refusal::Straddles
            | Refusal::NoData
            | Refusal::NotAhead
            | Refusal::OutOfWindow
            | Refusal::BadState
            | Refusal::NotAligned
            | Refusal::BadLength
            | Refusal::MarkerInconsistent
            | Refusal::BadCrc
            | Refusal::BadVersion => RefusalClass::Framing,
        }
    }
}

/// One refused FPDU (or segment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// Why.
    pub reason: Refusal,
    /// The FPDU's sequence range, when its framing was valid.
    pub fpdu: Option<SeqRange>,
}

/// The access a placement needs from its registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// RDMA Write: the peer writes (remote write).
    RemoteWrite,
    /// RDMA Read Response: the data of a Read this side asked for goes to
    /// its own sink buffer (local write).
    LocalWrite,
}

/// A decision to place one tagged DDP segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// RDMA Write or RDMA Read Response.
    pub opcode: Opcode,
    /// The sink STag.
    pub stag: u32,
    /// Tagged offset of the first payload byte.
    pub to: u64,
    /// Payload bytes (markers excluded).
    pub len: usize,
    /// The DDP Last flag (acted on in order, not here).
    pub last: bool,
    /// The payload's bytes within the segment, first to last; with markers
    /// the range may include marker bytes, which [`Placement::pieces`]
    /// skips.
    pub bytes: Range<usize>,
    /// The TCP sequence range of the whole FPDU (to record in a
    /// [`PlacedSet`]).
    pub fpdu: SeqRange,
    /// The FPDU's first bytes, markers removed: its MPA length and tagged
    /// DDP/RDMAP header, which the CRC covered (for the caller to know the
    /// FPDU again when the in-order path meets it).
    pub head: [u8; HEAD_LEN],
    /// Stream position of the segment's first byte modulo 512, with
    /// markers.
    phase: Option<usize>,
}

impl Placement {
    /// The access this placement needs.
    pub const fn need(&self) -> Need {
        match self.opcode {
            Opcode::ReadResponse => Need::LocalWrite,
            _ => Need::RemoteWrite,
        }
    }

    /// The contiguous pieces of the payload within the segment, each with
    /// its tagged offset (one piece without markers).
    pub fn pieces(&self) -> Pieces {
        Pieces {
            at: self.bytes.start,
            left: self.len,
            to: self.to,
            phase: self.phase,
        }
    }
}

/// A contiguous piece of a placement's payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Tagged offset of its first byte.
    pub to: u64,
    /// Its bytes within the segment.
    pub bytes: Range<usize>,
}

/// Iterator over a placement's pieces ([`Placement::pieces`]).
#[derive(Debug, Clone)]
pub struct Pieces {
    at: usize,
    left: usize,
    to: u64,
    phase: Option<usize>,
}

impl Iterator for Pieces {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        if self.left == 0 {
            return None;
        }
        let mut room = self.left;
        if let Some(phase) = self.phase {
            let m = pos_mod(phase, self.at);
            if m < MARKER_LEN {
                self.at = self.at.checked_add(MARKER_LEN - m)?;
            }
            room = room.min(INTERVAL - pos_mod(phase, self.at));
        }
        let end = self.at.checked_add(room)?;
        let piece = Piece {
            to: self.to,
            bytes: self.at..end,
        };
        self.at = end;
        self.left -= room;
        self.to = self.to.wrapping_add(room as u64);
        Some(piece)
    }
}

/// Stream position modulo 512 of segment offset `off`.
const fn pos_mod(phase: usize, off: usize) -> usize {
    (phase + off % INTERVAL) % INTERVAL
}

/// An FPDU found whole in a segment (offsets within the segment).
#[derive(Debug, Clone, Copy)]
struct Found {
    start: usize,
    hdr: usize,
    end: usize,
    ulpdu_len: usize,
}

/// The FPDUs of one out-of-order segment, in order: an iterator of
/// placements and refusals. Ends after the last whole FPDU, or after the
/// first framing error (a [`Refused`] without an FPDU range).
#[derive(Debug)]
pub struct Scan<'a, B: SegmentBytes + ?Sized = [u8]> {
    payload: &'a B,
    seq: u32,
    framing: Framing,
    max_ulpdu: usize,
    /// Stream position of the segment's first byte.
    pos: u32,
    /// Segment offset of the next FPDU.
    next: usize,
    done: bool,
    /// Why the scan ended early (the FPDU at `next`).
    stop: Option<Refusal>,
}

// By hand: a derived `Clone` would ask `B: Clone`, which `[u8]` is not.
impl<B: SegmentBytes + ?Sized> Clone for Scan<'_, B> {
    fn clone(&self) -> Self {
        Self {
            payload: self.payload,
            seq: self.seq,
            framing: self.framing,
            max_ulpdu: self.max_ulpdu,
            pos: self.pos,
            next: self.next,
            done: self.done,
            stop: self.stop,
        }
    }
}

/// Looks at one segment that arrived ahead of the in-order position:
/// `seq` is its TCP sequence number, `payload` its TCP payload. Returns the
/// FPDUs it holds as an iterator of decisions, or why none of the segment
/// can be placed.
pub fn scan<'a>(st: &Stream, seq: u32, payload: &'a [u8]) -> Result<Scan<'a>, Refusal> {
    scan_in(st, seq, payload)
}

/// As [`scan`], for a segment whose bytes are read where they lie.
pub fn scan_in<'a, B: SegmentBytes + ?Sized>(
    st: &Stream,
    seq: u32,
    payload: &'a B,
) -> Result<Scan<'a, B>, Refusal> {
    if !st.framing.crc {
        return Err(Refusal::CrcOff);
    }
    let size = payload.size();
    if size == 0 {
        return Err(Refusal::NoData);
    }
    if !after(seq, st.rcv_nxt) {
        return Err(Refusal::NotAhead);
    }
    let ahead = seq.wrapping_sub(st.rcv_nxt);
    let len32 = u32::try_from(size).map_err(|_| Refusal::OutOfWindow)?;
    match ahead.checked_add(len32) {
        Some(e) if e <= MAX_WINDOW => {}
        _ => return Err(Refusal::OutOfWindow),
    }
    let mut s = Scan {
        payload,
        seq,
        framing: st.framing,
        max_ulpdu: st.max_ulpdu,
        pos: seq.wrapping_sub(st.mpa_seq),
        next: 0,
        done: false,
        stop: None,
    };
    // 1. The boundary the in-order parser knows.
    if let Some(b) = st.next_fpdu {
        if b.wrapping_sub(st.rcv_nxt) > MAX_WINDOW {
            return Err(Refusal::BadState);
        }
        if !before(b, seq) {
            let off = b.wrapping_sub(seq) as usize;
            if off >= size {
                return Err(Refusal::InsideKnownFpdu);
            }
            s.next = off;
            return Ok(s);
        }
    }
    // 2. Markers: the first marker that points into the segment (its
    // FPDUPTR leads to an FPDU start at or after the segment's first byte)
    // anchors it. Nothing before the anchor is looked at: bytes there may
    // be the payload of an FPDU that began before the segment.
    if st.framing.markers {
        let phase = s.phase();
        let mut o = (INTERVAL - phase) % INTERVAL;
        let mut m = [0u8; MARKER_LEN];
        while payload.read(o, &mut m) {
            let ptr = usize::from(u16::from_be_bytes([m[2], m[3]])) & !3;
            let start = if ptr == 0 {
                Some(o)
            } else {
                match o.checked_sub(ptr) {
                    // A header never sits where a marker does.
                    Some(h) if pos_mod(phase, h) == 0 => return Err(Refusal::MarkerInconsistent),
                    // A header just after a marker position: that marker
                    // opens the FPDU.
                    Some(h) if pos_mod(phase, h) == MARKER_LEN => h.checked_sub(MARKER_LEN),
                    Some(h) => Some(h),
                    None => None,
                }
            };
            if let Some(a) = start {
                s.next = a;
                return Ok(s);
            }
            o = match o.checked_add(INTERVAL) {
                Some(n) => n,
                None => break,
            };
        }
    }
    // 3. No FPDU start known: the segment waits for the in-order path. Its
    // first byte is not assumed to start an FPDU (a sender's segment
    // boundary may fall inside an FPDU, before payload bytes that look
    // like one; the CRC proves nothing, anyone can compute it).
    Err(Refusal::NoFpduStart)
}

/// Carries a known FPDU start `k` (a sequence number) past the FPDUs the
/// receiver holds in order before `rcv_nxt`, by their length fields:
/// `len_at(seq)` reads the ULPDU_Length field at `seq` (`None` when its
/// bytes are not all there). Gives the known start at or after `rcv_nxt`,
/// or `None`: a field missing, a length over `max_ulpdu`, more than `steps`
/// FPDUs, markers (their layout would have to be read too), or `k` before
/// `floor` (the in-order read position) or more than [`MAX_WINDOW`] after
/// it.
pub fn carry_start(
    mut k: u32,
    floor: u32,
    rcv_nxt: u32,
    markers: bool,
    max_ulpdu: usize,
    steps: usize,
    mut len_at: impl FnMut(u32) -> Option<u16>,
) -> Option<u32> {
    if k.wrapping_sub(floor) > MAX_WINDOW {
        return None;
    }
    for _ in 0..=steps {
        if !before(k, rcv_nxt) {
            return Some(k);
        }
        if markers {
            return None;
        }
        let u = usize::from(len_at(k)?);
        if u > max_ulpdu {
            return None;
        }
        k = k.wrapping_add(mpa::fpdu_len(u) as u32);
    }
    None
}

/// Where the walk from a known FPDU start resumes: the later of the start
/// derived now (`known`) and the one an earlier walk reached (`reached`),
/// both FPDU starts of the same stream; `reached` alone while it is not
/// before `floor` (the in-order read position).
pub fn resume_at(known: Option<u32>, reached: Option<u32>, floor: u32) -> Option<u32> {
    match (known, reached) {
        (Some(k), Some(c)) if after(c, k) => Some(c),
        (Some(k), _) => Some(k),
        (None, Some(c)) if !before(c, floor) => Some(c),
        _ => None,
    }
}

fn be16_at<B: SegmentBytes + ?Sized>(b: &B, at: usize) -> usize {
    let mut x = [0u8; 2];
    if b.read(at, &mut x) {
        usize::from(u16::from_be_bytes(x))
    } else {
        0
    }
}

impl<B: SegmentBytes + ?Sized> Scan<'_, B> {
    fn phase(&self) -> usize {
        self.pos as usize % INTERVAL
    }

    fn marker_phase(&self) -> Option<usize> {
        if self.framing.markers {
            Some(self.phase())
        } else {
            None
        }
    }

    /// Segment offset of content byte `c` of the FPDU whose ULPDU_Length
    /// field is at offset `hdr` (markers skipped).
    fn content_off(&self, hdr: usize, c: usize) -> Option<usize> {
        let Some(phase) = self.marker_phase() else {
            return hdr.checked_add(c);
        };
        let to_marker = INTERVAL - pos_mod(phase, hdr);
        if c < to_marker {
            return hdr.checked_add(c);
        }
        let rest = c - to_marker;
        hdr.checked_add(to_marker)?
            .checked_add((rest / BETWEEN).checked_mul(INTERVAL)?)?
            .checked_add(MARKER_LEN + rest % BETWEEN)
    }

    /// Validates the FPDU starting at segment offset `start`.
    fn fpdu_at(&self, start: usize, check_crc: bool) -> Result<Found, Refusal> {
        let pos = self.pos.wrapping_add(start as u32);
        if pos % 4 != 0 {
            return Err(Refusal::NotAligned);
        }
        let m = pos % mpa::MARKER_INTERVAL;
        if self.framing.markers && m != 0 && m < MARKER_LEN as u32 + 1 {
            // Just after a marker position: the marker opens the FPDU.
            return Err(Refusal::NotAligned);
        }
        let leading = self.framing.markers && m == 0;
        let hdr = if leading {
            if self.payload.size() < start.saturating_add(MARKER_LEN + HDR_LEN) {
                return Err(Refusal::Straddles);
            }
            if be16_at(self.payload, start + 2) & !3 != 0 {
                return Err(Refusal::MarkerInconsistent);
            }
            start + MARKER_LEN
        } else {
            start
        };
        if self.payload.size() < hdr.saturating_add(HDR_LEN) {
            return Err(Refusal::Straddles);
        }
        let ulpdu_len = be16_at(self.payload, hdr);
        if ulpdu_len > self.max_ulpdu {
            return Err(Refusal::BadLength);
        }
        let layout =
            FpduLayout::new(pos, ulpdu_len, self.framing.markers).map_err(|e| match e {
                FpduError::Unaligned => Refusal::NotAligned,
                _ => Refusal::BadLength,
            })?;
        let end = start
            .checked_add(layout.wire_len)
            .ok_or(Refusal::Straddles)?;
        if end > self.payload.size() {
            return Err(Refusal::Straddles);
        }
        for (off, ptr) in layout.markers() {
            let at = start.saturating_add(off).saturating_add(2);
            if be16_at(self.payload, at) & !3 != usize::from(ptr) {
                return Err(Refusal::MarkerInconsistent);
            }
        }
        if check_crc {
            let body = layout
                .wire_len
                .checked_sub(CRC_LEN)
                .ok_or(Refusal::BadLength)?;
            let mut field = [0u8; CRC_LEN];
            if !self.payload.read(start + body, &mut field) {
                return Err(Refusal::BadLength);
            }
            if self.payload.crc32c(start, body) != Some(crc32c::from_wire(field)) {
                return Err(Refusal::BadCrc);
            }
        }
        Ok(Found {
            start,
            hdr,
            end,
            ulpdu_len,
        })
    }

    /// Where the next FPDU starts after the ones this scan went through,
    /// as a TCP sequence number: call it once the iterator has ended. The
    /// FPDUs were found from a known start, so the end of each is known
    /// too; an FPDU that runs past the segment's end is passed over by its
    /// length field (its own bytes go in order), and one whose length field
    /// is not all in the segment leaves its start. `None` after any other
    /// framing error: nothing after it is known (the in-order path reports
    /// the error).
    pub fn next_start(&self) -> Option<u32> {
        match self.stop {
            None => Some(self.seq_of(self.next)),
            Some(Refusal::Straddles) => self.straddle_end(self.next),
            Some(_) => None,
        }
    }

    /// The end of the FPDU at segment offset `start` that runs past the
    /// segment's end (its start while its length field is incomplete).
    fn straddle_end(&self, start: usize) -> Option<u32> {
        let pos = self.pos.wrapping_add(start as u32);
        let hdr = if self.framing.markers && pos % mpa::MARKER_INTERVAL == 0 {
            start.checked_add(MARKER_LEN)?
        } else {
            start
        };
        let mut h = [0u8; HDR_LEN];
        if !self.payload.read(hdr, &mut h) {
            return Some(self.seq_of(start));
        }
        let ulpdu_len = usize::from(u16::from_be_bytes(h));
        if ulpdu_len > self.max_ulpdu {
            return None;
        }
        let layout = FpduLayout::new(pos, ulpdu_len, self.framing.markers).ok()?;
        Some(self.seq_of(start).wrapping_add(layout.wire_len as u32))
    }

    fn seq_of(&self, off: usize) -> u32 {
        self.seq.wrapping_add(off as u32)
    }

    /// The DDP/RDMAP decision for a whole, verified FPDU.
    fn classify(&self, f: &Found) -> Result<Placement, Refusal> {
        // ULPDU_Length and the tagged DDP header, markers removed: read
        // with room for the one marker they can hold.
        let mut h = [0u8; PAYLOAD_OFF];
        let mut raw = [0u8; PAYLOAD_OFF + MARKER_LEN];
        let have = f.end.saturating_sub(f.hdr).min(raw.len());
        let wire = raw.get_mut(..have).unwrap_or(&mut []);
        if !self.payload.read(f.hdr, wire) {
            return Err(Refusal::BadLength);
        }
        let n = if self.framing.markers {
            mpa::strip_markers(wire, self.pos.wrapping_add(f.hdr as u32), &mut h)
        } else {
            let n = wire.len().min(h.len());
            if let (Some(d), Some(s)) = (h.get_mut(..n), wire.get(..n)) {
                d.copy_from_slice(s);
            }
            n
        };
        let ulpdu = h.get(HDR_LEN..n.min(HDR_LEN + f.ulpdu_len)).unwrap_or(&[]);
        let ctrl = *ulpdu.first().ok_or(Refusal::BadLength)?;
        if ctrl & ddp::FLAG_TAGGED == 0 {
            return Err(Refusal::Untagged);
        }
        let t = match Header::parse(ulpdu) {
            Ok((Header::Tagged(t), _)) => t,
            Ok((Header::Untagged(_), _)) => return Err(Refusal::Untagged),
            Err(DdpError::BadVersion { .. }) => return Err(Refusal::BadVersion),
            Err(_) => return Err(Refusal::BadLength),
        };
        let ctl = Control::parse(t.ulp_ctrl);
        if ctl.version != rdmap::VERSION {
            return Err(Refusal::BadVersion);
        }
        let opcode = match Opcode::from_u8(ctl.opcode) {
            Some(op) if op.is_tagged() => op,
            _ => return Err(Refusal::UnsupportedOpcode(ctl.opcode)),
        };
        let len = f.ulpdu_len.saturating_sub(ddp::TAGGED_HDR_LEN);
        if len == 0 {
            return Err(Refusal::Empty);
        }
        ddp::check_to(t.to, len).map_err(|_| Refusal::ToWrap)?;
        let first = self
            .content_off(f.hdr, PAYLOAD_OFF)
            .ok_or(Refusal::BadLength)?;
        let last = self
            .content_off(f.hdr, PAYLOAD_OFF + len - 1)
            .ok_or(Refusal::BadLength)?;
        if last >= f.end {
            return Err(Refusal::BadLength);
        }
        Ok(Placement {
            opcode,
            stag: t.stag,
            to: t.to,
            len,
            last: t.last,
            bytes: first..last + 1,
            fpdu: SeqRange::new(self.seq_of(f.start), self.seq_of(f.end)),
            head: h,
            phase: self.marker_phase(),
        })
    }
}

impl<B: SegmentBytes + ?Sized> Iterator for Scan<'_, B> {
    type Item = Result<Placement, Refused>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.next >= self.payload.size() {
            self.done = true;
            return None;
        }
        let f = match self.fpdu_at(self.next, true) {
            Ok(f) => f,
            Err(reason) => {
                self.done = true;
                self.stop = Some(reason);
                return Some(Err(Refused { reason, fpdu: None }));
            }
        };
        self.next = f.end;
        Some(self.classify(&f).map_err(|reason| Refused {
            reason,
            fpdu: Some(SeqRange::new(self.seq_of(f.start), self.seq_of(f.end))),
        }))
    }
}

/// Why a registration refuses a placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessError {
    /// The placement names another STag.
    WrongStag,
    /// The registration lacks the access the placement needs.
    NoAccess,
    /// Tagged offset plus length wraps the 64-bit TO space.
    ToWrap,
    /// A byte falls outside the registration.
    Bounds,
}

/// The part of a registration (or of an outstanding RDMA Read's sink) a
/// placement is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// Its STag.
    pub stag: u32,
    /// Tagged offset of its first byte.
    pub base_to: u64,
    /// Its length in bytes.
    pub len: u64,
    /// The peer may write it (RDMA Write).
    pub remote_write: bool,
    /// This side may write it (the sink of its own RDMA Read).
    pub local_write: bool,
}

impl Region {
    /// Checks `len` bytes at tagged offset `to` of `stag` needing `need`;
    /// returns the offset of `to` in the region. All of `[to, to + len)`
    /// must lie in `[base_to, base_to + len)` (a region whose end would
    /// pass 2^64 ends at 2^64 - 1); a zero-length access is in bounds from
    /// the first byte to just past the last.
    pub fn check(&self, stag: u32, to: u64, len: usize, need: Need) -> Result<u64, AccessError> {
        if stag != self.stag {
            return Err(AccessError::WrongStag);
        }
        let allowed = match need {
            Need::RemoteWrite => self.remote_write,
            Need::LocalWrite => self.local_write,
        };
        if !allowed {
            return Err(AccessError::NoAccess);
        }
        let len = u64::try_from(len).map_err(|_| AccessError::ToWrap)?;
        let end = to.checked_add(len).ok_or(AccessError::ToWrap)?;
        let region_end = self.base_to.saturating_add(self.len);
        if to < self.base_to || end > region_end {
            return Err(AccessError::Bounds);
        }
        Ok(to - self.base_to)
    }

    /// [`Region::check`] for a placement.
    pub fn check_placement(&self, p: &Placement) -> Result<u64, AccessError> {
        self.check(p.stag, p.to, p.len, p.need())
    }
}

/// Why a range cannot be recorded in a [`PlacedSet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetError {
    /// An empty range.
    Empty,
    /// The range starts before the set's floor (the in-order path has
    /// consumed those bytes).
    Behind,
    /// The range ends more than [`MAX_WINDOW`] after the floor.
    TooFar,
    /// All entries are in use and the range touches none of them.
    Full,
}

/// The stream ranges placed out of order and not yet consumed in order: at
/// most `N` disjoint, non-adjacent ranges of TCP sequence numbers, all
/// within [`MAX_WINDOW`] after a floor (the in-order consumption point),
/// kept sorted. Adjacent and overlapping ranges merge on insertion.
#[derive(Debug, Clone)]
pub struct PlacedSet<const N: usize> {
    floor: u32,
    ranges: [SeqRange; N],
    count: usize,
}

impl<const N: usize> PlacedSet<N> {
    /// An empty set whose floor is `floor`.
    pub const fn new(floor: u32) -> Self {
        Self {
            floor,
            ranges: [SeqRange::new(0, 0); N],
            count: 0,
        }
    }

    /// The floor: nothing before it is recorded.
    pub const fn floor(&self) -> u32 {
        self.floor
    }

    /// Number of ranges held.
    pub const fn len(&self) -> usize {
        self.count
    }

    /// True when no range is held.
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// True when every entry is in use.
    pub const fn is_full(&self) -> bool {
        self.count >= N
    }

    /// The ranges, in sequence order.
    pub fn ranges(&self) -> &[SeqRange] {
        self.ranges.get(..self.count).unwrap_or(&[])
    }

    /// Offset of `seq` from the floor.
    const fn rel(&self, seq: u32) -> u32 {
        seq.wrapping_sub(self.floor)
    }

    /// The range as offsets from the floor, if it is non-empty and lies
    /// within the window.
    fn rel_range(&self, r: SeqRange) -> Result<(u32, u32), SetError> {
        if r.is_empty() {
            return Err(SetError::Empty);
        }
        let (a, b) = (self.rel(r.start), self.rel(r.end));
        if a > MAX_WINDOW {
            return Err(SetError::Behind);
        }
        if b > MAX_WINDOW || b < a {
            return Err(SetError::TooFar);
        }
        Ok((a, b))
    }

    /// Records `r` as placed, merging it with the ranges it overlaps or
    /// touches. On error the set is unchanged.
    pub fn insert(&mut self, r: SeqRange) -> Result<(), SetError> {
        let (mut a, mut b) = self.rel_range(r)?;
        let mut out = [SeqRange::new(0, 0); N];
        let mut n = 0;
        let mut pending = true;
        for x in self.ranges() {
            let (xa, xb) = (self.rel(x.start), self.rel(x.end));
            if xb < a {
                // Wholly before the new range.
            } else if xa > b {
                if pending {
                    *out.get_mut(n).ok_or(SetError::Full)? = self.abs(a, b);
                    n += 1;
                    pending = false;
                }
            } else {
                a = a.min(xa);
                b = b.max(xb);
                continue;
            }
            *out.get_mut(n).ok_or(SetError::Full)? = *x;
            n += 1;
        }
        if pending {
            *out.get_mut(n).ok_or(SetError::Full)? = self.abs(a, b);
            n += 1;
        }
        self.ranges = out;
        self.count = n;
        Ok(())
    }

    const fn abs(&self, a: u32, b: u32) -> SeqRange {
        SeqRange::new(self.floor.wrapping_add(a), self.floor.wrapping_add(b))
    }

    /// True when every sequence number of `r` is recorded. False for an
    /// empty range or one outside the window (the caller then copies).
    pub fn contains(&self, r: SeqRange) -> bool {
        let Ok((a, b)) = self.rel_range(r) else {
            return false;
        };
        self.ranges()
            .iter()
            .any(|x| self.rel(x.start) <= a && b <= self.rel(x.end))
    }

    /// True when any sequence number of `r` is recorded.
    pub fn overlaps(&self, r: SeqRange) -> bool {
        let Ok((a, b)) = self.rel_range(r) else {
            return false;
        };
        self.ranges()
            .iter()
            .any(|x| self.rel(x.start) < b && a < self.rel(x.end))
    }

    /// Moves the floor to `to` (the in-order path consumed everything
    /// before it): ranges below it are dropped, one across it is cut. A
    /// `to` before the floor, or more than [`MAX_WINDOW`] after it, is
    /// ignored.
    pub fn advance(&mut self, to: u32) {
        let t = self.rel(to);
        if t == 0 || t > MAX_WINDOW {
            return;
        }
        let mut out = [SeqRange::new(0, 0); N];
        let mut n = 0;
        for x in self.ranges() {
            let (xa, xb) = (self.rel(x.start), self.rel(x.end));
            if xb <= t {
                continue;
            }
            if let Some(slot) = out.get_mut(n) {
                *slot = self.abs(xa.max(t), xb);
                n += 1;
            }
        }
        self.ranges = out;
        self.count = n;
        self.floor = to;
    }

    /// Removes `r` (cut to start at the floor; empty: nothing): it leaves every range it
    /// overlaps, a range split in two when `r` lies inside one; the upper
    /// piece is dropped when no entry is left for it.
    pub fn remove(&mut self, r: SeqRange) {
        let (a, b) = (self.rel(r.start), self.rel(r.end));
        if b == 0 || b > MAX_WINDOW {
            return;
        }
        let a = if a > MAX_WINDOW { 0 } else { a };
        if a >= b {
            return;
        }
        let mut out = [SeqRange::new(0, 0); N];
        let mut n = 0;
        let mut push = |xa: u32, xb: u32| {
            if let Some(slot) = out.get_mut(n) {
                *slot = self.abs(xa, xb);
                n += 1;
            }
        };
        for x in self.ranges() {
            let (xa, xb) = (self.rel(x.start), self.rel(x.end));
            if xb <= a || b <= xa {
                push(xa, xb);
                continue;
            }
            if xa < a {
                push(xa, a);
            }
            if b < xb {
                push(b, xb);
            }
        }
        self.ranges = out;
        self.count = n;
    }
}

/// The gaps the walk of TCP's out-of-order queue passed over: at most `N`
/// disjoint, non-adjacent ranges of sequence numbers, kept sorted, all
/// within [`MAX_WINDOW`] after a floor (the in-order consumption point),
/// where TCP held nothing when the walk went past. A segment that lands in
/// one later (a retransmission, or one another overtook) lies behind the
/// walk's high-water mark, ahead of a hole if an earlier gap is still
/// open: the walk looks into each gap on each run, scans what it finds
/// there and removes it from the gap ([`Gaps::remove`]). Gaps the
/// in-order path reached go ([`Gaps::advance`]). With all `N` in use a new
/// gap is not recorded; what fills it later waits for the in-order path,
/// as does a piece cut off a gap when no entry is left for it.
#[derive(Debug, Clone)]
pub struct Gaps<const N: usize>(PlacedSet<N>);

impl<const N: usize> Gaps<N> {
    /// No gap, the floor at `floor`.
    pub const fn new(floor: u32) -> Self {
        Self(PlacedSet::new(floor))
    }

    /// The gaps, in sequence order.
    pub fn ranges(&self) -> &[SeqRange] {
        self.0.ranges()
    }

    /// Gap `i` in sequence order.
    pub fn get(&self, i: usize) -> Option<SeqRange> {
        self.ranges().get(i).copied()
    }

    /// Records the gap `r` (cut to start at the floor), merged with the
    /// gaps it overlaps or touches: false (nothing recorded) when it is
    /// empty, outside the window, or all entries are in use and it touches
    /// none.
    pub fn add(&mut self, r: SeqRange) -> bool {
        let floor = self.0.floor();
        let start = if r.start.wrapping_sub(floor) > MAX_WINDOW {
            floor
        } else {
            r.start
        };
        self.0.insert(SeqRange::new(start, r.end)).is_ok()
    }

    /// `r` was scanned: it leaves every gap it overlaps ([`PlacedSet::remove`]).
    pub fn remove(&mut self, r: SeqRange) {
        self.0.remove(r);
    }

    /// Moves the floor to `to` ([`PlacedSet::advance`]).
    pub fn advance(&mut self, to: u32) {
        self.0.advance(to);
    }

    /// No gap, the floor where it is.
    pub fn clear(&mut self) {
        self.0 = PlacedSet::new(self.0.floor());
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::mpa::{encode_fpdu, FpduParser};
    use crate::rdmap::Segment;
    use std::vec::Vec;

    const STAG: u32 = 0x0001_2300;
    const BASE: u64 = 0x7f00_0000_0000;
    const REGION_LEN: usize = 256 * 1024;

    const CRC: Framing = Framing {
        crc: true,
        markers: false,
    };
    const CRC_MARKERS: Framing = Framing {
        crc: true,
        markers: true,
    };

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    fn tagged(op: Opcode, stag: u32, to: u64, last: bool, data: &[u8]) -> Vec<u8> {
        let mut u = std::vec![0u8; ddp::TAGGED_HDR_LEN];
        rdmap::tagged_header(op, last, stag, to)
            .unwrap()
            .encode(&mut u)
            .unwrap();
        u.extend_from_slice(data);
        u
    }

    fn send(msn: u32, data: &[u8]) -> Vec<u8> {
        let mut u = std::vec![0u8; ddp::UNTAGGED_HDR_LEN];
        rdmap::untagged_header(Opcode::Send, true, msn, 0, 0)
            .unwrap()
            .encode(&mut u)
            .unwrap();
        u.extend_from_slice(data);
        u
    }

    /// A wire image of FPDUs from stream position `pos`, and each FPDU's
    /// byte range in it.
    struct Wire {
        bytes: Vec<u8>,
        fpdus: Vec<Range<usize>>,
    }

    fn encode(framing: Framing, pos: u32, ulpdus: &[Vec<u8>]) -> Wire {
        let mut bytes = Vec::new();
        let mut fpdus = Vec::new();
        let mut p = pos;
        for u in ulpdus {
            let l = FpduLayout::new(p, u.len(), framing.markers).unwrap();
            let at = bytes.len();
            bytes.resize(at + l.wire_len, 0);
            assert_eq!(encode_fpdu(&mut bytes[at..], p, u, framing), Ok(l.wire_len));
            fpdus.push(at..at + l.wire_len);
            p = l.next_start();
        }
        Wire { bytes, fpdus }
    }

    /// RDMA Writes of `sizes` bytes each, back to back in the region; the
    /// expected region contents.
    fn writes(sizes: &[usize], seed: u64) -> (Vec<Vec<u8>>, Vec<u8>) {
        let mut s = seed | 1;
        let mut region = std::vec![0u8; REGION_LEN];
        let mut ulpdus = Vec::new();
        let mut at = 0;
        for (k, &n) in sizes.iter().enumerate() {
            let data: Vec<u8> = (0..n).map(|_| xorshift(&mut s) as u8).collect();
            region[at..at + n].copy_from_slice(&data);
            let last = k + 1 == sizes.len();
            ulpdus.push(tagged(Opcode::Write, STAG, BASE + at as u64, last, &data));
            at += n;
        }
        (ulpdus, region)
    }

    fn stream(mpa_seq: u32, framing: Framing) -> Stream {
        Stream {
            mpa_seq,
            framing,
            max_ulpdu: 65535,
            rcv_nxt: mpa_seq,
            next_fpdu: Some(mpa_seq),
        }
    }

    fn region() -> Region {
        Region {
            stag: STAG,
            base_to: BASE,
            len: REGION_LEN as u64,
            remote_write: true,
            local_write: false,
        }
    }

    /// A segment's bytes in pieces of `step`, `step + 1`, ... bytes, read
    /// as the kernel reads an skb's.
    struct Scattered(Vec<Vec<u8>>);

    impl Scattered {
        fn new(b: &[u8], step: usize) -> Self {
            let mut v = Vec::new();
            let (mut at, mut n) = (0, step.max(1));
            while at < b.len() {
                let e = (at + n).min(b.len());
                v.push(b[at..e].to_vec());
                at = e;
                n += 1;
            }
            Self(v)
        }

        /// The pieces of `len` bytes from `off`, or `None` past the end.
        fn pieces(&self, off: usize, len: usize) -> Option<Vec<&[u8]>> {
            let mut out = Vec::new();
            let (mut base, mut off, mut len) = (0, off, len);
            for p in &self.0 {
                let end = base + p.len();
                if len > 0 && off < end {
                    let a = off - base;
                    let n = (p.len() - a).min(len);
                    out.push(&p[a..a + n]);
                    off += n;
                    len -= n;
                }
                base = end;
            }
            (len == 0).then_some(out)
        }
    }

    impl SegmentBytes for Scattered {
        fn size(&self) -> usize {
            self.0.iter().map(Vec::len).sum()
        }

        fn read(&self, off: usize, out: &mut [u8]) -> bool {
            let Some(ps) = self.pieces(off, out.len()) else {
                return false;
            };
            let mut at = 0;
            for p in ps {
                out[at..at + p.len()].copy_from_slice(p);
                at += p.len();
            }
            true
        }

        fn crc32c(&self, off: usize, len: usize) -> Option<u32> {
            let mut c = crc32c::Crc32c::new();
            for p in self.pieces(off, len)? {
                c = c.update(p);
            }
            Some(c.finish())
        }
    }

    /// What a run of the kernel's out-of-order and in-order paths did.
    #[derive(Debug, Default)]
    struct Outcome {
        ooo_bytes: usize,
        ooo_fpdus: usize,
        inorder_bytes: usize,
        refusals: Vec<Refusal>,
    }

    impl Outcome {
        /// One scan of segment `seg` (cut `i`) at `seq`: each placement
        /// checked, recorded, then copied into `mem`.
        #[allow(clippy::too_many_arguments)]
        fn scan(
            &mut self,
            st: &Stream,
            seq: u32,
            seg: &[u8],
            i: usize,
            corrupt: &[usize],
            mpa_seq: u32,
            reg: &Region,
            placed: &mut PlacedSet<32>,
            mem: &mut [u8],
        ) {
            // The same decisions from the bytes read where they lie, in
            // pieces (as from an skb's fragments).
            let flat: Result<Vec<_>, _> = scan(st, seq, seg).map(|x| x.clone().collect());
            let pieces = Scattered::new(seg, 5 + 3 * i);
            let apart: Result<Vec<_>, _> = scan_in(st, seq, &pieces).map(|x| x.collect());
            assert_eq!(flat, apart);
            let scan = match scan(st, seq, seg) {
                Ok(s) => s,
                Err(r) => {
                    self.refusals.push(r);
                    return;
                }
            };
            for d in scan {
                let p = match d {
                    Ok(p) => p,
                    Err(r) => {
                        self.refusals.push(r.reason);
                        continue;
                    }
                };
                // Never a corrupted FPDU.
                for &k in corrupt {
                    let ks = mpa_seq.wrapping_add(k as u32);
                    assert!(!placed_range_has(p.fpdu, ks), "corrupted FPDU placed");
                }
                let off = reg.check_placement(&p).unwrap() as usize;
                if placed.contains(p.fpdu) || placed.insert(p.fpdu).is_err() {
                    continue;
                }
                let mut n = 0;
                for piece in p.pieces() {
                    let o = off + (piece.to - p.to) as usize;
                    let len = piece.bytes.len();
                    mem[o..o + len].copy_from_slice(&seg[piece.bytes]);
                    n += len;
                }
                assert_eq!(n, p.len);
                self.ooo_bytes += n;
                self.ooo_fpdus += 1;
            }
        }
    }

    /// Plays the kernel: segments `cuts` of `wire` (stream position 0 at
    /// `mpa_seq`) arrive in `order`, the first cut held back (the hole), so
    /// all others go through the engine; placements are checked against
    /// the region, recorded, then copied. `corrupt` bytes (wire offsets) are
    /// flipped in what the engine sees (the in-order path gets TCP's clean
    /// retransmission). Then the in-order path parses the whole stream,
    /// skipping the copy of what was placed, and the region must hold
    /// exactly `expect`.
    #[allow(clippy::too_many_arguments)]
    fn play(
        framing: Framing,
        mpa_seq: u32,
        wire: &Wire,
        cuts: &[Range<usize>],
        order: &[usize],
        corrupt: &[usize],
        expect: &[u8],
        known: Option<usize>,
    ) -> Outcome {
        let mut out = Outcome::default();
        let mut mem = std::vec![0u8; REGION_LEN];
        let mut placed = PlacedSet::<32>::new(mpa_seq);
        let st = Stream {
            next_fpdu: None,
            ..stream(mpa_seq, framing)
        };
        let reg = region();
        let bytes_of = |c: &Range<usize>| {
            let mut seg = wire.bytes[c.clone()].to_vec();
            for &k in corrupt {
                if c.contains(&k) {
                    seg[k - c.start] ^= 0x20;
                }
            }
            seg
        };
        let mut arrived = std::vec![false; cuts.len()];
        let mut chain = known;
        for &i in order {
            if i == 0 {
                continue;
            }
            arrived[i] = true;
            // The walk from the known start through what has arrived.
            let mut todo = Vec::new();
            while let Some(k) = chain {
                let Some(j) = (1..cuts.len()).find(|&j| arrived[j] && cuts[j].contains(&k)) else {
                    break;
                };
                let seg = bytes_of(&cuts[j])[k - cuts[j].start..].to_vec();
                let kseq = mpa_seq.wrapping_add(k as u32);
                let kst = Stream {
                    next_fpdu: Some(kseq),
                    ..st
                };
                let mut x = scan(&kst, kseq, &seg).unwrap();
                for _ in x.by_ref() {}
                chain = x
                    .next_start()
                    .map(|n| n.wrapping_sub(mpa_seq) as usize)
                    .filter(|&n| n > k);
                todo.push((kst, kseq, seg));
            }
            // Each segment on its own: only markers can anchor it.
            let seg = bytes_of(&cuts[i]);
            let seq = mpa_seq.wrapping_add(cuts[i].start as u32);
            todo.push((st, seq, seg));
            for (st, seq, seg) in todo {
                out.scan(
                    &st,
                    seq,
                    &seg,
                    i,
                    corrupt,
                    mpa_seq,
                    &reg,
                    &mut placed,
                    &mut mem,
                );
            }
        }
        // The in-order path.
        let mut parser = FpduParser::new(framing, 0).unwrap();
        let mut buf = std::vec![0u8; mpa::fpdu_len(65535)];
        let mut data = &wire.bytes[..];
        while !data.is_empty() {
            let (used, f) = parser.push(&mut buf, data).unwrap();
            data = &data[used..];
            let Some(f) = f else { continue };
            let l = FpduLayout::new(f.start, f.ulpdu_len, framing.markers).unwrap();
            let r = SeqRange::new(
                mpa_seq.wrapping_add(f.start),
                mpa_seq.wrapping_add(l.next_start()),
            );
            let seg = Segment::parse(f.ulpdu(&buf)).unwrap();
            if let Header::Tagged(t) = seg.ddp {
                let o = (t.to - BASE) as usize;
                let n = seg.payload.len();
                if placed.contains(r) {
                    assert_eq!(&mem[o..o + n], seg.payload, "placed out of order wrongly");
                } else {
                    mem[o..o + n].copy_from_slice(seg.payload);
                    out.inorder_bytes += n;
                }
            }
            placed.advance(r.end);
        }
        assert!(placed.is_empty());
        assert_eq!(mem, expect);
        out
    }

    /// The reason the first FPDU of a scanned segment is refused.
    fn first_refusal(st: &Stream, seq: u32, seg: &[u8]) -> Refusal {
        scan(st, seq, seg)
            .unwrap()
            .next()
            .unwrap()
            .unwrap_err()
            .reason
    }

    fn placed_range_has(r: SeqRange, seq: u32) -> bool {
        seq.wrapping_sub(r.start) < r.len()
    }

    /// Cuts on FPDU boundaries, `per` FPDUs a segment.
    fn aligned_cuts(w: &Wire, per: usize) -> Vec<Range<usize>> {
        w.fpdus
            .chunks(per)
            .map(|c| c[0].start..c[c.len() - 1].end)
            .collect()
    }

    /// Cuts every `mss` bytes, FPDUs ignored (a re-segmenting middlebox).
    fn mss_cuts(len: usize, mss: usize) -> Vec<Range<usize>> {
        (0..len.div_ceil(mss))
            .map(|k| k * mss..((k + 1) * mss).min(len))
            .collect()
    }

    fn shuffled(n: usize, seed: u64) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        let mut s = seed | 1;
        for i in (1..n).rev() {
            let j = (xorshift(&mut s) % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
        v
    }

    #[test]
    fn aligned_without_markers_placed_only_from_a_known_start() {
        let sizes = [1000, 1400, 64, 1, 1420, 900, 333, 1024];
        let (ulpdus, expect) = writes(&sizes, 7);
        for mpa_seq in [0, 0x1234_5678, u32::MAX - 5000] {
            let w = encode(CRC, 0, &ulpdus);
            for per in [1, 2] {
                let cuts = aligned_cuts(&w, per);
                for seed in 1..6 {
                    let order = shuffled(cuts.len(), seed);
                    let hole: usize = sizes[..per].iter().sum();
                    // The hole's FPDU lengths unknown: nothing is placed.
                    let o = play(CRC, mpa_seq, &w, &cuts, &order, &[], &expect, None);
                    assert_eq!((o.ooo_bytes, o.inorder_bytes), (0, sizes.iter().sum()));
                    assert!(o.refusals.iter().all(|r| *r == Refusal::NoFpduStart));
                    assert_eq!(o.refusals.len(), cuts.len() - 1);
                    // Its end known (the in-order parser read the lengths):
                    // every FPDU after it is placed.
                    let known = Some(cuts[0].end);
                    let o = play(CRC, mpa_seq, &w, &cuts, &order, &[], &expect, known);
                    assert_eq!(o.ooo_bytes, sizes.iter().sum::<usize>() - hole);
                    assert_eq!(o.inorder_bytes, hole);
                }
            }
        }
    }

    #[test]
    fn misaligned_without_markers_refused_and_still_exact() {
        let sizes = [3000, 2000, 5000, 700, 4000];
        let (ulpdus, expect) = writes(&sizes, 11);
        let w = encode(CRC, 0, &ulpdus);
        for mss in [536, 1448, 1460] {
            let cuts = mss_cuts(w.bytes.len(), mss);
            let order = shuffled(cuts.len(), mss as u64);
            for known in [None, Some(w.fpdus[1].start)] {
                let o = play(CRC, 0x8000_0000, &w, &cuts, &order, &[], &expect, known);
                // No segment of these holds a whole FPDU.
                assert_eq!(o.ooo_bytes, 0);
                assert_eq!(o.inorder_bytes, sizes.iter().sum::<usize>());
                assert!(o
                    .refusals
                    .iter()
                    .all(|r| matches!(r, Refusal::Straddles | Refusal::NoFpduStart)));
            }
        }
    }

    /// RFC 5044 §5's attack on an unmarked stream: a Send whose payload
    /// holds a valid Write FPDU, a segment boundary just before it (a
    /// sender's TCP may cut anywhere), delivered ahead of a hole. Never a
    /// Write; the Send's own framing, when known, passes over it.
    #[test]
    fn send_payload_that_looks_like_a_write_is_never_placed() {
        let fake = encode(
            CRC,
            0,
            &[tagged(Opcode::Write, STAG, BASE + 64, true, &[0x5a; 20])],
        );
        let mut payload = b"smg\0".to_vec();
        payload.extend_from_slice(&fake.bytes);
        let (hole, region) = writes(&[333], 3);
        let w = encode(CRC, 0, &[hole[0].clone(), send(1, &payload)]);
        let s = w.fpdus[1].clone();
        // The fake FPDU's start: after the Send's MPA and DDP headers and
        // the 4 bytes before it.
        let at = s.start + HDR_LEN + ddp::UNTAGGED_HDR_LEN + 4;
        assert_eq!(&w.bytes[at..at + fake.bytes.len()], &fake.bytes[..]);
        let cuts = [
            0..s.start,
            s.start..at,
            at..at + fake.bytes.len(),
            at + fake.bytes.len()..s.end,
        ];
        let mut st = stream(0, CRC);
        st.next_fpdu = None;
        let seq = at as u32;
        let seg = &w.bytes[cuts[2].clone()];
        // Nothing known: refused.
        assert_eq!(scan(&st, seq, seg).err(), Some(Refusal::NoFpduStart));
        // The Send's start known: the walk passes over the Send whole.
        st.next_fpdu = Some(s.start as u32);
        assert_eq!(scan(&st, seq, seg).err(), Some(Refusal::NoFpduStart));
        let mut x = scan(&st, s.start as u32, &w.bytes[cuts[1].clone()]).unwrap();
        assert_eq!(x.next().unwrap().unwrap_err().reason, Refusal::Straddles);
        assert!(x.next().is_none());
        assert_eq!(x.next_start(), Some(s.end as u32));
        st.next_fpdu = Some(s.end as u32);
        assert_eq!(scan(&st, seq, seg).err(), Some(Refusal::InsideKnownFpdu));
        // In any order, with or without the Send's start: no placement.
        for known in [None, Some(s.start)] {
            for seed in 1..4 {
                let o = play(CRC, 0, &w, &cuts, &shuffled(4, seed), &[], &region, known);
                assert_eq!(o.ooo_bytes, 0);
            }
        }
    }

    #[test]
    fn straddling_segment_without_markers() {
        let (ulpdus, _) = writes(&[100, 100], 3);
        let w = encode(CRC, 0, &ulpdus);
        let mut st = stream(0, CRC);
        st.rcv_nxt = u32::MAX - 3;
        st.next_fpdu = None;
        let cut = w.fpdus[0].end + 40;
        // FPDU 0 whole, then 40 bytes of FPDU 1: no start known.
        assert_eq!(
            scan(&st, 0, &w.bytes[..cut]).err(),
            Some(Refusal::NoFpduStart)
        );
        // Half of FPDU 0 and the rest.
        assert!(scan(&st, 60, &w.bytes[60..]).is_err());
        assert!(scan(&st, 60, &w.bytes[60..cut]).is_err());
        // A known start: FPDU 0 is placed, FPDU 1 straddles; the walk
        // goes on at its end.
        st.next_fpdu = Some(0);
        let mut x = scan(&st, 0, &w.bytes[..cut]).unwrap();
        let got: Vec<_> = x.by_ref().collect();
        assert_eq!(x.next_start(), Some(w.fpdus[1].end as u32));
        // Its length field cut: its start.
        let mut x = scan(&st, 0, &w.bytes[..w.fpdus[0].end + 1]).unwrap();
        for _ in x.by_ref() {}
        assert_eq!(x.next_start(), Some(w.fpdus[0].end as u32));
        assert_eq!(got.len(), 2);
        assert!(got[0].is_ok());
        assert_eq!(
            got[1].as_ref().unwrap_err(),
            &Refused {
                reason: Refusal::Straddles,
                fpdu: None
            }
        );
    }

    #[test]
    fn markers_find_fpdus_in_misaligned_segments() {
        let sizes = [3000, 2000, 5000, 700, 4000, 100, 60, 2500];
        let (ulpdus, expect) = writes(&sizes, 13);
        for mpa_seq in [0, u32::MAX - 7000] {
            let w = encode(CRC_MARKERS, 0, &ulpdus);
            for mss in [1448, 4000, 9000] {
                let cuts = mss_cuts(w.bytes.len(), mss);
                let order = shuffled(cuts.len(), mss as u64 + 1);
                let o = play(CRC_MARKERS, mpa_seq, &w, &cuts, &order, &[], &expect, None);
                assert_eq!(o.ooo_bytes + o.inorder_bytes, sizes.iter().sum::<usize>());
                if mss == 9000 {
                    // Whole FPDUs fit in these segments.
                    assert!(o.ooo_fpdus >= 2, "{o:?}");
                }
            }
            // Aligned segments of one to three FPDUs, walked from the
            // hole's end: all placed.
            for per in [1, 2, 3] {
                let cuts = aligned_cuts(&w, per);
                let o = play(
                    CRC_MARKERS,
                    mpa_seq,
                    &w,
                    &cuts,
                    &shuffled(cuts.len(), 5),
                    &[],
                    &expect,
                    Some(cuts[0].end),
                );
                assert_eq!(o.inorder_bytes, sizes[..per].iter().sum::<usize>());
                assert!(
                    o.refusals.iter().all(|r| *r == Refusal::NoFpduStart),
                    "{:?}",
                    o.refusals
                );
            }
        }
    }

    #[test]
    fn corrupted_bytes_never_placed() {
        let sizes = [1200, 800, 1400, 64, 1000, 1000];
        let (ulpdus, expect) = writes(&sizes, 17);
        for framing in [CRC, CRC_MARKERS] {
            let w = encode(framing, 0, &ulpdus);
            let cuts = aligned_cuts(&w, 1);
            let mut seed = 99u64;
            for _ in 0..200 {
                let k = (xorshift(&mut seed) as usize) % w.bytes.len();
                let o = play(
                    framing,
                    0xffff_f000,
                    &w,
                    &cuts,
                    &shuffled(cuts.len(), seed),
                    &[k],
                    &expect,
                    Some(cuts[0].end),
                );
                if !cuts[0].contains(&k) {
                    assert!(!o.refusals.is_empty(), "corruption at {k} unnoticed");
                }
            }
        }
    }

    #[test]
    fn crc_off_refused() {
        let (ulpdus, _) = writes(&[100], 1);
        let f = Framing {
            crc: false,
            markers: false,
        };
        let w = encode(f, 0, &ulpdus);
        let mut st = stream(0, f);
        st.rcv_nxt = 0;
        st.next_fpdu = None;
        assert_eq!(scan(&st, 0x100, &w.bytes).err(), Some(Refusal::CrcOff));
    }

    #[test]
    fn untagged_and_opcodes() {
        let ulpdus = std::vec![
            send(1, b"hello"),
            tagged(Opcode::ReadResponse, STAG, BASE, true, &[9; 40]),
            tagged(Opcode::Write, STAG, BASE + 40, false, &[]),
            tagged(Opcode::Write, STAG, u64::MAX - 3, false, &[1; 8]),
            tagged(Opcode::Write, STAG, BASE, true, &[7; 12]),
        ];
        let w = encode(CRC, 0, &ulpdus);
        let mut st = stream(0x1000, CRC);
        st.next_fpdu = Some(0x1000);
        let seg = &w.bytes[..];
        // The whole image as one segment ahead of a hole of 4 bytes, its
        // start known.
        let st = Stream {
            rcv_nxt: 0x1000 - 4,
            ..st
        };
        let got: Vec<_> = scan(&st, 0x1000, seg).unwrap().collect();
        assert_eq!(got.len(), 5);
        assert_eq!(got[0].as_ref().unwrap_err().reason, Refusal::Untagged);
        assert_eq!(
            got[0].as_ref().unwrap_err().fpdu,
            Some(SeqRange::new(0x1000, 0x1000 + w.fpdus[0].len() as u32))
        );
        let rr = got[1].as_ref().unwrap();
        assert_eq!(
            (rr.opcode, rr.need(), rr.len, rr.last),
            (Opcode::ReadResponse, Need::LocalWrite, 40, true)
        );
        assert_eq!(got[2].as_ref().unwrap_err().reason, Refusal::Empty);
        assert_eq!(got[3].as_ref().unwrap_err().reason, Refusal::ToWrap);
        let wr = got[4].as_ref().unwrap();
        assert_eq!(
            (wr.opcode, wr.need(), wr.len, wr.to),
            (Opcode::Write, Need::RemoteWrite, 12, BASE)
        );
        assert_eq!(&seg[wr.bytes.clone()], &[7; 12]);
        // Read Request and Terminate opcodes in a tagged header, a reserved
        // opcode, a bad RDMAP version.
        for (ctl, why) in [
            (0x41, Refusal::UnsupportedOpcode(1)),
            (0x47, Refusal::UnsupportedOpcode(7)),
            (0x4c, Refusal::UnsupportedOpcode(0xc)),
            (0x80, Refusal::BadVersion),
        ] {
            let mut u = tagged(Opcode::Write, STAG, BASE, true, &[1; 4]);
            u[1] = ctl;
            let w = encode(CRC, 0, &[u]);
            assert_eq!(first_refusal(&st, 0x1000, &w.bytes), why);
        }
        // A tagged ULPDU too short for its header; DDP version 2.
        let w = encode(CRC, 0, &[std::vec![0xc1, 0x40, 0, 0]]);
        assert_eq!(first_refusal(&st, 0x1000, &w.bytes), Refusal::BadLength);
        let mut u = tagged(Opcode::Write, STAG, BASE, true, &[1; 4]);
        u[0] = 0xc2;
        let w = encode(CRC, 0, &[u]);
        assert_eq!(first_refusal(&st, 0x1000, &w.bytes), Refusal::BadVersion);
    }

    #[test]
    fn position_checks() {
        let (ulpdus, _) = writes(&[100, 100, 100], 5);
        let w = encode(CRC, 0, &ulpdus);
        let f1 = w.fpdus[1].clone();
        let seg = &w.bytes[f1.clone()];
        let s1 = f1.start as u32;
        // In order, or behind: not for this engine.
        let mut st = stream(0, CRC);
        st.rcv_nxt = s1;
        st.next_fpdu = Some(s1);
        assert_eq!(scan(&st, s1, seg).err(), Some(Refusal::NotAhead));
        st.rcv_nxt = s1 + 4;
        st.next_fpdu = None;
        assert_eq!(scan(&st, s1, seg).err(), Some(Refusal::NotAhead));
        // Too far ahead.
        st.rcv_nxt = s1.wrapping_sub(MAX_WINDOW);
        assert_eq!(scan(&st, s1, seg).err(), Some(Refusal::OutOfWindow));
        st.rcv_nxt = s1.wrapping_sub(MAX_WINDOW - seg.len() as u32);
        assert_eq!(scan(&st, s1, seg).err(), Some(Refusal::NoFpduStart));
        st.next_fpdu = Some(s1);
        assert!(scan(&st, s1, seg).is_ok());
        // Inside the FPDU the in-order parser is receiving.
        st.rcv_nxt = 0;
        st.next_fpdu = Some(w.fpdus[2].start as u32);
        assert_eq!(scan(&st, s1, seg).err(), Some(Refusal::InsideKnownFpdu));
        st.next_fpdu = Some(w.fpdus[1].start as u32 + 8);
        assert_eq!(first_refusal(&st, s1, seg), Refusal::BadCrc);
        st.next_fpdu = Some(w.fpdus[1].start as u32 + 2);
        assert_eq!(first_refusal(&st, s1, seg), Refusal::NotAligned);
        // A known boundary in the middle of the segment anchors it: the
        // segment starts inside FPDU 0.
        st.next_fpdu = Some(s1);
        let got: Vec<_> = scan(&st, 8, &w.bytes[8..]).unwrap().collect();
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|g| g.is_ok()));
        st.next_fpdu = None;
        assert!(scan(&st, 8, &w.bytes[8..]).is_err());
        // An inconsistent state.
        st.next_fpdu = Some(u32::MAX);
        assert_eq!(scan(&st, s1, seg).err(), Some(Refusal::BadState));
        // Not on a 4-byte boundary.
        st.next_fpdu = Some(s1 + 2);
        assert_eq!(first_refusal(&st, s1 + 2, &seg[2..]), Refusal::NotAligned);
        // No payload.
        assert_eq!(scan(&st, s1, &[]).err(), Some(Refusal::NoData));
        // ULPDU over the limit.
        st.max_ulpdu = 99;
        st.next_fpdu = Some(s1);
        assert_eq!(first_refusal(&st, s1, seg), Refusal::BadLength);
    }

    #[test]
    fn markers_anchor_and_pieces() {
        // One 3000-byte Write starting at stream position 0 (a leading
        // marker), cut at 600: the segment from 600 starts inside it, and
        // its markers say so.
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        let ulpdus = std::vec![
            tagged(Opcode::Write, STAG, BASE, false, &data),
            tagged(Opcode::Write, STAG, BASE + 3000, true, &data[..1500]),
        ];
        let w = encode(CRC_MARKERS, 0, &ulpdus);
        let mut st = stream(0, CRC_MARKERS);
        st.next_fpdu = None;
        let f1 = w.fpdus[1].clone();
        // From 600 to the end: FPDU 0's remainder is skipped, FPDU 1 is
        // found by the marker inside it.
        let got: Vec<_> = scan(&st, 600, &w.bytes[600..]).unwrap().collect();
        assert_eq!(got.len(), 1);
        let p = got[0].as_ref().unwrap();
        assert_eq!(p.fpdu, SeqRange::new(f1.start as u32, f1.end as u32));
        assert_eq!((p.to, p.len), (BASE + 3000, 1500));
        // The pieces skip the markers and carry the data.
        let seg = &w.bytes[600..];
        let mut got_data = Vec::new();
        let mut to = p.to;
        for piece in p.pieces() {
            assert_eq!(piece.to, to);
            for k in piece.bytes.clone() {
                assert!((600 + k) % 512 >= 4, "a marker byte in a piece");
            }
            got_data.extend_from_slice(&seg[piece.bytes.clone()]);
            to += piece.bytes.len() as u64;
        }
        assert_eq!(got_data, &data[..1500]);
        assert!(p.pieces().count() >= 3);
        // The segment from 0: the leading marker anchors FPDU 0.
        st.rcv_nxt = u32::MAX - 3;
        let got: Vec<_> = scan(&st, 0, &w.bytes).unwrap().collect();
        assert_eq!(got.len(), 2);
        let p = got[0].as_ref().unwrap();
        let mut d = Vec::new();
        for piece in p.pieces() {
            d.extend_from_slice(&w.bytes[piece.bytes]);
        }
        assert_eq!(d, data);
        // A marker whose FPDUPTR was changed.
        st.rcv_nxt = 0;
        let mut bad = w.bytes.clone();
        bad[1024 + 3] ^= 0x10;
        // FPDU 0 (around the changed marker) is not placed; FPDU 1 still is.
        let got: Vec<_> = scan(&st, 600, &bad[600..]).unwrap().collect();
        assert!(got
            .iter()
            .flatten()
            .all(|p| !placed_range_has(p.fpdu, 1024)));
        assert_eq!(got.iter().flatten().count(), 1);
        let mut bad = w.bytes.clone();
        bad[512 + 2] ^= 0x01;
        let got: Vec<_> = scan(&st, 4, &bad[4..])
            .map(|s| s.collect())
            .unwrap_or_default();
        assert!(got.iter().flatten().all(|p| !placed_range_has(p.fpdu, 512)));
        // Found from a known start, FPDU 0 with a changed marker.
        let known = Stream {
            rcv_nxt: u32::MAX - 3,
            next_fpdu: Some(0),
            ..st
        };
        let mut bad = w.bytes.clone();
        bad[1536 + 3] ^= 0x10;
        let got: Vec<_> = scan(&known, 0, &bad).unwrap().collect();
        assert_eq!(
            got,
            [Err(Refused {
                reason: Refusal::MarkerInconsistent,
                fpdu: None
            })]
        );
        // Its low two bits are ignored by the marker check, but the CRC
        // covers them.
        let mut bad = w.bytes.clone();
        bad[1536 + 3] ^= 0x03;
        let got: Vec<_> = scan(&known, 0, &bad).unwrap().collect();
        assert_eq!(got[0].as_ref().unwrap_err().reason, Refusal::BadCrc);
        // An FPDU never starts just after a marker position: the marker
        // opens it.
        assert_eq!(scan(&st, 4, &w.bytes[4..]).unwrap().count(), 1);
        assert_eq!(
            scan(&st, 4, &w.bytes[4..w.fpdus[0].end]).err(),
            Some(Refusal::NoFpduStart)
        );
        assert_eq!(
            scan(&st, 516, &w.bytes[516..1000]).err(),
            Some(Refusal::NoFpduStart)
        );
        // A marker pointing at another marker position.
        let mut bad = w.bytes.clone();
        bad[1536 + 2..1536 + 4].copy_from_slice(&512u16.to_be_bytes());
        assert_eq!(
            scan(&st, 600, &bad[600..]).err(),
            Some(Refusal::MarkerInconsistent)
        );
        // Segments between two markers that start inside an FPDU: no start.
        assert!(scan(&st, 516, &w.bytes[516..1020]).is_err());
        // The segment holding FPDU 0's middle only: the markers point back.
        assert_eq!(
            scan(&st, 600, &w.bytes[600..2000]).err(),
            Some(Refusal::NoFpduStart)
        );
    }

    #[test]
    fn markers_anchor_only_what_they_point_at() {
        // FPDU 0 (leading marker, 124 bytes) and FPDU 1 (120 bytes) lie
        // between two markers; FPDU 2 holds the marker at 512.
        let (ulpdus, _) = writes(&[100, 100, 3000], 21);
        let w = encode(CRC_MARKERS, 0, &ulpdus);
        assert_eq!((w.fpdus[1].start, w.fpdus[2].start), (124, 244));
        let mut st = stream(0, CRC_MARKERS);
        st.next_fpdu = None;
        // From FPDU 1: no marker points at it, only the marker's FPDU is
        // placed (FPDU 1 may as well be payload of one before it).
        let got: Vec<_> = scan(&st, 124, &w.bytes[124..]).unwrap().collect();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_ref().unwrap().fpdu.start, 244);
        // Its start known: both.
        st.next_fpdu = Some(124);
        let got: Vec<_> = scan(&st, 124, &w.bytes[124..]).unwrap().collect();
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|g| g.is_ok()));
        // FPDU 1 corrupted: the walk stops there.
        let mut bad = w.bytes.clone();
        bad[200] ^= 1;
        let mut x = scan(&st, 124, &bad[124..]).unwrap();
        assert_eq!(x.next().unwrap().unwrap_err().reason, Refusal::BadCrc);
        assert!(x.next().is_none());
        assert_eq!(x.next_start(), None);
        // A Read Response needs local write.
        let rr = tagged(Opcode::ReadResponse, STAG, BASE + 8, true, &[5; 64]);
        let w = encode(CRC_MARKERS, 124, &[rr]);
        let p = scan(&st, 124, &w.bytes).unwrap().next().unwrap().unwrap();
        let sink = Region {
            remote_write: false,
            local_write: true,
            ..region()
        };
        assert_eq!(sink.check_placement(&p), Ok(8));
        assert_eq!(region().check_placement(&p), Err(AccessError::NoAccess));
    }

    #[test]
    fn known_starts_carried_and_resumed() {
        // Three FPDUs of 100-byte ULPDUs (108 bytes each with the pad and
        // the CRC) from 1000.
        let fields = |seq: u32| match seq {
            1000 | 1108 | 1216 => Some(100),
            _ => None,
        };
        // Past two queued FPDUs to the start at or after rcv_nxt.
        assert_eq!(
            carry_start(1000, 1000, 1150, false, 65535, 8, fields),
            Some(1216)
        );
        assert_eq!(
            carry_start(1000, 1000, 1000, false, 65535, 8, fields),
            Some(1000)
        );
        assert_eq!(
            carry_start(1108, 1000, 1108, false, 65535, 8, fields),
            Some(1108)
        );
        // Across the wrap of the sequence space.
        let w = |seq: u32| (seq == u32::MAX - 3).then_some(100);
        assert_eq!(
            carry_start(u32::MAX - 3, u32::MAX - 3, 50, false, 65535, 8, w),
            Some(104)
        );
        // A field not there, too long, too many, markers, behind the floor.
        assert_eq!(carry_start(1000, 1000, 1400, false, 65535, 8, fields), None);
        assert_eq!(carry_start(1000, 1000, 1150, false, 99, 8, fields), None);
        assert_eq!(carry_start(1000, 1000, 1150, false, 65535, 1, fields), None);
        assert_eq!(carry_start(1000, 1000, 1150, true, 65535, 8, fields), None);
        assert_eq!(
            carry_start(1000, 1000, 1000, true, 65535, 8, fields),
            Some(1000)
        );
        assert_eq!(carry_start(999, 1000, 1150, false, 65535, 8, fields), None);
        // The later of the two starts; an earlier walk's alone while ahead.
        assert_eq!(resume_at(Some(10), Some(20), 5), Some(20));
        assert_eq!(resume_at(Some(30), Some(20), 5), Some(30));
        assert_eq!(resume_at(None, Some(20), 5), Some(20));
        assert_eq!(resume_at(None, Some(20), 25), None);
        assert_eq!(resume_at(Some(10), None, 5), Some(10));
        assert_eq!(resume_at(None, None, 5), None);
        assert_eq!(resume_at(Some(u32::MAX), Some(3), 0xffff_0000), Some(3));
    }

    #[test]
    fn refusal_classes() {
        assert_eq!(Refusal::NoFpduStart.class(), RefusalClass::NoStart);
        assert_eq!(Refusal::InsideKnownFpdu.class(), RefusalClass::NoStart);
        assert_eq!(Refusal::Straddles.class(), RefusalClass::Framing);
        assert_eq!(Refusal::BadCrc.class(), RefusalClass::Framing);
        assert_eq!(Refusal::Untagged.class(), RefusalClass::InOrderOnly);
        assert_eq!(
            Refusal::UnsupportedOpcode(1).class(),
            RefusalClass::InOrderOnly
        );
        assert_eq!(Refusal::ToWrap.class(), RefusalClass::Access);
    }

    #[test]
    fn region_edges() {
        let r = Region {
            stag: 5,
            base_to: 1000,
            len: 100,
            remote_write: true,
            local_write: false,
        };
        let w = Need::RemoteWrite;
        assert_eq!(r.check(5, 1000, 100, w), Ok(0));
        assert_eq!(r.check(5, 1099, 1, w), Ok(99));
        assert_eq!(r.check(5, 1099, 2, w), Err(AccessError::Bounds));
        assert_eq!(r.check(5, 1100, 1, w), Err(AccessError::Bounds));
        assert_eq!(r.check(5, 999, 1, w), Err(AccessError::Bounds));
        assert_eq!(r.check(5, 1000, 101, w), Err(AccessError::Bounds));
        // Zero length: anywhere from the first byte to just past the last.
        assert_eq!(r.check(5, 1000, 0, w), Ok(0));
        assert_eq!(r.check(5, 1100, 0, w), Ok(100));
        assert_eq!(r.check(5, 1101, 0, w), Err(AccessError::Bounds));
        assert_eq!(r.check(5, 999, 0, w), Err(AccessError::Bounds));
        // TO + len overflows.
        assert_eq!(r.check(5, u64::MAX, 1, w), Err(AccessError::ToWrap));
        assert_eq!(r.check(5, u64::MAX - 9, 11, w), Err(AccessError::ToWrap));
        assert_eq!(r.check(5, u64::MAX - 10, 10, w), Err(AccessError::Bounds));
        // STag and access.
        assert_eq!(r.check(6, 1000, 1, w), Err(AccessError::WrongStag));
        assert_eq!(
            r.check(5, 1000, 1, Need::LocalWrite),
            Err(AccessError::NoAccess)
        );
        // An empty region; one whose end passes 2^64.
        let e = Region { len: 0, ..r };
        assert_eq!(e.check(5, 1000, 0, w), Ok(0));
        assert_eq!(e.check(5, 1000, 1, w), Err(AccessError::Bounds));
        let top = Region {
            base_to: u64::MAX - 10,
            len: 100,
            ..r
        };
        assert_eq!(top.check(5, u64::MAX - 10, 10, w), Ok(0));
        assert_eq!(top.check(5, u64::MAX - 1, 1, w), Ok(9));
        assert_eq!(top.check(5, u64::MAX - 1, 2, w), Err(AccessError::ToWrap));
        assert_eq!(top.check(5, u64::MAX, 0, w), Ok(10));
    }

    /// `Gaps` against a model: one flag per sequence number past the
    /// floor, random adds, removes and advances, across the wrap.
    #[test]
    fn gaps_match_a_model() {
        const SPAN: u32 = 512;
        let mut x = 0x5eed_u64;
        for floor in [0u32, u32::MAX - 200] {
            let mut g = Gaps::<4>::new(floor);
            let mut base = floor;
            let mut model = std::vec![false; SPAN as usize];
            for _ in 0..4000 {
                let a = (xorshift(&mut x) % u64::from(SPAN)) as u32;
                let n = (xorshift(&mut x) % 64) as u32;
                let b = (a + n).min(SPAN);
                let r = SeqRange::new(base.wrapping_add(a), base.wrapping_add(b));
                match xorshift(&mut x) % 8 {
                    0..=3 => {
                        let before = g.ranges().len();
                        let touches = g.ranges().iter().any(|y| {
                            let (ya, yb) = (y.start.wrapping_sub(base), y.end.wrapping_sub(base));
                            ya <= b && a <= yb
                        });
                        let ok = g.add(r);
                        assert_eq!(ok, a < b && (touches || before < 4));
                        if ok {
                            model[a as usize..b as usize].fill(true);
                        }
                    }
                    4..=6 => {
                        let split = g.ranges().iter().any(|y| {
                            let (ya, yb) = (y.start.wrapping_sub(base), y.end.wrapping_sub(base));
                            ya < a && b < yb
                        });
                        let full = g.ranges().len() == 4;
                        g.remove(r);
                        model[a as usize..b as usize].fill(false);
                        if split && full {
                            // The upper piece of the split was dropped:
                            // resync the model from the set.
                            model.fill(false);
                            for y in g.ranges() {
                                let (ya, yb) =
                                    (y.start.wrapping_sub(base), y.end.wrapping_sub(base));
                                model[ya as usize..yb as usize].fill(true);
                            }
                        }
                    }
                    _ => {
                        let t = a.min(16);
                        g.advance(base.wrapping_add(t));
                        base = base.wrapping_add(t);
                        model.drain(..t as usize);
                        model.resize(SPAN as usize, false);
                    }
                }
                // Sorted, disjoint, non-adjacent, non-empty, all past the
                // floor, and the same sequence numbers as the model.
                let mut got = std::vec![false; SPAN as usize];
                let mut last = None;
                for y in g.ranges() {
                    let (ya, yb) = (y.start.wrapping_sub(base), y.end.wrapping_sub(base));
                    assert!(ya < yb && yb <= SPAN, "{ya} {yb}");
                    if let Some(l) = last {
                        assert!(l < ya, "{l} {ya}");
                    }
                    last = Some(yb);
                    got[ya as usize..yb as usize].fill(true);
                }
                assert_eq!(got, model);
            }
        }
    }

    #[test]
    fn gaps_refuse_and_cut() {
        let mut g = Gaps::<2>::new(1000);
        assert!(!g.add(SeqRange::new(1100, 1100)));
        // Before the floor: cut to it.
        assert!(g.add(SeqRange::new(900, 1010)));
        assert_eq!(g.ranges(), &[SeqRange::new(1000, 1010)]);
        assert!(g.add(SeqRange::new(2000, 2100)));
        // Full, touching none.
        assert!(!g.add(SeqRange::new(3000, 3100)));
        // Touching one: merged.
        assert!(g.add(SeqRange::new(2100, 2200)));
        assert_eq!(g.get(1), Some(SeqRange::new(2000, 2200)));
        // A split with no entry left drops the upper piece.
        g.remove(SeqRange::new(2050, 2060));
        assert_eq!(
            g.ranges(),
            &[SeqRange::new(1000, 1010), SeqRange::new(2000, 2050)]
        );
        // Past the window: refused.
        assert!(!g.add(SeqRange::new(1000 + MAX_WINDOW, 1000 + MAX_WINDOW + 10)));
        g.advance(2010);
        assert_eq!(g.ranges(), &[SeqRange::new(2010, 2050)]);
        g.advance(5000);
        assert!(g.ranges().is_empty());
        let mut z = Gaps::<0>::new(0);
        assert!(!z.add(SeqRange::new(1, 2)));
        z.remove(SeqRange::new(0, 5));
        z.advance(3);
        assert!(z.get(0).is_none());
    }

    #[test]
    fn placed_set_merges_and_queries() {
        let mut s = PlacedSet::<4>::new(100);
        assert!(s.is_empty());
        s.insert(SeqRange::new(200, 300)).unwrap();
        s.insert(SeqRange::new(400, 500)).unwrap();
        s.insert(SeqRange::new(300, 350)).unwrap(); // touches: merges
        assert_eq!(
            s.ranges(),
            &[SeqRange::new(200, 350), SeqRange::new(400, 500)]
        );
        s.insert(SeqRange::new(340, 410)).unwrap(); // bridges both
        assert_eq!(s.ranges(), &[SeqRange::new(200, 500)]);
        s.insert(SeqRange::new(150, 160)).unwrap();
        s.insert(SeqRange::new(600, 700)).unwrap();
        s.insert(SeqRange::new(800, 900)).unwrap();
        assert!(s.is_full());
        // Full: a range touching nothing is refused, the set unchanged.
        let before = s.ranges().to_vec();
        assert_eq!(s.insert(SeqRange::new(1000, 1100)), Err(SetError::Full));
        assert_eq!(s.insert(SeqRange::new(520, 530)), Err(SetError::Full));
        assert_eq!(s.ranges(), &before[..]);
        // ... but one that merges still goes in.
        s.insert(SeqRange::new(700, 800)).unwrap();
        assert_eq!(s.len(), 3);
        assert!(s.contains(SeqRange::new(200, 500)));
        assert!(s.contains(SeqRange::new(650, 900)));
        assert!(!s.contains(SeqRange::new(499, 501)));
        assert!(!s.contains(SeqRange::new(160, 200)));
        assert!(!s.contains(SeqRange::new(300, 300)));
        assert!(s.overlaps(SeqRange::new(499, 501)));
        assert!(!s.overlaps(SeqRange::new(500, 600)));
        // Refused ranges.
        assert_eq!(s.insert(SeqRange::new(5, 5)), Err(SetError::Empty));
        assert_eq!(s.insert(SeqRange::new(50, 120)), Err(SetError::Behind));
        assert_eq!(s.insert(SeqRange::new(120, 110)), Err(SetError::TooFar));
        assert_eq!(
            s.insert(SeqRange::new(200, 100u32.wrapping_add(MAX_WINDOW) + 1)),
            Err(SetError::TooFar)
        );
        // Advance: drops, cuts.
        s.advance(250);
        assert_eq!(s.floor(), 250);
        assert_eq!(
            s.ranges(),
            &[SeqRange::new(250, 500), SeqRange::new(600, 900)]
        );
        s.advance(100); // behind: ignored
        assert_eq!(s.floor(), 250);
        s.advance(600);
        assert_eq!(s.ranges(), &[SeqRange::new(600, 900)]);
        s.advance(900);
        assert!(s.is_empty());
        // N = 0 records nothing.
        let mut z = PlacedSet::<0>::new(0);
        assert_eq!(z.insert(SeqRange::new(1, 2)), Err(SetError::Full));
    }

    #[test]
    fn placed_set_wraps() {
        let floor = u32::MAX - 1000;
        let mut s = PlacedSet::<32>::new(floor);
        s.insert(SeqRange::new(u32::MAX - 100, 50)).unwrap();
        s.insert(SeqRange::new(50, 300)).unwrap();
        s.insert(SeqRange::new(u32::MAX - 500, u32::MAX - 400))
            .unwrap();
        assert_eq!(
            s.ranges(),
            &[
                SeqRange::new(u32::MAX - 500, u32::MAX - 400),
                SeqRange::new(u32::MAX - 100, 300)
            ]
        );
        assert!(s.contains(SeqRange::new(u32::MAX, 10)));
        assert!(!s.contains(SeqRange::new(u32::MAX - 401, 10)));
        assert!(before(u32::MAX, 5) && after(5, u32::MAX));
        s.advance(20);
        assert_eq!(s.ranges(), &[SeqRange::new(20, 300)]);
        assert!(!s.contains(SeqRange::new(10, 30)));
        // Many small ranges, in any order, merge into one.
        let mut s = PlacedSet::<32>::new(u32::MAX - 4096);
        let order = shuffled(64, 3);
        for &i in &order {
            let a = (u32::MAX - 4096).wrapping_add(i as u32 * 128);
            let _ = s.insert(SeqRange::new(a, a.wrapping_add(128)));
        }
        // With 32 entries some inserts may have been refused; never wrong.
        for r in s.ranges() {
            assert!(r.len() % 128 == 0);
        }
        for &i in &order {
            let a = (u32::MAX - 4096).wrapping_add(i as u32 * 128);
            let _ = s.insert(SeqRange::new(a, a.wrapping_add(128)));
        }
        assert_eq!(
            s.ranges(),
            &[SeqRange::new(
                u32::MAX - 4096,
                4096u32.wrapping_sub(4097).wrapping_add(4096)
            )]
        );
    }
}
