//! RFC 6147 §5.1: answering a AAAA query, and synthesizing AAAA records from A
//! records when the name has no usable AAAA. Pure functions: messages in,
//! message out; the resolver ([`crate::resolve`]) does the asking.

use std::net::{Ipv4Addr, Ipv6Addr};

use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::rdata::AAAA;
use hickory_proto::rr::{RData, Record, RecordType};
use ipnet::{Ipv4Net, Ipv6Net};
use sixgate_core::addr::Rfc6052Prefix;

/// RFC 6147 §5.1.7: the TTL cap of synthesized records when the AAAA answer
/// brought no SOA: "the DNS64 SHOULD use ... 600 seconds".
pub const NO_SOA_TTL: u32 = 600;

/// What synthesis needs from the configuration.
#[derive(Clone, Debug)]
pub struct Policy {
    /// RFC 6052 prefixes: each A record gives one AAAA per prefix (RFC 6147 §5.2).
    pub prefixes: Vec<Rfc6052Prefix>,
    /// RFC 6147 §5.1.4: AAAA records inside these count as absent.
    pub exclude: Vec<Ipv6Net>,
    /// A records inside these are never synthesized (BIND's `mapped`, inverted).
    pub exclude_ipv4: Vec<Ipv4Net>,
}

impl Policy {
    /// RFC 6147 §5.1.4: is this AAAA record's address in the exclusion set?
    pub fn is_excluded(&self, a: Ipv6Addr) -> bool {
        self.exclude.iter().any(|n| n.contains(&a))
    }

    /// Is this A record's address one we do not synthesize for?
    pub fn is_excluded_ipv4(&self, a: Ipv4Addr) -> bool {
        self.exclude_ipv4.iter().any(|n| n.contains(&a))
    }

    /// RFC 6147 §5.3.1: the IPv4 address an IPv6 address under one of the prefixes embeds.
    pub fn extract(&self, a: Ipv6Addr) -> Option<Ipv4Addr> {
        self.prefixes.iter().find_map(|p| {
            let net = Ipv6Net::new(p.addr(), p.len()).ok()?;
            if net.contains(&a) { p.extract(a) } else { None }
        })
    }
}

/// What the answer to the AAAA query means for the client (RFC 6147 §5.1.1–§5.1.4).
#[derive(Debug)]
pub enum AaaaOutcome {
    /// §5.1.1: usable AAAA data; returned as is, less any excluded records (§5.1.4).
    Answer(Message),
    /// §5.1.2: RCODE 3 (Name Error): the name does not exist, for A either.
    NameError(Message),
    /// No usable AAAA: NODATA, every AAAA excluded (§5.1.4), any RCODE other than
    /// 0 and 3 (§5.1.2) or no answer in time (§5.1.3). Ask for A.
    Synthesize {
        /// The NODATA answer, when there was one: the reply if A gives nothing.
        nodata: Option<Message>,
        /// The negative-caching TTL of its SOA, for §5.1.7.
        soa_ttl: Option<u32>,
    },
}

/// RFC 6147 §5.1.1–§5.1.4: classify the upstream answer to the AAAA query
/// (`None`: no answer in time, §5.1.3, which counts as RCODE 2 and so, by
/// §5.1.2, as an empty answer).
pub fn classify_aaaa(answer: Option<Message>, policy: &Policy) -> AaaaOutcome {
    let Some(mut m) = answer else {
        return AaaaOutcome::Synthesize {
            nodata: None,
            soa_ttl: None,
        };
    };
    match m.metadata.response_code {
        ResponseCode::NXDomain => return AaaaOutcome::NameError(m),
        ResponseCode::NoError => {}
        // §5.1.2: "treated as though the RCODE were 0 and the answer section
        // were empty".
        _ => {
            return AaaaOutcome::Synthesize {
                nodata: None,
                soa_ttl: None,
            };
        }
    }
    // §5.1.4: drop excluded AAAA records; if none is left, there is no AAAA.
    let excluded = |r: &Record| matches!(&r.data, RData::AAAA(a) if policy.is_excluded(a.0));
    let had_excluded = m.answers.iter().any(excluded);
    if had_excluded {
        m.answers.retain(|r| !excluded(r));
        // Their signatures no longer cover the set.
        m.answers.retain(|r| r.record_type() != RecordType::RRSIG);
    }
    if m.answers
        .iter()
        .any(|r| r.record_type() == RecordType::AAAA)
    {
        return AaaaOutcome::Answer(m);
    }
    AaaaOutcome::Synthesize {
        soa_ttl: negative_ttl(&m),
        nodata: (!had_excluded).then_some(m),
    }
}

/// RFC 2308 §5: a negative answer lives as long as the smaller of its SOA
/// record's TTL and the SOA MINIMUM field.
pub fn negative_ttl(m: &Message) -> Option<u32> {
    m.authorities.iter().find_map(|r| match &r.data {
        RData::SOA(soa) => Some(r.ttl.min(soa.minimum)),
        _ => None,
    })
}

/// RFC 6147 §5.1.6–§5.1.7 and §5.4: the reply to `query` (a AAAA question) built
/// from `a`, the upstream answer for the A records of the same name. Returns the
/// reply and how many AAAA records it synthesized (0: a negative reply).
///
/// CNAME and DNAME records of the chain are kept as they are (§5.1.5); every A
/// record at the end of the chain becomes one AAAA per prefix (§5.2) with the
/// owner name and class of the A record, and a TTL no longer than the A record's
/// and the AAAA negative answer's (§5.1.7). A and RRSIG records go (an RRSIG over
/// an A set proves nothing about a AAAA set). AD is never set: synthesized data
/// is not validated (§5.5). Without A records the reply is the AAAA negative
/// answer (§5.1.6), or `a`'s error when that is SERVFAIL (§5.5: Bogus A data
/// gives SERVFAIL, never a synthesis nor a NODATA).
pub fn synthesize(
    query: &Query,
    mut a: Message,
    nodata: Option<Message>,
    soa_ttl: Option<u32>,
    policy: &Policy,
) -> (Message, usize) {
    let ttl_cap = soa_ttl.unwrap_or(NO_SOA_TTL);
    let mut answers = Vec::with_capacity(a.answers.len() * policy.prefixes.len());
    let mut made = 0;
    if a.metadata.response_code == ResponseCode::NoError {
        for r in a.answers.drain(..) {
            match &r.data {
                RData::A(v4) if !policy.is_excluded_ipv4(v4.0) => {
                    for p in &policy.prefixes {
                        let mut s = Record::from_rdata(
                            r.name.clone(),
                            r.ttl.min(ttl_cap),
                            RData::AAAA(AAAA(p.embed(v4.0))),
                        );
                        s.dns_class = r.dns_class;
                        answers.push(s);
                        made += 1;
                    }
                }
                _ if matches!(r.record_type(), RecordType::CNAME | RecordType::DNAME) => {
                    answers.push(r)
                }
                _ => {}
            }
        }
    }
    if made == 0 {
        // §5.1.6: "the empty result or error is used as the basis for the
        // answer". The AAAA NODATA says it best (its SOA is for AAAA); else A's.
        // But a SERVFAIL for A wins over the NODATA (§5.5, RFC 4035 §5.5): from
        // a validating resolver it means the A set is Bogus, and the client
        // must hear the failure, not a NODATA it would cache for the SOA's
        // negative TTL.
        let a_failed = a.metadata.response_code == ResponseCode::ServFail;
        let mut base = match nodata {
            Some(n) if !a_failed => n,
            _ => a,
        };
        base.queries = vec![query.clone()];
        base.metadata.authentic_data = false;
        if base.metadata.response_code == ResponseCode::NoError {
            // An A set excluded from synthesis: keep the chain, nothing else.
            base.answers
                .retain(|r| matches!(r.record_type(), RecordType::CNAME | RecordType::DNAME));
        }
        return (base, 0);
    }
    let mut out = Message::response(a.metadata.id, a.metadata.op_code);
    out.metadata.response_code = ResponseCode::NoError;
    out.metadata.recursion_desired = a.metadata.recursion_desired;
    out.metadata.recursion_available = a.metadata.recursion_available;
    out.metadata.authentic_data = false;
    out.queries = vec![query.clone()];
    out.answers = answers;
    (out, made)
}

#[cfg(test)]
mod tests;
