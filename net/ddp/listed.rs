// SPDX-License-Identifier: GPL-2.0

//! A connection as `/proc/net/zcddp_conns` shows it: a copy of the data
//! path's figures and registrations, in atomics, that whoever lets the
//! data path go refreshes ([`crate::conn::QpGuard`]). The listing reads
//! only this copy: it neither locks the socket (a verb may hold it for
//! long, pinning pages) nor takes the data path, whose release owes the
//! work item's kicks that a reader could not make safely once close has
//! stopped the work item.

use crate::conn::Text;
use crate::uapi;
use kernel::prelude::*;
use kernel::sync::atomic::{Acquire, Atomic, Relaxed, Release};

/// The figures of the connection's line ([`Listed::set`]).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Figures {
    /// The connection's error (a negative errno, 0).
    pub(crate) error: i32,
    pub(crate) sq: u32,
    pub(crate) sq_depth: u32,
    pub(crate) rq: u32,
    pub(crate) cq: u32,
    pub(crate) irq: u32,
    pub(crate) irq_depth: u32,
    /// 0 off, 1 on, 2 stopped (the kernel copied what was lent).
    pub(crate) zctx: u32,
    pub(crate) cq_ring: u32,
    pub(crate) rq_ring: u32,
}

/// A registration's line.
#[derive(Clone, Copy, Default)]
pub(crate) struct MrRow {
    pub(crate) stag: u32,
    pub(crate) access: u32,
    pub(crate) base: u64,
    pub(crate) len: u64,
    pub(crate) pages: u64,
}

struct Slot {
    stag: Atomic<u32>,
    access: Atomic<u32>,
    base: Atomic<u64>,
    len: Atomic<u64>,
    pages: Atomic<u64>,
}

impl Slot {
    fn new() -> Self {
        Self {
            stag: Atomic::new(0),
            access: Atomic::new(0),
            base: Atomic::new(0),
            len: Atomic::new(0),
            pages: Atomic::new(0),
        }
    }
}

/// The copy. One writer at a time (the holder of the data path); any
/// number of readers, which never wait: the figures are each read as the
/// last writer left them, the registrations under a sequence count (read
/// again when a writer changed them meanwhile).
pub(crate) struct Listed {
    figures: [Atomic<u32>; 10],
    /// Even: the registrations are stable; odd: a writer is changing them.
    seq: Atomic<u32>,
    nmr: Atomic<u32>,
    mrs: KVec<Slot>,
}

impl Listed {
    pub(crate) fn new() -> Result<Self> {
        let mut mrs = KVec::with_capacity(uapi::MR_MAX, GFP_KERNEL)?;
        for _ in 0..uapi::MR_MAX {
            mrs.push(Slot::new(), GFP_KERNEL)?;
        }
        Ok(Self {
            figures: core::array::from_fn(|_| Atomic::new(0)),
            seq: Atomic::new(0),
            nmr: Atomic::new(0),
            mrs,
        })
    }

    /// The figures now.
    pub(crate) fn set(&self, f: &Figures) {
        let v = [
            f.error as u32,
            f.sq,
            f.sq_depth,
            f.rq,
            f.cq,
            f.irq,
            f.irq_depth,
            f.zctx,
            f.cq_ring,
            f.rq_ring,
        ];
        for (a, v) in self.figures.iter().zip(v) {
            a.store(v, Relaxed);
        }
    }

    fn figures(&self) -> Figures {
        let g = |i: usize| self.figures.get(i).map_or(0, |a| a.load(Relaxed));
        Figures {
            error: g(0) as i32,
            sq: g(1),
            sq_depth: g(2),
            rq: g(3),
            cq: g(4),
            irq: g(5),
            irq_depth: g(6),
            zctx: g(7),
            cq_ring: g(8),
            rq_ring: g(9),
        }
    }

    /// The registrations now (at most `MR_MAX` taken). The caller is the
    /// only writer (it holds the data path).
    pub(crate) fn set_mrs(&self, rows: impl Iterator<Item = MrRow>) {
        let s = self.seq.load(Relaxed);
        self.seq.store(s.wrapping_add(1), Relaxed);
        // Release: a reader that sees any store below sees the odd count
        // above when it looks again.
        let mut n = 0u32;
        for (slot, r) in self.mrs.iter().zip(rows) {
            slot.stag.store(r.stag, Release);
            slot.access.store(r.access, Release);
            slot.base.store(r.base, Release);
            slot.len.store(r.len, Release);
            slot.pages.store(r.pages, Release);
            n += 1;
        }
        self.nmr.store(n, Release);
        self.seq.store(s.wrapping_add(2), Release);
    }

    /// The text after the connection's parameters: its figures, then a
    /// line per registration (`sq_depth`: the setting, shown until the
    /// data path was first let go).
    pub(crate) fn describe(&self, out: &mut Text<'_>, sq_depth: u32) {
        use core::fmt::Write;
        let mut f = self.figures();
        if f.sq_depth == 0 {
            f.sq_depth = sq_depth;
        }
        let zctx = match f.zctx {
            0 => "off",
            2 => "stopped",
            _ => "on",
        };
        let _ = writeln!(
            out,
            " error={} sq={}/{} rq={}/{} cq={}/{} irq={}/{} zctx={zctx} rings(cq/rq)={}/{}",
            -f.error,
            f.sq,
            f.sq_depth,
            f.rq,
            uapi::RQ_DEPTH,
            f.cq,
            uapi::CQ_DEPTH,
            f.irq,
            f.irq_depth,
            f.cq_ring,
            f.rq_ring,
        );
        let mark = out.len;
        // A few tries: a writer changes them at a verb's pace.
        for _ in 0..4 {
            out.len = mark;
            let s = self.seq.load(Acquire);
            if s & 1 != 0 {
                continue;
            }
            let n = self.nmr.load(Acquire) as usize;
            for slot in self.mrs.iter().take(n) {
                let access = slot.access.load(Acquire);
                let a = |bit, c| if access & bit != 0 { c } else { "-" };
                let _ = writeln!(
                    out,
                    "\tmr stag=0x{:08x} addr=0x{:x} len={} access={}{}{} pages={}",
                    slot.stag.load(Acquire),
                    slot.base.load(Acquire),
                    slot.len.load(Acquire),
                    a(uapi::ACCESS_LOCAL_WRITE, "l"),
                    a(uapi::ACCESS_REMOTE_WRITE, "w"),
                    a(uapi::ACCESS_REMOTE_READ, "r"),
                    slot.pages.load(Acquire),
                );
            }
            if self.seq.load(Relaxed) == s {
                return;
            }
        }
        out.len = mark;
        let _ = writeln!(out, "\tmr (changing)");
    }
}
