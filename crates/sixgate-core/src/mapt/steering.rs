//! Which worker must translate a BR's packet, for data planes that spread
//! packets over workers themselves (the AF_XDP workers' handoff, docs/xdp.md).
//!
//! RFC 7599 §8: fragments after the first carry no port, so a BR translates
//! them with what their first fragment got (the worker's bounded fragment
//! table). All fragments of one datagram must therefore reach one worker: the
//! Identification picks it (the IPv4 header's 16 bits, or the 32 bits of the
//! IPv6 Fragment header, RFC 8200 §4.5), as the NAT64 owner rule does for its
//! non-first fragments. A whole packet needs nothing of any worker's state and
//! stays where it was received.

/// Extension headers that may come before a Fragment header (RFC 8200 §4.1):
/// Hop-by-Hop Options, Routing, Destination Options.
const BEFORE_FRAGMENT: [u8; 3] = [0, 43, 60];
/// The IPv6 Fragment header's Next Header value.
const FRAGMENT: u8 = 44;

/// The worker (of `workers`) that must translate the IP packet `ip` when it is
/// a fragment (IPv4: More Fragments set or a non-zero offset; IPv6: a Fragment
/// header after at most three other extension headers); `None` for a whole
/// packet, which any worker translates. Allocates nothing.
pub fn fragment_owner(ip: &[u8], workers: u16) -> Option<u16> {
    let workers = workers.max(1);
    match ip.first()? >> 4 {
        4 => {
            let h = ip.get(..20)?;
            // Flags and Fragment Offset: MF (0x2000) or any offset.
            let frag = u16::from_be_bytes([h[6], h[7]]) & 0x3fff;
            (frag != 0).then(|| u16::from_be_bytes([h[4], h[5]]) % workers)
        }
        6 => {
            let (mut nh, mut off) = (*ip.get(6)?, 40usize);
            for _ in 0..4 {
                if nh == FRAGMENT {
                    let id = ip.get(off + 4..off + 8)?;
                    let id = u32::from_be_bytes([id[0], id[1], id[2], id[3]]);
                    return Some((id % u32::from(workers)) as u16);
                }
                if !BEFORE_FRAGMENT.contains(&nh) {
                    return None;
                }
                let ext = ip.get(off..off + 2)?;
                nh = ext[0];
                off += (usize::from(ext[1]) + 1) * 8;
            }
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(flags_offset: u16, id: u16) -> Vec<u8> {
        let mut h = vec![
            0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 192, 0, 2, 1, 198, 18, 0, 8,
        ];
        h[4..6].copy_from_slice(&id.to_be_bytes());
        h[6..8].copy_from_slice(&flags_offset.to_be_bytes());
        h.extend([0; 8]);
        h
    }

    fn v6(exts: &[(u8, &[u8])], last: u8) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0, 0, 0, exts.first().map_or(last, |e| e.0), 64];
        p.extend([0; 32]);
        for (i, (_, body)) in exts.iter().enumerate() {
            let next = exts.get(i + 1).map_or(last, |e| e.0);
            p.push(next);
            p.extend_from_slice(body);
        }
        p.extend([0; 8]);
        p
    }

    /// RFC 7599 §8 (IPv4 → IPv6 at the BR): the first fragment (MF) and the
    /// later ones (offset) of one datagram go to the worker its
    /// Identification picks; a whole packet (DF or nothing) to none.
    #[test]
    fn rfc7599_8_ipv4_fragments_of_one_datagram_share_a_worker() {
        let id = 0x1235;
        let first = fragment_owner(&v4(0x2000, id), 4);
        assert_eq!(first, Some(id % 4));
        assert_eq!(fragment_owner(&v4(0x2000 | 185, id), 4), first);
        assert_eq!(fragment_owner(&v4(370, id), 4), first);
        assert_eq!(fragment_owner(&v4(0x4000, id), 4), None);
        assert_eq!(fragment_owner(&v4(0, id), 4), None);
        assert_eq!(fragment_owner(&v4(0x2000, id), 0), Some(0));
    }

    /// RFC 7599 §8 (IPv6 → IPv4 at the BR), RFC 8200 §4.5: the Fragment
    /// header's Identification, found behind other extension headers; no
    /// Fragment header, no owner.
    #[test]
    fn rfc7599_8_ipv6_fragments_follow_their_identification() {
        let frag = |offset_m: u16, id: u32| {
            let mut b = vec![0u8];
            b.extend(offset_m.to_be_bytes());
            b.extend(id.to_be_bytes());
            b
        };
        let id = 0xdead_beef;
        let want = Some((id % 3) as u16);
        assert_eq!(fragment_owner(&v6(&[(44, &frag(1, id))], 17), 3), want);
        assert_eq!(fragment_owner(&v6(&[(44, &frag(0x5a8, id))], 17), 3), want);
        let hop = [0u8; 7];
        let behind = v6(&[(0, &hop), (60, &hop), (44, &frag(1, id))], 17);
        assert_eq!(fragment_owner(&behind, 3), want);
        assert_eq!(fragment_owner(&v6(&[], 17), 3), None);
        assert_eq!(fragment_owner(&v6(&[(60, &hop)], 6), 3), None);
        // Cut short: no owner, no panic.
        assert_eq!(
            fragment_owner(&v6(&[(44, &frag(1, id))], 17)[..44], 3),
            None
        );
        assert_eq!(fragment_owner(&[0x45, 0, 0], 3), None);
        assert_eq!(fragment_owner(&[], 3), None);
    }
}
