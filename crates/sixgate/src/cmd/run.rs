//! `sixgate run`: the gateway. Sets up the TUN device, its routes and one worker
//! per queue (see `sixgate-tun` and docs/tun.md), runs in the foreground until
//! SIGINT or SIGTERM, then takes everything down (unless `--keep`) and prints a
//! one-line summary of the counters.

use std::path::PathBuf;

use super::CmdResult;

/// Arguments of `sixgate run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Configuration file (TOML, see docs/config.md): [translator], [daemon], [tun].
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// On exit leave the TUN device and its routes in place (as `[tun] keep = true`).
    #[arg(long)]
    pub keep: bool,
}

pub fn run(args: &Args) -> CmdResult {
    super::init_logging();

    let mut loaded = sixgate_config::load(&args.config).map_err(|e| e.to_string())?;
    tracing::info!(
        config = %args.config.display(),
        "sixgate {} starting: {}",
        env!("CARGO_PKG_VERSION"),
        loaded.describe()
    );
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    // A CLAT may have to ask the network for its PLAT prefix first (RFC 7050).
    crate::plat_discovery::settle_plat_prefix(&mut loaded)
        .map_err(|e| format!("sixgate run: {e}"))?;
    // [dns64] serves next to the gateway. Its sockets are bound before the
    // gateway drops privileges, so port 53 works with `[daemon] user`.
    let dns64 = match &loaded.dns64 {
        Some(d) => {
            let t = sixgate_dns64::ServerThread::spawn(d)
                .map_err(|e| format!("sixgate run: [dns64]: {e}"))?;
            let addrs: Vec<String> = t.local_addrs().iter().map(|a| a.to_string()).collect();
            tracing::info!("dns64 listening on {} (UDP and TCP)", addrs.join(", "));
            Some(t)
        }
        None => None,
    };
    // [pref64]: Router Advertisements (RFC 8781); its raw socket, too, is opened
    // before privileges are dropped.
    let pref64 = match &loaded.pref64 {
        Some(p) => {
            let t =
                crate::pref64::Pref64Thread::spawn(p).map_err(|e| format!("sixgate run: {e}"))?;
            tracing::info!(
                interface = %p.interface,
                "pref64: advertising {}/{} (lifetime {} s) every {} s",
                p.prefix.addr(),
                p.prefix.len(),
                p.lifetime,
                p.interval
            );
            Some(t)
        }
        None => None,
    };
    let gw = Gateway::start(&loaded, args.keep).map_err(|e| format!("sixgate run: {e}"))?;
    let why = gw.wait();
    tracing::info!("stopping: {why}");
    let failed = matches!(why, sixgate_tun::Stop::WorkerFailed(_));
    let report = gw.stop();
    println!("sixgate: {}", report.totals.summary());
    if let Some(n) = report.totals.nat64_summary() {
        println!("sixgate: {n}");
    }
    if report.workers.len() > 1 {
        let per: Vec<String> = report
            .workers
            .iter()
            .enumerate()
            .map(|(i, w)| format!("w{i} rx {} tx {}", w.io.rx_packets, w.io.tx_packets))
            .collect();
        println!("sixgate: per worker: {}", per.join(", "));
    }
    if let Some(t) = dns64 {
        println!("sixgate dns64: {:?}", t.stop());
    }
    if let Some(t) = pref64 {
        println!("sixgate pref64: {:?}", t.stop());
    }
    for e in &report.errors {
        tracing::error!("{e}");
    }
    if failed {
        return Err(format!("sixgate run: stopped: {why}"));
    }
    Ok(())
}

/// The data plane `[daemon] dataplane` picks; both report alike.
enum Gateway {
    Tun(sixgate_tun::Gateway),
    Xdp(sixgate_xdp::Gateway),
}

impl Gateway {
    fn start(
        loaded: &sixgate_config::Loaded,
        keep: bool,
    ) -> Result<Gateway, sixgate_tun::SetupError> {
        Ok(match loaded.daemon.dataplane {
            sixgate_config::Dataplane::Tun => {
                Gateway::Tun(sixgate_tun::Gateway::start(loaded, keep)?)
            }
            sixgate_config::Dataplane::Xdp => Gateway::Xdp(sixgate_xdp::Gateway::start(loaded)?),
        })
    }

    fn wait(&self) -> sixgate_tun::Stop {
        match self {
            Gateway::Tun(g) => g.wait(),
            Gateway::Xdp(g) => g.wait(),
        }
    }

    fn stop(self) -> sixgate_tun::Report {
        match self {
            Gateway::Tun(g) => g.stop(),
            Gateway::Xdp(g) => g.stop(),
        }
    }
}
