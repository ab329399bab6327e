//! Fuzz-style robustness of the query path (RFC 1035 §4.1 parsing, RFC 6147
//! server behaviour on bad input): random datagrams, and valid queries with bytes
//! overwritten and cut short, go through `Handler::handle` (`Handler::begin`,
//! the checks and the cache, then `Handler::resolve` for a miss). Nothing may panic; every datagram is counted; a reply is
//! always a parsable response with the query's ID; a datagram without a full
//! header, or one that is a response, is dropped (`dropped_malformed`); a FORMERR
//! reply is counted as `formerr`. The upstream is a closed port with a 10 ms
//! timeout, so the few inputs that are valid queries end in SERVFAIL quickly.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};
use proptest::collection::vec;
use proptest::prelude::*;
use sixgate_config::Dns64Settings;
use sixgate_dns64::Stats;
use sixgate_dns64::resolve::{Handler, Transport};

const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn handler() -> Handler {
    let settings = Dns64Settings {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        // Port 9 (discard): nothing listens on loopback in the test process.
        upstream: vec!["127.0.0.1:9".parse().unwrap()],
        prefixes: vec!["64:ff9b::/96".parse().unwrap()],
        exclude: vec!["::ffff:0:0/96".parse().unwrap()],
        exclude_ipv4: vec![],
        acl: vec!["127.0.0.0/8".parse().unwrap()],
        cache_size: 100,
        max_ttl: 3600,
        upstream_timeout_ms: 10,
        upstream_attempts: 1,
    };
    Handler::new(&settings, Arc::new(Stats::default()))
}

fn valid_query(name: &str, t: RecordType) -> Vec<u8> {
    let mut m = Message::new(0x4242, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.queries
        .push(Query::query(Name::from_ascii(name).unwrap(), t));
    m.to_vec().unwrap()
}

/// One datagram through the handler, with the checks of the module doc.
fn check(h: &Handler, rt: &tokio::runtime::Runtime, wire: &[u8], transport: Transport) {
    let before = h.stats().snapshot();
    let reply = rt.block_on(h.handle(wire, CLIENT, transport));
    let after = h.stats().snapshot();
    assert_eq!(
        after.queries,
        before.queries + 1,
        "every datagram is counted"
    );
    let headerless = wire.len() < 12 || wire[2] & 0x80 != 0;
    match reply {
        None => assert_eq!(
            after.dropped_malformed,
            before.dropped_malformed + 1,
            "an unanswered datagram is a counted drop: {wire:02x?}"
        ),
        Some(bytes) => {
            assert!(!headerless, "no header (or a response), yet answered");
            let m = Message::from_vec(&bytes).expect("our reply parses");
            assert_eq!(m.metadata.message_type, MessageType::Response);
            assert_eq!(m.metadata.id, u16::from_be_bytes([wire[0], wire[1]]));
            if transport == Transport::Udp {
                assert!(bytes.len() <= 4096, "{} bytes over UDP", bytes.len());
            }
            if m.metadata.response_code == ResponseCode::FormErr {
                assert_eq!(after.formerr, before.formerr + 1, "FORMERR is counted");
            }
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// RFC 1035 §4.1: arbitrary bytes are parsed, answered FORMERR or dropped.
    #[test]
    fn random_datagrams_never_panic(wire in vec(any::<u8>(), 0..700), tcp in any::<bool>()) {
        thread_local! {
            static BED: (Handler, tokio::runtime::Runtime) = (handler(), runtime());
        }
        let transport = if tcp { Transport::Tcp } else { Transport::Udp };
        BED.with(|(h, rt)| check(h, rt, &wire, transport));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Valid queries (AAAA, A, PTR, ipv4only.arpa) with bytes overwritten and the
    /// end cut off: deeper into the parser than random bytes get.
    #[test]
    fn mutated_queries_never_panic(
        which in 0usize..4,
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        thread_local! {
            static BED: (Handler, tokio::runtime::Runtime) = (handler(), runtime());
        }
        let mut wire = match which {
            0 => valid_query("a.example.", RecordType::AAAA),
            1 => valid_query("a.example.", RecordType::A),
            2 => valid_query("7.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.b.9.f.f.4.6.0.0.ip6.arpa.", RecordType::PTR),
            _ => valid_query("ipv4only.arpa.", RecordType::AAAA),
        };
        for (at, byte) in edits {
            let i = at.index(wire.len());
            wire[i] = byte;
        }
        if truncate {
            wire.truncate(cut.index(wire.len() + 1));
        }
        BED.with(|(h, rt)| check(h, rt, &wire, Transport::Udp));
    }
}
