//! `sixgate run`: the gateway. Sets up the TUN device, its routes and one worker
//! per queue (see `sixgate-tun` and docs/tun.md), runs in the foreground until
//! SIGINT or SIGTERM, then takes everything down (unless `--keep`) and prints a
//! one-line summary of the counters.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use sixgate_control::ReloadStatus;
use sixgate_control::metrics::{Collect, MetricsServer, Scrape};
use sixgate_dataplane::event_export::{ExportStats, Exporter, Outputs, Prepared};

use super::CmdResult;

/// Arguments of `sixgate run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Configuration file (TOML; sixgate.toml(5), docs/config.md): [translator],
    /// [nat64], [clat], [mapt], [daemon] (dataplane "tun" or "xdp"), [tun],
    /// [xdp], [dns64], [pref64], [metrics], [log], [log_export] (NAT event
    /// export to collectors, docs/logging.md), [sync] (NAT64 state shared
    /// with other nodes, docs/ha.md).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// On exit leave the TUN device and its routes in place (as `[tun] keep = true`;
    /// the TUN data plane only).
    #[arg(long)]
    pub keep: bool,
}

pub fn run(args: &Args) -> CmdResult {
    // First of all: a SIGHUP before the API reloads on it must not kill us.
    let hangups =
        sixgate_dataplane::signals::Hangups::install().map_err(|e| format!("sixgate run: {e}"))?;
    // The file as the running configuration (docs/control.md): runtime changes
    // edit it, `config save` writes it.
    let text = std::fs::read_to_string(&args.config)
        .map_err(|e| format!("{}: {e}", args.config.display()))?;
    let running =
        sixgate_control::running_config::Running::parse(&text, &args.config.display().to_string())?;
    let mut loaded = running.loaded.clone();
    // [log] picks the sink, so logging starts once the file is read; its file or
    // socket is opened now, before privileges are dropped.
    sixgate_control::logging::init(&loaded.log).map_err(|e| format!("sixgate run: {e}"))?;
    tracing::info!(
        config = %args.config.display(),
        "sixgate {} starting: {}",
        env!("CARGO_PKG_VERSION"),
        loaded.describe()
    );
    for w in &loaded.warnings {
        tracing::warn!("{w}");
    }
    // RFC 7422: the formula that answers "who had it?" is the log; write it
    // down with the start time.
    if let Some(n) = &loaded.config.nat64
        && let Ok(Some(d)) = sixgate_core::nat64::Deterministic::plan(n)
    {
        tracing::info!("deterministic NAT: {d}");
    }
    // A CLAT may have to ask the network for its PLAT prefix first (RFC 7050).
    let discovered = sixgate_dns64::plat_discovery::settle_plat_prefix(&mut loaded)
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
    // [metrics]: bound before privileges are dropped; it reports the workers
    // once the gateway has them.
    let reloads = Arc::new(ReloadStatus::default());
    let workers: Arc<OnceLock<sixgate_dataplane::StatsHandle>> = Arc::new(OnceLock::new());
    // The fast path's counters come through the data plane's Live.
    let live: Arc<OnceLock<Arc<sixgate_dataplane::Live>>> = Arc::new(OnceLock::new());
    let exported: Arc<OnceLock<Arc<ExportStats>>> = Arc::new(OnceLock::new());
    let metrics = match &loaded.metrics {
        Some(m) => {
            let collect = collector(
                &loaded,
                &workers,
                &live,
                &exported,
                dns64.as_ref(),
                &reloads,
            );
            let srv =
                MetricsServer::spawn(m.listen, collect).map_err(|e| format!("sixgate run: {e}"))?;
            tracing::info!("metrics on http://{}/metrics", srv.local_addr());
            Some(srv)
        }
        None => None,
    };
    // The API socket is bound before the gateway drops privileges.
    let socket = sixgate_control::api::server::bind(&loaded.daemon.socket)
        .map_err(|e| format!("sixgate run: {e}"))?;
    // [sync] (NAT64 only): its socket bound and its key read before the
    // gateway drops privileges; the thread starts once the workers exist.
    let sync_bound = match loaded
        .sync
        .as_ref()
        .filter(|_| loaded.config.nat64.is_some())
    {
        Some(s) => {
            Some(sixgate_dataplane::sync_thread::bind(s).map_err(|e| format!("sixgate run: {e}"))?)
        }
        None => None,
    };
    // The NAT64 event log (docs/logging.md): [log_export]'s file opened and
    // its sockets made before privileges are dropped.
    let outputs = match &loaded.log_export {
        Some(le) => Outputs::Export(
            Prepared::open(le, loaded.sync.as_ref().map(|s| s.node_id))
                .map_err(|e| format!("sixgate run: {e}"))?,
        ),
        None => Outputs::Log,
    };
    let gw = Gateway::start(&loaded, args.keep).map_err(|e| format!("sixgate run: {e}"))?;
    let exporter = match gw.crew().take_event_rings() {
        Some(rings) => match Exporter::spawn(outputs, rings, gw.crew().epoch()) {
            Ok(x) => {
                let _ = exported.set(x.stats());
                Some(x)
            }
            Err(e) => {
                let _ = gw.stop();
                return Err(format!("sixgate run: cannot start the event exporter: {e}"));
            }
        },
        None => None,
    };
    let sync = match (
        sync_bound,
        &loaded.sync,
        gw.crew().take_sync_ends(),
        gw.live(),
    ) {
        (Some(bound), Some(s), Some(ends), Some(live)) => {
            // Announced routes through the TUN device die with the process
            // (docs/ha.md); a kept device outlives it, so blackholes then.
            let device = match &gw {
                Gateway::Tun(g) if !args.keep && !loaded.tun.keep => Some(g.name()),
                _ => None,
            };
            match sixgate_dataplane::sync_thread::SyncThread::spawn(bound, s, ends, live, device) {
                Ok(t) => Some(t),
                Err(e) => {
                    let _ = gw.stop();
                    return Err(format!("sixgate run: {e}"));
                }
            }
        }
        (Some(_), ..) => {
            let _ = gw.stop();
            return Err("sixgate run: [sync]: this data plane gave no sync ends".to_owned());
        }
        _ => None,
    };
    let _ = workers.set(gw.crew().stats_handle());
    if let Some(l) = gw.live() {
        let _ = live.set(l);
    }
    // The first drop of each kind is logged once, with a hint; read from the
    // published counters, never on the packet path.
    let stats = gw.crew().stats_handle();
    let first_drops = sixgate_control::first_drops::Watcher::spawn(move || {
        let mut total = sixgate_core::Counters::default();
        for w in stats.worker_snapshots() {
            total.merge(&w.core);
        }
        Some(total)
    })
    .map_err(|e| tracing::warn!("no first-drop log: cannot start its thread: {e}"))
    .ok();
    // A CLAT that discovered its PLAT prefix keeps it across reloads, and the
    // latest one when RFC 7050 §3 refresh finds a new one.
    let plat = Arc::new(std::sync::Mutex::new(loaded.config.map.pool6));
    let prepare = {
        let plat = plat.clone();
        move |l: &mut sixgate_config::Loaded| {
            let p = *plat.lock().unwrap_or_else(|p| p.into_inner());
            if let (
                Some(sixgate_config::ClatSettings {
                    plat_prefix: sixgate_config::PlatPrefix::Discover { .. },
                    ..
                }),
                Some(p),
            ) = (&l.clat, p)
            {
                l.set_plat_prefix(p);
            }
        }
    };
    let refresh = match (discovered, &loaded.clat, gw.live()) {
        (Some(settled), Some(clat), Some(live)) => {
            let clat = clat.clone();
            // The running configuration (with runtime changes) under the new
            // prefix; `plat` first, so that a change made meanwhile keeps it.
            let apply = move |p| {
                let old = plat.lock().unwrap_or_else(|p| p.into_inner()).replace(p);
                let mut cfg = (*live.config()).clone();
                clat.set_plat_prefix(&mut cfg, p);
                live.apply(cfg).map(drop).map_err(|e| {
                    *plat.lock().unwrap_or_else(|p| p.into_inner()) = old;
                    e.to_string()
                })
            };
            sixgate_dns64::plat_discovery::Refresher::spawn(settled, apply)
                .map_err(|e| tracing::error!("CLAT: no RFC 7050 refresh: {e}"))
                .ok()
        }
        _ => None,
    };
    // The API changes the running gateway, on either data plane.
    let api = match gw.live() {
        Some(live) => sixgate_control::api::server::spawn(
            socket,
            sixgate_control::api::server::Daemon {
                live,
                config_file: std::fs::canonicalize(&args.config).unwrap_or(args.config.clone()),
                device: gw.name().to_owned(),
                reload: reloads.clone(),
                running,
                prepare: Box::new(prepare),
            },
        ),
        None => Err("the gateway has no control handle".to_owned()),
    };
    let api = match api {
        Ok(a) => {
            tracing::info!(socket = %loaded.daemon.socket.display(), "API listening (root only)");
            Some(a)
        }
        Err(e) => {
            tracing::error!("{e}; running without the API");
            None
        }
    };
    let early = hangups.take();
    if early > 0 {
        tracing::warn!(
            "SIGHUP during start-up ({early}): ignored, the API that reloads was not up yet; \
             `sixgate reload` reloads now"
        );
    }
    // systemd (Type=notify): forwarding from now on.
    notify("READY=1");
    let why = gw.crew().wait();
    let ignored = hangups.take();
    if api.is_none() && ignored > 0 {
        tracing::warn!("SIGHUP ignored {ignored} times: nothing reloads without the API");
    }
    tracing::info!(device = %gw.name(), "stopping: {why}");
    notify("STOPPING=1");
    let failed = matches!(why, sixgate_dataplane::Stop::WorkerFailed(_));
    drop(refresh);
    // Before the workers: its snapshots ask them for their tables.
    if let Some(t) = sync {
        t.stop();
    }
    if let Some(a) = api {
        a.stop();
    }
    if let Some(m) = metrics {
        m.stop();
    }
    if let Some(f) = first_drops {
        f.stop();
    }
    let report = gw.stop();
    // After the workers: what they left on the rings, and the port blocks
    // still held, logged as released.
    if let Some(x) = exporter {
        x.stop();
    }
    println!("sixgate: {}", report.totals.summary());
    // The workers' line counts what the fast path passed up; this one adds
    // what it translated in the kernel (docs/fastpath.md, "Counters").
    if let Some(f) = &report.fast_path {
        println!("sixgate: {}", f.together_summary(&report.totals));
    }
    // A MAP-T CE's NAPT44 keeps NAT64's tables: said in a CE's words.
    let tables = match loaded.mode {
        sixgate_config::Mode::MaptCe => report.totals.napt44_summary(),
        _ => report.totals.nat64_summary(),
    };
    if let Some(t) = tables {
        println!("sixgate: {t}");
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
        println!("sixgate dns64: {}", t.stop().summary());
    }
    if let Some(t) = pref64 {
        println!("sixgate pref64: {}", t.stop().summary());
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
    ) -> Result<Gateway, sixgate_dataplane::SetupError> {
        Ok(match loaded.daemon.dataplane {
            sixgate_config::Dataplane::Tun => {
                Gateway::Tun(sixgate_tun::Gateway::start(loaded, keep)?)
            }
            sixgate_config::Dataplane::Xdp => {
                // `config check` refuses "tc" here; "auto" (a default some
                // day) just says so.
                if loaded.daemon.fastpath == sixgate_config::FastPathMode::Auto {
                    tracing::info!(
                        "fastpath = \"auto\": off: the TC fast path sits in front of the TUN \
                         data plane; AF_XDP workers translate every packet"
                    );
                }
                Gateway::Xdp(sixgate_xdp::Gateway::start(loaded)?)
            }
        })
    }

    /// The workers: counters, and what stops them.
    fn crew(&self) -> &sixgate_dataplane::Crew {
        match self {
            Gateway::Tun(g) => g.crew(),
            Gateway::Xdp(g) => g.crew(),
        }
    }

    fn stop(self) -> sixgate_dataplane::Report {
        match self {
            Gateway::Tun(g) => g.stop(),
            Gateway::Xdp(g) => g.stop(),
        }
    }

    /// The TUN device, or the XDP data plane's IPv6-side interface.
    fn name(&self) -> &str {
        match self {
            Gateway::Tun(g) => g.name(),
            Gateway::Xdp(g) => &g.interfaces()[0],
        }
    }

    /// Runtime changes and table listings.
    fn live(&self) -> Option<Arc<sixgate_dataplane::Live>> {
        match self {
            Gateway::Tun(g) => Some(g.live()),
            Gateway::Xdp(g) => g.live(),
        }
    }
}

/// What a scrape reads: the workers' published counters (none before the
/// gateway is up), the fast path's, the DNS64 server's and the reload status.
fn collector(
    loaded: &sixgate_config::Loaded,
    workers: &Arc<OnceLock<sixgate_dataplane::StatsHandle>>,
    live: &Arc<OnceLock<Arc<sixgate_dataplane::Live>>>,
    exported: &Arc<OnceLock<Arc<ExportStats>>>,
    dns64: Option<&sixgate_dns64::ServerThread>,
    reloads: &Arc<ReloadStatus>,
) -> Collect {
    let mode = loaded.mode.as_str().to_string();
    let workers = workers.clone();
    let live = live.clone();
    let exported = exported.clone();
    let dns64 = dns64.map(|d| d.stats().clone());
    let reloads = reloads.clone();
    Arc::new(move || Scrape {
        mode: mode.clone(),
        workers: workers
            .get()
            .map(|w| w.worker_snapshots())
            .unwrap_or_default(),
        dns64: dns64.as_ref().map(|d| d.snapshot()),
        reload: reloads.read(),
        fastpath: live.get().and_then(|l| l.fast_path()),
        fastpath_active: live.get().and_then(|l| l.fast_path_active()),
        sync: live.get().and_then(|l| l.sync_report()),
        log_export: exported.get().map(|x| x.report()),
    })
}

/// Tell the service manager, if there is one (sd_notify(3)); a failure is
/// logged, never fatal.
fn notify(state: &str) {
    match sixgate_control::notify::notify(state) {
        Ok(true) => tracing::debug!("told the service manager {state}"),
        Ok(false) => {}
        Err(e) => tracing::warn!("cannot tell the service manager {state}: {e}"),
    }
}
