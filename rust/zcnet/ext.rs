// SPDX-License-Identifier: GPL-2.0

//! Extra kernel bindings, generated for the target kernel by
//! `scripts/gen-bindings.sh` from `rust/bindings/zcnet_bindings.h` and
//! `rust/bindings/allowlist.txt`.
//!
//! The allow-list is not recursive: types the generated items refer to come
//! from `kernel::bindings` through the glob import below, so a `*mut sock` here
//! is a `*mut kernel::bindings::sock` and needs no cast.

#![allow(
    dead_code,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    clippy::ptr_as_ptr,
    clippy::ref_as_ptr,
    missing_docs
)]

#[allow(unused_imports)]
use kernel::bindings::*;
#[allow(unused_imports)]
use kernel::ffi;

include!("../bindings/generated.rs");
