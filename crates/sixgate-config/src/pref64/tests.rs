//! `[pref64]` (RFC 8781): keys and errors.

use super::*;
use crate::tests::ok;

fn with(keys: &str) -> Result<crate::Loaded, ConfigError> {
    crate::parse(
        &format!("[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\n\n[pref64]\n{keys}"),
        "t.toml",
    )
}

#[test]
fn rfc8781_s4_defaults_lifetime_three_intervals() {
    let l = ok(
        "[translator]\nmode = \"nat64\"\npool6 = \"2001:db8:64::/96\"\n\
                [nat64]\npool4 = [\"198.18.0.0/24\"]\n[pref64]\ninterface = \"eth1\"\n",
    );
    let p = l.pref64.unwrap();
    assert_eq!(
        p.prefix.addr(),
        "2001:db8:64::".parse::<std::net::Ipv6Addr>().unwrap()
    );
    assert_eq!((p.interval, p.lifetime, p.router_lifetime), (600, 1800, 0));
    assert_eq!(default_lifetime(4), 16);
    assert_eq!(default_lifetime(1800), 5400);
    assert_eq!(default_lifetime(30_000), MAX_LIFETIME);
}

#[test]
fn rfc8781_s4_lifetime_multiple_of_8_and_at_most_65528() {
    let e = with("interface = \"eth1\"\nlifetime = 100\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("t.toml:7:12") && e.contains("multiple of 8"),
        "{e}"
    );
    let e = with("interface = \"eth1\"\nlifetime = 65536\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("lifetime"), "{e}");
    let l = with("interface = \"eth1\"\ninterval = 30\nlifetime = 65528\n").unwrap();
    assert_eq!(l.pref64.unwrap().lifetime, 65528);
    let short = with("interface = \"eth1\"\ninterval = 60\nlifetime = 64\n").unwrap();
    assert_eq!(short.warnings.len(), 1, "{:?}", short.warnings);
}

#[test]
fn interface_required_and_interval_in_rfc4861_range() {
    let e = with("interval = 10\n").unwrap_err().to_string();
    assert!(e.contains("no interface"), "{e}");
    let e = with("interface = \"eth1\"\ninterval = 2\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("interval"), "{e}");
    let e = with("interface = \"eth1\"\nrouter_lifetime = 9001\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("router_lifetime"), "{e}");
    let e = with("interface = \"a/b\"\n").unwrap_err().to_string();
    assert!(e.contains("interface"), "{e}");
}

#[test]
fn rfc8781_needs_a_prefix_to_advertise() {
    // A CLAT that discovers its PLAT prefix has no pool6 when the file loads.
    let text = "[translator]\nmode = \"clat\"\n[clat]\nipv6 = \"2001:db8:c1a7::/125\"\n\
                plat_prefix = \"discover\"\n[pref64]\ninterface = \"eth1\"\n";
    let e = crate::parse(text, "t.toml").unwrap_err().to_string();
    assert!(e.contains("t.toml:6:1") && e.contains("pool6"), "{e}");
}
