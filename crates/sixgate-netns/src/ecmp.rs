//! The scale-out bed: two gateways behind routers that run BGP with them
//! (BIRD 2, [`crate::bird`]) and spread traffic over them by ECMP, with BFD
//! for fast failure detection (docs/ha.md, "Failover and scale-out").
//!
//! ```text
//!                          ┌─ gw1 (r6: fd00:61::2, r4: 10.41.0.2) ─┐
//!  client ── router6 ──────┤   sixgate + BIRD, AS 65010             ├── router4 ── server
//!  2001:db8:1::5   AS 65000 └─ gw2 (r6: fd00:62::2, r4: 10.42.0.2) ─┘  AS 65000   203.0.113.7
//! ```
//!
//! - router6 and router4 each have an eBGP session with BFD to each gateway
//!   over the direct link; their BIRD merges the two equal routes into one
//!   multipath kernel route (`merge paths on`), hashed on L4
//!   (`fib_multipath_hash_policy = 1`), so flows spread over both gateways.
//! - Each gateway's BIRD learns what is in kernel table [`ANNOUNCE_TABLE`]
//!   (`protocol kernel { kernel table 100; learn; }`) and announces it: pool6
//!   to router6, the IPv4 prefix to router4. [`EcmpBed::announce`] puts
//!   blackhole routes there, as sixgate's `[sync] announce_table` hook does
//!   when it is ready (through its TUN device, or blackholes). Nothing else reaches the routers: a gateway without
//!   them gets no traffic.
//! - The gateways reach the client's and the server's networks by static
//!   routes; BIRD does not touch their main table. A `sync` link joins them
//!   (10.5.0.1 and .2) for NAT64 state sync.
//!
//! The translator is the test's to start (SIIT maps pool6 [`addr::POOL6`] and
//! the EAM [`addr::EAM_V4`] ↔ [`addr::EAM_V6`], so the client is
//! [`addr::CLIENT_AS_V4`] to the server).

use std::time::{Duration, Instant};

use crate::bird::Bird;
use crate::error::{Error, Result};
use crate::netns::{Netns, veth};

/// Kernel table the gateways' BIRD learns the routes to announce from.
pub const ANNOUNCE_TABLE: u32 = 100;

/// The routers' AS and the gateways' (both gateways share one: their routes
/// then have equal AS paths, which `merge paths` needs).
pub const ROUTERS_AS: u32 = 65000;
/// See [`ROUTERS_AS`].
pub const GATEWAYS_AS: u32 = 65010;

/// BFD timers of every session: detection after 3 × 100 ms without a packet.
pub const BFD_INTERVAL_MS: u32 = 100;
/// See [`BFD_INTERVAL_MS`].
pub const BFD_MULTIPLIER: u32 = 3;

/// Addresses and prefixes of the bed.
pub mod addr {
    /// The IPv6-only client.
    pub const CLIENT: &str = "2001:db8:1::5";
    /// router6 on the client's link.
    pub const ROUTER6_LAN: &str = "2001:db8:1::1";
    /// The client's network.
    pub const CLIENT_NET: &str = "2001:db8:1::/64";
    /// The IPv4-only server.
    pub const SERVER: &str = "203.0.113.7";
    /// router4 on the server's link.
    pub const ROUTER4_LAN: &str = "203.0.113.1";
    /// The server's network.
    pub const SERVER_NET: &str = "203.0.113.0/24";
    /// The RFC 6052 prefix both gateways translate with.
    pub const POOL6: &str = "2001:db8:64::/96";
    /// The server as the client reaches it (203.0.113.7 in [`POOL6`]).
    pub const SERVER_AS_V6: &str = "2001:db8:64::cb00:7107";
    /// The IPv4 side of the EAM entry (RFC 7757): what the gateways announce
    /// to router4.
    pub const EAM_V4: &str = "198.18.0.0/24";
    /// The IPv6 side of the EAM entry.
    pub const EAM_V6: &str = "2001:db8:1::/120";
    /// The client as the server sees it.
    pub const CLIENT_AS_V4: &str = "198.18.0.5";

    /// Gateway `i`'s (1 or 2) address on its link to router6; router6 is `::1`.
    pub fn gw_v6(i: u8) -> String {
        format!("fd00:6{i}::2")
    }
    /// Gateway `i`'s address on its link to router4; router4 is `.1`.
    pub fn gw_v4(i: u8) -> String {
        format!("10.4{i}.0.2")
    }
    /// router6's address on its link to gateway `i`.
    pub fn router6_to(i: u8) -> String {
        format!("fd00:6{i}::1")
    }
    /// router4's address on its link to gateway `i`.
    pub fn router4_to(i: u8) -> String {
        format!("10.4{i}.0.1")
    }
    /// Gateway `i`'s address on the sync link between the gateways.
    pub fn gw_sync(i: u8) -> String {
        format!("10.5.0.{i}")
    }
}

/// Interface names: a gateway's are `r6` and `r4` (towards the routers), a
/// router's towards gateway `i` is `gw<i>`, and the client's and server's
/// links are `lan` on both ends.
pub mod ifname {
    /// A gateway's interface to router6.
    pub const GW_TO_ROUTER6: &str = "r6";
    /// A gateway's interface to router4.
    pub const GW_TO_ROUTER4: &str = "r4";
    /// The client's, the server's, and the routers' interfaces to them.
    pub const LAN: &str = "lan";
    /// The gateways' link to each other (NAT64 state sync).
    pub const SYNC: &str = "sync";
    /// A router's interface to gateway `i`.
    pub fn router_to_gw(i: u8) -> String {
        format!("gw{i}")
    }
}

/// The six namespaces, wired and addressed, no daemon running.
pub struct EcmpBed {
    /// The IPv6-only client.
    pub client: Netns,
    /// The IPv6 side's router.
    pub router6: Netns,
    /// gw1 and gw2.
    pub gw: [Netns; 2],
    /// The IPv4 side's router.
    pub router4: Netns,
    /// The IPv4-only server.
    pub server: Netns,
}

impl EcmpBed {
    /// Create the namespaces, links, addresses, static routes and sysctls.
    pub fn build() -> Result<EcmpBed> {
        let n = crate::next_index();
        let bed = EcmpBed {
            client: Netns::with_index("ecclient", n)?,
            router6: Netns::with_index("ecrouter6", n)?,
            gw: [
                Netns::with_index("ecgw1", n)?,
                Netns::with_index("ecgw2", n)?,
            ],
            router4: Netns::with_index("ecrouter4", n)?,
            server: Netns::with_index("ecserver", n)?,
        };
        for ns in bed.namespaces() {
            ns.sysctl(&[
                ("net.ipv6.conf.all.accept_dad", "0"),
                ("net.ipv6.conf.default.accept_dad", "0"),
                ("net.ipv4.conf.all.rp_filter", "0"),
                ("net.ipv4.conf.default.rp_filter", "0"),
            ])?;
        }
        use ifname::{GW_TO_ROUTER4, GW_TO_ROUTER6, LAN, SYNC, router_to_gw};
        veth(&bed.client, LAN, &bed.router6, LAN)?;
        veth(&bed.server, LAN, &bed.router4, LAN)?;
        bed.client
            .add_address(LAN, &format!("{}/64", addr::CLIENT))?;
        bed.client.add_route_via("default", addr::ROUTER6_LAN)?;
        bed.server
            .add_address(LAN, &format!("{}/24", addr::SERVER))?;
        bed.server.add_route_via("default", addr::ROUTER4_LAN)?;
        for r in [&bed.router6, &bed.router4] {
            r.enable_forwarding()?;
            // L4 hash: the flows of one client spread over the gateways.
            r.sysctl(&[
                ("net.ipv6.fib_multipath_hash_policy", "1"),
                ("net.ipv4.fib_multipath_hash_policy", "1"),
            ])?;
        }
        bed.router6
            .add_address(LAN, &format!("{}/64", addr::ROUTER6_LAN))?;
        bed.router4
            .add_address(LAN, &format!("{}/24", addr::ROUTER4_LAN))?;
        // NAT64 state sync's dedicated link (docs/ha.md); SIIT leaves it idle.
        veth(&bed.gw[0], SYNC, &bed.gw[1], SYNC)?;
        for (i, gw) in [(1u8, &bed.gw[0]), (2, &bed.gw[1])] {
            gw.add_address(SYNC, &format!("{}/24", addr::gw_sync(i)))?;
            let to_gw = router_to_gw(i);
            veth(&bed.router6, &to_gw, gw, GW_TO_ROUTER6)?;
            veth(&bed.router4, &to_gw, gw, GW_TO_ROUTER4)?;
            bed.router6
                .add_address(&to_gw, &format!("{}/64", addr::router6_to(i)))?;
            bed.router4
                .add_address(&to_gw, &format!("{}/24", addr::router4_to(i)))?;
            gw.add_address(GW_TO_ROUTER6, &format!("{}/64", addr::gw_v6(i)))?;
            gw.add_address(GW_TO_ROUTER4, &format!("{}/24", addr::gw_v4(i)))?;
            gw.enable_forwarding()?;
            gw.sysctl(&[
                ("net.ipv6.icmp.ratelimit", "0"),
                ("net.ipv4.icmp_ratelimit", "0"),
            ])?;
            gw.add_route_via(addr::CLIENT_NET, &addr::router6_to(i))?;
            gw.add_route_via(addr::SERVER_NET, &addr::router4_to(i))?;
        }
        Ok(bed)
    }

    /// Every namespace of the bed.
    pub fn namespaces(&self) -> [&Netns; 6] {
        [
            &self.client,
            &self.router6,
            &self.gw[0],
            &self.gw[1],
            &self.router4,
            &self.server,
        ]
    }

    /// Gateway `i` (1 or 2).
    pub fn gw(&self, i: u8) -> &Netns {
        &self.gw[usize::from(i - 1)]
    }

    /// Start BIRD on router6 and router4 ([`router_bird_config`]).
    pub fn start_routers(&self) -> Result<[Bird; 2]> {
        Ok([
            Bird::start(&self.router6, "router6", &router_bird_config(6))?,
            Bird::start(&self.router4, "router4", &router_bird_config(4))?,
        ])
    }

    /// Start BIRD on gateway `i` ([`gateway_bird_config`]).
    pub fn start_gateway_bird(&self, i: u8) -> Result<Bird> {
        Bird::start(self.gw(i), &format!("gw{i}"), &gateway_bird_config(i))
    }

    /// What sixgate's announce hook does when ready: blackhole routes for
    /// `prefixes` (pool6 and the IPv4 prefixes the node answers for) in
    /// gateway `i`'s [`ANNOUNCE_TABLE`]. Its BIRD learns them at once
    /// (netlink) and announces them.
    pub fn announce(&self, i: u8, prefixes: &[&str]) -> Result<()> {
        let table = ANNOUNCE_TABLE.to_string();
        for p in prefixes {
            self.gw(i)
                .ip(["route", "replace", "blackhole", p, "table", &table])?;
        }
        Ok(())
    }

    /// The opposite of [`EcmpBed::announce`] (a drain).
    pub fn withdraw(&self, i: u8, prefixes: &[&str]) -> Result<()> {
        let table = ANNOUNCE_TABLE.to_string();
        for p in prefixes {
            self.gw(i)
                .ip(["route", "del", "blackhole", p, "table", &table])?;
        }
        Ok(())
    }

    /// Wait until both routers send pool6 (router6) and the EAM prefix
    /// (router4) to exactly `gws` (`["gw1", "gw2"]`); how long it took.
    pub fn wait_next_hops(&self, gws: &[&str], timeout: Duration) -> Result<Duration> {
        wait_routes(
            &[
                (&self.router6, addr::POOL6, gws),
                (&self.router4, addr::EAM_V4, gws),
            ],
            timeout,
        )
    }
}

/// Wait until each `(router, prefix, gateways)` holds: the router's route to
/// `prefix` goes to exactly those gateways ([`next_hops`]; none: no route);
/// how long it took.
pub fn wait_routes(expect: &[(&Netns, &str, &[&str])], timeout: Duration) -> Result<Duration> {
    let t0 = Instant::now();
    loop {
        let mut wrong = Vec::new();
        for (ns, prefix, gws) in expect {
            let now = next_hops(ns, prefix)?;
            if now != *gws {
                wrong.push(format!("{}: {prefix} via {now:?}, not {gws:?}", ns.name()));
            }
        }
        if wrong.is_empty() {
            return Ok(t0.elapsed());
        }
        if t0.elapsed() > timeout {
            return Err(Error::new(format!(
                "after {} ms: {}",
                timeout.as_millis(),
                wrong.join("; ")
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The interfaces of the route to `prefix` in `ns`'s main table, one per
/// next hop (`dev X` of each `via`), sorted; empty without a route.
pub fn next_hops(ns: &Netns, prefix: &str) -> Result<Vec<String>> {
    let family = if prefix.contains(':') { "-6" } else { "-4" };
    let out = ns.ip([family, "route", "show", prefix])?;
    Ok(parse_next_hops(&out))
}

fn parse_next_hops(out: &str) -> Vec<String> {
    let words: Vec<&str> = out.split_whitespace().collect();
    let mut devs: Vec<String> = words
        .windows(4)
        .filter(|w| w[0] == "via" && w[2] == "dev")
        .map(|w| w[3].to_owned())
        .collect();
    devs.sort();
    devs
}

/// Timers every session shares: BFD on (it, not the hold timer, detects a
/// dead peer; the hold time is the dist/ configs', keepalives at a third of
/// it), and a quick start.
const SESSION_TIMERS: &str = "bfd on;
    hold time 9;
    connect delay time 1; connect retry time 1; error wait time 1, 5;";

/// BIRD for router6 (`family` 6) or router4 (4): an eBGP session with BFD to
/// each gateway, the gateways' routes merged into one multipath kernel route.
/// router6 accepts pool6, router4 [`addr::EAM_V4`] and anything inside it
/// (a NAT64 pair's pool4 there, and its shards).
pub fn router_bird_config(family: u8) -> String {
    let (af, id, prefix) = if family == 6 {
        ("ipv6", "10.255.0.6", addr::POOL6.to_owned())
    } else {
        ("ipv4", "10.255.0.4", format!("{}+", addr::EAM_V4))
    };
    let neighbor = |i: u8| {
        if family == 6 {
            addr::gw_v6(i)
        } else {
            addr::gw_v4(i)
        }
    };
    let mut conf = format!(
        "# router{family} of the sixgate scale-out bed (crates/sixgate-netns/src/ecmp.rs)
router id {id};
log stderr all;
# Session ups and downs in the log, which a failing test prints.
debug protocols {{ states }};
protocol device {{ scan time 10; }}
# Equal routes from both gateways become one multipath kernel route (ECMP).
protocol kernel {{
    merge paths on;
    {af} {{ import none; export all; }};
}}
protocol bfd {{
    interface \"gw*\" {{
        min rx interval {BFD_INTERVAL_MS} ms; min tx interval {BFD_INTERVAL_MS} ms;
        multiplier {BFD_MULTIPLIER};
    }};
}}
template bgp gwpeer {{
    local as {ROUTERS_AS};
    {SESSION_TIMERS}
    {af} {{ import where net ~ [ {prefix} ]; export none; }};
}}
"
    );
    for i in [1u8, 2] {
        conf += &format!(
            "protocol bgp gw{i} from gwpeer {{ neighbor {} as {GATEWAYS_AS}; interface \"gw{i}\"; }}\n",
            neighbor(i)
        );
    }
    conf
}

/// BIRD for gateway `i`: learn [`ANNOUNCE_TABLE`], announce pool6 to router6
/// and the IPv4 prefix to router4, import nothing.
pub fn gateway_bird_config(i: u8) -> String {
    let table = ANNOUNCE_TABLE;
    format!(
        "# gw{i} of the sixgate scale-out bed (crates/sixgate-netns/src/ecmp.rs)
router id {v4};
log stderr all;
protocol device {{ scan time 10; }}
# What sixgate announces: its blackhole routes in table {table}. learn takes
# routes other programs put there; export none leaves the kernel alone.
protocol kernel announce4 {{
    kernel table {table}; learn; scan time 10;
    ipv4 {{ import all; export none; }};
}}
protocol kernel announce6 {{
    kernel table {table}; learn; scan time 10;
    ipv6 {{ import all; export none; }};
}}
protocol bfd {{
    interface \"r*\" {{
        min rx interval {BFD_INTERVAL_MS} ms; min tx interval {BFD_INTERVAL_MS} ms;
        multiplier {BFD_MULTIPLIER};
    }};
}}
protocol bgp router6 {{
    local {v6} as {GATEWAYS_AS}; neighbor {r6} as {ROUTERS_AS}; interface \"r6\";
    {SESSION_TIMERS}
    ipv6 {{ import none; export where net = {pool6}; }};
}}
protocol bgp router4 {{
    local {v4} as {GATEWAYS_AS}; neighbor {r4} as {ROUTERS_AS}; interface \"r4\";
    {SESSION_TIMERS}
    ipv4 {{ import none; export where net = {eam4}; }};
}}
",
        v4 = addr::gw_v4(i),
        v6 = addr::gw_v6(i),
        r6 = addr::router6_to(i),
        r4 = addr::router4_to(i),
        pool6 = addr::POOL6,
        eam4 = addr::EAM_V4,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_single_and_multipath_routes() {
        assert_eq!(
            parse_next_hops("2001:db8:64::/96 via fd00:62::2 dev gw2 proto bird metric 32"),
            ["gw2"]
        );
        let multi = "198.18.0.0/24 proto bird metric 32 \n\tnexthop via 10.42.0.2 dev gw2 weight 1 \n\tnexthop via 10.41.0.2 dev gw1 weight 1 \n";
        assert_eq!(parse_next_hops(multi), ["gw1", "gw2"]);
        assert!(parse_next_hops("").is_empty());
    }

    #[test]
    fn bird_configs_parse() {
        if let Err(why) = crate::bird::check_bird() {
            println!("skipped: bird_configs_parse: {why}");
            return;
        }
        let dir = crate::ScratchDir::new("birdconf").unwrap();
        for (name, conf) in [
            ("router6", router_bird_config(6)),
            ("router4", router_bird_config(4)),
            ("gw1", gateway_bird_config(1)),
            ("gw2", gateway_bird_config(2)),
        ] {
            let path = dir.write(&format!("{name}.conf"), &conf).unwrap();
            crate::bird::parse_check(&path).unwrap_or_else(|e| panic!("{e}\n{conf}"));
        }
    }
}
