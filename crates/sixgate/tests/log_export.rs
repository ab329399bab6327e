//! End to end, the NAT64 event log to real collectors (issue 29,
//! docs/logging.md): `sixgate run` in `mode = "nat64"` with `[log_export]`
//! sending to collectors from Debian's packages, started by the test in the
//! IPv4 router's namespace (the collectors sit across the network from the
//! gateway, as they would at an ISP):
//!
//! - `nfcapd` receives IPFIX (RFC 7011, RFC 8158 `natEvent` 6/7/16/17) and a
//!   second one NetFlow v9 (NEL numbering 4/5/14/15); `nfdump -o raw` lists the
//!   records;
//! - `rsyslogd` receives RFC 5424 over UDP and over TCP (RFC 6587 octet
//!   counting) and writes each to its own file;
//! - `tshark` decodes the captured IPFIX without "malformed";
//! - the JSON-lines file.
//!
//! Real clients make the sessions (curl through the NAT64, UDP flows from
//! python); every session `show sessions` lists is in every collector with the
//! same inside and outside address and port, logged within 1 s of the
//! traffic, the UDP sessions' ends too (a 2 s UDP timeout), and the port block
//! once allocated and, at stop, released.
//!
//! It needs root, `ip netns` and the tools `scripts/setup.sh` installs (else
//! it prints `skipped:` and passes).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sixgate_netns::{
    Background, Dut, NAT64_TOML, Netns, Proto, ScratchDir, TopologyOptions, addr, check_host,
};

mod common;
use common::collectors::{Logged, SYSLOG_PORT, rsyslogd, syslog};
use common::{HTTP_PORT, http_server, run_bed};

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");

const IPFIX_PORT: u16 = 4739;
const V9_PORT: u16 = 2055;

/// UDP flows from the v6 host: source ports.
const UDP_PORTS: std::ops::Range<u16> = 41000..41010;

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn tools_or_skip(test: &str) -> bool {
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return false;
    }
    for tool in ["nfcapd", "nfdump", "rsyslogd", "tshark"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            println!("skipped: {test}: {tool} not installed (scripts/setup.sh installs it)");
            return false;
        }
    }
    true
}

fn nfcapd(ns: &Netns, dir: &Path, port: u16) -> Background {
    std::fs::create_dir_all(dir).unwrap();
    let bg = ns
        .spawn(
            "nfcapd",
            [
                "-w",
                dir.to_str().unwrap(),
                "-p",
                &port.to_string(),
                "-b",
                &addr::ROUTER_GW_SIDE.to_string(),
                "-t",
                "60",
            ],
        )
        .unwrap_or_else(|e| panic!("nfcapd: {e}"));
    ns.wait_listening(Proto::Udp, port, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("nfcapd: {e}"));
    bg
}

/// `nfdump -o raw` of every file nfcapd wrote in `dir`: the NAT records.
/// `v9`: the draft numbering of `natEvent`.
fn nfdump(dir: &Path, v9: bool) -> Vec<Logged> {
    let out = Command::new("nfdump")
        .args(["-R", dir.to_str().unwrap(), "-o", "raw"])
        .output()
        .expect("nfdump");
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !text.contains("Flow Record") {
        println!(
            "nfdump -R {}: {}\n{text}\n{}",
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let ls = Command::new("ls").arg("-la").arg(dir).output().unwrap();
        println!("{}", String::from_utf8_lossy(&ls.stdout));
    }
    let (create, delete) = if v9 { (4, 5) } else { (6, 7) };
    let mut all = Vec::new();
    for rec in text.split("Flow Record:").skip(1) {
        let field = |name: &str| -> Option<String> {
            rec.lines()
                .find(|l| l.trim_start().starts_with(name))
                .and_then(|l| l.split_once('='))
                .map(|(_, v)| v.trim().to_owned())
        };
        let Some(ev) = field("nat event") else {
            continue;
        };
        let ev: u8 = ev.split(':').next().unwrap().trim().parse().unwrap();
        if ev != create && ev != delete {
            continue; // port blocks
        }
        let word = |s: Option<String>| s.unwrap().split_whitespace().next().unwrap().to_owned();
        all.push(Logged {
            created: ev == create,
            proto: field("proto ")
                .unwrap()
                .split_whitespace()
                .last()
                .unwrap()
                .to_lowercase(),
            v6: word(field("src addr")),
            port6: word(field("src port")).parse().unwrap(),
            v4: word(field("src xlt ip")),
            port4: word(field("src xlt port")).parse().unwrap(),
            unix_ms: word(field("Event time")).parse().unwrap(),
        });
    }
    all
}

/// The session records of the JSON-lines file.
fn json_lines(path: &Path) -> (Vec<Logged>, Vec<serde_json::Value>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let sessions = all
        .iter()
        .filter(|v| v["event"] == "SADD" || v["event"] == "SDEL")
        .map(|v| Logged {
            created: v["event"] == "SADD",
            proto: v["proto"].as_str().unwrap().into(),
            v6: v["v6"].as_str().unwrap().into(),
            port6: v["port6"].as_u64().unwrap() as u16,
            v4: v["v4"].as_str().unwrap().into(),
            port4: v["port4"].as_u64().unwrap() as u16,
            unix_ms: sixgate_natlog::time::parse_rfc3339(v["time"].as_str().unwrap()).unwrap(),
        })
        .collect();
    (sessions, all)
}

type Key = (String, String, u16, String, u16);

/// `sixgate nat64 whois ARGS [--socket SOCK]`: its output (it must succeed).
fn whois(args: &[&str], sock: Option<&Path>) -> String {
    let mut c = Command::new(BIN);
    c.args(["nat64", "whois"]).args(args);
    if let Some(s) = sock {
        c.arg("--socket").arg(s);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "sixgate nat64 whois {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn key(l: &Logged) -> Key {
    (
        l.proto.clone(),
        l.v6.clone(),
        l.port6,
        l.v4.clone(),
        l.port4,
    )
}

#[test]
fn nat64_events_reach_nfcapd_rsyslog_and_tshark() {
    let test = "nat64_events_reach_nfcapd_rsyslog_and_tshark";
    if !tools_or_skip(test) {
        return;
    }
    let dir = ScratchDir::new("natlog").unwrap();
    let json = dir.path().join("events.json");
    let c = addr::ROUTER_GW_SIDE;
    let translator = Dut::Sixgate {
        binary: BIN.into(),
        dataplane: sixgate_netns::Dataplane::Tun,
        // NAT64_TOML ends inside [nat64].
        extra_toml: format!(
            "{NAT64_TOML}event_log = \"all\"\nport_block_size = 512\nudp_timeout = 2\n\
             [daemon]\nworkers = 1\n\
             [log_export]\nfile = \"{}\"\n\
             [[log_export.collector]]\nprotocol = \"ipfix\"\naddress = \"{c}:{IPFIX_PORT}\"\n\
             template_refresh = 1\n\
             [[log_export.collector]]\nprotocol = \"netflow9\"\naddress = \"{c}:{V9_PORT}\"\n\
             template_refresh = 1\n\
             [[log_export.collector]]\nprotocol = \"syslog\"\naddress = \"{c}:{SYSLOG_PORT}\"\n\
             [[log_export.collector]]\nprotocol = \"syslog\"\ntransport = \"tcp\"\n\
             address = \"{c}:{SYSLOG_PORT}\"\n",
            json.display()
        ),
    };
    let mut collectors = Vec::new();
    let mut live: Vec<serde_json::Value> = Vec::new();
    let (mut t_first, mut t_last) = (0, 0);
    let stopped = run_bed(test, TopologyOptions::default(), &translator, |bed, tr| {
        // The collectors first, so the first templates reach them.
        collectors.push(nfcapd(&bed.router, &dir.path().join("ipfix"), IPFIX_PORT));
        collectors.push(nfcapd(&bed.router, &dir.path().join("v9"), V9_PORT));
        collectors.push(rsyslogd(&bed.router, &dir));
        let pcap = dir.path().join("ipfix.pcap");
        collectors.push(
            bed.router
                .spawn(
                    "tshark",
                    [
                        "-q",
                        "-i",
                        "eth0",
                        "-f",
                        &format!("udp port {IPFIX_PORT}"),
                        "-w",
                        pcap.to_str().unwrap(),
                    ],
                )
                .unwrap(),
        );
        std::thread::sleep(Duration::from_millis(1500));
        t_first = unix_ms();
        // A TCP session: curl through the NAT64 from a known port.
        let www = ScratchDir::new("www").unwrap();
        www.write("f", b"hello").unwrap();
        let _server = http_server(&bed.v4host, addr::V4_HOST.into(), &www);
        let url = format!("http://[{}]:{HTTP_PORT}/f", addr::V4_HOST_AS_V6);
        let got = bed
            .v6host
            .run_timeout(
                "curl",
                ["-sf", "--local-port", "42000", &url],
                Duration::from_secs(20),
            )
            .unwrap_or_else(|e| panic!("curl: {e}"));
        assert_eq!(got, "hello");
        // UDP flows.
        let py = format!(
            "import socket\nfor p in range({}, {}):\n    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\n    s.bind(('{}', p))\n    s.sendto(b'x', ('{}', 9))\n",
            UDP_PORTS.start,
            UDP_PORTS.end,
            addr::V6_HOST,
            addr::V4_HOST_AS_V6
        );
        bed.v6host
            .run_timeout("python3", ["-c", &py], Duration::from_secs(10))
            .unwrap();
        t_last = unix_ms();
        let sock = tr.api_socket().unwrap();
        let out = Command::new(BIN)
            .args(["show", "sessions", "--json", "--socket"])
            .arg(sock)
            .output()
            .unwrap();
        live = serde_json::from_slice(&out.stdout).unwrap();
        // whois from the live tables: the curl's session.
        let tcp = live
            .iter()
            .find(|r| r["proto"] == "tcp" && r["port6"] == 42000)
            .expect("the curl's session");
        let who = whois(
            &[&format!(
                "{}:{}",
                tcp["ipv4"].as_str().unwrap(),
                tcp["port4"]
            )],
            Some(sock),
        );
        assert!(
            who.contains("tcp session  subscriber 2001:db8:1::5 port 42000"),
            "{who}"
        );
        // The UDP sessions end after 2 s; wait for their records.
        std::thread::sleep(Duration::from_secs(4));
        let stats = Command::new(BIN)
            .args(["show", "stats", "--socket"])
            .arg(sock)
            .output()
            .unwrap();
        println!("{}", String::from_utf8_lossy(&stats.stdout));
        // Stop the collectors while their namespace lives: nfcapd writes its
        // file, tshark its capture, rsyslogd flushes.
        for mut c in collectors.drain(..) {
            let _ = c.interrupt();
            if let Err(e) = c.wait(Duration::from_secs(10)) {
                println!("{e}");
            }
        }
    });
    println!("{}", stopped.stdout.trim());
    let live: BTreeSet<Key> = live
        .iter()
        .map(|r| {
            (
                r["proto"].as_str().unwrap().into(),
                r["ipv6"].as_str().unwrap().into(),
                r["port6"].as_u64().unwrap() as u16,
                r["ipv4"].as_str().unwrap().into(),
                r["port4"].as_u64().unwrap() as u16,
            )
        })
        .collect();
    assert!(
        live.iter().any(|k| k.0 == "tcp" && k.2 == 42000)
            && UDP_PORTS
                .clone()
                .all(|p| live.iter().any(|k| k.0 == "udp" && k.2 == p)),
        "show sessions lacks the test's sessions: {live:?}"
    );
    let (json_sessions, json_all) = json_lines(&json);
    for (name, logged) in [
        ("IPFIX (nfcapd)", nfdump(&dir.path().join("ipfix"), false)),
        ("NetFlow v9 (nfcapd)", nfdump(&dir.path().join("v9"), true)),
        ("syslog UDP (rsyslog)", syslog(&dir.path().join("udp.log"))),
        ("syslog TCP (rsyslog)", syslog(&dir.path().join("tcp.log"))),
        ("JSON lines", json_sessions.clone()),
    ] {
        let created: BTreeSet<Key> = logged.iter().filter(|l| l.created).map(key).collect();
        let deleted: BTreeSet<Key> = logged.iter().filter(|l| !l.created).map(key).collect();
        println!(
            "{name}: {} created, {} deleted",
            created.len(),
            deleted.len()
        );
        for k in &live {
            assert!(
                created.contains(k),
                "{name}: no create for {k:?}: {logged:#?}"
            );
            if k.0 == "udp" {
                assert!(deleted.contains(k), "{name}: no delete for {k:?}");
            }
        }
        assert_eq!(
            logged.iter().filter(|l| l.created).count(),
            created.len(),
            "{name}: a session created twice"
        );
        for l in logged
            .iter()
            .filter(|l| l.created && live.contains(&key(l)))
        {
            assert!(
                l.unix_ms + 1000 >= t_first && l.unix_ms <= t_last + 1000,
                "{name}: {l:?} logged at {} outside {t_first}..{t_last} (+-1 s)",
                l.unix_ms
            );
        }
    }
    // whois from the logs, for an expired UDP session: every format gives
    // the same subscriber and span; a time after its end and a port never
    // used give "no record".
    let udp = live.iter().find(|k| k.0 == "udp").unwrap().clone();
    let target = format!("{}:{}", udp.3, udp.4);
    let at = sixgate_natlog::time::rfc3339_ms_string(t_last);
    let mut spans = Vec::new();
    for log in ["events.json", "udp.log", "tcp.log", "ipfix.pcap"] {
        let f = dir.path().join(log);
        let who = whois(&[&target, "--at", &at, "--log", f.to_str().unwrap()], None);
        let line = who
            .lines()
            .find(|l| l.contains("udp session"))
            .unwrap_or_else(|| panic!("whois --log {log}: {who}"));
        assert!(
            line.contains(&format!("subscriber {} port {}", udp.1, udp.2))
                && !line.contains("no end logged"),
            "whois --log {log}: {line}"
        );
        spans.push(line.split("  ").next().unwrap().to_owned());
        let later = sixgate_natlog::time::rfc3339_ms_string(t_last + 60_000);
        let gone = whois(
            &[&target, "--at", &later, "--log", f.to_str().unwrap()],
            None,
        );
        // The port block still holds the port where its release (at stop,
        // after the collectors stopped) is not in the file.
        assert!(!gone.contains("session"), "{log}: {gone}");
        if log == "events.json" {
            assert!(gone.starts_with("no record of"), "{log}: {gone}");
        }
    }
    println!("whois {target} at {at}: {spans:?}");
    let unused = format!("{}:1", udp.3);
    let none = whois(&[&unused, "--log", json.to_str().unwrap()], None);
    assert!(none.starts_with("no record of"), "{none}");
    // RFC 7422: the block allocated, and released at stop.
    let blocks: Vec<&str> = json_all
        .iter()
        .filter_map(|v| v["event"].as_str().filter(|e| e.starts_with('B')))
        .collect();
    assert!(
        blocks.contains(&"BADD") && blocks.contains(&"BDEL"),
        "blocks: {blocks:?}"
    );
    // tshark decodes the export without complaint.
    let pcap = dir.path().join("ipfix.pcap");
    let decoded = Command::new("tshark")
        .args(["-r", pcap.to_str().unwrap(), "-V", "-d"])
        .arg(format!("udp.port=={IPFIX_PORT},cflow"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&decoded.stdout);
    assert!(
        text.contains("natEvent") || text.contains("NAT Event"),
        "tshark decoded no NAT event:\n{}",
        &text[..text.len().min(4000)]
    );
    assert!(
        !text.to_lowercase().contains("malformed"),
        "tshark: malformed:\n{text}"
    );
}

/// RFC 7422 deterministic NAT needs no log: with `[nat64] deterministic` and
/// the event log off, every session of the subscriber (two workers, so the
/// steering program's copy of the formula is used) leaves from its block,
/// and `whois` names the subscriber from the running configuration (through
/// the daemon) and from the file alone, for a subscriber that never sent
/// anything too.
#[test]
fn deterministic_nat_answers_whois_without_a_log() {
    let test = "deterministic_nat_answers_whois_without_a_log";
    if let Err(why) = check_host() {
        println!("skipped: {test}: {why}");
        return;
    }
    // 198.18.0.0/24 × 61001-65535: 8 blocks of 512 from 61440 an address.
    // V6_HOST, 2001:db8:1::5, is subscriber 0 of 2001:db8:1::/56 in /64s:
    // 198.18.0.0, ports 61440-61951.
    let translator = Dut::Sixgate {
        binary: BIN.into(),
        dataplane: sixgate_netns::Dataplane::Tun,
        extra_toml: format!(
            "{NAT64_TOML}subscriber_prefix_len = 64\nport_block_size = 512\n\
             deterministic = \"2001:db8:1::/56\"\n[daemon]\nworkers = 2\n"
        ),
    };
    run_bed(test, TopologyOptions::default(), &translator, |bed, tr| {
        let www = ScratchDir::new("www").unwrap();
        www.write("f", b"hello").unwrap();
        let _server = http_server(&bed.v4host, addr::V4_HOST.into(), &www);
        let url = format!("http://[{}]:{HTTP_PORT}/f", addr::V4_HOST_AS_V6);
        for port in ["42000", "42001"] {
            let got = bed
                .v6host
                .run_timeout(
                    "curl",
                    ["-sf", "--local-port", port, &url],
                    Duration::from_secs(20),
                )
                .unwrap_or_else(|e| panic!("curl: {e}"));
            assert_eq!(got, "hello");
        }
        let py = format!(
            "import socket\nfor p in range({}, {}):\n    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\n    s.bind(('{}', p))\n    s.sendto(b'x', ('{}', 9))\n",
            UDP_PORTS.start,
            UDP_PORTS.end,
            addr::V6_HOST,
            addr::V4_HOST_AS_V6
        );
        bed.v6host
            .run_timeout("python3", ["-c", &py], Duration::from_secs(10))
            .unwrap();
        let sock = tr.api_socket().unwrap();
        let out = Command::new(BIN)
            .args(["show", "sessions", "--json", "--socket"])
            .arg(sock)
            .output()
            .unwrap();
        let live: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        assert!(live.len() >= 12, "{live:?}");
        for s in &live {
            let port = s["port4"].as_u64().unwrap();
            assert_eq!(s["ipv4"], "198.18.0.0", "{s}");
            assert!((61440..=61951).contains(&port), "outside the block: {s}");
        }
        // `show subscribers`: the one subscriber, its TCP and UDP blocks.
        let out = Command::new(BIN)
            .args(["show", "subscribers", "--json", "--socket"])
            .arg(sock)
            .output()
            .unwrap();
        let subs: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(subs.len(), 1, "{subs:?}");
        assert_eq!(subs[0]["subscriber"], "2001:db8:1::/64");
        assert_eq!(subs[0]["sessions"].as_u64(), Some(live.len() as u64));
        let blocks = subs[0]["blocks"].as_array().unwrap();
        let mut protos: Vec<&str> = blocks
            .iter()
            .map(|b| b["proto"].as_str().unwrap())
            .collect();
        protos.sort_unstable();
        assert_eq!(protos, ["tcp", "udp"], "{blocks:?}");
        for b in blocks {
            assert_eq!(
                (&b["ipv4"], &b["first"], &b["last"]),
                (&"198.18.0.0".into(), &61440.into(), &61951.into())
            );
        }
        // Through the daemon: the formula of the running configuration, and
        // the live session.
        let tcp = live
            .iter()
            .find(|r| r["proto"] == "tcp" && r["port6"] == 42000)
            .expect("the curl's session");
        let who = whois(&[&format!("198.18.0.0:{}", tcp["port4"])], Some(sock));
        assert!(
            who.contains(
                "deterministic  subscriber 2001:db8:1::/64  ports 61440-61951 of 198.18.0.0"
            ),
            "{who}"
        );
        assert!(
            who.contains("tcp session  subscriber 2001:db8:1::5 port 42000"),
            "{who}"
        );
        // From the file, no daemon asked and no log: subscriber 5 never sent.
        let cfg = tr.config_path().to_str().unwrap();
        let none = "/dev/null";
        let who = whois(&["198.18.0.5:61500", "--config", cfg, "--log", none], None);
        assert!(
            who.contains(
                "deterministic  subscriber 2001:db8:1:5::/64  ports 61440-61951 of 198.18.0.5"
            ),
            "{who}"
        );
        // Below the first block: nobody's.
        let who = whois(&["198.18.0.0:61001", "--config", cfg, "--log", none], None);
        assert!(who.contains("deterministic  no subscriber"), "{who}");
    });
}
