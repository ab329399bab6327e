//! sixgate's TUN data plane: the gateway behind `sixgate run`.
//!
//! [`Gateway::start`] sets up, in order, undoing everything on any failure:
//! the runtime's [`Plan`] (default pool4, user, workers, keys), signal
//! handlers (SIGINT, SIGTERM), the TUN device with one queue per worker
//! ([`device`]), the routes into it ([`routes`]), in nat64 mode without pool4
//! the diversion of the default pool4's ports ([`divert`]), `keep`
//! persistence, the in-kernel fast path in front of the device when
//! `[daemon] fastpath = "tc"` ([`fastpath`]), and the privilege drop; then it
//! starts one pinned worker
//! thread per queue, the runtime's worker loop over a TUN queue ([`worker`]).
//! Each worker owns a [`sixgate_core::Translator`] over the shared
//! `Arc<Config>`, its buffers (allocated once) and its counters; the packet
//! path takes no lock. Runtime changes reach the routes and the steering
//! program through [`plane::TunPlane`]. [`Gateway::crew`]`.wait()` returns on a signal
//! or a failed worker; [`Gateway::stop`] stops the workers and takes down
//! routes and device (unless `keep`).
//!
//! Offloads: see [`pipeline`] for how checksum-offloaded packets and GSO
//! super-packets are translated, [`vnet`] for the header rewrite and [`gso`] for
//! software segmentation.

use std::sync::Arc;

use sixgate_config::Loaded;
use sixgate_dataplane::signals::Signals;
use sixgate_dataplane::{
    Crew, Live, Plan, Report, SetupError, destinations, pool4_default, system,
};
use tracing::{info, warn};

pub mod device;
pub mod divert;
pub mod fastpath;
pub mod gso;
pub mod hops;
pub mod pipeline;
pub mod plane;
pub mod routes;
pub mod steering;
pub mod vnet;
mod worker;

pub use device::Offload;

/// The running gateway.
pub struct Gateway {
    name: String,
    offload: Offload,
    queues: usize,
    keep: bool,
    /// `[daemon] fastpath_handover` is set and the fast path runs.
    handover: bool,
    privileged: bool,
    steered: bool,
    device: Option<device::Device>,
    live: Arc<Live>,
    divert: Option<divert::Divert>,
    crew: Crew,
}

impl Gateway {
    /// Set up and start. `keep` adds to `[tun] keep` (the `--keep` flag).
    pub fn start(loaded: &Loaded, keep: bool) -> Result<Gateway, SetupError> {
        let err = |m: String| SetupError::from(m);
        let tun = &loaded.tun;
        let keep = keep || tun.keep;

        let mut plan = Plan::new(loaded).map_err(err)?;
        let default_pool4 = plan.default_pool4;
        if default_pool4.is_some()
            && let Some(w) = pool4_default::strict_rp_filter()
        {
            warn!("nat64: {w}");
        }

        // Signals first, so that a SIGTERM during set-up still ends in a clean stop
        // (dropping them on an error removes the handlers).
        let signals = Signals::install().map_err(err)?;

        let result = (|| {
            let cfg = &plan.config;
            let mut n = plan.workers;
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
            // What a stopped run handed over (docs/restart.md, "With the
            // fast path"): its program goes on until the workers are ready.
            let handover_dir =
                sixgate_fastpath::handover::dir_for(&loaded.daemon.fastpath_pin_dir, &dev.name);
            let mut handed = sixgate_fastpath::handover::HandedOver::find(&handover_dir);
            for p in &handed.stuck {
                warn!(
                    "fast path: cannot remove the pin {} a stopped run left: its link stays \
                     whatever this run does (remove it by hand)",
                    p.display()
                );
            }
            // The fast path before the routes: from the first packet the
            // kernel routes into the device, the program is there. (Loading
            // and attaching need the privileges dropped below.)
            let (mut fastpath, fastpath_off) =
                match fastpath::start(loaded, &plan.config, &dev.name, &mut handed) {
                    Ok(fp) => (fp, None),
                    Err(off) => (None, Some(off.to_string())),
                };
            // Where this run's stop pins its links: made now, while
            // privileged, and given to [daemon] user, who pins.
            let owner = plan.user.as_ref().map(|(_, u)| (u.uid, u.gid));
            let handover = match loaded.daemon.fastpath_handover {
                secs if secs > 0 && fastpath.is_some() => {
                    match sixgate_fastpath::handover::prepare_dir(&handover_dir, owner) {
                        Ok(opened) => Some((secs, handover_dir, opened)),
                        Err(why) => {
                            warn!(
                                "fast path: {why}; it will stop with the daemon, not be handed over"
                            );
                            None
                        }
                    }
                }
                _ => None,
            };
            // NAT64 on the fast path: each worker's handle on the session
            // maps, taken while privileged.
            let offloads = fastpath::offloads(fastpath.as_ref(), &Arc::new(plan.config.clone()), n);
            let wanted = if tun.manage_routes {
                destinations::wanted_for(loaded)
            } else {
                Vec::new()
            };
            let mut routes = routes::Routes::install(&dev.name, &wanted)
                .map_err(|e| err(format!("{}: {e}", dev.name)))?;
            // The default pool4's ports, diverted from the host's stack into the
            // device (routing, like the routes above).
            let mut divert = match default_pool4 {
                Some(a) if tun.manage_routes => match divert::Divert::install(&dev.name, a) {
                    Ok(d) => Some(d),
                    Err(e) => {
                        for p in routes.remove() {
                            warn!("while undoing the set-up: {p}");
                        }
                        return Err(err(format!("{}: {e}", dev.name)));
                    }
                },
                _ => None,
            };
            let undo_routing =
                |routes: &mut routes::Routes, divert: &mut Option<divert::Divert>| {
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
            let privileged = match plan.drop_privileges() {
                Ok(dropped) => !dropped,
                Err(e) => {
                    fastpath::stop(&mut fastpath);
                    handed.release();
                    undo_routing(&mut routes, &mut divert);
                    if keep && !dev.reused {
                        let _ = dev.set_persist(false);
                    }
                    return Err(err(e));
                }
            };
            let steering = steering.filter(|_| steered);
            Ok((
                dev,
                routes,
                divert,
                n,
                privileged,
                steering,
                (fastpath, fastpath_off, handover, handed),
                offloads,
            ))
        })();
        let (mut dev, routes, divert, n, privileged, steering, fast, offloads) = result?;
        let (fastpath, fastpath_off, handover, handed) = fast;
        let hands_over = handover.is_some();
        plan.workers = n;

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
                divert::NFT_TABLE,
                divert::MARK,
                divert::MARK_PREF,
                divert::TABLE,
                divert::LOCAL_PREF
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
        let cfg = Arc::new(plan.config.clone());
        let vnet = dev.offload.vnet();
        let queues: Vec<_> = dev.queues.drain(..).collect();
        let crew = Crew::new(signals, n).map_err(err)?;
        let mut offloads = offloads.into_iter();
        let manage = tun.manage_routes && loaded.clat.is_none();
        let plane = plane::TunPlane {
            routes,
            steering,
            manage_routes: manage,
            workers: n as u16,
            draining: Vec::new(),
            fastpath,
            fastpath_final: None,
            fastpath_off,
            handover,
            handed,
        };
        let (live, followers) = Live::new(
            cfg.clone(),
            crew.stats().to_vec(),
            Box::new(plane),
            default_pool4,
        )
        .map_err(|e| err(format!("cannot create the control channels: {e}")))?;
        let mut gw = Gateway {
            name: dev.name.clone(),
            offload: dev.offload.clone(),
            queues: n,
            keep,
            handover: hands_over,
            privileged,
            steered,
            device: Some(dev),
            live,
            divert,
            crew,
        };
        for (i, (queue, follower)) in queues.into_iter().zip(followers).enumerate() {
            let io = worker::TunIo {
                index: i,
                queue,
                pipeline: pipeline::Pipeline::for_worker(cfg.clone(), vnet, i as u16, n as u16),
            };
            let offload = offloads.next().flatten();
            let spawned = gw
                .crew
                .worker(i, plan.cpu(i), io, follower, &plan)
                .map(|mut w| {
                    w.offload = offload;
                    // Restored sessions into the fast path now, before a
                    // handed-over one is taken over (workers_ready below).
                    w.settle_restored();
                    w
                })
                .and_then(|w| {
                    gw.crew
                        .spawn(format!("sixgate-w{i}"), w)
                        .map_err(|e| e.to_string())
                });
            if let Err(e) = spawned {
                // Nothing half set up: take it all down, keep or not (and
                // hand nothing over).
                gw.handover = false;
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
        gw.live.workers_ready();
        plan.log_started(n);
        Ok(gw)
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The workers: their counters ([`Crew::stats_handle`]), and
    /// [`Crew::wait`] for SIGINT/SIGTERM or a worker failure.
    pub fn crew(&self) -> &Crew {
        &self.crew
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

    /// `[daemon] fastpath_handover` at a stop: the device made persistent
    /// (its routes stay with it) and the fast path left running for the next
    /// start, or neither. `true`: handed over.
    fn hand_over(&self) -> bool {
        let Some(d) = &self.device else {
            return false;
        };
        // Whether the fast path can be handed over is the plane's to say.
        if !self.handover {
            return false;
        }
        if let Err(e) = d.set_persist(true) {
            warn!(device = %self.name, "fast path: not handed over: {e}");
            return false;
        }
        if self.live.hand_over() {
            return true;
        }
        if !self.keep {
            let _ = d.set_persist(false);
        }
        false
    }

    /// Stop the workers; remove routes and device unless `keep` (or a
    /// handover of the fast path, which keeps them for the next start).
    pub fn stop(mut self) -> Report {
        let mut errors = Vec::new();
        self.crew.halt(); // every worker's poll sees the hang-up
        // From here until the next start takes over, the fast path alone
        // translates: the established flows in its maps.
        self.keep |= self.hand_over();
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
        // The fast path goes first (TunPlane::finish).
        errors.extend(self.live.finish(self.keep, self.privileged));
        self.crew.join(&mut errors);
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
        let mut report = self.crew.report(errors);
        // Its final counters, kept by the plane after the detach.
        report.fast_path = self.live.fast_path();
        report
    }
}
