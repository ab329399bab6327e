//! The standard bed: an IPv6-only host, the translating gateway, an IPv4 router and
//! an IPv4-only host, each in its own namespace, all on documentation prefixes.
//!
//! ```text
//!  v6host                gateway                        router                       v4host
//!  eth0 ─────────── eth6       eth4 ──────────────── eth0      eth1 ──────────────── eth0
//!  2001:db8:1::5/64      2001:db8:1::1/64               198.51.100.2/24              203.0.113.7/24
//!                        198.51.100.1/24                203.0.113.1/24
//!  default via           translator (TUN),              198.18.0.0/24                default via
//!  2001:db8:1::1         203.0.113.0/24 via .2          via 198.51.100.1             203.0.113.1
//! ```
//!
//! The translator in the gateway maps (see [`TRANSLATOR_TOML`]):
//! - pool6 `2001:db8:64::/96` (RFC 6052): IPv4 address `a.b.c.d` is
//!   `2001:db8:64::a.b.c.d` to IPv6, so the v4 host is [`addr::V4_HOST_AS_V6`];
//! - EAM `198.18.0.0/24` ↔ `2001:db8:1::/120` (RFC 7757): the v6 host is
//!   [`addr::V6_HOST_AS_V4`] to IPv4.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::dut::{Dut, RunningDut};
use crate::error::{Context, Result};
use crate::netns::{Netns, veth, veth_queues};

/// Addresses and prefixes of the bed.
pub mod addr {
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// The IPv6-only host.
    pub const V6_HOST: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 5);
    /// The gateway on the IPv6 link (the v6 host's default router).
    pub const GATEWAY_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);
    /// Prefix length of the IPv6 link.
    pub const V6_LINK_LEN: u8 = 64;
    /// The gateway on the IPv4 link to the router.
    pub const GATEWAY_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
    /// The router on the link to the gateway.
    pub const ROUTER_GW_SIDE: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 2);
    /// The router on the link to the v4 host (the v4 host's default router).
    pub const ROUTER_V4_SIDE: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);
    /// The IPv4-only host.
    pub const V4_HOST: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 7);
    /// Prefix length of both IPv4 links.
    pub const V4_LINK_LEN: u8 = 24;
    /// The v4 host's network, routed by the gateway via the router.
    pub const V4_NET: &str = "203.0.113.0/24";

    /// The RFC 6052 translation prefix.
    pub const POOL6: &str = "2001:db8:64::/96";
    /// The IPv4 side of the EAM entry: the addresses that stand for v6 hosts.
    pub const EAM_V4: &str = "198.18.0.0/24";
    /// The IPv6 side of the EAM entry.
    pub const EAM_V6: &str = "2001:db8:1::/120";

    /// Stateful NAT64's pool4: the same prefix as [`EAM_V4`], so the router's
    /// route to the gateway and the gateway's route into the TUN device serve both.
    pub const POOL4: &str = EAM_V4;

    /// The v6 host as IPv4 sees it (EAM).
    pub const V6_HOST_AS_V4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 5);
    /// The v4 host as IPv6 sees it (pool6).
    pub const V4_HOST_AS_V6: Ipv6Addr = in_pool6(V4_HOST);
    /// The router's gateway-side address as IPv6 sees it: the hop that
    /// `tracepath -6` shows when the router's Time Exceeded is translated.
    pub const ROUTER_AS_V6: Ipv6Addr = in_pool6(ROUTER_GW_SIDE);

    /// TAYGA's own IPv4 address (source of the ICMPv4 errors it generates).
    pub const TAYGA_V4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);

    /// `v4` embedded in [`POOL6`] (RFC 6052 /96: the last 32 bits).
    pub const fn in_pool6(v4: Ipv4Addr) -> Ipv6Addr {
        let o = v4.octets();
        Ipv6Addr::new(
            0x2001,
            0xdb8,
            0x64,
            0,
            0,
            0,
            u16::from_be_bytes([o[0], o[1]]),
            u16::from_be_bytes([o[2], o[3]]),
        )
    }
}

/// Interface names (the same in every bed: names are per namespace).
pub mod ifname {
    /// The v6 host's interface to the gateway.
    pub const V6_HOST: &str = "eth0";
    /// The gateway's interface to the v6 host.
    pub const GATEWAY_V6: &str = "eth6";
    /// The gateway's interface to the router.
    pub const GATEWAY_V4: &str = "eth4";
    /// The router's interface to the gateway.
    pub const ROUTER_GW: &str = "eth0";
    /// The router's interface to the v4 host.
    pub const ROUTER_V4: &str = "eth1";
    /// The v4 host's interface to the router.
    pub const V4_HOST: &str = "eth0";
}

/// The `[translator]` section that matches the bed.
pub const TRANSLATOR_TOML: &str = r#"[translator]
mode = "siit"
pool6 = "2001:db8:64::/96"
eam = [ { ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" } ]
"#;

/// The `[translator]` and `[nat64]` sections of a stateful NAT64 (RFC 6146) on the
/// same bed: pool6 as for SIIT, pool4 [`addr::POOL4`] (the prefix the router
/// already sends to the gateway). Give it to [`crate::Dut::Sixgate`] as
/// extra TOML: its `mode` replaces the generated `[translator]`.
pub const NAT64_TOML: &str = r#"[translator]
mode = "nat64"
pool6 = "2001:db8:64::/96"

[nat64]
pool4 = ["198.18.0.0/24"]
"#;

/// Knobs of [`Topology::build`]. `Default` is the plain bed, every link at 1500.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyOptions {
    /// MTU of the router's interface towards the v4 host, i.e. of the
    /// router → v4 host direction only. The v4 host's own interface stays at 1500,
    /// so its TCP MSS does not hide the bottleneck: IPv6 → IPv4 traffic bigger than
    /// this makes the router send Fragmentation Needed, which the translator must
    /// turn into Packet Too Big for the v6 host.
    pub v4_link_mtu: Option<u32>,
    /// MTU of the gateway's interface towards the v6 host (gateway → v6 host only),
    /// the mirror image: IPv4 → IPv6 traffic bigger than this makes the gateway's
    /// kernel send Packet Too Big to the pool6 source, which the translator must
    /// turn into Fragmentation Needed for the v4 host.
    pub v6_link_mtu: Option<u32>,
    /// Install permanent neighbour entries on every link, so no ARP or Neighbour
    /// Discovery happens (for benchmarks: nothing but the measured traffic).
    pub static_neighbours: bool,
    /// Receive and transmit queues of the gateway's two links (both ends);
    /// 0 or 1: one. The XDP data plane runs one worker per queue.
    pub queues: u32,
    /// Turn transmit checksum offload off on the hosts' interfaces, so that
    /// every packet on the links carries a complete checksum, as from a real
    /// NIC. Without it, veth hands packets of a local sender over with a partial
    /// checksum (`CHECKSUM_PARTIAL`), which AF_XDP cannot tell apart: the XDP
    /// data plane needs it (docs/xdp.md).
    pub complete_checksums: bool,
}

/// The four namespaces of the standard bed, configured and routed, without a
/// translator; start one with [`Topology::start`]. Everything is removed on drop.
#[derive(Debug)]
pub struct Topology {
    /// The IPv6-only host.
    pub v6host: Netns,
    /// The gateway, where the translator runs (forwarding on).
    pub gateway: Netns,
    /// The IPv4 router between gateway and v4 host (forwarding on).
    pub router: Netns,
    /// The IPv4-only host.
    pub v4host: Netns,
    options: TopologyOptions,
}

impl Topology {
    /// Create and wire the namespaces. On error, whatever was made is removed.
    pub fn build(options: TopologyOptions) -> Result<Topology> {
        let n = crate::next_index();
        let t = Topology {
            v6host: Netns::with_index("v6host", n)?,
            gateway: Netns::with_index("gw", n)?,
            router: Netns::with_index("router", n)?,
            v4host: Netns::with_index("v4host", n)?,
            options,
        };
        t.wire().context("building the test bed")?;
        Ok(t)
    }

    fn wire(&self) -> Result<()> {
        use addr::*;
        let (h6, gw, r, h4) = (&self.v6host, &self.gateway, &self.router, &self.v4host);
        let q = self.options.queues;
        veth_queues(h6, ifname::V6_HOST, gw, ifname::GATEWAY_V6, q)?;
        veth_queues(gw, ifname::GATEWAY_V4, r, ifname::ROUTER_GW, q)?;
        veth(r, ifname::ROUTER_V4, h4, ifname::V4_HOST)?;

        h6.add_address(ifname::V6_HOST, &format!("{V6_HOST}/{V6_LINK_LEN}"))?;
        h6.add_route_via("default", &GATEWAY_V6.to_string())?;

        gw.enable_forwarding()?;
        gw.sysctl(&[
            // ICMPv6 errors of the gateway itself (Packet Too Big in the PMTU test)
            // are not rate limited: tests must not depend on timing.
            ("net.ipv6.icmp.ratelimit", "0"),
            ("net.ipv4.icmp_ratelimit", "0"),
        ])?;
        gw.add_address(ifname::GATEWAY_V6, &format!("{GATEWAY_V6}/{V6_LINK_LEN}"))?;
        gw.add_address(ifname::GATEWAY_V4, &format!("{GATEWAY_V4}/{V4_LINK_LEN}"))?;
        gw.add_route_via(V4_NET, &ROUTER_GW_SIDE.to_string())?;

        r.enable_forwarding()?;
        // Time Exceeded and Fragmentation Needed for every probe (tracepath, PMTU).
        r.sysctl(&[("net.ipv4.icmp_ratelimit", "0")])?;
        r.add_address(
            ifname::ROUTER_GW,
            &format!("{ROUTER_GW_SIDE}/{V4_LINK_LEN}"),
        )?;
        r.add_address(
            ifname::ROUTER_V4,
            &format!("{ROUTER_V4_SIDE}/{V4_LINK_LEN}"),
        )?;
        r.add_route_via(EAM_V4, &GATEWAY_V4.to_string())?;

        h4.add_address(ifname::V4_HOST, &format!("{V4_HOST}/{V4_LINK_LEN}"))?;
        h4.add_route_via("default", &ROUTER_V4_SIDE.to_string())?;

        if let Some(mtu) = self.options.v4_link_mtu {
            r.set_mtu(ifname::ROUTER_V4, mtu)?;
        }
        if let Some(mtu) = self.options.v6_link_mtu {
            gw.set_mtu(ifname::GATEWAY_V6, mtu)?;
        }
        if self.options.static_neighbours {
            self.pin_neighbours()?;
        }
        if self.options.complete_checksums {
            h6.run("ethtool", ["-K", ifname::V6_HOST, "tx", "off"])?;
            h4.run("ethtool", ["-K", ifname::V4_HOST, "tx", "off"])?;
        }
        Ok(())
    }

    /// Permanent neighbour entries for both ends of every link.
    fn pin_neighbours(&self) -> Result<()> {
        use addr::*;
        let links: [(&Netns, &str, String, &Netns, &str, String); 3] = [
            (
                &self.v6host,
                ifname::V6_HOST,
                V6_HOST.to_string(),
                &self.gateway,
                ifname::GATEWAY_V6,
                GATEWAY_V6.to_string(),
            ),
            (
                &self.gateway,
                ifname::GATEWAY_V4,
                GATEWAY_V4.to_string(),
                &self.router,
                ifname::ROUTER_GW,
                ROUTER_GW_SIDE.to_string(),
            ),
            (
                &self.router,
                ifname::ROUTER_V4,
                ROUTER_V4_SIDE.to_string(),
                &self.v4host,
                ifname::V4_HOST,
                V4_HOST.to_string(),
            ),
        ];
        for (a, a_dev, a_ip, b, b_dev, b_ip) in links {
            let (a_mac, b_mac) = (a.mac(a_dev)?, b.mac(b_dev)?);
            a.add_neighbour(a_dev, &b_ip, &b_mac)?;
            b.add_neighbour(b_dev, &a_ip, &a_mac)?;
        }
        Ok(())
    }

    /// The options the bed was built with.
    pub fn options(&self) -> &TopologyOptions {
        &self.options
    }

    /// The four namespaces, from the v6 side to the v4 side.
    pub fn namespaces(&self) -> [&Netns; 4] {
        [&self.v6host, &self.gateway, &self.router, &self.v4host]
    }

    /// Start `translator` in the gateway and wait until it is ready.
    pub fn start(&self, translator: &Dut) -> Result<RunningDut<'_>> {
        translator.start(&self.gateway)
    }

    /// A table of the bed for people: role, namespace, addresses.
    pub fn describe(&self) -> String {
        use addr::*;
        let rows = [
            (
                "IPv6-only host",
                &self.v6host,
                format!("{V6_HOST}/{V6_LINK_LEN}"),
            ),
            (
                "gateway",
                &self.gateway,
                format!("{GATEWAY_V6}/{V6_LINK_LEN} | {GATEWAY_V4}/{V4_LINK_LEN}"),
            ),
            (
                "IPv4 router",
                &self.router,
                format!("{ROUTER_GW_SIDE}/{V4_LINK_LEN} | {ROUTER_V4_SIDE}/{V4_LINK_LEN}"),
            ),
            (
                "IPv4-only host",
                &self.v4host,
                format!("{V4_HOST}/{V4_LINK_LEN}"),
            ),
        ];
        let w = rows.iter().map(|r| r.1.name().len()).max().unwrap_or(0);
        rows.iter()
            .map(|(role, ns, a)| format!("  {role:<15} {:<w$}  {a}\n", ns.name()))
            .collect()
    }
}

/// `v4` as IPv6 sees it through the bed's translator: inside the EAM range, the
/// EAM's IPv6 side; otherwise embedded in pool6.
pub fn v4_as_v6(v4: Ipv4Addr) -> Ipv6Addr {
    let o = v4.octets();
    if o[..3] == [198, 18, 0] {
        Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, u16::from(o[3]))
    } else {
        addr::in_pool6(v4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_match_the_translator_config() {
        assert_eq!(addr::V4_HOST_AS_V6.to_string(), "2001:db8:64::cb00:7107");
        assert_eq!(addr::ROUTER_AS_V6.to_string(), "2001:db8:64::c633:6402");
        assert_eq!(v4_as_v6(addr::V6_HOST_AS_V4), addr::V6_HOST);
        assert_eq!(v4_as_v6(addr::V4_HOST), addr::V4_HOST_AS_V6);
        assert!(TRANSLATOR_TOML.contains(addr::POOL6));
        assert!(TRANSLATOR_TOML.contains(addr::EAM_V4));
        assert!(TRANSLATOR_TOML.contains(addr::EAM_V6));
        assert!(NAT64_TOML.contains(addr::POOL6));
        assert!(NAT64_TOML.contains(addr::POOL4));
    }
}
