//! The program's configuration element: the parts of the core's [`Config`]
//! that the fast-path packets depend on, in the layout of `struct config` in
//! bpf/siit.h (held in the configuration trie, `crate::xlat`).

use sixgate_core::Config;
use sixgate_core::fastpath;

/// `struct config` of bpf/siit.h (same field order, same padding).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BpfConfig {
    /// RFC 6864 Identification hash key (the core's `ipv4_id_key`).
    pub ipv4_id_key: u64,
    /// The /96 pool6 prefix's first 12 bytes.
    pub pool6: [u8; 12],
    /// 1 when there is a pool6.
    pub has_pool6: u8,
    /// RFC 6052 §3.1: the Well-Known Prefix with `wkp_strict` refuses
    /// non-global IPv4 addresses.
    pub wkp_nonglobal: u8,
    pub decrement_hop_limit: u8,
    pub reset_tos: u8,
    pub new_tos: u8,
    pub reset_traffic_class: u8,
    /// 1 on a MAP-T BR (RFC 7599 §7): the rules map the domain's side.
    pub mapt_br: u8,
    /// 1 in mode nat64: only installed sessions are translated (bpf/nat64.h).
    pub nat64: u8,
    /// 0: unset.
    pub ipv4_mtu: u16,
    /// 0: unset.
    pub ipv6_mtu: u16,
    pub v6_fragment_limit: u16,
    pub _pad1: u16,
    /// The slow path's device: the program translates only what the kernel
    /// routes there (0: no such check, for `BPF_PROG_TEST_RUN`).
    pub slow_ifindex: u32,
}

// SAFETY: plain integers and byte arrays, repr(C), every bit pattern valid,
// padding spelt out.
unsafe impl aya::Pod for BpfConfig {}

impl BpfConfig {
    /// The program's view of `cfg`, or why `cfg` cannot have a fast path
    /// ([`fastpath::unsupported`]).
    pub fn from_config(cfg: &Config) -> Result<BpfConfig, &'static str> {
        if let Some(why) = fastpath::unsupported(cfg) {
            return Err(why);
        }
        let mut p = [0u8; 12];
        if let Some(pool6) = cfg.map.pool6 {
            p.copy_from_slice(&pool6.addr().octets()[..12]);
        }
        let wkp = cfg.map.pool6.is_some_and(|p| p.is_well_known());
        Ok(BpfConfig {
            // NAT64: the program's own sequence (fastpath::nat64::program_id_key).
            ipv4_id_key: match cfg.nat64 {
                Some(_) => fastpath::nat64::program_id_key(cfg.ipv4_id_key),
                None => cfg.ipv4_id_key,
            },
            pool6: p,
            has_pool6: u8::from(cfg.map.pool6.is_some()),
            wkp_nonglobal: u8::from(cfg.map.wkp_strict && wkp),
            decrement_hop_limit: u8::from(cfg.decrement_hop_limit),
            reset_tos: u8::from(cfg.reset_tos),
            new_tos: cfg.new_tos,
            reset_traffic_class: u8::from(cfg.reset_traffic_class),
            // `unsupported` let only a BR through.
            mapt_br: u8::from(cfg.mapt.is_some()),
            nat64: u8::from(cfg.nat64.is_some()),
            ipv4_mtu: cfg.ipv4_mtu.unwrap_or(0),
            ipv6_mtu: cfg.ipv6_mtu.unwrap_or(0),
            // At most 1280 ≤ u16::MAX: lowest_ipv6_mtu and ipv6_mtu are u16.
            v6_fragment_limit: cfg.v6_fragment_limit() as u16,
            ..BpfConfig::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout of `struct config` in bpf/siit.h.
    #[test]
    fn layout_matches_the_c_struct() {
        assert_eq!(core::mem::size_of::<BpfConfig>(), 40);
        assert_eq!(core::mem::offset_of!(BpfConfig, pool6), 8);
        assert_eq!(core::mem::offset_of!(BpfConfig, wkp_nonglobal), 21);
        assert_eq!(core::mem::offset_of!(BpfConfig, mapt_br), 26);
        assert_eq!(core::mem::offset_of!(BpfConfig, nat64), 27);
        assert_eq!(core::mem::offset_of!(BpfConfig, ipv4_mtu), 28);
        assert_eq!(core::mem::offset_of!(BpfConfig, v6_fragment_limit), 32);
    }
}
