//! Which worker a MAP-T BR packet goes to. The BR keeps no per-flow state, only
//! the fragment table of RFC 7599 §8 (later fragments follow what the first one
//! got), so the one thing steering must get right is that every fragment of a
//! datagram, first and later, reaches the same worker. The TUN data plane's eBPF
//! program (`sixgate-tun/bpf/steer.c`, mode `flow`) computes the same functions;
//! they must agree bit for bit.
//!
//! - A fragment (IPv4: MF set or offset non-zero; IPv6: a Fragment header):
//!   by source, destination, Identification and protocol, the fields that name
//!   its datagram (RFC 791 §3.2, RFC 8200 §4.5).
//! - Anything else: by the 5-tuple (ports 0 when there are none), so flows spread.
//!
//! [`fragment_owner`] reads a packet for data planes that steer in user space
//! (the AF_XDP workers' handoff, docs/xdp.md): a fragment's worker by the same
//! functions, and `None` for a whole packet, which stays where it arrived.

/// Multiplier of [`flow_worker`]'s mixing step (the golden ratio, as in
/// [`crate::nat64::steering::SUBSCRIBER_MULTIPLIER`]).
pub const FLOW_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// `h = 0; for x in words { h = (h ^ x) * FLOW_MULTIPLIER }` (wrapping at 64
/// bits), then `(h >> 32) % workers`.
pub fn flow_worker(words: &[u64], workers: u16) -> u16 {
    if workers <= 1 {
        return 0;
    }
    let h = words
        .iter()
        .fold(0u64, |h, &x| (h ^ x).wrapping_mul(FLOW_MULTIPLIER));
    ((h >> 32) % u64::from(workers)) as u16
}

/// An IPv4 fragment: words `src << 32 | dst`, `id << 8 | protocol`.
pub fn fragment4_worker(src: u32, dst: u32, id: u16, protocol: u8, workers: u16) -> u16 {
    flow_worker(
        &[
            u64::from(src) << 32 | u64::from(dst),
            u64::from(id) << 8 | u64::from(protocol),
        ],
        workers,
    )
}

/// An IPv4 packet that is not a fragment: words `src << 32 | dst`,
/// `src_port << 24 | dst_port << 8 | protocol`.
pub fn flow4_worker(src: u32, dst: u32, protocol: u8, ports: (u16, u16), workers: u16) -> u16 {
    flow_worker(
        &[
            u64::from(src) << 32 | u64::from(dst),
            ports_word(protocol, ports),
        ],
        workers,
    )
}

/// An IPv6 packet with a Fragment header: words `fold(src)`, `fold(dst)`,
/// `id << 8 | next header` (the Fragment header's), `fold(x) = high 64 bits ^
/// low 64 bits`.
pub fn fragment6_worker(src: u128, dst: u128, id: u32, next_header: u8, workers: u16) -> u16 {
    flow_worker(
        &[
            fold(src),
            fold(dst),
            u64::from(id) << 8 | u64::from(next_header),
        ],
        workers,
    )
}

/// An IPv6 packet without a Fragment header: words `fold(src)`, `fold(dst)`,
/// `src_port << 24 | dst_port << 8 | protocol` (the upper-layer protocol).
pub fn flow6_worker(src: u128, dst: u128, protocol: u8, ports: (u16, u16), workers: u16) -> u16 {
    flow_worker(
        &[fold(src), fold(dst), ports_word(protocol, ports)],
        workers,
    )
}

const fn fold(a: u128) -> u64 {
    ((a >> 64) as u64) ^ (a as u64)
}

const fn ports_word(protocol: u8, (src, dst): (u16, u16)) -> u64 {
    (src as u64) << 24 | (dst as u64) << 8 | protocol as u64
}

/// Extension headers that may come before a Fragment header (RFC 8200 §4.1):
/// Hop-by-Hop Options, Routing, Destination Options.
const BEFORE_FRAGMENT: [u8; 3] = [0, 43, 60];
/// The IPv6 Fragment header's Next Header value.
const FRAGMENT: u8 = 44;

/// The worker (of `workers`) that must translate the IP packet `ip` when it is
/// a fragment (IPv4: More Fragments set or a non-zero offset, by
/// [`fragment4_worker`]; IPv6: a Fragment header after at most three other
/// extension headers, by [`fragment6_worker`]); `None` for a whole packet,
/// which any worker translates. Allocates nothing.
pub fn fragment_owner(ip: &[u8], workers: u16) -> Option<u16> {
    match ip.first()? >> 4 {
        4 => {
            let h = ip.get(..20)?;
            // Flags and Fragment Offset: MF (0x2000) or any offset.
            if u16::from_be_bytes([h[6], h[7]]) & 0x3fff == 0 {
                return None;
            }
            let id = u16::from_be_bytes([h[4], h[5]]);
            Some(fragment4_worker(
                be32(&h[12..16]),
                be32(&h[16..20]),
                id,
                h[9],
                workers,
            ))
        }
        6 => {
            let (mut nh, mut off) = (*ip.get(6)?, 40usize);
            let addr = |at: usize| -> Option<u128> {
                Some(u128::from_be_bytes(ip.get(at..at + 16)?.try_into().ok()?))
            };
            for _ in 0..4 {
                if nh == FRAGMENT {
                    let f = ip.get(off..off + 8)?;
                    let (src, dst) = (addr(8)?, addr(24)?);
                    return Some(fragment6_worker(src, dst, be32(&f[4..8]), f[0], workers));
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

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 791 §3.2: a datagram's fragments share source, destination, protocol
    /// and Identification; only offset and MF differ, and neither is hashed.
    #[test]
    fn rfc791_3_2_fragments_of_a_datagram_share_a_worker() {
        let (s, d) = (0xc000_0201, 0xc612_0008);
        for w in [2u16, 3, 8] {
            let hit: std::collections::HashSet<u16> = (0..200u16)
                .map(|id| fragment4_worker(s, d, id, 17, w))
                .collect();
            // Different datagrams spread over every worker.
            assert_eq!(hit.len(), usize::from(w));
        }
    }

    #[test]
    fn flows_spread_and_one_worker_is_worker_zero() {
        let hit: std::collections::HashSet<u16> = (0..200u16)
            .map(|p| flow6_worker(1, 2, 17, (55296 + p, 53), 4))
            .collect();
        assert_eq!(hit.len(), 4);
        assert_eq!(flow4_worker(1, 2, 6, (1, 2), 1), 0);
        assert_eq!(fragment6_worker(1, 2, 3, 17, 0), 0);
    }

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
        p.extend((0..32).map(|i| i as u8));
        for (i, (_, body)) in exts.iter().enumerate() {
            let next = exts.get(i + 1).map_or(last, |e| e.0);
            p.push(next);
            p.extend_from_slice(body);
        }
        p.extend([0; 8]);
        p
    }

    /// RFC 7599 §8 (IPv4 → IPv6 at the BR): the first fragment (MF) and the
    /// later ones (offset) of one datagram go to the worker
    /// [`fragment4_worker`] picks; a whole packet (DF or nothing) to none.
    #[test]
    fn rfc7599_8_ipv4_fragments_are_read_from_the_packet() {
        let id = 0x1235;
        let want = Some(fragment4_worker(0xc000_0201, 0xc612_0008, id, 17, 4));
        assert_eq!(fragment_owner(&v4(0x2000, id), 4), want);
        assert_eq!(fragment_owner(&v4(0x2000 | 185, id), 4), want);
        assert_eq!(fragment_owner(&v4(370, id), 4), want);
        assert_eq!(fragment_owner(&v4(0x4000, id), 4), None);
        assert_eq!(fragment_owner(&v4(0, id), 4), None);
        assert_eq!(fragment_owner(&v4(0x2000, id), 0), Some(0));
    }

    /// RFC 7599 §8 (IPv6 → IPv4 at the BR), RFC 8200 §4.5: the Fragment
    /// header's Identification and Next Header, found behind other extension
    /// headers; no Fragment header, no owner; a short packet, no owner.
    #[test]
    fn rfc7599_8_ipv6_fragments_are_read_from_the_packet() {
        let frag = |offset_m: u16, id: u32| {
            let mut b = vec![0u8];
            b.extend(offset_m.to_be_bytes());
            b.extend(id.to_be_bytes());
            b
        };
        let id = 0xdead_beef;
        let src = u128::from_be_bytes(core::array::from_fn(|i| i as u8));
        let dst = u128::from_be_bytes(core::array::from_fn(|i| 16 + i as u8));
        let want = Some(fragment6_worker(src, dst, id, 17, 3));
        assert_eq!(fragment_owner(&v6(&[(44, &frag(1, id))], 17), 3), want);
        assert_eq!(fragment_owner(&v6(&[(44, &frag(0x5a8, id))], 17), 3), want);
        let hop = [0u8; 7];
        let behind = v6(&[(0, &hop), (60, &hop), (44, &frag(1, id))], 17);
        assert_eq!(fragment_owner(&behind, 3), want);
        assert_eq!(fragment_owner(&v6(&[], 17), 3), None);
        assert_eq!(fragment_owner(&v6(&[(60, &hop)], 6), 3), None);
        assert_eq!(
            fragment_owner(&v6(&[(44, &frag(1, id))], 17)[..44], 3),
            None
        );
        assert_eq!(fragment_owner(&[0x45, 0, 0], 3), None);
        assert_eq!(fragment_owner(&[], 3), None);
    }
}
