//! A NAT64 node's sessions across its own restart (docs/restart.md): the
//! workers hand their tables over when they stop, the crew writes them to
//! `[daemon] state_file` (a temporary file in the same directory, fsync,
//! rename), and the next start reads the file back into each worker's
//! translator before that worker forwards a packet. The format is
//! `sixgate_sync::state_file` (the sync protocol's records); every record
//! goes to the worker that owns its pool4 port, as a peer's does, and is
//! imported with the same checks (`Translator::restore_replica`, which is
//! `import_replica`'s upsert but for the logging of port blocks).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use sixgate_config::SyncSettings;
use sixgate_core::Translator;
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::nat64::steering::{port_owner, subscriber_worker};
use sixgate_core::nat64::{ImportError, Replica};
use sixgate_sync::state_file::{self, Expect};
use tracing::{error, info, warn};

/// Slab positions a stopping worker walks per call (it walks them all).
const WALK_SPAN: u32 = 65536;

/// Milliseconds since the Unix epoch.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The config hash a state file of this translator's tables carries.
pub fn config_hash(t: &Translator, workers: u16, sync: Option<&SyncSettings>) -> u64 {
    sixgate_config::sync::state_config_hash(t.config(), workers, sync)
}

/// The oldest state file a NAT64 configuration takes, ms: its shortest
/// session timeout (UDP, TCP established or transitory, ICMP).
pub fn max_age_ms(t: &Translator) -> u64 {
    t.config().nat64.as_ref().map_or(0, |n| {
        let s = &n.timeouts;
        u64::from(
            s.udp
                .min(s.tcp_established)
                .min(s.tcp_transitory)
                .min(s.icmp),
        ) * 1000
    })
}

/// Reads `path` whole, but no more than `max_len` bytes; `Ok(None)` when
/// there is no such file. Never blocks on a FIFO, never reads a device.
pub fn read_limited(path: &Path, max_len: u64) -> Result<Option<Vec<u8>>, String> {
    let f = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open it: {e}")),
    };
    let meta = f.metadata().map_err(|e| format!("cannot stat it: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > max_len {
        return Err(format!(
            "{} bytes, more than a state file of these tables can be ({max_len})",
            meta.len()
        ));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    f.take(max_len.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if buf.len() as u64 > max_len {
        return Err(format!(
            "grew past {max_len} bytes while read: not a state file"
        ));
    }
    Ok(Some(buf))
}

/// Writes `bytes` to `path` atomically: a new file beside it (mode 0600),
/// written and fsynced, renamed over `path`, and the directory fsynced. On
/// error `path` is as it was and the temporary file is gone.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp.{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let _ = std::fs::remove_file(&tmp);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Takes the lock of state file `path`: an exclusive `flock` on
/// `.NAME.lock` beside it, held until the process exits (so across the
/// stop's write). `Err` when another process holds it; `Ok(None)` when there
/// is no lock to take (the file cannot be made: the read and the write then
/// say why of their own).
fn lock(path: &Path) -> Result<Option<File>, ()> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(None);
    };
    let mut lock_name = std::ffi::OsString::from(".");
    lock_name.push(name);
    lock_name.push(".lock");
    let Ok(f) = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(dir.join(lock_name))
    else {
        return Ok(None);
    };
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this function owns.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        Ok(Some(f))
    } else if io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK) {
        Err(())
    } else {
        Ok(None)
    }
}

/// What one worker handed over when it stopped.
struct Saved {
    hash: u64,
    pool6: Option<Rfc6052Prefix>,
    unix_ms: u64,
    sessions: Vec<Replica>,
    /// Dynamic BIB entries without sessions in their port-reuse wait.
    cooling: Vec<Replica>,
}

/// A stopping worker's way to hand its tables over ([`crate::Worker::save`]).
pub struct SaveSlot {
    index: usize,
    workers: u16,
    sync: Option<SyncSettings>,
    slots: Arc<Mutex<Vec<Option<Saved>>>>,
}

impl SaveSlot {
    /// Walks `t`'s sessions (the worker has stopped forwarding: nothing
    /// waits on it) and leaves them for the crew to write.
    pub fn save(&self, t: &Translator, now_ns: u64) {
        let mut sessions = Vec::new();
        let mut from = 0;
        loop {
            let next = t.walk_sessions(from, WALK_SPAN, now_ns, |s| {
                if s.expires_in_ms > 0 {
                    sessions.push(sixgate_sync::tables::from_view(&s));
                }
            });
            match next {
                Some(n) => from = n,
                None => break,
            }
        }
        let mut cooling = Vec::new();
        t.walk_cooling_bib(now_ns, |r| cooling.push(r));
        let saved = Saved {
            hash: config_hash(t, self.workers, self.sync.as_ref()),
            pool6: t.config().map.pool6,
            unix_ms: unix_ms(),
            sessions,
            cooling,
        };
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = slots.get_mut(self.index) {
            *s = Some(saved);
        }
    }
}

/// What the start made of the file.
enum Outcome {
    /// No file.
    Absent,
    /// Another running daemon's.
    Locked,
    /// Refused: why, and whether it was set aside as `FILE.refused`.
    Refused(String, bool),
    /// Read: its age and what it held.
    Read {
        age_ms: u64,
        expired: u64,
        total: usize,
        cooling: usize,
    },
}

/// The crew's side: the file's path, what it held for the workers not
/// made yet, and the workers' tables at stop.
pub(crate) struct Restart {
    path: PathBuf,
    workers: usize,
    sync: Option<SyncSettings>,
    read: bool,
    /// The lock on the file (`.NAME.lock` beside it), held while the daemon
    /// runs; `Err`: another daemon holds it, and this one neither reads nor
    /// writes the file.
    lock: Result<Option<File>, ()>,
    /// Each worker's share: sessions, then BIB entries cooling.
    todo: Vec<(Vec<Replica>, Vec<Replica>)>,
    outcome: Outcome,
    imported: u64,
    /// Cooling BIB entries restored, and refused (a conflict, a full table).
    cooled: u64,
    cool_refused: u64,
    refused: [u64; 5],
    made: usize,
    started: Instant,
    slots: Arc<Mutex<Vec<Option<Saved>>>>,
}

fn refusal_index(e: ImportError) -> usize {
    match e {
        ImportError::NotNat64 => 0,
        ImportError::WrongWorker => 1,
        ImportError::NotInPool4 => 2,
        ImportError::Conflict => 3,
        ImportError::TableFull => 4,
    }
}

const REFUSAL_NAMES: [&str; 5] = [
    "not nat64",
    "wrong worker",
    "not in pool4",
    "conflict",
    "table full",
];

impl Restart {
    pub(crate) fn new(path: PathBuf, workers: usize, sync: Option<SyncSettings>) -> Restart {
        Restart {
            path,
            workers,
            sync,
            read: false,
            lock: Ok(None),
            todo: Vec::new(),
            outcome: Outcome::Absent,
            imported: 0,
            cooled: 0,
            cool_refused: 0,
            refused: [0; 5],
            made: 0,
            started: Instant::now(),
            slots: Arc::new(Mutex::new((0..workers).map(|_| None).collect())),
        }
    }

    /// Worker `index`'s slot for its tables at stop.
    pub(crate) fn save_slot(&self, index: usize) -> SaveSlot {
        SaveSlot {
            index,
            workers: self.workers as u16,
            sync: self.sync.clone(),
            slots: self.slots.clone(),
        }
    }

    /// Before worker `index` starts: its share of the file into `t` (the
    /// file is read at the first worker, its records split by owner); after
    /// the last, one log line says what came of it. Returns the sessions
    /// imported (for the worker's fast-path offload).
    pub(crate) fn restore(
        &mut self,
        index: usize,
        t: &mut Translator,
        now_ns: u64,
    ) -> Vec<Replica> {
        if !self.read {
            self.read = true;
            self.started = Instant::now();
            self.load(t);
        }
        let mut imported = Vec::new();
        if let Some((todo, cooling)) = self.todo.get_mut(index) {
            for r in std::mem::take(todo) {
                match t.restore_replica(&r, now_ns) {
                    Ok(()) => {
                        self.imported += 1;
                        imported.push(r);
                    }
                    Err(e) => self.refused[refusal_index(e)] += 1,
                }
            }
            // After the sessions, shortest wait first (as decoded).
            for r in std::mem::take(cooling) {
                match t.restore_cooling_bib(&r, now_ns) {
                    Ok(()) => self.cooled += 1,
                    Err(_) => self.cool_refused += 1,
                }
            }
        }
        self.made += 1;
        if self.made == self.workers {
            self.log();
        }
        imported
    }

    fn load(&mut self, t: &Translator) {
        let Some(n) = t.config().nat64.as_ref() else {
            return;
        };
        self.lock = lock(&self.path);
        if self.lock.is_err() {
            self.outcome = Outcome::Locked;
            return;
        }
        // Sessions, and BIB entries (at most one per session, and the static
        // ones) of which some may be cooling.
        let max_records = u64::from(n.max_sessions)
            .saturating_mul(2)
            .saturating_add(n.static_bib.len() as u64)
            .saturating_add(self.workers as u64);
        let bytes = match read_limited(&self.path, state_file::max_len(max_records)) {
            Ok(None) => return,
            Ok(Some(b)) => b,
            Err(why) => {
                let aside = self.set_aside(true);
                self.outcome = Outcome::Refused(why, aside);
                return;
            }
        };
        let expect = Expect {
            config_hash: config_hash(t, self.workers as u16, self.sync.as_ref()),
            now_unix_ms: unix_ms(),
            max_age_ms: max_age_ms(t),
            max_records,
        };
        match state_file::decode(&bytes, &expect) {
            Ok(r) => {
                let block = n.port_block_size;
                let workers = self.workers as u16;
                self.todo = (0..self.workers)
                    .map(|_| (Vec::new(), Vec::new()))
                    .collect();
                let total = r.sessions.len();
                let cooling = r.cooling.len();
                for c in r.cooling {
                    // A dynamic entry: the owner of its pool4 port.
                    let w = port_owner(c.port4, block, workers);
                    self.todo[usize::from(w).min(self.workers - 1)].1.push(c);
                }
                for s in r.sessions {
                    // The owner of its pool4 port, as for a peer's record;
                    // a static BIB entry's sessions, the owner of its IPv6
                    // side, where the entry lives.
                    let on_static = n.static_bib.iter().any(|b| {
                        (b.proto, b.v6, b.port6, b.v4, b.port4)
                            == (s.proto, s.v6, s.port6, s.v4, s.port4)
                    });
                    let w = if on_static {
                        subscriber_worker(u128::from(s.v6), n.subscriber_prefix_len, workers)
                    } else {
                        port_owner(s.port4, block, workers)
                    };
                    self.todo[usize::from(w).min(self.workers - 1)].0.push(s);
                }
                self.outcome = Outcome::Read {
                    age_ms: r.age_ms,
                    expired: r.expired,
                    total,
                    cooling,
                };
                self.set_aside(false);
            }
            Err(why) => {
                let aside = self.set_aside(true);
                self.outcome = Outcome::Refused(why.to_string(), aside);
            }
        }
    }

    /// A file read is consumed: removed once read, or kept beside as
    /// `FILE.refused` when refused, so that a later start (after a crash)
    /// never takes stale state. Only a regular file: a directory, device or
    /// FIFO (or a symbolic link) at the path is left as it is. True when it
    /// was set aside.
    fn set_aside(&mut self, refused: bool) -> bool {
        if !std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.is_file()) {
            return false;
        }
        let r = if refused {
            let mut to = self.path.clone().into_os_string();
            to.push(".refused");
            std::fs::rename(&self.path, to)
        } else {
            std::fs::remove_file(&self.path)
        };
        if let Err(e) = &r {
            warn!(
                "state: {}: cannot remove it after reading it: {e}; a start after a crash \
                 could take it again",
                self.path.display()
            );
        }
        r.is_ok()
    }

    fn log(&self) {
        let file = self.path.display();
        match &self.outcome {
            Outcome::Absent => info!("state: no {file}: starting with empty NAT64 tables"),
            Outcome::Locked => error!(
                "state: {file} is another running sixgate's (it holds its lock): starting with \
                 empty NAT64 tables, and this daemon will not write it; give each daemon its \
                 own [daemon] state_file"
            ),
            Outcome::Refused(why, true) => warn!(
                "state: {file} refused, starting with empty NAT64 tables: {why} (kept as \
                 {file}.refused)"
            ),
            Outcome::Refused(why, false) => {
                warn!("state: {file} refused, starting with empty NAT64 tables: {why}")
            }
            Outcome::Read {
                age_ms,
                expired,
                total,
                cooling,
            } => {
                let refused: u64 = self.refused.iter().sum();
                let mut why: Vec<String> = self
                    .refused
                    .iter()
                    .zip(REFUSAL_NAMES)
                    .filter(|(n, _)| **n > 0)
                    .map(|(n, name)| format!("{n} {name}"))
                    .collect();
                if why.is_empty() {
                    why.push("none".to_owned());
                }
                info!(
                    "state: restored {} NAT64 sessions from {file} (written {}.{:03} s ago; {} \
                     expired meanwhile; {} of {total} refused: {}{}) in {} ms",
                    self.imported,
                    age_ms / 1000,
                    age_ms % 1000,
                    expired,
                    refused,
                    why.join(", "),
                    match (*cooling, self.cool_refused) {
                        (0, _) => String::new(),
                        (_, 0) => format!("; {} BIB entries cooling", self.cooled),
                        (_, r) => format!("; {} BIB entries cooling, {r} refused", self.cooled),
                    },
                    self.started.elapsed().as_millis()
                );
            }
        }
    }

    /// After the workers stopped: what they handed over, to the file. Not
    /// written (and said why) if a worker handed nothing over (it failed)
    /// or they disagree on the configuration.
    pub(crate) fn write(&self) {
        let started = Instant::now();
        let file = self.path.display();
        if self.lock.is_err() {
            return;
        }
        let slots = std::mem::take(&mut *self.slots.lock().unwrap_or_else(|p| p.into_inner()));
        let mut all = Vec::with_capacity(slots.len());
        for (i, s) in slots.into_iter().enumerate() {
            match s {
                Some(s) => all.push(s),
                None => {
                    warn!(
                        "state: not writing {file}: worker {i} stopped without handing its \
                         tables over; the next start begins empty"
                    );
                    return;
                }
            }
        }
        let Some(first) = all.first() else {
            return;
        };
        let (hash, pool6) = (first.hash, first.pool6);
        if all.iter().any(|s| s.hash != hash) {
            warn!("state: not writing {file}: the workers stopped under different configurations");
            return;
        }
        // The latest walk's time: the downtime subtracted at start is then
        // never more than a session really had behind it (expiry late by
        // the walks' spread, some ms, at worst; never early).
        let written = all.iter().map(|s| s.unix_ms).max().unwrap_or_else(unix_ms);
        let mut sessions = Vec::new();
        let mut cooling = Vec::new();
        for s in all {
            sessions.extend(s.sessions);
            cooling.extend(s.cooling);
        }
        let bytes = state_file::encode(hash, written, &sessions, &cooling, pool6.as_ref());
        match write_atomic(&self.path, &bytes) {
            Ok(()) => info!(
                "state: wrote {} NAT64 sessions{} to {file} ({} bytes) in {} ms",
                sessions.len(),
                match cooling.len() {
                    0 => String::new(),
                    n => format!(" and {n} BIB entries cooling"),
                },
                bytes.len(),
                started.elapsed().as_millis()
            ),
            Err(e) => error!(
                "state: cannot write {file}: {e}; the next start begins with empty NAT64 tables"
            ),
        }
    }
}

#[cfg(test)]
mod tests;
