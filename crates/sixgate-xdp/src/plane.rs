//! Runtime changes on the XDP data plane ([`sixgate_dataplane::Plane`]): what
//! the TUN data plane does with routes into its device, done to the XDP
//! program's destination tries. A new EAM entry or pool4 prefix is added to
//! both interfaces' tries before the workers run the change; a removed EAM
//! prefix is taken out; a removed pool4 prefix stays, so that its sessions
//! drain (as its route does on TUN). The host's own addresses and the default
//! pool4's are never touched. A side's MTU the file leaves out is its
//! interface's, read again at every change.

use std::net::{Ipv4Addr, Ipv6Addr};

use sixgate_core::Config;
use sixgate_dataplane::destinations::{self, Route};
use sixgate_dataplane::{Plane, Refusal};

use crate::nexthop;
use crate::program::{Destinations, TRANSLATE, Tries};

/// The headroom the kernel leaves in front of a frame it copies into the
/// UMEM (`XDP_PACKET_HEADROOM`).
const XDP_PACKET_HEADROOM: u32 = 256;

/// The largest link MTU whose frames (Ethernet header included) fit a UMEM
/// frame behind the kernel's headroom.
pub(crate) const MAX_MTU: u32 = crate::xsk::FRAME_SIZE - XDP_PACKET_HEADROOM - 14;

/// The kernel does not check what an AF_XDP socket sends against the
/// interface's MTU: the translator does (RFC 7915 §4 Packet Too Big /
/// Fragmentation Needed), with each side's MTU (`interfaces`: the IPv6 side's,
/// then the IPv4 side's) where `cfg` sets none. Returns the larger of the two
/// interfaces' MTUs.
/// Warns where an interface's MTU exceeds [`MAX_MTU`].
pub(crate) fn link_mtus(interfaces: &[String], cfg: &mut Config) -> Result<u32, String> {
    let mut link_mtu = 0;
    for (side, name) in interfaces.iter().enumerate() {
        let mtu = nexthop::mtu_of(name).map_err(|e| format!("{name}: cannot read its MTU: {e}"))?;
        link_mtu = link_mtu.max(mtu);
        if mtu > MAX_MTU {
            // The kernel drops a frame that does not fit a UMEM frame (the
            // socket's rx_dropped): the TUN data plane and the fast paths
            // would translate it (tests/differential.rs, jumbo frames).
            tracing::warn!(
                interface = %name,
                mtu,
                "frames over {MAX_MTU} bytes of IP do not fit an AF_XDP frame ({} bytes, \
                 {XDP_PACKET_HEADROOM} of them headroom) and are dropped by the kernel before \
                 the workers see them; set the interface's MTU to at most {MAX_MTU}, or use \
                 the TUN data plane",
                crate::xsk::FRAME_SIZE
            );
        }
        let mtu = u16::try_from(mtu).unwrap_or(u16::MAX);
        let (key, slot) = if side == 0 {
            ("ipv6_mtu", &mut cfg.ipv6_mtu)
        } else {
            ("ipv4_mtu", &mut cfg.ipv4_mtu)
        };
        if slot.is_none() {
            *slot = Some(mtu);
            tracing::info!(interface = %name, mtu, "{key} not set: the interface's MTU is used");
        }
    }
    Ok(link_mtu)
}

/// Both programs' tries and what must stay in them.
pub struct XdpPlane {
    tries: Vec<Tries>,
    /// False for a CLAT or a MAP-T CE: their destinations (0.0.0.0/0, their own
    /// prefix) do not follow the translator's EAM or pool4.
    follow: bool,
    local_v4: Vec<Ipv4Addr>,
    local_v6: Vec<Ipv6Addr>,
    pool4_default: Option<Ipv4Addr>,
    /// The IPv6-side and IPv4-side interfaces.
    interfaces: [String; 2],
}

enum Prefix {
    V4(Ipv4Addr, u8),
    V6(Ipv6Addr, u8),
}

impl XdpPlane {
    /// The plane over `tries` (one per interface of `interfaces`), filled
    /// from `dst`.
    pub fn new(
        tries: Vec<Tries>,
        dst: &Destinations,
        follow: bool,
        interfaces: [String; 2],
    ) -> XdpPlane {
        XdpPlane {
            tries,
            follow,
            local_v4: dst.local_v4.clone(),
            local_v6: dst.local_v6.clone(),
            pool4_default: dst.pool4_default,
            interfaces,
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
    fn complete(&self, new: &mut Config) -> Result<(), Refusal> {
        link_mtus(&self.interfaces, new).map(drop)
    }

    fn apply(&mut self, old: &Config, new: &Config, warn: &mut Vec<String>) -> Result<(), Refusal> {
        if !self.follow {
            return Ok(());
        }
        let (was, now) = (destinations::wanted(old), destinations::wanted(new));
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
            .filter(|r| !now.contains(r) && !destinations::is_pool4(old, r))
            .filter_map(|r| self.prefix(r))
            .collect();
        for p in &gone {
            if let Err(e) = self.remove(p) {
                warn.push(e);
            }
        }
        Ok(())
    }
}
