//! What the namespace tests of gateway groups share (`ha.rs`, `ha_three.rs`;
//! docs/ha.md): the CLI against a node, its sessions as comparable rows,
//! waiting for a condition, and the UDP echo pair.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use sixgate_netns::RunningDut;

pub const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

/// The shared key of the test groups' `[sync]`.
pub const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

/// Wait up to `secs` for `cond`; `what` names it in the failure.
pub fn wait_for(secs: u64, what: impl Fn() -> String, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "timed out after {secs} s waiting for {}",
            what()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `sixgate ARGS --socket` of a running node; its standard output.
pub fn cli(dut: &RunningDut, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .arg("--socket")
        .arg(dut.api_socket().expect("an API socket"))
        .output()
        .expect("run sixgate");
    assert!(
        out.status.success(),
        "sixgate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The sessions a node lists, without what may differ between nodes (the
/// worker, the lifetime, a TCP state caught mid-change).
pub fn sessions(dut: &RunningDut) -> BTreeSet<String> {
    let rows: serde_json::Value =
        serde_json::from_str(&cli(dut, &["show", "sessions", "--json"])).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} [{}]:{} {}:{} -> {}:{}",
                r["proto"], r["ipv6"], r["port6"], r["ipv4"], r["port4"], r["remote4"], r["rport"]
            )
        })
        .collect()
}

/// A UDP exchange from the client (arguments: server, port, and optionally
/// the source address): one datagram, one echo back; resent every 300 ms up
/// to 20 times from the same socket (the first reply may reach another node
/// before the session's record, docs/ha.md). Prints how many tries it took.
pub const UDP_CLIENT: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
if len(sys.argv) > 3:
    s.bind((sys.argv[3], 0))
s.settimeout(0.3)
for i in range(20):
    s.sendto(b"sixgate ha", (sys.argv[1], int(sys.argv[2])))
    try:
        d, a = s.recvfrom(2000)
        if d == b"sixgate ha":
            print("echo after", i + 1, "tries")
            sys.exit(0)
    except socket.timeout:
        pass
sys.exit(1)
"#;

/// The server's side of [`UDP_CLIENT`] (arguments: address, port).
pub const UDP_ECHO: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    d, a = s.recvfrom(2000)
    s.sendto(d, a)
"#;
