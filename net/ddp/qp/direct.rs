// SPDX-License-Identifier: GPL-2.0

//! In-order direct placement: one copy, from TCP's skbs into the
//! registered memory (Documentation/networking/zcddp.rst, "How received
//! bytes flow").
//!
//! The staging path copies every byte twice or three times: out of TCP
//! into the staging buffer, through the FPDU parser into the FPDU buffer
//! (unless the staging buffer holds the whole FPDU and no markers: then it
//! is parsed where it lies), and from there into the registration. Before
//! it takes bytes, [`Qp::direct_step`] looks at the next FPDU where TCP
//! holds it: it peeks the MPA length and the DDP/RDMAP header out of the
//! receive queue, and when the FPDU is an RDMA Write, a Read Response or a Send with enough payload and TCP holds
//! all of it, it checks the CRC over the queued bytes in place (a read,
//! not a copy), runs the same checks and completions as the staging path
//! ([`Qp::place_write`] and the others, which take the payload as a
//! [`Payload::Queued`]), copies the payload once into the registration and
//! consumes the FPDU from TCP without copying it again. Everything else
//! (markers, small or malformed FPDUs, Read Requests, Terminates, FPDUs
//! too long to wait for whole, a CRC that does not match) goes through the
//! staging path, FPDU by FPDU, which reports errors as before: a corrupted
//! FPDU is never placed by either path.

use super::{ooo::HEAD, Qp, STAGE};
use crate::stat::s;
use crate::wire::{
    crc32c,
    ddp::{self, Header},
    mpa,
    rdmap::{Opcode, Segment},
};
use crate::zcnet::ulp::RxLocked;

/// Payload bytes from which an FPDU is placed from TCP's queue: below,
/// staging costs less than the queue walks.
const DIRECT_MIN: usize = 512;
/// The longest FPDU waited for until TCP holds all of it (siw sends about
/// an MSS, zcddp at most 4 KiB of payload); longer ones are staged.
const DIRECT_MAX: usize = 16384;
/// Bytes peeked: the MPA length field and the longer DDP header.
const PEEK: usize = mpa::HDR_LEN + ddp::UNTAGGED_HDR_LEN;

/// The payload of a segment the in-order path places.
#[derive(Clone, Copy)]
pub(crate) enum Payload<'a> {
    /// Staged: these bytes.
    Bytes(&'a [u8]),
    /// Still in TCP's receive queue: `len` bytes at stream offset `at`
    /// from the next byte to read.
    Queued { at: u32, len: usize },
}

impl Payload<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Payload::Bytes(b) => b.len(),
            Payload::Queued { len, .. } => *len,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `len` bytes from `off` of it (a scatter element's piece); empty
    /// past its end.
    pub(crate) fn sub(&self, off: usize, len: usize) -> Self {
        match *self {
            Payload::Bytes(b) => {
                Payload::Bytes(b.get(off..).and_then(|b| b.get(..len)).unwrap_or(&[]))
            }
            Payload::Queued { at, len: l } => Payload::Queued {
                at: at + off.min(l) as u32,
                len: len.min(l.saturating_sub(off)),
            },
        }
    }
}

/// What the in-order path does next.
pub(super) enum Step {
    /// An FPDU was placed from TCP's queue (or failed the connection).
    Placed,
    /// Wait until TCP holds this many bytes: the next FPDU goes direct
    /// once TCP holds all of it (the bytes stay queued meanwhile).
    Wait(u32),
    /// The staging path takes (at most) these bytes: the next FPDU, or
    /// everything when nothing goes direct on this connection.
    Stage(usize),
}

impl Qp {
    /// Places the next FPDU from TCP's receive queue if it can; otherwise
    /// says what the staging path takes (socket locked, `pump`).
    pub(super) fn direct_step(&mut self, sk: &RxLocked<'_>) -> Step {
        let Some(p) = self.parser.as_ref() else {
            return Step::Stage(STAGE);
        };
        if !self.direct {
            self.staged_why = s::RX_STAGED_FRAMING;
            return Step::Stage(STAGE);
        }
        if !p.at_boundary() {
            // An FPDU begun by the staging path is finished there.
            return Step::Stage(p.remaining());
        }
        let start = p.position();
        // What TCP holds decides the peek: the MPA length and the longer
        // DDP header at once when it holds them.
        let queued = sk.inq() as usize;
        if queued < mpa::HDR_LEN {
            return self.wait_for(sk, queued, mpa::HDR_LEN, STAGE);
        }
        let mut h = [0u8; PEEK];
        let have = queued.min(PEEK);
        let Some(peeked) = h.get_mut(..have) else {
            return self.stage(s::RX_STAGED_FRAMING, STAGE);
        };
        match sk.peek(0, peeked) {
            Ok(true) => {}
            Ok(false) => return self.wait_for(sk, queued, mpa::HDR_LEN, STAGE),
            Err(_) => return self.stage(s::RX_STAGED_FRAMING, STAGE),
        }
        let u = usize::from(u16::from_be_bytes([h[0], h[1]]));
        let total = mpa::fpdu_len(u);
        // Too short for a DDP header (the staging path reports it), or too
        // long to wait for whole.
        if !(PEEK..=DIRECT_MAX).contains(&total) {
            return self.stage(s::RX_STAGED_FRAMING, total);
        }
        if have < PEEK {
            return self.wait_for(sk, queued, PEEK, total);
        }
        let hl = if h[2] & ddp::FLAG_TAGGED != 0 {
            ddp::TAGGED_HDR_LEN
        } else {
            ddp::UNTAGGED_HDR_LEN
        };
        if u < hl {
            return self.stage(s::RX_STAGED_FRAMING, total);
        }
        // A small FPDU is staged whatever its header says (the staging path
        // parses it, once).
        if u - hl < DIRECT_MIN {
            return self.stage(s::RX_STAGED_SMALL, total);
        }
        let Some(ulpdu_hdr) = h.get(mpa::HDR_LEN..mpa::HDR_LEN + hl) else {
            return self.stage(s::RX_STAGED_FRAMING, total);
        };
        let Ok(seg) = Segment::parse(ulpdu_hdr) else {
            return self.stage(s::RX_STAGED_FRAMING, total);
        };
        // Wait for all of it only when TCP can hold it whole at the
        // truesize of small skbs.
        if total.saturating_mul(4) > sk.rcvbuf() {
            return self.stage(s::RX_STAGED_FRAMING, total);
        }
        if queued < total {
            return self.wait_for(sk, queued, total, total);
        }
        let mut field = [0u8; 4];
        let crc_at = (total - mpa::CRC_LEN) as u32;
        if !matches!(sk.peek(crc_at, &mut field), Ok(true)) {
            return self.stage(s::RX_STAGED_FRAMING, total);
        }
        // Placed out of order already, from bytes with this head and CRC
        // that the CRC checked: nothing here reads the payload, so the
        // CRC pass over it is not made again.
        let io = self
            .ooo
            .as_ref()
            .and_then(|o| o.in_order_at(sk, start, u, h.get(..HEAD), Some(field), false));
        let placed = io.as_ref().is_some_and(|i| i.skip);
        if placed {
            self.counts.add(s::OOO_SKIPPED_CRC, (u - hl) as i64);
        } else if self.rx.crc {
            match sk.queue_crc32c(0, total - mpa::CRC_LEN) {
                Ok(Some(c)) if c == crc32c::from_wire(field) => {}
                Ok(Some(c)) => {
                    // The staging path sees the same bytes and terminates
                    // (a corrupted FPDU, or a stream read out of step).
                    sk.log_crc(start, total as u32, c, crc32c::from_wire(field), &h, None);
                    return self.stage(s::RX_STAGED_FRAMING, total);
                }
                // The staging path finds the error and terminates.
                _ => return self.stage(s::RX_STAGED_FRAMING, total),
            }
        }
        let data = Payload::Queued {
            at: (mpa::HDR_LEN + hl) as u32,
            len: u - hl,
        };
        self.fpdu_received();
        self.skip_copy = placed;
        let r = match (seg.opcode, seg.ddp) {
            (Opcode::Write, Header::Tagged(t)) => self.place_write(sk, t, data),
            (Opcode::ReadResponse, Header::Tagged(t)) => self.place_read_resp(sk, t, data),
            (op, Header::Untagged(u)) if op.is_send() => self.place_send(sk, op, u, &seg, data),
            _ => {
                self.skip_copy = false;
                return self.stage(s::RX_STAGED_FRAMING, total);
            }
        };
        self.skip_copy = false;
        // The FPDU is used: taken from TCP and passed over by the parser,
        // which stays in step with TCP's stream.
        let consumed = sk.consume(total);
        let skipped = self.parser.as_mut().map(|p| p.skip(total));
        if !matches!(consumed, Ok(n) if n == total) || !matches!(skipped, Some(Ok(()))) {
            self.fail_now(-(kernel::bindings::EPROTO as i32));
            return Step::Placed;
        }
        if let (Some(o), Some(i)) = (self.ooo.as_mut(), io) {
            o.consumed(&i);
        }
        if let Err(super::Fault(code)) = r {
            self.terminate(sk, code, Some(ulpdu_hdr));
        }
        Step::Placed
    }

    /// TCP holds `queued` bytes, fewer than the `need` bytes the next step
    /// looks at: wait for them, leaving what came queued, if TCP can take
    /// them without a read ([`Locked::can_wait`]); if not, the staging
    /// path takes (at most `n` of) them now.
    fn wait_for(&mut self, sk: &RxLocked<'_>, queued: usize, need: usize, n: usize) -> Step {
        let missing = need.saturating_sub(queued);
        if queued > 0 && !sk.can_wait(missing) {
            return self.stage(s::RX_STAGED_FRAMING, n);
        }
        Step::Wait(need as u32)
    }

    /// The staging path takes the next `n` bytes; their payload counts
    /// under `why`.
    fn stage(&mut self, why: usize, n: usize) -> Step {
        self.staged_why = why;
        Step::Stage(n)
    }
}
