//! What the RFC 7915 paths read from and write to a packet for the NAT64 step:
//! the transport "ports" (TCP/UDP ports, ICMP Echo identifiers) and TCP flags,
//! and the rewrite of one port with its checksum (RFC 1624 update).

use super::config::Proto;
use super::tcp::Flags;
use crate::checksum;
use crate::packet::ipv6::nh;
use crate::verdict::DropReason;

/// ICMPv4 / ICMPv6 Echo Request and Reply.
const ECHO4: [u8; 2] = [8, 0];
const ECHO6: [u8; 2] = [128, 129];

/// The transport identity of a packet: protocol, source and destination "port"
/// (both the identifier for ICMP queries), TCP flags.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ports {
    pub proto: Proto,
    pub sport: u16,
    pub dport: u16,
    pub flags: Flags,
}

/// Read the ports of the upper-layer header `l4` (protocol number `proto`, after
/// RFC 7915's ICMP/ICMPv6 mapping is *not* applied: pass the header's own value).
/// `quoted`: inside an ICMP error, where only the first 8 bytes are promised.
pub(crate) fn ports(proto: u8, l4: &[u8], quoted: bool) -> Result<Ports, DropReason> {
    let short = if quoted {
        DropReason::IcmpInnerUntranslatable
    } else {
        DropReason::Malformed
    };
    let need = |n: usize| if l4.len() < n { Err(short) } else { Ok(()) };
    let port = |at: usize| u16::from_be_bytes([l4[at], l4[at + 1]]);
    match proto {
        nh::TCP => {
            need(if quoted { 4 } else { 20 })?;
            let flags = l4
                .get(13)
                .map_or(Flags::default(), |&b| Flags::from_byte(b));
            Ok(Ports {
                proto: Proto::Tcp,
                sport: port(0),
                dport: port(2),
                flags,
            })
        }
        nh::UDP => {
            need(if quoted { 4 } else { 8 })?;
            Ok(Ports {
                proto: Proto::Udp,
                sport: port(0),
                dport: port(2),
                flags: Flags::default(),
            })
        }
        nh::ICMP | nh::ICMPV6 => {
            need(8)?;
            let echo = if proto == nh::ICMP { ECHO4 } else { ECHO6 };
            if !echo.contains(&l4[0]) {
                return Err(DropReason::Nat64Unsupported);
            }
            let id = port(4);
            Ok(Ports {
                proto: Proto::Icmp,
                sport: id,
                dport: id,
                flags: Flags::default(),
            })
        }
        _ => Err(DropReason::Nat64Unsupported),
    }
}

/// Which port of the header to rewrite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Which {
    Source,
    Destination,
}

/// Write `new` into the source or destination port (ICMP: the identifier) of `l4`
/// and update its checksum for the change. A checksum left to offload hardware
/// (`partial`) does not cover the header's bytes yet, and a zero UDP checksum is
/// "none": both stay. Bytes cut off (a quoted packet) are left alone.
pub(crate) fn rewrite_port(l4: &mut [u8], proto: Proto, which: Which, new: u16, partial: bool) {
    let (at, csum_at) = match (proto, which) {
        (Proto::Icmp, _) => (4, Some(2)),
        (Proto::Tcp, Which::Source) => (0, Some(16)),
        (Proto::Tcp, Which::Destination) => (2, Some(16)),
        (Proto::Udp, Which::Source) => (0, Some(6)),
        (Proto::Udp, Which::Destination) => (2, Some(6)),
    };
    let Some(field) = l4.get_mut(at..at + 2) else {
        return;
    };
    let old = u16::from_be_bytes([field[0], field[1]]);
    if old == new {
        return;
    }
    field.copy_from_slice(&new.to_be_bytes());
    let partial = partial && proto != Proto::Icmp;
    let Some(c) = csum_at.filter(|_| !partial) else {
        return;
    };
    let Some(cf) = l4.get_mut(c..c + 2) else {
        return;
    };
    let check = u16::from_be_bytes([cf[0], cf[1]]);
    if proto == Proto::Udp && check == 0 {
        return;
    }
    let mut n = checksum::update(check, old, new);
    if proto == Proto::Udp && n == 0 {
        n = 0xffff;
    }
    cf.copy_from_slice(&n.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrite_keeps_checksum_valid() {
        // UDP header + payload, checksum over a zero pseudo-header for the test.
        let mut udp = [0x30, 0x39, 0x00, 0x35, 0x00, 0x0c, 0, 0, 1, 2, 3, 4];
        let c = checksum::compute(0, &udp);
        udp[6..8].copy_from_slice(&c.to_be_bytes());
        rewrite_port(&mut udp, Proto::Udp, Which::Source, 61001, false);
        assert_eq!(&udp[0..2], &61001u16.to_be_bytes());
        assert_eq!(checksum::sum(&udp), 0xffff);
    }

    #[test]
    fn non_echo_icmp_has_no_ports() {
        let l4 = [13u8, 0, 0, 0, 0, 1, 0, 1];
        assert_eq!(
            ports(nh::ICMP, &l4, false).unwrap_err(),
            DropReason::Nat64Unsupported
        );
    }
}
