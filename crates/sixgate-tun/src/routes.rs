//! `[tun] manage_routes`: route the destinations the gateway must receive
//! ([`sixgate_dataplane::destinations`]) into the device with `ip` (iproute2),
//! and take exactly those routes away again.

use sixgate_dataplane::destinations::Route;
use sixgate_dataplane::system::ip;

/// Routes this process added, to be removed on exit.
#[derive(Debug)]
pub struct Routes {
    dev: String,
    added: Vec<Route>,
    present: Vec<Route>,
}

impl Routes {
    /// Nothing installed.
    pub fn none(dev: &str) -> Routes {
        Routes {
            dev: dev.to_owned(),
            added: Vec::new(),
            present: Vec::new(),
        }
    }

    /// Add every route in `wanted` through `dev`. A route that already exists
    /// through `dev` itself (left by an earlier `keep` run) is taken as it is and
    /// not counted as added; one through anything else is an error naming it. On
    /// any error the routes added so far are removed again.
    pub fn install(dev: &str, wanted: &[Route]) -> Result<Routes, String> {
        let mut r = Routes::none(dev);
        for route in wanted {
            match add(dev, route) {
                Ok(true) => r.added.push(route.clone()),
                Ok(false) => r.present.push(route.clone()),
                Err(e) => {
                    for problem in r.remove() {
                        tracing::warn!("while undoing the set-up: {problem}");
                    }
                    return Err(e);
                }
            }
        }
        Ok(r)
    }

    /// The device the routes go into.
    pub fn dev(&self) -> &str {
        &self.dev
    }

    /// Routes added by this process.
    pub fn added(&self) -> &[Route] {
        &self.added
    }

    /// Routes that were already there through the device.
    pub fn present(&self) -> &[Route] {
        &self.present
    }

    /// Remove the routes this process added; returns what could not be removed.
    pub fn remove(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        for route in self.added.drain(..).rev() {
            let out = ip(route.v6, &["route", "del", &route.prefix, "dev", &self.dev]);
            // A route through a device that is gone went with it.
            if let Err(e) = out
                && !e.contains("Cannot find device")
            {
                problems.push(format!("cannot remove route {route} dev {}: {e}", self.dev));
            }
        }
        problems
    }

    /// A runtime change (`sixgate eam add`, reload): route `route` into the
    /// device too. Already there (through the device): nothing to do.
    pub fn add_one(&mut self, route: &Route) -> Result<(), String> {
        if self.added.contains(route) || self.present.contains(route) {
            return Ok(());
        }
        if add(&self.dev, route)? {
            self.added.push(route.clone());
        } else {
            self.present.push(route.clone());
        }
        Ok(())
    }

    /// A runtime change took `route` away: remove it if this process added it.
    pub fn remove_one(&mut self, route: &Route) -> Result<(), String> {
        let Some(i) = self.added.iter().position(|r| r == route) else {
            self.present.retain(|r| r != route);
            return Ok(());
        };
        ip(route.v6, &["route", "del", &route.prefix, "dev", &self.dev])
            .map_err(|e| format!("cannot remove route {route} dev {}: {e}", self.dev))?;
        self.added.remove(i);
        Ok(())
    }

    /// Leave the routes in place: nothing will remove them.
    pub fn forget(&mut self) -> Vec<Route> {
        std::mem::take(&mut self.added)
    }
}

/// Add one route; `Ok(false)` if it was already there through `dev`.
fn add(dev: &str, route: &Route) -> Result<bool, String> {
    let err = match ip(route.v6, &["route", "add", &route.prefix, "dev", dev]) {
        Ok(_) => return Ok(true),
        Err(e) => e,
    };
    if !err.contains("File exists") {
        return Err(format!(
            "cannot add route {route} dev {dev}: {err}{}",
            sixgate_dataplane::system::eperm_hint(&err)
        ));
    }
    // Who has it?
    let shown = ip(route.v6, &["-o", "route", "show", "exact", &route.prefix]).unwrap_or_default();
    let line = shown.lines().next().unwrap_or("").trim();
    let via = line.split_whitespace().skip_while(|w| *w != "dev").nth(1);
    match via {
        Some(d) if d == dev => Ok(false),
        Some(d) => Err(format!(
            "route {route} already exists via {d}; remove it (ip{} route del {route}) or set \
             [tun] manage_routes = false and route it yourself",
            if route.v6 { " -6" } else { "" }
        )),
        None if !line.is_empty() => Err(format!(
            "route {route} already exists ({line}); remove it or set [tun] manage_routes = false"
        )),
        None => Err(format!("cannot add route {route} dev {dev}: {err}")),
    }
}
