// SPDX-License-Identifier: GPL-2.0
//! The out-of-order placement engine (`rust/wire/ooo.rs`) on segments.
//!
//! Byte 0 picks the mode and options, bytes 1-4 seed the choices, bytes
//! 5-8 give the MPA start's sequence number (wraparound included).
//!
//! Mode 0 takes the rest as a hostile segment at a chosen sequence number
//! ahead of a chosen in-order position. Mode 1 cuts the rest into tagged
//! Writes, Read Responses and Sends, encodes them as an MPA stream with CRC
//! (markers as chosen), cuts the stream into segments (on FPDU boundaries
//! or anywhere), may flip one burst of up to 4 bytes, and scans every
//! segment but the first (the hole): on its own (only markers can anchor
//! it) and from the known FPDU start a walk from the hole's end follows.
//!
//! Every placement must be a CRC-valid FPDU as the streaming in-order
//! parser reads it, at the sequence range it names, its pieces exactly the
//! payload the parser extracts, nothing outside the segment; the Region
//! check and the PlacedSet never panic and hold their invariants. In mode 1
//! a placement at a real FPDU's range carries that FPDU's data and is never
//! one the burst touched; without a known start and without markers
//! nothing is placed; with clean FPDU-aligned segments and the walk's
//! known start every non-empty tagged FPDU outside the hole is placed. In both modes the
//! engine decides the same when it reads the segment in two pieces
//! (`scan_in`, as the kernel reads an skb where it lies).

use zcwire::crc32c::Crc32c;
use zcwire::ddp::Header;
use zcwire::mpa::{encode_fpdu, fpdu_len, FpduLayout, FpduParser, Framing};
use zcwire::ooo::{self, Need, PlacedSet, Placement, Region, SegmentBytes, SeqRange, Stream};
use zcwire::rdmap::{self, Opcode, Segment};

/// A 64-bit LCG (Knuth's MMIX constants); the high half is the output.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 32) as u32
    }
}

/// A segment in two pieces split at an offset, as an skb's linear part and
/// a fragment hold it.
struct Split<'a>(&'a [u8], &'a [u8]);

impl Split<'_> {
    fn byte(&self, at: usize) -> Option<u8> {
        match at.checked_sub(self.0.len()) {
            None => self.0.get(at).copied(),
            Some(b) => self.1.get(b).copied(),
        }
    }
}

impl SegmentBytes for Split<'_> {
    fn size(&self) -> usize {
        self.0.len() + self.1.len()
    }

    fn read(&self, off: usize, out: &mut [u8]) -> bool {
        for (i, o) in out.iter_mut().enumerate() {
            match off.checked_add(i).and_then(|at| self.byte(at)) {
                Some(b) => *o = b,
                None => return false,
            }
        }
        true
    }

    fn crc32c(&self, off: usize, len: usize) -> Option<u32> {
        let end = off.checked_add(len).filter(|&e| e <= self.size())?;
        let a = self.0.len();
        let mut c = Crc32c::new();
        if off < a {
            c = c.update(&self.0[off..end.min(a)]);
        }
        if end > a {
            c = c.update(&self.1[off.max(a) - a..end - a]);
        }
        Some(c.finish())
    }
}

/// The engine's decisions on `seg` read whole and read in two pieces split
/// at `cut` must be the same.
fn same_apart(st: &Stream, seq: u32, seg: &[u8], cut: usize) {
    let (a, b) = seg.split_at(cut.min(seg.len()));
    let whole: Result<Vec<_>, _> = ooo::scan(st, seq, seg).map(|x| x.collect());
    let apart: Result<Vec<_>, _> = ooo::scan_in(st, seq, &Split(a, b)).map(|x| x.collect());
    assert_eq!(whole, apart);
}

/// A tagged FPDU's target offset and payload (`None` for a Send).
type TaggedData = Option<(u64, Vec<u8>)>;

/// Re-reads a placement's FPDU with the in-order parser and checks the
/// pieces against it. Returns the payload the pieces gather.
fn verify(framing: Framing, st: &Stream, seq: u32, seg: &[u8], p: &Placement) -> Vec<u8> {
    let off = p.fpdu.start.wrapping_sub(seq) as usize;
    let end = p.fpdu.end.wrapping_sub(seq) as usize;
    assert!(off < end && end <= seg.len(), "FPDU outside the segment");
    assert!(p.bytes.start >= off && p.bytes.end <= end && p.bytes.len() >= p.len);
    assert!(p.len > 0 && p.opcode.is_tagged());
    let pos = seq.wrapping_add(off as u32).wrapping_sub(st.mpa_seq);
    let mut parser = FpduParser::new(framing, pos).expect("aligned FPDU start");
    let mut buf = vec![0u8; fpdu_len(65535)];
    let (used, f) = parser
        .push(&mut buf, &seg[off..end])
        .expect("a placed FPDU parses in order");
    let f = f.expect("a placed FPDU is whole");
    assert_eq!(used, end - off);
    let s = Segment::parse(f.ulpdu(&buf)).expect("a placed FPDU is RDMAP");
    let Header::Tagged(t) = s.ddp else {
        panic!("an untagged FPDU placed")
    };
    assert_eq!(
        (t.stag, t.to, t.last, s.opcode),
        (p.stag, p.to, p.last, p.opcode)
    );
    let mut got = Vec::new();
    let mut to = p.to;
    let mut prev = p.bytes.start;
    for piece in p.pieces() {
        assert_eq!(piece.to, to);
        assert!(piece.bytes.start >= prev && piece.bytes.end <= p.bytes.end);
        assert!(!piece.bytes.is_empty());
        got.extend_from_slice(&seg[piece.bytes.clone()]);
        to += piece.bytes.len() as u64;
        prev = piece.bytes.end;
    }
    assert_eq!(got, s.payload);
    got
}

/// Region checks and set bookkeeping on a placement: no panic, and what
/// they answer holds.
fn bookkeep(set: &mut PlacedSet<4>, p: &Placement, rng: &mut Rng) {
    let r = Region {
        stag: if rng.next() & 1 == 0 {
            p.stag
        } else {
            rng.next()
        },
        base_to: p.to.wrapping_sub(u64::from(rng.next() % 64)),
        len: u64::from(rng.next() % 0x2_0000),
        remote_write: rng.next() & 1 == 0,
        local_write: rng.next() & 1 == 0,
    };
    if let Ok(o) = r.check_placement(p) {
        assert_eq!(r.stag, p.stag);
        assert!(o + p.len as u64 <= r.len);
        assert_eq!(r.base_to + o, p.to);
        assert!(match p.need() {
            Need::RemoteWrite => r.remote_write,
            Need::LocalWrite => r.local_write,
        });
    }
    if set.insert(p.fpdu).is_ok() {
        assert!(set.contains(p.fpdu) && set.overlaps(p.fpdu));
    }
    assert!(set.len() <= 4);
    let rs = set.ranges();
    for w in rs.windows(2) {
        let f = set.floor();
        assert!(w[0].end.wrapping_sub(f) < w[1].start.wrapping_sub(f));
    }
    if rng.next() % 8 == 0 {
        let to = set.floor().wrapping_add(rng.next() % 0x4000);
        set.advance(to);
        assert!(set
            .ranges()
            .iter()
            .all(|x| !ooo::before(x.start, set.floor()) && !x.is_empty()));
    }
}

/// One input: panics on a broken invariant.
pub fn run(data: &[u8]) {
    if data.len() < 9 {
        return;
    }
    let framing = Framing {
        crc: data[0] & 0x10 == 0,
        markers: data[0] & 1 != 0,
    };
    let mut rng = Rng(u64::from(u32::from_le_bytes([
        data[1], data[2], data[3], data[4],
    ])));
    let mpa_seq = u32::from_le_bytes([data[5], data[6], data[7], data[8]]);
    let rest = &data[9..];
    let mut set = PlacedSet::<4>::new(mpa_seq);

    if data[0] & 2 == 0 {
        // Mode 0: one hostile segment.
        let rcv_nxt = mpa_seq.wrapping_add(rng.next() % 0x1_0000);
        let seq = rcv_nxt.wrapping_add(1 + rng.next() % 0x1_0000);
        let next_fpdu = if data[0] & 4 != 0 {
            Some(rcv_nxt.wrapping_add(rng.next() % 0x2_0000))
        } else {
            None
        };
        let st = Stream {
            mpa_seq,
            framing,
            max_ulpdu: if data[0] & 8 != 0 { 65535 } else { 1024 },
            rcv_nxt,
            next_fpdu,
        };
        set.advance(rcv_nxt);
        same_apart(&st, seq, rest, rng.next() as usize % (rest.len() + 1));
        if let Ok(scan) = ooo::scan(&st, seq, rest) {
            assert!(framing.crc);
            for p in scan.flatten() {
                assert!(p.len <= st.max_ulpdu);
                verify(framing, &st, seq, rest, &p);
                bookkeep(&mut set, &p, &mut rng);
            }
        }
        return;
    }

    // Mode 1: a real stream, cut and scanned.
    let framing = Framing {
        crc: true,
        ..framing
    };
    let mut wire = Vec::new();
    let mut fpdus: Vec<(std::ops::Range<usize>, TaggedData)> = Vec::new();
    let mut pos = 0u32;
    let mut off = 0;
    let mut to = 0x1000u64;
    while off < rest.len() && fpdus.len() < 64 && wire.len() < 32 * 1024 {
        let len = (rng.next() as usize % 1500).min(rest.len() - off);
        let data = &rest[off..off + len];
        off += len;
        let kind = rng.next() % 4;
        let (hdr, tagged) = match kind {
            0 => (rdmap::untagged_header(Opcode::Send, true, 1, 0, 0), false),
            1 => (
                rdmap::tagged_header(Opcode::ReadResponse, true, 0x99, to),
                true,
            ),
            _ => (
                rdmap::tagged_header(Opcode::Write, kind == 3, 0x42, to),
                true,
            ),
        };
        let hdr = hdr.expect("header");
        let mut u = vec![0u8; hdr.len()];
        hdr.encode(&mut u).expect("encode");
        u.extend_from_slice(data);
        let l = FpduLayout::new(pos, u.len(), framing.markers).expect("layout");
        let at = wire.len();
        wire.resize(at + l.wire_len, 0);
        encode_fpdu(&mut wire[at..], pos, &u, framing).expect("encode");
        let truth = if tagged && !data.is_empty() {
            Some((to, data.to_vec()))
        } else {
            None
        };
        fpdus.push((at..at + l.wire_len, truth));
        pos = l.next_start();
        to += data.len() as u64;
    }
    if fpdus.len() < 2 {
        return;
    }
    // Segments: on FPDU boundaries (one to three FPDUs each) or anywhere.
    let aligned = data[0] & 4 != 0;
    let mut cuts = Vec::new();
    if aligned {
        let mut i = 0;
        while i < fpdus.len() {
            let n = 1 + rng.next() as usize % 3;
            let j = (i + n).min(fpdus.len());
            cuts.push(fpdus[i].0.start..fpdus[j - 1].0.end);
            i = j;
        }
    } else {
        let mut at = 0;
        while at < wire.len() {
            let n = 1 + rng.next() as usize % 9000;
            let end = (at + n).min(wire.len());
            cuts.push(at..end);
            at = end;
        }
    }
    let burst = if data[0] & 8 != 0 {
        let k = rng.next() as usize % wire.len();
        let n = 1 + rng.next() as usize % 4;
        let end = (k + n).min(wire.len());
        for b in &mut wire[k..end] {
            *b ^= (rng.next() as u8) | 1;
        }
        Some(k..end)
    } else {
        None
    };
    let st = Stream {
        mpa_seq,
        framing,
        max_ulpdu: 65535,
        rcv_nxt: mpa_seq,
        next_fpdu: None,
    };
    // The known FPDU start the kernel's walk follows from the in-order
    // parser (as if it had read the hole's FPDU lengths): the hole's end,
    // or nothing known.
    let mut chain = (data[0] & 0x20 != 0).then_some(cuts[0].end);
    let mut placed = vec![false; fpdus.len()];
    for c in cuts.iter().skip(1) {
        let seq = mpa_seq.wrapping_add(c.start as u32);
        let seg = &wire[c.clone()];
        same_apart(&st, seq, seg, rng.next() as usize % (seg.len() + 1));
        // Without a known start and without markers nothing is placed.
        let free = ooo::scan(&st, seq, seg);
        if !framing.markers {
            assert_eq!(free.err(), Some(ooo::Refusal::NoFpduStart));
        }
        let mut scans = Vec::new();
        if let Ok(x) = ooo::scan(&st, seq, seg) {
            scans.push((seq, seg, x));
        }
        // From the known start, when it lies in this segment.
        if let Some(k) = chain.filter(|&k| c.start <= k && k < c.end) {
            let kseq = mpa_seq.wrapping_add(k as u32);
            let kst = Stream {
                next_fpdu: Some(kseq),
                ..st
            };
            let kseg = &wire[k..c.end];
            same_apart(&kst, kseq, kseg, rng.next() as usize % (kseg.len() + 1));
            let mut x = ooo::scan(&kst, kseq, kseg).expect("a known start scans");
            let mut ds = Vec::new();
            for d in x.by_ref() {
                ds.push(d);
            }
            chain = x
                .next_start()
                .map(|n| n.wrapping_sub(mpa_seq) as usize)
                .filter(|&n| n > k);
            if let (Some(n), None) = (chain, &burst) {
                assert!(
                    fpdus.iter().any(|(r, _)| r.start == n) || n >= wire.len(),
                    "a derived start not on an FPDU boundary"
                );
            }
            scans.push((kseq, kseg, ooo::scan(&kst, kseq, kseg).expect("again")));
        }
        for (seq, seg, scan) in scans {
            for d in scan {
                let Ok(p) = d else { continue };
                let got = verify(framing, &st, seq, seg, &p);
                bookkeep(&mut set, &p, &mut rng);
                let range = |r: &std::ops::Range<usize>| {
                    SeqRange::new(
                        mpa_seq.wrapping_add(r.start as u32),
                        mpa_seq.wrapping_add(r.end as u32),
                    )
                };
                let Some(i) = fpdus.iter().position(|(r, _)| range(r) == p.fpdu) else {
                    // Only a corrupted marker can point into a payload.
                    assert!(burst.is_some(), "an FPDU made of payload bytes placed");
                    continue;
                };
                let (r, truth) = &fpdus[i];
                if let Some(b) = &burst {
                    assert!(
                        b.end <= r.start || b.start >= r.end,
                        "a corrupted FPDU placed"
                    );
                }
                let (t_to, t_data) = truth.as_ref().expect("only tagged data is placed");
                assert_eq!((p.to, &got), (*t_to, t_data));
                placed[i] = true;
            }
        }
    }
    if aligned && burst.is_none() && data[0] & 0x20 != 0 {
        let hole = cuts[0].end;
        for (i, (r, truth)) in fpdus.iter().enumerate() {
            if r.start >= hole && truth.is_some() {
                assert!(placed[i], "FPDU {i} at {r:?} not placed");
            }
        }
    }
}
