//! The command lines of the zcddp tools (`zcddp-mpa`, `zcddp-ping`,
//! `zcddp-copy`, `zcddp-poll`, `zcddp-verbs`), in one place: the tools
//! parse them and `zcman` writes their man pages from them.
//!
//! Every tool exits 0 on success, 1 when what it ran failed and 2 on a bad
//! command line (clap's status); `zcddp-mpa` also exits 2 on a socket
//! error. A flag given twice takes its last value, and `-s`/`-c` the last
//! of them, as the hand-written parsers before did.

use clap::{Args, Parser};

/// Where the tools meet by default (rping's port).
pub const DEFAULT_PORT: u16 = 7174;

/// What every tool's help ends with: the sides and the module.
macro_rules! side_help {
    () => {
        "\n\nThe server (-s) listens on ADDR:PORT and serves one connection as the \
MPA responder; the client (-c, the default) connects to it and is the MPA initiator. \
Both need zcddp.ko loaded (setsockopt(TCP_ULP, \"zcddp\")): without it they fail with a \
hint to load it (modprobe zcddp)."
    };
}

/// Which side a tool plays, and where: `-s`|`-c`, `-a ADDR`, `-p PORT`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct SideArgs {
    /// Server: accept one connection, the MPA responder
    #[arg(short = 's', overrides_with = "client")]
    pub server: bool,
    /// Client: connect, the MPA initiator (the default)
    #[arg(short = 'c', overrides_with = "server")]
    pub client: bool,
    /// The server's address: where the server listens and the client connects
    #[arg(short = 'a', value_name = "ADDR", required = true)]
    pub addr: String,
    /// The TCP port
    #[arg(short = 'p', value_name = "PORT", default_value_t = DEFAULT_PORT)]
    pub port: u16,
}

impl SideArgs {
    /// The side these arguments ask for.
    pub fn side(&self) -> crate::Side {
        crate::Side {
            server: self.server,
            addr: self.addr.clone(),
            port: self.port,
        }
    }
}

/// RTR types (`--p2p send,write,read`) as `RTR_*` bits.
fn rtr_types(s: &str) -> Result<u8, String> {
    s.split(',').try_fold(0u8, |r, t| {
        Ok(r | match t {
            "send" => crate::RTR_SEND,
            "write" => crate::RTR_WRITE,
            "read" => crate::RTR_READ,
            _ => return Err(format!("unknown RTR type {t} (send, write, read)")),
        })
    })
}

/// Access letters (`--serve MS lwrn`) as `ACCESS_*` bits.
pub fn access_letters(s: &str) -> Result<u32, String> {
    s.chars().try_fold(0u32, |acc, c| {
        Ok(acc
            | match c {
                'l' => crate::ACCESS_LOCAL_WRITE,
                'w' => crate::ACCESS_REMOTE_WRITE,
                'r' => crate::ACCESS_REMOTE_READ,
                'n' => crate::ACCESS_NO_REMOTE_INV,
                '-' => 0,
                _ => return Err(format!("access letters are l, w, r, n and -, not {c}")),
            })
    })
}

/// zcddp-mpa: runs zcddp's MPA start-up on one TCP connection and prints
/// the outcome.
#[derive(Parser, Debug)]
#[command(name = "zcddp-mpa", version, args_override_self = true)]
#[command(
    about = "Run zcddp's MPA start-up on one TCP connection and print the outcome",
    after_help = concat!("It prints `startup ok rev=R crc=C markers_tx=M markers_rx=M p2p=P rtr=T \
ird=I ord=O ms=T peer_pd=TEXT` or `startup error ERRNO state=S ms=T` (T: the call's \
milliseconds), then keeps the connection open --hold ms.\n\n\
--serve MS ACCESS then registers a 4 KiB pattern with ACCESS (letters l, w, r: local write, \
remote write, remote read; n: the peer cannot invalidate it; -: none), posts a 64-byte \
receive, prints `mr stag= addr= len= dead= hash0=`, the completions for MS ms, and \
`mr hash= recv=`.\n\n\
Exit status: 0 on success, 1 when start-up failed, 2 for a usage or socket error \
(`error ...` on stdout).", side_help!())
)]
pub struct Mpa {
    #[command(flatten)]
    pub side: SideArgs,
    /// Ask for CRCs
    #[arg(long)]
    pub crc: bool,
    /// Refuse an outcome other than --crc asks
    #[arg(long)]
    pub crc_strict: bool,
    /// Ask the peer for markers
    #[arg(long)]
    pub markers: bool,
    /// Refuse to send markers
    #[arg(long)]
    pub no_markers: bool,
    /// Peer-to-peer mode (revision 2) with these RTR types (send,write,read)
    #[arg(long, value_name = "TYPES", value_parser = rtr_types)]
    pub p2p: Option<u8>,
    /// MPA revision
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub rev: u8,
    /// Inbound RDMA Read depth
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub ird: u16,
    /// Outbound RDMA Read depth
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub ord: u16,
    /// Private data to send
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub pd: String,
    /// Bound of the whole start-up in ms (0: the module's 10 s)
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub timeout: u32,
    /// Keep the connection open this long after start-up
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub hold: u64,
    /// Attach the ULP but run no start-up
    #[arg(long)]
    pub no_startup: bool,
    /// After start-up, register 4 KiB with ACCESS and serve the peer for MS ms
    #[arg(long, num_args = 2, value_names = ["MS", "ACCESS"], allow_hyphen_values = true)]
    pub serve: Option<Vec<String>>,
}

impl Mpa {
    /// `--serve MS ACCESS` as (ms, `ACCESS_*` bits).
    pub fn serve(&self) -> Result<Option<(u64, u32)>, String> {
        let Some(v) = &self.serve else {
            return Ok(None);
        };
        let ms = v[0]
            .parse()
            .map_err(|_| format!("--serve MS: a number, not '{}'", v[0]))?;
        let access = access_letters(&v[1]).map_err(|e| format!("--serve: {e}"))?;
        Ok(Some((ms, access)))
    }
}

/// zcddp-ping: rping's ping-pong over zcddp.
#[derive(Parser, Debug)]
#[command(name = "zcddp-ping", version, args_override_self = true)]
#[command(disable_version_flag = true)]
#[command(
    about = "rping's ping-pong over zcddp: unmodified rping on soft-iWARP is its peer in either role",
    after_help = concat!("The client advertises a source buffer the server RDMA-Reads and a sink it \
RDMA-Writes back, each answered by a Send, as rping does (-V checks sink == source). \
The client is the MPA initiator. The server serves one connection and ends with \
`server N pings`, the client with `client N pings`.\n\nExit status: 0 when every ping \
completed, 1 on an error, 2 on a bad command line.", side_help!())
)]
pub struct Ping {
    #[command(flatten)]
    pub side: SideArgs,
    /// Pings to run (0: until interrupted)
    #[arg(short = 'C', value_name = "COUNT", default_value_t = 0)]
    pub count: u64,
    /// Buffer size in bytes (16 to 64 MiB)
    #[arg(short = 'S', value_name = "SIZE", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(16..=64 * 1024 * 1024))]
    pub size: u64,
    /// Validate: check each ping's data
    #[arg(short = 'V')]
    pub validate: bool,
    /// Print each ping's data
    #[arg(short = 'v')]
    pub verbose: bool,
    /// Ask for CRCs
    #[arg(long)]
    pub crc: bool,
    /// Ask the peer for markers
    #[arg(long)]
    pub markers: bool,
    /// Print version (-V is rping's validate flag)
    #[arg(long, action = clap::ArgAction::Version)]
    pub version: Option<bool>,
}

/// zcddp-copy: copies a file into a peer's memory with RDMA Writes and
/// reads it back.
#[derive(Parser, Debug)]
#[command(name = "zcddp-copy", version, args_override_self = true)]
#[command(
    about = "Copy a file into a peer's registered memory with RDMA Writes, read it back with RDMA Reads and check it",
    after_help = concat!("The client (-c FILE) RDMA-Writes FILE into a region the server (-s) \
registered, Reads it back and compares it byte for byte; the server checks what landed \
against the client's hash. The client prints `client copied N bytes hash=H ... verified`, \
the server `server received N bytes hash=H verified`.\n\nExit status: 0 when copied and \
verified on both sides, 1 on an error, 2 on a bad command line.", side_help!())
)]
pub struct Copy {
    #[command(flatten)]
    pub side: SideArgs,
    /// Server: also save what it received to OUT
    #[arg(short = 'o', value_name = "OUT")]
    pub out: Option<String>,
    /// Verbose
    #[arg(short = 'v')]
    pub verbose: bool,
    /// Ask for CRCs
    #[arg(long)]
    pub crc: bool,
    /// Ask the peer for markers
    #[arg(long)]
    pub markers: bool,
    /// No out-of-order placement on this side (ZCDDP_OOO 0)
    #[arg(long)]
    pub no_ooo: bool,
    /// Server: watch the region for bytes placed ahead of a hole (prints `watch scans=N ahead=M`)
    #[arg(long)]
    pub watch: bool,
    /// Client: the file to copy (at most 1 GiB)
    #[arg(value_name = "FILE", required_unless_present = "server")]
    pub file: Option<String>,
}

/// zcddp-poll: zcddp's progress without the application, and its readiness
/// for poll(2).
#[derive(Parser, Debug)]
#[command(name = "zcddp-poll", version, args_override_self = true)]
#[command(
    about = "Check zcddp's progress without the application and its readiness for poll(2)",
    after_help = concat!("The server registers a region, sends its address and makes no zcddp call \
for --idle-ms; the client RDMA-Reads the region (served while the server sleeps, within \
--max-read-ms), Writes a page into it, waits --hold-ms and Sends. The server then checks \
poll(2) readiness and the region.\n\nExit status: 0 when every check holds on that side, 1 \
otherwise, 2 on a bad command line.", side_help!())
)]
pub struct Poll {
    #[command(flatten)]
    pub side: SideArgs,
    /// Server: how long it makes no zcddp call
    #[arg(long, value_name = "N", default_value_t = 3000)]
    pub idle_ms: u64,
    /// Client: how long it waits before its last Send
    #[arg(long, value_name = "N", default_value_t = 4000)]
    pub hold_ms: u64,
    /// Client: the RDMA Read's bound
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub max_read_ms: u128,
}

/// zcddp-verbs: the zcddp side of `siw_verbs`.
#[derive(Parser, Debug)]
#[command(name = "zcddp-verbs", version, args_override_self = true)]
#[command(
    about = "The zcddp side of siw_verbs: Send, RDMA Write and RDMA Read both ways, every byte seeded and checked",
    after_help = concat!("Without -L and -B it runs the exchange of siw_verbs.c (-C COUNT rounds) and \
prints `zcddp-verbs: all checked` and `zcddp-verbs: N rounds`; with -L ITERS and/or -B \
SECONDS the timing modes, the client printing `zcddp-verbs: result OP BYTES VALUE UNIT` \
lines.\n\nExit status: 0 only when every check on both sides passed, 1 otherwise, 2 on a \
bad command line.", side_help!())
)]
pub struct Verbs {
    #[command(flatten)]
    pub side: SideArgs,
    /// Bytes each way (1 B to 1 GiB)
    #[arg(short = 'S', value_name = "SIZE", default_value_t = 65536,
          value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub size: u64,
    /// Seed of the patterns
    #[arg(short = 'r', value_name = "SEED", default_value_t = 1)]
    pub seed: u64,
    /// Ask for CRCs
    #[arg(long)]
    pub crc: bool,
    /// Register the regions the peer writes with ZCDDP_ACCESS_NO_REMOTE_INV (out-of-order placement)
    #[arg(long)]
    pub no_remote_inv: bool,
    /// Timing: latency iterations (up to 10^6)
    #[arg(short = 'L', value_name = "ITERS", default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub lat: u64,
    /// Timing: bandwidth seconds (up to 3600)
    #[arg(short = 'B', value_name = "SECONDS", default_value_t = 0.0, value_parser = seconds)]
    pub bw: f64,
    /// Rounds of the exchange on the connection (1 to 10^6)
    #[arg(short = 'C', value_name = "COUNT", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub count: u64,
    /// Receive the peer's data Send through a scatter list of N elements
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub sge: usize,
    /// Timing modes through ZCDDP_POLL_CQ and ZCDDP_POST_RECV, not the rings
    #[arg(long)]
    pub syscall: bool,
    /// Watch this side's region while the peer writes it
    #[arg(long)]
    pub watch: bool,
    /// Bound of each wait for a completion
    #[arg(long, value_name = "MS", default_value_t = 20000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub wait: u32,
}

/// `-B SECONDS`: 0 to 3600.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=3600.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}': seconds from 0 to 3600")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definitions_are_consistent() {
        Mpa::command().debug_assert();
        Ping::command().debug_assert();
        Copy::command().debug_assert();
        Poll::command().debug_assert();
        Verbs::command().debug_assert();
    }

    #[test]
    fn the_spellings_the_suites_use() {
        let m = Mpa::try_parse_from([
            "zcddp-mpa",
            "-s",
            "-a",
            "10.0.0.2",
            "-p",
            "7000",
            "--p2p",
            "write,read",
            "--pd",
            "from-b",
            "--serve",
            "3000",
            "lwrn",
            "--hold",
            "5",
            "--hold",
            "500",
        ])
        .unwrap();
        assert!(m.side.server && !m.side.client);
        assert_eq!(m.p2p, Some(crate::RTR_WRITE | crate::RTR_READ));
        assert_eq!(m.hold, 500, "the last value wins");
        assert_eq!(m.serve().unwrap(), Some((3000, 15)));
        let m = Mpa::try_parse_from(["zcddp-mpa", "-s", "-c", "-a", "x"]).unwrap();
        assert!(!m.side.server, "the last of -s and -c wins");
        assert!(Mpa::try_parse_from(["zcddp-mpa", "-a", "x", "--p2p", "poke"]).is_err());
        let p = Ping::try_parse_from(["zcddp-ping", "-c", "-a", "x", "-S", "64", "-C", "9", "-V"])
            .unwrap();
        assert!(p.validate && p.count == 9 && p.size == 64);
        assert!(Ping::try_parse_from(["zcddp-ping", "-a", "x", "-S", "8"]).is_err());
        let c = Copy::try_parse_from(["zcddp-copy", "-c", "-a", "x", "--crc", "f", "--no-ooo"])
            .unwrap();
        assert_eq!(c.file.as_deref(), Some("f"));
        assert!(Copy::try_parse_from(["zcddp-copy", "-c", "-a", "x"]).is_err());
        assert!(Copy::try_parse_from(["zcddp-copy", "-s", "-a", "x", "-o", "/tmp/o"]).is_ok());
        let v = Verbs::try_parse_from([
            "zcddp-verbs",
            "-s",
            "-a",
            "x",
            "-S",
            "64",
            "-C",
            "1000",
            "-r",
            "11",
            "--sge",
            "3",
        ])
        .unwrap();
        assert_eq!((v.size, v.count, v.seed, v.sge), (64, 1000, 11, 3));
        assert!(Verbs::try_parse_from(["zcddp-verbs", "-a", "x", "--wait", "0"]).is_err());
        assert!(Verbs::try_parse_from(["zcddp-verbs", "-a", "x", "-B", "4000"]).is_err());
        assert!(Poll::try_parse_from(["zcddp-poll", "-a", "x", "--idle-ms", "1"]).is_ok());
    }
}
