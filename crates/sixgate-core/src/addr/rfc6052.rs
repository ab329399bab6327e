//! RFC 6052 IPv4-embedded IPv6 addresses.
//!
//! An RFC 6052 prefix (`pool6`) is an IPv6 prefix of length 32, 40, 48, 56, 64 or 96
//! under which every IPv4 address has exactly one IPv6 representation (§2.2):
//!
//! ```text
//! +--+---+---+---+---+---+---+---+---+---+---+---+---+---+---+---+---+
//! |PL| 0-------------32--40--48--56--64--72--80--88--96--104---------|
//! +--+---+---+---+---+---+---+---+---+---+---+---+---+---+---+---+---+
//! |32|     prefix    |v4(32)         | u | suffix                    |
//! |40|     prefix        |v4(24)     | u |(8)| suffix                |
//! |48|     prefix            |v4(16) | u | (16)  | suffix            |
//! |56|     prefix                |(8)| u |  v4(24)   | suffix        |
//! |64|     prefix                    | u |   v4(32)      | suffix    |
//! |96|     prefix                                    |    v4(32)     |
//! +--+---+---+---+---+---+---+---+---+---+---+---+---+---+---+---+---+
//! ```
//!
//! Bits 64..72, the "u" octet, are reserved for compatibility with the RFC 4291 host
//! identifier format and must be zero; so must the suffix. When building an address we
//! write zeros there; when extracting we ignore whatever is there (liberal in what we
//! accept, as Jool is).

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// A validated RFC 6052 prefix: length 32, 40, 48, 56, 64 or 96, host bits zero,
/// and (RFC 6052 §2.2) bits 64..72, the "u" octet, zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rfc6052Prefix {
    addr: [u8; 16],
    len: u8,
}

/// Why a prefix is not a valid RFC 6052 prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrefixError {
    /// Length is not one of 32, 40, 48, 56, 64, 96.
    BadLength(u8),
    /// Bits beyond the prefix length are set.
    HostBitsSet,
    /// The "u" octet (bits 64..72) is not zero.
    UOctetSet,
    /// Text did not parse as `ADDR/LEN`.
    Syntax(String),
}

/// The prefix lengths RFC 6052 §2.2 allows.
pub const VALID_LENGTHS: [u8; 6] = [32, 40, 48, 56, 64, 96];

/// 64:ff9b::/96, RFC 6052 §2.1.
pub const WELL_KNOWN_PREFIX: Rfc6052Prefix = Rfc6052Prefix {
    addr: [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    len: 96,
};

/// 64:ff9b:1::/48, the RFC 8215 Local-Use IPv4/IPv6 Translation Prefix.
///
/// RFC 8215 reserves the whole /48 for translation inside one administrative domain;
/// operators may use it as is or carve more-specific prefixes (e.g. a /64 or /96) out of
/// it. Taken as a /48 it is itself a valid RFC 6052 prefix: 48 is an allowed length and
/// its u octet (bits 64..72) lies outside the prefix, so it is zero. The IPv4 address
/// then sits in bits 48..64 and 72..88 (e.g. 192.0.2.33 → `64:ff9b:1:c000:2:2100::`).
///
/// It is *not* the Well-Known Prefix: [`Rfc6052Prefix::is_well_known`] is false for it
/// and for anything carved from it, so the RFC 6052 §3.1 ban on non-global IPv4
/// addresses does not apply. Local-use translation of private IPv4 space is the point
/// of RFC 8215.
pub const LOCAL_USE_PREFIX: Rfc6052Prefix = Rfc6052Prefix {
    addr: [0, 0x64, 0xff, 0x9b, 0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    len: 48,
};

/// Index of the "u" octet in the address (bits 64..72).
const U_OCTET: usize = 8;

/// Where the four IPv4 octets go in the IPv6 address, per prefix length (§2.2).
const fn v4_positions(len: u8) -> [usize; 4] {
    match len {
        32 => [4, 5, 6, 7],
        40 => [5, 6, 7, 9],
        48 => [6, 7, 9, 10],
        56 => [7, 9, 10, 11],
        64 => [9, 10, 11, 12],
        // 96, the only other length `new` lets through.
        _ => [12, 13, 14, 15],
    }
}

/// The network mask of an IPv6 prefix length (`len` ≤ 128).
const fn mask128(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len as u32)
    }
}

impl Rfc6052Prefix {
    /// Validate `addr/len`.
    pub fn new(addr: Ipv6Addr, len: u8) -> Result<Self, PrefixError> {
        if !VALID_LENGTHS.contains(&len) {
            return Err(PrefixError::BadLength(len));
        }
        let octets = addr.octets();
        if octets[U_OCTET] != 0 {
            return Err(PrefixError::UOctetSet);
        }
        if u128::from_be_bytes(octets) & !mask128(len) != 0 {
            return Err(PrefixError::HostBitsSet);
        }
        Ok(Self { addr: octets, len })
    }
    /// Prefix length.
    #[allow(clippy::len_without_is_empty)] // a prefix length, not a collection size
    pub fn len(&self) -> u8 {
        self.len
    }
    /// Prefix address (host bits zero).
    pub fn addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(self.addr)
    }
    /// Is this 64:ff9b::/96 (RFC 6052 §2.1)?
    pub fn is_well_known(&self) -> bool {
        *self == WELL_KNOWN_PREFIX
    }
    /// Is `v6` under this prefix (whatever its u octet and suffix hold)?
    #[inline]
    pub fn contains_octets(&self, v6: &[u8; 16]) -> bool {
        (u128::from_be_bytes(*v6) ^ u128::from_be_bytes(self.addr)) & mask128(self.len) == 0
    }
    /// RFC 6052 §2.2: embed an IPv4 address (u octet and suffix zero).
    pub fn embed(&self, v4: Ipv4Addr) -> Ipv6Addr {
        Ipv6Addr::from(self.embed_octets(v4.octets()))
    }
    /// [`Self::embed`] on raw octets (the packet path).
    #[inline]
    pub fn embed_octets(&self, v4: [u8; 4]) -> [u8; 16] {
        // `addr` has zeros everywhere past the prefix, u octet included.
        let mut out = self.addr;
        // /96, by far the most common length, is a plain copy into the last word.
        if self.len == 96 {
            out[12..].copy_from_slice(&v4);
            return out;
        }
        let pos = v4_positions(self.len);
        out[pos[0]] = v4[0];
        out[pos[1]] = v4[1];
        out[pos[2]] = v4[2];
        out[pos[3]] = v4[3];
        out
    }
    /// RFC 6052 §2.3: the IPv4 address embedded in `v6`, or `None` if `v6` is not under
    /// this prefix. The u octet and the suffix are not checked.
    pub fn extract(&self, v6: Ipv6Addr) -> Option<Ipv4Addr> {
        self.extract_octets(&v6.octets()).map(Ipv4Addr::from)
    }
    /// [`Self::embed_octets`] on integers (the packet path).
    #[inline]
    pub fn embed_u32(&self, v4: u32) -> u128 {
        if self.len == 96 {
            return u128::from_be_bytes(self.addr) | u128::from(v4);
        }
        u128::from_be_bytes(self.embed_octets(v4.to_be_bytes()))
    }
    /// [`Self::extract_octets`] on integers (the packet path).
    #[inline]
    pub fn extract_u128(&self, v6: u128) -> Option<u32> {
        if (v6 ^ u128::from_be_bytes(self.addr)) & mask128(self.len) != 0 {
            return None;
        }
        if self.len == 96 {
            return Some(v6 as u32);
        }
        let pos = v4_positions(self.len);
        let b = v6.to_be_bytes();
        Some(u32::from_be_bytes([
            b[pos[0]], b[pos[1]], b[pos[2]], b[pos[3]],
        ]))
    }
    /// RFC 6052 §2.3: extract the IPv4 address if `v6` is under this prefix.
    #[inline]
    pub fn extract_octets(&self, v6: &[u8; 16]) -> Option<[u8; 4]> {
        if !self.contains_octets(v6) {
            return None;
        }
        if self.len == 96 {
            return Some([v6[12], v6[13], v6[14], v6[15]]);
        }
        let pos = v4_positions(self.len);
        Some([v6[pos[0]], v6[pos[1]], v6[pos[2]], v6[pos[3]]])
    }
}

impl fmt::Display for Rfc6052Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr(), self.len)
    }
}

impl FromStr for Rfc6052Prefix {
    type Err = PrefixError;

    /// Parse `ADDR/LEN`, e.g. `64:ff9b::/96` or `2001:db8:122::/48`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let Some((addr, len)) = text.split_once('/') else {
            return Err(PrefixError::Syntax(format!(
                "\"{text}\" has no prefix length: write the RFC 6052 prefix as ADDR/LEN, \
                 e.g. 64:ff9b::/96"
            )));
        };
        let addr: Ipv6Addr = addr.trim().parse().map_err(|_| {
            PrefixError::Syntax(format!(
                "\"{}\" in \"{text}\" is not an IPv6 address",
                addr.trim()
            ))
        })?;
        let len: u8 = len.trim().parse().map_err(|_| {
            PrefixError::Syntax(format!(
                "\"{}\" in \"{text}\" is not a prefix length (one of 32, 40, 48, 56, 64, 96)",
                len.trim()
            ))
        })?;
        Self::new(addr, len)
    }
}

impl fmt::Display for PrefixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrefixError::BadLength(len) => write!(
                f,
                "prefix length /{len} is not allowed for an RFC 6052 translation prefix \
                 (RFC 6052 §2.2); use /32, /40, /48, /56, /64 or /96"
            ),
            PrefixError::HostBitsSet => f.write_str(
                "the prefix address has bits set beyond the prefix length; \
                 give the first address of the prefix (e.g. 2001:db8::/96, not 2001:db8::1/96)",
            ),
            PrefixError::UOctetSet => f.write_str(
                "bits 64-71 of the prefix (the RFC 6052 §2.2 \"u\" octet, the first byte of \
                 the fifth 16-bit group) must be zero (e.g. 2001:db8:0:0:100::/96 is invalid)",
            ),
            PrefixError::Syntax(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for PrefixError {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> Rfc6052Prefix {
        s.parse().unwrap()
    }
    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }
    const V4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 33);

    /// One row of the RFC 6052 §2.4 table, checked both ways.
    fn check_row(prefix: &str, expect: &str) {
        let prefix = p(prefix);
        let expect = v6(expect);
        assert_eq!(prefix.embed(V4), expect, "embed under {prefix}");
        assert_eq!(
            prefix.embed_octets(V4.octets()),
            expect.octets(),
            "embed_octets under {prefix}"
        );
        assert_eq!(prefix.extract(expect), Some(V4), "extract under {prefix}");
        assert_eq!(prefix.extract_octets(&expect.octets()), Some(V4.octets()));
    }

    #[test]
    fn rfc6052_s2_4_example_table_32() {
        check_row("2001:db8::/32", "2001:db8:c000:221::");
    }
    #[test]
    fn rfc6052_s2_4_example_table_40() {
        check_row("2001:db8:100::/40", "2001:db8:1c0:2:21::");
    }
    #[test]
    fn rfc6052_s2_4_example_table_48() {
        check_row("2001:db8:122::/48", "2001:db8:122:c000:2:2100::");
    }
    #[test]
    fn rfc6052_s2_4_example_table_56() {
        check_row("2001:db8:122:300::/56", "2001:db8:122:3c0:0:221::");
    }
    #[test]
    fn rfc6052_s2_4_example_table_64() {
        check_row("2001:db8:122:344::/64", "2001:db8:122:344:c0:2:2100:0");
    }
    #[test]
    fn rfc6052_s2_4_example_table_96() {
        check_row("2001:db8:122:344::/96", "2001:db8:122:344::192.0.2.33");
    }
    #[test]
    fn rfc6052_s2_4_example_table_wkp() {
        check_row("64:ff9b::/96", "64:ff9b::192.0.2.33");
        assert_eq!(p("64:ff9b::/96"), WELL_KNOWN_PREFIX);
    }

    #[test]
    fn rfc6052_s2_1_well_known_prefix() {
        assert!(WELL_KNOWN_PREFIX.is_well_known());
        assert_eq!(WELL_KNOWN_PREFIX.to_string(), "64:ff9b::/96");
        assert!(!p("64:ff9b::/64").is_well_known());
        assert!(!p("2001:db8::/96").is_well_known());
        assert!(!LOCAL_USE_PREFIX.is_well_known());
    }

    #[test]
    fn rfc8215_local_use_prefix_is_a_valid_rfc6052_prefix() {
        assert_eq!(LOCAL_USE_PREFIX, p("64:ff9b:1::/48"));
        assert_eq!(
            Rfc6052Prefix::new(LOCAL_USE_PREFIX.addr(), LOCAL_USE_PREFIX.len()),
            Ok(LOCAL_USE_PREFIX)
        );
        assert_eq!(LOCAL_USE_PREFIX.embed(V4), v6("64:ff9b:1:c000:2:2100::"));
        // A /96 carved out of it is fine too.
        assert!(Rfc6052Prefix::new(v6("64:ff9b:1:1::"), 96).is_ok());
    }

    #[test]
    fn rfc6052_s2_2_invalid_lengths() {
        for len in (0..=128u8).filter(|l| !VALID_LENGTHS.contains(l)) {
            assert_eq!(
                Rfc6052Prefix::new(Ipv6Addr::UNSPECIFIED, len),
                Err(PrefixError::BadLength(len)),
                "/{len}"
            );
        }
        for len in VALID_LENGTHS {
            assert!(
                Rfc6052Prefix::new(Ipv6Addr::UNSPECIFIED, len).is_ok(),
                "/{len}"
            );
        }
        assert_eq!(
            "2001:db8::/33".parse::<Rfc6052Prefix>(),
            Err(PrefixError::BadLength(33))
        );
        let msg = PrefixError::BadLength(33).to_string();
        assert!(msg.contains("/33") && msg.contains("/32, /40, /48, /56, /64 or /96"));
    }

    #[test]
    fn rfc6052_s2_2_u_octet_must_be_zero() {
        assert_eq!(
            Rfc6052Prefix::new(v6("2001:db8:0:0:100::"), 96),
            Err(PrefixError::UOctetSet)
        );
        assert_eq!(
            "2001:db8::ff00:0:0:0/96".parse::<Rfc6052Prefix>(),
            Err(PrefixError::UOctetSet)
        );
        // The low byte of the fifth group is not the u octet.
        assert!(Rfc6052Prefix::new(v6("2001:db8:0:0:1::"), 96).is_ok());
        assert!(PrefixError::UOctetSet.to_string().contains("\"u\" octet"));
    }

    #[test]
    fn rfc6052_s2_2_host_bits_must_be_zero() {
        assert_eq!(
            Rfc6052Prefix::new(v6("2001:db8::1"), 96),
            Err(PrefixError::HostBitsSet)
        );
        assert_eq!(
            Rfc6052Prefix::new(v6("2001:db8:1::"), 32),
            Err(PrefixError::HostBitsSet)
        );
        assert_eq!(
            Rfc6052Prefix::new(v6("2001:db8:0:1::"), 56),
            Err(PrefixError::HostBitsSet)
        );
        assert!(Rfc6052Prefix::new(v6("2001:db8:0:1::"), 64).is_ok());
    }

    #[test]
    fn rfc6052_s2_3_extract_ignores_u_octet_and_suffix() {
        let prefix = p("2001:db8:122:344::/64");
        let mut a = v6("2001:db8:122:344:c0:2:2100:0").octets();
        a[U_OCTET] = 0xff;
        a[13] = 0x12;
        a[15] = 0x34;
        assert_eq!(prefix.extract_octets(&a), Some(V4.octets()));
    }

    #[test]
    fn rfc6052_s2_3_extract_outside_prefix() {
        let prefix = p("2001:db8:122::/48");
        assert_eq!(prefix.extract_octets(&v6("2001:db8:123::1").octets()), None);
        assert_eq!(WELL_KNOWN_PREFIX.extract(v6("64:ff9b:0:0:0:1::1")), None);
        assert_eq!(WELL_KNOWN_PREFIX.extract(v6("::192.0.2.33")), None);
        assert!(!prefix.contains_octets(&v6("2001:db8:123::1").octets()));
        assert!(prefix.contains_octets(&v6("2001:db8:122:ffff::").octets()));
    }

    #[test]
    fn parse_and_display() {
        let prefix = p(" 2001:db8:100::/40 ");
        assert_eq!(prefix.len(), 40);
        assert_eq!(prefix.addr(), v6("2001:db8:100::"));
        assert_eq!(prefix.to_string(), "2001:db8:100::/40");
        assert_eq!(p(&prefix.to_string()), prefix);
        for bad in [
            "2001:db8::",
            "2001:db8::/",
            "2001:db8::/x",
            "10.0.0.0/96",
            "/96",
        ] {
            match bad.parse::<Rfc6052Prefix>() {
                Err(PrefixError::Syntax(msg)) => assert!(msg.contains(bad.trim()), "{msg}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        // Too big for u8 is still a syntax error, not a panic.
        assert!(matches!(
            "2001:db8::/4096".parse::<Rfc6052Prefix>(),
            Err(PrefixError::Syntax(_))
        ));
        assert_eq!(
            "2001:db8::/128".parse::<Rfc6052Prefix>(),
            Err(PrefixError::BadLength(128))
        );
    }

    proptest! {
        #[test]
        fn rfc6052_s2_2_embed_extract_round_trip(
            len_idx in 0usize..VALID_LENGTHS.len(),
            raw in any::<u128>(),
            v4 in any::<[u8; 4]>(),
        ) {
            let len = VALID_LENGTHS[len_idx];
            let mut bytes = (raw & mask128(len)).to_be_bytes();
            bytes[U_OCTET] = 0;
            let prefix = Rfc6052Prefix::new(Ipv6Addr::from(bytes), len).unwrap();
            let a = prefix.embed_octets(v4);
            // The prefix is kept, the u octet and the suffix are zero.
            prop_assert!(prefix.contains_octets(&a));
            prop_assert_eq!(a[U_OCTET], 0);
            let payload: u32 = v4_positions(len).iter().map(|&i| 1u32 << i).sum();
            for (i, &b) in a.iter().enumerate().skip(usize::from(len / 8)) {
                if payload & (1 << i) == 0 {
                    prop_assert_eq!(b, 0, "byte {} of {}", i, Ipv6Addr::from(a));
                }
            }
            prop_assert_eq!(prefix.extract_octets(&a), Some(v4));
        }
    }
}
