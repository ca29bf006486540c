//! `zcctl sock [PID [FD]]`: zcsock's counters, those of the current network
//! namespace (`/proc/net/zcsock_stat`) and those of one program's sockets
//! (`getsockopt(SOL_ZCSOCK, ZCSOCK_STATS)` on a duplicate of its descriptor).

use std::fs;
use std::io::ErrorKind;
use std::os::fd::OwnedFd;
use std::path::Path;

/// The namespace's counters from `PROC/net/zcsock_stat`.
fn namespace(proc_root: &Path) -> i32 {
    let path = proc_root.join("net/zcsock_stat");
    match zcsock::proc_stat(&path) {
        Ok(counters) => {
            println!("zcsock ({}):", path.display());
            for (k, v) in &counters {
                println!("  {k:<28} {v:>14}");
            }
            let missing: Vec<&str> = zcsock::PROC_NAMES
                .into_iter()
                .filter(|n| zcsock::proc_value(&counters, n).is_none())
                .collect();
            if !missing.is_empty() {
                println!("  (missing: {})", missing.join(" "));
            }
            0
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            eprintln!(
                "zcctl: zcsock is not loaded ({} does not exist in this network namespace)",
                path.display()
            );
            1
        }
        Err(e) => {
            eprintln!("zcctl: {}: {e}", path.display());
            1
        }
    }
}

/// One socket of another program: its ULP, copy threshold and counters;
/// false when it is no zcsock socket.
fn one(pid: i32, fd: i32, sock: &OwnedFd, quiet: bool) -> bool {
    let ulp = zcsock::ulp(sock).unwrap_or_default();
    if ulp != zcsock::ULP_NAME {
        if !quiet {
            println!("pid {pid} fd {fd}: not a zcsock socket (ulp '{ulp}')");
        }
        return false;
    }
    let thr = zcsock::copy_threshold(sock).map_or_else(|e| format!("? ({e})"), |t| t.to_string());
    println!("pid {pid} fd {fd}: zcsock, copy threshold {thr} bytes");
    match zcsock::stats(sock) {
        Ok(s) => {
            for (k, v) in s.fields() {
                println!("  {k:<28} {v:>14}");
            }
        }
        Err(e) => println!("  (ZCSOCK_STATS: {e})"),
    }
    true
}

/// The zcsock sockets of process `pid` (all, or only descriptor `fd`).
fn process(proc_root: &Path, pid: &str, fd: Option<&str>) -> i32 {
    let Ok(pid) = pid.parse::<i32>() else {
        eprintln!("zcctl: '{pid}' is no process id");
        return 2;
    };
    let fds: Vec<i32> = match fd {
        Some(f) => match f.parse() {
            Ok(f) => vec![f],
            Err(_) => {
                eprintln!("zcctl: '{f}' is no file descriptor");
                return 2;
            }
        },
        None => {
            let dir = proc_root.join(pid.to_string()).join("fd");
            let Ok(rd) = fs::read_dir(&dir) else {
                eprintln!("zcctl: cannot list {}", dir.display());
                return 1;
            };
            let mut v: Vec<i32> = rd
                .flatten()
                .filter(|e| {
                    fs::read_link(e.path())
                        .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
                })
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect();
            v.sort_unstable();
            v
        }
    };
    let mut found = 0;
    for &f in &fds {
        match zcsock::remote_fd(pid, f) {
            Ok(sock) => found += usize::from(one(pid, f, &sock, fd.is_none())),
            Err(e) => eprintln!("zcctl: pid {pid} fd {f}: {e}"),
        }
    }
    if found == 0 && fd.is_none() {
        println!("pid {pid}: no zcsock socket");
    }
    i32::from(found == 0)
}

pub fn run(proc_root: &Path, args: &[String]) -> i32 {
    match args {
        [] => namespace(proc_root),
        [pid] => process(proc_root, pid, None),
        [pid, fd] => process(proc_root, pid, Some(fd)),
        _ => {
            eprintln!("usage: zcctl sock [PID [FD]]");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn namespace_counters_or_a_clear_absence() {
        let d = std::env::temp_dir().join(format!("zcctl-sock-{}", std::process::id()));
        fs::create_dir_all(d.join("net")).unwrap();
        assert_eq!(namespace(&d), 1);
        fs::write(
            d.join("net/zcsock_stat"),
            "ZcsockTxPagesByRef 5\nZcsockCurrSockets 1\n",
        )
        .unwrap();
        assert_eq!(namespace(&d), 0);
        fs::write(d.join("net/zcsock_stat"), "ZcsockTxPagesByRef five\n").unwrap();
        assert_eq!(namespace(&d), 1);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn plain_sockets_are_not_zcsock() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let _c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let me = std::process::id().to_string();
        let fd = l.as_raw_fd().to_string();
        // Without zcsock (or without pidfd_getfd) nothing is found: exit 1.
        assert_eq!(run(Path::new("/proc"), &[me.clone(), fd]), 1);
        assert_eq!(run(Path::new("/proc"), &[me]), 1);
        assert_eq!(run(Path::new("/proc"), &["x".into()]), 2);
        assert_eq!(
            run(Path::new("/proc"), &["1".into(), "2".into(), "3".into()]),
            2
        );
    }
}
