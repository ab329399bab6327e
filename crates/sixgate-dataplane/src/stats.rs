//! Per-worker counters the main thread can read without a lock on the packet path.
//!
//! A worker counts in plain integers (its translator's [`Counters`] and its
//! [`IoCounters`]) and copies them into its [`WorkerStats`] with relaxed atomic
//! stores after every batch of reads (at most a batch of packets, and
//! whenever its queue runs dry). Readers see each counter exactly, at most one
//! batch old; counters of one snapshot may come from two neighbouring batches.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use sixgate_core::{Counters, DropReason, nat64};

use crate::IoCounters;

/// Every counter of one worker, as atomics.
#[derive(Debug)]
pub struct WorkerStats {
    core: [AtomicU64; 8],
    dropped: [AtomicU64; DropReason::COUNT],
    io: [AtomicU64; IoCounters::COUNT],
    /// NAT64 table sizes, published with every timer tick (every 100 ms), not per
    /// batch: they change slowly and are bigger than a few counters.
    nat64: Mutex<Option<nat64::Stats>>,
    /// Removed pool4 prefixes this worker's translator still has BIB entries
    /// on (see `live`), published when they change.
    pub(crate) draining: Mutex<Vec<nat64::Pool4Entry>>,
    /// The configuration generation this worker runs (see `live`).
    pub(crate) applied: AtomicU64,
}

// Written out: arrays longer than 32 have no derived `Default`.
impl Default for WorkerStats {
    fn default() -> Self {
        WorkerStats {
            core: Default::default(),
            dropped: std::array::from_fn(|_| AtomicU64::new(0)),
            io: Default::default(),
            nat64: Mutex::new(None),
            draining: Mutex::new(Vec::new()),
            applied: AtomicU64::new(0),
        }
    }
}

/// A copy of the counters, one worker's or summed over all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The translators' counters.
    pub core: Counters,
    /// I/O and offload counters.
    pub io: IoCounters,
    /// NAT64 table sizes (nat64 mode only).
    pub nat64: Option<nat64::Stats>,
}

impl Snapshot {
    /// Add another snapshot into this one.
    pub fn merge(&mut self, o: &Snapshot) {
        self.core.merge(&o.core);
        self.io.merge(&o.io);
        match (&mut self.nat64, &o.nat64) {
            (Some(a), Some(b)) => a.merge(b),
            (a @ None, Some(b)) => *a = Some(*b),
            (_, None) => {}
        }
    }

    /// The NAT64 tables in one line (nat64 mode only).
    pub fn nat64_summary(&self) -> Option<String> {
        let n = self.nat64.as_ref()?;
        let pp = |p: &nat64::PerProto| format!("tcp {} udp {} icmp {}", p.tcp, p.udp, p.icmp);
        Some(format!(
            "nat64: sessions {}; bib {}; pool4 ports in use {} of {}; subscribers {}, \
             port blocks {}, held SYNs {}, events lost {}",
            pp(&n.sessions),
            pp(&n.bib),
            n.ports_in_use.total(),
            n.ports_owned.total(),
            n.subscribers,
            n.port_blocks,
            n.held_syns,
            n.events_lost
        ))
    }

    /// A MAP-T CE's NAPT44 in one line (mapt-ce mode only): the same tables
    /// in a CE's words (RFC 7597 §5.1: its LAN hosts share its port set; RFC
    /// 4787 mappings). It holds no SYNs and has no port blocks, so neither is
    /// shown.
    pub fn napt44_summary(&self) -> Option<String> {
        let n = self.nat64.as_ref()?;
        let pp = |p: &nat64::PerProto| format!("tcp {} udp {} icmp {}", p.tcp, p.udp, p.icmp);
        Some(format!(
            "napt44: sessions {}; mappings {}; port-set ports in use {} of {}; LAN hosts {}",
            pp(&n.sessions),
            pp(&n.bib),
            n.ports_in_use.total(),
            n.ports_owned.total(),
            n.subscribers,
        ))
    }

    /// One line for humans, e.g. at exit.
    pub fn summary(&self) -> String {
        let c = &self.core;
        let io = &self.io;
        let mut s = format!(
            "rx {} pkts {} B, tx {} pkts {} B; translated 6to4 {} 4to6 {}, hairpinned {}, \
             fragments {}, icmp errors sent {}; dropped {}",
            io.rx_packets,
            io.rx_bytes,
            io.tx_packets,
            io.tx_bytes,
            c.translated_6to4,
            c.translated_4to6,
            c.hairpinned,
            c.fragments_out,
            c.icmp_generated,
            c.total_drops() + io.offload_dropped + io.rx_truncated + io.no_route + io.handoff_full,
        );
        let reasons: Vec<String> = DropReason::ALL
            .iter()
            .filter(|r| c.drops(**r) > 0)
            .map(|r| format!("{} {}", r.as_str(), c.drops(*r)))
            .chain((io.offload_dropped > 0).then(|| format!("offload {}", io.offload_dropped)))
            .chain((io.rx_truncated > 0).then(|| format!("truncated {}", io.rx_truncated)))
            .chain((io.no_route > 0).then(|| format!("no_route {}", io.no_route)))
            .chain((io.handoff_full > 0).then(|| format!("handoff_full {}", io.handoff_full)))
            .collect();
        if !reasons.is_empty() {
            s.push_str(&format!(" ({})", reasons.join(", ")));
        }
        s.push_str(&format!(
            "; gso in {} whole {} split {}, csum sw {}; errors rx {} tx {}",
            io.gso_in, io.gso_whole, io.gso_split, io.csum_sw, io.rx_errors, io.tx_errors
        ));
        if io.to_kernel > 0 {
            s.push_str(&format!("; to kernel {}", io.to_kernel));
        }
        if io.handoff > 0 {
            s.push_str(&format!("; handed to owner {}", io.handoff));
        }
        s
    }
}

/// Every worker's published counters, readable from any thread for as long as
/// it is held (the metrics endpoint and the API read through one); cloning is cheap.
#[derive(Clone, Debug)]
pub struct StatsHandle(pub(crate) std::sync::Arc<[std::sync::Arc<WorkerStats>]>);

impl StatsHandle {
    /// A handle on these workers' counters (another data plane's workers).
    pub fn new(workers: std::sync::Arc<[std::sync::Arc<WorkerStats>]>) -> StatsHandle {
        StatsHandle(workers)
    }

    /// Each worker's counters, as last published, in worker order.
    pub fn worker_snapshots(&self) -> Vec<Snapshot> {
        each(&self.0)
    }

    /// All workers' counters, summed.
    pub fn snapshot(&self) -> Snapshot {
        sum(&self.0)
    }
}

/// Each worker's counters, as last published, in worker order.
pub fn each(workers: &[std::sync::Arc<WorkerStats>]) -> Vec<Snapshot> {
    workers.iter().map(|s| s.snapshot()).collect()
}

/// All workers' counters, as last published, summed.
pub fn sum(workers: &[std::sync::Arc<WorkerStats>]) -> Snapshot {
    let mut total = Snapshot::default();
    for s in workers {
        total.merge(&s.snapshot());
    }
    total
}

impl WorkerStats {
    /// Publish the worker's current counters (worker thread only).
    pub fn publish(&self, c: &Counters, io: &IoCounters) {
        let core = [
            c.translated_6to4,
            c.translated_4to6,
            c.hairpinned,
            c.fragments_out,
            c.icmp_generated,
            c.icmp_rate_limited,
            c.bytes_6to4,
            c.bytes_4to6,
        ];
        for (a, v) in self.core.iter().zip(core) {
            a.store(v, Relaxed);
        }
        for (a, v) in self.dropped.iter().zip(c.dropped) {
            a.store(v, Relaxed);
        }
        for (a, v) in self.io.iter().zip(io.to_array()) {
            a.store(v, Relaxed);
        }
    }

    /// Publish the worker's NAT64 table sizes (worker thread only).
    pub fn publish_nat64(&self, s: nat64::Stats) {
        *self.nat64.lock().unwrap_or_else(|p| p.into_inner()) = Some(s);
    }

    /// Read the last published counters (any thread).
    pub fn snapshot(&self) -> Snapshot {
        let core: [u64; 8] = std::array::from_fn(|i| self.core[i].load(Relaxed));
        let io = std::array::from_fn(|i| self.io[i].load(Relaxed));
        Snapshot {
            core: Counters {
                translated_6to4: core[0],
                translated_4to6: core[1],
                hairpinned: core[2],
                fragments_out: core[3],
                icmp_generated: core[4],
                icmp_rate_limited: core[5],
                bytes_6to4: core[6],
                bytes_4to6: core[7],
                dropped: std::array::from_fn(|i| self.dropped[i].load(Relaxed)),
            },
            io: IoCounters::from_array(io),
            nat64: *self.nat64.lock().unwrap_or_else(|p| p.into_inner()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_then_snapshot_round_trips_every_counter() {
        let mut c = Counters {
            translated_6to4: 1,
            translated_4to6: 2,
            hairpinned: 3,
            fragments_out: 4,
            icmp_generated: 5,
            icmp_rate_limited: 6,
            ..Counters::default()
        };
        for (i, d) in c.dropped.iter_mut().enumerate() {
            *d = 100 + i as u64;
        }
        let io = IoCounters {
            rx_packets: 11,
            rx_bytes: 12,
            tx_packets: 13,
            tx_bytes: 14,
            rx_errors: 15,
            tx_errors: 16,
            rx_truncated: 17,
            gso_in: 18,
            gso_whole: 19,
            gso_split: 20,
            csum_sw: 21,
            offload_dropped: 22,
            to_kernel: 23,
            no_route: 24,
            handoff: 25,
            handoff_full: 26,
        };
        let s = WorkerStats::default();
        s.publish(&c, &io);
        let snap = s.snapshot();
        assert_eq!(snap.core, c);
        assert_eq!(snap.io, io);
        let mut sum = snap.clone();
        sum.merge(&snap);
        assert_eq!(sum.io.gso_split, 40);
        assert_eq!(sum.core.hairpinned, 6);
        let line = snap.summary();
        assert!(line.contains("translated 6to4 1 4to6 2"), "{line}");
        assert!(line.contains("malformed 100"), "{line}");
        assert!(line.contains("offload 22"), "{line}");
        assert!(line.contains("handoff_full 26"), "{line}");
        assert!(line.contains("handed to owner 25"), "{line}");
        assert!(!line.contains('\n'));
    }

    /// A CE's exit line speaks of LAN hosts and its port set, not of NAT64's
    /// subscribers, pool4 and held SYNs.
    #[test]
    fn napt44_summary_in_a_ces_words() {
        let snap = Snapshot {
            nat64: Some(nat64::Stats {
                subscribers: 3,
                ..nat64::Stats::default()
            }),
            ..Snapshot::default()
        };
        let line = snap.napt44_summary().unwrap();
        assert!(line.starts_with("napt44: sessions tcp 0"), "{line}");
        assert!(line.contains("LAN hosts 3"), "{line}");
        assert!(line.contains("port-set ports in use"), "{line}");
        for nat64_word in ["subscriber", "held SYN", "pool4", "bib"] {
            assert!(!line.contains(nat64_word), "{line}");
        }
        assert_eq!(Snapshot::default().napt44_summary(), None);
    }

    /// docs/fastpath.md, "Counters": the program's verdicts and ways out add
    /// up, and the totals are the fast path's translations plus the workers'.
    #[test]
    fn fast_path_counters_add_up_and_join_the_workers() {
        let f = FastPathCounters {
            received: 10,
            translated_6to4: 4,
            translated_4to6: 3,
            passed: 2,
            aborted: 1,
            nat64_sessions: FastPathSessions::default(),
            redirected: 5,
            redirected_neigh: 1,
            to_kernel: 1,
            route_kept: 6,
            route_asked: 1,
        };
        assert!(f.adds_up());
        assert!(!FastPathCounters { received: 11, ..f }.adds_up());
        assert!(!FastPathCounters { to_kernel: 2, ..f }.adds_up());
        let mut slow = Snapshot::default();
        slow.core.translated_6to4 = 20;
        slow.core.translated_4to6 = 30;
        assert_eq!(f.with_slow(&slow), [24, 33]);
        let line = f.together_summary(&slow);
        assert!(
            line.contains("6to4 24 4to6 33 (fast path 7, workers 50)"),
            "{line}"
        );
        assert!(
            f.summary()
                .starts_with("fast path: received 10, translated 6to4 4 4to6 3")
        );
        assert_eq!(
            f.forwarding_summary(),
            "fast path forwarding: translated packets redirected 5, redirected to an \
             unresolved neighbour 1, routed by the kernel 1; route check answers kept 6, \
             asked of the FIB 1"
        );
        assert!(!f.summary().contains("NAT64"));
        let n = FastPathCounters {
            nat64_sessions: FastPathSessions {
                installed: 2,
                ..FastPathSessions::default()
            },
            ..f
        };
        assert!(n.summary().ends_with(
            "; NAT64 sessions installed 2, removed 0, refreshed 0, map full 0, map errors 0"
        ));
    }
}

/// An in-kernel fast path's counters (docs/fastpath.md), summed over CPUs:
/// `received = translated_6to4 + translated_4to6 + passed + aborted`. The
/// packets it passed are the ones the workers' counters then count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastPathCounters {
    /// Every packet the program saw.
    pub received: u64,
    /// Translated IPv6 → IPv4 in the kernel.
    pub translated_6to4: u64,
    /// Translated IPv4 → IPv6 in the kernel.
    pub translated_4to6: u64,
    /// Passed up unchanged (to the slow path, or not for sixgate at all).
    pub passed: u64,
    /// Dropped half-translated after a helper failed (never expected).
    pub aborted: u64,
    /// How the translated packets left: `translated_6to4 + translated_4to6
    /// = redirected + redirected_neigh + to_kernel`. Sent out of the egress
    /// interface by the program (the next hop's MAC address known).
    pub redirected: u64,
    /// Sent out by the program with the kernel resolving the next hop's
    /// neighbour (`bpf_redirect_neigh`).
    pub redirected_neigh: u64,
    /// Handed to the kernel's routing: the FIB had no forwarding answer.
    pub to_kernel: u64,
    /// The route check ("would the kernel route it into the slow path's
    /// device?"): answered from the answer kept for the flow in this
    /// routing generation, or by asking the kernel's FIB.
    pub route_kept: u64,
    /// The route check asked the FIB.
    pub route_asked: u64,
    /// NAT64 sessions, by what the workers did with them in the program's
    /// maps: installed, removed, refreshed in the core (the program saw
    /// them), left on the slow path for a full map, or for another failed
    /// map call.
    pub nat64_sessions: FastPathSessions,
}

/// What the workers did with NAT64 sessions on the fast path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastPathSessions {
    /// Installed in the program's maps (both directions).
    pub installed: u64,
    /// Removed again (deleted by the core, or no longer ESTABLISHED).
    pub removed: u64,
    /// Refreshed in the core because the program saw them.
    pub refreshed: u64,
    /// Left on the slow path: a map was full.
    pub map_full: u64,
    /// Left on the slow path: another map call failed.
    pub map_errors: u64,
}

impl FastPathCounters {
    /// Translated in the kernel, both directions.
    pub fn translated(&self) -> u64 {
        self.translated_6to4 + self.translated_4to6
    }

    /// `received = translated + passed + aborted` and `translated =
    /// redirected + redirected_neigh + to_kernel`: true whenever no packet
    /// is between the program's first count and its verdict (the counters
    /// are read one by one while packets flow).
    pub fn adds_up(&self) -> bool {
        self.received == self.translated() + self.passed + self.aborted
            && self.translated() == self.redirected + self.redirected_neigh + self.to_kernel
    }

    /// Translated by the fast path and the workers (`slow`) together:
    /// `[6to4, 4to6]`. A packet is translated by one of them only, since
    /// the program passes up unchanged what it does not translate.
    pub fn with_slow(&self, slow: &Snapshot) -> [u64; 2] {
        [
            self.translated_6to4 + slow.core.translated_6to4,
            self.translated_4to6 + slow.core.translated_4to6,
        ]
    }

    /// One line for humans: the program's verdicts, then what the workers
    /// did with NAT64 sessions, if anything.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "fast path: received {}, translated 6to4 {} 4to6 {}, passed to the slow path {}, \
             aborted {}",
            self.received, self.translated_6to4, self.translated_4to6, self.passed, self.aborted
        );
        let n = &self.nat64_sessions;
        if n.installed > 0 || n.map_full + n.map_errors > 0 {
            s.push_str(&format!(
                "; NAT64 sessions installed {}, removed {}, refreshed {}, map full {}, map \
                 errors {}",
                n.installed, n.removed, n.refreshed, n.map_full, n.map_errors
            ));
        }
        s
    }

    /// One line for humans: how the translated packets left (bpf/forward.h),
    /// and how the route check answered (bpf/route_cache.h). A line of its
    /// own, after [`FastPathCounters::summary`]'s.
    pub fn forwarding_summary(&self) -> String {
        format!(
            "fast path forwarding: translated packets redirected {}, redirected to an \
             unresolved neighbour {}, routed by the kernel {}; route check answers kept {}, \
             asked of the FIB {}",
            self.redirected,
            self.redirected_neigh,
            self.to_kernel,
            self.route_kept,
            self.route_asked
        )
    }

    /// One line for humans: translated, fast and slow path together.
    pub fn together_summary(&self, slow: &Snapshot) -> String {
        let [v6to4, v4to6] = self.with_slow(slow);
        format!(
            "translated, fast and slow path together: 6to4 {v6to4} 4to6 {v4to6} (fast path \
             {}, workers {})",
            self.translated(),
            slow.core.translated_6to4 + slow.core.translated_4to6
        )
    }
}
