//! The real binary, as a user runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// A valid config with no pool6: EAM only.
const EAM_ONLY: &str = r#"[translator]
mode = "siit"
eam = [ { ipv4 = "198.18.0.0/24", ipv6 = "2001:db8:1::/120" } ]
icmp_source_v6 = "2001:db8::8"
"#;

/// A fresh directory for one test, removed when the test ends.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("sixgate-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

fn sixgate(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(ROOT)
        .output()
        .expect("run sixgate")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `sixgate config check FILE`, which must succeed: its (stdout, stderr).
fn check_ok(file: &str) -> (String, String) {
    let o = sixgate(&["config", "check", file]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    (text(&o.stdout), text(&o.stderr))
}

/// `sixgate translate --config CONFIG --input INPUT --output OUTPUT EXTRA…`.
fn translate(config: &str, input: &str, output: &str, extra: &[&str]) -> Output {
    let args = [
        "translate",
        "--config",
        config,
        "--input",
        input,
        "--output",
        output,
    ];
    sixgate(&[&args[..], extra].concat())
}

fn write(dir: &Path, name: &str, content: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p.to_str().unwrap().to_owned()
}

#[test]
fn help_lists_the_subcommands() {
    let o = sixgate(&["--help"]);
    assert!(o.status.success());
    let out = text(&o.stdout);
    assert!(out.contains("translate") && out.contains("config"), "{out}");
    assert!(out.contains("demo"), "{out}");
    assert!(out.contains("bench"), "{out}");
}

/// `sixgate bench` lists its measurements, and a bad frame size is a clear
/// error naming RFC 8219's range (before anything needs root).
#[test]
fn bench_help_and_bad_input() {
    let o = sixgate(&["bench", "--help"]);
    assert!(o.status.success());
    let out = text(&o.stdout);
    for sub in [
        "bed",
        "self-test",
        "throughput",
        "frame-loss",
        "latency",
        "stateful",
        "plot",
    ] {
        assert!(out.contains(sub), "{sub}: {out}");
    }
    let o = sixgate(&["bench", "plot", "/nonexistent.json", "--out", "/tmp/x.svg"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("/nonexistent.json"));
}

/// Until the daemon lands, `sixgate demo` says so, points to the TAYGA demo and
/// fails. (With `run` present, the demo itself is tested in e2e.rs.)
#[test]
fn demo_without_run_says_so() {
    if sixgate(&["run", "--help"]).status.success() {
        println!("skipped: demo_without_run_says_so: this sixgate has `run`");
        return;
    }
    let o = sixgate(&["demo"]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("no `run` command yet"), "{err}");
    assert!(err.contains("sixgate demo --translator tayga"), "{err}");
    assert!(text(&o.stdout).is_empty());
}

#[test]
fn config_check_ok() {
    let d = scratch("check-ok");
    let cfg = write(&d, "eam.toml", EAM_ONLY.as_bytes());
    let (out, _) = check_ok(&cfg);
    assert_eq!(
        out,
        format!("{cfg}: ok (mode siit, pool6 none, 1 EAM entry)\n")
    );
}

#[test]
fn config_check_sample() {
    let (out, _) = check_ok("samples/siit.toml");
    assert_eq!(
        out,
        "samples/siit.toml: ok (mode siit, pool6 2001:db8:64::/96, 1 EAM entry)\n"
    );
}

#[test]
fn config_check_clat_sample() {
    let (out, _) = check_ok("samples/clat.toml");
    assert_eq!(
        out,
        "samples/clat.toml: ok (mode clat, pool6 2001:db8:64::/96, 1 EAM entry, \
         CLAT 192.0.0.0/29 <-> 2001:db8:c1a7::/125, \
         PLAT prefix discovered (RFC 7050) via /etc/resolv.conf)\n"
    );
}

#[test]
fn config_check_nat64_sample() {
    let (out, err) = check_ok("samples/nat64.toml");
    assert_eq!(
        out,
        "samples/nat64.toml: ok (mode nat64, pool6 2001:db8:64::/96, pool4 1 entry \
         (1 address), 1 static BIB entry)\n"
    );
    assert!(err.is_empty(), "{err}");
}

/// The MAP-T samples (RFC 7599): the CE's numbers come from its End-user prefix.
#[test]
fn config_check_mapt_samples() {
    for (file, want) in [
        (
            "samples/mapt-br.toml",
            "ok (mode mapt-br, MAP-T DMR 2001:db8:ffff::/96, 1 mapping rule)",
        ),
        (
            "samples/mapt-ce.toml",
            "ok (mode mapt-ce, MAP-T DMR 2001:db8:ffff::/96, 1 mapping rule, CE 192.0.2.8 \
             PSID 27 (ports 55296-57343) at 2001:db8:ce:11b:0:c000:208:1b, LAN 10.0.0.0/24)",
        ),
    ] {
        let (out, err) = check_ok(file);
        assert_eq!(out, format!("{file}: {want}\n"));
        assert!(err.is_empty(), "{err}");
    }
}

/// RFC 6146 §3.5.1: a UDP timeout under 2 minutes loads (tests need short
/// timers) but the check warns, citing the section, and still succeeds.
#[test]
fn config_check_warns_below_rfc_6146_minimums() {
    let d = scratch("check-warn");
    let cfg = write(
        &d,
        "short.toml",
        b"[translator]\nmode = \"nat64\"\n[nat64]\npool4 = [\"203.0.113.1\"]\nudp_timeout = 3\n",
    );
    let (out, err) = check_ok(&cfg);
    assert!(out.starts_with(&format!("{cfg}: ok (mode nat64")));
    assert!(
        err.starts_with(&format!(
            "{cfg}:5:15: warning: udp_timeout = 3: below 120 s; RFC 6146 §3.5.1"
        )),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    // `sixgate translate` says the same before it starts.
    let out = d.join("out.pcap");
    let o = translate(&cfg, "samples/nat64-demo.pcap", out.to_str().unwrap(), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stderr), err);
}

/// Issue 4: no pool4 key checks fine (the default pool4), but `sixgate
/// translate` has no gateway address to take and refuses, naming the key.
#[test]
fn default_pool4_checks_and_translate_refuses_it() {
    let d = scratch("default-pool4");
    let cfg = write(
        &d,
        "nopool4.toml",
        b"[translator]\nmode = \"nat64\"\n[nat64]\n",
    );
    let (out, _) = check_ok(&cfg);
    assert!(
        out.contains("pool4 default (the gateway's own IPv4 address, ports 61001-65535)"),
        "{out}"
    );
    let out = d.join("out.pcap");
    let o = translate(&cfg, "samples/nat64-demo.pcap", out.to_str().unwrap(), &[]);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("[nat64] has no pool4 key") && err.contains("pool4 = [\""),
        "{err}"
    );
}

/// RFC 7050 at `sixgate run`: nobody answers (port unreachable) and there is no
/// fallback, so it stops before setting anything up, saying why and what to do.
#[test]
fn run_clat_discovery_failure_without_fallback_is_a_clear_error() {
    let d = scratch("clat-nofallback");
    let cfg = write(
        &d,
        "clat.toml",
        b"[translator]\nmode = \"clat\"\n[clat]\nipv6 = \"2001:db8:c1a7::/125\"\n\
          plat_prefix = \"discover\"\ndns_server = \"127.0.0.1:1\"\n[tun]\nname = \"sg-nofb0\"\n",
    );
    let o = sixgate(&["run", "--config", &cfg]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("sixgate run: CLAT: RFC 7050 discovery of the PLAT prefix failed: ipv4only.arpa AAAA via 127.0.0.1:1"),
        "{err}"
    );
    assert!(err.contains("no fallback: set [translator] pool6"), "{err}");
    assert!(!err.contains("TUN device up"), "{err}");
}

/// Offline, a CLAT uses pool6; without one (discovery only) it says so.
#[test]
fn translate_clat_needs_pool6_offline() {
    let d = scratch("clat-offline");
    let cfg = write(
        &d,
        "clat.toml",
        b"[translator]\nmode = \"clat\"\n[clat]\nipv6 = \"2001:db8:c1a7::/125\"\n\
          plat_prefix = \"discover\"\n",
    );
    let out = d.join("out.pcap");
    let o = translate(&cfg, "samples/siit-demo.pcap", &out.to_string_lossy(), &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.starts_with(&format!("{cfg}: the CLAT discovers its PLAT prefix")),
        "{err}"
    );
}

/// Every error of a file at once, each with FILE:LINE:COLUMN, in file order,
/// across keys and sections; then how many.
#[test]
fn config_check_reports_every_error() {
    let d = scratch("check-all");
    let cfg = write(
        &d,
        "bad.toml",
        format!(
            "{EAM_ONLY}new_tos = 300\nlowest_ipv6_mtu = 5\n[daemon]\nworkers = 999\n\
             [tun]\nmtu = 10\n"
        )
        .as_bytes(),
    );
    let o = sixgate(&["config", "check", &cfg]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert_eq!(
        text(&o.stderr),
        format!(
            "{cfg}:5:11: new_tos = 300: out of range; expected an integer from 0 to 255\n\
             {cfg}:6:19: lowest_ipv6_mtu = 5: out of range; expected an integer from 1280 to 65535\n\
             {cfg}:8:11: workers = 999: out of range; expected an integer from 0 to 256\n\
             {cfg}:10:7: mtu = 10: out of range; expected an integer from 1280 to 65535\n\
             {cfg}: 4 errors\n"
        )
    );
}

/// An unknown key does not hide the other errors (issue 27): a misspelt key,
/// a prefix length RFC 6052 does not allow and an MTU out of range in one
/// file are all reported by one `config check`.
#[test]
fn config_check_reports_an_unknown_key_with_the_other_errors() {
    let d = scratch("check-unknown");
    let cfg = write(
        &d,
        "bad.toml",
        b"[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/33\"\nbogus_key = 1\n\
          icmp_source_v6 = \"2001:db8::8\"\n[tun]\nmtu = 10\n",
    );
    let o = sixgate(&["config", "check", &cfg]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    for want in [
        "translator: unknown key `bogus_key`",
        "64:ff9b::/33",
        "mtu = 10: out of range",
        "3 errors",
    ] {
        assert!(err.contains(want), "no {want:?} in:\n{err}");
    }
}

/// A DNS64-only file (what `sixgate dns64 --config` runs) checks too.
#[test]
fn config_check_accepts_a_dns64_only_file() {
    let d = scratch("check-dns64");
    let cfg = write(
        &d,
        "dns64.toml",
        b"[dns64]\nupstream = [\"192.0.2.53\"]\nprefixes = [\"64:ff9b::/96\"]\n",
    );
    let (out, _) = check_ok(&cfg);
    assert_eq!(
        out,
        format!("{cfg}: ok (DNS64 only, on 2 addresses to 1 upstream)\n")
    );
    // Its errors are reported as for `sixgate dns64`.
    let bad = write(&d, "bad.toml", b"[dns64]\nupstream = [\"x\"]\n");
    let o = sixgate(&["config", "check", &bad]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).starts_with(&format!("{bad}:2:")),
        "{}",
        text(&o.stderr)
    );
}

/// Valid values that are likely mistakes warn (FILE:LINE:COLUMN: warning) and
/// the check still succeeds: DNS64 prefixes other than pool6 inside `sixgate
/// run`, an open resolver ACL, an EAM IPv6 prefix inside pool6, lab IPv4
/// addresses with the Well-Known Prefix (RFC 6052 §3.1).
#[test]
fn config_check_warns_about_likely_mistakes() {
    let d = scratch("check-lint");
    let nat64 = write(
        &d,
        "nat64.toml",
        b"[translator]\nmode = \"nat64\"\n[nat64]\npool4 = [\"10.0.0.1\"]\n\
          [dns64]\nupstream = [\"192.0.2.53\"]\nprefixes = [\"2001:db8:99::/96\"]\n\
          acl = [\"::/0\"]\n",
    );
    let (_, err) = check_ok(&nat64);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines[0].starts_with(&format!(
            "{nat64}:4:10: warning: pool4[0]: 10.0.0.1/32 is in 10.0.0.0/8, not global"
        )),
        "{err}"
    );
    assert!(
        lines[0].contains("RFC 6052 §3.1") && lines[0].contains("network-specific prefix"),
        "{err}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "{nat64}:8:8: warning: acl = \"::/0\": every client may query"
        )),
        "{err}"
    );
    assert!(lines[2].starts_with(&format!("{nat64}:7:12: warning: prefixes: 2001:db8:99::/96 is not [translator] pool6 64:ff9b::/96")), "{err}");

    let siit = write(
        &d,
        "siit.toml",
        b"[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\n\
          eam = [ { ipv4 = \"203.0.113.0/24\", ipv6 = \"2001:db8:64::cb00:7100/120\" } ]\n",
    );
    let (_, err) = check_ok(&siit);
    assert!(
        err.starts_with(&format!("{siit}:4:9: warning: eam[0].ipv6: 2001:db8:64::cb00:7100/120 lies inside pool6 2001:db8:64::/96")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn config_check_reports_file_line_column() {
    let d = scratch("check-bad");
    let cfg = write(
        &d,
        "bad.toml",
        format!("{EAM_ONLY}new_tos = 300\n").as_bytes(),
    );
    let o = sixgate(&["config", "check", &cfg]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert_eq!(
        text(&o.stderr),
        format!("{cfg}:5:11: new_tos = 300: out of range; expected an integer from 0 to 255\n")
    );

    let o = sixgate(&["config", "check", "no/such/file.toml"]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.starts_with("no/such/file.toml: cannot read config file"),
        "{err}"
    );
}

#[test]
fn translate_prints_a_summary_and_writes_raw_pcap() {
    let d = scratch("translate");
    let cfg = write(&d, "eam.toml", EAM_ONLY.as_bytes());
    let out = d.join("out.pcap");
    let o = translate(&cfg, "samples/siit-demo.pcap", out.to_str().unwrap(), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = text(&o.stdout);
    for row in [
        "input packets",
        "translated 6->4",
        "translated 4->6",
        "ICMP errors generated",
        "dropped",
    ] {
        assert!(s.contains(row), "no {row:?} in\n{s}");
    }
    assert!(
        s.lines()
            .any(|l| l.trim_start().starts_with("input packets") && l.trim_end().ends_with(" 13")),
        "{s}"
    );
    let pcap = std::fs::read(&out).unwrap();
    assert_eq!(
        &pcap[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian µs pcap"
    );
    assert_eq!(
        u32::from_le_bytes(pcap[20..24].try_into().unwrap()),
        101,
        "LINKTYPE_RAW"
    );
}

#[test]
fn translate_json_and_verbose() {
    let d = scratch("json");
    let cfg = write(&d, "eam.toml", EAM_ONLY.as_bytes());
    let out = d.join("out.pcap");
    let o = translate(
        &cfg,
        "samples/siit-demo.pcap",
        out.to_str().unwrap(),
        &["--json", "--verbose"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    assert_eq!(v["input_packets"], 13);
    for key in [
        "skipped_non_ip",
        "skipped_truncated",
        "translated_6to4",
        "translated_4to6",
        "hairpinned",
        "fragments_out",
        "icmp_generated",
        "packets_written",
        "dropped_total",
        "dropped",
    ] {
        assert!(v.get(key).is_some(), "JSON lacks {key}: {v}");
    }
    // Without pool6 only the EAM side maps: every 6->4 destination and every 4->6
    // source is untranslatable. The four 4->6 ones that are not ICMP get
    // "administratively prohibited" (RFC 7915 §4.4).
    assert_eq!(
        v,
        serde_json::json!({
            "input_packets": 13,
            "skipped_non_ip": 0,
            "skipped_truncated": 0,
            "skipped_oversize": 0,
            "translated_6to4": 0,
            "translated_4to6": 0,
            "hairpinned": 0,
            "fragments_out": 0,
            "icmp_generated": 10,
            "timer_packets": 0,
            "packets_written": 10,
            "dropped_total": 13,
            "dropped": {
                "ipv4_header_checksum": 1,
                "source_untranslatable": 6,
                "destination_untranslatable": 4,
                "hop_limit_exceeded": 1,
                "routing_header": 1
            }
        })
    );
    // With --json the trace goes to stderr: one line per input packet.
    let trace = text(&o.stderr);
    let lines: Vec<&str> = trace.lines().collect();
    assert_eq!(lines.len(), 13, "{trace}");
    assert!(
        lines[0]
            .trim_start()
            .starts_with("1 IPv6 2001:db8:1::10 -> 2001:db8:64::c633:6407 "),
        "{trace}"
    );
    assert!(lines[12].trim_start().starts_with("13 IPv6 "), "{trace}");
}

#[test]
fn translate_the_sample_with_the_sample_config() {
    let d = scratch("sample");
    let out = d.join("out.pcap");
    let o = translate(
        "samples/siit.toml",
        "samples/siit-demo.pcap",
        out.to_str().unwrap(),
        &["--json"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["input_packets"], 13);
    assert_eq!(
        v,
        serde_json::json!({
            "input_packets": 13,
            "skipped_non_ip": 0,
            "skipped_truncated": 0,
            "skipped_oversize": 0,
            "translated_6to4": 3,
            "translated_4to6": 6,
            "hairpinned": 0,
            "fragments_out": 2,
            "icmp_generated": 3,
            "timer_packets": 0,
            "packets_written": 13,
            "dropped_total": 4,
            "dropped": {
                "ipv4_header_checksum": 1,
                "destination_untranslatable": 1,
                "hop_limit_exceeded": 1,
                "routing_header": 1
            }
        })
    );
    assert_eq!(pcap_records(&std::fs::read(&out).unwrap()), 13);

    // The human summary says the same.
    let o = translate(
        "samples/siit.toml",
        "samples/siit-demo.pcap",
        out.to_str().unwrap(),
        &[],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = text(&o.stdout);
    let rows: Vec<(String, u64)> = s
        .lines()
        .skip(1)
        .map(|l| {
            let (name, n) = l.trim().rsplit_once(' ').unwrap();
            (name.trim_end().to_owned(), n.parse().unwrap())
        })
        .collect();
    let want: Vec<(String, u64)> = [
        ("input packets", 13),
        ("skipped, not IP", 0),
        ("skipped, truncated", 0),
        ("translated 6->4", 3),
        ("translated 4->6", 6),
        ("hairpinned", 0),
        ("fragments out", 2),
        ("ICMP errors generated", 3),
        ("packets written", 13),
        ("dropped", 4),
        ("ipv4_header_checksum", 1),
        ("destination_untranslatable", 1),
        ("hop_limit_exceeded", 1),
        ("routing_header", 1),
    ]
    .iter()
    .map(|&(n, v)| (n.to_owned(), v))
    .collect();
    assert_eq!(rows, want, "{s}");
    assert_eq!(pcap_records(&std::fs::read(&out).unwrap()), 13);
}

/// The NAT64 demo: flows out and back, a visit through the static BIB entry, the
/// held SYN answered by a timer 6 s later (RFC 6146 §3.5.2.2), and a DNS answer
/// that comes after its session's 300 s (§3.5.1).
#[test]
fn translate_the_nat64_sample_with_the_nat64_config() {
    let d = scratch("nat64-sample");
    let out = d.join("out.pcap");
    let run = |extra: &[&str]| {
        translate(
            "samples/nat64.toml",
            "samples/nat64-demo.pcap",
            out.to_str().unwrap(),
            extra,
        )
    };
    let o = run(&["--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "input_packets": 11,
            "skipped_non_ip": 0,
            "skipped_truncated": 0,
            "skipped_oversize": 0,
            "translated_6to4": 4,
            "translated_4to6": 4,
            "hairpinned": 0,
            "fragments_out": 0,
            "icmp_generated": 3,
            "timer_packets": 1,
            "packets_written": 11,
            "dropped_total": 3,
            "dropped": { "no_bib_entry": 2, "syn_held": 1 },
            "nat64": { "bib_entries": 3, "sessions": 2, "held_syns": 0 }
        })
    );
    assert_eq!(pcap_records(&std::fs::read(&out).unwrap()), 11);

    let o = run(&["--verbose"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = text(&o.stdout);
    assert!(
        s.contains(
            "    10 IPv4 198.51.100.7 -> 203.0.113.1 dropped: syn_held\n \
                    timer IPv4 192.0.0.8 -> 198.51.100.7 sent by a timer (syn_held)\n"
        ),
        "{s}"
    );
    assert!(s.contains("\n  sent by timers             1\n"), "{s}");
    assert!(s.contains("\n  NAT64 sessions at end      2\n"), "{s}");
}

/// The number of records in a little-endian pcap file.
fn pcap_records(pcap: &[u8]) -> usize {
    let mut at = 24;
    let mut n = 0;
    while at < pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + incl;
        n += 1;
    }
    assert_eq!(at, pcap.len(), "pcap ends mid-record");
    n
}

#[test]
fn translate_errors_name_the_file() {
    let d = scratch("errors");
    let cfg = write(&d, "eam.toml", EAM_ONLY.as_bytes());
    let out = d.join("out.pcap");
    let out = out.to_str().unwrap();

    let o = translate(&cfg, "missing.pcap", out, &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.starts_with("missing.pcap: cannot open input capture: "),
        "{err}"
    );

    let o = translate("missing.toml", "samples/siit-demo.pcap", out, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).starts_with("missing.toml: cannot read config file"));

    // A PPP capture: the link type is named, and no output is left behind.
    let mut ppp = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    ppp.extend_from_slice(&65535u32.to_le_bytes());
    ppp.extend_from_slice(&9u32.to_le_bytes());
    let ppp = write(&d, "ppp.pcap", &ppp);
    let o = translate(&cfg, &ppp, out, &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.starts_with(&format!("{ppp}: unsupported link type PPP (9)")),
        "{err}"
    );
    assert!(!Path::new(out).exists());

    // Refuses to overwrite its input.
    let o = translate(&cfg, &ppp, &ppp, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("--output names the input capture"));
    assert!(Path::new(&ppp).exists());
}

#[test]
fn usage_errors_exit_2() {
    let o = sixgate(&["translate", "--config", "x.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--input"));
}

/// Issue 20: a capture cut off mid-record (a killed tcpdump) keeps every
/// complete packet: the output is written, the summary printed, and a warning
/// names the record and byte offset where the capture ends (exit 0). A record
/// whose captured length no capture has is damage: its own message, exit 1,
/// output and summary still there.
#[test]
fn translate_a_capture_cut_short() {
    let d = scratch("cut-short");
    let whole = std::fs::read(Path::new(ROOT).join("samples/siit-demo.pcap")).unwrap();
    let records = pcap_records(&whole);
    let cut = write(&d, "cut.pcap", &whole[..whole.len() - 3]);
    let out = d.join("out.pcap");
    let run = |input: &str| translate("samples/siit.toml", input, out.to_str().unwrap(), &[]);
    let o = run(&cut);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    let input_row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("input packets"));
    assert!(
        input_row.is_some_and(|l| l.ends_with(&format!(" {}", records - 1))),
        "{stdout}"
    );
    let err = text(&o.stderr);
    assert!(
        err.starts_with(&format!(
            "{cut}: warning: the capture was cut short in the middle of record {records} (at byte offset "
        )) && err.contains(&format!("it ends at byte {}", whole.len() - 3)),
        "{err}"
    );
    assert!(std::fs::metadata(&out).unwrap().len() > 24);

    // Record 2's captured length made absurd (the sample is little-endian).
    let mut bad = whole.clone();
    let first = 24 + 16 + u32::from_le_bytes(whole[32..36].try_into().unwrap()) as usize;
    bad[first + 8..first + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let bad = write(&d, "bad.pcap", &bad);
    let o = run(&bad);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stdout).contains("input packets"),
        "{}",
        text(&o.stdout)
    );
    let err = text(&o.stderr);
    assert!(
        err.starts_with(&format!(
            "{bad}: record 2 (at byte offset {first}) claims a captured length of 4294967295 bytes"
        )),
        "{err}"
    );
    assert!(out.exists());
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Issue 20: every control command finds the daemon without `--socket`:
/// `--config FILE` (its `[daemon] socket`), then `SIXGATE_SOCKET`, then the
/// default; `--socket` beats them all. No daemon runs here, so the refusal
/// names the socket each one tried.
#[test]
fn control_commands_find_the_socket_from_config_or_environment() {
    let d = scratch("find-socket");
    let from_file = d.join("from-file.sock");
    let cfg = write(
        &d,
        "gw.toml",
        format!(
            "[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/96\"\n[daemon]\nsocket = \"{}\"\n",
            from_file.display()
        )
        .as_bytes(),
    );
    let commands: [&[&str]; 10] = [
        &["show", "status"],
        &["sync", "drain"],
        &["show", "bib"],
        &["eam", "add", "198.18.1.0/24", "2001:db8:2::/120"],
        &["pool4", "add", "192.0.2.8/30"],
        &["bib", "remove", "tcp", "192.0.2.1", "80"],
        &["session", "flush"],
        &["reload"],
        &["config", "save"],
        &["show", "config"],
    ];
    let tried = |args: &[&str], env: Option<&str>| {
        let mut c = Command::new(BIN);
        c.args(args).current_dir(ROOT).env_remove("SIXGATE_SOCKET");
        if let Some(e) = env {
            c.env("SIXGATE_SOCKET", e);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = text(&o.stderr);
        let at = err
            .strip_prefix("cannot reach the sixgate daemon at ")
            .unwrap_or_else(|| panic!("{args:?}: {err}"));
        at[..at.find(": ").unwrap()].to_owned()
    };
    let env = d.join("from-env.sock");
    let env = env.to_str().unwrap();
    let flag = d.join("from-flag.sock");
    let flag = flag.to_str().unwrap();
    for c in commands {
        let with_cfg = |extra: &[&str]| -> Vec<String> {
            let mut v: Vec<String> = c.iter().map(|s| (*s).to_owned()).collect();
            v.extend(["--config".to_owned(), cfg.clone()]);
            v.extend(extra.iter().map(|s| (*s).to_owned()));
            v
        };
        assert_eq!(
            tried(&strs(&with_cfg(&[])), Some(env)),
            from_file.to_str().unwrap(),
            "{c:?}"
        );
        assert_eq!(tried(c, Some(env)), env, "{c:?}");
        assert_eq!(
            tried(&strs(&with_cfg(&["--socket", flag])), Some(env)),
            flag,
            "{c:?}"
        );
    }
    assert_eq!(
        tried(&["show", "status"], None),
        "/run/sixgate/sixgate.sock"
    );
    // A file that does not load is named, not guessed around.
    let o = sixgate(&["show", "status", "--config", "missing.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).starts_with("missing.toml: "),
        "{}",
        text(&o.stderr)
    );
}

/// Issue 20: one spelling for one thing. `session flush` says `--protocol` as
/// `show sessions` does; `--proto` still works but is not advertised.
#[test]
fn protocol_option_is_spelt_one_way() {
    for cmd in [
        &["show", "sessions", "--help"][..],
        &["session", "flush", "--help"],
    ] {
        let help = text(&sixgate(cmd).stdout);
        assert!(help.contains("--protocol <PROTO>"), "{cmd:?}: {help}");
        assert!(!help.contains("--proto "), "{cmd:?}: {help}");
    }
    let o = sixgate(&[
        "session",
        "flush",
        "--proto",
        "udp",
        "--socket",
        "/nonexistent.sock",
    ]);
    assert!(
        text(&o.stderr).starts_with("cannot reach the sixgate daemon at /nonexistent.sock"),
        "{}",
        text(&o.stderr)
    );
}

/// The NAT64 demo needs a stateful translator: with TAYGA it says so before
/// building anything.
#[test]
fn demo_nat64_with_tayga_is_refused() {
    let o = sixgate(&["demo", "--mode", "nat64", "--translator", "tayga"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("--mode nat64 needs a stateful translator"),
        "{}",
        text(&o.stderr)
    );
}
