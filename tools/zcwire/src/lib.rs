//! The kernel's pure protocol code (`rust/wire/`), compiled for user space.
//! The same source files are compiled into the kernel modules.
#![no_std]

#[path = "../../../rust/wire/mod.rs"]
mod wire;

pub use wire::*;
