//! docs/ha.md, "Snapshots in a group of three or more": the mark and sweep
//! after a peer's snapshot, per shard owner. Each peer (the owner of its
//! pool4 shards: only the owner allocates on them) has its own snapshot
//! generation here; a BIB entry's mark byte holds the generation of its
//! owner's snapshot that last restated it. A peer's snapshot begins by
//! bumping its generation, and the sweep after it removes only the entries on
//! that peer's shards whose mark is not the new generation. Two peers'
//! snapshots at once therefore never sweep each other's entries, the BIB
//! record keeps its 44 bytes (the per-owner part is this table, one entry per
//! peer), and this node's own shards are never swept.

use super::Nat64;
use super::bib::STATIC;
use super::config::Pool4Entry;
use super::event::EventKind;
use super::slab::NIL;
use super::walk::Cursor;

/// A peer whose entries this node holds as replicas.
pub(crate) struct Owner {
    /// Its node id.
    id: u16,
    /// Its pool4 shards.
    shards: Vec<Pool4Entry>,
    /// The generation of its latest snapshot (never 0: 0 is "never restated").
    generation: u8,
    /// The sync link hears from it (`Translator::set_peer_up`): while it
    /// does, it logs the ends of what it made.
    up: bool,
}

fn shard_entry((addr, len): (u32, u8)) -> Pool4Entry {
    Pool4Entry {
        addr: addr.into(),
        prefix_len: len,
        ..Pool4Entry::single(addr.into())
    }
}

impl Nat64 {
    /// The peers and their shards (`[sync]`); allocates, so never on the
    /// packet path. A peer already known keeps its generation.
    pub(crate) fn set_peers(&mut self, peers: Vec<(u16, Vec<(u32, u8)>)>) {
        let old = std::mem::take(&mut self.owners);
        self.owners = peers
            .into_iter()
            .map(|(id, shards)| Owner {
                id,
                shards: shards.into_iter().map(shard_entry).collect(),
                generation: old.iter().find(|o| o.id == id).map_or(1, |o| o.generation),
                up: old.iter().any(|o| o.id == id && o.up),
            })
            .collect();
    }

    /// Whether peer `peer` is heard from.
    pub(crate) fn set_peer_up(&mut self, peer: u16, up: bool) {
        if let Some(o) = self.owners.iter_mut().find(|o| o.id == peer) {
            o.up = up;
        }
    }

    /// docs/logging.md, "With `[sync]`": whether this node logs the end of
    /// a session, BIB entry or port block on (`v4`, `port`). The node that
    /// made it logged its start, so it logs the end: the owner of `v4`'s
    /// shard, or with RFC 7422 deterministic NAT the node whose share of the
    /// block holds `port`. While that node is down, every node that holds a
    /// copy logs it (a survivor ends what the dead node began). Without
    /// sync: always.
    pub(crate) fn logs_end(&self, v4: u32, port: u16) -> bool {
        if self.owners.is_empty() {
            return true;
        }
        let (rank, nodes) = self.det_share;
        if nodes > 1
            && let Ok(Some(d)) = &self.det
            && d.in_a_block(port)
        {
            let r = (port & (d.block_size() - 1)) % nodes;
            if r == rank {
                return true;
            }
            // Ranks are places among the sorted node ids, this node's
            // included: the peer with `at` smaller peer ids (no sort, no
            // allocation: a group is a few nodes).
            let at = usize::from(if r < rank { r } else { r - 1 });
            let holder = self
                .owners
                .iter()
                .find(|o| self.owners.iter().filter(|p| p.id < o.id).count() == at);
            return holder.is_none_or(|o| !o.up);
        }
        self.owner_of(v4).is_none_or(|i| !self.owners[i].up)
    }

    /// The index of the peer owning pool4 address `v4`, if any.
    fn owner_of(&self, v4: u32) -> Option<usize> {
        self.owners
            .iter()
            .position(|o| o.shards.iter().any(|s| s.contains(v4)))
    }

    /// Peer `peer`'s snapshot starts: what its owner restates from now on
    /// gets a new mark. False for a peer not configured.
    pub(crate) fn snapshot_begin(&mut self, peer: u16) -> bool {
        let Some(o) = self.owners.iter_mut().find(|o| o.id == peer) else {
            return false;
        };
        o.generation = match o.generation.wrapping_add(1) {
            0 => 1,
            g => g,
        };
        true
    }

    /// BIB entry `b` was restated by a record from `from` (`None`: sender
    /// unknown, taken as the owner): it gets its owner's current mark. A
    /// record of a third node about the owner's entry does not count, so a
    /// stale replica there cannot keep an entry the owner's snapshot left out.
    pub(crate) fn mark_restated(&mut self, b: u32, from: Option<u16>) {
        let Some(o) = self.owner_of(self.bibs.get(b).v4) else {
            return;
        };
        let o = &self.owners[o];
        if from.is_none_or(|f| f == o.id) {
            self.bibs.get_mut(b).mark = o.generation;
        }
    }

    /// After peer `peer`'s snapshot: remove the dynamic BIB entries (with
    /// their sessions) on its shards that the snapshot did not restate, from
    /// slab position `from`, at most `budget` entries looked at; returns where
    /// to go on and how many went. Entries on other peers' shards, and on this
    /// node's own, are never looked at.
    pub(crate) fn snapshot_sweep(
        &mut self,
        peer: u16,
        from: u32,
        budget: u32,
        now_ns: u64,
    ) -> (Cursor, u64) {
        let Some(p) = self.owners.iter().position(|o| o.id == peer) else {
            return (None, 0);
        };
        let generation = self.owners[p].generation;
        let now_ms = self.peek_ms(now_ns);
        let len = self.bibs.items.len() as u32;
        let end = from.saturating_add(budget.max(1)).min(len);
        let mut removed = 0;
        for i in from..end {
            let b = *self.bibs.get(i);
            let live = self.bib_by4(b.proto, b.v4, b.port4) == Some(i);
            if !live || b.flags & STATIC != 0 || b.mark == generation {
                continue;
            }
            if self.owner_of(b.v4) != Some(p) {
                continue;
            }
            // Never this node's own shard, whatever the configuration says.
            if self
                .own_pool4
                .as_ref()
                .is_some_and(|o| o.iter().any(|e| e.contains(b.v4)))
            {
                continue;
            }
            self.set_importing(true);
            while self.bibs.get(i).sessions != NIL {
                let s = self.bibs.get(i).sessions;
                self.session_remove(s, EventKind::SessionExpired, now_ms, now_ns);
                if self.bib_by4(b.proto, b.v4, b.port4) != Some(i) {
                    break;
                }
            }
            if self.bib_by4(b.proto, b.v4, b.port4) == Some(i) {
                self.bib_remove(i, EventKind::BibExpired, now_ns);
            }
            self.set_importing(false);
            removed += 1;
        }
        ((end < len).then_some(end), removed)
    }
}
