// SPDX-License-Identifier: GPL-2.0

//! zcnet's user-space ABI (`include/uapi/zcnet/`), as the generated bindings
//! declare it, made readable from and writable to user memory.

use super::ext;
use kernel::transmute::{AsBytes, FromBytes};

/// `struct zcfrag_admission`: the explicit admission ioctl's record.
pub use ext::zcfrag_admission as ZcfragAdmission;

/// `struct zcsock_stats`: a zcsock socket's counters (`getsockopt`).
pub use ext::zcsock_stats;

// The header's layout: six `__u64`, no padding.
const _: () = assert!(core::mem::size_of::<zcsock_stats>() == 48);

// SAFETY: `struct zcsock_stats` is six `u64` without padding (asserted
// above), no interior mutability: all of its bytes are initialised.
unsafe impl AsBytes for zcsock_stats {}

/// `enum zcfrag_adm_cmd`.
pub mod adm_cmd {
    use super::ext;
    /// Ask the peer for a slot.
    pub const REQUEST: u32 = ext::zcfrag_adm_cmd_ZCFRAG_ADM_REQUEST;
    /// Read the flow's state.
    pub const QUERY: u32 = ext::zcfrag_adm_cmd_ZCFRAG_ADM_QUERY;
    /// Give the slot back.
    pub const RELEASE: u32 = ext::zcfrag_adm_cmd_ZCFRAG_ADM_RELEASE;
}

/// `enum zcfrag_adm_state`.
pub mod adm_state {
    use super::ext;
    /// No request for the flow.
    pub const NONE: u32 = ext::zcfrag_adm_state_ZCFRAG_ADM_NONE;
    /// Asked, no answer yet.
    pub const PENDING: u32 = ext::zcfrag_adm_state_ZCFRAG_ADM_PENDING;
    /// A slot is granted.
    pub const GRANTED: u32 = ext::zcfrag_adm_state_ZCFRAG_ADM_GRANTED;
    /// The peer refused.
    pub const REFUSED: u32 = ext::zcfrag_adm_state_ZCFRAG_ADM_REFUSED;
    /// The peer never answered.
    pub const NO_ANSWER: u32 = ext::zcfrag_adm_state_ZCFRAG_ADM_NO_ANSWER;
}

// The header promises 32 bytes without padding; user space is written
// against that.
const _: () = assert!(core::mem::size_of::<ZcfragAdmission>() == 32);

// SAFETY: `struct zcfrag_admission` has only integer fields and integer
// arrays, laid out without padding (asserted above: their sizes sum to 32),
// so every bit pattern of its size is a valid value.
unsafe impl FromBytes for ZcfragAdmission {}

// SAFETY: The same layout has no padding and no interior mutability, so all of
// its bytes are initialised and may be copied out.
unsafe impl AsBytes for ZcfragAdmission {}
