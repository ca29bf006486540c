//! zcbench's JSON report (`--json FILE`, `-J`): one document a run, built
//! with serde so that any label (control characters included) stays valid
//! JSON. Its layout: `tool`, `test` (`tcp` or `ddp`), the run's
//! description, then `latency` and `bandwidth` rows.

use serde::Serialize;

/// Rounds to `places` decimals (the report's precision).
pub fn round(v: f64, places: i32) -> f64 {
    let m = 10f64.powi(places);
    (v * m).round() / m
}

/// What every report starts with.
#[derive(Serialize)]
pub struct Head {
    pub tool: &'static str,
    pub test: &'static str,
    pub label: String,
}

/// The machine and kernel the run was on.
#[derive(Serialize)]
pub struct Machine {
    pub kernel: String,
    pub flavour: String,
    pub accel: String,
    pub cpus: usize,
}

/// `zcbench tcp`'s report.
#[derive(Serialize)]
pub struct Tcp {
    #[serde(flatten)]
    pub head: Head,
    pub zcsock: &'static str,
    pub check_every: usize,
    #[serde(flatten)]
    pub machine: Machine,
    pub iters: u64,
    pub latency: Vec<TcpLat>,
    pub bandwidth: Vec<TcpBw>,
}

#[derive(Serialize)]
pub struct TcpLat {
    pub bytes: usize,
    pub iters: u64,
    pub median_us: f64,
    pub mean_us: f64,
}

#[derive(Serialize)]
pub struct TcpBw {
    pub write: usize,
    pub bytes: u64,
    pub seconds: f64,
    pub mbytes_per_s: f64,
    pub rx_cpu_ns_per_byte: f64,
    pub tx_cpu_ns_per_byte: f64,
    pub sys_cpu_ns_per_byte: f64,
    pub pages_checked: u64,
    pub pages_bad: u64,
    pub rx_minor_faults: u64,
    /// With zcsock: its counters over the run (null: unknown).
    #[serde(flatten)]
    pub zcsock: Option<ZcsockCounters>,
}

#[derive(Serialize)]
pub struct ZcsockCounters {
    pub tx_pages_by_ref: Option<u64>,
    pub tx_bytes_copied: Option<u64>,
    pub tx_cow_faults: Option<u64>,
    pub rx_pages_remapped: Option<u64>,
    pub rx_bytes_copied: Option<u64>,
}

/// `zcbench ddp`'s report.
#[derive(Serialize)]
pub struct Ddp {
    #[serde(flatten)]
    pub head: Head,
    pub crc: bool,
    #[serde(flatten)]
    pub machine: Machine,
    pub cq_ring: bool,
    pub rq_ring: bool,
    pub iters: u64,
    pub latency: Vec<DdpLat>,
    pub bandwidth: Vec<DdpBw>,
}

#[derive(Serialize)]
pub struct DdpLat {
    pub op: &'static str,
    pub bytes: usize,
    pub iters: u64,
    pub median_us: f64,
    pub mean_us: f64,
}

#[derive(Serialize)]
pub struct DdpBw {
    pub op: &'static str,
    pub write: usize,
    pub bytes: u64,
    pub seconds: f64,
    pub mbytes_per_s: f64,
    pub tx_cpu_ns_per_byte: f64,
    pub sys_cpu_ns_per_byte: f64,
}

/// Writes `doc` to `file` (when given) and to stdout (when `stdout`).
pub fn emit(doc: &impl Serialize, file: Option<&str>, stdout: bool) -> std::io::Result<()> {
    if file.is_none() && !stdout {
        return Ok(());
    }
    let text = serde_json::to_string(doc)?;
    if let Some(path) = file {
        std::fs::write(path, format!("{text}\n"))?;
    }
    if stdout {
        println!("{text}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_with_control_characters_stay_json() {
        let doc = Ddp {
            head: Head {
                tool: "zcbench",
                test: "ddp",
                label: "a\u{1}b\"c\\\n\u{1b}[0m\u{7f}".into(),
            },
            crc: true,
            machine: Machine {
                kernel: "7.2".into(),
                flavour: "default".into(),
                accel: "tcg".into(),
                cpus: 2,
            },
            cq_ring: true,
            rq_ring: false,
            iters: 3,
            latency: vec![DdpLat {
                op: "send",
                bytes: 4,
                iters: 3,
                median_us: round(12.34567, 3),
                mean_us: f64::NAN,
            }],
            bandwidth: vec![],
        };
        let text = serde_json::to_string(&doc).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["label"], "a\u{1}b\"c\\\n\u{1b}[0m\u{7f}");
        assert_eq!(v["latency"][0]["median_us"], 12.346);
        assert!(v["latency"][0]["mean_us"].is_null(), "NaN is null, not NaN");
        assert_eq!(v["test"], "ddp");
    }
}
