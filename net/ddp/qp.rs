// SPDX-License-Identifier: GPL-2.0

//! The verbs and the data path of one connection (RFC 5040/5041 over MPA),
//! run in the caller's context with the socket locked. A post never waits:
//! its work request goes on the send queue (a ring of fixed depth, `ENOMEM`
//! when full, as siw's), and the queues are moved into TCP FPDU by FPDU
//! while TCP takes them without waiting -- by the post itself, by every
//! verb call, and by the socket's work item, which TCP's `sk_write_space`
//! schedules once send space frees. A peer's RDMA Read goes on the inbound
//! Read queue (IRD deep) and is answered the same way, between messages.
//! Inbound FPDUs are taken from the socket and processed by every verb
//! call, the completion wait and the work item.
//!
//! Every check -- the STag is this connection's and valid, the access
//! right, the bounds, the MSN and MO, the queue -- is made before a byte is
//! placed; any failure ends the connection with a Terminate carrying the
//! RFC's layer, type and code, flushes the posted work, and the verbs then
//! fail with `EPROTO` (`ECONNRESET` when the peer terminated).
//!
//! Memory per connection: the FPDU assembly buffer (one largest FPDU,
//! 64 KiB), a staging buffer, a ULPDU and a transmit buffer, and bounded
//! queues (`ZCDDP_RQ_DEPTH`, the send queue's depth, IRD, ORD,
//! `ZCDDP_CQ_DEPTH`, `ZCDDP_MR_MAX`), all allocated at start-up.

use crate::errno;
use crate::listed::{Figures, Listed, MrRow};
use crate::stat::{self, s};
use crate::uapi;
use crate::wire::{
    crc32c::{self, Crc32c},
    ddp::{self, Header},
    mpa::{self, Fpdu, FpduError, FpduParser, Framing},
    rdmap::{self, Opcode, ReadRequest, Segment},
    terminate::{Layout, TermCode, Terminate},
    zcids::ZcIds,
};
use crate::zcnet::ddp_mem::Mr;
use crate::zcnet::helpers::random_u32;
use crate::zcnet::netstat::NetRef;
use crate::zcnet::ulp::{Locked, RxLocked};
use kernel::prelude::*;
use kernel::sync::Arc;

mod cq_ring;
mod direct;
mod fifo;
mod ooo;
mod rq_ring;

use fifo::Fifo;

pub(crate) use direct::Payload;

/// Payload bytes per FPDU this side sends, at most (siw sends about an
/// MSS). With CRC, an FPDU fits one TCP segment and ends it (RFC 5044 §5,
/// so that the peer can place segments that arrive out of order).
const TX_PAYLOAD: usize = 4096;
/// The least payload per FPDU, whatever the MSS.
const TX_PAYLOAD_MIN: usize = 256;
/// The transmit buffer: one FPDU of `TX_PAYLOAD` with header, pad, CRC and
/// markers.
const TX_BUF: usize = TX_PAYLOAD + 64 + (TX_PAYLOAD / 512 + 2) * mpa::MARKER_LEN;
/// The ULPDU buffer: the largest header and `TX_PAYLOAD`.
const ULPDU_BUF: usize = TX_PAYLOAD + 64;
/// Bytes taken from the socket at once.
const STAGE: usize = 16384;
/// [`Wqe::op`] of a Read Response we owe the peer.
const OP_READ_RESP: u32 = u32::MAX;
/// The least payload of an FPDU sent by reference (zero-copy transmit):
/// below it the copy is cheaper than the notification.
const ZC_MIN: usize = 1024;
/// Notifications in a row that say the kernel copied the lent pages
/// (`SO_EE_CODE_ZEROCOPY_COPIED`: a local receiver, a device without
/// scatter-gather) after which a connection stops lending: on that path
/// lending costs the notification and the pinning on top of the copy.
const ZC_COPIED_STOP: u8 = 2;

/// A work request on the send queue, or a Read Response on the inbound
/// Read queue.
#[derive(Clone, Copy, Default)]
struct Wqe {
    wr_id: u64,
    /// `WR_*`, or [`OP_READ_RESP`].
    op: u32,
    /// A completion when done (Sends and Writes; a Read's comes from the
    /// ORQ).
    signaled: bool,
    /// The local bytes: a Send's or Write's source, a Read's sink, a Read
    /// Response's source (the peer named it).
    lkey: u32,
    /// The registration `lkey` named when the work was checked (its
    /// [`Region::serial`], never reused; 0: no payload): every FPDU's
    /// payload comes from that registration, checked again as it leaves,
    /// never from a later one that got the same STag.
    src: u64,
    addr: u64,
    len: u32,
    /// The peer's STag and tagged offset: a Write's or Read's target, a
    /// Read Response's sink.
    rkey: u32,
    raddr: u64,
    inv_stag: u32,
    /// An untagged message's MSN, given at post time.
    msn: u32,
    /// Payload bytes framed so far.
    done: u32,
}

/// Which queue's head message is partly on the wire (its FPDUs go first).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mid {
    None,
    Sq,
    Irq,
}

/// One registration of this connection.
struct Region {
    /// RFC 5040's STag: random, never that of a registration still listed.
    stag: u32,
    /// This registration and no other, for the lifetime of the connection
    /// (STags may recur; serials never do): what queued work is bound to.
    serial: u64,
    base: u64,
    len: u64,
    access: u32,
    valid: bool,
    /// Shared with the FPDU on its way whose payload it holds: that FPDU
    /// ends whole on the wire even when the registration goes meanwhile.
    mr: Arc<Mr>,
    net: NetRef,
}

impl Drop for Region {
    fn drop(&mut self) {
        // Its pages are uncounted (`ZcddpPinnedPages`) when they are
        // unpinned: once the last holder of `mr` let it go.
        stat::add(self.net.net(), s::REGISTRATIONS, -1);
    }
}

/// A posted receive: its scatter list (elements of length 0 dropped).
#[derive(Clone, Copy, Default)]
struct Recv {
    wr_id: u64,
    sge: [uapi::Sge; uapi::RECV_SGE_MAX],
    nsge: usize,
    /// Taken from the receive ring with a buffer that failed the checks:
    /// completes with `ZCDDP_WC_LOC_PROT_ERR` in its turn, taking no
    /// message.
    bad: bool,
}

/// An RDMA Read we issued, waiting for its response.
#[derive(Clone, Copy, Default)]
struct ReadOut {
    wr_id: u64,
    addr: u64,
    len: u32,
    lkey: u32,
    /// The sink registration (its [`Region::serial`]) checked at post time.
    sink: u64,
    got: u32,
}

/// The payload of the FPDU on its way that goes to TCP by reference: `left`
/// bytes of `mr` at `off`.
struct ZcPayload {
    mr: Arc<Mr>,
    off: u64,
    left: usize,
}

/// A registration whose pages TCP holds (lent by `MSG_ZEROCOPY`): kept
/// (pinned, and `ZCDDP_DEREG_MR` waits) until the kernel reports every
/// notification id before `mark` done, when TCP freed the last skb
/// holding its pages.
struct Lent {
    mr: Arc<Mr>,
    mark: u32,
}

/// A Send or Write queue completion held back until the kernel is done
/// with the pages its FPDUs lent TCP: every notification id before `mark`
/// done (`None`: the FPDU in the transmit buffer still goes out; the mark
/// is taken when it has).
#[derive(Clone, Copy, Default)]
struct Held {
    c: Cqe,
    mark: Option<u32>,
}

/// A completion (`struct zcddp_cqe`).
#[derive(Clone, Copy, Default)]
pub(crate) struct Cqe {
    pub(crate) wr_id: u64,
    pub(crate) opcode: u32,
    pub(crate) status: u32,
    pub(crate) byte_len: u32,
    pub(crate) flags: u32,
    pub(crate) inv_stag: u32,
}

/// What a connection runs with (from start-up).
pub(crate) struct Setup {
    pub(crate) tx: Framing,
    pub(crate) rx: Framing,
    pub(crate) tx_pos: u32,
    pub(crate) rx_pos: u32,
    pub(crate) send_msn: u32,
    pub(crate) recv_msn: u32,
    pub(crate) read_msn_in: u32,
    pub(crate) ird: u16,
    pub(crate) ord: u16,
}

/// The state of the data path.
pub(crate) struct Qp {
    live: bool,
    /// The error the verbs return once the connection failed (negative).
    error: i32,
    tx: Framing,
    tx_pos: u32,
    send_msn: u32,
    read_msn_out: u32,
    recv_msn: u32,
    read_msn_in: u32,
    ird: u16,
    ord: u16,
    rq: Fifo<Recv>,
    orq: Fifo<ReadOut>,
    cq: Fifo<Cqe>,
    /// The completion ring, once the application set one: the
    /// completions in `cq` move there when the data path is let go.
    ring: Option<cq_ring::CqRing>,
    /// The receive ring, once the application set one: receives taken
    /// from it into `rq` when a Send needs one.
    rq_ring: Option<rq_ring::RqRing>,
    /// The send queue and the inbound Read queue (Read Responses owed).
    sq: Fifo<Wqe>,
    irq: Fifo<Wqe>,
    /// Signaled Sends and Writes on the send queue (their completions
    /// are reserved in the CQ).
    sq_signaled: usize,
    mid: Mid,
    regions: KVec<Region>,
    /// `regions` changed since the listing's copy was refreshed.
    regions_changed: bool,
    /// The serial of the next registration (from 1).
    next_serial: u64,
    /// Registrations whose pages TCP holds, one entry each.
    lent: KVec<Lent>,
    parser: Option<FpduParser>,
    fbuf: KVVec<u8>,
    stage: KVVec<u8>,
    ulpdu: KVVec<u8>,
    /// The FPDU being handed to TCP: `txbuf[tx_off..tx_len]` is left.
    txbuf: KVVec<u8>,
    tx_off: usize,
    tx_len: usize,
    /// Payload bytes per FPDU now (`TX_PAYLOAD`, or less to fit a segment).
    tx_payload: usize,
    /// A Terminate to send after the FPDU in `txbuf` (a whole ULPDU).
    term: Option<([u8; 64], usize)>,
    /// The receive direction's framing.
    rx: Framing,
    /// Out-of-order placement (CRC negotiated only).
    ooo: Option<ooo::Ooo>,
    /// Zero-copy transmit: on (the parameter `zctx`, the socket's
    /// `MSG_ZEROCOPY` set up), the notification ids in flight.
    zctx: Option<KBox<ZcIds>>,
    /// Notifications in a row marked copied by the kernel; at
    /// [`ZC_COPIED_STOP`] the connection lends no more, unless
    /// `zc_always` (`zctx=2`).
    zc_copied_run: u8,
    zc_always: bool,
    /// FPDUs the in-order path received (for the softirq path's count).
    rx_fpdus: u32,
    /// The connection failed and its sending side is shut (a FIN after the
    /// Terminate, if one was owed): what arrives now is read and dropped.
    shut: bool,
    /// The peer terminated the connection: the first work request flushed
    /// completes with `ZCDDP_WC_REM_ERR`.
    rem_err: bool,
    /// The FPDU in `txbuf` lends its payload: `txbuf[..zc_at]` (MPA and
    /// DDP/RDMAP headers) goes first, then the payload by reference, then
    /// `txbuf[zc_at..tx_len]` (pad and CRC).
    zc: Option<ZcPayload>,
    zc_at: usize,
    /// Send queue completions (and those after them) held back for
    /// notifications, oldest first.
    held: Fifo<Held>,
    /// The FPDU the in-order path is at was placed out of order: its
    /// tagged payload is not copied again.
    skip_copy: bool,
    /// In-order direct placement from TCP's receive queue (the parameter
    /// `rxdirect`).
    direct: bool,
    /// Why the FPDUs the staging path takes now are not placed directly:
    /// the counter their payload bytes go to.
    staged_why: usize,
    /// The bytes TCP must hold before the receive path can move on (it
    /// waits for a whole FPDU to place it from TCP's queue); at least 1.
    rx_need: u32,
    /// The FPDU the staging path is at went through the parser's FPDU
    /// buffer (a third copy; not when the staged bytes held all of it).
    reassembled: bool,
    /// The per-FPDU counts, added to the namespace's when the data path
    /// is let go ([`Qp::flush_counts`]).
    counts: stat::Batch,
    /// What the socket was last told it is (readable, writable) when the
    /// data path was let go ([`Qp::readiness_changed`]); `None` before.
    said: Option<(bool, bool)>,
}

/// What TCP may still hold of the pages lent from registrations
/// ([`Qp::tcp_holds_any`]).
pub(crate) enum TcpHolds {
    /// Nothing.
    None,
    /// Pages of FPDUs handed to TCP whole.
    Some,
    /// Also pages of an FPDU handed to TCP in part.
    CutFpdu,
}

/// Whether TCP may still hold pages of `mr`: lent and not reported done
/// (`lent`), or the payload of the FPDU on its way (`zc`).
fn tcp_holds(lent: &[Lent], zc: Option<&ZcPayload>, mr: &Arc<Mr>) -> bool {
    lent.iter().any(|l| Arc::ptr_eq(&l.mr, mr)) || zc.is_some_and(|z| Arc::ptr_eq(&z.mr, mr))
}

/// How a segment failed: the Terminate to send.
struct Fault(TermCode);

/// Puts a buffer taken out of `slot` (`mem::take`, to use it while the
/// `Qp` is borrowed) back. The empty vector `take` left there is forgotten,
/// not dropped: it holds no memory, and dropping it would still call the
/// allocator's free (a `kvrealloc` call, twice a message on the receive
/// path). Anything else found there is dropped.
fn put_back<T>(slot: &mut KVVec<T>, v: KVVec<T>) {
    let old = core::mem::replace(slot, v);
    if old.capacity() == 0 {
        core::mem::forget(old);
    }
}

impl From<ddp::DdpError> for Fault {
    fn from(e: ddp::DdpError) -> Self {
        Fault(e.term_code())
    }
}

impl Qp {
    pub(crate) fn new() -> Self {
        Self {
            live: false,
            error: 0,
            tx: Framing::default(),
            tx_pos: 0,
            send_msn: 1,
            read_msn_out: 1,
            recv_msn: 1,
            read_msn_in: 1,
            ird: 0,
            ord: 0,
            rq: Fifo::new(),
            orq: Fifo::new(),
            cq: Fifo::new(),
            ring: None,
            rq_ring: None,
            sq: Fifo::new(),
            irq: Fifo::new(),
            sq_signaled: 0,
            mid: Mid::None,
            regions: KVec::new(),
            regions_changed: false,
            next_serial: 1,
            lent: KVec::new(),
            parser: None,
            fbuf: KVVec::new(),
            stage: KVVec::new(),
            ulpdu: KVVec::new(),
            txbuf: KVVec::new(),
            tx_off: 0,
            tx_len: 0,
            tx_payload: TX_PAYLOAD,
            term: None,
            rx: Framing::default(),
            ooo: None,
            skip_copy: false,
            zctx: None,
            zc_copied_run: 0,
            zc_always: false,
            rx_fpdus: 0,
            shut: false,
            rem_err: false,
            zc: None,
            zc_at: 0,
            held: Fifo::new(),
            direct: false,
            staged_why: s::RX_STAGED_FRAMING,
            rx_need: 1,
            reassembled: false,
            counts: stat::Batch::new(),
            said: None,
        }
    }

    /// Start-up done: RDMA mode, with a send queue `sq_depth` deep;
    /// out-of-order placement `ooo` (with CRC only).
    /// `zctx`: payload goes to TCP by reference (the socket sends with
    /// `MSG_ZEROCOPY`), `Some(true)` even after the kernel reports that it
    /// copied what was lent.
    pub(crate) fn start(
        &mut self,
        s: &Setup,
        sq_depth: usize,
        ooo: bool,
        zctx: Option<bool>,
    ) -> Result {
        self.fbuf = KVVec::from_elem(0u8, mpa::fpdu_len(mpa::MAX_ULPDU_LEN), GFP_KERNEL)?;
        self.stage = KVVec::from_elem(0u8, STAGE, GFP_KERNEL)?;
        self.ulpdu = KVVec::from_elem(0u8, ULPDU_BUF, GFP_KERNEL)?;
        self.txbuf = KVVec::from_elem(0u8, TX_BUF, GFP_KERNEL)?;
        self.sq.alloc(sq_depth)?;
        self.irq.alloc(usize::from(s.ird).max(1))?;
        self.queues()?;
        self.held.alloc(uapi::CQ_DEPTH)?;
        if let Some(always) = zctx {
            self.zctx = Some(KBox::new(ZcIds::new(), GFP_KERNEL)?);
            self.zc_always = always;
        }
        self.orq.alloc(usize::from(s.ord))?;
        self.parser = Some(FpduParser::new(s.rx, s.rx_pos).map_err(|_| EINVAL)?);
        self.rx = s.rx;
        self.direct = crate::rx_direct_default() && !s.rx.markers;
        if s.rx.crc {
            self.ooo = Some(ooo::Ooo::new(ooo)?);
        }
        self.tx = s.tx;
        self.tx_pos = s.tx_pos;
        self.send_msn = s.send_msn;
        self.recv_msn = s.recv_msn;
        self.read_msn_in = s.read_msn_in;
        self.ird = s.ird;
        self.ord = s.ord;
        self.live = true;
        Ok(())
    }

    /// Out-of-order placement on (`ZCDDP_OOO`); whether it is active (CRC
    /// negotiated).
    pub(crate) fn set_ooo(&mut self, on: bool) -> bool {
        match self.ooo.as_mut() {
            Some(o) => {
                o.on = on;
                on
            }
            None => false,
        }
    }

    /// Adds `n` to counter `idx`, with the data path's other counts.
    pub(crate) fn add_count(&mut self, idx: usize, n: i64) {
        self.counts.add(idx, n);
    }

    /// Adds the counts gathered to the namespace's counters.
    pub(crate) fn flush_counts(&mut self, sk: &RxLocked<'_>) {
        // Most holds count nothing: not even the namespace is looked up.
        if !self.counts.is_empty() {
            stat::add_batch(sk.net(), &mut self.counts);
        }
    }

    /// The receive queue and the completion queue, allocated once: by the
    /// first receive posted (before start-up too) or by start-up.
    fn queues(&mut self) -> Result {
        if self.rq.depth() == 0 {
            self.rq.alloc(uapi::RQ_DEPTH)?;
        }
        if self.cq.depth() == 0 {
            self.cq.alloc(uapi::CQ_DEPTH)?;
        }
        Ok(())
    }

    fn ready(&self) -> Result {
        if self.error != 0 {
            return Err(Error::from_errno(self.error));
        }
        if !self.live {
            return Err(errno::enotconn());
        }
        Ok(())
    }

    /// Work posted and not completed, plus completions not polled.
    fn outstanding(&self) -> usize {
        self.rq.len() + self.orq.len() + self.sq_signaled + self.held.len() + self.cq.len()
    }

    fn region(&mut self, stag: u32) -> Option<&mut Region> {
        self.regions.iter_mut().find(|r| r.stag == stag && r.valid)
    }

    // ---- registration ----

    /// `ZCDDP_REG_MR`'s arguments checked before anything is pinned:
    /// whether the pages are pinned writable.
    pub(crate) fn reg_mr_check(len: u64, access: u32) -> Result<bool> {
        let all = uapi::ACCESS_LOCAL_WRITE
            | uapi::ACCESS_REMOTE_WRITE
            | uapi::ACCESS_REMOTE_READ
            | uapi::ACCESS_NO_REMOTE_INV;
        if access & !all != 0 || len == 0 || len > isize::MAX as u64 {
            return Err(EINVAL);
        }
        Ok(access & (uapi::ACCESS_LOCAL_WRITE | uapi::ACCESS_REMOTE_WRITE) != 0)
    }

    /// `ZCDDP_REG_MR`, its pages pinned (without the socket lock,
    /// [`Qp::reg_mr_check`]): the new STag. On failure `mr` drops, its
    /// pages unpinned.
    pub(crate) fn reg_mr(
        &mut self,
        sk: &Locked<'_>,
        addr: u64,
        len: u64,
        access: u32,
        mr: Mr,
    ) -> Result<u32> {
        // Dead registrations go first, but not one whose pages TCP still
        // holds: its ZCDDP_DEREG_MR is repeated until TCP let go (and must
        // not find the STag unknown meanwhile). Then the limit.
        let (lent, zc) = (&self.lent, self.zc.as_ref());
        self.regions
            .retain(|r| r.valid || tcp_holds(lent, zc, &r.mr));
        if self.regions.len() >= uapi::MR_MAX {
            return Err(errno::enospc());
        }
        let net = sk.net();
        let mr = Arc::new(mr, GFP_KERNEL)?;
        // The STag (RFC 5040 §4.1: index and key): random, so that a peer
        // cannot guess another registration's from its own, and never
        // that of a registration still listed (invalidated ones too). Work
        // already queued is bound to the registration itself (`serial`),
        // not to its STag, so a later registration given an old STag is
        // never reached by it. Never 0 or 1 (the RTR's).
        let stag = loop {
            let cand = random_u32();
            if cand > 1 && !self.stag_named(cand) {
                break cand;
            }
        };
        let serial = self.next_serial;
        self.next_serial += 1;
        stat::add(net, s::REGISTRATIONS, 1);
        let region = Region {
            stag,
            serial,
            base: addr,
            len,
            access,
            valid: true,
            mr,
            net: net.to_ref(),
        };
        // On failure the region drops: its pages are released and uncounted.
        self.regions.push(region, GFP_KERNEL)?;
        self.regions_changed = true;
        Ok(stag)
    }

    /// `ZCDDP_DEREG_MR`: the registration is invalidated at once (nothing
    /// more is sent from it or placed into it; work bound to it fails);
    /// it goes when TCP holds none of its pages any more. `Ok(true)` then;
    /// `Ok(false)` while TCP still holds pages lent from it (the caller
    /// waits for the kernel's notifications and calls again).
    pub(crate) fn dereg_mr(&mut self, sk: &RxLocked<'_>, stag: u32) -> Result<bool> {
        let i = self
            .regions
            .iter()
            .position(|r| r.stag == stag)
            .ok_or(EINVAL)?;
        // A ring's pages stay while it is set.
        if self.holds_ring(stag) {
            return Err(EBUSY);
        }
        // Out-of-order records name STags: the in-order path copies again.
        if let Some(o) = self.ooo.as_mut() {
            o.forget();
        }
        if let Some(r) = self.regions.get_mut(i) {
            r.valid = false;
        }
        self.regions_changed = true;
        // The notifications that came meanwhile.
        self.reap(sk);
        let held = self
            .regions
            .get(i)
            .is_some_and(|r| tcp_holds(&self.lent, self.zc.as_ref(), &r.mr));
        if held {
            return Ok(false);
        }
        // Posted work naming it fails when it gets there.
        self.regions.remove(i).map(drop).map_err(|_| EINVAL)?;
        Ok(true)
    }

    /// Whether `stag` is a listed registration's, or named by work still
    /// queued (posted receives, Reads out, the send and inbound Read
    /// queues): a new registration never gets it.
    fn stag_named(&self, stag: u32) -> bool {
        self.regions.iter().any(|r| r.stag == stag)
            || self
                .rq
                .iter()
                .any(|r| r.sge.iter().take(r.nsge).any(|e| e.lkey == stag))
            || self.orq.iter().any(|o| o.lkey == stag)
            || self.sq.iter().any(|w| w.lkey == stag)
            || self.irq.iter().any(|w| w.lkey == stag)
    }

    /// The registration bound to queued work (`serial`), still valid, with
    /// `need` access, holding `[addr, addr + len)`: its index and the
    /// offset. Checked where the data leaves or lands, not only when the
    /// work was queued: a registration deregistered or invalidated
    /// meanwhile is not touched, and no other one is.
    fn bound(&self, serial: u64, addr: u64, len: u32, need: u32) -> Option<(usize, u64)> {
        self.checked(|r| r.serial == serial, addr, len, need)
    }

    /// The serial of registration `i`.
    fn serial(&self, i: usize) -> u64 {
        self.regions.get(i).map_or(0, |r| r.serial)
    }

    /// The local bytes `[addr, addr + len)` of registration `lkey`: its
    /// index and offset, checked (`need` access for writes into it).
    fn local(&self, lkey: u32, addr: u64, len: u32, need: u32) -> Option<(usize, u64)> {
        self.checked(|r| r.stag == lkey, addr, len, need)
    }

    /// The valid registration `pick` chooses, with `need` access, holding
    /// `[addr, addr + len)`: its index and the offset.
    fn checked(
        &self,
        pick: impl Fn(&Region) -> bool,
        addr: u64,
        len: u32,
        need: u32,
    ) -> Option<(usize, u64)> {
        let i = self.regions.iter().position(|r| r.valid && pick(r))?;
        let r = self.regions.get(i)?;
        if r.access & need != need {
            return None;
        }
        ddp::check_bounds(addr, len as usize, r.base, r.len).ok()?;
        Some((i, addr - r.base))
    }

    // ---- posting ----

    /// `ZCDDP_POST_RECV` and `ZCDDP_POST_RECV_SG`: every element in a
    /// valid registration with local write access, the message at most
    /// the sum of their lengths (below 4 GiB).
    pub(crate) fn post_recv(&mut self, sk: &Locked<'_>, wr_id: u64, list: &[uapi::Sge]) -> Result {
        // Before start-up too: a peer may Send as soon as it is connected.
        if self.error != 0 {
            return Err(Error::from_errno(self.error));
        }
        // Receives come through the ring: in its order only.
        if self.has_rq_ring() {
            return Err(EBUSY);
        }
        self.queues()?;
        // As for a post of a Send: progress first only when it would
        // otherwise fail for room (completions reaped, the receive path
        // run); a receive reposted per message then makes no pass over
        // the data path.
        if self.rq.len() >= uapi::RQ_DEPTH || self.outstanding() >= uapi::CQ_DEPTH {
            self.pump(sk);
        }
        if self.rq.len() >= uapi::RQ_DEPTH || self.outstanding() >= uapi::CQ_DEPTH {
            return Err(errno::enospc());
        }
        let mut r = Recv {
            wr_id,
            ..Recv::default()
        };
        let mut total = 0u32;
        for e in list.iter().filter(|e| e.len > 0) {
            self.local(e.lkey, e.addr, e.len, uapi::ACCESS_LOCAL_WRITE)
                .ok_or(EINVAL)?;
            *r.sge.get_mut(r.nsge).ok_or(EINVAL)? = *e;
            r.nsge += 1;
            total = total.checked_add(e.len).ok_or(EINVAL)?;
        }
        if !self.rq.push(r) {
            return Err(errno::enospc());
        }
        Ok(())
    }

    /// `ZCDDP_POST_SEND`: checked and queued, never waiting; `ENOMEM`
    /// when the send queue is full.
    pub(crate) fn post_send(&mut self, sk: &Locked<'_>, w: &uapi::Send) -> Result {
        self.ready()?;
        let read = match w.opcode {
            uapi::WR_SEND | uapi::WR_SEND_SE | uapi::WR_SEND_INV | uapi::WR_WRITE => false,
            uapi::WR_READ => true,
            _ => return Err(EINVAL),
        };
        // What arrives is taken in data_ready and the work item, so a post
        // makes progress first only when it would otherwise fail for room
        // (completions reaped, Read Responses taken): a small Write's post
        // then makes no pass over the receive path (zcddp.rst "Small
        // Writes").
        if self.sq.is_full()
            || self.outstanding() >= uapi::CQ_DEPTH
            || (read && self.orq.len() >= usize::from(self.ord))
        {
            self.pump(sk);
            self.ready()?;
        }
        if self.sq.is_full() {
            return Err(ENOMEM);
        }
        let signaled = w.flags & uapi::SEND_SIGNALED != 0 || read;
        if signaled && self.outstanding() >= uapi::CQ_DEPTH {
            return Err(errno::enospc());
        }
        let mut q = Wqe {
            wr_id: w.wr_id,
            op: w.opcode,
            signaled,
            lkey: w.lkey,
            addr: w.addr,
            len: w.len,
            rkey: w.rkey,
            raddr: w.raddr,
            inv_stag: w.inv_stag,
            src: 0,
            msn: 0,
            done: 0,
        };
        if read {
            if self.orq.len() >= usize::from(self.ord) {
                return Err(errno::enospc());
            }
            let (i, _) = self
                .local(w.lkey, w.addr, w.len, uapi::ACCESS_LOCAL_WRITE)
                .ok_or(EINVAL)?;
            let sink = self.serial(i);
            // Room was reserved at start-up (ORD entries).
            if !self.orq.push(ReadOut {
                wr_id: w.wr_id,
                addr: w.addr,
                len: w.len,
                lkey: w.lkey,
                sink,
                got: 0,
            }) {
                return Err(errno::enospc());
            }
            q.msn = self.read_msn_out;
            self.read_msn_out = self.read_msn_out.wrapping_add(1);
        } else {
            if w.len > 0 {
                let (i, _) = self.local(w.lkey, w.addr, w.len, 0).ok_or(EINVAL)?;
                q.src = self.serial(i);
            }
            if w.opcode != uapi::WR_WRITE {
                q.msn = self.send_msn;
                self.send_msn = self.send_msn.wrapping_add(1);
            }
            if signaled {
                self.sq_signaled += 1;
            }
        }
        // Not full (checked above).
        self.sq.push(q);
        self.flush(sk);
        Ok(())
    }

    /// Refreshes the listing's copy ([`Listed`]): the figures each time,
    /// the registrations when they changed.
    pub(crate) fn publish_listing(&mut self, l: &Listed, sq_depth: u32) {
        let depth = if self.live {
            self.sq.depth()
        } else {
            sq_depth as usize
        };
        let zctx = match &self.zctx {
            None => 0,
            Some(_) if self.zc_copied_run >= ZC_COPIED_STOP => 2,
            Some(_) => 1,
        };
        l.set(&Figures {
            error: self.error,
            sq: self.sq.len() as u32,
            sq_depth: depth as u32,
            rq: self.rq.len() as u32,
            cq: self.cq.len() as u32,
            irq: self.irq.len() as u32,
            irq_depth: self.irq.depth() as u32,
            zctx,
            cq_ring: self.ring.as_ref().map_or(0, |r| r.entries),
            rq_ring: self.rq_ring.as_ref().map_or(0, |r| r.entries),
        });
        if core::mem::take(&mut self.regions_changed) {
            l.set_mrs(self.regions.iter().filter(|r| r.valid).map(|r| MrRow {
                stag: r.stag,
                access: r.access,
                base: r.base,
                len: r.len,
                pages: r.mr.pages() as u64,
            }));
        }
    }

    /// Hands TCP what it takes now of the FPDU in the transmit buffer, the
    /// Terminate owed, and the FPDUs of the queued work, never waiting;
    /// stops when TCP takes no more (its `sk_write_space` then schedules
    /// the work item, which calls this again).
    fn flush(&mut self, sk: &Locked<'_>) {
        loop {
            if self.tx_off < self.tx_len || self.zc.is_some() {
                // The header part, the payload lent, the trailer: each
                // resumes where TCP stopped taking it.
                let lending = self.zc.is_some();
                let r = if lending && self.tx_off >= self.zc_at {
                    self.send_payload(sk)
                } else {
                    let end = if lending { self.zc_at } else { self.tx_len };
                    let piece = self.txbuf.get(self.tx_off..end).unwrap_or(&[]);
                    let want = piece.len();
                    sk.send_some(piece, self.tx.crc && !lending, lending)
                        .map(|n| {
                            self.tx_off += n;
                            (n, n == want)
                        })
                };
                match r {
                    Ok((n, whole)) if n > 0 => {
                        if !whole {
                            return;
                        }
                    }
                    Ok(_) => return,
                    Err(e) => {
                        if e != EAGAIN {
                            // The stream is gone: nothing more goes out.
                            self.tx_off = self.tx_len;
                            self.zc = None;
                            self.term = None;
                            self.fail(sk, e.to_errno());
                        }
                        return;
                    }
                }
                if self.tx_off >= self.tx_len && self.zc.is_none() {
                    self.fpdu_out();
                }
                continue;
            }
            if let Some((msg, n)) = self.term.take() {
                if self.frame(msg.get(..n).unwrap_or(&[])).is_ok() {
                    stat::add(sk.net(), s::TERMINATES_SENT, 1);
                }
                continue;
            }
            if self.error != 0 && self.live && !self.shut {
                // RFC 5040, 5.2 (and 7.2): the stream is closed after the
                // Terminate, the last FPDU sent; whatever ended the
                // connection, nothing more goes out.
                self.shut = true;
                sk.shutdown_send();
            }
            if self.error != 0 || !self.live || !self.next_fpdu(sk) {
                return;
            }
        }
    }

    /// Lends TCP what it takes of the payload of the FPDU on its way (by
    /// reference; copied when the kernel cannot take it so): the bytes
    /// taken and whether that was all of it.
    fn send_payload(&mut self, sk: &Locked<'_>) -> Result<(usize, bool)> {
        let Some(z) = self.zc.as_ref() else {
            return Ok((0, true));
        };
        let (mr, off, left) = (z.mr.clone(), z.off, z.left);
        let mut taken = None;
        // Lent only when it can be followed until TCP lets go ([`Lent`]).
        if self.zctx.as_ref().is_some_and(|i| i.room()) && self.lend_slot(&mr) {
            let mut r = sk.send_zc(&mr, off, left, true);
            if r.as_ref().is_err_and(|e| *e == errno::enobufs()) {
                // The notifications queued hold socket option memory
                // (optmem): taken off, the next call may get one.
                self.reap(sk);
                r = sk.send_zc(&mr, off, left, true);
            }
            match r {
                Ok((n, id)) => {
                    match (id, self.zctx.as_mut()) {
                        (Some(id), Some(ids)) => {
                            ids.sent(id, n as u32);
                            let mark = ids.mark();
                            if let Some(l) = self.lent.iter_mut().find(|l| Arc::ptr_eq(&l.mr, &mr))
                            {
                                l.mark = mark;
                            }
                            self.counts.add(s::TX_BYTES_BY_REF, n as i64);
                        }
                        // No id: SOCK_ZEROCOPY was cleared (SO_ZEROCOPY 0),
                        // TCP copied.
                        _ => self.counts.add(s::TX_BYTES_COPIED, n as i64),
                    }
                    taken = Some(n);
                }
                Err(e) if e == EAGAIN => return Err(e),
                // No notification (RLIMIT_MEMLOCK, optmem), or the stream
                // is gone: the copy below finds out which.
                Err(_) => stat::add(sk.net(), s::TX_ZC_FALLBACK, 1),
            }
        } else if self.zctx.is_some() {
            stat::add(sk.net(), s::TX_ZC_THROTTLED, 1);
        }
        let (n, offered) = match taken {
            Some(n) => (n, left),
            None => {
                // The ULPDU buffer is free while an FPDU lends its payload.
                let k = left.min(self.ulpdu.len());
                let buf = self.ulpdu.get_mut(..k).ok_or(EINVAL)?;
                mr.read(off, buf)?;
                let n = sk.send_some(buf, false, true)?;
                self.counts.add(s::TX_BYTES_COPIED, n as i64);
                (n, k)
            }
        };
        if let Some(z) = self.zc.as_mut() {
            z.off += n as u64;
            z.left -= n.min(z.left);
            if z.left == 0 {
                self.zc = None;
            }
        }
        Ok((n, n == offered))
    }

    /// Whether `mr` has its entry in [`Qp::lent`] (made now, as done so
    /// far, when it had none): false when there is no memory for one (the
    /// payload is then copied).
    fn lend_slot(&mut self, mr: &Arc<Mr>) -> bool {
        if self.lent.iter().any(|l| Arc::ptr_eq(&l.mr, mr)) {
            return true;
        }
        let mark = self.zctx.as_ref().map_or(0, |z| z.mark());
        self.lent
            .push(
                Lent {
                    mr: mr.clone(),
                    mark,
                },
                kernel::alloc::flags::GFP_ATOMIC | kernel::alloc::flags::__GFP_NOWARN,
            )
            .is_ok()
    }

    /// The FPDU in the transmit buffer is all TCP's: the completions it
    /// held back now wait for the notification ids consumed so far.
    fn fpdu_out(&mut self) {
        let mark = self.zctx.as_ref().map_or(0, |z| z.mark());
        self.held.for_each_mut(|h| {
            if h.mark.is_none() {
                h.mark = Some(mark);
            }
        });
        self.release_held();
    }

    /// Completions held back whose pages the kernel is done with go to the
    /// CQ, in order.
    fn release_held(&mut self) {
        while let Some(h) = self.held.front().copied() {
            let done = match (h.mark, self.zctx.as_ref()) {
                (None, _) => false,
                (Some(m), Some(z)) => z.done_before(m),
                (Some(_), None) => true,
            };
            if !done {
                return;
            }
            self.held.skip();
            self.complete(h.c);
        }
    }

    /// A send queue completion: after those held back, and itself held
    /// until the FPDU in the transmit buffer has gone out (`fpdu`) and the
    /// kernel is done with the pages lent so far.
    fn complete_sq(&mut self, c: Cqe, fpdu: bool) {
        let mark = (!fpdu).then(|| self.zctx.as_ref().map_or(0, |z| z.mark()));
        // Room was reserved at post time (outstanding() <= CQ_DEPTH).
        let _ = self.held.push(Held { c, mark });
        self.release_held();
    }

    /// Takes the kernel's `MSG_ZEROCOPY` notifications off the socket's
    /// error queue and delivers the completions they held back.
    fn reap(&mut self, sk: &RxLocked<'_>) {
        let Some(ids) = self.zctx.as_mut() else {
            return;
        };
        while let Some(n) = sk.zc_reap() {
            let bytes = ids.complete(n.lo, n.hi);
            stat::add(sk.net(), s::TX_ZC_NOTIFICATIONS, 1);
            if self.zc_always || self.zc_copied_run >= ZC_COPIED_STOP {
                // Lending regardless, or stopped (the notifications of
                // what was lent before).
            } else if n.copied {
                self.zc_copied_run += 1;
                if self.zc_copied_run == ZC_COPIED_STOP {
                    stat::add(sk.net(), s::TX_ZC_STOPPED, 1);
                }
            } else {
                self.zc_copied_run = 0;
            }
            if n.copied {
                stat::add(sk.net(), s::TX_ZC_COPIED_BY_KERNEL, bytes as i64);
            }
        }
        // Registrations TCP let go of: unpinned now if nothing else holds
        // them (their release is queued).
        self.lent.retain(|l| !ids.done_before(l.mark));
        self.release_held();
    }

    /// Frames `ulpdu` as the next FPDU into the transmit buffer (empty).
    fn frame(&mut self, ulpdu: &[u8]) -> Result {
        let w =
            mpa::encode_fpdu(&mut self.txbuf, self.tx_pos, ulpdu, self.tx).map_err(|_| EINVAL)?;
        self.tx_off = 0;
        self.tx_len = w;
        self.tx_pos = self.tx_pos.wrapping_add(w as u32);
        self.counts.add(s::FPDUS_SENT, 1);
        Ok(())
    }

    /// Frames the next FPDU of the queued work (a message partly sent
    /// first, then a Read Response owed, then the send queue): false when
    /// nothing is queued.
    fn next_fpdu(&mut self, sk: &Locked<'_>) -> bool {
        let irq = match self.mid {
            Mid::Sq => false,
            Mid::Irq => true,
            Mid::None => !self.irq.is_empty(),
        };
        let q = if irq { &mut self.irq } else { &mut self.sq };
        let Some(w) = q.front_mut().map(|w| *w) else {
            return false;
        };
        self.tx_payload = self.fpdu_payload(sk);
        let payload = (w.len - w.done).min(self.tx_payload as u32) as usize;
        // By reference: payload of a Send, Write or Read Response without
        // markers (an FPDU with markers interleaves them with the payload),
        // not too small, and not the last FPDU of its message: the
        // completion waits for the ACK of every byte lent, and a peer
        // delays the ACK of a last odd segment (40 ms and more: rping's
        // 65535 B ping-pong with siw took 55 s instead of 6 for 1000
        // rounds); copied, the last FPDU's segments make the peer ACK the
        // lent ones before them at once.
        let last = w.done + payload as u32 >= w.len;
        let lend = self.zctx.is_some()
            && self.zc_copied_run < ZC_COPIED_STOP
            && !self.tx.markers
            && w.op != uapi::WR_READ
            && payload >= ZC_MIN
            && !last;
        let r = if !self.tx.markers && w.op != uapi::WR_READ {
            self.frame_from_mr(&w, lend)
        } else {
            self.build(&w).and_then(|(n, last)| {
                let ulpdu = core::mem::take(&mut self.ulpdu);
                let r = self.frame(ulpdu.get(..n).unwrap_or(&[]));
                put_back(&mut self.ulpdu, ulpdu);
                if w.op != uapi::WR_READ {
                    self.counts.add(s::TX_BYTES_COPIED, payload as i64);
                }
                r.map(|()| last).map_err(|_| true)
            })
        };
        match r {
            Ok(last) => self.sent(irq, last),
            Err(true) => {
                self.terminate(sk, TermCode::LLP_LOCAL_CATASTROPHIC, None);
                return true;
            }
            Err(false) => {
                // The source registration went (deregistered or invalidated
                // after the post): the work request fails, and the
                // connection with it (a message may be cut short).
                if !irq && w.op != uapi::WR_READ && w.done == 0 {
                    self.sq.skip();
                    if w.signaled {
                        self.sq_signaled -= 1;
                    }
                    self.complete_sq(
                        Cqe {
                            wr_id: w.wr_id,
                            opcode: w.op,
                            status: uapi::WC_LOC_PROT_ERR,
                            byte_len: 0,
                            flags: 0,
                            inv_stag: 0,
                        },
                        false,
                    );
                }
                self.terminate(sk, TermCode::RDMAP_CATASTROPHIC, None);
            }
        }
        true
    }

    /// Payload bytes for the next FPDU: `TX_PAYLOAD`; with CRC, fewer when
    /// the FPDU would not fit one segment of the MSS (the largest header,
    /// pad, CRC and the markers it could hold on top).
    fn fpdu_payload(&self, sk: &Locked<'_>) -> usize {
        if !self.tx.crc {
            return TX_PAYLOAD;
        }
        let mss = sk.mss() as usize;
        let markers = if self.tx.markers {
            (mss / (mpa::MARKER_INTERVAL as usize - mpa::MARKER_LEN) + 2) * mpa::MARKER_LEN
        } else {
            0
        };
        let over = mpa::HDR_LEN + 28 + 3 + mpa::CRC_LEN + markers;
        (mss.saturating_sub(over) & !3).clamp(TX_PAYLOAD_MIN, TX_PAYLOAD)
    }

    /// Builds the next ULPDU of `w` in `self.ulpdu`: its length and whether
    /// it ends the message.
    fn build(&mut self, w: &Wqe) -> core::result::Result<(usize, bool), bool> {
        self.build_inner(w).map_err(|()| false)
    }

    fn build_inner(&mut self, w: &Wqe) -> core::result::Result<(usize, bool), ()> {
        if w.op == uapi::WR_READ {
            let rr = ReadRequest {
                sink_stag: w.lkey,
                sink_to: w.addr,
                size: w.len,
                src_stag: w.rkey,
                src_to: w.raddr,
            };
            let h = rdmap::untagged_header(Opcode::ReadRequest, true, w.msn, 0, 0).ok_or(())?;
            let hl = h.encode(&mut self.ulpdu).ok_or(())?;
            let b = rr.to_bytes();
            self.ulpdu
                .get_mut(hl..hl + b.len())
                .ok_or(())?
                .copy_from_slice(&b);
            return Ok((hl + b.len(), true));
        }
        let n = (w.len - w.done).min(self.tx_payload as u32);
        let last = w.done + n == w.len;
        let off = u64::from(w.done);
        let hl = Self::header(w, last, off)
            .and_then(|h| h.encode(&mut self.ulpdu))
            .ok_or(())?;
        if n > 0 {
            let (i, at) = self
                .bound(w.src, w.addr + off, n, Self::src_access(w))
                .ok_or(())?;
            let chunk = self.ulpdu.get_mut(hl..hl + n as usize).ok_or(())?;
            self.regions
                .get(i)
                .ok_or(())?
                .mr
                .read(at, chunk)
                .map_err(|_| ())?;
        }
        Ok((hl + n as usize, last))
    }

    /// The access the source of `w` needs as its bytes leave: a Read
    /// Response's remote read (the peer's right to them), nothing more for
    /// this side's own Sends and Writes.
    fn src_access(w: &Wqe) -> u32 {
        if w.op == OP_READ_RESP {
            uapi::ACCESS_REMOTE_READ
        } else {
            0
        }
    }

    /// The DDP/RDMAP header of the FPDU of `w` at message offset `off`.
    fn header(w: &Wqe, last: bool, off: u64) -> Option<Header> {
        match w.op {
            OP_READ_RESP => rdmap::tagged_header(
                Opcode::ReadResponse,
                last,
                w.rkey,
                w.raddr.wrapping_add(off),
            ),
            uapi::WR_WRITE => {
                rdmap::tagged_header(Opcode::Write, last, w.rkey, w.raddr.wrapping_add(off))
            }
            op => {
                let op = match op {
                    uapi::WR_SEND_SE => Opcode::SendSe,
                    uapi::WR_SEND_INV => Opcode::SendInvalidate,
                    _ => Opcode::Send,
                };
                rdmap::untagged_header(op, last, w.msn, off as u32, w.inv_stag)
            }
        }
    }

    /// Frames the next FPDU of `w` without markers, its payload taken from
    /// the registration where it is: the MPA header and the DDP/RDMAP
    /// header into the transmit buffer, then (`lend`) the pad and the CRC,
    /// the payload going to TCP by reference from `flush`; or (not
    /// `lend`) the payload copied in after the headers, then the pad and
    /// the CRC: one copy before TCP's, where building the ULPDU apart and
    /// framing it took two. The CRC is computed over the registered bytes
    /// where they are (the kernel's `crc32c`). Whether it ends the message;
    /// `Err(false)` when the registration went.
    fn frame_from_mr(&mut self, w: &Wqe, lend: bool) -> core::result::Result<bool, bool> {
        let n = (w.len - w.done).min(self.tx_payload as u32);
        let last = w.done + n == w.len;
        let off = u64::from(w.done);
        // The source, borrowed (a reference taken only to lend it): the
        // registration the work was checked against, checked again.
        let src = if n > 0 {
            let (i, at) = self
                .bound(w.src, w.addr + off, n, Self::src_access(w))
                .ok_or(false)?;
            Some((&self.regions.get(i).ok_or(false)?.mr, at))
        } else {
            None
        };
        let h = Self::header(w, last, off).ok_or(true)?;
        let hl = h
            .encode(self.txbuf.get_mut(mpa::HDR_LEN..).ok_or(true)?)
            .ok_or(true)?;
        let ulen = hl + n as usize;
        let at_payload = mpa::HDR_LEN + hl;
        self.txbuf
            .get_mut(..mpa::HDR_LEN)
            .ok_or(true)?
            .copy_from_slice(&(ulen as u16).to_be_bytes());
        let mut crc = self
            .tx
            .crc
            .then(|| Crc32c::new().update(self.txbuf.get(..at_payload).unwrap_or(&[])));
        if let (Some((mr, at)), Some(c)) = (src, crc.as_mut()) {
            let reg = mr.crc32c(at, n as usize, c.register()).map_err(|_| false)?;
            *c = Crc32c::from_register(reg);
        }
        let at_trailer = if lend {
            at_payload
        } else {
            if let Some((mr, at)) = src {
                let dst = self
                    .txbuf
                    .get_mut(at_payload..at_payload + n as usize)
                    .ok_or(true)?;
                mr.read(at, dst).map_err(|_| false)?;
            }
            at_payload + n as usize
        };
        let (t, tl) = mpa::trailer(ulen, crc);
        self.txbuf
            .get_mut(at_trailer..at_trailer + tl)
            .ok_or(true)?
            .copy_from_slice(t.get(..tl).ok_or(true)?);
        self.tx_off = 0;
        self.tx_len = at_trailer + tl;
        match (lend, src) {
            (true, Some((mr, at))) => {
                self.zc_at = at_payload;
                self.zc = Some(ZcPayload {
                    mr: mr.clone(),
                    off: at,
                    left: n as usize,
                });
            }
            _ => self.counts.add(s::TX_BYTES_COPIED, i64::from(n)),
        }
        self.tx_pos = self.tx_pos.wrapping_add((mpa::HDR_LEN + ulen + tl) as u32);
        self.counts.add(s::FPDUS_SENT, 1);
        Ok(last)
    }

    /// The FPDU framed from the head of the send queue (or of the inbound
    /// Read queue, `irq`) carried `last`, or not, of its message.
    fn sent(&mut self, irq: bool, last: bool) {
        let q = if irq { &mut self.irq } else { &mut self.sq };
        let Some(head) = q.front_mut() else { return };
        let n = (head.len - head.done).min(self.tx_payload as u32);
        if head.op != uapi::WR_READ {
            head.done += n;
        }
        if !last {
            self.mid = if irq { Mid::Irq } else { Mid::Sq };
            return;
        }
        self.mid = Mid::None;
        let Some(w) = q.pop() else { return };
        if !irq && w.signaled && w.op != uapi::WR_READ {
            self.sq_signaled -= 1;
            // Once the FPDU is TCP's and the kernel done with its pages.
            self.complete_sq(
                Cqe {
                    wr_id: w.wr_id,
                    opcode: w.op,
                    status: uapi::WC_SUCCESS,
                    byte_len: w.len,
                    flags: 0,
                    inv_stag: 0,
                },
                true,
            );
        }
    }

    fn complete(&mut self, mut c: Cqe) {
        if c.status == uapi::WC_FLUSH_ERR && core::mem::take(&mut self.rem_err) {
            c.status = uapi::WC_REM_ERR;
        }
        // Room was reserved at post time (outstanding() <= CQ_DEPTH).
        let _ = self.cq.push(c);
    }

    /// The connection failed with `err` (negative): everything posted is
    /// flushed.
    pub(crate) fn fail(&mut self, sk: &RxLocked<'_>, err: i32) {
        // Pages the kernel is done with (a reset purges TCP's queues and
        // frees their skbs): those completions succeed first.
        if self.error == 0 {
            self.reap(sk);
        }
        self.fail_now(err);
    }

    /// Everything posted completes in error; the Read Responses owed and
    /// the rest of a message partly sent are dropped.
    fn flush_err(&mut self) {
        // Completions held back for the kernel's notifications: those the
        // kernel is done with are delivered as they are, the others' Writes
        // and Sends flushed (the stream is gone), in order, before the work
        // still queued.
        self.release_held();
        while let Some(h) = self.held.pop() {
            let c = if h.c.status == uapi::WC_SUCCESS && h.c.opcode != uapi::WR_READ {
                Cqe {
                    status: uapi::WC_FLUSH_ERR,
                    byte_len: 0,
                    ..h.c
                }
            } else {
                h.c
            };
            self.complete(c);
        }
        while let Some(w) = self.sq.pop() {
            if w.signaled && w.op != uapi::WR_READ {
                self.complete(Cqe {
                    wr_id: w.wr_id,
                    opcode: w.op,
                    status: uapi::WC_FLUSH_ERR,
                    byte_len: 0,
                    flags: 0,
                    inv_stag: 0,
                });
            }
        }
        self.sq_signaled = 0;
        while self.irq.pop().is_some() {}
        self.mid = Mid::None;
        while let Some(r) = self.rq.pop() {
            self.complete(Cqe {
                wr_id: r.wr_id,
                opcode: uapi::WC_RECV,
                status: uapi::WC_FLUSH_ERR,
                byte_len: 0,
                flags: 0,
                inv_stag: 0,
            });
        }
        while let Some(r) = self.orq.pop() {
            self.complete(Cqe {
                wr_id: r.wr_id,
                opcode: uapi::WR_READ,
                status: uapi::WC_FLUSH_ERR,
                byte_len: 0,
                flags: 0,
                inv_stag: 0,
            });
        }
        // Then the receives still in the ring, as far as there is room
        // (the rest as the application takes completions).
        self.pull_rq();
    }

    /// Sends a Terminate for the faulting segment `ulpdu` and fails.
    fn terminate(&mut self, sk: &RxLocked<'_>, code: TermCode, ulpdu: Option<&[u8]>) {
        if self.error != 0 {
            return;
        }
        let hdr = ulpdu.and_then(|u| {
            let (h, _) = Header::parse(u).ok()?;
            u.get(..h.len())
        });
        let t = Terminate {
            code,
            seg_len_valid: false,
            seg_len: 0,
            ddp_hdr: hdr,
            rdma_hdr: None,
        };
        let pos = self.parser.as_ref().map_or(0, |p| p.position());
        sk.log_term(code.layer, code.etype, code.ecode, pos, hdr.unwrap_or(&[]));
        let mut msg = [0u8; 64];
        if let Ok(n) = t.encode_message(&mut msg, 1, Layout::Rfc) {
            // Sent after the FPDU on its way, by `flush`.
            self.term = Some((msg, n));
        }
        self.fail(sk, errno::eproto().to_errno());
    }

    // ---- receiving ----

    /// Takes and processes what the socket has queued (no waiting).
    pub(crate) fn pump(&mut self, sk: &Locked<'_>) {
        if !self.live {
            return;
        }
        self.reap(sk);
        self.pump_rx(sk);
        self.ooo_walk(sk);
        self.flush(sk);
        self.reap(sk);
        let _ = self.discard(sk);
    }

    /// A failed connection's receive side: `None` while the connection
    /// works; once its sending side is shut ([`Qp::flush`]), what TCP
    /// queued is read and dropped (`Some(true)`: TCP's window stays open
    /// and no arriving segment leaves work behind); `Some(false)` until
    /// then (the work item owes the Terminate and the FIN).
    pub(crate) fn discard(&mut self, sk: &RxLocked<'_>) -> Option<bool> {
        if self.error == 0 || !self.live {
            return None;
        }
        if !self.shut {
            return Some(false);
        }
        let n = sk.inq() as usize;
        if n > 0 {
            if let Ok(n) = sk.consume(n) {
                self.counts.add(s::RX_DISCARDED, n as i64);
            }
        }
        Some(true)
    }

    /// Data arrived, in softirq, or the out-of-order hook asked for a run
    /// under TCP's spinlock ([`RxLocked`]): the in-order receive path takes
    /// what TCP queued now, placing and completing as the work item would,
    /// without its wake-up, then the out-of-order walk places what TCP
    /// holds ahead of a hole. `Some` when nothing is left for the work item
    /// (no FPDU to send -- a Read Response owed, a Terminate, work posted
    /// and waiting for a Read's credit --, no error to report), saying
    /// whether completions came.
    pub(crate) fn pump_bh(&mut self, sk: &RxLocked<'_>) -> Option<bool> {
        if !self.live || self.error != 0 {
            return None;
        }
        let (n, c) = (self.rx_fpdus, self.cq.len());
        self.pump_rx(sk);
        self.counts.add(
            s::RX_FPDUS_SOFTIRQ,
            i64::from(self.rx_fpdus.wrapping_sub(n)),
        );
        let placed = self.ooo.as_ref().map_or(0, |o| o.bytes);
        self.ooo_walk(sk);
        if let Some(o) = self.ooo.as_ref() {
            self.counts
                .add(s::OOO_BYTES_SOFTIRQ, o.bytes.wrapping_sub(placed) as i64);
        }
        let idle = self.error == 0
            && self.term.is_none()
            && self.tx_off >= self.tx_len
            && self.sq.is_empty()
            && self.irq.is_empty();
        idle.then_some(self.cq.len() > c)
    }

    /// One more FPDU received in order (counted per namespace, and for
    /// [`Qp::pump_bh`]).
    fn fpdu_received(&mut self) {
        self.counts.add(s::FPDUS_RECEIVED, 1);
        self.rx_fpdus = self.rx_fpdus.wrapping_add(1);
    }

    /// The in-order receive path: FPDUs placed from TCP's queue where they
    /// can be ([`Qp::direct_step`]), the others staged and parsed, each
    /// acted on in order. Atomic context allowed: it neither sleeps nor
    /// sends (a Terminate or a Read Response waits for `flush`).
    fn pump_rx(&mut self, sk: &RxLocked<'_>) {
        if let (Some(o), Some(p)) = (self.ooo.as_mut(), self.parser.as_ref()) {
            o.sync(|| sk.rcv_seqs().0, p.position());
        }
        let mut stage = core::mem::take(&mut self.stage);
        let mut fbuf = core::mem::take(&mut self.fbuf);
        self.rx_need = 1;
        while self.error == 0 {
            let want = match self.direct_step(sk) {
                direct::Step::Placed => continue,
                direct::Step::Wait(need) => {
                    self.rx_need = need.max(1);
                    break;
                }
                direct::Step::Stage(n) => n.clamp(1, stage.len()),
            };
            let n = match sk.recv_avail(stage.get_mut(..want).unwrap_or(&mut [])) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    self.fail(sk, e.to_errno());
                    break;
                }
            };
            let mut data = stage.get(..n).unwrap_or(&[]);
            while !data.is_empty() && self.error == 0 {
                let Some(p) = self.parser.as_mut() else { break };
                // A whole FPDU at the head of the staged bytes (no markers)
                // is parsed where it lies, not copied into the FPDU buffer;
                // anything else (part of one, a bad CRC or length) goes
                // through the parser, which reports it.
                let whole = if p.at_boundary() && !self.rx.markers {
                    match mpa::parse_fpdu(data, self.rx.crc, p.max_ulpdu()) {
                        Ok(Some((u, len))) => Some((u.len(), len, p.position())),
                        _ => None,
                    }
                } else {
                    None
                };
                let pushed = match whole {
                    Some((ulpdu_len, len, start)) => p
                        .skip(len)
                        .map(|()| (len, Some(Fpdu { ulpdu_len, start }), true)),
                    None => p.push(&mut fbuf, data).map(|(used, f)| (used, f, false)),
                };
                match pushed {
                    Ok((used, f, in_place)) => {
                        let buf: &[u8] = if in_place { data } else { &fbuf };
                        if let Some(f) = f {
                            self.fpdu_received();
                            let rx = self.rx.markers;
                            let io = self.ooo.as_ref().and_then(|o| o.in_order(sk, buf, &f, rx));
                            self.skip_copy = io.as_ref().is_some_and(|i| i.skip);
                            self.reassembled = !in_place;
                            self.segment(sk, f.ulpdu(buf));
                            self.skip_copy = false;
                            self.reassembled = false;
                            if let (Some(o), Some(i)) = (self.ooo.as_mut(), io) {
                                o.consumed(&i);
                            }
                        }
                        data = data.get(used..).unwrap_or(&[]);
                    }
                    Err(e) => {
                        match e {
                            FpduError::Crc => {
                                stat::add(sk.net(), s::CRC_ERRORS, 1);
                                log_crc_error(sk, p.fpdu_start(), &fbuf);
                            }
                            FpduError::Marker => stat::add(sk.net(), s::MARKER_ERRORS, 1),
                            _ => {}
                        }
                        self.terminate(sk, e.term_code(), None);
                    }
                }
            }
        }
        put_back(&mut self.stage, stage);
        put_back(&mut self.fbuf, fbuf);
    }

    /// One inbound segment.
    fn segment(&mut self, sk: &RxLocked<'_>, ulpdu: &[u8]) {
        let seg = match Segment::parse(ulpdu) {
            Ok(s) => s,
            Err(e) => return self.terminate(sk, e.term_code(), Some(ulpdu)),
        };
        let r = match (seg.opcode, seg.ddp) {
            (Opcode::Terminate, _) => {
                stat::add(sk.net(), s::TERMINATES_RECEIVED, 1);
                self.rem_err = self.error == 0;
                self.fail(sk, -(kernel::bindings::ECONNRESET as i32));
                self.rem_err = false;
                return;
            }
            (Opcode::Write, Header::Tagged(t)) => {
                self.place_write(sk, t, Payload::Bytes(seg.payload))
            }
            (Opcode::ReadResponse, Header::Tagged(t)) => {
                self.place_read_resp(sk, t, Payload::Bytes(seg.payload))
            }
            (Opcode::ReadRequest, Header::Untagged(u)) => self.serve_read(sk, u, &seg),
            (op, Header::Untagged(u)) => {
                self.place_send(sk, op, u, &seg, Payload::Bytes(seg.payload))
            }
            _ => Err(Fault(TermCode::RDMAP_OPCODE)),
        };
        if let Err(Fault(code)) = r {
            self.terminate(sk, code, Some(ulpdu));
        }
    }

    /// Checks a tagged access to `stag` at `to` for `len` bytes with
    /// `need` access: the region's index and offset.
    fn tagged(
        &self,
        stag: u32,
        to: u64,
        len: usize,
        need: u32,
        rdmap_layer: bool,
    ) -> Result<(usize, u64), Fault> {
        let (bad_stag, bad_bounds) = if rdmap_layer {
            (TermCode::RDMAP_INVALID_STAG, TermCode::RDMAP_BASE_BOUNDS)
        } else {
            (TermCode::DDP_T_INVALID_STAG, TermCode::DDP_T_BASE_BOUNDS)
        };
        let i = self
            .regions
            .iter()
            .position(|r| r.stag == stag && r.valid)
            .ok_or(Fault(bad_stag))?;
        let r = self.regions.get(i).ok_or(Fault(bad_stag))?;
        if r.access & need != need {
            return Err(Fault(TermCode::RDMAP_ACCESS_RIGHTS));
        }
        ddp::check_to(to, len)?;
        ddp::check_bounds(to, len, r.base, r.len).map_err(|_| Fault(bad_bounds))?;
        Ok((i, to - r.base))
    }

    /// Places `data` at `off` of registration `i`, in order; a tagged
    /// payload (`tagged`) placed out of order already is not copied again.
    fn place(
        &mut self,
        sk: &RxLocked<'_>,
        i: usize,
        off: u64,
        data: Payload<'_>,
        tagged: bool,
    ) -> Result<(), Fault> {
        let r = self
            .regions
            .get_mut(i)
            .ok_or(Fault(TermCode::DDP_CATASTROPHIC))?;
        let n = data.len() as i64;
        if tagged && self.skip_copy {
            self.counts.add(s::OOO_SKIPPED_COPY, n);
        } else {
            if self.reassembled && matches!(data, Payload::Bytes(_)) {
                self.counts.add(s::RX_REASSEMBLED, n);
            }
            let (done, why) = match data {
                Payload::Bytes(b) => (r.mr.write(off, b), self.staged_why),
                Payload::Queued { at, len } => {
                    (r.mr.fill_from_queue(off, sk, at, len), s::RX_DIRECT_BYTES)
                }
            };
            done.map_err(|_| Fault(TermCode::DDP_CATASTROPHIC))?;
            self.counts.add(s::BYTES_PLACED_IN_ORDER, n);
            self.counts.add(why, n);
        }
        self.counts.add(s::BYTES_PLACED, n);
        Ok(())
    }

    fn place_write(
        &mut self,
        sk: &RxLocked<'_>,
        t: ddp::Tagged,
        data: Payload<'_>,
    ) -> Result<(), Fault> {
        // A zero-length Write places nothing (the RTR's names STag 1).
        if data.is_empty() {
            return Ok(());
        }
        let (i, off) = self.tagged(t.stag, t.to, data.len(), uapi::ACCESS_REMOTE_WRITE, false)?;
        self.place(sk, i, off, data, true)
    }

    fn place_read_resp(
        &mut self,
        sk: &RxLocked<'_>,
        t: ddp::Tagged,
        data: Payload<'_>,
    ) -> Result<(), Fault> {
        let Some(head) = self.orq.front() else {
            return Err(Fault(TermCode::RDMAP_OPCODE));
        };
        let (lkey, sink, at, end) = (
            head.lkey,
            head.sink,
            head.addr + u64::from(head.got),
            head.addr + u64::from(head.len),
        );
        // It answers our oldest Read: our sink STag, the next bytes of it.
        if t.stag != lkey {
            return Err(Fault(TermCode::DDP_T_INVALID_STAG));
        }
        if t.to != at || t.to.saturating_add(data.len() as u64) > end {
            return Err(Fault(TermCode::DDP_T_BASE_BOUNDS));
        }
        if !data.is_empty() {
            // Into the registration the Read was posted with, still valid.
            let n = u32::try_from(data.len()).map_err(|_| Fault(TermCode::DDP_T_BASE_BOUNDS))?;
            let (i, off) = self
                .bound(sink, t.to, n, uapi::ACCESS_LOCAL_WRITE)
                .ok_or(Fault(TermCode::DDP_T_INVALID_STAG))?;
            self.place(sk, i, off, data, true)?;
        }
        let got = if let Some(h) = self.orq.front_mut() {
            h.got += data.len() as u32;
            h.got
        } else {
            0
        };
        if t.last {
            if let Some(h) = self.orq.pop() {
                // Not ahead of a Send or Write completion held back.
                self.complete_sq(
                    Cqe {
                        wr_id: h.wr_id,
                        opcode: uapi::WR_READ,
                        status: uapi::WC_SUCCESS,
                        byte_len: got,
                        flags: 0,
                        inv_stag: 0,
                    },
                    false,
                );
            }
        }
        Ok(())
    }

    fn serve_read(
        &mut self,
        _sk: &RxLocked<'_>,
        u: ddp::Untagged,
        seg: &Segment<'_>,
    ) -> Result<(), Fault> {
        if u.msn != self.read_msn_in {
            return Err(Fault(TermCode::DDP_UT_MSN_RANGE));
        }
        if self.ird == 0 {
            return Err(Fault(TermCode::DDP_UT_MSN_NOBUF));
        }
        let rr = seg
            .read_request()
            .ok_or(Fault(TermCode::RDMAP_OP_UNSPECIFIED))?;
        // Bound to the registration checked here: its bytes, or none.
        let src = if rr.size > 0 {
            let (i, _) = self.tagged(
                rr.src_stag,
                rr.src_to,
                rr.size as usize,
                uapi::ACCESS_REMOTE_READ,
                true,
            )?;
            self.serial(i)
        } else {
            0
        };
        // More Reads outstanding than IRD: siw's code for it.
        let resp = Wqe {
            op: OP_READ_RESP,
            lkey: rr.src_stag,
            src,
            addr: rr.src_to,
            len: rr.size,
            rkey: rr.sink_stag,
            raddr: rr.sink_to,
            ..Wqe::default()
        };
        if !self.irq.push(resp) {
            return Err(Fault(TermCode::RDMAP_CATASTROPHIC_STREAM));
        }
        self.read_msn_in = self.read_msn_in.wrapping_add(1);
        Ok(())
    }

    fn place_send(
        &mut self,
        sk: &RxLocked<'_>,
        op: Opcode,
        u: ddp::Untagged,
        seg: &Segment<'_>,
        data: Payload<'_>,
    ) -> Result<(), Fault> {
        if !op.is_send() {
            return Err(Fault(TermCode::RDMAP_OPCODE));
        }
        if self.rq.is_empty() {
            self.pull_rq();
        }
        let idx = ddp::check_msn(u.msn, self.recv_msn, self.rq.len() as u32)?;
        // TCP delivers in order: a message completes before the next begins.
        if idx != 0 {
            return Err(Fault(TermCode::DDP_UT_MSN_RANGE));
        }
        // The receive is read where it is queued, not copied out (its
        // scatter list is 96 bytes).
        let Some(r) = self.rq.front() else {
            return Err(Fault(TermCode::DDP_UT_MSN_NOBUF));
        };
        let sge = r.sge.get(..r.nsge).unwrap_or(&[]);
        if let [e] = *sge {
            // One element, as most receives have: the payload goes to
            // `mo` in it, checked as `ddp::scatter` checks it, without
            // its piece tables.
            ddp::check_mo(u.mo, data.len(), e.len as usize)?;
            if !data.is_empty() {
                let (i, off) = self
                    .local(
                        e.lkey,
                        e.addr + u64::from(u.mo),
                        data.len() as u32,
                        uapi::ACCESS_LOCAL_WRITE,
                    )
                    .ok_or(Fault(TermCode::DDP_CATASTROPHIC))?;
                self.place(sk, i, off, data, false)?;
            }
            return self.send_placed(op, u, seg, data.len());
        }
        // The elements this segment's payload spans, each checked before
        // a byte is placed (a registration may have gone since the post).
        let mut lens = [0u32; uapi::RECV_SGE_MAX];
        for (l, e) in lens.iter_mut().zip(sge) {
            *l = e.len;
        }
        let mut pieces = [ddp::Piece::default(); uapi::RECV_SGE_MAX];
        let n = ddp::scatter(
            lens.get(..sge.len()).unwrap_or(&[]),
            u.mo,
            data.len(),
            &mut pieces,
        )?;
        let mut at = [(0usize, 0u64); uapi::RECV_SGE_MAX];
        for (a, p) in at.iter_mut().zip(pieces.iter().take(n)) {
            let e = sge.get(p.index).ok_or(Fault(TermCode::DDP_CATASTROPHIC))?;
            *a = self
                .local(
                    e.lkey,
                    e.addr + p.offset,
                    p.len as u32,
                    uapi::ACCESS_LOCAL_WRITE,
                )
                .ok_or(Fault(TermCode::DDP_CATASTROPHIC))?;
        }
        for (&(i, off), p) in at.iter().zip(pieces.iter().take(n)) {
            self.place(sk, i, off, data.sub(p.at, p.len), false)?;
        }
        self.send_placed(op, u, seg, data.len())
    }

    /// The payload (`len` bytes) of a Send segment is placed: the last
    /// one of its message completes the receive at the front.
    fn send_placed(
        &mut self,
        op: Opcode,
        u: ddp::Untagged,
        seg: &Segment<'_>,
        len: usize,
    ) -> Result<(), Fault> {
        if !u.last {
            return Ok(());
        }
        let mut flags = 0;
        let mut inv = 0;
        if let Some(stag) = seg.invalidate_stag() {
            // Nor a ring's (it stays valid while set).
            let ring = self.holds_ring(stag);
            let r = self
                .region(stag)
                .filter(|r| r.access & uapi::ACCESS_NO_REMOTE_INV == 0 && !ring)
                .ok_or(Fault(TermCode::RDMAP_CANNOT_INVALIDATE))?;
            r.valid = false;
            self.regions_changed = true;
            flags |= uapi::WC_INVALIDATED;
            inv = stag;
        }
        if op.solicited() {
            flags |= uapi::WC_SOLICITED;
        }
        if let Some(wr_id) = self.rq.front().map(|r| r.wr_id) {
            self.rq.skip();
            self.recv_msn = self.recv_msn.wrapping_add(1);
            self.complete(Cqe {
                wr_id,
                opcode: uapi::WC_RECV,
                status: uapi::WC_SUCCESS,
                byte_len: u.mo + len as u32,
                flags,
                inv_stag: inv,
            });
            self.settle_rq();
        }
        Ok(())
    }

    /// Hands up to `max` completions, oldest first, to `put` (a copy to
    /// user space); each leaves the queue only once `put` took it, so a
    /// failed copy loses none, and nothing is allocated. How many were
    /// taken; `put`'s error when it failed on the first.
    pub(crate) fn take_cqes(
        &mut self,
        max: usize,
        mut put: impl FnMut(&Cqe) -> Result,
    ) -> Result<usize> {
        let mut n = 0;
        while n < max {
            let Some(c) = self.cq.front() else { break };
            if let Err(e) = put(c) {
                return if n == 0 { Err(e) } else { Ok(n) };
            }
            self.cq.skip();
            n += 1;
        }
        Ok(n)
    }

    /// The connection ended under us (`err` negative): flush.
    pub(crate) fn fail_now(&mut self, err: i32) {
        if self.error == 0 {
            self.error = err;
            self.flush_err();
        }
    }

    /// Whether TCP may still hold pages lent from any registration (the
    /// notifications that came meanwhile taken first).
    pub(crate) fn tcp_holds_any(&mut self, sk: &RxLocked<'_>) -> TcpHolds {
        self.reap(sk);
        if self.zc.is_some() {
            TcpHolds::CutFpdu
        } else if self.lent.is_empty() {
            TcpHolds::None
        } else {
            TcpHolds::Some
        }
    }

    /// The socket is closing: everything queued is dropped and every
    /// registration released now (nobody polls the completions any more;
    /// the close has waited for TCP to give back the pages lent from them,
    /// or made TCP drop them: `conn.rs`).
    pub(crate) fn close(&mut self) {
        self.fail_now(-(kernel::bindings::ECONNABORTED as i32));
        self.term = None;
        self.tx_off = self.tx_len;
        // Pages lent to TCP stay referenced by its skbs; their
        // notifications, if any still come, stay on the socket's error
        // queue (the kernel queues none once the socket is dead).
        self.zc = None;
        self.zctx = None;
        self.held = Fifo::new();
        self.cq.clear();
        self.ring = None;
        self.rq_ring = None;
        // TCP gave back every lent page, or its close drops them (the
        // connection reset): the pins go now (zcddp.rst, "Threat model").
        self.lent = KVec::new();
        self.regions.clear();
        self.regions_changed = true;
        self.live = false;
        self.fbuf = KVVec::new();
        self.stage = KVVec::new();
        self.ulpdu = KVVec::new();
        self.txbuf = KVVec::new();
        self.ooo = None;
        self.sq = Fifo::new();
        self.irq = Fifo::new();
    }

    /// The bytes TCP must hold before [`Qp::pump`] can take more: a
    /// completion wait sleeps until then.
    pub(crate) fn rx_need(&self) -> u32 {
        self.rx_need
    }

    /// What poll/epoll report as readable: completions to poll, or (in
    /// RDMA mode) the connection failed.
    pub(crate) fn readable(&self) -> bool {
        self.completions_waiting() || (self.live && self.error != 0)
    }

    /// What poll/epoll report as writable (with TCP's stream writeable):
    /// a post would not fail with `ENOMEM`, the send queue having room;
    /// also when it would fail at once for another reason (not started,
    /// the connection failed), so that nobody waits for room in vain.
    pub(crate) fn writable(&self) -> bool {
        !self.live || self.error != 0 || !self.sq.is_full()
    }

    /// What the socket is to be told it is (readable, writable), when that
    /// differs from what it was told last (the socket's own record changes
    /// only when told).
    pub(crate) fn readiness_changed(&self) -> Option<(bool, bool)> {
        let now = (self.readable(), self.writable());
        (self.said != Some(now)).then_some(now)
    }

    /// The socket was told `now` ([`Qp::readiness_changed`]).
    pub(crate) fn readiness_said(&mut self, now: (bool, bool)) {
        self.said = Some(now);
    }

    /// Completions are waiting, or the connection failed.
    pub(crate) fn done_waiting(&self) -> bool {
        self.completions_waiting() || self.error != 0 || !self.live
    }

    /// The error to report once no completion is left.
    pub(crate) fn error(&self) -> Result {
        self.ready()
    }
}

/// Logs an FPDU the parser refused for its CRC, as assembled in `fbuf`
/// (markers removed): where it began, both CRCs, its first bytes, and
/// whether its first 16 bytes (MPA length, DDP and RDMAP control, the
/// queue, MSN and MO or the STag and TO) occur again inside it, as they do
/// when its sender sent part of it and then all of it again.
fn log_crc_error(sk: &RxLocked<'_>, start: u32, fbuf: &[u8]) {
    let Some(&[a, b]) = fbuf.get(..mpa::HDR_LEN) else {
        return;
    };
    let total = mpa::fpdu_len(usize::from(u16::from_be_bytes([a, b])));
    let Some(f) = fbuf.get(..total) else {
        return;
    };
    let (body, field) = f.split_at(total - mpa::CRC_LEN);
    let Ok(field) = <[u8; 4]>::try_from(field) else {
        return;
    };
    sk.log_crc(
        start,
        total as u32,
        crc32c::checksum(body),
        crc32c::from_wire(field),
        f,
        mpa::header_recurs(f, 16),
    );
}
