//! zcbench's zcddp modes: latency of Send, RDMA Write and RDMA Read and
//! the bandwidth of RDMA Writes between two zcddp sockets, by size.
//!
//! ```text
//! zcbench ddp-serve [--listen ADDR]                           (port 5302)
//! zcbench ddp --connect ADDR [--json FILE] [--label L] [--crc]
//!             [--lat-sizes LIST|none] [--bw-sizes LIST|none] [--iters N] [--seconds S]
//! ```
//!
//! - Send latency: half the round trip of a Send of N bytes answered by a
//!   Send of N bytes (a receive of the largest size posted on each side),
//!   each side polling its completion queue without waiting until the
//!   receive completes, as `ib_send_lat` does.
//! - Write latency: half the round trip of an RDMA Write of N bytes into the
//!   peer's region answered by one into ours; each side watches the last
//!   byte of its region for the iteration's tag while polling the
//!   completion queue without waiting (which is what feeds zcddp's parser),
//!   as `ib_write_lat` watches memory.
//! - Read latency: the whole time of an RDMA Read of N bytes from the
//!   peer's region, posting to completion (as `ib_read_lat`).
//! - Write-and-Send latency (`wsend`, not run unless asked): half the round
//!   trip of an RDMA Write of N bytes followed by a 16-byte Send, answered
//!   by the same; each side waits for the Send's receive, which completes
//!   only once the Write before it is placed (RFC 5040's order). A watched
//!   last byte proves nothing once Writes may be placed out of order (a
//!   Write's last segment can land before a hole in its middle is filled),
//!   so this is the Write latency that holds under reordering and loss.
//! - Write bandwidth: RDMA Writes of N bytes back to back for about
//!   `--seconds`, then a Send the server answers once everything before it
//!   is placed; the bytes over that time.
//!
//! Both sides take their completions from a completion ring
//! (`ZCDDP_CQ_RING`, [`zcddp::CqRing`]) and post their receives into a
//! receive ring (`ZCDDP_RQ_RING`, [`zcddp::RqRing`]) in registered memory,
//! without a system call, as perftest uses siw's user-space CQ and
//! receive queue; with `ZCBENCH_CQ=syscall` in the environment (or a
//! module without rings) through `ZCDDP_POLL_CQ` and `ZCDDP_POST_RECV`,
//! with `ZCBENCH_RQ=syscall` the completion ring and `ZCDDP_POST_RECV`.
//! The report says which (`cq ring|syscall rq ring|syscall`).
//!
//! Control messages are 16-byte Sends (`op`, `size`, `arg`); the server
//! stays in zcddp calls throughout, so the peer's Writes and Reads are
//! served (zcddp makes progress only in the application's verb calls).

use std::cell::RefCell;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};
use zcddp::{CqRing, Cqe, Mr, Params, RqRing, SendWr};

/// The largest size (the regions are this large).
pub const MAX: usize = 1 << 20;
const MSG: usize = 16;
const WAIT_MS: u32 = 10000;
/// A server idle this long gives up.
const IDLE: Duration = Duration::from_secs(300);

const OP_HELLO: u32 = 1;
const OP_SEND_LAT: u32 = 2;
const OP_WRITE_LAT: u32 = 3;
/// Answered at once; the server then serves until the next message.
const OP_SYNC: u32 = 4;
const OP_QUIT: u32 = 5;
const OP_WSEND_LAT: u32 = 6;

type Sock = TcpStream;

/// A connection's buffers: control receive and send, the Send data
/// (receive and send), and the RDMA region the peer writes and reads.
struct Bufs<'s> {
    rx: Mr<'s, Sock>,
    tx: Mr<'s, Sock>,
    region: Mr<'s, Sock>,
    /// The completion ring, once set ([`Bufs::use_ring`]): completions
    /// read without a system call, as perftest reads siw's CQ.
    ring: RefCell<Option<CqRing<'s, Sock>>>,
    /// The receive ring, once set: receives posted without a system call.
    rq: RefCell<Option<RqRing<'s, Sock>>>,
}

fn e(what: &str, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{what}: {err}"))
}

impl<'s> Bufs<'s> {
    fn new(s: &'s Sock) -> io::Result<Self> {
        // No peer invalidates it: out-of-order placement may land in it.
        let rw = zcddp::ACCESS_LOCAL_WRITE
            | zcddp::ACCESS_REMOTE_READ
            | zcddp::ACCESS_REMOTE_WRITE
            | zcddp::ACCESS_NO_REMOTE_INV;
        let b = Bufs {
            rx: Mr::new(s, MAX, zcddp::ACCESS_LOCAL_WRITE).map_err(|x| e("register", x))?,
            tx: Mr::new(s, MAX, 0).map_err(|x| e("register", x))?,
            region: Mr::new(s, MAX, rw).map_err(|x| e("register", x))?,
            ring: RefCell::new(None),
            rq: RefCell::new(None),
        };
        b.repost(s)?;
        Ok(b)
    }

    /// In RDMA mode: completions through a ring unless `ZCBENCH_CQ` is
    /// `syscall` (or the module has no rings: `ENOPROTOOPT`), receives
    /// through one too unless either variable is. Which rings are used.
    fn use_ring(&self, s: &'s Sock) -> io::Result<Rings> {
        let syscall = |v| std::env::var(v).is_ok_and(|v| v == "syscall");
        if syscall("ZCBENCH_CQ") {
            return Ok(Rings::default());
        }
        let rq = (!syscall("ZCBENCH_RQ")).then_some(64);
        let (cq, rq) = zcddp::set_rings(s, zcddp::CQ_DEPTH, rq).map_err(|x| e("rings", x))?;
        let r = Rings {
            cq: cq.is_some(),
            rq: rq.is_some(),
        };
        *self.ring.borrow_mut() = cq;
        *self.rq.borrow_mut() = rq;
        Ok(r)
    }

    /// Up to `max` completions, waiting up to `wait_ms` for the first:
    /// from the ring when one is set, else `ZCDDP_POLL_CQ`.
    fn cq(&self, s: &Sock, max: usize, wait_ms: u32) -> io::Result<Vec<Cqe>> {
        match self.ring.borrow_mut().as_mut() {
            Some(r) => r.wait(max, wait_ms),
            None => zcddp::poll_cq(s, max, wait_ms),
        }
        .map_err(|x| e("poll", x))
    }

    /// Posts, draining the completion queue while it is full (`ENOSPC`)
    /// or the send queue is (`ENOMEM`: every work request here is
    /// signaled, so a completion comes as the queue drains).
    fn post(&self, s: &Sock, w: &SendWr) -> io::Result<()> {
        loop {
            match zcddp::post_send(s, w) {
                Err(x) if matches!(x.raw_os_error(), Some(28) | Some(12)) => {
                    for c in self.cq(s, 256, WAIT_MS)? {
                        check(&c)?;
                    }
                }
                r => return r.map_err(|x| e("post", x)),
            }
        }
    }

    fn repost(&self, s: &Sock) -> io::Result<()> {
        if let Some(q) = self.rq.borrow_mut().as_mut() {
            // One receive outstanding at a time: the ring has room.
            return match q.post(1, &self.rx, 0, MAX as u32) {
                true => Ok(()),
                false => Err(io::Error::other("post recv: the receive ring is full")),
            };
        }
        zcddp::post_recv(s, 1, &self.rx, 0, MAX as u32).map_err(|x| e("post recv", x))
    }

    /// Posts a Send of `len` bytes of `tx` (its first 16 bytes a message).
    fn send(&self, s: &Sock, len: usize) -> io::Result<()> {
        self.post(
            s,
            &SendWr {
                opcode: zcddp::WR_SEND,
                flags: zcddp::SEND_SIGNALED,
                addr: self.tx.addr(),
                len: len as u32,
                lkey: self.tx.stag(),
                ..SendWr::default()
            },
        )
    }

    fn msg(&mut self, s: &Sock, op: u32, size: u32, arg: u64) -> io::Result<()> {
        let b = self.tx.bytes_mut();
        b[0..4].copy_from_slice(&op.to_ne_bytes());
        b[4..8].copy_from_slice(&size.to_ne_bytes());
        b[8..16].copy_from_slice(&arg.to_ne_bytes());
        self.send(s, MSG)
    }

    /// The received message's words.
    fn got(&self) -> (u32, u32, u64) {
        let b = self.rx.bytes();
        let u32_at = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        (
            u32_at(0),
            u32_at(4),
            u64::from_ne_bytes(b[8..16].try_into().unwrap_or_default()),
        )
    }

    /// Waits for a receive (other completions dropped), posts the next.
    fn recv(&self, s: &Sock) -> io::Result<Cqe> {
        self.recv_as(s, false)
    }

    /// As [`Bufs::recv`]; `spin`: polling the completion queue without
    /// waiting, again and again, as `ib_send_lat` polls its CQ, rather
    /// than sleeping in `ZCDDP_POLL_CQ` until a completion wakes it.
    fn recv_as(&self, s: &Sock, spin: bool) -> io::Result<Cqe> {
        let t = Instant::now();
        let wait = if spin { 0 } else { WAIT_MS };
        loop {
            for c in self.cq(s, 16, wait)? {
                check(&c)?;
                if c.opcode == zcddp::WC_RECV {
                    // The message is read before the next Send can land:
                    // the peer sends only after our answer.
                    self.repost(s)?;
                    return Ok(c);
                }
            }
            if t.elapsed() > IDLE {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no message"));
            }
        }
    }

    /// Sends a message and waits for the answer's words.
    fn call(&mut self, s: &Sock, op: u32, size: u32, arg: u64) -> io::Result<(u32, u32, u64)> {
        self.msg(s, op, size, arg)?;
        self.recv(s)?;
        Ok(self.got())
    }

    /// Spins on memory until the last of the first `size` bytes of the
    /// region is `tag` ([`zcddp::spin_until`]), polling the completion
    /// queue once a millisecond.
    fn watch(&self, s: &Sock, size: usize, tag: u8) -> io::Result<()> {
        let poll = || -> io::Result<()> {
            for c in self.cq(s, 16, 0)? {
                check(&c)?;
            }
            Ok(())
        };
        let wait = Duration::from_secs(WAIT_MS as u64 / 1000);
        if zcddp::spin_until(
            || std::hint::black_box(self.region.bytes())[size - 1] == tag,
            wait,
            poll,
        )? {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no Write of {size} bytes with tag {tag}"),
            ))
        }
    }

    /// RDMA Write of `size` bytes of `tx` (last byte `tag`) to the peer.
    fn write(&mut self, s: &Sock, size: usize, tag: u8, peer: (u64, u32)) -> io::Result<()> {
        self.tx.bytes_mut()[size - 1] = tag;
        self.post(
            s,
            &SendWr {
                opcode: zcddp::WR_WRITE,
                flags: zcddp::SEND_SIGNALED,
                addr: self.tx.addr(),
                len: size as u32,
                lkey: self.tx.stag(),
                raddr: peer.0,
                rkey: peer.1,
                ..SendWr::default()
            },
        )
    }
}

fn check(c: &Cqe) -> io::Result<()> {
    if c.status == zcddp::WC_SUCCESS {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "completion of opcode {} failed: status {}",
            c.opcode, c.status
        )))
    }
}

fn tag(i: u64) -> u8 {
    (i % 255) as u8 + 1
}

fn attach(s: &Sock) -> io::Result<()> {
    zcddp::attach(s).map_err(|x| e("attach", zcddp::not_loaded(x)))
}

fn startup(s: &Sock, initiator: bool, flags: u32) -> io::Result<()> {
    let mut p = if initiator {
        Params::initiator()
    } else {
        Params::responder()
    };
    p.flags = flags;
    // IRD/ORD: one Read at a time is all the Read latency needs.
    zcddp::startup(s, &p).map_err(|x| e("MPA start-up", x))?;
    Ok(())
}

fn serve_conn(s: &Sock, markers: bool) -> io::Result<()> {
    // The receive is posted (Bufs::new) before start-up: the client may
    // send at once. CRC as the client asks (the responder follows);
    // markers on what the client sends when asked for.
    attach(s)?;
    let mut b = Bufs::new(s)?;
    startup(s, false, if markers { zcddp::F_MARKERS } else { 0 })?;
    b.use_ring(s)?;
    let mut peer = (0u64, 0u32);
    loop {
        let c = b.recv(s)?;
        let (op, size, arg) = b.got();
        let size = size as usize;
        match op {
            OP_HELLO => {
                peer = (arg, size as u32);
                let (a, k) = (b.region.addr(), b.region.stag());
                b.msg(s, OP_HELLO, k, a)?;
            }
            OP_SEND_LAT if (1..=MAX).contains(&size) => {
                b.msg(s, op, 0, 0)?;
                for _ in 0..arg {
                    let c = b.recv_as(s, true)?;
                    b.send(s, c.byte_len as usize)?;
                }
            }
            OP_WRITE_LAT if (1..=MAX).contains(&size) => {
                b.region.bytes_mut()[size - 1] = 0;
                b.msg(s, op, 0, 0)?;
                for i in 0..arg {
                    b.watch(s, size, tag(i))?;
                    b.write(s, size, tag(i), peer)?;
                }
            }
            OP_WSEND_LAT if (1..=MAX).contains(&size) => {
                b.msg(s, op, 0, 0)?;
                for _ in 0..arg {
                    b.recv_as(s, true)?;
                    b.write(s, size, 0, peer)?;
                    b.send(s, MSG)?;
                }
            }
            OP_SYNC => b.msg(s, op, 0, 0)?,
            OP_QUIT => return Ok(()),
            _ => {
                return Err(io::Error::other(format!(
                    "bad message op {op} size {size} ({} bytes)",
                    c.byte_len
                )))
            }
        }
    }
}

/// Serves zcddp benchmark connections, one at a time, until killed.
pub fn serve(listen: &str, markers: bool) -> io::Result<()> {
    let l = TcpListener::bind(listen)?;
    eprintln!("zcbench: ddp serving on {}", l.local_addr()?);
    loop {
        let (s, from) = l.accept()?;
        if let Err(x) = serve_conn(&s, markers) {
            eprintln!("zcbench: ddp {from}: {x}");
        }
    }
}

pub struct LatRow {
    pub op: &'static str,
    pub size: usize,
    pub iters: u64,
    pub median_us: f64,
    pub mean_us: f64,
}

pub struct BwRow {
    pub size: usize,
    pub bytes: u64,
    pub secs: f64,
    pub mbytes_per_s: f64,
    pub tx_cpu_ns_per_byte: f64,
    pub sys_cpu_ns_per_byte: f64,
}

fn row(op: &'static str, size: usize, mut us: Vec<f64>) -> LatRow {
    let mean = us.iter().sum::<f64>() / us.len().max(1) as f64;
    LatRow {
        op,
        size,
        iters: us.len() as u64,
        median_us: crate::median(&mut us),
        mean_us: mean,
    }
}

/// Runs `f` for each iteration; its times in microseconds, divided by `div`
/// (2: half a round trip).
fn timed(iters: u64, div: f64, mut f: impl FnMut(u64) -> io::Result<()>) -> io::Result<Vec<f64>> {
    let mut us = Vec::with_capacity(iters as usize);
    for i in 0..iters {
        let t = Instant::now();
        f(i)?;
        us.push(t.elapsed().as_secs_f64() * 1e6 / div);
    }
    Ok(us)
}

fn send_lat(s: &Sock, b: &mut Bufs<'_>, size: usize, iters: u64) -> io::Result<LatRow> {
    b.call(s, OP_SEND_LAT, size as u32, iters)?;
    let us = timed(iters, 2.0, |_| {
        b.send(s, size)?;
        let c = b.recv_as(s, true)?;
        if c.byte_len as usize != size {
            return Err(io::Error::other(format!(
                "Send of {size} answered with {}",
                c.byte_len
            )));
        }
        Ok(())
    })?;
    Ok(row("send", size, us))
}

/// Write latency: each Write answered by one, the last byte watched; or,
/// `send`, Write-and-Send latency: each Write followed by a Send, whose
/// receive each side waits for.
fn write_lat(
    s: &Sock,
    b: &mut Bufs<'_>,
    size: usize,
    iters: u64,
    peer: (u64, u32),
    send: bool,
) -> io::Result<LatRow> {
    let op = if send {
        OP_WSEND_LAT
    } else {
        b.region.bytes_mut()[size - 1] = 0;
        OP_WRITE_LAT
    };
    b.call(s, op, size as u32, iters)?;
    let us = timed(iters, 2.0, |i| {
        b.write(s, size, tag(i), peer)?;
        if send {
            b.send(s, MSG)?;
            b.recv_as(s, true).map(|_| ())
        } else {
            b.watch(s, size, tag(i))
        }
    })?;
    Ok(row(if send { "wsend" } else { "write" }, size, us))
}

fn read_lat(
    s: &Sock,
    b: &mut Bufs<'_>,
    size: usize,
    iters: u64,
    peer: (u64, u32),
) -> io::Result<LatRow> {
    b.call(s, OP_SYNC, 0, 0)?;
    let w = SendWr {
        wr_id: 7,
        opcode: zcddp::WR_READ,
        flags: zcddp::SEND_SIGNALED,
        addr: b.region.addr(),
        len: size as u32,
        lkey: b.region.stag(),
        raddr: peer.0,
        rkey: peer.1,
        ..SendWr::default()
    };
    let us = timed(iters, 1.0, |_| {
        b.post(s, &w)?;
        loop {
            let cs = b.cq(s, 16, WAIT_MS)?;
            if cs.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no Read completion",
                ));
            }
            for c in cs {
                check(&c)?;
                if c.opcode == zcddp::WR_READ {
                    if c.byte_len as usize != size {
                        return Err(io::Error::other(format!(
                            "Read of {size} completed {}",
                            c.byte_len
                        )));
                    }
                    return Ok(());
                }
            }
        }
    })?;
    b.call(s, OP_SYNC, 0, 0)?;
    Ok(row("read", size, us))
}

/// `writes` Writes of `size`, then a Send the server answers.
fn write_stream(
    s: &Sock,
    b: &mut Bufs<'_>,
    size: usize,
    writes: u64,
    peer: (u64, u32),
) -> io::Result<()> {
    b.call(s, OP_SYNC, 0, 0)?;
    for i in 0..writes {
        b.write(s, size, tag(i), peer)?;
    }
    b.call(s, OP_SYNC, 0, 0)?;
    Ok(())
}

fn write_bw(
    s: &Sock,
    b: &mut Bufs<'_>,
    size: usize,
    seconds: f64,
    peer: (u64, u32),
) -> io::Result<BwRow> {
    let probe = Instant::now();
    write_stream(s, b, size, 16, peer)?;
    let rate = (size as u64 * 16) as f64 / probe.elapsed().as_secs_f64().max(1e-6);
    let writes = ((rate * seconds) as u64 / size as u64).max(16);
    let total = writes * size as u64;
    let tx0 = crate::thread_cpu_ticks();
    let sys0 = crate::system_busy_ticks();
    let t = Instant::now();
    write_stream(s, b, size, writes, peer)?;
    let secs = t.elapsed().as_secs_f64();
    let ns_per_tick = 1e9 / crate::ticks_per_second() as f64;
    Ok(BwRow {
        size,
        bytes: total,
        secs,
        mbytes_per_s: total as f64 / secs / 1e6,
        tx_cpu_ns_per_byte: (crate::thread_cpu_ticks() - tx0) as f64 * ns_per_tick / total as f64,
        sys_cpu_ns_per_byte: crate::system_busy_ticks().saturating_sub(sys0) as f64 * ns_per_tick
            / total as f64,
    })
}

pub struct Report {
    pub lat: Vec<LatRow>,
    pub bw: Vec<BwRow>,
    /// Completions and receives went through rings, not system calls.
    pub rings: Rings,
}

/// Which rings a connection uses.
#[derive(Clone, Copy, Default)]
pub struct Rings {
    /// Completions (`ZCDDP_CQ_RING`), not `ZCDDP_POLL_CQ`.
    pub cq: bool,
    /// Receives (`ZCDDP_RQ_RING`), not `ZCDDP_POST_RECV`.
    pub rq: bool,
}

/// The client: every latency size for Send, Write and Read (those of
/// `lat_ops`), then Write bandwidth by size.
#[allow(clippy::too_many_arguments)]
pub fn run(
    addr: &str,
    crc: bool,
    lat_sizes: &[usize],
    lat_ops: &[String],
    bw_sizes: &[usize],
    iters: u64,
    seconds: f64,
) -> io::Result<Report> {
    let s = crate::connect(addr)?;
    attach(&s)?;
    let mut b = Bufs::new(&s)?;
    startup(&s, true, if crc { zcddp::F_CRC } else { 0 })?;
    let rings = b.use_ring(&s)?;
    let info = zcddp::info(&s)?;
    if info.crc != crc {
        return Err(io::Error::other(format!(
            "CRC {} negotiated, {} asked",
            info.crc, crc
        )));
    }
    let (region, stag) = (b.region.addr(), b.region.stag());
    let (_, k, a) = b.call(&s, OP_HELLO, stag, region)?;
    let peer = (a, k);
    let mut lat = Vec::new();
    let op = |o: &str| lat_ops.iter().any(|x| x == o);
    for &size in lat_sizes.iter().filter(|_| op("send")) {
        lat.push(send_lat(&s, &mut b, size, iters)?);
    }
    for &size in lat_sizes.iter().filter(|_| op("write")) {
        lat.push(write_lat(&s, &mut b, size, iters, peer, false)?);
    }
    for &size in lat_sizes.iter().filter(|_| op("read")) {
        lat.push(read_lat(&s, &mut b, size, iters, peer)?);
    }
    for &size in lat_sizes.iter().filter(|_| op("wsend")) {
        lat.push(write_lat(&s, &mut b, size, iters, peer, true)?);
    }
    let mut bw = Vec::new();
    for &size in bw_sizes {
        bw.push(write_bw(&s, &mut b, size, seconds, peer)?);
    }
    // Handed to TCP when posted: it leaves before the close.
    b.msg(&s, OP_QUIT, 0, 0)?;
    Ok(Report { lat, bw, rings })
}
