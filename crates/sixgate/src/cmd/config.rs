//! `sixgate config …`: configuration files.

use std::path::PathBuf;

use super::CmdResult;

/// `sixgate config` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Load and validate a configuration file, then summarise it.
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
            let loaded = sixgate_config::load(file).map_err(|e| e.to_string())?;
            // Warnings (values against an RFC) do not fail the check.
            for w in &loaded.warnings {
                eprintln!("{w}");
            }
            println!("{}: ok ({})", file.display(), loaded.describe());
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
