//! RFC 4884 multi-part ICMP errors through the translator (RFC 7915 §4.2 and
//! §5.2, "ICMP Error Payload"): the length attribute follows the translated
//! quote (32-bit words on ICMPv4, 64-bit on ICMPv6), the quote is padded again
//! (RFC 4884 §4: a multiple of the unit, at least 128 bytes), the extension
//! structure follows unchanged, and where the whole would exceed 576 / 1280
//! bytes the quote is cut to make room (never below 128 bytes); only then is the
//! extension removed, never cut. Every output goes through the testkit oracle,
//! which checks the padding and the extension's own checksum.

mod common;

use common::*;
use sixgate_core::Verdict;
use sixgate_testkit::{Ip4, Ip6, truncate};
use std::net::{IpAddr, Ipv6Addr};

const ROUTER_V6_EAM: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);

/// An RFC 4884 §7 extension structure of `len` bytes (a multiple of 4, at least
/// 8): version 2 header, one object of opaque data, checksum filled in.
fn extension(len: usize) -> Vec<u8> {
    let mut e = vec![0x20, 0, 0, 0];
    let obj = len - 4;
    e.extend_from_slice(&(obj as u16).to_be_bytes());
    e.extend_from_slice(&[2, 1]); // class 2 (interface information), c-type 1
    e.extend((0..obj - 4).map(|i| (i * 13 + 1) as u8));
    let c = sixgate_testkit::csum::checksum(&e);
    e[2..4].copy_from_slice(&c.to_be_bytes());
    e
}

/// `quote` padded with zeros to `field` bytes, then `ext`.
fn multipart(quote: &[u8], field: usize, ext: &[u8]) -> Vec<u8> {
    let mut b = quote.to_vec();
    b.resize(field, 0);
    b.extend_from_slice(ext);
    b
}

/// ICMPv4 Time Exceeded from a router about the client's packet; length
/// attribute `field / 4` in byte 5.
fn v4_multipart(quote: &[u8], field: usize, ext: &[u8]) -> Vec<u8> {
    let rest = [0, (field / 4) as u8, 0, 0];
    Ip4::new(ROUTER4, CLIENT4).icmp_error(11, 0, rest, &multipart(quote, field, ext))
}

/// ICMPv6 Destination Unreachable (port) from an EAM'd host about the server's
/// packet; length attribute `field / 8` in byte 4.
fn v6_multipart(quote: &[u8], field: usize, ext: &[u8]) -> Vec<u8> {
    let rest = [(field / 8) as u8, 0, 0, 0];
    Ip6::new(ROUTER_V6_EAM, SERVER6).icmp_error(1, 4, rest, &multipart(quote, field, ext))
}

/// IPv4 → IPv6 with extensions of several sizes: the 48-byte IPv4 quote
/// becomes 68 bytes of IPv6, padded to 128 (length 16 in 64-bit words); the
/// extension follows as it was.
#[test]
fn rfc7915_s4_2_rfc4884_length_adjusted_padding_and_extension_kept() {
    let mut h = Harness::sample();
    let quote = Ip4::new(CLIENT4, SERVER4).udp(5353, 53, 20);
    for ext_len in [8, 12, 100, 400] {
        let ext = extension(ext_len);
        let out = h.one(&v4_multipart(&quote, 128, &ext));
        let s = view(&out);
        assert_eq!(s.icmp(), Some((3, 0)), "Time Exceeded");
        assert_eq!(out[44], 16, "length attribute: 128 bytes in 64-bit words");
        assert_eq!(out.len(), 40 + 8 + 128 + ext_len);
        assert_eq!(&out[48 + 68..48 + 128], &[0; 60][..], "zero padding");
        assert_eq!(&out[48 + 128..], &ext[..], "extension unchanged");
        let i = s.inner.unwrap();
        assert_eq!((i.src, i.dst), (IpAddr::V6(CLIENT6), IpAddr::V6(SERVER6)));
        assert_eq!(i.l4_checksum_ok, Some(true));
    }
}

/// RFC 7915 §4.2: "the ICMP error message ... needs to be truncated" to 1280
/// bytes (RFC 4443 §2.4 (c)); RFC 4884 §4: the original datagram field may be
/// shortened, "at least 128 octets". So the quote is cut, the extension kept:
/// a 580-byte IPv4 quote (600 as IPv6) with a 640-byte extension would make
/// 1288 bytes; the field is cut to 592 (74 64-bit words) and the message is
/// exactly 1280. When not even a 128-byte field leaves room, the extension is
/// removed (length attribute 0), never cut.
#[test]
fn rfc7915_s4_2_rfc4884_quote_cut_to_fit_1280_extension_kept() {
    let mut h = Harness::sample();
    let quote = truncate(&Ip4::new(CLIENT4, SERVER4).udp(5353, 53, 1400), 580);
    let ext = extension(640);
    let out = h.one(&v4_multipart(&quote, 580, &ext));
    assert_eq!(out.len(), 1280);
    assert_eq!(out[44], 74, "length attribute: 592 bytes in 64-bit words");
    assert_eq!(&out[48 + 592..], &ext[..], "extension whole");
    assert!(view(&out).inner.unwrap().truncated());
    // A 1000-byte quote (1020 as IPv6, cut to 1016) with 208 bytes: 1272.
    let quote = truncate(&Ip4::new(CLIENT4, SERVER4).udp(5353, 53, 1400), 1000);
    let out = h.one(&v4_multipart(&quote, 1000, &extension(208)));
    assert_eq!((out.len(), out[44]), (48 + 1016 + 208, 127));
    // 48 + 128 + 1108 > 1280: no room even for the shortest field.
    let out = h.one(&v4_multipart(&quote, 1000, &extension(1108)));
    assert_eq!(out[44], 0, "no extension, no length attribute");
    assert_eq!(out.len(), 48 + 1020, "the quote alone, unpadded");
    assert!(view(&out).inner.unwrap().truncated());
}

/// RFC 4884 §3, §4.1/§4.4: a quote its sender cut at 128 bytes (the datagram
/// was longer) is the first 148 bytes as IPv6; the field becomes 144 bytes (18
/// words), cut to the unit, not 152 with zeros where the datagram had data. A
/// whole datagram of 126 bytes (146 as IPv6) is zero-padded to 152 (19 words).
#[test]
fn rfc4884_s4_cut_quote_cut_to_the_unit_whole_one_padded() {
    let mut h = Harness::sample();
    let ext = extension(12);
    let cut = truncate(&Ip4::new(CLIENT4, SERVER4).udp(5353, 53, 600), 128);
    let out = h.one(&v4_multipart(&cut, 128, &ext));
    assert_eq!((out[44], out.len()), (18, 48 + 144 + 12));
    assert_eq!(&out[48 + 144..], &ext[..]);
    let whole = Ip4::new(CLIENT4, SERVER4).udp(5353, 53, 98);
    assert_eq!(whole.len(), 126);
    let out = h.one(&v4_multipart(&whole, 128, &ext));
    assert_eq!((out[44], out.len()), (19, 48 + 152 + 12));
    assert_eq!(&out[48 + 146..48 + 152], &[0; 6][..], "zero padding");
    assert_eq!(view(&out).inner.unwrap().l4_checksum_ok, Some(true));
    // IPv6 → IPv4: a cut 128-byte quote is 108 bytes as IPv4, padded to the
    // 128-byte minimum (32 words).
    let cut6 = truncate(&Ip6::new(SERVER6, CLIENT6).udp(53, 5353, 600), 128);
    let out = h.one(&v6_multipart(&cut6, 128, &ext));
    assert_eq!((out[25], out.len()), (32, 28 + 128 + 12));
}

/// IPv6 → IPv4 with extensions of several sizes: the 68-byte IPv6 quote
/// becomes 48 bytes of IPv4, padded to 128 (length 32 in 32-bit words).
#[test]
fn rfc7915_s5_2_rfc4884_length_adjusted_padding_and_extension_kept() {
    let mut h = Harness::sample();
    let quote = Ip6::new(SERVER6, CLIENT6).udp(53, 5353, 20);
    for ext_len in [8, 12, 100, 400] {
        let ext = extension(ext_len);
        let out = h.one(&v6_multipart(&quote, 128, &ext));
        let s = view(&out);
        assert_eq!(s.icmp(), Some((3, 3)), "port unreachable");
        assert_eq!(
            out[20 + 5],
            32,
            "length attribute: 128 bytes in 32-bit words"
        );
        assert_eq!(out.len(), 20 + 8 + 128 + ext_len);
        assert_eq!(&out[28 + 48..28 + 128], &[0; 80][..], "zero padding");
        assert_eq!(&out[28 + 128..], &ext[..], "extension unchanged");
        assert_eq!(s.df, Some(false));
        assert_eq!(s.inner.unwrap().l4_checksum_ok, Some(true));
    }
}

/// RFC 7915 §5.2: the ICMPv4 error is truncated to 576 bytes (RFC 1812
/// §4.3.2.3), the quote cut rather than the extension: a 528-byte IPv6 quote
/// (508 as IPv4) with a 40-byte extension is exactly 576 bytes, length 127
/// 32-bit words; a 400-byte quote (380) with 168 bytes likewise; with 200
/// bytes the quote is cut to 348; with 424 not even 128 bytes fit: the
/// extension goes.
#[test]
fn rfc7915_s5_2_rfc4884_quote_cut_to_fit_576_extension_kept() {
    let mut h = Harness::sample();
    let quote = truncate(&Ip6::new(SERVER6, CLIENT6).udp(53, 5353, 1000), 528);
    let ext = extension(40);
    let out = h.one(&v6_multipart(&quote, 528, &ext));
    assert_eq!(out.len(), 576);
    assert_eq!(out[25], 127, "508 bytes in 32-bit words");
    assert_eq!(&out[28 + 508..], &ext[..], "extension whole");
    let quote = truncate(&Ip6::new(SERVER6, CLIENT6).udp(53, 5353, 1000), 400);
    let out = h.one(&v6_multipart(&quote, 400, &extension(168)));
    assert_eq!((out.len(), out[25]), (576, 95));
    let out = h.one(&v6_multipart(&quote, 400, &extension(200)));
    assert_eq!((out.len(), out[25]), (576, 87), "348 bytes in 32-bit words");
    let out = h.one(&v6_multipart(&quote, 400, &extension(424)));
    assert_eq!(out[25], 0);
    assert_eq!(out.len(), 28 + 380);
}

/// RFC 4884 §5.4: a "non-compliant" multi-part message (length attribute 0, the
/// extension after a 128-byte quote) is an ordinary error: translated whole, as
/// before, its tail as part of the quote.
#[test]
fn rfc4884_s5_4_non_compliant_message_still_translated() {
    let mut h = Harness::sample();
    let quote = truncate(&Ip4::new(CLIENT4, SERVER4).udp(5353, 53, 600), 128);
    let input = Ip4::new(ROUTER4, CLIENT4).icmp_error(
        11,
        0,
        [0; 4],
        &multipart(&quote, 128, &extension(12)),
    );
    let (v, out) = h.run(&input);
    assert_eq!(v, Verdict::Translated);
    assert_eq!(out[0][44], 0);
    assert_eq!(
        out[0].len(),
        input.len() + 40,
        "both headers 20 bytes longer"
    );
}

/// RFC 7915 §5.2 with RFC 4884 §5.4: an ICMPv6 error with length attribute 0
/// and no extension is translated as it always was: its whole tail is the
/// quote, the ICMPv4 length attribute stays 0, nothing is padded.
#[test]
fn rfc7915_s5_2_rfc4884_length_0_without_extension_unchanged() {
    let mut h = Harness::sample();
    let quote = truncate(&Ip6::new(SERVER6, CLIENT6).udp(53, 5353, 1000), 300);
    let out = h.one(&Ip6::new(ROUTER_V6_EAM, SERVER6).icmp_error(1, 4, [0; 4], &quote));
    assert_eq!(out[25], 0);
    assert_eq!(out.len(), 28 + 280);
    assert!(view(&out).inner.unwrap().truncated());
}

/// Types without a length attribute (ICMPv6 Packet Too Big and Parameter
/// Problem) cannot carry an extension: Fragmentation Needed with one loses it.
#[test]
fn rfc7915_s4_2_rfc4884_extension_dropped_where_the_type_has_no_length() {
    let mut h = Harness::sample();
    let quote = truncate(&Ip4::new(CLIENT4, SERVER4).udp(5353, 53, 1400), 128);
    let body = multipart(&quote, 128, &extension(12));
    let input = Ip4::new(ROUTER4, CLIENT4).icmp_error(3, 4, [0, 32, 0x05, 0x78], &body);
    let out = h.one(&input);
    assert_eq!(view(&out).icmp(), Some((2, 0)));
    assert_eq!(
        out.len(),
        48 + 148,
        "the 128-byte quote as IPv6, nothing after"
    );
}
