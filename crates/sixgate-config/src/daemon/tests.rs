//! `[daemon]`: every key and its errors.

use crate::tests::{err_at, in_section, ok};

#[test]
fn key_workers() {
    assert_eq!(ok(&in_section("daemon", "workers = 4")).daemon.workers, 4);
    assert_eq!(ok(&in_section("daemon", "workers = 0")).daemon.workers, 0);
    assert_eq!(
        ok(&in_section("daemon", "workers = 256")).daemon.workers,
        256
    );
    err_at(
        &in_section("daemon", "workers = 257"),
        6,
        11,
        &["workers = 257", "from 0 to 256"],
    );
    err_at(
        &in_section("daemon", "workers = -1"),
        6,
        11,
        &["workers = -1", "from 0 to 256"],
    );
    err_at(
        &in_section("daemon", "workers = \"all\""),
        6,
        11,
        &["workers", "invalid type", "integer"],
    );
}

#[test]
fn key_user() {
    assert_eq!(
        ok(&in_section("daemon", "user = \"nobody\""))
            .daemon
            .user
            .as_deref(),
        Some("nobody")
    );
    for bad in ["", "no body", "-x", "a:b", "root\\n"] {
        err_at(
            &in_section("daemon", &format!("user = {bad:?}")),
            6,
            8,
            &["user = ", "not a user name", "\"nobody\""],
        );
    }
}

/// docs/fastpath.md: `fastpath` and `fastpath_interfaces`, and the rules
/// that span sections (TUN plane, interfaces named, a configuration the
/// fast path covers).
#[test]
fn key_fastpath() {
    use crate::FastPathMode;
    let l = ok(SAMPLE_PLAIN);
    assert_eq!(l.daemon.fastpath, crate::FASTPATH_DEFAULT);
    assert!(l.daemon.fastpath_interfaces.is_empty());
    let l = ok(&in_section(
        "daemon",
        "fastpath = \"tc\"\nfastpath_interfaces = [\"veth6\", \"veth4\", \"veth6\"]",
    ));
    assert_eq!(l.daemon.fastpath, FastPathMode::Tc);
    assert_eq!(l.daemon.fastpath_interfaces, ["veth6", "veth4"]);
    let l = ok(&in_section(
        "daemon",
        "fastpath = \"xdp\"\nfastpath_interfaces = [\"veth6\", \"veth4\"]",
    ));
    assert_eq!(l.daemon.fastpath, FastPathMode::Xdp);
    err_at(
        &in_section("daemon", "fastpath = \"ebpf\""),
        6,
        12,
        &[
            "fastpath = \"ebpf\"",
            "unknown fast path",
            "\"off\", \"tc\", \"xdp\" or \"auto\"",
        ],
    );
    err_at(
        &in_section("daemon", "fastpath = \"xdp\""),
        6,
        12,
        &[
            "fastpath = \"xdp\" needs the interfaces",
            "fastpath_interfaces",
        ],
    );
    err_at(
        &in_section("daemon", "fastpath = \"tc\""),
        6,
        12,
        &["needs the interfaces", "fastpath_interfaces"],
    );
    err_at(
        &in_section("daemon", "fastpath_interfaces = [\"a/b\"]"),
        6,
        24,
        &["fastpath_interfaces", "'/'"],
    );
    err_at(
        &in_section(
            "daemon",
            "fastpath = \"tc\"\nfastpath_interfaces = [\"e0\"]\ndataplane = \"xdp\"\n\
             [xdp]\nipv6_interface = \"e6\"\nipv4_interface = \"e4\"",
        ),
        6,
        12,
        &["TUN data plane", "dataplane = \"tun\""],
    );
}

/// docs/config.md: `fastpath = "auto"` is refused for nothing: without
/// interfaces, on the XDP plane or for a mode out of scope (RFC 6146 NAT64)
/// `sixgate run` leaves it off and says why, so it can become the default.
#[test]
fn key_fastpath_auto_is_never_refused() {
    use crate::FastPathMode;
    let nat64 = "[translator]\nmode = \"nat64\"\npool6 = \"64:ff9b::/96\"\n\
                 [nat64]\npool4 = [\"192.0.2.0/28\"]\n";
    for text in [
        in_section("daemon", "fastpath = \"auto\""),
        in_section(
            "daemon",
            "fastpath = \"auto\"\nfastpath_interfaces = [\"e0\"]\ndataplane = \"xdp\"\n\
             [xdp]\nipv6_interface = \"e6\"\nipv4_interface = \"e4\"",
        ),
        format!("{nat64}[daemon]\nfastpath = \"auto\"\nfastpath_interfaces = [\"e0\"]\n"),
    ] {
        assert_eq!(ok(&text).daemon.fastpath, FastPathMode::Auto, "{text}");
    }
}

#[test]
fn key_fastpath_refuses_what_it_does_not_cover() {
    // docs/fastpath.md: NAT64 with a /96 pool6 has a fast path (its
    // installed sessions); with another pool6 it has none.
    let nat64 = "[translator]\nmode = \"nat64\"\npool6 = \"64:ff9b::/96\"\n\
                 [nat64]\npool4 = [\"192.0.2.0/28\"]\n\
                 [daemon]\nfastpath = \"tc\"\nfastpath_interfaces = [\"e0\"]\n";
    assert!(ok(nat64).daemon.fastpath == crate::FastPathMode::Tc);
    let nat64_64 = nat64.replace("64:ff9b::/96", "2001:db8:64::/64");
    err_at(
        &nat64_64,
        7,
        12,
        &["cannot serve this configuration", "/96 pool6"],
    );
    let pool6_64 = "[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/64\"\n\
                    [daemon]\nfastpath = \"tc\"\nfastpath_interfaces = [\"e0\"]\n";
    err_at(
        pool6_64,
        5,
        12,
        &["cannot serve this configuration", "/96 pool6"],
    );
}

/// RFC 6877: a CLAT is SIIT with the PLAT prefix as pool6 and its EAM entry,
/// on the fast path too, static or discovered (RFC 7050) PLAT prefix alike.
#[test]
fn key_fastpath_serves_a_clat() {
    for plat in [
        "pool6 = \"64:ff9b::/96\"",
        "[clat]\nplat_prefix = \"discover\"",
    ] {
        let (translator, clat) = match plat.strip_prefix("[clat]\n") {
            Some(p) => (String::new(), format!("{p}\n")),
            None => (format!("{plat}\n"), String::new()),
        };
        let text = format!(
            "[translator]\nmode = \"clat\"\n{translator}[clat]\nipv6 = \"2001:db8:c1a7::/125\"\n\
             {clat}[daemon]\nfastpath = \"tc\"\nfastpath_interfaces = [\"e0\", \"e1\"]\n"
        );
        let l = crate::tests::ok(&text);
        assert_eq!(l.daemon.fastpath, crate::FastPathMode::Tc, "{text}");
    }
}

/// RFC 7599 §7: a MAP-T BR with a /96 DMR is on the fast path; a CE (its
/// NAPT44 keeps state) is refused, naming why.
#[test]
fn key_fastpath_serves_a_mapt_br_not_a_ce() {
    let rule = "bmr = [ { ipv6_prefix = \"2001:db8:ce::/51\", ipv4_prefix = \"192.0.2.0/24\", \
                ea_bits = 13, psid_offset = 0 } ]\n";
    let daemon = "[daemon]\nfastpath = \"tc\"\nfastpath_interfaces = [\"e0\"]\n";
    let br = format!(
        "[translator]\nmode = \"mapt-br\"\n[mapt]\ndmr = \"2001:db8:ffff::/96\"\n{rule}{daemon}"
    );
    assert_eq!(
        crate::tests::ok(&br).daemon.fastpath,
        crate::FastPathMode::Tc
    );
    let ce = format!(
        "[translator]\nmode = \"mapt-ce\"\n[mapt]\ndmr = \"2001:db8:ffff::/96\"\n\
         end_user_prefix = \"2001:db8:ce:11b::/64\"\nlan = \"10.0.0.0/24\"\n{rule}{daemon}"
    );
    err_at(&ce, 9, 12, &["cannot serve this configuration", "MAP-T CE"]);
}

const SAMPLE_PLAIN: &str = crate::tests::SAMPLE;

/// docs/restart.md: `state_file`, an absolute path or off.
#[test]
fn key_state_file() {
    assert_eq!(
        ok(SAMPLE_PLAIN).daemon.state_file.as_deref(),
        Some(std::path::Path::new(crate::DEFAULT_STATE_FILE))
    );
    assert_eq!(
        ok(&in_section("daemon", "state_file = \"/srv/gw/state\""))
            .daemon
            .state_file
            .as_deref(),
        Some(std::path::Path::new("/srv/gw/state"))
    );
    for off in ["\"\"", "\"off\""] {
        assert_eq!(
            ok(&in_section("daemon", &format!("state_file = {off}")))
                .daemon
                .state_file,
            None
        );
    }
    for bad in ["relative/path", "/var/lib/sixgate/", "/var/lib/..", "/."] {
        err_at(
            &in_section("daemon", &format!("state_file = {bad:?}")),
            6,
            14,
            &["state_file = ", "not an absolute path of a file", "\"off\""],
        );
    }
    err_at(
        &in_section("daemon", "state_file = 3"),
        6,
        14,
        &["state_file", "invalid type"],
    );
}

/// docs/config.md `fastpath_handover`: 0–600 seconds; a warning where
/// nothing would be handed over.
#[test]
fn key_fastpath_handover_and_pin_dir() {
    let l = ok(&in_section("daemon", "fastpath_handover = 10"));
    assert_eq!(l.daemon.fastpath_handover, 10);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(
        l.daemon.fastpath_pin_dir,
        std::path::Path::new("/sys/fs/bpf/sixgate")
    );
    assert_eq!(ok(&in_section("daemon", "")).daemon.fastpath_handover, 0);
    err_at(
        &in_section("daemon", "fastpath_handover = 601"),
        6,
        21,
        &["fastpath_handover = 601", "from 0 to 600"],
    );
    for (extra, why) in [
        ("fastpath = \"off\"", "fastpath = \"off\""),
        ("dataplane = \"xdp\"", "AF_XDP data plane"),
    ] {
        let l = ok(&format!(
            "{}[xdp]\nipv6_interface = \"eth6\"\nipv4_interface = \"eth4\"\n",
            in_section("daemon", &format!("{extra}\nfastpath_handover = 10"))
        ));
        assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
        let w = l.warnings[0].to_string();
        assert!(
            w.contains("nothing is handed over") && w.contains(why),
            "{w}"
        );
    }
    let l = ok(&in_section(
        "daemon",
        "fastpath_pin_dir = \"/run/sixgate-bpf\"",
    ));
    assert_eq!(
        l.daemon.fastpath_pin_dir,
        std::path::Path::new("/run/sixgate-bpf")
    );
    err_at(
        &in_section("daemon", "fastpath_pin_dir = \"bpf\""),
        6,
        20,
        &["fastpath_pin_dir", "not an absolute path"],
    );
}
