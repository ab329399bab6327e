//! Runtime changes on the XDP data plane ([`sixgate_tun::live::Plane`]): what
//! the TUN data plane does with routes into its device, done to the XDP
//! program's destination tries. A new EAM entry or pool4 prefix is added to
//! both interfaces' tries before the workers run the change; a removed EAM
//! prefix is taken out; a removed pool4 prefix stays, so that its sessions
//! drain (as its route does on TUN). The host's own addresses and the default
//! pool4's are never touched.

use std::any::Any;
use std::net::{Ipv4Addr, Ipv6Addr};

use sixgate_core::Config;
use sixgate_tun::live::{Plane, Refusal};
use sixgate_tun::routes::{self, Route};

use crate::program::{Destinations, TRANSLATE, Tries};

/// Both programs' tries and what must stay in them.
pub struct XdpPlane {
    tries: Vec<Tries>,
    /// False for a CLAT or a MAP-T CE: their destinations (0.0.0.0/0, their own
    /// prefix) do not follow the translator's EAM or pool4.
    follow: bool,
    local_v4: Vec<Ipv4Addr>,
    local_v6: Vec<Ipv6Addr>,
    pool4_default: Option<Ipv4Addr>,
}

enum Prefix {
    V4(Ipv4Addr, u8),
    V6(Ipv6Addr, u8),
}

impl XdpPlane {
    /// The plane over `tries` (one per interface), filled from `dst`.
    pub fn new(tries: Vec<Tries>, dst: &Destinations, follow: bool) -> XdpPlane {
        XdpPlane {
            tries,
            follow,
            local_v4: dst.local_v4.clone(),
            local_v6: dst.local_v6.clone(),
            pool4_default: dst.pool4_default,
        }
    }

    /// `route` as a prefix, unless it is one the plane must leave alone.
    fn prefix(&self, route: &Route) -> Option<Prefix> {
        let d = Destinations::from_prefixes([route.prefix.as_str()]).ok()?;
        if let Some(&(a, l)) = d.v4.first() {
            let own = l == 32 && (self.local_v4.contains(&a) || self.pool4_default == Some(a));
            (!own).then_some(Prefix::V4(a, l))
        } else {
            let &(a, l) = d.v6.first()?;
            (!(l == 128 && self.local_v6.contains(&a))).then_some(Prefix::V6(a, l))
        }
    }

    fn set(&mut self, p: &Prefix) -> Result<(), String> {
        for t in &mut self.tries {
            match *p {
                Prefix::V4(a, l) => t.set_v4(a, l, TRANSLATE)?,
                Prefix::V6(a, l) => t.set_v6(a, l, TRANSLATE)?,
            }
        }
        Ok(())
    }

    fn remove(&mut self, p: &Prefix) -> Result<(), String> {
        for t in &mut self.tries {
            match *p {
                Prefix::V4(a, l) => t.remove_v4(a, l)?,
                Prefix::V6(a, l) => t.remove_v6(a, l)?,
            }
        }
        Ok(())
    }
}

impl Plane for XdpPlane {
    fn apply(&mut self, old: &Config, new: &Config, warn: &mut Vec<String>) -> Result<(), Refusal> {
        if !self.follow {
            return Ok(());
        }
        let (was, now) = (routes::wanted(old), routes::wanted(new));
        let new: Vec<Prefix> = now
            .iter()
            .filter(|r| !was.contains(r))
            .filter_map(|r| self.prefix(r))
            .collect();
        let mut added = Vec::new();
        for p in new {
            if let Err(e) = self.set(&p) {
                for a in &added {
                    let _ = self.remove(a);
                }
                let _ = self.remove(&p);
                return Err(e);
            }
            added.push(p);
        }
        let gone: Vec<Prefix> = was
            .iter()
            .filter(|r| !now.contains(r) && !routes::is_pool4(old, r))
            .filter_map(|r| self.prefix(r))
            .collect();
        for p in &gone {
            if let Err(e) = self.remove(p) {
                warn.push(e);
            }
        }
        Ok(())
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
