//! docs/ha.md, "Two mappings of one IPv6 transport address". RFC 6146
//! §3.5.1.1 keeps one BIB entry per IPv6 transport address (endpoint-
//! independent mapping, RFC 4787 REQ-1): every session of it leaves from the
//! same IPv4 transport address. Two nodes can each make a mapping for the
//! same IPv6 transport address in one sync latency (the IPv6 side's ECMP put
//! two of a subscriber's flows on two nodes), each on its own shard. Neither
//! may be dropped: each already carries a flow whose remote knows its IPv4
//! side. So both stay, and every node picks the same one for the IPv6-side
//! index (the §3.5.1.1 look-up new sessions use): the mapping with the lower
//! IPv4 transport address. The other, the *alternate*, is found from the IPv4
//! side as before and, for its existing sessions only, from the IPv6 side
//! through a small second index. New sessions, on every node, take the
//! winner, so the group is endpoint-independent again one sync latency after
//! the conflict, and the alternate goes when its sessions end. The node that
//! loses does not re-map its flows (their remotes would see a new source).
//!
//! At most one alternate per IPv6 transport address, none for a static
//! entry, and at most [`ALT_CAPACITY`] per worker: beyond that the import is
//! refused (counted), as before this existed.

use super::Nat64;
use super::bib::{ALT, Bib, STATIC};
use std::hash::BuildHasher;

/// Alternates one worker keeps (allocated with the tables).
pub(crate) const ALT_CAPACITY: usize = 1024;

/// The mapping every node keeps in the IPv6-side index: the lower IPv4
/// transport address.
fn wins(a: &Bib, b: &Bib) -> bool {
    (a.v4, a.port4) < (b.v4, b.port4)
}

impl Nat64 {
    /// The alternate mapping of IPv6 transport address (`v6`, `port`).
    #[inline]
    fn bib_alt6(&self, proto: u8, v6: u128, port: u16) -> Option<u32> {
        if self.bib6_alt.is_empty() {
            return None;
        }
        let h = self.hash6(proto, v6, port);
        let items = &self.bibs.items;
        let key = v6.to_be_bytes();
        self.bib6_alt
            .find(h, |&i| {
                let b = &items[i as usize];
                b.port6 == port && b.proto == proto && b.v6 == key
            })
            .copied()
    }

    /// The session of IPv6 transport address (`v6`, `port`) with (`remote4`,
    /// `rport`) on the alternate mapping, if there is one: (BIB, session).
    /// Only after the §3.5.1.1 entry had no such session; one test of an
    /// empty index when no conflict was ever seen.
    #[inline]
    pub(crate) fn alt_session6(
        &self,
        proto: u8,
        v6: u128,
        port: u16,
        remote4: u32,
        rport: u16,
    ) -> Option<(u32, u32)> {
        let b = self.bib_alt6(proto, v6, port)?;
        Some((b, self.session_find(b, remote4, rport)?))
    }

    /// Whether a peer's mapping of the IPv6 transport address that `holder`
    /// maps here can be kept beside it.
    pub(crate) fn may_keep_both(&self, holder: u32) -> bool {
        let h = self.bibs.get(holder);
        h.flags & STATIC == 0
            && self.bib6_alt.len() < ALT_CAPACITY
            && self.bib_alt6(h.proto, h.v6_int(), h.port6).is_none()
    }

    /// `holder` and the just imported `new` (both in the IPv6-side index
    /// now) map one IPv6 transport address: the loser becomes the alternate.
    pub(crate) fn keep_both(&mut self, holder: u32, new: u32) {
        self.bib_conflicts += 1;
        let loser = if wins(self.bibs.get(new), self.bibs.get(holder)) {
            holder
        } else {
            new
        };
        let b = *self.bibs.get(loser);
        let h = self.hash6(b.proto, b.v6_int(), b.port6);
        if let Ok(e) = self.bib6.find_entry(h, |&j| j == loser) {
            e.remove();
        }
        self.alt_insert(h, loser);
    }

    fn alt_insert(&mut self, h: u64, i: u32) {
        let hasher = self.hasher.clone();
        let items = &self.bibs.items;
        // Within capacity (`may_keep_both`): no allocation.
        self.bib6_alt.insert_unique(h, i, |&j| {
            let b = &items[j as usize];
            hasher.hash_one(super::bib::key6(b.proto, b.v6_int(), b.port6))
        });
        self.bibs.get_mut(i).flags |= ALT;
    }

    /// BIB entry `i` (`b`) leaves the IPv6-side indexes; when it held the
    /// §3.5.1.1 slot, its alternate (if any) takes it.
    pub(crate) fn unindex6(&mut self, i: u32, b: &Bib) {
        let h = self.hash6(b.proto, b.v6_int(), b.port6);
        if b.flags & ALT != 0 {
            if let Ok(e) = self.bib6_alt.find_entry(h, |&j| j == i) {
                e.remove();
            }
            return;
        }
        if let Ok(e) = self.bib6.find_entry(h, |&j| j == i) {
            e.remove();
        }
        if let Some(a) = self.bib_alt6(b.proto, b.v6_int(), b.port6)
            && let Ok(e) = self.bib6_alt.find_entry(h, |&j| j == a)
        {
            e.remove();
            self.bibs.get_mut(a).flags &= !ALT;
            let hasher = self.hasher.clone();
            let items = &self.bibs.items;
            self.bib6.insert_unique(h, a, |&j| {
                let b = &items[j as usize];
                hasher.hash_one(super::bib::key6(b.proto, b.v6_int(), b.port6))
            });
        }
    }
}
