//! `sixgate bench`: the RFC 8219 / RFC 9693 tester of `sixgate-bench` (bed,
//! DUT presets, throughput, frame loss, latency, stateful tests, charts). The
//! `sixgate` DUT preset runs this very binary's `run`.

use super::CmdResult;

pub use sixgate_bench::cli::Args;

/// Run `sixgate bench …`.
pub fn run(args: Args) -> CmdResult {
    let me = std::env::current_exe().map_err(|e| format!("sixgate bench: own path: {e}"))?;
    sixgate_bench::cli::run(args, &me)
}
