// SPDX-License-Identifier: GPL-2.0

//! MPA start-up on the socket (RFC 5044 §7.1, RFC 6581), run by
//! `setsockopt(SOL_ZCDDP, ZCDDP_STARTUP)` in the caller's context with the
//! socket locked (released while waiting for the peer), bounded by the
//! caller's timeout. The decisions are `wire::startup`'s; this file moves
//! the frames: exactly a frame's bytes are read, never what follows it.
//!
//! - Initiator: sends the Request, reads the Reply, accepts or refuses it;
//!   in the peer-to-peer model sends the RTR message (a zero-length RDMA
//!   Write or Send; a zero-length Read is not offered).
//! - Responder: reads the Request (data after it, before our Reply, is a
//!   protocol error, as siw has it), answers it (a Reject reply when
//!   refusing); in the peer-to-peer model waits for the RTR message (and
//!   answers a zero-length Read Request with its zero-length Read
//!   Response).
//!
//! Memory: two buffers of one frame at most (532 bytes) for the call.

use crate::conn::{Ctx, Info};
use crate::qp::Setup;
use crate::stat::{self, s};
use crate::uapi;
use crate::wire::{
    ddp::Header,
    mpa::{self, FpduParser, Framing, RtrTypes, Startup, StartupError},
    rdmap::{self, Opcode, Segment},
    startup::{Negotiated, Policy, Refusal},
};
use crate::zcnet::ddp_sock::Deadline;
use crate::zcnet::ulp::Locked;
use crate::{errno, TX_ULPDU_MAX};
use kernel::{
    prelude::*,
    uaccess::{UserPtr, UserSlice},
};

/// The longest start-up frame.
const FRAME_MAX: usize = mpa::STARTUP_HDR_LEN + mpa::MAX_PRIVATE_DATA;
/// The most bytes an RTR FPDU may take on the wire (a Read Request with
/// markers and CRC is 54).
const RTR_WIRE_MAX: usize = 96;

/// What the stream positions are once start-up is done: the bytes each
/// side sent after its start-up frame (the RTR FPDU), and the next MSN of
/// our Sends (a Send RTR uses MSN 1).
pub(crate) struct After {
    pub(crate) tx_pos: u32,
    pub(crate) rx_pos: u32,
    pub(crate) send_msn: u32,
    /// The MSNs the peer's next Send and Read Request carry (a Send or
    /// Read RTR took MSN 1 of its queue).
    pub(crate) recv_msn: u32,
    pub(crate) read_msn_in: u32,
}

impl After {
    fn new() -> Self {
        Self {
            tx_pos: 0,
            rx_pos: 0,
            send_msn: 1,
            recv_msn: 1,
            read_msn_in: 1,
        }
    }
}

/// `setsockopt(ZCDDP_STARTUP)`.
pub(crate) fn run(sk: &Locked<'_>, ctx: &Ctx, val: &[u8]) -> Result {
    let p = uapi::Startup::parse(val).ok_or(EINVAL)?;
    let policy = policy(&p)?;
    ctx.begin()?;
    if !sk.established() {
        ctx.abandon();
        return Err(errno::enotconn());
    }
    // Our private data, before anything goes on the wire.
    let mut pd = KVec::new();
    if p.pd_len > 0 {
        if let Err(e) = UserSlice::new(UserPtr::from_addr(p.pd as usize), p.pd_len.into())
            .read_all(&mut pd, GFP_KERNEL)
        {
            ctx.abandon();
            return Err(e);
        }
    }
    let timeout = if p.timeout_ms == 0 {
        uapi::TIMEOUT_DEFAULT_MS
    } else {
        p.timeout_ms
    };
    let mut d = Deadline::after_ms(timeout);
    let r = match p.role {
        uapi::INITIATOR => initiate(sk, &policy, &pd, &p, &mut d),
        _ => respond(sk, &policy, &pd, &p, &mut d),
    };
    let net = sk.net();
    match r {
        Ok((n, peer_pd_len, after)) => {
            let info = Info {
                role: p.role,
                revision: n.revision,
                crc: n.crc,
                markers_tx: n.markers_tx,
                markers_rx: n.markers_rx,
                p2p: n.rtr.is_some(),
                rtr: n.rtr.map_or(0, rtr_bits),
                peer_pd_len,
                ird: n.ird,
                ord: n.ord,
            };
            let setup = Setup {
                tx: Framing {
                    crc: n.crc,
                    markers: n.markers_tx,
                },
                rx: Framing {
                    crc: n.crc,
                    markers: n.markers_rx,
                },
                tx_pos: after.tx_pos,
                rx_pos: after.rx_pos,
                send_msn: after.send_msn,
                recv_msn: after.recv_msn,
                read_msn_in: after.read_msn_in,
                ird: n.ird,
                ord: n.ord,
            };
            match ctx.ready(sk, &info, &setup) {
                Ok(()) => {
                    sk.nodelay();
                    stat::add(net, s::STARTUP_OK, 1);
                    Ok(())
                }
                Err(e) => {
                    stat::add(net, s::STARTUP_FAILED, 1);
                    ctx.failed(p.role, e);
                    Err(e)
                }
            }
        }
        Err(e) => {
            let which = match e {
                e if e == ETIMEDOUT => s::STARTUP_TIMEOUT,
                e if e == errno::eproto() => s::STARTUP_BAD_FRAME,
                _ => s::STARTUP_FAILED,
            };
            stat::add(net, which, 1);
            ctx.failed(p.role, e);
            Err(e)
        }
    }
}

/// The policy the parameters ask for: `EINVAL` when they are out of range.
fn policy(p: &uapi::Startup) -> Result<Policy> {
    let f = p.flags;
    if (p.role != uapi::INITIATOR && p.role != uapi::RESPONDER)
        || f & !uapi::F_ALL != 0
        || p.rtr & !(uapi::RTR_SEND | uapi::RTR_WRITE | uapi::RTR_READ) != 0
        || usize::from(p.pd_len) > uapi::PRIVATE_DATA_MAX
        || p.timeout_ms > uapi::TIMEOUT_MAX_MS
        || (f & uapi::F_MARKERS != 0 && f & uapi::F_NO_MARKERS != 0)
    {
        return Err(EINVAL);
    }
    let mut rtr = RtrTypes {
        send: p.rtr & uapi::RTR_SEND != 0,
        write: p.rtr & uapi::RTR_WRITE != 0,
        read: p.rtr & uapi::RTR_READ != 0,
    };
    if p.role == uapi::INITIATOR {
        // An initiator's zero-length Read would need its Read Response
        // consumed by the data path: not offered.
        if rtr.read && !rtr.send && !rtr.write && f & uapi::F_P2P != 0 {
            return Err(EINVAL);
        }
        rtr.read = false;
    }
    let pol = Policy {
        revision: p.revision,
        crc: f & uapi::F_CRC != 0,
        crc_strict: f & uapi::F_CRC_STRICT != 0,
        markers: f & uapi::F_MARKERS != 0,
        no_markers: f & uapi::F_NO_MARKERS != 0,
        p2p: f & uapi::F_P2P != 0,
        rtr,
        ird: p.ird,
        ord: p.ord,
        ird_ord_max: uapi::IRD_ORD_MAX,
    };
    if !pol.valid() {
        return Err(EINVAL);
    }
    Ok(pol)
}

fn rtr_bits(r: RtrTypes) -> u8 {
    (if r.send { uapi::RTR_SEND } else { 0 })
        | (if r.write { uapi::RTR_WRITE } else { 0 })
        | (if r.read { uapi::RTR_READ } else { 0 })
}

/// Reads one start-up frame into `buf` (`FRAME_MAX` long) and parses it.
fn read_frame<'b>(sk: &Locked<'_>, buf: &'b mut [u8], d: &mut Deadline) -> Result<Startup<'b>> {
    let hdr = buf.get_mut(..mpa::STARTUP_HDR_LEN).ok_or(EINVAL)?;
    sk.recv_exact(hdr, d)?;
    let total = match Startup::parse(hdr) {
        Ok((_, n)) => n,
        Err(StartupError::Incomplete(n)) => n,
        Err(_) => return Err(errno::eproto()),
    };
    if total > mpa::STARTUP_HDR_LEN {
        let rest = buf
            .get_mut(mpa::STARTUP_HDR_LEN..total)
            .ok_or(errno::eproto())?;
        sk.recv_exact(rest, d)?;
    }
    let frame = buf.get(..total).ok_or(errno::eproto())?;
    match Startup::parse(frame) {
        Ok((f, _)) => Ok(f),
        Err(_) => Err(errno::eproto()),
    }
}

/// Copies the peer's private data to the caller (as much as fits): its
/// full length.
fn give_peer_pd(p: &uapi::Startup, pd: &[u8]) -> Result<u16> {
    let n = pd.len().min(p.peer_pd_cap as usize);
    if n > 0 {
        UserSlice::new(UserPtr::from_addr(p.peer_pd as usize), n)
            .writer()
            .write_slice(pd.get(..n).unwrap_or(&[]))?;
    }
    Ok(pd.len() as u16)
}

fn encode_send(sk: &Locked<'_>, f: &Startup<'_>, d: &mut Deadline) -> Result {
    let mut out = KVec::from_elem(0u8, FRAME_MAX, GFP_KERNEL)?;
    let n = f.encode(&mut out).map_err(|_| EINVAL)?;
    sk.send_exact(out.get(..n).unwrap_or(&[]), d)
}

fn refusal(r: Refusal) -> Error {
    match r {
        Refusal::Protocol => errno::eproto(),
        Refusal::Rejected | Refusal::Refuse(_) => errno::econnrefused(),
    }
}

type Outcome = (Negotiated, u16, After);

fn initiate(
    sk: &Locked<'_>,
    policy: &Policy,
    pd: &[u8],
    p: &uapi::Startup,
    d: &mut Deadline,
) -> Result<Outcome> {
    let req = policy.request(pd);
    encode_send(sk, &req, d)?;
    let mut buf = KVec::from_elem(0u8, FRAME_MAX, GFP_KERNEL)?;
    let rep = read_frame(sk, &mut buf, d)?;
    let n = policy.accept(&req, &rep).map_err(|r| {
        if matches!(r, Refusal::Rejected) {
            stat::add(sk.net(), s::STARTUP_REJECTED, 1);
        } else if matches!(r, Refusal::Refuse(_)) {
            stat::add(sk.net(), s::STARTUP_REFUSED, 1);
        }
        refusal(r)
    })?;
    let peer_pd_len = give_peer_pd(p, rep.private_data)?;
    let mut after = After::new();
    if let Some(rtr) = n.rtr {
        let hdr = if rtr.send {
            after.send_msn = 2;
            rdmap::untagged_header(Opcode::Send, true, 1, 0, 0)
        } else {
            // siw's RTR Write: STag 1 (some hardware treats STag 0 apart).
            rdmap::tagged_header(Opcode::Write, true, 1, 0)
        };
        after.tx_pos = send_fpdu(sk, hdr.ok_or(EINVAL)?, &n, 0, d)?;
        stat::add(sk.net(), s::RTR_SENT, 1);
    }
    Ok((n, peer_pd_len, after))
}

/// Sends one FPDU of a DDP header and no payload at stream position `pos`:
/// the position after it.
fn send_fpdu(
    sk: &Locked<'_>,
    h: Header,
    n: &Negotiated,
    pos: u32,
    d: &mut Deadline,
) -> Result<u32> {
    let mut ulpdu = [0u8; 20];
    let len = h.encode(&mut ulpdu).ok_or(EINVAL)?;
    let mut out = [0u8; RTR_WIRE_MAX];
    let framing = Framing {
        crc: n.crc,
        markers: n.markers_tx,
    };
    let w = mpa::encode_fpdu(&mut out, pos, ulpdu.get(..len).unwrap_or(&[]), framing)
        .map_err(|_| EINVAL)?;
    sk.send_exact(out.get(..w).unwrap_or(&[]), d)?;
    stat::add(sk.net(), s::FPDUS_SENT, 1);
    Ok(pos.wrapping_add(w as u32))
}

fn respond(
    sk: &Locked<'_>,
    policy: &Policy,
    pd: &[u8],
    p: &uapi::Startup,
    d: &mut Deadline,
) -> Result<Outcome> {
    let mut buf = KVec::from_elem(0u8, FRAME_MAX, GFP_KERNEL)?;
    let req = read_frame(sk, &mut buf, d)?;
    // The initiator sends nothing more before our reply.
    if sk.inq() > 0 {
        return Err(errno::eproto());
    }
    let n = match policy.respond(&req, pd) {
        Ok((rep, n)) => {
            encode_send(sk, &rep, d)?;
            n
        }
        Err((rep, why)) => {
            if let Some(rep) = rep {
                stat::add(sk.net(), s::STARTUP_REFUSED, 1);
                // Best effort: the refusal stands whether or not it goes out.
                let _ = encode_send(sk, &rep, d);
            }
            return Err(refusal(why));
        }
    };
    let peer_pd_len = give_peer_pd(p, req.private_data)?;
    let mut after = After::new();
    if let Some(rtr) = n.rtr {
        after = wait_rtr(sk, &n, rtr, d)?;
        stat::add(sk.net(), s::RTR_RECEIVED, 1);
    }
    Ok((n, peer_pd_len, after))
}

/// Reads the initiator's RTR FPDU, byte by byte (it is a few dozen bytes;
/// nothing after it may be consumed), and checks it is the chosen type with
/// no payload; answers a zero-length Read Request.
fn wait_rtr(sk: &Locked<'_>, n: &Negotiated, rtr: RtrTypes, d: &mut Deadline) -> Result<After> {
    let framing = Framing {
        crc: n.crc,
        markers: n.markers_rx,
    };
    let mut parser = FpduParser::new(framing, 0)
        .map_err(|_| EINVAL)?
        .with_max_ulpdu(TX_ULPDU_MAX.min(64));
    let mut fbuf = [0u8; 72];
    let mut rx_pos = 0u32;
    let fpdu = loop {
        if rx_pos as usize >= RTR_WIRE_MAX {
            return Err(errno::eproto());
        }
        let mut b = [0u8; 1];
        sk.recv_exact(&mut b, d)?;
        rx_pos += 1;
        match parser.push(&mut fbuf, &b) {
            Ok((_, Some(f))) => break f,
            Ok((_, None)) => {}
            Err(mpa::FpduError::Crc) => {
                stat::add(sk.net(), s::CRC_ERRORS, 1);
                return Err(errno::eproto());
            }
            Err(mpa::FpduError::Marker) => {
                stat::add(sk.net(), s::MARKER_ERRORS, 1);
                return Err(errno::eproto());
            }
            Err(_) => return Err(errno::eproto()),
        }
    };
    stat::add(sk.net(), s::FPDUS_RECEIVED, 1);
    let seg = Segment::parse(fpdu.ulpdu(&fbuf)).map_err(|_| errno::eproto())?;
    let mut after = After {
        rx_pos,
        ..After::new()
    };
    let ok = seg.ddp.last()
        && match seg.opcode {
            Opcode::Write => rtr.write && seg.payload.is_empty(),
            Opcode::Send => {
                after.recv_msn = 2;
                rtr.send
                    && seg.payload.is_empty()
                    && matches!(seg.ddp, Header::Untagged(u) if u.msn == 1 && u.mo == 0)
            }
            Opcode::ReadRequest => {
                let rr = seg.read_request().ok_or(errno::eproto())?;
                if !rtr.read || rr.size != 0 {
                    return Err(errno::eproto());
                }
                after.read_msn_in = 2;
                let h = rdmap::tagged_header(Opcode::ReadResponse, true, rr.sink_stag, rr.sink_to)
                    .ok_or(EINVAL)?;
                after.tx_pos = send_fpdu(sk, h, n, 0, d)?;
                true
            }
            _ => false,
        };
    if !ok {
        return Err(errno::eproto());
    }
    Ok(after)
}
