//! Signal handling: what every live data plane's gateway waits on (SIGINT and
//! SIGTERM, and a worker's failure), so all stop alike and report the same
//! [`Stop`]; [`Hangups`], SIGHUP made harmless until something reloads on it;
//! and the stop pipe that wakes sleeping workers.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use signal_hook::SigId;

use crate::Stop;

/// The signal handlers and the wake-up channel; dropping it removes the
/// handlers.
pub struct Signals {
    wake_rd: UnixStream,
    wake_wr: UnixStream,
    signal: Arc<AtomicUsize>,
    ids: Vec<SigId>,
    failure: Arc<Mutex<Option<String>>>,
}

impl Signals {
    /// Install handlers for SIGINT and SIGTERM.
    pub fn install() -> Result<Signals, String> {
        let (wake_rd, wake_wr) =
            UnixStream::pair().map_err(|e| format!("cannot create a socket pair: {e}"))?;
        let mut s = Signals {
            wake_rd,
            wake_wr,
            signal: Arc::new(AtomicUsize::new(0)),
            ids: Vec::new(),
            failure: Arc::new(Mutex::new(None)),
        };
        for sig in [libc::SIGINT, libc::SIGTERM] {
            let reg = signal_hook::flag::register_usize(sig, s.signal.clone(), sig as usize)
                .and_then(|a| {
                    let w = s.wake_wr.try_clone()?;
                    Ok((a, signal_hook::low_level::pipe::register(sig, w)?))
                });
            match reg {
                Ok((a, b)) => s.ids.extend([a, b]),
                // Dropping s removes what was registered.
                Err(e) => return Err(format!("cannot install signal handlers: {e}")),
            }
        }
        Ok(s)
    }

    /// A handle for a worker to wake [`Signals::wait`] after recording its
    /// failure in [`Signals::failure`].
    pub fn waker(&self) -> std::io::Result<UnixStream> {
        self.wake_wr.try_clone()
    }

    /// Where a worker records why it failed (the first failure wins).
    pub fn failure(&self) -> Arc<Mutex<Option<String>>> {
        self.failure.clone()
    }

    /// Block until SIGINT/SIGTERM or a worker failure.
    pub fn wait(&self) -> Stop {
        loop {
            if let Some(why) = self
                .failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
            {
                return Stop::WorkerFailed(why);
            }
            let sig = self.signal.load(Relaxed);
            if sig != 0 {
                return Stop::Signal(sig as i32);
            }
            let mut b = [0u8; 16];
            match (&self.wake_rd).read(&mut b) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Stop::WorkerFailed(format!("cannot wait for signals: {e}")),
            }
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for id in &self.ids {
            signal_hook::low_level::unregister(*id);
        }
    }
}

/// SIGHUP's default action ends the process, and `sixgate run` reloads on it
/// only once its API thread is up (the API catches it then): a SIGHUP sent
/// while the daemon starts (a service manager's reload racing its start), or on
/// a data plane without the API, would kill it. Installed first thing, this
/// handler only counts them, so they do nothing; the daemon logs them
/// ([`Hangups::take`]). Dropping it removes the handler.
pub struct Hangups {
    count: Arc<AtomicUsize>,
    id: SigId,
}

impl Hangups {
    /// Catch SIGHUP from now on.
    pub fn install() -> Result<Hangups, String> {
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        // SAFETY: the action is one atomic add, async-signal-safe.
        let id = unsafe {
            signal_hook::low_level::register(libc::SIGHUP, move || {
                c.fetch_add(1, Relaxed);
            })
        }
        .map_err(|e| format!("cannot install a SIGHUP handler: {e}"))?;
        Ok(Hangups { count, id })
    }

    /// SIGHUPs since the last call.
    pub fn take(&self) -> usize {
        self.count.swap(0, Relaxed)
    }
}

impl Drop for Hangups {
    fn drop(&mut self) {
        signal_hook::low_level::unregister(self.id);
    }
}

/// A pipe, close-on-exec: (read end, write end). Workers poll the read end; the
/// gateway closes the write end to stop them.
pub fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
