//! `Translator::translate_with(.., partial_csum = true)`: packets whose TCP/UDP
//! checksum is left to offload (Linux CHECKSUM_PARTIAL). The field holds the
//! pseudo-header sum; after translation, completing it over the transport bytes
//! must give a checksum the independent oracle accepts.

mod common;

use common::*;
use sixgate_core::{HEADROOM, PacketBuf, Verdict, checksum};
use sixgate_testkit::{Family, Ip4, Ip6};
use std::net::Ipv6Addr;

/// Turn a packet with a complete TCP/UDP checksum into its CHECKSUM_PARTIAL form:
/// the field holds the folded pseudo-header sum. Returns (l4 offset, field offset).
fn make_partial(p: &mut [u8]) -> (usize, usize) {
    let (l4, proto) = match p[0] >> 4 {
        4 => (usize::from(p[0] & 15) * 4, p[9]),
        _ => (40, p[6]),
    };
    let at = if proto == 6 { 16 } else { 6 };
    let len = p.len() - l4;
    let pseudo = match p[0] >> 4 {
        4 => checksum::v4_pseudo(
            &p[12..16].try_into().unwrap(),
            &p[16..20].try_into().unwrap(),
            len as u16,
            proto,
        ),
        _ => checksum::v6_pseudo(
            &p[8..24].try_into().unwrap(),
            &p[24..40].try_into().unwrap(),
            len as u32,
            proto,
        ),
    };
    p[l4 + at..l4 + at + 2].copy_from_slice(&pseudo.to_be_bytes());
    (l4, at)
}

/// What the device does with CHECKSUM_PARTIAL: sum from csum_start to the end
/// (the field included) and store the complement.
fn complete(p: &mut [u8], csum_start: usize, csum_offset: usize) {
    let mut c = !checksum::sum(&p[csum_start..]);
    if csum_offset == 6 && c == 0 {
        c = 0xffff;
    }
    p[csum_start + csum_offset..csum_start + csum_offset + 2].copy_from_slice(&c.to_be_bytes());
}

/// Translate with a partial checksum; return the verdict, the output and the new
/// transport offset (shifted by the header size change).
fn run_partial(h: &mut Harness, input: &[u8]) -> (Verdict, Vec<u8>, usize, usize) {
    let mut p = input.to_vec();
    let (l4, at) = make_partial(&mut p);
    let mut buf = vec![0u8; HEADROOM + p.len()];
    buf[HEADROOM..].copy_from_slice(&p);
    let mut pkt = PacketBuf::new(&mut buf, HEADROOM, p.len());
    let v = h.t.translate_with(&mut pkt, &mut h.scratch, 0, true);
    let out = pkt.data().to_vec();
    let new_l4 = (l4 as isize + out.len() as isize - p.len() as isize) as usize;
    (v, out, new_l4, at)
}

#[track_caller]
fn check_completed(h: &mut Harness, input: &[u8], family: Family) {
    let (v, mut out, l4, at) = run_partial(h, input);
    assert_eq!(v, Verdict::Translated);
    // Still partial: the oracle must not accept it as is (unless by chance).
    complete(&mut out, l4, at);
    let s = sixgate_testkit::check(&out).unwrap_or_else(|e| panic!("oracle: {e}"));
    assert_eq!(s.family, family);
    assert!(s.l4_verified);
}

#[test]
fn tcp_6to4_partial() {
    let mut h = Harness::sample();
    for len in [0, 1, 100, 1400, 8000, 60000] {
        check_completed(
            &mut h,
            &Ip6::new(CLIENT6, SERVER6).tcp(40000, 80, len),
            Family::V4,
        );
    }
}

#[test]
fn tcp_4to6_partial() {
    let mut h = Harness::sample();
    for len in [0, 1, 100, 1400, 8000, 60000] {
        check_completed(
            &mut h,
            &Ip4::new(SERVER4, CLIENT4).tcp(80, 40000, len),
            Family::V6,
        );
    }
}

#[test]
fn udp_both_ways_partial() {
    let mut h = Harness::sample();
    for len in [0, 7, 512, 1200, 30000] {
        check_completed(
            &mut h,
            &Ip6::new(CLIENT6, SERVER6).udp(5000, 53, len),
            Family::V4,
        );
        check_completed(
            &mut h,
            &Ip4::new(SERVER4, CLIENT4).udp(53, 5000, len),
            Family::V6,
        );
    }
}

/// A partial UDP field can be zero-looking only by coincidence, and must never be
/// treated as "no checksum" (RFC 7915 §4.5 is about final checksums).
#[test]
fn udp_partial_zero_field_is_a_sum() {
    let mut h = Harness::sample();
    let input = Ip4::new(SERVER4, CLIENT4).udp(53, 5000, 40);
    let mut p = input.clone();
    let (l4, at) = make_partial(&mut p);
    // Force the field to 0 and remember what it should have been (0 == 0xffff).
    let real = u16::from_be_bytes([p[l4 + at], p[l4 + at + 1]]);
    p[l4 + at..l4 + at + 2].copy_from_slice(&[0, 0]);
    let mut buf = vec![0u8; HEADROOM + p.len()];
    buf[HEADROOM..].copy_from_slice(&p);
    let mut pkt = PacketBuf::new(&mut buf, HEADROOM, p.len());
    let v = h.t.translate_with(&mut pkt, &mut h.scratch, 0, true);
    assert_eq!(v, Verdict::Translated);
    assert_eq!(
        h.t.counters()
            .drops(sixgate_core::DropReason::UdpZeroChecksum),
        0
    );
    // The field was updated, not filled in from scratch: restoring the real sum's
    // share gives a checksum that verifies.
    let mut out = pkt.data().to_vec();
    let f = u16::from_be_bytes([out[40 + at], out[40 + at + 1]]);
    let fixed = checksum::add(f, real);
    out[40 + at..40 + at + 2].copy_from_slice(&fixed.to_be_bytes());
    complete(&mut out, 40, at);
    assert!(sixgate_testkit::check(&out).unwrap().l4_verified);
}

/// RFC 7757 §4 hairpin: IPv6 → IPv4 → IPv6 with the partial rule applied twice.
#[test]
fn hairpin_partial() {
    let mut h = Harness::sample();
    let other: Ipv6Addr = "2001:db8:64::c612:7".parse().unwrap(); // 198.18.0.7 via pool6
    let (v, mut out, l4, at) = run_partial(&mut h, &Ip6::new(CLIENT6, other).tcp(1, 2, 500));
    assert_eq!(v, Verdict::Translated);
    assert_eq!(h.t.counters().hairpinned, 1);
    complete(&mut out, l4, at);
    let s = sixgate_testkit::check(&out).unwrap();
    assert_eq!(s.family, Family::V6);
    assert!(s.l4_verified);
}

/// `translate` is `translate_with(.., false)`: a complete checksum stays complete.
#[test]
fn translate_is_translate_with_false() {
    let input = Ip6::new(CLIENT6, SERVER6).tcp(40000, 80, 100);
    let a = Harness::sample().one(&input);
    // A fresh translator: the per-flow IPv4 ID starts at the same value.
    let mut h = Harness::sample();
    let mut buf = vec![0u8; HEADROOM + input.len()];
    buf[HEADROOM..].copy_from_slice(&input);
    let mut pkt = PacketBuf::new(&mut buf, HEADROOM, input.len());
    assert_eq!(
        h.t.translate_with(&mut pkt, &mut h.scratch, 0, false),
        Verdict::Translated
    );
    assert_eq!(pkt.data(), &a[..]);
}
