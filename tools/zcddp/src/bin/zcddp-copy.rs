//! zcddp-copy: copies a file into a peer's registered memory with RDMA
//! Writes, reads it back with RDMA Reads and checks it byte for byte; the
//! server checks what landed in its memory against the client's hash.
//!
//! Its command line is [`zcddp::cli::Copy`] (`zcddp-copy --help`):
//!
//! ```text
//! zcddp-copy -s -a ADDR [-p PORT] [-o OUT] [-v] [--crc] [--markers] [--no-ooo] [--watch] (server)
//! zcddp-copy -c -a ADDR [-p PORT] [-v] [--crc] [--markers] [--no-ooo] FILE   (client)
//! ```
//!
//! ```text
//! client: Send {length, hash}               server: registers a region of
//!                                           length bytes (remote read and
//!                                           write), Send {addr, STag, length}
//! client: RDMA Write of the file, in chunks of at most 1 MiB, into it
//! client: RDMA Read of it, chunk by chunk, into a second registration
//! client: compares; Send {length, hash}     server: hashes its region,
//!                                           Send {0 or 1: match}
//! ```
//!
//! The hash is 64-bit FNV-1a (no dependency; the byte compare on the
//! client is the real check, the hash only tells the server). The server
//! serves one connection and stays in the completion wait while the client
//! works (zcddp serves the peer's Writes and Reads from the application's
//! verb calls), as long as the connection moves bytes: it gives up (and
//! deregisters the region) only after 10 s in which TCP neither received
//! nor had acknowledged a byte (`TCP_INFO`), not after 10 s in all (a
//! bound that failed large copies through netem, whose Writes then met
//! the deregistered region's STag: a Terminate, issue 45). The client
//! bounds each 1 MiB chunk by 10 s. `-o OUT`: the server also saves what
//! it received to OUT.
//! The server's region is one the peer cannot invalidate
//! (`ACCESS_NO_REMOTE_INV`), so zcddp may place Writes into it out of order;
//! `--no-ooo` turns that placement off on this side (`ZCDDP_OOO` 0).
//!
//! `--watch` (server): a thread watches the region while the client
//! writes ([`zcddp::watch`]), looking from its end down for a 512-byte
//! block still zero below one already written, at least 8 KiB (two FPDUs)
//! apart. Placed in order, the region fills from its start, FPDU by FPDU,
//! and a block written means every block before it is written: such a
//! sighting shows bytes that came behind a hole in memory before the hole
//! was filled. Sightings whose block holds zeros in the file are not
//! counted. It prints `watch scans=N ahead=M`.
//!
//! Exit status 0: copied and verified on both sides.

use clap::Parser;
use std::io;
use std::net::TcpStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use zcddp::watch::Watch;
use zcddp::{Cqe, Mr, SendWr};

const WAIT_MS: u32 = 10000;
const MSG: usize = 16;
const CHUNK: usize = 1 << 20;
/// The largest file (the region is pinned in memory).
const MAX_LEN: u64 = 1 << 30;

struct Opts {
    server: bool,
    addr: String,
    port: u16,
    file: Option<String>,
    out: Option<String>,
    verbose: bool,
    flags: u32,
    ooo: bool,
    watch: bool,
}

fn parse() -> Result<Opts, String> {
    let a = zcddp::cli::Copy::parse();
    Ok(Opts {
        server: a.side.server,
        addr: a.side.addr,
        port: a.side.port,
        file: a.file,
        out: a.out,
        verbose: a.verbose,
        flags: if a.crc { zcddp::F_CRC } else { 0 } | if a.markers { zcddp::F_MARKERS } else { 0 },
        ooo: !a.no_ooo,
        watch: a.watch,
    })
}

/// 64-bit FNV-1a.
fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &c| {
        (h ^ u64::from(c)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn err(what: &str, e: io::Error) -> String {
    format!("{what}: {e}")
}

/// Waits for a completion of `opcode`; others, successful, are skipped.
/// A large transfer takes as long as it takes: the wait ends when the
/// connection moved no byte either way for WAIT_MS (as the server's).
fn wait(s: &TcpStream, opcode: u32) -> Result<Cqe, String> {
    let mut moved = zcddp::tcp_bytes(s).ok();
    loop {
        match zcddp::wait_for(s, opcode, WAIT_MS) {
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                let now = zcddp::tcp_bytes(s).ok();
                if now.is_none() || now == moved {
                    return Err(format!("{e}, and nothing moved"));
                }
                moved = now;
            }
            r => return r.map_err(|e| e.to_string()),
        }
    }
}

/// Sends `mr`'s first MSG bytes and waits for the peer's answer in `recv`
/// (posted again after): the answer's two words.
fn exchange(
    s: &TcpStream,
    sendb: &Mr<'_, TcpStream>,
    recv: &Mr<'_, TcpStream>,
) -> Result<(u64, u64), String> {
    send(s, sendb)?;
    let c = wait(s, zcddp::WC_RECV)?;
    if c.byte_len as usize != MSG {
        return Err(format!("received bogus message, size {}", c.byte_len));
    }
    let r = zcddp::get_words(recv.bytes());
    zcddp::post_recv(s, 1, recv, 0, MSG as u32).map_err(|e| err("post recv", e))?;
    Ok(r)
}

fn send(s: &TcpStream, mr: &Mr<'_, TcpStream>) -> Result<(), String> {
    zcddp::post_send_msg(s, mr, MSG as u32).map_err(|e| err("post send", e))
}

/// RDMA Writes (`read` false) or Reads `mr` to / from the peer's region at
/// `raddr`, chunk by chunk, each waited for.
fn rdma(
    s: &TcpStream,
    read: bool,
    mr: &Mr<'_, TcpStream>,
    len: usize,
    raddr: u64,
    rkey: u32,
) -> Result<(), String> {
    let opcode = if read {
        zcddp::WR_READ
    } else {
        zcddp::WR_WRITE
    };
    let mut off = 0;
    while off < len {
        let n = (len - off).min(CHUNK);
        let w = SendWr {
            wr_id: off as u64,
            opcode,
            flags: zcddp::SEND_SIGNALED,
            addr: mr.addr() + off as u64,
            len: n as u32,
            lkey: mr.stag(),
            raddr: raddr + off as u64,
            rkey,
            ..SendWr::default()
        };
        zcddp::post_send(s, &w)
            .map_err(|e| err(if read { "post read" } else { "post write" }, e))?;
        let c = wait(s, opcode)?;
        if c.byte_len as usize != n && read {
            return Err(format!(
                "read of {n} bytes at {off} completed {}",
                c.byte_len
            ));
        }
        off += n;
    }
    Ok(())
}

/// The client's file, read before it connects: one it cannot read or that
/// is too large fails at once (a refused connect is retried for 5 s).
fn source(o: &Opts) -> Result<Vec<u8>, String> {
    let path = o.file.as_deref().unwrap_or_default();
    let data = std::fs::read(path).map_err(|e| err(path, e))?;
    if data.len() as u64 > MAX_LEN {
        return Err(format!("{path}: larger than {MAX_LEN} bytes"));
    }
    Ok(data)
}

fn client(s: &TcpStream, o: &Opts, data: &[u8]) -> Result<(), String> {
    let len = data.len();
    let hash = fnv1a(data);
    let recv = Mr::new(s, MSG, zcddp::ACCESS_LOCAL_WRITE).map_err(|e| err("reg recv", e))?;
    let mut sendb = Mr::new(s, MSG, 0).map_err(|e| err("reg send", e))?;
    let mut src = Mr::new(s, len, 0).map_err(|e| err("reg source", e))?;
    src.bytes_mut()[..len].copy_from_slice(data);
    let back = Mr::new(s, len, zcddp::ACCESS_LOCAL_WRITE).map_err(|e| err("reg sink", e))?;
    zcddp::post_recv(s, 1, &recv, 0, MSG as u32).map_err(|e| err("post recv", e))?;
    zcddp::set_ooo(s, o.ooo).map_err(|e| err("ZCDDP_OOO", e))?;
    zcddp::start_as(s, true, o.flags)?;
    zcddp::put_words(sendb.bytes_mut(), len as u64, hash);
    let (raddr, w) = exchange(s, &sendb, &recv)?;
    let (rkey, rlen) = ((w >> 32) as u32, w as u32 as usize);
    if rlen < len {
        return Err(format!("the server registered {rlen} bytes, not {len}"));
    }
    let t = Instant::now();
    rdma(s, false, &src, len, raddr, rkey)?;
    let tw = t.elapsed();
    let t = Instant::now();
    rdma(s, true, &back, len, raddr, rkey)?;
    let tr = t.elapsed();
    let bad = data
        .iter()
        .zip(back.bytes())
        .position(|(a, b)| a != b)
        .map(|i| format!("byte {i} read back differs"));
    zcddp::put_words(sendb.bytes_mut(), len as u64, hash);
    let (ok, _) = exchange(s, &sendb, &recv)?;
    if let Some(b) = bad {
        return Err(b);
    }
    if ok != 1 {
        return Err("the server's region differs from the file (hash)".into());
    }
    let rate = |d: std::time::Duration| len as f64 / d.as_secs_f64().max(1e-9) / 1e6;
    println!(
        "client copied {len} bytes hash={hash:016x} write_s={:.4} ({:.1} MB/s) read_s={:.4} ({:.1} MB/s) verified",
        tw.as_secs_f64(),
        rate(tw),
        tr.as_secs_f64(),
        rate(tr)
    );
    Ok(())
}

fn server(s: &TcpStream, o: &Opts) -> Result<(), String> {
    let recv = Mr::new(s, MSG, zcddp::ACCESS_LOCAL_WRITE).map_err(|e| err("reg recv", e))?;
    let mut sendb = Mr::new(s, MSG, 0).map_err(|e| err("reg send", e))?;
    zcddp::post_recv(s, 1, &recv, 0, MSG as u32).map_err(|e| err("post recv", e))?;
    zcddp::set_ooo(s, o.ooo).map_err(|e| err("ZCDDP_OOO", e))?;
    zcddp::start_as(s, false, o.flags)?;
    let c = wait(s, zcddp::WC_RECV)?;
    if c.byte_len as usize != MSG {
        return Err(format!("received bogus message, size {}", c.byte_len));
    }
    let (len, hash) = zcddp::get_words(recv.bytes());
    if len > MAX_LEN {
        return Err(format!(
            "the client asks for {len} bytes, more than {MAX_LEN}"
        ));
    }
    zcddp::post_recv(s, 1, &recv, 0, MSG as u32).map_err(|e| err("post recv", e))?;
    let rw = zcddp::ACCESS_LOCAL_WRITE
        | zcddp::ACCESS_REMOTE_READ
        | zcddp::ACCESS_REMOTE_WRITE
        | zcddp::ACCESS_NO_REMOTE_INV;
    let region = Mr::new(s, len as usize, rw).map_err(|e| err("reg region", e))?;
    if o.verbose {
        println!("server region {len} bytes stag={:#x}", region.stag());
    }
    zcddp::put_words(
        sendb.bytes_mut(),
        region.addr(),
        (u64::from(region.stag()) << 32) | len,
    );
    send(s, &sendb)?;
    // The client's Writes and Reads are served while this waits.
    let stop = AtomicBool::new(false);
    let watch = o.watch.then(|| Watch::new(&region));
    let (c, seen) = std::thread::scope(|sc| {
        let w = watch.as_ref().map(|w| sc.spawn(|| w.run(&stop)));
        // The transfer takes as long as it takes: the wait ends when the
        // connection moved no byte either way for WAIT_MS (the region is
        // deregistered on return, and the client's Writes still coming
        // would meet an invalid STag).
        let mut moved = zcddp::tcp_bytes(s).ok();
        let c = loop {
            let c = match zcddp::poll_cq(s, 1, WAIT_MS) {
                Ok(c) => c,
                Err(e) => break Err(err("poll", e)),
            };
            let Some(c) = c.first() else {
                let now = zcddp::tcp_bytes(s).ok();
                if now.is_some() && now != moved {
                    moved = now;
                    continue;
                }
                break Err(format!(
                    "no word from the client, nothing moved in {WAIT_MS} ms"
                ));
            };
            if c.status != zcddp::WC_SUCCESS {
                break Err(format!("completion failed: {c:?}"));
            }
            if c.opcode == zcddp::WC_RECV {
                break Ok(*c);
            }
        };
        stop.store(true, Ordering::Relaxed);
        (c, w.and_then(|w| w.join().ok()))
    });
    let c = c?;
    if c.byte_len as usize != MSG {
        return Err(format!("received bogus message, size {}", c.byte_len));
    }
    let (len2, hash2) = zcddp::get_words(recv.bytes());
    let got = fnv1a(&region.bytes()[..len as usize]);
    if let (Some(seen), Some(w)) = (seen, &watch) {
        let ahead = seen.ahead(w, region.bytes());
        println!("watch scans={} ahead={ahead}", seen.scans);
    }
    let ok = len2 == len && hash2 == hash && got == hash;
    zcddp::put_words(sendb.bytes_mut(), u64::from(ok), got);
    send(s, &sendb)?;
    wait(s, zcddp::WR_SEND)?;
    if !ok {
        return Err(format!(
            "region hash {got:016x}, the client's file {hash2:016x}"
        ));
    }
    if let Some(out) = &o.out {
        std::fs::write(out, &region.bytes()[..len as usize]).map_err(|e| err(out, e))?;
    }
    println!("server received {len} bytes hash={got:016x} verified");
    Ok(())
}

fn main() -> ExitCode {
    zcddp::tool_main("zcddp-copy", parse, |o| {
        let data = if o.server { Vec::new() } else { source(o)? };
        zcddp::run_side(
            o.server,
            &o.addr,
            o.port,
            |s| server(s, o),
            |s| client(s, o, &data),
        )
    })
}
