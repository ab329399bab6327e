//! `[tun]`: every key and its errors.

use crate::tests::{err_at, in_section, ok};

#[test]
fn key_tun_name() {
    assert_eq!(
        ok(&in_section("tun", "name = \"sg-x.1\"")).tun.name,
        "sg-x.1"
    );
    assert_eq!(
        ok(&in_section("tun", "name = \"abcdefghijklmno\""))
            .tun
            .name,
        "abcdefghijklmno"
    );
    for (bad, why) in [
        ("", "empty name"),
        ("abcdefghijklmnop", "16 bytes long"),
        ("..", "reserved name"),
        ("a/b", "contains"),
        ("a b", "contains"),
        ("eth0:1", "contains"),
        ("tün", "contains"),
    ] {
        err_at(
            &in_section("tun", &format!("name = {bad:?}")),
            6,
            8,
            &["name = ", why, "an interface name of 1 to 15"],
        );
    }
}

#[test]
fn key_tun_mtu() {
    assert_eq!(ok(&in_section("tun", "mtu = 1280")).tun.mtu, 1280);
    assert_eq!(ok(&in_section("tun", "mtu = 65535")).tun.mtu, 65535);
    err_at(
        &in_section("tun", "mtu = 1279"),
        6,
        7,
        &["mtu = 1279", "from 1280 to 65535"],
    );
    err_at(
        &in_section("tun", "mtu = 65536"),
        6,
        7,
        &["mtu = 65536", "from 1280 to 65535"],
    );
}

#[test]
fn key_tun_booleans() {
    let t = ok(&in_section(
        "tun",
        "offload = false\nmanage_routes = false\nkeep = true",
    ))
    .tun;
    assert!(!t.offload && !t.manage_routes && t.keep);
    err_at(
        &in_section("tun", "keep = \"yes\""),
        6,
        8,
        &["keep", "invalid type", "boolean"],
    );
}
