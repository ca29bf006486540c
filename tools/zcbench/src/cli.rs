//! zcbench's command line: `zcbench serve|tcp|ddp-serve|ddp [OPTIONS]`.
//! Exit status 0 on success, 1 when the measurement failed, 2 on a bad
//! command line.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `zcbench serve`'s port.
pub const DEFAULT_PORT: u16 = 5301;
/// `zcbench ddp-serve`'s port.
pub const DDP_PORT: u16 = 5302;
/// Largest message either side accepts.
pub const MAX_SIZE: usize = 16 << 20;
/// zcddp's latency operations, in the order they run.
pub const LAT_OPS: [&str; 4] = ["send", "write", "read", "wsend"];

#[derive(Parser, Debug)]
#[command(name = "zcbench", version, args_override_self = true)]
#[command(
    about = "Measure a TCP or zcddp path between two hosts: latency by message size, bandwidth by write size, CPU time per byte",
    after_help = "Run `zcbench serve` (or `ddp-serve`) on the receiver, then `zcbench tcp` (or \
`ddp`) --connect RECEIVER on the sender: it prints tables, and with --json FILE or -J the \
same results as JSON.\n\nEnvironment: ZCNET_ACCEL and ZCNET_FLAVOUR are reported as they \
are; ZCBENCH_CQ=syscall and ZCBENCH_RQ=syscall make ddp and ddp-serve take completions and \
post receives through system calls rather than the rings.\n\nExit status: 0 on success, 1 \
when the measurement failed (a module it needs that is not loaded is named), 2 on a bad \
command line."
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// The receiver of `zcbench tcp` (port 5301); it ends when the client quits
    Serve {
        /// Where to listen
        #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:5301")]
        listen: String,
    },
    /// Plain TCP or zcsock: ping-pong latency by message size, stream bandwidth by write size
    Tcp(Tcp),
    /// The zcddp peer of `zcbench ddp` (port 5302); needs zcddp.ko
    DdpServe {
        /// Where to listen
        #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:5302")]
        listen: String,
        /// Ask the peer for markers
        #[arg(long)]
        markers: bool,
    },
    /// zcddp: Send, RDMA Write and RDMA Read latency, RDMA Write bandwidth; needs zcddp.ko
    Ddp(Ddp),
}

/// What every client reports and where.
#[derive(Args, Debug, Clone)]
pub struct Report {
    /// The receiver: ADDR[:PORT]
    #[arg(long, value_name = "ADDR", required = true)]
    pub connect: String,
    /// Also write the results as JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Print the results as JSON on stdout instead of the tables (as iperf3 -J)
    #[arg(short = 'J')]
    pub json_stdout: bool,
    /// The run's label in the report
    #[arg(long, value_name = "L")]
    pub label: Option<String>,
    /// Ping-pongs per latency size
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub iters: u64,
    /// About how long each bandwidth size runs
    #[arg(long, value_name = "S", default_value_t = 1.0, value_parser = seconds)]
    pub seconds: f64,
}

/// How `zcbench tcp` moves its bytes with zcsock.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZcsockMode {
    /// Regions on both ends: pages by reference and remapped
    Region,
    /// zcsock on, heap buffers on both ends
    Ordinary,
}

#[derive(Args, Debug, Clone)]
pub struct Tcp {
    #[command(flatten)]
    pub report: Report,
    /// Switch zcsock on at both ends (needs zcsock.ko; none: plain TCP)
    #[arg(long, value_name = "MODE")]
    pub zcsock: Option<ZcsockMode>,
    /// Latency message sizes (4,64,1K,...; K and M suffixes), or none
    #[arg(long, value_name = "LIST", default_value = "4,16,64,256,1K,4K,16K,32K", value_parser = sizes)]
    pub lat_sizes: Sizes,
    /// Bandwidth write sizes, or none
    #[arg(long, value_name = "LIST", default_value = "4K,16K,64K,256K,1M", value_parser = sizes)]
    pub bw_sizes: Sizes,
    /// The receiver checks every N-th page's tags (0: no check)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub check_every: usize,
}

#[derive(Args, Debug, Clone)]
pub struct Ddp {
    #[command(flatten)]
    pub report: Report,
    /// Ask for CRCs
    #[arg(long)]
    pub crc: bool,
    /// Latency message sizes (up to 1M), or none
    #[arg(long, value_name = "LIST", default_value = "4,64,1K,4K,16K,64K,256K,1M", value_parser = sizes)]
    pub lat_sizes: Sizes,
    /// Latency operations: send, write, read, wsend
    #[arg(long, value_name = "OPS", default_value = "send,write,read", value_parser = lat_ops)]
    pub lat_ops: Ops,
    /// RDMA Write bandwidth sizes (up to 1M), or none
    #[arg(long, value_name = "LIST", default_value = "4K,16K,64K,256K,1M", value_parser = sizes)]
    pub bw_sizes: Sizes,
}

/// A list of sizes in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes(pub Vec<usize>);

/// A list of zcddp latency operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ops(pub Vec<String>);

/// `4,1K,2M` (or `none`): each 1 byte to 16 MiB.
pub fn sizes(s: &str) -> Result<Sizes, String> {
    if s == "none" {
        return Ok(Sizes(Vec::new()));
    }
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
            let n = n.saturating_mul(mul);
            if n == 0 || n > MAX_SIZE {
                return Err(format!("size '{v}' out of range 1..16M"));
            }
            Ok(n)
        })
        .collect::<Result<_, _>>()
        .map(Sizes)
}

fn lat_ops(s: &str) -> Result<Ops, String> {
    let ops: Vec<String> = s.split(',').map(str::to_string).collect();
    match ops.iter().find(|op| !LAT_OPS.contains(&op.as_str())) {
        Some(op) => Err(format!("no operation {op} (send, write, read, wsend)")),
        None => Ok(Ops(ops)),
    }
}

fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86400.0 => Ok(v),
        _ => Err(format!("'{s}': seconds, more than 0 and at most 86400")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn size_lists() {
        assert_eq!(sizes("4,1K,2M").unwrap().0, vec![4, 1024, 2 << 20]);
        assert!(sizes("0").is_err());
        assert!(sizes("x").is_err());
        assert!(sizes("32M").is_err());
        assert!(sizes("none").unwrap().0.is_empty());
    }

    #[test]
    fn the_spellings_the_scripts_use() {
        let c = Cli::try_parse_from([
            "zcbench",
            "tcp",
            "--connect",
            "10.0.0.2:5301",
            "--label",
            "x",
            "--lat-sizes",
            "none",
            "--bw-sizes",
            "64K",
            "--seconds",
            "0.5",
            "--check-every",
            "64",
            "--json",
            "/tmp/j",
            "--zcsock",
            "region",
        ])
        .unwrap();
        let Cmd::Tcp(t) = c.cmd else { panic!() };
        assert_eq!(t.zcsock, Some(ZcsockMode::Region));
        assert_eq!((t.bw_sizes.0.clone(), t.check_every), (vec![65536], 64));
        let c = Cli::try_parse_from([
            "zcbench",
            "ddp",
            "--connect",
            "x",
            "--lat-ops",
            "send",
            "--crc",
            "--iters",
            "300",
        ])
        .unwrap();
        let Cmd::Ddp(d) = c.cmd else { panic!() };
        assert_eq!(d.lat_ops.0, ["send"]);
        assert_eq!(d.lat_sizes.0.len(), 8, "ddp's own default sizes");
        assert!(Cli::try_parse_from([
            "zcbench",
            "ddp",
            "--connect",
            "x",
            "--lat-ops",
            "write,poke"
        ])
        .is_err());
        assert!(Cli::try_parse_from(["zcbench", "tcp", "--connect", "x", "--iters", "0"]).is_err());
        assert!(Cli::try_parse_from(["zcbench", "tcp", "--lat-sizes", "4"]).is_err());
        assert!(Cli::try_parse_from(["zcbench", "ddp-serve", "--markers"]).is_ok());
        assert!(Cli::try_parse_from(["zcbench", "serve", "--crc"]).is_err());
    }
}
