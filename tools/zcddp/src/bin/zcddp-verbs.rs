//! zcddp-verbs: the zcddp side of `siw_verbs` (tools/testing/zcnet/siw_verbs.c),
//! a small rdma-core program on a soft-iWARP device: Send, RDMA Write and
//! RDMA Read both ways, every byte seeded and checked by hash on both sides.
//!
//! ```text
//! zcddp-verbs -s|-c -a ADDR [-p PORT] [-S SIZE] [-r SEED] [--crc]
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
//! Exit status 0 only when every check on both sides passed.

use std::net::TcpStream;
use zcddp::{Mr, SendWr};

const WAIT_MS: u32 = 20000;
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
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        side: zcddp::Side::new(),
        size: 65536,
        seed: 1,
        flags: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if o.side.arg(&a, &mut args)? {
            continue;
        }
        match a.as_str() {
            "-S" => o.size = zcddp::num_arg(args.next(), "-S SIZE")?,
            "-r" => o.seed = zcddp::num_arg(args.next(), "-r SEED")?,
            "--crc" => o.flags |= zcddp::F_CRC,
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if o.size == 0 || o.size > 1 << 30 {
        return Err(format!("-S {}: 1 B to 1 GiB", o.size));
    }
    Ok(o)
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

/// Prints and returns whether `got` is `want`.
fn check(what: &str, got: u64, want: u64) -> bool {
    let r = if got == want { "ok" } else { "MISMATCH" };
    println!("zcddp-verbs: {what} {r} (hash {got:016x}, want {want:016x})");
    got == want
}

fn run(s: &TcpStream, o: &Opts, initiator: bool) -> Result<(), String> {
    let size = o.size;
    let sendsz = size.min(SEND_MAX);
    let lw = zcddp::ACCESS_LOCAL_WRITE;
    let rw = lw | zcddp::ACCESS_REMOTE_READ | zcddp::ACCESS_REMOTE_WRITE;
    let rdata = Mr::new(s, sendsz, lw).map_err(e("reg recv data"))?;
    let rmsg = Mr::new(s, 2 * MSG_LEN, lw).map_err(e("reg recv msgs"))?;
    let mut smsg = Mr::new(s, MSG_LEN, 0).map_err(e("reg send msg"))?;
    let mut zr = Mr::new(s, size, rw).map_err(e("reg region"))?;
    let zl = Mr::new(s, size, lw).map_err(e("reg read target"))?;
    let mut zv = Mr::new(s, size, 0).map_err(e("reg write source"))?;
    let mut sdata = Mr::new(s, sendsz, 0).map_err(e("reg send data"))?;
    gen(sdata.bytes_mut(), o.seed, b'T');
    gen(zr.bytes_mut(), o.seed, b'Z');
    gen(zv.bytes_mut(), o.seed, b'V');
    // The peer's Send, DONE and FIN, posted before start-up.
    zcddp::post_recv(s, 1, &rdata, 0, sendsz as u32).map_err(e("post recv"))?;
    zcddp::post_recv(s, 2, &rmsg, 0, MSG_LEN as u32).map_err(e("post recv"))?;
    zcddp::post_recv(s, 3, &rmsg, MSG_LEN, MSG_LEN as u32).map_err(e("post recv"))?;
    zcddp::start_as(s, initiator, o.flags)?;
    let info = zcddp::info(s).map_err(e("info"))?;
    println!(
        "zcddp-verbs: connected, rev={} crc={} ird={} ord={}, {size} bytes, seed {}",
        info.revision, info.crc as u8, info.ird, info.ord, o.seed
    );
    let mut ok = true;
    let recv = |what: &'static str| zcddp::wait_for(s, zcddp::WC_RECV, WAIT_MS).map_err(e(what));

    // The data Sends, the MPA initiator's first: the peer's into the
    // posted receive.
    for first in [true, false] {
        if first != initiator {
            let c = recv("receive the data Send")?;
            ok &= check(
                &format!("Send from siw ({} bytes) received", c.byte_len),
                fnv(rdata.bytes().get(..c.byte_len as usize).unwrap_or(&[])),
                pattern_hash(sendsz, o.seed, b'S'),
            );
        } else {
            zcddp::post_send_msg(s, &sdata, sendsz as u32).map_err(e("post send data"))?;
        }
    }

    // Our region, for the peer's RDMA Read and RDMA Write.
    Msg {
        ty: T_ADV,
        rkey: zr.stag(),
        addr: zr.addr(),
        len: size as u64,
        hash: fnv(zr.bytes()),
    }
    .put(smsg.bytes_mut());
    zcddp::post_send_msg(s, &smsg, MSG_LEN as u32).map_err(e("post send ADV"))?;
    recv("receive DONE")?;
    let done = Msg::get(rmsg.bytes());
    if done.ty != T_DONE_C || done.len != size as u64 {
        return Err(format!("bad DONE: {done:?}"));
    }
    ok &= check(
        "siw's RDMA Write into zcddp's region",
        fnv(zr.bytes()),
        pattern_hash(size, o.seed, b'W'),
    );
    ok &= check("  its hash as siw sent it", fnv(zr.bytes()), done.hash);

    // The reverse: RDMA Read of the peer's region, RDMA Write into it.
    let mut wr = SendWr {
        wr_id: 10,
        opcode: zcddp::WR_READ,
        flags: zcddp::SEND_SIGNALED,
        addr: zl.addr(),
        len: size as u32,
        lkey: zl.stag(),
        raddr: done.addr,
        rkey: done.rkey,
        ..SendWr::default()
    };
    zcddp::post_send(s, &wr).map_err(e("post RDMA Read"))?;
    zcddp::wait_for(s, zcddp::WR_READ, WAIT_MS).map_err(e("RDMA Read"))?;
    ok &= check(
        "RDMA Read of siw's region",
        fnv(zl.bytes()),
        pattern_hash(size, o.seed, b'C'),
    );
    wr.wr_id = 11;
    wr.opcode = zcddp::WR_WRITE;
    wr.addr = zv.addr();
    wr.lkey = zv.stag();
    zcddp::post_send(s, &wr).map_err(e("post RDMA Write"))?;
    zcddp::wait_for(s, zcddp::WR_WRITE, WAIT_MS).map_err(e("RDMA Write"))?;
    Msg {
        ty: T_DONE_Z,
        hash: fnv(zv.bytes()),
        ..Msg::default()
    }
    .put(smsg.bytes_mut());
    zcddp::post_send_msg(s, &smsg, MSG_LEN as u32).map_err(e("post send DONE"))?;

    recv("receive FIN")?;
    let fin = Msg::get(rmsg.bytes().get(MSG_LEN..).unwrap_or(&[0; MSG_LEN]));
    if fin.ty != T_FIN {
        return Err(format!("bad FIN: {fin:?}"));
    }
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

fn main() -> std::process::ExitCode {
    zcddp::tool_main("zcddp-verbs", parse, |o| {
        o.side.run(|s| run(s, o, false), |s| run(s, o, true))
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
