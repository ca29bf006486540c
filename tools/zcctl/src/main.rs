//! zcctl: shows which zcnet modules are loaded and what they count.
//!
//! ```text
//! zcctl [status]          modules, their state and reference counts
//! zcctl counters [MODULE] the modules' counters (needs debugfs mounted)
//! ```

use std::fs;
use std::path::Path;
use std::process::ExitCode;

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

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sys = std::env::var("ZCCTL_SYSFS").unwrap_or_else(|_| "/sys".into());
    let dbg = std::env::var("ZCCTL_DEBUGFS").unwrap_or_else(|_| "/sys/kernel/debug".into());
    let rc = match args.first().map(String::as_str) {
        None | Some("status") => status(Path::new(&sys)),
        Some("counters") => counters(Path::new(&dbg), args.get(1).map(String::as_str)),
        Some("-h" | "--help" | "help") => {
            println!("usage: zcctl [status] | zcctl counters [MODULE]");
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
}
