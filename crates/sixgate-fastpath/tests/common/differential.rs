//! The differential test of the fast path (docs/fastpath.md), for either
//! hook: included by tests/differential.rs (the TC program) and
//! tests/differential_xdp.rs (the XDP one), each naming its `crate::HOOK`.
//! Every packet runs through the loaded program with `BPF_PROG_TEST_RUN` and
//! through the Rust core under the same configuration. The program must translate exactly
//! the packets `sixgate_core::fastpath::is_fast_path_candidate` accepts, each
//! byte-identical to the core's translation (IPv4 Identification included:
//! the program's per-CPU counters start as the core's and the core's twin
//! sees only the packets the program took), and pass every other packet up
//! unchanged with the hook's pass verdict (TC_ACT_OK, XDP_PASS). Vectors name the RFC 7915 rule they hold;
//! proptest adds generated and corrupted packets. The counters' invariant
//! (received = translated + passed + aborted, aborted = 0) is checked after
//! each run.

use std::cell::RefCell;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use aya::programs::TestRunOptions;
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestRunner};
use sixgate_core::addr::{Eam, Rfc6052Prefix};
use sixgate_core::config::ClassE;
use sixgate_core::fastpath::is_fast_path_candidate;
use sixgate_core::{Config, DropReason, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_fastpath::{FastPath, Hook};
use sixgate_testkit::{Ip4, Ip6};

/// What the hook returns for a packet it passes up, or hands to the kernel
/// translated (no ingress interface here: the forwarding FIB lookup fails).
pub(crate) const fn pass_verdict(hook: Hook) -> u32 {
    match hook {
        Hook::Tc => 0,  // TC_ACT_OK
        Hook::Xdp => 2, // XDP_PASS
    }
}

const PASS: u32 = pass_verdict(crate::HOOK);

fn pool6() -> Rfc6052Prefix {
    Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap()
}

fn in_pool6(v4: [u8; 4]) -> Ipv6Addr {
    pool6().embed(Ipv4Addr::from(v4))
}

/// An IPv6 host (198.51.100.5 through pool6) and an IPv4 host.
pub(crate) const H4: [u8; 4] = [192, 0, 2, 33];
pub(crate) const V6_AS_V4: [u8; 4] = [198, 51, 100, 5];

pub(crate) fn h6() -> Ipv6Addr {
    in_pool6(V6_AS_V4)
}
pub(crate) fn h4_as_v6() -> Ipv6Addr {
    in_pool6(H4)
}

/// The program and the core side by side under one configuration.
pub(crate) struct Bed {
    pub(crate) cfg: Arc<Config>,
    pub(crate) fp: FastPath,
    /// Sees only the packets the program translated: its Identification
    /// counters stay in step with the program's on this CPU.
    twin: Translator,
    scratch: Scratch,
    runs: u64,
    translated: u64,
}

pub(crate) enum Outcome {
    Translated,
    Passed,
}

impl Bed {
    pub(crate) fn new(cfg: Config) -> Option<Bed> {
        let fp = match FastPath::load_on(crate::HOOK, &cfg, 0) {
            Ok(fp) => fp,
            // Skipped only where it cannot load for want of clang or
            // privileges; as root a refusal is a failure.
            // SAFETY: geteuid has no preconditions.
            Err(e) if e.contains("not built") || unsafe { libc::geteuid() } != 0 => {
                println!("skipped: the fast path does not load here: {e}");
                return None;
            }
            Err(e) => panic!("{e}"),
        };
        let cfg = Arc::new(cfg);
        Some(Bed {
            twin: Translator::new(cfg.clone()),
            cfg,
            fp,
            scratch: Scratch::new(),
            runs: 0,
            translated: 0,
        })
    }

    fn core(&mut self, ip: &[u8]) -> (Verdict, Vec<u8>) {
        let mut buf = vec![0u8; HEADROOM + ip.len() + 64];
        buf[HEADROOM..HEADROOM + ip.len()].copy_from_slice(ip);
        let mut pkt = PacketBuf::new(&mut buf, HEADROOM, ip.len());
        let v = self.twin.translate(&mut pkt, &mut self.scratch, 0);
        (v, pkt.data().to_vec())
    }

    /// Run one Ethernet frame through the program: its return value and the
    /// frame it leaves.
    pub(crate) fn run_frame(&self, what: &str, frame: &[u8]) -> (u32, Vec<u8>) {
        let mut out = vec![0u8; frame.len() + 64];
        let r = self
            .fp
            .test_run(TestRunOptions {
                data_in: Some(frame),
                data_out: Some(&mut out),
                ..TestRunOptions::default()
            })
            .unwrap_or_else(|e| panic!("{what}: BPF_PROG_TEST_RUN: {e}"));
        out.truncate(r.data_size_out as usize);
        (r.return_value, out)
    }

    /// Run each case through both and check that it took the path it names.
    pub(crate) fn check_cases(&mut self, cases: Vec<(&str, Vec<u8>, bool)>) {
        for (what, ip, fast) in cases {
            let o = self.check(what, &ip);
            assert_eq!(
                matches!(o, Outcome::Translated),
                fast,
                "{what}: expected fast = {fast}"
            );
        }
    }

    /// Run `ip` through both; panic with `what` on any difference.
    pub(crate) fn check(&mut self, what: &str, ip: &[u8]) -> Outcome {
        // BPF_PROG_TEST_RUN refuses (EINVAL, the program never runs) an
        // IPv6 frame shorter than an IPv6 header, as a corrupted version
        // nibble can make of a short IPv4 packet; on a link the program
        // would see it and pass it up (its bounds checks fail).
        if ip.first().is_some_and(|b| b >> 4 == 6) && ip.len() < 40 {
            assert!(!is_fast_path_candidate(&self.cfg, ip), "{what}");
            return Outcome::Passed;
        }
        let frame = ether_frame(ip);
        let (ret, out) = self.run_frame(what, &frame);
        self.runs += 1;
        assert_eq!(ret, PASS, "{what}: the program never drops");
        let candidate = is_fast_path_candidate(&self.cfg, ip);
        let outcome = if out == frame {
            assert!(
                !candidate,
                "{what}: a fast-path candidate was passed up: {ip:02x?}"
            );
            Outcome::Passed
        } else {
            assert!(
                candidate,
                "{what}: the program translated a slow-path packet: {ip:02x?}"
            );
            let (v, want) = self.core(ip);
            assert_eq!(
                v,
                Verdict::Translated,
                "{what}: the core did not translate a candidate"
            );
            let want_type: u16 = if want[0] >> 4 == 6 { 0x86dd } else { 0x0800 };
            assert_eq!(out[..12], frame[..12], "{what}: MAC addresses");
            assert_eq!(out[12..14], want_type.to_be_bytes(), "{what}: EtherType");
            assert_eq!(
                out[14..],
                want[..],
                "{what}: program (left) and core (right) differ"
            );
            self.translated += 1;
            Outcome::Translated
        };
        let c = self.fp.counters().expect("counters");
        assert_eq!(c.received, self.runs, "{what}: received");
        assert_eq!(c.aborted, 0, "{what}: aborted");
        assert_eq!(
            c.translated_6to4 + c.translated_4to6,
            self.translated,
            "{what}: translated"
        );
        assert_eq!(
            c.received,
            c.translated_6to4 + c.translated_4to6 + c.passed + c.aborted,
            "{what}: received = translated + passed"
        );
        outcome
    }
}

/// `ip` in an Ethernet frame, its EtherType from the IP version.
pub(crate) fn ether_frame(ip: &[u8]) -> Vec<u8> {
    let ethertype: u16 = if ip.first().is_some_and(|b| b >> 4 == 6) {
        0x86dd
    } else {
        0x0800
    };
    let mut frame = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    frame.extend_from_slice(&ethertype.to_be_bytes());
    frame.extend_from_slice(ip);
    frame
}

/// `BPF_PROG_TEST_RUN` runs the program on the calling CPU: stay on one, so
/// the program's per-CPU Identification counters are one table, like the
/// core twin's.
pub(crate) fn pin_to_one_cpu() {
    // SAFETY: plain syscalls on this thread with a zeroed cpu_set_t.
    unsafe {
        let cpu = libc::sched_getcpu().max(0) as usize;
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// An IPv6 UDP packet with `payload` bytes and its checksum field zeroed
/// (RFC 7915 §5.5), after any extension headers.
fn zero_udp6(mut ip: Vec<u8>, payload: usize) -> Vec<u8> {
    let udp = ip.len() - 8 - payload;
    ip[udp + 6..udp + 8].copy_from_slice(&[0, 0]);
    ip
}

pub(crate) fn sample_config() -> Config {
    Config::with_pool6(Some(pool6()))
}

/// pool6 and RFC 7757 EAM entries of several shapes: the suffix shifted by
/// 8 (/24 ↔ /120), 0 (/32 ↔ /128), 48 (/16 ↔ /64) and 80 (/24 ↔ /40) bits.
fn eam_config() -> Config {
    let mut cfg = sample_config();
    for (v4, l4, v6, l6) in [
        ("198.18.0.0", 24, "2001:db8:1::", 120),
        ("198.18.1.1", 32, "2001:db8:2::1", 128),
        ("203.0.0.0", 16, "2001:db8:3::", 64),
        ("100.64.7.0", 24, "2001:db8:400::", 40),
    ] {
        let e = Eam::new(v4.parse().unwrap(), l4, v6.parse().unwrap(), l6).unwrap();
        cfg.map.eam.insert(e).unwrap();
    }
    cfg
}

pub(crate) fn a4(v: [u8; 4]) -> Ipv4Addr {
    Ipv4Addr::from(v)
}

/// The vectors: (name, packet, translated on the fast path?).
fn vectors() -> Vec<(&'static str, Vec<u8>, bool)> {
    let p6 = || Ip6::new(h6(), h4_as_v6());
    let p4 = || Ip4::new(a4(H4), a4(V6_AS_V4));
    let mut padded = p4().udp(7, 9, 4);
    padded.extend_from_slice(&[0; 6]);
    let mut padded6 = p6().tcp_flags(7, 9, 0x10, 0);
    padded6.extend_from_slice(&[0xee; 6]);
    // A 12-byte "TCP header" padded to 40: the padding is no header.
    let mut padded_short = p4().raw(6, &[0; 12]);
    padded_short.extend_from_slice(&[0; 14]);
    let mut bad_csum = p4().udp(7, 9, 20);
    bad_csum[10] ^= 0x55;
    let mut plen0 = p6().raw(59, &[]);
    plen0[4..6].copy_from_slice(&[0, 0]);
    let mut v = vec![
        // RFC 7915 §5.1, §5.5: IPv6 → IPv4.
        (
            "rfc7915_s5_1 UDP, DF=0 and a flow ID (≤ 1260)",
            p6().udp(1000, 53, 40),
            true,
        ),
        (
            "rfc7915_s5_1 UDP again, the flow's next ID",
            p6().udp(1000, 53, 41),
            true,
        ),
        (
            "rfc7915_s5_1 UDP 1300 bytes: DF=1, ID 0",
            p6().udp(1000, 53, 1300),
            true,
        ),
        (
            "rfc7915_s5_1 TCP SYN",
            p6().tcp_flags(40000, 80, 0x02, 0),
            true,
        ),
        (
            "rfc7915_s5_1 TCP 1400 bytes",
            p6().tcp(40000, 80, 1400),
            true,
        ),
        (
            "rfc7915_s5_1 TCP 3000 bytes",
            p6().tcp(40000, 80, 3000),
            true,
        ),
        // 3,710 bytes is the largest frame an skb test run takes.
        (
            "rfc7915_s5_1 TCP, a 3,710-byte frame",
            p6().tcp(40000, 80, 3636),
            true,
        ),
        (
            "rfc7915_s5_1 traffic class copied",
            p6().traffic_class(0xb8).flow_label(0x12345).udp(1, 2, 8),
            true,
        ),
        (
            "rfc7915_s5_1 hop limit 2 leaves as TTL 1",
            p6().hop_limit(2).udp(1, 2, 8),
            true,
        ),
        (
            "rfc7915_s5_2 Echo Request",
            p6().echo_request(0x4242, 1, 56),
            true,
        ),
        (
            "rfc7915_s5_2 Echo Reply",
            p6().echo_reply(0x4242, 1, 56),
            true,
        ),
        (
            "rfc7915_s5_2 Echo Request 1400 bytes",
            p6().echo_request(0x4242, 2, 1400),
            true,
        ),
        (
            "rfc7915_s5_1 hop limit 1: Time Exceeded (slow)",
            p6().hop_limit(1).udp(1, 2, 8),
            false,
        ),
        (
            "rfc7915_s5_1 Hop-by-Hop header (slow)",
            p6().hop_by_hop().udp(1, 2, 8),
            false,
        ),
        (
            "rfc7915_s5_1 Destination Options (slow)",
            p6().dest_opts().udp(1, 2, 8),
            false,
        ),
        (
            "rfc7915_s5_1_1 Fragment header (slow)",
            p6().fragment_header(0, true, 7).udp(1, 2, 8),
            false,
        ),
        (
            "rfc7915_s5_5 UDP checksum 0 (slow)",
            zero_udp6(p6().udp(1, 2, 8), 8),
            false,
        ),
        (
            "rfc7915_s5_2 ICMPv6 error (slow)",
            p6().icmp_error(1, 4, [0; 4], &Ip4::new(a4(V6_AS_V4), a4(H4)).udp(1, 2, 8)),
            false,
        ),
        (
            "rfc7915_s5_2 Echo code 1 (slow)",
            p6().icmp(128, 1, [0; 4], &[0; 8]),
            false,
        ),
        (
            "rfc7915_s5_2 MLD / other ICMPv6 (slow)",
            p6().icmp(130, 0, [0; 4], &[0; 16]),
            false,
        ),
        ("rfc7915_s5_1 GRE (slow)", p6().raw(47, &[0; 8]), false),
        ("rfc7915_s5_1 Payload Length 0 (slow)", plen0, false),
        (
            "rfc7915_s5_1 TCP header cut short (slow)",
            p6().raw(6, &[0; 12]),
            false,
        ),
        (
            "destination outside pool6 (not ours)",
            Ip6::new(h6(), "2001:db8:99::1".parse().unwrap()).udp(1, 2, 8),
            false,
        ),
        (
            "source outside pool6 (no EAM: slow)",
            Ip6::new("2001:db8:1::5".parse().unwrap(), h4_as_v6()).udp(1, 2, 8),
            false,
        ),
        (
            "rfc1812_s5_3_7 destination 127.0.0.1 (slow)",
            Ip6::new(h6(), in_pool6([127, 0, 0, 1])).udp(1, 2, 8),
            false,
        ),
        (
            "rfc1812_s5_3_7 destination 224.0.0.5 (slow)",
            Ip6::new(h6(), in_pool6([224, 0, 0, 5])).udp(1, 2, 8),
            false,
        ),
        (
            "rfc1812_s5_3_7 source 0.0.0.1 (slow)",
            Ip6::new(in_pool6([0, 0, 0, 1]), h4_as_v6()).udp(1, 2, 8),
            false,
        ),
        // RFC 7915 §4.1, §4.5: IPv4 → IPv6.
        ("rfc7915_s4_1 UDP", p4().udp(53, 1000, 40), true),
        (
            "rfc7915_s4_1 TCP ACK",
            p4().tcp_flags(80, 40000, 0x10, 0),
            true,
        ),
        (
            "rfc7915_s4_1 TCP 1400 bytes, DF",
            p4().tcp(80, 40000, 1400),
            true,
        ),
        (
            "rfc7915_s4_1 TCP 3000 bytes, DF",
            p4().tcp(80, 40000, 3000),
            true,
        ),
        (
            "rfc7915_s4_1 TCP, a 3,710-byte frame, DF",
            p4().tcp(80, 40000, 3656),
            true,
        ),
        (
            "rfc7915_s4_1 TOS copied to Traffic Class",
            p4().tos(0xb9).udp(1, 2, 8),
            true,
        ),
        (
            "rfc7915_s4_1 TTL 2 leaves as hop limit 1",
            p4().ttl(2).udp(1, 2, 8),
            true,
        ),
        (
            "rfc7915_s4_1 DF=0, small",
            p4().df(false).udp(1, 2, 100),
            true,
        ),
        (
            "rfc7915_s4_2 Echo Request",
            p4().echo_request(7, 1, 56),
            true,
        ),
        ("rfc7915_s4_2 Echo Reply", p4().echo_reply(7, 1, 56), true),
        (
            "rfc7915_s4_1 DF=0 over 1280 after translation: fragmented (slow)",
            p4().df(false).udp(1, 2, 1300),
            false,
        ),
        (
            "rfc7915_s4_1 TTL 1: Time Exceeded (slow)",
            p4().ttl(1).udp(1, 2, 8),
            false,
        ),
        (
            "rfc7915_s4_1 IPv4 options (slow)",
            p4().options(&[1, 1, 1, 1]).udp(1, 2, 8),
            false,
        ),
        (
            "rfc7915_s4_1 first fragment (slow)",
            p4().df(false).fragment(17, 0, true, &[0; 16]),
            false,
        ),
        (
            "rfc7915_s4_1 later fragment (slow)",
            p4().df(false).fragment(17, 16, false, &[0; 16]),
            false,
        ),
        (
            "rfc7915_s4_5 UDP checksum 0 (slow)",
            p4().udp_zero_checksum(1, 2, 8),
            false,
        ),
        (
            "rfc7915_s4_2 ICMPv4 error (slow)",
            p4().icmp_error(3, 3, [0; 4], &Ip4::new(a4(V6_AS_V4), a4(H4)).udp(1, 2, 8)),
            false,
        ),
        (
            "rfc7915_s4_2 Timestamp (slow)",
            p4().icmp(13, 0, [0; 4], &[0; 12]),
            false,
        ),
        ("rfc7915_s4_1 GRE (slow)", p4().raw(47, &[0; 8]), false),
        (
            "bad header checksum (slow: the core drops it)",
            bad_csum,
            false,
        ),
        ("link-layer padding trimmed (IPv4)", padded, true),
        ("link-layer padding trimmed (IPv6)", padded6, true),
        (
            "padding: a short TCP header inside Total Length (slow)",
            padded_short,
            false,
        ),
        (
            "rfc1812_s5_3_7 source 127.0.0.1 (slow)",
            Ip4::new(a4([127, 0, 0, 1]), a4(V6_AS_V4)).udp(1, 2, 8),
            false,
        ),
        (
            "rfc1812_s5_3_7 destination 255.255.255.255 (slow)",
            Ip4::new(a4(H4), a4([255; 4])).udp(1, 2, 8),
            false,
        ),
    ];
    v.extend(class_e_vectors());
    v
}

/// RFC 1812 §5.3.7, 240.0.0.0/4 (`class_e`): the program passes every one up
/// whatever the setting, and the core drops or translates it as set.
fn class_e_vectors() -> Vec<(&'static str, Vec<u8>, bool)> {
    vec![
        (
            "rfc1812_s5_3_7 class E source 240.0.0.1, 4 to 6 (slow)",
            Ip4::new(a4([240, 0, 0, 1]), a4(V6_AS_V4)).udp(1, 2, 8),
            false,
        ),
        (
            "rfc1812_s5_3_7 class E destination 250.1.2.3, 4 to 6 (slow)",
            Ip4::new(a4(H4), a4([250, 1, 2, 3])).udp(1, 2, 8),
            false,
        ),
        (
            "rfc1812_s5_3_7 class E source 255.255.255.254, 6 to 4 (slow)",
            Ip6::new(in_pool6([255, 255, 255, 254]), h4_as_v6()).udp(1, 2, 8),
            false,
        ),
        (
            "rfc1812_s5_3_7 class E destination 240.0.0.1, 6 to 4 (slow)",
            Ip6::new(h6(), in_pool6([240, 0, 0, 1])).udp(1, 2, 8),
            false,
        ),
    ]
}

/// RFC 7757: EAM both ways, and the hairpin (§4) left to the core.
#[test]
fn rfc7757_eam_translates_as_the_core_does() {
    pin_to_one_cpu();
    let Some(mut bed) = Bed::new(eam_config()) else {
        return;
    };
    let v6 = |s: &str| s.parse::<Ipv6Addr>().unwrap();
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        (
            "rfc7757_s3_3 EAM'd source (/120) to pool6",
            Ip6::new(v6("2001:db8:1::5"), h4_as_v6()).tcp(1, 2, 8),
            true,
        ),
        (
            "rfc7757_s3_3 EAM'd source (/128)",
            Ip6::new(v6("2001:db8:2::1"), h4_as_v6()).udp(1, 2, 8),
            true,
        ),
        (
            "rfc7757_s3_3 EAM'd source (/64, shift 48)",
            Ip6::new(v6("2001:db8:3::a:b"), h4_as_v6()).udp(1, 2, 8),
            true,
        ),
        (
            "rfc7757_s3_3 EAM'd source (/40, shift 80)",
            Ip6::new(v6("2001:db8:4ab:cd00::"), h4_as_v6()).udp(1, 2, 8),
            true,
        ),
        (
            "rfc7757_s3_3 to an EAM'd destination (both EAM)",
            Ip6::new(v6("2001:db8:1::5"), v6("2001:db8:3::9:9")).udp(1, 2, 8),
            true,
        ),
        (
            "rfc7757_s3_3 IPv4 to the /24 entry",
            Ip4::new(a4(H4), a4([198, 18, 0, 5])).tcp(1, 2, 8),
            true,
        ),
        (
            "rfc7757_s3_3 IPv4 to the /32 entry",
            Ip4::new(a4(H4), a4([198, 18, 1, 1])).udp(1, 2, 8),
            true,
        ),
        (
            "rfc7757_s3_3 IPv4 to the /16 entry",
            Ip4::new(a4(H4), a4([203, 0, 113, 9])).udp(1, 2, 8),
            true,
        ),
        (
            "rfc7757_s3_3 IPv4 to the /24 ↔ /40 entry",
            Ip4::new(a4(H4), a4([100, 64, 7, 200])).echo_request(1, 2, 8),
            true,
        ),
        (
            "rfc7757_s3_3 IPv4 from an EAM'd source",
            Ip4::new(a4([203, 0, 1, 2]), a4([198, 18, 0, 5])).udp(1, 2, 8),
            true,
        ),
        (
            "rfc7757_s4 hairpin: pool6 form of an EAM'd address (slow)",
            Ip6::new(v6("2001:db8:1::5"), in_pool6([198, 18, 0, 7])).udp(1, 2, 8),
            false,
        ),
        (
            "source neither EAM'd nor in pool6 (slow)",
            Ip6::new(v6("2001:db8:99::5"), h4_as_v6()).udp(1, 2, 8),
            false,
        ),
    ];
    bed.check_cases(cases);
}

/// A configuration change (reload, `sixgate eam add|remove`) reaches the
/// program: EAM entries removed and added, a key changed; the core's twin
/// follows with `set_config` (keeping its ID counters, as a worker does).
#[test]
fn reconfigured_program_follows_the_new_configuration() {
    pin_to_one_cpu();
    let Some(mut bed) = Bed::new(eam_config()) else {
        return;
    };
    let mut plain = sample_config();
    plain.reset_tos = true;
    plain.new_tos = 0x20;
    for cfg in [plain, eam_config(), sample_config()] {
        bed.fp.reconfigure(&cfg).expect("reconfigure");
        let cfg = Arc::new(cfg);
        bed.twin.set_config(cfg.clone());
        bed.cfg = cfg;
        for (what, ip, _) in vectors() {
            bed.check(what, &ip);
        }
        let ip = Ip6::new("2001:db8:1::5".parse().unwrap(), h4_as_v6()).udp(1, 2, 8);
        let fast = matches!(bed.check("EAM'd source", &ip), Outcome::Translated);
        assert_eq!(fast, !bed.cfg.map.eam.is_empty());
    }
    // A configuration it cannot serve: everything goes up.
    let mut nat64 = sample_config();
    nat64.map.pool6 = Some(Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 64).unwrap());
    assert!(bed.fp.reconfigure(&nat64).is_err());
    let ip = Ip6::new(h6(), h4_as_v6()).udp(1, 2, 8);
    let frame = ether_frame(&ip);
    assert_eq!(frame[12..14], [0x86, 0xdd]);
    let (ret, out) = bed.run_frame("unservable configuration", &frame);
    assert_eq!((ret, &out[..]), (PASS, &frame[..]));
}

#[test]
fn vectors_translate_as_the_core_does_or_go_up() {
    pin_to_one_cpu();
    let Some(mut bed) = Bed::new(sample_config()) else {
        return;
    };
    bed.check_cases(vectors());
}

/// The configuration keys the fast-path packets depend on, one at a time:
/// every vector still agrees with the core.
#[test]
fn configuration_keys_are_followed() {
    pin_to_one_cpu();
    let mut variants: Vec<(&str, Config)> = Vec::new();
    let mut c = sample_config();
    c.decrement_hop_limit = false;
    variants.push(("decrement_hop_limit = false", c));
    let mut c = sample_config();
    c.reset_tos = true;
    c.new_tos = 0x28;
    variants.push(("reset_tos, new_tos", c));
    let mut c = sample_config();
    c.reset_traffic_class = true;
    variants.push(("reset_traffic_class", c));
    let mut c = sample_config();
    c.ipv4_mtu = Some(1400);
    variants.push(("ipv4_mtu = 1400 (RFC 7915 §5.4 Packet Too Big is slow)", c));
    let mut c = sample_config();
    c.ipv6_mtu = Some(1300);
    variants.push((
        "ipv6_mtu = 1300 (RFC 7915 §4.4 Fragmentation Needed is slow)",
        c,
    ));
    let mut c = Config::with_pool6(Some(
        Rfc6052Prefix::new("64:ff9b::".parse().unwrap(), 96).unwrap(),
    ));
    c.map.wkp_strict = true;
    variants.push(("RFC 6052 §3.1 Well-Known Prefix, strict", c));
    let mut c = sample_config();
    c.class_e = ClassE::Translate;
    variants.push(("class_e = \"translate\" (RFC 1812 §5.3.7)", c));
    for (name, cfg) in variants {
        let wkp = cfg.map.pool6.is_some_and(|p| p.is_well_known());
        let Some(mut bed) = Bed::new(cfg) else {
            return;
        };
        for (what, ip, _) in vectors() {
            bed.check(&format!("{name}: {what}"), &ip);
        }
        // 240/4 goes up either way; the core answers as `class_e` says
        // (under the WKP the vectors' pool6 is not the configured one).
        for (what, ip, _) in class_e_vectors().into_iter().filter(|_| !wkp) {
            let want = match bed.cfg.class_e {
                ClassE::Translate => Verdict::Translated,
                ClassE::Drop if what.contains("source") => Verdict::Dropped(DropReason::BadSource),
                ClassE::Drop => Verdict::Dropped(DropReason::BadDestination),
            };
            assert_eq!(bed.core(&ip).0, want, "{name}: {what}");
        }
        if wkp {
            // Under the WKP the sample addresses are non-global: all slow;
            // global ones are fast.
            let g6 = |v: [u8; 4]| {
                Rfc6052Prefix::new("64:ff9b::".parse().unwrap(), 96)
                    .unwrap()
                    .embed(a4(v))
            };
            let ip = Ip6::new(g6([8, 8, 4, 4]), g6([1, 1, 1, 1])).udp(1, 2, 8);
            assert!(matches!(bed.check("WKP global", &ip), Outcome::Translated));
            let ip = Ip6::new(g6([8, 8, 4, 4]), g6([10, 1, 1, 1])).udp(1, 2, 8);
            assert!(matches!(bed.check("WKP to 10/8", &ip), Outcome::Passed));
            let ip = Ip4::new(a4([1, 1, 1, 1]), a4([8, 8, 4, 4])).tcp(1, 2, 8);
            assert!(matches!(
                bed.check("WKP global v4", &ip),
                Outcome::Translated
            ));
        }
    }
}

/// A CLAT as `mode = "clat"` builds it (RFC 6877): the customer range
/// 192.0.0.0/29 as an EAM entry towards the CLAT's 2001:db8:c1a7::/125, the
/// PLAT prefix as pool6, hairpinning off. `pool6`: `[translator] pool6`;
/// `clat`: more `[clat]` lines.
fn clat_loaded(pool6: &str, clat: &str) -> sixgate_config::Loaded {
    let text = format!(
        "[translator]\nmode = \"clat\"\npool6 = \"{pool6}\"\n\
         [clat]\nipv6 = \"2001:db8:c1a7::/125\"\n{clat}\n"
    );
    sixgate_config::parse(&text, "clat.toml").unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The CLAT's vectors (RFC 6877 §6.3, RFC 7757 §3.3 and §4): customer hosts
/// to the IPv4 Internet through the PLAT prefix `plat` and back.
fn clat_vectors(plat: &str) -> Vec<(&'static str, Vec<u8>, bool)> {
    let plat = Rfc6052Prefix::new(plat.parse().unwrap(), 96).unwrap();
    let server = |v: [u8; 4]| plat.embed(a4(v));
    let customer4 = a4([192, 0, 0, 2]);
    let customer6: Ipv6Addr = "2001:db8:c1a7::2".parse().unwrap();
    let global = [8, 8, 4, 4];
    let c4 = || Ip4::new(customer4, a4(global));
    let s6 = || Ip6::new(server(global), customer6);
    vec![
        (
            "rfc6877_s6_3 customer UDP out",
            c4().udp(40000, 53, 40),
            true,
        ),
        (
            "rfc6877_s6_3 customer TCP SYN out",
            c4().tcp_flags(40000, 443, 0x02, 0),
            true,
        ),
        (
            "rfc6877_s6_3 customer TCP 1400 out",
            c4().tcp(40000, 443, 1400),
            true,
        ),
        (
            "rfc6877_s6_3 customer ping out",
            c4().echo_request(9, 1, 56),
            true,
        ),
        (
            "rfc6877_s6_3 customer DF=0, small",
            c4().df(false).udp(1, 2, 100),
            true,
        ),
        ("rfc6877_s6_3 reply UDP in", s6().udp(53, 40000, 40), true),
        (
            "rfc6877_s6_3 reply TCP in",
            s6().tcp(443, 40000, 1400),
            true,
        ),
        (
            "rfc6877_s6_3 Echo Reply in",
            s6().echo_reply(9, 1, 56),
            true,
        ),
        (
            "rfc6877_s6_3 reply to the range's last host",
            Ip6::new(server(global), "2001:db8:c1a7::7".parse().unwrap()).udp(53, 1, 8),
            true,
        ),
        (
            "rfc7757_s4 hairpin off: a customer through the PLAT prefix (slow)",
            Ip6::new(customer6, server([192, 0, 0, 3])).udp(1, 2, 8),
            false,
        ),
        (
            "rfc6877_s6_3 outside the CLAT prefix (not ours)",
            Ip6::new(server(global), "2001:db8:c1a7::8".parse().unwrap()).udp(53, 1, 8),
            false,
        ),
        (
            "rfc6877 a customer's ICMP error (slow)",
            c4().icmp_error(3, 3, [0; 4], &Ip4::new(a4(global), customer4).udp(1, 2, 8)),
            false,
        ),
        (
            "rfc6877 a customer's fragment (slow)",
            c4().df(false).fragment(17, 0, true, &[0; 16]),
            false,
        ),
        (
            "rfc6052_s3_1 the WKP refuses a non-global server (slow)",
            Ip4::new(customer4, a4([10, 1, 1, 1])).udp(1, 2, 8),
            !plat.is_well_known(),
        ),
    ]
}

/// RFC 6877: a CLAT's translation is SIIT under `mode = "clat"`'s own
/// configuration (loaded by sixgate-config, mirrored as a reload mirrors
/// it), with the Well-Known Prefix and with a network-specific one.
#[test]
fn rfc6877_clat_translates_as_the_core_does() {
    pin_to_one_cpu();
    for plat in ["64:ff9b::", "2001:db8:64::"] {
        let loaded = clat_loaded(&format!("{plat}/96"), "");
        let Some(mut bed) = Bed::new(loaded.config) else {
            return;
        };
        bed.check_cases(clat_vectors(plat));
    }
}

/// RFC 7050 §3: a CLAT that discovers (or re-discovers) its PLAT prefix
/// applies it as `sixgate run` does (`ClatSettings::set_plat_prefix` on the
/// running configuration, then the data plane's reconfigure): the program
/// translates through the new prefix and no longer through the old one.
#[test]
fn rfc7050_discovered_plat_prefix_reaches_the_program() {
    pin_to_one_cpu();
    let mut loaded = clat_loaded("2001:db8:64::/96", "plat_prefix = \"discover\"");
    // Discovery at start-up settles the prefix before the data plane starts.
    loaded.set_plat_prefix(Rfc6052Prefix::new("64:ff9b::".parse().unwrap(), 96).unwrap());
    let clat = loaded.clat.clone().expect("a CLAT");
    let Some(mut bed) = Bed::new(loaded.config.clone()) else {
        return;
    };
    bed.check_cases(clat_vectors("64:ff9b::"));
    // RFC 7050 §3 refresh: the PLAT prefix changed.
    let mut cfg = (*bed.cfg).clone();
    clat.set_plat_prefix(
        &mut cfg,
        Rfc6052Prefix::new("2001:db8:46::".parse().unwrap(), 96).unwrap(),
    );
    bed.fp.reconfigure(&cfg).expect("reconfigure");
    let cfg = Arc::new(cfg);
    bed.twin.set_config(cfg.clone());
    bed.cfg = cfg;
    bed.check_cases(clat_vectors("2001:db8:46::"));
    // The old prefix is no longer the CLAT's: passed up.
    let old: Vec<_> = clat_vectors("64:ff9b::")
        .into_iter()
        .filter(|(_, ip, _)| ip[0] >> 4 == 6)
        .map(|(what, ip, _)| (what, ip, false))
        .collect();
    bed.check_cases(old);
}

/// RFC 6877: generated packets under the CLAT's configuration.
#[test]
fn rfc6877_generated_packets_under_a_clat_translate_as_the_core_does_or_go_up() {
    pin_to_one_cpu();
    generated(clat_loaded("2001:db8:64::/96", "").config);
}

/// Addresses that exercise every branch of the address checks.
fn v4_addr() -> impl Strategy<Value = [u8; 4]> {
    prop_oneof![
        4 => Just(H4),
        4 => Just(V6_AS_V4),
        2 => prop::sample::select(vec![[198u8, 18, 0, 5], [198, 18, 1, 1], [203, 0, 9, 9], [100, 64, 7, 3], [192, 0, 0, 2], [192, 0, 0, 6]]),
        1 => prop::sample::select(vec![0u8, 10, 100, 127, 169, 172, 192, 198, 203, 224, 255])
            .prop_flat_map(|a| (Just(a), any::<[u8; 3]>()))
            .prop_map(|(a, [b, c, d])| [a, b, c, d]),
        1 => any::<[u8; 4]>(),
    ]
}

#[derive(Debug, Clone)]
struct Gen {
    v6: bool,
    src: [u8; 4],
    dst: [u8; 4],
    off_pool: u8,
    ttl: u8,
    tos: u8,
    df: bool,
    proto: u8,
    len: usize,
    icmp_type: u8,
    zero_udp: bool,
    ext: u8,
    flip: Option<(usize, u8)>,
    pad: usize,
}

fn packets() -> impl Strategy<Value = Gen> {
    (
        (
            any::<bool>(),
            v4_addr(),
            v4_addr(),
            prop_oneof![8 => Just(0u8), 1 => 1u8..5],
        ),
        prop_oneof![1 => 0u8..3, 4 => any::<u8>()],
        any::<u8>(),
        any::<bool>(),
        prop::sample::select(vec![6u8, 17, 1, 58, 47]),
        prop_oneof![4 => 0usize..200, 1 => 1100usize..1400, 1 => 1400usize..3200],
        prop::sample::select(vec![0u8, 8, 128, 129, 1, 3, 11, 13, 135]),
        prop::bool::weighted(0.1),
        prop_oneof![6 => Just(0u8), 1 => 1u8..5],
        (
            prop::option::weighted(0.15, (0usize..60, 1u8..=255)),
            prop_oneof![6 => Just(0usize), 1 => 1usize..20],
        ),
    )
        .prop_map(
            |(
                (v6, src, dst, off_pool),
                ttl,
                tos,
                df,
                proto,
                len,
                icmp_type,
                zero_udp,
                ext,
                (flip, pad),
            )| Gen {
                v6,
                src,
                dst,
                off_pool,
                ttl,
                tos,
                df,
                proto,
                len,
                icmp_type,
                zero_udp,
                ext,
                flip,
                pad,
            },
        )
}

fn build(g: &Gen) -> Vec<u8> {
    let mut ip = if g.v6 {
        let src = if g.off_pool == 1 {
            "2001:db8:1::5".parse().unwrap()
        } else if g.off_pool == 3 {
            "2001:db8:3::a:b".parse().unwrap()
        } else {
            in_pool6(g.src)
        };
        let dst = if g.off_pool == 2 {
            "2001:db8:99::7".parse().unwrap()
        } else if g.off_pool == 4 {
            // A CLAT's customer (RFC 6877 §6.3).
            "2001:db8:c1a7::3".parse().unwrap()
        } else {
            in_pool6(g.dst)
        };
        let mut h = Ip6::new(src, dst).hop_limit(g.ttl).traffic_class(g.tos);
        h = match g.ext {
            1 => h.hop_by_hop(),
            2 => h.dest_opts(),
            3 => h.fragment_header(0, false, 9),
            4 => h.routing(0),
            _ => h,
        };
        match g.proto {
            6 => h.tcp(1234, 80, g.len),
            17 if g.zero_udp => zero_udp6(h.udp(1234, 53, g.len), g.len),
            17 => h.udp(1234, 53, g.len),
            58 => h.icmp(g.icmp_type, 0, [1, 2, 3, 4], &vec![0x5a; g.len]),
            p => h.raw(p, &vec![0xa5; g.len]),
        }
    } else {
        let mut h = Ip4::new(a4(g.src), a4(g.dst))
            .ttl(g.ttl)
            .tos(g.tos)
            .df(g.df);
        if g.ext == 1 {
            h = h.options(&[1, 1, 1, 1]);
        }
        match (g.proto, g.ext) {
            (_, 3) => h.fragment(g.proto, 0, true, &vec![0; 16 + g.len / 8 * 8]),
            (6, _) => h.tcp(1234, 80, g.len),
            (17, _) if g.zero_udp => h.udp_zero_checksum(1234, 53, g.len),
            (17, _) => h.udp(1234, 53, g.len),
            (1 | 58, _) => h.icmp(g.icmp_type, 0, [1, 2, 3, 4], &vec![0x5a; g.len]),
            (p, _) => h.raw(p, &vec![0xa5; g.len]),
        }
    };
    if let Some((at, x)) = g.flip
        && at < ip.len()
    {
        ip[at] ^= x;
    }
    // Link-layer padding after the packet.
    ip.extend(std::iter::repeat_n(0xee, g.pad));
    ip
}

#[test]
fn generated_packets_translate_as_the_core_does_or_go_up() {
    pin_to_one_cpu();
    generated(sample_config());
}

#[test]
fn rfc7757_generated_packets_with_eam_translate_as_the_core_does_or_go_up() {
    pin_to_one_cpu();
    generated(eam_config());
}

fn generated(cfg: Config) {
    let Some(bed) = Bed::new(cfg) else {
        return;
    };
    let bed = RefCell::new(bed);
    let mut runner = TestRunner::new(PtConfig {
        cases: 2000,
        failure_persistence: None,
        ..PtConfig::default()
    });
    let fast = RefCell::new(0u32);
    runner
        .run(&packets(), |g| {
            let ip = build(&g);
            if let Outcome::Translated = bed.borrow_mut().check(&format!("{g:?}"), &ip) {
                *fast.borrow_mut() += 1;
            }
            Ok(())
        })
        .unwrap();
    // The generator reaches the fast path, not only the slow one.
    assert!(
        *fast.borrow() > 100,
        "only {} on the fast path",
        fast.borrow()
    );
}

// ---- MAP-T BR (RFC 7599 §7) ----

/// A MAP-T BR as `mode = "mapt-br"` builds it, DMR 2001:db8:ffff::/96 and
/// four rules of different shapes: Lencse & Nagy's domain (the core's
/// RFC 7599 tests: 2001:db8:ce::/51 ↔ 192.0.2.0/24, 13 EA bits, a = 0:
/// 5-bit PSID), RFC 7597 Appendix A's shape (/40 ↔ /24, 16 EA bits, a = 6:
/// ports below 1024 belong to no CE), whole addresses (k = 0) and a 16-bit
/// PSID (k = 16, m = 0).
fn br_loaded() -> sixgate_config::Loaded {
    let text = "[translator]\nmode = \"mapt-br\"\n[mapt]\ndmr = \"2001:db8:ffff::/96\"\n\
        bmr = [ { ipv6_prefix = \"2001:db8:ce::/51\", ipv4_prefix = \"192.0.2.0/24\", \
                  ea_bits = 13, psid_offset = 0 } ]\n\
        fmr = [ { ipv6_prefix = \"2001:db9::/40\", ipv4_prefix = \"203.0.113.0/24\", \
                  ea_bits = 16, psid_offset = 6 },\n\
                { ipv6_prefix = \"2001:db8:100::/40\", ipv4_prefix = \"198.18.0.0/24\", \
                  ea_bits = 8 },\n\
                { ipv6_prefix = \"2001:dba::/48\", ipv4_prefix = \"100.64.0.1/32\", \
                  ea_bits = 16, psid_offset = 0 } ]\n";
    sixgate_config::parse(text, "br.toml").unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn dmr(v4: [u8; 4]) -> Ipv6Addr {
    Rfc6052Prefix::new("2001:db8:ffff::".parse().unwrap(), 96)
        .unwrap()
        .embed(a4(v4))
}

/// The MAP address (RFC 7597 §5.2) of (`v4`, `psid`) under rule `i`.
fn map_addr(cfg: &Config, i: usize, v4: [u8; 4], psid: u16) -> Ipv6Addr {
    let r = &cfg.mapt.as_ref().unwrap().fmrs[i];
    Ipv6Addr::from(r.map_address(u32::from_be_bytes(v4), psid))
}

/// The BR's vectors: RFC 7599 §7 both ways under each rule, and what the core
/// drops, counts or hairpins (RFC 7597 §5.1, §5.2, §8.1).
fn br_vectors(cfg: &Config) -> Vec<(String, Vec<u8>, bool)> {
    let server = [198, 51, 100, 10];
    let fmrs = &cfg.mapt.as_ref().unwrap().fmrs;
    let rule_of = |v6: &str| {
        fmrs.iter()
            .position(|r| r.ipv6_prefix().0 == v6.parse::<Ipv6Addr>().unwrap())
            .unwrap()
    };
    // (rule, the CE's IPv4 address, its PSID, a port in its set, one outside).
    let ces = [
        (
            rule_of("2001:db8:ce::"),
            [192, 0, 2, 8],
            27u16,
            55300u16,
            1000u16,
        ),
        (rule_of("2001:db9::"), [203, 0, 113, 18], 0x34, 1232, 1236),
        (rule_of("2001:db8:100::"), [198, 18, 0, 7], 0, 80, 80),
        (
            rule_of("2001:dba::"),
            [100, 64, 0, 1],
            0xbeef,
            0xbeef,
            0xbef0,
        ),
    ];
    let mut v = Vec::new();
    for (i, ce4, psid, port, outside) in ces {
        let ce6 = map_addr(cfg, i, ce4, psid);
        let out = || Ip6::new(ce6, dmr(server));
        let inb = || Ip4::new(a4(server), a4(ce4));
        let shared = fmrs[i].psid_len() > 0;
        let n = |s: &str| format!("rule {i} ({ce6}): {s}");
        v.extend([
            (n("rfc7599_s7 UDP out"), out().udp(port, 53, 40), true),
            (
                n("rfc7599_s7 TCP SYN out"),
                out().tcp_flags(port, 443, 0x02, 0),
                true,
            ),
            (
                n("rfc7599_s7 TCP 1400 out"),
                out().tcp(port, 443, 1400),
                true,
            ),
            (
                n("rfc7599_s6 Echo Request out"),
                out().echo_request(port, 1, 56),
                true,
            ),
            (
                n("rfc7599_s6 Echo Reply out"),
                out().echo_reply(port, 1, 56),
                true,
            ),
            (n("rfc7599_s7 UDP in"), inb().udp(53, port, 40), true),
            (
                n("rfc7599_s7 TCP 1400 in"),
                inb().tcp(443, port, 1400),
                true,
            ),
            (
                n("rfc7599_s6 Echo Reply in"),
                inb().echo_reply(port, 1, 56),
                true,
            ),
            (
                n("rfc7599_s6 Echo Request in"),
                inb().echo_request(port, 1, 56),
                true,
            ),
            (
                n("rfc7599_s7 DF=0 small in"),
                inb().df(false).udp(53, port, 100),
                true,
            ),
            (
                n("rfc7597_s8_1 source port outside the set (slow: dropped)"),
                out().udp(outside, 53, 40),
                !shared,
            ),
            (
                n("rfc7597_s8_1 Echo identifier outside the set (slow: dropped)"),
                out().echo_request(outside, 1, 8),
                !shared,
            ),
            (
                n("rfc7597_s5_2 interface identifier disagrees (slow: dropped)"),
                Ip6::new(Ipv6Addr::from(u128::from(ce6) ^ 0x100), dmr(server)).udp(port, 53, 8),
                false,
            ),
            (
                n("rfc7599_s7 CE to CE through the BR (slow: hairpin)"),
                Ip6::new(ce6, dmr(ce4)).udp(port, 53, 8),
                false,
            ),
            (
                n("rfc7599 ICMPv6 error from a CE (slow)"),
                out().icmp_error(
                    1,
                    4,
                    [0; 4],
                    &Ip4::new(a4(ce4), a4(server)).udp(port, 53, 8),
                ),
                false,
            ),
            (
                n("rfc7599_s8 fragment (slow)"),
                inb().df(false).fragment(17, 0, true, &[0; 16]),
                false,
            ),
            (
                n("rfc7599 TTL 1 (slow)"),
                inb().ttl(1).udp(53, port, 8),
                false,
            ),
        ]);
    }
    let r9 = rule_of("2001:db9::");
    v.extend([
        (
            "rfc7597_s5_1 a = 6: port 80 belongs to no CE (slow: dropped)".to_owned(),
            Ip4::new(a4(server), a4([203, 0, 113, 18])).udp(53, 80, 8),
            false,
        ),
        (
            "rfc7597_s5_1 a = 6: a CE's port in another A range".to_owned(),
            Ip4::new(a4(server), a4([203, 0, 113, 18])).udp(53, 64720, 8),
            true,
        ),
        (
            "rfc7597_s5_1 a = 6: port 1024 is PSID 0's".to_owned(),
            Ip6::new(map_addr(cfg, r9, [203, 0, 113, 1], 0), dmr(server)).udp(1024, 53, 8),
            true,
        ),
        (
            "rfc7599_s7 IPv4 destination outside every rule (slow: dropped)".to_owned(),
            Ip4::new(a4(server), a4([198, 51, 100, 99])).udp(53, 55300, 8),
            false,
        ),
        (
            "rfc7599_s7 source under no rule (slow: dropped)".to_owned(),
            Ip6::new(dmr([198, 51, 100, 9]), dmr(server)).udp(55300, 53, 8),
            false,
        ),
        (
            "rfc1812_s5_3_7 to 127.0.0.1 through the DMR (slow)".to_owned(),
            Ip6::new(map_addr(cfg, 0, [192, 0, 2, 8], 27), dmr([127, 0, 0, 1])).udp(55300, 53, 8),
            false,
        ),
    ]);
    v
}

/// RFC 7599 §7: the BR's vectors through the program and the core.
#[test]
fn rfc7599_br_translates_as_the_core_does() {
    pin_to_one_cpu();
    let Some(mut bed) = Bed::new(br_loaded().config) else {
        return;
    };
    let cfg = bed.cfg.clone();
    for (what, ip, fast) in br_vectors(&cfg) {
        let o = bed.check(&what, &ip);
        assert_eq!(
            matches!(o, Outcome::Translated),
            fast,
            "{what}: expected fast = {fast}"
        );
    }
}

/// A reload between SIIT and MAP-T (and a MAP-T CE it cannot serve): the
/// rules come and go with the configuration.
#[test]
fn rfc7599_reconfigured_between_siit_and_mapt() {
    pin_to_one_cpu();
    let Some(mut bed) = Bed::new(sample_config()) else {
        return;
    };
    let br = br_loaded().config;
    let br_cases = br_vectors(&br);
    for cfg in [br.clone(), sample_config(), br] {
        bed.fp.reconfigure(&cfg).expect("reconfigure");
        let cfg = Arc::new(cfg);
        bed.twin.set_config(cfg.clone());
        bed.cfg = cfg;
        for (what, ip, _) in vectors() {
            bed.check(what, &ip);
        }
        for (what, ip, _) in &br_cases {
            bed.check(what, ip);
        }
    }
    let ce = "[translator]\nmode = \"mapt-ce\"\n[mapt]\ndmr = \"2001:db8:ffff::/96\"\n\
              end_user_prefix = \"2001:db8:ce:11b::/64\"\nlan = \"10.0.0.0/24\"\n\
              bmr = [ { ipv6_prefix = \"2001:db8:ce::/51\", ipv4_prefix = \"192.0.2.0/24\", \
              ea_bits = 13, psid_offset = 0 } ]\n";
    let ce = sixgate_config::parse(ce, "ce.toml").expect("a CE");
    assert!(bed.fp.reconfigure(&ce.config).is_err());
}

/// Generated packets at the BR: MAP addresses of every rule (some with a
/// flipped interface-identifier bit), ports inside and outside the PSID's
/// set, servers inside and outside the domain.
#[derive(Debug, Clone)]
struct BrGen {
    v6: bool,
    rule: usize,
    host: u32,
    psid: u16,
    /// `None`: a port in the PSID's set (`j` picks it); else this port.
    port: Option<u16>,
    j: u16,
    flip: Option<u8>,
    server: [u8; 4],
    proto: u8,
    ttl: u8,
    len: usize,
    df: bool,
}

fn br_packets() -> impl Strategy<Value = BrGen> {
    (
        (any::<bool>(), 0usize..4, any::<u32>(), any::<u16>()),
        (prop::option::weighted(0.3, any::<u16>()), any::<u16>()),
        prop::option::weighted(0.1, 0u8..128),
        prop_oneof![
            4 => Just([198u8, 51, 100, 10]),
            1 => Just([192u8, 0, 2, 9]),
            1 => Just([203u8, 0, 113, 200]),
            1 => any::<[u8; 4]>(),
        ],
        prop::sample::select(vec![6u8, 17, 1, 58, 47]),
        prop_oneof![1 => 0u8..3, 4 => any::<u8>()],
        prop_oneof![4 => 0usize..200, 1 => 1100usize..1400],
        any::<bool>(),
    )
        .prop_map(
            |((v6, rule, host, psid), (port, j), flip, server, proto, ttl, len, df)| BrGen {
                v6,
                rule,
                host,
                psid,
                port,
                j,
                flip,
                server,
                proto,
                ttl,
                len,
                df,
            },
        )
}

fn build_br(cfg: &Config, g: &BrGen) -> Vec<u8> {
    let r = &cfg.mapt.as_ref().unwrap().fmrs[g.rule];
    let (p4, l4) = r.ipv4_prefix();
    let v4 = u32::from(p4) | if l4 == 32 { 0 } else { g.host >> l4 };
    let k = r.psid_len();
    let psid = (u32::from(g.psid) & ((1u32 << k) - 1)) as u16;
    let port = g.port.unwrap_or_else(|| {
        let ranges: Vec<_> = r.port_ranges(psid).collect();
        let (lo, hi) = ranges[usize::from(g.j) % ranges.len()];
        (u32::from(lo) + u32::from(g.j) % (u32::from(hi) - u32::from(lo) + 1)) as u16
    });
    let mut ce6 = r.map_address(v4, psid);
    if let Some(b) = g.flip {
        ce6 ^= 1u128 << b;
    }
    let (ce6, ce4, server) = (Ipv6Addr::from(ce6), Ipv4Addr::from(v4), a4(g.server));
    if g.v6 {
        let h = Ip6::new(ce6, dmr(g.server)).hop_limit(g.ttl);
        match g.proto {
            6 => h.tcp(port, 80, g.len),
            17 => h.udp(port, 53, g.len),
            58 => h.echo_request(port, 1, g.len),
            1 => h.echo_reply(port, 1, g.len),
            p => h.raw(p, &vec![0xa5; g.len]),
        }
    } else {
        let h = Ip4::new(server, ce4).ttl(g.ttl).df(g.df);
        match g.proto {
            6 => h.tcp(80, port, g.len),
            17 => h.udp(53, port, g.len),
            58 => h.echo_request(port, 1, g.len),
            1 => h.echo_reply(port, 1, g.len),
            p => h.raw(p, &vec![0xa5; g.len]),
        }
    }
}

#[test]
fn rfc7599_generated_packets_at_a_br_translate_as_the_core_does_or_go_up() {
    pin_to_one_cpu();
    let Some(bed) = Bed::new(br_loaded().config) else {
        return;
    };
    let cfg = bed.cfg.clone();
    let bed = RefCell::new(bed);
    let mut runner = TestRunner::new(PtConfig {
        cases: 2000,
        failure_persistence: None,
        ..PtConfig::default()
    });
    let fast = RefCell::new(0u32);
    runner
        .run(&br_packets(), |g| {
            let ip = build_br(&cfg, &g);
            if let Outcome::Translated = bed.borrow_mut().check(&format!("{g:?}"), &ip) {
                *fast.borrow_mut() += 1;
            }
            Ok(())
        })
        .unwrap();
    assert!(
        *fast.borrow() > 100,
        "only {} on the fast path",
        fast.borrow()
    );
}
