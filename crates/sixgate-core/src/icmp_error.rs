//! RFC 7915 §4.4 and §5.4: ICMP errors the translator itself owes the sender:
//! Time Exceeded when it
//! decrements the hop limit to zero (RFC 7915 §4.1/§5.1), Parameter Problem for an
//! unexhausted Routing header (§5.1), Source Route Failed (§4.1), and
//! "administratively prohibited" for a packet it cannot translate
//! ([`prohibited_v6`], [`prohibited_v4`]).
//!
//! Errors are written to the [`Scratch`], never in place: the offending packet is
//! quoted as it arrived. RFC 4443 §2.4 (e) and RFC 1812 §4.3.2.7 rules apply:
//! no error about an ICMP error, a non-first fragment, or a multicast destination.
//! A token bucket limits the rate (RFC 4443 §2.4 (f)).

use crate::checksum;
use crate::packet::ipv6::nh;
use crate::packet::l4::ICMP_HEADER_LEN;
use crate::packet::{Scratch, ipv4, ipv6};
use crate::rfc7915::mtu::IPV6_MIN_MTU;
use crate::translator::Translator;
use crate::verdict::{DropReason, Verdict};
use zerocopy::{FromBytes, IntoBytes};

/// RFC 1812 §4.3.2.3: an ICMPv4 error quotes as much as fits in 576 bytes.
pub const ICMPV4_ERROR_MAX: usize = 576;
/// RFC 4443 §2.4 (c): an ICMPv6 error must not exceed the minimum IPv6 MTU.
pub const ICMPV6_ERROR_MAX: usize = IPV6_MIN_MTU as usize;
/// Hop limit / TTL of generated errors.
const ERROR_TTL: u8 = 64;

/// An error the translator owes about an offending packet.
pub(crate) struct Owed {
    /// ICMP type.
    pub ty: u8,
    /// ICMP code.
    pub code: u8,
    /// Rest-of-header (pointer or MTU).
    pub rest: [u8; 4],
    /// The drop reason the packet is counted under.
    pub reason: DropReason,
}

impl Owed {
    /// Write the ICMP header (checksum zero) and as much of `offending` as fits.
    fn write(&self, icmp: &mut [u8], offending: &[u8]) {
        let [a, b, c, d] = self.rest;
        icmp[..8].copy_from_slice(&[self.ty, self.code, 0, 0, a, b, c, d]);
        let quote = icmp.len() - 8;
        icmp[8..].copy_from_slice(&offending[..quote]);
    }
}

/// Token bucket check; counts suppressed errors.
fn may_send(t: &mut Translator, now_ns: u64) -> bool {
    if t.icmp_bucket.take(now_ns) {
        true
    } else {
        t.counters.icmp_rate_limited += 1;
        false
    }
}

/// Answer an IPv6 packet with an ICMPv6 error, or drop it quietly when `quiet`
/// (it is an ICMP error, a non-first fragment, or multicast-addressed).
#[cold]
#[inline(never)]
pub(crate) fn reply_v6(
    t: &mut Translator,
    offending: &[u8],
    scratch: &mut Scratch,
    now_ns: u64,
    owed: Owed,
    quiet: bool,
) -> Verdict {
    let src = t.cfg.icmp_source_v6.octets();
    let Ok((orig, _)) = ipv6::Ipv6Header::read_from_prefix(offending) else {
        return Verdict::Dropped(owed.reason);
    };
    if quiet || src == [0; 16] || !may_send(t, now_ns) {
        return Verdict::Dropped(owed.reason);
    }
    let len = (ipv6::HEADER_LEN + ICMP_HEADER_LEN + offending.len()).min(ICMPV6_ERROR_MAX);
    let Some(out) = scratch.push(len) else {
        return Verdict::Dropped(owed.reason);
    };
    let icmp_len = len - ipv6::HEADER_LEN;
    let hdr = ipv6::header(0, icmp_len as u16, nh::ICMPV6, ERROR_TTL, src, orig.src);
    out[..40].copy_from_slice(hdr.as_bytes());
    let icmp = &mut out[40..];
    owed.write(icmp, offending);
    let pseudo = checksum::v6_pseudo(&src, &orig.src, icmp_len as u32, nh::ICMPV6);
    let c = checksum::compute(pseudo, icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    Verdict::Replied(owed.reason)
}

/// Answer an IPv4 packet with an ICMPv4 error, or drop it quietly when `quiet`.
#[cold]
#[inline(never)]
pub(crate) fn reply_v4(
    t: &mut Translator,
    offending: &[u8],
    scratch: &mut Scratch,
    now_ns: u64,
    owed: Owed,
    quiet: bool,
) -> Verdict {
    let src = t.cfg.icmp_source_v4.octets();
    let Ok((orig, _)) = ipv4::Ipv4Header::read_from_prefix(offending) else {
        return Verdict::Dropped(owed.reason);
    };
    if quiet || !may_send(t, now_ns) {
        return Verdict::Dropped(owed.reason);
    }
    let len = (ipv4::HEADER_LEN + ICMP_HEADER_LEN + offending.len()).min(ICMPV4_ERROR_MAX);
    let Some(out) = scratch.push(len) else {
        return Verdict::Dropped(owed.reason);
    };
    let id = t.ids.next(src, orig.src, nh::ICMP);
    let hdr = ipv4::header(0, len as u16, id, 0, ERROR_TTL, nh::ICMP, src, orig.src);
    out[..20].copy_from_slice(hdr.as_bytes());
    let icmp = &mut out[20..];
    owed.write(icmp, offending);
    let c = checksum::compute(0, icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    Verdict::Replied(owed.reason)
}

/// RFC 7915 §5.4: an IPv6 packet the translator discards gets ICMPv6 Destination
/// Unreachable, Code 1 (communication administratively prohibited), "unless the
/// discarded packet is itself an ICMPv6 message" (`quiet`, with non-first
/// fragments), rate-limited like every error it sends; counted under `reason`.
#[cold]
#[inline(never)]
pub(crate) fn prohibited_v6(
    t: &mut Translator,
    offending: &[u8],
    scratch: &mut Scratch,
    now_ns: u64,
    reason: DropReason,
    quiet: bool,
) -> Verdict {
    let owed = Owed {
        ty: crate::rfc7915::icmp_map::v6::DEST_UNREACH,
        code: crate::rfc7915::icmp_map::v6::CODE_ADMIN_PROHIBITED,
        rest: [0; 4],
        reason,
    };
    reply_v6(t, offending, scratch, now_ns, owed, quiet)
}

/// RFC 7915 §4.4: an IPv4 packet the translator discards gets ICMPv4 Destination
/// Unreachable, Code 13 (communication administratively prohibited), unless it
/// is itself an ICMPv4 message or a non-first fragment (`quiet`).
#[cold]
#[inline(never)]
pub(crate) fn prohibited_v4(
    t: &mut Translator,
    offending: &[u8],
    scratch: &mut Scratch,
    now_ns: u64,
    reason: DropReason,
    quiet: bool,
) -> Verdict {
    let owed = Owed {
        ty: crate::rfc7915::icmp_map::v4::DEST_UNREACH,
        code: crate::rfc7915::icmp_map::v4::CODE_ADMIN_PROHIBITED,
        rest: [0; 4],
        reason,
    };
    reply_v4(t, offending, scratch, now_ns, owed, quiet)
}
