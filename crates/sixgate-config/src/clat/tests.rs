//! `[clat]` (RFC 6877): defaults, keys and errors.

use std::net::{Ipv4Addr, Ipv6Addr};

use sixgate_core::addr::{Eam, Rfc6052Prefix};
use sixgate_core::config::HairpinMode;

use crate::tests::{SAMPLE, err_at, ok};
use crate::{Mode, PlatPrefix};

/// The smallest CLAT: default IPv4 range, static PLAT prefix. Line 6 is free.
const CLAT: &str = r#"[translator]
mode = "clat"
pool6 = "64:ff9b::/96"
[clat]
ipv6 = "2001:db8:c1a7::/125"
"#;

fn clat_with(line: &str) -> String {
    format!("{CLAT}{line}\n")
}

#[test]
fn clat_rfc6877_defaults_make_one_eam_entry() {
    let l = ok(CLAT);
    assert_eq!(l.mode, Mode::Clat);
    let c = l.clat.as_ref().expect("clat settings");
    // RFC 7335 / RFC 6877 §6.1: 192.0.0.0/29 is the default customer-side range.
    assert_eq!(c.ipv4, (Ipv4Addr::new(192, 0, 0, 0), 29));
    assert_eq!(c.ipv6, ("2001:db8:c1a7::".parse().unwrap(), 125));
    assert_eq!(
        l.config.map.eam.entries(),
        &[Eam::parse("192.0.0.0/29", "2001:db8:c1a7::/125").unwrap()]
    );
    let pool6 = l.config.map.pool6.unwrap();
    assert_eq!(c.plat_prefix, PlatPrefix::Static(pool6));
    // Customer hosts talk to each other on their own link: no hairpinning.
    assert_eq!(l.config.hairpin, HairpinMode::Off);
    // RFC 6052 §3.1 still applies to destinations in the Well-Known Prefix.
    assert!(l.config.map.wkp_strict);
    assert_eq!(
        l.config.map.v4_to_v6(&[192, 0, 0, 2]),
        Ok("2001:db8:c1a7::2".parse::<Ipv6Addr>().unwrap().octets())
    );
    // 203.0.113.7 is documentation space, not global: refused under 64:ff9b::/96.
    assert_eq!(
        l.config.map.v4_to_v6(&[203, 0, 113, 7]),
        Err(sixgate_core::addr::MapError::WkpNonGlobal)
    );
    assert_eq!(
        l.describe(),
        "mode clat, pool6 64:ff9b::/96, 1 EAM entry, \
         CLAT 192.0.0.0/29 <-> 2001:db8:c1a7::/125, PLAT prefix static"
    );
}

#[test]
fn clat_ipv4_single_host_and_dedicated_64() {
    // RFC 6877 §6.3: a dedicated /64; the IPv4 side may be one host.
    let l = ok(&CLAT.replace(
        "ipv6 = \"2001:db8:c1a7::/125\"",
        "ipv4 = \"192.0.0.2\"\nipv6 = \"2001:db8:c1a7:1::/64\"",
    ));
    let c = l.clat.unwrap();
    assert_eq!(c.ipv4, (Ipv4Addr::new(192, 0, 0, 2), 32));
    assert_eq!(c.ipv6.1, 64);
}

#[test]
fn clat_explicit_translator_keys_win() {
    let text = CLAT.replace(
        "pool6 = \"64:ff9b::/96\"\n",
        "pool6 = \"64:ff9b::/96\"\nhairpin = \"intrinsic\"\nicmp_source_v6 = \"2001:db8::8\"\n",
    );
    let mut l = ok(&text);
    assert_eq!(l.config.hairpin, HairpinMode::Intrinsic);
    l.set_plat_prefix("2001:db8:64::/96".parse().unwrap());
    assert_eq!(
        l.config.icmp_source_v6,
        "2001:db8::8".parse::<Ipv6Addr>().unwrap()
    );
}

#[test]
fn clat_discover_with_and_without_fallback() {
    let l = ok(&clat_with("plat_prefix = \"discover\""));
    let fallback = Some("64:ff9b::/96".parse().unwrap());
    assert_eq!(
        l.clat.as_ref().unwrap().plat_prefix,
        PlatPrefix::Discover {
            dns_server: None,
            fallback
        }
    );
    assert!(
        l.describe()
            .ends_with("PLAT prefix discovered (RFC 7050) via /etc/resolv.conf")
    );

    // No pool6 at all: no fallback, and nothing for icmp_source_v6 until discovery.
    let text = "[translator]\nmode = \"clat\"\n[clat]\nipv6 = \"2001:db8:c1a7::/125\"\n\
                plat_prefix = \"discover\"\ndns_server = \"2001:db8::53\"\n";
    let mut l = ok(text);
    assert_eq!(
        l.clat.as_ref().unwrap().plat_prefix,
        PlatPrefix::Discover {
            dns_server: Some("[2001:db8::53]:53".parse().unwrap()),
            fallback: None
        }
    );
    assert_eq!(l.config.map.pool6, None);
    let found: Rfc6052Prefix = "2001:db8:64::/96".parse().unwrap();
    l.set_plat_prefix(found);
    assert_eq!(l.config.map.pool6, Some(found));
    assert_eq!(
        l.config.icmp_source_v6,
        "2001:db8:64::c000:8".parse::<Ipv6Addr>().unwrap()
    );

    for (given, want) in [
        ("192.0.2.53", "192.0.2.53:53"),
        ("192.0.2.53:5353", "192.0.2.53:5353"),
        ("[2001:db8::53]:5353", "[2001:db8::53]:5353"),
    ] {
        let l = ok(&clat_with(&format!(
            "plat_prefix = \"discover\"\ndns_server = \"{given}\""
        )));
        let PlatPrefix::Discover { dns_server, .. } = l.clat.unwrap().plat_prefix else {
            panic!("not discover");
        };
        assert_eq!(dns_server, Some(want.parse().unwrap()));
    }
}

#[test]
fn clat_errors() {
    // mode clat without [clat]
    err_at(
        "[translator]\nmode = \"clat\"\npool6 = \"64:ff9b::/96\"\n",
        2,
        8,
        &["needs a [clat] section", "RFC 6877 §6.3"],
    );
    // [clat] in another mode
    let msg = err_at(
        &format!("{SAMPLE}[clat]\nipv6 = \"2001:db8:c1a7::/125\"\n"),
        5,
        1,
        &["[clat] is only read in mode \"clat\"", "\"siit\""],
    );
    assert!(msg.contains("expected mode = \"clat\""), "{msg}");
    // no ipv6
    err_at(
        "[translator]\nmode = \"clat\"\npool6 = \"64:ff9b::/96\"\n[clat]\nipv4 = \"192.0.0.2\"\n",
        4,
        1,
        &["[clat] has no `ipv6`", "RFC 6877 §6.3"],
    );
    // IPv6 suffix shorter than the IPv4 one
    err_at(
        &CLAT.replace("/125", "/126"),
        5,
        8,
        &[
            "ipv6 = \"2001:db8:c1a7::/126\"",
            "2 host bits",
            "/125 or shorter",
            "RFC 7757 §3",
        ],
    );
    err_at(
        &CLAT.replace("/125", "/120").replace("c1a7::", "c1a7::1"),
        5,
        8,
        &[
            "ipv6",
            "bits beyond /120 are set",
            "\"2001:db8:c1a7::/120\"",
        ],
    );
    err_at(
        &clat_with("ipv4 = \"192.0.0.1/29\""),
        6,
        8,
        &[
            "ipv4 = \"192.0.0.1/29\"",
            "bits beyond /29",
            "\"192.0.0.0/29\"",
        ],
    );
    err_at(
        &clat_with("ipv4 = \"192.0.0.300\""),
        6,
        8,
        &["ipv4", "is not an IPv4 address"],
    );
    // the same IPv4 prefix as a [translator] eam entry is ambiguous
    let text = CLAT.replace(
        "pool6 = \"64:ff9b::/96\"\n",
        "pool6 = \"64:ff9b::/96\"\neam = [ { ipv4 = \"192.0.0.0/29\", ipv6 = \"2001:db8:1::/125\" } ]\n",
    );
    err_at(
        &text,
        6,
        8,
        &[
            "conflicts with the [translator] eam entry 192.0.0.0/29",
            "RFC 7757 §3",
        ],
    );
    // static PLAT prefix without pool6
    err_at(
        "[translator]\nmode = \"clat\"\n[clat]\nipv6 = \"2001:db8:c1a7::/125\"\n",
        3,
        1,
        &[
            "[translator] pool6, which is not set",
            "plat_prefix = \"discover\"",
        ],
    );
    err_at(
        &clat_with("plat_prefix = \"dhcp\""),
        6,
        15,
        &["plat_prefix = \"dhcp\"", "unknown source", "\"discover\""],
    );
    err_at(
        &clat_with("dns_server = \"192.0.2.53\""),
        6,
        14,
        &[
            "dns_server",
            "only used to discover",
            "plat_prefix = \"discover\"",
        ],
    );
    err_at(
        &clat_with("plat_prefix = \"discover\"\ndns_server = \"ns1\""),
        7,
        14,
        &["dns_server = \"ns1\"", "not an address"],
    );
    err_at(
        &clat_with("ipv4_prefix = \"192.0.0.0/29\""),
        6,
        1,
        &["unknown key `ipv4_prefix`"],
    );
}

#[test]
fn samples_clat_toml_is_valid() {
    let l = ok(include_str!("../../../../samples/clat.toml"));
    assert_eq!(l.mode, Mode::Clat);
    assert!(l.clat.is_some());
}
