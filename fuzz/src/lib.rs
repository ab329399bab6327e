//! The fuzz harness shared by the `translate_v6` and `translate_v4` targets (and
//! the sequence harness of `translate_nat64` and `translate_mapt`).
//!
//! Input layout: [`Knobs::LEN`] bytes that choose the configuration (see
//! [`Knobs::decode`]), then the packet. The target forces the packet's version
//! nibble, so the fuzzer spends its time on one direction per target.
//!
//! Invariants checked after every translation ([`run`]):
//! - `translate` never panics;
//! - `Translated`: the buffer holds a packet of the other family (IPv6 when an
//!   IPv6 packet was hairpinned) that passes [`sixgate_testkit::check_structure`]:
//!   version, IPv4 header checksum, length fields equal to the packet length;
//! - `Fragmented(n)`: the scratch area holds `n` such packets, fragments of one
//!   datagram with consecutive offsets;
//! - `Replied`: the scratch area holds one ICMP error of the input's family,
//!   addressed to the input's source, whose own checksum verifies.
//!
//! Transport checksums of translated packets are not checked: the translator
//! updates them incrementally, so a wrong input checksum stays wrong.

mod state_file;
mod sync;
pub use state_file::{STATE_HASH, STATE_MAX, STATE_WRITTEN, run_state_file};
pub use sync::{SYNC_HASH, SYNC_KEY, run_sync, sync_item, sync_items};

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use sixgate_core::addr::{Eam, EamTable, Rfc6052Prefix};
use sixgate_core::config::{HairpinMode, UdpZeroChecksum};
use sixgate_core::nat64::{EventLog, Filtering, Nat64Config, Pool4Entry, PortRange};
use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_testkit::{Checks, Family, Summary, check_structure, check_with};

/// pool6 choices: every RFC 6052 length under 2001:db8::/32, the Well-Known
/// Prefix, and none (EAM only).
pub const POOL6: [Option<(&str, u8)>; 8] = [
    Some(("2001:db8::", 32)),
    Some(("2001:db8:100::", 40)),
    Some(("2001:db8:64::", 48)),
    Some(("2001:db8:64:6400::", 56)),
    Some(("2001:db8:64:64::", 64)),
    Some(("2001:db8:64::", 96)),
    Some(("64:ff9b::", 96)),
    None,
];

/// EAM entries installed when [`Knobs::eam`] is set (RFC 7757 §3.1: equal suffix lengths).
pub const EAMS: [(&str, u8, &str, u8); 3] = [
    ("198.18.0.0", 24, "2001:db8:1::", 120),
    ("192.0.2.1", 32, "2001:db8:2::5", 128),
    ("203.0.113.0", 28, "2001:db8:3::", 124),
];

/// The configuration choices a fuzz input makes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Knobs {
    /// Index into [`POOL6`] (0..8).
    pub pool6: u8,
    /// Install [`EAMS`].
    pub eam: bool,
    /// 0: off, 1: simple, 2: intrinsic.
    pub hairpin: u8,
    /// Drop (not compute) zero UDP checksums.
    pub udp_zero_drop: bool,
    /// RFC 6052 §3.1 enforcement for the Well-Known Prefix.
    pub wkp_strict: bool,
    /// ICMP error rate: 0: disabled, 1: 1/s with burst 1, 2: the default.
    pub icmp_rate: u8,
    /// `reset_traffic_class` and `reset_tos`.
    pub reset_tos: bool,
    /// Don't decrement TTL / Hop Limit.
    pub no_hop_decrement: bool,
    /// `lowest_ipv6_mtu` 1500 instead of 1280.
    pub mtu_1500: bool,
    /// Configure RFC 6791 pools for untranslatable ICMP error sources.
    pub rfc6791: bool,
}

impl Knobs {
    /// Bytes of input the knobs take.
    pub const LEN: usize = 2;

    /// Byte 0: bits 0-2 pool6, bit 3 EAM, bits 4-5 hairpin (3 = intrinsic),
    /// bit 6 UDP zero-checksum drop, bit 7 WKP strict. Byte 1: bits 0-1 ICMP rate
    /// (3 = default), bit 2 reset TOS, bit 3 no hop decrement, bit 4 MTU 1500,
    /// bit 5 RFC 6791 pools; bits 6-7 unused.
    pub fn decode(b: [u8; 2]) -> Knobs {
        Knobs {
            pool6: b[0] & 7,
            eam: b[0] & 8 != 0,
            hairpin: ((b[0] >> 4) & 3).min(2),
            udp_zero_drop: b[0] & 0x40 != 0,
            wkp_strict: b[0] & 0x80 != 0,
            icmp_rate: (b[1] & 3).min(2),
            reset_tos: b[1] & 4 != 0,
            no_hop_decrement: b[1] & 8 != 0,
            mtu_1500: b[1] & 0x10 != 0,
            rfc6791: b[1] & 0x20 != 0,
        }
    }

    /// The bytes that [`Knobs::decode`] turns back into `self`.
    pub fn encode(&self) -> [u8; 2] {
        [
            (self.pool6 & 7)
                | u8::from(self.eam) << 3
                | (self.hairpin.min(2) << 4)
                | u8::from(self.udp_zero_drop) << 6
                | u8::from(self.wkp_strict) << 7,
            self.icmp_rate.min(2)
                | u8::from(self.reset_tos) << 2
                | u8::from(self.no_hop_decrement) << 3
                | u8::from(self.mtu_1500) << 4
                | u8::from(self.rfc6791) << 5,
        ]
    }

    /// A typical SIIT set-up: pool6 2001:db8:64::/96, the EAM entries, intrinsic
    /// hairpinning, default policies.
    pub fn typical() -> Knobs {
        Knobs {
            pool6: 5,
            eam: true,
            hairpin: 2,
            wkp_strict: true,
            icmp_rate: 2,
            ..Knobs::default()
        }
    }

    /// Build the core configuration.
    pub fn config(&self) -> Config {
        let pool6 = POOL6[usize::from(self.pool6 & 7)].map(|(addr, len)| {
            let addr: Ipv6Addr = addr.parse().expect("pool6 address");
            Rfc6052Prefix::new(addr, len).expect("valid RFC 6052 prefix")
        });
        let mut cfg = Config::with_pool6(pool6);
        if self.eam {
            let mut table = EamTable::new();
            for (v4, v4_len, v6, v6_len) in EAMS {
                let v4: Ipv4Addr = v4.parse().expect("EAM IPv4");
                let v6: Ipv6Addr = v6.parse().expect("EAM IPv6");
                table
                    .insert(Eam {
                        v4: v4.octets(),
                        v4_len,
                        v6: v6.octets(),
                        v6_len,
                    })
                    .expect("valid, non-overlapping EAM entry");
            }
            cfg.map.eam = table;
        }
        cfg.map.wkp_strict = self.wkp_strict;
        cfg.hairpin = match self.hairpin {
            0 => HairpinMode::Off,
            1 => HairpinMode::Simple,
            _ => HairpinMode::Intrinsic,
        };
        cfg.udp_zero_checksum = if self.udp_zero_drop {
            UdpZeroChecksum::Drop
        } else {
            UdpZeroChecksum::Compute
        };
        (cfg.icmp_errors_per_sec, cfg.icmp_error_burst) = match self.icmp_rate {
            0 => (0, 0),
            1 => (1, 1),
            _ => (cfg.icmp_errors_per_sec, cfg.icmp_error_burst),
        };
        cfg.reset_traffic_class = self.reset_tos;
        cfg.reset_tos = self.reset_tos;
        cfg.decrement_hop_limit = !self.no_hop_decrement;
        if self.mtu_1500 {
            cfg.lowest_ipv6_mtu = 1500;
        }
        if self.rfc6791 {
            cfg.rfc6791_v4 = vec![
                Ipv4Addr::new(203, 0, 113, 100),
                Ipv4Addr::new(203, 0, 113, 101),
            ];
            cfg.rfc6791_v6 = Some("2001:db8:ffff::1".parse().expect("RFC 6791 IPv6"));
        }
        cfg
    }
}

/// One fuzz input as the targets take it: knob bytes, then the packet.
pub fn input(knobs: &Knobs, packet: &[u8]) -> Vec<u8> {
    let mut v = knobs.encode().to_vec();
    v.extend_from_slice(packet);
    v
}

/// The harness: decode the knobs, force the version nibble to `version`, translate
/// in a buffer with [`HEADROOM`] in front, and assert the invariants (module docs).
pub fn run(data: &[u8], version: u8) {
    let Some((knobs, packet)) = data.split_first_chunk::<{ Knobs::LEN }>() else {
        return;
    };
    let knobs = Knobs::decode(*knobs);
    let mut t = Translator::new(Arc::new(knobs.config()));
    let mut scratch = Scratch::new();

    translate_and_check(&mut t, &mut scratch, packet, version, 0);
}

/// `packet`, its version nibble set to `version`, through `t` at `now`; the
/// outcome checked ([`check_outcome`]). A translated packet must change
/// family, except an IPv6 one the translator hairpinned.
fn translate_and_check(
    t: &mut Translator,
    scratch: &mut Scratch,
    packet: &[u8],
    version: u8,
    now: u64,
) {
    let mut buf = vec![0u8; HEADROOM + packet.len()];
    buf[HEADROOM..].copy_from_slice(packet);
    if let Some(b) = buf.get_mut(HEADROOM) {
        *b = (*b & 0x0f) | (version << 4);
    }
    let input = buf[HEADROOM..].to_vec();
    let in_family = if version == 6 { Family::V6 } else { Family::V4 };
    let hairpinned_before = t.counters().hairpinned;

    let mut pkt = PacketBuf::new(&mut buf, HEADROOM, packet.len());
    let verdict = t.translate(&mut pkt, scratch, now);
    let hairpinned = t.counters().hairpinned > hairpinned_before;
    let want = match (in_family, hairpinned) {
        (Family::V6, true) => Family::V6,
        (Family::V6, false) => Family::V4,
        (Family::V4, _) => Family::V6,
    };

    check_outcome(verdict, pkt.data(), scratch, &input, in_family, want);
}

/// The invariants (module docs) for one verdict: `output` is the packet buffer's
/// contents after the call, `want` the family a translated packet must have.
fn check_outcome(
    verdict: Verdict,
    output: &[u8],
    scratch: &Scratch,
    input: &[u8],
    in_family: Family,
    want: Family,
) {
    match verdict {
        Verdict::Translated => {
            let out = output;
            let s = expect_ok(check_structure(out), "translated packet", input, out);
            assert_eq!(s.family, want, "translated packet has the wrong family");
            assert!(
                scratch.is_empty(),
                "Translated but the scratch area holds packets"
            );
        }
        Verdict::Fragmented(n) => {
            assert!(n >= 1, "Fragmented(0)");
            assert_eq!(
                scratch.len(),
                usize::from(n),
                "Fragmented(n) but scratch differs"
            );
            let frags: Vec<Summary> = scratch
                .packets()
                .map(|p| expect_ok(check_structure(p), "fragment", input, p))
                .collect();
            let input_fragment = check_structure(declared(input)).is_ok_and(|s| s.is_fragment());
            check_fragments(&frags, want, !input_fragment);
        }
        Verdict::Replied(reason) => {
            assert_eq!(
                scratch.len(),
                1,
                "Replied({reason:?}) with {} packets",
                scratch.len()
            );
            let reply = scratch.packets().next().expect("one packet");
            let checks = Checks {
                l4: true,
                inner: false,
            };
            let s = expect_ok(check_with(reply, checks), "ICMP error", input, reply);
            assert_eq!(s.family, in_family, "ICMP error of the wrong family");
            assert!(s.icmp().is_some(), "Replied with a non-ICMP packet");
            assert_eq!(
                Some(s.dst),
                source_of(input),
                "ICMP error not sent to the source"
            );
        }
        Verdict::Dropped(_) | Verdict::Held => {
            assert!(
                scratch.is_empty(),
                "{verdict:?} but the scratch area holds packets"
            );
        }
    }
}

fn expect_ok(r: Result<Summary, String>, what: &str, input: &[u8], output: &[u8]) -> Summary {
    r.unwrap_or_else(|e| {
        panic!("{what} is malformed: {e}\n input: {input:02x?}\noutput: {output:02x?}")
    })
}

fn source_of(pkt: &[u8]) -> Option<IpAddr> {
    match pkt.first()? >> 4 {
        4 => Some(Ipv4Addr::from(<[u8; 4]>::try_from(pkt.get(12..16)?).ok()?).into()),
        6 => Some(Ipv6Addr::from(<[u8; 16]>::try_from(pkt.get(8..24)?).ok()?).into()),
        _ => None,
    }
}

/// `contiguous`: the fragments are one packet split in order. Otherwise (the
/// input was itself a fragment, so a held ICMP first fragment, RFC 7915 §4.2
/// / §5.2, or later fragments that waited for their first, RFC 6146 §3.4,
/// may go out beside it) they must be of one datagram.
/// The input as the core reads it: cut to the length its IP header declares
/// (the core ignores link-layer padding after it), so that a padded fragment
/// is still known as a fragment.
fn declared(p: &[u8]) -> &[u8] {
    let n = match p.first().map(|b| b >> 4) {
        Some(4) if p.len() >= 20 => usize::from(u16::from_be_bytes([p[2], p[3]])),
        Some(6) if p.len() >= 40 => 40 + usize::from(u16::from_be_bytes([p[4], p[5]])),
        _ => p.len(),
    };
    &p[..n.min(p.len())]
}

fn check_fragments(frags: &[Summary], want: Family, contiguous: bool) {
    let mut sorted = frags.to_vec();
    if !contiguous {
        sorted.sort_by_key(|s| s.fragment.map(|f| f.offset));
    }
    let frags = &sorted[..];
    let first = frags[0].fragment;
    for (i, s) in frags.iter().enumerate() {
        assert_eq!(s.family, want, "fragment {i} has the wrong family");
        assert_eq!(
            (s.src, s.dst),
            (frags[0].src, frags[0].dst),
            "fragment {i} addresses"
        );
        if frags.len() == 1 {
            continue;
        }
        let f = s
            .fragment
            .unwrap_or_else(|| panic!("packet {i} of {} is no fragment", frags.len()));
        assert_eq!(Some(f.id), first.map(|f| f.id), "fragment {i} id");
        if !contiguous {
            // Fragments released together (a held first with waiting later
            // ones) are the sender's, as it sent them: duplicates and
            // overlaps stay (no reassembly, RFC 6146 §3.4).
            continue;
        }
        if let Some(next) = frags.get(i + 1) {
            assert!(f.more, "fragment {i} is not the last but has MF=0");
            let data = s.len - s.header_len;
            let n = next.fragment.expect("checked above");
            let end = usize::from(f.offset) + data;
            let next_at = usize::from(n.offset);
            assert!(
                if contiguous {
                    next_at == end
                } else {
                    next_at >= end
                },
                "fragment {} offset {next_at}, fragment {i} ends at {end}",
                i + 1
            );
        }
    }
}

/// The `translate_nat64` target's configuration choices (one byte): bit 0
/// address-dependent filtering, bit 1 drop external TCP, bit 2 port blocks of 16,
/// bit 3 worker 0 of 2, bit 4 per-subscriber limits (8 sessions, 8 ports), bit 5
/// session log with destinations, bit 6 no port-reuse delay (bit 7: state sync,
/// [`run_nat64`]).
pub fn nat64_config(knobs: u8) -> (Config, u16) {
    let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().expect("pool6"), 96).expect("pool6");
    let mut cfg = Config::with_pool6(Some(pool6));
    let mut entry = Pool4Entry::single(NAT64_POOL4);
    entry.prefix_len = 31;
    entry.tcp = PortRange::new(61000, 61127);
    entry.udp = PortRange::new(61000, 61127);
    entry.icmp = PortRange::new(0, 127);
    let mut n = Nat64Config {
        pool4: vec![entry],
        max_sessions: 64,
        max_held_syns: 4,
        ..Nat64Config::default()
    };
    if knobs & 1 != 0 {
        n.filtering = Filtering::AddressDependent;
    }
    n.drop_external_tcp = knobs & 2 != 0;
    if knobs & 4 != 0 {
        n.port_block_size = 16;
    }
    if knobs & 16 != 0 {
        n.max_sessions_per_subscriber = 8;
        n.max_ports_per_subscriber = 8;
    }
    if knobs & 32 != 0 {
        n.event_log = EventLog::Sessions;
        n.log_destinations = true;
    }
    if knobs & 64 != 0 {
        n.timeouts.port_reuse = 0;
    }
    cfg.nat64 = Some(n);
    (cfg, if knobs & 8 != 0 { 2 } else { 1 })
}

/// pool4 of the `translate_nat64` target (a /31).
pub const NAT64_POOL4: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 64);

/// Most packets one `translate_nat64` input drives.
pub const NAT64_MAX_PACKETS: usize = 16;

/// One `translate_nat64` input: the knob byte, then per packet a header byte
/// (bit 7: IPv6, bits 0-6: seconds to advance the clock, with timers, before
/// it), a big-endian length and the packet.
pub fn nat64_input(knobs: u8, packets: &[(bool, u8, Vec<u8>)]) -> Vec<u8> {
    let mut v = vec![knobs];
    for (v6, dt, p) in packets {
        v.push(u8::from(*v6) << 7 | (dt & 0x7f));
        v.extend_from_slice(&(p.len() as u16).to_be_bytes());
        v.extend_from_slice(p);
    }
    v
}

/// The NAT64 harness: a sequence of packets through one stateful translator,
/// with the clock advancing and `tick` run between them. Every verdict meets the
/// invariants of [`run`]; every packet `tick` leaves is an ICMPv4 error that
/// passes the structure check.
pub fn run_nat64(data: &[u8]) {
    let Some((&knobs, rest)) = data.split_first() else {
        return;
    };
    let (cfg, workers) = nat64_config(knobs);
    let mut t = Translator::for_worker(Arc::new(cfg), 0, workers);
    // Knob bit 7: state sync (docs/ha.md). This node owns the first pool4
    // address, a peer the second: packets for it without a mapping wait for
    // the peer's records, which mirror this node's own sessions there.
    let sync = knobs & 0x80 != 0;
    if sync {
        t.enable_replica_export(16);
        t.set_own_pool4_shards(Some(&[(NAT64_POOL4, 32)]));
    }
    run_sequence(t, rest, sync);
}

/// The second pool4 address: a peer's shard with knob bit 7.
const NAT64_PEER4: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 65);

/// With sync: this node's exported changes come back as the peer's records
/// on the peer's address, for another subscriber (the IPv6 host's address
/// with its last bit flipped), so that packets held for them are released.
fn mirror_as_peer(t: &mut Translator, now: u64) {
    let mut changes = Vec::new();
    t.drain_replica_changes(|op, r| changes.push((op, *r)));
    for (op, mut r) in changes {
        r.v4 = NAT64_PEER4;
        r.v6 = Ipv6Addr::from(u128::from(r.v6) ^ 1);
        let _ = t.import_replica(op, &r, now);
    }
}

/// A MAP-T configuration (RFC 7599) for `translate_mapt`: bit 0, a CE (else a
/// BR); bit 1, PSID offset 6 (else 0); the domain is Lencse & Nagy's example
/// (BMR 2001:db8:ce::/51 ↔ 192.0.2.0/24, 13 EA bits), DMR 2001:db8:64::/96, the
/// CE's End-user prefix 2001:db8:ce:11b::/64 and LAN 10.0.0.0/24.
pub fn mapt_config(knobs: u8) -> Config {
    use sixgate_core::mapt::{CeConfig, MapRule, MaptConfig, Napt44Config, Role};
    let dmr = Rfc6052Prefix::new("2001:db8:64::".parse().expect("DMR"), 96).expect("DMR");
    let mut cfg = Config::with_pool6(Some(dmr));
    let a = if knobs & 2 != 0 { 6 } else { 0 };
    let rule = MapRule::new(
        "2001:db8:ce::".parse().expect("rule"),
        51,
        Ipv4Addr::new(192, 0, 2, 0),
        24,
        13,
        a,
    )
    .expect("rule");
    let role = if knobs & 1 != 0 {
        let napt = Napt44Config {
            max_sessions: 64,
            ..Napt44Config::default()
        };
        let eup = ("2001:db8:ce:11b::".parse().expect("prefix"), 64);
        let lan = (Ipv4Addr::new(10, 0, 0, 0), 24);
        Role::Ce(Box::new(CeConfig::new(rule, eup, lan, napt).expect("CE")))
    } else {
        Role::Br
    };
    cfg.mapt = Some(MaptConfig {
        dmr,
        fmrs: vec![rule],
        role,
        hash_key: MaptConfig::DEFAULT_HASH_KEY,
    });
    cfg
}

/// The MAP-T harness: [`run_nat64`]'s packet sequences (same input layout, see
/// [`nat64_input`]) through a BR or a CE chosen by the knob byte
/// ([`mapt_config`]).
pub fn run_mapt(data: &[u8]) {
    let Some((&knobs, rest)) = data.split_first() else {
        return;
    };
    run_sequence(Translator::new(Arc::new(mapt_config(knobs))), rest, false);
}

/// The timers until they are done: an ICMPv4 error for an IPv4 SYN held in
/// vain (an IPv4 packet, as the input was); with sync, translated packets
/// that waited for a record (IPv6, or IPv4 when hairpinned).
fn tick_and_check(t: &mut Translator, scratch: &mut Scratch, input: &[u8], now: u64) {
    while let Some(v) = t.tick(now, scratch) {
        for p in v.scratch_outputs(scratch) {
            let s = expect_ok(check_structure(p), "tick output", input, p);
            if let Verdict::Replied(_) = v {
                assert_eq!(s.family, Family::V4, "tick answers IPv4 packets");
            }
        }
    }
}

/// Packets of `rest` (header byte, length, packet; see [`nat64_input`]) through
/// `t`, with the clock and timers between them, every outcome checked.
fn run_sequence(mut t: Translator, mut rest: &[u8], sync: bool) {
    let mut scratch = Scratch::new();
    let mut now = 0u64;
    for _ in 0..NAT64_MAX_PACKETS {
        let Some((&[h, l0, l1], tail)) = rest.split_first_chunk::<3>() else {
            break;
        };
        let len = usize::from(u16::from_be_bytes([l0, l1])).min(tail.len());
        let (packet, tail) = tail.split_at(len);
        rest = tail;
        if h & 0x7f != 0 {
            now += u64::from(h & 0x7f) * 1_000_000_000;
            tick_and_check(&mut t, &mut scratch, packet, now);
        }
        let version = if h & 0x80 != 0 { 6 } else { 4 };
        translate_and_check(&mut t, &mut scratch, packet, version, now);
        if sync {
            mirror_as_peer(&mut t, now);
            // What the records released leaves now (a worker's exchange).
            if t.held_ready() {
                tick_and_check(&mut t, &mut scratch, packet, now);
            }
        }
    }
    let stats = t.nat64_stats();
    assert!(
        stats.sessions.total() <= stats.session_capacity,
        "session bound"
    );
    t.drain_events(|_| {});
}

#[cfg(test)]
mod tests {
    use super::*;
    use sixgate_testkit::{Ip4, Ip6, split_v4, split_v6};

    #[test]
    fn knobs_round_trip() {
        for b0 in 0..=255u8 {
            for b1 in 0..64u8 {
                let k = Knobs::decode([b0, b1]);
                assert_eq!(Knobs::decode(k.encode()), k);
            }
        }
        assert_eq!(Knobs::decode(Knobs::typical().encode()), Knobs::typical());
    }

    #[test]
    fn fragment_invariant_accepts_a_real_split_and_rejects_a_gap() {
        let v4 = Ip4::new([192, 0, 2, 1].into(), [192, 0, 2, 2].into()).udp(1, 2, 300);
        let frags: Vec<Summary> = split_v4(&v4, 100)
            .iter()
            .map(|f| check_structure(f).unwrap())
            .collect();
        check_fragments(&frags, Family::V4, true);
        let v6 = Ip6::new(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST).udp(1, 2, 300);
        let mut frags: Vec<Summary> = split_v6(&v6, 128, 5)
            .iter()
            .map(|f| check_structure(f).unwrap())
            .collect();
        check_fragments(&frags, Family::V6, true);
        frags.remove(1);
        let gap = std::panic::catch_unwind(|| check_fragments(&frags, Family::V6, true));
        assert!(gap.is_err());
    }

    /// Knob bit 7 (state sync): replies to the peer's address wait and are
    /// released by the mirrored records (or expire), all within the
    /// invariants.
    #[test]
    fn nat64_sync_sequences_run() {
        use sixgate_testkit::tcp_flag::{ACK, SYN};
        let me: Ipv6Addr = "2001:db8:1::5".parse().unwrap();
        let server6: Ipv6Addr = "2001:db8:64::c633:6407".parse().unwrap();
        let server4 = Ipv4Addr::new(198, 51, 100, 7);
        for knobs in [0x80u8, 0x81, 0x88] {
            let seq = [
                (false, 0, Ip4::new(server4, NAT64_PEER4).udp(53, 61010, 8)),
                (true, 0, Ip6::new(me, server6).udp(61010, 53, 8)),
                (
                    false,
                    0,
                    Ip4::new(server4, NAT64_PEER4).tcp_flags(80, 61020, SYN | ACK, 0),
                ),
                (true, 0, Ip6::new(me, server6).tcp_flags(61020, 80, SYN, 0)),
                (false, 0, Ip4::new(server4, NAT64_PEER4).udp(53, 61030, 8)),
                (false, 1, Ip4::new(server4, NAT64_PEER4).udp(53, 61040, 8)),
            ];
            run_nat64(&nat64_input(knobs, &seq));
        }
    }

    /// MAP-T sequences: a BR's valid, spoofed and returning packets, and a CE's
    /// NAPT44 flow out and back, all meet the invariants.
    #[test]
    fn mapt_sequences_run() {
        let ce6: Ipv6Addr = "2001:db8:ce:11b:0:c000:208:1b".parse().unwrap();
        let server6: Ipv6Addr = "2001:db8:64::c633:640a".parse().unwrap();
        let (ce4, server4) = (Ipv4Addr::new(192, 0, 2, 8), Ipv4Addr::new(198, 51, 100, 10));
        let lan = Ipv4Addr::new(10, 0, 0, 2);
        for knobs in 0..4u8 {
            let br = [
                (true, 0, Ip6::new(ce6, server6).udp(55300, 53, 8)),
                (true, 0, Ip6::new(ce6, server6).udp(80, 53, 8)),
                (false, 1, Ip4::new(server4, ce4).udp(53, 55300, 8)),
            ];
            run_mapt(&nat64_input(knobs & 2, &br));
            let ce = [
                (false, 0, Ip4::new(lan, server4).udp(4000, 53, 8)),
                (true, 0, Ip6::new(server6, ce6).udp(53, 55300, 8)),
                (false, 100, Ip4::new(lan, server4).echo_request(7, 1, 8)),
            ];
            run_mapt(&nat64_input(knobs | 1, &ce));
        }
    }
}
