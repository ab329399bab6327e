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
    }
}
