//! zcddp from user space: a safe wrapper of the interface of
//! `include/uapi/linux/zcddp.h` (Documentation/networking/zcddp.rst).
//!
//! - [`attach`] turns a connected TCP socket into a zcddp socket
//!   (`setsockopt(SOL_TCP, TCP_ULP, "zcddp")`);
//! - [`startup`] runs MPA start-up with [`Params`] and returns the peer's
//!   private data; [`info`] the negotiated [`Info`];
//! - [`proc_stat`] reads `/proc/net/zcddp_stat`.
//!
//! ```no_run
//! use std::net::TcpStream;
//! let s = TcpStream::connect("198.18.0.2:7174")?;
//! zcddp::attach(&s)?;
//! let peer_pd = zcddp::startup(&s, &zcddp::Params::initiator())?;
//! println!("{:?} {:?}", zcddp::info(&s)?, peer_pd);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The three libc calls are declared here, each behind one small function
//! with its `// SAFETY:` argument; [`cli`] holds the tools' command lines
//! (clap).

pub mod cli;
pub mod watch;

use std::ffi::{c_int, c_void};
use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// `SOL_TCP`, the level of `TCP_ULP`.
pub const SOL_TCP: c_int = 6;
/// `TCP_ULP`: attaches an upper-layer protocol by name.
pub const TCP_ULP: c_int = 31;
/// zcddp's own socket level (`SOL_ZCDDP`).
pub const SOL_ZCDDP: c_int = 301;
/// set: [`Params`]; runs MPA start-up.
pub const ZCDDP_STARTUP: c_int = 1;
/// get: [`Info`].
pub const ZCDDP_INFO: c_int = 2;
/// The ULP name (`ZCDDP_ULP_NAME`).
pub const ULP_NAME: &str = "zcddp";
/// The counters of the calling thread's network namespace.
pub const PROC_STAT: &str = "/proc/net/zcddp_stat";

/// `ZCDDP_INITIATOR`: sends the MPA Request.
pub const INITIATOR: u32 = 1;
/// `ZCDDP_RESPONDER`: answers it.
pub const RESPONDER: u32 = 2;
/// `ZCDDP_F_CRC`: ask for CRCs.
pub const F_CRC: u32 = 0x01;
/// `ZCDDP_F_CRC_STRICT`: refuse an outcome other than `F_CRC` asks.
pub const F_CRC_STRICT: u32 = 0x02;
/// `ZCDDP_F_MARKERS`: ask the peer for markers.
pub const F_MARKERS: u32 = 0x04;
/// `ZCDDP_F_NO_MARKERS`: refuse to send markers.
pub const F_NO_MARKERS: u32 = 0x08;
/// `ZCDDP_F_P2P`: peer-to-peer model (revision 2).
pub const F_P2P: u32 = 0x10;
/// `ZCDDP_RTR_SEND`.
pub const RTR_SEND: u8 = 1;
/// `ZCDDP_RTR_WRITE`.
pub const RTR_WRITE: u8 = 2;
/// `ZCDDP_RTR_READ`.
pub const RTR_READ: u8 = 4;
/// `ZCDDP_STATE_*`.
pub const STATE_IDLE: u32 = 0;
/// Start-up running.
pub const STATE_STARTING: u32 = 1;
/// RDMA mode.
pub const STATE_RTS: u32 = 2;
/// Failed.
pub const STATE_ERROR: u32 = 3;

/// `struct pollfd`.
#[repr(C)]
// `fd` and `events` are read by the kernel only.
#[allow(dead_code)]
struct PollFd {
    fd: c_int,
    events: i16,
    revents: i16,
}

/// `POLLIN`.
const POLLIN: i16 = 1;

extern "C" {
    fn setsockopt(fd: c_int, level: c_int, name: c_int, val: *const c_void, len: u32) -> c_int;
    fn getsockopt(fd: c_int, level: c_int, name: c_int, val: *mut c_void, len: *mut u32) -> c_int;
    fn poll(fds: *mut PollFd, nfds: std::ffi::c_ulong, timeout: c_int) -> c_int;
}

/// `poll(2)` for `POLLIN` on the socket, waiting up to `timeout_ms`: whether
/// it is readable. In RDMA mode a zcddp socket is readable while
/// completions wait to be polled (or the connection failed).
pub fn readable(sock: &impl AsRawFd, timeout_ms: i32) -> io::Result<bool> {
    let mut p = PollFd {
        fd: sock.as_raw_fd(),
        events: POLLIN,
        revents: 0,
    };
    // SAFETY: `p` is one writable `struct pollfd` for the call.
    let r = unsafe { poll(&mut p, 1, timeout_ms) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r > 0 && p.revents & POLLIN != 0)
}

fn set_opt(fd: RawFd, level: c_int, name: c_int, val: &[u8]) -> io::Result<()> {
    // SAFETY: `val` is readable for its length for the call.
    let r = unsafe { setsockopt(fd, level, name, val.as_ptr().cast(), val.len() as u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn get_opt(fd: RawFd, level: c_int, name: c_int, out: &mut [u8]) -> io::Result<usize> {
    let mut len = out.len() as u32;
    // SAFETY: `out` is writable for `len` bytes; `len` is writable.
    let r = unsafe { getsockopt(fd, level, name, out.as_mut_ptr().cast(), &mut len) };
    if r == 0 {
        Ok(len as usize)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `setsockopt(SOL_TCP, TCP_ULP, "zcddp")`: the socket (connected) is
/// zcddp's from now on.
pub fn attach(sock: &impl AsRawFd) -> io::Result<()> {
    set_opt(sock.as_raw_fd(), SOL_TCP, TCP_ULP, ULP_NAME.as_bytes())
}

/// What [`startup`] asks for (`struct zcddp_startup` without the pointers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// [`INITIATOR`] or [`RESPONDER`].
    pub role: u32,
    /// `F_*`.
    pub flags: u32,
    /// MPA revision, 1 or 2.
    pub revision: u8,
    /// `RTR_*` offered (initiator) or accepted (responder).
    pub rtr: u8,
    /// Inbound RDMA Read depth.
    pub ird: u16,
    /// Outbound RDMA Read depth.
    pub ord: u16,
    /// The whole start-up; 0 for the default (10 s).
    pub timeout_ms: u32,
    /// Our private data (at most 508 bytes).
    pub private_data: Vec<u8>,
}

impl Params {
    /// An initiator: revision 2, no CRC, IRD and ORD 1.
    pub fn initiator() -> Self {
        Self {
            role: INITIATOR,
            flags: 0,
            revision: 2,
            rtr: RTR_WRITE,
            ird: 1,
            ord: 1,
            timeout_ms: 0,
            private_data: Vec::new(),
        }
    }

    /// A responder: the same, accepting Write and Read RTRs.
    pub fn responder() -> Self {
        Self {
            role: RESPONDER,
            rtr: RTR_WRITE | RTR_READ,
            ..Self::initiator()
        }
    }
}

/// The largest private data either side may send.
pub const PRIVATE_DATA_MAX: usize = 512;

/// Runs MPA start-up on a zcddp socket: the peer's private data.
pub fn startup(sock: &impl AsRawFd, p: &Params) -> io::Result<Vec<u8>> {
    let mut peer = vec![0u8; PRIVATE_DATA_MAX];
    let mut b = [0u8; 40];
    b[0..4].copy_from_slice(&p.role.to_ne_bytes());
    b[4..8].copy_from_slice(&p.flags.to_ne_bytes());
    b[8] = p.revision;
    b[9] = p.rtr;
    let pd_len =
        u16::try_from(p.private_data.len()).map_err(|_| io::Error::from_raw_os_error(22))?;
    b[10..12].copy_from_slice(&pd_len.to_ne_bytes());
    b[12..14].copy_from_slice(&p.ird.to_ne_bytes());
    b[14..16].copy_from_slice(&p.ord.to_ne_bytes());
    b[16..20].copy_from_slice(&p.timeout_ms.to_ne_bytes());
    b[20..24].copy_from_slice(&(peer.len() as u32).to_ne_bytes());
    b[24..32].copy_from_slice(&(p.private_data.as_ptr() as u64).to_ne_bytes());
    b[32..40].copy_from_slice(&(peer.as_mut_ptr() as u64).to_ne_bytes());
    // The kernel reads `private_data` and writes `peer` during the call:
    // both live until it returns.
    set_opt(sock.as_raw_fd(), SOL_ZCDDP, ZCDDP_STARTUP, &b)?;
    let n = info(sock)?.peer_pd_len as usize;
    peer.truncate(n.min(PRIVATE_DATA_MAX));
    Ok(peer)
}

/// `struct zcddp_info`: the state and the negotiated parameters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    /// `STATE_*`.
    pub state: u32,
    /// [`INITIATOR`] / [`RESPONDER`].
    pub role: u32,
    /// MPA revision.
    pub revision: u8,
    /// CRCs in use.
    pub crc: bool,
    /// We send markers.
    pub markers_tx: bool,
    /// The peer sends markers.
    pub markers_rx: bool,
    /// Peer-to-peer model.
    pub p2p: bool,
    /// The RTR type used (`RTR_*`).
    pub rtr: u8,
    /// The peer's private data length.
    pub peer_pd_len: u16,
    /// Inbound RDMA Read depth.
    pub ird: u16,
    /// Outbound RDMA Read depth.
    pub ord: u16,
    /// The errno of a failed start-up.
    pub error: i32,
}

/// `getsockopt(SOL_ZCDDP, ZCDDP_INFO)`.
pub fn info(sock: &impl AsRawFd) -> io::Result<Info> {
    let mut b = [0u8; 24];
    let n = get_opt(sock.as_raw_fd(), SOL_ZCDDP, ZCDDP_INFO, &mut b)?;
    if n < 24 {
        return Err(io::Error::other("short zcddp_info"));
    }
    let u32_at = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
    Ok(Info {
        state: u32_at(0),
        role: u32_at(4),
        revision: b[8],
        crc: b[9] != 0,
        markers_tx: b[10] != 0,
        markers_rx: b[11] != 0,
        p2p: b[12] != 0,
        rtr: b[13],
        peer_pd_len: u16_at(14),
        ird: u16_at(16),
        ord: u16_at(18),
        error: u32_at(20) as i32,
    })
}

/// `ZCDDP_REG_MR`.
pub const ZCDDP_REG_MR: c_int = 3;
/// `ZCDDP_DEREG_MR`.
pub const ZCDDP_DEREG_MR: c_int = 4;
/// `ZCDDP_POST_RECV`.
pub const ZCDDP_POST_RECV: c_int = 5;
/// `ZCDDP_POST_SEND`.
pub const ZCDDP_POST_SEND: c_int = 6;
/// `ZCDDP_POST_RECV_SG`.
pub const ZCDDP_POST_RECV_SG: c_int = 10;
/// `ZCDDP_RECV_SGE_MAX`: scatter elements per receive.
pub const RECV_SGE_MAX: usize = 6;
/// `ZCDDP_POLL_CQ`.
pub const ZCDDP_POLL_CQ: c_int = 7;
/// `ZCDDP_ACCESS_LOCAL_WRITE`.
pub const ACCESS_LOCAL_WRITE: u32 = 1;
/// `ZCDDP_ACCESS_REMOTE_WRITE`.
pub const ACCESS_REMOTE_WRITE: u32 = 2;
/// `ZCDDP_ACCESS_REMOTE_READ`.
pub const ACCESS_REMOTE_READ: u32 = 4;
/// `ZCDDP_ACCESS_NO_REMOTE_INV`: the peer cannot invalidate the
/// registration; out-of-order placement lands only in such.
pub const ACCESS_NO_REMOTE_INV: u32 = 8;
/// `ZCDDP_OOO`: out-of-order placement on or off (`__u32`).
pub const ZCDDP_OOO: c_int = 9;

/// `setsockopt(SOL_ZCDDP, ZCDDP_OOO)`: out-of-order placement on or off.
pub fn set_ooo(sock: &impl AsRawFd, on: bool) -> io::Result<()> {
    set_opt(
        sock.as_raw_fd(),
        SOL_ZCDDP,
        ZCDDP_OOO,
        &u32::from(on).to_ne_bytes(),
    )
}
/// `ZCDDP_WR_SEND`.
pub const WR_SEND: u32 = 0;
/// `ZCDDP_WR_SEND_SE`.
pub const WR_SEND_SE: u32 = 1;
/// `ZCDDP_WR_SEND_INV`.
pub const WR_SEND_INV: u32 = 2;
/// `ZCDDP_WR_WRITE`.
pub const WR_WRITE: u32 = 3;
/// `ZCDDP_WR_READ`.
pub const WR_READ: u32 = 4;
/// `ZCDDP_WC_RECV`.
pub const WC_RECV: u32 = 5;
/// `ZCDDP_SEND_SIGNALED`.
pub const SEND_SIGNALED: u32 = 1;
/// `ZCDDP_WC_SUCCESS`.
pub const WC_SUCCESS: u32 = 0;
/// `ZCDDP_WC_FLUSH_ERR`.
pub const WC_FLUSH_ERR: u32 = 3;

/// Memory registered with a zcddp socket: a buffer it owns (so that it
/// cannot be freed while the peer may still write into it), deregistered
/// (its STag invalid) on drop, before the buffer goes.
pub struct Mr<'s, S: AsRawFd> {
    sock: &'s S,
    buf: Box<[u8]>,
    /// The registered bytes: `buf[guard..guard + len]`, guard bytes on each
    /// side ([`Mr::guarded`]).
    guard: usize,
    len: usize,
    stag: u32,
}

impl<'s, S: AsRawFd> Mr<'s, S> {
    /// Registers a zeroed buffer of `len` bytes with `access` (`ACCESS_*`).
    pub fn new(sock: &'s S, len: usize, access: u32) -> io::Result<Self> {
        Self::guarded(sock, len, 0, access)
    }

    /// Registers `len` zeroed bytes with `access` that lie between two
    /// unregistered guards of `guard` bytes each ([`Mr::guards`]): what
    /// lands outside the registration shows there.
    pub fn guarded(sock: &'s S, len: usize, guard: usize, access: u32) -> io::Result<Self> {
        let view = len.max(1);
        let mut buf = vec![0u8; view + 2 * guard].into_boxed_slice();
        let mut stag = 0u32;
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&(buf[guard..].as_mut_ptr() as u64).to_ne_bytes());
        b[8..16].copy_from_slice(&(len as u64).to_ne_bytes());
        b[16..20].copy_from_slice(&access.to_ne_bytes());
        b[24..32].copy_from_slice(&(&mut stag as *mut u32 as u64).to_ne_bytes());
        set_opt(sock.as_raw_fd(), SOL_ZCDDP, ZCDDP_REG_MR, &b)?;
        Ok(Self {
            sock,
            buf,
            guard,
            len: view,
            stag,
        })
    }

    /// The guards before and after the registration (empty without).
    pub fn guards(&self) -> (&[u8], &[u8]) {
        let (a, rest) = self.buf.split_at(self.guard);
        (a, &rest[self.len..])
    }

    /// The guards, to fill.
    pub fn guards_mut(&mut self) -> (&mut [u8], &mut [u8]) {
        let (a, rest) = self.buf.split_at_mut(self.guard);
        (a, &mut rest[self.len..])
    }

    /// The STag (lkey and rkey).
    pub fn stag(&self) -> u32 {
        self.stag
    }

    /// The buffer's address: its tagged offset for the peer.
    pub fn addr(&self) -> u64 {
        self.buf[self.guard..].as_ptr() as u64
    }

    /// The buffer's length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never empty (at least one byte is registered).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The bytes (the peer may change them while registered with remote
    /// write access: read them after the completion that says so).
    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.guard..self.guard + self.len]
    }

    /// The bytes, to fill before a post.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.guard..self.guard + self.len]
    }

    /// Deregisters: the call returns once TCP holds none of the buffer's
    /// pages (zero-copy transmit lent them), else fails (`EBUSY` after
    /// `SO_SNDTIMEO`, `EINTR`). The buffer may be reused or freed only
    /// after success or `EINVAL` (unknown STag: a closed connection took
    /// its registrations along); otherwise it is leaked, since TCP may still
    /// send from it.
    fn dereg_now(&mut self) -> io::Result<()> {
        let stag = self.stag.to_ne_bytes();
        let r = set_opt(self.sock.as_raw_fd(), SOL_ZCDDP, ZCDDP_DEREG_MR, &stag);
        if r.as_ref().is_err_and(|e| e.raw_os_error() != Some(EINVAL)) {
            Box::leak(std::mem::take(&mut self.buf));
        }
        r
    }

    /// Deregisters now and hands back the whole buffer (guards included),
    /// to look at what lands in deregistered memory.
    pub fn dereg_keep(self) -> io::Result<Box<[u8]>> {
        let mut me = std::mem::ManuallyDrop::new(self);
        let stag = me.stag.to_ne_bytes();
        set_opt(me.sock.as_raw_fd(), SOL_ZCDDP, ZCDDP_DEREG_MR, &stag)?;
        Ok(std::mem::take(&mut me.buf))
    }

    /// Deregisters now (the STag is invalid when this returns); the buffer
    /// goes after (leaked when the kernel may still hold it).
    pub fn dereg(self) -> io::Result<()> {
        // Done: `drop` must not deregister again.
        let mut me = std::mem::ManuallyDrop::new(self);
        let r = me.dereg_now();
        drop(std::mem::take(&mut me.buf));
        r
    }
}

impl<S: AsRawFd> Drop for Mr<'_, S> {
    fn drop(&mut self) {
        let _ = self.dereg_now();
    }
}

/// `EINVAL`.
const EINVAL: i32 = 22;

/// Connects to `addr:port`, retrying a refused connect for 5 s (a peer
/// that is still starting).
pub fn connect_retry(addr: &str, port: u16) -> io::Result<std::net::TcpStream> {
    let mut tries = 0;
    loop {
        match std::net::TcpStream::connect((addr, port)) {
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            r => return r,
        }
    }
}

/// The server's accepted (`server`: listening on `addr:port` for one
/// connection) or the client's connected socket, zcddp attached.
pub fn establish(server: bool, addr: &str, port: u16) -> io::Result<std::net::TcpStream> {
    let ctx = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
    let s = if server {
        let l = std::net::TcpListener::bind((addr, port)).map_err(|e| ctx("bind", e))?;
        l.accept().map_err(|e| ctx("accept", e))?.0
    } else {
        connect_retry(addr, port).map_err(|e| ctx("connect", e))?
    };
    attach(&s).map_err(|e| ctx("attach", not_loaded(e)))?;
    Ok(s)
}

/// `e` from [`attach`], with a hint when zcddp is not loaded (no such ULP:
/// `ENOENT`, and no `/proc/net/zcddp_stat`).
pub fn not_loaded(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(2) && !std::path::Path::new(PROC_STAT).exists() {
        return io::Error::new(
            e.kind(),
            format!("{e}: zcddp is not loaded ({PROC_STAT} does not exist); load it with `modprobe zcddp`"),
        );
    }
    e
}

/// Waits for a completion of `opcode` (`WR_*`, `WC_RECV`), up to
/// `timeout_ms` for each; others, successful, are skipped. A failed
/// completion or none in time is an error.
pub fn wait_for(sock: &impl AsRawFd, opcode: u32, timeout_ms: u32) -> io::Result<Cqe> {
    loop {
        let c = poll_cq(sock, 1, timeout_ms)
            .map_err(|e| io::Error::new(e.kind(), format!("poll: {e}")))?;
        let Some(c) = c.first() else {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no completion of opcode {opcode} in {timeout_ms} ms"),
            ));
        };
        if c.status != WC_SUCCESS {
            return Err(io::Error::other(format!(
                "completion of opcode {} failed: status {}",
                c.opcode, c.status
            )));
        }
        if c.opcode == opcode {
            return Ok(*c);
        }
    }
}

/// Posts a receive of `len` bytes at byte `off` of `mr`.
pub fn post_recv<S: AsRawFd>(
    sock: &S,
    wr_id: u64,
    mr: &Mr<'_, S>,
    off: usize,
    len: u32,
) -> io::Result<()> {
    let mut b = [0u8; 24];
    b[0..8].copy_from_slice(&wr_id.to_ne_bytes());
    b[8..16].copy_from_slice(&(mr.addr() + off as u64).to_ne_bytes());
    b[16..20].copy_from_slice(&len.to_ne_bytes());
    b[20..24].copy_from_slice(&mr.stag.to_ne_bytes());
    set_opt(sock.as_raw_fd(), SOL_ZCDDP, ZCDDP_POST_RECV, &b)
}

/// One scatter element of a receive (`struct zcddp_sge`): `len` bytes at
/// `addr` of the registration `lkey`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sge {
    pub addr: u64,
    pub len: u32,
    pub lkey: u32,
}

impl Sge {
    /// `len` bytes at byte `off` of `mr`.
    pub fn of<S: AsRawFd>(mr: &Mr<'_, S>, off: usize, len: u32) -> Self {
        Self {
            addr: mr.addr() + off as u64,
            len,
            lkey: mr.stag,
        }
    }
}

/// Posts one receive over the scatter list `sge` (`ZCDDP_POST_RECV_SG`;
/// the kernel refuses more than [`RECV_SGE_MAX`] elements with `EINVAL`).
pub fn post_recv_sg<S: AsRawFd>(sock: &S, wr_id: u64, sge: &[Sge]) -> io::Result<()> {
    let list: Vec<u8> = sge
        .iter()
        .flat_map(|e| {
            let mut b = [0u8; 16];
            b[0..8].copy_from_slice(&e.addr.to_ne_bytes());
            b[8..12].copy_from_slice(&e.len.to_ne_bytes());
            b[12..16].copy_from_slice(&e.lkey.to_ne_bytes());
            b
        })
        .collect();
    let n = u32::try_from(sge.len()).map_err(|_| io::Error::from_raw_os_error(22))?;
    let mut b = [0u8; 24];
    b[0..8].copy_from_slice(&wr_id.to_ne_bytes());
    b[8..16].copy_from_slice(&(list.as_ptr() as u64).to_ne_bytes());
    b[16..20].copy_from_slice(&n.to_ne_bytes());
    set_opt(sock.as_raw_fd(), SOL_ZCDDP, ZCDDP_POST_RECV_SG, &b)
}

/// A send work request (`struct zcddp_send`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SendWr {
    /// Returned in the completion.
    pub wr_id: u64,
    /// `WR_*`.
    pub opcode: u32,
    /// `SEND_SIGNALED`.
    pub flags: u32,
    /// Local address (in `lkey`'s registration).
    pub addr: u64,
    /// Bytes.
    pub len: u32,
    /// Local STag.
    pub lkey: u32,
    /// The peer's tagged offset (Write, Read).
    pub raddr: u64,
    /// The peer's STag (Write, Read).
    pub rkey: u32,
    /// Send with Invalidate: the peer's STag to invalidate.
    pub inv_stag: u32,
}

/// Posts a send work request. The local bytes must lie in a registration
/// of `sock` (the kernel checks).
pub fn post_send(sock: &impl AsRawFd, w: &SendWr) -> io::Result<()> {
    let mut b = [0u8; 48];
    b[0..8].copy_from_slice(&w.wr_id.to_ne_bytes());
    b[8..12].copy_from_slice(&w.opcode.to_ne_bytes());
    b[12..16].copy_from_slice(&w.flags.to_ne_bytes());
    b[16..24].copy_from_slice(&w.addr.to_ne_bytes());
    b[24..28].copy_from_slice(&w.len.to_ne_bytes());
    b[28..32].copy_from_slice(&w.lkey.to_ne_bytes());
    b[32..40].copy_from_slice(&w.raddr.to_ne_bytes());
    b[40..44].copy_from_slice(&w.rkey.to_ne_bytes());
    b[44..48].copy_from_slice(&w.inv_stag.to_ne_bytes());
    set_opt(sock.as_raw_fd(), SOL_ZCDDP, ZCDDP_POST_SEND, &b)
}

/// Posts a signaled Send of the first `len` bytes of `mr`.
pub fn post_send_msg<S: AsRawFd>(sock: &S, mr: &Mr<'_, S>, len: u32) -> io::Result<()> {
    post_send(
        sock,
        &SendWr {
            opcode: WR_SEND,
            flags: SEND_SIGNALED,
            addr: mr.addr(),
            len,
            lkey: mr.stag(),
            ..SendWr::default()
        },
    )
}

/// A completion (`struct zcddp_cqe`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cqe {
    /// The work request's id.
    pub wr_id: u64,
    /// `WR_*` or `WC_RECV`.
    pub opcode: u32,
    /// `WC_*`.
    pub status: u32,
    /// Bytes.
    pub byte_len: u32,
    /// `ZCDDP_WC_SOLICITED` (1), `ZCDDP_WC_INVALIDATED` (2).
    pub flags: u32,
    /// The STag a Send with Invalidate invalidated.
    pub inv_stag: u32,
}

/// `TCP_INFO` (level [`SOL_TCP`]).
const TCP_INFO: c_int = 11;

/// The bytes the connection has moved so far: the peer acknowledged
/// (`tcpi_bytes_acked`) plus received from it (`tcpi_bytes_received`), from
/// `TCP_INFO`. A passive side (one that serves the peer's Writes and Reads
/// while it waits for the peer's word) sees the peer's progress in it.
pub fn tcp_bytes(sock: &impl AsRawFd) -> io::Result<u64> {
    // struct tcp_info up to tcpi_bytes_received (offset 128).
    let mut b = [0u8; 136];
    let n = get_opt(sock.as_raw_fd(), SOL_TCP, TCP_INFO, &mut b)?;
    let u64_at = |i: usize| {
        b.get(i..i + 8)
            .and_then(|x| x.try_into().ok())
            .map(u64::from_ne_bytes)
    };
    match (n >= b.len(), u64_at(120), u64_at(128)) {
        (true, Some(acked), Some(received)) => Ok(acked.wrapping_add(received)),
        _ => Err(io::Error::other("short tcp_info")),
    }
}

/// Polls up to `max` completions, waiting up to `timeout_ms` for the first
/// (the peer's FPDUs are served meanwhile); empty when none came.
pub fn poll_cq(sock: &impl AsRawFd, max: usize, timeout_ms: u32) -> io::Result<Vec<Cqe>> {
    let mut raw = vec![0u8; 32 * max.max(1)];
    let mut n = 0u32;
    let mut b = [0u8; 24];
    b[0..8].copy_from_slice(&(raw.as_mut_ptr() as u64).to_ne_bytes());
    b[8..12].copy_from_slice(&(max as u32).to_ne_bytes());
    b[12..16].copy_from_slice(&timeout_ms.to_ne_bytes());
    b[16..24].copy_from_slice(&(&mut n as *mut u32 as u64).to_ne_bytes());
    set_opt(sock.as_raw_fd(), SOL_ZCDDP, ZCDDP_POLL_CQ, &b)?;
    Ok(raw
        .chunks(32)
        .take(n as usize)
        .map(Cqe::from_bytes)
        .collect())
}

impl Cqe {
    /// From `struct zcddp_cqe`'s 32 bytes.
    fn from_bytes(c: &[u8]) -> Self {
        let u32_at = |i: usize| {
            u32::from_ne_bytes(
                c.get(i..i + 4)
                    .and_then(|b| b.try_into().ok())
                    .unwrap_or_default(),
            )
        };
        Cqe {
            wr_id: u64::from_ne_bytes(
                c.get(0..8)
                    .and_then(|b| b.try_into().ok())
                    .unwrap_or_default(),
            ),
            opcode: u32_at(8),
            status: u32_at(12),
            byte_len: u32_at(16),
            flags: u32_at(20),
            inv_stag: u32_at(24),
        }
    }
}

/// `ZCDDP_CQ_RING`: completions into a ring in registered memory.
pub const ZCDDP_CQ_RING: c_int = 11;
/// The largest ring (`ZCDDP_CQ_DEPTH`).
pub const CQ_DEPTH: u32 = 256;
/// `struct zcddp_cq_ring`: `head` at 0, `tail` at 64, the entries from 128.
const RING_TAIL: usize = 64;
const RING_CQES: usize = 128;
const CQE_LEN: usize = 32;

/// Registers memory for a ring of `entries` entries of `len` bytes
/// (either kind: `opt` is `ZCDDP_CQ_RING` or `ZCDDP_RQ_RING`), local write
/// only, and sets it on `sock` 64-byte aligned: the registration and the
/// ring's first byte.
fn ring_memory<'s, S: AsRawFd>(
    sock: &'s S,
    opt: c_int,
    entries: u32,
    len: usize,
) -> io::Result<(Mr<'s, S>, *mut u8)> {
    let bytes = RING_CQES + len * entries as usize;
    let mut mr = Mr::new(sock, bytes + 64, ACCESS_LOCAL_WRITE | ACCESS_NO_REMOTE_INV)?;
    let pad = (64 - (mr.addr() % 64) as usize) % 64;
    let base = mr.bytes_mut()[pad..].as_mut_ptr();
    let mut b = [0u8; 16];
    b[0..8].copy_from_slice(&(base as u64).to_ne_bytes());
    b[8..12].copy_from_slice(&entries.to_ne_bytes());
    b[12..16].copy_from_slice(&mr.stag().to_ne_bytes());
    set_opt(sock.as_raw_fd(), SOL_ZCDDP, opt, &b)?;
    Ok((mr, base))
}

/// A ring's index word at `base + at` (0: `head`, `RING_TAIL`: `tail`),
/// `base` the ring's first byte in `mr` (from [`ring_memory`]), borrowed
/// for as long as `mr` is.
fn ring_word<'a, S: AsRawFd>(
    _mr: &'a Mr<'_, S>,
    base: *mut u8,
    at: usize,
) -> &'a std::sync::atomic::AtomicU32 {
    // SAFETY: `base + at` (0 or RING_TAIL) is 4-byte aligned inside the
    // registered buffer of `mr`, which outlives the reference (`'a`); the
    // kernel writes the word only with whole aligned stores.
    unsafe { std::sync::atomic::AtomicU32::from_ptr(base.add(at).cast()) }
}

/// The completion ring (`ZCDDP_CQ_RING`): zcddp writes every completion of
/// the connection into this registered memory, and [`CqRing::poll`] reads
/// them without a system call, as `ibv_poll_cq` reads siw's. Once it is
/// set, [`poll_cq`] hands out nothing on the connection (it only waits:
/// [`CqRing::wait`]).
pub struct CqRing<'s, S: AsRawFd> {
    sock: &'s S,
    /// Keeps the memory registered (and the ring's pages pinned).
    _mr: Mr<'s, S>,
    /// The ring's first byte, 64-byte aligned, inside the registration.
    base: *mut u8,
    entries: u32,
    /// The next entry to read (the ring's `head`, as last stored).
    head: u32,
}

impl<'s, S: AsRawFd> CqRing<'s, S> {
    /// Registers memory for a ring of `entries` (a power of two up to
    /// [`CQ_DEPTH`]) and sets it on `sock` (in RDMA mode).
    pub fn new(sock: &'s S, entries: u32) -> io::Result<Self> {
        // Local write only: the peer can neither see nor forge completions.
        let (mr, base) = ring_memory(sock, ZCDDP_CQ_RING, entries, CQE_LEN)?;
        Ok(Self {
            sock,
            _mr: mr,
            base,
            entries,
            head: 0,
        })
    }

    fn word(&self, at: usize) -> &std::sync::atomic::AtomicU32 {
        ring_word(&self._mr, self.base, at)
    }

    /// Up to `max` completions, oldest first, without a system call (none
    /// when the ring is empty).
    pub fn poll(&mut self, max: usize) -> Vec<Cqe> {
        use std::sync::atomic::Ordering::{Acquire, Release};
        let tail = self.word(RING_TAIL).load(Acquire);
        let mut out = Vec::new();
        while self.head != tail && out.len() < max {
            let slot = (self.head & (self.entries - 1)) as usize;
            let mut c = [0u8; CQE_LEN];
            // SAFETY: the entry is inside the ring (slot < entries); zcddp
            // wrote it before the tail that shows it (its release store,
            // the load above acquires) and does not touch it again until
            // the head passes it.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.base.add(RING_CQES + slot * CQE_LEN),
                    c.as_mut_ptr(),
                    CQE_LEN,
                )
            };
            out.push(Cqe::from_bytes(&c));
            self.head = self.head.wrapping_add(1);
        }
        if !out.is_empty() {
            // The entries read, then room for zcddp.
            self.word(0).store(self.head, Release);
        }
        out
    }

    /// Clears the ring on the connection (completions go to [`poll_cq`]
    /// again) and lets its memory go.
    fn clear(&self) -> io::Result<()> {
        set_opt(self.sock.as_raw_fd(), SOL_ZCDDP, ZCDDP_CQ_RING, &[0u8; 16])
    }

    /// As [`CqRing::poll`], waiting up to `timeout_ms` in the kernel
    /// (`ZCDDP_POLL_CQ`) while the ring is empty; the connection's error
    /// once it is empty and failed.
    pub fn wait(&mut self, max: usize, timeout_ms: u32) -> io::Result<Vec<Cqe>> {
        let c = self.poll(max);
        if !c.is_empty() || timeout_ms == 0 {
            return Ok(c);
        }
        poll_cq(self.sock, 1, timeout_ms)?;
        Ok(self.poll(max))
    }
}

impl<S: AsRawFd> Drop for CqRing<'_, S> {
    fn drop(&mut self) {
        // zcddp stops writing into the memory before it is deregistered
        // and freed (a connection that failed took the ring along).
        let _ = self.clear();
    }
}

/// `ZCDDP_RQ_RING`: receives posted through a ring in registered memory.
pub const ZCDDP_RQ_RING: c_int = 12;
/// `struct zcddp_rq_ring`: `head` at 0, `tail` at 64, the entries (each a
/// `struct zcddp_recv`) from 128.
const RQE_LEN: usize = 24;

/// The receive ring (`ZCDDP_RQ_RING`): [`RqRing::post`] posts a receive by
/// writing it into this registered memory, without a system call, as
/// `ibv_post_recv` posts into siw's receive queue. zcddp takes the entries
/// when Sends need them. Once it is set, [`post_recv`] and [`post_recv_sg`]
/// fail with `EBUSY` on the connection.
pub struct RqRing<'s, S: AsRawFd> {
    sock: &'s S,
    _mr: Mr<'s, S>,
    base: *mut u8,
    entries: u32,
    /// The next entry to write (the ring's `tail`, as last stored).
    tail: u32,
}

impl<'s, S: AsRawFd> RqRing<'s, S> {
    /// Registers memory for a ring of `entries` (a power of two up to
    /// [`CQ_DEPTH`]) and sets it on `sock` (in RDMA mode).
    pub fn new(sock: &'s S, entries: u32) -> io::Result<Self> {
        // Local write only: the peer can neither see nor change the posts.
        let (mr, base) = ring_memory(sock, ZCDDP_RQ_RING, entries, RQE_LEN)?;
        Ok(Self {
            sock,
            _mr: mr,
            base,
            entries,
            tail: 0,
        })
    }

    fn word(&self, at: usize) -> &std::sync::atomic::AtomicU32 {
        ring_word(&self._mr, self.base, at)
    }

    /// Entries the application may still write.
    pub fn room(&self) -> u32 {
        use std::sync::atomic::Ordering::Acquire;
        let head = self.word(0).load(Acquire);
        self.entries
            .saturating_sub(self.tail.wrapping_sub(head).min(self.entries))
    }

    /// Posts a receive of `len` bytes at byte `off` of `mr`, without a
    /// system call; `false` when the ring is full (zcddp has not taken
    /// enough of the earlier entries yet).
    pub fn post(&mut self, wr_id: u64, mr: &Mr<'_, S>, off: usize, len: u32) -> bool {
        use std::sync::atomic::Ordering::Release;
        if self.room() == 0 {
            return false;
        }
        let mut b = [0u8; RQE_LEN];
        b[0..8].copy_from_slice(&wr_id.to_ne_bytes());
        b[8..16].copy_from_slice(&(mr.addr() + off as u64).to_ne_bytes());
        b[16..20].copy_from_slice(&len.to_ne_bytes());
        b[20..24].copy_from_slice(&mr.stag.to_ne_bytes());
        let slot = (self.tail & (self.entries - 1)) as usize;
        // SAFETY: the entry is inside the ring (slot < entries), in the
        // registered buffer `self` keeps; zcddp does not read it until the
        // tail below shows it, and is done with it (the head passed it)
        // when `room` says it is free.
        unsafe {
            std::ptr::copy_nonoverlapping(
                b.as_ptr(),
                self.base.add(RING_CQES + slot * RQE_LEN),
                RQE_LEN,
            )
        };
        // The entry, then the tail that shows it.
        self.tail = self.tail.wrapping_add(1);
        self.word(RING_TAIL).store(self.tail, Release);
        true
    }
}

impl<S: AsRawFd> Drop for RqRing<'_, S> {
    fn drop(&mut self) {
        // zcddp stops reading the memory before it is deregistered and
        // freed.
        let _ = set_opt(self.sock.as_raw_fd(), SOL_ZCDDP, ZCDDP_RQ_RING, &[0u8; 16]);
    }
}

/// `ENOPROTOOPT`: what a zcddp module without rings answers to
/// `ZCDDP_CQ_RING` and `ZCDDP_RQ_RING`.
const ENOPROTOOPT: i32 = 92;

/// Sets a completion ring of `cq_entries` on `sock` (in RDMA mode) and,
/// with `rq_entries`, a receive ring: the rings set, `None` for those the
/// module does not offer (`ENOPROTOOPT`; no receive ring without a
/// completion ring).
#[allow(clippy::type_complexity)]
pub fn set_rings<'s, S: AsRawFd>(
    sock: &'s S,
    cq_entries: u32,
    rq_entries: Option<u32>,
) -> io::Result<(Option<CqRing<'s, S>>, Option<RqRing<'s, S>>)> {
    let absent = |x: &io::Error| x.raw_os_error() == Some(ENOPROTOOPT);
    let cq = match CqRing::new(sock, cq_entries) {
        Ok(c) => c,
        Err(x) if absent(&x) => return Ok((None, None)),
        Err(x) => return Err(x),
    };
    let Some(n) = rq_entries else {
        return Ok((Some(cq), None));
    };
    match RqRing::new(sock, n) {
        Ok(q) => Ok((Some(cq), Some(q))),
        Err(x) if absent(&x) => Ok((Some(cq), None)),
        Err(x) => Err(x),
    }
}

/// The counters of `/proc/net/zcddp_stat` (the calling thread's namespace),
/// in file order.
pub fn proc_stat() -> io::Result<Vec<(String, u64)>> {
    let s = std::fs::read_to_string(PROC_STAT)?;
    Ok(s.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.parse().ok()?))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let i = Params::initiator();
        assert_eq!((i.role, i.revision, i.rtr), (INITIATOR, 2, RTR_WRITE));
        assert_eq!(Params::responder().rtr, RTR_WRITE | RTR_READ);
    }

    #[test]
    fn attach_needs_a_connection() {
        // Without the module the ULP is unknown (ENOENT); with it, a
        // socket that is not connected is refused (ENOTCONN).
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let e = attach(&l).unwrap_err();
        assert!(matches!(e.raw_os_error(), Some(2) | Some(107)), "{e}");
    }
}

/// Spins until `done()` says so, as `ib_write_lat` spins on memory that an
/// RDMA Write changes: zcddp places a Write as TCP receives it (in softirq,
/// or in the socket's work item), so the reader needs no call. `every_ms`
/// runs once a millisecond meanwhile (a completion-queue poll without
/// waiting: a call that locks the socket, which would send an arriving
/// segment the long way round, through the backlog and the work item).
/// `Ok(false)` when `timeout` ran out first.
pub fn spin_until<E>(
    mut done: impl FnMut() -> bool,
    timeout: std::time::Duration,
    mut every_ms: impl FnMut() -> Result<(), E>,
) -> Result<bool, E> {
    let t = std::time::Instant::now();
    let mut polled = t;
    let mut n = 0u32;
    while !done() {
        n = n.wrapping_add(1);
        if n % 1024 != 0 {
            std::hint::spin_loop();
            continue;
        }
        if polled.elapsed() > std::time::Duration::from_millis(1) {
            every_ms()?;
            polled = std::time::Instant::now();
        }
        if t.elapsed() > timeout {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The median of `v` (sorted in place; 0 when empty).
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Two big-endian words at the start of `b` (a tool's 16-byte message).
pub fn put_words(b: &mut [u8], a: u64, c: u64) {
    b[0..8].copy_from_slice(&a.to_be_bytes());
    b[8..16].copy_from_slice(&c.to_be_bytes());
}

/// The two words [`put_words`] wrote.
pub fn get_words(b: &[u8]) -> (u64, u64) {
    let a = u64::from_be_bytes(b[0..8].try_into().unwrap_or_default());
    let c = u64::from_be_bytes(b[8..16].try_into().unwrap_or_default());
    (a, c)
}

/// MPA start-up as initiator or responder with `flags` (`F_*`); the error
/// as a tool prints it.
pub fn start_as(sock: &impl AsRawFd, initiator: bool, flags: u32) -> Result<(), String> {
    let mut p = if initiator {
        Params::initiator()
    } else {
        Params::responder()
    };
    p.flags = flags;
    startup(sock, &p).map_err(|e| format!("MPA start-up: {e}"))?;
    Ok(())
}

/// A tool's side: the server's accepted or the client's connected socket
/// ([`establish`]) given to `server` or `client`.
pub fn run_side<R>(
    server: bool,
    addr: &str,
    port: u16,
    on_server: impl FnOnce(&std::net::TcpStream) -> Result<R, String>,
    on_client: impl FnOnce(&std::net::TcpStream) -> Result<R, String>,
) -> Result<R, String> {
    let s = establish(server, addr, port).map_err(|e| e.to_string())?;
    if server {
        on_server(&s)
    } else {
        on_client(&s)
    }
}

/// A tool's `main`: its options from `parse` (exit status 2 on an error),
/// then `run` (1 on an error), errors printed after `name`.
pub fn tool_main<O>(
    name: &str,
    parse: impl FnOnce() -> Result<O, String>,
    run: impl FnOnce(&O) -> Result<(), String>,
) -> std::process::ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{name}: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

/// Which side a tool plays and where: `-s` (server, the default `-c`
/// client), `-a ADDR`, `-p PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    /// `-s`.
    pub server: bool,
    /// `-a ADDR`: where the server listens.
    pub addr: String,
    /// `-p PORT`.
    pub port: u16,
}

impl Side {
    /// The connection ([`run_side`]) given to `on_server` or `on_client`;
    /// `-a` is required.
    pub fn run<R>(
        &self,
        on_server: impl FnOnce(&std::net::TcpStream) -> Result<R, String>,
        on_client: impl FnOnce(&std::net::TcpStream) -> Result<R, String>,
    ) -> Result<R, String> {
        if self.addr.is_empty() {
            return Err("-a ADDR is required".into());
        }
        run_side(self.server, &self.addr, self.port, on_server, on_client)
    }
}
