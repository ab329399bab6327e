//! RFC 7915 §4.5 and §5.5: transport-layer headers. TCP and UDP checksums cover a
//! pseudo-header, so a translated address changes them; they are updated by the
//! address difference alone (RFC 1624), never re-summed.

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
    // UDP checksum 0 means "none" (only legal in IPv4, or IPv6 tunnels per RFC 6935);
    // it stays none. The IPv4 side handles it by policy before calling here.
    if proto == nh::UDP && check == 0 {
        return Ok(());
    }
    let mut c = crate::checksum::update(check, old, new);
    // RFC 768: a computed UDP checksum of zero is sent as all ones.
    if proto == nh::UDP && c == 0 {
        c = 0xffff;
    }
    field.copy_from_slice(&c.to_be_bytes());
    Ok(())
}
