//! zcctl's command line: `zcctl [--json] [COMMAND]`, `status` when no
//! command is given. Exit status 0 on success, 1 on an error (a module not
//! loaded: with a hint), 2 on a bad command line; `admit` also 3 (refused)
//! and 4 (no answer).

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::Ipv4Addr;

#[derive(Parser, Debug)]
#[command(name = "zcctl", version, args_override_self = true)]
#[command(
    about = "Show which zcnet modules are loaded and what they count; zcfrag's explicit admission",
    after_help = "Environment: ZCCTL_SYSFS (/sys), ZCCTL_DEBUGFS (/sys/kernel/debug) and \
ZCCTL_PROC (/proc) move where zcctl reads.\n\nExit status: 0 on success, 1 on an error \
(a module that is not loaded is named, with `modprobe MODULE`), 2 on a bad command line; \
admit: 3 refused, 4 no answer."
)]
pub struct Cli {
    /// Print JSON on stdout instead of the tables (every command)
    #[arg(short = 'j', long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub cmd: Option<Cmd>,
}

/// A zcnet module.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Module {
    Zcfrag,
    Zcsock,
    Zcddp,
}

impl Module {
    pub fn name(self) -> &'static str {
        match self {
            Module::Zcfrag => "zcfrag",
            Module::Zcsock => "zcsock",
            Module::Zcddp => "zcddp",
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// The modules, their state and reference counts (the default)
    Status,
    /// zcfrag devices: lower device, MTU, settings, admissions, counters
    Frag {
        /// Only this device
        dev: Option<String>,
    },
    /// Ask DST's zcfrag for a speculation slot for the flow and show the answer (explicit admission)
    Admit(Flow),
    /// Give the flow's slot back
    Release(Flow),
    /// Where the flow's request stands
    Query(Flow),
    /// The modules' debugfs counters (zcsock, zcddp)
    Counters {
        /// Only this module's
        module: Option<Module>,
    },
    /// zcsock's counters of this network namespace (/proc/net/zcsock_stat), or those of a process's zcsock sockets
    Sock {
        /// A process: the counters of its zcsock sockets (pidfd_getfd: ptrace access needed)
        pid: Option<i32>,
        /// Only this descriptor of the process
        fd: Option<i32>,
    },
    /// zcddp's connections, their registrations and the counters of this network namespace (/proc/net/zcddp_conns, /proc/net/zcddp_stat)
    Ddp,
}

/// A flow for explicit admission: `DEV DST [tcp|udp] [src ADDR] [mac MAC]
/// [ports S:D]` (words, as `ip` takes them).
#[derive(Args, Debug, Clone)]
pub struct Flow {
    /// The zcfrag device
    pub dev: String,
    /// The receiver's IPv4 address
    pub dst: Ipv4Addr,
    /// tcp (default) or udp; src ADDR: the source address (default: DEV's first); mac MAC: the receiver's MAC address (default: from ARP); ports SPORT:DPORT (default 0:0, the whole host pair)
    #[arg(value_name = "tcp|udp|src ADDR|mac MAC|ports S:D")]
    pub words: Vec<String>,
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
    fn the_spellings_the_suites_use() {
        let c = Cli::try_parse_from(["zcctl"]).unwrap();
        assert!(c.cmd.is_none() && !c.json);
        let c = Cli::try_parse_from([
            "zcctl",
            "admit",
            "zf0",
            "198.18.0.2",
            "tcp",
            "src",
            "198.18.0.11",
        ])
        .unwrap();
        match c.cmd {
            Some(Cmd::Admit(f)) => assert_eq!(f.words, ["tcp", "src", "198.18.0.11"]),
            c => panic!("{c:?}"),
        }
        let c = Cli::try_parse_from(["zcctl", "sock", "12", "3", "--json"]).unwrap();
        assert!(c.json);
        assert!(matches!(
            c.cmd,
            Some(Cmd::Sock {
                pid: Some(12),
                fd: Some(3)
            })
        ));
        assert!(Cli::try_parse_from(["zcctl", "sock", "x"]).is_err());
        assert!(Cli::try_parse_from(["zcctl", "counters", "zcbogus"]).is_err());
        assert!(Cli::try_parse_from(["zcctl", "admit", "zf0", "not-an-address"]).is_err());
    }
}
