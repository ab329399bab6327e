//! The node's own state in its group (docs/ha.md, "Failover and scale-out"):
//! joining until its peers' snapshots have arrived, then ready (its routes
//! announced), then, on `sixgate sync drain`, draining until every peer has
//! acknowledged its DRAIN, and drained. Driven by the sync thread.

use crate::announce::Announcer;
use crate::sync_link::SyncLink;

/// Where the node is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NodeState {
    /// Waiting for its peers' snapshots: announces nothing.
    #[default]
    Joining,
    /// Its tables hold its peers' sessions: announces its routes.
    Ready,
    /// `sixgate sync drain`: routes withdrawn, allocation stopped, waiting
    /// for every live peer to acknowledge its DRAIN.
    Draining,
    /// Every live peer has everything and keeps its entries: it can stop.
    Drained,
}

impl NodeState {
    /// As `show sync` and the metrics say it.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Joining => "joining",
            NodeState::Ready => "ready",
            NodeState::Draining => "draining",
            NodeState::Drained => "drained",
        }
    }

    /// Every state, for the metrics.
    pub const ALL: [NodeState; 4] = [
        NodeState::Joining,
        NodeState::Ready,
        NodeState::Draining,
        NodeState::Drained,
    ];
}

/// docs/ha.md, "Ready": every peer's snapshot has arrived, or the peers
/// still without one were silent for the whole `join_timeout`. `peers`:
/// each peer's (up, synced).
pub fn ready(
    elapsed_ns: u64,
    join_timeout_ns: u64,
    mut peers: impl Iterator<Item = (bool, bool)>,
) -> bool {
    peers.all(|(up, synced)| synced || (!up && elapsed_ns >= join_timeout_ns))
}

/// Steps of a drain (docs/ha.md, "Planned drain").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DrainStep {
    /// Every worker told to stop allocating, and it took the message.
    StopAllocating,
    /// DRAIN queued to every peer; waiting for their acks.
    Acks,
}

/// The node: its state, its announcement, its drain.
pub struct Node {
    state: NodeState,
    join_timeout_ns: u64,
    announcer: Option<Announcer>,
    /// When the announcement last failed (it is tried again).
    announce_failed: Option<u64>,
    drain: Option<DrainStep>,
}

/// A failed announcement is tried again after this long.
const ANNOUNCE_RETRY_NS: u64 = 5_000_000_000;

impl Node {
    /// A starting node; `announcer`: `[sync] announce_table`.
    pub fn new(join_timeout_s: u32, announcer: Option<Announcer>) -> Node {
        Node {
            state: NodeState::Joining,
            join_timeout_ns: u64::from(join_timeout_s) * 1_000_000_000,
            announcer,
            announce_failed: None,
            drain: None,
        }
    }

    /// The state.
    pub fn state(&self) -> NodeState {
        self.state
    }

    /// Whether its routes are in the announce table.
    pub fn announcing(&self) -> bool {
        self.announcer.as_ref().is_some_and(Announcer::announcing)
    }

    /// The announce table and its routes (`None`: no `announce_table`).
    pub fn announcement(&self) -> Option<(&str, Vec<String>)> {
        self.announcer.as_ref().map(|a| {
            (
                a.table(),
                a.routes().iter().map(|r| r.to_string()).collect(),
            )
        })
    }

    /// `sixgate sync drain`: withdraw the routes first (traffic moves to the
    /// peers, which have every session), then stop allocating and tell the
    /// peers ([`Node::step`]). A second request does nothing.
    pub fn start_drain(&mut self) {
        if self.drain.is_some() || self.state == NodeState::Drained {
            return;
        }
        tracing::warn!("sync: draining: withdrawing the routes, no new mappings from now on");
        self.withdraw();
        self.state = NodeState::Draining;
        self.drain = Some(DrainStep::StopAllocating);
    }

    fn withdraw(&mut self) {
        if let Some(a) = &mut self.announcer
            && a.announcing()
        {
            let problems = a.withdraw();
            for p in &problems {
                tracing::error!("sync: {p}");
            }
            if problems.is_empty() {
                tracing::info!("sync: routes withdrawn from table {}", a.table());
            }
        }
    }

    /// One round after the link's step, `elapsed_ns` since the thread
    /// started.
    pub fn step(&mut self, link: &mut SyncLink, elapsed_ns: u64) {
        match self.state {
            NodeState::Joining => {
                if ready(elapsed_ns, self.join_timeout_ns, link.peers_up_synced()) {
                    self.state = NodeState::Ready;
                    let missing = link.peers_up_synced().filter(|(_, s)| !s).count();
                    tracing::info!(
                        "sync: ready ({})",
                        if missing == 0 {
                            "every peer's snapshot has arrived".to_owned()
                        } else {
                            format!("{missing} peer(s) silent for join_timeout")
                        }
                    );
                    self.announce(elapsed_ns);
                }
            }
            NodeState::Ready => {
                if self
                    .announce_failed
                    .is_some_and(|t| elapsed_ns.saturating_sub(t) >= ANNOUNCE_RETRY_NS)
                {
                    self.announce(elapsed_ns);
                }
            }
            NodeState::Drained => {}
            NodeState::Draining => match self.drain {
                Some(DrainStep::StopAllocating) if link.stop_allocating() => {
                    link.drain();
                    self.drain = Some(DrainStep::Acks);
                }
                Some(DrainStep::Acks) if link.drain_done() => {
                    self.state = NodeState::Drained;
                    tracing::warn!(
                        "sync: drained: every live peer acknowledged everything and keeps \
                         this node's entries; it can stop"
                    );
                }
                _ => {}
            },
        }
    }

    /// Adds the routes (if `announce_table` is set); a failure is logged and
    /// tried again after [`ANNOUNCE_RETRY_NS`].
    fn announce(&mut self, now: u64) {
        let Some(a) = &mut self.announcer else {
            return;
        };
        match a.announce() {
            Ok(()) => {
                self.announce_failed = None;
                let routes: Vec<String> = a.routes().iter().map(|r| r.to_string()).collect();
                tracing::info!(
                    "sync: announcing {} in table {}",
                    routes.join(", "),
                    a.table()
                );
            }
            Err(e) => {
                self.announce_failed = Some(now);
                tracing::error!("sync: not announcing (tried again in 5 s): {e}");
            }
        }
    }

    /// The thread stops (SIGTERM, SIGINT): the routes go first.
    pub fn stop(&mut self) {
        self.withdraw();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// docs/ha.md, "Ready": a peer up without its snapshot is waited for,
    /// however long; a silent one only until join_timeout.
    #[test]
    fn ready_waits_for_live_peers_snapshots_and_silent_ones_until_the_timeout() {
        let t = 3 * S;
        assert!(!ready(0, t, [(false, false)].into_iter()));
        assert!(
            ready(3 * S, t, [(false, false)].into_iter()),
            "none answered"
        );
        assert!(
            !ready(60 * S, t, [(true, false)].into_iter()),
            "up, no snapshot"
        );
        assert!(ready(S, t, [(true, true)].into_iter()));
        assert!(!ready(S, t, [(true, true), (false, false)].into_iter()));
        assert!(ready(4 * S, t, [(true, true), (false, false)].into_iter()));
        assert!(ready(0, t, std::iter::empty()));
    }
}
