//! The differential test of stateful NAT64 on the fast path
//! (docs/fastpath.md, "NAT64 established sessions"), for either hook:
//! included by tests/nat64_differential.rs (TC) and
//! tests/nat64_differential_xdp.rs (XDP), each naming its `crate::HOOK`.
//! An authority core opens
//! sessions (TCP handshakes, UDP, ICMP Echo) as the slow path would; its
//! exported changes drive [`Offload`] (what a worker runs), which installs
//! the settled sessions in the program's maps, and are imported into a twin
//! core that sees only the packets the program translated (so the IPv4
//! Identification counters stay in step). Every packet then runs through the
//! program with `BPF_PROG_TEST_RUN`; the program must translate exactly the
//! packets `sixgate_core::fastpath::nat64::is_candidate` accepts for the
//! installed keys, byte-identical to the twin's translation, and pass every
//! other packet up unchanged. SYN, FIN and RST, sessions not established,
//! unknown sessions and the SIIT slow-path reasons go up; a FIN seen by the
//! core removes the entries; the program's last-seen refreshes the session
//! in the core.

use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use aya::programs::TestRunOptions;
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::fastpath::nat64::{Key4, Key6, entries, is_candidate, program_id_key};
use sixgate_core::nat64::{Nat64Config, Pool4Entry, Proto, Replica, ReplicaOp};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_fastpath::{FastPath, Hook, Offload};
use sixgate_testkit::{Ip4, Ip6};

/// The hook's verdict for a packet passed up, or handed to the kernel
/// translated (no ingress interface here).
const PASS: u32 = match crate::HOOK {
    Hook::Tc => 0,  // TC_ACT_OK
    Hook::Xdp => 2, // XDP_PASS
};
const ACK: u8 = 0x10;
const SYN: u8 = 0x02;
const FIN: u8 = 0x01;
const RST: u8 = 0x04;

const POOL4: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);
const R4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 33);

fn h6() -> Ipv6Addr {
    "2001:db8:1::5".parse().unwrap()
}
fn r6() -> Ipv6Addr {
    "2001:db8:64::c000:221".parse().unwrap()
}

fn config() -> Config {
    let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap();
    let mut c = Config::with_pool6(Some(pool6));
    c.nat64 = Some(Nat64Config {
        pool4: vec![Pool4Entry::single(POOL4)],
        max_sessions: 1024,
        ..Nat64Config::default()
    });
    c
}

fn ether_frame(ip: &[u8]) -> Vec<u8> {
    let t: u16 = if ip[0] >> 4 == 6 { 0x86dd } else { 0x0800 };
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    f.extend_from_slice(&t.to_be_bytes());
    f.extend_from_slice(ip);
    f
}

fn pin_to_one_cpu() {
    // SAFETY: plain syscalls on this thread with a zeroed cpu_set_t.
    unsafe {
        let cpu = libc::sched_getcpu().max(0) as usize;
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn run_core(t: &mut Translator, s: &mut Scratch, ip: &[u8], now: u64) -> (Verdict, Vec<u8>) {
    let mut buf = vec![0u8; HEADROOM + ip.len() + 64];
    buf[HEADROOM..HEADROOM + ip.len()].copy_from_slice(ip);
    let mut pkt = PacketBuf::new(&mut buf, HEADROOM, ip.len());
    let v = t.translate(&mut pkt, s, now);
    (v, pkt.data().to_vec())
}

struct Bed {
    cfg: Arc<Config>,
    fp: FastPath,
    offload: Offload,
    /// Opens and closes sessions: the slow path.
    authority: Translator,
    /// Holds the same sessions (imported), sees only the program's packets.
    twin: Translator,
    scratch: Scratch,
    /// The installed keys, as the test follows them.
    keys6: HashSet<Key6>,
    keys4: HashSet<Key4>,
    runs: u64,
    translated: u64,
}

impl Bed {
    fn new() -> Option<Bed> {
        Bed::with(config(), 1024)
    }

    /// Under `cfg`, with maps of `cap` sessions.
    fn with(cfg: Config, cap: u32) -> Option<Bed> {
        let fp = match FastPath::load_sized_on(crate::HOOK, &cfg, 0, cap) {
            Ok(fp) => fp,
            // SAFETY: geteuid has no preconditions.
            Err(e) if e.contains("not built") || unsafe { libc::geteuid() } != 0 => {
                println!("skipped: the fast path does not load here: {e}");
                return None;
            }
            Err(e) => panic!("{e}"),
        };
        // The twin counts IPv4 IDs as the program does: with its key.
        let mut twin_cfg = cfg.clone();
        twin_cfg.ipv4_id_key = program_id_key(cfg.ipv4_id_key);
        let cfg = Arc::new(cfg);
        let maps = fp.nat64_maps().expect("nat64 maps");
        let mut authority = Translator::new(cfg.clone());
        authority.enable_replica_export(1024);
        Some(Bed {
            offload: Offload::new(maps, cfg.clone(), 1024),
            twin: Translator::new(Arc::new(twin_cfg)),
            authority,
            cfg,
            fp,
            scratch: Scratch::new(),
            keys6: HashSet::new(),
            keys4: HashSet::new(),
            runs: 0,
            translated: 0,
        })
    }

    /// A packet through the slow path (the authority), then its changes to
    /// the offload, the twin and the test's key sets. Returns the session
    /// records seen.
    fn slow(&mut self, ip: &[u8]) -> Vec<Replica> {
        let (v, _) = run_core(&mut self.authority, &mut self.scratch, ip, 0);
        assert!(
            matches!(v, Verdict::Translated | Verdict::Held),
            "slow path: {v:?}"
        );
        self.sync()
    }

    /// A UDP or ICMP query session's first three packets through the slow
    /// path: the third settles it (`ReplicaOp::Settled`), which installs it.
    /// Returns its record.
    fn settle(&mut self, ip: &[u8]) -> Replica {
        let first = self.slow(ip);
        assert!(self.slow(ip).is_empty(), "the second packet: no change");
        let settled = self.slow(ip);
        assert_eq!(settled, first, "the third: the session again");
        settled[0]
    }

    fn sync(&mut self) -> Vec<Replica> {
        let mut changes = Vec::new();
        self.authority
            .drain_replica_changes(|op, r| changes.push((op, *r)));
        // All of a drain's changes, then one flush, as the worker does (one
        // run of batch map calls).
        for (op, r) in &changes {
            self.offload.change(*op, r);
        }
        self.offload.flush();
        for (op, r) in &changes {
            self.twin.import_replica(*op, r, 0).expect("twin import");
            // The session's keys whatever its state; there when installed
            // (settled, and room in the maps).
            let mut est = *r;
            if r.proto == Proto::Tcp {
                est.tcp_state = Some(sixgate_core::nat64::tcp::TcpState::Established);
            }
            if let Some(e) = entries(&self.cfg, &est) {
                if *op != ReplicaOp::Delete && self.offload.contains(r) {
                    self.keys6.insert(e.key6);
                    self.keys4.insert(e.key4);
                } else {
                    self.keys6.remove(&e.key6);
                    self.keys4.remove(&e.key4);
                }
            }
        }
        assert_eq!(self.offload.len(), self.keys6.len(), "installed sessions");
        changes.into_iter().map(|(_, r)| r).collect()
    }

    fn run_frame(&self, what: &str, frame: &[u8]) -> (u32, Vec<u8>) {
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

    /// `ip` through the program and, when it translated it, the twin; true
    /// when translated.
    fn check(&mut self, what: &str, ip: &[u8]) -> bool {
        let frame = ether_frame(ip);
        let (ret, out) = self.run_frame(what, &frame);
        self.runs += 1;
        assert_eq!(ret, PASS, "{what}: the program never drops");
        let candidate = is_candidate(
            &self.cfg,
            ip,
            |k| self.keys6.contains(k),
            |k| self.keys4.contains(k),
        );
        let fast = out != frame;
        assert_eq!(
            fast, candidate,
            "{what}: translated = candidate ({ip:02x?})"
        );
        if fast {
            let (v, want) = run_core(&mut self.twin, &mut self.scratch, ip, 0);
            assert_eq!(v, Verdict::Translated, "{what}: the core did not translate");
            let t: u16 = if want[0] >> 4 == 6 { 0x86dd } else { 0x0800 };
            assert_eq!(out[12..14], t.to_be_bytes(), "{what}: EtherType");
            assert_eq!(
                out[14..],
                want[..],
                "{what}: program (left) and core (right)"
            );
            self.translated += 1;
        }
        let c = self.fp.counters().expect("counters");
        assert_eq!(c.received, self.runs, "{what}: received");
        assert_eq!(c.aborted, 0, "{what}: aborted");
        assert_eq!(
            c.translated_6to4 + c.translated_4to6,
            self.translated,
            "{what}"
        );
        // bpf/forward.h: no ingress interface and no slow path device here,
        // so the FIB has no forwarding answer and every translated packet is
        // handed to the kernel (tests/forward.rs redirects NAT64's).
        assert_eq!(
            (c.redirected, c.redirected_neigh, c.to_kernel),
            (0, 0, self.translated),
            "{what}: translated = redirected + redirected_neigh + to_kernel"
        );
        fast
    }

    fn expect(&mut self, what: &str, ip: &[u8], fast: bool) {
        assert_eq!(self.check(what, ip), fast, "{what}: expected fast = {fast}");
    }
}

/// Open a TCP session from the IPv6 side (RFC 6146 §3.5.2.2: V6 SYN, V4
/// SYN, then ESTABLISHED) and return its record.
fn open_tcp(b: &mut Bed, sport: u16, dport: u16) -> Replica {
    let r = b.slow(&Ip6::new(h6(), r6()).tcp_flags(sport, dport, SYN, 0));
    let port4 = r.last().expect("a session").port4;
    b.slow(&Ip4::new(R4, POOL4).tcp_flags(dport, port4, SYN | ACK, 0));
    *b.slow(&Ip6::new(h6(), r6()).tcp_flags(sport, dport, ACK, 0))
        .last()
        .unwrap_or(&r[0])
}

#[test]
fn rfc6146_established_sessions_program_and_core_agree() {
    let Some(mut b) = Bed::new() else {
        return;
    };
    pin_to_one_cpu();
    let p6 = || Ip6::new(h6(), r6());
    let p4 = || Ip4::new(R4, POOL4);

    // §3.5.2.2: a session not yet ESTABLISHED is the core's.
    b.slow(&p6().tcp_flags(40001, 80, SYN, 0));
    b.expect(
        "rfc6146_s3_5_2_2 V6 INIT: data goes up",
        &p6().tcp(40001, 80, 10),
        false,
    );

    let tcp = open_tcp(&mut b, 40000, 80);
    assert_eq!(tcp.proto, Proto::Tcp);
    let t4 = tcp.port4;
    assert_ne!(t4, 40000, "the port is rewritten (pool4 61001-65535)");
    for (what, ip, fast) in [
        (
            "rfc6146_s3_5_2_2 ESTABLISHED ACK 6to4",
            p6().tcp(40000, 80, 0),
            true,
        ),
        ("rfc6146_s3_5_2_2 data 6to4", p6().tcp(40000, 80, 100), true),
        (
            "rfc6146_s3_5_2_2 1300 bytes 6to4 (DF=1)",
            p6().tcp(40000, 80, 1300),
            true,
        ),
        (
            "rfc6146_s3_5_2_2 3000 bytes 6to4",
            p6().tcp(40000, 80, 3000),
            true,
        ),
        ("rfc6146_s3_5_2_2 data 4to6", p4().tcp(80, t4, 100), true),
        (
            "rfc6146_s3_5_2_2 3000 bytes 4to6",
            p4().tcp(80, t4, 3000),
            true,
        ),
        (
            "rfc6146_s3_5_2_2 PSH|ACK|URG 4to6",
            p4().tcp_flags(80, t4, 0x38, 5),
            true,
        ),
        (
            "rfc6146_s3_5_2_2 SYN 6to4 (slow)",
            p6().tcp_flags(40000, 80, SYN, 0),
            false,
        ),
        (
            "rfc6146_s3_5_2_2 FIN 6to4 (slow)",
            p6().tcp_flags(40000, 80, FIN | ACK, 0),
            false,
        ),
        (
            "rfc6146_s3_5_2_2 RST 4to6 (slow)",
            p4().tcp_flags(80, t4, RST, 0),
            false,
        ),
        (
            "rfc6146_s3_5_2_2 SYN-ACK 4to6 (slow)",
            p4().tcp_flags(80, t4, SYN | ACK, 0),
            false,
        ),
        (
            "rfc6146_s3_5_1 another remote port (slow)",
            p6().tcp(40000, 81, 10),
            false,
        ),
        (
            "rfc6146_s3_5_1 another pool4 port (slow)",
            p4().tcp(80, t4 ^ 1, 10),
            false,
        ),
        (
            "rfc7915_s5_1 hop limit 1 (slow)",
            p6().hop_limit(1).tcp(40000, 80, 10),
            false,
        ),
        (
            "rfc7915_s5_1 hop limit 2 (fast)",
            p6().hop_limit(2).tcp(40000, 80, 10),
            true,
        ),
        (
            "rfc7915_s4_1 TTL 1 (slow)",
            p4().ttl(1).tcp(80, t4, 10),
            false,
        ),
        (
            "rfc7915_s5_1 Hop-by-Hop (slow)",
            p6().hop_by_hop().tcp(40000, 80, 10),
            false,
        ),
        (
            "rfc7915_s4_1 options (slow)",
            p4().options(&[1, 1, 1, 1]).tcp(80, t4, 10),
            false,
        ),
    ] {
        b.expect(what, &ip, fast);
    }

    // UDP (§3.5.1) and ICMP queries (§3.5.3): installed at their third
    // packet; a request and its reply stay on the slow path.
    let udp = *b.slow(&p6().udp(40000, 53, 20)).last().unwrap();
    let u4 = udp.port4;
    b.expect(
        "rfc6146_s3_5_1 UDP, the second packet (slow)",
        &p4().udp(53, u4, 20),
        false,
    );
    b.slow(&p4().udp(53, u4, 20));
    b.slow(&p6().udp(40000, 53, 20));
    let icmp = b.settle(&p6().echo_request(0x4242, 1, 56));
    let i4 = icmp.port4;
    for (what, ip, fast) in [
        ("rfc6146_s3_5_1 UDP 6to4", p6().udp(40000, 53, 20), true),
        (
            "rfc6146_s3_5_1 UDP 6to4 next ID",
            p6().udp(40000, 53, 21),
            true,
        ),
        (
            "rfc6146_s3_5_1 UDP 6to4 1300 (DF=1)",
            p6().udp(40000, 53, 1300),
            true,
        ),
        ("rfc6146_s3_5_1 UDP 4to6", p4().udp(53, u4, 20), true),
        (
            "rfc6146_s3_5_1 UDP 4to6 DF=0 small",
            p4().df(false).udp(53, u4, 20),
            true,
        ),
        (
            "rfc6146_s3_5_1 UDP 4to6 zero checksum (slow)",
            p4().udp_zero_checksum(53, u4, 20),
            false,
        ),
        (
            "rfc6146_s3_5_1 UDP unknown port (slow)",
            p6().udp(40002, 53, 20),
            false,
        ),
        (
            "rfc6146_s3_5_3 Echo Request 6to4",
            p6().echo_request(0x4242, 2, 56),
            true,
        ),
        (
            "rfc6146_s3_5_3 Echo Reply 4to6",
            p4().echo_reply(i4, 2, 56),
            true,
        ),
        (
            "rfc6146_s3_5_3 Echo Request 1400 6to4",
            p6().echo_request(0x4242, 3, 1400),
            true,
        ),
        (
            "rfc6146_s3_5_3 another identifier (slow)",
            p6().echo_request(0x4243, 1, 56),
            false,
        ),
        (
            "rfc6146_s3_5_3 ICMP error about the session (slow)",
            p4().icmp_error(3, 3, [0; 4], &Ip4::new(POOL4, R4).udp(u4, 53, 8)),
            false,
        ),
    ] {
        b.expect(what, &ip, fast);
    }

    // Every UDP checksum and TCP port pair: the incremental updates agree.
    for i in 0..200u16 {
        let sport = 30000 + i * 7;
        b.settle(&p6().udp(sport, 1000 + i, 1));
        let u = b.offload.len();
        assert!(u > 0);
        b.expect(
            "rfc6146_s3_5_1 UDP sweep 6to4",
            &p6().udp(sport, 1000 + i, usize::from(i)),
            true,
        );
    }

    // §3.5.2.2: a FIN through the core leaves ESTABLISHED: the entries go.
    b.slow(&p6().tcp_flags(40000, 80, FIN | ACK, 0));
    b.expect(
        "rfc6146_s3_5_2_2 after FIN: the core's again",
        &p6().tcp(40000, 80, 10),
        false,
    );

    // §3.5.1.1: packets the program translated refresh the session in the
    // core (the program's last-seen, read by the scan).
    let before = b.fp.counters().unwrap().sessions_refreshed;
    b.offload.tick(&mut b.authority, 1_000_000);
    let after = b.fp.counters().unwrap().sessions_refreshed;
    assert!(after > before, "refreshed {before} -> {after}");
    let c = b.fp.counters().unwrap();
    assert_eq!(c.map_full + c.map_errors, 0);
    println!("{c:?}");
}

/// Generated packets of installed and unknown sessions, with random flags,
/// sizes, TTLs, DF and an occasional corrupted byte: the program and the
/// candidate rule agree, and every translation is the core's.
#[test]
fn generated_packets_agree() {
    let Some(mut b) = Bed::new() else {
        return;
    };
    pin_to_one_cpu();
    let p6 = || Ip6::new(h6(), r6());
    let tcp = open_tcp(&mut b, 41000, 443);
    let udp = b.settle(&p6().udp(41000, 4500, 8));
    let icmp = b.settle(&p6().echo_request(7, 1, 8));
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for i in 0..2000 {
        let size = match rnd(4) {
            0 => rnd(16) as usize,
            1 => rnd(1500) as usize,
            _ => rnd(3000) as usize,
        };
        let ttl = (1 + rnd(3)) as u8;
        let (known, other) = (rnd(4) != 0, rnd(2) as u16);
        let mut ip = match (rnd(3), rnd(2)) {
            (0, 0) => Ip6::new(h6(), r6()).hop_limit(ttl).tcp_flags(
                if known { 41000 } else { 41001 },
                443,
                (rnd(64) as u8) | if rnd(2) == 0 { 0 } else { ACK },
                size,
            ),
            (0, _) => Ip4::new(R4, POOL4).ttl(ttl).df(rnd(2) == 0).tcp_flags(
                443,
                tcp.port4 ^ other,
                rnd(64) as u8,
                size,
            ),
            (1, 0) => Ip6::new(h6(), r6())
                .hop_limit(ttl)
                .udp(41000 + other, 4500, size),
            (1, _) => {
                Ip4::new(R4, POOL4)
                    .ttl(ttl)
                    .df(rnd(2) == 0)
                    .udp(4500, udp.port4 ^ other, size)
            }
            (_, 0) => Ip6::new(h6(), r6())
                .hop_limit(ttl)
                .echo_request(7 + other, 1, size),
            (_, _) => {
                Ip4::new(R4, POOL4)
                    .ttl(ttl)
                    .df(rnd(2) == 0)
                    .echo_reply(icmp.port4 ^ other, 1, size)
            }
        };
        if rnd(8) == 0 {
            let at = rnd(ip.len() as u64) as usize;
            ip[at] ^= 1 << rnd(8);
        }
        b.check(&format!("generated #{i}"), &ip);
    }
    assert!(b.translated > 300, "translated {}", b.translated);
}

/// docs/fastpath.md: a full map leaves the session on the slow path,
/// counted (the maps are sized by `max_sessions`, preallocated, never
/// evicting).
#[test]
fn full_map_is_counted_and_the_session_stays_slow() {
    // Maps of 4 sessions, the core's and the offload's room for more.
    let Some(mut b) = Bed::with(config(), 4) else {
        return;
    };
    pin_to_one_cpu();
    let p6 = || Ip6::new(h6(), r6());
    for i in 0..6 {
        b.settle(&p6().udp(42000 + i, 53, 8));
    }
    let c = b.fp.counters().unwrap();
    assert_eq!((c.sessions_installed, c.map_full), (4, 2), "{c:?}");
    b.expect("installed", &p6().udp(42000, 53, 8), true);
    b.expect("map full: slow path", &p6().udp(42005, 53, 8), false);
}

/// docs/fastpath.md: the installs of one batch of packets are one run of
/// batch map calls. A run that overflows the maps: the kernel stops the
/// batch at the first session that does not fit (`E2BIG`); it and the rest
/// are counted full and stay on the slow path, the others are in. Then the
/// removal of all of them in one run.
#[test]
fn one_run_of_installs_over_a_full_map_then_one_of_removes() {
    let Some(mut b) = Bed::with(config(), 4) else {
        return;
    };
    pin_to_one_cpu();
    let p6 = |port| Ip6::new(h6(), r6()).udp(port, 53, 8);
    for port in 42100..42106 {
        for _ in 0..3 {
            let (v, _) = run_core(&mut b.authority, &mut b.scratch, &p6(port), 0);
            assert!(matches!(v, Verdict::Translated), "{v:?}");
        }
    }
    assert_eq!(
        b.sync().len(),
        12,
        "one drain of six sessions, created and settled"
    );
    let c = b.fp.counters().unwrap();
    assert_eq!((c.sessions_installed, c.map_full), (4, 2), "{c:?}");
    b.expect("installed", &p6(42100), true);
    b.expect("installed", &p6(42103), true);
    b.expect("map full: slow path", &p6(42104), false);
    b.expect("map full: slow path", &p6(42105), false);
    b.offload.clear();
    let c = b.fp.counters().unwrap();
    assert_eq!((c.sessions_removed, c.map_errors), (4, 0), "{c:?}");
    assert!(b.offload.is_empty());
}

/// A configuration change reaches the installed sessions: one whose entries
/// come out otherwise (here its remote joined pool4, RFC 6146 §3.8: now a
/// hairpin) is removed; the others stay.
#[test]
fn reconfiguration_removes_what_no_longer_holds() {
    let Some(mut b) = Bed::new() else {
        return;
    };
    pin_to_one_cpu();
    let p6 = || Ip6::new(h6(), r6());
    b.settle(&p6().udp(43000, 53, 8));
    b.expect("installed", &p6().udp(43000, 53, 8), true);
    b.offload.reconfigure(&b.cfg.clone());
    assert_eq!(b.offload.len(), 1, "the same configuration keeps it");
    let mut next = (*b.cfg).clone();
    if let Some(n) = next.nat64.as_mut() {
        n.pool4.push(Pool4Entry::single(R4));
    }
    b.offload.reconfigure(&next);
    assert_eq!(b.offload.len(), 0);
    let frame = ether_frame(&p6().udp(43000, 53, 8));
    let (ret, out) = b.run_frame("after", &frame);
    assert_eq!((ret, out), (PASS, frame), "passed up unchanged");
}

/// A record for another session on the same pool4 transport address and
/// remote (the old one's delete was lost to a full ring) replaces the old
/// entries: 4→6 packets go to the new IPv6 host, never the old one.
#[test]
fn a_new_session_on_the_same_ids_replaces_the_old_entries() {
    let Some(mut b) = Bed::new() else {
        return;
    };
    pin_to_one_cpu();
    let r = b.settle(&Ip6::new(h6(), r6()).udp(44000, 53, 8));
    let mut other = r;
    other.v6 = "2001:db8:1::6".parse().unwrap();
    // Its creation takes the old entries out; its third packet puts its own in.
    b.offload.change(ReplicaOp::Upsert, &other);
    b.offload.flush();
    assert_eq!(b.offload.len(), 0, "the old entries are gone");
    let frame = ether_frame(&Ip4::new(R4, POOL4).udp(53, r.port4, 8));
    let (_, out) = b.run_frame("4to6, not settled", &frame);
    assert_eq!(out, frame, "passed up");
    b.offload.change(ReplicaOp::Settled, &other);
    b.offload.flush();
    assert_eq!(b.offload.len(), 1);
    let (_, out) = b.run_frame("4to6", &frame);
    assert_eq!(out[14 + 24..14 + 40], other.v6.octets(), "the new host");
}
