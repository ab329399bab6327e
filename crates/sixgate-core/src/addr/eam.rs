//! RFC 7757 Explicit Address Mapping table.
//!
//! An EAM entry pairs an IPv4 prefix with an IPv6 prefix (§3.1). An address matching
//! one side is translated by replacing the matched prefix with the other side's prefix
//! and carrying the host ("suffix") bits across (§3.2):
//!
//! - IPv4 → IPv6: the IPv4 suffix bits are placed right after the IPv6 prefix; any
//!   remaining IPv6 bits are zero.
//! - IPv6 → IPv4: the first `32 − v4_len` bits after the IPv6 prefix become the IPv4
//!   suffix; any remaining IPv6 bits are ignored.
//!
//! The IPv4 suffix must therefore fit in the IPv6 suffix: `32 − v4_len ≤ 128 − v6_len`.
//! Equal suffix lengths (192.0.2.0/24 ↔ 2001:db8::/120) give a one-to-one mapping;
//! RFC 7757's own example table also has entries with a longer IPv6 suffix
//! (192.0.2.128/26 ↔ 2001:db8:dddd::/64), which Jool accepts too, so we do as well.
//!
//! Lookups are longest-prefix match, on each side independently (§3.2): overlapping
//! entries are allowed. Two entries with the very same IPv4 prefix, or the very same
//! IPv6 prefix, would make the translation ambiguous, so such an entry is refused.
//!
//! # Lookup cost
//!
//! Each side keeps one hash map per prefix length in use, longest length first. A
//! lookup masks the address once per length and probes that map: no allocation, about
//! as many probes as there are distinct prefix lengths (usually one to three). An empty
//! table has no lengths and answers at once. Insertion and removal are O(1) amortised
//! (plus a linear search of the entry list on removal), so loading a large table is
//! linear, not quadratic. The hash is a multiply-fold, not SipHash: keys come from the
//! operator's configuration, so there is nothing for a remote party to collide on;
//! packet addresses only ever look keys up.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::ops::{BitAnd, BitOr, Not};

/// One EAM entry: an IPv4 prefix and an IPv6 prefix whose suffix can hold the IPv4
/// suffix (`32 − v4_len ≤ 128 − v6_len`, RFC 7757 §3.2).
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
    /// The IPv4 suffix does not fit in the IPv6 suffix: `32 − v4_len > 128 − v6_len`
    /// (RFC 7757 §3.2). Some IPv4 addresses of the prefix would have no IPv6 address.
    SuffixMismatch,
    /// Host bits set beyond a prefix length.
    HostBitsSet,
    /// Has the same IPv4 prefix, or the same IPv6 prefix, as this existing entry.
    Overlap(Eam),
    /// Text did not parse as a prefix, or a prefix length is out of range.
    Syntax(String),
}

/// The network mask of an IPv4 prefix length (`len` ≤ 32).
const fn mask32(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len as u32)
    }
}

/// The network mask of an IPv6 prefix length (`len` ≤ 128).
const fn mask128(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len as u32)
    }
}

impl Eam {
    /// A validated entry `v4/v4_len ↔ v6/v6_len`.
    pub fn new(v4: Ipv4Addr, v4_len: u8, v6: Ipv6Addr, v6_len: u8) -> Result<Eam, EamError> {
        let eam = Eam {
            v4: v4.octets(),
            v4_len,
            v6: v6.octets(),
            v6_len,
        };
        eam.validate()?;
        Ok(eam)
    }

    /// Parse a text pair such as `("192.0.2.0/24", "2001:db8:aaaa::/120")`.
    ///
    /// A prefix without `/LEN` is a single address (/32 or /128), as in RFC 7757's
    /// example table (`192.0.2.1 ↔ 2001:db8:aaaa::`).
    pub fn parse(ipv4: &str, ipv6: &str) -> Result<Eam, EamError> {
        let (v4, v4_len) = parse_prefix::<Ipv4Addr>(ipv4, 32, "IPv4", "192.0.2.0/24")?;
        let (v6, v6_len) = parse_prefix::<Ipv6Addr>(ipv6, 128, "IPv6", "2001:db8::/120")?;
        Eam::new(v4, v4_len, v6, v6_len)
    }

    /// Check the RFC 7757 rules: lengths in range, host bits zero, IPv4 suffix no longer
    /// than the IPv6 suffix. [`EamTable::insert`] calls this, since the fields are public.
    pub fn validate(&self) -> Result<(), EamError> {
        if self.v4_len > 32 {
            return Err(EamError::Syntax(format!(
                "IPv4 prefix length /{} is out of range (0 to 32)",
                self.v4_len
            )));
        }
        if self.v6_len > 128 {
            return Err(EamError::Syntax(format!(
                "IPv6 prefix length /{} is out of range (0 to 128)",
                self.v6_len
            )));
        }
        if self.v4_u32() & !mask32(self.v4_len) != 0 || self.v6_u128() & !mask128(self.v6_len) != 0
        {
            return Err(EamError::HostBitsSet);
        }
        if self.v4_suffix_len() > self.v6_suffix_len() {
            return Err(EamError::SuffixMismatch);
        }
        Ok(())
    }

    /// The IPv4 prefix address.
    pub fn v4_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.v4)
    }
    /// The IPv6 prefix address.
    pub fn v6_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(self.v6)
    }
    /// Number of IPv4 host bits, `32 − v4_len`.
    pub fn v4_suffix_len(&self) -> u8 {
        32 - self.v4_len
    }
    /// Number of IPv6 host bits, `128 − v6_len`.
    pub fn v6_suffix_len(&self) -> u8 {
        128 - self.v6_len
    }
    /// Is `v4` inside this entry's IPv4 prefix?
    pub fn contains_v4(&self, v4: &[u8; 4]) -> bool {
        (u32::from_be_bytes(*v4) ^ self.v4_u32()) & mask32(self.v4_len) == 0
    }
    /// Is `v6` inside this entry's IPv6 prefix?
    pub fn contains_v6(&self, v6: &[u8; 16]) -> bool {
        (u128::from_be_bytes(*v6) ^ self.v6_u128()) & mask128(self.v6_len) == 0
    }
    /// Translate by this entry alone (no longest-match against other entries).
    pub fn v4_to_v6(&self, v4: &[u8; 4]) -> Option<[u8; 16]> {
        self.contains_v4(v4).then(|| {
            self.to_v6_target()
                .apply(u32::from_be_bytes(*v4), mask32(self.v4_len))
                .to_be_bytes()
        })
    }
    /// Translate by this entry alone (no longest-match against other entries).
    pub fn v6_to_v4(&self, v6: &[u8; 16]) -> Option<[u8; 4]> {
        self.contains_v6(v6).then(|| {
            self.to_v4_target()
                .apply(u128::from_be_bytes(*v6), mask128(self.v6_len))
                .to_be_bytes()
        })
    }

    fn v4_u32(&self) -> u32 {
        u32::from_be_bytes(self.v4)
    }
    fn v6_u128(&self) -> u128 {
        u128::from_be_bytes(self.v6)
    }
    /// Distance between the end of the IPv4 suffix, placed after the IPv6 prefix, and
    /// the end of the IPv6 address: 0..=128.
    fn shift(&self) -> u32 {
        u32::from(self.v6_suffix_len() - self.v4_suffix_len())
    }
    fn to_v6_target(self) -> V6Target {
        V6Target {
            prefix: self.v6_u128(),
            shift: self.shift(),
        }
    }
    fn to_v4_target(self) -> V4Target {
        V4Target {
            prefix: self.v4_u32(),
            shift: self.shift(),
        }
    }
}

/// Parse `ADDR[/LEN]`.
fn parse_prefix<A: std::str::FromStr>(
    text: &str,
    max: u8,
    family: &str,
    example: &str,
) -> Result<(A, u8), EamError> {
    let text = text.trim();
    let (addr, len) = match text.split_once('/') {
        Some((addr, len)) => (addr.trim(), Some(len.trim())),
        None => (text, None),
    };
    let addr = addr.parse::<A>().map_err(|_| {
        EamError::Syntax(format!(
            "\"{text}\" is not an {family} prefix (expected ADDR/LEN, e.g. {example})"
        ))
    })?;
    let len = match len {
        None => max,
        Some(len) => match len.parse::<u8>() {
            Ok(len) if len <= max => len,
            _ => {
                return Err(EamError::Syntax(format!(
                    "\"{len}\" in \"{text}\" is not an {family} prefix length (0 to {max})"
                )));
            }
        },
    };
    Ok((addr, len))
}

impl fmt::Display for Eam {
    /// `192.0.2.0/24 <-> 2001:db8:aaaa::/120`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} <-> {}/{}",
            self.v4_addr(),
            self.v4_len,
            self.v6_addr(),
            self.v6_len
        )
    }
}

impl fmt::Display for EamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EamError::SuffixMismatch => f.write_str(
                "the IPv4 prefix has more host bits than the IPv6 prefix, so some of its \
                 addresses would have no IPv6 counterpart (RFC 7757 §3.2 needs \
                 32 - IPv4 length <= 128 - IPv6 length, e.g. 192.0.2.0/24 with 2001:db8::/120)",
            ),
            EamError::HostBitsSet => f.write_str(
                "a prefix of the EAM entry has bits set beyond its length; give the first \
                 address of each prefix (e.g. 192.0.2.0/24, not 192.0.2.1/24)",
            ),
            EamError::Overlap(existing) => write!(
                f,
                "the EAM table already has an entry with the same IPv4 or IPv6 prefix \
                 ({existing}); remove it first"
            ),
            EamError::Syntax(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for EamError {}

/// What an IPv4 key translates to: `prefix | (v4 suffix << shift)`.
#[derive(Clone, Copy, Debug)]
struct V6Target {
    prefix: u128,
    shift: u32,
}

impl V6Target {
    #[inline]
    fn apply(self, v4: u32, mask: u32) -> u128 {
        let suffix = u128::from(v4 & !mask);
        // shift == 128 only for a /32 IPv4 side, whose suffix is empty.
        self.prefix | suffix.checked_shl(self.shift).unwrap_or(0)
    }
}

/// What an IPv6 key translates to: `prefix | (v6 suffix >> shift)`.
#[derive(Clone, Copy, Debug)]
struct V4Target {
    prefix: u32,
    shift: u32,
}

impl V4Target {
    #[inline]
    fn apply(self, v6: u128, mask: u128) -> u32 {
        // What is left after the shift has at most 32 − v4_len bits, so the cast keeps
        // it whole; shift == 128 only for a /32 IPv4 side.
        let suffix = (v6 & !mask).checked_shr(self.shift).unwrap_or(0) as u32;
        self.prefix | suffix
    }
}

/// Multiply-fold hasher for address keys (see the module documentation).
#[derive(Clone, Copy, Default)]
struct KeyHasher(u64);

impl KeyHasher {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;

    #[inline]
    fn mix(&mut self, word: u64) {
        let m = u128::from(self.0 ^ word).wrapping_mul(u128::from(Self::K));
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.mix(u64::from(n));
    }
    #[inline]
    fn write_u128(&mut self, n: u128) {
        self.mix(n as u64);
        self.mix((n >> 64) as u64);
    }
}

type KeyMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

/// All entries of one side with one prefix length.
#[derive(Clone)]
struct Level<K, V> {
    len: u8,
    mask: K,
    map: KeyMap<K, V>,
    /// The level's entry when it has exactly one: a compare instead of a hash probe
    /// (most tables have one or a few entries per length).
    single: Option<(K, V)>,
}

impl<K: Copy + Eq + Hash, V: Copy> Level<K, V> {
    fn refresh_single(&mut self) {
        self.single = match self.map.len() {
            1 => self.map.iter().next().map(|(k, v)| (*k, *v)),
            _ => None,
        };
    }
}

/// Longest-prefix match over one side: levels sorted by length, longest first.
#[derive(Clone)]
struct Lpm<K, V> {
    levels: Vec<Level<K, V>>,
    /// First and last address any prefix covers. Most packets carry an address
    /// outside every EAM (a pool6 destination, an Internet host), and this range
    /// turns their lookup into two compares instead of a hash probe per level.
    span: Option<(K, K)>,
}

impl<K, V> Default for Lpm<K, V> {
    fn default() -> Self {
        Self {
            levels: Vec::new(),
            span: None,
        }
    }
}

impl<K: Copy + Ord + Hash + BitAnd<Output = K> + BitOr<Output = K> + Not<Output = K>, V: Copy>
    Lpm<K, V>
{
    /// The value of the longest prefix containing `addr`, and that prefix's mask.
    #[inline]
    fn lookup(&self, addr: K) -> Option<(V, K)> {
        let (first, last) = self.span?;
        if addr < first || addr > last {
            return None;
        }
        for level in &self.levels {
            let key = addr & level.mask;
            let hit = match level.single {
                Some((k, v)) => (k == key).then_some(v),
                None => level.map.get(&key).copied(),
            };
            if let Some(v) = hit {
                return Some((v, level.mask));
            }
        }
        None
    }

    fn level_index(&self, len: u8) -> Result<usize, usize> {
        // Sorted by descending length.
        self.levels.binary_search_by(|l| len.cmp(&l.len))
    }

    fn contains_exact(&self, len: u8, key: K) -> bool {
        self.level_index(len)
            .is_ok_and(|i| self.levels[i].map.contains_key(&key))
    }

    fn insert(&mut self, len: u8, mask: K, key: K, value: V) {
        let i = match self.level_index(len) {
            Ok(i) => i,
            Err(i) => {
                self.levels.insert(
                    i,
                    Level {
                        len,
                        mask,
                        map: KeyMap::default(),
                        single: None,
                    },
                );
                i
            }
        };
        self.levels[i].map.insert(key, value);
        self.levels[i].refresh_single();
        let (first, last) = (key, key | !mask);
        self.span = Some(
            self.span
                .map_or((first, last), |(a, b)| (a.min(first), b.max(last))),
        );
    }

    fn remove(&mut self, len: u8, key: K) {
        if let Ok(i) = self.level_index(len) {
            self.levels[i].map.remove(&key);
            self.levels[i].refresh_single();
            if self.levels[i].map.is_empty() {
                self.levels.remove(i);
            }
        }
        // A span wider than needed is still correct (it only filters), so removal
        // keeps it rather than rescanning the table; an empty table has none.
        if self.levels.is_empty() {
            self.span = None;
        }
    }
}

/// The EAM table; longest-prefix match in both directions (RFC 7757 §3.2).
#[derive(Clone, Default)]
pub struct EamTable {
    entries: Vec<Eam>,
    /// IPv4 side: IPv4 prefix → IPv6 translation.
    by_v4: Lpm<u32, V6Target>,
    /// IPv6 side: IPv6 prefix → IPv4 translation.
    by_v6: Lpm<u128, V4Target>,
}

impl fmt::Debug for EamTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EamTable")
            .field("entries", &self.entries)
            .finish()
    }
}

impl EamTable {
    /// Empty table.
    pub fn new() -> Self {
        Self::default()
    }
    /// Add an entry. Refused if it breaks an RFC 7757 rule (see [`Eam::validate`]) or
    /// if an existing entry has the same IPv4 prefix or the same IPv6 prefix
    /// ([`EamError::Overlap`] names that entry). Entries that merely overlap, e.g.
    /// 192.0.2.0/24 and 192.0.2.1/32, are accepted: longest match decides.
    pub fn insert(&mut self, eam: Eam) -> Result<(), EamError> {
        eam.validate()?;
        let (k4, k6) = (eam.v4_u32(), eam.v6_u128());
        if self.by_v4.contains_exact(eam.v4_len, k4) || self.by_v6.contains_exact(eam.v6_len, k6) {
            let existing = self
                .entries
                .iter()
                .find(|e| {
                    (e.v4_len == eam.v4_len && e.v4 == eam.v4)
                        || (e.v6_len == eam.v6_len && e.v6 == eam.v6)
                })
                .copied()
                .expect("EAM index and entry list agree");
            return Err(EamError::Overlap(existing));
        }
        self.by_v4
            .insert(eam.v4_len, mask32(eam.v4_len), k4, eam.to_v6_target());
        self.by_v6
            .insert(eam.v6_len, mask128(eam.v6_len), k6, eam.to_v4_target());
        self.entries.push(eam);
        Ok(())
    }
    /// Remove the entry equal to `eam`; false if there is none.
    pub fn remove(&mut self, eam: &Eam) -> bool {
        let Some(i) = self.entries.iter().position(|e| e == eam) else {
            return false;
        };
        self.entries.remove(i);
        self.by_v4.remove(eam.v4_len, eam.v4_u32());
        self.by_v6.remove(eam.v6_len, eam.v6_u128());
        true
    }
    /// Remove every entry.
    pub fn clear(&mut self) {
        *self = Self::default();
    }
    /// Entries in insertion order.
    pub fn entries(&self) -> &[Eam] {
        &self.entries
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    /// No entries?
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// Is `v4` inside some entry's IPv4 prefix?
    pub fn contains_v4(&self, v4: &[u8; 4]) -> bool {
        self.lookup_v4(u32::from_be_bytes(*v4)).is_some()
    }
    /// Is `v6` inside some entry's IPv6 prefix?
    pub fn contains_v6(&self, v6: &[u8; 16]) -> bool {
        self.by_v6.lookup(u128::from_be_bytes(*v6)).is_some()
    }
    /// IPv4 → IPv6 by longest match on the IPv4 side.
    #[inline]
    pub fn v4_to_v6(&self, v4: &[u8; 4]) -> Option<[u8; 16]> {
        self.lookup_v4(u32::from_be_bytes(*v4))
            .map(u128::to_be_bytes)
    }
    /// [`Self::v4_to_v6`] on the address as an integer (the packet path).
    #[inline]
    pub fn lookup_v4(&self, v4: u32) -> Option<u128> {
        let (target, mask) = self.by_v4.lookup(v4)?;
        Some(target.apply(v4, mask))
    }
    /// IPv6 → IPv4 by longest match on the IPv6 side.
    #[inline]
    pub fn v6_to_v4(&self, v6: &[u8; 16]) -> Option<[u8; 4]> {
        self.lookup_v6(u128::from_be_bytes(*v6))
            .map(u32::to_be_bytes)
    }
    /// [`Self::v6_to_v4`] on the address as an integer (the packet path).
    #[inline]
    pub fn lookup_v6(&self, v6: u128) -> Option<u32> {
        let (target, mask) = self.by_v6.lookup(v6)?;
        Some(target.apply(v6, mask))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn eam(v4: &str, v6: &str) -> Eam {
        Eam::parse(v4, v6).unwrap()
    }
    fn a4(s: &str) -> [u8; 4] {
        s.parse::<Ipv4Addr>().unwrap().octets()
    }
    fn a6(s: &str) -> [u8; 16] {
        s.parse::<Ipv6Addr>().unwrap().octets()
    }
    fn table(pairs: &[(&str, &str)]) -> EamTable {
        let mut t = EamTable::new();
        for (v4, v6) in pairs {
            t.insert(eam(v4, v6)).unwrap();
        }
        t
    }
    fn both_ways(t: &EamTable, v4: &str, v6: &str) {
        assert_eq!(t.v4_to_v6(&a4(v4)), Some(a6(v6)), "{v4} -> {v6}");
        assert_eq!(t.v6_to_v4(&a6(v6)), Some(a4(v4)), "{v6} -> {v4}");
    }

    /// The example table of RFC 7757 §3 (as also used in Jool's documentation),
    /// translated with the §3.2 algorithm, both ways.
    #[test]
    fn rfc7757_s3_example_table() {
        let t = table(&[
            ("192.0.2.1", "2001:db8:aaaa::"),
            ("192.0.2.2/32", "2001:db8:bbbb::b/128"),
            ("192.0.2.16/28", "2001:db8:cccc::/124"),
            ("192.0.2.128/26", "2001:db8:dddd::/64"),
            ("192.0.2.192/29", "2001:db8:eeee:8::/62"),
            ("192.0.2.224/31", "64:ff9b::/127"),
        ]);
        both_ways(&t, "192.0.2.1", "2001:db8:aaaa::");
        both_ways(&t, "192.0.2.2", "2001:db8:bbbb::b");
        both_ways(&t, "192.0.2.20", "2001:db8:cccc::4");
        both_ways(&t, "192.0.2.129", "2001:db8:dddd:0:400::");
        both_ways(&t, "192.0.2.195", "2001:db8:eeee:9:8000::");
        both_ways(&t, "192.0.2.225", "64:ff9b::1");
        // A longer IPv6 suffix: bits past the IPv4 suffix are ignored going to IPv4.
        assert_eq!(
            t.v6_to_v4(&a6("2001:db8:dddd:0:7ff:ffff:ffff:ffff")),
            Some(a4("192.0.2.129"))
        );
        // Outside every entry.
        assert_eq!(t.v4_to_v6(&a4("192.0.2.3")), None);
        assert_eq!(t.v6_to_v4(&a6("2001:db8:aaaa::1")), None);
        assert_eq!(t.len(), 6);
    }

    #[test]
    fn rfc7757_s3_1_prefix_pair_keeps_suffix() {
        let t = table(&[("192.0.2.0/24", "2001:db8:aaaa::/120")]);
        both_ways(&t, "192.0.2.0", "2001:db8:aaaa::");
        both_ways(&t, "192.0.2.8", "2001:db8:aaaa::8");
        both_ways(&t, "192.0.2.255", "2001:db8:aaaa::ff");
        assert_eq!(t.v4_to_v6(&a4("192.0.3.0")), None);
        assert_eq!(t.v6_to_v4(&a6("2001:db8:aaaa::100")), None);
    }

    #[test]
    fn rfc7757_s3_1_single_address() {
        let t = table(&[("192.0.2.1/32", "2001:db8:bbbb::1/128")]);
        both_ways(&t, "192.0.2.1", "2001:db8:bbbb::1");
        assert_eq!(t.v4_to_v6(&a4("192.0.2.2")), None);
        assert_eq!(t.v6_to_v4(&a6("2001:db8:bbbb::2")), None);
    }

    #[test]
    fn rfc7757_s3_2_longest_prefix_match_on_overlap() {
        let t = table(&[
            ("192.0.2.0/24", "2001:db8:aaaa::/120"),
            ("192.0.2.1/32", "2001:db8:bbbb::1/128"),
            ("192.0.2.8/29", "2001:db8:cccc::/125"),
        ]);
        // IPv4 side: the /32 and the /29 beat the /24.
        assert_eq!(t.v4_to_v6(&a4("192.0.2.1")), Some(a6("2001:db8:bbbb::1")));
        assert_eq!(t.v4_to_v6(&a4("192.0.2.9")), Some(a6("2001:db8:cccc::1")));
        assert_eq!(t.v4_to_v6(&a4("192.0.2.2")), Some(a6("2001:db8:aaaa::2")));
        // IPv6 side, independently: the /24's IPv6 prefix still maps the whole /120,
        // so the mapping is asymmetric for 192.0.2.1 and 192.0.2.9.
        assert_eq!(t.v6_to_v4(&a6("2001:db8:aaaa::1")), Some(a4("192.0.2.1")));
        assert_eq!(t.v6_to_v4(&a6("2001:db8:aaaa::9")), Some(a4("192.0.2.9")));
        assert_eq!(t.v6_to_v4(&a6("2001:db8:bbbb::1")), Some(a4("192.0.2.1")));
        assert_eq!(t.v6_to_v4(&a6("2001:db8:cccc::7")), Some(a4("192.0.2.15")));
        // Insertion order does not matter.
        let t2 = table(&[
            ("192.0.2.8/29", "2001:db8:cccc::/125"),
            ("192.0.2.1/32", "2001:db8:bbbb::1/128"),
            ("192.0.2.0/24", "2001:db8:aaaa::/120"),
        ]);
        for i in 0..=255u8 {
            let v4 = [192, 0, 2, i];
            assert_eq!(t.v4_to_v6(&v4), t2.v4_to_v6(&v4));
        }
    }

    #[test]
    fn rfc7757_s3_2_longest_match_on_ipv6_side() {
        let t = table(&[
            ("198.51.100.0/24", "2001:db8::/120"),
            ("203.0.113.7/32", "2001:db8::7/128"),
        ]);
        assert_eq!(t.v6_to_v4(&a6("2001:db8::7")), Some(a4("203.0.113.7")));
        assert_eq!(t.v6_to_v4(&a6("2001:db8::8")), Some(a4("198.51.100.8")));
        assert_eq!(t.v4_to_v6(&a4("198.51.100.7")), Some(a6("2001:db8::7")));
    }

    #[test]
    fn rfc7757_s3_2_suffix_mismatch_refused() {
        // 8 IPv4 host bits cannot fit in 4 IPv6 host bits.
        assert_eq!(
            Eam::parse("192.0.2.0/24", "2001:db8::/124"),
            Err(EamError::SuffixMismatch)
        );
        assert_eq!(
            Eam::parse("192.0.2.0/31", "2001:db8::1/128"),
            Err(EamError::SuffixMismatch)
        );
        let mut t = EamTable::new();
        let bad = Eam {
            v4: a4("192.0.2.0"),
            v4_len: 24,
            v6: a6("2001:db8::"),
            v6_len: 121,
        };
        assert_eq!(t.insert(bad), Err(EamError::SuffixMismatch));
        assert!(t.is_empty());
        assert!(EamError::SuffixMismatch.to_string().contains("RFC 7757"));
    }

    #[test]
    fn rfc7757_s3_1_host_bits_refused() {
        assert_eq!(
            Eam::parse("192.0.2.1/24", "2001:db8::/120"),
            Err(EamError::HostBitsSet)
        );
        assert_eq!(
            Eam::parse("192.0.2.0/24", "2001:db8::1/120"),
            Err(EamError::HostBitsSet)
        );
        let mut t = EamTable::new();
        let bad = Eam {
            v4: a4("192.0.2.1"),
            v4_len: 24,
            v6: a6("2001:db8::"),
            v6_len: 120,
        };
        assert_eq!(t.insert(bad), Err(EamError::HostBitsSet));
    }

    #[test]
    fn rfc7757_s3_2_duplicate_prefix_refused() {
        let mut t = table(&[("192.0.2.0/24", "2001:db8:aaaa::/120")]);
        let first = t.entries()[0];
        // Same IPv4 prefix and length, other IPv6 prefix.
        assert_eq!(
            t.insert(eam("192.0.2.0/24", "2001:db8:bbbb::/120")),
            Err(EamError::Overlap(first))
        );
        // Same IPv6 prefix and length, other IPv4 prefix.
        assert_eq!(
            t.insert(eam("198.51.100.0/24", "2001:db8:aaaa::/120")),
            Err(EamError::Overlap(first))
        );
        // The exact same entry.
        assert_eq!(t.insert(first), Err(EamError::Overlap(first)));
        // Same address, other length: an overlap, resolved by longest match.
        t.insert(eam("192.0.2.0/25", "2001:db8:cccc::/121"))
            .unwrap();
        assert_eq!(t.len(), 2);
        let msg = EamError::Overlap(first).to_string();
        assert!(
            msg.contains("192.0.2.0/24 <-> 2001:db8:aaaa::/120"),
            "{msg}"
        );
    }

    #[test]
    fn remove_and_clear() {
        let mut t = table(&[
            ("192.0.2.0/24", "2001:db8:aaaa::/120"),
            ("192.0.2.1/32", "2001:db8:bbbb::1/128"),
        ]);
        let one = eam("192.0.2.1/32", "2001:db8:bbbb::1/128");
        assert!(t.remove(&one));
        assert!(!t.remove(&one));
        assert!(!t.remove(&eam("192.0.2.0/24", "2001:db8:cccc::/120")));
        assert_eq!(t.entries(), &[eam("192.0.2.0/24", "2001:db8:aaaa::/120")]);
        assert_eq!(t.v4_to_v6(&a4("192.0.2.1")), Some(a6("2001:db8:aaaa::1")));
        assert!(!t.contains_v6(&a6("2001:db8:bbbb::1")));
        // Re-adding after removal works.
        t.insert(one).unwrap();
        assert_eq!(t.v4_to_v6(&a4("192.0.2.1")), Some(a6("2001:db8:bbbb::1")));
        t.clear();
        assert!(t.is_empty());
        assert_eq!(t.v4_to_v6(&a4("192.0.2.1")), None);
    }

    #[test]
    fn contains() {
        let t = table(&[("192.0.2.0/24", "2001:db8:aaaa::/120")]);
        assert!(t.contains_v4(&a4("192.0.2.77")));
        assert!(!t.contains_v4(&a4("192.0.3.77")));
        assert!(t.contains_v6(&a6("2001:db8:aaaa::77")));
        assert!(!t.contains_v6(&a6("2001:db8:aaab::77")));
    }

    #[test]
    fn empty_table_maps_nothing() {
        let t = EamTable::new();
        assert!(t.is_empty());
        assert_eq!(t.len(), 0);
        assert_eq!(t.v4_to_v6(&a4("192.0.2.1")), None);
        assert_eq!(t.v6_to_v4(&a6("2001:db8::1")), None);
        assert!(!t.contains_v4(&[0; 4]));
        assert!(!t.contains_v6(&[0; 16]));
    }

    #[test]
    fn extreme_lengths() {
        // Everything IPv4 into one /96 (like an RFC 6052 /96), and the reverse.
        let t = table(&[("0.0.0.0/0", "2001:db8::/96")]);
        both_ways(&t, "203.0.113.9", "2001:db8::cb00:7109");
        // A single IPv4 address for all of IPv6: shift of 128 on both sides.
        let t = table(&[("192.0.2.1/32", "::/0")]);
        assert_eq!(t.v4_to_v6(&a4("192.0.2.1")), Some([0; 16]));
        assert_eq!(t.v6_to_v4(&a6("2001:db8::1")), Some(a4("192.0.2.1")));
        assert_eq!(
            Eam::parse("192.0.2.0/33", "::/0"),
            Err(EamError::Syntax(
                "\"33\" in \"192.0.2.0/33\" is not an IPv4 prefix length (0 to 32)".into()
            ))
        );
        let bad = Eam {
            v4: [0; 4],
            v4_len: 40,
            v6: [0; 16],
            v6_len: 128,
        };
        assert!(matches!(bad.validate(), Err(EamError::Syntax(_))));
    }

    #[test]
    fn parse_and_display() {
        let e = eam(" 198.18.0.0/24 ", "2001:db8:1::/120");
        assert_eq!(
            e,
            Eam::new(
                Ipv4Addr::new(198, 18, 0, 0),
                24,
                "2001:db8:1::".parse().unwrap(),
                120
            )
            .unwrap()
        );
        assert_eq!(e.to_string(), "198.18.0.0/24 <-> 2001:db8:1::/120");
        assert_eq!(eam("192.0.2.1", "2001:db8::1").v6_len, 128);
        for (v4, v6) in [
            ("2001:db8::/120", "2001:db8::/120"),
            ("192.0.2.0/24", "192.0.2.0/24"),
            ("192.0.2.0/x", "2001:db8::/120"),
            ("192.0.2.0/24", "2001:db8::/129"),
            ("", "2001:db8::/120"),
        ] {
            match Eam::parse(v4, v6) {
                Err(EamError::Syntax(msg)) => {
                    assert!(msg.contains(v4) || msg.contains(v6), "{msg}")
                }
                other => panic!("{v4} {v6}: {other:?}"),
            }
        }
    }

    #[test]
    fn debug_shows_entries() {
        let t = table(&[("192.0.2.0/24", "2001:db8:aaaa::/120")]);
        let s = format!("{t:?}");
        assert!(s.starts_with("EamTable { entries: [Eam {"), "{s}");
    }

    /// A valid random entry: any lengths with `32 − v4_len ≤ 128 − v6_len`.
    fn arb_eam() -> impl Strategy<Value = Eam> {
        (0u8..=32)
            .prop_flat_map(|v4_len| (Just(v4_len), 0u8..=(96 + v4_len)))
            .prop_flat_map(|(v4_len, v6_len)| {
                (Just(v4_len), Just(v6_len), any::<u32>(), any::<u128>())
            })
            .prop_map(|(v4_len, v6_len, p4, p6)| Eam {
                v4: (p4 & mask32(v4_len)).to_be_bytes(),
                v4_len,
                v6: (p6 & mask128(v6_len)).to_be_bytes(),
                v6_len,
            })
    }

    /// The naive definition: scan every entry, keep the longest match.
    fn naive_v4(entries: &[Eam], v4: &[u8; 4]) -> Option<[u8; 16]> {
        entries
            .iter()
            .filter(|e| e.contains_v4(v4))
            .max_by_key(|e| e.v4_len)
            .and_then(|e| e.v4_to_v6(v4))
    }
    fn naive_v6(entries: &[Eam], v6: &[u8; 16]) -> Option<[u8; 4]> {
        entries
            .iter()
            .filter(|e| e.contains_v6(v6))
            .max_by_key(|e| e.v6_len)
            .and_then(|e| e.v6_to_v4(v6))
    }

    proptest! {
        #[test]
        fn rfc7757_s3_2_v4_v6_v4_round_trip(e in arb_eam(), host in any::<u32>()) {
            prop_assert!(e.validate().is_ok());
            let mut t = EamTable::new();
            t.insert(e).unwrap();
            let v4 = (u32::from_be_bytes(e.v4) | (host & !mask32(e.v4_len))).to_be_bytes();
            let v6 = t.v4_to_v6(&v4).expect("inside the IPv4 prefix");
            prop_assert!(e.contains_v6(&v6));
            prop_assert_eq!(t.v6_to_v4(&v6), Some(v4));
            // With equal suffix lengths the mapping is one-to-one the other way too.
            if e.v4_suffix_len() == e.v6_suffix_len() {
                prop_assert_eq!(t.v4_to_v6(&t.v6_to_v4(&v6).unwrap()), Some(v6));
            }
        }

        #[test]
        fn rfc7757_s3_2_lpm_matches_naive_scan(
            candidates in prop::collection::vec(arb_eam(), 1..12),
            probes4 in prop::collection::vec(any::<u32>(), 16),
            probes6 in prop::collection::vec(any::<u128>(), 16),
        ) {
            let mut t = EamTable::new();
            for e in candidates {
                // Duplicates are refused; the rest must go in.
                let dup = t.entries().iter().any(|x| {
                    (x.v4_len == e.v4_len && x.v4 == e.v4) || (x.v6_len == e.v6_len && x.v6 == e.v6)
                });
                prop_assert_eq!(t.insert(e).is_err(), dup);
            }
            let entries = t.entries().to_vec();
            // Probe inside the entries (random host bits) as well as at random.
            let mut v4s: Vec<[u8; 4]> = probes4.iter().map(|p| p.to_be_bytes()).collect();
            let mut v6s: Vec<[u8; 16]> = probes6.iter().map(|p| p.to_be_bytes()).collect();
            for (e, (p4, p6)) in entries.iter().zip(probes4.iter().zip(&probes6)) {
                v4s.push((u32::from_be_bytes(e.v4) | (p4 & !mask32(e.v4_len))).to_be_bytes());
                v6s.push((u128::from_be_bytes(e.v6) | (p6 & !mask128(e.v6_len))).to_be_bytes());
            }
            for v4 in &v4s {
                prop_assert_eq!(t.v4_to_v6(v4), naive_v4(&entries, v4));
                prop_assert_eq!(t.contains_v4(v4), naive_v4(&entries, v4).is_some());
            }
            for v6 in &v6s {
                prop_assert_eq!(t.v6_to_v4(v6), naive_v6(&entries, v6));
                prop_assert_eq!(t.contains_v6(v6), naive_v6(&entries, v6).is_some());
            }
            // Removing everything empties the index too.
            for e in &entries {
                prop_assert!(t.remove(e));
            }
            prop_assert!(t.by_v4.levels.is_empty() && t.by_v6.levels.is_empty());
        }
    }
}
