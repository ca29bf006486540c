// SPDX-License-Identifier: GPL-2.0

//! The completion ring (`ZCDDP_CQ_RING`, `include/uapi/linux/zcddp.h`):
//! completions written into registered memory that the application reads
//! without a system call, as siw's user CQ is read by `ibv_poll_cq`
//! (Documentation/networking/zcddp.rst, "The completion ring").
//!
//! zcddp is the only writer of the entries and of `tail`, and keeps its own
//! copy of `tail`: it never reads back anything the application could have
//! changed except `head`, which it treats as any number. A `head` that
//! claims more room than the ring has (ahead of `tail`, or more than
//! `entries` behind it) gives no room: the completions wait in the
//! kernel's queue, and the application's ring is the only thing its bad
//! `head` can spoil. Every access goes through [`Mr`]'s checked copies and
//! index words into pages pinned for the registration, which the ring
//! holds.

use super::Qp;
use crate::uapi;
use crate::wire::ddp;
use crate::zcnet::ddp_mem::Mr;
use kernel::{prelude::*, sync::Arc};

/// The ring, once set.
pub(super) struct CqRing {
    /// The registration's pages (the registration cannot go while the
    /// ring is set: `ZCDDP_DEREG_MR` refuses it).
    mr: Arc<Mr>,
    /// Its STag (refused for deregistration and remote invalidation).
    pub(super) stag: u32,
    /// The ring's offset in the registration.
    off: u64,
    /// A power of two.
    pub(super) entries: u32,
    /// The next entry zcddp writes (its own copy of the ring's `tail`).
    tail: u32,
    /// The ring held completions the application had not taken when
    /// zcddp last looked.
    pub(super) nonempty: bool,
}

impl Qp {
    /// `ZCDDP_CQ_RING`: completions go into the ring at `r.addr` from now
    /// on, those waiting first (`EBUSY` while one is set); with `entries`
    /// 0, into the kernel's queue again (what the ring holds stays there).
    pub(crate) fn set_cq_ring(&mut self, r: &uapi::Ring) -> Result {
        if r.entries == 0 {
            self.ring = None;
            return Ok(());
        }
        self.ready()?;
        if self.ring.is_some() {
            return Err(EBUSY);
        }
        let (mr, off) = self.ring_memory(r, uapi::RING_CQES, uapi::CQE_LEN)?;
        // Empty from the start, whatever `head` says.
        let head = mr.load_u32(off + uapi::RING_HEAD)?;
        mr.store_u32(off + uapi::RING_TAIL, head)?;
        self.ring = Some(CqRing {
            mr,
            stag: r.lkey,
            off,
            entries: r.entries,
            tail: head,
            nonempty: false,
        });
        self.publish();
        Ok(())
    }

    /// The memory of a ring (either kind) described by `r`: `hdr` bytes
    /// of indices, then `entries` of `len` bytes each, inside a
    /// registration of this connection with local write access only (the
    /// peer can neither read nor write a ring, and invalidating its STag
    /// is refused while it is set), 64-byte aligned, `entries` a power of
    /// two up to `ZCDDP_CQ_DEPTH`. The pages and the ring's offset in
    /// them.
    pub(super) fn ring_memory(&self, r: &uapi::Ring, hdr: u64, len: u64) -> Result<(Arc<Mr>, u64)> {
        if !r.entries.is_power_of_two() || r.entries as usize > uapi::CQ_DEPTH {
            return Err(EINVAL);
        }
        if r.addr % uapi::RING_ALIGN != 0 {
            return Err(EINVAL);
        }
        let bytes = hdr + u64::from(r.entries) * len;
        let reg = self
            .regions
            .iter()
            .find(|g| g.stag == r.lkey && g.valid)
            .ok_or(EINVAL)?;
        if reg.access & !uapi::ACCESS_NO_REMOTE_INV != uapi::ACCESS_LOCAL_WRITE {
            return Err(EACCES);
        }
        ddp::check_bounds(r.addr, bytes as usize, reg.base, reg.len).map_err(|_| EINVAL)?;
        Ok((reg.mr.clone(), r.addr - reg.base))
    }

    /// Whether `stag` holds a ring (neither deregistered nor invalidated
    /// while it does).
    pub(super) fn holds_ring(&self, stag: u32) -> bool {
        self.ring.as_ref().is_some_and(|r| r.stag == stag)
            || self.rq_ring.as_ref().is_some_and(|r| r.stag == stag)
    }

    /// Moves the waiting completions into the ring while it has room
    /// (when the data path is let go), and notes whether the ring holds
    /// any the application has not taken.
    pub(crate) fn publish(&mut self) {
        // Receives left in the receive ring of a failed connection complete
        // as the completion queue has room.
        if self.error != 0 {
            self.pull_rq();
        }
        let Some(r) = self.ring.as_mut() else {
            return;
        };
        let Ok(head) = r.mr.load_u32(r.off + uapi::RING_HEAD) else {
            return;
        };
        let used = r.tail.wrapping_sub(head);
        // A head ahead of the tail, or too far behind it: no room.
        let room = r.entries.saturating_sub(used) as usize;
        let mut n = 0u32;
        for c in self.cq.iter().take(room) {
            let slot = u64::from(r.tail.wrapping_add(n) & (r.entries - 1));
            let at = r.off + uapi::RING_CQES + slot * uapi::CQE_LEN;
            if r.mr.write(at, &uapi::cqe_bytes(c)).is_err() {
                break;
            }
            n += 1;
        }
        // The entries first, then the tail that shows them (release); the
        // completions leave the kernel's queue only once shown.
        let tail = r.tail.wrapping_add(n);
        if n > 0 && r.mr.store_u32(r.off + uapi::RING_TAIL, tail).is_ok() {
            r.tail = tail;
            for _ in 0..n {
                self.cq.skip();
            }
        }
        r.nonempty = used <= r.entries && r.tail != head;
    }

    /// Whether completions go into a ring (`ZCDDP_POLL_CQ` then hands out
    /// none).
    pub(crate) fn has_ring(&self) -> bool {
        self.ring.is_some()
    }

    /// Completions the application has to take: in the ring when it is
    /// set, else in the kernel's queue.
    pub(crate) fn completions_waiting(&self) -> bool {
        !self.cq.is_empty() || self.ring.as_ref().is_some_and(|r| r.nonempty)
    }
}
