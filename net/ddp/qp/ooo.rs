// SPDX-License-Identifier: GPL-2.0

//! Out-of-order direct placement: the kernel glue around the decision
//! engine (`rust/wire/ooo.rs`, Documentation/networking/zcddp.rst).
//!
//! A netfilter hook (`rust/helpers/tcp_ulp.c`) schedules a run of the
//! socket's receive path when a TCP segment with payload arrives ahead of
//! `rcv_nxt` (`TcpSock::kick_rx`): in process context under TCP's socket
//! spinlock with bottom halves off, as TCP's softirq takes it, or in the
//! work item when a thread owns the socket. Either way TCP's out-of-order
//! queue holds still and the run is serialised with the in-order path. The
//! run (like softirq's receive path and the work item's) first takes what
//! is in order, then [`Qp::ooo_walk`], which scans out-of-order bytes only
//! from an FPDU start it knows ([`engine::scan_in`] reads them where they
//! lie: headers a few bytes at a time, the CRC computed over the skb):
//!
//! 1. the walk from the known start: the in-order parser's next FPDU start
//!    (the current FPDU's end once its length field is read), carried by
//!    the length fields of what TCP holds in order to `rcv_nxt` or beyond,
//!    then through TCP's out-of-order queue as long as it holds the bytes
//!    there: each window is scanned from the known start and the walk goes
//!    on where the scan's last FPDU ends ([`engine::Scan::next_start`]; an
//!    FPDU that runs past a window is passed over by its length). It stops
//!    at a hole (the next start lies in it) and resumes there;
//! 2. with markers, every segment not yet scanned (past the walk's
//!    high-water mark, or in a gap it passed over: [`Gaps`]) from the
//!    FPDUs its markers point at;
//! 3. without markers, nothing else: a segment the walk cannot reach waits
//!    for the in-order path (counted once in `ZcddpOooRefusedNoStart`).
//!    Its first byte is never assumed to start an FPDU: a segment boundary
//!    can fall inside a Send whose payload looks like a Write FPDU.
//!
//! Each refusal is counted by its class ([`RefusalClass`]). For each
//! placement the engine finds, the walk checks the registration (valid, this
//! connection's, the access, the bounds, the peer unable to invalidate it;
//! for a Read Response also an outstanding Read's sink), records the
//! FPDU's sequence range in a [`PlacedSet`] with its head and CRC, and
//! only then copies the payload from the skb into the registered memory:
//! one copy.
//!
//! The in-order path still parses every FPDU and acts on it in order
//! (completions keep RFC 5040's order); for an FPDU whose range was
//! recorded with the same header and CRC it skips the copy, and the
//! direct path also the CRC pass over the queued bytes: the header it acts
//! on equals the one checked before the placement, and it reads none of
//! the payload. A recorded range met with another header or CRC (a
//! retransmission with other bytes) is checked and copied again.

use super::Qp;
use crate::stat::{self, s};
use crate::uapi;
use crate::wire::{
    mpa::{self, Fpdu, FpduLayout},
    ooo::{
        self as engine, Gaps, PlacedSet, Placement, Refusal, RefusalClass, SegmentBytes, SeqRange,
        Stream,
    },
    rdmap::Opcode,
};
use crate::zcnet::ddp_sock::OfoSeg;
use crate::zcnet::ulp::RxLocked;
use kernel::prelude::*;

/// TCP payload is scanned in windows of at most this: a longer skb is cut
/// after the last whole FPDU its length fields lead to.
const WINDOW: usize = 16384;
/// FPDUs placed out of order and not yet met in order, with their CRCs.
const RECS: usize = 256;
/// Ranges of the placed set (the engine's intended size).
const RANGES: usize = 32;
/// Gaps behind the high-water mark the walk looks into on each run.
const GAPS: usize = 8;
/// The walk's bounds per run: windows scanned and bytes; past them
/// another run is scheduled (bottom halves stay off at most this long).
const STEPS_PER_RUN: usize = 64;
const BYTES_PER_RUN: usize = 256 * 1024;
/// FPDU length fields read in TCP's in-order queue to carry the known
/// FPDU start past what it holds (the in-order path leaves at most part of
/// one FPDU there).
const QUEUED_STEPS: usize = 8;

/// The bytes of an FPDU's head recorded: the MPA length and the tagged
/// DDP/RDMAP header (markers skipped), as the engine read them.
pub(super) const HEAD: usize = engine::HEAD_LEN;

/// One FPDU placed out of order: its range, head and CRC, all checked by
/// the CRC before the placement.
#[derive(Clone, Copy)]
struct Rec {
    fpdu: SeqRange,
    head: [u8; HEAD],
    crc: [u8; 4],
}

/// The connection's out-of-order state (CRC negotiated only).
pub(crate) struct Ooo {
    /// Placement on (`ZCDDP_OOO`).
    pub(super) on: bool,
    /// Sequence number of stream position 0, once known.
    mpa_seq: Option<u32>,
    placed: PlacedSet<RANGES>,
    recs: KVec<Rec>,
    /// Out-of-order bytes before this were scanned (with markers), or
    /// counted as having no known FPDU start (without), but for the gaps.
    scanned: Option<u32>,
    /// The known FPDU start the walk reached: everything before it that
    /// TCP holds out of order was scanned from a known start.
    chain: Option<u32>,
    /// The scan at `chain` met a framing error: nothing after it is known
    /// until the in-order path passes it.
    stuck: bool,
    /// Where TCP held nothing behind `scanned` when the walk went past.
    gaps: Gaps<GAPS>,
    /// Payload bytes placed out of order so far (wrapping), for
    /// [`Qp::pump_bh`]'s count of those placed without owning the socket.
    pub(super) bytes: u64,
}

/// What the in-order path does with an FPDU.
pub(super) struct InOrder {
    range: SeqRange,
    /// Placed out of order with the same head and CRC: no copy, and no
    /// second CRC pass where the CRC is not computed yet.
    pub(super) skip: bool,
}

impl Ooo {
    /// The state of a connection that negotiated CRC.
    pub(super) fn new(on: bool) -> Result<Self> {
        let mut recs = KVec::new();
        recs.reserve(RECS, GFP_KERNEL)?;
        Ok(Self {
            on,
            mpa_seq: None,
            placed: PlacedSet::new(0),
            recs,
            scanned: None,
            chain: None,
            stuck: false,
            gaps: Gaps::new(0),
            bytes: 0,
        })
    }

    /// The in-order parser is at stream position `pos` and TCP's next byte
    /// to read is `copied()`: the mapping between them, taken once (it
    /// never changes; every byte read goes to the parser), so `copied` is
    /// asked only then.
    pub(super) fn sync(&mut self, copied: impl FnOnce() -> u32, pos: u32) {
        if self.mpa_seq.is_none() {
            let copied = copied();
            self.mpa_seq = Some(copied.wrapping_sub(pos));
            self.placed = PlacedSet::new(copied);
            self.gaps = Gaps::new(copied);
        }
    }

    /// The in-order path completed FPDU `f` (its bytes in `fbuf`, markers
    /// removed): whether its copy can be skipped. Counts a recorded range
    /// met with other bytes.
    pub(super) fn in_order(
        &self,
        sk: &RxLocked<'_>,
        fbuf: &[u8],
        f: &Fpdu,
        markers: bool,
    ) -> Option<InOrder> {
        let n = mpa::fpdu_len(f.ulpdu_len);
        let crc = fbuf
            .get(n.saturating_sub(mpa::CRC_LEN)..n)
            .and_then(|c| <[u8; 4]>::try_from(c).ok());
        self.in_order_at(sk, f.start, f.ulpdu_len, fbuf.get(..HEAD), crc, markers)
    }

    /// As [`Ooo::in_order`], for the FPDU at stream position `start` with
    /// a ULPDU of `ulpdu_len` bytes, its first bytes `head` (markers
    /// removed) and the CRC field `crc`.
    pub(super) fn in_order_at(
        &self,
        sk: &RxLocked<'_>,
        start: u32,
        ulpdu_len: usize,
        head: Option<&[u8]>,
        crc: Option<[u8; 4]>,
        markers: bool,
    ) -> Option<InOrder> {
        let m = self.mpa_seq?;
        let l = FpduLayout::new(start, ulpdu_len, markers).ok()?;
        let range = SeqRange::new(m.wrapping_add(start), m.wrapping_add(l.next_start()));
        if !self.placed.overlaps(range) {
            return Some(InOrder { range, skip: false });
        }
        let skip = self.placed.contains(range)
            && self
                .recs
                .iter()
                .any(|r| r.fpdu == range && Some(r.crc) == crc && head == Some(&r.head[..]));
        if !skip {
            stat::add(sk.net(), s::OOO_RETRANS_DIFFER, 1);
        }
        Some(InOrder { range, skip })
    }

    /// The in-order path consumed the stream up to the end of `io`.
    pub(super) fn consumed(&mut self, io: &InOrder) {
        let end = io.range.end;
        self.placed.advance(end);
        self.recs.retain(|r| engine::after(r.fpdu.end, end));
    }

    /// Every record goes (a registration went: an STag may come back
    /// naming other memory); the in-order path copies everything again.
    pub(super) fn forget(&mut self) {
        self.placed = PlacedSet::new(self.placed.floor());
        self.recs.clear();
    }
}

/// The engine reads out-of-order skbs where they lie.
impl SegmentBytes for OfoSeg<'_> {
    fn size(&self) -> usize {
        self.len
    }

    fn read(&self, off: usize, out: &mut [u8]) -> bool {
        OfoSeg::read(self, off, out)
    }

    fn crc32c(&self, off: usize, len: usize) -> Option<u32> {
        OfoSeg::crc32c(self, off, len)
    }
}

/// The last 4 bytes (its CRC) of the FPDU `fpdu` in `seg`; markers skipped
/// (the last 8 bytes hold one at most).
fn fpdu_crc(seg: &OfoSeg<'_>, fpdu: SeqRange, mpa_seq: u32, markers: bool) -> Option<[u8; 4]> {
    let n = 8usize.min(fpdu.len() as usize);
    let from = fpdu.end.wrapping_sub(n as u32);
    let mut raw = [0u8; 8];
    let raw = raw.get_mut(..n)?;
    if !seg.read(from.wrapping_sub(seg.seq) as usize, raw) {
        return None;
    }
    let mut out = [0u8; 8];
    let got = if markers {
        mpa::strip_markers(raw, from.wrapping_sub(mpa_seq), &mut out)
    } else {
        out.get_mut(..n)?.copy_from_slice(raw);
        n
    };
    <[u8; 4]>::try_from(out.get(got.checked_sub(mpa::CRC_LEN)?..got)?).ok()
}

/// The length of the whole FPDUs at the start of `seg` (no markers), at
/// most `max`, walking their length fields: where a window cut from a
/// longer skb may end.
fn whole_fpdus(seg: &OfoSeg<'_>, max: usize) -> usize {
    let mut off = 0usize;
    let mut h = [0u8; 2];
    while seg.read(off, &mut h) {
        let n = mpa::fpdu_len(usize::from(u16::from_be_bytes(h)));
        match off.checked_add(n) {
            Some(e) if e <= max.min(seg.len) => off = e,
            _ => break,
        }
    }
    off
}

/// The walk's spending in one run.
struct Run {
    steps: usize,
    bytes: usize,
}

impl Run {
    fn spent(&self) -> bool {
        self.steps >= STEPS_PER_RUN || self.bytes >= BYTES_PER_RUN
    }
}

/// Where the FPDU at the start of `seg` ends (no markers), by its length
/// field, as a sequence number; `None` when the field is not all there.
fn fpdu_end(seg: &OfoSeg<'_>) -> Option<u32> {
    let mut h = [0u8; mpa::HDR_LEN];
    if !seg.read(0, &mut h) {
        return None;
    }
    let u = usize::from(u16::from_be_bytes(h));
    Some(seg.seq.wrapping_add(mpa::fpdu_len(u) as u32))
}

impl Qp {
    /// Places what TCP holds out of order (TCP's queues held still, after
    /// the in-order path took what it could), within the run's bounds.
    /// Atomic context allowed (softirq, or TCP's spinlock held).
    pub(super) fn ooo_walk(&mut self, sk: &RxLocked<'_>) {
        // Every receive path calls this: what needs no call into TCP first.
        if self.error != 0 || !self.live || !self.ooo.as_ref().is_some_and(|o| o.on) {
            return;
        }
        if !sk.ofo_queued() {
            return;
        }
        let Some(mut o) = self.ooo.take() else {
            return;
        };
        self.ooo_run(sk, &mut o);
        self.ooo = Some(o);
    }

    fn ooo_run(&mut self, sk: &RxLocked<'_>, o: &mut Ooo) {
        let Some(p) = self.parser.as_ref() else {
            return;
        };
        let Some(mpa_seq) = o.mpa_seq else {
            return;
        };
        let (copied, rcv_nxt) = sk.rcv_seqs();
        let pos = p.position();
        // Every byte read went to the parser; anything else is a bug: no
        // placement then.
        if copied.wrapping_sub(pos) != mpa_seq {
            return;
        }
        let markers = self.rx.markers;
        // The next FPDU start the framing read so far gives: the parser's,
        // carried through what TCP queued in order.
        let known = p.next_fpdu_start().and_then(|k| {
            let k = mpa_seq.wrapping_add(k);
            engine::carry_start(
                k,
                copied,
                rcv_nxt,
                markers,
                p.max_ulpdu(),
                QUEUED_STEPS,
                |at| {
                    let mut h = [0u8; mpa::HDR_LEN];
                    matches!(sk.peek(at.wrapping_sub(copied), &mut h), Ok(true))
                        .then(|| u16::from_be_bytes(h))
                },
            )
        });
        let st = Stream {
            mpa_seq,
            framing: self.rx,
            max_ulpdu: mpa::MAX_ULPDU_LEN,
            rcv_nxt: copied,
            next_fpdu: None,
        };
        let mut run = Run { steps: 0, bytes: 0 };
        // 1. From the known start through what TCP holds contiguous after it.
        if !self.ooo_follow(sk, o, &st, known, &mut run) {
            return;
        }
        // 2. Markers anchor FPDUs in any segment: first in the gaps the
        // walk passed over, then past its high-water mark. Without markers
        // what the walk from a known start could not reach waits for the
        // in-order path, counted once per segment.
        if markers && !self.ooo_gaps(sk, o, &st, &mut run) {
            return;
        }
        self.ooo_past_mark(sk, o, &st, &mut run);
    }

    /// Follows the known FPDU start `known` (or where an earlier run got to
    /// from one) through TCP's out-of-order queue, scanning from each known
    /// start and going on at the end of the last FPDU the scan passed, as
    /// long as TCP holds the bytes there. False when the run's bounds ended
    /// it (another run is scheduled).
    fn ooo_follow(
        &mut self,
        sk: &RxLocked<'_>,
        o: &mut Ooo,
        st: &Stream,
        known: Option<u32>,
        run: &mut Run,
    ) -> bool {
        let Some(mut at) = engine::resume_at(known, o.chain, st.rcv_nxt) else {
            o.chain = None;
            return true;
        };
        if o.chain == Some(at) && o.stuck {
            return true;
        }
        o.stuck = false;
        loop {
            o.chain = Some(at);
            if run.spent() {
                sk.kick_rx();
                return false;
            }
            run.steps += 1;
            let Some(rest) = sk.ofo_next(at) else {
                return true;
            };
            if rest.seq != at {
                // The known start lies in a hole: wait for it.
                return true;
            }
            let win = if rest.len <= WINDOW || self.rx.markers {
                rest.len
            } else {
                whole_fpdus(&rest, WINDOW)
            };
            let next = if win == 0 {
                // (No markers.) An FPDU longer than a window: passed over by
                // its length (the in-order path places it).
                self.count(sk, RefusalClass::Framing, 1);
                fpdu_end(&rest)
            } else {
                run.bytes += win;
                let kst = Stream {
                    next_fpdu: Some(at),
                    ..*st
                };
                self.ooo_segment(sk, o, &kst, &rest.head(win))
            };
            match next {
                Some(n) if engine::after(n, at) => at = n,
                // Its length field not all there yet.
                Some(_) => return true,
                None => {
                    o.stuck = true;
                    return true;
                }
            }
        }
    }

    /// With markers: what landed in a gap behind the high-water mark since
    /// the walk went past ([`Gaps`]: a retransmission, or a segment another
    /// overtook), scanned for the FPDUs its markers point at. False when
    /// the run's bounds ended it (another run is scheduled).
    fn ooo_gaps(&mut self, sk: &RxLocked<'_>, o: &mut Ooo, st: &Stream, run: &mut Run) -> bool {
        o.gaps.advance(st.rcv_nxt);
        let mut i = 0;
        while let Some(g) = o.gaps.get(i) {
            if run.spent() {
                sk.kick_rx();
                return false;
            }
            run.steps += 1;
            let Some(rest) = sk.ofo_next(g.start) else {
                // Nothing queued from this gap on.
                break;
            };
            if !engine::before(rest.seq, g.end) {
                i += 1;
                continue;
            }
            let rest = rest.head(g.end.wrapping_sub(rest.seq) as usize);
            self.ooo_anchored(sk, o, st, &rest);
            o.gaps.remove(SeqRange::new(
                rest.seq,
                rest.seq.wrapping_add(rest.len as u32),
            ));
            run.bytes += rest.len;
        }
        true
    }

    /// One window with markers, unless the walk from a known start went
    /// through all of it.
    fn ooo_anchored(&mut self, sk: &RxLocked<'_>, o: &mut Ooo, st: &Stream, seg: &OfoSeg<'_>) {
        let end = seg.seq.wrapping_add(seg.len as u32);
        if o.chain.is_some_and(|c| !engine::before(c, end)) {
            return;
        }
        self.ooo_segment(sk, o, st, seg);
    }

    /// Each out-of-order window past the high-water mark: with markers
    /// scanned for the FPDUs its markers point at (the gaps passed over
    /// recorded); without, counted as having no known FPDU start unless the
    /// walk from a known start reached it (it waits for the in-order path,
    /// or for the walk to reach it once the hole before it fills).
    fn ooo_past_mark(&mut self, sk: &RxLocked<'_>, o: &mut Ooo, st: &Stream, run: &mut Run) {
        let mut from = match o.scanned {
            Some(x) if engine::after(x, st.rcv_nxt) => x,
            _ => st.rcv_nxt,
        };
        let reach = if o.stuck { None } else { o.chain };
        loop {
            if run.spent() {
                // More next run.
                sk.kick_rx();
                break;
            }
            run.steps += 1;
            let Some(rest) = sk.ofo_next(from) else {
                break;
            };
            if self.rx.markers {
                if engine::after(rest.seq, from) {
                    o.gaps.add(SeqRange::new(from, rest.seq));
                }
                self.ooo_anchored(sk, o, st, &rest);
                run.bytes += rest.len;
            } else if reach.is_none_or(|c| engine::before(c, rest.seq)) {
                self.count(sk, RefusalClass::NoStart, 1);
            }
            from = rest.end;
            o.scanned = Some(from);
        }
    }

    /// Counts `n` refusals of class `c`.
    fn count(&self, sk: &RxLocked<'_>, c: RefusalClass, n: i64) {
        let idx = match c {
            RefusalClass::NoStart => s::OOO_REFUSED_NO_START,
            RefusalClass::Framing => s::OOO_REFUSED_FRAMING,
            RefusalClass::InOrderOnly => s::OOO_REFUSED_IN_ORDER_ONLY,
            RefusalClass::Access => s::OOO_REFUSED_ACCESS,
        };
        stat::add(sk.net(), idx, n);
    }

    /// One window of out-of-order payload, read where it lies: placed
    /// where the engine and the registration allow, each refusal counted by
    /// its class. Where the next FPDU starts after it, when known
    /// ([`engine::Scan::next_start`]).
    fn ooo_segment(
        &mut self,
        sk: &RxLocked<'_>,
        o: &mut Ooo,
        st: &Stream,
        seg: &OfoSeg<'_>,
    ) -> Option<u32> {
        let mut scan = match engine::scan_in(st, seg.seq, seg) {
            Ok(x) => x,
            Err(Refusal::NotAhead | Refusal::NoData) => return None,
            Err(r) => {
                self.count(sk, r.class(), 1);
                return None;
            }
        };
        for d in scan.by_ref() {
            let r = match d {
                Ok(p) => self.ooo_place(sk, o, seg, &p),
                Err(r) => Err(r.reason.class()),
            };
            if let Err(c) = r {
                self.count(sk, c, 1);
            }
        }
        scan.next_start()
    }

    /// Checks, records and copies one placement.
    fn ooo_place(
        &mut self,
        sk: &RxLocked<'_>,
        o: &mut Ooo,
        seg: &OfoSeg<'_>,
        p: &Placement,
    ) -> Result<(), RefusalClass> {
        // Placed already (a retransmission that came out of order too).
        if o.placed.contains(p.fpdu) {
            return Ok(());
        }
        use RefusalClass::{Access, InOrderOnly};
        let i = self
            .regions
            .iter()
            .position(|r| r.stag == p.stag && r.valid)
            .ok_or(Access)?;
        let r = self.regions.get(i).ok_or(Access)?;
        // A Send with Invalidate still in the hole could invalidate any
        // other registration before this segment's turn: only those the
        // peer cannot invalidate.
        if r.access & uapi::ACCESS_NO_REMOTE_INV == 0 {
            return Err(Access);
        }
        let reg = engine::Region {
            stag: r.stag,
            base_to: r.base,
            len: r.len,
            remote_write: r.access & uapi::ACCESS_REMOTE_WRITE != 0,
            local_write: r.access & uapi::ACCESS_LOCAL_WRITE != 0,
        };
        let off = reg.check_placement(p).map_err(|_| Access)?;
        if p.opcode == Opcode::ReadResponse {
            // Into the sink of a Read this side issued, within it.
            let end = p.to.checked_add(p.len as u64).ok_or(Access)?;
            let sink = self.orq.iter().any(|x| {
                x.lkey == p.stag
                    && p.to >= x.addr
                    && x.addr
                        .checked_add(u64::from(x.len))
                        .is_some_and(|e| end <= e)
            });
            if !sink {
                return Err(Access);
            }
        }
        let mpa_seq = o.mpa_seq.ok_or(InOrderOnly)?;
        let crc = fpdu_crc(seg, p.fpdu, mpa_seq, self.rx.markers).ok_or(InOrderOnly)?;
        if o.recs.len() >= RECS {
            return Err(InOrderOnly);
        }
        // Recorded first, then copied.
        o.placed.insert(p.fpdu).map_err(|_| InOrderOnly)?;
        o.recs
            .push_within_capacity(Rec {
                fpdu: p.fpdu,
                head: p.head,
                crc,
            })
            .map_err(|_| InOrderOnly)?;
        let mut n = 0usize;
        let mut copy = || -> Result<(), ()> {
            let mr = &mut self.regions.get_mut(i).ok_or(())?.mr;
            for piece in p.pieces() {
                let len = piece.bytes.len();
                let at = off.checked_add(piece.to.wrapping_sub(p.to)).ok_or(())?;
                seg.fill(mr, at, piece.bytes.start, len).map_err(|_| ())?;
                n += len;
            }
            Ok(())
        };
        let r = copy();
        if r.is_err() {
            // Not all of it landed: the in-order path copies it.
            o.recs.pop();
        }
        stat::add(sk.net(), s::BYTES_PLACED_OUT_OF_ORDER, n as i64);
        o.bytes = o.bytes.wrapping_add(n as u64);
        r.map_err(|()| Access)
    }
}
