//! The kernel's pure protocol code (`rust/wire/`), compiled for user space.
//! The same source files are compiled into the kernel modules.
#![no_std]

#[path = "../../../rust/wire/mod.rs"]
mod wire;

pub use wire::*;

/// Out-of-order placement's decision engine (`rust/wire/ooo.rs`). Built
/// here only for now: it joins the list in `rust/wire/mod.rs` (and so the
/// kernel modules) with the kernel glue that calls it. Its `super::` paths
/// resolve to the modules re-exported above.
#[path = "../../../rust/wire/ooo.rs"]
pub mod ooo;
