// SPDX-License-Identifier: GPL-2.0
//! DDP headers and RDMAP classification from arbitrary ULPDUs: no panic,
//! headers round-trip, errors carry known Terminate codes, the stateful
//! checks never panic on any values.

use zcwire::ddp::{self, Header};
use zcwire::rdmap::{ReadRequest, Segment};

/// One input: panics on a broken invariant.
pub fn run(data: &[u8]) {
    match Header::parse(data) {
        Ok((h, payload)) => {
            assert_eq!(h.len() + payload.len(), data.len());
            let mut out = [0u8; 18];
            let n = h.encode(&mut out).unwrap();
            // Reserved control bits are dropped on re-encode; everything
            // else is kept.
            let (again, _) = Header::parse(&out[..n]).unwrap();
            assert_eq!(again, h);
            assert_eq!(out[1..n], data[1..n]);
            assert_eq!(out[0], data[0] & !ddp::MASK_RESERVED);
        }
        Err(e) => assert!(e.term_code().is_known()),
    }
    match Segment::parse(data) {
        Ok(s) => {
            assert_eq!(s.opcode.is_tagged(), matches!(s.ddp, Header::Tagged(_)));
            if let Some(rr) = s.read_request() {
                assert_eq!(ReadRequest::parse(&rr.to_bytes()), Some(rr));
            }
        }
        Err(e) => assert!(e.term_code().is_known()),
    }
    if data.len() >= 32 {
        let w = |i: usize| u64::from_le_bytes(data[i..i + 8].try_into().unwrap());
        let (a, b, c, d) = (w(0), w(8), w(16), w(24));
        let _ = ddp::check_to(a, b as usize);
        let _ = ddp::check_bounds(a, b as usize, c, d);
        let _ = ddp::check_msn(a as u32, b as u32, c as u32);
        let _ = ddp::check_mo(a as u32, b as usize, c as usize);
        let _ = ddp::check_qn(a as u32, b as u32);
    }
}
