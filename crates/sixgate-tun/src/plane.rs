//! Runtime changes on the TUN data plane ([`sixgate_dataplane::Plane`]):
//! routes into the device follow the destinations (`[tun] manage_routes`,
//! not a CLAT), and the steering program's static BIB entries follow
//! `[nat64] static_bib`; at exit the routes sixgate added go.

use sixgate_core::Config;
use sixgate_dataplane::destinations::{self, Route};
use sixgate_dataplane::{Plane, Refusal};
use tracing::info;

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
}

impl Plane for TunPlane {
    fn apply(&mut self, old: &Config, new: &Config, warn: &mut Vec<String>) -> Result<(), Refusal> {
        if self.manage_routes {
            self.reroute(old, new, warn)?;
        }
        if let (Some(o), Some(n), Some(s)) = (&old.nat64, &new.nat64, self.steering.as_mut()) {
            let w = self.workers;
            let (po, pn) = (steering::Params::new(o, w), steering::Params::new(n, w));
            s.update_static_bib(&po.static_bib, &pn.static_bib)?;
        }
        Ok(())
    }

    /// `keep`: the device and its routes stay. Privileges dropped: the kernel
    /// removes the routes with the device. Otherwise each route added goes.
    fn finish(&mut self, keep: bool, privileged: bool) -> Vec<String> {
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
        for route in was
            .iter()
            .filter(|r| !now.contains(r) && !destinations::is_pool4(old, r))
        {
            if let Err(e) = r.remove_one(route) {
                warn.push(e);
            }
        }
        Ok(())
    }
}
