//! The routing daemon's hook (docs/ha.md, "Failover and scale-out: a routing
//! daemon decides"): while the node is ready, routes for pool6 and for each
//! of its own pool4 shards in the kernel routing table `[sync]
//! announce_table`, which BIRD or FRR imports and announces. sixgate runs no
//! routing protocol and no command of the daemon's; these routes never carry
//! traffic (the table is not in the routing policy), they only say "this
//! node is ready". With the TUN data plane they go through its device, so
//! the kernel removes them when the process dies in any way (the device goes
//! with its last descriptor), `kill -9` included; without one (AF_XDP) they
//! are blackhole routes, which `sixgate sync withdraw` removes after a crash.
//! Changed with `ip` (iproute2), as the TUN data plane's routes, from the
//! sync thread: a few process starts at ready, drain and stop, never on the
//! packet path.

use crate::destinations::Route;
use crate::system::ip;

/// The routes of one node in its announce table.
#[derive(Debug)]
pub struct Announcer {
    table: String,
    /// The device the routes go through (`None`: blackhole routes).
    device: Option<String>,
    routes: Vec<Route>,
    /// Routes added and not withdrawn yet.
    added: Vec<Route>,
}

impl Announcer {
    /// Routes for `pool6` and `shards` in `table`, through `device` (the
    /// TUN device, which dies with the process) or blackhole routes;
    /// nothing added yet.
    pub fn new(
        table: u32,
        pool6: (std::net::Ipv6Addr, u8),
        shards: &[(std::net::Ipv4Addr, u8)],
        device: Option<&str>,
    ) -> Announcer {
        let mut routes = vec![Route {
            prefix: format!("{}/{}", pool6.0, pool6.1),
            v6: true,
        }];
        routes.extend(shards.iter().map(|(a, l)| Route {
            prefix: format!("{a}/{l}"),
            v6: false,
        }));
        Announcer {
            table: table.to_string(),
            device: device.map(str::to_owned),
            routes,
            added: Vec::new(),
        }
    }

    /// The table, as `ip` takes it.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Every route this node announces when ready.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// Whether the routes are in the table (all of them).
    pub fn announcing(&self) -> bool {
        !self.added.is_empty()
    }

    /// Adds every route (`replace`: one left by a node killed with SIGKILL
    /// is taken over). On an error the routes added so far are withdrawn
    /// again: a node announces all of itself or nothing.
    pub fn announce(&mut self) -> Result<(), String> {
        for i in 0..self.routes.len() {
            let r = &self.routes[i];
            let mut args = vec!["route", "replace"];
            match &self.device {
                Some(dev) => args.extend([r.prefix.as_str(), "dev", dev]),
                None => args.extend(["blackhole", r.prefix.as_str()]),
            }
            args.extend(["table", &self.table]);
            if let Err(e) = ip(r.v6, &args) {
                let why = format!(
                    "cannot add {} to table {}: {e}",
                    self.describe(r),
                    self.table
                );
                for p in self.withdraw() {
                    tracing::warn!("while undoing the announcement: {p}");
                }
                return Err(why);
            }
            self.added.push(r.clone());
        }
        Ok(())
    }

    fn describe(&self, r: &Route) -> String {
        match &self.device {
            Some(dev) => format!("{r} dev {dev}"),
            None => format!("blackhole {r}"),
        }
    }

    /// Removes the routes added; returns what could not be removed (a route
    /// someone else removed first is gone, as wanted).
    pub fn withdraw(&mut self) -> Vec<String> {
        let added: Vec<Route> = self.added.drain(..).rev().collect();
        self.remove(&added)
    }

    /// Removes every route this node would announce, added by this process
    /// or not: one left in the table by a node killed with SIGKILL (which
    /// the routing daemon would go on announcing) is gone before the node
    /// starts again, and `sixgate sync withdraw` (a unit's `ExecStopPost`)
    /// clears them after a crash.
    pub fn withdraw_all(&mut self) -> Vec<String> {
        self.added.clear();
        let all = self.routes.clone();
        self.remove(&all)
    }

    fn remove(&self, routes: &[Route]) -> Vec<String> {
        let mut problems = Vec::new();
        for r in routes {
            // Whatever its type: a blackhole route of an older sixgate or one
            // through the device (gone already when the device went).
            let args = ["route", "del", &r.prefix, "table", &self.table];
            if let Err(e) = ip(r.v6, &args)
                && !absent(&e)
            {
                problems.push(format!("cannot remove {r} from table {}: {e}", self.table));
            }
        }
        problems
    }
}

/// `ip route del`'s answers when there is nothing to remove: no such route,
/// or (IPv4) no such table yet, as on a clean start.
fn absent(e: &str) -> bool {
    ["No such process", "not found", "FIB table does not exist"]
        .iter()
        .any(|m| e.contains(m))
}

impl Drop for Announcer {
    /// A sync thread that ends in any way takes its announcement with it.
    fn drop(&mut self) {
        for p in self.withdraw() {
            tracing::warn!("{p}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_pool6_and_own_shards() {
        let a = Announcer::new(
            100,
            ("2001:db8:64::".parse().unwrap(), 96),
            &[
                ("198.18.0.0".parse().unwrap(), 32),
                ("198.18.1.0".parse().unwrap(), 24),
            ],
            None,
        );
        let r: Vec<String> = a
            .routes()
            .iter()
            .map(|r| format!("{}{}", r.prefix, r.v6))
            .collect();
        assert_eq!(
            r,
            [
                "2001:db8:64::/96true",
                "198.18.0.0/32false",
                "198.18.1.0/24false"
            ]
        );
        assert_eq!(a.table(), "100");
        assert!(!a.announcing());
    }

    #[test]
    fn nothing_to_remove_is_not_a_problem() {
        assert!(absent("RTNETLINK answers: No such process"));
        assert!(absent("Error: FIB table does not exist."));
        assert!(!absent("RTNETLINK answers: Operation not permitted"));
    }
}
