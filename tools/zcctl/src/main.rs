//! zcctl: shows which zcnet modules are loaded and what they count.
//!
//! ```text
//! zcctl [status]          modules, their state and reference counts
//! zcctl frag [DEV]        zcfrag devices: lower device, MTU, settings,
//!                         admissions, counters
//! zcctl admit DEV DST [tcp|udp] [src A] [mac M] [ports S:D]
//!                         asks DST's zcfrag for a speculation slot for the
//!                         flow and shows the answer (explicit admission)
//! zcctl release DEV DST [tcp|udp]   gives the slot back
//! zcctl query DEV DST [tcp|udp]     where the request stands
//! zcctl counters [MODULE] the modules' debugfs counters (zcsock, zcddp)
//! zcctl sock              zcsock's counters of this network namespace
//!                         (/proc/net/zcsock_stat)
//! zcctl sock PID [FD]     the counters of a process's zcsock sockets
//! zcctl ddp               zcddp's connections, their registrations and
//!                         the counters of this network namespace
//!                         (/proc/net/zcddp_conns, /proc/net/zcddp_stat)
//! ```

mod admit;
mod ddp;
mod sock;

use std::fs;
use std::path::Path;
use std::process::{Command, ExitCode};

const MODULES: [(&str, &str); 3] = [
    ("zcfrag", "fragmenting/defragmenting netdev"),
    ("zcsock", "zero-copy TCP sockets"),
    ("zcddp", "DDP/RDMAP/MPA over TCP"),
];

fn read(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

fn status(sys: &Path) -> i32 {
    println!("{:<8} {:<10} {:>6}  description", "module", "state", "refs");
    for (name, desc) in MODULES {
        let m = sys.join("module").join(name);
        let state = read(&m.join("initstate"));
        let refs = read(&m.join("refcnt")).unwrap_or_else(|| "-".into());
        println!(
            "{:<8} {:<10} {:>6}  {desc}",
            name,
            state.as_deref().unwrap_or("absent"),
            if state.is_some() { refs.as_str() } else { "-" }
        );
    }
    0
}

fn counters(debugfs: &Path, only: Option<&str>) -> i32 {
    let mut shown = 0;
    for (name, _) in MODULES {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let Some(text) = read(&debugfs.join(name).join("counters")) else {
            continue;
        };
        println!("{name}:");
        for line in text.lines() {
            let (k, v) = line.split_once(' ').unwrap_or((line, ""));
            println!("  {k:<28} {v:>14}");
        }
        shown += 1;
    }
    if shown == 0 {
        eprintln!(
            "zcctl: no counters found under {} (module not loaded, or debugfs not mounted)",
            debugfs.display()
        );
        return 1;
    }
    0
}

/// Values of `"key":value` pairs in one JSON object of `ip -j` output (enough
/// for the flat fields zcctl shows; no JSON library needed).
fn json_field<'a>(obj: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\":");
    let start = obj.find(&pat)? + pat.len();
    let rest = &obj[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim_matches('"'))
}

/// zcfrag devices of the current network namespace, as `ip` reports them.
fn frag_devices() -> Result<Vec<(String, String, String)>, String> {
    let out = Command::new("ip")
        .args(["-j", "-d", "link", "show", "type", "zcfrag"])
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut devs = Vec::new();
    for obj in text.split("{\"ifindex\"").skip(1) {
        let name = json_field(obj, "ifname").unwrap_or("?").to_string();
        let mtu = json_field(obj, "mtu").unwrap_or("?").to_string();
        let lower = json_field(obj, "link").unwrap_or("?").to_string();
        devs.push((name, format!("lower {lower}"), mtu));
    }
    devs.extend(native_devices(Path::new("/sys/class/net"), &devs));
    Ok(devs)
}

/// Devices of the native front end (a virtio-net device bound to zcfrag):
/// those with the zcfrag sysfs group that `ip` does not list as the kind.
fn native_devices(
    class: &Path,
    stacked: &[(String, String, String)],
) -> Vec<(String, String, String)> {
    let mut devs = Vec::new();
    let Ok(dir) = fs::read_dir(class) else {
        return devs;
    };
    let mut names: Vec<String> = dir
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let d = class.join(&name);
        if !d.join("zcfrag").is_dir() || stacked.iter().any(|s| s.0 == name) {
            continue;
        }
        let bus = fs::canonicalize(d.join("device"))
            .ok()
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "?".into());
        let mtu = read(&d.join("mtu")).unwrap_or_else(|| "?".into());
        devs.push((name, format!("native on {bus}"), mtu));
    }
    devs
}

fn frag(only: Option<&str>) -> i32 {
    let devs = match frag_devices() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("zcctl: {e}");
            return 1;
        }
    };
    if devs.is_empty() {
        println!("no zcfrag device in this network namespace");
        return 0;
    }
    for (name, what, mtu) in devs {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        println!("{name}: {what}, mtu {mtu}");
        let dir = Path::new("/sys/class/net").join(&name).join("zcfrag");
        for k in [
            "slots",
            "timeout_us",
            "admission",
            "implicit_admission",
            "grant_timeout_ms",
            "wire_mtu",
        ] {
            if let Some(v) = read(&dir.join(k)) {
                println!("  {k:<28} {v:>14}");
            }
        }
        if let Some(t) = read(&dir.join("admissions")) {
            for line in t.lines() {
                println!("  {line}");
            }
        }
        match Command::new("ethtool").args(["-S", &name]).output() {
            Ok(o) if o.status.success() => {
                for line in String::from_utf8_lossy(&o.stdout).lines().skip(1) {
                    if let Some((k, v)) = line.trim().split_once(':') {
                        println!("  {:<28} {:>14}", k, v.trim());
                    }
                }
            }
            _ => println!("  (ethtool -S {name} failed)"),
        }
    }
    0
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sys = std::env::var("ZCCTL_SYSFS").unwrap_or_else(|_| "/sys".into());
    let dbg = std::env::var("ZCCTL_DEBUGFS").unwrap_or_else(|_| "/sys/kernel/debug".into());
    let proc = std::env::var("ZCCTL_PROC").unwrap_or_else(|_| "/proc".into());
    let rc = match args.first().map(String::as_str) {
        None | Some("status") => status(Path::new(&sys)),
        Some("counters") => counters(Path::new(&dbg), args.get(1).map(String::as_str)),
        Some("frag") => frag(args.get(1).map(String::as_str)),
        Some("sock") => sock::run(Path::new(&proc), &args[1..]),
        Some("ddp") => ddp::run(Path::new(&proc)),
        Some(c @ ("admit" | "release" | "query")) => admit::run(c, &args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("usage: zcctl [status] | zcctl frag [DEV] | zcctl counters [MODULE]");
            println!("       zcctl sock [PID [FD]] | zcctl ddp");
            println!("       zcctl admit|release|query DEV DST [tcp|udp] [src ADDR] [mac MAC] [ports S:D]");
            0
        }
        Some(c) => {
            eprintln!("zcctl: unknown command '{c}' (try --help)");
            2
        }
    };
    ExitCode::from(rc as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_fields() {
        let o = r#"{"ifindex":3,"link":"va","ifname":"zf0","mtu":4148,"qdisc":"noqueue"}"#;
        assert_eq!(json_field(o, "ifname"), Some("zf0"));
        assert_eq!(json_field(o, "mtu"), Some("4148"));
        assert_eq!(json_field(o, "link"), Some("va"));
        assert_eq!(json_field(o, "nothing"), None);
    }

    #[test]
    fn reads_fake_trees() {
        let d = std::env::temp_dir().join(format!("zcctl-test-{}", std::process::id()));
        fs::create_dir_all(d.join("module/zcfrag")).unwrap();
        fs::write(d.join("module/zcfrag/initstate"), "live\n").unwrap();
        fs::write(d.join("module/zcfrag/refcnt"), "0\n").unwrap();
        assert_eq!(status(&d), 0);
        assert_eq!(counters(&d, None), 1);
        fs::create_dir_all(d.join("zcsock")).unwrap();
        fs::write(
            d.join("zcsock/counters"),
            "ulp_init_calls 3\nulp_init_refused 3\n",
        )
        .unwrap();
        assert_eq!(counters(&d, Some("zcsock")), 0);
        assert_eq!(counters(&d, Some("zcfrag")), 1);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn finds_native_devices() {
        let d = std::env::temp_dir().join(format!("zcctl-native-{}", std::process::id()));
        let bus = d.join("devices/virtio1");
        fs::create_dir_all(&bus).unwrap();
        for (dev, group) in [("va", true), ("zf0", true), ("lo", false)] {
            fs::create_dir_all(d.join(dev)).unwrap();
            fs::write(d.join(dev).join("mtu"), "4148\n").unwrap();
            if group {
                fs::create_dir_all(d.join(dev).join("zcfrag")).unwrap();
            }
        }
        std::os::unix::fs::symlink(&bus, d.join("va/device")).unwrap();
        let stacked = [(
            "zf0".to_string(),
            "lower va".to_string(),
            "4148".to_string(),
        )];
        let n = native_devices(&d, &stacked);
        assert_eq!(
            n,
            vec![(
                "va".to_string(),
                "native on virtio1".to_string(),
                "4148".to_string()
            )]
        );
        fs::remove_dir_all(&d).unwrap();
    }
}
