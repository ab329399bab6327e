//! `mode = "nat64"` and `[nat64]`: every key, its errors with their positions,
//! the RFC 6146 minimum-timeout warnings, and the shipped sample.

use std::net::{Ipv4Addr, Ipv6Addr};

use sixgate_core::nat64::{EventLog, Filtering, Nat64Config, PortRange, Proto, StaticBib};

use crate::tests::{err_at, ok, without_comments};
use crate::{Loaded, Mode, Position};

/// `samples/nat64.toml` without its comments.
const SAMPLE: &str = r#"[translator]
mode = "nat64"
pool6 = "2001:db8:64::/96"
[nat64]
pool4 = ["203.0.113.1"]
static_bib = [
  { proto = "tcp", ipv6 = "2001:db8:1::80", port6 = 80, ipv4 = "203.0.113.1", port4 = 80 },
]
"#;

/// The smallest nat64 file. Line 5 is free for one more `[nat64]` key.
const BASE: &str = r#"[translator]
mode = "nat64"
[nat64]
pool4 = ["203.0.113.1"]
"#;

/// `BASE` plus one line (line 5).
fn with(line: &str) -> String {
    format!("{BASE}{line}\n")
}

fn nat64(text: &str) -> Nat64Config {
    ok(text)
        .config
        .nat64
        .expect("mode nat64 builds a Nat64Config")
}

/// The one warning `text` gives, at `line:col`, mentioning each of `parts`.
#[track_caller]
fn warns_at(text: &str, line: usize, col: usize, parts: &[&str]) -> Loaded {
    let l = ok(text);
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    let w = &l.warnings[0];
    assert_eq!(w.position(), Position { line, column: col });
    let shown = w.to_string();
    assert!(
        shown.starts_with(&format!("t.toml:{line}:{col}: warning: ")),
        "{shown}"
    );
    for p in parts {
        assert!(shown.contains(p), "{shown:?} does not mention {p:?}");
    }
    l
}

/// What a pool4 entry without ranges gets (as `sixgate pool4 add ADDR`): Jool's.
const DEFAULT_RANGE: PortRange = PortRange {
    first: 61001,
    last: 65535,
};

fn a4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

// --- mode, pool6, and what nat64 refuses ------------------------------------------------

#[test]
fn mode_nat64_takes_the_well_known_prefix_and_core_defaults() {
    let l = ok(BASE);
    assert_eq!(l.mode, Mode::Nat64);
    assert_eq!(l.mode.as_str(), "nat64");
    let p = l.config.map.pool6.expect("pool6 defaults in nat64 mode");
    assert_eq!((p.addr(), p.len()), (a6("64:ff9b::"), 96));
    assert!(l.config.map.eam.entries().is_empty());
    assert!(l.warnings.is_empty());
    let n = l.config.nat64.clone().unwrap();
    let d = Nat64Config::default();
    // Everything but pool4 is the core's default.
    assert_eq!(n.filtering, Filtering::EndpointIndependent);
    assert_eq!(n.filtering, d.filtering);
    assert_eq!(n.drop_external_tcp, d.drop_external_tcp);
    assert_eq!(n.max_held_syns, d.max_held_syns);
    assert_eq!(n.timeouts, d.timeouts);
    assert_eq!(
        (
            n.timeouts.udp,
            n.timeouts.tcp_established,
            n.timeouts.tcp_transitory
        ),
        (300, 7440, 240)
    );
    assert_eq!(
        (n.timeouts.icmp, n.timeouts.syn_hold, n.timeouts.port_reuse),
        (60, 6, 120)
    );
    assert_eq!(n.max_sessions, d.max_sessions);
    assert_eq!(n.subscriber_prefix_len, 64);
    assert_eq!(n.max_sessions_per_subscriber, d.max_sessions_per_subscriber);
    assert_eq!(n.max_ports_per_subscriber, d.max_ports_per_subscriber);
    assert_eq!(n.port_block_size, d.port_block_size);
    assert!(n.static_bib.is_empty());
    assert_eq!(n.event_log, EventLog::Off);
    assert!(!n.log_destinations);
    assert_eq!(n.hash_key, d.hash_key);
    assert_eq!(
        l.describe(),
        "mode nat64, pool6 64:ff9b::/96, pool4 1 entry (1 address), 0 static BIB entries"
    );
}

#[test]
fn nat64_mode_needs_its_section() {
    err_at(
        "[translator]\nmode = \"nat64\"\n",
        2,
        8,
        &["mode = \"nat64\" but no [nat64] section", "pool4"],
    );
}

#[test]
fn nat64_section_in_siit_mode_names_it() {
    let text = "[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/96\"\n[nat64]\npool4 = [\"203.0.113.1\"]\n";
    err_at(
        text,
        4,
        1,
        &[
            "[nat64]: the section is for mode = \"nat64\"",
            "this file has mode = \"siit\"",
        ],
    );
}

#[test]
fn eam_and_hairpin_are_refused_in_nat64_mode() {
    let text = BASE.replace(
        "mode = \"nat64\"\n",
        "mode = \"nat64\"\neam = [ { ipv4 = \"198.18.0.0/24\", ipv6 = \"2001:db8:1::/120\" } ]\n",
    );
    err_at(
        &text,
        3,
        9,
        &["eam: Explicit Address Mappings (RFC 7757)", "static_bib"],
    );
    let text = BASE.replace(
        "mode = \"nat64\"\n",
        "mode = \"nat64\"\nhairpin = \"off\"\n",
    );
    err_at(
        &text,
        3,
        11,
        &[
            "hairpin = \"off\"",
            "RFC 6146 §3.8",
            "expected no `hairpin`",
        ],
    );
}

#[test]
fn pool6_may_be_set_in_nat64_mode() {
    let text = BASE.replace(
        "mode = \"nat64\"\n",
        "mode = \"nat64\"\npool6 = \"2001:db8:64::/96\"\n",
    );
    let p = ok(&text).config.map.pool6.unwrap();
    assert_eq!((p.addr(), p.len()), (a6("2001:db8:64::"), 96));
}

#[test]
fn sample_nat64_toml_is_the_sample() {
    let text = include_str!("../../../../samples/nat64.toml");
    assert_eq!(without_comments(text), SAMPLE);
    let l = ok(text);
    assert!(l.warnings.is_empty());
    assert_eq!(
        l.describe(),
        "mode nat64, pool6 2001:db8:64::/96, pool4 1 entry (1 address), 1 static BIB entry"
    );
}

// --- pool4 -----------------------------------------------------------------------------

#[test]
fn key_pool4_strings_and_tables() {
    let n = nat64(&BASE.replace(
        "pool4 = [\"203.0.113.1\"]",
        "pool4 = [\"203.0.113.8/30\", { prefix = \"203.0.113.1\", tcp = \"1024-65535\", \
         udp = \"53\" }]",
    ));
    assert_eq!(n.pool4.len(), 2);
    let e = n.pool4[0];
    assert_eq!((e.addr, e.prefix_len), (a4("203.0.113.8"), 30));
    assert_eq!(
        (e.tcp, e.udp, e.icmp),
        (DEFAULT_RANGE, DEFAULT_RANGE, DEFAULT_RANGE)
    );
    let e = n.pool4[1];
    assert_eq!((e.addr, e.prefix_len), (a4("203.0.113.1"), 32));
    assert_eq!(
        e.tcp,
        PortRange {
            first: 1024,
            last: 65535
        }
    );
    assert_eq!(
        e.udp,
        PortRange {
            first: 53,
            last: 53
        }
    );
    assert_eq!(e.icmp, DEFAULT_RANGE);
    // Two entries may share an address when their ranges are disjoint.
    let n = nat64(&BASE.replace(
        "pool4 = [\"203.0.113.1\"]",
        "pool4 = [{ prefix = \"203.0.113.1\", tcp = \"1-100\", udp = \"1-100\", icmp = \"0-100\" },\n\
         { prefix = \"203.0.113.1\", tcp = \"101-200\", udp = \"101-200\", icmp = \"101-200\" }]",
    ));
    assert_eq!(n.pool4.len(), 2);
    assert_eq!(
        ok(&BASE.replace("\"203.0.113.1\"]", "\"203.0.113.0/24\"]")).describe(),
        "mode nat64, pool6 64:ff9b::/96, pool4 1 entry (256 addresses), 0 static BIB entries"
    );
}

/// Issue 4 / Jool: no pool4 key leaves pool4 empty, which `sixgate run` fills
/// with the gateway's own IPv4 address at ports 61001-65535.
#[test]
fn key_pool4_absent_is_the_default_pool4() {
    let l = ok("[translator]\nmode = \"nat64\"\n[nat64]\nudp_timeout = 300\n");
    assert!(l.config.nat64.as_ref().unwrap().pool4.is_empty());
    assert!(l.describe().contains("pool4 default"), "{}", l.describe());
    // A static BIB entry needs to know its pool4 address now.
    err_at(
        "[translator]\nmode = \"nat64\"\n[nat64]\nstatic_bib = [\n  \
         { proto = \"tcp\", ipv6 = \"2001:db8::80\", port6 = 80, ipv4 = \"203.0.113.1\", port4 = 80 },\n]\n",
        5,
        3,
        &["static_bib[0]", "explicit pool4"],
    );
}

#[test]
fn pool4_errors() {
    let p4 = |v: &str| BASE.replace("pool4 = [\"203.0.113.1\"]", &format!("pool4 = {v}"));
    err_at(
        &p4("[]"),
        4,
        9,
        &["[nat64] has no pool4 addresses", "RFC 6146 §2"],
    );
    err_at(
        &p4("[\"203.0.113\"]"),
        4,
        10,
        &[
            "pool4[0] = \"203.0.113\"",
            "not an IPv4 address",
            "expected an IPv4 address or prefix",
        ],
    );
    err_at(
        &p4("[\"203.0.113.1/24\"]"),
        4,
        10,
        &["bits beyond /24 are set", "\"203.0.113.0/24\""],
    );
    err_at(
        &p4("[\"203.0.113.1\", \"203.0.113.0/31\"]"),
        4,
        25,
        &[
            "pool4[1] (203.0.113.0/31, TCP ports 61001-65535) overlaps pool4[0]",
            "at most once",
        ],
    );
    err_at(
        &p4(
            "[{ prefix = \"203.0.113.1\", tcp = \"1-100\" }, { prefix = \"203.0.113.1\", tcp = \"101-200\" }]",
        ),
        4,
        53,
        &["overlaps pool4[0]", "UDP ports 61001-65535"],
    );
    err_at(
        &p4("[\"10.0.0.0/15\"]"),
        4,
        10,
        &["pool4 would hold 131072 addresses", "at most 65536"],
    );
    err_at(
        &p4("[{ prefix = \"203.0.113.1\", tcp = \"0-100\" }]"),
        4,
        42,
        &[
            "pool4[0].tcp = \"0-100\"",
            "not a port range",
            "numbers from 1 to 65535",
        ],
    );
    err_at(
        &p4("[{ prefix = \"203.0.113.1\", udp = \"9-8\" }]"),
        4,
        42,
        &["pool4[0].udp = \"9-8\"", "the range is backwards"],
    );
    err_at(
        &p4("[{ prefix = \"203.0.113.1\", icmp = \"0-70000\" }]"),
        4,
        43,
        &["pool4[0].icmp", "numbers from 0 to 65535"],
    );
    err_at(
        &p4("[{ prefix = \"203.0.113.x\" }]"),
        4,
        21,
        &["pool4[0].prefix = \"203.0.113.x\""],
    );
    err_at(
        &p4("[{ prefix = \"203.0.113.1\", sctp = \"1-2\" }]"),
        4,
        36,
        &["unknown key `sctp`", "`prefix`, `tcp`, `udp`, `icmp`"],
    );
    err_at(&p4("[{ tcp = \"1-2\" }]"), 4, 10, &["missing key `prefix`"]);
    err_at(
        &p4("[7]"),
        4,
        10,
        &["expected a string \"ADDR[/LEN]\" or a table { prefix, tcp, udp, icmp }"],
    );
    err_at(&p4("\"203.0.113.1\""), 4, 9, &["expected an array"]);
    for (bad, block) in [
        ("0.0.0.0/0", "0.0.0.0/8"),
        ("127.0.0.1", "127.0.0.0/8"),
        ("224.0.0.0/24", "224.0.0.0/4"),
        ("255.255.255.255", "240.0.0.0/4"),
    ] {
        err_at(
            &p4(&format!("[\"{bad}\"]")),
            4,
            10,
            &[&format!("reaches into {block}, which is not unicast")],
        );
    }
}

// --- the other keys ------------------------------------------------------------------------

#[test]
fn key_filtering() {
    assert_eq!(
        nat64(&with("filtering = \"address-dependent\"")).filtering,
        Filtering::AddressDependent
    );
    assert_eq!(
        nat64(&with("filtering = \"endpoint-independent\"")).filtering,
        Filtering::EndpointIndependent
    );
    err_at(
        &with("filtering = \"full-cone\""),
        5,
        13,
        &[
            "filtering = \"full-cone\"",
            "unknown filtering behaviour",
            "\"endpoint-independent\" or \"address-dependent\"",
        ],
    );
}

#[test]
fn key_drop_external_tcp_and_max_held_syns() {
    assert!(nat64(&with("drop_external_tcp = true")).drop_external_tcp);
    assert_eq!(nat64(&with("max_held_syns = 0")).max_held_syns, 0);
    assert_eq!(nat64(&with("max_held_syns = 1000")).max_held_syns, 1000);
    err_at(
        &with("max_held_syns = -1"),
        5,
        17,
        &["max_held_syns = -1: out of range", "from 0 to 1048576"],
    );
    err_at(
        &with("drop_external_tcp = 1"),
        5,
        21,
        &["expected a boolean"],
    );
}

/// RFC 6146 §3.5.1, §3.5.2.2, §3.5.3 and RFC 6888 REQ-8: values under the
/// RFC's floors load with a warning that cites the rule; zero is an error.
#[test]
fn timeouts_below_rfc_6146_minimums_warn() {
    let l = warns_at(
        &with("udp_timeout = 3"),
        5,
        15,
        &["udp_timeout = 3: below 120 s", "RFC 6146 §3.5.1", "UDP_MIN"],
    );
    assert_eq!(l.config.nat64.unwrap().timeouts.udp, 3);
    let l = warns_at(
        &with("tcp_established_timeout = 7439"),
        5,
        27,
        &["below 7440 s", "RFC 6146 §3.5.2.2", "TCP_EST"],
    );
    assert_eq!(l.config.nat64.unwrap().timeouts.tcp_established, 7439);
    let l = warns_at(
        &with("tcp_transitory_timeout = 4"),
        5,
        26,
        &["below 240 s", "RFC 6146 §3.5.2.2", "TCP_TRANS"],
    );
    assert_eq!(l.config.nat64.unwrap().timeouts.tcp_transitory, 4);
    let l = warns_at(
        &with("icmp_timeout = 2"),
        5,
        16,
        &["below 60 s", "RFC 6146 §3.5.3"],
    );
    assert_eq!(l.config.nat64.unwrap().timeouts.icmp, 2);
    let l = warns_at(
        &with("port_reuse_delay = 0"),
        5,
        20,
        &["below 120 s", "RFC 6888 REQ-8"],
    );
    assert_eq!(l.config.nat64.unwrap().timeouts.port_reuse, 0);

    // At or above the floor: silent.
    let text = format!(
        "{BASE}udp_timeout = 120\ntcp_established_timeout = 7440\ntcp_transitory_timeout = 240\n\
         icmp_timeout = 60\nport_reuse_delay = 120\n"
    );
    let l = ok(&text);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    let t = l.config.nat64.unwrap().timeouts;
    assert_eq!(
        (
            t.udp,
            t.tcp_established,
            t.tcp_transitory,
            t.icmp,
            t.port_reuse
        ),
        (120, 7440, 240, 60, 120)
    );
    // Several warnings, in file order.
    let l = ok(&format!("{BASE}udp_timeout = 3\nicmp_timeout = 2\n"));
    let lines: Vec<_> = l.warnings.iter().map(|w| w.position().line).collect();
    assert_eq!(lines, [5, 6]);
}

#[test]
fn timeout_errors() {
    for (key, col) in [
        ("udp_timeout", 15),
        ("tcp_established_timeout", 27),
        ("tcp_transitory_timeout", 26),
        ("icmp_timeout", 16),
    ] {
        err_at(
            &with(&format!("{key} = 0")),
            5,
            col,
            &[
                &format!("{key} = 0: a session would expire as it is made"),
                "from 1 to 1000000",
            ],
        );
        err_at(
            &with(&format!("{key} = 1000001")),
            5,
            col,
            &["out of range"],
        );
        err_at(
            &with(&format!("{key} = \"2h4m\"")),
            5,
            col,
            &["expected an integer"],
        );
    }
    err_at(
        &with("port_reuse_delay = -5"),
        5,
        20,
        &["port_reuse_delay = -5: out of range", "from 0 to"],
    );
}

#[test]
fn key_limits() {
    let n = nat64(&format!(
        "{BASE}max_sessions = 10\nsubscriber_prefix_len = 128\nmax_sessions_per_subscriber = 5\n\
         max_ports_per_subscriber = 4\n"
    ));
    assert_eq!(
        (
            n.max_sessions,
            n.subscriber_prefix_len,
            n.max_sessions_per_subscriber,
            n.max_ports_per_subscriber
        ),
        (10, 128, 5, 4)
    );
    err_at(
        &with("max_sessions = 0"),
        5,
        16,
        &["max_sessions = 0: out of range", "from 1 to 67108864"],
    );
    err_at(
        &with("subscriber_prefix_len = 129"),
        5,
        25,
        &["from 0 to 128"],
    );
    err_at(
        &with("max_ports_per_subscriber = -1"),
        5,
        28,
        &["out of range"],
    );
}

/// RFC 7422 port blocks: a power of two up to half the port space, or 0 for none.
#[test]
fn key_port_block_size() {
    for size in [0u16, 1, 2, 64, 512, 32768] {
        assert_eq!(
            nat64(&with(&format!("port_block_size = {size}"))).port_block_size,
            size
        );
    }
    err_at(
        &with("port_block_size = 100"),
        5,
        19,
        &[
            "port_block_size = 100: not a power of two",
            "0 (no port blocks) or a power of two from 1 to 32768",
        ],
    );
    err_at(
        &with("port_block_size = 65536"),
        5,
        19,
        &["out of range", "from 0 to 32768"],
    );
}

#[test]
fn key_event_log_and_log_destinations() {
    assert_eq!(
        nat64(&with("event_log = \"sessions\"")).event_log,
        EventLog::Sessions
    );
    assert_eq!(nat64(&with("event_log = \"bib\"")).event_log, EventLog::Bib);
    assert_eq!(nat64(&with("event_log = \"all\"")).event_log, EventLog::All);
    assert_eq!(nat64(&with("event_log = \"off\"")).event_log, EventLog::Off);
    err_at(
        &with("event_log = \"both\""),
        5,
        13,
        &[
            "event_log = \"both\": unknown event log",
            "\"off\", \"sessions\", \"bib\" or \"all\"",
        ],
    );
    assert!(nat64(&with("log_destinations = true")).log_destinations);
}

// --- static BIB ------------------------------------------------------------------------------

fn bib(entries: &str) -> String {
    format!(
        "[translator]\nmode = \"nat64\"\npool6 = \"2001:db8:64::/96\"\n[nat64]\n\
         pool4 = [\"203.0.113.1\", {{ prefix = \"203.0.113.2\", tcp = \"1024-2047\" }}]\n\
         static_bib = [\n{entries}\n]\n"
    )
}

#[test]
fn key_static_bib() {
    let n = nat64(&bib(
        "{ proto = \"tcp\", ipv6 = \"2001:db8:1::80\", port6 = 80, ipv4 = \"203.0.113.1\", port4 = 80 },\n\
         { proto = \"udp\", ipv6 = \"2001:db8:1::80\", port6 = 80, ipv4 = \"203.0.113.1\", port4 = 80 },\n\
         { proto = \"icmp\", ipv6 = \"2001:db8:1::80\", port6 = 0, ipv4 = \"203.0.113.2\", port4 = 0 },\n\
         { proto = \"tcp\", ipv6 = \"2001:db8:1::81\", port6 = 443, ipv4 = \"203.0.113.2\", port4 = 1024 },",
    ));
    assert_eq!(
        n.static_bib,
        [
            StaticBib {
                proto: Proto::Tcp,
                v6: a6("2001:db8:1::80"),
                port6: 80,
                v4: a4("203.0.113.1"),
                port4: 80
            },
            StaticBib {
                proto: Proto::Udp,
                v6: a6("2001:db8:1::80"),
                port6: 80,
                v4: a4("203.0.113.1"),
                port4: 80
            },
            StaticBib {
                proto: Proto::Icmp,
                v6: a6("2001:db8:1::80"),
                port6: 0,
                v4: a4("203.0.113.2"),
                port4: 0
            },
            StaticBib {
                proto: Proto::Tcp,
                v6: a6("2001:db8:1::81"),
                port6: 443,
                v4: a4("203.0.113.2"),
                port4: 1024
            },
        ]
    );
}

#[test]
fn static_bib_errors() {
    const OK: &str = "{ proto = \"tcp\", ipv6 = \"2001:db8:1::80\", port6 = 80, ipv4 = \"203.0.113.1\", port4 = 80 },";
    let second = |e: &str| bib(&format!("{OK}\n{e}"));
    // Line 7 holds the first entry, line 8 the one under test.
    err_at(
        &second(
            "{ proto = \"tcp\", ipv6 = \"2001:db8:1::80\", port6 = 80, ipv4 = \"198.51.100.1\", port4 = 80 }",
        ),
        8,
        1,
        &[
            "static_bib[1] (tcp 198.51.100.1:80): 198.51.100.1 is not in pool4",
            "expected an IPv4 address of pool4",
        ],
    );
    // Any port of a pool4 address will do: the range is what the translator
    // hands out by itself (203.0.113.2 holds TCP 1024-2047 only).
    assert_eq!(
        nat64(&second(
            "{ proto = \"tcp\", ipv6 = \"2001:db8:1::81\", port6 = 80, ipv4 = \"203.0.113.2\", port4 = 80 }",
        ))
        .static_bib
        .len(),
        2
    );
    err_at(
        &second(
            "{ proto = \"tcp\", ipv6 = \"2001:db8:1::81\", port6 = 81, ipv4 = \"203.0.113.1\", port4 = 80 }",
        ),
        8,
        1,
        &["static_bib[1]: the same tcp IPv4 side 203.0.113.1:80 as static_bib[0]"],
    );
    err_at(
        &second(
            "{ proto = \"tcp\", ipv6 = \"2001:db8:1::80\", port6 = 80, ipv4 = \"203.0.113.1\", port4 = 81 }",
        ),
        8,
        1,
        &["the same tcp IPv6 side [2001:db8:1::80]:80 as static_bib[0]"],
    );
    err_at(
        &second(
            "{ proto = \"sctp\", ipv6 = \"2001:db8:1::80\", port6 = 80, ipv4 = \"203.0.113.1\", port4 = 80 }",
        ),
        8,
        11,
        &[
            "static_bib[1].proto = \"sctp\": unknown protocol",
            "\"tcp\", \"udp\", \"icmp\"",
        ],
    );
    err_at(
        &second(
            "{ proto = \"udp\", ipv6 = \"2001:db8:64::c633:6407\", port6 = 80, ipv4 = \"203.0.113.1\", port4 = 80 }",
        ),
        8,
        25,
        &[
            "static_bib[1].ipv6",
            "inside pool6 2001:db8:64::/96",
            "the address of an IPv6 host",
        ],
    );
    err_at(
        &second(
            "{ proto = \"udp\", ipv6 = \"2001:db8:1::80\", port6 = 0, ipv4 = \"203.0.113.1\", port4 = 80 }",
        ),
        8,
        51,
        &["static_bib[1].port6 = 0: out of range", "from 1 to 65535"],
    );
    err_at(
        &second(
            "{ proto = \"udp\", ipv6 = \"2001:db8:1::80\", port6 = 8, ipv4 = \"203.0.113.1\", port4 = 65536 }",
        ),
        8,
        84,
        &["static_bib[1].port4 = 65536: out of range"],
    );
    err_at(
        &second(
            "{ proto = \"udp\", ipv6 = \"2001:db8:1::80\", port6 = 8, ipv4 = \"2001:db8::1\", port4 = 8 }",
        ),
        8,
        61,
        &["static_bib[1].ipv4", "not an IPv4 address"],
    );
    err_at(
        &second(
            "{ proto = \"udp\", ipv6 = \"2001:db8:1::80\", port6 = 8, ipv4 = \"203.0.113.1\" }",
        ),
        8,
        1,
        &["missing key `port4`"],
    );
    err_at(
        &second(
            "{ proto = \"udp\", ipv6 = \"2001:db8:1::80\", port6 = 8, ipv4 = \"203.0.113.1\", port4 = 8, port = 1 }",
        ),
        8,
        87,
        &["unknown key `port`"],
    );
}

#[test]
fn unknown_nat64_key_is_an_error() {
    err_at(
        &with("udp_timout = 3"),
        5,
        1,
        &["nat64: unknown key `udp_timout`", "`udp_timeout`"],
    );
    err_at(&with("pool4 = 3"), 5, 1, &["duplicate key `pool4`"]);
    err_at(
        "nat64 = 3\n[translator]\nmode = \"nat64\"\n",
        1,
        9,
        &["nat64", "expected a table"],
    );
}
