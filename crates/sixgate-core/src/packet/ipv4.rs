//! IPv4 header view (RFC 791 §3.1).

use zerocopy::byteorder::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Fixed part of the IPv4 header.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug)]
#[repr(C)]
pub struct Ipv4Header {
    /// Version (4) and IHL in 32-bit words.
    pub ver_ihl: u8,
    /// Type of Service / DSCP+ECN.
    pub tos: u8,
    /// Total length, header included.
    pub total_len: U16,
    /// Identification.
    pub id: U16,
    /// Flags (reserved, DF, MF) and fragment offset in 8-byte units.
    pub flags_frag: U16,
    /// Time to live.
    pub ttl: u8,
    /// Upper-layer protocol.
    pub proto: u8,
    /// Header checksum.
    pub checksum: U16,
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
}

/// Length of the fixed header.
pub const HEADER_LEN: usize = 20;
/// Don't Fragment flag in `flags_frag`.
pub const DF: u16 = 0x4000;
/// More Fragments flag in `flags_frag`.
pub const MF: u16 = 0x2000;
/// Fragment offset mask in `flags_frag`.
pub const OFFSET_MASK: u16 = 0x1fff;

impl Ipv4Header {
    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.ver_ihl & 0x0f) * 4
    }
    /// DF flag.
    pub fn df(&self) -> bool {
        self.flags_frag.get() & DF != 0
    }
    /// MF flag.
    pub fn mf(&self) -> bool {
        self.flags_frag.get() & MF != 0
    }
    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> usize {
        usize::from(self.flags_frag.get() & OFFSET_MASK) * 8
    }
    /// True for any fragment (first, middle or last).
    pub fn is_fragment(&self) -> bool {
        self.flags_frag.get() & (MF | OFFSET_MASK) != 0
    }
}

/// An IPv4 packet whose header has been checked.
#[derive(Clone, Copy, Debug)]
pub struct Ipv4Packet {
    /// The fixed header.
    pub hdr: Ipv4Header,
    /// Header length with options.
    pub ihl: usize,
    /// Total Length. For a quoted packet this may exceed the bytes present.
    pub total_len: usize,
    /// RFC 7915 §4.1: carries a Loose or Strict Source Route option that is not used up.
    pub unexpired_source_route: bool,
}

/// Why an IPv4 packet cannot be translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ipv4Error {
    /// Lengths inconsistent, header cut off, or an option overruns the header.
    Malformed,
    /// Header checksum does not verify.
    Checksum,
}

/// Option types (RFC 791 §3.1).
const OPT_END: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_LSRR: u8 = 131;
const OPT_SSRR: u8 = 137;

/// Parse and check an IPv4 header. `quoted` is for the packet inside an ICMP error:
/// it may be truncated, and its checksum and options are not checked.
#[inline(always)]
pub fn parse(data: &[u8], quoted: bool) -> Result<Ipv4Packet, Ipv4Error> {
    let (hdr, _) = Ipv4Header::read_from_prefix(data).map_err(|_| Ipv4Error::Malformed)?;
    let ihl = hdr.header_len();
    let total_len = usize::from(hdr.total_len.get());
    if hdr.ver_ihl >> 4 != 4 || ihl < HEADER_LEN || ihl > data.len() || total_len < ihl {
        return Err(Ipv4Error::Malformed);
    }
    let mut unexpired_source_route = false;
    if !quoted {
        if total_len > data.len() {
            return Err(Ipv4Error::Malformed);
        }
        if crate::checksum::sum(&data[..ihl]) != 0xffff {
            return Err(Ipv4Error::Checksum);
        }
        unexpired_source_route = has_unexpired_source_route(&data[HEADER_LEN..ihl])?;
    }
    Ok(Ipv4Packet {
        hdr,
        ihl,
        total_len,
        unexpired_source_route,
    })
}

/// RFC 7915 §4.1: options are ignored, except an unexpired source route.
fn has_unexpired_source_route(mut opts: &[u8]) -> Result<bool, Ipv4Error> {
    while let Some(&kind) = opts.first() {
        match kind {
            OPT_END => break,
            OPT_NOP => opts = &opts[1..],
            _ => {
                let len = usize::from(*opts.get(1).ok_or(Ipv4Error::Malformed)?);
                if len < 2 || len > opts.len() {
                    return Err(Ipv4Error::Malformed);
                }
                // The route is used up once the pointer passes the option's end.
                if matches!(kind, OPT_LSRR | OPT_SSRR) && len >= 3 && usize::from(opts[2]) <= len {
                    return Ok(true);
                }
                opts = &opts[len..];
            }
        }
    }
    Ok(false)
}

/// A fixed 20-byte IPv4 header with its checksum filled in.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn header(
    tos: u8,
    total_len: u16,
    id: u16,
    flags_frag: u16,
    ttl: u8,
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
) -> Ipv4Header {
    let mut h = Ipv4Header {
        ver_ihl: 0x45,
        tos,
        total_len: U16::new(total_len),
        id: U16::new(id),
        flags_frag: U16::new(flags_frag),
        ttl,
        proto,
        checksum: U16::new(0),
        src,
        dst,
    };
    // The sum of the fields as 16-bit words, without re-reading the bytes.
    let words = 0x4500
        + u64::from(tos)
        + u64::from(total_len)
        + u64::from(id)
        + u64::from(flags_frag)
        + (u64::from(ttl) << 8 | u64::from(proto))
        + u64::from(u32::from_be_bytes(src))
        + u64::from(u32::from_be_bytes(dst));
    h.checksum = U16::new(!crate::checksum::fold(words));
    h
}

/// RFC 1812 §5.3.7, RFC 3927 §7, RFC 7915 §4.1: addresses a router must never
/// forward from or to: 0/8 ("this network"), 127/8 (loopback), 169.254/16
/// (link-local), 224/4 (multicast), 240/4 (reserved) and 255.255.255.255.
#[inline(always)]
pub fn is_never_forwarded(a: [u8; 4]) -> bool {
    never_forwarded(u32::from_be_bytes(a))
}

/// One bit per first octet that is never forwarded: 0, 127, 224–255.
const NEVER_FIRST_OCTET: [u64; 4] = [1, 1 << 63, 0, 0xffff_ffff_0000_0000];

/// [`is_never_forwarded`] on an integer address.
#[inline(always)]
pub fn never_forwarded(a: u32) -> bool {
    let o = a >> 24;
    (NEVER_FIRST_OCTET[(o >> 6) as usize] >> (o & 63)) & 1 != 0 || a >> 16 == 0xa9fe
}

/// [`never_forwarded`], but with 240.0.0.0/4 forwarded when `class_e` is set
/// (RFC 1812 §5.3.7 lets an operator switch the check off; `[translator]
/// class_e`). 255.255.255.255, the limited broadcast, never is.
#[inline]
pub fn never_forwarded_unless_class_e(a: u32, class_e: bool) -> bool {
    never_forwarded(a) && !(class_e && a >> 28 == 0xf && a != u32::MAX)
}

/// First octets that may be [`never_forwarded`]: 0, 127, 169, 224–255.
static SUSPECT_FIRST_OCTET: [bool; 256] = {
    let mut t = [false; 256];
    let mut o = 0;
    while o < 256 {
        t[o] = o == 0 || o == 127 || o == 169 || o >= 224;
        o += 1;
    }
    t
};

/// [`may_be_never_forwarded`] on the first octets alone.
#[inline(always)]
pub fn may_be_never_forwarded_octets(a: u8, b: u8) -> bool {
    SUSPECT_FIRST_OCTET[usize::from(a)] | SUSPECT_FIRST_OCTET[usize::from(b)]
}

/// Cheap pre-filter for the packet path: false means neither address is
/// [`never_forwarded`]; true means one may be (ask it).
#[inline(always)]
pub fn may_be_never_forwarded(a: u32, b: u32) -> bool {
    SUSPECT_FIRST_OCTET[(a >> 24) as usize] | SUSPECT_FIRST_OCTET[(b >> 24) as usize]
}

/// Sources a router must not forward from ([`is_never_forwarded`]).
#[inline(always)]
pub fn is_bad_source(a: [u8; 4]) -> bool {
    is_never_forwarded(a)
}

/// Destinations a router must not forward to ([`is_never_forwarded`]).
#[inline(always)]
pub fn is_bad_destination(a: [u8; 4]) -> bool {
    is_never_forwarded(a)
}

/// RFC 7915 §4.1: an ICMPv4 *error* from an illegal unicast source (0/8,
/// 127/8, 169.254/16: a misconfigured router) is still translated, for
/// troubleshooting; multicast, reserved and broadcast sources never are.
#[inline]
pub fn is_error_source_allowed(a: [u8; 4]) -> bool {
    a[0] < 224
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1812 §5.3.7 and RFC 3927 §7: each block, first and last address, and
    /// its neighbours outside.
    #[test]
    fn rfc1812_s5_3_7_never_forwarded() {
        for bad in [
            [0, 0, 0, 0],
            [0, 255, 255, 255],
            [127, 0, 0, 1],
            [127, 255, 255, 255],
            [169, 254, 0, 0],
            [169, 254, 255, 255],
            [224, 0, 0, 1],
            [239, 255, 255, 255],
            [240, 0, 0, 0],
            [255, 255, 255, 255],
        ] {
            assert!(is_bad_source(bad) && is_bad_destination(bad), "{bad:?}");
        }
        for good in [
            [1, 0, 0, 0],
            [126, 255, 255, 255],
            [128, 0, 0, 0],
            [169, 253, 255, 255],
            [169, 255, 0, 0],
            [223, 255, 255, 255],
        ] {
            assert!(
                !is_bad_source(good) && !is_bad_destination(good),
                "{good:?}"
            );
        }
        for o in 0..=255u8 {
            for b in [0u8, 254, 255] {
                let a = [o, b, 1, 2];
                let want = o == 0 || o == 127 || o >= 224 || (o == 169 && b == 254);
                assert_eq!(is_never_forwarded(a), want, "{a:?}");
                let x = u32::from_be_bytes(a);
                assert!(!want || may_be_never_forwarded(x, 0x0102_0304), "{a:?}");
            }
        }
        // `class_e = "translate"`: RFC 1812 §5.3.7's switch, 240/4 only.
        for o in 0..=255u8 {
            for b in [0u8, 255] {
                let x = u32::from_be_bytes([o, b, 255, 255]);
                assert_eq!(never_forwarded_unless_class_e(x, false), never_forwarded(x));
                let want = never_forwarded(x) && (o < 240 || x == u32::MAX);
                assert_eq!(never_forwarded_unless_class_e(x, true), want, "{x:#x}");
            }
        }
        assert!(is_error_source_allowed([127, 0, 0, 1]));
        assert!(is_error_source_allowed([0, 0, 0, 0]));
        assert!(!is_error_source_allowed([224, 0, 0, 1]));
        assert!(!is_error_source_allowed([255, 255, 255, 255]));
    }
}
