// SPDX-License-Identifier: GPL-2.0
//! The streaming FPDU parser, fed in random chunks.
//!
//! Byte 0 picks the framing (CRC, markers) and the mode; bytes 1-4 seed the
//! chunking. Mode 0 feeds the rest as a raw (hostile) TCP stream: no
//! panic, bounded buffer, every FPDU handed up fits, and each one's ULPDU
//! goes through the DDP/RDMAP classifier. Mode 1 cuts the rest into ULPDUs,
//! encodes them as a stream and checks they all come back intact.

use zcwire::mpa::{encode_fpdu, fpdu_len, FpduLayout, FpduParser, Framing};
use zcwire::rdmap::Segment;

const MAX_ULPDU: usize = 2048;

struct Rng(u32);

impl Rng {
    fn next(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }
}

fn feed(
    p: &mut FpduParser,
    buf: &mut [u8],
    stream: &[u8],
    rng: &mut Rng,
    mut each: impl FnMut(&[u8]),
) -> bool {
    let mut at = 0;
    while at < stream.len() {
        let chunk = 1 + (rng.next() as usize % 1500);
        let end = (at + chunk).min(stream.len());
        let mut data = &stream[at..end];
        while !data.is_empty() {
            match p.push(buf, data) {
                Ok((used, fpdu)) => {
                    assert!(used <= data.len());
                    if let Some(f) = fpdu {
                        assert!(f.ulpdu_len <= MAX_ULPDU);
                        each(f.ulpdu(buf));
                    } else {
                        assert_eq!(used, data.len());
                    }
                    data = &data[used..];
                }
                Err(_) => return false,
            }
        }
        at = end;
    }
    true
}

/// One input: panics on a broken invariant.
pub fn run(data: &[u8]) {
    if data.len() < 5 {
        return;
    }
    let framing = Framing {
        crc: data[0] & 1 != 0,
        markers: data[0] & 2 != 0,
    };
    let mut rng = Rng(u32::from_le_bytes([data[1], data[2], data[3], data[4]]) | 1);
    let start = if data[0] & 8 != 0 { rng.next() & !3 } else { 0 };
    let rest = &data[5..];
    let mut buf = [0u8; fpdu_len(MAX_ULPDU)];
    // The buffer would take a ULPDU up to 2 bytes longer (pad); the limit
    // must still hold exactly.
    let mut p = FpduParser::new(framing, start)
        .unwrap()
        .with_max_ulpdu(MAX_ULPDU);
    if data[0] & 4 == 0 {
        feed(&mut p, &mut buf, rest, &mut rng, |u| {
            if let Ok(seg) = Segment::parse(u) {
                let _ = seg.read_request();
                let _ = seg.invalidate_stag();
            }
        });
        return;
    }
    // Mode 1: encode the input as FPDUs.
    let mut wire = [0u8; 24 * 1024];
    let mut wn = 0;
    let mut pos = start;
    let mut lens = [0usize; 64];
    let mut count = 0;
    let mut off = 0;
    while off < rest.len() && count < lens.len() {
        let len = (rng.next() as usize % 700).min(rest.len() - off);
        let ulpdu = &rest[off..off + len];
        let layout = FpduLayout::new(pos, len, framing.markers).unwrap();
        if wn + layout.wire_len > wire.len() {
            break;
        }
        let n = encode_fpdu(&mut wire[wn..], pos, ulpdu, framing).unwrap();
        assert_eq!(n, layout.wire_len);
        wn += n;
        pos = layout.next_start();
        lens[count] = off;
        count += 1;
        off += len;
    }
    let mut got = 0;
    let mut expect_off = 0;
    let ok = feed(&mut p, &mut buf, &wire[..wn], &mut rng, |u| {
        assert_eq!(lens[got], expect_off);
        assert_eq!(u, &rest[expect_off..expect_off + u.len()]);
        expect_off += u.len();
        got += 1;
    });
    assert!(ok, "a well-formed stream is accepted");
    assert_eq!(got, count);
    assert_eq!(p.position(), pos);
}
