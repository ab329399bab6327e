//! Address translation for one packet: EAM first, then pool6 (RFC 7757 §3.3, RFC 7915 §4.1/§5.1).
//!
//! RFC 7757 §3.3: an address is looked up in the EAM table first (longest match); only
//! if no entry matches is the RFC 6052 algorithm applied with the pool6 prefix. When
//! pool6 is the Well-Known Prefix 64:ff9b::/96, RFC 6052 §3.1 forbids it from carrying
//! non-global IPv4 addresses ([`is_non_global`]), and translators must drop such
//! packets; [`Mapper::wkp_strict`] turns that check on. Addresses the EAM table maps
//! are never subject to it, even if the EAM's IPv6 side lies inside 64:ff9b::/96: the
//! operator stated that mapping explicitly.

use std::fmt;

use super::ipv4_scope::is_non_global;
use super::{EamTable, Rfc6052Prefix};

/// Why an address could not be mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// Not in the EAM table and not under pool6 (or no pool6).
    NoMapping,
    /// RFC 6052 §3.1: the Well-Known Prefix with a non-global IPv4 address.
    WkpNonGlobal,
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MapError::NoMapping => {
                "the address matches no EAM entry and is not under the pool6 prefix"
            }
            MapError::WkpNonGlobal => {
                "the Well-Known Prefix 64:ff9b::/96 must not carry a non-global IPv4 \
                 address (RFC 6052 §3.1)"
            }
        })
    }
}

impl std::error::Error for MapError {}

impl MapError {
    /// The drop reason for a source (`source`) or destination that did not map.
    pub fn drop_reason(self, source: bool) -> crate::verdict::DropReason {
        use crate::verdict::DropReason;
        match (self, source) {
            (MapError::WkpNonGlobal, _) => DropReason::WkpNonGlobal,
            (MapError::NoMapping, true) => DropReason::SourceUntranslatable,
            (MapError::NoMapping, false) => DropReason::DestinationUntranslatable,
        }
    }
}

/// The address mapping part of the configuration.
#[derive(Clone, Debug, Default)]
pub struct Mapper {
    /// RFC 6052 translation prefix; `None`: EAM only.
    pub pool6: Option<Rfc6052Prefix>,
    /// RFC 7757 table; consulted first.
    pub eam: EamTable,
    /// RFC 6052 §3.1 enforcement for the Well-Known Prefix.
    pub wkp_strict: bool,
}

impl Mapper {
    /// Map an IPv6 address to IPv4: EAM, then pool6.
    #[inline]
    pub fn v6_to_v4(&self, v6: &[u8; 16]) -> Result<[u8; 4], MapError> {
        self.map_v6(u128::from_be_bytes(*v6)).map(u32::to_be_bytes)
    }
    /// [`Self::v6_to_v4`] on integers: the packet path converts each address once.
    #[inline]
    pub fn map_v6(&self, v6: u128) -> Result<u32, MapError> {
        if let Some(v4) = self.eam.lookup_v6(v6) {
            return Ok(v4);
        }
        let pool6 = self.pool6.as_ref().ok_or(MapError::NoMapping)?;
        let v4 = pool6.extract_u128(v6).ok_or(MapError::NoMapping)?;
        self.wkp_check(pool6, v4)?;
        Ok(v4)
    }
    /// RFC 7757 §4.3 / Appendix B: the RFC 6052 (pool6) form of `v4`, skipping
    /// the EAM table: the source of a hairpinned packet (and the destination of
    /// the packet a hairpinned ICMP error quotes) must lead back through the
    /// translator, as the IPv6 host addressed it.
    #[cold]
    pub fn map_v4_pool6(&self, v4: u32) -> Result<u128, MapError> {
        let pool6 = self.pool6.as_ref().ok_or(MapError::NoMapping)?;
        self.wkp_check(pool6, v4)?;
        Ok(pool6.embed_u32(v4))
    }

    /// Map an IPv4 address to IPv6: EAM, then pool6.
    #[inline]
    pub fn v4_to_v6(&self, v4: &[u8; 4]) -> Result<[u8; 16], MapError> {
        self.map_v4(u32::from_be_bytes(*v4)).map(u128::to_be_bytes)
    }
    /// [`Self::v4_to_v6`] on integers: the packet path converts each address once.
    #[inline]
    pub fn map_v4(&self, v4: u32) -> Result<u128, MapError> {
        if let Some(v6) = self.eam.lookup_v4(v4) {
            return Ok(v6);
        }
        let pool6 = self.pool6.as_ref().ok_or(MapError::NoMapping)?;
        self.wkp_check(pool6, v4)?;
        Ok(pool6.embed_u32(v4))
    }

    #[inline]
    fn wkp_check(&self, pool6: &Rfc6052Prefix, v4: u32) -> Result<(), MapError> {
        if self.wkp_strict && pool6.is_well_known() && is_non_global(v4.to_be_bytes()) {
            Err(MapError::WkpNonGlobal)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Eam;
    use crate::addr::rfc6052::{LOCAL_USE_PREFIX, WELL_KNOWN_PREFIX};
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn a4(s: &str) -> [u8; 4] {
        s.parse::<Ipv4Addr>().unwrap().octets()
    }
    fn a6(s: &str) -> [u8; 16] {
        s.parse::<Ipv6Addr>().unwrap().octets()
    }
    fn mapper(pool6: Option<&str>, eams: &[(&str, &str)], wkp_strict: bool) -> Mapper {
        let mut eam = EamTable::new();
        for (v4, v6) in eams {
            eam.insert(Eam::parse(v4, v6).unwrap()).unwrap();
        }
        Mapper {
            pool6: pool6.map(|p| p.parse().unwrap()),
            eam,
            wkp_strict,
        }
    }

    #[test]
    fn no_mapping_with_empty_config() {
        let m = Mapper::default();
        assert_eq!(m.v4_to_v6(&a4("192.0.2.1")), Err(MapError::NoMapping));
        assert_eq!(
            m.v6_to_v4(&a6("64:ff9b::c000:201")),
            Err(MapError::NoMapping)
        );
        // wkp_strict alone changes nothing.
        let m = mapper(None, &[], true);
        assert_eq!(m.v4_to_v6(&a4("8.8.8.8")), Err(MapError::NoMapping));
    }

    #[test]
    fn rfc6052_pool6_only() {
        let m = mapper(Some("2001:db8:122:344::/64"), &[], true);
        assert_eq!(
            m.v4_to_v6(&a4("192.0.2.33")),
            Ok(a6("2001:db8:122:344:c0:2:2100:0"))
        );
        assert_eq!(
            m.v6_to_v4(&a6("2001:db8:122:344:c0:2:2100:0")),
            Ok(a4("192.0.2.33"))
        );
        assert_eq!(
            m.v6_to_v4(&a6("2001:db8:122:345::1")),
            Err(MapError::NoMapping)
        );
    }

    #[test]
    fn rfc7757_s3_3_eam_only() {
        let m = mapper(None, &[("192.0.2.0/24", "2001:db8:aaaa::/120")], true);
        assert_eq!(m.v4_to_v6(&a4("192.0.2.7")), Ok(a6("2001:db8:aaaa::7")));
        assert_eq!(m.v6_to_v4(&a6("2001:db8:aaaa::7")), Ok(a4("192.0.2.7")));
        assert_eq!(m.v4_to_v6(&a4("192.0.3.7")), Err(MapError::NoMapping));
        assert_eq!(
            m.v6_to_v4(&a6("2001:db8:bbbb::7")),
            Err(MapError::NoMapping)
        );
    }

    #[test]
    fn rfc7757_s3_3_eam_before_pool6() {
        let m = mapper(
            Some("64:ff9b::/96"),
            &[("198.51.100.0/24", "2001:db8:aaaa::/120")],
            false,
        );
        // In the EAM table: EAM wins over pool6.
        assert_eq!(m.v4_to_v6(&a4("198.51.100.5")), Ok(a6("2001:db8:aaaa::5")));
        // Not in it: pool6.
        assert_eq!(m.v4_to_v6(&a4("8.8.8.8")), Ok(a6("64:ff9b::808:808")));
        assert_eq!(m.v6_to_v4(&a6("64:ff9b::808:808")), Ok(a4("8.8.8.8")));
        // An EAM whose IPv6 side lies inside pool6 also wins going to IPv4.
        let m = mapper(
            Some("2001:db8::/96"),
            &[("203.0.113.1", "2001:db8::c000:201")],
            false,
        );
        assert_eq!(m.v6_to_v4(&a6("2001:db8::c000:201")), Ok(a4("203.0.113.1")));
        assert_eq!(m.v6_to_v4(&a6("2001:db8::c000:202")), Ok(a4("192.0.2.2")));
    }

    #[test]
    fn rfc6052_s3_1_wkp_strict_refuses_non_global() {
        let m = mapper(Some("64:ff9b::/96"), &[], true);
        for v4 in [
            "10.1.2.3",
            "192.168.1.1",
            "192.0.2.33",
            "127.0.0.1",
            "224.0.0.1",
        ] {
            assert_eq!(m.v4_to_v6(&a4(v4)), Err(MapError::WkpNonGlobal), "{v4}");
            let v6 = WELL_KNOWN_PREFIX.embed_octets(a4(v4));
            assert_eq!(m.v6_to_v4(&v6), Err(MapError::WkpNonGlobal), "{v4}");
        }
        // Global addresses pass.
        assert_eq!(m.v4_to_v6(&a4("192.0.0.9")), Ok(a6("64:ff9b::c000:9")));
        assert_eq!(m.v6_to_v4(&a6("64:ff9b::808:808")), Ok(a4("8.8.8.8")));
        // Not under the WKP: NoMapping, not WkpNonGlobal.
        assert_eq!(
            m.v6_to_v4(&a6("2001:db8::a01:203")),
            Err(MapError::NoMapping)
        );
    }

    #[test]
    fn rfc6052_s3_1_wkp_not_strict_translates_non_global() {
        let m = mapper(Some("64:ff9b::/96"), &[], false);
        // The RFC 6052 §2.4 example row, which uses a documentation address.
        assert_eq!(m.v4_to_v6(&a4("192.0.2.33")), Ok(a6("64:ff9b::192.0.2.33")));
        assert_eq!(m.v6_to_v4(&a6("64:ff9b::192.0.2.33")), Ok(a4("192.0.2.33")));
        assert_eq!(m.v4_to_v6(&a4("10.0.0.1")), Ok(a6("64:ff9b::a00:1")));
    }

    #[test]
    fn rfc6052_s3_1_network_specific_prefix_is_not_restricted() {
        for pool6 in [
            "2001:db8::/96",
            "64:ff9b::/64",
            "64:ff9b:1::/48",
            "64:ff9b:1:2::/96",
        ] {
            let m = mapper(Some(pool6), &[], true);
            let v6 = m.v4_to_v6(&a4("10.1.2.3")).unwrap();
            assert_eq!(m.v6_to_v4(&v6), Ok(a4("10.1.2.3")), "{pool6}");
        }
        let m = Mapper {
            pool6: Some(LOCAL_USE_PREFIX),
            eam: EamTable::new(),
            wkp_strict: true,
        };
        assert!(m.v4_to_v6(&a4("192.168.0.1")).is_ok());
    }

    #[test]
    fn rfc6052_s3_1_eam_results_are_never_wkp_checked() {
        // An explicit mapping of private space into the WKP range, and of a WKP
        // address to a private IPv4 address: both are the operator's stated intent.
        let m = mapper(
            Some("64:ff9b::/96"),
            &[
                ("10.0.0.0/24", "64:ff9b::a00:0/120"),
                ("192.168.1.1", "2001:db8::1"),
            ],
            true,
        );
        assert_eq!(m.v4_to_v6(&a4("10.0.0.5")), Ok(a6("64:ff9b::a00:5")));
        assert_eq!(m.v6_to_v4(&a6("64:ff9b::a00:5")), Ok(a4("10.0.0.5")));
        assert_eq!(m.v6_to_v4(&a6("2001:db8::1")), Ok(a4("192.168.1.1")));
        assert_eq!(m.v4_to_v6(&a4("192.168.1.1")), Ok(a6("2001:db8::1")));
        // Outside the EAM, the rule applies again.
        assert_eq!(m.v4_to_v6(&a4("10.0.1.5")), Err(MapError::WkpNonGlobal));
    }

    #[test]
    fn map_error_display() {
        assert!(MapError::WkpNonGlobal.to_string().contains("RFC 6052 §3.1"));
        assert!(MapError::NoMapping.to_string().contains("pool6"));
        let e: Box<dyn std::error::Error> = Box::new(MapError::NoMapping);
        assert!(!e.to_string().is_empty());
    }
}
