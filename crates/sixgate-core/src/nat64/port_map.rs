//! Which of this worker's pool4 ports are taken: one bit per owned port of
//! each pool4 address new mappings are made on (`alloc_pool4`), per protocol,
//! and a count of the free ones. It mirrors [`Nat64::port_taken`] exactly for
//! those ports (a BIB entry of this worker, cooling ones included, or any
//! static entry), so that the RFC 6056 search in `port_alloc` finds the same
//! port as probing the BIB would, word by word instead of one hash look-up
//! (a cache miss in a large table) per candidate, and passes over a full
//! address at once instead of after `2 × MAX_PROBES` look-ups
//! (docs/perf-log/2026-12-01.md, "NAT64 session creation as the table fills").
//!
//! Kept up to date by `bib_insert` and `bib_remove`, the only writers of the
//! IPv4-side index; rebuilt (never on the packet path) when the pool4
//! entries it covers change. A protocol whose bitmap would exceed
//! [`budget`] (a large pool4 at wide ranges: ICMP identifiers default to all
//! 65 536) has none: its allocations probe the BIB as before. Port blocks
//! (RFC 7422) are searched block by block and do not use it.

use super::Nat64;
use super::config::{Pool4Entry, Proto};
use super::port_alloc::Owned;

/// Most bytes of bitmap one protocol may take per worker: 4 bytes per BIB
/// entry of capacity (under 4 % of the ~108 bytes a session costs), at
/// least 2 MiB (a /24 at all 65 536 identifiers and one worker takes 2 MiB).
pub(crate) fn budget(bib_cap: u32) -> usize {
    (bib_cap as usize).saturating_mul(4).max(2 << 20)
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// First word of this address's bitmap in `words`.
    off: u32,
    /// Owned ports not taken.
    free: u32,
}

/// One pool4 entry the map covers.
struct Entry {
    pool: Pool4Entry,
    first: u32,
    count: u32,
    /// This worker's ports of each protocol's range.
    owned: [Owned; 3],
    /// Its first address's first slot.
    slot: u32,
}

/// Most pool4 addresses a map covers (the configuration's limit, a /16).
const MAX_ADDRESSES: u64 = 1 << 16;

/// The port map of one worker (see the module documentation).
#[derive(Default)]
pub(crate) struct PortMap {
    /// The pool4 entries it was built for (`alloc_pool4` then).
    layout: Vec<Entry>,
    /// Whether each protocol has a bitmap.
    on: [bool; 3],
    /// One per (address, protocol): address-major, `3 * k + proto`.
    slots: Vec<Slot>,
    words: Vec<u64>,
}

/// A slot found for an address and protocol: its index and owned ports.
#[derive(Clone, Copy)]
pub(crate) struct At {
    slot: usize,
    pub owned: Owned,
}

impl PortMap {
    /// The slot of (`proto`, `v4`) when that protocol has a bitmap and `v4` is
    /// one of the addresses it covers.
    #[inline]
    pub fn at(&self, proto: u8, v4: u32) -> Option<At> {
        let p = usize::from(proto);
        if p > 2 || !self.on[p] {
            return None;
        }
        let e = self
            .layout
            .iter()
            .find(|e| v4.wrapping_sub(e.first) < e.count)?;
        Some(At {
            slot: (e.slot + 3 * v4.wrapping_sub(e.first)) as usize + p,
            owned: e.owned[p],
        })
    }

    /// Whether every owned port of the slot is taken.
    #[inline]
    pub fn full(&self, at: At) -> bool {
        self.slots[at.slot].free == 0
    }

    /// Whether owned index `i` is taken (or is no port: an edge group's
    /// indices outside the range count as taken).
    #[inline]
    pub fn taken(&self, at: At, i: u32) -> bool {
        let w = self.slots[at.slot].off as usize + (i / 64) as usize;
        self.words[w] & 1 << (i % 64) != 0
    }

    /// The first of `count` candidates `base, base + 2, …` (modulo the owned
    /// length, which is even: ports go in pairs) that is free, as
    /// `port_alloc` probes them.
    pub fn first_free(&self, at: At, base: u32, count: u32) -> Option<u32> {
        let len = at.owned.len();
        let off = self.slots[at.slot].off as usize;
        let q = base & 1;
        let parity = 0x5555_5555_5555_5555u64 << q;
        let (mut i, mut left) = (base, count);
        loop {
            let w = i / 64;
            let end = len.min((w + 1) * 64);
            let free = !self.words[off + w as usize] & parity & (!0u64 << (i % 64));
            let here = (end - i).div_ceil(2);
            if free != 0 {
                let j = w * 64 + free.trailing_zeros();
                if j < end && (j - i) / 2 < left {
                    return Some(j);
                }
            }
            if here >= left {
                return None;
            }
            left -= here;
            i = if end == len { q } else { end + q };
        }
    }

    /// Port (`proto`, `v4`, `port`) is taken now.
    #[inline]
    pub fn mark(&mut self, proto: u8, v4: u32, port: u16) {
        self.set(proto, v4, port, true);
    }

    /// Port (`proto`, `v4`, `port`) is free now.
    #[inline]
    pub fn unmark(&mut self, proto: u8, v4: u32, port: u16) {
        self.set(proto, v4, port, false);
    }

    #[inline]
    fn set(&mut self, proto: u8, v4: u32, port: u16, taken: bool) {
        let Some(at) = self.at(proto, v4) else {
            return;
        };
        let Some(i) = at.owned.index(port) else {
            return;
        };
        let s = &mut self.slots[at.slot];
        let w = &mut self.words[s.off as usize + (i / 64) as usize];
        let bit = 1u64 << (i % 64);
        if (*w & bit != 0) != taken {
            *w ^= bit;
            if taken {
                s.free -= 1;
            } else {
                s.free += 1;
            }
        }
    }

    /// Whether the map covers exactly `pool4` (so a rebuild can be skipped).
    pub fn covers(&self, pool4: &[Pool4Entry]) -> bool {
        self.layout.len() == pool4.len() && self.layout.iter().zip(pool4).all(|(a, b)| a.pool == *b)
    }
}

impl Nat64 {
    /// Build the port map afresh for `alloc_pool4` from the BIB and the static
    /// entries: at start, and when pool4 or this node's shards change.
    pub(crate) fn port_map_rebuild(&mut self) {
        let mut map = PortMap::default();
        let addrs: u64 = self
            .alloc_pool4()
            .iter()
            .map(|e| u64::from(e.addr_count()))
            .sum();
        if self.cfg.port_block_size == 0 && addrs <= MAX_ADDRESSES {
            let budget = budget(self.bibs.capacity());
            let mut words = [0usize; 3];
            for e in self.alloc_pool4() {
                let owned =
                    Proto::ALL.map(|p| Owned::new(e.range(p), 0, self.worker, self.workers));
                for (p, o) in owned.iter().enumerate() {
                    words[p] += o.len().div_ceil(64) as usize * e.addr_count() as usize;
                }
                map.layout.push(Entry {
                    pool: *e,
                    first: e.first_addr(),
                    count: e.addr_count(),
                    owned,
                    slot: map.slots.len() as u32,
                });
                map.slots.resize(
                    map.slots.len() + 3 * e.addr_count() as usize,
                    Slot::default(),
                );
            }
            map.on = [0, 1, 2].map(|p| words[p] > 0 && words[p] * 8 <= budget);
            map.words
                .reserve_exact((0..3).filter(|&p| map.on[p]).map(|p| words[p]).sum());
            for e in &map.layout {
                for p in (0..3).filter(|&p| map.on[p]) {
                    // The same for every address of the entry: indices that
                    // are no port (edge groups, the last word's tail) taken.
                    let (template, free) = template(e.owned[p]);
                    for k in 0..e.count as usize {
                        map.slots[e.slot as usize + 3 * k + p] = Slot {
                            off: map.words.len() as u32,
                            free,
                        };
                        map.words.extend_from_slice(&template);
                    }
                }
            }
        }
        for &(p, v4, port) in &self.reserved {
            map.mark(p, v4, port);
        }
        // Every BIB entry, in slab order (a look-up per slot, or a walk of
        // the index in hash order, costs a cache miss per entry: with a
        // million entries a tenth of a second).
        let live = self.bibs.live_mask();
        for (b, _) in self.bibs.items.iter().zip(live).filter(|&(_, l)| l) {
            map.mark(b.proto, b.v4, b.port4);
        }
        self.port_map = map;
    }
}

/// The bitmap of an address with no port taken, and its number of ports.
fn template(o: Owned) -> (Vec<u64>, u32) {
    let len = o.len();
    let mut words = vec![0u64; len.div_ceil(64) as usize];
    let mut free = 0;
    for i in 0..len.div_ceil(64) * 64 {
        if i < len && o.nth(i).is_some() {
            free += 1;
        } else {
            words[(i / 64) as usize] |= 1 << (i % 64);
        }
    }
    (words, free)
}

#[cfg(test)]
mod tests {
    use super::super::config::{Nat64Config, PortRange, StaticBib, Timeouts};
    use super::super::tcp::Flags;
    use super::*;
    use std::net::Ipv4Addr;

    /// Every covered port's bit says what `port_taken` says, and the free
    /// counts add up.
    fn check(n: &Nat64) {
        let m = &n.port_map;
        for e in &m.layout {
            for k in 0..e.count {
                let v4 = e.first + k;
                for p in 0..3u8 {
                    let Some(at) = m.at(p, v4) else { continue };
                    let mut free = 0;
                    for i in 0..e.owned[usize::from(p)].len() {
                        let Some(port) = at.owned.nth(i) else {
                            assert!(m.taken(at, i));
                            continue;
                        };
                        assert_eq!(at.owned.index(port), Some(i));
                        let t = n.port_taken(p, v4, port);
                        assert_eq!(m.taken(at, i), t, "{p} {v4:x} {port}");
                        free += u32::from(!t);
                    }
                    assert_eq!(m.slots[at.slot].free, free);
                }
            }
        }
    }

    fn cfg(len: u8) -> Nat64Config {
        let mut e = Pool4Entry::single(Ipv4Addr::new(198, 18, 0, 0));
        e.prefix_len = len;
        e.tcp = PortRange::new(1024, 1279);
        e.udp = PortRange::new(2001, 2200);
        e.icmp = PortRange::new(0, 99);
        Nat64Config {
            pool4: vec![e],
            max_sessions: 8192,
            subscriber_prefix_len: 128,
            timeouts: Timeouts {
                udp: 120,
                icmp: 60,
                port_reuse: 30,
                ..Timeouts::default()
            },
            static_bib: vec![
                StaticBib {
                    proto: Proto::Udp,
                    v6: "2001:db8::1".parse().unwrap(),
                    port6: 53,
                    v4: Ipv4Addr::new(198, 18, 0, 1),
                    port4: 2002,
                },
                StaticBib {
                    proto: Proto::Tcp,
                    v6: "2001:db8::2".parse().unwrap(),
                    port6: 80,
                    v4: Ipv4Addr::new(198, 18, 0, 2),
                    port4: 1030,
                },
            ],
            ..Nat64Config::default()
        }
    }

    /// The port map picks exactly the ports probing the BIB picks, through
    /// filling, exhaustion, expiry, cooling, pool4 and static changes, and
    /// a change of this node's shards.
    #[test]
    fn same_ports_as_probing_the_bib() {
        for (worker, workers) in [(0, 1), (1, 2), (2, 3)] {
            let c = cfg(30);
            let mut fast = Nat64::new(&c, worker, workers);
            let mut slow = Nat64::new(&c, worker, workers);
            slow.port_map = PortMap::default();
            assert!(fast.port_map.at(1, 0xc612_0000).is_some());
            let mut x = 0x1234_5678_9abc_def1u64;
            let mut now = 0u64;
            let (mut exhausted, mut made) = (0u32, 0u32);
            for step in 0..6000u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let proto = Proto::ALL[(x % 3) as usize];
                let host = (x >> 8) % 24;
                let src6 = 0x2001_0db8_0000_0000_0000_0000_0000_0000u128 | u128::from(host);
                if fast.workers > 1 && !fast.owns_subscriber(src6) {
                    continue;
                }
                let sport = 1000 + ((x >> 16) % 1500) as u16;
                let dst4 = 0xc633_6400 | ((x >> 32) % 3) as u32;
                let flags = Flags {
                    syn: true,
                    ..Flags::default()
                };
                let a = fast.outbound(proto, src6, sport, dst4, 80, flags, now);
                let b = slow.outbound(proto, src6, sport, dst4, 80, flags, now);
                assert_eq!(a, b, "step {step}");
                exhausted += u32::from(a == Err(crate::verdict::DropReason::Pool4Exhausted));
                made += u32::from(a.is_ok());
                if step % 500 == 499 {
                    now += 50_000_000_000;
                    let mut out = [0u8; super::super::syn_store::HELD_BYTES];
                    while fast.tick(now, &mut out) != Err(false) {}
                    while slow.tick(now, &mut out) != Err(false) {}
                    check(&fast);
                }
                if step == 3000 {
                    // pool4 grows (rebuilt) and a static entry goes (kept).
                    let mut c2 = cfg(29);
                    c2.static_bib.pop();
                    fast.reconfigure(&c2);
                    slow.reconfigure(&c2);
                    slow.port_map = PortMap::default();
                    check(&fast);
                }
                if step == 4500 {
                    // State sync: new mappings only on this node's shard.
                    let shard = Some(vec![(0xc612_0004, 30)]);
                    fast.set_own_shards(shard.clone());
                    slow.set_own_shards(shard);
                    slow.port_map = PortMap::default();
                    check(&fast);
                }
            }
            check(&fast);
            // Addresses ran full, and ports came back.
            assert!(exhausted > 100 && made > 1000, "{exhausted} {made}");
        }
    }

    #[test]
    fn first_free_wraps_and_keeps_parity() {
        let o = Owned::new(PortRange::new(1000, 1199), 0, 0, 1);
        let (words, free) = template(o);
        assert_eq!(free, 200);
        let mut m = PortMap {
            layout: vec![Entry {
                pool: Pool4Entry::single(Ipv4Addr::new(192, 0, 2, 1)),
                first: 0xc000_0201,
                count: 1,
                owned: [o; 3],
                slot: 0,
            }],
            on: [false, true, false],
            slots: vec![Slot::default(); 3],
            words,
        };
        m.slots[1].free = free;
        let at = m.at(1, 0xc000_0201).unwrap();
        let len = o.len();
        for i in (0..len).filter(|i| i % 2 == 1) {
            m.mark(1, 0xc000_0201, o.nth(i).unwrap());
        }
        m.mark(1, 0xc000_0201, o.nth(150).unwrap());
        // Odd candidates all taken; even from 150 on: 152.
        assert_eq!(m.first_free(at, 151, len / 2), None);
        assert_eq!(m.first_free(at, 150, len / 2), Some(152));
        // From the last even index: wraps to 0; too few candidates: none.
        let last = (len - 1) & !1;
        assert_eq!(m.first_free(at, last, len / 2), Some(last));
        m.mark(1, 0xc000_0201, o.nth(last).unwrap());
        assert_eq!(m.first_free(at, last, 2), Some(0));
        assert_eq!(m.first_free(at, last, 1), None);
        assert_eq!(m.slots[1].free, 200 - 100 - 2);
    }
}
