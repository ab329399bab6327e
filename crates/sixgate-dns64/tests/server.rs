//! The server on loopback against a scripted upstream (no root needed): synthesis
//! end to end, forged upstream answers ignored, cache hits, bad input, TCP.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::{A, SOA};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use sixgate_config::Dns64Settings;
use sixgate_dns64::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

/// An upstream that answers `a.example.` with A 192.0.2.1 and no AAAA (and
/// `big.example.` with 40 A records), and
/// before every real answer sends one with the wrong ID (a spoofing attempt).
async fn scripted_upstream() -> SocketAddr {
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = sock.local_addr().unwrap();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        loop {
            let (n, peer) = sock.recv_from(&mut buf).await.unwrap();
            let q = Message::from_vec(&buf[..n]).unwrap();
            let mut r = Message::response(q.metadata.id, OpCode::Query);
            r.queries = q.queries.clone();
            let query = &q.queries[0];
            // `big.example.` has 40 A records: 40 synthesized AAAA are 1.2 KB.
            let count = if query.name.to_ascii() == "big.example." {
                40
            } else {
                1
            };
            match query.query_type {
                RecordType::A => r.answers.extend((1..=count).map(|i| {
                    Record::from_rdata(
                        query.name.clone(),
                        300,
                        RData::A(A(Ipv4Addr::new(192, 0, 2, i))),
                    )
                })),
                _ => r.authorities.push(Record::from_rdata(
                    Name::from_ascii("example.").unwrap(),
                    3600,
                    RData::SOA(SOA::new(
                        Name::from_ascii("ns.example.").unwrap(),
                        Name::from_ascii("h.example.").unwrap(),
                        1,
                        1,
                        1,
                        1,
                        120,
                    )),
                )),
            }
            let mut forged = r.clone();
            forged.metadata.id = r.metadata.id.wrapping_add(1);
            sock.send_to(&forged.to_vec().unwrap(), peer).await.unwrap();
            sock.send_to(&r.to_vec().unwrap(), peer).await.unwrap();
        }
    });
    addr
}

fn settings(upstream: SocketAddr) -> Dns64Settings {
    Dns64Settings {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        upstream: vec![upstream],
        prefixes: vec!["64:ff9b::/96".parse().unwrap()],
        exclude: vec!["::ffff:0:0/96".parse().unwrap()],
        exclude_ipv4: vec![],
        acl: vec!["127.0.0.0/8".parse().unwrap()],
        cache_size: 100,
        max_ttl: 3600,
        upstream_timeout_ms: 500,
        upstream_attempts: 2,
    }
}

fn query(name: &str, t: RecordType) -> Vec<u8> {
    let mut m = Message::new(0x4242, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.queries
        .push(Query::query(Name::from_ascii(name).unwrap(), t));
    m.to_vec().unwrap()
}

async fn ask_udp(server: SocketAddr, wire: &[u8]) -> Option<Vec<u8>> {
    let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    s.send_to(wire, server).await.unwrap();
    let mut buf = vec![0u8; 65535];
    match tokio::time::timeout(Duration::from_millis(300), s.recv(&mut buf)).await {
        Ok(Ok(n)) => Some(buf[..n].to_vec()),
        _ => None,
    }
}

/// One query over TCP (RFC 1035 §4.2.2: a two-byte length first); the reply.
async fn ask_tcp(server: SocketAddr, wire: &[u8]) -> Vec<u8> {
    let mut tcp = TcpStream::connect(server).await.unwrap();
    tcp.write_all(&(wire.len() as u16).to_be_bytes())
        .await
        .unwrap();
    tcp.write_all(wire).await.unwrap();
    let len = tcp.read_u16().await.unwrap();
    let mut buf = vec![0u8; usize::from(len)];
    tcp.read_exact(&mut buf).await.unwrap();
    buf
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synthesizes_ignores_forgeries_caches_and_refuses_bad_input() {
    let upstream = scripted_upstream().await;
    let server = Server::start(&settings(upstream)).await.unwrap();
    let at = server.local_addrs()[0];

    let reply = ask_udp(at, &query("a.example.", RecordType::AAAA))
        .await
        .unwrap();
    let m = Message::from_vec(&reply).unwrap();
    assert_eq!(m.metadata.id, 0x4242);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(m.answers.len(), 1);
    match &m.answers[0].data {
        RData::AAAA(a) => assert_eq!(a.0.to_string(), "64:ff9b::c000:201"),
        d => panic!("{d:?}"),
    }
    assert_eq!(
        m.answers[0].ttl, 120,
        "RFC 6147 §5.1.7: min(A 300, SOA 120)"
    );

    // Again, from the cache (the upstream is not asked), twice: the second time
    // from the remembered encoding, patched to this query's ID and letter case.
    let again = ask_udp(at, &query("A.Example.", RecordType::AAAA))
        .await
        .unwrap();
    let again = Message::from_vec(&again).unwrap();
    assert_eq!(again.answers.len(), 1);
    assert_eq!(
        again.queries[0].name.to_ascii(),
        "A.Example.",
        "RFC 4343 §4"
    );
    let mut q = query("a.EXAMPLE.", RecordType::AAAA);
    q[0..2].copy_from_slice(&[0x99, 0x01]);
    q[2] &= !0x01; // RD off
    let third = Message::from_vec(&ask_udp(at, &q).await.unwrap()).unwrap();
    assert_eq!(third.metadata.id, 0x9901);
    assert!(!third.metadata.recursion_desired);
    assert_eq!(third.queries[0].name.to_ascii(), "a.EXAMPLE.");
    assert_eq!(third.answers, again.answers);

    // Over TCP.
    let buf = ask_tcp(at, &query("a.example.", RecordType::A)).await;
    assert_eq!(Message::from_vec(&buf).unwrap().answers.len(), 1);

    // Bad input: too short for a header, dropped; a header promising a question
    // that is not there, FORMERR; a response, dropped.
    assert_eq!(ask_udp(at, b"\x01\x02\x03").await, None);
    let formerr = ask_udp(at, &[0xab, 0xcd, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0])
        .await
        .unwrap();
    let f = Message::from_vec(&formerr).unwrap();
    assert_eq!(
        (f.metadata.id, f.metadata.response_code),
        (0xabcd, ResponseCode::FormErr)
    );
    let mut response = query("a.example.", RecordType::A);
    response[2] |= 0x80;
    assert_eq!(ask_udp(at, &response).await, None);

    let s = server.stats().snapshot();
    assert_eq!(s.synthesized, 1);
    assert_eq!(s.cache_hits, 2, "{s:?}");
    assert_eq!(s.upstream_queries, 3, "AAAA, A, then A for TCP");
    assert_eq!(s.upstream_mismatched, 3, "every forged answer ignored");
    assert_eq!(s.formerr, 1);
    assert_eq!(s.dropped_malformed, 2);
    assert_eq!(s.latency.iter().sum::<u64>(), 3);
    server.shutdown();
}

/// RFC 2181 §9: a reply too big for a client's datagram goes out truncated (TC,
/// question only), and stays so for the next such client from the cache; a
/// client asking over TCP then gets every record, not the remembered truncation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rfc2181_s9_truncated_replies_are_not_served_over_tcp_from_the_cache() {
    let upstream = scripted_upstream().await;
    let server = Server::start(&settings(upstream)).await.unwrap();
    let at = server.local_addrs()[0];
    let q = query("big.example.", RecordType::AAAA);
    for _ in 0..2 {
        let udp = Message::from_vec(&ask_udp(at, &q).await.unwrap()).unwrap();
        assert!(udp.metadata.truncation && udp.answers.is_empty(), "{udp:?}");
    }
    let full = Message::from_vec(&ask_tcp(at, &q).await).unwrap();
    assert!(!full.metadata.truncation);
    assert_eq!(full.answers.len(), 40);
    let s = server.stats().snapshot();
    assert_eq!(s.cache_hits, 2, "{s:?}");
    assert_eq!(s.truncated, 2, "{s:?}");
    server.shutdown();
}
