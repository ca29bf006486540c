//! zcddp-ping: rping's ping-pong over zcddp, so that unmodified `rping` on
//! a soft-iWARP device is its peer in either role (the message sequence and
//! the 16-byte buffer advertisement of rdma-core's
//! `librdmacm/examples/rping.c`):
//!
//! ```text
//! client: Send {start buf, STag, size}      server: RDMA Read of it
//!                                           server: Send (go ahead)
//! client: Send {sink buf, STag, size}       server: RDMA Write into it
//!                                           server: Send (go ahead)
//! client: checks sink == start (-V); repeat
//! ```
//!
//! Its command line is [`zcddp::cli::Ping`] (`zcddp-ping --help`):
//! `-s|-c -a ADDR [-p PORT] [-C COUNT] [-S SIZE] [-V] [-v] [--crc] [--markers]`.
//!
//! Differences: TCP is connected here and zcddp's MPA start-up is run on
//! it (the client is the initiator); `--crc` asks for CRCs, `--markers`
//! for markers. The server serves one connection.

use clap::Parser;
use std::io;
use std::net::TcpStream;
use std::process::ExitCode;
use zcddp::{Cqe, Mr, SendWr};

const WAIT_MS: u32 = 10000;
const INFO_LEN: usize = 16;

struct Opts {
    server: bool,
    addr: String,
    port: u16,
    count: u64,
    size: usize,
    validate: bool,
    verbose: bool,
    flags: u32,
}

fn parse() -> Result<Opts, String> {
    let a = zcddp::cli::Ping::parse();
    Ok(Opts {
        server: a.side.server,
        addr: a.side.addr,
        port: a.side.port,
        count: a.count,
        // At most 64 MiB (the parser's range).
        size: a.size as usize,
        validate: a.validate,
        verbose: a.verbose,
        flags: if a.crc { zcddp::F_CRC } else { 0 } | if a.markers { zcddp::F_MARKERS } else { 0 },
    })
}

fn err(what: &str, e: io::Error) -> String {
    format!("{what}: {e}")
}

/// Waits for a completion of `opcode`; others, successful, are skipped.
fn wait(s: &TcpStream, opcode: u32) -> Result<Cqe, String> {
    zcddp::wait_for(s, opcode, WAIT_MS).map_err(|e| e.to_string())
}

fn info(buf: &mut [u8], addr: u64, stag: u32, size: u32) {
    buf[0..8].copy_from_slice(&addr.to_be_bytes());
    buf[8..12].copy_from_slice(&stag.to_be_bytes());
    buf[12..16].copy_from_slice(&size.to_be_bytes());
}

fn send(s: &TcpStream, mr: &Mr<'_, TcpStream>) -> Result<(), String> {
    zcddp::post_send_msg(s, mr, INFO_LEN as u32).map_err(|e| err("post send", e))
}

fn client(s: &TcpStream, o: &Opts) -> Result<u64, String> {
    let rw = zcddp::ACCESS_LOCAL_WRITE | zcddp::ACCESS_REMOTE_READ | zcddp::ACCESS_REMOTE_WRITE;
    let recv = Mr::new(s, INFO_LEN, zcddp::ACCESS_LOCAL_WRITE).map_err(|e| err("reg recv", e))?;
    let mut sendb = Mr::new(s, INFO_LEN, 0).map_err(|e| err("reg send", e))?;
    let rdma = Mr::new(s, o.size, rw).map_err(|e| err("reg rdma", e))?;
    let mut start = Mr::new(s, o.size, rw).map_err(|e| err("reg start", e))?;
    zcddp::post_recv(s, 1, &recv, 0, INFO_LEN as u32).map_err(|e| err("post recv", e))?;
    zcddp::start_as(s, true, o.flags)?;
    let mut first = 65u8;
    let mut ping = 0u64;
    while o.count == 0 || ping < o.count {
        // rping's pattern: the prefix, then letters from `first` on.
        let b = start.bytes_mut();
        let prefix = format!("rdma-ping-{ping}: ");
        let n = prefix.len().min(b.len());
        b[..n].copy_from_slice(&prefix.as_bytes()[..n]);
        let mut c = first;
        for x in b[n..].iter_mut() {
            *x = c;
            c = if c >= 122 { 65 } else { c + 1 };
        }
        first = if first >= 122 { 65 } else { first + 1 };
        if let Some(l) = b.last_mut() {
            *l = 0;
        }
        // Advertise the source, then the sink; each answered by a Send.
        for (addr, stag) in [(start.addr(), start.stag()), (rdma.addr(), rdma.stag())] {
            info(sendb.bytes_mut(), addr, stag, o.size as u32);
            send(s, &sendb)?;
            let c = wait(s, zcddp::WC_RECV)?;
            if c.byte_len as usize != INFO_LEN {
                return Err(format!("received bogus data, size {}", c.byte_len));
            }
            zcddp::post_recv(s, 1, &recv, 0, INFO_LEN as u32).map_err(|e| err("post recv", e))?;
        }
        if o.validate && start.bytes() != rdma.bytes() {
            return Err(format!("data mismatch in ping {ping}"));
        }
        if o.verbose {
            println!("ping data: {}", cstr(rdma.bytes()));
        }
        ping += 1;
    }
    Ok(ping)
}

fn cstr(b: &[u8]) -> String {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..n]).into_owned()
}

fn server(s: &TcpStream, o: &Opts) -> Result<u64, String> {
    let rw = zcddp::ACCESS_LOCAL_WRITE | zcddp::ACCESS_REMOTE_READ | zcddp::ACCESS_REMOTE_WRITE;
    let recv = Mr::new(s, INFO_LEN, zcddp::ACCESS_LOCAL_WRITE).map_err(|e| err("reg recv", e))?;
    let sendb = Mr::new(s, INFO_LEN, 0).map_err(|e| err("reg send", e))?;
    let rdma = Mr::new(s, o.size, rw).map_err(|e| err("reg rdma", e))?;
    zcddp::post_recv(s, 1, &recv, 0, INFO_LEN as u32).map_err(|e| err("post recv", e))?;
    zcddp::start_as(s, false, o.flags)?;
    let mut pings = 0u64;
    loop {
        // The client's source buffer (after our last Send's completion); a
        // closed connection ends the run.
        let c = loop {
            let c = match zcddp::poll_cq(s, 1, WAIT_MS) {
                Ok(c) if c.is_empty() => return Err("no message from the client".into()),
                Ok(c) => c[0],
                Err(_) => return Ok(pings),
            };
            if c.status == zcddp::WC_FLUSH_ERR {
                return Ok(pings);
            }
            if c.status != zcddp::WC_SUCCESS {
                return Err(format!("completion failed: {c:?}"));
            }
            if c.opcode == zcddp::WC_RECV {
                break c;
            }
        };
        if c.byte_len as usize != INFO_LEN {
            return Err(format!("received bogus data, size {}", c.byte_len));
        }
        let (raddr, rkey, rlen) = peer(recv.bytes());
        zcddp::post_recv(s, 1, &recv, 0, INFO_LEN as u32).map_err(|e| err("post recv", e))?;
        let rd = SendWr {
            wr_id: 2,
            opcode: zcddp::WR_READ,
            flags: zcddp::SEND_SIGNALED,
            addr: rdma.addr(),
            len: rlen.min(o.size as u32),
            lkey: rdma.stag(),
            raddr,
            rkey,
            ..SendWr::default()
        };
        zcddp::post_send(s, &rd).map_err(|e| err("post read", e))?;
        wait(s, zcddp::WR_READ)?;
        if o.verbose {
            println!("server ping data: {}", cstr(rdma.bytes()));
        }
        send(s, &sendb)?;
        wait(s, zcddp::WC_RECV)?;
        let (raddr, rkey, _) = peer(recv.bytes());
        zcddp::post_recv(s, 1, &recv, 0, INFO_LEN as u32).map_err(|e| err("post recv", e))?;
        let len = cstr(rdma.bytes()).len() + 1;
        let wr = SendWr {
            wr_id: 3,
            opcode: zcddp::WR_WRITE,
            flags: zcddp::SEND_SIGNALED,
            addr: rdma.addr(),
            len: len.min(o.size) as u32,
            lkey: rdma.stag(),
            raddr,
            rkey,
            ..SendWr::default()
        };
        zcddp::post_send(s, &wr).map_err(|e| err("post write", e))?;
        wait(s, zcddp::WR_WRITE)?;
        send(s, &sendb)?;
        pings += 1;
    }
}

fn peer(b: &[u8]) -> (u64, u32, u32) {
    let a = u64::from_be_bytes(b[0..8].try_into().unwrap_or_default());
    let k = u32::from_be_bytes(b[8..12].try_into().unwrap_or_default());
    let l = u32::from_be_bytes(b[12..16].try_into().unwrap_or_default());
    (a, k, l)
}

fn run(o: &Opts) -> Result<u64, String> {
    zcddp::run_side(
        o.server,
        &o.addr,
        o.port,
        |s| server(s, o),
        |s| client(s, o),
    )
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("zcddp-ping: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(n) => {
            println!("{} {n} pings", if o.server { "server" } else { "client" });
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zcddp-ping: {e}");
            ExitCode::from(1)
        }
    }
}
