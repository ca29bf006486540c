//! `zcctl sock [PID [FD]]`: zcsock's counters, those of the current network
//! namespace (`/proc/net/zcsock_stat`) and those of one program's sockets
//! (`getsockopt(SOL_ZCSOCK, ZCSOCK_STATS)` on a duplicate of its descriptor).

use serde_json::{json, Value};
use std::fs;
use std::io::ErrorKind;
use std::os::fd::OwnedFd;
use std::path::Path;

/// The namespace's counters from `PROC/net/zcsock_stat`.
fn namespace(proc_root: &Path, json: bool) -> i32 {
    let path = proc_root.join("net/zcsock_stat");
    match zcsock::proc_stat(&path) {
        Ok(counters) => {
            let missing: Vec<&str> = zcsock::PROC_NAMES
                .into_iter()
                .filter(|n| zcsock::proc_value(&counters, n).is_none())
                .collect();
            if json {
                let c: serde_json::Map<String, Value> = counters
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from(*v)))
                    .collect();
                crate::print_json(&json!({
                    "path": path.display().to_string(),
                    "counters": c,
                    "missing": missing,
                }));
                return 0;
            }
            println!("zcsock ({}):", path.display());
            for (k, v) in &counters {
                println!("  {k:<28} {v:>14}");
            }
            if !missing.is_empty() {
                println!("  (missing: {})", missing.join(" "));
            }
            0
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            eprintln!(
                "zcctl: zcsock is not loaded ({} does not exist in this network namespace): modprobe zcsock",
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

/// One socket of another program: its ULP, copy threshold and counters
/// (printed, or as JSON in `out`); false when it is no zcsock socket.
fn one(pid: i32, fd: i32, sock: &OwnedFd, quiet: bool, out: Option<&mut Vec<Value>>) -> bool {
    let ulp = zcsock::ulp(sock).unwrap_or_default();
    let zc = ulp == zcsock::ULP_NAME;
    let thr = zc.then(|| zcsock::copy_threshold(sock));
    let stats = zc.then(|| zcsock::stats(sock));
    if let Some(out) = out {
        if zc || !quiet {
            let st = stats.and_then(Result::ok).map(|s| {
                s.fields()
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), Value::from(v)))
                    .collect::<serde_json::Map<_, _>>()
            });
            out.push(json!({
                "fd": fd,
                "ulp": ulp,
                "zcsock": zc,
                "copy_threshold": thr.and_then(Result::ok),
                "stats": st,
            }));
        }
        return zc;
    }
    if !zc {
        if !quiet {
            println!("pid {pid} fd {fd}: not a zcsock socket (ulp '{ulp}')");
        }
        return false;
    }
    let thr = thr.map_or_else(String::new, |t| {
        t.map_or_else(|e| format!("? ({e})"), |t| t.to_string())
    });
    println!("pid {pid} fd {fd}: zcsock, copy threshold {thr} bytes");
    match stats {
        Some(Ok(s)) => {
            for (k, v) in s.fields() {
                println!("  {k:<28} {v:>14}");
            }
        }
        Some(Err(e)) => println!("  (ZCSOCK_STATS: {e})"),
        None => {}
    }
    true
}

/// The zcsock sockets of process `pid` (all, or only descriptor `fd`).
fn process(proc_root: &Path, pid: i32, fd: Option<i32>, json: bool) -> i32 {
    let fds: Vec<i32> = match fd {
        Some(f) => vec![f],
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
    let mut out = json.then(Vec::new);
    for &f in &fds {
        match zcsock::remote_fd(pid, f) {
            Ok(sock) => found += usize::from(one(pid, f, &sock, fd.is_none(), out.as_mut())),
            Err(e) => eprintln!("zcctl: pid {pid} fd {f}: {e}"),
        }
    }
    if let Some(out) = out {
        crate::print_json(&json!({ "pid": pid, "sockets": out }));
    } else if found == 0 && fd.is_none() {
        println!("pid {pid}: no zcsock socket");
    }
    i32::from(found == 0)
}

/// `zcctl sock [PID [FD]]`.
pub fn run(proc_root: &Path, pid: Option<i32>, fd: Option<i32>, json: bool) -> i32 {
    match pid {
        None => namespace(proc_root, json),
        Some(pid) => process(proc_root, pid, fd, json),
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
        assert_eq!(namespace(&d, false), 1);
        fs::write(
            d.join("net/zcsock_stat"),
            "ZcsockTxPagesByRef 5\nZcsockCurrSockets 1\n",
        )
        .unwrap();
        assert_eq!(namespace(&d, false), 0);
        assert_eq!(namespace(&d, true), 0);
        fs::write(d.join("net/zcsock_stat"), "ZcsockTxPagesByRef five\n").unwrap();
        assert_eq!(namespace(&d, true), 1);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn plain_sockets_are_not_zcsock() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let _c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let me = std::process::id() as i32;
        let fd = l.as_raw_fd();
        // Without zcsock (or without pidfd_getfd) nothing is found: exit 1.
        assert_eq!(run(Path::new("/proc"), Some(me), Some(fd), false), 1);
        assert_eq!(run(Path::new("/proc"), Some(me), None, false), 1);
        assert_eq!(run(Path::new("/proc"), Some(me), None, true), 1);
    }
}
