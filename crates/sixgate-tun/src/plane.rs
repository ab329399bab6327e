//! Runtime changes on the TUN data plane ([`sixgate_dataplane::Plane`]):
//! routes into the device follow the destinations (`[tun] manage_routes`,
//! not a CLAT), and the steering program's static BIB entries follow
//! `[nat64] static_bib`; a removed pool4 prefix keeps its route until its
//! last session has gone (RFC 6146 §3.5.1.1, draining); the fast path's
//! maps follow the configuration (docs/fastpath.md); at exit the fast path
//! is detached and the routes sixgate added go.

use sixgate_core::Config;
use sixgate_core::nat64::Pool4Entry;
use sixgate_dataplane::destinations::{self, Route};
use sixgate_dataplane::{Plane, Refusal};
use sixgate_fastpath::Unprepared;
use sixgate_fastpath::handover::HandedOver;
use tracing::{info, warn};

use crate::routes::Routes;
use crate::steering::{self, Steering};

/// The TUN data plane's destinations: routes into the device, and the
/// steering program's static BIB entries.
pub struct TunPlane {
    /// The routes sixgate added.
    pub routes: Routes,
    /// Multi-worker NAT64's steering program.
    pub steering: Option<Steering>,
    /// Route new EAM and pool4 prefixes.
    pub manage_routes: bool,
    /// Workers the steering program spreads over.
    pub workers: u16,
    /// Routes of removed pool4 prefixes, kept while they drain.
    pub draining: Vec<Route>,
    /// The TC fast path in front of the device (`[daemon] fastpath = "tc"`).
    pub fastpath: Option<sixgate_fastpath::FastPath>,
    /// Its counters once detached (`finish`), for the exit summary.
    pub fastpath_final: Option<sixgate_dataplane::FastPathCounters>,
    /// Why the fast path asked for did not start (`show stats`).
    pub fastpath_off: Option<String>,
    /// `[daemon] fastpath_handover`: seconds, where the links are pinned,
    /// and that directory opened while privileged (docs/restart.md, "With
    /// the fast path"); `None`: the fast path stops with the daemon.
    pub handover: Option<(u16, std::path::PathBuf, std::os::fd::OwnedFd)>,
    /// What a stopped run handed over and this one has not taken over.
    pub handed: HandedOver,
}

impl Plane for TunPlane {
    fn apply(&mut self, old: &Config, new: &Config, warn: &mut Vec<String>) -> Result<(), Refusal> {
        // The fast path's new map first, before anything changes: a kernel
        // that will not create it (no CAP_BPF after [daemon] user, memory)
        // refuses the change, and the program goes on translating under the
        // old configuration rather than pass everything up from now on.
        let next = match self.fastpath.as_ref().map(|fp| fp.prepare(new)) {
            Some(Err(Unprepared::NoMap(why))) => {
                return Err(format!(
                    "fast path: {why}{}; change refused: the running configuration and the fast \
                     path stay as they were",
                    no_cap_hint()
                ));
            }
            other => other,
        };
        if self.manage_routes {
            self.reroute(old, new, warn)?;
        }
        if let (Some(o), Some(n), Some(s)) = (&old.nat64, &new.nat64, self.steering.as_mut()) {
            let w = self.workers;
            let (po, pn) = (steering::Params::new(o, w), steering::Params::new(n, w));
            s.update_static_bib(&po.static_bib, &pn.static_bib)?;
        }
        // Before the workers see it: one atomic swap, after which no packet
        // runs under the old configuration (docs/fastpath.md).
        if let (Some(fp), Some(next)) = (self.fastpath.as_mut(), next) {
            let done = match next {
                Ok(p) => fp.commit(p),
                Err(Unprepared::Unservable(why) | Unprepared::NoMap(why)) => fp.off_because(why),
            };
            self.fastpath_off = done.err().map(|why| {
                let off = format!(
                    "fast path: {why}; it passes every packet to the TUN device from now on"
                );
                warn.push(off.clone());
                off
            });
        }
        Ok(())
    }

    fn fast_path(&self) -> Option<sixgate_dataplane::FastPathCounters> {
        match &self.fastpath {
            Some(fp) => crate::fastpath::counters(fp),
            None => self.fastpath_final,
        }
    }

    fn fast_path_off(&self) -> Option<String> {
        self.fastpath_off.clone()
    }

    fn pool4_drained(&mut self, cfg: &Config, draining: &[Pool4Entry]) -> Vec<String> {
        let mut warn = Vec::new();
        for route in drained(&mut self.draining, cfg, draining) {
            match self.routes.remove_one(&route) {
                Ok(()) => info!(
                    device = %self.routes.dev(),
                    "pool4 {route} drained (its last session has gone): route removed"
                ),
                Err(e) => warn.push(e),
            }
        }
        warn
    }

    /// `keep`: the device and its routes stay. Privileges dropped: the kernel
    /// removes the routes with the device. Otherwise each route added goes.
    fn workers_ready(&mut self) {
        if let Some(fp) = self.fastpath.as_mut() {
            match fp.take_over() {
                Ok(done) => {
                    let (taken, anew): (Vec<_>, Vec<_>) =
                        done.into_iter().partition(|(_, why)| why.is_none());
                    if !taken.is_empty() {
                        let list: Vec<&str> = taken.iter().map(|(i, _)| i.as_str()).collect();
                        info!(
                            "fast path: took over from the previous run on {} (its program \
                             replaced by this one's in one link update; the restored sessions \
                             were installed first)",
                            list.join(", ")
                        );
                    }
                    for (iface, why) in anew {
                        let why = why.unwrap_or_default();
                        warn!(
                            "fast path: could not take over from the previous run on {iface} \
                             ({why}): attached anew"
                        );
                    }
                }
                Err(why) => warn!("fast path: {why}"),
            }
        }
        for left in self.handed.release() {
            info!("fast path: the previous run's {left} removed (not taken over)");
        }
    }

    fn hand_over(&mut self) -> bool {
        let (Some((secs, dir, opened)), Some(fp)) = (&self.handover, self.fastpath.as_mut()) else {
            return false;
        };
        if let Some(off) = &self.fastpath_off {
            info!("fast path: not handed over: it passes everything up ({off})");
            return false;
        }
        let via = sixgate_fastpath::handover::pin_path(opened);
        match fp.hand_over(&via, u64::from(*secs) * 1_000_000_000) {
            Ok(ifaces) => {
                info!(
                    "fast path: handed over: the {} program stays on {} for up to {secs} s, \
                     translating the established flows in its maps, with the device and its \
                     routes, until the next start takes it over (links pinned in {})",
                    fp.hook().name(),
                    ifaces.join(", "),
                    dir.display()
                );
                true
            }
            Err(why) => {
                warn!("fast path: not handed over ({why}): it stops with the daemon");
                false
            }
        }
    }

    fn finish(&mut self, keep: bool, privileged: bool) -> Vec<String> {
        // First: from here every packet takes the kernel's routes.
        self.fastpath_final = crate::fastpath::stop(&mut self.fastpath);
        let dev = self.routes.dev().to_owned();
        if keep {
            let left = self.routes.forget();
            info!(
                device = %dev,
                routes = left.len(),
                "keep: leaving the device and its routes in place"
            );
        } else if privileged {
            for r in self.routes.added() {
                info!(device = %dev, "removing route {r}");
            }
            return self.routes.remove();
        } else if !self.routes.added().is_empty() {
            info!(
                device = %dev,
                "privileges were dropped: the kernel removes the routes with the device"
            );
            self.routes.forget();
        }
        Vec::new()
    }
}

/// Why a map could not be made, when the likely reason is a dropped
/// capability.
fn no_cap_hint() -> &'static str {
    if sixgate_dataplane::system::kept_caps_in_effect().contains(&"CAP_BPF") {
        ""
    } else {
        " (this process lacks CAP_BPF: [daemon] user keeps it only when the daemon starts \
         with it, on Linux >= 5.8; see docs/config.md, [daemon] user)"
    }
}

impl TunPlane {
    /// Routes: new EAM and pool4 prefixes into the device; removed EAM
    /// prefixes out. Removed pool4 prefixes keep theirs: their sessions drain.
    fn reroute(
        &mut self,
        old: &Config,
        new: &Config,
        warn: &mut Vec<String>,
    ) -> Result<(), Refusal> {
        let r = &mut self.routes;
        let (was, now) = (destinations::wanted(old), destinations::wanted(new));
        let mut added: Vec<Route> = Vec::new();
        for route in now.iter().filter(|r| !was.contains(r)) {
            if let Err(e) = r.add_one(route) {
                for a in &added {
                    let _ = r.remove_one(a);
                }
                return Err(e);
            }
            added.push(route.clone());
        }
        for route in was.iter().filter(|r| !now.contains(r)) {
            if destinations::is_pool4(old, route) {
                // Its sessions drain: the route goes with the last of them.
                if r.added().contains(route) && !self.draining.contains(route) {
                    self.draining.push(route.clone());
                }
            } else if let Err(e) = r.remove_one(route) {
                warn.push(e);
            }
        }
        Ok(())
    }
}

/// The routes of `kept` (removed pool4 prefixes) to take away now: neither
/// in `cfg`'s pool4 again nor a prefix a worker still drains. They leave
/// `kept`, as does a route `cfg` wants again.
fn drained(kept: &mut Vec<Route>, cfg: &Config, draining: &[Pool4Entry]) -> Vec<Route> {
    let wanted = destinations::wanted(cfg);
    let mut gone = Vec::new();
    kept.retain(|route| {
        if wanted.contains(route) {
            return false;
        }
        if draining
            .iter()
            .any(|p| destinations::pool4_route(p) == *route)
        {
            return true;
        }
        gone.push(route.clone());
        false
    });
    gone
}

#[cfg(test)]
mod tests {
    use super::*;
    use sixgate_core::nat64::Nat64Config;
    use std::net::Ipv4Addr;

    /// RFC 6146 §3.5.1.1: a removed pool4 prefix's route stays while a
    /// worker drains it and goes with its last session; one pool4 takes back
    /// stays (it is wanted again).
    #[test]
    fn rfc6146_s3_5_1_1_removed_pool4_route_goes_once_drained() {
        let a = Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 1));
        let b = Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 2));
        let mut cfg = Config::with_pool6(None);
        cfg.nat64 = Some(Nat64Config {
            pool4: vec![b],
            ..Nat64Config::default()
        });
        let mut kept = vec![destinations::pool4_route(&a)];
        assert!(drained(&mut kept, &cfg, &[a]).is_empty());
        assert_eq!(kept, [destinations::pool4_route(&a)]);
        assert_eq!(
            drained(&mut kept, &cfg, &[]),
            [destinations::pool4_route(&a)]
        );
        assert!(kept.is_empty());
        // Re-added before it drained: kept as a wanted route, no longer draining.
        let mut kept = vec![destinations::pool4_route(&b)];
        assert!(drained(&mut kept, &cfg, &[]).is_empty());
        assert!(kept.is_empty());
    }
}
