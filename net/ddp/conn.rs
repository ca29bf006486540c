// SPDX-License-Identifier: GPL-2.0

//! The ULP `zcddp`: per-socket state, its options (`SOL_ZCDDP`), and the
//! data calls (plain send/recv are refused: the stream is DDP's).

use crate::listed::Listed;
use crate::qp::{Qp, Setup, TcpHolds};
use crate::stat::{self, s};
use crate::zcnet::ddp_mem::{abort_on_close, LentWait};
use crate::zcnet::trylock::{TryGuard, TryLock};
use crate::zcnet::ulp::{Locked, Msg, RxLocked, TcpSock, Ulp};
use crate::{errno, uapi};
use kernel::{
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
};

/// The negotiated parameters, as `struct zcddp_info` reports them.
#[derive(Clone, Copy, Default)]
pub(crate) struct Info {
    pub(crate) role: u32,
    pub(crate) revision: u8,
    pub(crate) crc: bool,
    pub(crate) markers_tx: bool,
    pub(crate) markers_rx: bool,
    pub(crate) p2p: bool,
    pub(crate) rtr: u8,
    pub(crate) peer_pd_len: u16,
    pub(crate) ird: u16,
    pub(crate) ord: u16,
}

impl Info {
    /// Packs into a word (for one atomic store).
    fn pack(&self) -> u64 {
        let b = |v: bool, at: u32| u64::from(v) << at;
        u64::from(self.role & 3)
            | u64::from(self.revision & 3) << 2
            | b(self.crc, 4)
            | b(self.markers_tx, 5)
            | b(self.markers_rx, 6)
            | b(self.p2p, 7)
            | u64::from(self.rtr & 7) << 8
            | u64::from(self.peer_pd_len & 0x3ff) << 12
            | u64::from(self.ird & 0x3fff) << 22
            | u64::from(self.ord & 0x3fff) << 36
    }

    fn unpack(w: u64) -> Self {
        let bit = |at: u32| w >> at & 1 != 0;
        Self {
            role: (w & 3) as u32,
            revision: (w >> 2 & 3) as u8,
            crc: bit(4),
            markers_tx: bit(5),
            markers_rx: bit(6),
            p2p: bit(7),
            rtr: (w >> 8 & 7) as u8,
            peer_pd_len: (w >> 12 & 0x3ff) as u16,
            ird: (w >> 22 & 0x3fff) as u16,
            ord: (w >> 36 & 0x3fff) as u16,
        }
    }
}

/// [`Ctx::pending`]: schedule the work item.
const PENDING_KICK: u32 = 1;
/// [`Ctx::pending`]: wake the socket's waiters.
const PENDING_WAKE: u32 = 2;

/// The state of one zcddp socket. Changed only with the socket locked;
/// atomics so that the state is readable through a shared reference.
pub(crate) struct Ctx {
    /// `ZCDDP_STATE_*`.
    state: Atomic<u32>,
    /// [`Info::pack`], valid in `ZCDDP_STATE_RTS` (and for the role once
    /// start-up began).
    info: Atomic<u64>,
    /// The positive errno of a failed start-up.
    error: Atomic<i32>,
    /// The data path, from start-up on.
    pub(crate) qp: KBox<TryLock<Qp>>,
    /// What whoever lets the data path go owes: [`PENDING_KICK`], the
    /// work item found it busy (or start-up just ended), so it schedules
    /// the work item again; [`PENDING_WAKE`], a completion wait found it
    /// busy, so it wakes the socket's waiters. One word: one exchange a
    /// release.
    pending: Atomic<u32>,
    /// The send queue's depth (`ZCDDP_SEND_QUEUE`), fixed at start-up.
    sq_depth: Atomic<u32>,
    /// Out-of-order placement wanted (`ZCDDP_OOO`; the module parameter
    /// `ooo` gives the default).
    ooo: Atomic<u32>,
    /// What the listing shows, as the data path was last let go.
    listed: Listed,
}

/// The data path's state, locked ([`Ctx::qp`]). Letting it go adds its
/// counts to the namespace's counters, says whether the socket is readable
/// (completions to poll, or the connection failed), which wakes poll/epoll
/// and the completion wait, and schedules the work item when it found the
/// data path busy meanwhile.
pub(crate) struct QpGuard<'a, 'b> {
    g: TryGuard<'a, Qp>,
    ctx: &'a Ctx,
    sk: &'a RxLocked<'b>,
}

impl core::ops::Deref for QpGuard<'_, '_> {
    type Target = Qp;

    fn deref(&self) -> &Qp {
        &self.g
    }
}

impl core::ops::DerefMut for QpGuard<'_, '_> {
    fn deref_mut(&mut self) -> &mut Qp {
        &mut self.g
    }
}

impl Drop for QpGuard<'_, '_> {
    fn drop(&mut self) {
        self.g.flush_counts(self.sk);
        self.g.publish();
        let depth = self.ctx.sq_depth.load(Relaxed);
        self.g.publish_listing(&self.ctx.listed, depth);
        if let Some(now) = self.g.readiness_changed() {
            if self.sk.set_ready(now.0, now.1) {
                self.g.readiness_said(now);
            }
        }
        let owed = self.ctx.pending.xchg(0, Relaxed);
        if owed & PENDING_WAKE != 0 {
            self.sk.wake();
        }
        if owed & PENDING_KICK != 0 {
            self.sk.kick();
        }
    }
}

impl Ctx {
    fn new() -> Result<Self> {
        Ok(Self {
            state: Atomic::new(uapi::STATE_IDLE),
            info: Atomic::new(0),
            error: Atomic::new(0),
            qp: KBox::new(TryLock::new(Qp::new()), GFP_KERNEL)?,
            pending: Atomic::new(0),
            sq_depth: Atomic::new(uapi::SQ_DEPTH as u32),
            ooo: Atomic::new(u32::from(crate::ooo_default())),
            listed: Listed::new()?,
        })
    }

    /// Claims the socket for start-up: `EALREADY` when it ran or runs.
    pub(crate) fn begin(&self) -> Result {
        self.state
            .cmpxchg(uapi::STATE_IDLE, uapi::STATE_STARTING, Relaxed)
            .map(|_| ())
            .map_err(|_| errno::ealready())
    }

    /// Back to idle (start-up did not touch the stream).
    pub(crate) fn abandon(&self) {
        self.state.store(uapi::STATE_IDLE, Relaxed);
    }

    /// Start-up done: RDMA mode with `info`.
    pub(crate) fn ready(&self, sk: &Locked<'_>, info: &Info, setup: &Setup) -> Result {
        let mut qp = self.qp(sk).ok_or(EAGAIN)?;
        let ooo = self.ooo.load(Relaxed) != 0;
        // Zero-copy transmit: the socket sends with MSG_ZEROCOPY and its
        // work item drains the notifications.
        let zctx = (crate::zctx_default() && sk.zerocopy_on()).then(crate::zctx_always);
        qp.start(setup, self.sq_depth.load(Relaxed) as usize, ooo, zctx)?;
        // Segments ahead of a hole kick the receive path (CRC only).
        sk.set_ofo_kick(qp.set_ooo(ooo));
        self.info.store(info.pack(), Relaxed);
        self.state.store(uapi::STATE_RTS, Relaxed);
        // RDMA mode: TCP's bytes are FPDUs for the work item, not events.
        sk.own_readiness();
        // FPDUs that came with the last start-up bytes: the work item takes
        // them, whether or not more data arrives.
        self.owe(PENDING_KICK);
        Ok(())
    }

    /// The data path's state, if no other thread is inside it.
    ///
    /// Always taken with the socket locked (or, in softirq, its spinlock
    /// held with no owner: [`RxLocked`]), and never waited for (waiting
    /// for it with the socket locked could deadlock against a holder that
    /// released the socket lock, as lockdep showed when posts waited for
    /// send space). Nothing holds it across a release of the socket lock
    /// any more -- posts queue instead of waiting, the completion wait lets
    /// it go before it sleeps -- so in practice the try succeeds; `EAGAIN`
    /// stays the answer should it not.
    pub(crate) fn qp<'a, 'b>(&'a self, sk: &'a RxLocked<'b>) -> Option<QpGuard<'a, 'b>> {
        Some(QpGuard {
            g: self.qp.try_lock()?,
            ctx: self,
            sk,
        })
    }

    /// The data path is busy: the next to let it go wakes the socket's
    /// waiters ([`crate::zcnet::ulp::Locked::wake`]).
    pub(crate) fn wake_me(&self) {
        self.owe(PENDING_WAKE);
    }

    /// Sets `bit` of [`Ctx::pending`] for whoever lets the data path go.
    fn owe(&self, bit: u32) {
        let mut old = self.pending.load(Relaxed);
        while old & bit == 0 {
            match self.pending.cmpxchg(old, old | bit, Relaxed) {
                Ok(_) => return,
                Err(now) => old = now,
            }
        }
    }

    /// The work item's run: what the socket has queued is processed (a
    /// peer's RDMA Read served, completions queued), as a verb would.
    fn progress(&self, sk: &Locked<'_>) {
        match self.qp(sk) {
            // Inbound FPDUs processed, and the queued FPDUs moved into TCP
            // while it takes them (this runs from `sk_write_space` too).
            Some(mut qp) => {
                qp.add_count(stat::s::WORK_RUNS, 1);
                qp.pump(sk)
            }
            // Someone is inside: it schedules this again when it is done.
            None => self.owe(PENDING_KICK),
        }
    }

    /// `ZCDDP_SEND_QUEUE`: the send queue's depth, settable before
    /// start-up only (`EBUSY` after: the ring is allocated then).
    fn set_sq_depth(&self, val: &[u8]) -> Result {
        let b: [u8; 4] = val.get(..4).and_then(|b| b.try_into().ok()).ok_or(EINVAL)?;
        let d = u32::from_ne_bytes(b);
        if d == 0 || d as usize > uapi::SQ_DEPTH_MAX {
            return Err(EINVAL);
        }
        if self.state.load(Relaxed) != uapi::STATE_IDLE {
            return Err(EBUSY);
        }
        self.sq_depth.store(d, Relaxed);
        Ok(())
    }

    /// `ZCDDP_OOO`: out-of-order placement on (1) or off (0), at any time.
    fn set_ooo(&self, sk: &Locked<'_>, val: &[u8]) -> Result {
        let b: [u8; 4] = val.get(..4).and_then(|b| b.try_into().ok()).ok_or(EINVAL)?;
        let on = match u32::from_ne_bytes(b) {
            0 => false,
            1 => true,
            _ => return Err(EINVAL),
        };
        self.ooo.store(u32::from(on), Relaxed);
        if self.state.load(Relaxed) == uapi::STATE_RTS {
            let mut qp = self.qp(sk).ok_or(EAGAIN)?;
            sk.set_ofo_kick(qp.set_ooo(on));
        }
        Ok(())
    }

    /// Start-up failed with `e`.
    pub(crate) fn failed(&self, role: u32, e: Error) {
        self.info.store(
            Info {
                role,
                ..Info::default()
            }
            .pack(),
            Relaxed,
        );
        self.error.store(-e.to_errno(), Relaxed);
        self.state.store(uapi::STATE_ERROR, Relaxed);
    }

    fn snapshot(&self) -> uapi::ZcddpInfo {
        let state = self.state.load(Relaxed);
        let i = Info::unpack(self.info.load(Relaxed));
        uapi::ZcddpInfo {
            state,
            role: i.role,
            revision: i.revision,
            crc: i.crc.into(),
            markers_tx: i.markers_tx.into(),
            markers_rx: i.markers_rx.into(),
            p2p: i.p2p.into(),
            rtr: i.rtr,
            peer_pd_len: i.peer_pd_len,
            ird: i.ird,
            ord: i.ord,
            error: if state == uapi::STATE_ERROR {
                self.error.load(Relaxed)
            } else {
                0
            },
        }
    }
}

/// Text into a byte buffer, cut at its end (the listing's lines).
pub(crate) struct Text<'a> {
    buf: &'a mut [u8],
    /// The bytes written.
    pub(crate) len: usize,
}

impl<'a> Text<'a> {
    fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }
}

impl core::fmt::Write for Text<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let room = self.buf.len().saturating_sub(self.len);
        let n = s.len().min(room);
        if let (Some(d), Some(b)) = (
            self.buf.get_mut(self.len..self.len + n),
            s.as_bytes().get(..n),
        ) {
            d.copy_from_slice(b);
            self.len += n;
        }
        Ok(())
    }
}

impl Ctx {
    /// The socket's line of `/proc/net/zcddp_conns` (after its addresses)
    /// and one line per registration, from atomics only: no lock taken.
    fn describe(&self, out: &mut Text<'_>) {
        use core::fmt::Write;
        let i = self.snapshot();
        let role = match i.role {
            uapi::INITIATOR => "initiator",
            uapi::RESPONDER => "responder",
            _ => "-",
        };
        let state = match i.state {
            uapi::STATE_IDLE => "idle",
            uapi::STATE_STARTING => "starting",
            uapi::STATE_RTS => "rts",
            _ => "error",
        };
        let _ = write!(
            out,
            " {role} rev={} crc={} markers={}/{} ird={} ord={} state={state}",
            i.revision, i.crc, i.markers_tx, i.markers_rx, i.ird, i.ord
        );
        self.listed.describe(out, self.sq_depth.load(Relaxed));
    }
}

/// The ULP.
pub(crate) struct ZcDdp;

#[vtable]
impl Ulp for ZcDdp {
    const NAME: &'static CStr = c"zcddp";
    const SOL: i32 = uapi::SOL_ZCDDP;
    type Ctx = Ctx;
    const LISTING: Option<(&'static CStr, &'static CStr)> = Some((
        c"zcddp_conns",
        c"# local remote role rev crc markers(tx/rx) ird ord state error sq(fill/depth) rq cq irq zctx(on, stopped: the kernel copied what was lent, off) rings(cq/rq: entries, 0 unset)\n# \tmr stag addr len access(l: local write, w: remote write, r: remote read) pages\n",
    ));

    fn init(sk: &TcpSock) -> Result<Ctx> {
        crate::count_init();
        // On a connected socket only: a listener's children would need
        // their own start-up, which the application runs on each.
        if !sk.established() {
            return Err(errno::enotconn());
        }
        stat::add(sk.net(), s::CURR_SOCKETS, 1);
        Ctx::new()
    }

    fn release(sk: &TcpSock, _ctx: &Ctx) {
        stat::add(sk.net(), s::CURR_SOCKETS, -1);
    }

    fn sendmsg(_sk: &TcpSock, _ctx: &Ctx, _msg: &mut Msg, _size: usize) -> i32 {
        errno::eopnotsupp().to_errno()
    }

    fn recvmsg(_sk: &TcpSock, _ctx: &Ctx, _msg: &mut Msg, _len: usize, _flags: i32) -> i32 {
        errno::eopnotsupp().to_errno()
    }

    fn setopt_locked(sk: &Locked<'_>, ctx: &Ctx, name: i32, val: &[u8]) -> Result {
        match name {
            uapi::ZCDDP_STARTUP => crate::startup::run(sk, ctx, val),
            uapi::ZCDDP_INFO => Err(EINVAL),
            uapi::SEND_QUEUE => ctx.set_sq_depth(val),
            uapi::OOO => ctx.set_ooo(sk, val),
            uapi::DEREG_MR
            | uapi::POST_RECV
            | uapi::POST_RECV_SG
            | uapi::POST_SEND
            | uapi::POLL_CQ
            | uapi::CQ_RING
            | uapi::RQ_RING => crate::verbs::call(sk, ctx, name, val),
            _ => Err(errno::enoprotoopt()),
        }
    }

    fn setopt_unlocked(sk: &TcpSock, ctx: &Ctx, name: i32, val: &[u8]) -> Option<Result> {
        // Pinning pages holds no socket lock.
        (name == uapi::REG_MR).then(|| crate::verbs::reg_mr(sk, ctx, val))
    }

    fn work(sk: &Locked<'_>, ctx: &Ctx) {
        ctx.progress(sk);
    }

    fn rx_bh(sk: &RxLocked<'_>, ctx: &Ctx) -> bool {
        // In RDMA mode only: start-up reads the stream itself.
        if ctx.state.load(Relaxed) != uapi::STATE_RTS {
            return false;
        }
        let Some(mut qp) = ctx.qp(sk) else {
            return false;
        };
        // A failed connection drops what arrives here, whatever `rxbh`
        // says: no segment schedules the work item any more.
        if let Some(done) = qp.discard(sk) {
            return done;
        }
        if !crate::rx_bh_on() {
            return false;
        }
        match qp.pump_bh(sk) {
            Some(completed) => {
                // Waiters wake for completions only (letting the data path
                // go wakes them, `QpGuard`): the bytes are taken.
                if completed {
                    ctx.wake_me();
                }
                true
            }
            None => false,
        }
    }

    fn describe(_sk: &TcpSock, ctx: &Ctx, out: &mut [u8]) -> usize {
        let mut t = Text::new(out);
        ctx.describe(&mut t);
        t.len
    }

    fn close(sk: &Locked<'_>, ctx: &Ctx) {
        // No byte the application writes after close() returns leaves the
        // host: pages lent to TCP from registrations are the application's
        // memory. Wait, as ZCDDP_DEREG_MR does but only as long as
        // SO_LINGER says (not at all when unset; a signal ends it), for TCP
        // to give them back; if it still holds some, its close resets the
        // connection and drops them (close stays prompt: a peer that never
        // reads cannot hold it).
        let mut w = LentWait::linger(sk);
        loop {
            if let Some(mut qp) = ctx.qp(sk) {
                match qp.tcp_holds_any(sk) {
                    TcpHolds::None => break,
                    TcpHolds::Some => {}
                    // An FPDU handed to TCP in part: nothing finishes it
                    // now, the stream ends mid-FPDU; no use waiting.
                    TcpHolds::CutFpdu => {
                        abort_on_close(sk);
                        break;
                    }
                }
            }
            ctx.wake_me();
            if w.wait(sk).is_err() {
                abort_on_close(sk);
                break;
            }
        }
        // Queued work is dropped and the pages released now: a peer that
        // never reads must not keep them pinned for as long as TCP keeps
        // the orphaned socket.
        if let Some(mut qp) = ctx.qp(sk) {
            qp.close();
        }
    }

    fn getopt(_sk: &TcpSock, ctx: &Ctx, name: i32, out: &mut [u8]) -> Result<usize> {
        match name {
            uapi::ZCDDP_INFO => {
                let b = ctx.snapshot().to_bytes();
                let n = b.len().min(out.len());
                out[..n].copy_from_slice(&b[..n]);
                Ok(n)
            }
            uapi::OOO => {
                let b = ctx.ooo.load(Relaxed).to_ne_bytes();
                let n = b.len().min(out.len());
                out[..n].copy_from_slice(&b[..n]);
                Ok(n)
            }
            uapi::SEND_QUEUE => {
                let b = ctx.sq_depth.load(Relaxed).to_ne_bytes();
                let n = b.len().min(out.len());
                out[..n].copy_from_slice(&b[..n]);
                Ok(n)
            }
            _ => Err(errno::enoprotoopt()),
        }
    }
}
