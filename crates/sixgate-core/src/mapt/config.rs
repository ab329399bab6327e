//! The MAP-T run-time configuration, already validated (`[mapt]` in
//! `sixgate-config` builds it): the domain's rules and this node's role.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::rule::MapRule;
use crate::addr::Rfc6052Prefix;
use crate::nat64::Timeouts;

/// Which end of the MAP domain this translator is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// RFC 7599 §7: the Border Relay between the domain and the IPv4 Internet.
    Br,
    /// RFC 7599 §5: a Customer Edge, with its LAN behind a NAPT44.
    Ce(Box<CeConfig>),
}

/// A MAP-T domain as one node sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaptConfig {
    /// RFC 7599 §5: the Default Mapping Rule, an RFC 6052 prefix for every IPv4
    /// address outside the domain. The translator's pool6 is set to it too, so the
    /// RFC 7915 paths map off-domain addresses (and ICMP error sources) with it.
    pub dmr: Rfc6052Prefix,
    /// Forwarding Mapping Rules (a CE's BMR is one of them), longest prefix wins.
    pub fmrs: Vec<MapRule>,
    /// BR or CE.
    pub role: Role,
    /// Key for the fragment table and the NAPT44's port choice; the data plane
    /// seeds it from the OS.
    pub hash_key: u64,
}

/// The CE's own numbers, derived from its BMR and End-user prefix (RFC 7597 §5.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CeConfig {
    /// The Basic Mapping Rule.
    pub bmr: MapRule,
    /// The delegated End-user IPv6 prefix (address, length ≥ the BMR's r + o).
    pub end_user_prefix: (Ipv6Addr, u8),
    /// The IPv4 address its EA bits give.
    pub ipv4: Ipv4Addr,
    /// The PSID its EA bits give.
    pub psid: u16,
    /// §5.2: the MAP IPv6 address, the CE's address on the IPv6 side.
    pub map_address: Ipv6Addr,
    /// The private IPv4 range of the LAN behind the NAPT44.
    pub lan: (Ipv4Addr, u8),
    /// NAPT44 timeouts and limits.
    pub napt: Napt44Config,
}

/// The CE's NAPT44 timeouts and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Napt44Config {
    /// Session lifetimes (UDP, TCP established/transitory, ICMP; same meaning as
    /// NAT64's).
    pub timeouts: Timeouts,
    /// Most sessions; the tables are sized for it at start.
    pub max_sessions: u32,
}

impl Default for Napt44Config {
    fn default() -> Self {
        Napt44Config {
            timeouts: Timeouts {
                port_reuse: 0,
                ..Timeouts::default()
            },
            max_sessions: 16384,
        }
    }
}

/// Why a CE's numbers do not fit its BMR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CeError {
    /// The End-user prefix is not under the BMR's IPv6 prefix, or shorter than
    /// the BMR's r + EA bits.
    NotUnderBmr,
}

impl std::fmt::Display for CeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "end_user_prefix must lie under the BMR's ipv6_prefix and be at least as long \
             as its length + ea_bits (RFC 7597 §5.2)",
        )
    }
}

impl std::error::Error for CeError {}

impl CeConfig {
    /// The CE with End-user prefix `eup` under `bmr` (RFC 7597 §5.2: its EA bits
    /// give the IPv4 address and PSID).
    pub fn new(
        bmr: MapRule,
        eup: (Ipv6Addr, u8),
        lan: (Ipv4Addr, u8),
        napt: Napt44Config,
    ) -> Result<Self, CeError> {
        let v6 = u128::from(eup.0);
        if eup.1 < bmr.end_user_len() || eup.1 > 128 || !bmr.contains_v6(v6) {
            return Err(CeError::NotUnderBmr);
        }
        let (v4, psid) = bmr.decode_ea(v6);
        Ok(CeConfig {
            bmr,
            end_user_prefix: eup,
            ipv4: Ipv4Addr::from(v4),
            psid,
            map_address: Ipv6Addr::from(bmr.map_address(v4, psid)),
            lan,
            napt,
        })
    }

    /// Whether `v4` is a LAN host.
    #[inline]
    pub fn in_lan(&self, v4: u32) -> bool {
        let len = u32::from(self.lan.1.min(32));
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        v4 & mask == u32::from(self.lan.0) & mask
    }
}

impl MaptConfig {
    /// `hash_key` until the data plane seeds one.
    pub const DEFAULT_HASH_KEY: u64 = 0x6d61_7074_5f6b_6579;

    /// The CE's numbers, on a CE.
    pub fn ce(&self) -> Option<&CeConfig> {
        match &self.role {
            Role::Ce(c) => Some(c),
            Role::Br => None,
        }
    }

    /// RFC 7597 §5: the FMR with the longest IPv6 prefix holding `v6`.
    #[inline]
    pub fn rule_for_v6(&self, v6: u128) -> Option<&MapRule> {
        // The usual domain has one rule: no search.
        if let [r] = self.fmrs.as_slice() {
            return r.contains_v6(v6).then_some(r);
        }
        self.fmrs
            .iter()
            .filter(|r| r.contains_v6(v6))
            .max_by_key(|r| r.ipv6_prefix().1)
    }

    /// RFC 7597 §5: the FMR with the longest IPv4 prefix holding `v4`.
    #[inline]
    pub fn rule_for_v4(&self, v4: u32) -> Option<&MapRule> {
        if let [r] = self.fmrs.as_slice() {
            return r.contains_v4(v4).then_some(r);
        }
        self.fmrs
            .iter()
            .filter(|r| r.contains_v4(v4))
            .max_by_key(|r| r.ipv4_prefix().1)
    }
}
