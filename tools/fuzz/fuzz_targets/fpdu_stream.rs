// SPDX-License-Identifier: GPL-2.0
//! cargo-fuzz target: `bodies/fpdu_stream.rs`, which `cargo test` also replays
//! (`tools/zcwire/tests/fuzz_replay.rs`).
#![no_main]

#[path = "../bodies/fpdu_stream.rs"]
mod body;

libfuzzer_sys::fuzz_target!(|data: &[u8]| body::run(data));
