// SPDX-License-Identifier: GPL-2.0

//! The Internet checksum (RFC 1071).

/// Adds `data` to a running one's-complement sum (not yet folded).
///
/// `data` is read as big-endian 16-bit words; an odd trailing byte is padded
/// with zero, so only the last chunk of a message may have odd length.
pub fn sum(mut acc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for w in &mut chunks {
        acc = acc.wrapping_add(u32::from(u16::from_be_bytes([w[0], w[1]])));
        // Fold early so the accumulator never overflows, whatever the length.
        acc = (acc & 0xffff) + (acc >> 16);
    }
    if let [b] = chunks.remainder() {
        acc = acc.wrapping_add(u32::from(*b) << 8);
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc
}

/// Folds a running sum to 16 bits and complements it: the checksum field value.
pub fn finish(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// The Internet checksum of `data`.
pub fn checksum(data: &[u8]) -> u16 {
    finish(sum(0, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: the sum of these words is 0xddf2.
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(finish(sum(0, &d)), !0xddf2);
    }

    #[test]
    fn verifies_to_zero() {
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        let c = checksum(&h);
        assert_eq!(c, 0xb861);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(checksum(&h), 0);
    }

    #[test]
    fn matches_the_word_by_word_sum() {
        // The RFC's 16-bit definition, folded at every step.
        fn reference(data: &[u8]) -> u16 {
            let mut acc = 0u32;
            for w in data.chunks(2) {
                let v = u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]);
                acc += u32::from(v);
                acc = (acc & 0xffff) + (acc >> 16);
            }
            !(acc as u16)
        }
        let mut x = 0x1234_5678u32;
        let mut data = [0u8; 131];
        for b in data.iter_mut() {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            *b = (x >> 16) as u8;
        }
        for len in 0..data.len() {
            for start in 0..4.min(data.len() - len) {
                let d = &data[start..start + len];
                assert_eq!(checksum(d), reference(d), "start {start} len {len}");
            }
        }
        // A running sum over chunks of even length equals the whole sum.
        let (a, b) = data.split_at(58);
        assert_eq!(finish(sum(sum(0, a), b)), checksum(&data));
    }

    #[test]
    fn odd_length_and_large_input() {
        assert_eq!(checksum(&[0xff]), !0xff00);
        let big = [0xffu8; 100_001];
        // Must not overflow; all-ones words keep the folded sum at 0xffff.
        assert_eq!(checksum(&big), 0x00ff);
        assert_eq!(finish(sum(0, &big[..100_000])), 0);
    }
}
