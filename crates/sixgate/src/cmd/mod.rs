//! One module per subcommand. Each exposes its clap arguments and a `run` that
//! returns `Err(message)` for `main` to print and turn into exit status 1.

pub mod bench;
pub mod config;
pub mod demo;
pub mod dns64;
pub mod run;
pub mod translate;

/// What a subcommand returns: nothing, or a message for the user. Messages start
/// with the file they are about (`FILE: …`, or `FILE:LINE:COLUMN: …` for a config
/// error), the form editors and grep understand.
pub type CmdResult = Result<(), String>;

/// Logs of the long-running subcommands go to standard error; RUST_LOG overrides
/// the level (default info).
pub fn init_logging() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}
