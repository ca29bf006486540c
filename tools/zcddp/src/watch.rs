//! A reader thread's watch of a registered region the peer writes into:
//! does zcddp put bytes that came behind a hole into memory before the hole
//! is filled (out-of-order placement, Documentation/networking/zcddp.rst)?
//!
//! Placed in order, a region fills from its start, FPDU by FPDU: a block
//! written means every block before it is written. The watch scans the
//! region from its end down, again and again, for a block still as it was
//! before the peer wrote (its first 8 bytes unchanged) at least 8 KiB (two
//! FPDUs: two bytes of one FPDU may be copied in any order) below a block
//! already changed. Such a sighting shows bytes behind a hole in memory
//! before the hole was filled, when the block seen unchanged did change in
//! the end ([`Sightings::ahead`]): a block the peer wrote with its old
//! bytes is no proof.
//!
//! ```no_run
//! # fn f(s: &std::net::TcpStream) -> std::io::Result<()> {
//! use std::sync::atomic::{AtomicBool, Ordering};
//! let region = zcddp::Mr::new(s, 1 << 18, zcddp::ACCESS_LOCAL_WRITE | zcddp::ACCESS_REMOTE_WRITE)?;
//! let w = zcddp::watch::Watch::new(&region);
//! let stop = AtomicBool::new(false);
//! let seen = std::thread::scope(|sc| {
//!     let t = sc.spawn(|| w.run(&stop));
//!     // ... the peer's Writes, until their completion ...
//!     stop.store(true, Ordering::Relaxed);
//!     t.join()
//! });
//! if let Ok(seen) = seen {
//!     println!("watch scans={} ahead={}", seen.scans, seen.ahead(&w, region.bytes()));
//! }
//! # Ok(()) }
//! ```

use crate::Mr;
use std::marker::PhantomData;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The watch's block.
pub const BLOCK: usize = 512;
/// The distance, in blocks, between a changed block and an unchanged one
/// below it that makes a sighting.
const APART: usize = 8192 / BLOCK;
/// Sightings kept.
const SIGHTINGS: usize = 4096;
/// The pause between two scans.
const PAUSE: Duration = Duration::from_micros(200);

/// The first 8 bytes of `b` at `off` as a word (0 past its end).
fn head(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .and_then(|w| w.try_into().ok())
        .map_or(0, u64::from_be_bytes)
}

/// A region's watch: the region, and the first 8 bytes of each of its
/// blocks as they stood when the watch was made.
pub struct Watch<'r> {
    addr: usize,
    before: Vec<u64>,
    _region: PhantomData<&'r [u8]>,
}

impl<'r> Watch<'r> {
    /// The watch of `region`, its bytes as they stand now (before the peer
    /// writes them). A tail shorter than a block is not watched.
    pub fn new<S: AsRawFd>(region: &'r Mr<'_, S>) -> Self {
        Self::of(region.bytes())
    }

    /// The watch of the bytes `b`.
    fn of(b: &'r [u8]) -> Self {
        Self {
            addr: b.as_ptr() as usize,
            before: (0..b.len() / BLOCK).map(|k| head(b, k * BLOCK)).collect(),
            _region: PhantomData,
        }
    }

    /// The first 8 bytes of block `k` as they stand now.
    fn now(&self, k: usize) -> u64 {
        let mut w = 0u64;
        for i in 0..8 {
            // SAFETY: block `k` lies in the region (`k < before.len()`, each
            // block whole inside it), which stays registered and alive for
            // `'r`, borrowed shared by `self`; zcddp writes it concurrently,
            // so its bytes are read volatile, one by one, and only compared.
            let b = unsafe { std::ptr::read_volatile((self.addr + k * BLOCK + i) as *const u8) };
            w = w << 8 | u64::from(b);
        }
        w
    }

    /// Scans the region until `stop`, from its end down each time (so the
    /// changed block of a sighting was seen first), a short pause between
    /// scans.
    pub fn run(&self, stop: &AtomicBool) -> Sightings {
        let mut seen = Sightings {
            scans: 0,
            blocks: Vec::new(),
        };
        while !stop.load(Ordering::Relaxed) {
            seen.scans += 1;
            if let Some(k) = self.scan(|k| self.now(k)) {
                if seen.blocks.len() < SIGHTINGS {
                    seen.blocks.push(k);
                }
            }
            std::thread::sleep(PAUSE);
        }
        seen
    }

    /// One scan, block `k`'s first 8 bytes read by `now(k)` from the end
    /// down: the highest block unchanged at least [`APART`] blocks below
    /// the highest changed one, if any.
    fn scan(&self, now: impl Fn(usize) -> u64) -> Option<usize> {
        let mut top = None;
        for (k, &b) in self.before.iter().enumerate().rev() {
            let changed = now(k) != b;
            match top {
                None if changed => top = Some(k),
                Some(t) if !changed && t - k >= APART => return Some(k),
                _ => {}
            }
        }
        None
    }
}

/// What a watch saw: its scans, and the blocks it saw unchanged below a
/// changed one.
pub struct Sightings {
    /// The scans made.
    pub scans: u64,
    blocks: Vec<usize>,
}

impl Sightings {
    /// The sightings that show bytes ahead of a hole: those whose block
    /// holds other bytes in `after` (the region once the peer's writes
    /// completed) than before.
    pub fn ahead(&self, w: &Watch<'_>, after: &[u8]) -> usize {
        self.blocks
            .iter()
            .filter(|&&k| {
                w.before
                    .get(k)
                    .is_some_and(|&b| head(after, k * BLOCK) != b)
            })
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A region of 64 blocks, zero before, with blocks `written` changed.
    fn sighting(written: &[usize]) -> Option<usize> {
        let before = vec![0u8; 64 * BLOCK];
        let w = Watch::of(&before);
        w.scan(|k| u64::from(written.contains(&k)))
    }

    #[test]
    fn in_order_fill_is_no_sighting() {
        assert_eq!(sighting(&[]), None);
        assert_eq!(sighting(&(0..40).collect::<Vec<_>>()), None);
        assert_eq!(sighting(&(0..64).collect::<Vec<_>>()), None);
    }

    #[test]
    fn a_block_ahead_of_a_hole() {
        // Blocks 0..20 and 50 written: the first unchanged block two FPDUs
        // below 50 is the sighting.
        let mut w: Vec<usize> = (0..20).collect();
        w.push(50);
        assert_eq!(sighting(&w), Some(50 - APART));
        // Closer than two FPDUs (16 blocks) is no sighting.
        let mut w: Vec<usize> = (0..40).collect();
        w.push(50);
        assert_eq!(sighting(&w), None);
        // A hole at 0 and 1, 2..20 written: no sighting by 2..20 alone.
        assert_eq!(sighting(&(2..20).collect::<Vec<_>>()), Some(1));
    }

    #[test]
    fn ahead_counts_blocks_changed_in_the_end() {
        let before = vec![7u8; 8 * BLOCK];
        let w = Watch::of(&before);
        let mut after = before.clone();
        after[3 * BLOCK] = 1;
        let seen = Sightings {
            scans: 2,
            blocks: vec![3, 5],
        };
        // Block 5 holds its old bytes in the end: no proof.
        assert_eq!(seen.ahead(&w, &after), 1);
    }
}
