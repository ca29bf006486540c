// SPDX-License-Identifier: GPL-2.0

//! zcddp's user-space ABI (`include/uapi/linux/zcddp.h`): the constants, and
//! its structs read from and written to option bytes field by field, at the
//! offsets the generated bindings give (so a change of the header that
//! moves a field cannot go unnoticed: the sizes are asserted).

use crate::zcnet::ext;
use core::mem::{offset_of, size_of};
use ext::{zcddp_info as Cinfo, zcddp_startup as Cstart};

pub(crate) const SOL_ZCDDP: i32 = ext::SOL_ZCDDP as i32;
pub(crate) const ZCDDP_STARTUP: i32 = ext::ZCDDP_STARTUP as i32;
pub(crate) const ZCDDP_INFO: i32 = ext::ZCDDP_INFO as i32;
pub(crate) const INITIATOR: u32 = ext::ZCDDP_INITIATOR;
pub(crate) const RESPONDER: u32 = ext::ZCDDP_RESPONDER;
pub(crate) const F_CRC: u32 = ext::ZCDDP_F_CRC;
pub(crate) const F_CRC_STRICT: u32 = ext::ZCDDP_F_CRC_STRICT;
pub(crate) const F_MARKERS: u32 = ext::ZCDDP_F_MARKERS;
pub(crate) const F_NO_MARKERS: u32 = ext::ZCDDP_F_NO_MARKERS;
pub(crate) const F_P2P: u32 = ext::ZCDDP_F_P2P;
pub(crate) const F_ALL: u32 = ext::ZCDDP_F_ALL;
pub(crate) const RTR_SEND: u8 = ext::ZCDDP_RTR_SEND as u8;
pub(crate) const RTR_WRITE: u8 = ext::ZCDDP_RTR_WRITE as u8;
pub(crate) const RTR_READ: u8 = ext::ZCDDP_RTR_READ as u8;
pub(crate) const TIMEOUT_DEFAULT_MS: u32 = ext::ZCDDP_TIMEOUT_DEFAULT_MS;
pub(crate) const TIMEOUT_MAX_MS: u32 = ext::ZCDDP_TIMEOUT_MAX_MS;
pub(crate) const PRIVATE_DATA_MAX: usize = ext::ZCDDP_PRIVATE_DATA_MAX as usize;
pub(crate) const IRD_ORD_MAX: u16 = ext::ZCDDP_IRD_ORD_MAX as u16;
pub(crate) const STATE_IDLE: u32 = ext::ZCDDP_STATE_IDLE;
pub(crate) const STATE_STARTING: u32 = ext::ZCDDP_STATE_STARTING;
pub(crate) const STATE_RTS: u32 = ext::ZCDDP_STATE_RTS;
pub(crate) const STATE_ERROR: u32 = ext::ZCDDP_STATE_ERROR;

pub(crate) const REG_MR: i32 = ext::ZCDDP_REG_MR as i32;
pub(crate) const DEREG_MR: i32 = ext::ZCDDP_DEREG_MR as i32;
pub(crate) const POST_RECV: i32 = ext::ZCDDP_POST_RECV as i32;
pub(crate) const POST_RECV_SG: i32 = ext::ZCDDP_POST_RECV_SG as i32;
pub(crate) const RECV_SGE_MAX: usize = ext::ZCDDP_RECV_SGE_MAX as usize;
pub(crate) const SGE_LEN: usize = size_of::<ext::zcddp_sge>();
pub(crate) const POST_SEND: i32 = ext::ZCDDP_POST_SEND as i32;
pub(crate) const POLL_CQ: i32 = ext::ZCDDP_POLL_CQ as i32;
pub(crate) const SEND_QUEUE: i32 = ext::ZCDDP_SEND_QUEUE as i32;
pub(crate) const OOO: i32 = ext::ZCDDP_OOO as i32;
pub(crate) const CQ_RING: i32 = ext::ZCDDP_CQ_RING as i32;
pub(crate) const RQ_RING: i32 = ext::ZCDDP_RQ_RING as i32;
pub(crate) const RQ_DEPTH: usize = ext::ZCDDP_RQ_DEPTH as usize;
pub(crate) const SQ_DEPTH: usize = ext::ZCDDP_SQ_DEPTH as usize;
pub(crate) const SQ_DEPTH_MAX: usize = ext::ZCDDP_SQ_DEPTH_MAX as usize;
pub(crate) const CQ_DEPTH: usize = ext::ZCDDP_CQ_DEPTH as usize;
pub(crate) const MR_MAX: usize = ext::ZCDDP_MR_MAX as usize;
pub(crate) const ACCESS_LOCAL_WRITE: u32 = ext::ZCDDP_ACCESS_LOCAL_WRITE;
pub(crate) const ACCESS_REMOTE_WRITE: u32 = ext::ZCDDP_ACCESS_REMOTE_WRITE;
pub(crate) const ACCESS_REMOTE_READ: u32 = ext::ZCDDP_ACCESS_REMOTE_READ;
pub(crate) const ACCESS_NO_REMOTE_INV: u32 = ext::ZCDDP_ACCESS_NO_REMOTE_INV;
pub(crate) const WR_SEND: u32 = ext::ZCDDP_WR_SEND;
pub(crate) const WR_SEND_SE: u32 = ext::ZCDDP_WR_SEND_SE;
pub(crate) const WR_SEND_INV: u32 = ext::ZCDDP_WR_SEND_INV;
pub(crate) const WR_WRITE: u32 = ext::ZCDDP_WR_WRITE;
pub(crate) const WR_READ: u32 = ext::ZCDDP_WR_READ;
pub(crate) const WC_RECV: u32 = ext::ZCDDP_WC_RECV;
pub(crate) const SEND_SIGNALED: u32 = ext::ZCDDP_SEND_SIGNALED;
pub(crate) const WC_SUCCESS: u32 = ext::ZCDDP_WC_SUCCESS;
pub(crate) const WC_LOC_PROT_ERR: u32 = ext::ZCDDP_WC_LOC_PROT_ERR;
pub(crate) const WC_FLUSH_ERR: u32 = ext::ZCDDP_WC_FLUSH_ERR;
pub(crate) const WC_REM_ERR: u32 = ext::ZCDDP_WC_REM_ERR;
pub(crate) const WC_SOLICITED: u32 = ext::ZCDDP_WC_SOLICITED;
pub(crate) const WC_INVALIDATED: u32 = ext::ZCDDP_WC_INVALIDATED;

// The header's promises: user space is written against these sizes.
const _: () = assert!(size_of::<Cstart>() == 40);
const _: () = assert!(size_of::<Cinfo>() == 24);
const _: () = assert!(size_of::<ext::zcddp_reg_mr>() == 32);
const _: () = assert!(size_of::<ext::zcddp_recv>() == 24);
const _: () = assert!(size_of::<ext::zcddp_sge>() == 16);
const _: () = assert!(size_of::<ext::zcddp_recv_sg>() == 24);
const _: () = assert!(size_of::<ext::zcddp_send>() == 48);
const _: () = assert!(size_of::<ext::zcddp_cqe>() == 32);
const _: () = assert!(size_of::<ext::zcddp_poll>() == 24);

/// Reads `N`-byte native-endian fields of an option value.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn u32(&self, at: usize) -> Option<u32> {
        get::<4>(self.0, at).map(u32::from_ne_bytes)
    }
    fn u64(&self, at: usize) -> Option<u64> {
        get::<8>(self.0, at).map(u64::from_ne_bytes)
    }
}

/// `struct zcddp_reg_mr`.
pub(crate) struct RegMr {
    pub(crate) addr: u64,
    pub(crate) len: u64,
    pub(crate) access: u32,
    pub(crate) stag_out: u64,
}

impl RegMr {
    pub(crate) fn parse(b: &[u8]) -> Option<Self> {
        use ext::zcddp_reg_mr as C;
        let f = Fields(b);
        if f.u32(offset_of!(C, reserved))? != 0 {
            return None;
        }
        Some(Self {
            addr: f.u64(offset_of!(C, addr))?,
            len: f.u64(offset_of!(C, len))?,
            access: f.u32(offset_of!(C, access))?,
            stag_out: f.u64(offset_of!(C, stag))?,
        })
    }
}

/// One scatter element of a receive (`struct zcddp_sge`).
#[derive(Clone, Copy, Default)]
pub(crate) struct Sge {
    pub(crate) addr: u64,
    pub(crate) len: u32,
    pub(crate) lkey: u32,
}

impl Sge {
    /// The `i`-th `struct zcddp_sge` of a list read from user memory.
    pub(crate) fn parse(b: &[u8], i: usize) -> Option<Self> {
        use ext::zcddp_sge as C;
        let f = Fields(b.get(i.checked_mul(SGE_LEN)?..)?);
        Some(Self {
            addr: f.u64(offset_of!(C, addr))?,
            len: f.u32(offset_of!(C, len))?,
            lkey: f.u32(offset_of!(C, lkey))?,
        })
    }
}

/// `struct zcddp_recv`: a receive of one element.
pub(crate) struct Recv {
    pub(crate) wr_id: u64,
    pub(crate) sge: Sge,
}

impl Recv {
    pub(crate) fn parse(b: &[u8]) -> Option<Self> {
        use ext::zcddp_recv as C;
        let f = Fields(b);
        Some(Self {
            wr_id: f.u64(offset_of!(C, wr_id))?,
            sge: Sge {
                addr: f.u64(offset_of!(C, addr))?,
                len: f.u32(offset_of!(C, len))?,
                lkey: f.u32(offset_of!(C, lkey))?,
            },
        })
    }
}

/// `struct zcddp_recv_sg`: a receive over a list of elements, which stays
/// in user memory (`sg_list`, `num_sge` of them, at most
/// [`RECV_SGE_MAX`]).
pub(crate) struct RecvSg {
    pub(crate) wr_id: u64,
    pub(crate) sg_list: u64,
    pub(crate) num_sge: usize,
}

impl RecvSg {
    pub(crate) fn parse(b: &[u8]) -> Option<Self> {
        use ext::zcddp_recv_sg as C;
        let f = Fields(b);
        let num_sge = f.u32(offset_of!(C, num_sge))? as usize;
        if f.u32(offset_of!(C, reserved))? != 0 || num_sge > RECV_SGE_MAX {
            return None;
        }
        Some(Self {
            wr_id: f.u64(offset_of!(C, wr_id))?,
            sg_list: f.u64(offset_of!(C, sg_list))?,
            num_sge,
        })
    }
}

/// `struct zcddp_send`.
pub(crate) struct Send {
    pub(crate) wr_id: u64,
    pub(crate) opcode: u32,
    pub(crate) flags: u32,
    pub(crate) addr: u64,
    pub(crate) len: u32,
    pub(crate) lkey: u32,
    pub(crate) raddr: u64,
    pub(crate) rkey: u32,
    pub(crate) inv_stag: u32,
}

impl Send {
    pub(crate) fn parse(b: &[u8]) -> Option<Self> {
        use ext::zcddp_send as C;
        let f = Fields(b);
        Some(Self {
            wr_id: f.u64(offset_of!(C, wr_id))?,
            opcode: f.u32(offset_of!(C, opcode))?,
            flags: f.u32(offset_of!(C, flags))?,
            addr: f.u64(offset_of!(C, addr))?,
            len: f.u32(offset_of!(C, len))?,
            lkey: f.u32(offset_of!(C, lkey))?,
            raddr: f.u64(offset_of!(C, raddr))?,
            rkey: f.u32(offset_of!(C, rkey))?,
            inv_stag: f.u32(offset_of!(C, inv_stag))?,
        })
    }
}

/// `struct zcddp_poll`.
pub(crate) struct Poll {
    pub(crate) cqe: u64,
    pub(crate) max: u32,
    pub(crate) timeout_ms: u32,
    pub(crate) count_out: u64,
}

impl Poll {
    pub(crate) fn parse(b: &[u8]) -> Option<Self> {
        use ext::zcddp_poll as C;
        let f = Fields(b);
        Some(Self {
            cqe: f.u64(offset_of!(C, cqe))?,
            max: f.u32(offset_of!(C, max))?,
            timeout_ms: f.u32(offset_of!(C, timeout_ms))?,
            count_out: f.u64(offset_of!(C, count))?,
        })
    }
}

/// `struct zcddp_ring`.
pub(crate) struct Ring {
    pub(crate) addr: u64,
    pub(crate) entries: u32,
    pub(crate) lkey: u32,
}

impl Ring {
    pub(crate) fn parse(b: &[u8]) -> Option<Self> {
        use ext::zcddp_ring as C;
        let f = Fields(b);
        Some(Self {
            addr: f.u64(offset_of!(C, addr))?,
            entries: f.u32(offset_of!(C, entries))?,
            lkey: f.u32(offset_of!(C, lkey))?,
        })
    }
}

/// `struct zcddp_cq_ring`: where its head and tail are, and its entries.
pub(crate) const RING_HEAD: u64 = offset_of!(ext::zcddp_cq_ring, head) as u64;
pub(crate) const RING_TAIL: u64 = offset_of!(ext::zcddp_cq_ring, tail) as u64;
pub(crate) const RING_CQES: u64 = size_of::<ext::zcddp_cq_ring>() as u64;
pub(crate) const CQE_LEN: u64 = size_of::<ext::zcddp_cqe>() as u64;
/// The ring's alignment in memory (a cache line for each index).
pub(crate) const RING_ALIGN: u64 = 64;
/// `struct zcddp_rq_ring`: the same head and tail, then its entries.
pub(crate) const RING_RQES: u64 = size_of::<ext::zcddp_rq_ring>() as u64;
pub(crate) const RECV_LEN: u64 = size_of::<ext::zcddp_recv>() as u64;
const _: () = assert!(offset_of!(ext::zcddp_rq_ring, head) as u64 == RING_HEAD);
const _: () = assert!(offset_of!(ext::zcddp_rq_ring, tail) as u64 == RING_TAIL);

/// `struct zcddp_cqe`'s bytes.
pub(crate) fn cqe_bytes(c: &crate::qp::Cqe) -> [u8; size_of::<ext::zcddp_cqe>()] {
    use ext::zcddp_cqe as C;
    let mut b = [0u8; size_of::<C>()];
    put(&mut b, offset_of!(C, wr_id), &c.wr_id.to_ne_bytes());
    put(&mut b, offset_of!(C, opcode), &c.opcode.to_ne_bytes());
    put(&mut b, offset_of!(C, status), &c.status.to_ne_bytes());
    put(&mut b, offset_of!(C, byte_len), &c.byte_len.to_ne_bytes());
    put(&mut b, offset_of!(C, flags), &c.flags.to_ne_bytes());
    put(&mut b, offset_of!(C, inv_stag), &c.inv_stag.to_ne_bytes());
    b
}

fn get<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at + N)?.try_into().ok()
}

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    if let Some(d) = b.get_mut(at..at + v.len()) {
        d.copy_from_slice(v);
    }
}

/// `struct zcddp_startup`.
pub(crate) struct Startup {
    pub(crate) role: u32,
    pub(crate) flags: u32,
    pub(crate) revision: u8,
    pub(crate) rtr: u8,
    pub(crate) pd_len: u16,
    pub(crate) ird: u16,
    pub(crate) ord: u16,
    pub(crate) timeout_ms: u32,
    pub(crate) peer_pd_cap: u32,
    pub(crate) pd: u64,
    pub(crate) peer_pd: u64,
}

impl Startup {
    /// Reads the struct from option bytes: `None` when they are shorter.
    pub(crate) fn parse(b: &[u8]) -> Option<Self> {
        if b.len() < size_of::<Cstart>() {
            return None;
        }
        let u32_at = |at| get::<4>(b, at).map(u32::from_ne_bytes);
        let u16_at = |at| get::<2>(b, at).map(u16::from_ne_bytes);
        let u64_at = |at| get::<8>(b, at).map(u64::from_ne_bytes);
        Some(Self {
            role: u32_at(offset_of!(Cstart, role))?,
            flags: u32_at(offset_of!(Cstart, flags))?,
            revision: *b.get(offset_of!(Cstart, revision))?,
            rtr: *b.get(offset_of!(Cstart, rtr))?,
            pd_len: u16_at(offset_of!(Cstart, pd_len))?,
            ird: u16_at(offset_of!(Cstart, ird))?,
            ord: u16_at(offset_of!(Cstart, ord))?,
            timeout_ms: u32_at(offset_of!(Cstart, timeout_ms))?,
            peer_pd_cap: u32_at(offset_of!(Cstart, peer_pd_cap))?,
            pd: u64_at(offset_of!(Cstart, pd))?,
            peer_pd: u64_at(offset_of!(Cstart, peer_pd))?,
        })
    }
}

/// `struct zcddp_info`.
pub(crate) struct ZcddpInfo {
    pub(crate) state: u32,
    pub(crate) role: u32,
    pub(crate) revision: u8,
    pub(crate) crc: u8,
    pub(crate) markers_tx: u8,
    pub(crate) markers_rx: u8,
    pub(crate) p2p: u8,
    pub(crate) rtr: u8,
    pub(crate) peer_pd_len: u16,
    pub(crate) ird: u16,
    pub(crate) ord: u16,
    pub(crate) error: i32,
}

impl ZcddpInfo {
    /// The struct's bytes.
    pub(crate) fn to_bytes(&self) -> [u8; size_of::<Cinfo>()] {
        let mut b = [0u8; size_of::<Cinfo>()];
        put(&mut b, offset_of!(Cinfo, state), &self.state.to_ne_bytes());
        put(&mut b, offset_of!(Cinfo, role), &self.role.to_ne_bytes());
        put(&mut b, offset_of!(Cinfo, revision), &[self.revision]);
        put(&mut b, offset_of!(Cinfo, crc), &[self.crc]);
        put(&mut b, offset_of!(Cinfo, markers_tx), &[self.markers_tx]);
        put(&mut b, offset_of!(Cinfo, markers_rx), &[self.markers_rx]);
        put(&mut b, offset_of!(Cinfo, p2p), &[self.p2p]);
        put(&mut b, offset_of!(Cinfo, rtr), &[self.rtr]);
        put(
            &mut b,
            offset_of!(Cinfo, peer_pd_len),
            &self.peer_pd_len.to_ne_bytes(),
        );
        put(&mut b, offset_of!(Cinfo, ird), &self.ird.to_ne_bytes());
        put(&mut b, offset_of!(Cinfo, ord), &self.ord.to_ne_bytes());
        put(&mut b, offset_of!(Cinfo, error), &self.error.to_ne_bytes());
        b
    }
}
