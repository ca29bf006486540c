//! zcctl: shows which zcnet modules are loaded and what they count, and
//! drives zcfrag's explicit admission. Its command line is
//! [`zcctl::cli::Cli`] (`zcctl --help`, `man zcctl`):
//!
//! ```text
//! zcctl [--json] [status]   modules, their state and reference counts
//! zcctl frag [DEV]          zcfrag devices: lower device, MTU, settings,
//!                           admissions, counters
//! zcctl admit DEV DST [tcp|udp] [src A] [mac M] [ports S:D]
//!                           asks DST's zcfrag for a speculation slot for the
//!                           flow and shows the answer (explicit admission)
//! zcctl release DEV DST [tcp|udp]   gives the slot back
//! zcctl query DEV DST [tcp|udp]     where the request stands
//! zcctl counters [MODULE]   the modules' debugfs counters (zcsock, zcddp)
//! zcctl sock                zcsock's counters of this network namespace
//!                           (/proc/net/zcsock_stat)
//! zcctl sock PID [FD]       the counters of a process's zcsock sockets
//! zcctl ddp                 zcddp's connections, their registrations and
//!                           the counters of this network namespace
//!                           (/proc/net/zcddp_conns, /proc/net/zcddp_stat)
//! ```
//!
//! With `--json` every command prints one JSON document (serde_json) on
//! stdout instead of its table.

mod admit;
mod ddp;
mod sock;

use clap::Parser;
use serde_json::{json, Map, Value};
use std::fs;
use std::path::Path;
use std::process::{Command, ExitCode};
use zcctl::cli::{Cli, Cmd};

const MODULES: [(&str, &str); 3] = [
    ("zcfrag", "fragmenting/defragmenting netdev"),
    ("zcsock", "zero-copy TCP sockets"),
    ("zcddp", "DDP/RDMAP/MPA over TCP"),
];

fn read(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// Prints `v` as one JSON document.
pub fn print_json(v: &Value) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => println!("{s}"),
        Err(e) => eprintln!("zcctl: JSON: {e}"),
    }
}

/// A counter's or setting's value in JSON: a number when it is one.
pub fn value(v: &str) -> Value {
    v.parse::<u64>()
        .map(Value::from)
        .or_else(|_| v.parse::<i64>().map(Value::from))
        .unwrap_or_else(|_| Value::from(v))
}

/// `KEY VALUE` lines (a counters file) as a JSON object.
pub fn pairs(text: &str) -> Map<String, Value> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), value(w.next().unwrap_or(""))))
        })
        .collect()
}

fn status(sys: &Path, json: bool) -> i32 {
    let rows: Vec<(&str, &str, Option<String>, Option<String>)> = MODULES
        .iter()
        .map(|&(name, desc)| {
            let m = sys.join("module").join(name);
            let state = read(&m.join("initstate"));
            let refs = state.as_ref().and_then(|_| read(&m.join("refcnt")));
            (name, desc, state, refs)
        })
        .collect();
    if json {
        let mods: Vec<Value> = rows
            .iter()
            .map(|(name, desc, state, refs)| {
                json!({
                    "name": name,
                    "state": state.as_deref().unwrap_or("absent"),
                    "refs": refs.as_deref().map(value),
                    "description": desc,
                })
            })
            .collect();
        print_json(&json!({ "modules": mods }));
        return 0;
    }
    println!("{:<8} {:<10} {:>6}  description", "module", "state", "refs");
    for (name, desc, state, refs) in rows {
        println!(
            "{:<8} {:<10} {:>6}  {desc}",
            name,
            state.as_deref().unwrap_or("absent"),
            refs.as_deref().unwrap_or("-")
        );
    }
    0
}

fn counters(debugfs: &Path, only: Option<&str>, json: bool) -> i32 {
    let mut found = Map::new();
    for (name, _) in MODULES {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let Some(text) = read(&debugfs.join(name).join("counters")) else {
            continue;
        };
        if !json {
            println!("{name}:");
            for line in text.lines() {
                let (k, v) = line.split_once(' ').unwrap_or((line, ""));
                println!("  {k:<28} {v:>14}");
            }
        }
        found.insert(name.to_string(), Value::Object(pairs(&text)));
    }
    if found.is_empty() {
        let what = only.map_or("the zcnet modules".to_string(), |m| {
            format!("{m} (modprobe {m})")
        });
        eprintln!(
            "zcctl: no counters found under {}: load {what}, and mount debugfs there",
            debugfs.display()
        );
        return 1;
    }
    if json {
        print_json(&Value::Object(found));
    }
    0
}

/// A zcfrag device: its name, how it is built (stacked on a lower device,
/// or the native front end on a bus device), its MTU.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Dev {
    name: String,
    /// "stacked" or "native".
    kind: &'static str,
    /// The lower device (stacked) or the bus device (native).
    under: String,
    mtu: String,
}

impl Dev {
    fn what(&self) -> String {
        match self.kind {
            "native" => format!("native on {}", self.under),
            _ => format!("lower {}", self.under),
        }
    }
}

/// The stacked devices in `ip -j -d link show type zcfrag` output (an
/// `ip` that does not know the kind prints an empty object a link: skipped).
fn stacked_devices(ip_json: &str) -> Result<Vec<Dev>, String> {
    let links: Vec<Value> =
        serde_json::from_str(ip_json).map_err(|e| format!("ip -j output: {e}"))?;
    let s = |l: &Value, k: &str| match &l[k] {
        Value::String(s) => s.clone(),
        Value::Null => "?".into(),
        v => v.to_string(),
    };
    Ok(links
        .iter()
        .filter(|l| l.get("ifname").is_some())
        .map(|l| Dev {
            name: s(l, "ifname"),
            kind: "stacked",
            under: s(l, "link"),
            mtu: s(l, "mtu"),
        })
        .collect())
}

/// zcfrag devices of the current network namespace, as `ip` reports them.
fn frag_devices() -> Result<Vec<Dev>, String> {
    let out = Command::new("ip")
        .args(["-j", "-d", "link", "show", "type", "zcfrag"])
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut devs = if text.trim().is_empty() {
        Vec::new()
    } else {
        stacked_devices(&text)?
    };
    devs.extend(native_devices(Path::new("/sys/class/net"), &devs));
    Ok(devs)
}

/// Devices of the native front end (a virtio-net device bound to zcfrag):
/// those with the zcfrag sysfs group that `ip` does not list as the kind.
fn native_devices(class: &Path, stacked: &[Dev]) -> Vec<Dev> {
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
        if !d.join("zcfrag").is_dir() || stacked.iter().any(|s| s.name == name) {
            continue;
        }
        let bus = fs::canonicalize(d.join("device"))
            .ok()
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "?".into());
        let mtu = read(&d.join("mtu")).unwrap_or_else(|| "?".into());
        devs.push(Dev {
            name,
            kind: "native",
            under: bus,
            mtu,
        });
    }
    devs
}

/// Name and value pairs, in the order the kernel gave them.
type Pairs = Vec<(String, String)>;

/// `p` as a JSON object.
fn object(p: &Pairs) -> Value {
    Value::Object(p.iter().map(|(k, v)| (k.clone(), value(v))).collect())
}

/// One device's settings, admissions and `ethtool -S` counters.
fn frag_details(name: &str) -> (Pairs, Vec<String>, Option<Pairs>) {
    let dir = Path::new("/sys/class/net").join(name).join("zcfrag");
    let mut settings = Vec::new();
    for k in [
        "slots",
        "timeout_us",
        "admission",
        "implicit_admission",
        "grant_timeout_ms",
        "wire_mtu",
    ] {
        if let Some(v) = read(&dir.join(k)) {
            settings.push((k.to_string(), v));
        }
    }
    let admissions = read(&dir.join("admissions"))
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default();
    let stats = match Command::new("ethtool").args(["-S", name]).output() {
        Ok(o) if o.status.success() => Some(
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .skip(1)
                .filter_map(|l| l.trim().split_once(':'))
                .map(|(k, v)| (k.to_string(), v.trim().to_string()))
                .collect(),
        ),
        _ => None,
    };
    (settings, admissions, stats)
}

fn frag(sys: &Path, only: Option<&str>, json: bool) -> i32 {
    let devs = match frag_devices() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("zcctl: {e}");
            return 1;
        }
    };
    let devs: Vec<Dev> = devs
        .into_iter()
        .filter(|d| only.is_none_or(|o| o == d.name))
        .collect();
    if devs.is_empty() && !json {
        let hint = if sys.join("module/zcfrag").is_dir() {
            ""
        } else {
            " (zcfrag is not loaded: modprobe zcfrag)"
        };
        match only {
            Some(d) => println!("no zcfrag device {d} in this network namespace{hint}"),
            None => println!("no zcfrag device in this network namespace{hint}"),
        }
        return 0;
    }
    let mut out = Vec::new();
    for d in devs {
        let (settings, admissions, stats) = frag_details(&d.name);
        if json {
            let under = if d.kind == "native" { "bus" } else { "lower" };
            out.push(json!({
                "name": d.name,
                "kind": d.kind,
                under: d.under,
                "mtu": value(&d.mtu),
                "settings": object(&settings),
                "admissions": admissions,
                "stats": stats.as_ref().map(object),
            }));
            continue;
        }
        println!("{}: {}, mtu {}", d.name, d.what(), d.mtu);
        for (k, v) in &settings {
            println!("  {k:<28} {v:>14}");
        }
        for line in &admissions {
            println!("  {line}");
        }
        match &stats {
            Some(st) => {
                for (k, v) in st {
                    println!("  {k:<28} {v:>14}");
                }
            }
            None => println!("  (ethtool -S {} failed)", d.name),
        }
    }
    if json {
        print_json(&json!({ "devices": out }));
    }
    0
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let sys = std::env::var("ZCCTL_SYSFS").unwrap_or_else(|_| "/sys".into());
    let dbg = std::env::var("ZCCTL_DEBUGFS").unwrap_or_else(|_| "/sys/kernel/debug".into());
    let proc = std::env::var("ZCCTL_PROC").unwrap_or_else(|_| "/proc".into());
    let json = cli.json;
    let rc = match cli.cmd.unwrap_or(Cmd::Status) {
        Cmd::Status => status(Path::new(&sys), json),
        Cmd::Counters { module } => counters(Path::new(&dbg), module.map(|m| m.name()), json),
        Cmd::Frag { dev } => frag(Path::new(&sys), dev.as_deref(), json),
        Cmd::Sock { pid, fd } => sock::run(Path::new(&proc), pid, fd, json),
        Cmd::Ddp => ddp::run(Path::new(&proc), json),
        Cmd::Admit(f) => admit::run("admit", &f, json),
        Cmd::Release(f) => admit::run("release", &f, json),
        Cmd::Query(f) => admit::run("query", &f, json),
    };
    ExitCode::from(rc as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_json() {
        let o = r#"[{"ifindex":3,"link":"va","ifname":"zf0","mtu":4148,"qdisc":"noqueue",
                     "linkinfo":{"info_kind":"zcfrag"}},
                    {"ifindex":4,"ifname":"z\u0001\"x","mtu":1500}]"#;
        let d = stacked_devices(o).unwrap();
        assert_eq!(d[0].what(), "lower va");
        assert_eq!((d[0].name.as_str(), d[0].mtu.as_str()), ("zf0", "4148"));
        assert_eq!(
            (d[1].name.as_str(), d[1].under.as_str()),
            ("z\u{1}\"x", "?")
        );
        assert!(stacked_devices("[{").is_err());
        assert!(stacked_devices("[{},{}]").unwrap().is_empty());
        assert_eq!(value("12"), json!(12));
        assert_eq!(value("-1"), json!(-1));
        assert_eq!(value("on"), json!("on"));
    }

    #[test]
    fn reads_fake_trees() {
        let d = std::env::temp_dir().join(format!("zcctl-test-{}", std::process::id()));
        fs::create_dir_all(d.join("module/zcfrag")).unwrap();
        fs::write(d.join("module/zcfrag/initstate"), "live\n").unwrap();
        fs::write(d.join("module/zcfrag/refcnt"), "0\n").unwrap();
        assert_eq!(status(&d, false), 0);
        assert_eq!(status(&d, true), 0);
        assert_eq!(counters(&d, None, false), 1);
        fs::create_dir_all(d.join("zcsock")).unwrap();
        fs::write(
            d.join("zcsock/counters"),
            "ulp_init_calls 3\nulp_init_refused 3\n",
        )
        .unwrap();
        assert_eq!(counters(&d, Some("zcsock"), false), 0);
        assert_eq!(counters(&d, Some("zcsock"), true), 0);
        assert_eq!(counters(&d, Some("zcfrag"), true), 1);
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
        let stacked = stacked_devices(r#"[{"ifname":"zf0","link":"va","mtu":4148}]"#).unwrap();
        let n = native_devices(&d, &stacked);
        assert_eq!(n.len(), 1);
        assert_eq!((n[0].name.as_str(), n[0].mtu.as_str()), ("va", "4148"));
        assert_eq!(n[0].what(), "native on virtio1");
        fs::remove_dir_all(&d).unwrap();
    }
}
