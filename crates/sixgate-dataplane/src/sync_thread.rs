//! The sync thread of a running gateway (docs/ha.md): a [`SyncLink`] driven
//! off the packet path. It sleeps in `poll` on the link's socket and the
//! workers' doorbell (rung when they export changes) until the protocol's
//! next timer, at most [`MAX_SLEEP_NS`], wakes the
//! workers it handed records to, feeds snapshots by walking the workers'
//! tables through the control channel (`Live::chunk`, a chunk between their
//! batches), and logs the peers' events.

use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::Instant;

use sixgate_config::SyncSettings;
use sixgate_core::nat64::ReplicaOp;
use sixgate_sync::{Event, Key, tables};

use crate::Live;
use crate::announce::Announcer;
use crate::live::{Query, Rows};
use crate::replica::SyncEnds;
use crate::sync_link::{LinkConfig, SyncLink};
use crate::sync_node::Node;

/// Longest sleep (the report's period): a worker's change rings the
/// doorbell instead of waiting for the thread (without a doorbell, 1 ms).
pub const MAX_SLEEP_NS: u64 = REPORT_NS;

/// How often the thread publishes its [`SyncReport`] (`show sync`, metrics).
const REPORT_NS: u64 = 100_000_000;

/// What `sixgate show sync` and the metrics show, as last published.
#[derive(Clone, Debug, Default)]
pub struct SyncReport {
    /// This node's id.
    pub node_id: u16,
    /// Each peer: id, address, protocol state and counters.
    pub peers: Vec<(u16, std::net::SocketAddr, sixgate_sync::Status)>,
    /// The link's own counters.
    pub link: crate::sync_link::LinkCounters,
    /// The workers' ring counters, summed: exported, export_lost, imported,
    /// import_refused, swept.
    pub workers: [u64; 5],
    /// The node's state in its group.
    pub state: crate::sync_node::NodeState,
    /// `[sync] announce_table` and the routes announced there when ready.
    pub announce: Option<(u32, Vec<String>)>,
    /// Whether those routes are in the table now.
    pub announcing: bool,
}

/// Most slab positions one snapshot walk step asks a worker for.
const WALK_SPAN: usize = 256;

/// The running sync thread.
pub struct SyncThread {
    stop: Arc<AtomicBool>,
    /// Wakes the thread to stop.
    bell: Option<Arc<crate::doorbell::Doorbell>>,
    handle: Option<JoinHandle<()>>,
}

/// The link's socket and key, taken before privileges are dropped.
pub struct Bound {
    socket: UdpSocket,
    key: Option<Key>,
}

/// Binds `[sync] bind` and loads the key (a `key_file` is read now).
pub fn bind(s: &SyncSettings) -> Result<Bound, String> {
    let key = match &s.key {
        Some(k) => Some(Key::new(&k.load()?).ok_or_else(|| "[sync] key: empty".to_owned())?),
        None => None,
    };
    let socket = UdpSocket::bind(s.bind).map_err(|e| format!("[sync] bind = {}: {e}", s.bind))?;
    Ok(Bound { socket, key })
}

impl SyncThread {
    /// Starts the thread on `bound` ([`bind`]) for the workers whose sync
    /// ends are `ends` (`Crew::take_sync_ends`), with `live` to walk their
    /// tables for snapshots. `device`: the TUN device the announced routes
    /// go through (`None`: blackhole routes; `crate::announce`). Errors: no
    /// pool6, no thread.
    pub fn spawn(
        bound: Bound,
        s: &SyncSettings,
        ends: Vec<SyncEnds>,
        live: Arc<Live>,
        device: Option<&str>,
    ) -> Result<SyncThread, String> {
        let config = live.config();
        let workers = ends.len();
        let hash = s.config_hash(&config, workers as u16);
        let Bound { socket, key } = bound;
        let pool6 = config
            .map
            .pool6
            .ok_or_else(|| "[sync]: NAT64 without pool6".to_owned())?;
        let port_block_size = config.nat64.as_ref().map_or(0, |n| n.port_block_size);
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        let cfg = LinkConfig {
            node: s.node_id,
            peers: s.peers.iter().map(|p| (p.node_id, p.address)).collect(),
            key,
            config_hash: hash,
            epoch,
            max_datagram: s.max_datagram(),
            pool6,
            port_block_size,
        };
        let counters: Vec<_> = ends.iter().map(|e| e.counters.clone()).collect();
        let announcer = s.announce_table.map(|t| {
            let mut a = Announcer::new(t, (pool6.addr(), pool6.len()), &s.own_shards(), device);
            // A node restarted after SIGKILL announces nothing before it is
            // ready again (docs/ha.md): its old routes go first.
            for p in a.withdraw_all() {
                tracing::warn!("{p}");
            }
            a
        });
        let node = Node::new(s.join_timeout, announcer);
        let table = s.announce_table;
        let link = SyncLink::new(socket, cfg, ends).map_err(|e| format!("[sync]: {e}"))?;
        let bell = link.bell();
        let node_id = s.node_id;
        let settings = s.clone();
        let peers: Vec<String> = s
            .peers
            .iter()
            .map(|p| format!("{} at {}", p.node_id, p.address))
            .collect();
        tracing::info!(
            node = s.node_id,
            "sync: listening on {}, config hash {hash:016x}, {}, peers {}",
            s.bind,
            if s.key.is_some() {
                "authenticated"
            } else {
                "NOT authenticated (dedicated link only)"
            },
            peers.join(", ")
        );
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("sixgate-sync".into())
            .spawn(move || {
                let report = move |link: &SyncLink, node: &Node| SyncReport {
                    node_id,
                    state: node.state(),
                    announce: table.zip(node.announcement().map(|(_, r)| r)),
                    announcing: node.announcing(),
                    peers: link.status(),
                    link: link.counters(),
                    workers: counters.iter().fold([0; 5], |mut a, c| {
                        for (a, c) in a.iter_mut().zip([
                            &c.exported,
                            &c.export_lost,
                            &c.imported,
                            &c.import_refused,
                            &c.swept,
                        ]) {
                            *a += c.load(Relaxed);
                        }
                        a
                    }),
                };
                let rehash =
                    move |c: &sixgate_core::Config| settings.config_hash(c, workers as u16);
                run(link, node, live, pool6, &flag, report, (hash, rehash))
            })
            .map_err(|e| format!("[sync]: cannot start its thread: {e}"))?;
        Ok(SyncThread {
            stop,
            bell,
            handle: Some(handle),
        })
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.stop.store(true, Relaxed);
        if let Some(b) = &self.bell {
            b.wake();
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Where a snapshot's walk is: the worker and its slab cursor; `None` in the
/// worker position once every worker was walked (the end is still due).
type Walk = (Option<usize>, u32);

fn run(
    mut link: SyncLink,
    mut node: Node,
    live: Arc<Live>,
    pool6: sixgate_core::addr::Rfc6052Prefix,
    stop: &AtomicBool,
    report: impl Fn(&SyncLink, &Node) -> SyncReport,
    (mut hash, rehash): (u64, impl Fn(&sixgate_core::Config) -> u64),
) {
    let start = Instant::now();
    let mut next_report = 0;
    let workers = live.workers();
    let mut walk: Option<Walk> = None;
    let mut failing = false;
    while !stop.load(Relaxed) {
        let now = start.elapsed().as_nanos() as u64;
        let wants = match link.step(now, &mut log_event) {
            Ok(w) => {
                failing = false;
                w
            }
            Err(e) => {
                if !failing {
                    tracing::error!("sync: the link's socket failed: {e}");
                }
                failing = true;
                false
            }
        };
        let was = (node.state(), node.announcing());
        if live.take_sync_drain() {
            node.start_drain();
        }
        node.step(&mut link, now);
        link.take_fed(|w| live.wake_worker(w));
        // A change of the node's state is published at once: whoever saw the
        // routes change may ask `show sync` next.
        if now >= next_report || (node.state(), node.announcing()) != was {
            // A reload may change what the hash covers (pool4, timeouts):
            // the peers must then see the new one, and refuse it until they
            // run the same.
            let h = rehash(&live.config());
            if h != hash {
                tracing::warn!(
                    "sync: the running configuration changed what [sync] covers: config hash \
                     now {h:016x} (was {hash:016x}); peers not reloaded alike are refused"
                );
                link.set_config_hash(h);
                hash = h;
            }
            live.publish_sync(report(&link, &node));
            next_report = now + REPORT_NS;
        }
        if wants && walk.is_none() {
            link.snapshot();
            tracing::info!("sync: sending a snapshot of this node's tables");
            walk = Some((Some(0), 0));
        }
        if let Some(w) = walk {
            walk = snapshot_step(&mut link, &live, &pool6, workers, w, now);
        }
        // Up to the next timer or report (`show sync` is at most 100 ms old).
        // To the nanosecond: a timer under 1 ms away is slept to, not spun
        // on (docs/perf-log/2026-11-26.md, "At the gateway").
        let wait = link.next_timeout(now).min(next_report).saturating_sub(now);
        // A snapshot with room goes on at once; one waiting for the peers'
        // acks sleeps until they arrive on the socket.
        let timeout = if walk.is_some() && link.snapshot_room() > 0 {
            0
        } else {
            wait.min(MAX_SLEEP_NS)
        };
        link.sleep(timeout);
    }
    // Stopping (SIGTERM, SIGINT, an error): the routing daemon hears it first.
    node.stop();
    live.publish_sync(report(&link, &node));
}

/// One step of a snapshot: a chunk of a worker's sessions, as much as the
/// peers' queues have room for, or its end. Returns where it is.
fn snapshot_step(
    link: &mut SyncLink,
    live: &Live,
    pool6: &sixgate_core::addr::Rfc6052Prefix,
    workers: usize,
    (worker, from): Walk,
    now: u64,
) -> Option<Walk> {
    if !link.snapshot_running() {
        return None;
    }
    let Some(w) = worker else {
        return if link.snapshot_end() {
            None
        } else {
            Some((None, 0))
        };
    };
    let room = link.snapshot_room().min(WALK_SPAN);
    if room == 0 {
        return Some((worker, from));
    }
    let chunk = match live.chunk(w, Query::Sessions, from, room as u32) {
        Ok(c) => c,
        Err(e) => {
            // The snapshot cannot be complete: end it; the peer's next gap
            // or join asks again.
            tracing::warn!("sync: snapshot of worker {w}: {e}");
            let _ = link.snapshot_end();
            return None;
        }
    };
    if let Rows::Sessions(rows) = &chunk.rows {
        for s in rows {
            let r = tables::to_record(ReplicaOp::Upsert, &tables::from_view(s), pool6);
            link.snapshot_push(now, &r);
        }
    }
    Some(match chunk.next {
        Some(n) => (worker, n),
        None if w + 1 < workers => (Some(w + 1), 0),
        None => (None, 0),
    })
}

/// A peer's event as a log line (records and snapshot markers are not
/// events worth one).
fn log_event(peer: u16, e: &Event) {
    match e {
        Event::PeerUp => tracing::info!(peer, "sync: peer {peer} is up"),
        Event::PeerDown => tracing::warn!(peer, "sync: peer {peer} is down (silent for 3 s)"),
        Event::PeerRestarted => {
            tracing::warn!(peer, "sync: peer {peer} restarted; it gets a snapshot")
        }
        Event::ConfigMismatch { ours, theirs } => tracing::error!(
            peer,
            "sync: peer {peer} has config hash {theirs:016x}, ours is {ours:016x}: not syncing \
             until both run the same [nat64] and [sync]"
        ),
        Event::SnapshotRequested(why) => {
            tracing::info!(peer, "sync: peer {peer} asks for a snapshot ({why:?})")
        }
        Event::SnapshotEnd {
            announced,
            received,
            sweep,
            ..
        } => tracing::info!(
            peer,
            "sync: snapshot from peer {peer} received ({received} records, {announced} announced){}",
            if *sweep {
                ""
            } else {
                "; not swept (its first since it started, or begun before it had ours): \
                 the entries this node holds for it stay"
            }
        ),
        Event::PeerDrained { records, .. } => tracing::warn!(
            peer,
            "sync: peer {peer} drains ({records} records sent before): it announces nothing \
             and makes no new mapping; this node keeps its entries"
        ),
        Event::Record(_) | Event::SnapshotBegin { .. } => {}
    }
}
