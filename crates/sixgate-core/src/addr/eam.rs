//! RFC 7757 Explicit Address Mapping table.
// STUB: the addr helper replaces this file.

/// One EAM entry: an IPv4 prefix and an IPv6 prefix with equally many suffix bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Eam {
    /// IPv4 prefix address (host bits zero).
    pub v4: [u8; 4],
    /// IPv4 prefix length.
    pub v4_len: u8,
    /// IPv6 prefix address (host bits zero).
    pub v6: [u8; 16],
    /// IPv6 prefix length.
    pub v6_len: u8,
}

/// Why an EAM entry was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EamError {
    /// 32 - v4_len != 128 - v6_len (RFC 7757 §3.1).
    SuffixMismatch,
    /// Host bits set beyond a prefix length.
    HostBitsSet,
    /// Overlaps an existing entry on the IPv4 or IPv6 side.
    Overlap(Eam),
}

/// The EAM table; longest-prefix match in both directions (RFC 7757 §3.2).
#[derive(Clone, Debug, Default)]
pub struct EamTable {
    entries: Vec<Eam>,
}

impl EamTable {
    /// Empty table.
    pub fn new() -> Self {
        Self::default()
    }
    /// Add an entry.
    pub fn insert(&mut self, eam: Eam) -> Result<(), EamError> {
        self.entries.push(eam);
        Ok(())
    }
    /// Entries in insertion order.
    pub fn entries(&self) -> &[Eam] {
        &self.entries
    }
    /// IPv4 → IPv6 by longest match on the IPv4 side.
    pub fn v4_to_v6(&self, v4: &[u8; 4]) -> Option<[u8; 16]> {
        let _ = v4;
        None
    }
    /// Is `v4` inside an entry's IPv4 prefix?
    pub fn contains_v4(&self, v4: &[u8; 4]) -> bool {
        self.v4_to_v6(v4).is_some()
    }
    /// IPv6 → IPv4 by longest match on the IPv6 side.
    pub fn v6_to_v4(&self, v6: &[u8; 16]) -> Option<[u8; 4]> {
        let _ = v6;
        None
    }
}
