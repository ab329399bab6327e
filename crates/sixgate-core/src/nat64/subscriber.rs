//! RFC 6888 REQ-4: per-subscriber limits on sessions and ports, and RFC 7422 port
//! blocks. A subscriber is the IPv6 source's first `subscriber_prefix_len` bits.
//! Steering gives each subscriber to one worker, so these counters are plain
//! integers. Kept only when a limit or port blocks are configured.

use super::EventLog;
use super::bib::{Bib, proto_of};
use super::config::Nat64Config;
use super::event::{Event, EventKind, EventRing};
use super::slab::{Link, NIL, Slab, Slot};
use super::steering::subscriber_prefix;
use foldhash::fast::FixedState;
use hashbrown::HashTable;
use std::hash::BuildHasher;
use std::net::{Ipv4Addr, Ipv6Addr};

#[derive(Clone, Copy, Debug)]
pub(crate) struct Sub {
    pub prefix: [u8; 16],
    pub sessions: u32,
    /// Ports held: BIB entries, or blocks × block size.
    pub ports: u32,
    /// First of its port blocks (linked through `Block::next`).
    pub blocks: u32,
    free: Link,
}

impl Slot for Sub {
    fn free_link(&mut self) -> &mut Link {
        &mut self.free
    }
}

/// A block of `port_block_size` consecutive pool4 ports held by one subscriber.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block {
    pub v4: u32,
    pub first: u16,
    pub proto: u8,
    /// BIB entries in the block (cooling ones included).
    pub used: u16,
    pub sub: u32,
    pub next: u32,
    free: Link,
}

impl Slot for Block {
    fn free_link(&mut self) -> &mut Link {
        &mut self.free
    }
}

/// Subscribers one worker tracks for `cap` sessions: a quarter (a subscriber
/// averages at least 4 sessions), at least 1024 or `cap`. When the table is full, a
/// new subscriber's flows are refused (`session_table_full`).
pub(crate) fn subscriber_capacity(cap: u32) -> u32 {
    (cap / 4).max(cap.min(1024))
}

#[inline]
fn block_key(proto: u8, v4: u32, first: u16) -> u64 {
    u64::from(v4) << 32 | u64::from(first) << 8 | u64::from(proto)
}

pub(crate) struct Subscribers {
    on: bool,
    prefix_len: u8,
    max_sessions: u32,
    max_ports: u32,
    block: u16,
    hasher: FixedState,
    pub subs: Slab<Sub>,
    idx: HashTable<u32>,
    pub blocks: Slab<Block>,
    block_idx: HashTable<u32>,
}

impl Subscribers {
    pub fn new(cfg: &Nat64Config, cap: u32) -> Self {
        let block = if cfg.port_block_size >= 2 {
            cfg.port_block_size
        } else {
            0
        };
        let on =
            cfg.max_sessions_per_subscriber > 0 || cfg.max_ports_per_subscriber > 0 || block > 0;
        let subs_cap = if on { subscriber_capacity(cap) } else { 0 };
        // A subscriber adds a block only when its blocks for that protocol are
        // full, so blocks never exceed BIB entries / K plus one per protocol and
        // subscriber.
        let block_cap = if block > 0 {
            (cap / u32::from(block)).saturating_add(subs_cap.saturating_mul(3))
        } else {
            0
        };
        let cap = subs_cap;
        Subscribers {
            on,
            prefix_len: cfg.subscriber_prefix_len,
            max_sessions: cfg.max_sessions_per_subscriber,
            max_ports: cfg.max_ports_per_subscriber,
            block,
            hasher: FixedState::with_seed(cfg.hash_key ^ 0x5375_6273),
            subs: Slab::with_capacity(cap),
            idx: HashTable::with_capacity(cap as usize),
            blocks: Slab::with_capacity(block_cap),
            block_idx: HashTable::with_capacity(block_cap as usize),
        }
    }

    /// A reload: new limits (tracking itself stays as it started).
    pub fn set_limits(&mut self, cfg: &Nat64Config) {
        self.max_sessions = cfg.max_sessions_per_subscriber;
        self.max_ports = cfg.max_ports_per_subscriber;
    }

    pub fn blocks_on(&self) -> bool {
        self.block > 0
    }

    pub fn block_size(&self) -> u16 {
        self.block
    }

    pub fn count(&self) -> u32 {
        self.subs.live()
    }

    pub fn block_count(&self) -> u32 {
        self.blocks.live()
    }

    fn prefix(&self, v6: u128) -> u128 {
        subscriber_prefix(v6, self.prefix_len)
    }

    pub fn find(&self, v6: u128) -> Option<u32> {
        if !self.on {
            return None;
        }
        let p = self.prefix(v6);
        let key = p.to_be_bytes();
        let items = &self.subs.items;
        self.idx
            .find(self.hasher.hash_one(p), |&i| {
                items[i as usize].prefix == key
            })
            .copied()
    }

    /// The subscriber record of `v6`, created if needed; `None` when tracking is
    /// off or the table is full.
    pub fn get_or_create(&mut self, v6: u128) -> Option<u32> {
        if !self.on {
            return None;
        }
        if let Some(i) = self.find(v6) {
            return Some(i);
        }
        let p = self.prefix(v6);
        let i = self.subs.alloc(Sub {
            prefix: p.to_be_bytes(),
            sessions: 0,
            ports: 0,
            blocks: NIL,
            free: Link::NONE,
        })?;
        let hasher = self.hasher.clone();
        let items = &self.subs.items;
        self.idx.insert_unique(hasher.hash_one(p), i, |&j| {
            hasher.hash_one(u128::from_be_bytes(items[j as usize].prefix))
        });
        Some(i)
    }

    fn maybe_forget(&mut self, i: u32) {
        let s = *self.subs.get(i);
        if s.sessions == 0 && s.ports == 0 && s.blocks == NIL {
            let h = self.hasher.hash_one(u128::from_be_bytes(s.prefix));
            if let Ok(e) = self.idx.find_entry(h, |&j| j == i) {
                e.remove();
            }
            self.subs.free(i);
        }
    }

    /// Is there a record for `v6`, or room for one (always, when tracking is off)?
    pub fn has_room_for(&self, v6: u128) -> bool {
        !self.on || !self.subs.is_full() || self.find(v6).is_some()
    }

    /// RFC 6888 REQ-4: may `v6` open one more session?
    pub fn may_add_session(&self, v6: u128) -> bool {
        if self.max_sessions == 0 {
            return true;
        }
        self.find(v6)
            .is_none_or(|i| self.subs.get(i).sessions < self.max_sessions)
    }

    /// RFC 6888 REQ-4: may `v6` take `n` more ports?
    pub fn may_add_ports(&self, v6: u128, n: u32) -> bool {
        if self.max_ports == 0 {
            return true;
        }
        self.find(v6)
            .is_none_or(|i| self.subs.get(i).ports + n <= self.max_ports)
    }

    pub fn session_added(&mut self, v6: u128) {
        if let Some(i) = self.get_or_create(v6) {
            self.subs.get_mut(i).sessions += 1;
        }
    }

    pub fn session_removed(&mut self, v6: u128) {
        if let Some(i) = self.find(v6) {
            let s = self.subs.get_mut(i);
            s.sessions = s.sessions.saturating_sub(1);
            self.maybe_forget(i);
        }
    }

    /// A dynamic BIB entry took a port outside any block.
    pub fn port_taken(&mut self, v6: u128) {
        if !self.blocks_on()
            && let Some(i) = self.get_or_create(v6)
        {
            self.subs.get_mut(i).ports += 1;
        }
    }

    /// The block holding (`proto`, `v4`, `port`), if any.
    pub fn block_of(&self, proto: u8, v4: u32, port: u16) -> Option<u32> {
        let first = port & !(self.block - 1);
        let items = &self.blocks.items;
        self.block_idx
            .find(self.hasher.hash_one(block_key(proto, v4, first)), |&i| {
                let b = &items[i as usize];
                b.first == first && b.v4 == v4 && b.proto == proto
            })
            .copied()
    }

    /// Give block (`proto`, `v4`, `first`) to subscriber `sub`.
    #[allow(clippy::too_many_arguments)]
    pub fn block_add(
        &mut self,
        sub: u32,
        proto: u8,
        v4: u32,
        first: u16,
        now_ns: u64,
        events: &mut EventRing,
        log: EventLog,
    ) -> Option<u32> {
        let head = self.subs.get(sub).blocks;
        let i = self.blocks.alloc(Block {
            v4,
            first,
            proto,
            used: 0,
            sub,
            next: head,
            free: Link::NONE,
        })?;
        let hasher = self.hasher.clone();
        let items = &self.blocks.items;
        self.block_idx
            .insert_unique(hasher.hash_one(block_key(proto, v4, first)), i, |&j| {
                let b = &items[j as usize];
                hasher.hash_one(block_key(b.proto, b.v4, b.first))
            });
        let s = self.subs.get_mut(sub);
        s.blocks = i;
        s.ports += u32::from(self.block);
        if log.bib() {
            self.log_block(EventKind::BlockAllocated, i, now_ns, events);
        }
        Some(i)
    }

    /// A dynamic BIB entry's port is free again.
    pub fn port_released(
        &mut self,
        b: &Bib,
        now_ns: u64,
        events: &mut EventRing,
        cfg: &Nat64Config,
    ) {
        if !self.on {
            return;
        }
        let v6 = u128::from_be_bytes(b.v6);
        if !self.blocks_on() {
            if let Some(i) = self.find(v6) {
                let s = self.subs.get_mut(i);
                s.ports = s.ports.saturating_sub(1);
                self.maybe_forget(i);
            }
            return;
        }
        let Some(bi) = self.block_of(b.proto, b.v4, b.port4) else {
            return;
        };
        let blk = self.blocks.get_mut(bi);
        blk.used = blk.used.saturating_sub(1);
        if blk.used > 0 {
            return;
        }
        // RFC 7422: the whole block goes back.
        if cfg.event_log.bib() {
            self.log_block(EventKind::BlockReleased, bi, now_ns, events);
        }
        let blk = *self.blocks.get(bi);
        let h = self
            .hasher
            .hash_one(block_key(blk.proto, blk.v4, blk.first));
        if let Ok(e) = self.block_idx.find_entry(h, |&j| j == bi) {
            e.remove();
        }
        let sub = blk.sub;
        // Unlink from the subscriber's short list.
        let mut at = self.subs.get(sub).blocks;
        if at == bi {
            self.subs.get_mut(sub).blocks = blk.next;
        } else {
            while at != NIL {
                let next = self.blocks.get(at).next;
                if next == bi {
                    self.blocks.get_mut(at).next = blk.next;
                    break;
                }
                at = next;
            }
        }
        self.blocks.free(bi);
        let s = self.subs.get_mut(sub);
        s.ports = s.ports.saturating_sub(u32::from(self.block));
        self.maybe_forget(sub);
    }

    fn log_block(&self, kind: EventKind, i: u32, now_ns: u64, events: &mut EventRing) {
        let b = self.blocks.get(i);
        events.push(Event {
            kind,
            time_ns: now_ns,
            proto: proto_of(b.proto),
            v6: Ipv6Addr::from(self.subs.get(b.sub).prefix),
            prefix_len: self.prefix_len,
            port6: 0,
            v4: Ipv4Addr::from(b.v4),
            port4: b.first,
            port4_last: b.first + (self.block - 1),
            remote: None,
        });
    }
}
