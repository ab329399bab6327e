use std::net::{Ipv4Addr, Ipv6Addr};

use hickory_proto::op::{Message, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, CNAME, SOA};
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::*;

fn name(s: &str) -> Name {
    Name::from_ascii(s).unwrap()
}

fn policy(prefixes: &[&str]) -> Policy {
    Policy {
        prefixes: prefixes.iter().map(|p| p.parse().unwrap()).collect(),
        exclude: vec!["::ffff:0:0/96".parse().unwrap()],
        exclude_ipv4: vec![],
    }
}

fn aaaa_q(n: &str) -> Query {
    Query::query(name(n), RecordType::AAAA)
}

fn reply(q: &Query, rcode: ResponseCode) -> Message {
    let mut m = Message::response(7, OpCode::Query);
    m.metadata.response_code = rcode;
    m.queries.push(q.clone());
    m
}

/// The upstream's reply to `n` A (the query a DNS64 sends after the AAAA one).
fn a_reply(n: &str, rcode: ResponseCode) -> Message {
    reply(&Query::query(name(n), RecordType::A), rcode)
}

fn soa(zone: &str, ttl: u32, minimum: u32) -> Record {
    Record::from_rdata(
        name(zone),
        ttl,
        RData::SOA(SOA::new(
            name("ns.example."),
            name("h.example."),
            1,
            1,
            1,
            1,
            minimum,
        )),
    )
}

fn a_rec(n: &str, ttl: u32, a: [u8; 4]) -> Record {
    Record::from_rdata(name(n), ttl, RData::A(A(Ipv4Addr::from(a))))
}

fn aaaa_rec(n: &str, ttl: u32, a: &str) -> Record {
    Record::from_rdata(name(n), ttl, RData::AAAA(AAAA(a.parse().unwrap())))
}

fn addrs(m: &Message) -> Vec<Ipv6Addr> {
    m.answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::AAAA(a) => Some(a.0),
            _ => None,
        })
        .collect()
}

#[test]
fn rfc6147_s5_1_1_real_aaaa_is_returned_unchanged() {
    let q = aaaa_q("both.example.");
    let mut m = reply(&q, ResponseCode::NoError);
    m.answers
        .push(aaaa_rec("both.example.", 300, "2001:db8::1"));
    match classify_aaaa(Some(m.clone()), &policy(&["64:ff9b::/96"])) {
        AaaaOutcome::Answer(got) => assert_eq!(got, m),
        o => panic!("{o:?}"),
    }
}

#[test]
fn rfc6147_s5_1_2_nxdomain_is_final() {
    let q = aaaa_q("none.example.");
    let m = reply(&q, ResponseCode::NXDomain);
    assert!(matches!(
        classify_aaaa(Some(m), &policy(&["64:ff9b::/96"])),
        AaaaOutcome::NameError(_)
    ));
}

#[test]
fn rfc6147_s5_1_2_other_rcodes_count_as_nodata() {
    for rcode in [
        ResponseCode::ServFail,
        ResponseCode::Refused,
        ResponseCode::NotImp,
    ] {
        let q = aaaa_q("a.example.");
        let o = classify_aaaa(Some(reply(&q, rcode)), &policy(&["64:ff9b::/96"]));
        assert!(
            matches!(
                o,
                AaaaOutcome::Synthesize {
                    nodata: None,
                    soa_ttl: None
                }
            ),
            "{rcode:?}: {o:?}"
        );
    }
}

#[test]
fn rfc6147_s5_1_3_timeout_counts_as_servfail_so_synthesize() {
    assert!(matches!(
        classify_aaaa(None, &policy(&["64:ff9b::/96"])),
        AaaaOutcome::Synthesize { nodata: None, .. }
    ));
}

#[test]
fn rfc6147_s5_1_4_mapped_aaaa_is_excluded_by_default() {
    let q = aaaa_q("mapped.example.");
    let mut m = reply(&q, ResponseCode::NoError);
    m.answers
        .push(aaaa_rec("mapped.example.", 300, "::ffff:192.0.2.1"));
    assert!(matches!(
        classify_aaaa(Some(m.clone()), &policy(&["64:ff9b::/96"])),
        AaaaOutcome::Synthesize { .. }
    ));
    // One usable record among excluded ones: the usable one is the answer.
    m.answers
        .push(aaaa_rec("mapped.example.", 300, "2001:db8::1"));
    match classify_aaaa(Some(m), &policy(&["64:ff9b::/96"])) {
        AaaaOutcome::Answer(got) => {
            assert_eq!(addrs(&got), ["2001:db8::1".parse::<Ipv6Addr>().unwrap()])
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn rfc6147_s5_1_7_synthesized_ttl_is_capped_by_the_soa() {
    let q = aaaa_q("a-only.example.");
    let mut nodata = reply(&q, ResponseCode::NoError);
    // RFC 2308 §5: the negative TTL is min(SOA TTL, MINIMUM) = 60.
    nodata.authorities.push(soa("example.", 3600, 60));
    let AaaaOutcome::Synthesize { nodata, soa_ttl } =
        classify_aaaa(Some(nodata), &policy(&["64:ff9b::/96"]))
    else {
        panic!()
    };
    assert_eq!(soa_ttl, Some(60));
    let mut a = a_reply("a-only.example.", ResponseCode::NoError);
    a.metadata.authentic_data = true;
    a.answers
        .push(a_rec("a-only.example.", 300, [192, 0, 2, 1]));
    a.answers.push(a_rec("a-only.example.", 30, [192, 0, 2, 2]));
    let (m, made) = synthesize(&q, a, nodata, soa_ttl, &policy(&["64:ff9b::/96"]));
    assert_eq!(made, 2);
    assert_eq!(
        addrs(&m),
        [
            "64:ff9b::c000:201".parse::<Ipv6Addr>().unwrap(),
            "64:ff9b::c000:202".parse().unwrap()
        ]
    );
    assert_eq!(m.answers[0].ttl, 60, "min(A TTL 300, SOA 60)");
    assert_eq!(m.answers[1].ttl, 30, "min(A TTL 30, SOA 60)");
    assert_eq!(m.queries, [q]);
    assert!(
        !m.metadata.authentic_data,
        "§5.5: never AD on synthesized data"
    );
}

#[test]
fn rfc6147_s5_1_7_without_soa_the_ttl_is_at_most_600() {
    let q = aaaa_q("a.example.");
    let mut a = a_reply("a.example.", ResponseCode::NoError);
    a.answers
        .push(a_rec("a.example.", 86_400, [198, 51, 100, 7]));
    let (m, _) = synthesize(&q, a, None, None, &policy(&["2001:db8:64::/96"]));
    assert_eq!(m.answers[0].ttl, NO_SOA_TTL);
}

#[test]
fn rfc6147_s5_1_5_cname_chain_is_kept_and_targets_synthesized() {
    let q = aaaa_q("alias.example.");
    let mut a = a_reply("alias.example.", ResponseCode::NoError);
    a.answers.push(Record::from_rdata(
        name("alias.example."),
        300,
        RData::CNAME(CNAME(name("target.example."))),
    ));
    a.answers
        .push(a_rec("target.example.", 300, [198, 51, 100, 7]));
    let (m, made) = synthesize(&q, a, None, Some(600), &policy(&["2001:db8:64::/96"]));
    assert_eq!(made, 1);
    assert_eq!(m.answers[0].record_type(), RecordType::CNAME);
    assert_eq!(m.answers[1].name, name("target.example."));
    assert_eq!(
        addrs(&m),
        ["2001:db8:64::c633:6407".parse::<Ipv6Addr>().unwrap()]
    );
}

#[test]
fn rfc6147_s5_2_one_aaaa_per_prefix_every_rfc6052_length() {
    let prefixes = [
        "2001:db8::/32",
        "2001:db8:100::/40",
        "2001:db8:122::/48",
        "2001:db8:122:300::/56",
        "2001:db8:122:344::/64",
        "2001:db8:122:344::/96",
    ];
    let q = aaaa_q("a.example.");
    let mut a = a_reply("a.example.", ResponseCode::NoError);
    a.answers.push(a_rec("a.example.", 300, [192, 0, 2, 33]));
    let (m, made) = synthesize(&q, a, None, None, &policy(&prefixes));
    assert_eq!(made, 6);
    // RFC 6052 §2.4's table of examples.
    let want: Vec<Ipv6Addr> = [
        "2001:db8:c000:221::",
        "2001:db8:1c0:2:21::",
        "2001:db8:122:c000:2:2100::",
        "2001:db8:122:3c0:0:221::",
        "2001:db8:122:344:c0:2:2100:0",
        "2001:db8:122:344::192.0.2.33",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    assert_eq!(addrs(&m), want);
}

#[test]
fn rfc6147_s5_1_6_no_a_either_gives_the_aaaa_negative_answer() {
    let q = aaaa_q("empty.example.");
    let mut nodata = reply(&q, ResponseCode::NoError);
    nodata.authorities.push(soa("example.", 3600, 300));
    let a = a_reply("empty.example.", ResponseCode::NoError);
    let (m, made) = synthesize(
        &q,
        a,
        Some(nodata.clone()),
        Some(300),
        &policy(&["64:ff9b::/96"]),
    );
    assert_eq!(made, 0);
    assert_eq!(m, nodata);
    // After a failed AAAA query, A's own answer (here NXDOMAIN) is the basis.
    let a = a_reply("empty.example.", ResponseCode::NXDomain);
    let (m, _) = synthesize(&q, a, None, None, &policy(&["64:ff9b::/96"]));
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    assert_eq!(m.queries, [q]);
}

#[test]
fn excluded_ipv4_is_not_synthesized() {
    let q = aaaa_q("a.example.");
    let mut a = a_reply("a.example.", ResponseCode::NoError);
    a.answers.push(a_rec("a.example.", 300, [10, 1, 2, 3]));
    a.answers.push(a_rec("a.example.", 300, [198, 51, 100, 7]));
    let mut p = policy(&["64:ff9b::/96"]);
    p.exclude_ipv4 = vec!["10.0.0.0/8".parse().unwrap()];
    let (m, made) = synthesize(&q, a.clone(), None, None, &p);
    assert_eq!(made, 1);
    assert_eq!(
        addrs(&m),
        ["64:ff9b::c633:6407".parse::<Ipv6Addr>().unwrap()]
    );
    a.answers.pop();
    let (m, made) = synthesize(&q, a, None, None, &p);
    assert_eq!((made, m.answers.len()), (0, 0));
}

/// RFC 6147 §5.5 (and RFC 4035 §5.5): behind a validating resolver, Bogus A data
/// comes back as SERVFAIL. The client hears SERVFAIL, not the (valid) AAAA
/// NODATA, and nothing is synthesized.
#[test]
fn rfc6147_s5_5_bogus_a_gives_servfail_not_nodata() {
    let q = aaaa_q("bogus.example.");
    let mut nodata = reply(&q, ResponseCode::NoError);
    nodata.authorities.push(soa("example.", 3600, 300));
    let a = a_reply("bogus.example.", ResponseCode::ServFail);
    let (m, made) = synthesize(&q, a, Some(nodata), Some(300), &policy(&["64:ff9b::/96"]));
    assert_eq!(made, 0);
    assert_eq!(m.metadata.response_code, ResponseCode::ServFail);
    assert!(m.answers.is_empty() && !m.metadata.authentic_data);
    assert_eq!(m.queries, [q]);
}

/// RFC 6147 §5.5 item 2 and §5.4: synthesized records carry no AD bit and no
/// RRSIG (the A set's signatures cover A, not AAAA), even when the A answer was
/// validated (AD) and signed.
#[test]
fn rfc6147_s5_5_synthesized_answer_has_no_ad_and_no_rrsig() {
    let q = aaaa_q("signed.example.");
    let mut a = a_reply("signed.example.", ResponseCode::NoError);
    a.metadata.authentic_data = true;
    a.answers
        .push(a_rec("signed.example.", 300, [198, 51, 100, 20]));
    // An RRSIG as this crate reads one (no `dnssec` feature): opaque data.
    a.answers.push(Record::from_rdata(
        name("signed.example."),
        300,
        RData::Unknown {
            code: RecordType::RRSIG,
            rdata: hickory_proto::rr::rdata::NULL::with(vec![0; 80]),
        },
    ));
    let mut nodata = reply(&q, ResponseCode::NoError);
    nodata.metadata.authentic_data = true;
    let (m, made) = synthesize(&q, a, Some(nodata), None, &policy(&["64:ff9b::/96"]));
    assert_eq!(made, 1);
    assert!(!m.metadata.authentic_data);
    assert_eq!(
        m.answers
            .iter()
            .map(|r| r.record_type())
            .collect::<Vec<_>>(),
        [RecordType::AAAA]
    );
}
