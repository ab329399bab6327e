//! A network-namespace test bed for sixgate: real hosts, a real router and a real
//! translator on one machine, built in milliseconds and torn down on drop.
//!
//! Used by the end-to-end tests (`crates/sixgate/tests/e2e.rs`), by `sixgate demo`
//! and by the `sg-bed` helper for benchmark scripts. It does not depend on
//! sixgate's core: the translator under test, the device under test, is a program ([`Dut`]), either
//! `sixgate run` or TAYGA, so the same tests validate both.
//!
//! Pieces, from small to large:
//! - [`Netns`]: one namespace, `sg-<role>-<pid>-<n>`, deleted on drop, with helpers
//!   to run programs inside ([`Netns::run`], [`Netns::spawn`]) and to configure it
//!   (addresses, routes, sysctls, MTU, neighbours); [`veth`] links two.
//! - [`Background`]: a program running in the background, stopped on drop.
//! - [`Topology`]: the standard bed, IPv6-only host — gateway — IPv4 router —
//!   IPv4-only host (addresses in [`addr`], drawing in [`topology`]).
//! - [`Dut`] / [`RunningDut`]: the device under test, the translator in the gateway.
//! - [`chain::Chain`]: the 464XLAT chain, IPv4-only client — CLAT — IPv6-only
//!   core — PLAT — IPv4-only server, with [`start_sixgate_with_config`] for its
//!   two translators.
//! - [`ecmp::EcmpBed`]: the scale-out bed, IPv6 client — router6 — two gateways
//!   — router4 — IPv4 server, the routers running BGP with BFD and ECMP to the
//!   gateways, each a [`bird::Bird`] (BIRD 2).
//! - [`cleanup_stale`]: remove what crashed runs left (only this crate's names, and
//!   only those of processes that are gone).
//!
//! Everything needs root and iproute2 ([`check_host`] says why not). Every
//! namespace, interface, process, route and file the bed creates is removed when
//! its owner is dropped, also when a test panics: the namespaces go last and take
//! any straggling process with them.
//!
//! ```no_run
//! use sixgate_netns::{Topology, TopologyOptions, Dut, addr};
//!
//! let bed = Topology::build(TopologyOptions::default())?;
//! let translator = bed.start(&Dut::Tayga)?;
//! let out = bed.v6host.run("ping", ["-c1", &addr::V4_HOST_AS_V6.to_string()])?;
//! println!("{out}");
//! translator.stop()?.check_clean()?;
//! # Ok::<(), sixgate_netns::Error>(())
//! ```

use std::sync::atomic::{AtomicU32, Ordering};

pub mod bird;
pub mod chain;
mod dut;
pub mod ecmp;
mod error;
mod netns;
mod process;
pub mod topology;

pub use dut::{
    Dataplane, Dut, ENV_BINARY, ENV_DATAPLANE, ENV_EXTRA_TOML, ENV_TRANSLATOR, RunningDut,
    SIXGATE_TUN, Stopped, TAYGA_TUN, start_sixgate_with_config,
};
pub use error::{Context, Error, Result};
pub use netns::{
    LinkState, LinkStats, Netns, Proto, check_host, cleanup_stale, list_namespaces, veth,
    veth_queues, veth_with_macs,
};
pub use process::{
    Background, DEFAULT_TIMEOUT, Finished, ScratchDir, capture, describe, interrupt, run_checked,
};
pub use topology::{
    NAT64_TOML, TRANSLATOR_TOML, Topology, TopologyOptions, addr, ifname, v4_as_v6,
};

/// Every name this crate gives starts with this.
pub const PREFIX: &str = "sg-";

static INDEX: AtomicU32 = AtomicU32::new(0);

/// A number not handed out before in this process: the `<n>` of
/// `sg-<role>-<pid>-<n>`.
pub fn next_index() -> u32 {
    INDEX.fetch_add(1, Ordering::Relaxed)
}

/// `sg-<role>-<pid>-<index>`: unique per process and call, and it says which process
/// made it, so [`cleanup_stale`] can tell live beds from dead ones.
pub fn unique_name(role: &str, index: u32) -> String {
    format!("{PREFIX}{role}-{}-{index}", std::process::id())
}

/// `(role, pid, index)` of a name made by [`unique_name`].
pub fn parse_unique_name(name: &str) -> Option<(&str, u32, u32)> {
    let rest = name.strip_prefix(PREFIX)?;
    let mut parts = rest.split('-');
    let (role, pid, index) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || check_role(role).is_err() {
        return None;
    }
    Some((role, pid.parse().ok()?, index.parse().ok()?))
}

/// Roles are 1 to 12 lowercase letters and digits, so names parse back.
fn check_role(role: &str) -> Result<()> {
    if (1..=12).contains(&role.len())
        && role
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        Ok(())
    } else {
        Err(Error::new(format!(
            "role {role:?}: expected 1 to 12 lowercase letters or digits"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let n = unique_name("gw", 7);
        assert_eq!(n, format!("sg-gw-{}-7", std::process::id()));
        assert_eq!(parse_unique_name(&n), Some(("gw", std::process::id(), 7)));
        assert_eq!(parse_unique_name("sg-GW-1-2"), None);
        assert_eq!(parse_unique_name("sg-gw-1-2-3"), None);
        assert_eq!(parse_unique_name("xx-gw-1-2"), None);
        assert!(check_role("v6host").is_ok());
        assert!(check_role("").is_err() && check_role("a-b").is_err());
    }
}
