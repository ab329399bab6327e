//! The default pool4's ports ([`sixgate_dataplane::pool4_default`]) on the TUN
//! data plane: they arrive addressed to the host itself, so they are diverted
//! from its stack into the device:
//!
//! 1. the device accepts packets whose source is a local address
//!    (`accept_local = 1`, `rp_filter = 0`: the translated packets leave with
//!    source ADDR, our own address, from the device);
//! 2. table [`TABLE`] routes everything into the device;
//! 3. rule `pref 50 fwmark MARK lookup TABLE`;
//! 4. the kernel's `pref 0 lookup local` rule moves to `pref 100`, so the mark
//!    rule comes first (added at 100, then deleted at 0: local delivery never
//!    stops);
//! 5. nftables table `ip sixgate` marks, at prerouting (priority mangle), IPv4
//!    packets to ADDR for those ports (see [`nft_ruleset`]).
//!
//! Every step is recorded and undone in reverse order, on exit or when a later
//! step fails. If sixgate dies without undoing: the device goes, its route in
//! [`TABLE`] with it, a marked packet finds no route there and falls through to
//! `lookup local` at pref 100, i.e. to the host as before. Nothing blackholes.

use std::io::Write;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

use sixgate_dataplane::pool4_default::PORTS;
use sixgate_dataplane::system::ip;

/// The firewall mark of diverted packets.
pub const MARK: u32 = 0x6464;
/// The routing table that sends marked packets into the device.
pub const TABLE: u32 = 6464;
/// Priority of the `fwmark MARK lookup TABLE` rule: before `lookup local`.
pub const MARK_PREF: u32 = 50;
/// Where the kernel's `lookup local` rule (priority 0) moves to.
pub const LOCAL_PREF: u32 = 100;
/// The nftables table (family `ip`).
pub const NFT_TABLE: &str = "sixgate";

/// The nftables script that (re)creates table `ip sixgate`, marking IPv4
/// packets to `addr` that belong to the default pool4: TCP and UDP to its
/// ports, Echo Replies with its identifiers, and ICMP errors quoting a packet
/// sent from its ports (RFC 6146 §3.4: the error goes to the port's owner);
/// and the later fragments of a datagram whose first fragment it marked (a
/// dynamic set of (source, Identification), 2 s).
/// Deleting the table first makes a rerun (after `keep`) replace it atomically.
pub fn nft_ruleset(addr: Ipv4Addr) -> String {
    let (p, m, t) = (
        format!("{}-{}", PORTS.first, PORTS.last),
        format!("meta mark set {MARK:#x}"),
        NFT_TABLE,
    );
    let errors = "icmp type { destination-unreachable, time-exceeded, parameter-problem }";
    format!(
        "table ip {t}\n\
         delete table ip {t}\n\
         table ip {t} {{\n\
         \x20 # RFC 6146 §3.4: datagrams whose first fragment was diverted; their\n\
         \x20 # later fragments carry no port and follow it.\n\
         \x20 set frags {{\n\
         \x20   typeof ip saddr . ip id\n\
         \x20   flags dynamic,timeout\n\
         \x20   timeout 2s\n\
         \x20   size 65536\n\
         \x20 }}\n\
         \x20 chain divert {{\n\
         \x20   type filter hook prerouting priority mangle; policy accept;\n\
         \x20   ip daddr {addr} ip frag-off & 0x1fff != 0 ip saddr . ip id @frags {m}\n\
         \x20   ip daddr {addr} tcp dport {p} {m}\n\
         \x20   ip daddr {addr} udp dport {p} {m}\n\
         \x20   ip daddr {addr} icmp type echo-reply icmp id {p} {m}\n\
         \x20   # Errors: @th is the ICMP header (8 bytes), then the quoted IPv4 header,\n\
         \x20   # assumed 20 bytes (IHL 5: our own packets carry no options). Its protocol\n\
         \x20   # is at bit 64+72 = 136, the quoted source port at 64+160 = 224, a quoted\n\
         \x20   # Echo's identifier 32 bits further.\n\
         \x20   ip daddr {addr} {errors} @th,136,8 {{ 6, 17 }} @th,224,16 {p} {m}\n\
         \x20   ip daddr {addr} {errors} @th,136,8 1 @th,256,16 {p} {m}\n\
         \x20   # A first fragment (MF, offset 0) diverted above: remember it.\n\
         \x20   ip daddr {addr} meta mark {MARK:#x} ip frag-off & 0x3fff == 0x2000 \
         add @frags {{ ip saddr . ip id }}\n\
         \x20 }}\n\
         }}\n"
    )
}

/// One undoable step.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    /// Wrote `1`/`0` to a sysctl of the device; holds the path and old value.
    Sysctl(String, String),
    /// `default dev DEV table TABLE`.
    TableRoute,
    /// `pref MARK_PREF fwmark MARK lookup TABLE`.
    MarkRule,
    /// `pref LOCAL_PREF lookup local` added.
    LocalAdded,
    /// `pref 0 lookup local` deleted.
    LocalZeroDeleted,
    /// nftables table `ip sixgate`.
    Nft,
}

/// What [`Divert::install`] set up, to be undone on exit.
#[derive(Debug)]
pub struct Divert {
    dev: String,
    addr: Ipv4Addr,
    done: Vec<Step>,
}

impl Divert {
    /// Divert `addr`'s [`PORTS`] into `dev`. On failure, what was done is undone.
    pub fn install(dev: &str, addr: Ipv4Addr) -> Result<Divert, String> {
        let mut d = Divert {
            dev: dev.to_owned(),
            addr,
            done: Vec::new(),
        };
        match d.steps() {
            Ok(()) => Ok(d),
            Err(e) => {
                for p in d.remove() {
                    tracing::warn!("while undoing the set-up: {p}");
                }
                Err(format!("default pool4 {addr}: {e}"))
            }
        }
    }

    fn steps(&mut self) -> Result<(), String> {
        let dev = self.dev.clone();
        for (key, value) in [("accept_local", "1"), ("rp_filter", "0")] {
            let path = format!("/proc/sys/net/ipv4/conf/{dev}/{key}");
            let old = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {path}: {e}"))?
                .trim()
                .to_owned();
            if old != value {
                std::fs::write(&path, value).map_err(|e| format!("cannot set {path}: {e}"))?;
                self.done.push(Step::Sysctl(path, old));
            }
        }
        let table = TABLE.to_string();
        ip(
            false,
            &["route", "replace", "default", "dev", &dev, "table", &table],
        )
        .map_err(|e| format!("cannot route table {table} into {dev}: {e}"))?;
        self.done.push(Step::TableRoute);

        // Rules an earlier `keep` run left are taken over: recorded like new
        // ones, so this run's exit restores the kernel's own `pref 0` rule.
        let rules = ip(false, &["-4", "rule", "show"])?;
        if !has_rule(&rules, MARK_PREF, &mark_rule_text()) {
            ip(false, &rule_args("add", &mark_rule_args()))
                .map_err(|e| format!("cannot add rule {}: {e}", mark_rule_text()))?;
        }
        self.done.push(Step::MarkRule);
        if !has_rule(&rules, LOCAL_PREF, "lookup local") {
            ip(false, &rule_args("add", &local_rule_args(LOCAL_PREF)))
                .map_err(|e| format!("cannot add rule pref {LOCAL_PREF} lookup local: {e}"))?;
        }
        self.done.push(Step::LocalAdded);
        if has_rule(&rules, 0, "lookup local") {
            ip(false, &rule_args("del", &local_rule_args(0)))
                .map_err(|e| format!("cannot delete rule pref 0 lookup local: {e}"))?;
        }
        self.done.push(Step::LocalZeroDeleted);
        nft(&nft_ruleset(self.addr)).map_err(|e| format!("nftables: {e}"))?;
        self.done.push(Step::Nft);
        Ok(())
    }

    /// The address diverted.
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// Undo, in reverse order; returns what could not be undone.
    pub fn remove(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        let table = TABLE.to_string();
        for step in self.done.drain(..).rev() {
            let r = match &step {
                Step::Nft => nft(&format!("delete table ip {NFT_TABLE}\n")),
                Step::LocalZeroDeleted => ip(false, &rule_args("add", &local_rule_args(0))),
                Step::LocalAdded => ip(false, &rule_args("del", &local_rule_args(LOCAL_PREF))),
                Step::MarkRule => ip(false, &rule_args("del", &mark_rule_args())),
                Step::TableRoute => {
                    match ip(
                        false,
                        &["route", "del", "default", "dev", &self.dev, "table", &table],
                    ) {
                        // Gone with the device.
                        Err(e) if e.contains("Cannot find device") || e.contains("No such") => {
                            Ok(String::new())
                        }
                        r => r,
                    }
                }
                // The device's own settings go with it; a kept device keeps them.
                Step::Sysctl(path, old) => match std::fs::write(path, old) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    r => r.map_err(|e| e.to_string()),
                }
                .map(|()| String::new()),
            };
            if let Err(e) = r {
                problems.push(format!("cannot undo {step:?}: {e}"));
            }
        }
        problems
    }

    /// Leave everything in place (`keep`, or privileges dropped).
    pub fn forget(&mut self) {
        self.done.clear();
    }
}

/// `fwmark 0x6464 lookup 6464` as `ip rule show` prints it.
fn mark_rule_text() -> String {
    format!("fwmark {MARK:#x} lookup {TABLE}")
}

fn mark_rule_args() -> Vec<String> {
    [
        "pref".to_owned(),
        MARK_PREF.to_string(),
        "fwmark".to_owned(),
        format!("{MARK:#x}"),
        "lookup".to_owned(),
        TABLE.to_string(),
    ]
    .into()
}

fn local_rule_args(pref: u32) -> Vec<String> {
    [
        "pref".to_owned(),
        pref.to_string(),
        "lookup".into(),
        "local".into(),
    ]
    .into()
}

/// `ip -4 rule VERB ARGS…` arguments.
fn rule_args<'a>(verb: &'a str, args: &'a [String]) -> Vec<&'a str> {
    let mut out = vec!["-4", "rule", verb];
    out.extend(args.iter().map(String::as_str));
    out
}

/// Whether `ip rule show` output has a rule at `pref` ending in `what`
/// (`"0:\tfrom all lookup local"`).
pub fn has_rule(shown: &str, pref: u32, what: &str) -> bool {
    shown.lines().any(|l| {
        l.split_once(':')
            .is_some_and(|(p, rest)| p.trim() == pref.to_string() && rest.trim().ends_with(what))
    })
}

/// Run `nft -f -` with `script`.
fn nft(script: &str) -> Result<String, String> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `nft` (nftables): {e}"))?;
    // An nft that fails before it has read the script closes its end: the
    // write fails (EPIPE), but what nft said is the error worth reporting.
    let written = match child.stdin.take() {
        Some(mut stdin) => stdin.write_all(script.as_bytes()),
        None => Ok(()),
    };
    let out = child.wait_with_output().map_err(|e| format!("nft: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    written.map_err(|e| format!("cannot write to nft: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nft_marks_each_kind_of_return_packet() {
        let s = nft_ruleset(Ipv4Addr::new(192, 0, 2, 1));
        assert!(
            s.starts_with("table ip sixgate\ndelete table ip sixgate\n"),
            "{s}"
        );
        assert!(
            s.contains("type filter hook prerouting priority mangle"),
            "{s}"
        );
        // RFC 6146 §3.4: later fragments follow a diverted first fragment.
        assert!(
            s.contains("ip frag-off & 0x1fff != 0 ip saddr . ip id @frags"),
            "{s}"
        );
        assert!(s.contains("add @frags { ip saddr . ip id }"), "{s}");
        for rule in [
            "ip daddr 192.0.2.1 tcp dport 61001-65535 meta mark set 0x6464",
            "ip daddr 192.0.2.1 udp dport 61001-65535 meta mark set 0x6464",
            "icmp type echo-reply icmp id 61001-65535 meta mark set 0x6464",
            "@th,136,8 { 6, 17 } @th,224,16 61001-65535 meta mark set 0x6464",
            "@th,136,8 1 @th,256,16 61001-65535 meta mark set 0x6464",
        ] {
            assert!(s.contains(rule), "{rule} missing from\n{s}");
        }
    }

    #[test]
    fn rules_are_found_by_priority() {
        let shown = "0:\tfrom all lookup local\n50:\tfrom all fwmark 0x6464 lookup 6464\n\
                     32766:\tfrom all lookup main\n";
        assert!(has_rule(shown, 0, "lookup local"));
        assert!(!has_rule(shown, 100, "lookup local"));
        assert!(has_rule(shown, MARK_PREF, &mark_rule_text()));
        assert_eq!(
            rule_args("add", &mark_rule_args()).join(" "),
            "-4 rule add pref 50 fwmark 0x6464 lookup 6464"
        );
        assert_eq!(
            rule_args("del", &local_rule_args(0)).join(" "),
            "-4 rule del pref 0 lookup local"
        );
    }
}
