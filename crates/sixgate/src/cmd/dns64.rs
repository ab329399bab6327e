//! `sixgate dns64`: the DNS64 server (RFC 6147) on its own, from a file's
//! `[dns64]` section (see docs/config.md and docs/dns64.md). Runs in the
//! foreground until SIGINT or SIGTERM, then prints its counters.

use std::path::PathBuf;

use super::CmdResult;

/// Arguments of `sixgate dns64`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Configuration file (TOML, see docs/config.md) with a [dns64] section; a
    /// [translator] section is optional (its pool6 is then the default prefix).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
}

pub fn run(args: &Args) -> CmdResult {
    super::init_logging();
    let file = sixgate_config::load_dns64(&args.config).map_err(|e| e.to_string())?;
    for w in &file.warnings {
        tracing::warn!("{w}");
    }
    let d = &file.dns64;
    let prefixes: Vec<String> = d
        .prefixes
        .iter()
        .map(|p| format!("{}/{}", p.addr(), p.len()))
        .collect();
    let stats = sixgate_dns64::serve_until_signal(d, |addrs| {
        let addrs: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
        tracing::info!(
            "sixgate dns64 listening on {} (UDP and TCP), prefixes {}, upstream {:?}",
            addrs.join(", "),
            prefixes.join(", "),
            d.upstream
        );
    })
    .map_err(|e| format!("sixgate dns64: {e}"))?;
    println!("sixgate dns64: {}", stats.summary());
    Ok(())
}
