// SPDX-License-Identifier: GPL-2.0
//! Terminate payloads from arbitrary bytes in every layout: no panic, and
//! whatever parses re-encodes to the same bytes (reserved bits aside) and
//! parses the same again.

use zcwire::terminate::{Layout, Terminate, MAX_LEN};

/// One input: panics on a broken invariant.
pub fn run(data: &[u8]) {
    let _ = Layout::detect(data);
    for layout in [Layout::Rfc, Layout::SiwLe, Layout::Auto] {
        let Ok(t) = Terminate::parse(data, layout) else {
            continue;
        };
        assert_eq!(t.len(), data.len());
        let enc = match layout {
            Layout::Auto => Layout::detect(data).unwrap_or(Layout::Rfc),
            l => l,
        };
        let mut out = [0u8; MAX_LEN];
        let n = t.encode(&mut out, enc).unwrap();
        assert_eq!(n, data.len());
        assert_eq!(Terminate::parse(&out[..n], enc).unwrap(), t);
        assert_eq!(out[4..n], data[4..n]);
        let mut msg = [0u8; 18 + MAX_LEN];
        let m = t.encode_message(&mut msg, 1, enc).unwrap();
        assert_eq!(m, 18 + n);
    }
}
