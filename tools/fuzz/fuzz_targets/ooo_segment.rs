// SPDX-License-Identifier: GPL-2.0
//! cargo-fuzz target: `bodies/ooo_segment.rs`, which `cargo test` also replays
//! (`tools/zcwire/tests/fuzz_replay.rs`).
#![no_main]

#[path = "../bodies/ooo_segment.rs"]
mod body;

libfuzzer_sys::fuzz_target!(|data: &[u8]| body::run(data));
