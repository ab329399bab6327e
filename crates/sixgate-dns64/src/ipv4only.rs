//! RFC 7050 §2 and RFC 8880 §7.2: `ipv4only.arpa`, the name whose AAAA records
//! tell a node the NAT64 prefix. A DNS64 answers it itself rather than asking
//! the root: A with the two well-known addresses, AAAA with those addresses
//! embedded in every synthesis prefix (what a CLAT's RFC 7050 discovery reads
//! back, `sixgate_core::addr::rfc7050` on the `clat` branch), anything else
//! NODATA, names below it NXDOMAIN.

use std::net::Ipv4Addr;

use hickory_proto::op::{Message, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, SOA};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};

use crate::synth::Policy;

/// RFC 7050 §2: the well-known name.
pub const NAME: &str = "ipv4only.arpa.";

/// RFC 7050 §2 / RFC 8880 §2: its two A records.
pub const WELL_KNOWN_ADDRESSES: [Ipv4Addr; 2] =
    [Ipv4Addr::new(192, 0, 0, 170), Ipv4Addr::new(192, 0, 0, 171)];

/// TTL of the local records, seconds: those of the `ipv4only.arpa` zone.
pub const TTL: u32 = 3600;

fn name() -> Name {
    Name::from_ascii(NAME).expect("a valid name")
}

/// Is `qname` `ipv4only.arpa` or below it?
pub fn is_ipv4only(qname: &Name) -> bool {
    name().zone_of(qname)
}

/// RFC 8880 §7.2: the local answer to `query` (whose name [`is_ipv4only`]).
pub fn answer(query: &Query, policy: &Policy) -> Message {
    let zone = name();
    let mut m = Message::response(0, OpCode::Query);
    m.metadata.authoritative = true;
    m.queries = vec![query.clone()];
    if query.name != zone {
        m.metadata.response_code = ResponseCode::NXDomain;
        m.authorities.push(soa(&zone));
        return m;
    }
    let owner = query.name.clone();
    let records: Vec<RData> = match (query.query_class, query.query_type) {
        (DNSClass::IN, RecordType::A) => WELL_KNOWN_ADDRESSES
            .iter()
            .map(|&a| RData::A(A(a)))
            .collect(),
        (DNSClass::IN, RecordType::AAAA) => policy
            .prefixes
            .iter()
            .flat_map(|p| {
                WELL_KNOWN_ADDRESSES
                    .iter()
                    .map(|&a| RData::AAAA(AAAA(p.embed(a))))
            })
            .collect(),
        _ => Vec::new(),
    };
    if records.is_empty() {
        m.authorities.push(soa(&zone));
    }
    m.answers = records
        .into_iter()
        .map(|d| Record::from_rdata(owner.clone(), TTL, d))
        .collect();
    m
}

/// The zone's SOA, for negative answers.
fn soa(zone: &Name) -> Record {
    let rdata = SOA::new(
        zone.clone(),
        Name::from_ascii("nobody.invalid.").expect("a valid name"),
        0,
        28_800,
        7_200,
        604_800,
        TTL,
    );
    Record::from_rdata(zone.clone(), TTL, RData::SOA(rdata))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(t: RecordType) -> Query {
        Query::query(Name::from_ascii("IPv4only.ARPA.").unwrap(), t)
    }

    fn policy(ps: &[&str]) -> Policy {
        Policy {
            prefixes: ps.iter().map(|p| p.parse().unwrap()).collect(),
            exclude: vec![],
            exclude_ipv4: vec![],
        }
    }

    #[test]
    fn rfc7050_s2_aaaa_embeds_both_addresses_in_every_prefix() {
        let m = answer(
            &q(RecordType::AAAA),
            &policy(&["64:ff9b::/96", "2001:db8:100::/40"]),
        );
        let got: Vec<String> = m
            .answers
            .iter()
            .map(|r| match &r.data {
                RData::AAAA(a) => a.0.to_string(),
                _ => panic!(),
            })
            .collect();
        assert_eq!(
            got,
            [
                "64:ff9b::c000:aa",
                "64:ff9b::c000:ab",
                "2001:db8:1c0:0:aa::",
                "2001:db8:1c0:0:ab::"
            ]
        );
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    }

    #[test]
    fn rfc8880_s7_2_a_other_types_and_names_below() {
        let p = policy(&["64:ff9b::/96"]);
        let a = answer(&q(RecordType::A), &p);
        assert_eq!(a.answers.len(), 2);
        let mx = answer(&q(RecordType::MX), &p);
        assert!(mx.answers.is_empty());
        assert_eq!(mx.metadata.response_code, ResponseCode::NoError);
        assert_eq!(mx.authorities.len(), 1, "NODATA carries the SOA");
        let below = Query::query(
            Name::from_ascii("x.ipv4only.arpa.").unwrap(),
            RecordType::AAAA,
        );
        assert!(is_ipv4only(&below.name));
        assert_eq!(
            answer(&below, &p).metadata.response_code,
            ResponseCode::NXDomain
        );
        assert!(!is_ipv4only(
            &Name::from_ascii("ipv4only.arpa.example.").unwrap()
        ));
    }
}
