//! Link layers: which ones the offline mode reads, and how to find the IP packet in a frame.

use pcap_file::DataLink;

/// A link type the offline mode can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Link {
    /// LINKTYPE_RAW (101), LINKTYPE_IPV4 (228), LINKTYPE_IPV6 (229): the frame is the IP packet.
    Raw,
    /// LINKTYPE_ETHERNET (1): 14-byte header, at most one 802.1Q / 802.1ad tag.
    Ethernet,
    /// LINKTYPE_LINUX_SLL (113): 16-byte "cooked" header, protocol at bytes 14..16.
    LinuxSll,
    /// LINKTYPE_LINUX_SLL2 (276): 20-byte header, protocol at bytes 0..2.
    LinuxSll2,
}

/// Human list of what is supported, for the unsupported-link-type error.
pub(crate) const SUPPORTED: &str =
    "RAW (101), IPV4 (228), IPV6 (229), ETHERNET (1), LINUX_SLL (113) or LINUX_SLL2 (276)";

impl Link {
    pub(crate) fn from_datalink(dl: DataLink) -> Option<Link> {
        match dl {
            DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => Some(Link::Raw),
            DataLink::ETHERNET => Some(Link::Ethernet),
            DataLink::LINUX_SLL => Some(Link::LinuxSll),
            DataLink::LINUX_SLL2 => Some(Link::LinuxSll2),
            _ => None,
        }
    }
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;

/// What a frame holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum L3<'a> {
    /// An IP packet (IPv4 or IPv6 by ethertype; for raw links, whatever the frame holds).
    Ip(&'a [u8]),
    /// Not IP: the ethertype / protocol found, or `None` if the frame is too short for its header.
    NotIp(Option<u16>),
}

/// Find the IP packet in `frame`. For link layers with a length-free header (Ethernet,
/// SLL) the packet is cut to the length its IP header gives, which drops Ethernet padding.
pub(crate) fn l3(link: Link, frame: &[u8]) -> L3<'_> {
    let (ethertype, payload) = match link {
        Link::Raw => return L3::Ip(frame),
        Link::Ethernet => {
            let Some(mut et) = be16(frame, 12) else {
                return L3::NotIp(None);
            };
            let mut off = 14;
            if et == ETHERTYPE_VLAN || et == ETHERTYPE_QINQ {
                let Some(inner) = be16(frame, 16) else {
                    return L3::NotIp(None);
                };
                et = inner;
                off = 18;
            }
            (et, &frame[off..])
        }
        Link::LinuxSll => match be16(frame, 14) {
            Some(et) => (et, &frame[16..]),
            None => return L3::NotIp(None),
        },
        Link::LinuxSll2 => match be16(frame, 0) {
            Some(et) if frame.len() >= 20 => (et, &frame[20..]),
            _ => return L3::NotIp(None),
        },
    };
    match ethertype {
        ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => L3::Ip(trim_to_ip_length(payload)),
        other => L3::NotIp(Some(other)),
    }
}

/// Cut link-layer padding: keep only as many bytes as the IP header says the packet has.
/// A header that claims more than is there is left alone for the translator to judge.
fn trim_to_ip_length(p: &[u8]) -> &[u8] {
    let claimed = match p.first().map(|b| b >> 4) {
        Some(4) => be16(p, 2).map(usize::from),
        Some(6) => be16(p, 4).map(|n| 40 + usize::from(n)),
        _ => None,
    };
    match claimed {
        // IPv6 payload length 0 means a jumbogram (RFC 2675): keep everything.
        Some(n) if n < p.len() && !(p[0] >> 4 == 6 && n == 40) => &p[..n],
        _ => p,
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(total: u16) -> Vec<u8> {
        let mut p = vec![0u8; usize::from(total)];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p
    }

    fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn raw_is_passed_through() {
        let p = v4(28);
        assert_eq!(l3(Link::Raw, &p), L3::Ip(&p[..]));
        assert_eq!(l3(Link::Raw, &[]), L3::Ip(&[][..]));
    }

    #[test]
    fn ethernet_strips_header_and_padding() {
        let p = v4(28);
        let mut f = eth(ETHERTYPE_IPV4, &p);
        f.resize(60, 0); // minimum frame size: 18 bytes of padding
        assert_eq!(l3(Link::Ethernet, &f), L3::Ip(&p[..]));
    }

    #[test]
    fn ethernet_one_vlan_tag() {
        let mut p6 = vec![0u8; 48];
        p6[0] = 0x60;
        p6[4..6].copy_from_slice(&8u16.to_be_bytes());
        let mut tagged = vec![0u8; 12];
        tagged.extend_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        tagged.extend_from_slice(&[0x00, 0x2a]); // VLAN 42
        tagged.extend_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
        tagged.extend_from_slice(&p6);
        assert_eq!(l3(Link::Ethernet, &tagged), L3::Ip(&p6[..]));
    }

    #[test]
    fn ethernet_non_ip_and_short() {
        assert_eq!(
            l3(Link::Ethernet, &eth(0x0806, &[0; 28])),
            L3::NotIp(Some(0x0806))
        );
        assert_eq!(l3(Link::Ethernet, &[0; 13]), L3::NotIp(None));
        let mut short_tag = vec![0u8; 12];
        short_tag.extend_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        assert_eq!(l3(Link::Ethernet, &short_tag), L3::NotIp(None));
    }

    #[test]
    fn linux_sll_and_sll2() {
        let p = v4(20);
        let mut sll = vec![0u8; 14];
        sll.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        sll.extend_from_slice(&p);
        assert_eq!(l3(Link::LinuxSll, &sll), L3::Ip(&p[..]));
        let mut sll2 = ETHERTYPE_IPV4.to_be_bytes().to_vec();
        sll2.resize(20, 0);
        sll2.extend_from_slice(&p);
        assert_eq!(l3(Link::LinuxSll2, &sll2), L3::Ip(&p[..]));
        assert_eq!(l3(Link::LinuxSll2, &sll2[..10]), L3::NotIp(None));
    }

    #[test]
    fn claimed_length_longer_than_frame_is_kept() {
        let mut p = v4(28);
        p[2..4].copy_from_slice(&100u16.to_be_bytes());
        let f = eth(ETHERTYPE_IPV4, &p);
        assert_eq!(l3(Link::Ethernet, &f), L3::Ip(&p[..]));
    }
}
