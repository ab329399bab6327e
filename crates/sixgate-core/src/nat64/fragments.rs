//! Fragments carry their transport header only in the first fragment. For each
//! first fragment of a datagram the NAT64 translated, a small direct-mapped table
//! remembers the address the later fragments need (the BIB's IPv4 address for 6→4,
//! its IPv6 address for 4→6), keyed by the datagram's identity. Fragments arriving
//! before their first wait in `early_fragments` (RFC 6146 §3.4): no reassembly,
//! bounded memory, documented in docs/architecture.md.

/// Slots in the table (per worker).
pub const FRAGMENT_SLOTS: usize = 256;
/// How long an entry is good for, in milliseconds (RFC 6146 §4 FRAGMENT_MIN is 2 s).
pub const FRAGMENT_LIFETIME_MS: u32 = 2000;

#[derive(Clone, Copy, Default)]
struct Entry {
    key: u64,
    addr: u128,
    until: u32,
    live: bool,
}

pub(crate) struct FragmentTable {
    slots: Box<[Entry; FRAGMENT_SLOTS]>,
}

impl FragmentTable {
    pub fn new() -> Self {
        FragmentTable {
            slots: Box::new([Entry::default(); FRAGMENT_SLOTS]),
        }
    }

    /// Remember `addr` for the datagram whose identity hashes to `key`.
    pub fn remember(&mut self, key: u64, addr: u128, now_ms: u32) {
        self.slots[key as usize % FRAGMENT_SLOTS] = Entry {
            key,
            addr,
            until: now_ms.wrapping_add(FRAGMENT_LIFETIME_MS),
            live: true,
        };
    }

    /// The address remembered for `key`, if still valid.
    pub fn recall(&self, key: u64, now_ms: u32) -> Option<u128> {
        let e = &self.slots[key as usize % FRAGMENT_SLOTS];
        (e.live && e.key == key && !super::reached(now_ms, e.until)).then_some(e.addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_until_lifetime() {
        let mut t = FragmentTable::new();
        t.remember(77, 5, 100);
        assert_eq!(t.recall(77, 2099), Some(5));
        assert_eq!(t.recall(77, 2100), None);
        assert_eq!(t.recall(78, 200), None);
    }
}
