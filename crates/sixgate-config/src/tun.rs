//! `[tun]`: the TUN device of the live data plane.

use crate::ConfigError;
use crate::cx::Cx;
use crate::schema::TunSection;
use crate::value::{int_in, interface_name_problem};

/// `[tun]`: the TUN device of the live data plane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TunSettings {
    /// Interface name.
    pub name: String,
    /// Device MTU.
    pub mtu: u16,
    /// Open the queues with a virtio-net header and enable checksum and
    /// segmentation offloads (TSO4/6, USO4/6), falling back to plain packets if
    /// the kernel refuses.
    pub offload: bool,
    /// Install routes for pool6 and every EAM IPv4 prefix into the device, and
    /// remove them on exit.
    pub manage_routes: bool,
    /// Leave the device (made persistent) and the routes in place on exit.
    pub keep: bool,
}

/// Default `[tun] name`.
pub const DEFAULT_TUN_NAME: &str = "sixgate0";
/// Default `[tun] mtu`.
pub const DEFAULT_TUN_MTU: u16 = 1500;

impl Default for TunSettings {
    fn default() -> Self {
        TunSettings {
            name: DEFAULT_TUN_NAME.to_owned(),
            mtu: DEFAULT_TUN_MTU,
            offload: true,
            manage_routes: true,
            keep: false,
        }
    }
}

pub(crate) fn section(cx: &Cx<'_>, t: TunSection) -> Result<TunSettings, ConfigError> {
    let mut out = TunSettings::default();
    if let Some(n) = &t.name {
        cx.check(|| {
            let name = n.get_ref();
            let problem = interface_name_problem(name);
            if let Some(problem) = problem {
                return Err(cx.bad(
                    "name",
                    n,
                    problem,
                    "an interface name of 1 to 15 ASCII characters without '/', ':' or spaces, \
                     e.g. \"sixgate0\"",
                ));
            }
            out.name = name.clone();
            Ok(())
        });
    }
    if let Some(m) = &t.mtu {
        cx.check(|| {
            out.mtu = int_in(cx, "mtu", m, 1280, 65535)? as u16;
            Ok(())
        });
    }
    if let Some(v) = t.offload {
        out.offload = v;
    }
    if let Some(v) = t.manage_routes {
        out.manage_routes = v;
    }
    if let Some(v) = t.keep {
        out.keep = v;
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
