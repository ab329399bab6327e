//! `sixgate config …`: configuration files.

use std::path::PathBuf;

use super::CmdResult;

/// `sixgate config` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Load and validate a configuration file, then summarise it: a gateway's
    /// file (`sixgate run`) or a DNS64-only one (`sixgate dns64`). Every error
    /// is reported (FILE:LINE:COLUMN each), and warnings for valid values that
    /// are likely mistakes.
    Check {
        /// The TOML file (see docs/config.md).
        file: PathBuf,
    },
    /// Write the running daemon's configuration (derived from its live state)
    /// to FILE, or print it: restarting from it reproduces the same state.
    Save {
        /// Where to write it; standard output without.
        file: Option<PathBuf>,
        #[command(flatten)]
        socket: super::socket::SocketArg,
    },
}

pub fn run(cmd: &Command) -> CmdResult {
    match cmd {
        Command::Check { file } => {
            let checked = sixgate_config::check_file(file).map_err(|errors| {
                // Every error, one a line; the count last.
                let n = errors.len();
                let mut lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
                if n > 1 {
                    lines.push(format!("{}: {n} errors", file.display()));
                }
                lines.join("\n")
            })?;
            // Warnings (values against an RFC, likely mistakes) do not fail the check.
            for w in checked.warnings() {
                eprintln!("{w}");
            }
            println!("{}: ok ({})", file.display(), checked.describe());
            Ok(())
        }
        Command::Save { file, socket } => {
            let c: sixgate_control::api::types::RunningConfig =
                socket.client()?.get("/v1/config")?;
            match file {
                None => print!("{}", c.toml),
                Some(f) => {
                    sixgate_control::api::server::write_atomically(f, &c.toml)
                        .map_err(|e| format!("{}: {e}", f.display()))?;
                    eprintln!("running configuration saved to {}", f.display());
                }
            }
            Ok(())
        }
    }
}
