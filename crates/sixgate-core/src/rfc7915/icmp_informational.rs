//! RFC 7915 §4.2 and §5.2 for informational messages (Echo Request and Reply):
//! type and code change, identifier and sequence stay, and the checksum gains
//! (IPv4→IPv6) or loses (IPv6→IPv4) the ICMPv6 pseudo-header. One RFC 1624 update
//! covers both changes; the payload is never re-summed.

use super::icmp_map::{Mapped, Rest};
use crate::checksum;
use crate::verdict::DropReason;

/// A §4.2 or §5.2 table: `icmp4_to_icmp6` or `icmp6_to_icmp4`.
pub type Table = fn(u8, u8, [u8; 4]) -> Result<Mapped, DropReason>;

/// Translate the informational ICMP message `icmp` in place. `old_pseudo` and
/// `new_pseudo` are the pseudo-header sums the checksum covered before and covers
/// after (zero on the ICMPv4 side).
pub fn translate(
    icmp: &mut [u8],
    table: Table,
    old_pseudo: u16,
    new_pseudo: u16,
) -> Result<(), DropReason> {
    if icmp.len() < 8 {
        return Err(DropReason::Malformed);
    }
    let m = table(icmp[0], icmp[1], [icmp[4], icmp[5], icmp[6], icmp[7]])?;
    if m.error || m.rest != Rest::Copy {
        // Callers route errors elsewhere; an informational type never maps to one.
        return Err(DropReason::IcmpUntranslatable);
    }
    retype(icmp, m.ty, m.code, old_pseudo, new_pseudo);
    Ok(())
}

/// §4.3 / §5.3: the ICMP message quoted inside an error. It must be informational
/// (no error is ever sent about an error), and may be cut short: the type is
/// translated if present, the checksum only if its bytes are there.
pub fn translate_quoted(
    icmp: &mut [u8],
    table: Table,
    is_error: fn(u8) -> bool,
    old_pseudo: u16,
    new_pseudo: u16,
) -> Result<(), DropReason> {
    let Some(&ty) = icmp.first() else {
        return Ok(());
    };
    if is_error(ty) {
        return Err(DropReason::IcmpErrorInError);
    }
    let code = icmp.get(1).copied().unwrap_or(0);
    let m = table(ty, code, [0; 4]).map_err(|_| DropReason::IcmpInnerUntranslatable)?;
    if icmp.len() < 4 {
        icmp[0] = m.ty;
        if let Some(c) = icmp.get_mut(1) {
            *c = m.code;
        }
        return Ok(());
    }
    retype(icmp, m.ty, m.code, old_pseudo, new_pseudo);
    Ok(())
}

/// Write a new type and code and update the checksum (RFC 1624 eqn. 3) for them
/// and for the pseudo-header change.
fn retype(icmp: &mut [u8], ty: u8, code: u8, old_pseudo: u16, new_pseudo: u16) {
    let old = checksum::add(old_pseudo, u16::from_be_bytes([icmp[0], icmp[1]]));
    let new = checksum::add(new_pseudo, u16::from_be_bytes([ty, code]));
    let c = checksum::update(u16::from_be_bytes([icmp[2], icmp[3]]), old, new);
    icmp[0] = ty;
    icmp[1] = code;
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
}
