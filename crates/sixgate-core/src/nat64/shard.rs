//! docs/ha.md, "Ownership of pool4": with state shared between gateway nodes,
//! pool4 is cut into shards of whole addresses, each owned by one node, and
//! only the owner creates mappings on an address. The other addresses stay
//! pool4 (their IPv4 packets are translated from the replica, and imports
//! land on them); they are only left out of the choice of a new mapping.

use super::Nat64;
use super::config::Pool4Entry;

/// The parts of `pool4` inside `shards`, with the port ranges of the entry
/// they come from. Both are lists of prefixes, so each intersection is the
/// smaller of two nested prefixes, or nothing.
fn intersect(pool4: &[Pool4Entry], shards: &[(u32, u8)]) -> Vec<Pool4Entry> {
    let mut out = Vec::new();
    for e in pool4 {
        for &(addr, len) in shards {
            let shard = Pool4Entry {
                addr: addr.into(),
                prefix_len: len,
                ..*e
            };
            if len >= e.prefix_len && e.contains(shard.first_addr()) {
                out.push(shard);
            } else if len <= e.prefix_len && shard.contains(e.first_addr()) {
                out.push(*e);
            }
        }
    }
    out
}

impl Nat64 {
    /// This node's shards (`None`: no sync, every pool4 address is ours).
    pub(crate) fn set_own_shards(&mut self, shards: Option<Vec<(u32, u8)>>) {
        if shards.is_some() {
            // The first replies of a peer's new sessions wait here whole.
            self.held.enable_whole();
        }
        self.own_shards = shards;
        self.own_pool4_rebuild();
        self.port_map_changed(&[]);
    }

    /// After a change of pool4 or of the shards (never on the packet path).
    pub(crate) fn own_pool4_rebuild(&mut self) {
        self.own_pool4 = self
            .own_shards
            .as_ref()
            .map(|s| intersect(&self.cfg.pool4, s));
    }

    /// The pool4 entries new mappings are made on.
    #[inline]
    pub(crate) fn alloc_pool4(&self) -> &[Pool4Entry] {
        self.own_pool4.as_deref().unwrap_or(&self.cfg.pool4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nat64::PortRange;
    use std::net::Ipv4Addr;

    fn e(a: [u8; 4], len: u8) -> Pool4Entry {
        Pool4Entry {
            prefix_len: len,
            tcp: PortRange::new(1024, 2047),
            ..Pool4Entry::single(Ipv4Addr::from(a))
        }
    }

    #[test]
    fn shards_cut_pool4_entries_and_keep_their_ranges() {
        let pool4 = [e([192, 0, 2, 0], 30), e([198, 51, 100, 8], 32)];
        let shard = |a: [u8; 4], l| (u32::from(Ipv4Addr::from(a)), l);
        let own = intersect(
            &pool4,
            &[shard([192, 0, 2, 2], 31), shard([198, 51, 100, 0], 24)],
        );
        assert_eq!(own, vec![e([192, 0, 2, 2], 31), e([198, 51, 100, 8], 32)]);
        assert_eq!(own[0].tcp, PortRange::new(1024, 2047));
        assert!(intersect(&pool4, &[shard([203, 0, 113, 0], 24)]).is_empty());
    }
}
