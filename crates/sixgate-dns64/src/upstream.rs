//! Forwarding to the configured resolvers: UDP first, TCP when the UDP answer
//! comes back truncated (RFC 7766 §5). Each client query talks to the
//! resolvers through an [`Exchange`]: one fresh socket per address family,
//! whose random source port the kernel picks when it first sends (RFC 5452
//! §9.2), shared by that query's questions (AAAA, then A; a PTR chase) and
//! closed with it. Every question gets a random ID, and only an answer from the
//! server asked, with that ID and the same question, is taken (RFC 5452 §4.1,
//! the basics against cache poisoning). A question is tried at most `attempts`
//! times, each on the next resolver and each bounded by `timeout`, so a client
//! hears SERVFAIL within `attempts × timeout`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use tokio::time::timeout_at;

use crate::stats::Stats;

/// Our EDNS UDP payload size toward resolvers and clients: the DNS Flag Day
/// 2020 value, which avoids IP fragmentation on common paths.
pub const EDNS_PAYLOAD: u16 = 1232;

/// Receive buffer for one upstream UDP answer.
const RECV_BUFFER: usize = 4096;

/// Why no answer came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamError {
    /// No matching answer before the last try's deadline.
    Timeout,
    /// Every try failed (I/O error, unparsable answer).
    Failed,
}

/// The resolvers and how to ask them.
pub struct Upstream {
    servers: Vec<SocketAddr>,
    timeout: Duration,
    attempts: u32,
    next: AtomicUsize,
    stats: Arc<Stats>,
}

enum Try {
    Answer(Message),
    Truncated,
    Timeout,
    Failed,
}

impl Upstream {
    /// Ask `servers` in turn, `attempts` tries of `timeout` each.
    pub fn new(
        servers: Vec<SocketAddr>,
        timeout: Duration,
        attempts: u32,
        stats: Arc<Stats>,
    ) -> Upstream {
        Upstream {
            servers,
            timeout,
            attempts: attempts.max(1),
            next: AtomicUsize::new(0),
            stats,
        }
    }

    /// A conversation with the resolvers for one client query.
    pub fn exchange(&self) -> Exchange<'_> {
        Exchange {
            upstream: self,
            v4: None,
            v6: None,
            buf: Vec::new(),
        }
    }

    async fn tcp(
        &self,
        server: SocketAddr,
        request: &Message,
        wire: &[u8],
        deadline: tokio::time::Instant,
    ) -> Try {
        let exchange = async {
            let mut s = TcpStream::connect(server).await?;
            let mut framed = Vec::with_capacity(wire.len() + 2);
            framed.extend_from_slice(&(wire.len() as u16).to_be_bytes());
            framed.extend_from_slice(wire);
            s.write_all(&framed).await?;
            let len = s.read_u16().await? as usize;
            let mut buf = vec![0u8; len];
            s.read_exact(&mut buf).await?;
            Ok::<_, std::io::Error>(buf)
        };
        match timeout_at(deadline, exchange).await {
            Err(_) => Try::Timeout,
            Ok(Err(_)) => Try::Failed,
            Ok(Ok(buf)) => match Message::from_vec(&buf) {
                Ok(m) if matches(request, &m) => Try::Answer(m),
                _ => {
                    self.stats.upstream_mismatched();
                    Try::Failed
                }
            },
        }
    }
}

/// One client query's questions to the resolvers (see the module doc): its
/// sockets are made on first use and closed when it is dropped.
pub struct Exchange<'a> {
    upstream: &'a Upstream,
    v4: Option<UdpSocket>,
    v6: Option<UdpSocket>,
    buf: Vec<u8>,
}

impl Exchange<'_> {
    /// The resolvers' answer to `q`, asked with recursion and the client's DO
    /// and CD bits (so DNSSEC data passes through to a validating client).
    pub async fn ask(
        &mut self,
        q: &Query,
        dnssec_ok: bool,
        checking_disabled: bool,
    ) -> Result<Message, UpstreamError> {
        let up = self.upstream;
        let mut last = UpstreamError::Failed;
        let first = up.next.fetch_add(1, Ordering::Relaxed);
        for attempt in 0..up.attempts as usize {
            let server = up.servers[(first + attempt) % up.servers.len()];
            let request = request(q, dnssec_ok, checking_disabled);
            let Ok(wire) = request.to_vec() else {
                return Err(UpstreamError::Failed);
            };
            up.stats.upstream_queries();
            let started = Instant::now();
            let deadline = tokio::time::Instant::now() + up.timeout;
            let mut outcome = self.udp(server, &request, &wire, deadline).await;
            if matches!(outcome, Try::Truncated) {
                up.stats.upstream_tcp_retries();
                let deadline = tokio::time::Instant::now() + up.timeout;
                outcome = up.tcp(server, &request, &wire, deadline).await;
            }
            match outcome {
                Try::Answer(m) => {
                    up.stats.upstream_latency(started.elapsed());
                    return Ok(m);
                }
                Try::Timeout => {
                    up.stats.upstream_timeouts();
                    last = UpstreamError::Timeout;
                }
                Try::Failed | Try::Truncated => {
                    up.stats.upstream_errors();
                    last = UpstreamError::Failed;
                }
            }
        }
        Err(last)
    }

    async fn udp(
        &mut self,
        server: SocketAddr,
        request: &Message,
        wire: &[u8],
        deadline: tokio::time::Instant,
    ) -> Try {
        let Exchange { v4, v6, buf, .. } = self;
        let slot = if server.is_ipv4() { v4 } else { v6 };
        match slot {
            Some(sock) => {
                if sock.send_to(wire, server).await.is_err() {
                    return Try::Failed;
                }
            }
            None => match first_send(wire, server) {
                Ok(sock) => *slot = Some(sock),
                Err(_) => return Try::Failed,
            },
        }
        let Some(sock) = slot.as_ref() else {
            return Try::Failed;
        };
        // We advertise 1232 bytes; a server that sends more than this is broken,
        // and its cut-off datagram fails to parse like any other bad one.
        if buf.is_empty() {
            buf.resize(RECV_BUFFER, 0);
        }
        loop {
            let (n, from) = match timeout_at(deadline, sock.recv_from(buf)).await {
                Err(_) => return Try::Timeout,
                Ok(Err(_)) => return Try::Failed,
                Ok(Ok(got)) => got,
            };
            if from != server {
                self.upstream.stats.upstream_mismatched();
                continue;
            }
            match Message::from_vec(&buf[..n]) {
                Ok(m) if matches(request, &m) => {
                    return if m.metadata.truncation {
                        Try::Truncated
                    } else {
                        Try::Answer(m)
                    };
                }
                // A stray or forged datagram, or a late answer to an earlier
                // question of this exchange: keep waiting for the real one.
                _ => self.upstream.stats.upstream_mismatched(),
            }
        }
    }
}

/// A fresh non-blocking UDP socket of `server`'s family that has sent `wire` to
/// it. Not bound, not connected: the kernel picks a random port on this first
/// send (two syscalls fewer than bind and connect), and the source of every
/// answer is checked instead. The send comes before the socket joins the
/// runtime, which would first wait a turn of its event loop to learn that a new
/// socket is writable.
fn first_send(wire: &[u8], server: SocketAddr) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(
        Domain::for_address(server),
        Type::DGRAM.nonblocking().cloexec(),
        Some(Protocol::UDP),
    )?;
    s.send_to(wire, &server.into())?;
    UdpSocket::from_std(s.into())
}

/// A recursive query for `q` with a fresh random ID and our EDNS.
pub(crate) fn request(q: &Query, dnssec_ok: bool, checking_disabled: bool) -> Message {
    let mut m = Message::new(rand::random(), MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.metadata.checking_disabled = checking_disabled;
    m.queries.push(q.clone());
    let mut edns = Edns::new();
    edns.set_max_payload(EDNS_PAYLOAD);
    edns.set_dnssec_ok(dnssec_ok);
    m.set_edns(edns);
    m
}

/// RFC 5452 §4.1: an answer is ours only if it is a response with our ID and
/// exactly our question (names compared case-blind, RFC 4343).
pub fn matches(request: &Message, answer: &Message) -> bool {
    answer.metadata.message_type == MessageType::Response
        && answer.metadata.id == request.metadata.id
        && answer.queries.len() == 1
        && answer.queries[0].query_type == request.queries[0].query_type
        && answer.queries[0].query_class == request.queries[0].query_class
        && answer.queries[0].name == request.queries[0].name
}

#[cfg(test)]
mod tests {
    use hickory_proto::rr::{Name, RecordType};

    use super::*;

    #[test]
    fn rfc5452_s4_1_answers_match_id_and_question() {
        let q = Query::query(Name::from_ascii("a.example.").unwrap(), RecordType::AAAA);
        let req = request(&q, false, false);
        let mut ans = req.clone();
        ans.metadata.message_type = MessageType::Response;
        assert!(matches(&req, &ans));
        let mut upper = ans.clone();
        upper.queries[0].name = Name::from_ascii("A.EXAMPLE.").unwrap();
        assert!(matches(&req, &upper), "case-blind");
        let mut other_id = ans.clone();
        other_id.metadata.id ^= 1;
        assert!(!matches(&req, &other_id));
        let mut other_q = ans.clone();
        other_q.queries[0].query_type = RecordType::A;
        assert!(!matches(&req, &other_q));
        assert!(!matches(&req, &req), "a query is not an answer");
    }

    #[test]
    fn ids_are_random() {
        let q = Query::query(Name::from_ascii("a.example.").unwrap(), RecordType::A);
        let ids: std::collections::HashSet<u16> = (0..64)
            .map(|_| request(&q, false, false).metadata.id)
            .collect();
        assert!(ids.len() > 50);
    }
}
