// SPDX-License-Identifier: GPL-2.0

//! zcnet wire formats: pure protocol logic on `core` only.
//!
//! No kernel types, no allocation. The same files are compiled into the kernel
//! modules (`#[path = ".../rust/wire/mod.rs"] mod wire;`) and into the
//! user-space crate `tools/zcwire`, where `cargo test` and `cargo fuzz`
//! exercise them.

pub mod admission;
pub mod checksum;
pub mod crc32c;
pub mod ddp;
pub mod ipv4;
pub mod mpa;
pub mod ooo;
pub mod rdmap;
pub mod spec;
pub mod startup;
pub mod terminate;
pub mod zcids;
