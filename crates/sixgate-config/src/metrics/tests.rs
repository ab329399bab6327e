//! `[metrics]`: keys and errors.

use crate::tests::ok;

const SIIT: &str = "[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\n";

#[test]
fn off_without_the_section_or_the_key() {
    assert_eq!(ok(SIIT).metrics, None);
    assert_eq!(ok(&format!("{SIIT}[metrics]\n")).metrics, None);
}

#[test]
fn listen_is_addr_and_port() {
    let l = ok(&format!("{SIIT}[metrics]\nlisten = \"[::1]:9464\"\n"));
    assert_eq!(l.metrics.unwrap().listen, "[::1]:9464".parse().unwrap());
    let e = crate::parse(
        &format!("{SIIT}[metrics]\nlisten = \"127.0.0.1\"\n"),
        "t.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("t.toml:5:10") && e.contains("not ADDR:PORT"),
        "{e}"
    );
    let e = crate::parse(&format!("{SIIT}[metrics]\nport = 1\n"), "t.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("port"), "{e}");
}
