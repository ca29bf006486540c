//! zcman: writes the man pages of the zcnet tools (`zcctl.1`, `zcbench.1`,
//! `zcddp-*.1`, and one a subcommand: `zcctl-frag.1`, ...) from the same
//! clap definitions the tools parse their command lines with.

use clap::{Command, CommandFactory, Parser};
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "zcman", version)]
#[command(about = "Write the man pages of the zcnet tools (section 1) into a directory")]
struct Cli {
    /// The directory the pages go to (created when missing)
    #[arg(long, value_name = "DIR", default_value = "target/man")]
    out: PathBuf,
}

/// Every tool's command.
pub fn tools() -> Vec<Command> {
    vec![
        zcctl::cli::Cli::command(),
        zcbench::cli::Cli::command(),
        zcddp::cli::Mpa::command(),
        zcddp::cli::Ping::command(),
        zcddp::cli::Copy::command(),
        zcddp::cli::Poll::command(),
        zcddp::cli::Verbs::command(),
    ]
}

/// Writes `cmd`'s page as NAME.1 and one a subcommand (NAME-SUB.1); the
/// files' names.
fn write(cmd: Command, dir: &Path) -> io::Result<Vec<String>> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let name = cmd.get_name().to_string();
    let mut written = Vec::new();
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    std::fs::write(dir.join(format!("{name}.1")), page)?;
    written.push(format!("{name}.1"));
    for sub in cmd.get_subcommands() {
        let full = format!("{name}-{}", sub.get_name());
        // Leaked: clap takes static names, and zcman is short-lived.
        let sub = sub
            .clone()
            .name(full.clone().leak() as &'static str)
            .version(cmd.get_version().unwrap_or_default().to_string().leak() as &'static str);
        let mut page = Vec::new();
        clap_mangen::Man::new(sub).render(&mut page)?;
        std::fs::write(dir.join(format!("{full}.1")), page)?;
        written.push(format!("{full}.1"));
    }
    Ok(written)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let run = || -> io::Result<usize> {
        std::fs::create_dir_all(&cli.out)?;
        let mut n = 0;
        for t in tools() {
            n += write(t, &cli.out)?.len();
        }
        Ok(n)
    };
    match run() {
        Ok(n) => {
            println!("zcman: {n} pages in {}", cli.out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zcman: {}: {e}", cli.out.display());
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_is_on_its_page() {
        let dir = std::env::temp_dir().join(format!("zcman-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for t in tools() {
            let files = write(t.clone(), &dir).unwrap();
            let page = std::fs::read_to_string(dir.join(&files[0])).unwrap();
            assert!(page.starts_with(".ie"), "{}", files[0]);
            let mut t = t;
            t.build();
            for a in t.get_arguments() {
                if let Some(l) = a.get_long() {
                    // roff escapes the dashes.
                    assert!(page.contains(&l.replace('-', "\\-")), "{}: --{l}", files[0]);
                }
            }
        }
        assert!(dir.join("zcctl-admit.1").is_file());
        assert!(dir.join("zcbench-ddp-serve.1").is_file());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
