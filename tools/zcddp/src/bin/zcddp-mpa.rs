//! zcddp-mpa: runs zcddp's MPA start-up on one TCP connection and prints
//! the outcome, for the tests (tools/testing/zcnet/zcddp.sh).
//!
//! Its command line is [`zcddp::cli::Mpa`] (`zcddp-mpa --help`):
//! `-s|-c -a ADDR [-p PORT] [--crc] [--crc-strict] [--markers]
//! [--no-markers] [--p2p send,write,read] [--rev N] [--ird N] [--ord N]
//! [--pd TEXT] [--timeout MS] [--hold MS] [--no-startup] [--serve MS lwrn]`.
//!
//! `--serve MS ACCESS` then registers a 4 KiB pattern with ACCESS (letters
//! l, w, r: local write, remote write, remote read; n: the peer cannot
//! invalidate it, so it takes out-of-order placement) between two
//! unregistered guard pages, posts a 64-byte receive, prints `mr stag=
//! addr= len= dead= hash0= guard0= deadmem0=` (dead: a deregistered STag,
//! whose 4 KiB stay allocated), the completions for MS ms, and `mr hash=
//! guard= deadmem= recv=` (the hashes of the region, of its guards and of
//! the deregistered memory, and the received text), for the security
//! tests.
//!
//! `-s` accepts one connection (responder), `-c` connects (initiator). It
//! prints `startup ok rev=R crc=C markers_tx=M markers_rx=M p2p=P rtr=T
//! ird=I ord=O ms=T peer_pd=TEXT` or `startup error ERRNO state=S ms=T`
//! (T: the call's milliseconds), then keeps
//! the connection open `--hold` ms. Exit status 0 on success, 1 when
//! start-up failed, 2 for a usage or socket error.

use clap::Parser;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::Duration;
use zcddp::{Params, F_CRC, F_CRC_STRICT, F_MARKERS, F_NO_MARKERS, F_P2P};

struct Opts {
    server: bool,
    addr: String,
    port: u16,
    p: Params,
    hold_ms: u64,
    startup: bool,
    /// `--serve MS ACCESS`: after start-up, a registration the peer may use.
    serve: Option<(u64, u32)>,
}

fn parse() -> Result<Opts, String> {
    let a = zcddp::cli::Mpa::parse();
    let mut p = if a.side.server {
        Params::responder()
    } else {
        Params::initiator()
    };
    p.flags = [
        (a.crc, F_CRC),
        (a.crc_strict, F_CRC_STRICT),
        (a.markers, F_MARKERS),
        (a.no_markers, F_NO_MARKERS),
        (a.p2p.is_some(), F_P2P),
    ]
    .iter()
    .filter(|f| f.0)
    .fold(0, |f, x| f | x.1);
    if let Some(r) = a.p2p {
        p.rtr = r;
    }
    p.revision = a.rev;
    p.ird = a.ird;
    p.ord = a.ord;
    p.private_data = a.pd.clone().into_bytes();
    p.timeout_ms = a.timeout;
    Ok(Opts {
        server: a.side.server,
        addr: a.side.addr.clone(),
        port: a.side.port,
        p,
        hold_ms: a.hold,
        startup: !a.no_startup,
        serve: a.serve()?,
    })
}

fn errno_name(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(4) => "EINTR".into(),
        Some(22) => "EINVAL".into(),
        Some(71) => "EPROTO".into(),
        Some(95) => "EOPNOTSUPP".into(),
        Some(104) => "ECONNRESET".into(),
        Some(107) => "ENOTCONN".into(),
        Some(110) => "ETIMEDOUT".into(),
        Some(111) => "ECONNREFUSED".into(),
        Some(114) => "EALREADY".into(),
        Some(n) => format!("errno{n}"),
        None => e.to_string(),
    }
}

fn run(o: &Opts) -> Result<bool, String> {
    let s = if o.server {
        let l = TcpListener::bind((o.addr.as_str(), o.port)).map_err(|e| format!("bind: {e}"))?;
        println!("listening");
        l.accept().map_err(|e| format!("accept: {e}"))?.0
    } else {
        zcddp::connect_retry(&o.addr, o.port).map_err(|e| format!("connect: {e}"))?
    };
    zcddp::attach(&s).map_err(|e| {
        let name = errno_name(&e);
        match zcddp::not_loaded(e) {
            e if e.raw_os_error().is_none() => format!("attach: {name}: {e}"),
            _ => format!("attach: {name}"),
        }
    })?;
    if !o.startup {
        std::thread::sleep(Duration::from_millis(o.hold_ms));
        return Ok(true);
    }
    let t0 = std::time::Instant::now();
    let r = zcddp::startup(&s, &o.p);
    let ms = t0.elapsed().as_millis();
    let ok = match r {
        Ok(peer) => {
            let i = zcddp::info(&s).map_err(|e| format!("info: {e}"))?;
            println!(
                "startup ok rev={} crc={} markers_tx={} markers_rx={} p2p={} rtr={} ird={} ord={} ms={ms} peer_pd={}",
                i.revision,
                u8::from(i.crc),
                u8::from(i.markers_tx),
                u8::from(i.markers_rx),
                u8::from(i.p2p),
                i.rtr,
                i.ird,
                i.ord,
                String::from_utf8_lossy(&peer)
            );
            true
        }
        Err(e) => {
            let st = zcddp::info(&s).map(|i| i.state).unwrap_or(u32::MAX);
            println!("startup error {} state={st} ms={ms}", errno_name(&e));
            false
        }
    };
    if let (true, Some((ms, access))) = (ok, o.serve) {
        serve(&s, ms, access).map_err(|e| format!("serve: {}", errno_name(&e)))?;
    }
    std::thread::sleep(Duration::from_millis(o.hold_ms));
    Ok(ok)
}

/// FNV-1a, 64 bits: enough to tell changed memory from unchanged.
fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &c| {
        (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Registers 4096 bytes with `access` (a pattern), a dead registration,
/// and a receive buffer of 64 bytes with one receive posted; prints them,
/// then the completions for `ms`, then the hash of the region and the
/// connection's state.
fn serve(s: &TcpStream, ms: u64, access: u32) -> io::Result<()> {
    // A page of guard on each side: a byte placed just outside the
    // registration shows in `guard=`.
    let mut mr = zcddp::Mr::guarded(s, 4096, 4096, access)?;
    for (i, b) in mr.bytes_mut().iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
    let (g0, g1) = mr.guards_mut();
    for (i, b) in g0.iter_mut().chain(g1.iter_mut()).enumerate() {
        *b = (i * 5 + 1) as u8;
    }
    let guards = |mr: &zcddp::Mr<'_, TcpStream>| {
        let (a, b) = mr.guards();
        fnv(a) ^ fnv(b).rotate_left(1)
    };
    // The dead registration's memory stays allocated (and hashed): a byte
    // placed into it after its deregistration shows in `deadmem=`.
    let mut dead = zcddp::Mr::new(s, 4096, access)?;
    dead.bytes_mut().fill(0xD5);
    let dead_stag = dead.stag();
    let dead_buf = dead.dereg_keep()?;
    let recv = zcddp::Mr::new(s, 64, zcddp::ACCESS_LOCAL_WRITE)?;
    zcddp::post_recv(s, 77, &recv, 0, 64)?;
    println!(
        "mr stag={} addr={} len={} dead={} hash0={:016x} guard0={:016x} deadmem0={:016x}",
        mr.stag(),
        mr.addr(),
        mr.len(),
        dead_stag,
        fnv(mr.bytes()),
        guards(&mr),
        fnv(&dead_buf)
    );
    let end = std::time::Instant::now() + Duration::from_millis(ms);
    // One wait for the rest of the time: between completions the process
    // sleeps in the kernel, no verb call moves the data path (only the
    // socket's work item does: zcddp.sh's one-hole case relies on it).
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
        let wait = left.as_millis().clamp(1, 60000) as u32;
        match zcddp::poll_cq(s, 4, wait) {
            Ok(cs) => {
                for c in cs {
                    println!(
                        "cqe wr_id={} opcode={} status={} len={} flags={}",
                        c.wr_id, c.opcode, c.status, c.byte_len, c.flags
                    );
                }
            }
            Err(e) => {
                println!("poll {}", errno_name(&e));
                break;
            }
        }
    }
    println!(
        "mr hash={:016x} guard={:016x} deadmem={:016x} recv={}",
        fnv(mr.bytes()),
        guards(&mr),
        fnv(&dead_buf),
        String::from_utf8_lossy(
            &recv.bytes()[..recv.bytes().iter().position(|&c| c == 0).unwrap_or(64)]
        )
    );
    Ok(())
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("zcddp-mpa: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            println!("error {e}");
            ExitCode::from(2)
        }
    }
}
