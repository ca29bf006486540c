// SPDX-License-Identifier: GPL-2.0

//! The verbs at `SOL_ZCDDP` (`include/uapi/linux/zcddp.h`): each a
//! `setsockopt` command whose results go through the user pointers in its
//! struct. The work is [`crate::qp`]'s.

use crate::conn::Ctx;
use crate::qp::Qp;
use crate::stat::s;
use crate::uapi;
use crate::zcnet::ddp_mem::{LentWait, Mr};
use crate::zcnet::ddp_sock::Deadline;
use crate::zcnet::ulp::{Locked, TcpSock};
use kernel::{
    prelude::*,
    uaccess::{UserPtr, UserSlice},
};

/// Longest completion wait.
const POLL_MAX_MS: u32 = 60000;

fn put_u32(uaddr: u64, v: u32) -> Result {
    UserSlice::new(UserPtr::from_addr(uaddr as usize), 4)
        .writer()
        .write_slice(&v.to_ne_bytes())
}

/// `ZCDDP_REG_MR`, called before the socket is locked: the pages are
/// pinned (faulted in, which may take long) with the socket unlocked, so
/// that no other call on it waits; then the socket is locked to publish
/// the registration, or the pages are unpinned again when that fails.
pub(crate) fn reg_mr(sk: &TcpSock, ctx: &Ctx, val: &[u8]) -> Result {
    let r = uapi::RegMr::parse(val).ok_or(EINVAL)?;
    let write = Qp::reg_mr_check(r.len, r.access)?;
    let mr = Mr::pin(
        r.addr as usize,
        r.len as usize,
        write,
        sk.net(),
        s::PINNED_PAGES,
    )?;
    let g = sk.lock();
    let sk = g.locked();
    let mut qp = ctx.qp(&sk).ok_or(EAGAIN)?;
    let stag = qp.reg_mr(&sk, r.addr, r.len, r.access, mr)?;
    if let Err(e) = put_u32(r.stag_out, stag) {
        // Nobody learns the STag: undo (nothing was lent from it).
        let _ = qp.dereg_mr(&sk, stag);
        return Err(e);
    }
    Ok(())
}

/// `setsockopt(SOL_ZCDDP, name)` for a verb.
pub(crate) fn call(sk: &Locked<'_>, ctx: &Ctx, name: i32, val: &[u8]) -> Result {
    match name {
        uapi::DEREG_MR => {
            let b: [u8; 4] = val.get(..4).and_then(|b| b.try_into().ok()).ok_or(EINVAL)?;
            dereg(sk, ctx, u32::from_ne_bytes(b))
        }
        uapi::POST_RECV => {
            let r = uapi::Recv::parse(val).ok_or(EINVAL)?;
            ctx.qp(sk).ok_or(EAGAIN)?.post_recv(sk, r.wr_id, &[r.sge])
        }
        uapi::POST_RECV_SG => {
            let r = uapi::RecvSg::parse(val).ok_or(EINVAL)?;
            // The list, read before the data path is taken.
            let mut b = [0u8; uapi::RECV_SGE_MAX * uapi::SGE_LEN];
            let list = b.get_mut(..r.num_sge * uapi::SGE_LEN).ok_or(EINVAL)?;
            UserSlice::new(UserPtr::from_addr(r.sg_list as usize), list.len())
                .reader()
                .read_slice(list)?;
            let mut sge = [uapi::Sge::default(); uapi::RECV_SGE_MAX];
            for (i, e) in sge.iter_mut().take(r.num_sge).enumerate() {
                *e = uapi::Sge::parse(&b, i).ok_or(EINVAL)?;
            }
            let list = sge.get(..r.num_sge).ok_or(EINVAL)?;
            ctx.qp(sk).ok_or(EAGAIN)?.post_recv(sk, r.wr_id, list)
        }
        uapi::POST_SEND => {
            let w = uapi::Send::parse(val).ok_or(EINVAL)?;
            ctx.qp(sk).ok_or(EAGAIN)?.post_send(sk, &w)
        }
        uapi::POLL_CQ => poll(sk, ctx, &uapi::Poll::parse(val).ok_or(EINVAL)?),
        uapi::CQ_RING => {
            let r = uapi::Ring::parse(val).ok_or(EINVAL)?;
            ctx.qp(sk).ok_or(EAGAIN)?.set_cq_ring(&r)
        }
        uapi::RQ_RING => {
            let r = uapi::Ring::parse(val).ok_or(EINVAL)?;
            ctx.qp(sk).ok_or(EAGAIN)?.set_rq_ring(&r)
        }
        _ => Err(crate::errno::enoprotoopt()),
    }
}

/// `ZCDDP_DEREG_MR`: the registration is invalidated at once; the call
/// returns once TCP holds none of its pages (lent by zero-copy transmit:
/// a Read Response's, a Send's or a Write's, not yet acknowledged by the
/// peer and freed), so that nothing the application writes into that
/// memory afterwards leaves the host. It waits for that as a blocking send
/// waits for room: up to `SO_SNDTIMEO` (the lock released), then `EBUSY`;
/// a signal ends the wait (`EINTR`). The registration stays invalid, and
/// the call may be repeated.
fn dereg(sk: &Locked<'_>, ctx: &Ctx, stag: u32) -> Result {
    let mut w = LentWait::new(sk);
    let mut first = true;
    loop {
        match ctx.qp(sk) {
            Some(mut qp) => {
                if qp.dereg_mr(sk, stag)? {
                    return Ok(());
                }
            }
            // Another thread is inside the data path.
            None if first => return Err(EAGAIN),
            None => {}
        }
        first = false;
        // Whoever lets the data path go next (the work item that reaps the
        // notification) wakes this wait; a notification wakes it anyway.
        ctx.wake_me();
        match w.wait(sk) {
            Ok(()) => {}
            Err(e) if e == ETIMEDOUT => return Err(EBUSY),
            Err(e) => return Err(e),
        }
    }
}

/// `ZCDDP_POLL_CQ`: waits up to the timeout for a completion (serving the
/// peer's FPDUs meanwhile), then hands out what there is.
fn poll(sk: &Locked<'_>, ctx: &Ctx, p: &uapi::Poll) -> Result {
    if p.max == 0 || p.max as usize > uapi::CQ_DEPTH {
        return Err(EINVAL);
    }
    let mut d = Deadline::after_ms(p.timeout_ms.min(POLL_MAX_MS));
    loop {
        // The socket's work item or another thread is inside the data path
        // (a Read served or a post, waiting for send space): what it
        // completes wakes this wait; nothing yet when not waiting.
        let Some(mut qp) = ctx.qp(sk) else {
            if p.timeout_ms == 0 {
                return put_u32(p.count_out, 0);
            }
            // Set with the socket locked: the holder lets the data path go
            // only after retaking it, so the wake cannot come before.
            ctx.wake_me();
            match sk.wait(&mut d, 0) {
                Ok(()) => continue,
                Err(e) if e == ETIMEDOUT => return put_u32(p.count_out, 0),
                Err(e) => return Err(e),
            }
        };
        qp.pump(sk);
        qp.publish();
        if qp.has_ring() && (qp.done_waiting() || p.timeout_ms == 0) {
            // The completions are in the ring (or wait for its room): none
            // handed out here; the error once nothing is left.
            if !qp.completions_waiting() {
                qp.error()?;
            }
            return put_u32(p.count_out, 0);
        }
        if qp.done_waiting() || p.timeout_ms == 0 {
            // Straight from the queue to the caller's array: a completion
            // leaves the queue only once copied.
            let mut w = UserSlice::new(
                UserPtr::from_addr(p.cqe as usize),
                p.max as usize * core::mem::size_of::<crate::zcnet::ext::zcddp_cqe>(),
            )
            .writer();
            let n = qp.take_cqes(p.max as usize, |c| w.write_slice(&uapi::cqe_bytes(c)))?;
            if n == 0 {
                qp.error()?;
            }
            return put_u32(p.count_out, n as u32);
        }
        // More than the bytes the receive path left queued on purpose
        // (an FPDU it places from TCP's queue once TCP holds all of it).
        let need = qp.rx_need();
        drop(qp);
        match sk.wait(&mut d, need) {
            Ok(()) => {}
            Err(e) if e == ETIMEDOUT => return put_u32(p.count_out, 0),
            Err(e) if e == EINTR => return Err(e),
            // The connection ended: flush (the next round reports it).
            Err(e) => ctx.qp(sk).ok_or(EAGAIN)?.fail(sk, e.to_errno()),
        }
    }
}
