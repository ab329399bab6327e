//! IPv4 Identification for translated packets (RFC 7915 §5.1, RFC 6864 §4.1).
//!
//! An ID only matters when the IPv4 packet can be fragmented (DF=0). RFC 6864 asks
//! that it be unique per (source, destination, protocol) within the maximum datagram
//! lifetime. Like Linux's `ip_idents`, each worker keeps a small table of counters
//! indexed by a keyed flow hash: a flow starts at a hashed value and increments.
//! No lock, no RNG per packet (Jool's `get_random_bytes` per packet cost it 37 %).

use crate::hash;

/// Counters per worker (and per CPU in the eBPF fast path, docs/fastpath.md).
pub const SLOTS: usize = 1024;

/// Per-worker IPv4 ID generator.
#[derive(Clone)]
pub struct Ipv4IdGenerator {
    key: u64,
    counters: Box<[u16; SLOTS]>,
}

impl Ipv4IdGenerator {
    /// A generator whose start values derive from `key`.
    pub fn new(key: u64) -> Self {
        Ipv4IdGenerator {
            key,
            counters: Box::new(Self::start_values(key)),
        }
    }

    /// The counters a fresh generator under `key` starts from: the eBPF fast
    /// path's per-CPU table starts from the same, so its IDs follow this rule.
    pub fn start_values(key: u64) -> [u16; SLOTS] {
        core::array::from_fn(|i| hash::keyed(key, &[i as u64]) as u16)
    }

    /// Next ID for the flow (src, dst, proto).
    pub fn next(&mut self, src: [u8; 4], dst: [u8; 4], proto: u8) -> u16 {
        let flow = (u64::from(u32::from_be_bytes(src)) << 32) | u64::from(u32::from_be_bytes(dst));
        // The protocol goes into the flow word's spare entropy: one multiply, not two.
        let h = hash::keyed(
            self.key,
            &[flow ^ (u64::from(proto) << 57 | u64::from(proto))],
        );
        let slot = (h as usize) % SLOTS;
        let c = &mut self.counters[slot];
        *c = c.wrapping_add(1);
        c.wrapping_add((h >> 48) as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6864 §4.1: consecutive IDs of one flow are distinct (they increment).
    #[test]
    fn rfc6864_s4_1_per_flow_ids_increment() {
        let mut g = Ipv4IdGenerator::new(7);
        let a = g.next([192, 0, 2, 1], [198, 51, 100, 1], 17);
        let b = g.next([192, 0, 2, 1], [198, 51, 100, 1], 17);
        assert_eq!(b, a.wrapping_add(1));
    }

    #[test]
    fn rfc6864_s4_1_flows_start_apart() {
        let mut g = Ipv4IdGenerator::new(7);
        let a = g.next([192, 0, 2, 1], [198, 51, 100, 1], 17);
        let b = g.next([192, 0, 2, 2], [198, 51, 100, 1], 17);
        assert_ne!(a, b);
    }
}
