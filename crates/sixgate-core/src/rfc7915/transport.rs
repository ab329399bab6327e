//! RFC 7915 §4.5 and §5.5: transport-layer headers. TCP and UDP checksums cover a
//! pseudo-header, so a translated address changes them; they are updated by the
//! address difference alone (RFC 1624), never re-summed.
//!
//! A packet whose checksum is left to offload hardware (`CHECKSUM_PARTIAL`) holds
//! the pseudo-header sum itself in the field, uncomplemented; [`update_partial`]
//! is the rule for that state.

use crate::packet::ipv6::nh;
use crate::verdict::DropReason;

/// Update the TCP or UDP checksum in `l4` for a pseudo-header whose address sum
/// changed from `old` to `new`. Other protocols are opaque and left alone.
///
/// `quoted` is for the packet inside an ICMP error: a header cut off before its
/// checksum is left as it is rather than refused.
pub fn update_pseudo_header(
    l4: &mut [u8],
    proto: u8,
    old: u16,
    new: u16,
    quoted: bool,
) -> Result<(), DropReason> {
    let at = match proto {
        nh::TCP => 16,
        nh::UDP => 6,
        _ => return Ok(()),
    };
    let Some(field) = l4.get_mut(at..at + 2) else {
        return if quoted {
            Ok(())
        } else {
            Err(DropReason::Malformed)
        };
    };
    let check = u16::from_be_bytes([field[0], field[1]]);
    // UDP checksum 0 means "none" (only legal in IPv4, or IPv6 tunnels per RFC
    // 6935). In a quoted packet it stays none; for its own packet the caller
    // applies §4.5 / §5.5 (`udp_zero_checksum`), told by this error, the field
    // untouched.
    if proto == nh::UDP && check == 0 {
        return if quoted {
            Ok(())
        } else {
            Err(DropReason::UdpZeroChecksum)
        };
    }
    let mut c = crate::checksum::update(check, old, new);
    // RFC 768: a computed UDP checksum of zero is sent as all ones.
    if proto == nh::UDP && c == 0 {
        c = 0xffff;
    }
    field.copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// Update a *partial* TCP or UDP checksum field (offload state `CHECKSUM_PARTIAL`:
/// the field holds the folded pseudo-header sum, not complemented) for a
/// pseudo-header whose address sum changed from `old` to `new`:
/// `field' = field - old + new` in ones' complement arithmetic. Length and protocol
/// contribute the same to the IPv4 and IPv6 pseudo-headers, so only addresses move.
/// Other protocols are left alone.
pub fn update_partial(l4: &mut [u8], proto: u8, old: u16, new: u16) -> Result<(), DropReason> {
    let at = match proto {
        nh::TCP => 16,
        nh::UDP => 6,
        _ => return Ok(()),
    };
    let Some(field) = l4.get_mut(at..at + 2) else {
        return Err(DropReason::Malformed);
    };
    let sum = u16::from_be_bytes([field[0], field[1]]);
    let c = crate::checksum::add(crate::checksum::sub(sum, old), new);
    field.copy_from_slice(&c.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum;

    /// A partial field updated for new addresses, then completed over the segment,
    /// equals the checksum computed from scratch with the new pseudo-header.
    #[test]
    fn partial_update_then_complete_matches_full() {
        let src4 = [198, 18, 0, 5];
        let dst4 = [203, 0, 113, 1];
        let src6: [u8; 16] = "2001:db8:1::5"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets();
        let dst6: [u8; 16] = "2001:db8:64::cb00:7101"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets();
        for (proto, len) in [(nh::TCP, 20 + 1000), (nh::UDP, 8 + 333), (nh::TCP, 20)] {
            let mut seg: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let at = if proto == nh::TCP { 16 } else { 6 };
            if proto == nh::UDP {
                seg[4..6].copy_from_slice(&(len as u16).to_be_bytes());
            }
            // What Linux puts there for CHECKSUM_PARTIAL: the pseudo-header sum.
            let pseudo6 = checksum::v6_pseudo(&src6, &dst6, len as u32, proto);
            seg[at..at + 2].copy_from_slice(&pseudo6.to_be_bytes());
            update_partial(
                &mut seg,
                proto,
                checksum::v6_addr_sum(&src6, &dst6),
                checksum::v4_addr_sum(&src4, &dst4),
            )
            .unwrap();
            // Finish it as the device would: sum from the L4 header, complement.
            let done = !checksum::sum(&seg);
            let mut full = seg.clone();
            full[at..at + 2].copy_from_slice(&[0, 0]);
            let want =
                checksum::compute(checksum::v4_pseudo(&src4, &dst4, len as u16, proto), &full);
            assert_eq!(
                checksum::add(done, 0),
                checksum::add(want, 0),
                "proto {proto} len {len}"
            );
        }
    }

    #[test]
    fn partial_update_ignores_other_protocols_and_refuses_short_headers() {
        let mut icmp = [8u8, 0, 0x12, 0x34];
        update_partial(&mut icmp, nh::ICMP, 1, 2).unwrap();
        assert_eq!(icmp, [8, 0, 0x12, 0x34]);
        assert_eq!(
            update_partial(&mut [0u8; 10], nh::TCP, 1, 2),
            Err(DropReason::Malformed)
        );
    }
}
