//! zcbench: measures a TCP path between two hosts (network namespaces in the
//! test guest) the way the papers do: latency as half the ping-pong round trip
//! by message size, stream bandwidth by write size, and CPU time per byte on
//! both ends. Later issues add zcnet modes beside `plain`.
//!
//! ```text
//! zcbench serve [--listen ADDR]                      (on the receiver)
//! zcbench tcp --connect ADDR [--json FILE] [--label L]
//!             [--lat-sizes LIST] [--bw-sizes LIST] [--iters N] [--seconds S]
//! ```

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const DEFAULT_PORT: u16 = 5301;
const OP_PINGPONG: u8 = 1;
const OP_STREAM: u8 = 2;
const OP_QUIT: u8 = 3;
/// Largest message either side accepts (bounds the buffers).
const MAX_SIZE: usize = 16 << 20;

/// CPU time (user + system) of the calling thread, in clock ticks.
fn thread_cpu_ticks() -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/thread-self/stat") else {
        return 0;
    };
    // Fields after the command name (which may contain spaces) start at ')'.
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after ')'.
    let get = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    get(11) + get(12)
}

/// Busy time of the whole machine (every CPU: all but idle and iowait), in
/// clock ticks, from the first line of /proc/stat.
fn system_busy_ticks() -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/stat") else {
        return 0;
    };
    let v: Vec<u64> = s
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let total: u64 = v.iter().take(8).sum();
    total.saturating_sub(v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0))
}

fn ticks_per_second() -> u64 {
    // USER_HZ is 100 on every architecture Linux supports today.
    100
}

fn read_header(s: &mut TcpStream) -> io::Result<(u8, usize, u64)> {
    let mut h = [0u8; 16];
    s.read_exact(&mut h)?;
    let size = u32::from_be_bytes([h[4], h[5], h[6], h[7]]) as usize;
    let arg = u64::from_be_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]);
    Ok((h[0], size, arg))
}

fn write_header(s: &mut TcpStream, op: u8, size: usize, arg: u64) -> io::Result<()> {
    let mut h = [0u8; 16];
    h[0] = op;
    h[4..8].copy_from_slice(&(size as u32).to_be_bytes());
    h[8..16].copy_from_slice(&arg.to_be_bytes());
    s.write_all(&h)
}

fn serve(listen: &str) -> io::Result<()> {
    let l = TcpListener::bind(listen)?;
    eprintln!("zcbench: serving on {listen}");
    let mut buf = vec![0u8; MAX_SIZE];
    for c in l.incoming() {
        let mut s = c?;
        s.set_nodelay(true)?;
        while let Ok((op, size, arg)) = read_header(&mut s) {
            if size > MAX_SIZE {
                break;
            }
            match op {
                OP_PINGPONG => {
                    for _ in 0..arg {
                        s.read_exact(&mut buf[..size])?;
                        s.write_all(&buf[..size])?;
                    }
                }
                OP_STREAM => {
                    // Receive `arg` bytes in reads of `size`, then report what it cost.
                    let t0 = thread_cpu_ticks();
                    let mut left = arg;
                    while left > 0 {
                        let want = (left as usize).min(size.max(1));
                        let n = s.read(&mut buf[..want])?;
                        if n == 0 {
                            return Err(io::ErrorKind::UnexpectedEof.into());
                        }
                        left -= n as u64;
                    }
                    let cpu = thread_cpu_ticks() - t0;
                    write_header(&mut s, OP_STREAM, 0, cpu)?;
                }
                OP_QUIT => return Ok(()),
                _ => break,
            }
        }
    }
    Ok(())
}

struct LatRow {
    size: usize,
    iters: u64,
    median_us: f64,
    mean_us: f64,
}

struct BwRow {
    size: usize,
    bytes: u64,
    secs: f64,
    mbytes_per_s: f64,
    rx_cpu_ns_per_byte: f64,
    tx_cpu_ns_per_byte: f64,
    /// Every CPU's busy time per byte: both ends when they share a machine.
    sys_cpu_ns_per_byte: f64,
}

fn median(v: &mut [f64]) -> f64 {
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

fn latency(s: &mut TcpStream, size: usize, iters: u64) -> io::Result<LatRow> {
    let mut buf = vec![0x5au8; size];
    write_header(s, OP_PINGPONG, size, iters)?;
    let mut half_rtts = Vec::with_capacity(iters as usize);
    for _ in 0..iters {
        let t = Instant::now();
        s.write_all(&buf)?;
        s.read_exact(&mut buf)?;
        half_rtts.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
    }
    let mean = half_rtts.iter().sum::<f64>() / half_rtts.len().max(1) as f64;
    Ok(LatRow {
        size,
        iters,
        median_us: median(&mut half_rtts),
        mean_us: mean,
    })
}

fn bandwidth(s: &mut TcpStream, size: usize, seconds: f64) -> io::Result<BwRow> {
    let buf = vec![0xa5u8; size];
    // Calibrate: send for the given time, then tell the receiver exactly how
    // much came so it can stop; the byte count goes first so it knows.
    // A short probe measures the rate to size the real run.
    let probe = Instant::now();
    let mut probe_bytes = 0u64;
    write_header(s, OP_STREAM, size, (size as u64) * 64)?;
    for _ in 0..64 {
        s.write_all(&buf)?;
        probe_bytes += size as u64;
    }
    read_header(s)?;
    let rate = probe_bytes as f64 / probe.elapsed().as_secs_f64().max(1e-6);
    let writes = ((rate * seconds) as u64 / size as u64).max(16);
    let total = writes * size as u64;
    write_header(s, OP_STREAM, size, total)?;
    let tx0 = thread_cpu_ticks();
    let sys0 = system_busy_ticks();
    let t = Instant::now();
    for _ in 0..writes {
        s.write_all(&buf)?;
    }
    let (_, _, rx_ticks) = read_header(s)?;
    let secs = t.elapsed().as_secs_f64();
    let tx_ticks = thread_cpu_ticks() - tx0;
    let sys_ticks = system_busy_ticks().saturating_sub(sys0);
    let ns_per_tick = 1e9 / ticks_per_second() as f64;
    Ok(BwRow {
        size,
        bytes: total,
        secs,
        mbytes_per_s: total as f64 / secs / 1e6,
        rx_cpu_ns_per_byte: rx_ticks as f64 * ns_per_tick / total as f64,
        tx_cpu_ns_per_byte: tx_ticks as f64 * ns_per_tick / total as f64,
        sys_cpu_ns_per_byte: sys_ticks as f64 * ns_per_tick / total as f64,
    })
}

fn connect(addr: &str) -> io::Result<TcpStream> {
    // The server may still be starting: retry for a bounded time.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match TcpStream::connect(addr) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn env_or(k: &str, d: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| d.to_string())
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

struct Opts {
    connect: String,
    json: Option<String>,
    label: String,
    lat_sizes: Vec<usize>,
    bw_sizes: Vec<usize>,
    iters: u64,
    seconds: f64,
}

fn parse_sizes(s: &str) -> Result<Vec<usize>, String> {
    s.split(',')
        .map(|v| {
            let v = v.trim();
            let (n, mul) = match v.strip_suffix(['K', 'k']) {
                Some(n) => (n, 1024),
                None => match v.strip_suffix(['M', 'm']) {
                    Some(n) => (n, 1 << 20),
                    None => (v, 1),
                },
            };
            let n: usize = n.parse().map_err(|_| format!("bad size '{v}'"))?;
            let n = n * mul;
            if n == 0 || n > MAX_SIZE {
                return Err(format!("size '{v}' out of range 1..16M"));
            }
            Ok(n)
        })
        .collect()
}

fn tcp(o: &Opts) -> io::Result<()> {
    let mut s = connect(&o.connect)?;
    s.set_nodelay(true)?;
    let mut lat = Vec::new();
    for &size in &o.lat_sizes {
        lat.push(latency(&mut s, size, o.iters)?);
    }
    let mut bw = Vec::new();
    for &size in &o.bw_sizes {
        bw.push(bandwidth(&mut s, size, o.seconds)?);
    }
    write_header(&mut s, OP_QUIT, 0, 0)?;
    s.shutdown(Shutdown::Both).ok();

    let kernel = kernel_release();
    let accel = env_or("ZCNET_ACCEL", "unknown");
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let flavour = env_or("ZCNET_FLAVOUR", "default");
    println!(
        "zcbench tcp [{}]  kernel {kernel} ({flavour})  accel {accel}  cpus {cpus}",
        o.label
    );
    println!("latency (half round trip, {} ping-pongs per size)", o.iters);
    println!("{:>10} {:>12} {:>12}", "bytes", "median_us", "mean_us");
    for r in &lat {
        println!("{:>10} {:>12.2} {:>12.2}", r.size, r.median_us, r.mean_us);
    }
    println!("bandwidth (stream, about {} s per size)", o.seconds);
    println!(
        "{:>10} {:>12} {:>14} {:>14} {:>15}",
        "write", "MB/s", "rx_cpu_ns/B", "tx_cpu_ns/B", "all_cpus_ns/B"
    );
    for r in &bw {
        println!(
            "{:>10} {:>12.1} {:>14.3} {:>14.3} {:>15.3}",
            r.size,
            r.mbytes_per_s,
            r.rx_cpu_ns_per_byte,
            r.tx_cpu_ns_per_byte,
            r.sys_cpu_ns_per_byte
        );
    }
    if let Some(path) = &o.json {
        let mut j = String::new();
        j.push_str(&format!(
            "{{\"tool\":\"zcbench\",\"test\":\"tcp\",\"label\":{:?},\"kernel\":{kernel:?},\"flavour\":{flavour:?},\"accel\":{accel:?},\"cpus\":{cpus},\"iters\":{},\"latency\":[",
            o.label, o.iters
        ));
        for (i, r) in lat.iter().enumerate() {
            if i > 0 {
                j.push(',');
            }
            j.push_str(&format!(
                "{{\"bytes\":{},\"iters\":{},\"median_us\":{:.3},\"mean_us\":{:.3}}}",
                r.size, r.iters, r.median_us, r.mean_us
            ));
        }
        j.push_str("],\"bandwidth\":[");
        for (i, r) in bw.iter().enumerate() {
            if i > 0 {
                j.push(',');
            }
            j.push_str(&format!(
                "{{\"write\":{},\"bytes\":{},\"seconds\":{:.4},\"mbytes_per_s\":{:.3},\"rx_cpu_ns_per_byte\":{:.4},\"tx_cpu_ns_per_byte\":{:.4},\"sys_cpu_ns_per_byte\":{:.4}}}",
                r.size,
                r.bytes,
                r.secs,
                r.mbytes_per_s,
                r.rx_cpu_ns_per_byte,
                r.tx_cpu_ns_per_byte,
                r.sys_cpu_ns_per_byte
            ));
        }
        j.push_str("]}\n");
        std::fs::write(path, j)?;
    }
    Ok(())
}

const USAGE: &str = "usage:
  zcbench serve [--listen ADDR]
  zcbench tcp --connect ADDR [--json FILE] [--label L] [--lat-sizes 4,64,1K,...]
              [--bw-sizes 4K,64K,1M,...] [--iters N] [--seconds S]";

fn run(args: &[String]) -> Result<(), String> {
    let mut it = args.iter();
    let cmd = it.next().ok_or(USAGE)?;
    let mut listen = format!("0.0.0.0:{DEFAULT_PORT}");
    let mut o = Opts {
        connect: String::new(),
        json: None,
        label: "plain".into(),
        lat_sizes: parse_sizes("4,16,64,256,1K,4K,16K,32K")?,
        bw_sizes: parse_sizes("4K,16K,64K,256K,1M")?,
        iters: 1000,
        seconds: 1.0,
    };
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--listen" => listen = val()?,
            "--connect" => o.connect = val()?,
            "--json" => o.json = Some(val()?),
            "--label" => o.label = val()?,
            "--lat-sizes" => o.lat_sizes = parse_sizes(&val()?)?,
            "--bw-sizes" => o.bw_sizes = parse_sizes(&val()?)?,
            "--iters" => o.iters = val()?.parse().map_err(|_| "bad --iters")?,
            "--seconds" => o.seconds = val()?.parse().map_err(|_| "bad --seconds")?,
            _ => return Err(format!("unknown option {a}\n{USAGE}")),
        }
    }
    match cmd.as_str() {
        "serve" => serve(&listen).map_err(|e| format!("serve: {e}")),
        "tcp" => {
            if o.connect.is_empty() {
                return Err(format!("tcp needs --connect\n{USAGE}"));
            }
            if !o.connect.contains(':') {
                o.connect = format!("{}:{DEFAULT_PORT}", o.connect);
            }
            tcp(&o).map_err(|e| format!("tcp: {e}"))
        }
        _ => Err(USAGE.into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zcbench: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_sizes("4,1K,2M").unwrap(), vec![4, 1024, 2 << 20]);
        assert!(parse_sizes("0").is_err());
        assert!(parse_sizes("x").is_err());
        assert!(parse_sizes("32M").is_err());
    }

    #[test]
    fn median_odd_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn loopback_round_trip() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        drop(l);
        let a2 = addr.clone();
        let srv = std::thread::spawn(move || serve(&a2));
        let o = Opts {
            connect: addr,
            json: None,
            label: "test".into(),
            lat_sizes: vec![4, 4096],
            bw_sizes: vec![65536],
            iters: 10,
            seconds: 0.05,
        };
        tcp(&o).unwrap();
        srv.join().unwrap().unwrap();
    }
}
