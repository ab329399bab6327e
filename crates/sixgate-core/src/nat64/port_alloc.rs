//! Choosing a pool4 transport address for a new BIB entry (RFC 6146 §3.5.1.1,
//! RFC 6056, RFC 6888, RFC 7422).
//!
//! - Address: "paired" pooling (RFC 4787 REQ-2): a keyed hash of the subscriber
//!   prefix picks the pool4 address, so one subscriber shows one IPv4 address;
//!   the next addresses are tried when it is full.
//! - Port: the IPv6 source port (or ICMP identifier) is kept when it is in range,
//!   owned by this worker ([`super::steering::port_owner`]) and free. Otherwise
//!   RFC 6056 algorithm 3: start at `F(key, src6, dst4, dport) + next_ephemeral`
//!   (keyed on source *address*, destination address and port, so one host's
//!   connections to different servers start far apart while nothing about the
//!   source port leaks) and step through this worker's ports two at a time, so the
//!   first candidates keep the source port's parity (RFC 4787 REQ-3 spirit); then
//!   the other parity. At most [`MAX_PROBES`] candidates per address and parity.
//! - Port blocks (RFC 7422): the subscriber's blocks first; else a new block of
//!   `port_block_size` owned ports, found the same way.
//!
//! A port stays taken while its BIB entry cools down (`port_reuse`), so a released
//! port is never handed to anyone else for that long (RFC 6888 REQ-8).

use super::Nat64;
use super::config::{PortRange, Proto};
use super::steering::{port_group, subscriber_prefix};
use crate::hash;
use crate::verdict::DropReason;

/// Candidates tried per address and parity before giving up on an address.
pub const MAX_PROBES: u32 = 1024;
/// Pool4 addresses tried per allocation.
pub const MAX_ADDRESSES: u64 = 8;

/// The ports of one range that one worker owns, as an indexed sequence:
/// index `i` is port `(g0 + (i / g) * workers) * g + i % g`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Owned {
    range: PortRange,
    g: u32,
    g0: u32,
    groups: u32,
    step: u32,
}

impl Owned {
    pub fn new(range: PortRange, block: u16, worker: u16, workers: u16) -> Owned {
        let g = u32::from(port_group(block));
        let n = u32::from(workers.max(1));
        let (lo, hi) = (u32::from(range.first) / g, u32::from(range.last) / g);
        let w = u32::from(worker);
        let g0 = lo + (w + n - lo % n) % n;
        let groups = if range.is_empty() || g0 > hi {
            0
        } else {
            (hi - g0) / n + 1
        };
        Owned {
            range,
            g,
            g0,
            groups,
            step: n,
        }
    }

    /// Number of indices (whole groups; edge groups may hold out-of-range ports).
    pub fn len(&self) -> u32 {
        self.groups * self.g
    }

    /// Port at index `i`, if it lies in the range.
    pub fn nth(&self, i: u32) -> Option<u16> {
        let port = self.group_start(i / self.g) + i % self.g;
        let port = u16::try_from(port).ok()?;
        self.range.contains(port).then_some(port)
    }

    /// First port of owned group `k`.
    pub fn group_start(&self, k: u32) -> u32 {
        (self.g0 + k * self.step) * self.g
    }

    pub fn groups(&self) -> u32 {
        self.groups
    }

    /// Index of `port` (the inverse of [`Owned::nth`]), if this worker owns
    /// it and it lies in the range.
    pub fn index(&self, port: u16) -> Option<u32> {
        if !self.range.contains(port) {
            return None;
        }
        let p = u32::from(port);
        let group = (p / self.g).checked_sub(self.g0)?;
        let k = if self.step == 1 {
            group
        } else if group % self.step == 0 {
            group / self.step
        } else {
            return None;
        };
        (k < self.groups).then_some(k * self.g + p % self.g)
    }
}

/// Ports of `range` worker `worker` of `workers` owns.
pub(crate) fn owned_count(range: PortRange, block: u16, worker: u16, workers: u16) -> u32 {
    let o = Owned::new(range, block, worker, workers);
    if o.groups == 0 {
        return 0;
    }
    let mut n = o.len();
    let first = o.group_start(0);
    n -= u32::from(range.first).saturating_sub(first).min(o.g);
    let last_end = o.group_start(o.groups - 1) + o.g - 1;
    n -= last_end.saturating_sub(u32::from(range.last)).min(o.g);
    n
}

impl Nat64 {
    /// The `k`-th pool4 address (over all entries serving `proto` that new
    /// mappings may use: `shard`), with its range.
    fn pool4_nth(&self, proto: Proto, mut k: u64) -> Option<(u32, PortRange)> {
        for p in self.alloc_pool4() {
            if p.range(proto).is_empty() {
                continue;
            }
            let n = u64::from(p.addr_count());
            if k < n {
                return Some((p.first_addr().wrapping_add(k as u32), p.range(proto)));
            }
            k -= n;
        }
        None
    }

    fn pool4_addrs(&self, proto: Proto) -> u64 {
        self.alloc_pool4()
            .iter()
            .filter(|p| !p.range(proto).is_empty())
            .map(|p| u64::from(p.addr_count()))
            .sum()
    }

    /// §3.5.1.1: a free pool4 transport address for IPv6 source (`src6`,
    /// `port6`) talking to (`dst4`, `dport`). Charges the subscriber's port limit.
    pub(crate) fn allocate(
        &mut self,
        proto: Proto,
        src6: u128,
        port6: u16,
        dst4: u32,
        dport: u16,
        now_ns: u64,
    ) -> Result<(u32, u16), DropReason> {
        if self.cfg.deterministic.is_some() {
            return self.allocate_deterministic(proto, src6, port6, now_ns);
        }
        let addrs = self.pool4_addrs(proto);
        if addrs == 0 {
            return Err(DropReason::Pool4Exhausted);
        }
        let key = self.cfg.hash_key;
        let prefix = subscriber_prefix(src6, self.cfg.subscriber_prefix_len);
        let a0 = hash::keyed(key, &[(prefix >> 64) as u64, prefix as u64]) % addrs;
        if self.subs.blocks_on() {
            return self.allocate_in_blocks(proto, src6, port6, addrs, a0, now_ns);
        }
        if !self.subs.may_add_ports(src6, 1) {
            return Err(DropReason::SubscriberLimit);
        }
        let p = proto as u8;
        let start = hash::keyed(
            key,
            &[
                (src6 >> 64) as u64,
                src6 as u64,
                u64::from(dst4) << 16 | u64::from(dport),
            ],
        )
        .wrapping_add(u64::from(self.next_ephemeral));
        self.next_ephemeral = self.next_ephemeral.wrapping_add(1);
        for a in 0..addrs.min(MAX_ADDRESSES) {
            let Some((v4, range)) = self.pool4_nth(proto, (a0 + a) % addrs) else {
                break;
            };
            // The same choice from the port map, when it covers the address:
            // a full address is passed over at once.
            if let Some(at) = self.port_map.at(p, v4) {
                if self.port_map.full(at) {
                    continue;
                }
                let owned = at.owned;
                // Port preservation.
                if let Some(i) = owned.index(port6)
                    && !self.port_map.taken(at, i)
                {
                    self.subs.port_taken(src6);
                    return Ok((v4, port6));
                }
                let len = owned.len();
                let i0 = ((start % u64::from(len)) as u32 & !1) | u32::from(port6 & 1);
                for parity_flip in [0, 1] {
                    let count = (len / 2).clamp(1, MAX_PROBES);
                    if let Some(i) = self.port_map.first_free(at, i0 ^ parity_flip, count)
                        && let Some(port) = owned.nth(i)
                    {
                        self.subs.port_taken(src6);
                        return Ok((v4, port));
                    }
                }
                continue;
            }
            // Port preservation.
            if range.contains(port6) && self.owns_port(port6) && !self.port_taken(p, v4, port6) {
                self.subs.port_taken(src6);
                return Ok((v4, port6));
            }
            let owned = Owned::new(range, self.cfg.port_block_size, self.worker, self.workers);
            let len = owned.len();
            if len == 0 {
                continue;
            }
            let i0 = ((start % u64::from(len)) as u32 & !1) | u32::from(port6 & 1);
            for parity_flip in [0, 1] {
                let base = i0 ^ parity_flip;
                for k in 0..(len / 2).clamp(1, MAX_PROBES) {
                    let i = (base + 2 * k) % len;
                    if let Some(port) = owned.nth(i)
                        && !self.port_taken(p, v4, port)
                    {
                        self.subs.port_taken(src6);
                        return Ok((v4, port));
                    }
                }
            }
        }
        Err(DropReason::Pool4Exhausted)
    }

    /// RFC 7422: a port from the subscriber's blocks, or from a new block.
    fn allocate_in_blocks(
        &mut self,
        proto: Proto,
        src6: u128,
        port6: u16,
        addrs: u64,
        a0: u64,
        now_ns: u64,
    ) -> Result<(u32, u16), DropReason> {
        let p = proto as u8;
        let k = self.subs.block_size();
        let Some(sub) = self.subs.get_or_create(src6) else {
            return Err(DropReason::SessionTableFull);
        };
        // The subscriber's own blocks for this protocol.
        let mut bi = self.subs.subs.get(sub).blocks;
        while bi != super::slab::NIL {
            let b = *self.subs.blocks.get(bi);
            if b.proto == p
                && let Some(port) = self.free_in_block(p, b.v4, b.first, port6, proto, (0, 1))
            {
                self.subs.blocks.get_mut(bi).used += 1;
                return Ok((b.v4, port));
            }
            bi = b.next;
        }
        if !self.subs.may_add_ports(src6, u32::from(k)) {
            return Err(DropReason::SubscriberLimit);
        }
        let start = hash::keyed(self.cfg.hash_key, &[(src6 >> 64) as u64, u64::from(p)])
            .wrapping_add(u64::from(self.next_ephemeral));
        self.next_ephemeral = self.next_ephemeral.wrapping_add(1);
        for a in 0..addrs.min(MAX_ADDRESSES) {
            let Some((v4, range)) = self.pool4_nth(proto, (a0 + a) % addrs) else {
                break;
            };
            let owned = Owned::new(range, k, self.worker, self.workers);
            let groups = owned.groups();
            if groups == 0 {
                continue;
            }
            for j in 0..groups.min(MAX_PROBES) {
                let g = ((start + u64::from(j)) % u64::from(groups)) as u32;
                let first = owned.group_start(g) as u16;
                if self.subs.block_of(p, v4, first).is_some() {
                    continue;
                }
                let Some(port) = self.free_in_block(p, v4, first, port6, proto, (0, 1)) else {
                    continue;
                };
                let log = self.cfg.event_log;
                let Some(bi) =
                    self.subs
                        .block_add(sub, p, v4, first, now_ns, &mut self.events, log)
                else {
                    return Err(DropReason::SessionTableFull);
                };
                self.subs.blocks.get_mut(bi).used += 1;
                return Ok((v4, port));
            }
        }
        Err(DropReason::Pool4Exhausted)
    }

    /// RFC 7422 deterministic NAT: a port of the subscriber's own block
    /// (`deterministic::Deterministic`), none beyond it (§2).
    fn allocate_deterministic(
        &mut self,
        proto: Proto,
        src6: u128,
        port6: u16,
        now_ns: u64,
    ) -> Result<(u32, u16), DropReason> {
        let Ok(Some(d)) = &self.det else {
            return Err(DropReason::DeterministicUnmapped);
        };
        let Some((v4, first)) = d.index(src6).and_then(|i| d.block(i)) else {
            return Err(DropReason::DeterministicUnmapped);
        };
        // A drained node (sync) makes no new mapping, as without the formula.
        if self.own_shards.as_ref().is_some_and(Vec::is_empty) {
            return Err(DropReason::Pool4Exhausted);
        }
        let p = proto as u8;
        let share = self.det_share;
        let Some(port) = self.free_in_block(p, v4, first, port6, proto, share) else {
            return Err(DropReason::DeterministicPortsFull);
        };
        let bi = match self.subs.block_of(p, v4, first) {
            Some(bi) => bi,
            None => {
                let Some(sub) = self.subs.get_or_create(src6) else {
                    return Err(DropReason::SessionTableFull);
                };
                let log = self.cfg.event_log;
                self.subs
                    .block_add(sub, p, v4, first, now_ns, &mut self.events, log)
                    .ok_or(DropReason::SessionTableFull)?
            }
        };
        self.subs.blocks.get_mut(bi).used += 1;
        Ok((v4, port))
    }

    /// A free port in block `first..first + K` of `v4`, inside `proto`'s range;
    /// the IPv6 port's offset in the block first (so a port keeps its parity).
    /// Only the ports at offsets `≡ rank (mod nodes)` of `share = (rank,
    /// nodes)`: this node's part of a deterministic block.
    fn free_in_block(
        &self,
        p: u8,
        v4: u32,
        first: u16,
        port6: u16,
        proto: Proto,
        share: (u16, u16),
    ) -> Option<u16> {
        let k = self.subs.block_size();
        let range = self
            .cfg
            .pool4
            .iter()
            .find(|e| e.contains(v4))
            .map(|e| e.range(proto))?;
        let off = port6 & (k - 1);
        let (rank, nodes) = (share.0, share.1.max(1));
        (0..k).map(|j| first + ((off + j) & (k - 1))).find(|&port| {
            (port - first) % nodes == rank && range.contains(port) && !self.port_taken(p, v4, port)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6056_owned_ports_partition_the_range() {
        let r = PortRange::new(61001, 65535);
        for block in [0u16, 64] {
            let mut seen = std::collections::HashSet::new();
            let mut total = 0;
            for w in 0..3 {
                let o = Owned::new(r, block, w, 3);
                for i in 0..o.len() {
                    if let Some(p) = o.nth(i) {
                        assert_eq!(super::super::steering::port_owner(p, block, 3), w);
                        assert!(seen.insert(p));
                    }
                }
                total += owned_count(r, block, w, 3);
            }
            assert_eq!(seen.len(), r.len() as usize);
            assert_eq!(total, r.len());
        }
    }
}
