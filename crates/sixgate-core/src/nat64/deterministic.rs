//! RFC 7422 deterministic NAT: every subscriber of one IPv6 prefix gets one
//! pool4 address and one fixed block of ports, computed from the
//! configuration alone, so that "who had A:P?" is answered by arithmetic and
//! needs no per-session log (RFC 7422 §1, §2; docs/logging.md).
//!
//! The formula (`[nat64] deterministic`, docs/config.md):
//!
//! - `i = (src6 − prefix) >> (128 − subscriber_prefix_len)`: the subscriber's
//!   index, `0 ≤ i < 2^(subscriber_prefix_len − prefix_len)`;
//! - `A` = pool4's addresses, entries in configuration order, addresses
//!   ascending in each; `K` = `port_block_size`; the ports are those every
//!   pool4 entry gives TCP, UDP and ICMP alike, cut to whole aligned blocks
//!   from `F` (a multiple of `K`), `N` blocks an address;
//! - subscriber `i` has address `a = i mod A` and block `j = i div A`: ports
//!   `F + j·K … F + j·K + K − 1`, for each protocol;
//! - back: address number `a`, port `p` → `i = ((p − F) div K)·A + a`.
//!
//! Addresses first, then blocks ("block-major"), so the subscribers of a
//! small prefix spread over every address, and so that a subscriber's block,
//! and with it the subscriber, belongs to one worker: block `j` is port group
//! `F/K + j`, whose owner is `(F/K + j) mod workers`
//! ([`super::steering::port_owner`]); the IPv6 side is steered by
//! [`Deterministic::worker`], the same number.
//!
//! RFC 7422 §2: a subscriber that needs more than its block gets no more
//! (`deterministic_ports_full`); a source outside the prefix gets nothing
//! (`deterministic_unmapped`).

use super::config::{Nat64Config, Proto};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Most subscriber-index bits (`subscriber_prefix_len − prefix_len`): the
/// index is a 32-bit number, in the core and in the steering program.
pub const MAX_INDEX_BITS: u8 = 32;

/// The formula of one configuration, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deterministic {
    prefix: u128,
    prefix_len: u8,
    subscriber_len: u8,
    block: u16,
    first_port: u16,
    blocks_per_address: u32,
    /// Each pool4 entry's first address and address count, in order.
    entries: Vec<(u32, u32)>,
    addresses: u32,
}

/// One subscriber's share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    /// Index `i` of the formula.
    pub index: u32,
    /// The subscriber prefix (`subscriber_prefix_len` bits).
    pub subscriber: Ipv6Addr,
    /// Its pool4 address.
    pub address: Ipv4Addr,
    /// First port of its block (the block is `block` ports long).
    pub first_port: u16,
    /// Last port of its block.
    pub last_port: u16,
}

fn mask(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    }
}

impl Deterministic {
    /// The formula of `cfg`: `Ok(None)` without `deterministic`; an error
    /// (a sentence naming the keys and numbers) when it cannot hold every
    /// subscriber of the prefix.
    pub fn plan(cfg: &Nat64Config) -> Result<Option<Deterministic>, String> {
        let Some((addr, prefix_len)) = cfg.deterministic else {
            return Ok(None);
        };
        let s = cfg.subscriber_prefix_len;
        if s < prefix_len {
            return Err(format!(
                "subscriber_prefix_len /{s} is shorter than the deterministic prefix \
                 /{prefix_len}: a subscriber must lie inside it"
            ));
        }
        if s - prefix_len > MAX_INDEX_BITS {
            return Err(format!(
                "/{prefix_len} holds 2^{} subscribers of /{s}; at most 2^{MAX_INDEX_BITS} \
                 (a longer deterministic prefix, or a shorter subscriber_prefix_len)",
                s - prefix_len
            ));
        }
        let k = cfg.port_block_size;
        if k < 2 || !k.is_power_of_two() {
            return Err(
                "deterministic NAT needs port_block_size, the ports each subscriber \
                        gets (a power of two, e.g. 512)"
                    .into(),
            );
        }
        if cfg.pool4.is_empty() {
            return Err("deterministic NAT needs an explicit pool4".into());
        }
        // The ports every entry gives every protocol.
        let (mut lo, mut hi) = (0u32, 65_535u32);
        for e in &cfg.pool4 {
            for p in Proto::ALL {
                let r = e.range(p);
                lo = lo.max(u32::from(r.first));
                hi = hi.min(u32::from(r.last));
            }
        }
        let k32 = u32::from(k);
        let first = lo.div_ceil(k32) * k32;
        let blocks = if hi + 1 >= first + k32 {
            (hi + 1 - first) / k32
        } else {
            0
        };
        if lo > hi {
            return Err(
                "the pool4 entries give TCP, UDP and ICMP no port in common; give each \
                        entry the same wide range, e.g. { prefix = \"…\", tcp = \"1024-65535\", \
                        udp = \"1024-65535\", icmp = \"1024-65535\" }"
                    .into(),
            );
        }
        if blocks == 0 {
            return Err(format!(
                "no whole block of {k} ports lies in the ports every pool4 entry gives TCP, \
                 UDP and ICMP alike ({lo}-{hi}); give each entry the same wide range, e.g. \
                 {{ prefix = \"…\", tcp = \"1024-65535\", udp = \"1024-65535\", \
                 icmp = \"1024-65535\" }}"
            ));
        }
        let entries: Vec<(u32, u32)> = cfg
            .pool4
            .iter()
            .map(|e| (e.first_addr(), e.addr_count()))
            .collect();
        let addresses = entries
            .iter()
            .map(|&(_, n)| u64::from(n))
            .sum::<u64>()
            .min(u64::from(u32::MAX)) as u32;
        let subscribers = 1u64 << (s - prefix_len);
        let capacity = u64::from(addresses) * u64::from(blocks);
        if capacity < subscribers {
            return Err(format!(
                "{subscribers} subscribers (/{s} in /{prefix_len}) need as many blocks, \
                 but pool4 gives {addresses} address(es) × {blocks} block(s) of {k} ports \
                 ({first}-{}) = {capacity}: add addresses, widen the ranges or shrink \
                 port_block_size",
                first + blocks * k32 - 1
            ));
        }
        Ok(Some(Deterministic {
            prefix: u128::from(addr) & mask(prefix_len),
            prefix_len,
            subscriber_len: s,
            block: k,
            first_port: first as u16,
            blocks_per_address: blocks,
            entries,
            addresses,
        }))
    }

    /// The subscriber index of IPv6 address `src6`; `None` outside the prefix.
    #[inline]
    pub fn index(&self, src6: u128) -> Option<u32> {
        if src6 & mask(self.prefix_len) != self.prefix {
            return None;
        }
        let bits = self.subscriber_len - self.prefix_len;
        if bits == 0 {
            return Some(0);
        }
        let shifted = src6 >> (128 - u32::from(self.subscriber_len));
        Some((shifted & ((1u128 << bits) - 1)) as u32)
    }

    /// Address `a` (0-based, over every pool4 entry in order).
    fn address(&self, mut a: u32) -> Option<u32> {
        for &(first, n) in &self.entries {
            if a < n {
                return Some(first.wrapping_add(a));
            }
            a -= n;
        }
        None
    }

    /// The number of address `v4` in the formula.
    fn address_number(&self, v4: u32) -> Option<u32> {
        let mut base = 0u32;
        for &(first, n) in &self.entries {
            let off = v4.wrapping_sub(first);
            if off < n {
                return Some(base + off);
            }
            base = base.saturating_add(n);
        }
        None
    }

    /// Subscriber `i`'s address and first port.
    #[inline]
    pub fn block(&self, i: u32) -> Option<(u32, u16)> {
        let (a, j) = (i % self.addresses, i / self.addresses);
        if j >= self.blocks_per_address {
            return None;
        }
        let v4 = self.address(a)?;
        Some((v4, self.first_port + (j * u32::from(self.block)) as u16))
    }

    /// The share of IPv6 address `src6`.
    pub fn share_of(&self, src6: Ipv6Addr) -> Option<Share> {
        let i = self.index(u128::from(src6))?;
        self.share(i)
    }

    fn share(&self, i: u32) -> Option<Share> {
        let (v4, first) = self.block(i)?;
        let bits = self.subscriber_len - self.prefix_len;
        let off = if bits == 0 {
            0
        } else {
            u128::from(i) << (128 - u32::from(self.subscriber_len))
        };
        Some(Share {
            index: i,
            subscriber: Ipv6Addr::from(self.prefix | off),
            address: Ipv4Addr::from(v4),
            first_port: first,
            last_port: first + (self.block - 1),
        })
    }

    /// The formula backwards: the subscriber that owns `v4`:`port`; `None`
    /// when no subscriber of the prefix does.
    pub fn owner_of(&self, v4: Ipv4Addr, port: u16) -> Option<Share> {
        let a = self.address_number(u32::from(v4))?;
        let off = u32::from(port).checked_sub(u32::from(self.first_port))?;
        let j = off / u32::from(self.block);
        if j >= self.blocks_per_address {
            return None;
        }
        let i = u64::from(j) * u64::from(self.addresses) + u64::from(a);
        let bits = self.subscriber_len - self.prefix_len;
        if i >= 1u64 << bits {
            return None;
        }
        self.share(i as u32)
    }

    /// Whether `port` lies in some address's blocks.
    #[inline]
    pub fn in_a_block(&self, port: u16) -> bool {
        u32::from(port)
            .checked_sub(u32::from(self.first_port))
            .is_some_and(|off| off / u32::from(self.block) < self.blocks_per_address)
    }

    /// The worker of `src6` (docs/architecture.md, "Multi-core without a
    /// shared table"): the owner of its block's port group,
    /// `(F/K + i div A) mod workers`; `None` outside the prefix.
    #[inline]
    pub fn worker(&self, src6: u128, workers: u16) -> Option<u16> {
        let i = self.index(src6)?;
        if workers <= 1 {
            return Some(0);
        }
        let group = self.first_group() + i / self.addresses;
        Some((group % u32::from(workers)) as u16)
    }

    /// `F / K`: the port group of every address's first block.
    pub fn first_group(&self) -> u32 {
        u32::from(self.first_port) / u32::from(self.block)
    }

    /// The prefix and its length.
    pub fn prefix(&self) -> (Ipv6Addr, u8) {
        (Ipv6Addr::from(self.prefix), self.prefix_len)
    }

    /// Length of one subscriber's prefix.
    pub fn subscriber_len(&self) -> u8 {
        self.subscriber_len
    }

    /// `A`: the pool4 addresses.
    pub fn addresses(&self) -> u32 {
        self.addresses
    }

    /// `K`: ports per subscriber and protocol.
    pub fn block_size(&self) -> u16 {
        self.block
    }

    /// `F`: the first port of every address's first block.
    pub fn first_port(&self) -> u16 {
        self.first_port
    }

    /// `N`: blocks per address.
    pub fn blocks_per_address(&self) -> u32 {
        self.blocks_per_address
    }

    /// Subscribers in the prefix.
    pub fn subscribers(&self) -> u64 {
        1u64 << (self.subscriber_len - self.prefix_len)
    }
}

impl std::fmt::Display for Deterministic {
    /// The formula in one line, for the log and `whois`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (p, l) = self.prefix();
        let k = u32::from(self.block);
        write!(
            f,
            "RFC 7422: {} subscribers /{} of {p}/{l} → {} address(es) × {} block(s) of {k} \
             ports from {}: i mod {} = address, i div {} = block",
            self.subscribers(),
            self.subscriber_len,
            self.addresses,
            self.blocks_per_address,
            self.first_port,
            self.addresses,
            self.addresses,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nat64::config::{Pool4Entry, PortRange};
    use crate::nat64::steering::port_owner;

    fn cfg(prefix: &str, len: u8, sub: u8, block: u16, pool4: &[(&str, u8)]) -> Nat64Config {
        let r = PortRange::new(1024, 65535);
        Nat64Config {
            deterministic: Some((prefix.parse().unwrap(), len)),
            subscriber_prefix_len: sub,
            port_block_size: block,
            pool4: pool4
                .iter()
                .map(|&(a, l)| Pool4Entry {
                    prefix_len: l,
                    tcp: r,
                    udp: r,
                    icmp: r,
                    ..Pool4Entry::single(a.parse().unwrap())
                })
                .collect(),
            ..Nat64Config::default()
        }
    }

    /// RFC 7422 §2: "a subscriber is mapped to the same external address and
    /// port range": the formula and its inverse agree on every subscriber, and
    /// no two subscribers share a port.
    #[test]
    fn rfc7422_s2_every_subscriber_has_one_block_and_the_block_names_it() {
        let c = cfg(
            "2001:db8:100::",
            40,
            48,
            1024,
            &[("198.51.100.0", 30), ("203.0.113.7", 32)],
        );
        let d = Deterministic::plan(&c).unwrap().unwrap();
        assert_eq!(d.addresses(), 5);
        assert_eq!(d.first_port(), 1024);
        assert_eq!(d.blocks_per_address(), 63);
        let mut seen = std::collections::HashSet::new();
        for i in 0..256u32 {
            let src: Ipv6Addr = Ipv6Addr::from(
                u128::from("2001:db8:100::".parse::<Ipv6Addr>().unwrap())
                    | u128::from(i) << 80
                    | 77,
            );
            let s = d.share_of(src).unwrap();
            assert_eq!(s.index, i);
            assert!(seen.insert((s.address, s.first_port)));
            for port in [s.first_port, s.last_port, s.first_port + 500] {
                assert_eq!(d.owner_of(s.address, port), Some(s));
            }
        }
        // Block-major: the first five subscribers take block 0 of each address.
        let s4 = d.share(4).unwrap();
        assert_eq!(
            (s4.address, s4.first_port),
            ("203.0.113.7".parse().unwrap(), 1024)
        );
        let s5 = d.share(5).unwrap();
        assert_eq!(
            (s5.address, s5.first_port),
            ("198.51.100.0".parse().unwrap(), 2048)
        );
        // Outside the prefix, past the last subscriber, below the first block.
        assert_eq!(d.share_of("2001:db8:200::1".parse().unwrap()), None);
        assert_eq!(d.owner_of("198.51.100.0".parse().unwrap(), 1023), None);
        assert_eq!(d.owner_of("198.51.100.9".parse().unwrap(), 5000), None);
        // Index 256 would be address 1, block 51: no such subscriber of a /40 in /48.
        assert_eq!(
            d.owner_of("198.51.100.1".parse().unwrap(), 1024 + 51 * 1024),
            None
        );
    }

    /// The worker of a subscriber is the owner of its block's ports, so the
    /// IPv4 side of its sessions is steered to the same worker.
    #[test]
    fn a_subscribers_worker_owns_its_block() {
        let c = cfg("2001:db8::", 44, 56, 256, &[("192.0.2.0", 27)]);
        let d = Deterministic::plan(&c).unwrap().unwrap();
        for workers in [1u16, 2, 3, 4, 7] {
            for i in 0..4096 {
                let src = u128::from(d.share(i).unwrap().subscriber) | 0xabcd;
                let s = d.share(i).unwrap();
                let w = d.worker(src, workers).unwrap();
                assert_eq!(port_owner(s.first_port, 256, workers), w);
                assert_eq!(port_owner(s.last_port, 256, workers), w);
            }
        }
    }

    #[test]
    fn plans_that_cannot_hold_every_subscriber_are_refused_with_the_numbers() {
        let e = Deterministic::plan(&cfg("2001:db8::", 32, 56, 4096, &[("192.0.2.1", 32)]))
            .unwrap_err();
        assert!(e.contains("16777216 subscribers"), "{e}");
        assert!(e.contains("1 address(es) × 15 block(s)"), "{e}");
        let mut c = cfg("2001:db8::", 48, 51, 512, &[("192.0.2.1", 32)]);
        c.pool4[0].icmp = PortRange::new(61001, 65535);
        let d = Deterministic::plan(&c).unwrap().unwrap();
        assert_eq!((d.first_port(), d.blocks_per_address()), (61440, 8));
        c.port_block_size = 0;
        assert!(
            Deterministic::plan(&c)
                .unwrap_err()
                .contains("port_block_size")
        );
        let c = cfg("2001:db8::", 64, 48, 512, &[("192.0.2.1", 32)]);
        assert!(Deterministic::plan(&c).unwrap_err().contains("shorter"));
        let c = cfg("2001:db8::", 32, 72, 512, &[("192.0.2.1", 32)]);
        assert!(Deterministic::plan(&c).unwrap_err().contains("2^40"));
    }

    /// /128 subscribers in a /120: every host its own block.
    #[test]
    fn host_subscribers() {
        let c = cfg("2001:db8::100", 120, 128, 128, &[("192.0.2.1", 32)]);
        let d = Deterministic::plan(&c).unwrap().unwrap();
        let s = d.share_of("2001:db8::1ff".parse().unwrap()).unwrap();
        assert_eq!(s.index, 255);
        assert_eq!(s.subscriber, "2001:db8::1ff".parse::<Ipv6Addr>().unwrap());
        assert_eq!(d.owner_of(s.address, s.first_port + 7).unwrap().index, 255);
    }
}
