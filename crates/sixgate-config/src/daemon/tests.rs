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
