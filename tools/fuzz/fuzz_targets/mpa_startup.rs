// SPDX-License-Identifier: GPL-2.0
//! cargo-fuzz target: `bodies/mpa_startup.rs`, which `cargo test` also replays
//! (`tools/zcwire/tests/fuzz_replay.rs`).
#![no_main]

#[path = "../bodies/mpa_startup.rs"]
mod body;

libfuzzer_sys::fuzz_target!(|data: &[u8]| body::run(data));
