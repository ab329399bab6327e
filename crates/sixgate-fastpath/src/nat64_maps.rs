//! The program's NAT64 session maps (bpf/nat64.h), as one worker writes them:
//! install a settled session's two entries, remove them, read their coarse
//! last-seen (docs/fastpath.md, "NAT64 established sessions"). Each worker
//! has its own handle (a duplicate of the maps' descriptors) and writes only
//! its own sessions' keys, so no lock is shared. Map calls are system calls:
//! they happen per session change and per expiry check, never per packet.

use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use aya::maps::{HashMap, Map, MapData, MapError};
use sixgate_core::fastpath::nat64::{Entries, Key4, Key6, To4, To6};

/// Most sessions the maps hold (each direction one entry), whatever
/// `max_sessions` says: the maps are preallocated, about 230 bytes of
/// kernel memory per session, so 60 MB at most.
pub const MAX_SESSIONS: u32 = 262_144;

macro_rules! pod {
    ($name:ident, $t:ty) => {
        #[repr(transparent)]
        #[derive(Clone, Copy)]
        pub(crate) struct $name(pub(crate) $t);
        // SAFETY: repr(C) structs of integers and byte arrays with their
        // padding spelt out as fields (sixgate_core::fastpath::nat64).
        unsafe impl aya::Pod for $name {}
    };
}
pod!(K6, Key6);
pod!(K4, Key4);
pod!(V4, To4);
pod!(V6, To6);

/// What the workers did to the maps, summed over workers.
#[derive(Debug, Default)]
pub struct SessionCounters {
    /// Sessions installed (both entries).
    pub installed: AtomicU64,
    /// Sessions removed (the core deleted them or they left ESTABLISHED).
    pub removed: AtomicU64,
    /// Sessions the core refreshed because the program had seen them.
    pub refreshed: AtomicU64,
    /// Sessions left on the slow path because a map was full.
    pub map_full: AtomicU64,
    /// Other failed map calls (the session stays on the slow path).
    pub map_errors: AtomicU64,
}

/// Why an install did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallError {
    /// A map is full (`E2BIG`): the session stays on the slow path.
    Full,
    /// Another failure (a permission, a kernel error).
    Failed,
}

/// One worker's handle on the two maps.
pub struct Nat64Maps {
    to4: HashMap<MapData, K6, V4>,
    to6: HashMap<MapData, K4, V6>,
    /// Shared with [`crate::FastPath`], which reports them.
    pub counters: Arc<SessionCounters>,
}

fn is_full(e: &MapError) -> bool {
    matches!(e, MapError::SyscallError(s) if s.io_error.raw_os_error() == Some(libc::E2BIG))
}

/// A second handle on map `m` (a duplicated descriptor).
pub(crate) fn dup(m: &Map) -> Result<Map, String> {
    let Map::HashMap(d) = m else {
        return Err("not a hash map".to_owned());
    };
    let fd = d
        .fd()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("dup: {e}"))?;
    MapData::from_fd(fd)
        .map(Map::HashMap)
        .map_err(|e| e.to_string())
}

impl Nat64Maps {
    pub(crate) fn new(to4: Map, to6: Map, counters: Arc<SessionCounters>) -> Result<Self, String> {
        Ok(Nat64Maps {
            to4: HashMap::try_from(to4).map_err(|e| format!("nat64_6to4 map: {e}"))?,
            to6: HashMap::try_from(to6).map_err(|e| format!("nat64_4to6 map: {e}"))?,
            counters,
        })
    }

    /// Install both directions of a session (last-seen 0). On failure
    /// neither stays, and the failure is counted.
    pub fn install(&mut self, e: &Entries) -> Result<(), InstallError> {
        let r = self.to4.insert(K6(e.key6), V4(e.to4), 0).and_then(|()| {
            self.to6.insert(K4(e.key4), V6(e.to6), 0).inspect_err(|_| {
                let _ = self.to4.remove(&K6(e.key6));
            })
        });
        match r {
            Ok(()) => {
                self.counters.installed.fetch_add(1, Relaxed);
                Ok(())
            }
            Err(e) if is_full(&e) => {
                self.counters.map_full.fetch_add(1, Relaxed);
                Err(InstallError::Full)
            }
            Err(_) => {
                self.counters.map_errors.fetch_add(1, Relaxed);
                Err(InstallError::Failed)
            }
        }
    }

    /// Remove both directions (either may be gone already).
    pub fn remove(&mut self, e: &Entries) {
        let a = self.to4.remove(&K6(e.key6)).is_ok();
        let b = self.to6.remove(&K4(e.key4)).is_ok();
        if a || b {
            self.counters.removed.fetch_add(1, Relaxed);
        }
    }

    /// The later last-seen of the two entries (`bpf_ktime_get_ns`, 0: no
    /// packet yet), or `None` when neither is there.
    pub fn last_seen(&self, e: &Entries) -> Option<u64> {
        let a = self.to4.get(&K6(e.key6), 0).ok().map(|v| v.0.last_seen_ns);
        let b = self.to6.get(&K4(e.key4), 0).ok().map(|v| v.0.last_seen_ns);
        match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).max(b.unwrap_or(0))),
        }
    }
}
