//! One module per subcommand. Each exposes its clap arguments and a `run` that
//! returns `Err(message)` for `main` to print and turn into exit status 1.

pub mod bench;
pub mod change;
pub mod config;
pub mod demo;
pub mod demo_nat64;
pub mod dns64;
pub mod generate;
pub mod nat64;
pub mod run;
pub mod show;
pub mod socket;
pub mod sync;
pub mod translate;

/// What a subcommand returns: nothing, or a message for the user. Messages start
/// with the file they are about (`FILE: …`, or `FILE:LINE:COLUMN: …` for a config
/// error), the form editors and grep understand.
pub type CmdResult = Result<(), String>;

/// Logs of the long-running subcommands without a `[log]` section go to standard
/// error as text; RUST_LOG overrides the level (default info).
pub fn init_logging() {
    let _ = sixgate_control::logging::init(&sixgate_config::LogSettings::default());
}
