//! zcddp-mpa: runs zcddp's MPA start-up on one TCP connection and prints
//! the outcome, for the tests (tools/testing/zcnet/zcddp.sh).
//!
//! ```text
//! zcddp-mpa -s|-c -a ADDR [-p PORT] [--crc] [--crc-strict] [--markers]
//!           [--no-markers] [--p2p send,write,read] [--rev N] [--ird N]
//!           [--ord N] [--pd TEXT] [--timeout MS] [--hold MS] [--no-startup]
//! ```
//!
//! `-s` accepts one connection (responder), `-c` connects (initiator). It
//! prints `startup ok rev=R crc=C markers_tx=M markers_rx=M p2p=P rtr=T
//! ird=I ord=O ms=T peer_pd=TEXT` or `startup error ERRNO state=S ms=T`
//! (T: the call's milliseconds), then keeps
//! the connection open `--hold` ms. Exit status 0 on success, 1 when
//! start-up failed, 2 for a usage or socket error.

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
}

fn num<T: std::str::FromStr>(v: Option<String>, what: &str) -> Result<T, String> {
    v.and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{what}: a number"))
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        server: false,
        addr: String::new(),
        port: 7174,
        p: Params::initiator(),
        hold_ms: 0,
        startup: true,
    };
    let (mut flags, mut rtr, mut rev, mut ird, mut ord) = (0, None, 2, 1, 1);
    let (mut pd, mut timeout) = (Vec::new(), 0);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-s" => o.server = true,
            "-c" => o.server = false,
            "-a" => o.addr = args.next().ok_or("-a ADDR")?,
            "-p" => o.port = num(args.next(), "-p")?,
            "--crc" => flags |= F_CRC,
            "--crc-strict" => flags |= F_CRC_STRICT,
            "--markers" => flags |= F_MARKERS,
            "--no-markers" => flags |= F_NO_MARKERS,
            "--p2p" => {
                flags |= F_P2P;
                let mut r = 0;
                for t in args.next().ok_or("--p2p TYPES")?.split(',') {
                    r |= match t {
                        "send" => zcddp::RTR_SEND,
                        "write" => zcddp::RTR_WRITE,
                        "read" => zcddp::RTR_READ,
                        _ => return Err(format!("--p2p: unknown type {t}")),
                    };
                }
                rtr = Some(r);
            }
            "--rev" => rev = num(args.next(), "--rev")?,
            "--ird" => ird = num(args.next(), "--ird")?,
            "--ord" => ord = num(args.next(), "--ord")?,
            "--pd" => pd = args.next().ok_or("--pd TEXT")?.into_bytes(),
            "--timeout" => timeout = num(args.next(), "--timeout")?,
            "--hold" => o.hold_ms = num(args.next(), "--hold")?,
            "--no-startup" => o.startup = false,
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if o.addr.is_empty() {
        return Err("-a ADDR is required".into());
    }
    o.p = if o.server {
        Params::responder()
    } else {
        Params::initiator()
    };
    o.p.flags = flags;
    if let Some(r) = rtr {
        o.p.rtr = r;
    }
    o.p.revision = rev;
    o.p.ird = ird;
    o.p.ord = ord;
    o.p.private_data = pd;
    o.p.timeout_ms = timeout;
    Ok(o)
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
        // The peer may still be starting: retry a refused connect (5 s).
        let mut tries = 0;
        loop {
            match TcpStream::connect((o.addr.as_str(), o.port)) {
                Ok(s) => break s,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(format!("connect: {e}")),
            }
        }
    };
    zcddp::attach(&s).map_err(|e| format!("attach: {}", errno_name(&e)))?;
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
    std::thread::sleep(Duration::from_millis(o.hold_ms));
    Ok(ok)
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
