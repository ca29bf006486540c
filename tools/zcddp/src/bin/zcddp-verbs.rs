//! zcddp-verbs: the zcddp side of `siw_verbs` (tools/testing/zcnet/siw_verbs.c),
//! a small rdma-core program on a soft-iWARP device: Send, RDMA Write and
//! RDMA Read both ways, every byte seeded and checked by hash on both sides.
//!
//! Its command line is [`zcddp::cli::Verbs`] (`zcddp-verbs --help`):
//!
//! ```text
//! zcddp-verbs -s|-c -a ADDR [-p PORT] [-S SIZE] [-r SEED] [-C COUNT] [--sge N] [--crc] [--no-remote-inv] [--watch] [--wait MS]
//! zcddp-verbs -s|-c -a ADDR [-p PORT] [-S SIZE] [-r SEED] [--crc] [--wait MS] -L ITERS|-B SECONDS [--syscall]
//! ```
//!
//! `-s` accepts the TCP connection and answers MPA start-up, `-c` connects
//! and starts it; the exchange is the same either way (siw_verbs.c
//! describes it): the peer's Send is received into a posted receive and
//! checked (pattern 'S'), and this side Sends pattern 'T' (the MPA
//! initiator's Send first); this side advertises a region of SIZE bytes
//! (pattern 'Z') that the peer RDMA-Reads and then RDMA-Writes (pattern
//! 'W', checked here); this side then RDMA-Reads the peer's region
//! (pattern 'C', checked) and RDMA-Writes pattern 'V' into it, which the
//! peer checks; the peer's last Send says whether all its checks passed.
//! Exit status 0 only when every check on both sides passed. `-C COUNT`
//! repeats the exchange on the connection, round i with the patterns of
//! SEED + i (siw_verbs takes the same flag); only the first round prints
//! its checks. `--sge N` receives the peer's data Send through one
//! receive over a scatter list of N elements of uneven lengths, each its
//! own registration (`ZCDDP_POST_RECV_SG`).
//! `--no-remote-inv` registers the regions the peer writes into with
//! `ZCDDP_ACCESS_NO_REMOTE_INV`, so that zcddp may place the peer's
//! Writes and Read Responses out of order (with CRC). `--watch`: a thread
//! watches this side's region while the peer RDMA-Writes it
//! ([`zcddp::watch`]: a block still as this side filled it, 8 KiB or more
//! below one the peer's Write already changed, shows bytes placed ahead of
//! a hole), every round, and the end prints `zcddp-verbs: watch scans=N
//! ahead=M`. `--wait MS` bounds
//! each wait for a completion (20000 by default): 1 MiB each way through
//! 5% loss, duplication and corruption with 20 ms of delay takes longer.
//!
//! With `-L ITERS` and/or `-B SECONDS` it runs the timing modes instead
//! (siw_verbs.c takes the same flags and describes the exchange): the MPA
//! initiator (`-c`) leads and prints `zcddp-verbs: result OP BYTES VALUE
//! UNIT` lines, the responder answers. Send latency: half the round trip
//! of a Send of SIZE bytes answered by one, each receive polled for
//! without waiting, again and again, as siw_verbs.c and `ib_send_lat` poll
//! their CQs (`poll_cq` with a timeout would sleep until it comes); Write
//! latency: half the round trip of an RDMA Write of SIZE bytes answered by
//! one, the last byte of the region watched (the completion queue polled
//! once a millisecond), as `zcbench ddp` and `ib_write_lat` do; Write bandwidth: RDMA Writes back to back for
//! SECONDS (a window of 16 outstanding), then a Send the peer answers on
//! its arrival; the bytes over the time from the first post to that
//! answer. Every received buffer's last state is hashed against the
//! seeded patterns on both sides. The timing modes take their completions
//! from a completion ring and post their receives into a receive ring
//! (`zcddp::CqRing`, `zcddp::RqRing`), without a system call, as rdma-core
//! does on siw; `--syscall` uses `ZCDDP_POLL_CQ` and `ZCDDP_POST_RECV`
//! instead (as does a module without rings). The `connected` line says
//! which.

use clap::Parser;
use std::collections::VecDeque;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::time::{Duration, Instant};
use zcddp::watch::Watch;
use zcddp::{median, CqRing, Cqe, Mr, RqRing, SendWr};

/// `--wait MS`: the bound of each wait for a completion.
static WAIT: AtomicU32 = AtomicU32::new(20000);
/// `-C`: only the first round prints its checks (and any mismatch).
static VERBOSE: AtomicBool = AtomicBool::new(true);
const MSG_LEN: usize = 32;
const SEND_MAX: usize = 64 * 1024;
const T_ADV: u32 = 1;
const T_DONE_C: u32 = 2;
const T_DONE_Z: u32 = 3;
const T_FIN: u32 = 4;

struct Opts {
    side: zcddp::Side,
    size: usize,
    seed: u64,
    flags: u32,
    /// `--no-remote-inv`: extra access bits of the regions written into.
    access: u32,
    /// `-L ITERS`: latency iterations (0: none).
    lat: u64,
    /// `-B SECONDS`: bandwidth seconds (0: none).
    bw: f64,
    /// `-C COUNT`: rounds of the exchange.
    count: u64,
    /// `--sge N`: scatter elements of the data Send's receive.
    sge: usize,
    /// `--syscall`: the timing modes without the rings.
    syscall: bool,
    /// `--watch`: the region watched while the peer writes it.
    watch: bool,
}

/// The bound of each wait for a completion, in ms (`--wait`).
fn wait_ms() -> u32 {
    WAIT.load(Relaxed)
}

fn parse() -> Result<Opts, String> {
    let a = zcddp::cli::Verbs::parse();
    WAIT.store(a.wait, Relaxed);
    // At most 1 GiB (the parser's range).
    let size = a.size as usize;
    if !(1..=zcddp::RECV_SGE_MAX).contains(&a.sge) || a.sge > size.min(SEND_MAX) {
        return Err(format!(
            "--sge N: 1 to {} (and at most SIZE)",
            zcddp::RECV_SGE_MAX
        ));
    }
    Ok(Opts {
        side: a.side.side(),
        size,
        seed: a.seed,
        flags: if a.crc { zcddp::F_CRC } else { 0 },
        access: if a.no_remote_inv {
            zcddp::ACCESS_NO_REMOTE_INV
        } else {
            0
        },
        lat: a.lat,
        bw: a.bw,
        count: a.count,
        sge: a.sge,
        syscall: a.syscall,
        watch: a.watch,
    })
}

/// siw_verbs.c's pattern: xorshift64 (13, 7, 17) from `seed ^ tag *
/// 0x9e3779b97f4a7c15`, one byte (bits 32..39) per step.
fn gen(b: &mut [u8], seed: u64, tag: u8) {
    let mut x = seed ^ u64::from(tag).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    if x == 0 {
        x = 1;
    }
    for v in b.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *v = (x >> 32) as u8;
    }
}

/// 64-bit FNV-1a.
fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &c| {
        (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3)
    })
}

fn pattern_hash(n: usize, seed: u64, tag: u8) -> u64 {
    let mut b = vec![0u8; n];
    gen(&mut b, seed, tag);
    fnv(&b)
}

/// A message: type, rkey, addr, len, hash (big-endian).
#[derive(Debug, Default, Clone, Copy)]
struct Msg {
    ty: u32,
    rkey: u32,
    addr: u64,
    len: u64,
    hash: u64,
}

impl Msg {
    fn put(&self, b: &mut [u8]) {
        b[0..4].copy_from_slice(&self.ty.to_be_bytes());
        b[4..8].copy_from_slice(&self.rkey.to_be_bytes());
        b[8..16].copy_from_slice(&self.addr.to_be_bytes());
        b[16..24].copy_from_slice(&self.len.to_be_bytes());
        b[24..32].copy_from_slice(&self.hash.to_be_bytes());
    }

    fn get(b: &[u8]) -> Self {
        let w32 = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().unwrap_or_default());
        let w64 = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().unwrap_or_default());
        Self {
            ty: w32(0),
            rkey: w32(4),
            addr: w64(8),
            len: w64(16),
            hash: w64(24),
        }
    }
}

fn e<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> String {
    move |err| format!("{what}: {err}")
}

/// Prints (in the first round, or when they differ) and returns whether
/// `got` is `want`.
fn check(what: &str, got: u64, want: u64) -> bool {
    if VERBOSE.load(Relaxed) || got != want {
        let r = if got == want { "ok" } else { "MISMATCH" };
        println!("zcddp-verbs: {what} {r} (hash {got:016x}, want {want:016x})");
    }
    got == want
}

/// The exchange's registrations (`rdata`: the peer's data Send; `rmsg`:
/// its DONE and FIN; `zr`: the region the peer Reads and Writes; `zl`: the
/// Read target; `zv`: the Write source; `sdata`: the data Send).
struct Bufs<'s> {
    rdata: Mr<'s, TcpStream>,
    /// `--sge N`: the data Send's receive over N registrations of their
    /// own instead of `rdata` (empty: `rdata`).
    rsg: Vec<Mr<'s, TcpStream>>,
    rmsg: Mr<'s, TcpStream>,
    smsg: Mr<'s, TcpStream>,
    zr: Mr<'s, TcpStream>,
    zl: Mr<'s, TcpStream>,
    zv: Mr<'s, TcpStream>,
    sdata: Mr<'s, TcpStream>,
}

impl Bufs<'_> {
    /// The peer's data Send, DONE and FIN of a round.
    fn post_recvs(&self, s: &TcpStream, sendsz: usize) -> Result<(), String> {
        if self.rsg.is_empty() {
            zcddp::post_recv(s, 1, &self.rdata, 0, sendsz as u32).map_err(e("post recv"))?;
        } else {
            let sge: Vec<zcddp::Sge> = self
                .rsg
                .iter()
                .map(|m| zcddp::Sge::of(m, 0, m.bytes().len() as u32))
                .collect();
            zcddp::post_recv_sg(s, 1, &sge).map_err(e("post recv (scatter list)"))?;
        }
        zcddp::post_recv(s, 2, &self.rmsg, 0, MSG_LEN as u32).map_err(e("post recv"))?;
        zcddp::post_recv(s, 3, &self.rmsg, MSG_LEN, MSG_LEN as u32).map_err(e("post recv"))
    }

    /// The first `n` bytes of the data Send's receive.
    fn received(&self, n: usize) -> Vec<u8> {
        if self.rsg.is_empty() {
            return self.rdata.bytes().get(..n).unwrap_or(&[]).to_vec();
        }
        let mut v: Vec<u8> = self
            .rsg
            .iter()
            .flat_map(|m| m.bytes().iter().copied())
            .collect();
        v.truncate(n);
        v
    }
}

/// `--sge N`: the lengths of N elements that add up to `n`, cut off the
/// even shares (at `n * k / N + 3 * k`) so that no cut falls on an FPDU's.
fn sge_lens(n: usize, parts: usize) -> Vec<usize> {
    let cut = |k: usize| {
        if k == parts {
            n
        } else {
            (n * k / parts + 3 * k).min(n)
        }
    };
    (0..parts).map(|k| cut(k + 1) - cut(k)).collect()
}

fn run(s: &TcpStream, o: &Opts, initiator: bool) -> Result<(), String> {
    let size = o.size;
    let sendsz = size.min(SEND_MAX);
    let lw = zcddp::ACCESS_LOCAL_WRITE | o.access;
    let rw = lw | zcddp::ACCESS_REMOTE_READ | zcddp::ACCESS_REMOTE_WRITE;
    let mut rsg = Vec::new();
    if o.sge > 1 {
        for len in sge_lens(sendsz, o.sge) {
            rsg.push(Mr::new(s, len.max(1), lw).map_err(e("reg recv element"))?);
        }
    }
    let mut b = Bufs {
        rsg,
        rdata: Mr::new(s, sendsz, lw).map_err(e("reg recv data"))?,
        rmsg: Mr::new(s, 2 * MSG_LEN, lw).map_err(e("reg recv msgs"))?,
        smsg: Mr::new(s, MSG_LEN, 0).map_err(e("reg send msg"))?,
        zr: Mr::new(s, size, rw).map_err(e("reg region"))?,
        zl: Mr::new(s, size, lw).map_err(e("reg read target"))?,
        zv: Mr::new(s, size, 0).map_err(e("reg write source"))?,
        sdata: Mr::new(s, sendsz, 0).map_err(e("reg send data"))?,
    };
    // The first round's receives, posted before start-up.
    b.post_recvs(s, sendsz)?;
    zcddp::start_as(s, initiator, o.flags)?;
    let info = zcddp::info(s).map_err(e("info"))?;
    println!(
        "zcddp-verbs: connected, rev={} crc={} ird={} ord={}, {size} bytes, seed {}",
        info.revision, info.crc as u8, info.ird, info.ord, o.seed
    );
    let mut fin = Msg::default();
    let mut ok = true;
    let mut rounds = 0;
    let mut seen = (0, 0);
    while rounds < o.count && ok && fin.hash == 0 {
        VERBOSE.store(rounds == 0, Relaxed);
        fin = exchange(s, &mut b, o, rounds, initiator, &mut ok, &mut seen)?;
        rounds += 1;
    }
    println!("zcddp-verbs: {rounds} rounds");
    if o.watch {
        println!("zcddp-verbs: watch scans={} ahead={}", seen.0, seen.1);
    }
    verdict(ok, fin)
}

/// Round `round` of the exchange, with the patterns of the seed plus
/// `round`: the peer's FIN; `ok` cleared by a failed check here, the
/// watch's scans and sightings ahead of a hole (`--watch`) added to
/// `seen`. When
/// another round follows, its receives are posted before this side's
/// DONE, after which the peer may start it at once.
fn exchange(
    s: &TcpStream,
    b: &mut Bufs<'_>,
    o: &Opts,
    round: u64,
    initiator: bool,
    ok: &mut bool,
    seen: &mut (u64, usize),
) -> Result<Msg, String> {
    let (seed, more) = (o.seed.wrapping_add(round), round + 1 < o.count);
    let size = o.size;
    let sendsz = size.min(SEND_MAX);
    gen(b.sdata.bytes_mut(), seed, b'T');
    gen(b.zr.bytes_mut(), seed, b'Z');
    gen(b.zv.bytes_mut(), seed, b'V');
    let recv = |what: &'static str| zcddp::wait_for(s, zcddp::WC_RECV, wait_ms()).map_err(e(what));

    // The data Sends, the MPA initiator's first: the peer's into the
    // posted receive.
    for first in [true, false] {
        if first != initiator {
            let c = recv("receive the data Send")?;
            *ok &= check(
                &format!("Send from siw ({} bytes) received", c.byte_len),
                fnv(&b.received(c.byte_len as usize)),
                pattern_hash(sendsz, seed, b'S'),
            );
        } else {
            zcddp::post_send_msg(s, &b.sdata, sendsz as u32).map_err(e("post send data"))?;
        }
    }

    // Our region, for the peer's RDMA Read and RDMA Write.
    Msg {
        ty: T_ADV,
        rkey: b.zr.stag(),
        addr: b.zr.addr(),
        len: size as u64,
        hash: fnv(b.zr.bytes()),
    }
    .put(b.smsg.bytes_mut());
    // Watched from the advertisement until the peer says its Write is done.
    let watch = o.watch.then(|| Watch::new(&b.zr));
    let stop = AtomicBool::new(false);
    let (done, sightings) = std::thread::scope(|sc| {
        let w = watch.as_ref().map(|w| sc.spawn(|| w.run(&stop)));
        let done = zcddp::post_send_msg(s, &b.smsg, MSG_LEN as u32)
            .map_err(e("post send ADV"))
            .and_then(|()| recv("receive DONE"));
        stop.store(true, Relaxed);
        (done, w.and_then(|w| w.join().ok()))
    });
    done?;
    if let (Some(w), Some(v)) = (&watch, sightings) {
        seen.0 += v.scans;
        seen.1 += v.ahead(w, b.zr.bytes());
    }
    let done = Msg::get(b.rmsg.bytes());
    if done.ty != T_DONE_C || done.len != size as u64 {
        return Err(format!("bad DONE: {done:?}"));
    }
    *ok &= check(
        "siw's RDMA Write into zcddp's region",
        fnv(b.zr.bytes()),
        pattern_hash(size, seed, b'W'),
    );
    *ok &= check("  its hash as siw sent it", fnv(b.zr.bytes()), done.hash);
    if more && *ok {
        // The peer's FIN of this round stays first in line.
        b.post_recvs(s, sendsz)?;
    }

    // The reverse: RDMA Read of the peer's region, RDMA Write into it.
    let mut wr = SendWr {
        wr_id: 10,
        opcode: zcddp::WR_READ,
        flags: zcddp::SEND_SIGNALED,
        addr: b.zl.addr(),
        len: size as u32,
        lkey: b.zl.stag(),
        raddr: done.addr,
        rkey: done.rkey,
        ..SendWr::default()
    };
    zcddp::post_send(s, &wr).map_err(e("post RDMA Read"))?;
    zcddp::wait_for(s, zcddp::WR_READ, wait_ms()).map_err(e("RDMA Read"))?;
    *ok &= check(
        "RDMA Read of siw's region",
        fnv(b.zl.bytes()),
        pattern_hash(size, seed, b'C'),
    );
    wr.wr_id = 11;
    wr.opcode = zcddp::WR_WRITE;
    wr.addr = b.zv.addr();
    wr.lkey = b.zv.stag();
    zcddp::post_send(s, &wr).map_err(e("post RDMA Write"))?;
    zcddp::wait_for(s, zcddp::WR_WRITE, wait_ms()).map_err(e("RDMA Write"))?;
    Msg {
        ty: T_DONE_Z,
        hash: fnv(b.zv.bytes()),
        ..Msg::default()
    }
    .put(b.smsg.bytes_mut());
    zcddp::post_send_msg(s, &b.smsg, MSG_LEN as u32).map_err(e("post send DONE"))?;

    recv("receive FIN")?;
    let fin = Msg::get(b.rmsg.bytes().get(MSG_LEN..).unwrap_or(&[0; MSG_LEN]));
    if fin.ty != T_FIN {
        return Err(format!("bad FIN: {fin:?}"));
    }
    Ok(fin)
}

/// The end of a run: siw's verdict (its FIN) printed, `Ok` only when it
/// and this side's checks (`ok`) passed.
fn verdict(ok: bool, fin: Msg) -> Result<(), String> {
    let peer_ok = fin.hash == 0;
    println!(
        "zcddp-verbs: siw's checks {}",
        if peer_ok { "passed" } else { "FAILED" }
    );
    if ok && peer_ok {
        println!("zcddp-verbs: all checked");
        Ok(())
    } else {
        Err("a check failed".into())
    }
}

// The timing modes (`-L`, `-B`): siw_verbs.c has the exchange.
const RING: usize = 4;
const WINDOW: usize = 16;
const T_READY: u32 = 5;
const T_DONE_BW: u32 = 6;
const T_ACK: u32 = 7;
/// In the ADV's hash word: a bandwidth phase follows (the low bits: the
/// latency iterations), so that both sides agree on the modes.
const BW_FLAG: u64 = 1 << 63;

/// The latency Writes' last byte: never 0 (the regions start zeroed),
/// never the same twice in a row.
fn tag(i: u64) -> u8 {
    (i % 255) as u8 + 1
}

/// The hash of `n` bytes of pattern `tag` with the last byte `last`.
fn tagged_hash(n: usize, seed: u64, tag: u8, last: u8) -> u64 {
    let mut b = vec![0u8; n];
    gen(&mut b, seed, tag);
    b[n - 1] = last;
    fnv(&b)
}

/// One connection's completions: receives kept in order until asked
/// for, send completions counted (every work request is signaled).
struct Cq<'s> {
    s: &'s TcpStream,
    /// The completion ring, once set ([`Timer::use_rings`]).
    ring: Option<CqRing<'s, TcpStream>>,
    recvs: VecDeque<Cqe>,
    outstanding: usize,
}

impl Cq<'_> {
    /// Polls (the ring when set), waiting up to `timeout_ms` for the
    /// first: how many came.
    fn poll(&mut self, timeout_ms: u32) -> Result<usize, String> {
        let cs = match self.ring.as_mut() {
            Some(r) => r.wait(64, timeout_ms),
            None => zcddp::poll_cq(self.s, 64, timeout_ms),
        }
        .map_err(e("poll"))?;
        for c in &cs {
            if c.status != zcddp::WC_SUCCESS {
                return Err(format!(
                    "completion of opcode {} failed: status {}",
                    c.opcode, c.status
                ));
            }
            if c.opcode == zcddp::WC_RECV {
                self.recvs.push_back(*c);
            } else {
                self.outstanding = self.outstanding.saturating_sub(1);
            }
        }
        Ok(cs.len())
    }

    /// Posts with at most `WINDOW` outstanding, polling while the send
    /// queue (`ENOMEM`) or the completion queue (`ENOSPC`) is full.
    fn post(&mut self, w: &SendWr) -> Result<(), String> {
        while self.outstanding >= WINDOW {
            if self.poll(wait_ms())? == 0 {
                return Err("no send completion".into());
            }
        }
        loop {
            match zcddp::post_send(self.s, w) {
                Ok(()) => {
                    self.outstanding += 1;
                    return Ok(());
                }
                Err(x) if matches!(x.raw_os_error(), Some(12) | Some(28)) => {
                    if self.poll(wait_ms())? == 0 {
                        return Err(format!("post: {x}, and no completion"));
                    }
                }
                Err(x) => return Err(format!("post: {x}")),
            }
        }
    }

    /// The next receive, waited for up to `limit`.
    fn recv(&mut self, what: &str, limit: Duration) -> Result<Cqe, String> {
        let t = Instant::now();
        loop {
            if let Some(c) = self.recvs.pop_front() {
                return Ok(c);
            }
            if self.poll(wait_ms())? == 0 && t.elapsed() > limit {
                return Err(format!("{what}: nothing received"));
            }
        }
    }

    /// As [`Cq::recv`], polling without waiting, again and again (as
    /// `ib_send_lat` and siw_verbs.c poll their CQs), until `limit`.
    fn recv_spin(&mut self, what: &str, limit: Duration) -> Result<Cqe, String> {
        let t = Instant::now();
        loop {
            if let Some(c) = self.recvs.pop_front() {
                return Ok(c);
            }
            if self.poll(0)? == 0 && t.elapsed() > limit {
                return Err(format!("{what}: nothing received"));
            }
        }
    }

    fn drain(&mut self) -> Result<(), String> {
        while self.outstanding > 0 {
            if self.poll(wait_ms())? == 0 {
                return Err(format!("{} send completions missing", self.outstanding));
            }
        }
        Ok(())
    }
}

/// The timing modes' buffers: a ring of receives (each large enough for
/// a Send of SIZE), message slots, the Send source (pattern 'T'), the
/// Write source (pattern 'V') and the region the peer Writes into.
struct Timer<'s> {
    s: &'s TcpStream,
    cq: Cq<'s>,
    /// The receive ring, once set ([`Timer::use_rings`]); dropped (and
    /// cleared on the connection) before the registrations below.
    rq: Option<RqRing<'s, TcpStream>>,
    size: usize,
    seed: u64,
    slot: usize,
    rx: Mr<'s, TcpStream>,
    smsg: Mr<'s, TcpStream>,
    next_msg: usize,
    sdata: Mr<'s, TcpStream>,
    src: Mr<'s, TcpStream>,
    region: Mr<'s, TcpStream>,
    peer: (u64, u32),
}

impl<'s> Timer<'s> {
    fn new(s: &'s TcpStream, o: &Opts) -> Result<Self, String> {
        let size = o.size;
        let slot = size.max(MSG_LEN);
        let lw = zcddp::ACCESS_LOCAL_WRITE | o.access;
        let rw = lw | zcddp::ACCESS_REMOTE_WRITE;
        let mut t = Timer {
            s,
            cq: Cq {
                s,
                ring: None,
                recvs: VecDeque::new(),
                outstanding: 0,
            },
            rq: None,
            size,
            seed: o.seed,
            slot,
            rx: Mr::new(s, RING * slot, lw).map_err(e("reg receives"))?,
            smsg: Mr::new(s, RING * MSG_LEN, 0).map_err(e("reg send msgs"))?,
            next_msg: 0,
            sdata: Mr::new(s, size, 0).map_err(e("reg send data"))?,
            src: Mr::new(s, size, 0).map_err(e("reg write source"))?,
            region: Mr::new(s, size, rw).map_err(e("reg region"))?,
            peer: (0, 0),
        };
        gen(t.sdata.bytes_mut(), o.seed, b'T');
        gen(t.src.bytes_mut(), o.seed, b'V');
        for i in 0..RING {
            t.repost(i as u64)?;
        }
        Ok(t)
    }

    /// After start-up, unless `--syscall`: completions through a ring,
    /// receives through another (the ones posted before start-up are
    /// taken first). Which: "rings" or "syscalls" (also a module without
    /// rings, `ENOPROTOOPT`).
    fn use_rings(&mut self, o: &Opts) -> Result<&'static str, String> {
        if o.syscall {
            return Ok("syscalls");
        }
        // Room for every receive of the ring of buffers, and more.
        let (cq, rq) =
            zcddp::set_rings(self.s, zcddp::CQ_DEPTH, Some(4 * RING as u32)).map_err(e("rings"))?;
        let which = match (cq.is_some(), rq.is_some()) {
            (true, true) => "rings",
            (true, false) => "a completion ring",
            _ => "syscalls",
        };
        (self.cq.ring, self.rq) = (cq, rq);
        Ok(which)
    }

    fn repost(&mut self, i: u64) -> Result<(), String> {
        let off = i as usize * self.slot;
        match self.rq.as_mut() {
            // At most RING receives are outstanding: the ring has room.
            Some(q) => match q.post(i, &self.rx, off, self.slot as u32) {
                true => Ok(()),
                false => Err("post recv: the receive ring is full".into()),
            },
            None => {
                zcddp::post_recv(self.s, i, &self.rx, off, self.slot as u32).map_err(e("post recv"))
            }
        }
    }

    /// The received bytes of completion `c`.
    fn got(&self, c: &Cqe) -> &[u8] {
        let off = c.wr_id as usize * self.slot;
        self.rx
            .bytes()
            .get(off..off + (c.byte_len as usize).min(self.slot))
            .unwrap_or(&[])
    }

    /// Sends a message (from one of `RING` slots in turn: one in flight
    /// is not overwritten by the next).
    fn msg(&mut self, m: Msg) -> Result<(), String> {
        let off = self.next_msg * MSG_LEN;
        self.next_msg = (self.next_msg + 1) % RING;
        m.put(&mut self.smsg.bytes_mut()[off..off + MSG_LEN]);
        self.post(
            zcddp::WR_SEND,
            self.smsg.addr() + off as u64,
            MSG_LEN,
            self.smsg.stag(),
        )
    }

    /// Waits for a message of type `ty`, reposts its receive.
    fn want(&mut self, ty: u32, limit: Duration) -> Result<Msg, String> {
        let c = self.cq.recv(&format!("receive message {ty}"), limit)?;
        if c.byte_len as usize != MSG_LEN {
            return Err(format!(
                "a Send of {} bytes, message {ty} expected",
                c.byte_len
            ));
        }
        let m = Msg::get(self.got(&c));
        self.repost(c.wr_id)?;
        if m.ty != ty {
            return Err(format!("message {m:?}, type {ty} expected"));
        }
        Ok(m)
    }

    /// Exchanges `m` for the peer's message of its type, the MPA
    /// initiator's first.
    fn swap(&mut self, initiator: bool, m: Msg, limit: Duration) -> Result<Msg, String> {
        if initiator {
            self.msg(m)?;
        }
        let peer = self.want(m.ty, limit)?;
        if !initiator {
            self.msg(m)?;
        }
        Ok(peer)
    }

    /// Posts a signaled `opcode` of `len` bytes at `addr` (in `lkey`),
    /// a Write to the peer's region.
    fn post(&mut self, opcode: u32, addr: u64, len: usize, lkey: u32) -> Result<(), String> {
        let w = SendWr {
            opcode,
            flags: zcddp::SEND_SIGNALED,
            addr,
            len: len as u32,
            lkey,
            raddr: self.peer.0,
            rkey: self.peer.1,
            ..SendWr::default()
        };
        self.cq.post(&w)
    }

    fn send_data(&mut self) -> Result<(), String> {
        self.post(
            zcddp::WR_SEND,
            self.sdata.addr(),
            self.size,
            self.sdata.stag(),
        )
    }

    /// Waits for the peer's data Send; on `last`, checks its bytes
    /// (pattern 'S').
    fn recv_data(&mut self, last: bool, ok: &mut bool) -> Result<(), String> {
        let c = self.cq.recv_spin(
            "receive a data Send",
            Duration::from_millis(wait_ms().into()),
        )?;
        if c.byte_len as usize != self.size {
            return Err(format!(
                "a Send of {} bytes, {} expected",
                c.byte_len, self.size
            ));
        }
        if last {
            *ok &= check(
                "the last Send from siw",
                fnv(self.got(&c)),
                pattern_hash(self.size, self.seed, b'S'),
            );
        }
        self.repost(c.wr_id)
    }

    fn write(&mut self, tag: u8) -> Result<(), String> {
        self.src.bytes_mut()[self.size - 1] = tag;
        self.post(zcddp::WR_WRITE, self.src.addr(), self.size, self.src.stag())
    }

    /// Spins on memory until the region's last byte is `tag`
    /// ([`zcddp::spin_until`]), polling the completion queue once a
    /// millisecond.
    fn watch(&mut self, tag: u8) -> Result<(), String> {
        let (region, last) = (&self.region, self.size - 1);
        let cq = &mut self.cq;
        let wait = Duration::from_millis(wait_ms().into());
        if zcddp::spin_until(
            || std::hint::black_box(region.bytes())[last] == tag,
            wait,
            || cq.poll(0).map(drop),
        )? {
            Ok(())
        } else {
            Err(format!("no RDMA Write with last byte {tag}"))
        }
    }
}

fn print_lat(op: &str, size: usize, mut us: Vec<f64>) {
    let mean = us.iter().sum::<f64>() / us.len().max(1) as f64;
    let n = us.len();
    let med = median(&mut us);
    println!("zcddp-verbs: {op} {size} B: median {med:.2} us, mean {mean:.2} us, {n} iterations");
    println!("zcddp-verbs: result {op} {size} {med:.3} us");
}

fn timing(s: &TcpStream, o: &Opts, initiator: bool) -> Result<(), String> {
    let mut t = Timer::new(s, o)?;
    let size = o.size;
    let wait = Duration::from_millis(wait_ms().into());
    zcddp::start_as(s, initiator, o.flags)?;
    let rings = t.use_rings(o)?;
    let info = zcddp::info(s).map_err(e("info"))?;
    println!(
        "zcddp-verbs: connected, rev={} crc={} ird={} ord={}, {size} bytes, seed {}, {} latency iterations, {} s bandwidth, {}, completions and receives by {rings}",
        info.revision,
        info.crc as u8,
        info.ird,
        info.ord,
        o.seed,
        o.lat,
        o.bw,
        if initiator { "leading" } else { "answering" }
    );
    let modes = o.lat | if o.bw > 0.0 { BW_FLAG } else { 0 };
    let adv = Msg {
        ty: T_ADV,
        rkey: t.region.stag(),
        addr: t.region.addr(),
        len: size as u64,
        hash: modes,
    };
    let peer = t.swap(initiator, adv, wait)?;
    if peer.len != size as u64 || peer.hash != modes {
        return Err(format!(
            "the peer runs size {} modes {:x}, this side {size} {modes:x}",
            peer.len, peer.hash
        ));
    }
    t.peer = (peer.addr, peer.rkey);
    let mut ok = true;

    if o.lat > 0 {
        let mut us = Vec::with_capacity(o.lat as usize);
        for i in 0..o.lat {
            let last = i + 1 == o.lat;
            let t0 = Instant::now();
            if initiator {
                t.send_data()?;
                t.recv_data(last, &mut ok)?;
                us.push(t0.elapsed().as_secs_f64() * 1e6 / 2.0);
            } else {
                t.recv_data(last, &mut ok)?;
                t.send_data()?;
            }
        }
        if initiator {
            print_lat("send_lat", size, us);
        }
        let mut us = Vec::with_capacity(o.lat as usize);
        for i in 0..o.lat {
            let t0 = Instant::now();
            if initiator {
                t.write(tag(i))?;
                t.watch(tag(i))?;
                us.push(t0.elapsed().as_secs_f64() * 1e6 / 2.0);
            } else {
                t.watch(tag(i))?;
                t.write(tag(i))?;
            }
        }
        ok &= check(
            "siw's last latency RDMA Write into zcddp's region",
            fnv(t.region.bytes()),
            tagged_hash(size, o.seed, b'W', tag(o.lat - 1)),
        );
        if initiator {
            print_lat("write_lat", size, us);
        }
        t.cq.drain()?;
    }

    if o.bw > 0.0 {
        gen(t.src.bytes_mut(), o.seed, b'V');
        if initiator {
            t.want(T_READY, wait)?;
            let hash = fnv(t.src.bytes());
            let t0 = Instant::now();
            let mut n = 0u64;
            while n == 0 || t0.elapsed().as_secs_f64() < o.bw {
                t.write(t.src.bytes()[size - 1])?;
                n += 1;
            }
            t.msg(Msg {
                ty: T_DONE_BW,
                len: n,
                hash,
                ..Msg::default()
            })?;
            t.want(T_ACK, wait)?;
            let secs = t0.elapsed().as_secs_f64();
            let mbs = (n * size as u64) as f64 / secs / 1e6;
            println!(
                "zcddp-verbs: write_bw {size} B: {n} RDMA Writes in {secs:.3} s (to siw's answer), {mbs:.3} MB/s"
            );
            println!("zcddp-verbs: result write_bw {size} {mbs:.3} MB/s");
        } else {
            t.region.bytes_mut().fill(0);
            t.msg(Msg {
                ty: T_READY,
                ..Msg::default()
            })?;
            let limit = Duration::from_secs_f64(o.bw * 10.0 + 60.0);
            let done = t.want(T_DONE_BW, limit)?;
            t.msg(Msg {
                ty: T_ACK,
                ..Msg::default()
            })?;
            println!("zcddp-verbs: {} RDMA Writes of {size} B received", done.len);
            let want = pattern_hash(size, o.seed, b'W');
            ok &= check(
                "siw's bandwidth RDMA Writes into zcddp's region",
                fnv(t.region.bytes()),
                want,
            );
            ok &= check("  their hash as siw sent it", done.hash, want);
        }
        t.cq.drain()?;
    }

    // The verdicts, the MPA initiator's first.
    let fin = Msg {
        ty: T_FIN,
        hash: u64::from(!ok),
        ..Msg::default()
    };
    let peer_fin = t.swap(initiator, fin, wait)?;
    t.cq.drain()?;
    verdict(ok, peer_fin)
}

fn main() -> std::process::ExitCode {
    zcddp::tool_main("zcddp-verbs", parse, |o| {
        if o.lat > 0 || o.bw > 0.0 {
            o.side.run(|s| timing(s, o, false), |s| timing(s, o, true))
        } else {
            o.side.run(|s| run(s, o, false), |s| run(s, o, true))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same hashes as siw_verbs.c's `pattern_hash` (computed there).
    #[test]
    fn patterns_match_siw_verbs() {
        assert_eq!(pattern_hash(4096, 1, b'Z'), 0x7c32_6866_8f36_ec67);
        assert_eq!(pattern_hash(64, 7, b'C'), 0xcb5e_3e37_f150_5c91);
    }

    #[test]
    fn tags() {
        assert_eq!((tag(0), tag(254), tag(255)), (1, 255, 1));
        assert!((0..1000).all(|i| tag(i) != 0 && tag(i) != tag(i + 1)));
        let mut b = vec![0u8; 16];
        gen(&mut b, 3, b'W');
        b[15] = 9;
        assert_eq!(tagged_hash(16, 3, b'W', 9), fnv(&b));
    }

    #[test]
    fn msg_round_trip() {
        let m = Msg {
            ty: T_ADV,
            rkey: 0x1234_5678,
            addr: 0x7fff_0000_1000,
            len: 1 << 20,
            hash: 42,
        };
        let mut b = [0u8; MSG_LEN];
        m.put(&mut b);
        assert_eq!(&b[0..4], &[0, 0, 0, 1]);
        let g = Msg::get(&b);
        assert_eq!(
            (g.ty, g.rkey, g.addr, g.len, g.hash),
            (m.ty, m.rkey, m.addr, m.len, m.hash)
        );
    }
}
