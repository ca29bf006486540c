// SPDX-License-Identifier: GPL-2.0

//! CRC32c (Castagnoli), the MPA CRC (RFC 5044 §4.4, the iSCSI CRC of
//! RFC 3720 §12.1 and its Appendix B.4 test vectors).
//!
//! Reflected polynomial 0x82f63b78, register preset to all ones, result
//! complemented. [`Crc32c::finish`] gives the conventional value (0xe3069283
//! for `"123456789"`).
//!
//! # On the wire
//!
//! The MPA CRC field holds the four bytes of the iSCSI digest: the
//! conventional value in **little-endian** byte order ([`Crc32c::to_wire`]).
//! This is what soft-iWARP does (`siw_crc_final()` stores `~crc` with
//! `put_unaligned_le32`) and what RFC 3720 B.4 lists: 32 zero bytes give the
//! value 0x8a9136aa, sent as `aa 36 91 8a`.
//!
//! The CRC of an FPDU covers every byte of the FPDU before the CRC field:
//! ULPDU_Length, the ULPDU, the pad, and any markers that fall inside the
//! FPDU (see [`super::mpa`]).

/// The reflected Castagnoli polynomial.
pub const POLY: u32 = 0x82f6_3b78;

/// Slicing-by-8 tables: `TABLES[0]` is the classic byte table, `TABLES[k]`
/// advances a byte through `k` further zero bytes.
static TABLES: [[u32; 256]; 8] = make_tables();

const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

#[inline]
fn tab(k: usize, b: u8) -> u32 {
    // `k` is a constant below 8 at every call site and `b` indexes 256
    // entries, so neither lookup can fail; `get` keeps that visible.
    match TABLES.get(k) {
        Some(t) => t[usize::from(b)],
        None => 0,
    }
}

/// A running CRC32c.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crc32c {
    reg: u32,
}

impl Default for Crc32c {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc32c {
    /// A fresh CRC (register preset to all ones).
    pub const fn new() -> Self {
        Self { reg: !0 }
    }

    /// Adds `data` and returns the updated CRC (for chaining:
    /// `Crc32c::new().update(a).update(b).finish()`).
    #[must_use]
    pub fn update(mut self, data: &[u8]) -> Self {
        self.feed(data);
        self
    }

    /// Adds `data` in place.
    pub fn feed(&mut self, data: &[u8]) {
        let mut c = self.reg;
        let mut chunks = data.chunks_exact(8);
        for w in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            let lo = c ^ u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            c = tab(7, lo as u8)
                ^ tab(6, (lo >> 8) as u8)
                ^ tab(5, (lo >> 16) as u8)
                ^ tab(4, (lo >> 24) as u8)
                ^ tab(3, b[4])
                ^ tab(2, b[5])
                ^ tab(1, b[6])
                ^ tab(0, b[7]);
        }
        for &b in chunks.remainder() {
            c = (c >> 8) ^ tab(0, (c as u8) ^ b);
        }
        self.reg = c;
    }

    /// Adds `n` zero bytes (the MPA pad).
    pub fn feed_zeros(&mut self, n: usize) {
        for _ in 0..n {
            self.feed(&[0]);
        }
    }

    /// A running CRC from its register (as [`Crc32c::register`] gave it):
    /// for a CRC continued by another implementation of the same register
    /// (the kernel's `crc32c(reg, p, len)`, which neither presets nor
    /// complements).
    pub const fn from_register(reg: u32) -> Self {
        Self { reg }
    }

    /// The register (not complemented).
    pub const fn register(self) -> u32 {
        self.reg
    }

    /// The conventional CRC value (complemented register).
    pub const fn finish(self) -> u32 {
        !self.reg
    }

    /// The four bytes of the MPA CRC field (little-endian, as siw and
    /// RFC 3720 B.4).
    pub const fn to_wire(self) -> [u8; 4] {
        self.finish().to_le_bytes()
    }
}

/// The CRC32c of `data`.
pub fn checksum(data: &[u8]) -> u32 {
    Crc32c::new().update(data).finish()
}

/// Reads an MPA CRC field (the inverse of [`Crc32c::to_wire`]).
pub const fn from_wire(field: [u8; 4]) -> u32 {
    u32::from_le_bytes(field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_round_trip() {
        let a = Crc32c::new().update(b"12345");
        let b = Crc32c::from_register(a.register()).update(b"6789");
        assert_eq!(b.finish(), 0xe306_9283);
    }

    /// Bit-at-a-time reference.
    fn slow(data: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in data {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            }
        }
        !c
    }

    #[test]
    fn check_value() {
        assert_eq!(checksum(b"123456789"), 0xe306_9283);
        assert_eq!(checksum(b""), 0);
    }

    #[test]
    fn rfc3720_b4_vectors() {
        // RFC 3720 Appendix B.4, the CRC bytes as listed there (= on the wire).
        let zeros = [0u8; 32];
        assert_eq!(
            Crc32c::new().update(&zeros).to_wire(),
            [0xaa, 0x36, 0x91, 0x8a]
        );
        let ones = [0xffu8; 32];
        assert_eq!(
            Crc32c::new().update(&ones).to_wire(),
            [0x43, 0xab, 0xa8, 0x62]
        );
        let mut inc = [0u8; 32];
        for (i, b) in inc.iter_mut().enumerate() {
            *b = i as u8;
        }
        assert_eq!(
            Crc32c::new().update(&inc).to_wire(),
            [0x4e, 0x79, 0xdd, 0x46]
        );
        let mut dec = [0u8; 32];
        for (i, b) in dec.iter_mut().enumerate() {
            *b = 31 - i as u8;
        }
        assert_eq!(
            Crc32c::new().update(&dec).to_wire(),
            [0x5c, 0xdb, 0x3f, 0x11]
        );
        assert_eq!(from_wire([0xaa, 0x36, 0x91, 0x8a]), 0x8a91_36aa);
    }

    #[test]
    fn streaming_equals_oneshot_and_reference() {
        let mut data = [0u8; 1031];
        let mut x = 0x1234_5678u32;
        for b in data.iter_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *b = x as u8;
        }
        let whole = checksum(&data);
        assert_eq!(whole, slow(&data));
        for split in [0, 1, 7, 8, 9, 63, 500, 1030, 1031] {
            let (a, b) = data.split_at(split);
            assert_eq!(Crc32c::new().update(a).update(b).finish(), whole);
        }
        let mut c = Crc32c::new();
        for chunk in data.chunks(3) {
            c.feed(chunk);
        }
        assert_eq!(c.finish(), whole);
    }

    #[test]
    fn zeros_helper() {
        let mut a = Crc32c::new().update(b"abc");
        a.feed_zeros(3);
        assert_eq!(a.finish(), checksum(b"abc\0\0\0"));
    }
}
