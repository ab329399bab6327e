//! `mode = "mapt-br"` / `"mapt-ce"` and `[mapt]`: derived numbers, and the errors
//! with their positions.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::Mode;
use crate::tests::{err_at, ok};

/// A BR of Lencse & Nagy's example domain. Line 5 is free for one more key.
const BR: &str = r#"[translator]
mode = "mapt-br"
[mapt]
dmr = "2001:db8:ffff::/96"
bmr = [ { ipv6_prefix = "2001:db8:ce::/51", ipv4_prefix = "192.0.2.0/24", ea_bits = 13, psid_offset = 0 } ]
"#;

const CE: &str = r#"[translator]
mode = "mapt-ce"
[mapt]
dmr = "2001:db8:ffff::/96"
bmr = [ { ipv6_prefix = "2001:db8:ce::/51", ipv4_prefix = "192.0.2.0/24", ea_bits = 13, psid_offset = 0 } ]
end_user_prefix = "2001:db8:ce:11b::/64"
lan = "10.0.0.0/24"
"#;

#[test]
fn rfc7599_br_loads_with_the_dmr_as_pool6() {
    let l = ok(BR);
    assert_eq!(l.mode, Mode::MaptBr);
    let m = l.config.mapt.as_ref().unwrap();
    assert_eq!(m.fmrs.len(), 1);
    assert!(m.ce().is_none());
    assert_eq!(l.config.map.pool6, Some(m.dmr));
    assert_eq!(
        l.config.icmp_source_v6,
        "2001:db8:ffff::c000:8".parse::<Ipv6Addr>().unwrap()
    );
    assert!(
        l.describe()
            .contains("MAP-T DMR 2001:db8:ffff::/96, 1 mapping rule")
    );
}

/// RFC 7597 §5.2: the End-user prefix's EA bits give the CE's IPv4 address and PSID.
#[test]
fn rfc7597_s5_2_ce_numbers_from_the_end_user_prefix() {
    let l = ok(CE);
    let ce = l.config.mapt.as_ref().unwrap().ce().unwrap().clone();
    assert_eq!(ce.ipv4, Ipv4Addr::new(192, 0, 2, 8));
    assert_eq!(ce.psid, 27);
    assert_eq!(
        ce.map_address,
        "2001:db8:ce:11b:0:c000:208:1b".parse::<Ipv6Addr>().unwrap()
    );
    assert!(
        l.describe()
            .contains("CE 192.0.2.8 PSID 27 (ports 55296-57343)"),
        "{}",
        l.describe()
    );
}

#[test]
fn mapt_errors_name_the_key() {
    // No [mapt].
    err_at(
        "[translator]\nmode = \"mapt-br\"\n",
        2,
        8,
        &["no [mapt] section"],
    );
    // [mapt] in another mode.
    let text = "[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/96\"\n[mapt]\ndmr = \"2001:db8:ffff::/96\"\n";
    err_at(text, 4, 1, &["[mapt] is only read in modes"]);
    // pool6 beside the DMR.
    let text = BR.replace(
        "mode = \"mapt-br\"\n",
        "mode = \"mapt-br\"\npool6 = \"64:ff9b::/96\"\n",
    );
    err_at(&text, 3, 9, &["pool6: in MAP-T", "Default Mapping Rule"]);
    // No DMR.
    let text = BR.replace("dmr = \"2001:db8:ffff::/96\"\n", "");
    err_at(&text, 3, 1, &["[mapt] has no `dmr`"]);
    // RFC 7597 §5.2: EA bits shorter than the IPv4 suffix.
    let text = BR.replace("ea_bits = 13", "ea_bits = 7");
    err_at(
        &text,
        5,
        9,
        &["bmr[0]: ea_bits must be at least the IPv4 suffix length"],
    );
    // r + EA > 64.
    let text = BR.replace("ea_bits = 13", "ea_bits = 14");
    err_at(
        &text,
        5,
        9,
        &["bmr[0]: ipv6_prefix length + ea_bits must be at most 64"],
    );
    // §5.1: a + k > 16.
    let text = BR.replace("psid_offset = 0", "psid_offset = 12");
    err_at(&text, 5, 9, &["psid_offset + PSID length"]);
    // Overlapping rules.
    let text = format!(
        "{BR}fmr = [ {{ ipv6_prefix = \"2001:db8:cf::/51\", ipv4_prefix = \"192.0.2.128/25\", ea_bits = 12 }} ]\n"
    );
    err_at(&text, 6, 9, &["fmr[0]", "overlaps bmr[0]"]);
    // A CE key on a BR.
    let text = format!("{BR}lan = \"10.0.0.0/24\"\n");
    err_at(&text, 6, 7, &["lan: a CE's setting"]);
    // A CE's End-user prefix under no BMR.
    let text = CE.replace("2001:db8:ce:11b::/64", "2001:db8:cf:11b::/64");
    err_at(&text, 6, 19, &["end_user_prefix", "under no `bmr`"]);
    // Too short for the BMR's EA bits.
    let text = CE.replace("2001:db8:ce:11b::/64", "2001:db8:ce::/56");
    err_at(&text, 6, 19, &["end_user_prefix", "/64 or longer"]);
    // No LAN.
    let text = CE.replace("lan = \"10.0.0.0/24\"\n", "");
    err_at(&text, 3, 1, &["no `lan`"]);
}

#[test]
fn napt44_timeouts_warn_below_the_rfc() {
    let l = ok(&format!(
        "{CE}napt_udp_timeout = 30\nnapt_max_sessions = 100\n"
    ));
    let ce = l.config.mapt.as_ref().unwrap().ce().unwrap().clone();
    assert_eq!(ce.napt.timeouts.udp, 30);
    assert_eq!(ce.napt.max_sessions, 100);
    assert!(l.warnings[0].message().contains("RFC 4787 REQ-5"));
}
