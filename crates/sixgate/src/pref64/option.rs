//! The PREF64 option (RFC 8781 §4): a NAT64 prefix and its lifetime, 16 octets.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |     Type      |    Length     |     Scaled Lifetime     | PLC |
//! |              Highest 96 bits of the Prefix (12 octets)        |
//! ```

use std::fmt;
use std::net::Ipv6Addr;

/// RFC 8781 §4: Type 38.
pub const TYPE: u8 = 38;
/// RFC 8781 §4: Length 2, in units of 8 octets.
pub const LENGTH: u8 = 2;
/// The option's size in octets.
pub const SIZE: usize = 16;
/// RFC 8781 §4: the largest lifetime, 8191 (13 bits) × 8 s.
pub const MAX_LIFETIME: u16 = 0x1fff * 8;

/// Why a prefix and lifetime cannot be a PREF64 option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pref64Error {
    /// RFC 8781 §4 has Prefix Length Codes for /96, /64, /56, /48, /40, /32 only.
    PrefixLength(u8),
    /// Not a multiple of 8 seconds, or above [`MAX_LIFETIME`] (RFC 8781 §4).
    Lifetime(u16),
}

impl fmt::Display for Pref64Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pref64Error::PrefixLength(l) => write!(
                f,
                "prefix length /{l} has no PREF64 code (RFC 8781 §4); expected /96, /64, \
                 /56, /48, /40 or /32"
            ),
            Pref64Error::Lifetime(s) => write!(
                f,
                "PREF64 lifetime {s} s is not a multiple of 8 at most {MAX_LIFETIME} \
                 (RFC 8781 §4)"
            ),
        }
    }
}

/// RFC 8781 §4 Prefix Length Code (PLC) of a prefix length.
pub fn prefix_length_code(len: u8) -> Result<u8, Pref64Error> {
    Ok(match len {
        96 => 0,
        64 => 1,
        56 => 2,
        48 => 3,
        40 => 4,
        32 => 5,
        _ => return Err(Pref64Error::PrefixLength(len)),
    })
}

/// RFC 8781 §4: the prefix length a PLC stands for; `None` for the reserved codes.
/// (The decoder side, for tests: the gateway only sends.)
#[cfg(test)]
pub fn prefix_length(plc: u8) -> Option<u8> {
    [96, 64, 56, 48, 40, 32].get(usize::from(plc)).copied()
}

/// The PREF64 option for `prefix/len`, valid for `lifetime` seconds.
pub fn pref64_option(prefix: Ipv6Addr, len: u8, lifetime: u16) -> Result<[u8; SIZE], Pref64Error> {
    let plc = prefix_length_code(len)?;
    if !lifetime.is_multiple_of(8) || lifetime > MAX_LIFETIME {
        return Err(Pref64Error::Lifetime(lifetime));
    }
    // 13-bit Scaled Lifetime (units of 8 s), then the 3-bit PLC.
    let word = ((lifetime / 8) << 3) | u16::from(plc);
    let mut o = [0u8; SIZE];
    o[0] = TYPE;
    o[1] = LENGTH;
    o[2..4].copy_from_slice(&word.to_be_bytes());
    // §4: only the highest 96 bits are sent; the rest is implied zero.
    o[4..].copy_from_slice(&prefix.octets()[..12]);
    Ok(o)
}

/// The prefix, its length and the lifetime in seconds of a PREF64 option, or
/// `None` if it is not one (wrong type or length, reserved PLC).
#[cfg(test)]
pub fn parse_pref64(o: &[u8]) -> Option<(Ipv6Addr, u8, u16)> {
    if o.len() < SIZE || o[0] != TYPE || o[1] != LENGTH {
        return None;
    }
    let word = u16::from_be_bytes([o[2], o[3]]);
    let len = prefix_length(u8::try_from(word & 7).ok()?)?;
    let mut a = [0u8; 16];
    a[..12].copy_from_slice(&o[4..SIZE]);
    Some((Ipv6Addr::from(a), len, (word >> 3) * 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn rfc8781_s4_layout_of_a_96_prefix() {
        let o = pref64_option(v6("2001:db8:64::"), 96, 1800).unwrap();
        // Type 38, Length 2, 1800 / 8 = 225 = 0b0_0000_1110_0001 then PLC 0.
        assert_eq!(o[..4], [38, 2, 0x07, 0x08]);
        assert_eq!(o[4..], [0x20, 0x01, 0x0d, 0xb8, 0, 0x64, 0, 0, 0, 0, 0, 0]);
        assert_eq!(parse_pref64(&o), Some((v6("2001:db8:64::"), 96, 1800)));
    }

    #[test]
    fn rfc8781_s4_prefix_length_codes() {
        for (len, plc) in [(96, 0), (64, 1), (56, 2), (48, 3), (40, 4), (32, 5)] {
            assert_eq!(prefix_length_code(len), Ok(plc));
            assert_eq!(prefix_length(plc), Some(len));
            let o = pref64_option(v6("64:ff9b::"), len, 600).unwrap();
            assert_eq!(o[3] & 7, plc);
            assert_eq!(parse_pref64(&o), Some((v6("64:ff9b::"), len, 600)));
        }
        for reserved in 6..8 {
            assert_eq!(prefix_length(reserved), None);
        }
        for bad in [0, 16, 33, 95, 128] {
            assert_eq!(
                pref64_option(v6("64:ff9b::"), bad, 600),
                Err(Pref64Error::PrefixLength(bad))
            );
        }
    }

    #[test]
    fn rfc8781_s4_scaled_lifetime_13_bits_of_8_seconds() {
        let max = pref64_option(v6("64:ff9b::"), 96, 65528).unwrap();
        assert_eq!(u16::from_be_bytes([max[2], max[3]]) >> 3, 8191);
        assert_eq!(parse_pref64(&max).unwrap().2, 65528);
        // Lifetime 0: the prefix is withdrawn.
        assert_eq!(pref64_option(v6("64:ff9b::"), 96, 0).unwrap()[2..4], [0, 0]);
        for bad in [1, 7, 65529, 65535] {
            assert_eq!(
                pref64_option(v6("64:ff9b::"), 96, bad),
                Err(Pref64Error::Lifetime(bad))
            );
        }
    }

    #[test]
    fn rfc8781_s4_only_the_highest_96_bits_are_carried() {
        // A /32 prefix: octets 4..12 are zero in the prefix, sent as such.
        let o = pref64_option(v6("2001:db8::"), 32, 8).unwrap();
        assert_eq!(o[4..8], [0x20, 0x01, 0x0d, 0xb8]);
        assert!(o[8..].iter().all(|&b| b == 0));
        assert_eq!(parse_pref64(&o[..15]), None, "truncated");
        let mut wrong = o;
        wrong[0] = 3;
        assert_eq!(parse_pref64(&wrong), None);
    }
}
