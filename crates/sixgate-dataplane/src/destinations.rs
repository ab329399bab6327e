//! The destinations a gateway must receive: pool6, every EAM IPv4 prefix,
//! (stateful NAT64) every pool4 prefix and (MAP-T BR) every mapping rule's
//! IPv4 prefix; for a CLAT or a MAP-T CE the IPv4 default route and its own
//! IPv6 prefix or address. The TUN data plane routes them into its device
//! (`sixgate_tun::routes`), the XDP data plane loads them into its program's
//! tries: one list, so both take the same packets.

use std::net::Ipv4Addr;

use sixgate_config::Loaded;
use sixgate_core::Config;
use sixgate_core::nat64::Pool4Entry;

/// One destination prefix (a route into the TUN device, a trie entry on XDP).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// `ADDR/LEN`.
    pub prefix: String,
    /// IPv6 (`ip -6`).
    pub v6: bool,
}

impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.prefix)
    }
}

/// The routes a configuration needs: pool6 (IPv6 destinations that are IPv4
/// hosts), each EAM IPv4 prefix and each pool4 prefix (IPv4 destinations that
/// are IPv6 hosts).
pub fn wanted(cfg: &Config) -> Vec<Route> {
    let mut out = Vec::new();
    if let Some(p) = &cfg.map.pool6 {
        out.push(Route {
            prefix: format!("{}/{}", p.addr(), p.len()),
            v6: true,
        });
    }
    for e in cfg.map.eam.entries() {
        let r = Route {
            prefix: format!("{}/{}", Ipv4Addr::from(e.v4), e.v4_len),
            v6: false,
        };
        if !out.contains(&r) {
            out.push(r);
        }
    }
    // RFC 7599 §7: a BR takes the domain's IPv4 prefixes from the IPv4 side (the
    // DMR, pool6, is already there for the IPv6 side).
    for r in cfg.mapt.iter().flat_map(|m| &m.fmrs) {
        let (a, len) = r.ipv4_prefix();
        let r = Route {
            prefix: format!("{a}/{len}"),
            v6: false,
        };
        if !out.contains(&r) {
            out.push(r);
        }
    }
    for p in cfg.nat64.iter().flat_map(|n| &n.pool4) {
        let r = pool4_route(p);
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// True when `route` is one of `cfg`'s pool4 prefixes: a runtime change that
/// removes one keeps its route, so that its sessions drain.
pub fn is_pool4(cfg: &Config, route: &Route) -> bool {
    cfg.nat64
        .iter()
        .flat_map(|n| &n.pool4)
        .any(|p| pool4_route(p) == *route)
}

/// A pool4 prefix's route, by its network address.
pub fn pool4_route(p: &Pool4Entry) -> Route {
    Route {
        prefix: format!("{}/{}", Ipv4Addr::from(p.first_addr()), p.prefix_len),
        v6: false,
    }
}

/// The routes `loaded` needs. A CLAT (RFC 6877) translates every IPv4 packet
/// its customer hosts send, so the IPv4 default route goes into the device, and
/// IPv6 packets for its own prefix come back through it. The PLAT prefix and the
/// customer IPv4 range stay where they are: towards the IPv6 network and on the
/// customer LAN.
pub fn wanted_for(loaded: &Loaded) -> Vec<Route> {
    // A MAP-T CE (RFC 7599 §5): the same shape as a CLAT, with its MAP address.
    if let Some(ce) = loaded.config.mapt.as_ref().and_then(|m| m.ce()) {
        return vec![
            Route {
                prefix: "0.0.0.0/0".to_owned(),
                v6: false,
            },
            Route {
                prefix: format!("{}/128", ce.map_address),
                v6: true,
            },
        ];
    }
    match &loaded.clat {
        Some(c) => vec![
            Route {
                prefix: "0.0.0.0/0".to_owned(),
                v6: false,
            },
            Route {
                prefix: format!("{}/{}", c.ipv6.0, c.ipv6.1),
                v6: true,
            },
        ],
        None => wanted(&loaded.config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sixgate_core::addr::{Eam, Rfc6052Prefix};
    use sixgate_core::nat64::{Nat64Config, Pool4Entry};

    /// RFC 6877: a CLAT takes the customer's IPv4 traffic (default route) and its
    /// own IPv6 prefix, not the PLAT prefix or the customer range.
    #[test]
    fn clat_routes_are_ipv4_default_and_clat_prefix() {
        let l = sixgate_config::parse(
            "[translator]\nmode = \"clat\"\npool6 = \"64:ff9b::/96\"\n\
             [clat]\nipv6 = \"2001:db8:c1a7::/125\"\n",
            "t.toml",
        )
        .unwrap();
        let r: Vec<(String, bool)> = wanted_for(&l)
            .into_iter()
            .map(|r| (r.prefix, r.v6))
            .collect();
        assert_eq!(
            r,
            [
                ("0.0.0.0/0".to_owned(), false),
                ("2001:db8:c1a7::/125".to_owned(), true)
            ]
        );
        let siit = sixgate_config::parse(
            "[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/96\"\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(wanted_for(&siit), wanted(&siit.config));
    }

    #[test]
    fn wanted_routes_are_pool6_and_eam_v4_prefixes() {
        let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap();
        let mut cfg = Config::with_pool6(Some(pool6));
        for (v4, l4, v6, l6) in [
            ([198, 18, 0, 0], 24, "2001:db8:1::", 120),
            ([192, 0, 2, 10], 32, "2001:db8:2::10", 128),
        ] {
            cfg.map
                .eam
                .insert(Eam::new(Ipv4Addr::from(v4), l4, v6.parse().unwrap(), l6).unwrap())
                .unwrap();
        }
        let w = wanted(&cfg);
        let names: Vec<String> = w.iter().map(|r| r.to_string()).collect();
        assert_eq!(
            names,
            ["2001:db8:64::/96", "198.18.0.0/24", "192.0.2.10/32"]
        );
        assert_eq!(w.iter().filter(|r| r.v6).count(), 1);
        assert!(wanted(&Config::with_pool6(None)).is_empty());

        // Stateful NAT64: pool4 prefixes, by their network address.
        let mut cfg = Config::with_pool6(Some(pool6));
        let mut p4 = Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 7));
        p4.prefix_len = 28;
        cfg.nat64 = Some(Nat64Config {
            pool4: vec![p4, Pool4Entry::single(Ipv4Addr::new(198, 51, 100, 9))],
            ..Nat64Config::default()
        });
        let names: Vec<String> = wanted(&cfg).iter().map(|r| r.to_string()).collect();
        assert_eq!(
            names,
            ["2001:db8:64::/96", "192.0.2.0/28", "198.51.100.9/32"]
        );
    }

    /// RFC 7599: a BR routes the DMR and the rules' IPv4 prefixes into the
    /// device; a CE, like a CLAT, the IPv4 default route and its MAP address.
    #[test]
    fn mapt_routes() {
        let rules = "[mapt]\ndmr = \"2001:db8:ffff::/96\"\nbmr = [ { ipv6_prefix = \
                     \"2001:db8:ce::/51\", ipv4_prefix = \"192.0.2.0/24\", ea_bits = 13, \
                     psid_offset = 0 } ]\n";
        let br = sixgate_config::parse(
            &format!("[translator]\nmode = \"mapt-br\"\n{rules}"),
            "t.toml",
        )
        .unwrap();
        let names: Vec<String> = wanted_for(&br).iter().map(|r| r.to_string()).collect();
        assert_eq!(names, ["2001:db8:ffff::/96", "192.0.2.0/24"]);
        let ce = sixgate_config::parse(
            &format!(
                "[translator]\nmode = \"mapt-ce\"\n{rules}end_user_prefix = \
                 \"2001:db8:ce:11b::/64\"\nlan = \"10.0.0.0/24\"\n"
            ),
            "t.toml",
        )
        .unwrap();
        let names: Vec<String> = wanted_for(&ce).iter().map(|r| r.to_string()).collect();
        assert_eq!(names, ["0.0.0.0/0", "2001:db8:ce:11b:0:c000:208:1b/128"]);
    }
}
