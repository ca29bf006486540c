//! zcbench: measures a TCP path between two hosts (network namespaces in the
//! test guest) the way the papers do: latency as half the ping-pong round trip
//! by message size, stream bandwidth by write size, and CPU time per byte on
//! both ends.
//!
//! Its command line is [`zcbench::cli::Cli`] (`zcbench --help`, `man
//! zcbench`):
//!
//! ```text
//! zcbench serve [--listen ADDR]                      (on the receiver)
//! zcbench tcp --connect ADDR [--json FILE] [-J] [--label L] [--zcsock region|ordinary]
//!             [--lat-sizes LIST|none] [--bw-sizes LIST] [--iters N] [--seconds S]
//!             [--check-every N]
//! zcbench ddp-serve [--listen ADDR] [--markers]       (zcddp, port 5302)
//! zcbench ddp --connect ADDR [--json FILE] [-J] [--label L] [--crc] [--lat-ops OPS]
//!             [--lat-sizes LIST|none] [--bw-sizes LIST|none] [--iters N] [--seconds S]
//! ```
//!
//! `--json FILE` writes the results as JSON ([`report`]), `-J` prints them
//! on stdout instead of the tables.
//!
//! `ddp` and `ddp-serve` measure zcddp (Send, RDMA Write and RDMA Read
//! latency, RDMA Write bandwidth): see `ddp.rs`.
//!
//! Modes (the client announces its mode to the server on each connection):
//! - `plain`: TCP as it is, heap buffers.
//! - `zcsock region`: both ends switch zcsock on (`TCP_ULP`); the sender
//!   writes from a page-aligned `zcsock::Region`, the receiver reads into one
//!   (whole pages at page-aligned positions), so pages go by reference and
//!   are remapped. Headers from the client are padded to a page so that the
//!   stream stays page-aligned.
//! - `zcsock ordinary`: zcsock on, but heap buffers on both ends.
//!
//! Stream data is deterministic: page `p` of the sender's buffer starts and
//! ends with a tag of `p`, and write `i` starts at page `i % 2`, so a page
//! the receiver did not get (say, a stale page of its ring) has the wrong
//! tag. The receiver checks the two tag words of every `--check-every`-th
//! page (default every page; the sampled pages move by one each write) and
//! reports pages with a wrong tag, which fail the run.

mod ddp;
mod report;

use clap::{CommandFactory, Parser};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use zcbench::cli::{self, Cli, Cmd, ZcsockMode, DEFAULT_PORT, MAX_SIZE};
use zcddp::median;

const OP_PINGPONG: u8 = 1;
const OP_STREAM: u8 = 2;
const OP_QUIT: u8 = 3;
/// The client's mode: header size field the mode, arg the check interval;
/// answered with a header whose arg is 0 or the server's errno.
const OP_MODE: u8 = 4;
const HDR: usize = 16;
const PAGE: usize = 4096;
/// Seed of the stream data.
const SEED: u64 = 0x7a63_6265_6e63_6801;

/// How a connection moves its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Plain,
    /// zcsock, sending from and receiving into regions.
    Region,
    /// zcsock on, heap buffers.
    Ordinary,
}

impl Mode {
    fn code(self) -> usize {
        match self {
            Mode::Plain => 0,
            Mode::Region => 1,
            Mode::Ordinary => 2,
        }
    }

    fn from_code(c: usize) -> Option<Mode> {
        [Mode::Plain, Mode::Region, Mode::Ordinary]
            .into_iter()
            .find(|m| m.code() == c)
    }

    fn from_cli(m: Option<ZcsockMode>) -> Mode {
        match m {
            None => Mode::Plain,
            Some(ZcsockMode::Region) => Mode::Region,
            Some(ZcsockMode::Ordinary) => Mode::Ordinary,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Plain => "off",
            Mode::Region => "region",
            Mode::Ordinary => "ordinary",
        }
    }

    fn zcsock(self) -> bool {
        self != Mode::Plain
    }

    /// The length of a header from the client: a page with zcsock, so that
    /// the data after it starts page-aligned in the stream.
    fn header_len(self) -> usize {
        if self.zcsock() {
            PAGE
        } else {
            HDR
        }
    }
}

/// Fields of the calling thread's /proc/thread-self/stat, counted from 1
/// as in proc(5); 0 where unreadable.
fn thread_stat<const N: usize>(fields: [usize; N]) -> [u64; N] {
    let s = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // Fields after the command name (which may contain spaces) start at ')',
    // with field 3.
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    fields.map(|i| {
        f.get(i.wrapping_sub(3))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    })
}

/// CPU time (user + system: fields 14 and 15) of the calling thread, in
/// clock ticks.
fn thread_cpu_ticks() -> u64 {
    thread_stat([14, 15]).iter().sum()
}

/// Minor page faults of the calling thread (field 10).
fn thread_minor_faults() -> u64 {
    thread_stat([10])[0]
}

/// Busy time of the whole machine (every CPU: all but idle and iowait), in
/// clock ticks, from the first line of /proc/stat.
fn system_busy_ticks() -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/stat") else {
        return 0;
    };
    let v: Vec<u64> = s
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let total: u64 = v.iter().take(8).sum();
    total.saturating_sub(v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0))
}

fn ticks_per_second() -> u64 {
    // USER_HZ is 100 on every architecture Linux supports today.
    100
}

/// zcsock's counters of this thread's network namespace, by name; `None`
/// when zcsock is not loaded or a name is missing.
fn zcsock_counters(names: &[&str]) -> Option<Vec<u64>> {
    let c = zcsock::proc_stat(zcsock::PROC_STAT).ok()?;
    names.iter().map(|n| zcsock::proc_value(&c, n)).collect()
}

/// The counters' growth since `before` (each `u64::MAX` when unknown).
fn counters_delta(names: &[&str], before: &Option<Vec<u64>>) -> Vec<u64> {
    match (before, zcsock_counters(names)) {
        (Some(b), Some(a)) => a.iter().zip(b).map(|(a, b)| a.wrapping_sub(*b)).collect(),
        _ => vec![u64::MAX; names.len()],
    }
}

const TX_COUNTERS: [&str; 3] = [
    "ZcsockTxPagesByRef",
    "ZcsockTxBytesCopied",
    "ZcsockTxCowFaults",
];
const RX_COUNTERS: [&str; 2] = ["ZcsockRxPagesRemapped", "ZcsockRxBytesCopied"];

fn read_header(s: &mut TcpStream, len: usize) -> io::Result<(u8, usize, u64)> {
    let mut h = [0u8; PAGE];
    s.read_exact(&mut h[..len])?;
    let size = u32::from_be_bytes([h[4], h[5], h[6], h[7]]) as usize;
    let arg = u64::from_be_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]);
    Ok((h[0], size, arg))
}

/// A header of `len` bytes (16, or a page: the rest is zeros).
fn write_header(s: &mut TcpStream, len: usize, op: u8, size: usize, arg: u64) -> io::Result<()> {
    let mut h = [0u8; PAGE];
    h[0] = op;
    h[4..8].copy_from_slice(&(size as u32).to_be_bytes());
    h[8..16].copy_from_slice(&arg.to_be_bytes());
    s.write_all(&h[..len])
}

/// What the receiver of a stream reports back.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct RxReport {
    cpu_ticks: u64,
    pages_checked: u64,
    pages_bad: u64,
    /// zcsock's receive counters over the stream (`u64::MAX`: unknown).
    rx_pages_remapped: u64,
    rx_bytes_copied: u64,
    /// The receiving thread's minor page faults over the stream.
    minor_faults: u64,
}

impl RxReport {
    const LEN: usize = HDR + 40;

    fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0] = OP_STREAM;
        b[8..16].copy_from_slice(&self.cpu_ticks.to_be_bytes());
        let rest = [
            self.pages_checked,
            self.pages_bad,
            self.rx_pages_remapped,
            self.rx_bytes_copied,
            self.minor_faults,
        ];
        for (i, v) in rest.iter().enumerate() {
            b[HDR + 8 * i..HDR + 8 * i + 8].copy_from_slice(&v.to_be_bytes());
        }
        b
    }

    fn decode(b: &[u8; Self::LEN]) -> io::Result<RxReport> {
        if b[0] != OP_STREAM {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("wanted the receiver's stream report, got op {}", b[0]),
            ));
        }
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_be_bytes(w)
        };
        Ok(RxReport {
            cpu_ticks: word(8),
            pages_checked: word(HDR),
            pages_bad: word(HDR + 8),
            rx_pages_remapped: word(HDR + 16),
            rx_bytes_copied: word(HDR + 24),
            minor_faults: word(HDR + 32),
        })
    }
}

/// The tag at both ends of page `p` of the sender's buffer.
fn page_tag(p: usize) -> u64 {
    SEED ^ (p as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Fills a send buffer: seeded bytes (xorshift64), each page starting and
/// ending with its tag.
fn fill_pattern(buf: &mut [u8]) {
    let mut x = SEED;
    for (p, page) in buf.chunks_mut(PAGE).enumerate() {
        for w in page.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            w.copy_from_slice(&x.to_ne_bytes()[..w.len()]);
        }
        if page.len() == PAGE {
            let tag = page_tag(p).to_ne_bytes();
            page[..8].copy_from_slice(&tag);
            page[PAGE - 8..].copy_from_slice(&tag);
        }
    }
}

/// Where write `i` of `size` bytes starts in the send buffer (whose length
/// is `size + PAGE`): alternately page 0 and page 1.
fn write_offset(i: u64, size: usize) -> usize {
    if size % PAGE == 0 {
        (i % 2) as usize * PAGE
    } else {
        0
    }
}

/// Checks every `every`-th page of `chunk` (write number `index` of the
/// stream, received whole), starting at page `index % every` so that `every`
/// successive writes check every page position once: (pages checked, pages
/// with a wrong tag).
fn check_chunk(chunk: &[u8], index: u64, every: usize) -> (u64, u64) {
    let (mut checked, mut bad) = (0, 0);
    let first = (index % 2) as usize;
    let every = every.max(1);
    for k in ((index % every as u64) as usize..chunk.len() / PAGE).step_by(every) {
        let page = &chunk[k * PAGE..(k + 1) * PAGE];
        let tag = page_tag(first + k).to_ne_bytes();
        checked += 1;
        if page[..8] != tag || page[PAGE - 8..] != tag {
            bad += 1;
        }
    }
    (checked, bad)
}

/// A buffer of either kind: heap memory or a zcsock region.
enum Buf {
    Heap(Vec<u8>),
    Region(zcsock::Region),
}

impl Buf {
    /// At least `len` bytes for `mode` (a region is rounded up to pages).
    fn new(mode: Mode, len: usize) -> io::Result<Buf> {
        if mode == Mode::Region {
            let r = zcsock::Region::new(len.div_ceil(PAGE) * PAGE).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("a zcsock region of {len} bytes on {}: {e}", zcsock::DEVICE),
                )
            })?;
            Ok(Buf::Region(r))
        } else {
            Ok(Buf::Heap(vec![0u8; len]))
        }
    }

    fn is(&self, mode: Mode, len: usize) -> bool {
        matches!(self, Buf::Region(_)) == (mode == Mode::Region) && self.len() >= len
    }
}

impl std::ops::Deref for Buf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Buf::Heap(v) => v,
            Buf::Region(r) => r,
        }
    }
}

impl std::ops::DerefMut for Buf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Buf::Heap(v) => v,
            Buf::Region(r) => r,
        }
    }
}

/// Receives `total` bytes of a stream written `size` bytes at a time into
/// `ring` (`size` bytes, reused), checking each write as it completes.
fn receive_stream(
    s: &mut TcpStream,
    ring: &mut [u8],
    total: u64,
    every: usize,
) -> io::Result<(u64, u64)> {
    let size = ring.len();
    let check = every > 0 && size % PAGE == 0;
    let (mut off, mut index, mut left) = (0usize, 0u64, total);
    let (mut checked, mut bad) = (0, 0);
    while left > 0 {
        let want = ((size - off) as u64).min(left) as usize;
        let n = s.read(&mut ring[off..off + want])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        off += n;
        left -= n as u64;
        if off == size {
            if check {
                let (c, b) = check_chunk(ring, index, every);
                checked += c;
                bad += b;
            }
            index += 1;
            off = 0;
        }
    }
    Ok((checked, bad))
}

/// One client connection, until it quits or goes away.
fn serve_conn(s: &mut TcpStream) -> io::Result<bool> {
    s.set_nodelay(true)?;
    let mut mode = Mode::Plain;
    let mut every = 1usize;
    let mut buf: Option<Buf> = None;
    while let Ok((op, size, arg)) = read_header(s, mode.header_len()) {
        if size > MAX_SIZE {
            break;
        }
        match op {
            OP_MODE => {
                let Some(m) = Mode::from_code(size) else {
                    write_header(s, HDR, OP_MODE, 0, 22)?; // EINVAL
                    break;
                };
                if m.zcsock() {
                    // The hello itself is a page long.
                    let mut pad = [0u8; PAGE - HDR];
                    s.read_exact(&mut pad)?;
                }
                let refused = if m.zcsock() {
                    zcsock::enable(&*s).err()
                } else {
                    None
                };
                let errno = refused.map_or(0, |e| e.raw_os_error().unwrap_or(5) as u64);
                write_header(s, HDR, OP_MODE, 0, errno)?;
                if errno != 0 {
                    break;
                }
                mode = m;
                every = arg as usize;
            }
            OP_PINGPONG => {
                let b = buf_for(&mut buf, Mode::Plain, size)?;
                for _ in 0..arg {
                    s.read_exact(&mut b[..size])?;
                    s.write_all(&b[..size])?;
                }
            }
            OP_STREAM => {
                // Receive `arg` bytes in reads of `size` at most, then report
                // what it cost.
                let b = buf_for(&mut buf, mode, size.max(1))?;
                let zc0 = mode
                    .zcsock()
                    .then(|| zcsock_counters(&RX_COUNTERS))
                    .flatten();
                let (t0, f0) = (thread_cpu_ticks(), thread_minor_faults());
                let (pages_checked, pages_bad) =
                    receive_stream(s, &mut b[..size.max(1)], arg, every)?;
                let cpu_ticks = thread_cpu_ticks() - t0;
                let minor_faults = thread_minor_faults() - f0;
                let zc = if mode.zcsock() {
                    counters_delta(&RX_COUNTERS, &zc0)
                } else {
                    vec![u64::MAX; 2]
                };
                let r = RxReport {
                    cpu_ticks,
                    pages_checked,
                    pages_bad,
                    rx_pages_remapped: zc[0],
                    rx_bytes_copied: zc[1],
                    minor_faults,
                };
                s.write_all(&r.encode())?;
            }
            OP_QUIT => return Ok(true),
            _ => break,
        }
    }
    Ok(false)
}

/// The connection's buffer, made anew when it is of the wrong kind or too small.
fn buf_for(buf: &mut Option<Buf>, mode: Mode, len: usize) -> io::Result<&mut Buf> {
    if !buf.as_ref().is_some_and(|b| b.is(mode, len)) {
        *buf = None; // unmap the old one first
        let want = if mode == Mode::Region { len } else { MAX_SIZE };
        *buf = Some(Buf::new(mode, want.max(len))?);
    }
    buf.as_mut().ok_or_else(|| io::Error::other("no buffer"))
}

fn serve(listen: &str) -> io::Result<()> {
    let l = TcpListener::bind(listen)?;
    eprintln!("zcbench: serving on {listen}");
    for c in l.incoming() {
        if serve_conn(&mut c?)? {
            return Ok(());
        }
    }
    Ok(())
}

struct LatRow {
    size: usize,
    iters: u64,
    median_us: f64,
    mean_us: f64,
}

struct BwRow {
    size: usize,
    bytes: u64,
    secs: f64,
    mbytes_per_s: f64,
    rx_cpu_ns_per_byte: f64,
    tx_cpu_ns_per_byte: f64,
    /// Every CPU's busy time per byte: both ends when they share a machine.
    sys_cpu_ns_per_byte: f64,
    rx: RxReport,
    /// zcsock's send counters over the run (`u64::MAX`: unknown).
    tx_pages_by_ref: u64,
    tx_bytes_copied: u64,
    tx_cow_faults: u64,
}

fn latency(s: &mut TcpStream, mode: Mode, size: usize, iters: u64) -> io::Result<LatRow> {
    let mut buf = vec![0x5au8; size];
    write_header(s, mode.header_len(), OP_PINGPONG, size, iters)?;
    let mut half_rtts = Vec::with_capacity(iters as usize);
    for _ in 0..iters {
        let t = Instant::now();
        s.write_all(&buf)?;
        s.read_exact(&mut buf)?;
        half_rtts.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
    }
    let mean = half_rtts.iter().sum::<f64>() / half_rtts.len().max(1) as f64;
    Ok(LatRow {
        size,
        iters,
        median_us: median(&mut half_rtts),
        mean_us: mean,
    })
}

/// Streams `writes` writes of `size` bytes from `buf`; the receiver's report.
fn stream(
    s: &mut TcpStream,
    mode: Mode,
    buf: &[u8],
    size: usize,
    writes: u64,
) -> io::Result<RxReport> {
    write_header(s, mode.header_len(), OP_STREAM, size, writes * size as u64)?;
    for i in 0..writes {
        let o = write_offset(i, size);
        s.write_all(&buf[o..o + size])?;
    }
    let mut r = [0u8; RxReport::LEN];
    s.read_exact(&mut r)?;
    RxReport::decode(&r)
}

fn bandwidth(s: &mut TcpStream, mode: Mode, size: usize, seconds: f64) -> io::Result<BwRow> {
    let mut buf = Buf::new(mode, size + PAGE)?;
    fill_pattern(&mut buf);
    // Calibrate: a short probe measures the rate to size the real run; the
    // byte count goes first so the receiver knows when to stop.
    let probe = Instant::now();
    stream(s, mode, &buf, size, 64)?;
    let rate = (size as u64 * 64) as f64 / probe.elapsed().as_secs_f64().max(1e-6);
    let writes = ((rate * seconds) as u64 / size as u64).max(16);
    let total = writes * size as u64;
    let zc0 = mode
        .zcsock()
        .then(|| zcsock_counters(&TX_COUNTERS))
        .flatten();
    let tx0 = thread_cpu_ticks();
    let sys0 = system_busy_ticks();
    let t = Instant::now();
    let rx = stream(s, mode, &buf, size, writes)?;
    let secs = t.elapsed().as_secs_f64();
    let tx_ticks = thread_cpu_ticks() - tx0;
    let sys_ticks = system_busy_ticks().saturating_sub(sys0);
    let zc = if mode.zcsock() {
        counters_delta(&TX_COUNTERS, &zc0)
    } else {
        vec![u64::MAX; 3]
    };
    if rx.pages_bad > 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{size}-byte writes: the receiver found {} of {} checked pages with wrong bytes",
                rx.pages_bad, rx.pages_checked
            ),
        ));
    }
    let ns_per_tick = 1e9 / ticks_per_second() as f64;
    Ok(BwRow {
        size,
        bytes: total,
        secs,
        mbytes_per_s: total as f64 / secs / 1e6,
        rx_cpu_ns_per_byte: rx.cpu_ticks as f64 * ns_per_tick / total as f64,
        tx_cpu_ns_per_byte: tx_ticks as f64 * ns_per_tick / total as f64,
        sys_cpu_ns_per_byte: sys_ticks as f64 * ns_per_tick / total as f64,
        rx,
        tx_pages_by_ref: zc[0],
        tx_bytes_copied: zc[1],
        tx_cow_faults: zc[2],
    })
}

fn connect(addr: &str) -> io::Result<TcpStream> {
    // The server may still be starting: retry for a bounded time.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match TcpStream::connect(addr) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Tells the server the mode (zcsock on this end first); its refusal is an error.
fn hello(s: &mut TcpStream, mode: Mode, every: usize) -> io::Result<()> {
    if mode.zcsock() {
        zcsock::enable(&*s).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("setsockopt(TCP_ULP, \"zcsock\") (is zcsock.ko loaded?): {e}"),
            )
        })?;
    }
    write_header(s, mode.header_len(), OP_MODE, mode.code(), every as u64)?;
    let (_, _, errno) = read_header(s, HDR)?;
    if errno != 0 {
        let e = io::Error::from_raw_os_error(errno as i32);
        return Err(io::Error::new(
            e.kind(),
            format!("the server could not switch zcsock on: {e}"),
        ));
    }
    Ok(())
}

fn env_or(k: &str, d: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| d.to_string())
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

struct Opts {
    connect: String,
    json: Option<String>,
    /// `-J`: the JSON on stdout, no tables.
    json_stdout: bool,
    label: Option<String>,
    mode: Mode,
    check_every: usize,
    lat_sizes: Vec<usize>,
    /// zcddp's latency operations: send, write, read, wsend.
    lat_ops: Vec<String>,
    bw_sizes: Vec<usize>,
    iters: u64,
    seconds: f64,
}

impl Opts {
    fn label(&self) -> String {
        match (&self.label, self.mode) {
            (Some(l), _) => l.clone(),
            (None, Mode::Plain) => "plain".into(),
            (None, m) => format!("zcsock-{}", m.name()),
        }
    }
}

/// A counter for the table and JSON: `null`/`-` when unknown.
fn counter(v: u64) -> Option<u64> {
    (v != u64::MAX).then_some(v)
}

fn tcp(o: &Opts) -> io::Result<()> {
    let mut s = connect(&o.connect)?;
    s.set_nodelay(true)?;
    hello(&mut s, o.mode, o.check_every)?;
    let mut lat = Vec::new();
    for &size in &o.lat_sizes {
        lat.push(latency(&mut s, o.mode, size, o.iters)?);
    }
    let mut bw = Vec::new();
    for &size in &o.bw_sizes {
        bw.push(bandwidth(&mut s, o.mode, size, o.seconds)?);
    }
    write_header(&mut s, o.mode.header_len(), OP_QUIT, 0, 0)?;
    s.shutdown(Shutdown::Both).ok();

    let label = o.label();
    let machine = machine();
    if !o.json_stdout {
        print_tcp(o, &label, &machine, &lat, &bw);
    }
    let zc = |r: &BwRow| {
        o.mode.zcsock().then(|| report::ZcsockCounters {
            tx_pages_by_ref: counter(r.tx_pages_by_ref),
            tx_bytes_copied: counter(r.tx_bytes_copied),
            tx_cow_faults: counter(r.tx_cow_faults),
            rx_pages_remapped: counter(r.rx.rx_pages_remapped),
            rx_bytes_copied: counter(r.rx.rx_bytes_copied),
        })
    };
    let doc = report::Tcp {
        head: report::Head {
            tool: "zcbench",
            test: "tcp",
            label,
        },
        zcsock: o.mode.name(),
        check_every: o.check_every,
        machine,
        iters: o.iters,
        latency: lat
            .iter()
            .map(|r| report::TcpLat {
                bytes: r.size,
                iters: r.iters,
                median_us: report::round(r.median_us, 3),
                mean_us: report::round(r.mean_us, 3),
            })
            .collect(),
        bandwidth: bw
            .iter()
            .map(|r| report::TcpBw {
                write: r.size,
                bytes: r.bytes,
                seconds: report::round(r.secs, 4),
                mbytes_per_s: report::round(r.mbytes_per_s, 3),
                rx_cpu_ns_per_byte: report::round(r.rx_cpu_ns_per_byte, 4),
                tx_cpu_ns_per_byte: report::round(r.tx_cpu_ns_per_byte, 4),
                sys_cpu_ns_per_byte: report::round(r.sys_cpu_ns_per_byte, 4),
                pages_checked: r.rx.pages_checked,
                pages_bad: r.rx.pages_bad,
                rx_minor_faults: r.rx.minor_faults,
                zcsock: zc(r),
            })
            .collect(),
    };
    report::emit(&doc, o.json.as_deref(), o.json_stdout)
}

/// The machine and kernel of the run.
fn machine() -> report::Machine {
    report::Machine {
        kernel: kernel_release(),
        flavour: env_or("ZCNET_FLAVOUR", "default"),
        accel: env_or("ZCNET_ACCEL", "unknown"),
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
    }
}

/// `zcbench tcp`'s tables.
fn print_tcp(o: &Opts, label: &str, m: &report::Machine, lat: &[LatRow], bw: &[BwRow]) {
    println!(
        "zcbench tcp [{label}]  kernel {} ({})  accel {}  cpus {}  zcsock {}",
        m.kernel,
        m.flavour,
        m.accel,
        m.cpus,
        o.mode.name()
    );
    if !lat.is_empty() {
        println!("latency (half round trip, {} ping-pongs per size)", o.iters);
        println!("{:>10} {:>12} {:>12}", "bytes", "median_us", "mean_us");
        for r in lat {
            println!("{:>10} {:>12.2} {:>12.2}", r.size, r.median_us, r.mean_us);
        }
    }
    println!("bandwidth (stream, about {} s per size)", o.seconds);
    println!(
        "{:>10} {:>12} {:>14} {:>14} {:>15} {:>12} {:>10}",
        "write", "MB/s", "rx_cpu_ns/B", "tx_cpu_ns/B", "all_cpus_ns/B", "pages_ok", "rx_faults"
    );
    for r in bw {
        println!(
            "{:>10} {:>12.1} {:>14.3} {:>14.3} {:>15.3} {:>12} {:>10}",
            r.size,
            r.mbytes_per_s,
            r.rx_cpu_ns_per_byte,
            r.tx_cpu_ns_per_byte,
            r.sys_cpu_ns_per_byte,
            r.rx.pages_checked - r.rx.pages_bad,
            r.rx.minor_faults
        );
    }
    if o.mode.zcsock() {
        println!("zcsock counters over each run (/proc/net/zcsock_stat, sender's and receiver's namespace)");
        println!(
            "{:>10} {:>14} {:>16} {:>10} {:>16} {:>16}",
            "write",
            "tx_pages_ref",
            "tx_bytes_copied",
            "tx_cow",
            "rx_pages_remap",
            "rx_bytes_copied"
        );
        let c = |v: u64| counter(v).map_or("-".into(), |v| v.to_string());
        for r in bw {
            println!(
                "{:>10} {:>14} {:>16} {:>10} {:>16} {:>16}",
                r.size,
                c(r.tx_pages_by_ref),
                c(r.tx_bytes_copied),
                c(r.tx_cow_faults),
                c(r.rx.rx_pages_remapped),
                c(r.rx.rx_bytes_copied)
            );
        }
    }
}

fn ddp_client(o: &Opts, crc: bool) -> io::Result<()> {
    let r = ddp::run(
        &o.connect,
        crc,
        &o.lat_sizes,
        &o.lat_ops,
        &o.bw_sizes,
        o.iters,
        o.seconds,
    )?;
    let label = o.label.clone().unwrap_or_else(|| "zcddp".into());
    let m = machine();
    if !o.json_stdout {
        print_ddp(o, crc, &label, &m, &r);
    }
    let doc = report::Ddp {
        head: report::Head {
            tool: "zcbench",
            test: "ddp",
            label,
        },
        crc,
        machine: m,
        cq_ring: r.rings.cq,
        rq_ring: r.rings.rq,
        iters: o.iters,
        latency: r
            .lat
            .iter()
            .map(|l| report::DdpLat {
                op: l.op,
                bytes: l.size,
                iters: l.iters,
                median_us: report::round(l.median_us, 3),
                mean_us: report::round(l.mean_us, 3),
            })
            .collect(),
        bandwidth: r
            .bw
            .iter()
            .map(|b| report::DdpBw {
                op: "write",
                write: b.size,
                bytes: b.bytes,
                seconds: report::round(b.secs, 4),
                mbytes_per_s: report::round(b.mbytes_per_s, 3),
                tx_cpu_ns_per_byte: report::round(b.tx_cpu_ns_per_byte, 4),
                sys_cpu_ns_per_byte: report::round(b.sys_cpu_ns_per_byte, 4),
            })
            .collect(),
    };
    report::emit(&doc, o.json.as_deref(), o.json_stdout)
}

/// `zcbench ddp`'s tables.
fn print_ddp(o: &Opts, crc: bool, label: &str, m: &report::Machine, r: &ddp::Report) {
    println!(
        "zcbench ddp [{label}]  kernel {} ({})  accel {}  cpus {}  crc {}  cq {}  rq {}",
        m.kernel,
        m.flavour,
        m.accel,
        m.cpus,
        if crc { "on" } else { "off" },
        if r.rings.cq { "ring" } else { "syscall" },
        if r.rings.rq { "ring" } else { "syscall" }
    );
    if !r.lat.is_empty() {
        println!(
            "latency ({} per size: send, write and wsend half the round trip, read the whole Read)",
            o.iters
        );
        println!(
            "{:>6} {:>10} {:>12} {:>12}",
            "op", "bytes", "median_us", "mean_us"
        );
        for l in &r.lat {
            println!(
                "{:>6} {:>10} {:>12.2} {:>12.2}",
                l.op, l.size, l.median_us, l.mean_us
            );
        }
    }
    if !r.bw.is_empty() {
        println!("RDMA Write bandwidth (about {} s per size)", o.seconds);
        println!(
            "{:>10} {:>12} {:>14} {:>15}",
            "write", "MB/s", "tx_cpu_ns/B", "all_cpus_ns/B"
        );
        for b in &r.bw {
            println!(
                "{:>10} {:>12.1} {:>14.3} {:>15.3}",
                b.size, b.mbytes_per_s, b.tx_cpu_ns_per_byte, b.sys_cpu_ns_per_byte
            );
        }
    }
}

/// Why a run ended early: a bad command line (exit status 2) or a failed
/// measurement (1).
#[derive(Debug)]
enum Failure {
    Usage(String),
    Run(String),
}

/// The client's options from its report options.
fn opts(r: &cli::Report, default_port: u16) -> Opts {
    let connect = if r.connect.contains(':') {
        r.connect.clone()
    } else {
        format!("{}:{default_port}", r.connect)
    };
    Opts {
        connect,
        json: r.json.clone(),
        json_stdout: r.json_stdout,
        label: r.label.clone(),
        mode: Mode::Plain,
        check_every: 1,
        lat_sizes: Vec::new(),
        lat_ops: Vec::new(),
        bw_sizes: Vec::new(),
        iters: r.iters,
        seconds: r.seconds,
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.cmd {
        Cmd::Serve { listen } => serve(&listen).map_err(|e| Failure::Run(format!("serve: {e}"))),
        Cmd::DdpServe { listen, markers } => {
            ddp::serve(&listen, markers).map_err(|e| Failure::Run(format!("ddp-serve: {e}")))
        }
        Cmd::Ddp(d) => {
            let mut o = opts(&d.report, cli::DDP_PORT);
            o.lat_sizes = d.lat_sizes.0;
            o.lat_ops = d.lat_ops.0;
            o.bw_sizes = d.bw_sizes.0;
            if let Some(s) = o
                .lat_sizes
                .iter()
                .chain(&o.bw_sizes)
                .find(|&&s| s > ddp::MAX)
            {
                return Err(Failure::Usage(format!(
                    "ddp sizes go up to {} bytes, not {s}",
                    ddp::MAX
                )));
            }
            ddp_client(&o, d.crc).map_err(|e| Failure::Run(format!("ddp: {e}")))
        }
        Cmd::Tcp(t) => {
            let mut o = opts(&t.report, DEFAULT_PORT);
            o.mode = Mode::from_cli(t.zcsock);
            o.check_every = t.check_every;
            o.lat_sizes = t.lat_sizes.0;
            o.bw_sizes = t.bw_sizes.0;
            if o.mode == Mode::Region {
                if let Some(s) = o.bw_sizes.iter().find(|&&s| s % PAGE != 0) {
                    return Err(Failure::Usage(format!(
                        "--zcsock region needs write sizes of whole pages ({PAGE} bytes), not {s}"
                    )));
                }
            }
            tcp(&o).map_err(|e| Failure::Run(format!("tcp: {e}")))
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(e)) => Cli::command()
            .error(clap::error::ErrorKind::ValueValidation, e)
            .exit(),
        Err(Failure::Run(e)) => {
            eprintln!("zcbench: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn modes() {
        for m in [Mode::Plain, Mode::Region, Mode::Ordinary] {
            assert_eq!(Mode::from_code(m.code()), Some(m));
        }
        assert_eq!(Mode::from_code(7), None);
        assert_eq!(Mode::from_cli(Some(ZcsockMode::Region)), Mode::Region);
        assert_eq!(Mode::from_cli(None), Mode::Plain);
        assert_eq!(Mode::Plain.header_len(), HDR);
        assert_eq!(Mode::Ordinary.header_len(), PAGE);
    }

    #[test]
    fn report_round_trip() {
        let r = RxReport {
            cpu_ticks: 7,
            pages_checked: 256,
            pages_bad: 1,
            rx_pages_remapped: u64::MAX,
            rx_bytes_copied: 4096,
            minor_faults: 3,
        };
        assert_eq!(RxReport::decode(&r.encode()).unwrap(), r);
        let mut b = r.encode();
        b[0] = OP_MODE;
        assert!(RxReport::decode(&b).is_err());
    }

    #[test]
    fn pattern_checks_catch_stale_and_shifted_pages() {
        let size = 8 * PAGE;
        let mut tx = vec![0u8; size + PAGE];
        fill_pattern(&mut tx);
        let mut ring = vec![0u8; size];
        for (i, sampled) in [3, 3, 2, 3].into_iter().enumerate() {
            let i = i as u64;
            let o = write_offset(i, size);
            ring.copy_from_slice(&tx[o..o + size]);
            assert_eq!(check_chunk(&ring, i, 1), (8, 0));
            // Pages 0, 3, 6; then 1, 4, 7; then 2, 5; then 0, 3, 6 again.
            assert_eq!(check_chunk(&ring, i, 3), (sampled, 0));
        }
        // The ring still holds write 3: as write 4 (a receiver that got
        // nothing new) every page is wrong.
        assert_eq!(check_chunk(&ring, 4, 1), (8, 8));
        // One page of a write stale, one page shifted by a byte.
        let o = write_offset(4, size);
        ring.copy_from_slice(&tx[o..o + size]);
        ring[2 * PAGE..3 * PAGE].copy_from_slice(&tx[PAGE + 2 * PAGE..PAGE + 3 * PAGE]);
        ring.copy_within(5 * PAGE + 1..6 * PAGE, 5 * PAGE);
        assert_eq!(check_chunk(&ring, 4, 1), (8, 2));
        // Sampled, every second page: write 4 checks pages 0, 2, 4 and 6,
        // the stale one among them.
        assert_eq!(check_chunk(&ring, 4, 2), (4, 1));
        assert_eq!(write_offset(3, 1000), 0);
    }

    /// A server on a free loopback port, in a thread.
    fn server() -> (String, std::thread::JoinHandle<io::Result<()>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        drop(l);
        let a2 = addr.clone();
        (addr, std::thread::spawn(move || serve(&a2)))
    }

    #[test]
    fn loopback_round_trip() {
        let (addr, srv) = server();
        let o = Opts {
            connect: addr,
            json: None,
            json_stdout: false,
            label: Some("test".into()),
            mode: Mode::Plain,
            check_every: 1,
            lat_sizes: vec![4, 4096],
            lat_ops: vec![],
            bw_sizes: vec![65536, 5000],
            iters: 10,
            seconds: 0.05,
        };
        tcp(&o).unwrap();
        srv.join().unwrap().unwrap();
    }

    #[test]
    fn zcsock_modes_without_the_module_fail_clearly() {
        let (addr, srv) = server();
        let mut o = Opts {
            connect: addr,
            json: None,
            json_stdout: false,
            label: None,
            mode: Mode::Ordinary,
            check_every: 1,
            lat_sizes: vec![],
            lat_ops: vec![],
            bw_sizes: vec![65536],
            iters: 1,
            seconds: 0.05,
        };
        assert_eq!(o.label(), "zcsock-ordinary");
        match tcp(&o) {
            // A machine with zcsock loaded: it runs.
            Ok(()) => {}
            Err(e) => assert!(e.to_string().contains("zcsock"), "{e}"),
        }
        // Whatever happened, end the server.
        o.mode = Mode::Plain;
        o.bw_sizes = vec![];
        tcp(&o).unwrap();
        srv.join().unwrap().unwrap();
    }

    #[test]
    fn ddp_cli() {
        let args = |v: &[&str]| {
            let mut a = vec!["zcbench"];
            a.extend_from_slice(v);
            Cli::try_parse_from(a)
        };
        assert!(
            args(&["ddp", "--lat-sizes", "4"]).is_err(),
            "needs --connect"
        );
        let c = args(&["ddp", "--connect", "127.0.0.1", "--bw-sizes", "2M"]).unwrap();
        match run(c) {
            Err(Failure::Usage(e)) => assert!(e.contains("up to 1048576"), "{e}"),
            r => panic!("{r:?}"),
        }
        let c = args(&[
            "tcp",
            "--connect",
            "x",
            "--zcsock",
            "region",
            "--bw-sizes",
            "5000",
        ]);
        match run(c.unwrap()) {
            Err(Failure::Usage(e)) => assert!(e.contains("whole pages"), "{e}"),
            r => panic!("{r:?}"),
        }
        let o = opts(
            &cli::Report {
                connect: "10.0.0.2".into(),
                json: None,
                json_stdout: true,
                label: None,
                iters: 1,
                seconds: 1.0,
            },
            cli::DDP_PORT,
        );
        assert_eq!(o.connect, "10.0.0.2:5302");
    }

    #[test]
    fn ddp_without_the_module_fails_clearly() {
        // A TCP peer that is no zcddp server: attach fails (no module), or
        // start-up does (the peer never answers MPA).
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let t = std::thread::spawn(move || l.accept().map(|(s, _)| s));
        let r = ddp::run(&addr, false, &[4], &["write".into()], &[], 1, 0.01);
        let e = r.err().expect("no zcddp server there");
        let e = e.to_string();
        assert!(e.contains("attach") || e.contains("start-up"), "{e}");
        drop(t.join());
    }
}
