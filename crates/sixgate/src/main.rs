//! `sixgate`: the IPv4/IPv6 translator's command line.
//!
//! Each subcommand lives in its own file under `cmd/`; adding one (run, show, bench,
//! demo, dns64) means a new file there and a new variant in [`Command`].

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod config_man;
mod pref64;

/// IPv4/IPv6 translator: SIIT, NAT64, 464XLAT CLAT, MAP-T BR and CE, DNS64
///
/// One gateway for every IPv4/IPv6 translation mode ([translator] mode):
/// stateless SIIT (RFC 7915, RFC 6052 prefixes, RFC 7757 EAM), stateful NAT64
/// (RFC 6146), the customer side of 464XLAT (CLAT, RFC 6877) and MAP-T Border
/// Relay and Customer Edge (RFC 7599), with a DNS64 server (RFC 6147) and PREF64
/// Router Advertisements (RFC 8781). It runs live on a TUN device or AF_XDP
/// (sixgate run), offline from one capture to another (sixgate translate),
/// and is driven at runtime by the control commands (show, eam, pool4,
/// bib, session, reload, config save). The configuration file is
/// described in sixgate.toml(5) and docs/config.md.
#[derive(Debug, Parser)]
#[command(name = "sixgate", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Translate a capture offline: every packet of a pcap through the translator.
    Translate(cmd::translate::Args),
    /// Run the gateway: translate live traffic on a TUN device or AF_XDP
    /// ([daemon] dataplane), with DNS64, PREF64, metrics and the control API
    /// (foreground; stop with SIGINT or SIGTERM).
    Run(cmd::run::Args),
    /// Work with configuration files.
    #[command(subcommand)]
    Config(cmd::config::Command),
    /// Show the translator at work on this machine (needs root).
    ///
    /// Builds a namespace test bed (IPv6-only host, gateway, IPv4 router,
    /// IPv4-only web server), runs the translator in the gateway, pings and fetches
    /// a page across it, prints its counters, and removes everything (also on
    /// failure or Ctrl-C). --mode nat64: stateful NAT64 and DNS64; the client
    /// resolves an A-only name, fetches the page, and the demo shows sessions, BIB,
    /// a runtime pool4 add and the counters.
    Demo(cmd::demo::Args),
    /// Run the DNS64 server (RFC 6147) of a file's [dns64] section (foreground;
    /// stop with SIGINT or SIGTERM).
    Dns64(cmd::dns64::Args),
    /// Show what the running daemon is doing (its API socket; see docs/control.md).
    Show(cmd::show::Args),
    /// Change the running daemon's RFC 7757 EAM table.
    #[command(subcommand)]
    Eam(cmd::change::Eam),
    /// Change the running daemon's NAT64 pool4.
    #[command(subcommand)]
    Pool4(cmd::change::Pool4),
    /// Change the running daemon's static NAT64 BIB entries.
    #[command(subcommand)]
    Bib(cmd::change::Bib),
    /// The running daemon's NAT64 sessions (a MAP-T CE: its NAPT44's).
    #[command(subcommand)]
    Session(cmd::change::Session),
    /// Make the running daemon re-read its configuration file (as SIGHUP).
    Reload(cmd::change::ReloadArgs),
    /// NAT64 logging (docs/logging.md): who had a public address and port.
    #[command(subcommand)]
    Nat64(cmd::nat64::Nat64),
    /// NAT64 state sync between nodes (docs/ha.md): drain this node.
    #[command(subcommand)]
    Sync(cmd::sync::Sync),
    /// Write manual pages or shell completions (the install steps use it:
    /// docs/packaging.md).
    #[command(subcommand)]
    Generate(cmd::generate::Command),
    /// Measure a translator (RFC 8219 / RFC 9693): a namespace bed, DUT presets
    /// (kernel, nat44, TAYGA, sixgate), throughput, frame loss, latency, stateful
    /// tests and charts (needs root).
    Bench(Box<cmd::bench::Args>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Translate(args) => cmd::translate::run(&args),
        Command::Run(args) => cmd::run::run(&args),
        Command::Nat64(c) => cmd::nat64::run(&c),
        Command::Config(c) => cmd::config::run(&c),
        Command::Demo(args) => cmd::demo::run(&args),
        Command::Dns64(args) => cmd::dns64::run(&args),
        Command::Show(args) => cmd::show::run(&args),
        Command::Eam(c) => cmd::change::eam(&c),
        Command::Pool4(c) => cmd::change::pool4(&c),
        Command::Bib(c) => cmd::change::bib(&c),
        Command::Session(c) => cmd::change::session(&c),
        Command::Reload(a) => cmd::change::reload(&a),
        Command::Sync(c) => cmd::sync::run(&c),
        Command::Generate(c) => cmd::generate::run(&c),
        Command::Bench(args) => cmd::bench::run(*args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Where the operator reads the daemon's log, not only on stderr.
            if sixgate_control::logging::logs_elsewhere() {
                tracing::error!("{e}");
            }
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
