//! RFC 7050 discovery against a tiny DNS server on loopback, the message rules
//! (RFC 1035, RFC 3596, RFC 5452) and the corruption cases of the codec it
//! replaced, and the §3 refresh.

use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;

use hickory_proto::op::{MessageType, OpCode, ResponseCode};
use hickory_proto::rr::Record;
use hickory_proto::rr::rdata::{AAAA, CNAME};

use super::*;

fn wka(prefix: &str) -> Vec<Ipv6Addr> {
    let p: Rfc6052Prefix = prefix.parse().unwrap();
    vec![
        p.embed(rfc7050::WKA_PRIMARY),
        p.embed(rfc7050::WKA_SECONDARY),
    ]
}

fn name(n: &str) -> Name {
    Name::from_ascii(n).unwrap()
}

/// The response to `q` carrying `records` (TTL `ttl`), with `rcode` and TC.
fn response(q: &Message, rcode: ResponseCode, tc: bool, ttl: u32, records: &[Ipv6Addr]) -> Message {
    let mut m = Message::new(q.metadata.id, MessageType::Response, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.metadata.recursion_available = true;
    m.metadata.response_code = rcode;
    m.metadata.truncation = tc;
    m.queries = q.queries.clone();
    let owner = q.queries[0].name.clone();
    for r in records {
        m.answers.push(Record::from_rdata(
            owner.clone(),
            ttl,
            RData::AAAA(AAAA(*r)),
        ));
    }
    m
}

/// The plain answer to `q`: NOERROR, no TC, `records` with TTL 300.
fn answer(q: &Message, records: &[Ipv6Addr]) -> Message {
    response(q, ResponseCode::NoError, false, 300, records)
}

fn wire(m: &Message) -> Vec<u8> {
    m.to_vec().unwrap()
}

fn query() -> Message {
    aaaa_query(WELL_KNOWN_NAME).unwrap()
}

// --- the messages (the cases of the hand-written codec this replaced) ---------

#[test]
fn rfc1035_s4_1_query_layout() {
    let q = query();
    let w = wire(&q);
    // RD set, opcode 0, one question; the question is ipv4only.arpa AAAA IN.
    assert_eq!(w[2] & 0xf9, 0x01, "QR=0, opcode 0, RD=1");
    assert_eq!(&w[4..6], &[0, 1]);
    let mut question = b"\x08ipv4only\x04arpa\x00".to_vec();
    question.extend_from_slice(&[0, 28, 0, 1]);
    assert_eq!(&w[12..12 + question.len()], &question[..]);
    // Without a trailing dot or with it: the same question.
    assert_eq!(
        aaaa_query("ipv4only.arpa.").unwrap().queries,
        aaaa_query("ipv4only.arpa").unwrap().queries
    );
}

#[test]
fn rfc3596_aaaa_records_of_the_answer() {
    let q = query();
    let m = answer(&q, &wka("64:ff9b::/96"));
    let a = aaaa_answer(&wire(&m), &q).unwrap();
    assert_eq!(a.aaaa, wka("64:ff9b::/96"));
    assert_eq!((a.rcode, a.truncated, a.min_ttl), (0, false, Some(300)));
    // DNS names compare without regard to case (RFC 4343).
    let mut upper = m.clone();
    upper.queries[0].name = name("IPv4Only.ARPA.");
    for r in &mut upper.answers {
        r.name = name("IPV4ONLY.arpa.");
    }
    assert_eq!(
        aaaa_answer(&wire(&upper), &q).unwrap().aaaa,
        wka("64:ff9b::/96")
    );
}

#[test]
fn rfc5452_s9_1_answer_must_match_id_and_question() {
    let q = query();
    let good = answer(&q, &wka("64:ff9b::/96"));
    let mut other_id = good.clone();
    other_id.metadata.id ^= 1;
    assert_eq!(
        aaaa_answer(&wire(&other_id), &q),
        Err(AnswerError::Mismatch)
    );
    let mut other_name = good.clone();
    other_name.queries[0].name = name("example.arpa.");
    assert_eq!(
        aaaa_answer(&wire(&other_name), &q),
        Err(AnswerError::Mismatch)
    );
    let mut type_a = good.clone();
    type_a.queries[0].query_type = RecordType::A;
    assert_eq!(aaaa_answer(&wire(&type_a), &q), Err(AnswerError::Mismatch));
    assert_eq!(
        aaaa_answer(&wire(&q), &q),
        Err(AnswerError::Mismatch),
        "a query is not an answer"
    );
}

#[test]
fn rfc1035_s4_1_1_rcode_and_truncation() {
    let q = query();
    let m = response(&q, ResponseCode::NXDomain, false, 300, &[]);
    let a = aaaa_answer(&wire(&m), &q).unwrap();
    assert_eq!((a.rcode, a.aaaa.len()), (3, 0));
    let m = response(
        &q,
        ResponseCode::NoError,
        true,
        300,
        &wka("64:ff9b::/96")[..1],
    );
    assert!(aaaa_answer(&wire(&m), &q).unwrap().truncated);
}

#[test]
fn rfc1034_s3_6_2_records_of_other_owners_are_ignored_cname_followed() {
    let q = query();
    let mut m = answer(&q, &[]);
    let target = name("x.example.");
    m.answers.push(Record::from_rdata(
        q.queries[0].name.clone(),
        60,
        RData::CNAME(CNAME(target.clone())),
    ));
    m.answers.push(Record::from_rdata(
        name("y.example."),
        60,
        RData::AAAA(AAAA("2001:db8::bad".parse().unwrap())),
    ));
    let ours = wka("64:ff9b::/96")[0];
    m.answers
        .push(Record::from_rdata(target, 30, RData::AAAA(AAAA(ours))));
    let a = aaaa_answer(&wire(&m), &q).unwrap();
    assert_eq!(a.aaaa, vec![ours]);
    assert_eq!(a.min_ttl, Some(30));
}

/// Every truncation and every single-byte corruption of a good answer is an
/// error or an answer, never a panic; a compression-pointer loop is an error.
#[test]
fn malformed_messages_never_panic() {
    let q = query();
    let good = wire(&answer(&q, &wka("64:ff9b::/96")));
    for len in 0..good.len() {
        let _ = aaaa_answer(&good[..len], &q);
    }
    assert!(matches!(
        aaaa_answer(&good[..5], &q),
        Err(AnswerError::Malformed(_))
    ));
    for i in 0..good.len() {
        for v in [0x00, 0x3f, 0xc0, 0xff] {
            let mut m = good.clone();
            m[i] = v;
            let _ = aaaa_answer(&m, &q);
        }
    }
    // The first answer's owner, a pointer to the question name, made to point
    // at itself.
    let owner = 12 + "ipv4only.arpa".len() + 2 + 4;
    assert_eq!(good[owner], 0xc0, "the encoder compresses the owner");
    let mut looped = good.clone();
    looped[owner..owner + 2].copy_from_slice(&[0xc0, owner as u8]);
    assert!(matches!(
        aaaa_answer(&looped, &q),
        Err(AnswerError::Malformed(_))
    ));
}

// --- discovery over the network -----------------------------------------------

/// How the test responder treats each query it receives, in turn.
#[derive(Clone)]
enum Reply {
    /// Say nothing (a lost datagram).
    Drop,
    /// Answer with another ID first, then correctly.
    WrongIdFirst(Vec<Ipv6Addr>),
    /// Answer with these records, this RCODE and TC, and this TTL.
    Records(ResponseCode, bool, u32, Vec<Ipv6Addr>),
}

fn records(r: Vec<Ipv6Addr>) -> Reply {
    Reply::Records(ResponseCode::NoError, false, 300, r)
}

/// A tiny DNS server on a loopback port: a thread that answers the queries it
/// gets as `plan` says, and (for truncation) a TCP listener on the same port.
fn responder(v6: bool, plan: Vec<Reply>, tcp_records: Vec<Ipv6Addr>) -> SocketAddr {
    let ip: IpAddr = if v6 {
        Ipv6Addr::LOCALHOST.into()
    } else {
        Ipv4Addr::LOCALHOST.into()
    };
    let udp = UdpSocket::bind((ip, 0)).unwrap();
    let addr = udp.local_addr().unwrap();
    let tcp = TcpListener::bind(addr).unwrap();
    thread::spawn(move || {
        let mut buf = [0u8; 512];
        for reply in plan {
            let Ok((n, from)) = udp.recv_from(&mut buf) else {
                return;
            };
            let q = Message::from_vec(&buf[..n]).unwrap();
            // The question must be exactly ours.
            assert_eq!(q.queries, query().queries);
            match reply {
                Reply::Drop => {}
                Reply::WrongIdFirst(r) => {
                    let mut stray = answer(&q, &wka("2001:db8:bad::/96"));
                    stray.metadata.id = q.metadata.id.wrapping_add(1);
                    udp.send_to(&wire(&stray), from).unwrap();
                    let good = answer(&q, &r);
                    udp.send_to(&wire(&good), from).unwrap();
                }
                Reply::Records(rcode, tc, ttl, r) => {
                    udp.send_to(&wire(&response(&q, rcode, tc, ttl, &r)), from)
                        .unwrap();
                }
            }
        }
    });
    thread::spawn(move || {
        if let Ok((mut s, _)) = tcp.accept() {
            let mut len = [0u8; 2];
            s.read_exact(&mut len).unwrap();
            let mut q = vec![0u8; usize::from(u16::from_be_bytes(len))];
            s.read_exact(&mut q).unwrap();
            let q = Message::from_vec(&q).unwrap();
            let r = wire(&answer(&q, &tcp_records));
            let mut out = (r.len() as u16).to_be_bytes().to_vec();
            out.extend_from_slice(&r);
            s.write_all(&out).unwrap();
        }
    });
    addr
}

const SHORT: Duration = Duration::from_millis(300);

#[test]
fn rfc7050_s3_prefix_from_a_dns_server_over_udp() {
    for v6 in [true, false] {
        let server = responder(v6, vec![records(wka("2001:db8:64::/96"))], vec![]);
        let found = discover(server, SHORT, 1).unwrap();
        assert_eq!(found.prefixes, vec!["2001:db8:64::/96".parse().unwrap()]);
        assert_eq!(found.ttl, Some(300));
    }
}

#[test]
fn answer_with_another_id_is_ignored() {
    let server = responder(true, vec![Reply::WrongIdFirst(wka("64:ff9b::/96"))], vec![]);
    assert_eq!(
        discover(server, SHORT, 1).unwrap().prefixes,
        vec!["64:ff9b::/96".parse().unwrap()]
    );
}

#[test]
fn lost_query_is_retried_with_a_new_attempt() {
    let server = responder(
        true,
        vec![Reply::Drop, records(wka("2001:db8:64::/64"))],
        vec![],
    );
    assert_eq!(
        discover(server, SHORT, 2).unwrap().prefixes,
        vec!["2001:db8:64::/64".parse().unwrap()]
    );
    let server = responder(true, vec![Reply::Drop, Reply::Drop], vec![]);
    let e = discover(server, SHORT, 2).unwrap_err();
    assert!(
        e.contains("no answer within 300 ms (attempt 2 of 2)"),
        "{e}"
    );
}

#[test]
fn rfc7766_s5_truncated_answer_is_asked_again_over_tcp() {
    let server = responder(
        true,
        vec![Reply::Records(ResponseCode::NoError, true, 300, vec![])],
        wka("2001:db8:122:344::/64"),
    );
    assert_eq!(
        discover(server, SHORT, 1).unwrap().prefixes,
        vec!["2001:db8:122:344::/64".parse().unwrap()]
    );
}

#[test]
fn rfc7050_s3_no_nat64_is_an_error_that_says_why() {
    let server = responder(true, vec![records(vec![])], vec![]);
    let e = discover(server, SHORT, 1).unwrap_err();
    assert!(e.contains("no AAAA record"), "{e}");
    let server = responder(
        true,
        vec![Reply::Records(ResponseCode::NXDomain, false, 300, vec![])],
        vec![],
    );
    let e = discover(server, SHORT, 1).unwrap_err();
    assert!(e.contains("response code 3"), "{e}");
    let server = responder(
        true,
        vec![records(vec!["2001:db8::1".parse().unwrap()])],
        vec![],
    );
    let e = discover(server, SHORT, 1).unwrap_err();
    assert!(e.contains("1 AAAA record(s), none with 192.0.0.170"), "{e}");
}

fn clat(extra: &str) -> Loaded {
    let text = format!(
        "[translator]\nmode = \"clat\"\n{extra}[clat]\nipv6 = \"2001:db8:c1a7::/125\"\n\
         plat_prefix = \"discover\"\n"
    );
    sixgate_config::parse(&text, "t.toml").unwrap()
}

fn with_server(mut l: Loaded, server: SocketAddr) -> Loaded {
    if let Some(c) = &mut l.clat
        && let PlatPrefix::Discover { dns_server, .. } = &mut c.plat_prefix
    {
        *dns_server = Some(server);
    }
    l
}

#[test]
fn settle_uses_the_discovered_prefix_over_the_fallback() {
    let server = responder(true, vec![records(wka("2001:db8:64::/96"))], vec![]);
    let mut l = with_server(clat("pool6 = \"64:ff9b::/96\"\n"), server);
    let settled = settle_with(&mut l, SHORT, 1).unwrap();
    let p: Rfc6052Prefix = "2001:db8:64::/96".parse().unwrap();
    assert_eq!(l.config.map.pool6, Some(p));
    assert_eq!(
        l.config.icmp_source_v6,
        "2001:db8:64::c000:8".parse::<Ipv6Addr>().unwrap()
    );
    assert_eq!(
        settled,
        Some(Settled {
            server,
            prefix: p,
            ttl: Some(300)
        })
    );
}

#[test]
fn settle_falls_back_or_fails_clearly() {
    // Nobody answers on this port: the fallback is used, and refreshed later.
    let silent = UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)).unwrap();
    let server = silent.local_addr().unwrap();
    let mut l = with_server(clat("pool6 = \"64:ff9b::/96\"\n"), server);
    let settled = settle_with(&mut l, SHORT, 1).unwrap().unwrap();
    assert_eq!(l.config.map.pool6, Some("64:ff9b::/96".parse().unwrap()));
    assert_eq!(settled.ttl, None);

    let mut l = with_server(clat(""), server);
    let e = settle_with(&mut l, SHORT, 1).unwrap_err();
    assert!(
        e.contains("RFC 7050 discovery of the PLAT prefix failed"),
        "{e}"
    );
    assert!(e.contains("no fallback: set [translator] pool6"), "{e}");
    assert_eq!(l.config.map.pool6, None);
}

#[test]
fn static_prefix_and_other_modes_have_nothing_to_settle() {
    let mut l = sixgate_config::parse(
        "[translator]\nmode = \"clat\"\npool6 = \"64:ff9b::/96\"\n[clat]\nipv6 = \"2001:db8:c1a7::/125\"\n",
        "t.toml",
    )
    .unwrap();
    assert_eq!(settle_plat_prefix(&mut l), Ok(None));
}

#[test]
fn resolv_conf_first_nameserver() {
    let text = "# comment\nsearch example\nnameserver fe80::1%eth0\nnameserver 2001:db8::53\nnameserver 192.0.2.53\n";
    assert_eq!(
        first_nameserver(text),
        Some("[2001:db8::53]:53".parse().unwrap())
    );
    assert_eq!(
        first_nameserver("nameserver 192.0.2.53"),
        Some("192.0.2.53:53".parse().unwrap())
    );
    assert_eq!(first_nameserver("options ndots:1\n"), None);
}

// --- RFC 7050 §3: refresh -------------------------------------------------------

#[test]
fn rfc7050_s3_refresh_before_the_ttl_runs_out() {
    // 10 s ahead of the TTL; half a short TTL; never under a second; retry
    // after a failure.
    assert_eq!(refresh_in(Some(300)), Duration::from_secs(290));
    assert_eq!(refresh_in(Some(11)), Duration::from_millis(5500));
    assert_eq!(refresh_in(Some(2)), Duration::from_secs(1));
    assert_eq!(refresh_in(Some(0)), MIN_REFRESH);
    assert_eq!(refresh_in(None), RETRY);
    for ttl in [1, 2, 20, 86_400] {
        assert!(
            refresh_in(Some(ttl))
                < Duration::from_secs(u64::from(ttl)).max(MIN_REFRESH + Duration::from_millis(1))
        );
    }
}

#[test]
fn rfc7050_s3_refresh_follows_a_changed_prefix() {
    let old = "2001:db8:64::/96";
    let new = "2001:db8:65::/96";
    // The second answer keeps the prefix, the third changes it, then it stays.
    let server = responder(
        true,
        vec![
            Reply::Records(ResponseCode::NoError, false, 1, wka(old)),
            Reply::Records(ResponseCode::NoError, false, 1, wka(new)),
            Reply::Records(ResponseCode::NoError, false, 1, wka(new)),
        ],
        vec![],
    );
    let settled = Settled {
        server,
        prefix: old.parse().unwrap(),
        ttl: Some(1),
    };
    let (tx, rx) = mpsc::channel();
    let fast = |_: Option<u32>| Duration::from_millis(50);
    let r = Refresher::spawn_with(settled, SHORT, 1, fast, move |p| {
        tx.send(p).unwrap();
        Ok(())
    })
    .unwrap();
    let applied = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(applied, new.parse().unwrap());
    drop(r);
    assert!(rx.try_recv().is_err(), "one change, applied once");
}

#[test]
fn rfc7050_s3_failed_refresh_keeps_the_prefix() {
    let silent = UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)).unwrap();
    let settled = Settled {
        server: silent.local_addr().unwrap(),
        prefix: "64:ff9b::/96".parse().unwrap(),
        ttl: Some(1),
    };
    let (tx, rx) = mpsc::channel();
    let fast = |_: Option<u32>| Duration::from_millis(20);
    let r = Refresher::spawn_with(settled, Duration::from_millis(50), 1, fast, move |p| {
        tx.send(p).unwrap();
        Ok(())
    })
    .unwrap();
    assert!(rx.recv_timeout(Duration::from_millis(400)).is_err());
    drop(r);
}
