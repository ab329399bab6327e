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
}
