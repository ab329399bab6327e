//! The sync thread's work (docs/ha.md, "Workers, rings, sole writers"): one
//! UDP socket on the dedicated link, one `sixgate_sync::Peer` per peer, and
//! the workers' replica rings. Each [`SyncLink::step`] receives what arrived,
//! hands every record to the worker that owns it, sends every worker's
//! changes to every peer, runs the timers and sends what is due. Pure protocol
//! work is `sixgate-sync`'s; this is only the plumbing, with no lock shared
//! with the workers. Driven by [`crate::sync_thread`].

use std::io;
use std::net::{SocketAddr, UdpSocket};

use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::nat64::steering::port_owner;
use sixgate_sync::{Event, Key, Peer, PeerConfig, Record, ResyncReason, Status, tables};

use crate::doorbell::Doorbell;
use crate::replica::{Inbound, SyncEnds};
use crate::udp_gso::Gso;

/// Most datagrams one step reads, so a flood cannot starve the sending side.
const RECV_BUDGET: usize = 256;

/// Datagrams one `recvmmsg` takes.
const BATCH: usize = 16;

/// Room for one received datagram: the largest UDP payload (a peer's
/// larger `max_datagram` is still read whole, then refused by its hash).
const SLOT: usize = 65536;

/// Settings of a link.
pub struct LinkConfig {
    /// This node's id.
    pub node: u16,
    /// The peers: id and address on the link.
    pub peers: Vec<(u16, SocketAddr)>,
    /// Shared key, if any.
    pub key: Option<Key>,
    /// `SyncSettings::config_hash`.
    pub config_hash: u64,
    /// This node's start time, ns (orders its restarts for the peers).
    pub epoch: u64,
    /// Largest datagram on the link (`SyncSettings::max_datagram`).
    pub max_datagram: usize,
    /// pool6, for the records' IPv6 form of the remote.
    pub pool6: Rfc6052Prefix,
    /// `[nat64] port_block_size`, to find a record's worker.
    pub port_block_size: u16,
}

/// Counters of the link itself (the peers keep theirs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Datagrams from an address that is no configured peer.
    pub unknown_peer: u64,
    /// Records a worker's full import ring refused (a resync is requested).
    pub import_full: u64,
    /// Records the tables cannot take (BIB_DELETE today).
    pub not_imported: u64,
    /// Send errors (the socket's buffer full, the link down).
    pub send_errors: u64,
}

/// A peer and its address.
struct PeerSlot {
    id: u16,
    addr: SocketAddr,
    peer: Peer,
}

/// The sync thread's state.
pub struct SyncLink {
    socket: UdpSocket,
    peers: Vec<PeerSlot>,
    workers: Vec<SyncEnds>,
    pool6: Rfc6052Prefix,
    port_block_size: u16,
    buf: Vec<u8>,
    /// Datagrams waiting to leave in one `sendmsg`.
    gso: Gso,
    /// What one datagram brought, reused.
    inbound: Vec<Inbound>,
    /// The link's own counters.
    pub counters: LinkCounters,
    /// Each worker's `export_lost` as last seen: growth makes a snapshot due.
    lost_seen: Vec<u64>,
    /// Workers given something to import since [`SyncLink::take_fed`].
    fed: Vec<bool>,
    /// Workers told to stop allocating (a drain).
    stop_sent: Vec<bool>,
    /// What each worker was last told of each peer's liveness
    /// ([`Inbound::Liveness`]), in peer order; workers start with "down".
    told_up: Vec<Vec<bool>>,
    /// The time of the last step.
    last_now: u64,
    /// [`BATCH`] receive buffers of [`SLOT`] bytes and their headers.
    /// (Taken out while its datagrams are handled.)
    rx_bufs: Option<Box<RecvBatch>>,
    /// Whether the last [`SyncLink::sleep`] saw the socket readable; `None`
    /// when none polled since the last receive (so it must look).
    polled: Option<bool>,
}

impl SyncLink {
    /// A link on `socket` (bound to `[sync] bind`; made non-blocking here)
    /// for the workers whose sync ends are `workers`, in worker order.
    pub fn new(socket: UdpSocket, cfg: LinkConfig, workers: Vec<SyncEnds>) -> io::Result<SyncLink> {
        socket.set_nonblocking(true)?;
        let peers = cfg
            .peers
            .iter()
            .map(|&(id, addr)| {
                let mut pc = PeerConfig::new(cfg.node, id, cfg.epoch, cfg.config_hash);
                pc.max_datagram = cfg.max_datagram;
                PeerSlot {
                    id,
                    addr,
                    peer: Peer::new(pc, cfg.key.clone()),
                }
            })
            .collect();
        let n = workers.len();
        Ok(SyncLink {
            lost_seen: vec![0; n],
            fed: vec![false; n],
            stop_sent: vec![false; n],
            told_up: vec![vec![false; cfg.peers.len()]; n],
            last_now: 0,
            rx_bufs: Some(Box::new(RecvBatch::new())),
            polled: None,
            socket,
            peers,
            workers,
            pool6: cfg.pool6,
            port_block_size: cfg.port_block_size,
            buf: vec![0; SLOT],
            gso: Gso::default(),
            inbound: Vec::with_capacity(256),
            counters: LinkCounters::default(),
        })
    }

    /// One round; `log` gets the peers' events worth a log line (up, down,
    /// restarted, config mismatch, snapshot asked). Returns whether a peer
    /// wants a snapshot of this node's tables ([`SyncLink::snapshot`]).
    pub fn step(&mut self, now: u64, log: &mut impl FnMut(u16, &Event)) -> io::Result<bool> {
        self.last_now = now;
        self.receive(now, log)?;
        self.export(now);
        for slot in &mut self.peers {
            let id = slot.id;
            slot.peer.handle_timeout(now, &mut |e| log(id, &e));
        }
        self.tell_liveness();
        self.transmit(now);
        Ok(self
            .peers
            .iter()
            .any(|p| p.peer.snapshot_wanted().is_some()))
    }

    /// Receives what arrived, in batches of [`BATCH`] datagrams (one
    /// `recvmmsg` each): a short batch means the socket is empty, so a wake
    /// with one datagram costs one call, not a second one that finds
    /// nothing. Skipped when the last [`SyncLink::sleep`] saw the socket
    /// quiet.
    fn receive(&mut self, now: u64, log: &mut impl FnMut(u16, &Event)) -> io::Result<()> {
        if self.polled.take() == Some(false) {
            return Ok(());
        }
        let Some(mut bufs) = self.rx_bufs.take() else {
            return Ok(());
        };
        let r = self.receive_batches(&mut bufs, now, log);
        self.rx_bufs = Some(bufs);
        r
    }

    fn receive_batches(
        &mut self,
        bufs: &mut RecvBatch,
        now: u64,
        log: &mut impl FnMut(u16, &Event),
    ) -> io::Result<()> {
        for _ in 0..RECV_BUDGET / BATCH {
            let mut got = [(0usize, None::<SocketAddr>); BATCH];
            let n = match bufs.recv(self.fd(), &mut got) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // ICMP errors of earlier sends (a peer down): not ours to stop on.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e),
            };
            for (i, &(len, from)) in got[..n].iter().enumerate() {
                let start = i * SLOT;
                match from {
                    Some(from) => self.datagram(now, &bufs.bufs[start..start + len], from, log),
                    None => self.counters.unknown_peer += 1,
                }
            }
            if n < BATCH {
                return Ok(());
            }
        }
        Ok(())
    }

    /// One datagram from `from`: its records to the workers that own them.
    fn datagram(
        &mut self,
        now: u64,
        buf: &[u8],
        from: SocketAddr,
        log: &mut impl FnMut(u16, &Event),
    ) {
        let Some(slot) = self.peers.iter_mut().find(|p| p.addr == from) else {
            self.counters.unknown_peer += 1;
            return;
        };
        // In stream order: records, and the snapshot markers between them.
        let inbound = &mut self.inbound;
        inbound.clear();
        let (peer_id, mut not_imported) = (slot.id, 0);
        let _ = slot.peer.receive(now, buf, &mut |e| match e {
            Event::Record(r) => match tables::to_replica(&r) {
                Some((op, record)) => inbound.push(Inbound::Change {
                    peer: peer_id,
                    op,
                    record,
                }),
                None => not_imported += 1,
            },
            Event::SnapshotBegin { .. } => inbound.push(Inbound::SnapshotBegin { peer: peer_id }),
            Event::SnapshotEnd { sweep, .. } => {
                // A restarted peer's first snapshot, or one begun before
                // it had ours: what this node carries for it stays
                // (docs/ha.md, "A restarted node's snapshot").
                if sweep {
                    inbound.push(Inbound::SnapshotEnd { peer: peer_id });
                }
                log(peer_id, &e);
            }
            other => log(peer_id, &other),
        });
        self.counters.not_imported += not_imported;
        let mut full = false;
        let workers = self.workers.len();
        for item in self.inbound.iter() {
            // A record to the worker owning its port; a marker to all.
            let targets = match item {
                Inbound::Change { record: r, .. } => {
                    let w = usize::from(port_owner(r.port4, self.port_block_size, workers as u16));
                    w..(w + 1).min(workers)
                }
                _ => 0..workers,
            };
            for w in targets {
                if self.workers[w].import.push(*item) {
                    self.fed[w] = true;
                } else {
                    self.counters.import_full += 1;
                    full = true;
                }
            }
        }
        if full {
            slot.peer.request_resync(ResyncReason::ImportFull);
        }
    }

    fn export_now(&mut self) {
        let now = self.last_now;
        self.export(now);
    }

    /// Every worker's changes to every peer (a refused push is counted by the
    /// peer and turns into a snapshot).
    fn export(&mut self, now: u64) {
        for (ends, seen) in self.workers.iter_mut().zip(&mut self.lost_seen) {
            let lost = ends
                .counters
                .export_lost
                .load(std::sync::atomic::Ordering::Relaxed);
            if lost != *seen {
                *seen = lost;
                for slot in &mut self.peers {
                    slot.peer.snapshot_due(ResyncReason::Gap);
                }
            }
            while let Some((op, r)) = ends.export.pop() {
                let rec = tables::to_record(op, &r, &self.pool6);
                for slot in &mut self.peers {
                    slot.peer.push(now, &rec);
                }
            }
        }
    }

    /// Each worker learns which peers are up (a marker in its import ring,
    /// sent again next round if the ring was full): the event log's ends
    /// are the maker's to log while it is up (docs/logging.md).
    fn tell_liveness(&mut self) {
        for (w, ends) in self.workers.iter_mut().enumerate() {
            for (i, slot) in self.peers.iter().enumerate() {
                let up = slot.peer.is_up();
                if self.told_up[w][i] != up
                    && ends.import.push(Inbound::Liveness { peer: slot.id, up })
                {
                    self.told_up[w][i] = up;
                    self.fed[w] = true;
                }
            }
        }
    }

    /// Every peer's datagrams due, a run of them per `sendmsg`
    /// ([`crate::udp_gso`]).
    fn transmit(&mut self, now: u64) {
        let fd = self.fd();
        for slot in &mut self.peers {
            while let Some(n) = slot.peer.poll_transmit(now, &mut self.buf) {
                self.gso.push(
                    fd,
                    slot.addr,
                    &self.buf[..n],
                    &mut self.counters.send_errors,
                );
            }
        }
        self.gso.flush(fd, &mut self.counters.send_errors);
    }

    /// Starts a snapshot to every peer that wants one; then feed it with
    /// [`SyncLink::snapshot_push`] and end it with [`SyncLink::snapshot_end`].
    pub fn snapshot(&mut self) {
        for slot in &mut self.peers {
            if slot.peer.snapshot_wanted().is_some() {
                slot.peer.start_snapshot();
            }
        }
    }

    /// Room for snapshot records now (the least over the peers being sent one).
    pub fn snapshot_room(&self) -> usize {
        self.peers
            .iter()
            .filter(|p| p.peer.snapshot_running())
            .map(|p| p.peer.room())
            .min()
            .unwrap_or(0)
    }

    /// One session of a snapshot (from a walk of a worker's tables).
    pub fn snapshot_push(&mut self, now: u64, r: &Record) {
        for slot in &mut self.peers {
            if slot.peer.snapshot_running() {
                slot.peer.push(now, r);
            }
        }
    }

    /// Ends the running snapshots; false while one has no room yet.
    pub fn snapshot_end(&mut self) -> bool {
        let mut done = true;
        for slot in &mut self.peers {
            if slot.peer.snapshot_running() {
                done &= slot.peer.end_snapshot();
            }
        }
        done
    }

    /// A reload changed what the config hash covers: every peer's stream
    /// carries `hash` from now on.
    pub fn set_config_hash(&mut self, hash: u64) {
        for slot in &mut self.peers {
            slot.peer.set_config_hash(hash);
        }
    }

    /// Whether a snapshot to some peer is running.
    pub fn snapshot_running(&self) -> bool {
        self.peers.iter().any(|p| p.peer.snapshot_running())
    }

    /// The workers given records or markers since the last call (to be woken
    /// from their sleep), each once.
    pub fn take_fed(&mut self, mut f: impl FnMut(usize)) {
        for (w, fed) in self.fed.iter_mut().enumerate() {
            if std::mem::take(fed) {
                f(w);
            }
        }
    }

    /// The socket's descriptor, to sleep on.
    pub fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.socket.as_raw_fd()
    }

    /// The workers' doorbell (`None`: they have none, and [`SyncLink::sleep`]
    /// polls every 1 ms).
    pub fn bell(&self) -> Option<std::sync::Arc<Doorbell>> {
        self.workers.first().and_then(|w| w.bell.clone())
    }

    /// Sleeps until a datagram arrives, a worker exports a change (its
    /// doorbell), or `timeout_ns` (at most 1 ms without a doorbell). Not at
    /// all if a change is waiting already. `ppoll` takes the timeout to the
    /// nanosecond: a timer less than 1 ms away is slept to, not spun on with
    /// zero timeouts. The next [`SyncLink::step`] reads the socket only if
    /// it was readable, and the doorbell is read only when it rang.
    ///
    /// While records wait for a datagram to fill ([`Peer::lingering`]: a
    /// busy link), the doorbell is not armed: what the workers export until
    /// the flush deadline (at most `flush_delay`, 1 ms) leaves with those
    /// records anyway, so it waits in their rings and is taken in one step
    /// at the deadline, with no `write` by the workers and no wake-up per
    /// batch (docs/ha.md, "Workers, rings, sole writers").
    pub fn sleep(&mut self, timeout_ns: u64) {
        let lingering = self.peers.iter().any(|p| p.peer.lingering());
        let bell = self
            .workers
            .first()
            .and_then(|w| w.bell.as_deref())
            .filter(|_| !lingering);
        if let Some(b) = bell {
            b.arm();
            if self.workers.iter().any(|w| !w.export.is_empty()) {
                // A ring since `arm` left the eventfd readable: the next
                // sleep returns at once and reads it.
                b.quiet();
                return;
            }
        }
        let pollfd = |fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut fds = [pollfd(self.fd()), pollfd(bell.map_or(-1, |b| b.fd()))];
        let timeout_ns = if bell.is_some() {
            timeout_ns
        } else {
            timeout_ns.min(1_000_000)
        };
        let ts = libc::timespec {
            tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: two valid pollfds (ppoll skips a negative one), a valid
        // timespec, no signal mask.
        let n = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        // EINTR and the like: look at the socket anyway.
        self.polled = Some(n < 0 || fds[0].revents != 0);
        if let Some(b) = bell {
            if n < 0 || fds[1].revents != 0 {
                b.disarm();
            } else {
                b.quiet();
            }
        }
    }

    /// The link's and every peer's counters and state (`sixgate show sync`).
    pub fn counters(&self) -> LinkCounters {
        self.counters
    }

    /// When the next step has something to do, at the latest.
    pub fn next_timeout(&self, now: u64) -> u64 {
        self.peers
            .iter()
            .map(|p| p.peer.next_timeout(now))
            .min()
            .unwrap_or(now)
    }

    /// Each peer's id, address and status (`sixgate show sync`).
    pub fn status(&self) -> Vec<(u16, SocketAddr, Status)> {
        self.peers
            .iter()
            .map(|p| (p.id, p.addr, p.peer.status()))
            .collect()
    }

    /// Whether every peer's stream has been synced (the "ready" of docs/ha.md).
    pub fn synced(&self) -> bool {
        self.peers.iter().all(|p| p.peer.synced())
    }

    /// Each peer's (up, synced), for [`crate::sync_node::ready`].
    pub fn peers_up_synced(&self) -> impl Iterator<Item = (bool, bool)> + '_ {
        self.peers.iter().map(|p| (p.peer.is_up(), p.peer.synced()))
    }

    /// A drain's first step: every worker is told to stop allocating (a
    /// marker in its import ring, so it takes it between batches). True once
    /// every worker has taken it: its earlier changes are then in its export
    /// ring (a worker exports before it imports), and it makes no new
    /// mapping after them.
    pub fn stop_allocating(&mut self) -> bool {
        for (w, ends) in self.workers.iter_mut().enumerate() {
            if !self.stop_sent[w] && ends.import.push(Inbound::StopAllocating) {
                self.stop_sent[w] = true;
                self.fed[w] = true;
            }
        }
        self.stop_sent.iter().all(|s| *s) && self.workers.iter().all(|e| e.import.is_empty())
    }

    /// Queues a DRAIN to every peer after what the workers exported so far.
    pub fn drain(&mut self) {
        self.export_now();
        for slot in &mut self.peers {
            slot.peer.drain();
        }
    }

    /// Whether every peer that is up acknowledged our DRAIN (a peer down
    /// cannot; it gets a snapshot when it comes back).
    pub fn drain_done(&self) -> bool {
        self.peers
            .iter()
            .all(|p| p.peer.drain_acked() || !p.peer.is_up())
    }
}

/// What one `recvmmsg` needs, made once: [`BATCH`] buffers of [`SLOT`]
/// bytes, their addresses and headers (only the pointers are set per call,
/// nothing is cleared).
struct RecvBatch {
    bufs: Vec<u8>,
    addrs: [libc::sockaddr_storage; BATCH],
    iov: [libc::iovec; BATCH],
    hdrs: [libc::mmsghdr; BATCH],
}

// SAFETY: the headers' pointers lead only into this value's own fields, and
// are set again before each use, so moving it to another thread is sound.
unsafe impl Send for RecvBatch {}

impl RecvBatch {
    fn new() -> RecvBatch {
        RecvBatch {
            bufs: vec![0; BATCH * SLOT],
            // SAFETY: all-zero is a valid value of these plain C structs.
            addrs: unsafe { std::mem::zeroed() },
            // SAFETY: as above.
            iov: unsafe { std::mem::zeroed() },
            // SAFETY: as above.
            hdrs: unsafe { std::mem::zeroed() },
        }
    }

    /// One `recvmmsg` of up to [`BATCH`] datagrams, without waiting: each
    /// one's length and sender (`None` for an address family that is no
    /// peer's) into `got`; how many.
    fn recv(
        &mut self,
        fd: std::os::fd::RawFd,
        got: &mut [(usize, Option<SocketAddr>); BATCH],
    ) -> io::Result<usize> {
        for (i, chunk) in self.bufs.chunks_exact_mut(SLOT).take(BATCH).enumerate() {
            self.iov[i] = libc::iovec {
                iov_base: chunk.as_mut_ptr().cast(),
                iov_len: SLOT,
            };
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as u32;
            h.msg_iov = &mut self.iov[i];
            h.msg_iovlen = 1;
        }
        // SAFETY: BATCH headers, each naming its own address and one buffer
        // of SLOT bytes inside `bufs`, all borrowed for the call.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                self.hdrs.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        for (g, (h, a)) in got
            .iter_mut()
            .zip(self.hdrs.iter().zip(&self.addrs))
            .take(n)
        {
            *g = (h.msg_len as usize, sockaddr(a));
        }
        Ok(n)
    }
}

/// The sender's address as `recv_from` gives it.
fn sockaddr(a: &libc::sockaddr_storage) -> Option<SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    match i32::from(a.ss_family) {
        libc::AF_INET => {
            // SAFETY: an AF_INET address is a sockaddr_in.
            let a = unsafe { &*(a as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: an AF_INET6 address is a sockaddr_in6.
            let a = unsafe { &*(a as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
