//! Every key, every error message (with its position), the documented sample,
//! and the guards that keep schema, key list and docs/config.md in step.

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, Ipv6Addr};

use sixgate_core::Config;
use sixgate_core::addr::Eam;
use sixgate_core::config::{ClassE, DEFAULT_MTU_PLATEAUS, HairpinMode, UdpZeroChecksum};

use super::*;
use crate::schema::{
    CLAT_KEYS, DAEMON_KEYS, EAM_KEYS, NAT64_KEYS, POOL4_KEYS, SECTIONS, STATIC_BIB_KEYS,
    TRANSLATOR_KEYS, TUN_KEYS, XDP_KEYS,
};

pub(crate) const SAMPLE: &str = r#"[translator]
mode = "siit"
pool6 = "2001:db8:64::/96"
eam = [ { ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" } ]
"#;

/// A valid EAM-only config. Line 5 is free for one more key.
pub(crate) const EAM_ONLY: &str = r#"[translator]
mode = "siit"
eam = [ { ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" } ]
icmp_source_v6 = "2001:db8::8"
"#;

pub(crate) fn ok(text: &str) -> Loaded {
    match parse(text, "t.toml") {
        Ok(l) => l,
        Err(e) => panic!("unexpected error: {e}\n--- input:\n{text}"),
    }
}

/// `EAM_ONLY` plus one line (line 5).
/// `text` without its comment and blank lines: a sample file as the bare
/// config it must equal.
pub(crate) fn without_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

pub(crate) fn with(line: &str) -> String {
    format!("{EAM_ONLY}{line}\n")
}

/// Parse, expect an error at `line:col`, and check the message mentions each of `parts`.
#[track_caller]
pub(crate) fn err_at(text: &str, line: usize, col: usize, parts: &[&str]) -> String {
    let e = match parse(text, "t.toml") {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    };
    let msg = e.to_string();
    let prefix = format!("t.toml:{line}:{col}: ");
    assert!(
        msg.starts_with(&prefix),
        "{msg:?} does not start with {prefix:?}"
    );
    for p in parts {
        assert!(msg.contains(p), "{msg:?} does not mention {p:?}");
    }
    assert_eq!(e.position(), Some(Position { line, column: col }));
    msg
}

// --- the documented sample and defaults -------------------------------------

#[test]
fn exact_sample_parses() {
    let l = ok(SAMPLE);
    assert_eq!(l.mode, Mode::Siit);
    let p = l.config.map.pool6.expect("pool6");
    assert_eq!(p.addr(), "2001:db8:64::".parse::<Ipv6Addr>().unwrap());
    assert_eq!(p.len(), 96);
    assert_eq!(
        l.config.map.eam.entries(),
        &[Eam {
            v4: [198, 18, 0, 0],
            v4_len: 24,
            v6: "2001:db8:1::".parse::<Ipv6Addr>().unwrap().octets(),
            v6_len: 120,
        }]
    );
    // Defaults are Config::with_pool6's.
    let d = Config::with_pool6(Some(p));
    assert_eq!(l.config.icmp_source_v6, d.icmp_source_v6);
    assert_eq!(
        l.config.icmp_source_v6,
        "2001:db8:64::c000:8".parse::<Ipv6Addr>().unwrap()
    );
    assert_eq!(
        l.describe(),
        "mode siit, pool6 2001:db8:64::/96, 1 EAM entry"
    );
}

#[test]
fn defaults_match_core() {
    let c = ok(EAM_ONLY).config;
    let d = Config::with_pool6(None);
    assert!(c.map.wkp_strict);
    assert_eq!(c.hairpin, HairpinMode::Intrinsic);
    assert_eq!(c.hairpin, d.hairpin);
    assert!(c.rfc6791_v4.is_empty());
    assert_eq!(c.rfc6791_v6, None);
    assert_eq!(c.icmp_source_v4, Ipv4Addr::new(192, 0, 0, 8));
    assert!(!c.reset_traffic_class && !c.reset_tos);
    assert_eq!(c.new_tos, 0);
    assert_eq!(c.lowest_ipv6_mtu, 1280);
    assert_eq!(c.mtu_plateaus, DEFAULT_MTU_PLATEAUS.to_vec());
    assert_eq!(c.udp_zero_checksum, UdpZeroChecksum::Compute);
    // RFC 1812 §5.3.7: the switch "MUST default to performing the checks".
    assert_eq!(c.class_e, ClassE::Drop);
    assert_eq!(c.class_e, d.class_e);
    assert!(c.decrement_hop_limit);
    assert_eq!(c.icmp_errors_per_sec, 100);
    assert_eq!(c.icmp_error_burst, 50);
    assert_eq!(c.ipv4_id_key, d.ipv4_id_key);
}

#[test]
fn eam_only_describe() {
    let l = ok(EAM_ONLY);
    assert_eq!(l.describe(), "mode siit, pool6 none, 1 EAM entry");
    assert_eq!(
        l.config.icmp_source_v6,
        "2001:db8::8".parse::<Ipv6Addr>().unwrap()
    );
}

// --- [daemon] and [tun] -------------------------------------------------------------

#[test]
fn daemon_and_tun_are_optional_with_defaults() {
    let l = ok(SAMPLE);
    assert_eq!(l.daemon, DaemonSettings::default());
    assert_eq!(l.daemon.workers, 0);
    assert_eq!(l.daemon.user, None);
    assert_eq!(l.tun, TunSettings::default());
    assert_eq!(l.tun.name, "sixgate0");
    assert_eq!(l.tun.mtu, 1500);
    assert!(l.tun.offload && l.tun.manage_routes && !l.tun.keep);
    // Empty sections are the defaults too.
    let l = ok(&format!("{SAMPLE}[daemon]\n[tun]\n"));
    assert_eq!(
        (l.daemon, l.tun),
        (DaemonSettings::default(), TunSettings::default())
    );
}

/// SAMPLE (4 lines) plus a section header on line 5 and `line` on line 6.
pub(crate) fn in_section(section: &str, line: &str) -> String {
    format!("{SAMPLE}[{section}]\n{line}\n")
}

#[test]
fn daemon_and_tun_unknown_keys_and_types() {
    err_at(
        &in_section("tun", "queues = 4"),
        6,
        1,
        &[
            "tun: unknown key `queues`",
            "`name`, `mtu`, `offload`, `manage_routes`, `keep`",
        ],
    );
    err_at(
        &in_section("daemon", "threads = 4"),
        6,
        1,
        &[
            "daemon: unknown key `threads`",
            "`workers`, `user`, `socket`, `dataplane`",
        ],
    );
    err_at(
        &format!("tun = 3\n{SAMPLE}"),
        1,
        7,
        &["tun", "invalid type", "expected a table"],
    );
}

// --- structural errors ---------------------------------------------------------

#[test]
fn syntax_error_has_position() {
    err_at(&with("hairpin = \"off"), 5, 15, &["invalid basic string"]);
    err_at(&with("= 3"), 5, 1, &[]);
}

/// RFC 1812 §5.3.7: `class_e` takes "drop" or "translate"; anything else is
/// an error at the value that names both.
#[test]
fn rfc1812_s5_3_7_class_e_values() {
    assert_eq!(ok(&with("class_e = \"drop\"")).config.class_e, ClassE::Drop);
    let l = ok(&with("class_e = \"translate\""));
    assert_eq!(l.config.class_e, ClassE::Translate);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    err_at(
        &with("class_e = \"forward\""),
        5,
        11,
        &[
            "class_e",
            "\"forward\"",
            "\"drop\" or \"translate\"",
            "RFC 1812 §5.3.7",
        ],
    );
    err_at(&with("class_e = true"), 5, 11, &["class_e", "invalid type"]);
}

#[test]
fn unknown_key_is_an_error() {
    err_at(
        &with("hairpinning = \"off\""),
        5,
        1,
        &["translator: unknown key `hairpinning`", "`hairpin`"],
    );
}

#[test]
fn unknown_section_is_an_error() {
    err_at(
        &format!("{EAM_ONLY}[nat46]\npool4 = []\n"),
        5,
        2,
        &[
            "unknown section `nat46`",
            "expected one of `translator`, `nat64`, `daemon`, `tun`",
        ],
    );
}

#[test]
fn missing_translator_section() {
    err_at("# nothing here\n", 1, 1, &["no [translator] section"]);
}

#[test]
fn load_reads_a_file_and_names_it() {
    let dir = std::env::temp_dir().join(format!("sixgate-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.toml");
    std::fs::write(&path, with("new_tos = 300")).unwrap();
    let e = load(&path).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}:5:11: new_tos = 300", path.display())),
        "{e}"
    );
    std::fs::write(&path, EAM_ONLY).unwrap();
    assert_eq!(load(&path).unwrap().mode, Mode::Siit);
    std::fs::remove_dir_all(&dir).unwrap();

    let missing = Path::new("/nonexistent/sixgate.toml");
    let e = load(missing).unwrap_err();
    assert_eq!(e.position(), None);
    let msg = e.to_string();
    assert!(
        msg.starts_with("/nonexistent/sixgate.toml: cannot read config file"),
        "{msg}"
    );
    assert!(std::error::Error::source(&e).is_some());
}

#[test]
fn position_counts_characters() {
    let text = "a = \"é\"\nbb = 1\n";
    assert_eq!(
        Position::of_offset(text, 0),
        Position { line: 1, column: 1 }
    );
    assert_eq!(
        Position::of_offset(text, 7),
        Position { line: 1, column: 7 }
    );
    assert_eq!(
        Position::of_offset(text, 9),
        Position { line: 2, column: 1 }
    );
    assert_eq!(
        Position::of_offset(text, 6),
        Position { line: 1, column: 6 }
    );
    assert_eq!(
        Position::of_offset(text, 999),
        Position { line: 3, column: 1 }
    );
}

// --- schema / key list / docs cannot drift ----------------------------------------

/// An example TOML value for every listed key. A key added to `TRANSLATOR_KEYS`
/// without an example here fails the test below.
pub(crate) fn example_value(key: &str) -> &'static str {
    match key {
        "mode" => r#""siit""#,
        "pool6" => r#""64:ff9b::/96""#,
        "eam" => r#"[ { ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" } ]"#,
        "wkp_strict" => "false",
        "hairpin" => r#""simple""#,
        "rfc6791_v4" => r#"["192.0.2.1"]"#,
        "rfc6791_v6" => r#""2001:db8::6791""#,
        "icmp_source_v4" => r#""192.0.0.8""#,
        "icmp_source_v6" => r#""2001:db8::8""#,
        "reset_traffic_class" => "true",
        "reset_tos" => "true",
        "new_tos" => "8",
        "lowest_ipv6_mtu" => "1400",
        "ipv4_mtu" => "1500",
        "ipv6_mtu" => "1500",
        "mtu_plateaus" => "[1500, 1280]",
        "udp_zero_checksum" => r#""drop""#,
        "class_e" => r#""translate""#,
        "decrement_hop_limit" => "false",
        "icmp_errors_per_sec" => "10",
        "icmp_error_burst" => "5",
        "daemon.workers" => "2",
        "daemon.user" => r#""nobody""#,
        "daemon.socket" => r#""/run/sg-test/api.sock""#,
        "daemon.state_file" => r#""/var/lib/sg-test/nat64.state""#,
        "daemon.fastpath_handover" => "10",
        "daemon.fastpath_pin_dir" => r#""/run/sg-test/bpf""#,
        "daemon.dataplane" => r#""xdp""#,
        "daemon.fastpath" => r#""off""#,
        "daemon.fastpath_interfaces" => r#"["eth0", "eth1"]"#,
        "xdp.ipv6_interface" => r#""eth6""#,
        "xdp.ipv4_interface" => r#""eth4""#,
        "xdp.attach_mode" => r#""generic""#,
        "xdp.zero_copy" => r#""off""#,
        "xdp.frames" => "8192",
        "tun.name" => r#""sg-test0""#,
        "tun.mtu" => "9000",
        "tun.offload" => "false",
        "tun.manage_routes" => "false",
        "tun.keep" => "true",
        "clat.ipv4" => r#""192.0.0.0/29""#,
        "clat.ipv6" => r#""2001:db8:c1a7::/125""#,
        "clat.plat_prefix" => r#""discover""#,
        "clat.dns_server" => r#""[2001:db8::53]:53""#,
        "nat64.pool4" => r#"["203.0.113.0/30", { prefix = "203.0.113.9", tcp = "61001-65000" }]"#,
        "nat64.filtering" => r#""address-dependent""#,
        "nat64.drop_external_tcp" => "true",
        "nat64.max_held_syns" => "8",
        "nat64.udp_timeout" => "600",
        "nat64.tcp_established_timeout" => "86400",
        "nat64.tcp_transitory_timeout" => "300",
        "nat64.icmp_timeout" => "90",
        "nat64.port_reuse_delay" => "180",
        "nat64.max_sessions" => "5000",
        "nat64.subscriber_prefix_len" => "56",
        "nat64.max_sessions_per_subscriber" => "100",
        "nat64.max_ports_per_subscriber" => "256",
        "nat64.port_block_size" => "64",
        "nat64.deterministic" => r#""2001:db8:1::/48""#,
        "nat64.static_bib" => {
            r#"[{ proto = "udp", ipv6 = "2001:db8:1::53", port6 = 53, ipv4 = "203.0.113.1", port4 = 53 }]"#
        }
        "nat64.event_log" => r#""sessions""#,
        "nat64.log_destinations" => "true",
        other => panic!("a key list names {other:?}; give it an example value here"),
    }
}

#[test]
fn key_list_matches_schema() {
    let mut text = String::from("[translator]\n");
    for key in TRANSLATOR_KEYS {
        text.push_str(&format!("{key} = {}\n", example_value(key)));
    }
    // deny_unknown_fields rejects a listed key the struct lacks...
    let file: schema::File = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    // ...and this exhaustive pattern stops compiling when the struct gains a field,
    // while the asserts catch a field that the list (and so the text) lacks.
    let schema::TranslatorSection {
        mode,
        pool6,
        eam,
        wkp_strict,
        hairpin,
        rfc6791_v4,
        rfc6791_v6,
        icmp_source_v4,
        icmp_source_v6,
        reset_traffic_class,
        reset_tos,
        new_tos,
        lowest_ipv6_mtu,
        ipv4_mtu,
        ipv6_mtu,
        mtu_plateaus,
        udp_zero_checksum,
        class_e,
        decrement_hop_limit,
        icmp_errors_per_sec,
        icmp_error_burst,
    } = file.translator.unwrap().into_inner();
    let set = [
        mode.is_some(),
        pool6.is_some(),
        eam.is_some(),
        wkp_strict.is_some(),
        hairpin.is_some(),
        rfc6791_v4.is_some(),
        rfc6791_v6.is_some(),
        icmp_source_v4.is_some(),
        icmp_source_v6.is_some(),
        reset_traffic_class.is_some(),
        reset_tos.is_some(),
        new_tos.is_some(),
        lowest_ipv6_mtu.is_some(),
        ipv4_mtu.is_some(),
        ipv6_mtu.is_some(),
        mtu_plateaus.is_some(),
        udp_zero_checksum.is_some(),
        class_e.is_some(),
        decrement_hop_limit.is_some(),
        icmp_errors_per_sec.is_some(),
        icmp_error_burst.is_some(),
    ];
    assert_eq!(set.len(), TRANSLATOR_KEYS.len());
    assert!(set.iter().all(|&s| s), "{set:?}");
    let e = eam.unwrap();
    let schema::EamEntry { ipv4, ipv6 } = e[0].get_ref();
    assert_eq!(
        (ipv4.get_ref().as_str(), ipv6.get_ref().as_str()),
        ("198.18.0.0/24", "2001:db8:1::/120")
    );
    assert_eq!(EAM_KEYS, ["ipv4", "ipv6"]);
    assert_eq!(
        SECTIONS,
        [
            "translator",
            "nat64",
            "daemon",
            "tun",
            "xdp",
            "clat",
            "dns64",
            "pref64",
            "metrics",
            "log",
            "mapt",
            "sync",
            "log_export"
        ]
    );

    // [daemon] and [tun], the same way.
    let mut text = String::new();
    for (section, keys) in [
        ("daemon", DAEMON_KEYS),
        ("tun", TUN_KEYS),
        ("xdp", XDP_KEYS),
    ] {
        text.push_str(&format!("[{section}]\n"));
        for key in keys {
            text.push_str(&format!(
                "{key} = {}\n",
                example_value(&format!("{section}.{key}"))
            ));
        }
    }
    let file: schema::File = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let schema::DaemonSection {
        workers,
        user,
        socket,
        dataplane,
        fastpath,
        fastpath_interfaces,
        state_file,
        fastpath_handover,
        fastpath_pin_dir,
    } = file.daemon.unwrap().into_inner();
    let set = [
        workers.is_some(),
        user.is_some(),
        socket.is_some(),
        dataplane.is_some(),
        fastpath.is_some(),
        fastpath_interfaces.is_some(),
        state_file.is_some(),
        fastpath_handover.is_some(),
        fastpath_pin_dir.is_some(),
    ];
    assert_eq!(set.len(), DAEMON_KEYS.len());
    assert!(set.iter().all(|&s| s), "{set:?}");
    let schema::TunSection {
        name,
        mtu,
        offload,
        manage_routes,
        keep,
    } = file.tun.unwrap().into_inner();
    let set = [
        name.is_some(),
        mtu.is_some(),
        offload.is_some(),
        manage_routes.is_some(),
        keep.is_some(),
    ];
    assert_eq!(set.len(), TUN_KEYS.len());
    assert!(set.iter().all(|&s| s), "{set:?}");
    let schema::XdpSection {
        ipv6_interface,
        ipv4_interface,
        attach_mode,
        zero_copy,
        frames,
    } = file.xdp.unwrap().into_inner();
    let set = [
        ipv6_interface.is_some(),
        ipv4_interface.is_some(),
        attach_mode.is_some(),
        zero_copy.is_some(),
        frames.is_some(),
    ];
    assert_eq!(set.len(), XDP_KEYS.len());
    assert!(set.iter().all(|&s| s), "{set:?}");

    // [clat], the same way.
    let mut text = String::from("[clat]\n");
    for key in CLAT_KEYS {
        text.push_str(&format!(
            "{key} = {}\n",
            example_value(&format!("clat.{key}"))
        ));
    }
    let file: schema::File = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let schema::ClatSection {
        ipv4,
        ipv6,
        plat_prefix,
        dns_server,
    } = file.clat.unwrap().into_inner();
    let set = [
        ipv4.is_some(),
        ipv6.is_some(),
        plat_prefix.is_some(),
        dns_server.is_some(),
    ];
    assert_eq!(set.len(), CLAT_KEYS.len());
    assert!(set.iter().all(|&s| s), "{set:?}");

    // [nat64], its pool4 tables and static_bib entries.
    let text = nat64_every_key();
    let file: schema::File = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let schema::Nat64Section {
        pool4,
        filtering,
        drop_external_tcp,
        max_held_syns,
        udp_timeout,
        tcp_established_timeout,
        tcp_transitory_timeout,
        icmp_timeout,
        port_reuse_delay,
        max_sessions,
        subscriber_prefix_len,
        max_sessions_per_subscriber,
        max_ports_per_subscriber,
        port_block_size,
        deterministic,
        static_bib,
        event_log,
        log_destinations,
    } = file.nat64.unwrap().into_inner();
    let set = [
        pool4.is_some(),
        filtering.is_some(),
        drop_external_tcp.is_some(),
        max_held_syns.is_some(),
        udp_timeout.is_some(),
        tcp_established_timeout.is_some(),
        tcp_transitory_timeout.is_some(),
        icmp_timeout.is_some(),
        port_reuse_delay.is_some(),
        max_sessions.is_some(),
        subscriber_prefix_len.is_some(),
        max_sessions_per_subscriber.is_some(),
        max_ports_per_subscriber.is_some(),
        port_block_size.is_some(),
        deterministic.is_some(),
        static_bib.is_some(),
        event_log.is_some(),
        log_destinations.is_some(),
    ];
    assert_eq!(set.len(), NAT64_KEYS.len());
    assert!(set.iter().all(|&s| s), "{set:?}");
    let pool4 = pool4.unwrap().into_inner();
    assert!(matches!(pool4[0].get_ref(), schema::Pool4Item::Prefix(p) if p == "203.0.113.0/30"));
    let schema::Pool4Item::Table(schema::Pool4Table {
        prefix,
        tcp,
        udp,
        icmp,
    }) = pool4[1].get_ref()
    else {
        panic!("pool4[1] is a table");
    };
    assert_eq!(prefix.get_ref(), "203.0.113.9");
    assert_eq!(
        tcp.as_ref().map(|t| t.get_ref().as_str()),
        Some("61001-65000")
    );
    assert!(udp.is_none() && icmp.is_none());
    assert_eq!(POOL4_KEYS, ["prefix", "tcp", "udp", "icmp"]);
    let schema::StaticBibEntry {
        proto,
        ipv6,
        port6,
        ipv4,
        port4,
    } = static_bib.unwrap().remove(0).into_inner();
    assert_eq!(
        (
            proto.get_ref().as_str(),
            ipv6.get_ref().as_str(),
            *port6.get_ref()
        ),
        ("udp", "2001:db8:1::53", 53)
    );
    assert_eq!(
        (ipv4.get_ref().as_str(), *port4.get_ref()),
        ("203.0.113.1", 53)
    );
    assert_eq!(STATIC_BIB_KEYS, ["proto", "ipv6", "port6", "ipv4", "port4"]);
}

/// A nat64 file that sets every `[nat64]` key to its example value.
pub(crate) fn nat64_every_key() -> String {
    let mut text = String::from("[translator]\nmode = \"nat64\"\n[nat64]\n");
    for key in NAT64_KEYS {
        text.push_str(&format!(
            "{key} = {}\n",
            example_value(&format!("nat64.{key}"))
        ));
    }
    text
}

#[test]
fn every_key_together_validates() {
    let mut text = String::from("[translator]\n");
    for key in TRANSLATOR_KEYS {
        text.push_str(&format!("{key} = {}\n", example_value(key)));
    }
    let c = ok(&text).config;
    assert_eq!(c.mtu_plateaus, vec![1500, 1280]);
    assert_eq!(c.hairpin, HairpinMode::Simple);

    let l = ok(&nat64_every_key());
    assert_eq!(l.mode, Mode::Nat64);
    let n = l.config.nat64.expect("nat64");
    assert_eq!(n.pool4.len(), 2);
    assert_eq!(n.static_bib.len(), 1);
    assert_eq!(n.port_block_size, 64);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
}

/// Key names documented in docs/config.md: the backticked first cell of each table row.
fn documented_keys(md: &str) -> BTreeSet<String> {
    md.lines()
        .filter_map(|l| l.trim().strip_prefix('|'))
        .filter_map(|row| row.split('|').next())
        .filter_map(|cell| {
            let cell = cell.trim();
            cell.strip_prefix('`')?.strip_suffix('`').map(str::to_owned)
        })
        .collect()
}

#[test]
fn docs_document_exactly_the_schema_keys() {
    let md = include_str!("../../../docs/config.md");
    let documented = documented_keys(md);
    let mut accepted: BTreeSet<String> = TRANSLATOR_KEYS.iter().map(|k| k.to_string()).collect();
    accepted.extend(EAM_KEYS.iter().map(|k| format!("eam.{k}")));
    accepted.extend(DAEMON_KEYS.iter().map(|k| k.to_string()));
    accepted.extend(TUN_KEYS.iter().map(|k| k.to_string()));
    accepted.extend(XDP_KEYS.iter().map(|k| k.to_string()));
    accepted.extend(CLAT_KEYS.iter().map(|k| k.to_string()));
    accepted.extend(NAT64_KEYS.iter().map(|k| k.to_string()));
    accepted.extend(POOL4_KEYS.iter().map(|k| format!("pool4.{k}")));
    accepted.extend(STATIC_BIB_KEYS.iter().map(|k| format!("static_bib.{k}")));
    accepted.extend(crate::schema::DNS64_KEYS.iter().map(|k| k.to_string()));
    accepted.extend(crate::schema::PREF64_KEYS.iter().map(|k| k.to_string()));
    // `listen` is also a [dns64] key, so [metrics] keys are documented qualified.
    accepted.extend(
        crate::schema::METRICS_KEYS
            .iter()
            .map(|k| format!("metrics.{k}")),
    );
    accepted.extend(crate::schema::LOG_KEYS.iter().map(|k| k.to_string()));
    // [sync] keys are documented qualified: node_id is in three tables.
    accepted.extend(crate::schema::SYNC_KEYS.iter().map(|k| format!("sync.{k}")));
    accepted.extend(
        crate::schema::SYNC_PEER_KEYS
            .iter()
            .map(|k| format!("sync.peers.{k}")),
    );
    accepted.extend(
        crate::schema::SYNC_SHARD_KEYS
            .iter()
            .map(|k| format!("sync.shards.{k}")),
    );
    // [log_export] keys are documented qualified: file and address are
    // keys elsewhere.
    accepted.extend(
        crate::schema::LOG_EXPORT_KEYS
            .iter()
            .map(|k| format!("log_export.{k}")),
    );
    accepted.extend(
        crate::schema::LOG_EXPORT_COLLECTOR_KEYS
            .iter()
            .map(|k| format!("log_export.collector.{k}")),
    );
    accepted.extend(crate::schema::MAPT_KEYS.iter().map(|k| k.to_string()));
    accepted.extend(
        crate::schema::MAP_RULE_KEYS
            .iter()
            .map(|k| format!("rule.{k}")),
    );
    // Section keys are documented bare in their section's table, so no two
    // sections may share a key name (the check above could not tell them apart).
    assert_eq!(
        accepted.len(),
        TRANSLATOR_KEYS.len()
            + EAM_KEYS.len()
            + DAEMON_KEYS.len()
            + TUN_KEYS.len()
            + XDP_KEYS.len()
            + NAT64_KEYS.len()
            + POOL4_KEYS.len()
            + STATIC_BIB_KEYS.len()
            + CLAT_KEYS.len()
            + crate::schema::DNS64_KEYS.len()
            + crate::schema::PREF64_KEYS.len()
            + crate::schema::METRICS_KEYS.len()
            + crate::schema::LOG_KEYS.len()
            + crate::schema::SYNC_KEYS.len()
            + crate::schema::SYNC_PEER_KEYS.len()
            + crate::schema::SYNC_SHARD_KEYS.len()
            + crate::schema::LOG_EXPORT_KEYS.len()
            + crate::schema::LOG_EXPORT_COLLECTOR_KEYS.len()
            + crate::schema::MAPT_KEYS.len()
            + crate::schema::MAP_RULE_KEYS.len(),
        "a key name is shared between sections"
    );
    let missing: Vec<_> = accepted.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&accepted).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/config.md and the schema disagree: undocumented keys {missing:?}, \
         documented keys the schema does not accept {extra:?}"
    );
    for section in SECTIONS {
        assert!(
            md.contains(&format!("`[{section}]`")),
            "section [{section}] undocumented"
        );
    }
}

#[test]
fn docs_toml_examples_are_valid() {
    let md = include_str!("../../../docs/config.md");
    let blocks: Vec<&str> = md
        .split("```toml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert!(
        blocks.len() >= 2,
        "docs/config.md should have a minimal and a full example"
    );
    for b in &blocks {
        ok(b);
    }
    // The full examples set every key: siit's every [translator], [daemon] and
    // [tun] key, nat64's every [nat64] key.
    let full = blocks
        .iter()
        .rfind(|b| b.contains("mode = \"siit\""))
        .unwrap();
    for key in TRANSLATOR_KEYS
        .iter()
        .chain(DAEMON_KEYS)
        .chain(TUN_KEYS)
        .chain(XDP_KEYS)
    {
        assert!(
            full.contains(&format!("\n{key} = ")),
            "full example lacks {key}"
        );
    }
    let full = blocks.iter().rfind(|b| b.contains("[nat64]")).unwrap();
    for key in NAT64_KEYS {
        assert!(
            full.contains(&format!("\n{key} = ")),
            "full nat64 example lacks {key}"
        );
    }
    for key in POOL4_KEYS.iter().chain(STATIC_BIB_KEYS) {
        assert!(
            full.contains(&format!(" {key} = ")),
            "full nat64 example lacks {key}"
        );
    }
    // [clat] (another mode) has its own example with every key.
    let clat = blocks
        .iter()
        .find(|b| b.contains("\n[clat]\n") && b.contains("dns_server"))
        .expect("docs/config.md should have a [clat] example with every key");
    for key in CLAT_KEYS {
        assert!(
            clat.contains(&format!("\n{key} = ")),
            "[clat] example lacks {key}"
        );
    }
    let full = blocks.iter().rfind(|b| b.contains("[dns64]")).unwrap();
    for key in crate::schema::DNS64_KEYS {
        assert!(
            full.contains(&format!("\n{key} = ")),
            "the [dns64] example lacks {key}"
        );
    }
    for (section, keys) in [
        ("[metrics]", crate::schema::METRICS_KEYS),
        ("[log]", crate::schema::LOG_KEYS),
    ] {
        let b = blocks.iter().rfind(|b| b.contains(section)).unwrap();
        for key in keys {
            assert!(
                b.contains(&format!("\n{key} = ")),
                "the {section} example lacks {key}"
            );
        }
    }
    let pref64 = blocks.iter().rfind(|b| b.contains("[pref64]")).unwrap();
    for key in crate::schema::PREF64_KEYS {
        assert!(
            pref64.contains(&format!("\n{key} = ")),
            "the [pref64] example lacks {key}"
        );
    }
}

#[test]
fn samples_siit_toml_is_the_sample() {
    let text = include_str!("../../../samples/siit.toml");
    assert_eq!(without_comments(text), SAMPLE);
    assert_eq!(ok(text).config.map.eam.entries().len(), 1);
}

/// The start-up log line names the DNS64 server and the PREF64 advertisements too.
#[test]
fn describe_names_dns64_and_pref64() {
    let l = ok(r#"
[translator]
mode = "siit"
pool6 = "2001:db8:64::/96"

[dns64]
listen = ["[2001:db8:1::53]:53", "127.0.0.1:53"]
upstream = ["192.0.2.53"]

[pref64]
interface = "eth1"
"#);
    assert_eq!(
        l.describe(),
        "mode siit, pool6 2001:db8:64::/96, 0 EAM entries, DNS64 on 2 addresses to \
         1 upstream, PREF64 RAs on eth1 every 600 s"
    );
}

/// Issue 30: `config check` reports every error of the file in one run:
/// misspelled keys in three sections, an unknown section, a bad prefix
/// length, an out-of-range MTU and a user that does not exist, each at its
/// place; a misspelled key is not "missing" too.
#[test]
fn check_reports_every_error_in_one_run() {
    let text = "[translator]\nmode = \"nat64\"\npool6 = \"64:ff9b::/97\"\n\
                [nat64]\npool_4 = [\"192.0.2.0/24\"]\nudp_timout = 300\n\
                [dns64]\nupstreams = [\"192.0.2.53\"]\nupstream = [\"192.0.2.53\"]\n\
                [tun]\nmtu = 99999\n[daemon]\nuser = \"no-such-user-sg30\"\n[bogus]\nx = 1\n";
    let errors = crate::check(text, "t.toml").expect_err("errors");
    let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    let all = lines.join("\n");
    for (at, what) in [
        ("t.toml:3:", "/97"),
        ("t.toml:5:", "pool_4"),
        ("t.toml:6:", "udp_timout"),
        ("t.toml:8:", "upstreams"),
        ("t.toml:11:", "mtu = 99999"),
        ("t.toml:13:", "no-such-user-sg30"),
        ("t.toml:14:", "bogus"),
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(at) && l.contains(what)),
            "{what} at {at}:\n{all}"
        );
    }
    assert_eq!(lines.len(), 7, "{all}");
    assert!(!all.contains("missing key"), "{all}");
}

/// Issue 30: two listeners on one port of one family are an error of the
/// check ("[::]" is IPv6 only, so it does not collide with 127.0.0.1).
#[test]
fn check_refuses_listeners_on_one_port() {
    let base = "[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/96\"\n\
                [dns64]\nupstream = [\"192.0.2.53\"]\n";
    let ok = format!("{base}listen = [\"[::]:53\", \"127.0.0.1:53\"]\n");
    assert!(crate::check(&ok, "t.toml").is_ok());
    let bad = format!("{base}listen = [\"[::]:9464\"]\n[metrics]\nlisten = \"[::1]:9464\"\n");
    let e = crate::check(&bad, "t.toml").expect_err("a collision");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].to_string().contains("[metrics] listen"), "{}", e[0]);
}
