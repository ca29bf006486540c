//! Explicit admission control for zcfrag devices (`zcctl admit`, `zcctl
//! release`): the `SIOCDEVPRIVATE` ioctl of Documentation/networking/zcfrag.rst.

use clap::error::ErrorKind;
use clap::CommandFactory;
use std::fs;
use std::net::{Ipv4Addr, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::{Duration, Instant};
use zcctl::cli::{Cli, Flow};

const SIOCDEVPRIVATE: u64 = 0x89f0;
const REQUEST: u32 = 1;
const QUERY: u32 = 2;
const RELEASE: u32 = 3;

extern "C" {
    fn ioctl(fd: i32, request: u64, ...) -> i32;
}

/// `struct zcfrag_admission` (32 bytes, native byte order for the integers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    pub cmd: u32,
    pub state: u32,
    pub peer: [u8; 6],
    pub protocol: u8,
    pub slot: u8,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub sport: u16,
    pub dport: u16,
    pub tries: u32,
}

impl Default for Admission {
    fn default() -> Self {
        Admission {
            cmd: 0,
            state: 0,
            peer: [0; 6],
            protocol: 0,
            slot: 0,
            src: Ipv4Addr::UNSPECIFIED,
            dst: Ipv4Addr::UNSPECIFIED,
            sport: 0,
            dport: 0,
            tries: 0,
        }
    }
}

impl Admission {
    pub fn encode(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&self.cmd.to_ne_bytes());
        b[4..8].copy_from_slice(&self.state.to_ne_bytes());
        b[8..14].copy_from_slice(&self.peer);
        b[14] = self.protocol;
        b[15] = self.slot;
        b[16..20].copy_from_slice(&self.src.octets());
        b[20..24].copy_from_slice(&self.dst.octets());
        b[24..26].copy_from_slice(&self.sport.to_ne_bytes());
        b[26..28].copy_from_slice(&self.dport.to_ne_bytes());
        b[28..32].copy_from_slice(&self.tries.to_ne_bytes());
        b
    }

    pub fn decode(b: &[u8; 32]) -> Self {
        let u32_at = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut peer = [0u8; 6];
        peer.copy_from_slice(&b[8..14]);
        Admission {
            cmd: u32_at(0),
            state: u32_at(4),
            peer,
            protocol: b[14],
            slot: b[15],
            src: Ipv4Addr::new(b[16], b[17], b[18], b[19]),
            dst: Ipv4Addr::new(b[20], b[21], b[22], b[23]),
            sport: u16::from_ne_bytes([b[24], b[25]]),
            dport: u16::from_ne_bytes([b[26], b[27]]),
            tries: u32_at(28),
        }
    }

    pub fn state_name(&self) -> &'static str {
        match self.state {
            0 => "none",
            1 => "pending",
            2 => "granted",
            3 => "refused",
            4 => "no-answer",
            _ => "?",
        }
    }
}

/// One ioctl on `dev`; returns the kernel's answer.
fn call(dev: &str, a: &Admission) -> Result<Admission, String> {
    let sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| format!("socket: {e}"))?;
    let mut data = a.encode();
    // struct ifreq: the name (16 bytes), then the union whose first member
    // here is `ifr_data`, a pointer; 40 bytes in all on 64-bit.
    let mut ifr = [0u8; 40];
    let name = dev.as_bytes();
    if name.is_empty() || name.len() > 15 {
        return Err(format!("bad device name '{dev}'"));
    }
    ifr[..name.len()].copy_from_slice(name);
    let p = data.as_mut_ptr() as usize;
    ifr[16..16 + size_of::<usize>()].copy_from_slice(&p.to_ne_bytes());
    // SAFETY: `ifr` is a valid struct ifreq whose ifr_data points to `data`
    // (32 bytes, alive for the call); the kernel reads and writes only those.
    let rc = unsafe { ioctl(sock.as_raw_fd(), SIOCDEVPRIVATE, ifr.as_mut_ptr()) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        let why = match e.raw_os_error() {
            Some(1) => " (CAP_NET_ADMIN is needed)",
            Some(95) => " (not a zcfrag device?)",
            Some(28) => " (the request table is full)",
            Some(22) => " (bad flow or MAC address)",
            _ => "",
        };
        return Err(format!("{dev}: {e}{why}"));
    }
    Ok(Admission::decode(&data))
}

/// The first IPv4 address of `dev`.
fn dev_ipv4(dev: &str) -> Option<Ipv4Addr> {
    let out = Command::new("ip")
        .args(["-j", "-4", "addr", "show", "dev", dev])
        .output()
        .ok()?;
    first_ipv4(&String::from_utf8_lossy(&out.stdout))
}

/// The first IPv4 address in `ip -j -4 addr show` output.
pub fn first_ipv4(ip_json: &str) -> Option<Ipv4Addr> {
    let links: serde_json::Value = serde_json::from_str(ip_json).ok()?;
    links
        .as_array()?
        .iter()
        .filter_map(|l| l["addr_info"].as_array())
        .flatten()
        .find_map(|a| a["local"].as_str()?.parse().ok())
}

/// The MAC address of `ip` on `dev` from the ARP table.
fn arp_lookup(dev: &str, ip: Ipv4Addr) -> Option<[u8; 6]> {
    let text = fs::read_to_string("/proc/net/arp").ok()?;
    parse_arp(&text, dev, ip)
}

pub fn parse_arp(text: &str, dev: &str, ip: Ipv4Addr) -> Option<[u8; 6]> {
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        // IP address, HW type, Flags, HW address, Mask, Device
        if f.len() >= 6 && f[5] == dev && f[0].parse::<Ipv4Addr>().ok() == Some(ip) {
            let flags = u32::from_str_radix(f[2].trim_start_matches("0x"), 16).ok()?;
            if flags & 0x2 == 0 {
                continue; // ATF_COM: not resolved
            }
            return parse_mac(f[3]);
        }
    }
    None
}

pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut m = [0u8; 6];
    let mut it = s.split(':');
    for b in m.iter_mut() {
        *b = u8::from_str_radix(it.next()?, 16).ok()?;
    }
    it.next().is_none().then_some(m)
}

/// The receiver's MAC address: from the ARP table, resolving it first (one
/// UDP datagram to the discard port) when needed.
fn resolve(dev: &str, src: Ipv4Addr, dst: Ipv4Addr) -> Result<[u8; 6], String> {
    if let Some(m) = arp_lookup(dev, dst) {
        return Ok(m);
    }
    let s = UdpSocket::bind((src, 0)).map_err(|e| format!("bind {src}: {e}"))?;
    let _ = s.send_to(b"", (dst, 9));
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(3) {
        if let Some(m) = arp_lookup(dev, dst) {
            return Ok(m);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("{dst} does not answer ARP on {dev}"))
}

pub struct Args {
    pub dev: String,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    pub src: Option<Ipv4Addr>,
    pub mac: Option<[u8; 6]>,
    pub ports: (u16, u16),
}

/// The flow's words (`[tcp|udp] [src ADDR] [mac MAC] [ports SPORT:DPORT]`).
pub fn parse_args(f: &Flow) -> Result<Args, String> {
    let usage = "wanted [tcp|udp] [src ADDR] [mac MAC] [ports SPORT:DPORT]";
    let mut a = Args {
        dev: f.dev.clone(),
        dst: f.dst,
        protocol: 6,
        src: None,
        mac: None,
        ports: (0, 0),
    };
    let mut it = f.words.iter();
    while let Some(w) = it.next() {
        let mut val = || it.next().ok_or(format!("'{w}' needs a value; {usage}"));
        match w.as_str() {
            "tcp" => a.protocol = 6,
            "udp" => a.protocol = 17,
            "src" => a.src = Some(val()?.parse().map_err(|_| "bad src address")?),
            "mac" => a.mac = Some(parse_mac(val()?).ok_or("bad MAC address")?),
            "ports" => {
                let (s, d) = val()?
                    .split_once(':')
                    .ok_or("bad ports: wanted SPORT:DPORT")?;
                a.ports = (
                    s.parse().map_err(|_| "bad port")?,
                    d.parse().map_err(|_| "bad port")?,
                );
            }
            _ => return Err(format!("unknown word '{w}'; {usage}")),
        }
    }
    Ok(a)
}

/// `zcctl admit|release|query`: 0 granted (or released), 3 refused, 4 no
/// answer, 1 on errors.
pub fn run(cmd: &str, f: &Flow, json: bool) -> i32 {
    let a = match parse_args(f) {
        Ok(a) => a,
        Err(e) => {
            // As clap reports a bad argument (exit status 2).
            let _ = Cli::command()
                .error(ErrorKind::ValueValidation, format!("zcctl {cmd}: {e}"))
                .print();
            return 2;
        }
    };
    let Some(src) = a.src.or_else(|| dev_ipv4(&a.dev)) else {
        eprintln!("zcctl: {} has no IPv4 address (give one with 'src')", a.dev);
        return 1;
    };
    let mut req = Admission {
        protocol: a.protocol,
        src,
        dst: a.dst,
        sport: a.ports.0,
        dport: a.ports.1,
        ..Default::default()
    };
    let proto = if a.protocol == 6 { "tcp" } else { "udp" };
    let flow = format!("{}: {src} > {} {proto}", a.dev, a.dst);
    // The answer: as a line, or as JSON.
    let say = |state: &str, slot: Option<u8>, line: &str| {
        if json {
            crate::print_json(&serde_json::json!({
                "command": cmd,
                "device": a.dev,
                "src": src.to_string(),
                "dst": a.dst.to_string(),
                "protocol": proto,
                "sport": a.ports.0,
                "dport": a.ports.1,
                "state": state,
                "slot": slot,
            }));
        } else {
            println!("{flow}: {line}");
        }
    };
    let res = match cmd {
        "release" => {
            req.cmd = RELEASE;
            call(&a.dev, &req).map(|_| {
                say("released", None, "released");
                0
            })
        }
        "query" => {
            req.cmd = QUERY;
            call(&a.dev, &req).map(|r| {
                say(r.state_name(), None, r.state_name());
                0
            })
        }
        _ => (|| {
            req.cmd = REQUEST;
            req.peer = match a.mac {
                Some(m) => m,
                None => resolve(&a.dev, src, a.dst)?,
            };
            let mut r = call(&a.dev, &req)?;
            // The driver retries and gives up by itself; wait for that.
            req.cmd = QUERY;
            let t0 = Instant::now();
            while r.state == 1 && t0.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(10));
                r = call(&a.dev, &req)?;
            }
            Ok(match r.state {
                2 => {
                    let l = format!("granted, slot {} at the receiver", r.slot);
                    say("granted", Some(r.slot), &l);
                    0
                }
                3 => {
                    say("refused", None, "refused (every slot at the receiver is busy); the stream runs on the normal path");
                    3
                }
                4 => {
                    say("no-answer", None, "no answer (the receiver runs no zcfrag, or the frames were lost); the stream runs on the normal path");
                    4
                }
                s => {
                    say(r.state_name(), None, r.state_name());
                    if s == 1 {
                        4
                    } else {
                        1
                    }
                }
            })
        })(),
    };
    match res {
        Ok(rc) => rc,
        Err(e) => {
            eprintln!("zcctl: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_round_trips() {
        let a = Admission {
            cmd: REQUEST,
            state: 2,
            peer: [2, 0, 0, 0, 0, 9],
            protocol: 6,
            slot: 3,
            src: Ipv4Addr::new(198, 18, 0, 1),
            dst: Ipv4Addr::new(198, 18, 0, 2),
            sport: 1,
            dport: 5201,
            tries: 2,
        };
        let b = a.encode();
        assert_eq!(b[14], 6);
        assert_eq!(&b[16..24], &[198, 18, 0, 1, 198, 18, 0, 2]);
        assert_eq!(Admission::decode(&b), a);
    }

    #[test]
    fn arp_table() {
        let t = "IP address       HW type     Flags       HW address            Mask     Device\n\
                 198.18.0.2       0x1         0x2         52:54:00:18:00:02     *        zf0\n\
                 198.18.0.3       0x1         0x0         00:00:00:00:00:00     *        zf0\n";
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert_eq!(
            parse_arp(t, "zf0", ip("198.18.0.2")),
            Some([0x52, 0x54, 0, 0x18, 0, 2])
        );
        assert_eq!(
            parse_arp(t, "zf0", ip("198.18.0.3")),
            None,
            "incomplete entry"
        );
        assert_eq!(parse_arp(t, "va", ip("198.18.0.2")), None);
        assert_eq!(parse_mac("52:54:00:18:00"), None);
    }

    #[test]
    fn words_and_ip_json() {
        let f = |w: &[&str]| Flow {
            dev: "zf0".into(),
            dst: Ipv4Addr::new(198, 18, 0, 2),
            words: w.iter().map(|s| s.to_string()).collect(),
        };
        let a = parse_args(&f(&["udp", "src", "198.18.0.11", "ports", "1:2"])).unwrap();
        assert_eq!((a.protocol, a.ports), (17, (1, 2)));
        assert_eq!(a.src, Some(Ipv4Addr::new(198, 18, 0, 11)));
        assert!(parse_args(&f(&["src"])).is_err());
        assert!(parse_args(&f(&["sctp"])).is_err());
        let j = r#"[{"ifindex":3,"ifname":"zf0","addr_info":[{"family":"inet","local":"198.18.0.1","prefixlen":24}]}]"#;
        assert_eq!(first_ipv4(j), Some(Ipv4Addr::new(198, 18, 0, 1)));
        assert_eq!(first_ipv4("[]"), None);
    }
}
