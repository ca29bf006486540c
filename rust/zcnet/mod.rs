// SPDX-License-Identifier: GPL-2.0

//! zcnet's kernel abstraction layer, shared by every zcnet module.
//!
//! Each module crate pulls this directory in with
//! `#[path = ".../rust/zcnet/mod.rs"] mod zcnet;` (Rust modules cannot import
//! each other's Rust code). All `unsafe` code of the project lives here, behind
//! safe types; the modules in `drivers/` and `net/` stay safe.
//!
//! - [`ext`]: the items `kernel::bindings` lacks, generated at build time by
//!   `scripts/gen-bindings.sh` for the target kernel.
//! - [`counters`]: named event counters, shown through debugfs now and through
//!   `ethtool -S` / sysfs by the drivers that use them.
//! - [`ulp`]: TCP upper-layer protocols (`setsockopt(TCP_ULP)`), taking over
//!   a socket's data calls when they implement them.
//! - [`mapdev`], [`pageref`]: a device of driver-owned shared mappings with
//!   copy-on-write decided at fault time, and shared page references.
//! - [`netstat`]: network namespaces and per-namespace `/proc/net` counters.
//! - [`rtnl`]: rtnetlink link kinds (`ip link add ... type KIND`).
//! - [`helpers`]: the C helpers linked into each .ko.
//! - [`netdev`], [`skbuff`], [`page`], [`bh`]: network devices, socket
//!   buffers, receive pages, bottom halves and time, one kernel header each.
//! - [`stacked`]: devices stacked on a lower Ethernet device.
//! - [`uapi`]: zcnet's user-space ABI records (`include/uapi/zcnet/`).

pub mod bh;
pub mod counters;
pub mod errno;
pub mod ext;
pub mod helpers;
pub mod mapdev;
pub mod netdev;
pub mod netstat;
pub mod page;
pub mod pageref;
pub mod rtnl;
pub mod skbuff;
pub mod stacked;
pub mod uapi;
pub mod ulp;
