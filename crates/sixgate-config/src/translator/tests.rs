//! `[translator]`: every key, every error message and its position.

use std::net::{Ipv4Addr, Ipv6Addr};

use sixgate_core::config::{HairpinMode, UdpZeroChecksum};

use crate::Mode;
use crate::tests::{EAM_ONLY, SAMPLE, err_at, ok, with};

#[test]
fn key_mode() {
    assert_eq!(ok(EAM_ONLY).mode, Mode::Siit);
    // MAP-T modes are real now: they want [mapt] and no EAM.
    for mapt in ["mapt-br", "mapt-ce"] {
        let text = EAM_ONLY.replace("\"siit\"", &format!("{mapt:?}"));
        err_at(
            &text,
            3,
            9,
            &["eam: MAP-T maps addresses by its mapping rules"],
        );
    }
    let text = EAM_ONLY.replace("\"siit\"", "\"nat46\"");
    let e = err_at(
        &text,
        2,
        8,
        &[
            "mode = \"nat46\"",
            "unknown mode",
            "\"siit\", \"nat64\", \"clat\", \"mapt-br\", \"mapt-ce\"",
        ],
    );
    // Issue 20: the choices once.
    assert_eq!(e.matches("\"mapt-ce\"").count(), 1, "{e}");
    let text = EAM_ONLY.replace("mode = \"siit\"\n", "");
    err_at(
        &text,
        1,
        1,
        &[
            "no `mode`",
            "expected mode = one of \"siit\", \"nat64\", \"clat\", \"mapt-br\"",
        ],
    );
}

#[test]
fn key_pool6() {
    let l = ok(&format!("{EAM_ONLY}pool6 = \"64:ff9b::/96\"\n"));
    assert!(l.config.map.pool6.unwrap().is_well_known());
    // Without eam, pool6 alone is enough.
    let l = ok("[translator]\nmode = \"siit\"\npool6 = \"2001:db8::/32\"\n");
    assert_eq!(l.config.map.pool6.unwrap().len(), 32);
    assert_eq!(
        l.config.icmp_source_v6,
        "2001:db8:c000:8::".parse::<Ipv6Addr>().unwrap()
    );
}

#[test]
fn pool6_errors() {
    err_at(
        &with("pool6 = \"2001:db8:64::\""),
        5,
        9,
        &[
            "pool6 = \"2001:db8:64::\"",
            "no prefix length",
            "expected an RFC 6052 prefix",
        ],
    );
    err_at(
        &with("pool6 = \"2001:zz::/96\""),
        5,
        9,
        &["pool6", "\"2001:zz::\" is not an IPv6 address"],
    );
    err_at(
        &with("pool6 = \"2001:db8::/129\""),
        5,
        9,
        &["pool6", "/129 is not a prefix length"],
    );
}

#[test]
fn pool6_rfc6052_errors() {
    err_at(
        &with("pool6 = \"2001:db8::/33\""),
        5,
        9,
        &[
            "pool6 = \"2001:db8::/33\"",
            "/33",
            "/32, /40, /48, /56, /64 or /96",
            "RFC 6052",
        ],
    );
    err_at(
        &with("pool6 = \"2001:db8::1/96\""),
        5,
        9,
        &["pool6", "bits beyond /96 are set", "\"2001:db8::/96\""],
    );
    err_at(
        &with("pool6 = \"2001:db8:0:0:ff00::/96\""),
        5,
        9,
        &["pool6", "\"u\" octet"],
    );
}

#[test]
fn key_eam() {
    let l = ok(r#"[translator]
mode = "siit"
icmp_source_v6 = "2001:db8::8"
eam = [
  { ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" },
  { ipv4 = "192.0.2.1", ipv6 = "2001:db8:2::1" },
]
"#);
    let e = l.config.map.eam.entries();
    assert_eq!(e.len(), 2);
    assert_eq!(
        (e[1].v4, e[1].v4_len, e[1].v6_len),
        ([192, 0, 2, 1], 32, 128)
    );
    assert_eq!(l.describe(), "mode siit, pool6 none, 2 EAM entries");
}

#[test]
fn eam_errors() {
    let line = |entry: &str| {
        format!(
            "[translator]\nmode = \"siit\"\nicmp_source_v6 = \"2001:db8::8\"\neam = [ {entry} ]\n"
        )
    };
    err_at(
        &line(r#"{ ipv4 = "198.18.0/24", ipv6 = "2001:db8:1::/120" }"#),
        4,
        18,
        &[
            "eam[0].ipv4 = \"198.18.0/24\"",
            "not an IPv4 address",
            "expected an IPv4 prefix",
        ],
    );
    err_at(
        &line(r#"{ ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/130" }"#),
        4,
        42,
        &[
            "eam[0].ipv6 = \"2001:db8:1::/130\"",
            "/130",
            "expected an IPv6 prefix",
        ],
    );
    err_at(
        &line(r#"{ ipv4 = "198.18.0.1/24", ipv6 = "2001:db8:1::/120" }"#),
        4,
        18,
        &[
            "eam[0].ipv4",
            "bits beyond /24 are set",
            "\"198.18.0.0/24\"",
        ],
    );
    err_at(
        &line(r#"{ ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::1/120" }"#),
        4,
        42,
        &[
            "eam[0].ipv6",
            "bits beyond /120 are set",
            "\"2001:db8:1::/120\"",
        ],
    );
    // The IPv4 suffix must fit in the IPv6 suffix (RFC 7757 §3.2); a longer IPv6
    // suffix is fine.
    err_at(
        &line(r#"{ ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/121" }"#),
        4,
        9,
        &["eam[0]", "8 host bits", "leaves 7", "RFC 7757", "/120"],
    );
    assert_eq!(
        ok(&line(
            r#"{ ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/112" }"#
        ))
        .config
        .map
        .eam
        .entries()[0]
            .v6_len,
        112
    );
    err_at(
        &line(r#"{ ipv4 = "198.18.0.0/24" }"#),
        4,
        9,
        &["missing key `ipv6`"],
    );
    err_at(
        &line(r#"{ ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120", v6 = "x" }"#),
        4,
        62,
        &["unknown key `v6`", "`ipv4` or `ipv6`"],
    );
}

#[test]
fn eam_overlap_error() {
    err_at(
        r#"[translator]
mode = "siit"
icmp_source_v6 = "2001:db8::8"
eam = [
  { ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" },
  { ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:2::/120" },
]
"#,
        6,
        3,
        &[
            "eam[1]",
            "the same IPv4 or IPv6 prefix as eam[0]",
            "198.18.0.0/24",
            "nested prefixes are fine",
        ],
    );
    // What the message and docs/config.md promise: nested entries load.
    let l = ok(r#"[translator]
mode = "siit"
icmp_source_v6 = "2001:db8::8"
eam = [
  { ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" },
  { ipv4 = "198.18.0.7/32", ipv6 = "2001:db8:2::7/128" },
]
"#);
    assert_eq!(l.config.map.eam.len(), 2);
}

#[test]
fn neither_pool6_nor_eam() {
    err_at(
        "# comment\n[translator]\nmode = \"siit\"\neam = []\n",
        2,
        1,
        &["maps no addresses", "pool6", "eam"],
    );
}

#[test]
fn key_wkp_strict() {
    assert!(!ok(&with("wkp_strict = false")).config.map.wkp_strict);
    err_at(
        &with("wkp_strict = \"yes\""),
        5,
        14,
        &["wkp_strict", "invalid type", "boolean"],
    );
}

#[test]
fn key_hairpin() {
    for (s, m) in [
        ("off", HairpinMode::Off),
        ("simple", HairpinMode::Simple),
        ("intrinsic", HairpinMode::Intrinsic),
    ] {
        assert_eq!(ok(&with(&format!("hairpin = {s:?}"))).config.hairpin, m);
    }
    err_at(
        &with("hairpin = \"on\""),
        5,
        11,
        &["hairpin = \"on\"", "\"off\", \"simple\" or \"intrinsic\""],
    );
}

#[test]
fn key_rfc6791_v4() {
    let c = ok(&with(
        r#"rfc6791_v4 = ["192.0.2.1", "203.0.113.0/30", "192.0.2.1"]"#,
    ))
    .config;
    let want: Vec<Ipv4Addr> = [
        "192.0.2.1",
        "203.0.113.0",
        "203.0.113.1",
        "203.0.113.2",
        "203.0.113.3",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    assert_eq!(c.rfc6791_v4, want);
    assert_eq!(
        ok(&with(r#"rfc6791_v4 = ["10.0.0.0/16"]"#))
            .config
            .rfc6791_v4
            .len(),
        65_536
    );
    err_at(
        &with(r#"rfc6791_v4 = ["192.0.2.1", "10.0.0.0/16"]"#),
        5,
        28,
        &[
            "rfc6791_v4[1] = \"10.0.0.0/16\"",
            "65537 addresses",
            "at most 65536",
        ],
    );
    err_at(
        &with(r#"rfc6791_v4 = ["0.0.0.0/0"]"#),
        5,
        15,
        &["rfc6791_v4[0]", "4294967296 addresses"],
    );
    err_at(
        &with(r#"rfc6791_v4 = ["192.0.2.300"]"#),
        5,
        15,
        &["rfc6791_v4[0] = \"192.0.2.300\"", "not an IPv4 address"],
    );
    err_at(
        &with(r#"rfc6791_v4 = ["192.0.2.1/24"]"#),
        5,
        15,
        &["rfc6791_v4[0]", "bits beyond /24", "\"192.0.2.0/24\""],
    );
}

#[test]
fn key_rfc6791_v6() {
    assert_eq!(
        ok(&with(r#"rfc6791_v6 = "2001:db8::6791""#))
            .config
            .rfc6791_v6,
        Some("2001:db8::6791".parse().unwrap())
    );
    err_at(
        &with(r#"rfc6791_v6 = "192.0.2.1""#),
        5,
        14,
        &[
            "rfc6791_v6 = \"192.0.2.1\"",
            "not an IPv6 address",
            "expected an address",
        ],
    );
}

#[test]
fn key_icmp_source_v4() {
    assert_eq!(
        ok(&with(r#"icmp_source_v4 = "192.0.2.8""#))
            .config
            .icmp_source_v4,
        Ipv4Addr::new(192, 0, 2, 8)
    );
    err_at(
        &with(r#"icmp_source_v4 = "2001:db8::1""#),
        5,
        18,
        &["icmp_source_v4 = \"2001:db8::1\"", "not an IPv4 address"],
    );
}

#[test]
fn key_icmp_source_v6() {
    // Set explicitly (EAM_ONLY does) and bad.
    err_at(
        &EAM_ONLY.replace("2001:db8::8", "2001:db8::g"),
        4,
        18,
        &["icmp_source_v6 = \"2001:db8::g\"", "not an IPv6 address"],
    );
    // Required without pool6.
    err_at(
        "[translator]\nmode = \"siit\"\neam = [ { ipv4 = \"198.18.0.0/24\", ipv6 = \"2001:db8:1::/120\" } ]\n",
        1,
        1,
        &[
            "no `icmp_source_v6`",
            "no `pool6`",
            "expected icmp_source_v6",
        ],
    );
}

#[test]
fn key_icmp_source_v6_overrides_pool6() {
    let l = ok(&format!("{SAMPLE}icmp_source_v6 = \"2001:db8::99\"\n"));
    assert_eq!(
        l.config.icmp_source_v6,
        "2001:db8::99".parse::<Ipv6Addr>().unwrap()
    );
}

#[test]
fn key_reset_traffic_class_and_tos() {
    assert!(
        ok(&with("reset_traffic_class = true"))
            .config
            .reset_traffic_class
    );
    assert!(ok(&with("reset_tos = true")).config.reset_tos);
    err_at(
        &with("reset_tos = 1"),
        5,
        13,
        &["reset_tos", "invalid type", "boolean"],
    );
}

#[test]
fn key_new_tos() {
    assert_eq!(ok(&with("new_tos = 184")).config.new_tos, 184);
    assert_eq!(ok(&with("new_tos = 0")).config.new_tos, 0);
    err_at(
        &with("new_tos = 256"),
        5,
        11,
        &["new_tos = 256", "from 0 to 255"],
    );
    err_at(
        &with("new_tos = -1"),
        5,
        11,
        &["new_tos = -1", "from 0 to 255"],
    );
}

#[test]
fn key_egress_mtus() {
    let c = ok(&with("ipv4_mtu = 1500\nipv6_mtu = 9000")).config;
    assert_eq!((c.ipv4_mtu, c.ipv6_mtu), (Some(1500), Some(9000)));
    let c = ok(&with("")).config;
    assert_eq!((c.ipv4_mtu, c.ipv6_mtu), (None, None));
    err_at(
        &with("ipv6_mtu = 1000"),
        5,
        12,
        &["ipv6_mtu = 1000", "from 1280 to 65535"],
    );
    err_at(
        &with("ipv4_mtu = 67"),
        5,
        12,
        &["ipv4_mtu = 67", "from 68 to 65535"],
    );
}

#[test]
fn key_lowest_ipv6_mtu() {
    assert_eq!(
        ok(&with("lowest_ipv6_mtu = 1500")).config.lowest_ipv6_mtu,
        1500
    );
    assert_eq!(
        ok(&with("lowest_ipv6_mtu = 1280")).config.lowest_ipv6_mtu,
        1280
    );
    err_at(
        &with("lowest_ipv6_mtu = 1279"),
        5,
        19,
        &["lowest_ipv6_mtu = 1279", "from 1280 to 65535"],
    );
    err_at(
        &with("lowest_ipv6_mtu = 70000"),
        5,
        19,
        &["lowest_ipv6_mtu = 70000", "from 1280 to 65535"],
    );
}

#[test]
fn key_mtu_plateaus() {
    assert_eq!(
        ok(&with("mtu_plateaus = [1006, 68, 1492, 1492, 65535]"))
            .config
            .mtu_plateaus,
        vec![65535, 1492, 1006, 68]
    );
    err_at(
        &with("mtu_plateaus = []"),
        5,
        16,
        &["mtu_plateaus = []", "empty", "at least one"],
    );
    err_at(
        &with("mtu_plateaus = [1500, 67]"),
        5,
        23,
        &["mtu_plateaus[1] = 67", "from 68 to 65535"],
    );
    err_at(
        &with("mtu_plateaus = [1500, \"x\"]"),
        5,
        23,
        &["mtu_plateaus", "invalid type"],
    );
}

#[test]
fn key_udp_zero_checksum() {
    assert_eq!(
        ok(&with(r#"udp_zero_checksum = "drop""#))
            .config
            .udp_zero_checksum,
        UdpZeroChecksum::Drop
    );
    assert_eq!(
        ok(&with(r#"udp_zero_checksum = "compute""#))
            .config
            .udp_zero_checksum,
        UdpZeroChecksum::Compute
    );
    err_at(
        &with(r#"udp_zero_checksum = "ignore""#),
        5,
        21,
        &["udp_zero_checksum = \"ignore\"", "\"compute\" or \"drop\""],
    );
}

#[test]
fn key_decrement_hop_limit() {
    assert!(
        !ok(&with("decrement_hop_limit = false"))
            .config
            .decrement_hop_limit
    );
}

#[test]
fn key_icmp_rate() {
    let c = ok(&with("icmp_errors_per_sec = 0\nicmp_error_burst = 0")).config;
    assert_eq!((c.icmp_errors_per_sec, c.icmp_error_burst), (0, 0));
    let c = ok(&with("icmp_errors_per_sec = 1000\nicmp_error_burst = 10")).config;
    assert_eq!((c.icmp_errors_per_sec, c.icmp_error_burst), (1000, 10));
    err_at(
        &with("icmp_errors_per_sec = -5"),
        5,
        23,
        &["icmp_errors_per_sec = -5", "from 0 to 4294967295"],
    );
    err_at(
        &with("icmp_error_burst = 4294967296"),
        5,
        20,
        &["icmp_error_burst = 4294967296", "from 0 to 4294967295"],
    );
    err_at(
        &with("icmp_error_burst = 0"),
        5,
        20,
        &["icmp_error_burst = 0", "never send", "at least 1"],
    );
}
