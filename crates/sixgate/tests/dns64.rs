//! `sixgate dns64` against real servers in a network namespace: BIND's `named`
//! serves a test zone (authoritative), a second `named` is the reference DNS64
//! (`dns64 2001:db8:64::/96`) forwarding to it, and `sixgate dns64` forwards to
//! the same authoritative server. `dig` is the client. Every AAAA and PTR case is
//! asked of both DNS64s and the answers (RCODE, records, TTLs) must agree.
//!
//! Needs root and `named` (bind9, installed by scripts/setup.sh); without them the
//! tests print `skipped: …` and pass.

use std::path::Path;
use std::time::{Duration, Instant};

use sixgate_netns::{Background, Netns, Proto, ScratchDir, check_host};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_sixgate");
const NAMED: &str = "/usr/sbin/named";
const SIGNZONE: &str = "/usr/bin/dnssec-signzone";

/// The authoritative server, the BIND DNS64 and sixgate's addresses (on lo).
const AUTH: &str = "127.0.0.2";
const BIND64: &str = "127.0.0.3";
const SIX64: &str = "127.0.0.4";
const PREFIX: &str = "2001:db8:64::/96";
/// How far a TTL of ours may be from BIND's: BIND answers from its cache, aged
/// by the seconds since it first asked, which grow to a few on a loaded machine.
const TTL_SLACK: u32 = 5;
/// With [`Bed::dnssec`]: the validating resolver (BIND, `dnssec-validation yes`),
/// and a second BIND DNS64 with `break-dnssec yes`.
const VALIDATOR: &str = "127.0.0.6";
const BIND64_BREAK_DNSSEC: &str = "127.0.0.7";
/// The signed zone of [`Bed::dnssec`].
const SIGNED: &str = "dnssec.test";
const SIGNED_ZONE: &str = "$TTL 300
@         IN SOA ns hostmaster 1 3600 600 86400 60
@         IN NS  ns
ns        IN A   127.0.0.2
sec-a     IN A   198.51.100.20
sec-both  IN A   198.51.100.21
sec-both  IN AAAA 2001:db8::21
bogus     IN A   198.51.100.66
";

const ZONE: &str = "$TTL 300
@         IN SOA ns.example. hostmaster.example. 1 3600 600 86400 60
@         IN NS  ns
ns        IN A   127.0.0.2
a-only    IN A   198.51.100.7
a-only    IN A   198.51.100.17
aaaa-only IN AAAA 2001:db8::1
both      IN A   198.51.100.8
both      IN AAAA 2001:db8::2
alias     IN CNAME alias2
alias2    IN CNAME a-only
mapped    IN AAAA ::ffff:198.51.100.9
mapped    IN A   198.51.100.9
txt-only  IN TXT \"no addresses\"
short  30 IN A   198.51.100.30
";

const REVERSE_ZONE: &str = "$TTL 300
@  IN SOA ns.example. hostmaster.example. 1 3600 600 86400 60
@  IN NS ns.example.
7  IN PTR a-only.example.
";

/// `named -g -c CONF` in `ns`, stopped when dropped.
fn named(ns: &Netns, conf: &Path) -> Background {
    ns.spawn(NAMED, ["-g", "-c", &conf.display().to_string()])
        .unwrap()
}

fn skip(test: &str) -> bool {
    let why = check_host().err().or_else(|| {
        (!Path::new(NAMED).exists())
            .then(|| format!("{NAMED} missing (scripts/setup.sh installs bind9)"))
    });
    if let Some(why) = why {
        println!("skipped: {test}: {why}");
        return true;
    }
    false
}

/// One namespace with the two `named`s and `sixgate dns64` running (with
/// [`Bed::dnssec`]: four, see there).
struct Bed {
    ns: Netns,
    dir: ScratchDir,
    _auth: Background,
    _bind64: Background,
    /// The validating resolver and the second reference DNS64 of [`Bed::dnssec`].
    _more: Vec<Background>,
    /// The resolver sixgate and the reference DNS64s forward to.
    upstream: &'static str,
    sixgate: Option<Background>,
}

impl Bed {
    /// `extra` is appended to sixgate's `[dns64]` section.
    fn new(extra: &str) -> Bed {
        Bed::build(extra, false)
    }

    /// The bed with the signed zone [`SIGNED`] on the authoritative server and a
    /// validating resolver ([`VALIDATOR`]) between it and the DNS64s: sixgate,
    /// BIND's dns64 as it comes ([`BIND64`]) and with `break-dnssec yes`
    /// ([`BIND64_BREAK_DNSSEC`]), both BINDs validating with the same anchor.
    fn dnssec() -> Bed {
        Bed::build("", true)
    }

    fn build(extra: &str, dnssec: bool) -> Bed {
        let ns = Netns::new("dns64").unwrap();
        ns.ip(["link", "set", "lo", "up"]).unwrap();
        for a in 2..=9 {
            ns.ip(["addr", "add", &format!("127.0.0.{a}/32"), "dev", "lo"])
                .unwrap();
        }
        let dir = ScratchDir::new("dns64").unwrap();
        let d = dir.path().display().to_string();
        let mut zone = ZONE.to_owned();
        // 100 A records: 1.6 KB, more than the 1232 bytes of an EDNS UDP answer.
        for i in 1..=100 {
            zone.push_str(&format!("big IN A 198.18.0.{i}\n"));
        }
        dir.write("example.zone", zone).unwrap();
        dir.write("rev.zone", REVERSE_ZONE).unwrap();
        let anchor_key = dnssec.then(|| sign_zone(dir.path()));
        let dnssec = anchor_key.as_deref();
        for sub in ["auth", "ref"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        for sub in ["val", "ref2"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let signed_zone = if dnssec.is_some() {
            format!("zone \"{SIGNED}\" {{ type primary; file \"{d}/signed.zone\"; }};")
        } else {
            String::new()
        };
        let auth = dir
            .write(
                "auth.conf",
                format!(
                    "options {{ directory \"{d}/auth\"; pid-file none; listen-on port 53 {{ {AUTH}; }};
                       listen-on-v6 {{ none; }}; recursion no; dnssec-validation no; }};
                     controls {{ }};
                     zone \"example\" {{ type primary; file \"{d}/example.zone\"; }};
                     zone \"100.51.198.in-addr.arpa\" {{ type primary; file \"{d}/rev.zone\"; }};
                     {signed_zone}\n"
                ),
            )
            .unwrap();
        // Without DNSSEC the DNS64s ask the authoritative server; with it, they
        // ask the validating resolver and validate with the same trust anchor
        // (BIND's dns64 only when it validates itself: forwarding without
        // validation, it asks with CD=1 and synthesizes from Bogus data).
        let (upstream, validation, anchor) = match dnssec {
            None => (AUTH, "no", String::new()),
            Some(key) => (
                VALIDATOR,
                "yes",
                format!("trust-anchors {{ {SIGNED}. static-key 257 3 13 \"{key}\"; }};"),
            ),
        };
        let reference = |name: &str, addr: &str, dns64_extra: &str| {
            dir.write(
                &format!("{name}.conf"),
                format!(
                    "options {{ directory \"{d}/{name}\"; pid-file none; listen-on port 53 {{ {addr}; }};
                       listen-on-v6 {{ none; }}; recursion yes; allow-recursion {{ any; }};
                       forwarders {{ {upstream}; }}; forward only; dnssec-validation {validation};
                       dns64 {PREFIX} {{ clients {{ any; }}; {dns64_extra} }}; }};
                     {anchor}
                     controls {{ }};\n"
                ),
            )
            .unwrap()
        };
        let bind64 = reference("ref", BIND64, "");
        let auth = named(&ns, &auth);
        let bind64 = named(&ns, &bind64);
        let mut more = Vec::new();
        if dnssec.is_some() {
            let validator = dir
                .write(
                    "val.conf",
                    format!(
                        "options {{ directory \"{d}/val\"; pid-file none; listen-on port 53 {{ {VALIDATOR}; }};
                           listen-on-v6 {{ none; }}; recursion yes; allow-recursion {{ any; }};
                           dnssec-validation yes; }};
                         {anchor}
                         controls {{ }};
                         zone \"{SIGNED}\" {{ type static-stub; server-addresses {{ {AUTH}; }}; }};
                         zone \"example\" {{ type static-stub; server-addresses {{ {AUTH}; }}; }};\n"
                    ),
                )
                .unwrap();
            // BIND's `break-dnssec yes`: synthesis for DO=1 too (RFC 6147 §5.5
            // item 2); by default BIND does not synthesize when the client set DO
            // and the A records are signed.
            let breaking = reference("ref2", BIND64_BREAK_DNSSEC, "break-dnssec yes;");
            for conf in [validator, breaking] {
                more.push(named(&ns, &conf));
            }
        }
        let mut bed = Bed {
            ns,
            dir,
            _auth: auth,
            _bind64: bind64,
            _more: more,
            upstream,
            sixgate: None,
        };
        bed.start_sixgate(extra);
        bed.ns
            .wait_listening(Proto::Udp, 53, Duration::from_secs(10))
            .unwrap();
        // Until both nameds answer.
        let deadline = Instant::now() + Duration::from_secs(10);
        while bed.dig(BIND64, &["both.example", "A"]).status != "NOERROR"
            || bed.dig(AUTH, &["both.example", "A", "+norec"]).status != "NOERROR"
            || (dnssec.is_some()
                && bed.dig(BIND64_BREAK_DNSSEC, &["both.example", "A"]).status != "NOERROR")
        {
            assert!(Instant::now() < deadline, "named did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        bed
    }

    fn start_sixgate(&mut self, extra: &str) {
        let toml = format!(
            "[dns64]\nlisten = [\"{SIX64}\"]\nupstream = [\"{}\"]\n\
             prefixes = [\"{PREFIX}\"]\nacl = [\"127.0.0.0/8\"]\n{extra}",
            self.upstream
        );
        self.run_sixgate("sixgate.toml", toml, &[]);
    }

    /// `sixgate dns64` on the file `name` holding `toml`, once it answers
    /// `ipv4only.arpa A` (asked with the dig options `probe` too).
    fn run_sixgate(&mut self, name: &str, toml: String, probe: &[&str]) {
        let conf = self.dir.write(name, toml).unwrap();
        let bg = self
            .ns
            .spawn(BIN, ["dns64", "--config", &conf.display().to_string()])
            .unwrap();
        self.sixgate = Some(bg);
        let probe = [&["ipv4only.arpa", "A"][..], probe].concat();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.dig(SIX64, &probe).status != "NOERROR" {
            assert!(Instant::now() < deadline, "sixgate dns64 did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn dig(&self, server: &str, args: &[&str]) -> Dig {
        let mut a = vec![
            format!("@{server}"),
            "+noall".into(),
            "+answer".into(),
            "+comments".into(),
        ];
        a.extend(["+time=3".into(), "+tries=1".into()]);
        a.extend(args.iter().map(|s| s.to_string()));
        let out = self
            .ns
            .output_timeout("dig", &a, Duration::from_secs(20))
            .unwrap();
        Dig::parse(&String::from_utf8_lossy(&out.stdout))
    }

    /// Stop sixgate (SIGINT) and return its counter line.
    fn stop_sixgate(&mut self) -> String {
        let mut bg = self.sixgate.take().unwrap();
        bg.interrupt().unwrap();
        let f = bg.wait(Duration::from_secs(10)).unwrap();
        assert!(f.status.success(), "sixgate dns64 failed: {}", f.stderr);
        f.stdout
    }
}

/// Sign [`SIGNED_ZONE`] into `dir/signed.zone` with a fresh KSK and ZSK (ECDSA
/// P-256, RFC 6605) and NSEC (RFC 4035 §2.3), then make `bogus` Bogus: its A
/// record's address changes after signing, so its RRSIG no longer verifies
/// (RFC 4035 §5.3.3) though the rest of the zone does. Returns the KSK's public
/// key (base64) for the trust anchors.
fn sign_zone(dir: &Path) -> String {
    let keys = dir.join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let zone = dir.join("dnssec.test.zone");
    std::fs::write(&zone, SIGNED_ZONE).unwrap();
    let run = |program: &str, args: &[&str]| {
        let out = std::process::Command::new(program)
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let k = keys.display().to_string();
    let ksk = run(
        "dnssec-keygen",
        &["-q", "-K", &k, "-a", "ECDSAP256SHA256", "-f", "KSK", SIGNED],
    );
    run(
        "dnssec-keygen",
        &["-q", "-K", &k, "-a", "ECDSAP256SHA256", SIGNED],
    );
    let z = zone.display().to_string();
    run(
        "dnssec-signzone",
        &[
            "-S",
            "-K",
            &k,
            "-o",
            SIGNED,
            "-d",
            ".",
            "-f",
            "signed.zone",
            &z,
        ],
    );
    let signed = std::fs::read_to_string(dir.join("signed.zone")).unwrap();
    assert!(signed.contains("198.51.100.66"), "{signed}");
    std::fs::write(
        dir.join("signed.zone"),
        signed.replace("198.51.100.66", "198.51.100.99"),
    )
    .unwrap();
    // "dnssec.test. IN DNSKEY 257 3 13 <base64 in one or more words>"
    let public = std::fs::read_to_string(keys.join(format!("{}.key", ksk.trim()))).unwrap();
    let line = public.lines().find(|l| l.contains(" 257 3 13 ")).unwrap();
    line.split(" 257 3 13 ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect()
}

/// What dig printed: the status, header flags and answer records.
#[derive(Debug, PartialEq)]
struct Dig {
    status: String,
    flags: Vec<String>,
    /// `owner ttl class type rdata`, sorted (servers rotate record order).
    answers: Vec<String>,
}

/// `ours` and `bind` give the same status and answers, their TTLs within
/// TTL_SLACK of each other.
fn agree(case: &[&str], ours: &Dig, bind: &Dig) {
    assert_eq!(
        (&ours.status, ours.without_ttls()),
        (&bind.status, bind.without_ttls()),
        "{case:?}: sixgate (left) and BIND (right) disagree"
    );
    for (o, b) in ours.ttls().iter().zip(bind.ttls()) {
        assert!(
            o.abs_diff(b) <= TTL_SLACK,
            "{case:?}: TTL {o} vs BIND's {b}: {ours:?} {bind:?}"
        );
    }
}

impl Dig {
    fn parse(text: &str) -> Dig {
        let mut status = String::from("(no answer)");
        let mut flags = Vec::new();
        let mut answers = Vec::new();
        for l in text.lines() {
            if let Some(s) = l.split("status: ").nth(1) {
                status = s.split(',').next().unwrap().to_owned();
            } else if let Some(f) = l.strip_prefix(";; flags: ") {
                flags = f
                    .split(';')
                    .next()
                    .unwrap()
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
            } else if !l.starts_with(';') && !l.trim().is_empty() {
                answers.push(l.split_whitespace().collect::<Vec<_>>().join(" "));
            }
        }
        answers.sort();
        Dig {
            status,
            flags,
            answers,
        }
    }

    /// The answers with their TTL fields left out, sorted.
    fn without_ttls(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .answers
            .iter()
            .map(|a| {
                let mut f: Vec<&str> = a.split(' ').collect();
                f.remove(1);
                f.join(" ")
            })
            .collect();
        v.sort();
        v
    }

    /// The TTLs, in the order of [`Dig::without_ttls`].
    fn ttls(&self) -> Vec<u32> {
        let mut v: Vec<(String, u32)> = self
            .answers
            .iter()
            .map(|a| {
                let mut f: Vec<&str> = a.split(' ').collect();
                let ttl = f.remove(1).parse().unwrap();
                (f.join(" "), ttl)
            })
            .collect();
        v.sort();
        v.into_iter().map(|(_, t)| t).collect()
    }

    fn has_flag(&self, f: &str) -> bool {
        self.flags.iter().any(|x| x == f)
    }
}

fn counter(stdout: &str, name: &str) -> u64 {
    // The exit summary (`StatsSnapshot::summary`): "synthesized N AAAA",
    // "cache N hits", and the problems as "name N", left out when zero.
    let (pat, absent) = match name {
        "synthesized" => ("synthesized ".to_owned(), None),
        "cache_hits" => ("cache ".to_owned(), None),
        _ => (format!("{name} "), Some(0)),
    };
    let Some(rest) = stdout.split(&pat).nth(1) else {
        return absent.unwrap_or_else(|| panic!("no {name} in {stdout}"));
    };
    rest.split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("{name}: no number in {stdout}"))
}

#[test]
fn rfc6147_answers_match_bind_dns64() {
    if skip("rfc6147_answers_match_bind_dns64") {
        return;
    }
    let bed = Bed::new("");
    let cases: &[&[&str]] = &[
        // §5.1.6/§5.1.7: A only, synthesized; TTL min(A, SOA minimum 60).
        &["a-only.example", "AAAA"],
        // §5.1.1: real AAAA wins.
        &["aaaa-only.example", "AAAA"],
        &["both.example", "AAAA"],
        // §5.1.5: CNAME chain kept, target synthesized.
        &["alias.example", "AAAA"],
        // §5.1.4: ::ffff:0:0/96 excluded, so synthesized from A.
        &["mapped.example", "AAAA"],
        // NODATA for both: the negative answer.
        &["txt-only.example", "AAAA"],
        // §5.1.2: NXDOMAIN passes.
        &["nx.example", "AAAA"],
        // §5.1.7: a short A TTL stays short.
        &["short.example", "AAAA"],
        // Not AAAA: forwarded unchanged.
        &["a-only.example", "A"],
        &["txt-only.example", "TXT"],
        // §5.3.1: PTR under the prefix is a CNAME to in-addr.arpa, followed.
        &["-x", "2001:db8:64::c633:6407"],
        // Uppercase query names.
        &["A-ONLY.EXAMPLE", "AAAA"],
    ];
    for case in cases {
        let ours = bed.dig(SIX64, case);
        // BIND caches too, so its TTLs may have aged (TTL_SLACK).
        agree(case, &ours, &bed.dig(BIND64, case));
        assert!(!ours.has_flag("ad"), "{case:?}: AD on unvalidated data");
    }
    // Once more: now from the cache, with TTLs aged by at most a few seconds.
    let again = bed.dig(SIX64, &["a-only.example", "AAAA"]);
    assert_eq!(again.answers.len(), 2);
}

#[test]
fn rfc7050_ipv4only_arpa_reveals_the_prefix() {
    if skip("rfc7050_ipv4only_arpa_reveals_the_prefix") {
        return;
    }
    let bed = Bed::new("");
    let aaaa = bed.dig(SIX64, &["ipv4only.arpa", "AAAA"]);
    assert_eq!(aaaa.status, "NOERROR");
    assert_eq!(
        aaaa.answers,
        [
            "ipv4only.arpa. 3600 IN AAAA 2001:db8:64::c000:aa",
            "ipv4only.arpa. 3600 IN AAAA 2001:db8:64::c000:ab"
        ]
    );
    let a = bed.dig(SIX64, &["ipv4only.arpa", "A"]);
    assert_eq!(
        a.answers,
        [
            "ipv4only.arpa. 3600 IN A 192.0.0.170",
            "ipv4only.arpa. 3600 IN A 192.0.0.171"
        ]
    );
    assert_eq!(
        bed.dig(SIX64, &["x.ipv4only.arpa", "AAAA"]).status,
        "NXDOMAIN"
    );
    let mx = bed.dig(SIX64, &["ipv4only.arpa", "MX"]);
    assert_eq!((mx.status.as_str(), mx.answers.len()), ("NOERROR", 0));
}

#[test]
fn tcp_truncation_and_upstream_tcp_retry() {
    if skip("tcp_truncation_and_upstream_tcp_retry") {
        return;
    }
    let mut bed = Bed::new("");
    let tcp = bed.dig(SIX64, &["a-only.example", "AAAA", "+tcp"]);
    assert_eq!(tcp.answers.len(), 2, "{tcp:?}");
    // 100 A records: the authoritative server's UDP answer is truncated, so
    // sixgate asks again over TCP; 100 synthesized AAAA (3 KB) do not fit the
    // client's datagram either: TC=1 to the client.
    let udp_only = bed.dig(SIX64, &["big.example", "AAAA", "+ignore", "+bufsize=1232"]);
    assert!(udp_only.has_flag("tc"), "{udp_only:?}");
    // dig retries over TCP by itself and gets all of them.
    let full = bed.dig(SIX64, &["big.example", "AAAA"]);
    assert_eq!(full.answers.len(), 100);
    let bind = bed.dig(BIND64, &["big.example", "AAAA"]);
    assert_eq!(full.answers, bind.answers);
    // Without EDNS the limit is 512 bytes.
    let plain = bed.dig(SIX64, &["big.example", "A", "+noedns", "+ignore"]);
    assert!(plain.has_flag("tc"), "{plain:?}");
    let stats = bed.stop_sixgate();
    assert!(counter(&stats, "upstream_tcp_retries") >= 1, "{stats}");
    assert!(counter(&stats, "truncated") >= 2, "{stats}");
}

#[test]
fn rfc6147_s5_5_cd_and_do_never_synthesize() {
    if skip("rfc6147_s5_5_cd_and_do_never_synthesize") {
        return;
    }
    let bed = Bed::new("");
    let validating = bed.dig(SIX64, &["a-only.example", "AAAA", "+dnssec", "+cdflag"]);
    assert_eq!(validating.status, "NOERROR");
    assert!(
        validating.answers.iter().all(|a| !a.contains("AAAA")),
        "{validating:?}"
    );
    // DO alone, or CD alone: synthesis as usual, and never AD.
    for flags in [["+dnssec", "+nocdflag"], ["+nodnssec", "+cdflag"]] {
        let d = bed.dig(SIX64, &["a-only.example", "AAAA", flags[0], flags[1]]);
        assert_eq!(d.answers.len(), 2, "{flags:?}: {d:?}");
        assert!(!d.has_flag("ad"));
    }
}

/// RFC 6147 §5.5 with DNSSEC: a signed zone (an A-only name, a name with A and
/// AAAA, and a Bogus A-only name whose RRSIG does not verify) behind a validating
/// resolver, which is sixgate's upstream and BIND's. Each case is asked of
/// sixgate and of BIND's dns64 (validating with the same trust anchor); where
/// the two BIND settings differ, the one that follows §5.5 is the reference.
#[test]
fn rfc6147_s5_5_dnssec_signed_names_match_bind() {
    let test = "rfc6147_s5_5_dnssec_signed_names_match_bind";
    if skip(test) {
        return;
    }
    if !Path::new(SIGNZONE).exists() {
        println!("skipped: {test}: {SIGNZONE} missing (scripts/setup.sh installs bind9-utils)");
        return;
    }
    let bed = Bed::dnssec();
    // `owner ttl class type rdata`: AAAA records, not RRSIGs over them.
    let aaaa_count = |d: &Dig| {
        d.answers
            .iter()
            .filter(|a| a.split(' ').nth(3) == Some("AAAA"))
            .count()
    };
    let sec_a = "sec-a.dnssec.test";

    // §5.5 items 1 and 2 (CD=0): synthesized from the validated A set, with no
    // AD (sixgate does not validate the synthesis itself) and no RRSIG (the A
    // set's signature covers A). BIND's dns64 synthesizes for DO=1 only with
    // `break-dnssec yes`, and then sets AD as the validator it is.
    for case in [
        &[sec_a, "AAAA", "+nodnssec", "+nocdflag"][..],
        &[sec_a, "AAAA", "+dnssec", "+nocdflag"][..],
    ] {
        let ours = bed.dig(SIX64, case);
        agree(case, &ours, &bed.dig(BIND64_BREAK_DNSSEC, case));
        assert_eq!(
            ours.answers,
            [format!(
                "{sec_a}. {} IN AAAA 2001:db8:64::c633:6414",
                ours.ttls()[0]
            )],
            "{case:?}"
        );
        assert!(!ours.has_flag("ad"), "{case:?}: AD on synthesized data");
    }
    let bind_default = bed.dig(BIND64, &[sec_a, "AAAA", "+dnssec", "+nocdflag"]);
    println!("{test}: BIND's default (break-dnssec no) for DO=1: {bind_default:?}");

    // §5.5 item 3: CD=1 and DO=1, no synthesis: the resolver's NODATA with its
    // NSEC and RRSIGs, header bits (AD included) as the resolver set them.
    let case = &[sec_a, "AAAA", "+dnssec", "+cdflag", "+authority"][..];
    let ours = bed.dig(SIX64, case);
    agree(case, &ours, &bed.dig(BIND64, case));
    let resolver = bed.dig(VALIDATOR, case);
    agree(case, &ours, &resolver);
    assert_eq!(ours.flags, resolver.flags, "{case:?}");
    assert_eq!(aaaa_count(&ours), 0, "{ours:?}");
    assert!(
        ours.answers.iter().any(|a| a.contains(" NSEC ")),
        "{ours:?}"
    );
    assert!(
        ours.answers.iter().any(|a| a.contains(" RRSIG ")),
        "{ours:?}"
    );

    // Bogus A data, CD=0: the resolver says SERVFAIL; so does sixgate (not the
    // valid AAAA NODATA, and never a synthesis), as BIND does.
    for case in [
        &["bogus.dnssec.test", "AAAA", "+nodnssec", "+nocdflag"][..],
        &["bogus.dnssec.test", "AAAA", "+dnssec", "+nocdflag"][..],
    ] {
        let ours = bed.dig(SIX64, case);
        assert_eq!(ours.status, "SERVFAIL", "{case:?}: {ours:?}");
        agree(case, &ours, &bed.dig(BIND64, case));
        agree(case, &ours, &bed.dig(BIND64_BREAK_DNSSEC, case));
    }
    // CD=1 without DO (§5.5 has no item for it): the client turned checking
    // off and cannot validate, so it gets what checking-disabled resolution
    // gives, synthesized (RFC 4035 §3.2.2: CD goes upstream), as from BIND.
    let case = &["bogus.dnssec.test", "AAAA", "+nodnssec", "+cdflag"][..];
    let ours = bed.dig(SIX64, case);
    agree(case, &ours, &bed.dig(BIND64, case));
    assert_eq!(aaaa_count(&ours), 1, "{ours:?}");
    assert!(!ours.has_flag("ad"), "{ours:?}");
    // With DO too: item 3, no synthesis.
    let case = &[
        "bogus.dnssec.test",
        "AAAA",
        "+dnssec",
        "+cdflag",
        "+authority",
    ][..];
    let ours = bed.dig(SIX64, case);
    agree(case, &ours, &bed.dig(BIND64, case));
    assert_eq!(aaaa_count(&ours), 0, "{ours:?}");

    // §5.1.1: a signed name with AAAA: the AAAA set and its RRSIG pass through,
    // AD as the resolver set it (it validated them).
    for case in [
        &["sec-both.dnssec.test", "AAAA", "+dnssec", "+nocdflag"][..],
        &["sec-both.dnssec.test", "AAAA", "+dnssec", "+cdflag"][..],
    ] {
        let ours = bed.dig(SIX64, case);
        agree(case, &ours, &bed.dig(BIND64, case));
        let resolver = bed.dig(VALIDATOR, case);
        assert_eq!(ours.flags, resolver.flags, "{case:?}");
        assert!(ours.has_flag("ad"), "{case:?}: {ours:?}");
        assert_eq!(aaaa_count(&ours), 1, "{ours:?}");
        assert!(
            ours.answers.iter().any(|a| a.contains(" RRSIG AAAA ")),
            "{ours:?}"
        );
    }
}

#[test]
fn bad_input_acl_and_counters() {
    if skip("bad_input_acl_and_counters") {
        return;
    }
    let mut bed = Bed::new("");
    // A 12-byte header with QDCOUNT 1 and no question: FORMERR. Five bytes: no
    // header, dropped. Each datagram from a fresh socket; print what came back.
    let script = format!(
        "import socket\n\
         for payload in [bytes([0x12,0x34,1,0,0,1,0,0,0,0,0,0]), b'\\x01\\x02\\x03\\x04\\x05']:\n\
         \x20   s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)\n\
         \x20   s.sendto(payload, ('{SIX64}', 53))\n\
         \x20   try:\n\
         \x20       r = s.recv(512); print('reply', r[0:2].hex(), r[3] & 15)\n\
         \x20   except socket.timeout:\n\
         \x20       print('none')\n"
    );
    let out = bed
        .ns
        .run_timeout("python3", ["-c", &script], Duration::from_secs(10))
        .unwrap();
    assert_eq!(
        out.trim(),
        "reply 1234 1\nnone",
        "FORMERR (rcode 1) with our ID, then nothing"
    );
    // Clients outside the ACL are refused.
    bed.stop_sixgate();
    bed.start_sixgate_acl();
    let refused = bed.dig(SIX64, &["a-only.example", "AAAA", "-b", "127.0.0.5"]);
    assert_eq!(refused.status, "REFUSED");
    let allowed = bed.dig(SIX64, &["a-only.example", "AAAA", "-b", "127.0.0.1"]);
    assert_eq!(allowed.answers.len(), 2);
    let cached = bed.dig(SIX64, &["a-only.example", "AAAA", "-b", "127.0.0.1"]);
    assert_eq!(cached.answers.len(), 2);
    let stats = bed.stop_sixgate();
    assert_eq!(counter(&stats, "refused"), 1, "{stats}");
    assert!(counter(&stats, "cache_hits") >= 1, "{stats}");
    assert!(counter(&stats, "synthesized") >= 1, "{stats}");
}

impl Bed {
    fn start_sixgate_acl(&mut self) {
        // acl replaces the default one; the start-up probe comes from 127.0.0.1.
        let toml = format!(
            "[dns64]\nlisten = [\"{SIX64}\"]\nupstream = [\"{AUTH}\"]\n\
             prefixes = [\"{PREFIX}\"]\nacl = [\"127.0.0.1\", \"::1\"]\n"
        );
        self.run_sixgate("sixgate-acl.toml", toml, &["-b", "127.0.0.1"]);
    }
}

#[test]
fn rfc6147_s5_1_3_silent_upstream_gives_servfail_in_bounded_time() {
    if skip("rfc6147_s5_1_3_silent_upstream_gives_servfail_in_bounded_time") {
        return;
    }
    let mut bed = Bed::new("");
    bed.stop_sixgate();
    // An upstream that swallows everything: a socket that reads and never answers.
    let _silent = bed
        .ns
        .spawn(
            "python3",
            [
                "-c",
                "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
                 s.bind(('127.0.0.9', 53))\nwhile True: s.recv(4096)\n",
            ],
        )
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while bed
        .ns
        .run("ss", ["-Hlun", "src", "127.0.0.9"])
        .unwrap()
        .trim()
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the silent upstream did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let toml = format!(
        "[dns64]\nlisten = [\"{SIX64}\"]\nupstream = [\"127.0.0.9\"]\n\
         prefixes = [\"{PREFIX}\"]\nacl = [\"127.0.0.0/8\"]\n\
         upstream_timeout_ms = 200\nupstream_attempts = 2\n"
    );
    bed.run_sixgate("silent.toml", toml, &[]);
    for q in [["a-only.example", "A"], ["a-only.example", "AAAA"]] {
        let d = bed.dig(SIX64, &q);
        // dig waits 3 s: an answer at all means sixgate gave up first (the AAAA
        // path asks twice: AAAA, then A, each 2 × 200 ms).
        assert_eq!(d.status, "SERVFAIL", "{q:?}: {d:?}");
    }
    let stats = bed.stop_sixgate();
    assert_eq!(counter(&stats, "upstream_timeouts"), 6, "{stats}");
    assert_eq!(counter(&stats, "servfail"), 2, "{stats}");
}

/// The whole path, with the DNS64 inside the gateway daemon: `sixgate run` with
/// a `[dns64]` section (prefix: the translator's pool6) on the namespace bed; the
/// IPv6-only host asks it for `web.example`, which only has an A record on an
/// IPv4-only authoritative server (BIND on the IPv4 host), gets the synthesized
/// AAAA, and fetches a page from that address through the translator: SIIT here,
/// the stateful NAT64 in [`full_path_through_nat64`].
#[test]
fn full_path_v6_only_host_resolves_and_fetches_through_the_translator() {
    let test = "full_path_v6_only_host_resolves_and_fetches_through_the_translator";
    // The bed's SIIT translator (its generated [translator]), plus [dns64].
    full_path(test, "");
}

/// The same path through the stateful NAT64 (RFC 6146, `mode = "nat64"`, pool6
/// `2001:db8:64::/96`, pool4 [`sixgate_netns::addr::POOL4`]): the usual
/// deployment of DNS64 (RFC 6147 §1), where the web server sees a pool4 address.
#[test]
fn full_path_through_nat64() {
    full_path("full_path_through_nat64", sixgate_netns::NAT64_TOML);
}

/// `translator_toml` goes before `[dns64]` in the gateway's extra TOML (empty:
/// the bed's SIIT translator).
fn full_path(test: &str, translator_toml: &str) {
    if skip(test) {
        return;
    }
    use sixgate_netns::{Dataplane, Dut, Topology, TopologyOptions, addr};
    let turn = common::Turn::take(test);
    let bed = Topology::build(TopologyOptions::default()).unwrap();
    let dir = ScratchDir::new("dns64path").unwrap();
    let d = dir.path().display().to_string();
    let v4 = addr::V4_HOST;
    dir.write(
        "web.zone",
        format!(
            "$TTL 300\n@ IN SOA ns.example. h.example. 1 3600 600 86400 60\n\
             @ IN NS ns\nns IN A {v4}\nweb IN A {v4}\n"
        ),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("auth")).unwrap();
    let conf = dir
        .write(
            "auth.conf",
            format!(
                "options {{ directory \"{d}/auth\"; pid-file none; listen-on port 53 {{ {v4}; }};
                   listen-on-v6 {{ none; }}; recursion no; dnssec-validation no; }};
                 controls {{ }};
                 zone \"example\" {{ type primary; file \"{d}/web.zone\"; }};\n"
            ),
        )
        .unwrap();
    let _auth = named(&bed.v4host, &conf);
    bed.v4host
        .wait_listening(Proto::Udp, 53, Duration::from_secs(10))
        .unwrap();
    // The server logs each client's address to stderr: with NAT64 it is pool4's.
    dir.write("index.html", "served over IPv4\n").unwrap();
    let http = bed
        .v4host
        .spawn(
            "python3",
            [
                "-m",
                "http.server",
                "--bind",
                &v4.to_string(),
                "--directory",
                &d,
                "8080",
            ],
        )
        .unwrap();
    bed.v4host
        .wait_listening(Proto::Tcp, 8080, Duration::from_secs(10))
        .unwrap();
    let gw6 = addr::GATEWAY_V6;
    let translator = Dut::Sixgate {
        binary: BIN.into(),
        dataplane: Dataplane::Tun,
        extra_toml: format!(
            "{translator_toml}\n[dns64]\nlisten = [\"[{gw6}]:53\"]\nupstream = [\"{v4}\"]\n\
             prefixes = \"pool6\"\nacl = [\"2001:db8:1::/64\"]\n"
        ),
    };
    let running = bed.start(&translator).unwrap();
    let body = || {
        let dig = bed
            .v6host
            .run_timeout(
                "dig",
                [
                    &format!("@{gw6}"),
                    "web.example",
                    "AAAA",
                    "+short",
                    "+time=3",
                    "+tries=2",
                ],
                Duration::from_secs(20),
            )
            .unwrap();
        let synthesized = addr::V4_HOST_AS_V6.to_string();
        assert_eq!(dig.trim(), synthesized, "the DNS64 inside `sixgate run`");
        let page = bed
            .v6host
            .run_timeout(
                "curl",
                [
                    "-gsS",
                    "--max-time",
                    "10",
                    &format!("http://[{synthesized}]:8080/index.html"),
                ],
                Duration::from_secs(20),
            )
            .unwrap();
        assert_eq!(page, "served over IPv4\n");
    };
    turn.run(|| running.log(), body);
    common::stop_cleanly(test, "translator", running);
    if !translator_toml.is_empty() {
        // RFC 6146: the IPv4 server saw the client as a pool4 address.
        let client = common::http_client_seen(&http);
        assert!(
            client.starts_with("198.18.0."),
            "{test}: server saw {client}"
        );
        println!("{test}: the IPv4 web server saw the client as {client} (pool4)");
    }
}
