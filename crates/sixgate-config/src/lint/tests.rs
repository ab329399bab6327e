//! Likely mistakes warn, at the value, and the file still loads; and
//! [`crate::check`] reports every error of a file.

use crate::tests::ok;
use crate::{Checked, Position, check};

fn warnings(text: &str) -> Vec<String> {
    ok(text).warnings.iter().map(|w| w.to_string()).collect()
}

const NAT64: &str = "[translator]\nmode = \"nat64\"\n";

#[test]
fn rfc6052_s3_1_lab_ipv4_with_the_well_known_prefix_warns() {
    let w = warnings(&format!("{NAT64}[nat64]\npool4 = [\"192.168.1.0/30\"]\n"));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("t.toml:4:10: warning: pool4[0]: 192.168.1.0/30 is in 192.168.0.0/16")
    );
    // A network-specific prefix, wkp_strict = false, or documentation addresses
    // (stand-ins for global ones): silent.
    for text in [
        format!("{NAT64}pool6 = \"2001:db8:64::/96\"\n[nat64]\npool4 = [\"10.0.0.1\"]\n"),
        format!("{NAT64}wkp_strict = false\n[nat64]\npool4 = [\"10.0.0.1\"]\n"),
        format!("{NAT64}[nat64]\npool4 = [\"203.0.113.1\"]\n"),
    ] {
        assert!(warnings(&text).is_empty(), "{text}");
    }
    // An EAM entry's IPv4 side counts too.
    let w = warnings(
        "[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/96\"\n\
         eam = [ { ipv4 = \"198.18.0.0/24\", ipv6 = \"2001:db8:1::/120\" } ]\n",
    );
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("eam[0].ipv4: 198.18.0.0/24 is in 198.18.0.0/15"),
        "{w:?}"
    );
}

#[test]
fn rfc7757_s3_2_eam_ipv6_prefix_inside_pool6_warns() {
    let text = "[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\n\
                eam = [ { ipv4 = \"203.0.113.0/24\", ipv6 = \"2001:db8:64::/120\" } ]\n";
    let w = warnings(text);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("eam[0].ipv6: 2001:db8:64::/120 lies inside pool6"),
        "{w:?}"
    );
    // Outside pool6: silent.
    assert!(warnings(&text.replace("2001:db8:64::/120", "2001:db8:1::/120")).is_empty());
}

#[test]
fn rfc6147_dns64_prefixes_other_than_pool6_and_open_acl_warn() {
    let base = "[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\n\
                [dns64]\nupstream = [\"192.0.2.53\"]\n";
    assert!(warnings(&format!("{base}prefixes = \"pool6\"\n")).is_empty());
    let w = warnings(&format!("{base}prefixes = [\"64:ff9b::/96\"]\n"));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("t.toml:6:12: warning: prefixes: 64:ff9b::/96 is not [translator] pool6")
    );
    for acl in ["0.0.0.0/0", "::/0"] {
        let w = warnings(&format!("{base}acl = [\"::1\", \"{acl}\"]\n"));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("t.toml:6:15: warning: acl = "), "{w:?}");
        assert!(w[0].contains("open resolver"), "{w:?}");
    }
}

#[test]
fn check_reports_every_error_in_file_order() {
    let text = "[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\n\
                hairpin = \"sideways\"\nnew_tos = 999\n[tun]\nmtu = 1\n[daemon]\nworkers = -1\n";
    let errors = check(text, "t.toml").unwrap_err();
    let at: Vec<Position> = errors.iter().filter_map(|e| e.position()).collect();
    assert_eq!(
        at,
        [(4, 11), (5, 11), (7, 7), (9, 11)].map(|(line, column)| Position { line, column })
    );
    // The first error the loader reports is the first the checks meet.
    let first = crate::parse(text, "t.toml").unwrap_err();
    assert_eq!(first.to_string(), errors[0].to_string());
    // A DNS64-only file checks as `sixgate dns64` reads it.
    let d = check(
        "[dns64]\nupstream = [\"192.0.2.53\"]\nprefixes = [\"64:ff9b::/96\"]\n",
        "t.toml",
    )
    .unwrap();
    assert!(matches!(d, Checked::Dns64(_)));
    assert!(d.describe().starts_with("DNS64 only"));
}

/// RFC 6052 §3.1 still refuses 240/4 under the Well-Known Prefix with
/// `wkp_strict`, so `class_e = "translate"` there warns; under a
/// network-specific prefix, or with wkp_strict = false, it does not.
#[test]
fn rfc6052_s3_1_class_e_translate_with_the_well_known_prefix_warns() {
    let w = warnings(&format!(
        "{NAT64}class_e = \"translate\"\n[nat64]\npool4 = [\"203.0.113.1\"]\n"
    ));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with(
            "t.toml:3:11: warning: class_e = \"translate\": 240.0.0.0/4 is not global"
        ),
        "{w:?}"
    );
    for text in [
        format!(
            "{NAT64}pool6 = \"2001:db8:64::/96\"\nclass_e = \"translate\"\n\
             [nat64]\npool4 = [\"203.0.113.1\"]\n"
        ),
        format!(
            "{NAT64}wkp_strict = false\nclass_e = \"translate\"\n\
             [nat64]\npool4 = [\"203.0.113.1\"]\n"
        ),
    ] {
        assert!(warnings(&text).is_empty(), "{text}");
    }
}
