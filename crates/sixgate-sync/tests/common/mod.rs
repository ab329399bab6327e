//! A node with a table, a replica of its peer's table and the snapshot
//! producer: the smallest application of `sixgate_sync::Peer`, as the runtime
//! will be (docs/ha.md).
#![allow(dead_code)]

use sixgate_sync::record::{Op, Proto, TcpState};
use sixgate_sync::{Event, Key, Peer, PeerConfig, Record};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, Ipv6Addr};

pub const MS: u64 = 1_000_000;
pub const HASH: u64 = 0x5157_0001;

pub type K = (u8, Ipv4Addr, u16, Ipv4Addr, u16);

pub fn key_of(r: &Record) -> K {
    let (p, a, b, c, d) = r.key();
    (p as u8, a, b, c, d)
}

/// Session `i` owned by `node` (its own pool4 address: only the owner allocates).
pub fn session(node: u16, i: u16, op: Op, state: TcpState) -> Record {
    Record {
        op,
        proto: Proto::Tcp,
        tcp_state: Some(state),
        lifetime_ms: 7_440_000,
        v6_host: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, node, i),
        v6_remote: Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0xc633, 0x6407),
        v4_pool: Ipv4Addr::new(192, 0, 2, node as u8),
        v4_remote: Ipv4Addr::new(198, 51, 100, 7),
        port6: 40000 + i,
        port4: 61000 + i,
        remote_port: 443,
    }
}

pub fn peer(node: u16, other: u16, epoch: u64, key: Option<&Key>) -> Peer {
    Peer::new(PeerConfig::new(node, other, epoch, HASH), key.cloned())
}

pub struct Node {
    pub id: u16,
    pub peer: Peer,
    /// Entries this node owns.
    pub table: BTreeMap<K, Record>,
    /// What the peer told us of its entries.
    pub replica: BTreeMap<K, Record>,
    /// Keys restated by the running snapshot we receive.
    marked: Option<BTreeSet<K>>,
    /// Keys our running snapshot still has to send.
    to_send: Vec<K>,
    pub events: Vec<Event>,
    /// Datagrams handed to `receive`.
    pub received: u64,
}

impl Node {
    pub fn new(id: u16, other: u16, epoch: u64, key: Option<&Key>) -> Node {
        Node {
            id,
            peer: peer(id, other, epoch, key),
            table: BTreeMap::new(),
            replica: BTreeMap::new(),
            marked: None,
            to_send: Vec::new(),
            events: Vec::new(),
            received: 0,
        }
    }

    /// A change of our own table, pushed to the peer (a refused push is
    /// counted by the peer and turns into a snapshot).
    pub fn change(&mut self, now: u64, r: Record) {
        match r.op {
            Op::SessionDelete | Op::BibDelete => {
                self.table.remove(&key_of(&r));
            }
            _ => {
                self.table.insert(key_of(&r), r);
            }
        }
        self.peer.push(now, &r);
    }

    fn on_event(&mut self, e: Event) {
        match e {
            Event::Record(r) => match r.op {
                Op::SessionDelete | Op::BibDelete => {
                    self.replica.remove(&key_of(&r));
                }
                _ => {
                    if let Some(m) = &mut self.marked {
                        m.insert(key_of(&r));
                    }
                    self.replica.insert(key_of(&r), r);
                }
            },
            Event::SnapshotBegin { .. } => self.marked = Some(BTreeSet::new()),
            Event::SnapshotEnd { sweep, .. } => {
                if let Some(m) = self.marked.take()
                    && sweep
                {
                    self.replica.retain(|k, _| m.contains(k));
                }
            }
            _ => {}
        }
        self.events.push(e);
    }

    pub fn receive(&mut self, now: u64, d: &[u8]) {
        let mut evs = Vec::new();
        self.received += 1;
        let _ = self.peer.receive(now, d, &mut |e| evs.push(e));
        for e in evs {
            self.on_event(e);
        }
    }

    /// Timers, snapshot production, and every datagram due now.
    pub fn step(&mut self, now: u64) -> Vec<Vec<u8>> {
        let mut evs = Vec::new();
        self.peer.handle_timeout(now, &mut |e| evs.push(e));
        for e in evs {
            self.on_event(e);
        }
        if self.peer.snapshot_wanted().is_some() {
            self.peer.start_snapshot();
            self.to_send = self.table.keys().rev().copied().collect();
        }
        if self.peer.snapshot_running() {
            // Paced by the room the peer's acks leave; entries are read at
            // send time, as a walk of the live table would.
            while self.peer.room() > 0 {
                let Some(k) = self.to_send.pop() else { break };
                if let Some(r) = self.table.get(&k) {
                    let mut r = *r;
                    r.op = Op::SessionUpsert;
                    self.peer.push(now, &r);
                }
            }
            if self.to_send.is_empty() {
                self.peer.end_snapshot();
            }
        }
        let mut out = Vec::new();
        let mut buf = [0u8; 1500];
        for _ in 0..10_000 {
            let Some(n) = self.peer.poll_transmit(now, &mut buf) else {
                break;
            };
            out.push(buf[..n].to_vec());
        }
        out
    }
}

/// Runs both nodes over a perfect link for `ms` milliseconds from `now`.
pub fn run(a: &mut Node, b: &mut Node, now: &mut u64, ms: u64) {
    for _ in 0..ms {
        for d in a.step(*now) {
            b.receive(*now, &d);
        }
        for d in b.step(*now) {
            a.receive(*now, &d);
        }
        *now += MS;
    }
}
