//! One collector of `[log_export]`: its encoder (IPFIX, NetFlow v9, syslog)
//! and its transport. UDP sends each batch's messages at once (`sendmmsg`) and
//! never waits: what the socket refuses is counted dropped. TCP keeps a
//! bounded queue of whole messages, writes without blocking, and makes the
//! connection again with backoff when it fails or the collector closes it;
//! a message cut by a dropped connection is counted dropped, never sent half.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sixgate_config::{Collector, ExportProtocol, Transport};
use sixgate_natlog::{NatRecord, ipfix, netflow9, syslog};

/// Bytes a TCP collector's queue may hold before records are dropped.
const TCP_QUEUE: usize = 4 << 20;

/// Most bytes of syslog frames written to a TCP collector in one run (one
/// write; a connection that breaks in the middle of one loses that run).
const TCP_RUN: usize = 16 << 10;

/// First wait before a TCP connection is tried again; it doubles up to
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A collector's counters, as `show stats` and `/metrics` report them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CollectorReport {
    /// `"ipfix"`, `"netflow9"` or `"syslog"`.
    pub protocol: &'static str,
    /// `"udp"` or `"tcp"`.
    pub transport: &'static str,
    /// The collector's address.
    pub address: String,
    /// Records handed to the socket.
    pub records_sent: u64,
    /// Records lost: refused by the socket, a full TCP queue, or cut by a
    /// dropped connection.
    pub records_dropped: u64,
    /// Messages (datagrams, IPFIX messages, syslog frames) sent.
    pub messages_sent: u64,
    /// Failed sends and failed or dropped connections.
    pub errors: u64,
    /// TCP: connections made.
    pub connects: u64,
    /// TCP: connected now (UDP: always true).
    pub connected: bool,
}

enum Encoding {
    Ipfix(ipfix::Encoder),
    NetFlow9(netflow9::Encoder),
    Syslog(syslog::Header),
}

enum Conn {
    Udp(UdpSocket),
    Tcp(Box<Tcp>),
}

struct Tcp {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    connecting: Option<(socket2::Socket, Instant)>,
    /// Whole messages and the records each holds, oldest first.
    queue: VecDeque<(Vec<u8>, usize)>,
    /// Bytes of the front message already written.
    offset: usize,
    queued: usize,
    next_try: Instant,
    backoff: Duration,
}

/// One collector.
pub(super) struct Sink {
    encoding: Encoding,
    conn: Conn,
    max_len: usize,
    refresh: Duration,
    next_templates: Instant,
    started: Instant,
    /// UDP: the last send was refused.
    refused: bool,
    report: CollectorReport,
    /// Scratch: the messages of one batch.
    msgs: Vec<(Vec<u8>, usize)>,
    line: String,
}

impl Sink {
    /// `c`, its socket made (UDP) or its first connection due now (TCP).
    pub(super) fn new(c: &Collector, domain: u32, hostname: &str) -> Result<Sink, String> {
        let max_len = c.max_message();
        let encoding = match c.protocol {
            ExportProtocol::Ipfix => Encoding::Ipfix(ipfix::Encoder::new(domain, max_len)),
            ExportProtocol::NetFlow9 => Encoding::NetFlow9(netflow9::Encoder::new(domain, max_len)),
            ExportProtocol::Syslog => Encoding::Syslog(syslog::Header::new(
                syslog::DEFAULT_FACILITY,
                hostname,
                std::process::id(),
            )),
        };
        let conn = match c.transport {
            Transport::Udp => {
                let bind: SocketAddr = if c.address.is_ipv4() {
                    "0.0.0.0:0".parse().unwrap()
                } else {
                    "[::]:0".parse().unwrap()
                };
                let s = UdpSocket::bind(bind)
                    .and_then(|s| s.connect(c.address).map(|()| s))
                    .and_then(|s| s.set_nonblocking(true).map(|()| s))
                    .map_err(|e| {
                        format!(
                            "[log_export] collector {}: cannot make its UDP socket: {e}",
                            c.address
                        )
                    })?;
                Conn::Udp(s)
            }
            Transport::Tcp => Conn::Tcp(Box::new(Tcp {
                addr: c.address,
                stream: None,
                connecting: None,
                queue: VecDeque::new(),
                offset: 0,
                queued: 0,
                next_try: Instant::now(),
                backoff: FIRST_BACKOFF,
            })),
        };
        let now = Instant::now();
        Ok(Sink {
            encoding,
            conn,
            max_len,
            refresh: Duration::from_secs(u64::from(c.template_refresh)),
            next_templates: now,
            started: now,
            refused: false,
            report: CollectorReport {
                protocol: c.protocol.as_str(),
                transport: match c.transport {
                    Transport::Udp => "udp",
                    Transport::Tcp => "tcp",
                },
                address: c.address.to_string(),
                connected: c.transport == Transport::Udp,
                ..CollectorReport::default()
            },
            msgs: Vec::new(),
            line: String::new(),
        })
    }

    pub(super) fn report(&self) -> CollectorReport {
        self.report.clone()
    }

    /// Encode `records` and send (UDP) or queue and write (TCP).
    pub(super) fn push(&mut self, records: &[NatRecord]) {
        self.encode(records);
        let mut msgs = std::mem::take(&mut self.msgs);
        match &mut self.conn {
            Conn::Udp(s) => {
                // A refused send means the collector was away: the next
                // message carries the templates, so the first one it gets
                // back can be decoded (not a refresh later).
                if !send_all(s, &msgs, &mut self.report) {
                    self.refused = true;
                }
            }
            Conn::Tcp(t) => {
                for (m, n) in msgs.drain(..) {
                    if t.queued + m.len() > TCP_QUEUE {
                        self.report.records_dropped += n as u64;
                        continue;
                    }
                    t.queued += m.len();
                    t.queue.push_back((m, n));
                }
                t.write(&mut self.report);
            }
        }
        msgs.clear();
        self.msgs = msgs;
    }

    /// This round's timers: templates due over UDP, a TCP connection to make
    /// or finish, its queue to write.
    pub(super) fn tick(&mut self) {
        let templated = matches!(self.encoding, Encoding::Ipfix(_) | Encoding::NetFlow9(_));
        match &mut self.conn {
            Conn::Udp(_) => {
                // Templates on their own when no data carried them in time.
                if templated && (Instant::now() >= self.next_templates || self.refused) {
                    self.push(&[]);
                }
            }
            Conn::Tcp(t) => {
                if t.stream.is_none() && t.connect(&mut self.report) && templated {
                    // RFC 7011 §10.4.2.2: the templates first on every
                    // connection, before any data record.
                    let mut m = Vec::new();
                    self.templates_only(&mut m);
                    if let Conn::Tcp(t) = &mut self.conn {
                        t.queued += m.len();
                        t.queue.push_front((m, 0));
                    }
                }
                if let Conn::Tcp(t) = &mut self.conn {
                    t.watch(&mut self.report);
                    t.write(&mut self.report);
                }
            }
        }
    }

    /// At stop: write what is queued, until `deadline`.
    pub(super) fn finish(&mut self, deadline: Instant) {
        loop {
            self.tick();
            let Conn::Tcp(t) = &self.conn else {
                return;
            };
            if t.queue.is_empty() || Instant::now() >= deadline {
                let left: usize = t.queue.iter().map(|m| m.1).sum();
                self.report.records_dropped += left as u64;
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn templates_only(&mut self, out: &mut Vec<u8>) {
        let (secs, up) = self.clock();
        match &mut self.encoding {
            Encoding::Ipfix(e) => {
                e.message(secs, true, &[], out);
            }
            Encoding::NetFlow9(e) => {
                e.packet(up, secs, true, &[], out);
            }
            Encoding::Syslog(_) => {}
        }
    }

    /// Unix seconds, and milliseconds since start (NetFlow v9's uptime).
    fn clock(&self) -> (u32, u32) {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as u32);
        (secs, self.started.elapsed().as_millis() as u32)
    }

    /// `records` into `self.msgs`.
    fn encode(&mut self, records: &[NatRecord]) {
        let (secs, up) = self.clock();
        let udp = matches!(self.conn, Conn::Udp(_));
        let now = Instant::now();
        match &mut self.encoding {
            Encoding::Ipfix(_) | Encoding::NetFlow9(_) => {
                let mut at = 0;
                loop {
                    // UDP: templates again when due (RFC 7011 §8.4); TCP:
                    // once per connection (`tick`).
                    let templates = udp && (now >= self.next_templates || self.refused);
                    self.refused &= !templates;
                    if at == records.len() && !templates {
                        break;
                    }
                    let mut m = Vec::with_capacity(self.max_len);
                    let n = match &mut self.encoding {
                        Encoding::Ipfix(e) => e.message(secs, templates, &records[at..], &mut m),
                        Encoding::NetFlow9(e) => {
                            e.packet(up, secs, templates, &records[at..], &mut m)
                        }
                        Encoding::Syslog(_) => unreachable!(),
                    };
                    if templates {
                        self.next_templates = now + self.refresh;
                    }
                    at += n;
                    self.msgs.push((m, n));
                    if n == 0 && !templates {
                        break; // cannot happen: a record always fits an empty message
                    }
                }
            }
            Encoding::Syslog(h) => {
                for r in records {
                    self.line.clear();
                    syslog::message(h, r, &mut self.line);
                    if udp {
                        // RFC 5426 §3.1: one message per datagram.
                        self.msgs.push((self.line.as_bytes().to_vec(), 1));
                        continue;
                    }
                    // RFC 6587 §3.4.1: octet-counted frames follow each
                    // other on the stream, so a round's messages go in
                    // runs of up to TCP_RUN bytes, one write each.
                    match self.msgs.last_mut() {
                        Some((m, n)) if m.len() + self.line.len() + 6 <= TCP_RUN => {
                            syslog::frame_octet_counted(&self.line, m);
                            *n += 1;
                        }
                        _ => {
                            let mut m = Vec::with_capacity(TCP_RUN);
                            syslog::frame_octet_counted(&self.line, &mut m);
                            self.msgs.push((m, 1));
                        }
                    }
                }
            }
        }
    }
}

/// `sendmmsg` of `msgs` on a connected UDP socket, 64 at a time; false when
/// one was refused.
fn send_all(s: &UdpSocket, msgs: &[(Vec<u8>, usize)], report: &mut CollectorReport) -> bool {
    let mut all = true;
    for chunk in msgs.chunks(64) {
        let mut iov: Vec<libc::iovec> = chunk
            .iter()
            .map(|(m, _)| libc::iovec {
                iov_base: m.as_ptr() as *mut libc::c_void,
                iov_len: m.len(),
            })
            .collect();
        // SAFETY: zeroed mmsghdr is valid (null name, no control).
        let mut hdrs: Vec<libc::mmsghdr> = iov
            .iter_mut()
            .map(|v| {
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_iov = v;
                h.msg_hdr.msg_iovlen = 1;
                h
            })
            .collect();
        let mut done = 0;
        while done < hdrs.len() {
            // SAFETY: hdrs[done..] point at iovecs over live buffers.
            let r = unsafe {
                libc::sendmmsg(
                    s.as_raw_fd(),
                    hdrs[done..].as_mut_ptr(),
                    (hdrs.len() - done) as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if r <= 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // Refused (the collector's port is closed: ICMP on a
                // connected socket) or the buffer full: this message is lost;
                // the next ones are tried.
                report.errors += 1;
                report.records_dropped += chunk[done].1 as u64;
                all = false;
                done += 1;
                continue;
            }
            for (_, n) in &chunk[done..done + r as usize] {
                report.records_sent += *n as u64;
                report.messages_sent += 1;
            }
            done += r as usize;
        }
    }
    all
}

impl Tcp {
    /// Start or finish a non-blocking connect; true when it just succeeded.
    fn connect(&mut self, report: &mut CollectorReport) -> bool {
        if let Some((sock, since)) = &self.connecting {
            let mut pfd = libc::pollfd {
                fd: sock.as_raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            };
            // SAFETY: one valid pollfd, no wait.
            let r = unsafe { libc::poll(&mut pfd, 1, 0) };
            if r == 0 {
                if since.elapsed() > Duration::from_secs(5) {
                    self.connecting = None;
                    self.failed(report);
                }
                return false;
            }
            let ok = matches!(sock.take_error(), Ok(None)) && pfd.revents & libc::POLLERR == 0;
            let (sock, _) = self.connecting.take().expect("checked above");
            if !ok {
                self.failed(report);
                return false;
            }
            let stream: TcpStream = sock.into();
            let _ = stream.set_nodelay(true);
            self.stream = Some(stream);
            self.backoff = FIRST_BACKOFF;
            report.connects += 1;
            report.connected = true;
            tracing::info!(collector = %self.addr, "log export: connected");
            return true;
        }
        if Instant::now() < self.next_try {
            return false;
        }
        let domain = socket2::Domain::for_address(self.addr);
        let sock = match socket2::Socket::new(domain, socket2::Type::STREAM, None)
            .and_then(|s| s.set_nonblocking(true).map(|()| s))
        {
            Ok(s) => s,
            Err(_) => {
                self.failed(report);
                return false;
            }
        };
        match sock.connect(&self.addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(_) => {
                self.failed(report);
                return false;
            }
        }
        self.connecting = Some((sock, Instant::now()));
        false
    }

    fn failed(&mut self, report: &mut CollectorReport) {
        report.errors += 1;
        report.connected = false;
        self.next_try = Instant::now() + self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// Notice a collector that closed the connection while nothing was
    /// being written (a collector sends nothing; what it does is discarded).
    fn watch(&mut self, report: &mut CollectorReport) {
        let Some(stream) = &mut self.stream else {
            return;
        };
        let mut buf = [0u8; 512];
        loop {
            match io::Read::read(stream, &mut buf) {
                Ok(0) => return self.dropped(report),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.dropped(report),
            }
        }
    }

    /// Write the queue until the socket would block.
    fn write(&mut self, report: &mut CollectorReport) {
        let Some(stream) = &mut self.stream else {
            return;
        };
        while let Some((m, n)) = self.queue.front() {
            match stream.write(&m[self.offset..]) {
                Ok(0) => return self.dropped(report),
                Ok(k) => {
                    self.offset += k;
                    if self.offset == m.len() {
                        report.records_sent += *n as u64;
                        report.messages_sent += 1;
                        self.queued -= m.len();
                        self.offset = 0;
                        self.queue.pop_front();
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.dropped(report),
            }
        }
    }

    /// The connection broke: a message it cut is lost; the rest waits for
    /// the next connection.
    fn dropped(&mut self, report: &mut CollectorReport) {
        tracing::warn!(collector = %self.addr, "log export: connection lost; reconnecting");
        self.stream = None;
        if self.offset > 0
            && let Some((m, n)) = self.queue.pop_front()
        {
            report.records_dropped += n as u64;
            self.queued -= m.len();
            self.offset = 0;
        }
        self.failed(report);
    }
}
