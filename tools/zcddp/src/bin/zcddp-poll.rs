//! zcddp-poll: zcddp's progress without the application, and its
//! readiness for poll(2).
//!
//! Its command line is [`zcddp::cli::Poll`] (`zcddp-poll --help`):
//!
//! ```text
//! zcddp-poll -s -a ADDR [-p PORT] [--idle-ms N]      (server)
//! zcddp-poll -c -a ADDR [-p PORT] [--hold-ms N] [--max-read-ms N] (client)
//! ```
//!
//! ```text
//! server: registers a region (remote read and write), Sends {addr, STag,
//!         length}, takes that Send's completion, then makes no zcddp call:
//!         sleeps --idle-ms (3000)
//! client: 300 ms later, RDMA Read of the whole region (must complete within
//!         --max-read-ms, 2000: served while the server sleeps), checks
//!         it; RDMA Write of a page into it; waits --hold-ms (4000); Sends
//!         {read time in us}
//! server: after its sleep, poll(POLLIN, 0) must say not readable (the
//!         peer's Read Request and Write were processed, no completion is
//!         pending); then poll(POLLIN) must say readable when the client's
//!         Send arrives (within 20 s), and a completion poll without
//!         waiting must return its receive; the Written page must be there
//! ```
//!
//! Exit status 0 when every check holds on that side.

use clap::Parser;
use std::io;
use std::net::TcpStream;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use zcddp::{Mr, SendWr};

const WAIT_MS: u32 = 10000;
const MSG: usize = 16;
const REGION: usize = 16384;
/// Where in the region the client Writes, and how much.
const W_OFF: usize = 8192;
const W_LEN: usize = 4096;
const W_BYTE: u8 = 0x5a;
/// How long the server polls for the client's Send.
const READABLE_MS: i32 = 20000;

struct Opts {
    side: zcddp::Side,
    idle_ms: u64,
    hold_ms: u64,
    max_read_ms: u128,
}

fn parse() -> Result<Opts, String> {
    let a = zcddp::cli::Poll::parse();
    Ok(Opts {
        side: a.side.side(),
        idle_ms: a.idle_ms,
        hold_ms: a.hold_ms,
        max_read_ms: a.max_read_ms,
    })
}

fn err(what: &str, e: io::Error) -> String {
    format!("{what}: {e}")
}

/// The byte at `i` of the server's region.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

fn send(s: &TcpStream, mr: &Mr<'_, TcpStream>) -> Result<(), String> {
    zcddp::post_send_msg(s, mr, MSG as u32).map_err(|e| err("post send", e))?;
    zcddp::wait_for(s, zcddp::WR_SEND, WAIT_MS).map_err(|e| e.to_string())?;
    Ok(())
}

fn server(s: &TcpStream, o: &Opts) -> Result<(), String> {
    let recv = Mr::new(s, MSG, zcddp::ACCESS_LOCAL_WRITE).map_err(|e| err("reg recv", e))?;
    let mut sendb = Mr::new(s, MSG, 0).map_err(|e| err("reg send", e))?;
    let rw = zcddp::ACCESS_LOCAL_WRITE | zcddp::ACCESS_REMOTE_READ | zcddp::ACCESS_REMOTE_WRITE;
    let mut region = Mr::new(s, REGION, rw).map_err(|e| err("reg region", e))?;
    for (i, b) in region.bytes_mut().iter_mut().enumerate() {
        *b = pattern(i);
    }
    zcddp::post_recv(s, 1, &recv, 0, MSG as u32).map_err(|e| err("post recv", e))?;
    zcddp::start_as(s, false, 0)?;
    zcddp::put_words(
        sendb.bytes_mut(),
        region.addr(),
        (u64::from(region.stag()) << 32) | REGION as u64,
    );
    send(s, &sendb)?;
    // No zcddp call from here until the socket is readable: the client's
    // Read and Write are processed by the kernel on its own.
    std::thread::sleep(Duration::from_millis(o.idle_ms));
    if zcddp::readable(s, 0).map_err(|e| err("poll", e))? {
        return Err("readable with no completion pending".into());
    }
    let t = Instant::now();
    if !zcddp::readable(s, READABLE_MS).map_err(|e| err("poll", e))? {
        return Err(format!("not readable in {READABLE_MS} ms"));
    }
    let waited = t.elapsed();
    let c = zcddp::poll_cq(s, 4, 0).map_err(|e| err("poll cq", e))?;
    let Some(c) = c.first() else {
        return Err("readable, but no completion".into());
    };
    if c.opcode != zcddp::WC_RECV || c.status != zcddp::WC_SUCCESS || c.byte_len != MSG as u32 {
        return Err(format!("unexpected completion {c:?}"));
    }
    // Nothing more: not readable once the queue is empty.
    if zcddp::readable(s, 0).map_err(|e| err("poll", e))? {
        return Err("still readable after the completion queue was emptied".into());
    }
    let (read_us, _) = zcddp::get_words(recv.bytes());
    let b = region.bytes();
    let bad = (0..REGION).find(|&i| {
        let want = if (W_OFF..W_OFF + W_LEN).contains(&i) {
            W_BYTE
        } else {
            pattern(i)
        };
        b[i] != want
    });
    if let Some(i) = bad {
        return Err(format!("region byte {i} is not what the client wrote"));
    }
    println!(
        "server readable_after_ms={} client_read_us={read_us} verified",
        waited.as_millis()
    );
    Ok(())
}

fn client(s: &TcpStream, o: &Opts) -> Result<(), String> {
    let recv = Mr::new(s, MSG, zcddp::ACCESS_LOCAL_WRITE).map_err(|e| err("reg recv", e))?;
    let mut sendb = Mr::new(s, MSG, 0).map_err(|e| err("reg send", e))?;
    let sink = Mr::new(s, REGION, zcddp::ACCESS_LOCAL_WRITE).map_err(|e| err("reg sink", e))?;
    let mut src = Mr::new(s, W_LEN, 0).map_err(|e| err("reg source", e))?;
    src.bytes_mut().fill(W_BYTE);
    zcddp::post_recv(s, 1, &recv, 0, MSG as u32).map_err(|e| err("post recv", e))?;
    zcddp::start_as(s, true, 0)?;
    zcddp::wait_for(s, zcddp::WC_RECV, WAIT_MS).map_err(|e| e.to_string())?;
    let (raddr, w) = zcddp::get_words(recv.bytes());
    let (rkey, rlen) = ((w >> 32) as u32, w as u32 as usize);
    if rlen != REGION {
        return Err(format!("the server registered {rlen} bytes, not {REGION}"));
    }
    // The server is past its last call by now.
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    let rd = SendWr {
        wr_id: 7,
        opcode: zcddp::WR_READ,
        flags: zcddp::SEND_SIGNALED,
        addr: sink.addr(),
        len: REGION as u32,
        lkey: sink.stag(),
        raddr,
        rkey,
        ..SendWr::default()
    };
    zcddp::post_send(s, &rd).map_err(|e| err("post read", e))?;
    let c = zcddp::wait_for(s, zcddp::WR_READ, WAIT_MS).map_err(|e| e.to_string())?;
    let read = t.elapsed();
    if c.byte_len as usize != REGION {
        return Err(format!("read completed {} bytes", c.byte_len));
    }
    if let Some(i) = (0..REGION).find(|&i| sink.bytes()[i] != pattern(i)) {
        return Err(format!("byte {i} read differs"));
    }
    if read.as_millis() > o.max_read_ms {
        return Err(format!(
            "the read took {} ms, more than {} ms: not served while the server slept",
            read.as_millis(),
            o.max_read_ms
        ));
    }
    let wr = SendWr {
        wr_id: 8,
        opcode: zcddp::WR_WRITE,
        flags: zcddp::SEND_SIGNALED,
        addr: src.addr(),
        len: W_LEN as u32,
        lkey: src.stag(),
        raddr: raddr + W_OFF as u64,
        rkey,
        ..SendWr::default()
    };
    zcddp::post_send(s, &wr).map_err(|e| err("post write", e))?;
    zcddp::wait_for(s, zcddp::WR_WRITE, WAIT_MS).map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(o.hold_ms));
    zcddp::put_words(sendb.bytes_mut(), read.as_micros() as u64, 0);
    send(s, &sendb)?;
    println!("client read_us={} verified", read.as_micros());
    // Stay connected until the server looked at everything.
    let _ = zcddp::poll_cq(s, 1, 5000);
    Ok(())
}

fn main() -> ExitCode {
    zcddp::tool_main("zcddp-poll", parse, |o| {
        o.side.run(|s| server(s, o), |s| client(s, o))
    })
}
