//! The program's NAT64 session maps (bpf/nat64.h), as one worker writes them:
//! install a settled session's two entries, remove them, read their coarse
//! last-seen (docs/fastpath.md, "NAT64 established sessions"). Each worker
//! has its own handle (a duplicate of the maps' descriptors) and writes only
//! its own sessions' keys, so no lock is shared. Map calls are system calls:
//! they happen per session change and per expiry check, never per packet;
//! installs and removes come in runs (one per worker batch, [`Offload`]'s
//! queue), and a run is one `BPF_MAP_UPDATE_BATCH` / `BPF_MAP_DELETE_BATCH`
//! per map (Linux 5.6), not two calls per session.
//!
//! [`Offload`]: crate::Offload

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
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
    /// The same maps' descriptors, for the batch calls aya 0.14 lacks.
    fd4: OwnedFd,
    fd6: OwnedFd,
    /// False once the kernel refused a batch call as unknown: then one call
    /// per entry, as before.
    batch: bool,
    /// Scratch of [`Nat64Maps::install_all`] and [`Nat64Maps::remove_all`],
    /// kept between runs (no allocation per run once grown).
    k6: Vec<K6>,
    v4: Vec<V4>,
    k4: Vec<K4>,
    v6: Vec<V6>,
    err4: Vec<i32>,
    err6: Vec<i32>,
    /// Shared with [`crate::FastPath`], which reports them.
    pub counters: Arc<SessionCounters>,
}

/// `BPF_MAP_UPDATE_BATCH` and `BPF_MAP_DELETE_BATCH` (include/uapi/linux/bpf.h).
const BPF_MAP_UPDATE_BATCH: libc::c_long = 26;
const BPF_MAP_DELETE_BATCH: libc::c_long = 27;

/// `union bpf_attr`'s `batch` member.
#[repr(C)]
#[derive(Default)]
struct BatchAttr {
    in_batch: u64,
    out_batch: u64,
    keys: u64,
    values: u64,
    count: u32,
    map_fd: u32,
    elem_flags: u64,
    flags: u64,
}

/// One batch call over `keys` (and `values` for an update): how many
/// entries the kernel did, and the error that stopped it (0: none).
fn batch_call(
    cmd: libc::c_long,
    fd: &OwnedFd,
    keys: *const u8,
    values: *const u8,
    n: usize,
) -> (usize, i32) {
    let mut attr = BatchAttr {
        keys: keys as u64,
        values: values as u64,
        count: n as u32,
        map_fd: fd.as_raw_fd() as u32,
        ..BatchAttr::default()
    };
    // SAFETY: attr is a valid bpf_attr prefix of the size passed; keys and
    // values point at n entries of the map's key and value sizes.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            &mut attr as *mut BatchAttr,
            std::mem::size_of::<BatchAttr>() as u32,
        )
    };
    if r == 0 {
        return (n, 0);
    }
    let e = std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO);
    ((attr.count as usize).min(n), e)
}

/// Does this error say the kernel has no batch calls for the map?
fn unsupported(e: i32) -> bool {
    e == libc::EINVAL || e == libc::ENOTSUP || e == libc::EOPNOTSUPP || e == libc::ENOSYS
}

/// The errno of a failed map call (0: it worked).
fn errno(r: Result<(), MapError>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(MapError::SyscallError(s)) => s.io_error.raw_os_error().unwrap_or(libc::EIO),
        Err(_) => libc::EIO,
    }
}

/// A second handle on map `m` (a duplicated descriptor).
pub(crate) fn dup(m: &Map) -> Result<Map, String> {
    MapData::from_fd(dup_fd(m)?)
        .map(Map::HashMap)
        .map_err(|e| e.to_string())
}

/// A duplicate of hash map `m`'s descriptor.
fn dup_fd(m: &Map) -> Result<OwnedFd, String> {
    let Map::HashMap(d) = m else {
        return Err("not a hash map".to_owned());
    };
    d.fd()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("dup: {e}"))
}

impl Nat64Maps {
    pub(crate) fn new(to4: Map, to6: Map, counters: Arc<SessionCounters>) -> Result<Self, String> {
        Ok(Nat64Maps {
            fd4: dup_fd(&to4)?,
            fd6: dup_fd(&to6)?,
            to4: HashMap::try_from(to4).map_err(|e| format!("nat64_6to4 map: {e}"))?,
            to6: HashMap::try_from(to6).map_err(|e| format!("nat64_4to6 map: {e}"))?,
            batch: true,
            k6: Vec::new(),
            v4: Vec::new(),
            k4: Vec::new(),
            v6: Vec::new(),
            err4: Vec::new(),
            err6: Vec::new(),
            counters,
        })
    }

    /// Update (`values` given) or delete every key of `keys` in map `fd`,
    /// in batch calls: `err[i]` is what entry i got (0, or an errno). The
    /// kernel stops a batch at a failing entry: that entry keeps its error
    /// and the batch goes on after it. A kernel without batch calls gets one
    /// call per entry (`one`).
    fn each<K, V>(
        batch: &mut bool,
        fd: &OwnedFd,
        keys: &[K],
        values: Option<&[V]>,
        err: &mut Vec<i32>,
        one: &mut dyn FnMut(usize) -> i32,
    ) {
        err.clear();
        err.resize(keys.len(), 0);
        let mut at = 0;
        while at < keys.len() && *batch {
            let cmd = if values.is_some() {
                BPF_MAP_UPDATE_BATCH
            } else {
                BPF_MAP_DELETE_BATCH
            };
            let vals = values.map_or(std::ptr::null(), |v| v[at..].as_ptr().cast());
            let (done, e) = batch_call(cmd, fd, keys[at..].as_ptr().cast(), vals, keys.len() - at);
            at += done;
            if e == 0 {
                return;
            }
            if done == 0 && at == 0 && unsupported(e) {
                *batch = false;
                break;
            }
            if at < keys.len() {
                err[at] = e;
                at += 1;
            }
        }
        for (i, slot) in err.iter_mut().enumerate().skip(at) {
            *slot = one(i);
        }
    }

    /// Install every session of `es`, both directions (last-seen 0), in
    /// batch calls; `ok(i)` says whether session i is in (neither entry
    /// stays of one that is not). Counted: `installed`, or `map_full` for a
    /// full map (`E2BIG`), or `map_errors`.
    pub fn install_all(
        &mut self,
        es: &[Entries],
        ok: &mut dyn FnMut(usize, Result<(), InstallError>),
    ) {
        self.k6.clear();
        self.v4.clear();
        self.k6.extend(es.iter().map(|e| K6(e.key6)));
        self.v4.extend(es.iter().map(|e| V4(e.to4)));
        let (to4, k6, v4) = (&mut self.to4, &self.k6, &self.v4);
        Self::each(
            &mut self.batch,
            &self.fd4,
            k6,
            Some(v4),
            &mut self.err4,
            &mut |i| errno(to4.insert(k6[i], v4[i], 0)),
        );
        // The IPv4 side only of those whose IPv6 side is in.
        self.k4.clear();
        self.v6.clear();
        for (e, &r) in es.iter().zip(&self.err4) {
            if r == 0 {
                self.k4.push(K4(e.key4));
                self.v6.push(V6(e.to6));
            }
        }
        let (to6, k4, v6) = (&mut self.to6, &self.k4, &self.v6);
        Self::each(
            &mut self.batch,
            &self.fd6,
            k4,
            Some(v6),
            &mut self.err6,
            &mut |i| errno(to6.insert(k4[i], v6[i], 0)),
        );
        let mut j = 0;
        for (i, e) in es.iter().enumerate() {
            let mut r = self.err4[i];
            if r == 0 {
                r = self.err6[j];
                j += 1;
                if r != 0 {
                    let _ = self.to4.remove(&K6(e.key6));
                }
            }
            ok(i, self.outcome(r));
        }
    }

    fn outcome(&self, errno: i32) -> Result<(), InstallError> {
        match errno {
            0 => {
                self.counters.installed.fetch_add(1, Relaxed);
                Ok(())
            }
            libc::E2BIG => {
                self.counters.map_full.fetch_add(1, Relaxed);
                Err(InstallError::Full)
            }
            _ => {
                self.counters.map_errors.fetch_add(1, Relaxed);
                Err(InstallError::Failed)
            }
        }
    }

    /// Remove both directions of every session of `es` (either may be gone
    /// already), in batch calls.
    pub fn remove_all(&mut self, es: &[Entries]) {
        self.k6.clear();
        self.k4.clear();
        self.k6.extend(es.iter().map(|e| K6(e.key6)));
        self.k4.extend(es.iter().map(|e| K4(e.key4)));
        let (to4, k6) = (&mut self.to4, &self.k6);
        Self::each::<K6, V4>(
            &mut self.batch,
            &self.fd4,
            k6,
            None,
            &mut self.err4,
            &mut |i| errno(to4.remove(&k6[i])),
        );
        let (to6, k4) = (&mut self.to6, &self.k4);
        Self::each::<K4, V6>(
            &mut self.batch,
            &self.fd6,
            k4,
            None,
            &mut self.err6,
            &mut |i| errno(to6.remove(&k4[i])),
        );
        for (a, b) in self.err4.iter().zip(&self.err6) {
            if *a == 0 || *b == 0 {
                self.counters.removed.fetch_add(1, Relaxed);
            }
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
