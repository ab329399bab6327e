//! One query in, one reply out: checks (RFC 1035 format, ACL), the cache, the
//! local names (`ipv4only.arpa`, PTR under the prefixes) and the RFC 6147 §5.1
//! AAAA path; everything else is forwarded unchanged.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::CNAME;
use hickory_proto::rr::{DNSClass, RData, Record, RecordType};
use ipnet::IpNet;
use sixgate_config::Dns64Settings;

use crate::cache::{Cache, Hit, Key};
use crate::stats::Stats;
use crate::synth::{AaaaOutcome, Policy, classify_aaaa, synthesize};
use crate::upstream::{EDNS_PAYLOAD, Exchange, Upstream};
use crate::{ipv4only, ptr};

/// How the query came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A datagram: the reply must fit the client's size (512, or its EDNS size).
    Udp,
    /// A TCP stream: any size up to 65535.
    Tcp,
}

/// Minimum UDP reply size every client takes (RFC 1035 §4.2.1).
const PLAIN_UDP_SIZE: usize = 512;

/// What [`Handler::begin`] made of a query.
// Not boxed: a `Step` lives for a moment, and a miss's `Pending` moves into its
// task anyway; a box would be one more allocation per miss.
#[allow(clippy::large_enum_variant)]
pub enum Step {
    /// Send this now (`None`: nothing, the datagram was dropped).
    Done(Option<Vec<u8>>),
    /// A cache miss: [`Handler::resolve`] it (in a task of its own, so a slow
    /// upstream holds up nobody else).
    Resolve(Pending),
}

/// A parsed query waiting for the resolvers.
pub struct Pending {
    request: Message,
    key: Key,
}

/// The query handler shared by every listener.
pub struct Handler {
    policy: Policy,
    acl: Vec<IpNet>,
    cache: Cache,
    upstream: Upstream,
    stats: Arc<Stats>,
}

impl Handler {
    /// A handler for `settings`, counting into `stats`.
    pub fn new(settings: &Dns64Settings, stats: Arc<Stats>) -> Handler {
        Handler {
            policy: Policy {
                prefixes: settings.prefixes.clone(),
                exclude: settings.exclude.clone(),
                exclude_ipv4: settings.exclude_ipv4.clone(),
            },
            acl: settings.acl.clone(),
            cache: Cache::new(settings.cache_size, settings.max_ttl),
            upstream: Upstream::new(
                settings.upstream.clone(),
                Duration::from_millis(u64::from(settings.upstream_timeout_ms)),
                settings.upstream_attempts,
                stats.clone(),
            ),
            stats,
        }
    }

    /// The counters.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// The reply to the query `wire` from `client`, or `None` to send nothing
    /// (a datagram too broken to answer, counted): [`Handler::begin`], then
    /// [`Handler::resolve`] if it has to wait for the resolvers.
    pub async fn handle(
        &self,
        wire: &[u8],
        client: IpAddr,
        transport: Transport,
    ) -> Option<Vec<u8>> {
        match self.begin(wire, client, transport) {
            Step::Done(reply) => reply,
            Step::Resolve(pending) => self.resolve(pending, transport).await,
        }
    }

    /// Everything about the query `wire` that needs no waiting: the checks
    /// (bad input, opcode, ACL) and the cache. A listener sends what comes back
    /// as [`Step::Done`] at once, without a task; only a cache miss is left for
    /// [`Handler::resolve`], with the query parsed once.
    pub fn begin(&self, wire: &[u8], client: IpAddr, transport: Transport) -> Step {
        self.stats.queries();
        // Without a full header there is no ID to answer to; a response is
        // never answered (that way lie loops).
        if wire.len() < 12 || wire[2] & 0x80 != 0 {
            self.stats.dropped_malformed();
            return Step::Done(None);
        }
        // The common case first: a plain question whose reply is cached in
        // wire form is answered without parsing the query into a Message.
        if let Some((key, variant)) = wire_question(wire)
            && self.acl.iter().any(|n| n.contains(&client.to_canonical()))
            && let Some(mut bytes) = self.cache.encoded(&key, Instant::now(), variant)
            && patch_encoded(&mut bytes, wire)
        {
            self.stats.cache_hits();
            return Step::Done(Some(bytes));
        }
        let id = u16::from_be_bytes([wire[0], wire[1]]);
        let formerr = || {
            self.stats.formerr();
            Step::Done(encode_plain(Message::error_msg(
                id,
                OpCode::Query,
                ResponseCode::FormErr,
            )))
        };
        let request = match Message::from_vec(wire) {
            Ok(m) => m,
            Err(_) => return formerr(),
        };
        if request.metadata.op_code != OpCode::Query {
            return Step::Done(encode_plain(Message::error_msg(
                id,
                request.metadata.op_code,
                ResponseCode::NotImp,
            )));
        }
        if request.queries.len() != 1 || request.metadata.message_type != MessageType::Query {
            return formerr();
        }
        // A dual-stack socket shows IPv4 clients as ::ffff:a.b.c.d; the ACL says a.b.c.d.
        let client = client.to_canonical();
        if !self.acl.iter().any(|n| n.contains(&client)) {
            self.stats.refused();
            let mut m = Message::error_msg(id, OpCode::Query, ResponseCode::Refused);
            m.queries = request.queries.clone();
            return Step::Done(self.finish(&request, m, transport));
        }
        let key = cache_key(&request);
        if let Some(reply) = self.cached(wire, &request, &key, transport) {
            self.stats.cache_hits();
            return Step::Done(Some(reply));
        }
        self.stats.cache_misses();
        Step::Resolve(Pending { request, key })
    }

    /// The reply to a query [`Handler::begin`] could not answer from the cache.
    pub async fn resolve(&self, pending: Pending, transport: Transport) -> Option<Vec<u8>> {
        let Pending { request, key } = pending;
        let reply = self.answer(&request, key).await;
        self.finish(&request, reply, transport)
    }

    /// The cached reply to `request` (`wire` as received), encoded.
    fn cached(
        &self,
        wire: &[u8],
        request: &Message,
        key: &Key,
        transport: Transport,
    ) -> Option<Vec<u8>> {
        // The reply's OPT depends on whether the query had one, and its DO bit.
        let variant = match &request.edns {
            None => 0,
            Some(e) => 1 | (u8::from(e.flags().dnssec_ok) << 1),
        };
        match self.cache.hit(key, Instant::now(), variant)? {
            Hit::Encoded(mut bytes) => {
                // The question bytes differ in more than case (a compressed
                // question, say): encode afresh.
                if patch_encoded(&mut bytes, wire) {
                    return Some(bytes);
                }
                let reply = self.cache.get(key, Instant::now())?;
                self.finish(request, reply, transport)
            }
            Hit::Reply { reply, age } => {
                let bytes = self.finish(request, reply, transport)?;
                // Only replies that fit any client's datagram (512 bytes) are
                // kept encoded: bigger ones depend on the client's size, and a
                // truncated one (TC, byte 2) only suits clients over UDP
                // with as small a size.
                if bytes.len() <= PLAIN_UDP_SIZE && bytes[2] & 0x02 == 0 {
                    self.cache.remember(key, age, variant, &bytes);
                }
                Some(bytes)
            }
        }
    }

    /// Set the header and OPT of `reply` for `request`, encode it, and truncate
    /// it to the client's datagram size.
    fn finish(
        &self,
        request: &Message,
        mut reply: Message,
        transport: Transport,
    ) -> Option<Vec<u8>> {
        reply.metadata.id = request.metadata.id;
        // The question as the client wrote it (its letter case too, RFC 4343 §4;
        // DNS 0x20 clients check it).
        reply.queries = request.queries.clone();
        // Header bits of a reply to this request (RFC 1035 §4.1.1, RFC 4035 §3.2).
        reply.metadata.message_type = MessageType::Response;
        reply.metadata.op_code = OpCode::Query;
        reply.metadata.recursion_desired = request.metadata.recursion_desired;
        reply.metadata.recursion_available = true;
        reply.metadata.checking_disabled = request.metadata.checking_disabled;
        reply.metadata.truncation = false;
        let client_do = request.edns.as_ref().is_some_and(|e| e.flags().dnssec_ok);
        // RFC 6891 §6.1.1: an OPT in the request gets one in the reply; none otherwise.
        reply.edns = request.edns.as_ref().map(|_| {
            let mut e = Edns::new();
            e.set_max_payload(EDNS_PAYLOAD);
            e.set_dnssec_ok(client_do);
            e
        });
        let limit = match (transport, &request.edns) {
            (Transport::Tcp, _) => usize::from(u16::MAX),
            (Transport::Udp, None) => PLAIN_UDP_SIZE,
            (Transport::Udp, Some(e)) => usize::from(e.max_payload().clamp(512, EDNS_PAYLOAD)),
        };
        let bytes = reply.to_vec().ok()?;
        if bytes.len() <= limit {
            return Some(bytes);
        }
        // RFC 2181 §9: too big for the datagram; say so and let the client retry
        // over TCP.
        self.stats.truncated();
        let mut t = reply.truncate();
        t.metadata.authentic_data = false;
        t.to_vec().ok()
    }

    /// The reply to a well-formed query from an allowed client, not in the
    /// cache; it goes into the cache.
    async fn answer(&self, request: &Message, key: Key) -> Message {
        let q = &request.queries[0];
        let dnssec_ok = request.edns.as_ref().is_some_and(|e| e.flags().dnssec_ok);
        let cd = request.metadata.checking_disabled;
        let now = Instant::now();
        let mut up = self.upstream.exchange();
        let reply = if ipv4only::is_ipv4only(&q.name) {
            // A local, fixed answer: not cached, so its TTL never ages
            // (RFC 8880 §7.2 gives the records fixed contents).
            self.stats.ipv4only();
            return ipv4only::answer(q, &self.policy);
        } else if q.query_class == DNSClass::IN
            && q.query_type == RecordType::AAAA
            && !(cd && dnssec_ok)
        {
            // RFC 6147 §5.5: with CD and DO both set the client validates, and
            // synthesized data would fail its validation: no synthesis.
            self.aaaa(&mut up, q, dnssec_ok, cd).await
        } else if let Some(target) = (q.query_type == RecordType::PTR)
            .then(|| ptr::cname_target(&q.name, &self.policy))
            .flatten()
        {
            self.ptr(&mut up, q, target, dnssec_ok, cd).await
        } else {
            match up.ask(q, dnssec_ok, cd).await {
                Ok(m) => m,
                Err(_) => self.servfail(q),
            }
        };
        self.cache.put(key, &reply, now);
        reply
    }

    fn servfail(&self, q: &Query) -> Message {
        self.stats.servfail();
        let mut m = Message::error_msg(0, OpCode::Query, ResponseCode::ServFail);
        m.queries.push(q.clone());
        m
    }

    /// RFC 6147 §5.1: AAAA first; A and synthesis only without usable AAAA.
    async fn aaaa(&self, up: &mut Exchange<'_>, q: &Query, dnssec_ok: bool, cd: bool) -> Message {
        // §5.1.3: no answer (timeout or failure) counts as RCODE 2, which §5.1.2
        // treats as NODATA.
        let answer = up.ask(q, dnssec_ok, cd).await.ok();
        let (nodata, soa_ttl) = match classify_aaaa(answer, &self.policy) {
            AaaaOutcome::Answer(m) | AaaaOutcome::NameError(m) => return m,
            AaaaOutcome::Synthesize { nodata, soa_ttl } => (nodata, soa_ttl),
        };
        let a_query = Query::query(q.name.clone(), RecordType::A);
        let a = match up.ask(&a_query, dnssec_ok, cd).await {
            Ok(a) => a,
            Err(_) => return nodata.unwrap_or_else(|| self.servfail(q)),
        };
        let (reply, made) = synthesize(q, a, nodata, soa_ttl, &self.policy);
        if made > 0 {
            self.stats.synthesized();
        }
        reply
    }

    /// RFC 6147 §5.3.1: a CNAME to the in-addr.arpa name, and what it leads to.
    async fn ptr(
        &self,
        up: &mut Exchange<'_>,
        q: &Query,
        target: hickory_proto::rr::Name,
        dnssec_ok: bool,
        cd: bool,
    ) -> Message {
        self.stats.ptr_synthesized();
        let cname = Record::from_rdata(
            q.name.clone(),
            ptr::CNAME_TTL,
            RData::CNAME(CNAME(target.clone())),
        );
        let chase = Query::query(target, RecordType::PTR);
        let mut m = match up.ask(&chase, dnssec_ok, cd).await {
            Ok(m) => m,
            Err(_) => {
                let mut m = Message::error_msg(0, OpCode::Query, ResponseCode::NoError);
                m.metadata.response_code = ResponseCode::ServFail;
                m
            }
        };
        m.queries = vec![q.clone()];
        m.answers.insert(0, cname);
        m.metadata.authentic_data = false;
        m
    }
}

/// Turn a remembered encoded reply into the reply to the query `wire`: its ID,
/// its RD and CD bits, its question bytes (same name up to case, so same length;
/// a query's question is never compressed). `false` if the two questions do not
/// line up, and the slow path must answer.
fn patch_encoded(reply: &mut [u8], wire: &[u8]) -> bool {
    // The question: labels from offset 12 to the root, then type and class.
    let mut i = 12;
    while let Some(&len) = wire.get(i) {
        if len == 0 {
            break;
        }
        if len & 0xc0 != 0 {
            return false;
        }
        i += 1 + usize::from(len);
    }
    let end = i + 1 + 4;
    if end > wire.len() || end > reply.len() || !reply[12..end].eq_ignore_ascii_case(&wire[12..end])
    {
        return false;
    }
    reply[12..end].copy_from_slice(&wire[12..end]);
    reply[0] = wire[0];
    reply[1] = wire[1];
    reply[2] = (reply[2] & !0x01) | (wire[2] & 0x01);
    reply[3] = (reply[3] & !0x10) | (wire[3] & 0x10);
    true
}

/// The cache key and OPT variant of a plain query read straight from its wire
/// form (RFC 1035 §4.1): QR=0, opcode QUERY, one uncompressed question, no
/// answer or authority records, at most one OPT (RFC 6891 §6.1.2, version 0).
/// Anything else is `None` and takes the full parse.
fn wire_question(wire: &[u8]) -> Option<(Key, u8)> {
    let h = wire.get(..12)?;
    let count = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
    if h[2] & 0xf8 != 0 || count(4) != 1 || count(6) != 0 || count(8) != 0 || count(10) > 1 {
        return None;
    }
    let mut i = 12;
    loop {
        let len = *wire.get(i)?;
        if len & 0xc0 != 0 {
            return None;
        }
        i += 1 + usize::from(len);
        if len == 0 {
            break;
        }
    }
    let name = wire.get(12..i)?;
    let q = wire.get(i..i + 4)?;
    let (qtype, qclass) = (
        u16::from_be_bytes([q[0], q[1]]),
        u16::from_be_bytes([q[2], q[3]]),
    );
    i += 4;
    let dnssec_ok = if count(10) == 1 {
        // Root name, type 41, payload size, extended RCODE, version, flags (DO
        // is the top bit), RDLENGTH, options.
        let opt = wire.get(i..i + 11)?;
        let rdlen = usize::from(u16::from_be_bytes([opt[9], opt[10]]));
        if opt[0] != 0 || opt[1..3] != [0, 41] || opt[6] != 0 || i + 11 + rdlen != wire.len() {
            return None;
        }
        Some(opt[7] & 0x80 != 0)
    } else if i == wire.len() {
        None
    } else {
        return None;
    };
    let variant = dnssec_ok.map_or(0, |d| 1 | (u8::from(d) << 1));
    let key = Key::from_wire(
        name,
        qtype,
        qclass,
        dnssec_ok.unwrap_or(false),
        h[3] & 0x10 != 0,
    );
    Some((key, variant))
}

/// The cache key of a request: its question and its DO and CD bits.
fn cache_key(request: &Message) -> Key {
    let dnssec_ok = request.edns.as_ref().is_some_and(|e| e.flags().dnssec_ok);
    Key::new(
        &request.queries[0],
        dnssec_ok,
        request.metadata.checking_disabled,
    )
}

fn encode_plain(m: Message) -> Option<Vec<u8>> {
    m.to_vec().ok()
}

#[cfg(test)]
mod tests {
    use hickory_proto::rr::Name;

    use super::*;

    fn wire(id: u16, name: &str, rd: bool, cd: bool, response: bool) -> Vec<u8> {
        let kind = if response {
            MessageType::Response
        } else {
            MessageType::Query
        };
        let mut m = Message::new(id, kind, OpCode::Query);
        m.metadata.recursion_desired = rd;
        m.metadata.checking_disabled = cd;
        m.queries.push(Query::query(
            Name::from_ascii(name).unwrap(),
            RecordType::AAAA,
        ));
        m.to_vec().unwrap()
    }

    /// RFC 1035 §4.1 / RFC 6891 §6.1.2: the fast path reads the same cache key
    /// (case-blind name, type, class, DO, CD) and OPT variant as the full parse,
    /// and leaves to it everything that is not a plain query.
    #[test]
    fn rfc1035_s4_1_wire_question_matches_the_parsed_key() {
        for (edns, dnssec_ok, cd) in [
            (false, false, false),
            (true, false, true),
            (true, true, false),
        ] {
            let mut m = Message::from_vec(&wire(7, "MiXeD.Example.", true, cd, false)).unwrap();
            if edns {
                let mut e = Edns::new();
                e.set_max_payload(1232);
                e.set_dnssec_ok(dnssec_ok);
                m.edns = Some(e);
            }
            let bytes = m.to_vec().unwrap();
            let parsed = Message::from_vec(&bytes).unwrap();
            let (key, variant) = wire_question(&bytes).expect("a plain query");
            assert_eq!(
                key,
                cache_key(&parsed),
                "edns {edns} do {dnssec_ok} cd {cd}"
            );
            let want = if edns {
                1 | (u8::from(dnssec_ok) << 1)
            } else {
                0
            };
            assert_eq!(variant, want);
        }
        let plain = wire(7, "a.example.", true, false, false);
        assert!(
            wire_question(&wire(7, "a.example.", true, false, true)).is_none(),
            "a response"
        );
        assert!(
            wire_question(&plain[..plain.len() - 1]).is_none(),
            "cut short"
        );
        let mut trailing = plain.clone();
        trailing.push(0);
        assert!(wire_question(&trailing).is_none(), "trailing bytes");
        let mut notify = plain.clone();
        notify[2] |= 4 << 3;
        assert!(wire_question(&notify).is_none(), "opcode NOTIFY");
        let mut compressed = plain;
        compressed[12] = 0xc0;
        assert!(
            wire_question(&compressed).is_none(),
            "a compression pointer"
        );
    }

    #[test]
    fn rfc4343_s4_remembered_reply_takes_the_query_id_bits_and_case() {
        let mut reply = wire(1, "a.example.", true, false, true);
        let query = wire(0xbeef, "A.eXample.", false, true, false);
        assert!(patch_encoded(&mut reply, &query));
        let m = Message::from_vec(&reply).unwrap();
        assert_eq!(m.metadata.id, 0xbeef);
        assert_eq!(m.metadata.message_type, MessageType::Response);
        assert!(!m.metadata.recursion_desired && m.metadata.checking_disabled);
        assert_eq!(m.queries[0].name.to_ascii(), "A.eXample.");
        // Another name never passes for this one.
        let other = wire(2, "b.example.", true, false, false);
        assert!(!patch_encoded(&mut reply, &other));
    }
}
