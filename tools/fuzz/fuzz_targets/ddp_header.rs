// SPDX-License-Identifier: GPL-2.0
//! cargo-fuzz target: `bodies/ddp_header.rs`, which `cargo test` also replays
//! (`tools/zcwire/tests/fuzz_replay.rs`).
#![no_main]

#[path = "../bodies/ddp_header.rs"]
mod body;

libfuzzer_sys::fuzz_target!(|data: &[u8]| body::run(data));
