// SPDX-License-Identifier: GPL-2.0
//! The cargo-fuzz targets of `tools/fuzz` under `cargo test`, on stable and
//! deterministic: each target's body (`tools/fuzz/bodies/NAME.rs`, the same
//! file its fuzz target calls) runs on every seed checked in under
//! `tools/fuzz/seeds/NAME` and then on a fixed number of inputs mutated from
//! them by a fixed-seed generator (bit flips, interesting values in length
//! fields, inserted, deleted, duplicated and spliced ranges, truncation). The
//! same inputs on every run and every machine, so a failure reproduces;
//! coverage-guided fuzzing with a growing corpus is `make fuzz`
//! (`scripts/fuzz.sh`).
//!
//! A failing input is written to `$CARGO_TARGET_TMPDIR/fuzz-replay-NAME.bin`
//! (replay it with `cargo fuzz run NAME FILE` in `tools/fuzz`).

use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;

#[path = "../../fuzz/bodies/ddp_header.rs"]
mod ddp_header;
#[path = "../../fuzz/bodies/fpdu_stream.rs"]
mod fpdu_stream;
#[path = "../../fuzz/bodies/mpa_startup.rs"]
mod mpa_startup;
#[path = "../../fuzz/bodies/ooo_segment.rs"]
mod ooo_segment;
#[path = "../../fuzz/bodies/terminate.rs"]
mod terminate;

/// Inputs grow to at most this many bytes.
const MAX_LEN: usize = 16 * 1024;

/// xorshift64*: a fixed seed gives the same inputs everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Values that sit on boundaries of the codecs' length and offset fields.
const INTERESTING: [u32; 12] = [
    0,
    1,
    2,
    3,
    4,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x7fff,
    0xffff,
    0xffff_ffff,
];

fn seeds(name: &str) -> Vec<Vec<u8>> {
    let dir: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "fuzz", "seeds", name]
        .iter()
        .collect();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a seed directory entry").path())
        .collect();
    files.sort();
    let seeds: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
        .collect();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    seeds
}

/// One mutation of `buf` in place; `other` is a seed to splice from.
fn mutate(rng: &mut Rng, buf: &mut Vec<u8>, other: &[u8]) {
    match rng.below(9) {
        0 if !buf.is_empty() => {
            let i = rng.below(buf.len());
            buf[i] ^= 1 << rng.below(8);
        }
        1 if !buf.is_empty() => {
            let i = rng.below(buf.len());
            buf[i] = rng.next() as u8;
        }
        2 if buf.len() >= 2 => {
            // A big-endian 16- or 32-bit field (the wire's byte order).
            let v = INTERESTING[rng.below(INTERESTING.len())];
            let w = if rng.below(2) == 0 || buf.len() < 4 {
                2
            } else {
                4
            };
            let i = rng.below(buf.len() - w + 1);
            let bytes = v.to_be_bytes();
            buf[i..i + w].copy_from_slice(&bytes[4 - w..]);
        }
        3 => {
            let i = rng.below(buf.len() + 1);
            let n = 1 + rng.below(16);
            let ins: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            buf.splice(i..i, ins);
        }
        4 if !buf.is_empty() => {
            let i = rng.below(buf.len());
            let n = 1 + rng.below((buf.len() - i).min(64));
            buf.drain(i..i + n);
        }
        5 if !buf.is_empty() => {
            // Duplicate a range (repeated headers, FPDUs, fields).
            let i = rng.below(buf.len());
            let n = 1 + rng.below((buf.len() - i).min(256));
            let dup = buf[i..i + n].to_vec();
            let at = rng.below(buf.len() + 1);
            buf.splice(at..at, dup);
        }
        6 if !other.is_empty() => {
            // Splice: our head, the other seed's tail.
            let i = rng.below(buf.len() + 1);
            let j = rng.below(other.len());
            buf.truncate(i);
            buf.extend_from_slice(&other[j..]);
        }
        7 => {
            let n = rng.below(buf.len() + 1);
            buf.truncate(n);
        }
        _ => {
            let n = rng.below(64);
            *buf = (0..n).map(|_| rng.next() as u8).collect();
        }
    }
    buf.truncate(MAX_LEN);
}

fn run_one(name: &str, run: fn(&[u8]), what: &str, input: &[u8]) {
    if panic::catch_unwind(AssertUnwindSafe(|| run(input))).is_err() {
        let path =
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-replay-{name}.bin"));
        let saved = std::fs::write(&path, input).is_ok();
        panic!(
            "{name}: {what} ({} bytes) broke an invariant{}",
            input.len(),
            if saved {
                format!("; input in {}", path.display())
            } else {
                String::new()
            }
        );
    }
}

/// Every seed, then `count` mutated inputs from generator seed `seed`.
fn replay(name: &str, run: fn(&[u8]), seed: u64, count: usize) {
    let seeds = seeds(name);
    for (i, s) in seeds.iter().enumerate() {
        run_one(name, run, &format!("seed {i}"), s);
    }
    let mut rng = Rng(seed);
    let mut cur = seeds[0].clone();
    for i in 0..count {
        // Half the time start again from a seed, else keep walking.
        if rng.below(2) == 0 {
            cur = seeds[rng.below(seeds.len())].clone();
        }
        let other = &seeds[rng.below(seeds.len())];
        for _ in 0..1 + rng.below(4) {
            mutate(&mut rng, &mut cur, other);
        }
        run_one(name, run, &format!("mutation {i} of seed 0x{seed:x}"), &cur);
    }
}

#[test]
fn replay_mpa_startup() {
    replay("mpa_startup", mpa_startup::run, 0x6d70_6131, 200_000);
}

#[test]
fn replay_ddp_header() {
    replay("ddp_header", ddp_header::run, 0x6464_7031, 200_000);
}

#[test]
fn replay_terminate() {
    replay("terminate", terminate::run, 0x7465_726d, 200_000);
}

#[test]
fn replay_fpdu_stream() {
    replay("fpdu_stream", fpdu_stream::run, 0x6670_6475, 50_000);
}

#[test]
fn replay_ooo_segment() {
    replay("ooo_segment", ooo_segment::run, 0x6f6f_6f31, 50_000);
}
