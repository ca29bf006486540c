// SPDX-License-Identifier: GPL-2.0
//! MPA start-up frames from arbitrary bytes: parsing never panics, whatever
//! parses re-encodes to a frame that parses the same, and a frame fed in
//! pieces is never accepted before it is complete.

use zcwire::mpa::{Startup, StartupError};

/// One input: panics on a broken invariant.
pub fn run(data: &[u8]) {
    match Startup::parse(data) {
        Ok((frame, len)) => {
            assert!(len <= data.len());
            let mut out = [0u8; 20 + 512];
            let n = frame.encode(&mut out).expect("a parsed frame re-encodes");
            assert_eq!(n, frame.len());
            let (again, n2) = Startup::parse(&out[..n]).expect("re-encoded frame parses");
            assert_eq!(again, frame);
            assert_eq!(n2, n);
            // Every strict prefix is incomplete, never accepted or refused
            // differently.
            for cut in [0, 1, 15, 16, 19, 20, n.saturating_sub(1)] {
                if cut < len {
                    assert!(matches!(
                        Startup::parse(&data[..cut]),
                        Err(StartupError::Incomplete(_))
                    ));
                }
            }
        }
        Err(StartupError::Incomplete(need)) => assert!(need > data.len()),
        Err(e) => {
            let _ = e.term_code();
        }
    }
}
