//! RFC 7915 §4.2 and §5.2: the ICMPv4 ↔ ICMPv6 type and code tables.
//!
//! Each function maps (type, code) and says what to do with the 4-byte
//! rest-of-header; the MTU and pointer arithmetic that needs packet context is
//! done by the caller (see [`super::mtu`]).

use crate::verdict::DropReason;

/// What happens to the 4 bytes after the ICMP checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rest {
    /// Copied unchanged (echo identifier and sequence).
    Copy,
    /// Zeroed (unused field).
    Zero,
    /// An MTU to compute: Packet Too Big ↔ Fragmentation Needed.
    Mtu,
    /// A Parameter Problem pointer with this value.
    Pointer(u8),
}

/// The translated ICMP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapped {
    /// New type.
    pub ty: u8,
    /// New code.
    pub code: u8,
    /// Rest-of-header treatment.
    pub rest: Rest,
    /// True for error messages (they carry an inner packet to translate).
    pub error: bool,
}

/// ICMPv4 types (RFC 792).
pub mod v4 {
    /// Echo Reply.
    pub const ECHO_REPLY: u8 = 0;
    /// Destination Unreachable.
    pub const DEST_UNREACH: u8 = 3;
    /// Source Quench.
    pub const SOURCE_QUENCH: u8 = 4;
    /// Redirect.
    pub const REDIRECT: u8 = 5;
    /// Echo Request.
    pub const ECHO_REQUEST: u8 = 8;
    /// Time Exceeded.
    pub const TIME_EXCEEDED: u8 = 11;
    /// Parameter Problem.
    pub const PARAM_PROBLEM: u8 = 12;
    /// Destination Unreachable code: host unreachable.
    pub const CODE_HOST_UNREACHABLE: u8 = 1;
    /// Destination Unreachable code: port unreachable.
    pub const CODE_PORT_UNREACHABLE: u8 = 3;
    /// Destination Unreachable code: fragmentation needed and DF set.
    pub const CODE_FRAG_NEEDED: u8 = 4;
    /// Destination Unreachable: communication administratively prohibited (RFC 1812).
    pub const CODE_ADMIN_PROHIBITED: u8 = 13;
    /// Destination Unreachable code: source route failed.
    pub const CODE_SOURCE_ROUTE_FAILED: u8 = 5;

    /// Error messages carry the offending datagram (RFC 792, RFC 1812 §4.3.2.7).
    pub fn is_error(ty: u8) -> bool {
        matches!(
            ty,
            DEST_UNREACH | SOURCE_QUENCH | REDIRECT | TIME_EXCEEDED | PARAM_PROBLEM
        )
    }
}

/// ICMPv6 types (RFC 4443).
pub mod v6 {
    /// Destination Unreachable.
    pub const DEST_UNREACH: u8 = 1;
    /// Packet Too Big.
    pub const PACKET_TOO_BIG: u8 = 2;
    /// Time Exceeded.
    pub const TIME_EXCEEDED: u8 = 3;
    /// Parameter Problem.
    pub const PARAM_PROBLEM: u8 = 4;
    /// Destination Unreachable code: communication administratively prohibited.
    pub const CODE_ADMIN_PROHIBITED: u8 = 1;
    /// Destination Unreachable code: address unreachable.
    pub const CODE_ADDRESS_UNREACHABLE: u8 = 3;
    /// Echo Request.
    pub const ECHO_REQUEST: u8 = 128;
    /// Echo Reply.
    pub const ECHO_REPLY: u8 = 129;

    /// RFC 4443 §2.1: types 0–127 are errors.
    pub fn is_error(ty: u8) -> bool {
        ty < 128
    }
}

/// RFC 7915 §4.2, Figure 3: IPv4 header pointer → IPv6 header pointer.
fn v4_pointer_to_v6(p: u8) -> Option<u8> {
    Some(match p {
        0 => 0,           // Version/IHL → Version/Traffic Class
        1 => 1,           // Type of Service → Traffic Class
        2 | 3 => 4,       // Total Length → Payload Length
        8 => 7,           // Time to Live → Hop Limit
        9 => 6,           // Protocol → Next Header
        12..=15 => 8,     // Source Address
        16..=19 => 24,    // Destination Address
        _ => return None, // Identification, Flags, Checksum, options: n/a
    })
}

/// RFC 7915 §5.2, Figure 6: IPv6 header pointer → IPv4 header pointer.
fn v6_pointer_to_v4(p: u32) -> Option<u8> {
    Some(match p {
        0 => 0,           // Version/Traffic Class → Version/IHL
        1 => 1,           // Traffic Class/Flow Label → Type of Service
        4 | 5 => 2,       // Payload Length → Total Length
        6 => 9,           // Next Header → Protocol
        7 => 8,           // Hop Limit → Time to Live
        8..=23 => 12,     // Source Address
        24..=39 => 16,    // Destination Address
        _ => return None, // Flow Label, beyond the fixed header: n/a
    })
}

const fn err(ty: u8, code: u8, rest: Rest) -> Result<Mapped, DropReason> {
    Ok(Mapped {
        ty,
        code,
        rest,
        error: true,
    })
}

/// RFC 7915 §4.2: ICMPv4 → ICMPv6. `rest` is the original rest-of-header.
pub fn icmp4_to_icmp6(ty: u8, code: u8, rest: [u8; 4]) -> Result<Mapped, DropReason> {
    use DropReason::IcmpUntranslatable as Untranslatable;
    match ty {
        // Echo and Echo Reply: type 8 → 128, type 0 → 129; identifier and sequence kept.
        v4::ECHO_REQUEST | v4::ECHO_REPLY if code == 0 => Ok(Mapped {
            ty: if ty == v4::ECHO_REQUEST {
                v6::ECHO_REQUEST
            } else {
                v6::ECHO_REPLY
            },
            code: 0,
            rest: Rest::Copy,
            error: false,
        }),
        v4::DEST_UNREACH => match code {
            // Net/host unreachable, source route failed, unknown/isolated/TOS: No route (0).
            0 | 1 | 5 | 6 | 7 | 8 | 11 | 12 => err(v6::DEST_UNREACH, 0, Rest::Zero),
            // Protocol unreachable: Parameter Problem, unrecognized Next Header, pointer 6.
            2 => err(v6::PARAM_PROBLEM, 1, Rest::Pointer(6)),
            // Port unreachable → Port unreachable (4).
            3 => err(v6::DEST_UNREACH, 4, Rest::Zero),
            // Fragmentation needed → Packet Too Big, MTU adjusted (§4.2, §6).
            4 => err(v6::PACKET_TOO_BIG, 0, Rest::Mtu),
            // Net/host administratively prohibited, precedence cutoff → admin prohibited (1).
            9 | 10 | 13 | 15 => err(v6::DEST_UNREACH, 1, Rest::Zero),
            // Host precedence violation (14) and unknown codes: silently drop.
            _ => Err(Untranslatable),
        },
        // Time Exceeded: type 3, code unchanged.
        v4::TIME_EXCEEDED if code <= 1 => err(v6::TIME_EXCEEDED, code, Rest::Zero),
        v4::PARAM_PROBLEM => match code {
            // Pointer indicates the error (0) and Bad length (2): code 0, pointer per Figure 3.
            0 | 2 => match v4_pointer_to_v6(rest[0]) {
                Some(p) => err(v6::PARAM_PROBLEM, 0, Rest::Pointer(p)),
                None => Err(Untranslatable),
            },
            // Missing a required option (1) and unknown codes: silently drop.
            _ => Err(Untranslatable),
        },
        // Information Request/Reply, Timestamp, Address Mask, Router Advertisement and
        // Solicitation, Redirect, Alternative Host Address, Source Quench, unknown:
        // single-hop or obsoleted, silently drop.
        _ => Err(Untranslatable),
    }
}

/// RFC 7915 §5.2: ICMPv6 → ICMPv4. `rest` is the original rest-of-header.
pub fn icmp6_to_icmp4(ty: u8, code: u8, rest: [u8; 4]) -> Result<Mapped, DropReason> {
    use DropReason::IcmpUntranslatable as Untranslatable;
    match ty {
        v6::ECHO_REQUEST | v6::ECHO_REPLY if code == 0 => Ok(Mapped {
            ty: if ty == v6::ECHO_REQUEST {
                v4::ECHO_REQUEST
            } else {
                v4::ECHO_REPLY
            },
            code: 0,
            rest: Rest::Copy,
            error: false,
        }),
        v6::DEST_UNREACH => match code {
            // No route, beyond scope of source, address unreachable → Host unreachable (1).
            0 | 2 | 3 => err(v4::DEST_UNREACH, 1, Rest::Zero),
            // Administratively prohibited → Communication administratively prohibited (10).
            1 => err(v4::DEST_UNREACH, 10, Rest::Zero),
            // Port unreachable → Port unreachable (3).
            4 => err(v4::DEST_UNREACH, 3, Rest::Zero),
            _ => Err(Untranslatable),
        },
        // Packet Too Big → Fragmentation Needed (type 3, code 4), MTU adjusted.
        v6::PACKET_TOO_BIG if code == 0 => err(v4::DEST_UNREACH, v4::CODE_FRAG_NEEDED, Rest::Mtu),
        v6::TIME_EXCEEDED if code <= 1 => err(v4::TIME_EXCEEDED, code, Rest::Zero),
        v6::PARAM_PROBLEM => match code {
            // Erroneous header field: Parameter Problem code 0, pointer per Figure 6.
            0 => match v6_pointer_to_v4(u32::from_be_bytes(rest)) {
                Some(p) => err(v4::PARAM_PROBLEM, 0, Rest::Pointer(p)),
                None => Err(Untranslatable),
            },
            // Unrecognized Next Header → Protocol unreachable (type 3, code 2).
            1 => err(v4::DEST_UNREACH, 2, Rest::Zero),
            // Unrecognized option and unknown codes: silently drop.
            _ => Err(Untranslatable),
        },
        // MLD, Neighbor Discovery and unknown informational types: single-hop, drop.
        _ => Err(Untranslatable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(ty: u8, code: u8, rest: Rest, error: bool) -> Result<Mapped, DropReason> {
        Ok(Mapped {
            ty,
            code,
            rest,
            error,
        })
    }
    const DROP: Result<Mapped, DropReason> = Err(DropReason::IcmpUntranslatable);
    const R0: [u8; 4] = [0; 4];

    #[test]
    fn rfc7915_s4_2_echo() {
        assert_eq!(icmp4_to_icmp6(8, 0, R0), m(128, 0, Rest::Copy, false));
        assert_eq!(icmp4_to_icmp6(0, 0, R0), m(129, 0, Rest::Copy, false));
    }

    #[test]
    fn rfc7915_s4_2_informational_and_single_hop_dropped() {
        for ty in [13, 14, 15, 16, 17, 18, 9, 10, 5, 6, 4, 42, 255] {
            assert_eq!(icmp4_to_icmp6(ty, 0, R0), DROP, "type {ty}");
        }
    }

    #[test]
    fn rfc7915_s4_2_destination_unreachable_codes() {
        let expect = |code, ty6, code6, rest| {
            assert_eq!(
                icmp4_to_icmp6(3, code, R0),
                m(ty6, code6, rest, true),
                "code {code}"
            );
        };
        for code in [0, 1, 5, 6, 7, 8, 11, 12] {
            expect(code, 1, 0, Rest::Zero);
        }
        expect(2, 4, 1, Rest::Pointer(6));
        expect(3, 1, 4, Rest::Zero);
        expect(4, 2, 0, Rest::Mtu);
        for code in [9, 10, 13, 15] {
            expect(code, 1, 1, Rest::Zero);
        }
        assert_eq!(icmp4_to_icmp6(3, 14, R0), DROP);
        assert_eq!(icmp4_to_icmp6(3, 16, R0), DROP);
    }

    #[test]
    fn rfc7915_s4_2_time_exceeded() {
        assert_eq!(icmp4_to_icmp6(11, 0, R0), m(3, 0, Rest::Zero, true));
        assert_eq!(icmp4_to_icmp6(11, 1, R0), m(3, 1, Rest::Zero, true));
    }

    /// RFC 7915 §4.2 Figure 3, every row.
    #[test]
    fn rfc7915_s4_2_figure3_parameter_problem_pointer() {
        let table: [(u8, Option<u8>); 20] = [
            (0, Some(0)),
            (1, Some(1)),
            (2, Some(4)),
            (3, Some(4)),
            (4, None),
            (5, None),
            (6, None),
            (7, None),
            (8, Some(7)),
            (9, Some(6)),
            (10, None),
            (11, None),
            (12, Some(8)),
            (13, Some(8)),
            (14, Some(8)),
            (15, Some(8)),
            (16, Some(24)),
            (17, Some(24)),
            (18, Some(24)),
            (19, Some(24)),
        ];
        for (p4, p6) in table {
            for code in [0, 2] {
                let got = icmp4_to_icmp6(12, code, [p4, 0, 0, 0]);
                match p6 {
                    Some(p6) => assert_eq!(got, m(4, 0, Rest::Pointer(p6), true), "ptr {p4}"),
                    None => assert_eq!(got, DROP, "ptr {p4}"),
                }
            }
        }
        assert_eq!(icmp4_to_icmp6(12, 0, [20, 0, 0, 0]), DROP);
        assert_eq!(icmp4_to_icmp6(12, 1, R0), DROP);
    }

    #[test]
    fn rfc7915_s5_2_echo() {
        assert_eq!(icmp6_to_icmp4(128, 0, R0), m(8, 0, Rest::Copy, false));
        assert_eq!(icmp6_to_icmp4(129, 0, R0), m(0, 0, Rest::Copy, false));
    }

    #[test]
    fn rfc7915_s5_2_mld_nd_and_unknown_dropped() {
        for ty in [130, 131, 132, 133, 134, 135, 136, 137, 143, 200, 100] {
            assert_eq!(icmp6_to_icmp4(ty, 0, R0), DROP, "type {ty}");
        }
    }

    #[test]
    fn rfc7915_s5_2_destination_unreachable_codes() {
        assert_eq!(icmp6_to_icmp4(1, 0, R0), m(3, 1, Rest::Zero, true));
        assert_eq!(icmp6_to_icmp4(1, 1, R0), m(3, 10, Rest::Zero, true));
        assert_eq!(icmp6_to_icmp4(1, 2, R0), m(3, 1, Rest::Zero, true));
        assert_eq!(icmp6_to_icmp4(1, 3, R0), m(3, 1, Rest::Zero, true));
        assert_eq!(icmp6_to_icmp4(1, 4, R0), m(3, 3, Rest::Zero, true));
        assert_eq!(icmp6_to_icmp4(1, 5, R0), DROP);
    }

    #[test]
    fn rfc7915_s5_2_packet_too_big_and_time_exceeded() {
        assert_eq!(icmp6_to_icmp4(2, 0, R0), m(3, 4, Rest::Mtu, true));
        assert_eq!(icmp6_to_icmp4(3, 0, R0), m(11, 0, Rest::Zero, true));
        assert_eq!(icmp6_to_icmp4(3, 1, R0), m(11, 1, Rest::Zero, true));
    }

    /// RFC 7915 §5.2 Figure 6, every row of the fixed header.
    #[test]
    fn rfc7915_s5_2_figure6_parameter_problem_pointer() {
        for p6 in 0u32..48 {
            let expect = match p6 {
                0 => Some(0),
                1 => Some(1),
                4 | 5 => Some(2),
                6 => Some(9),
                7 => Some(8),
                8..=23 => Some(12),
                24..=39 => Some(16),
                _ => None,
            };
            let got = icmp6_to_icmp4(4, 0, p6.to_be_bytes());
            match expect {
                Some(p4) => assert_eq!(got, m(12, 0, Rest::Pointer(p4), true), "ptr {p6}"),
                None => assert_eq!(got, DROP, "ptr {p6}"),
            }
        }
        assert_eq!(icmp6_to_icmp4(4, 1, R0), m(3, 2, Rest::Zero, true));
        assert_eq!(icmp6_to_icmp4(4, 2, R0), DROP);
    }
}
