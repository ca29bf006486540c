//! `zcctl ddp`: zcddp's connections with their registrations
//! (`/proc/net/zcddp_conns`) and its counters (`/proc/net/zcddp_stat`), of
//! the current network namespace.

use serde_json::{json, Map, Value};
use std::fs;
use std::io::ErrorKind;
use std::path::Path;

/// What `/proc/net/zcddp_conns` lists: connection lines, and under each
/// its registrations (lines starting with a tab).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// Each connection's line, and its registrations' lines.
    pub conns: Vec<(String, Vec<String>)>,
    /// A line saying the kernel listed no more.
    pub cut: Option<String>,
}

/// Parses the listing's text (comment lines are the header).
pub fn parse(text: &str) -> Listing {
    let mut l = Listing::default();
    for line in text.lines() {
        if let Some(mr) = line.strip_prefix('\t') {
            if let Some(c) = l.conns.last_mut() {
                c.1.push(mr.trim().to_string());
            }
        } else if line.starts_with("# ") && line.contains("more not listed") {
            l.cut = Some(line.trim_start_matches("# ").to_string());
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            l.conns.push((line.trim().to_string(), Vec::new()));
        }
    }
    l
}

fn missing(path: &Path) -> i32 {
    eprintln!(
        "zcctl: zcddp is not loaded ({} does not exist in this network namespace): modprobe zcddp",
        path.display()
    );
    1
}

/// A listing line as JSON: its leading words by the names in `names`
/// (further ones under "flags"), its `key=value` words by key.
pub fn fields(line: &str, names: &[&str]) -> Value {
    let mut m = Map::new();
    m.insert("line".into(), Value::from(line));
    let mut names = names.iter();
    let mut flags = Vec::new();
    for w in line.split_whitespace() {
        match (w.split_once('='), names.next()) {
            (Some((k, v)), _) => {
                m.insert(k.to_string(), crate::value(v));
            }
            (None, Some(n)) => {
                m.insert(n.to_string(), Value::from(w));
            }
            (None, None) => flags.push(Value::from(w)),
        }
    }
    if !flags.is_empty() {
        m.insert("flags".into(), Value::Array(flags));
    }
    Value::Object(m)
}

/// The listing and the counters' text as one JSON document.
fn to_json(conns: &Path, l: &Listing, stat: &str) -> Value {
    let c: Vec<Value> = l
        .conns
        .iter()
        .map(|(c, mrs)| {
            let mut v = fields(c, &["local", "remote", "role"]);
            let regs: Vec<Value> = mrs.iter().map(|m| fields(m, &["kind"])).collect();
            v["registrations"] = Value::Array(regs);
            v
        })
        .collect();
    json!({
        "path": conns.display().to_string(),
        "connections": c,
        "cut": l.cut,
        "counters": crate::pairs(stat),
    })
}

/// Prints the connections, registrations and counters.
pub fn run(proc_root: &Path, json: bool) -> i32 {
    let conns = proc_root.join("net/zcddp_conns");
    let stat = proc_root.join("net/zcddp_stat");
    let text = match fs::read_to_string(&conns) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return missing(&conns),
        Err(e) => {
            eprintln!("zcctl: {}: {e}", conns.display());
            return 1;
        }
    };
    let l = parse(&text);
    if json {
        return match fs::read_to_string(&stat) {
            Ok(t) => {
                crate::print_json(&to_json(&conns, &l, &t));
                0
            }
            Err(e) if e.kind() == ErrorKind::NotFound => missing(&stat),
            Err(e) => {
                eprintln!("zcctl: {}: {e}", stat.display());
                1
            }
        };
    }
    let regs: usize = l.conns.iter().map(|c| c.1.len()).sum();
    println!(
        "zcddp connections ({}): {} connections, {regs} registrations",
        conns.display(),
        l.conns.len()
    );
    for (c, mrs) in &l.conns {
        println!("  {c}");
        for m in mrs {
            println!("    {m}");
        }
    }
    if let Some(cut) = &l.cut {
        println!("  ({cut})");
    }
    match fs::read_to_string(&stat) {
        Ok(t) => {
            println!("zcddp counters ({}):", stat.display());
            for line in t.lines() {
                let mut w = line.split_whitespace();
                if let (Some(k), Some(v)) = (w.next(), w.next()) {
                    println!("  {k:<28} {v:>14}");
                }
            }
            0
        }
        Err(e) if e.kind() == ErrorKind::NotFound => missing(&stat),
        Err(e) => {
            eprintln!("zcctl: {}: {e}", stat.display());
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_listing() {
        let t = "# local remote role\n# \tmr stag\n\
                 198.18.0.1:4000 198.18.0.2:7174 initiator rev=2 sq=16/16\n\
                 \tmr stag=0x00001234 addr=0x1000 len=65536 access=l-- pages=16\n\
                 198.18.0.1:4001 198.18.0.2:7174 responder rev=1 sq=0/64\n\
                 # 3 more not listed\n";
        let l = parse(t);
        assert_eq!(l.conns.len(), 2);
        assert_eq!(l.conns[0].1.len(), 1);
        assert!(l.conns[0].1[0].starts_with("mr stag=0x00001234"));
        assert!(l.conns[1].0.contains("responder"));
        assert_eq!(l.cut.as_deref(), Some("3 more not listed"));
        let j = to_json(Path::new("/p"), &l, "ZcddpCurrSockets 2\n");
        assert_eq!(j["connections"][0]["role"], "initiator");
        assert_eq!(j["connections"][0]["rev"], 2);
        assert_eq!(j["connections"][0]["registrations"][0]["len"], 65536);
        assert_eq!(j["connections"][0]["registrations"][0]["kind"], "mr");
        assert_eq!(j["counters"]["ZcddpCurrSockets"], 2);
        let text = serde_json::to_string(&j).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), j);
    }

    #[test]
    fn reads_a_fake_tree() {
        let d = std::env::temp_dir().join(format!("zcctl-ddp-{}", std::process::id()));
        assert_eq!(run(&d, false), 1);
        fs::create_dir_all(d.join("net")).unwrap();
        fs::write(d.join("net/zcddp_conns"), "# header\n").unwrap();
        fs::write(d.join("net/zcddp_stat"), "ZcddpCurrSockets 0\n").unwrap();
        assert_eq!(run(&d, false), 0);
        assert_eq!(run(&d, true), 0);
        fs::remove_dir_all(&d).unwrap();
    }
}
