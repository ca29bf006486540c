// SPDX-License-Identifier: GPL-2.0

//! The receive ring (`ZCDDP_RQ_RING`, `include/uapi/linux/zcddp.h`):
//! receives the application posts by writing them into registered memory,
//! without a system call, as siw's user receive queue is written by
//! `ibv_post_recv` (Documentation/networking/zcddp.rst, "The rings").
//!
//! The mirror of the completion ring ([`super::cq_ring`]): the application
//! writes the entries and `tail`, zcddp keeps its own copy of `head`, the
//! only index it writes, and treats `tail` as any number. An entry is read
//! once, into the kernel's receive queue, and checked there as a
//! `ZCDDP_POST_RECV` is: nothing the application writes into the ring
//! afterwards reaches the data path. Entries are taken only when a Send
//! needs one (the receive queue empty) and only as many as the receive
//! queue and the completion queue have room for, so the kernel's memory
//! per connection stays that of `ZCDDP_RQ_DEPTH` receives however large
//! the ring; the rest wait in the application's memory.

use super::{Cqe, Qp, Recv};
use crate::uapi;
use crate::zcnet::ddp_mem::Mr;
use kernel::{prelude::*, sync::Arc};

/// The ring, once set.
pub(super) struct RqRing {
    /// The registration's pages (the registration cannot go while the
    /// ring is set).
    mr: Arc<Mr>,
    /// Its STag (refused for deregistration and remote invalidation).
    pub(super) stag: u32,
    /// The ring's offset in the registration.
    off: u64,
    /// A power of two.
    pub(super) entries: u32,
    /// The next entry zcddp takes (its own copy of the ring's `head`).
    head: u32,
}

impl Qp {
    /// `ZCDDP_RQ_RING`: receives are posted through the ring at `r.addr`
    /// from now on, starting at the `head` the application left there
    /// (`EBUSY` while one is set); with `entries` 0, through
    /// `ZCDDP_POST_RECV` again (the entries not taken stay in the ring).
    pub(crate) fn set_rq_ring(&mut self, r: &uapi::Ring) -> Result {
        if r.entries == 0 {
            self.rq_ring = None;
            return Ok(());
        }
        self.ready()?;
        if self.rq_ring.is_some() {
            return Err(EBUSY);
        }
        let (mr, off) = self.ring_memory(r, uapi::RING_RQES, uapi::RECV_LEN)?;
        let head = mr.load_u32(off + uapi::RING_HEAD)?;
        self.rq_ring = Some(RqRing {
            mr,
            stag: r.lkey,
            off,
            entries: r.entries,
            head,
        });
        Ok(())
    }

    /// Whether receives come through a ring (`ZCDDP_POST_RECV` refused).
    pub(super) fn has_rq_ring(&self) -> bool {
        self.rq_ring.is_some()
    }

    /// Takes the receives posted in the ring, oldest first, while the
    /// receive queue and the completion queue have room: into the receive
    /// queue (one whose buffer fails the checks of a post completes with
    /// `ZCDDP_WC_LOC_PROT_ERR` in its turn); all completed with
    /// `ZCDDP_WC_FLUSH_ERR` once the connection failed. Atomic context
    /// allowed (the ring's pages are mapped at registration).
    pub(super) fn pull_rq(&mut self) {
        // Out of `self` while the queues are worked on; put back below.
        let Some(mut r) = self.rq_ring.take() else {
            return;
        };
        if let Ok(tail) = r.mr.load_u32(r.off + uapi::RING_TAIL) {
            // A tail behind the head or too far ahead of it posts nothing.
            let avail = tail.wrapping_sub(r.head);
            let avail = if avail > r.entries { 0 } else { avail };
            let mut took = 0u32;
            while took < avail
                && self.outstanding() < uapi::CQ_DEPTH
                && (self.error != 0 || self.rq.len() < uapi::RQ_DEPTH)
            {
                let slot = u64::from(r.head.wrapping_add(took) & (r.entries - 1));
                let mut b = [0u8; uapi::RECV_LEN as usize];
                if r.mr
                    .read(r.off + uapi::RING_RQES + slot * uapi::RECV_LEN, &mut b)
                    .is_err()
                {
                    break;
                }
                took += 1;
                let Some(e) = uapi::Recv::parse(&b) else {
                    break;
                };
                self.take_rqe(e);
            }
            if took > 0 {
                // The entries read, then their slots free for the
                // application.
                r.head = r.head.wrapping_add(took);
                let _ = r.mr.store_u32(r.off + uapi::RING_HEAD, r.head);
            }
        }
        self.rq_ring = Some(r);
        self.settle_rq();
    }

    /// Completes the receives at the front of the receive queue whose
    /// buffers failed the checks when they were taken from the ring, in
    /// their turn: after every receive posted before them.
    pub(super) fn settle_rq(&mut self) {
        while self.rq.front().is_some_and(|r| r.bad) {
            if let Some(wr_id) = self.rq.front().map(|r| r.wr_id) {
                self.rq.skip();
                self.complete(Cqe {
                    wr_id,
                    opcode: uapi::WC_RECV,
                    status: uapi::WC_LOC_PROT_ERR,
                    byte_len: 0,
                    flags: 0,
                    inv_stag: 0,
                });
            }
        }
    }

    /// One entry taken from the ring (room checked by the caller).
    fn take_rqe(&mut self, e: uapi::Recv) {
        if self.error != 0 {
            self.complete(Cqe {
                wr_id: e.wr_id,
                opcode: uapi::WC_RECV,
                status: uapi::WC_FLUSH_ERR,
                byte_len: 0,
                flags: 0,
                inv_stag: 0,
            });
            return;
        }
        let mut r = Recv {
            wr_id: e.wr_id,
            ..Recv::default()
        };
        if e.sge.len > 0 {
            r.bad = self
                .local(e.sge.lkey, e.sge.addr, e.sge.len, uapi::ACCESS_LOCAL_WRITE)
                .is_none();
            if let Some(s) = r.sge.first_mut() {
                *s = e.sge;
                r.nsge = 1;
            }
        }
        // Not full (checked by the caller).
        let _ = self.rq.push(r);
    }
}
