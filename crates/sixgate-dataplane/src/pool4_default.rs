//! The default pool4 (issue 4, as in Jool): with no `[nat64] pool4` key, the
//! gateway's own IPv4 address with TCP and UDP ports and ICMP identifiers
//! 61001-65535 ([`PORTS`]). Found here before a data plane creates anything;
//! how those ports reach the translator is the data plane's: the TUN data
//! plane diverts them from the host's stack into its device
//! (`sixgate_tun::divert`), the XDP program redirects them and passes the
//! host the rest.

use std::net::Ipv4Addr;

use sixgate_core::nat64::{DEFAULT_POOL4_PORTS, Pool4Entry, PortRange};

use crate::system::ip;

/// Ports and ICMP identifiers of the default pool4 (Jool's): the Linux default
/// `ip_local_port_range` (32768-60999) stays below them.
pub const PORTS: PortRange = DEFAULT_POOL4_PORTS;
/// The pool4 entry for `addr`: one address, [`PORTS`] for every protocol.
pub fn entry(addr: Ipv4Addr) -> Pool4Entry {
    Pool4Entry {
        addr,
        prefix_len: 32,
        tcp: PORTS,
        udp: PORTS,
        icmp: PORTS,
    }
}

/// The gateway's own IPv4 address: the preferred source of its IPv4 default
/// route (`ip -4 route get 192.0.2.1`), or with no default route its only
/// global IPv4 address. Anything else is an error listing the candidates.
pub fn gateway_address() -> Result<Ipv4Addr, String> {
    if let Ok(out) = ip(false, &["-4", "route", "get", "192.0.2.1"])
        && let Some(a) = route_get_source(&out)
    {
        return Ok(a);
    }
    let out = ip(false, &["-4", "-o", "addr", "show", "scope", "global"])
        .map_err(|e| format!("cannot list IPv4 addresses: {e}"))?;
    one_global_address(&global_addresses(&out))
}

/// `src A.B.C.D` from `ip route get` output.
pub fn route_get_source(out: &str) -> Option<Ipv4Addr> {
    let mut words = out.split_whitespace();
    words.find(|w| *w == "src")?;
    words.next()?.parse().ok()
}

/// The addresses of `ip -4 -o addr show scope global` lines (`inet A.B.C.D/LEN`).
pub fn global_addresses(out: &str) -> Vec<Ipv4Addr> {
    out.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            w.find(|w| *w == "inet")?;
            w.next()?.split('/').next()?.parse().ok()
        })
        .collect()
}

/// The one address of `found`, or an error naming them all.
pub fn one_global_address(found: &[Ipv4Addr]) -> Result<Ipv4Addr, String> {
    match found {
        [a] => Ok(*a),
        _ => {
            let list: Vec<String> = found.iter().map(ToString::to_string).collect();
            Err(format!(
                "[nat64] has no pool4 and the gateway's own IPv4 address is not clear: no IPv4 \
                 default route, and {} global IPv4 addresses ({}); set pool4, e.g.\n  [nat64]\n  \
                 pool4 = [\"{}\"]",
                found.len(),
                if list.is_empty() {
                    "none".to_owned()
                } else {
                    list.join(", ")
                },
                list.first().map_or("192.0.2.1", String::as_str)
            ))
        }
    }
}

/// A warning if the kernel's own ephemeral ports (`ip_local_port_range`)
/// reach into [`PORTS`]: a connection of the host's from such a port would
/// have its replies diverted into the translator. Not changed silently.
pub fn local_port_range_overlap() -> Option<String> {
    let path = "/proc/sys/net/ipv4/ip_local_port_range";
    let text = std::fs::read_to_string(path).ok()?;
    overlap_warning(&text)
}

/// A warning if `net.ipv4.conf.all.rp_filter` is strict (1): the effective
/// value is the larger of `all` and the device's, and a strict check drops
/// the translated packets, whose source (our own address) is on `lo`.
pub fn strict_rp_filter() -> Option<String> {
    let v = std::fs::read_to_string("/proc/sys/net/ipv4/conf/all/rp_filter").ok()?;
    (v.trim() == "1").then(|| {
        "net.ipv4.conf.all.rp_filter = 1 (strict): the kernel will drop translated packets \
         whose source is the gateway's own address; set it to 2 (loose) or 0, or set pool4"
            .to_owned()
    })
}

/// [`local_port_range_overlap`] on the sysctl's text (`"32768\t60999"`).
pub fn overlap_warning(text: &str) -> Option<String> {
    let mut w = text.split_whitespace().map(str::parse::<u16>);
    let (Some(Ok(lo)), Some(Ok(hi))) = (w.next(), w.next()) else {
        return None;
    };
    // PORTS ends at 65535: an upper bound at or above its start overlaps.
    (hi >= PORTS.first).then(|| {
        format!(
            "net.ipv4.ip_local_port_range = {lo} {hi} overlaps the default pool4's ports \
             {}-{}: the host's own connections from those ports would lose their replies to \
             the translator; lower it with `sysctl -w net.ipv4.ip_local_port_range=\"{lo} {}\"`",
            PORTS.first,
            PORTS.last,
            PORTS.first - 1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_entry_is_joolish() {
        let e = entry(Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(
            (e.prefix_len, e.tcp, e.udp, e.icmp),
            (32, PORTS, PORTS, PORTS)
        );
        assert_eq!((PORTS.first, PORTS.last), (61001, 65535));
    }

    #[test]
    fn source_of_route_get() {
        let out = "192.0.2.1 via 10.0.0.1 dev eth0 src 10.0.0.7 uid 0 \n    cache \n";
        assert_eq!(route_get_source(out), Some(Ipv4Addr::new(10, 0, 0, 7)));
        assert_eq!(route_get_source("192.0.2.1 dev eth0 uid 0"), None);
    }

    #[test]
    fn global_addresses_and_the_only_one() {
        let out = "2: eth0    inet 10.0.0.7/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever\n\
                   3: eth1    inet 198.51.100.2/30 scope global eth1\\       valid_lft forever\n";
        let found = global_addresses(out);
        assert_eq!(
            found,
            [Ipv4Addr::new(10, 0, 0, 7), Ipv4Addr::new(198, 51, 100, 2)]
        );
        let e = one_global_address(&found).unwrap_err();
        assert!(
            e.contains("10.0.0.7, 198.51.100.2") && e.contains("pool4 = [\"10.0.0.7\"]"),
            "{e}"
        );
        assert!(one_global_address(&[]).unwrap_err().contains("(none)"));
        assert_eq!(one_global_address(&found[1..]), Ok(found[1]));
    }

    #[test]
    fn ephemeral_ports_overlapping_pool4_are_warned_about() {
        assert_eq!(overlap_warning("32768\t60999\n"), None);
        let w = overlap_warning("1024 65535").unwrap();
        assert!(w.contains("\"1024 61000\""), "{w}");
    }
}
