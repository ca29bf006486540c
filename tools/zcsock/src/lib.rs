//! zcsock from user space: a safe wrapper of the interface of
//! `include/uapi/zcnet/zcsock.h` (Documentation/networking/zcsock.rst).
//!
//! - [`enable`] turns zcsock on for a TCP socket (`setsockopt(SOL_TCP,
//!   TCP_ULP, "zcsock")`), before or after connect, or before `listen()` on
//!   a socket whose accepted sockets inherit it (a live listener refuses it:
//!   `EINVAL`).
//! - [`Region`] is a fast buffer: `/dev/zcsock` opened and mapped
//!   `MAP_SHARED`; it derefs to `[u8]`, and sends from it of at least the copy
//!   threshold go to TCP by reference, copy-on-write protected.
//! - [`stats`], [`copy_threshold`], [`set_copy_threshold`]: the options at
//!   zcsock's own socket level.
//! - [`proc_stat`]: the per-namespace counters of `/proc/net/zcsock_stat`.
//!
//! ```no_run
//! use std::io::Write;
//! use std::net::TcpStream;
//! let mut s = TcpStream::connect("198.18.0.2:5000")?;
//! zcsock::enable(&s)?;
//! let mut r = zcsock::Region::new(1 << 20)?;
//! r[..4096].fill(7);
//! s.write_all(&r[..65536])?; // 16 pages by reference
//! println!("{:?}", zcsock::stats(&s)?);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! No dependency: the few libc calls are declared here, each behind one small
//! function with its `// SAFETY:` argument.

use std::ffi::{c_int, c_long, c_void};
use std::fs::{File, OpenOptions};
use std::io;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::ops::{Deref, DerefMut};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::ptr::NonNull;

/// `SOL_TCP`, the level of `TCP_ULP`.
pub const SOL_TCP: c_int = 6;
/// `TCP_ULP`: attaches an upper-layer protocol by name.
pub const TCP_ULP: c_int = 31;
/// zcsock's own socket level (`SOL_ZCSOCK`).
pub const SOL_ZCSOCK: c_int = 300;
/// get: [`Stats`].
pub const ZCSOCK_STATS: c_int = 1;
/// get/set: a `u32`, bytes; sends and receives shorter than this copy.
pub const ZCSOCK_COPY_THRESHOLD: c_int = 2;
/// The ULP name (`ZCSOCK_ULP_NAME`).
pub const ULP_NAME: &str = "zcsock";
/// The device whose mapping is a region (`ZCSOCK_DEVICE`).
pub const DEVICE: &str = "/dev/zcsock";
/// The counters of the calling thread's network namespace.
pub const PROC_STAT: &str = "/proc/net/zcsock_stat";
/// The names `/proc/net/zcsock_stat` has at least.
pub const PROC_NAMES: [&str; 7] = [
    "ZcsockTxPagesByRef",
    "ZcsockTxCowFaults",
    "ZcsockTxBytesCopied",
    "ZcsockRxPagesRemapped",
    "ZcsockRxBytesCopied",
    "ZcsockRegionPages",
    "ZcsockCurrSockets",
];

const PROT_READ: c_int = 1;
const PROT_WRITE: c_int = 2;
const MAP_SHARED: c_int = 1;
const SYS_PIDFD_OPEN: c_long = 434;
const SYS_PIDFD_GETFD: c_long = 438;

extern "C" {
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: i64,
    ) -> *mut c_void;
    fn munmap(addr: *mut c_void, len: usize) -> c_int;
    fn setsockopt(fd: c_int, level: c_int, name: c_int, val: *const c_void, len: u32) -> c_int;
    fn getsockopt(fd: c_int, level: c_int, name: c_int, val: *mut c_void, len: *mut u32) -> c_int;
    fn syscall(nr: c_long, ...) -> c_long;
}

/// Anything that names a socket: a `RawFd`, or a std socket, or a reference to
/// one (`enable(&stream)`, `enable(fd)`).
pub trait SockFd {
    fn sock_fd(&self) -> RawFd;
}

impl SockFd for RawFd {
    fn sock_fd(&self) -> RawFd {
        *self
    }
}

macro_rules! sock_fd_via_as_raw_fd {
    ($($t:ty),*) => {$(
        impl SockFd for $t {
            fn sock_fd(&self) -> RawFd {
                self.as_raw_fd()
            }
        }
    )*};
}
sock_fd_via_as_raw_fd!(TcpStream, TcpListener, UdpSocket, OwnedFd, BorrowedFd<'_>);

impl<T: SockFd + ?Sized> SockFd for &T {
    fn sock_fd(&self) -> RawFd {
        (**self).sock_fd()
    }
}

/// `setsockopt(fd, level, name, val)`.
pub fn set_opt(sock: impl SockFd, level: c_int, name: c_int, val: &[u8]) -> io::Result<()> {
    let len = u32::try_from(val.len()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `val` is readable for `len` bytes for the duration of the call,
    // and the kernel only reads them; a bad fd is the kernel's EBADF.
    let rc = unsafe { setsockopt(sock.sock_fd(), level, name, val.as_ptr().cast(), len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `getsockopt(fd, level, name)` into `buf`; the length the kernel wrote.
pub fn get_opt(sock: impl SockFd, level: c_int, name: c_int, buf: &mut [u8]) -> io::Result<usize> {
    let mut len =
        u32::try_from(buf.len()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `buf` is writable for `len` bytes, and the kernel writes at most
    // `len` bytes there and the new length into `len`, both alive for the call.
    let rc = unsafe {
        getsockopt(
            sock.sock_fd(),
            level,
            name,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok((len as usize).min(buf.len()))
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Turns zcsock on for a TCP socket (`EEXIST` when a ULP is already set,
/// `ENOPROTOOPT` on a UDP socket, `ENOENT` when the module is absent).
pub fn enable(sock: impl SockFd) -> io::Result<()> {
    set_opt(sock, SOL_TCP, TCP_ULP, ULP_NAME.as_bytes())
}

/// The name of the socket's ULP (`getsockopt(SOL_TCP, TCP_ULP)`); empty when
/// it has none.
pub fn ulp(sock: impl SockFd) -> io::Result<String> {
    let mut b = [0u8; 16];
    let n = get_opt(sock, SOL_TCP, TCP_ULP, &mut b)?;
    let name = b[..n].split(|&c| c == 0).next().unwrap_or(&[]);
    Ok(String::from_utf8_lossy(name).into_owned())
}

/// `struct zcsock_stats`: one socket's counters (all bytes are payload).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Region pages handed to TCP by reference.
    pub tx_pages_by_ref: u64,
    pub tx_bytes_by_ref: u64,
    /// Sent bytes TCP copied from the caller.
    pub tx_bytes_copied: u64,
    /// Received pages mapped into a region.
    pub rx_pages_remapped: u64,
    pub rx_bytes_remapped: u64,
    /// Received bytes copied to the caller.
    pub rx_bytes_copied: u64,
}

/// `sizeof(struct zcsock_stats)`.
pub const STATS_SIZE: usize = 48;
const _: () = assert!(std::mem::size_of::<Stats>() == STATS_SIZE);

impl Stats {
    /// The struct from its bytes (native byte order, the C layout).
    pub fn from_bytes(b: &[u8; STATS_SIZE]) -> Stats {
        let f = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[8 * i..8 * i + 8]);
            u64::from_ne_bytes(w)
        };
        Stats {
            tx_pages_by_ref: f(0),
            tx_bytes_by_ref: f(1),
            tx_bytes_copied: f(2),
            rx_pages_remapped: f(3),
            rx_bytes_remapped: f(4),
            rx_bytes_copied: f(5),
        }
    }

    /// The fields by their C names, in order.
    pub fn fields(&self) -> [(&'static str, u64); 6] {
        [
            ("tx_pages_by_ref", self.tx_pages_by_ref),
            ("tx_bytes_by_ref", self.tx_bytes_by_ref),
            ("tx_bytes_copied", self.tx_bytes_copied),
            ("rx_pages_remapped", self.rx_pages_remapped),
            ("rx_bytes_remapped", self.rx_bytes_remapped),
            ("rx_bytes_copied", self.rx_bytes_copied),
        ]
    }
}

/// The socket's counters (`getsockopt(SOL_ZCSOCK, ZCSOCK_STATS)`); on a
/// socket without zcsock the kernel answers `EOPNOTSUPP` (IP's answer for a
/// level it does not know).
pub fn stats(sock: impl SockFd) -> io::Result<Stats> {
    let mut b = [0u8; STATS_SIZE];
    let n = get_opt(sock, SOL_ZCSOCK, ZCSOCK_STATS, &mut b)?;
    if n != STATS_SIZE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("ZCSOCK_STATS gave {n} bytes, wanted {STATS_SIZE}"),
        ));
    }
    Ok(Stats::from_bytes(&b))
}

/// The socket's copy threshold in bytes (`ZCSOCK_COPY_THRESHOLD`).
pub fn copy_threshold(sock: impl SockFd) -> io::Result<u32> {
    let mut b = [0u8; 4];
    match get_opt(sock, SOL_ZCSOCK, ZCSOCK_COPY_THRESHOLD, &mut b)? {
        4 => Ok(u32::from_ne_bytes(b)),
        n => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("ZCSOCK_COPY_THRESHOLD gave {n} bytes, wanted 4"),
        )),
    }
}

/// Sets the socket's copy threshold in bytes.
pub fn set_copy_threshold(sock: impl SockFd, bytes: u32) -> io::Result<()> {
    set_opt(
        sock,
        SOL_ZCSOCK,
        ZCSOCK_COPY_THRESHOLD,
        &bytes.to_ne_bytes(),
    )
}

/// A region ("fast buffer"): `/dev/zcsock` mapped `MAP_SHARED`. Ordinary
/// memory to the program; unmapped on drop. A forked child shares it, as any
/// shared mapping (writes from other processes are outside what Rust's
/// borrows can see, as with every shared memory).
#[derive(Debug)]
pub struct Region {
    ptr: NonNull<u8>,
    len: usize,
    file: File,
}

// SAFETY: the mapping belongs to the Region alone (no thread-local state),
// and access to its bytes goes through &self/&mut self like a Vec<u8>'s.
unsafe impl Send for Region {}
// SAFETY: &Region only reads the bytes; there is no interior mutability.
unsafe impl Sync for Region {}

impl Region {
    /// A region of `len` bytes (a multiple of the page size) on
    /// [`DEVICE`]. Beyond `RLIMIT_MEMLOCK`: `EAGAIN` or `ENOMEM`.
    pub fn new(len: usize) -> io::Result<Region> {
        Region::open(DEVICE, len)
    }

    /// A region on the device (or, for tests, the file) at `path`.
    pub fn open(path: impl AsRef<Path>, len: usize) -> io::Result<Region> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Region::map(file, len)
    }

    /// Maps `len` bytes of `file` at offset 0, shared, readable and writable.
    pub fn map(file: File, len: usize) -> io::Result<Region> {
        // SAFETY: a new mapping at an address the kernel picks (NULL hint, no
        // MAP_FIXED) cannot overlap memory Rust knows about; the result is
        // checked before use.
        let p = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                PROT_READ | PROT_WRITE,
                MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p as isize == -1 {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned NULL"))?;
        Ok(Region { ptr, len, file })
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of its first byte (page aligned).
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// The open file the region maps (the device's).
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl Deref for Region {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is a live readable mapping of `len` bytes until drop,
        // and `&self` keeps `&mut` access out for the slice's lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for Region {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is a live writable mapping of `len` bytes until drop,
        // and `&mut self` makes this slice the only access to it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `map` with this address and length
        // and nothing borrows it any more (drop has `&mut self`).
        unsafe { munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Parses counters given one `Name value` line each (`/proc/net/zcsock_stat`,
/// in the style of `/proc/net/tls_stat`); blank lines are passed over.
pub fn parse_proc_stat(text: &str) -> Result<Vec<(String, u64)>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut f = line.split_whitespace();
        let (Some(name), value, rest) = (f.next(), f.next(), f.next()) else {
            continue; // a blank line
        };
        let value = match (value, rest) {
            (Some(v), None) => v,
            _ => return Err(format!("line {}: wanted 'Name value', got '{line}'", i + 1)),
        };
        let v = value
            .parse::<u64>()
            .map_err(|e| format!("line {}: '{value}' is no counter value: {e}", i + 1))?;
        out.push((name.to_string(), v));
    }
    Ok(out)
}

/// The counters of a `zcsock_stat` file ([`PROC_STAT`] for the namespace of
/// the calling thread); `NotFound` when zcsock is not loaded.
pub fn proc_stat(path: impl AsRef<Path>) -> io::Result<Vec<(String, u64)>> {
    let text = std::fs::read_to_string(path)?;
    parse_proc_stat(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// A counter's value by name.
pub fn proc_value(counters: &[(String, u64)], name: &str) -> Option<u64> {
    counters.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
}

/// A duplicate of another process's file descriptor (`pidfd_getfd`, Linux
/// 5.6; needs ptrace access to it, as root has): how `zcctl sock PID` reads
/// the counters of a program's sockets.
pub fn remote_fd(pid: i32, fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes two integers and returns a new fd or -1.
    let pidfd = unsafe { syscall(SYS_PIDFD_OPEN, pid as c_long, 0 as c_long) };
    let pidfd = owned(pidfd)?;
    // SAFETY: pidfd_getfd takes three integers and returns a new fd or -1.
    let dup = unsafe {
        syscall(
            SYS_PIDFD_GETFD,
            pidfd.as_raw_fd() as c_long,
            fd as c_long,
            0 as c_long,
        )
    };
    owned(dup)
}

fn owned(rc: c_long) -> io::Result<OwnedFd> {
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(rc).map_err(|_| io::Error::other("fd out of range"))?;
    // SAFETY: the kernel just returned this fd to us; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn tmp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("zcsock-test-{}-{name}", std::process::id()))
    }

    #[test]
    fn stats_layout_is_the_c_struct() {
        assert_eq!(std::mem::size_of::<Stats>(), 48);
        assert_eq!(std::mem::align_of::<Stats>(), 8);
        let mut b = [0u8; STATS_SIZE];
        for i in 0..6 {
            b[8 * i..8 * i + 8].copy_from_slice(&(i as u64 + 1).to_ne_bytes());
        }
        let s = Stats::from_bytes(&b);
        assert_eq!(
            s,
            Stats {
                tx_pages_by_ref: 1,
                tx_bytes_by_ref: 2,
                tx_bytes_copied: 3,
                rx_pages_remapped: 4,
                rx_bytes_remapped: 5,
                rx_bytes_copied: 6
            }
        );
        let names: Vec<&str> = s.fields().iter().map(|f| f.0).collect();
        assert_eq!(names[0], "tx_pages_by_ref");
        assert_eq!(names[5], "rx_bytes_copied");
        assert_eq!(s.fields()[3].1, 4);
    }

    #[test]
    fn parses_proc_lines() {
        let t =
            "ZcsockTxPagesByRef               \t12\nZcsockTxCowFaults 3\n\nZcsockCurrSockets\t0\n";
        let v = parse_proc_stat(t).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0], ("ZcsockTxPagesByRef".to_string(), 12));
        assert_eq!(proc_value(&v, "ZcsockTxCowFaults"), Some(3));
        assert_eq!(proc_value(&v, "ZcsockCurrSockets"), Some(0));
        assert_eq!(proc_value(&v, "ZcsockRegionPages"), None);
        assert_eq!(parse_proc_stat("").unwrap(), vec![]);
        assert_eq!(
            parse_proc_stat("A 18446744073709551615").unwrap()[0].1,
            u64::MAX
        );
    }

    #[test]
    fn refuses_malformed_proc_lines() {
        assert!(parse_proc_stat("ZcsockTxPagesByRef")
            .unwrap_err()
            .contains("line 1"));
        assert!(parse_proc_stat("A 1\nB 1 2")
            .unwrap_err()
            .contains("line 2"));
        assert!(parse_proc_stat("A -1").is_err());
        assert!(parse_proc_stat("A x").is_err());
    }

    #[test]
    fn reads_proc_files() {
        let p = tmp("stat");
        std::fs::write(&p, "ZcsockRegionPages 256\nZcsockCurrSockets 2\n").unwrap();
        let v = proc_stat(&p).unwrap();
        assert_eq!(proc_value(&v, "ZcsockRegionPages"), Some(256));
        std::fs::write(&p, "garbage here now\n").unwrap();
        assert_eq!(
            proc_stat(&p).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        std::fs::remove_file(&p).unwrap();
        assert_eq!(proc_stat(&p).unwrap_err().kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn region_maps_shared_and_unmaps() {
        // A region over an ordinary file: the same mmap, checkable without
        // the module.
        let p = tmp("region");
        std::fs::write(&p, vec![0u8; 8192]).unwrap();
        {
            let mut r = Region::open(&p, 8192).unwrap();
            assert_eq!(r.len(), 8192);
            assert!(!r.is_empty());
            assert_eq!(r.as_ptr() as usize % 4096, 0);
            assert!(r.iter().all(|&b| b == 0));
            r[4095..4097].copy_from_slice(b"zc");
            r[8191] = 9;
        }
        let mut back = Vec::new();
        File::open(&p).unwrap().read_to_end(&mut back).unwrap();
        assert_eq!(&back[4095..4097], b"zc");
        assert_eq!(back[8191], 9);
        let f = OpenOptions::new().read(true).write(true).open(&p).unwrap();
        assert_eq!(Region::map(f, 0).unwrap_err().raw_os_error(), Some(22)); // EINVAL
        std::fs::remove_file(&p).unwrap();
        assert_eq!(
            Region::open(&p, 4096).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn socket_options_reach_the_kernel() {
        // What the kernel answers without zcsock: its own errors.
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(enable(&u).unwrap_err().raw_os_error(), Some(92)); // ENOPROTOOPT
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        assert_eq!(ulp(&c).unwrap(), "");
        if enable(c.as_raw_fd()).is_err() {
            // Without the module: a plain TCP socket has no SOL_ZCSOCK level.
            // (ip_getsockopt answers EOPNOTSUPP for a level it does not know.)
            let e = stats(&c).unwrap_err().raw_os_error();
            assert!(matches!(e, Some(92 | 95)), "{e:?}");
            assert!(copy_threshold(&c).is_err());
            assert!(set_copy_threshold(&c, 4096).is_err());
        } else {
            assert_eq!(ulp(&c).unwrap(), ULP_NAME);
            assert_eq!(enable(&c).unwrap_err().raw_os_error(), Some(17)); // EEXIST
        }
        c.write_all(b"still TCP").unwrap();
        let mut b = [0u8; 9];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"still TCP");
    }

    #[test]
    fn duplicates_own_fds() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        match remote_fd(std::process::id() as i32, l.as_raw_fd()) {
            Ok(d) => {
                let l2 = TcpListener::from(d);
                assert_eq!(l2.local_addr().unwrap(), l.local_addr().unwrap());
            }
            // Kernels before 5.6 or a seccomp filter.
            Err(e) => assert!(matches!(e.raw_os_error(), Some(38 | 1))),
        }
    }
}
