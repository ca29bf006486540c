// SPDX-License-Identifier: GPL-2.0

//! IPv4 headers (RFC 791) and fragmentation plans.

use super::checksum;

/// Length of an IPv4 header without options.
pub const MIN_HEADER_LEN: usize = 20;
/// Largest IPv4 header (IHL 15).
pub const MAX_HEADER_LEN: usize = 60;
/// Largest IPv4 datagram (total length field).
pub const MAX_PACKET_LEN: usize = 65535;
/// Fragment offsets count in units of this many bytes.
pub const FRAG_UNIT: usize = 8;

/// Flag bits of the fragment field (host order, after the 13-bit offset).
pub const FLAG_DF: u16 = 0x4000;
/// More Fragments.
pub const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

/// Why a buffer is not a well-formed IPv4 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderError {
    /// Shorter than the header it announces (or than 20 bytes).
    Truncated,
    /// The version field is not 4.
    NotIpv4,
    /// IHL below 5.
    BadHeaderLength,
    /// Total length below the header length.
    BadTotalLength,
    /// The header checksum does not verify.
    BadChecksum,
    /// Fragment offset plus payload runs past 65535.
    OffsetOverflow,
}

/// The fields of an IPv4 header that zcnet looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Header length in bytes (20..=60).
    pub header_len: usize,
    /// Type of service / DSCP+ECN byte.
    pub tos: u8,
    /// Total length of this datagram or fragment, header included.
    pub total_len: usize,
    /// Identification.
    pub id: u16,
    /// Don't Fragment.
    pub df: bool,
    /// More Fragments.
    pub mf: bool,
    /// Fragment offset in bytes (a multiple of 8).
    pub frag_offset: usize,
    /// Time to live.
    pub ttl: u8,
    /// Protocol of the payload.
    pub protocol: u8,
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
}

impl Header {
    /// Parses and validates the header at the start of `buf` (checksum included).
    pub fn parse(buf: &[u8]) -> Result<Self, HeaderError> {
        if buf.len() < MIN_HEADER_LEN {
            return Err(HeaderError::Truncated);
        }
        if buf[0] >> 4 != 4 {
            return Err(HeaderError::NotIpv4);
        }
        let header_len = usize::from(buf[0] & 0x0f) * 4;
        if header_len < MIN_HEADER_LEN {
            return Err(HeaderError::BadHeaderLength);
        }
        if buf.len() < header_len {
            return Err(HeaderError::Truncated);
        }
        let total_len = usize::from(u16::from_be_bytes([buf[2], buf[3]]));
        if total_len < header_len {
            return Err(HeaderError::BadTotalLength);
        }
        if checksum::checksum(&buf[..header_len]) != 0 {
            return Err(HeaderError::BadChecksum);
        }
        let frag = u16::from_be_bytes([buf[6], buf[7]]);
        let frag_offset = usize::from(frag & OFFSET_MASK) * FRAG_UNIT;
        if frag_offset + (total_len - header_len) > MAX_PACKET_LEN {
            return Err(HeaderError::OffsetOverflow);
        }
        Ok(Self {
            header_len,
            tos: buf[1],
            total_len,
            id: u16::from_be_bytes([buf[4], buf[5]]),
            df: frag & FLAG_DF != 0,
            mf: frag & FLAG_MF != 0,
            frag_offset,
            ttl: buf[8],
            protocol: buf[9],
            src: [buf[12], buf[13], buf[14], buf[15]],
            dst: [buf[16], buf[17], buf[18], buf[19]],
        })
    }

    /// Payload bytes of this datagram or fragment.
    pub fn payload_len(&self) -> usize {
        self.total_len - self.header_len
    }

    /// True for a fragment (MF set or a non-zero offset).
    pub fn is_fragment(&self) -> bool {
        self.mf || self.frag_offset != 0
    }
}

/// The ECN codepoint of a fragment's TOS byte as one bit of a mask, as
/// `ip4_frag_ecn()` (`include/net/inet_ecn.h`) makes it: Not-ECT 1, ECT(1) 2,
/// ECT(0) 4, CE 8.
pub fn ecn_mask(tos: u8) -> u8 {
    1 << (tos & 3)
}

/// The ECN bits a reassembled datagram gets from the OR of its fragments'
/// [`ecn_mask`]s (`ip_frag_ecn_table`, RFC 3168 §5.3): `Some(3)` (CE) when any
/// fragment carried CE and all are ECN-capable, `Some(0)` (the first
/// fragment's codepoint stands) otherwise, and `None` when Not-ECT mixes with
/// ECT or CE: such a datagram must be dropped.
pub fn reassembled_ecn(mask: u8) -> Option<u8> {
    const NOT_ECT: u8 = 1;
    const CE: u8 = 8;
    if mask & NOT_ECT != 0 && mask & !NOT_ECT != 0 {
        None
    } else if mask & CE != 0 {
        Some(3)
    } else {
        Some(0)
    }
}

/// Rewrites the total length, identification and fragment fields of the header
/// in `hdr` (its options are left as they are), clears DF, and recomputes the
/// header checksum.
///
/// `hdr` must hold a whole header (its IHL says how long); returns `false`
/// without touching it otherwise, or when the values do not fit the fields.
pub fn rewrite(hdr: &mut [u8], total_len: usize, id: u16, frag_offset: usize, mf: bool) -> bool {
    if hdr.len() < MIN_HEADER_LEN {
        return false;
    }
    let hl = usize::from(hdr[0] & 0x0f) * 4;
    if hl < MIN_HEADER_LEN
        || hdr.len() < hl
        || total_len > MAX_PACKET_LEN
        || total_len < hl
        || frag_offset % FRAG_UNIT != 0
        || frag_offset / FRAG_UNIT > usize::from(OFFSET_MASK)
    {
        return false;
    }
    hdr[2..4].copy_from_slice(&(total_len as u16).to_be_bytes());
    hdr[4..6].copy_from_slice(&id.to_be_bytes());
    let mut frag = (frag_offset / FRAG_UNIT) as u16;
    if mf {
        frag |= FLAG_MF;
    }
    // Fragments never carry DF: it is cleared on every fragment we build.
    hdr[6..8].copy_from_slice(&frag.to_be_bytes());
    hdr[10..12].copy_from_slice(&[0, 0]);
    let c = checksum::checksum(&hdr[..hl]);
    hdr[10..12].copy_from_slice(&c.to_be_bytes());
    true
}

/// One fragment of a plan: bytes `offset..offset + len` of the IP payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment {
    /// Offset in the original IP payload (a multiple of 8).
    pub offset: usize,
    /// Payload bytes in this fragment.
    pub len: usize,
    /// More Fragments flag of this fragment.
    pub mf: bool,
}

/// How an IP payload of `payload_len` bytes is cut into fragments that fit a
/// link MTU, every fragment but the last carrying a multiple of 8 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragPlan {
    payload_len: usize,
    per_frag: usize,
    /// Fragments sent: more than the payload needs when padded.
    count: usize,
}

impl FragPlan {
    /// Plans fragments for a header of `header_len` bytes and `payload_len`
    /// payload bytes on a link of `mtu` bytes. `None` when the MTU cannot carry
    /// the header plus 8 bytes, or the datagram is too large for IPv4.
    pub fn new(header_len: usize, payload_len: usize, mtu: usize) -> Option<Self> {
        if header_len + payload_len > MAX_PACKET_LEN || mtu < header_len + FRAG_UNIT {
            return None;
        }
        let per_frag = (mtu - header_len) / FRAG_UNIT * FRAG_UNIT;
        let count = if payload_len == 0 {
            1
        } else {
            payload_len.div_ceil(per_frag)
        };
        Some(Self {
            payload_len,
            per_frag,
            count,
        })
    }

    /// The same plan cut into `train` fragments when the payload needs more
    /// than one and fewer than that: the last fragment's payload is split
    /// into the missing ones (8-byte multiples, the last one the rest). A
    /// receiver that speculates on trains of `train` fragments (zcfrag's
    /// native front end posts its receive buffers for them, first in first
    /// out) then never sees a short train shift its buffers: the extra
    /// fragments land in the buffers meant for the train's last ones. As it
    /// is when the last fragment is too short to split.
    pub fn padded(self, train: usize) -> Self {
        let natural = self.natural_count();
        if natural < 2 || train <= natural {
            return self;
        }
        let last = self.payload_len - (natural - 1) * self.per_frag;
        if last < FRAG_UNIT * (train - natural) + 1 {
            return self;
        }
        Self {
            count: train,
            ..self
        }
    }

    /// The plan zcfrag's transmit uses for a datagram that is not yet a
    /// fragment: [`FragPlan::new`], [`padded`](FragPlan::padded) to the
    /// fragment count of a page train (`train_payload` bytes of IP payload)
    /// at the same MTU.
    pub fn train(
        header_len: usize,
        payload_len: usize,
        mtu: usize,
        train_payload: usize,
    ) -> Option<Self> {
        let plan = Self::new(header_len, payload_len, mtu)?;
        Some(match Self::new(header_len, train_payload, mtu) {
            Some(train) => plan.padded(train.count()),
            None => plan,
        })
    }

    /// Fragments the payload needs.
    fn natural_count(&self) -> usize {
        if self.payload_len == 0 {
            1
        } else {
            self.payload_len.div_ceil(self.per_frag)
        }
    }

    /// Payload bytes every fragment but the last carries.
    pub fn per_fragment(&self) -> usize {
        self.per_frag
    }

    /// The number of fragments (1 when the payload fits as it is).
    pub fn count(&self) -> usize {
        self.count
    }

    /// Fragment `i` of the plan, or `None` past the last.
    pub fn get(&self, i: usize) -> Option<Fragment> {
        if i >= self.count {
            return None;
        }
        let natural = self.natural_count();
        let mf = i + 1 < self.count;
        if i + 1 < natural {
            return Some(Fragment {
                offset: i * self.per_frag,
                len: self.per_frag,
                mf,
            });
        }
        // The last natural fragment's payload, in `pieces` (1 unpadded):
        // every piece but the last an equal share rounded down to 8 bytes,
        // and at least 8 (a share below 8 would be an empty fragment, which
        // makes a receiver drop the whole datagram); `padded` only splits a
        // fragment that has more than 8 bytes for each piece but the last,
        // so the last piece keeps at least one byte.
        let start = (natural - 1) * self.per_frag;
        let rest = self.payload_len - start;
        let pieces = self.count - natural + 1;
        let q = (rest / pieces / FRAG_UNIT * FRAG_UNIT).max(FRAG_UNIT);
        let j = i + 1 - natural;
        let (offset, len) = if pieces == 1 {
            (start, rest)
        } else if j + 1 < pieces {
            (start + j * q, q)
        } else {
            (start + j * q, rest - j * q)
        };
        Some(Fragment { offset, len, mf })
    }

    /// The fragments in order.
    pub fn iter(&self) -> impl Iterator<Item = Fragment> + '_ {
        (0..self.count()).filter_map(move |i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(total: u16, id: u16, frag: u16) -> [u8; 20] {
        let mut h = [
            0x45, 0, 0, 0, 0, 0, 0, 0, 64, 6, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2,
        ];
        h[2..4].copy_from_slice(&total.to_be_bytes());
        h[4..6].copy_from_slice(&id.to_be_bytes());
        h[6..8].copy_from_slice(&frag.to_be_bytes());
        let c = checksum::checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }

    #[test]
    fn parse_round_trip() {
        let h = Header::parse(&header(1500, 7, FLAG_MF | 185)).unwrap();
        assert_eq!(h.header_len, 20);
        assert_eq!(h.total_len, 1500);
        assert_eq!(h.id, 7);
        assert!(h.mf && !h.df);
        assert_eq!(h.frag_offset, 1480);
        assert_eq!(h.payload_len(), 1480);
        assert!(h.is_fragment());
        assert_eq!(h.src, [198, 18, 0, 1]);
    }

    #[test]
    fn parse_rejects_bad_input() {
        let good = header(100, 1, 0);
        assert_eq!(Header::parse(&good[..19]), Err(HeaderError::Truncated));
        let mut b = good;
        b[10] ^= 1;
        assert_eq!(Header::parse(&b), Err(HeaderError::BadChecksum));
        let mut b = good;
        b[0] = 0x65;
        assert_eq!(Header::parse(&b), Err(HeaderError::NotIpv4));
        let mut b = good;
        b[0] = 0x44;
        assert_eq!(Header::parse(&b), Err(HeaderError::BadHeaderLength));
        assert_eq!(
            Header::parse(&header(19, 1, 0)),
            Err(HeaderError::BadTotalLength)
        );
        // Offset 65528 plus 80 payload bytes runs past 64 KiB.
        assert_eq!(
            Header::parse(&header(100, 1, 0x1fff)),
            Err(HeaderError::OffsetOverflow)
        );
        let mut b = [0u8; 60];
        b[..20].copy_from_slice(&good);
        b[0] = 0x4f; // IHL 15 but only the first 20 bytes are a real header
        assert!(Header::parse(&b[..40]).is_err());
    }

    #[test]
    fn rewrite_sets_fields_and_checksum() {
        let mut h = header(4148, 9, FLAG_DF);
        assert!(rewrite(&mut h, 1500, 77, 1480, true));
        let p = Header::parse(&h).unwrap();
        assert_eq!(
            (p.total_len, p.frag_offset, p.mf, p.df, p.id),
            (1500, 1480, true, false, 77)
        );
        assert!(!rewrite(&mut h, 1500, 1, 3, true));
        assert!(!rewrite(&mut h, 70000, 1, 0, false));
        assert!(!rewrite(&mut h[..10], 100, 1, 0, false));
    }

    #[test]
    fn plan_page_over_1500() {
        // A 4096-byte page of TCP payload with a 32-byte TCP header (timestamps)
        // over MTU 1500: three fragments, 1480 + 1480 + 1168.
        let p = FragPlan::new(20, 4096 + 32, 1500).unwrap();
        let f: [Fragment; 3] = [p.get(0).unwrap(), p.get(1).unwrap(), p.get(2).unwrap()];
        assert_eq!(p.count(), 3);
        assert_eq!(
            f[0],
            Fragment {
                offset: 0,
                len: 1480,
                mf: true
            }
        );
        assert_eq!(
            f[1],
            Fragment {
                offset: 1480,
                len: 1480,
                mf: true
            }
        );
        assert_eq!(
            f[2],
            Fragment {
                offset: 2960,
                len: 1168,
                mf: false
            }
        );
        assert_eq!(p.get(3), None);
    }

    #[test]
    fn padded_plan_covers_payload_in_train_fragments() {
        for len in [
            1481, 1488, 1489, 1495, 1496, 1500, 2000, 2959, 2960, 2961, 4128, 100, 1480,
        ] {
            let p = FragPlan::new(20, len, 1500).unwrap();
            let q = p.padded(3);
            let natural = p.count();
            let want = if natural == 2 && len - 1480 > 8 {
                3
            } else {
                natural
            };
            assert_eq!(q.count(), want, "{len}");
            let mut at = 0;
            for (i, f) in q.iter().enumerate() {
                assert_eq!(f.offset, at, "{len}: fragment {i}");
                assert!(f.len > 0 && f.len <= 1480);
                assert_eq!(f.mf, i + 1 < q.count());
                if f.mf {
                    assert_eq!(f.len % 8, 0);
                }
                at += f.len;
            }
            assert_eq!(at, len);
        }
        // Too short a last fragment to split: as it was.
        let p = FragPlan::new(20, 1488, 1500).unwrap();
        assert_eq!(p.padded(4).count(), 2);
        // The first fragments keep the page-train geometry.
        let p = FragPlan::new(20, 2000, 1500).unwrap().padded(3);
        assert_eq!(p.get(0).unwrap().len, 1480);
        assert_eq!(p.get(1).unwrap().offset, 1480);
    }

    #[test]
    fn plan_covers_payload_exactly() {
        for mtu in [28usize, 68, 576, 1280, 1500, 9000] {
            for len in [0usize, 1, 7, 8, 9, 1479, 1480, 1481, 4128, 65515] {
                let p = FragPlan::new(20, len, mtu).unwrap();
                let mut next = 0;
                for (i, f) in p.iter().enumerate() {
                    assert_eq!(f.offset, next);
                    assert_eq!(f.offset % FRAG_UNIT, 0);
                    assert!(20 + f.len <= mtu);
                    assert_eq!(f.mf, i + 1 < p.count());
                    next += f.len;
                }
                assert_eq!(next, len);
            }
        }
        assert_eq!(FragPlan::new(20, 65516, 1500), None);
        assert_eq!(FragPlan::new(20, 100, 27), None);
    }

    /// Why `plan` is not a valid way to send `payload` bytes behind a
    /// `hl`-byte header on a link of `mtu` bytes: a fragment is empty, an
    /// offset is not a multiple of 8, a fragment does not fit the MTU, MF is
    /// wrong, or the fragments do not cover the payload exactly once.
    fn plan_fault(p: &FragPlan, hl: usize, payload: usize, mtu: usize) -> Option<&'static str> {
        let mut next = 0;
        let mut seen = 0;
        for (i, f) in p.iter().enumerate() {
            seen += 1;
            if f.len == 0 && payload != 0 {
                return Some("empty fragment");
            }
            if f.offset != next {
                return Some("gap or overlap");
            }
            if f.offset % FRAG_UNIT != 0 {
                return Some("offset not a multiple of 8");
            }
            if hl + f.len > mtu {
                return Some("fragment over the MTU");
            }
            if f.mf != (i + 1 < p.count()) {
                return Some("MF wrong");
            }
            next += f.len;
        }
        if seen != p.count() || seen == 0 {
            return Some("count wrong");
        }
        if next != payload {
            return Some("payload not covered exactly");
        }
        None
    }

    /// Every IP payload of a page MTU (1..=4128) at every wire MTU the
    /// devices accept up to the native one's largest (68..=4198), cut as
    /// zcfrag's transmit cuts it (padded to a page train), and at every
    /// train length at the MTUs users run: each plan valid.
    #[test]
    fn every_train_plan_is_valid() {
        const TRAIN_PAYLOAD: usize = 32 + 4096;
        let mut bad = 0usize;
        let mut first = None;
        for mtu in 68..=4198usize {
            for payload in 1..=TRAIN_PAYLOAD {
                let p = FragPlan::train(20, payload, mtu, TRAIN_PAYLOAD).unwrap();
                if let Some(why) = plan_fault(&p, 20, payload, mtu) {
                    bad += 1;
                    first.get_or_insert((mtu, payload, why));
                }
            }
        }
        for mtu in [68usize, 576, 1000, 1280, 1500, 2000, 3000, 4198] {
            for train in 1..=16 {
                for payload in 1..=TRAIN_PAYLOAD {
                    let p = FragPlan::new(20, payload, mtu).unwrap().padded(train);
                    if let Some(why) = plan_fault(&p, 20, payload, mtu) {
                        bad += 1;
                        first.get_or_insert((mtu, payload, why));
                    }
                }
            }
        }
        assert_eq!(
            bad, 0,
            "bad plans, the first (mtu, payload, fault): {first:?}"
        );
    }
}
