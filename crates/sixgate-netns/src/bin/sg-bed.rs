//! `sg-bed`: the namespace bed for shell scripts (benchmarks, experiments).
//!
//! Builds the standard bed, starts the translator in the gateway, runs one command
//! with the bed described in environment variables, then tears everything down,
//! also when the command fails or on Ctrl-C. Its exit status is the command's.
//!
//! ```text
//! sg-bed --translator tayga -- sh -c \
//!   'ip netns exec $SG_V4HOST iperf3 -s -D; sleep 0.5;
//!    ip netns exec $SG_V6HOST iperf3 -c $SG_V4HOST_AS_V6 -t 10'
//! sg-bed cleanup      # remove beds of crashed runs
//! ```
//!
//! Variables: `SG_V6HOST`, `SG_GW`, `SG_ROUTER`, `SG_V4HOST` (namespace names),
//! `SG_TUN` (the translator's TUN device in `SG_GW`), `SG_TRANSLATOR`
//! (`sixgate`/`tayga`), `SG_V6HOST_ADDR`, `SG_V4HOST_ADDR`, `SG_V6HOST_AS_V4`,
//! `SG_V4HOST_AS_V6`, `SG_ROUTER_AS_V6`.

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use sixgate_netns::{
    Dataplane, Dut, Topology, TopologyOptions, addr, check_host, cleanup_stale, interrupt,
};

/// Run a command against the sixgate namespace test bed.
#[derive(Debug, Parser)]
#[command(name = "sg-bed", version)]
struct Cli {
    #[command(subcommand)]
    sub: Option<Sub>,
    /// The translator in the gateway.
    #[arg(long, value_enum, default_value_t = Which::Tayga)]
    translator: Which,
    /// The sixgate executable (with --translator sixgate).
    #[arg(long, value_name = "PATH", default_value = "sixgate")]
    sixgate: PathBuf,
    /// sixgate's data plane.
    #[arg(long, default_value = "tun")]
    dataplane: String,
    /// Extra TOML merged into sixgate's generated config, e.g. $'[daemon]\nworkers = 2'.
    #[arg(long, value_name = "TOML", default_value = "")]
    extra_toml: String,
    /// MTU of the router's interface towards the v4 host.
    #[arg(long, value_name = "MTU")]
    v4_link_mtu: Option<u32>,
    /// MTU of the gateway's interface towards the v6 host.
    #[arg(long, value_name = "MTU")]
    v6_link_mtu: Option<u32>,
    /// Permanent neighbour entries on every link (no ARP/ND during measurements).
    #[arg(long)]
    static_neighbours: bool,
    /// Receive/transmit queues of the gateway's veth links (XDP: one worker each).
    #[arg(long, value_name = "N", default_value_t = 1)]
    queues: u32,
    /// The command to run (after `--`), in the caller's namespace.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// Remove namespaces and scratch directories of crashed runs, then exit.
    Cleanup,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Which {
    Sixgate,
    Tayga,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sg-bed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<ExitCode, String> {
    interrupt::install().map_err(|e| e.to_string())?;
    check_host()?;
    if let Some(Sub::Cleanup) = cli.sub {
        for what in cleanup_stale().map_err(|e| e.to_string())? {
            println!("removed {what}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some((program, args)) = cli.command.split_first() else {
        return Err("no command given; usage: sg-bed [OPTIONS] -- COMMAND [ARGS...]".into());
    };
    let translator = match cli.translator {
        Which::Tayga => Dut::Tayga,
        Which::Sixgate => Dut::Sixgate {
            binary: cli.sixgate.clone(),
            dataplane: Dataplane::parse(&cli.dataplane).map_err(|e| e.to_string())?,
            extra_toml: cli.extra_toml.clone(),
        },
    };
    translator.check_available()?;
    let bed = Topology::build(translator.bed_options(TopologyOptions {
        v4_link_mtu: cli.v4_link_mtu,
        v6_link_mtu: cli.v6_link_mtu,
        static_neighbours: cli.static_neighbours,
        queues: cli.queues,
        ..TopologyOptions::default()
    }))
    .map_err(|e| e.to_string())?;
    let running = bed.start(&translator).map_err(|e| e.to_string())?;
    eprintln!(
        "sg-bed: {} ready in {} ms; running {program}",
        translator.describe(),
        running.ready_after().as_millis()
    );
    let mut child = Command::new(program)
        .args(args)
        .env("SG_V6HOST", bed.v6host.name())
        .env("SG_GW", bed.gateway.name())
        .env("SG_ROUTER", bed.router.name())
        .env("SG_V4HOST", bed.v4host.name())
        .env("SG_TUN", running.tun())
        .env("SG_TRANSLATOR", translator.name())
        .env("SG_V6HOST_ADDR", addr::V6_HOST.to_string())
        .env("SG_V4HOST_ADDR", addr::V4_HOST.to_string())
        .env("SG_V6HOST_AS_V4", addr::V6_HOST_AS_V4.to_string())
        .env("SG_V4HOST_AS_V6", addr::V4_HOST_AS_V6.to_string())
        .env("SG_ROUTER_AS_V6", addr::ROUTER_AS_V6.to_string())
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    // The command shares our process group, so Ctrl-C reaches it directly; a
    // SIGTERM sent to sg-bed alone is passed on by killing it.
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if interrupt::requested() {
            let _ = child.kill();
            break child.wait().map_err(|e| e.to_string())?;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Err(e) = running.check_running() {
        eprintln!("sg-bed: {e}");
    }
    let stopped = running.stop().map_err(|e| e.to_string())?;
    if !stopped.stdout.trim().is_empty() {
        eprintln!(
            "sg-bed: {} printed on exit:\n{}",
            stopped.name, stopped.stdout
        );
    }
    if let Err(e) = stopped.check_clean() {
        eprintln!("sg-bed: {e}");
    }
    drop(bed);
    if interrupt::requested() {
        return Err("interrupted; the bed was removed".into());
    }
    Ok(match status.code() {
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}
