//! sixgate's TUN data plane: the gateway behind `sixgate run`.
//!
//! [`Gateway::start`] sets up, in order, undoing everything on any failure:
//! signal handlers (SIGINT, SIGTERM), the TUN device with one queue per worker
//! ([`device`]), the routes into it ([`routes`]), in nat64 mode without pool4
//! the diversion of the default pool4's ports ([`pool4_default`]), `keep`
//! persistence, and the
//! privilege drop; then it starts one pinned worker thread per queue
//! ([`worker`]). Each worker owns a [`sixgate_core::Translator`] over the shared
//! `Arc<Config>`, its buffers (allocated once) and its counters ([`stats`]); the
//! packet path takes no lock. [`Gateway::wait`] returns on a signal or a failed
//! worker; [`Gateway::stop`] stops the workers and takes down routes and device
//! (unless `keep`).
//!
//! Offloads: see [`pipeline`] for how checksum-offloaded packets and GSO
//! super-packets are translated, [`vnet`] for the header rewrite and [`gso`] for
//! software segmentation.

use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;

use sixgate_config::Loaded;
use tracing::{info, warn};

pub mod control;
pub mod device;
pub mod events;
pub mod gso;
pub mod live;
pub mod pipeline;
pub mod pool4_default;
pub mod routes;
pub mod stats;
pub mod steering;
pub mod system;
pub mod vnet;
mod worker;

pub use device::Offload;
pub use live::Live;
pub use pipeline::IoCounters;
pub use stats::{Snapshot, StatsHandle};

/// Why the gateway could not start. Nothing it created is left behind.
#[derive(Debug)]
pub struct SetupError(String);

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

impl From<String> for SetupError {
    fn from(why: String) -> Self {
        SetupError(why)
    }
}

/// Why [`Gateway::wait`] returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT or SIGTERM (the signal number).
    Signal(i32),
    /// A worker failed; the message says why.
    WorkerFailed(String),
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::Signal(s) => write!(f, "received {}", system::signal_name(*s)),
            Stop::WorkerFailed(why) => write!(f, "a worker failed: {why}"),
        }
    }
}

/// What a run ended with.
#[derive(Debug)]
pub struct Report {
    /// All workers' counters, summed.
    pub totals: Snapshot,
    /// Each worker's counters, by worker index.
    pub workers: Vec<Snapshot>,
    /// Worker failures, and problems taking routes down; empty on a clean stop.
    pub errors: Vec<String>,
}

/// The running gateway.
pub struct Gateway {
    name: String,
    offload: Offload,
    queues: usize,
    keep: bool,
    privileged: bool,
    steered: bool,
    device: Option<device::Device>,
    live: Arc<Live>,
    divert: Option<pool4_default::Divert>,
    workers: Vec<JoinHandle<Result<(), String>>>,
    stats: Vec<Arc<WorkerStats>>,
    stop_flag: Arc<AtomicBool>,
    stop_wr: Option<OwnedFd>,
    signals: control::Signals,
}

use stats::WorkerStats;

impl Gateway {
    /// Set up and start. `keep` adds to `[tun] keep` (the `--keep` flag).
    pub fn start(loaded: &Loaded, keep: bool) -> Result<Gateway, SetupError> {
        let err = |m: String| SetupError(m);
        let tun = &loaded.tun;
        let keep = keep || tun.keep;

        // The default pool4 (no pool4 key): the gateway's own IPv4 address, found
        // before anything is created.
        let mut cfg = loaded.config.clone();
        let default_pool4 = match &mut cfg.nat64 {
            Some(nat) if nat.pool4.is_empty() => {
                let a = pool4_default::gateway_address().map_err(err)?;
                info!(
                    address = %a,
                    "nat64: no pool4 configured; pool4 is the gateway's own address, ports \
                     and ICMP identifiers {}-{}",
                    pool4_default::PORTS.first,
                    pool4_default::PORTS.last
                );
                let warnings = [
                    pool4_default::local_port_range_overlap(),
                    pool4_default::strict_rp_filter(),
                ];
                for w in warnings.into_iter().flatten() {
                    warn!("nat64: {w}");
                }
                nat.pool4 = vec![pool4_default::entry(a)];
                Some(a)
            }
            _ => None,
        };

        // Signals first, so that a SIGTERM during set-up still ends in a clean stop
        // (dropping them on an error removes the handlers).
        let signals = control::Signals::install().map_err(err)?;

        let result = (|| {
            // A missing user is an error before anything is created.
            let user = match &loaded.daemon.user {
                Some(name) => Some((name.clone(), system::lookup_user(name).map_err(err)?)),
                None => None,
            };
            let cpus = system::allowed_cpus();
            let mut n = match loaded.daemon.workers {
                0 => cpus.len().max(1),
                w => usize::from(w),
            };
            // Stateful NAT64 on several workers: the kernel must hand every packet
            // to the worker that owns its state, or it is one worker. A MAP-T BR
            // likewise every fragment of a datagram to the worker whose fragment
            // table has its first one (RFC 7599 §8).
            let workers = u16::try_from(n).unwrap_or(u16::MAX);
            let wanted = match (&cfg.nat64, &cfg.mapt) {
                (Some(nat), _) if n > 1 => Some(steering::Params::new(nat, workers)),
                (_, Some(m)) if n > 1 && m.ce().is_none() => Some(steering::Params::flow(workers)),
                _ => None,
            };
            let steering = wanted.and_then(|p| match steering::Steering::load(&p) {
                Ok(s) => Some((p.mode, s)),
                Err(why) => {
                    let what = p.mode.user();
                    warn!(
                        "{what}: cannot steer packets to {n} workers ({why}); running ONE \
                         worker (steering needs root or CAP_BPF + CAP_NET_ADMIN)"
                    );
                    n = 1;
                    None
                }
            });
            // A MAP-T CE's NAPT44 is stateful and nothing steers its flows to
            // one worker: its tables live in one.
            if n > 1 && cfg.mapt.as_ref().is_some_and(|m| m.ce().is_some()) {
                warn!(
                    "mapt-ce: the NAPT44 tables belong to one worker and nothing steers a \
                     flow's packets to it; running ONE worker instead of {n}"
                );
                n = 1;
            }
            for (sysctl, what) in system::forwarding_off() {
                warn!("{sysctl} = 0: {what}; enable it with `sysctl -w {sysctl}=1`");
            }

            let mut dev = device::Device::open(tun, n).map_err(err)?;
            let mut steered = false;
            if let Some((mode, s)) = &steering {
                match dev.attach_steering(s) {
                    Ok(()) => steered = true,
                    Err(why) => {
                        warn!("{}: {why}; running ONE worker", mode.user());
                        // Closing the other queues detaches them: the kernel
                        // then hands everything to the one left.
                        dev.queues.truncate(1);
                        n = 1;
                    }
                }
            } else if dev.reused {
                // A program left on a kept device by an earlier nat64 run.
                let _ = dev.detach_steering();
            }
            if let Offload::Refused(why) = &dev.offload {
                warn!(device = %dev.name, "offloads refused by the kernel ({why}); running without them");
            } else if dev.offload == Offload::Tcp {
                warn!(device = %dev.name, "UDP segmentation offload refused by the kernel (needs Linux 6.2); TCP offloads only");
            }
            let wanted = if tun.manage_routes {
                routes::wanted_for(loaded)
            } else {
                Vec::new()
            };
            let mut routes = routes::Routes::install(&dev.name, &wanted)
                .map_err(|e| err(format!("{}: {e}", dev.name)))?;
            // The default pool4's ports, diverted from the host's stack into the
            // device (routing, like the routes above).
            let mut divert = match default_pool4 {
                Some(a) if tun.manage_routes => {
                    match pool4_default::Divert::install(&dev.name, a) {
                        Ok(d) => Some(d),
                        Err(e) => {
                            for p in routes.remove() {
                                warn!("while undoing the set-up: {p}");
                            }
                            return Err(err(format!("{}: {e}", dev.name)));
                        }
                    }
                }
                _ => None,
            };
            let undo_routing =
                |routes: &mut routes::Routes, divert: &mut Option<pool4_default::Divert>| {
                    for p in divert.iter_mut().flat_map(|d| d.remove()) {
                        warn!("while undoing the set-up: {p}");
                    }
                    for p in routes.remove() {
                        warn!("while undoing the set-up: {p}");
                    }
                };
            // keep: survive this process. Not keep, but reused: go when we go.
            if (keep || dev.reused)
                && let Err(e) = dev.set_persist(keep)
            {
                undo_routing(&mut routes, &mut divert);
                return Err(err(e));
            }
            let mut privileged = true;
            if let Some((name, u)) = user {
                if let Err(e) = system::drop_privileges(u) {
                    undo_routing(&mut routes, &mut divert);
                    if keep && !dev.reused {
                        let _ = dev.set_persist(false);
                    }
                    return Err(err(format!("cannot switch to user {name:?}: {e}")));
                }
                privileged = false;
                info!(user = %name, uid = u.uid, gid = u.gid, "dropped privileges");
            }
            let steering = steering.filter(|_| steered);
            Ok((dev, routes, divert, n, cpus, privileged, steering))
        })();
        let (mut dev, routes, divert, n, cpus, privileged, steering) = result?;

        let steered = steering.is_some();
        let steered_by = steering.as_ref().map(|(mode, _)| *mode);
        let steering = steering.map(|(_, s)| s);
        info!(
            device = %dev.name,
            mtu = tun.mtu,
            queues = n,
            reused = dev.reused,
            "TUN device up"
        );
        info!(device = %dev.name, "offload: {}", dev.offload);
        match steered_by {
            Some(steering::Mode::Nat64) => info!(
                device = %dev.name,
                workers = n,
                "nat64: steering program attached (queue by subscriber for IPv6, by pool4 port for IPv4)"
            ),
            Some(steering::Mode::Flow) => info!(
                device = %dev.name,
                workers = n,
                "mapt-br: steering program attached (the fragments of a datagram to one queue, the \
                 rest by 5-tuple)"
            ),
            None => {}
        }
        for r in routes.added() {
            info!(device = %dev.name, "route {r} added");
        }
        for r in routes.present() {
            info!(device = %dev.name, "route {r} already present through the device");
        }
        if let Some(d) = &divert {
            info!(
                device = %dev.name,
                address = %d.addr(),
                "nat64: default pool4 diverted into the device (nftables table ip {}, mark {:#x}, \
                 rule pref {} lookup table {}; lookup local moved to pref {})",
                pool4_default::NFT_TABLE,
                pool4_default::MARK,
                pool4_default::MARK_PREF,
                pool4_default::TABLE,
                pool4_default::LOCAL_PREF
            );
        }
        if !tun.manage_routes {
            info!(device = %dev.name, "manage_routes = false: routing into the device is up to you");
            if let Some(a) = default_pool4 {
                info!(
                    device = %dev.name,
                    "manage_routes = false: diverting {a} ports {}-{} into the device is up to you too",
                    pool4_default::PORTS.first,
                    pool4_default::PORTS.last
                );
            }
        }

        // Workers.
        cfg.ipv4_id_key = system::random_u64();
        if let Some(nat) = &mut cfg.nat64 {
            nat.hash_key = system::random_u64();
        }
        if let Some(m) = &mut cfg.mapt {
            m.hash_key = system::random_u64();
        }
        let event_log = cfg
            .nat64
            .as_ref()
            .is_some_and(|n| n.event_log != sixgate_core::nat64::EventLog::Off);
        let cfg = Arc::new(cfg);
        let vnet = dev.offload.vnet();
        let queues: Vec<_> = dev.queues.drain(..).collect();
        let (stop_rd, stop_wr) =
            control::pipe().map_err(|e| err(format!("cannot create a pipe: {e}")))?;
        let stop_rd = Arc::new(stop_rd);
        let stats: Vec<Arc<WorkerStats>> = (0..n).map(|_| Arc::default()).collect();
        let manage = tun.manage_routes && loaded.clat.is_none();
        let plane = live::TunPlane {
            routes: Some(routes),
            steering,
            manage_routes: manage,
            workers: n as u16,
        };
        let (live, followers) =
            Live::new(cfg.clone(), stats.clone(), Box::new(plane), default_pool4)
                .map_err(|e| err(format!("cannot create the control channels: {e}")))?;
        let mut gw = Gateway {
            name: dev.name.clone(),
            offload: dev.offload.clone(),
            queues: n,
            keep,
            privileged,
            steered,
            device: Some(dev),
            live,
            divert,
            workers: Vec::with_capacity(n),
            stats: Vec::with_capacity(n),
            stop_flag: Arc::new(AtomicBool::new(false)),
            stop_wr: Some(stop_wr),
            signals,
        };
        for (i, (queue, follower)) in queues.into_iter().zip(followers).enumerate() {
            let s = stats[i].clone();
            let spawned = gw.signals.waker().and_then(|wake| {
                let w = worker::Worker {
                    index: i,
                    cpu: (!cpus.is_empty()).then(|| cpus[i % cpus.len()]),
                    queue,
                    pipeline: pipeline::Pipeline::for_worker(cfg.clone(), vnet, i as u16, n as u16),
                    stats: s.clone(),
                    stop: gw.stop_flag.clone(),
                    stop_fd: stop_rd.clone(),
                    wake,
                    failure: gw.signals.failure(),
                    event_log,
                    follower,
                };
                std::thread::Builder::new()
                    .name(format!("sixgate-w{i}"))
                    .spawn(move || w.run())
            });
            match spawned {
                Ok(h) => {
                    gw.workers.push(h);
                    gw.stats.push(s);
                }
                Err(e) => {
                    // Nothing half set up: take it all down, keep or not.
                    if gw.keep && gw.privileged {
                        if let Some(d) = &gw.device {
                            let _ = d.set_persist(false);
                        }
                        gw.keep = false;
                    }
                    let _ = gw.stop();
                    return Err(err(format!("cannot start worker {i}: {e}")));
                }
            }
        }
        info!(
            workers = n,
            cpus = ?cpus.iter().cycle().take(n).collect::<Vec<_>>(),
            "workers started, one per queue, each pinned to a CPU"
        );
        Ok(gw)
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of queues (= workers).
    pub fn queues(&self) -> usize {
        self.queues
    }

    /// The offload state.
    pub fn offload(&self) -> &Offload {
        &self.offload
    }

    /// True when a steering program (nat64 or mapt-br) picks the queues.
    pub fn steered(&self) -> bool {
        self.steered
    }

    /// The control plane's handle: configuration changes, table listings,
    /// counters (see [`live`]).
    pub fn live(&self) -> Arc<Live> {
        self.live.clone()
    }

    /// All workers' counters, summed, as last published.
    pub fn snapshot(&self) -> Snapshot {
        stats::sum(&self.stats)
    }

    /// Each worker's counters, as last published, in worker order.
    pub fn worker_snapshots(&self) -> Vec<Snapshot> {
        stats::each(&self.stats)
    }

    /// A reader of the workers' counters for another thread (metrics, API).
    pub fn stats_handle(&self) -> StatsHandle {
        StatsHandle(self.stats.iter().cloned().collect())
    }

    /// Block until SIGINT/SIGTERM or a worker failure.
    pub fn wait(&self) -> Stop {
        self.signals.wait()
    }

    /// Stop the workers; remove routes and device unless `keep`.
    pub fn stop(mut self) -> Report {
        let mut errors = Vec::new();
        self.stop_flag.store(true, Relaxed);
        drop(self.stop_wr.take()); // every worker's poll sees the hang-up
        // Routes first: the device (and with it any route) goes once the workers'
        // queues close.
        if let Some(d) = &mut self.divert {
            if self.keep {
                info!(device = %self.name, "keep: leaving the default pool4's diversion in place");
                d.forget();
            } else if self.privileged {
                info!(device = %self.name, address = %d.addr(), "removing the default pool4's diversion");
                errors.extend(d.remove());
            } else {
                info!(
                    device = %self.name,
                    "privileges were dropped: the default pool4's nftables table and rules stay \
                     (harmless without the device: marked packets fall through to lookup local)"
                );
                d.forget();
            }
        }
        let mut routes = self
            .live
            .take_routes()
            .unwrap_or_else(|| routes::Routes::none(&self.name));
        if self.keep {
            let left = routes.forget();
            info!(
                device = %self.name,
                routes = left.len(),
                "keep: leaving the device and its routes in place"
            );
        } else if self.privileged {
            for r in routes.added() {
                info!(device = %self.name, "removing route {r}");
            }
            errors.extend(routes.remove());
        } else if !routes.added().is_empty() {
            info!(
                device = %self.name,
                "privileges were dropped: the kernel removes the routes with the device"
            );
            routes.forget();
        }
        for (i, h) in self.workers.drain(..).enumerate() {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => errors.push(e),
                Err(_) => errors.push(format!("worker {i} panicked")),
            }
        }
        if self.keep
            && self.steered
            && self.privileged
            && let Some(d) = &self.device
            && let Err(e) = d.detach_steering()
        {
            errors.push(e);
        }
        drop(self.device.take());
        if !self.keep {
            info!(device = %self.name, "device removed");
        }
        Report {
            totals: self.snapshot(),
            workers: self.stats.iter().map(|s| s.snapshot()).collect(),
            errors,
        }
    }
}
