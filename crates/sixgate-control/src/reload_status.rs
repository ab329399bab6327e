//! What became of the configuration reloads (`sixgate reload`, SIGHUP): the API
//! bumps it, `show status` and the metrics read it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{SystemTime, UNIX_EPOCH};

/// Reload outcomes since the daemon started. Shared through an `Arc`.
#[derive(Debug, Default)]
pub struct ReloadStatus {
    succeeded: AtomicU64,
    failed: AtomicU64,
    last_ok: AtomicBool,
    last_unix_s: AtomicU64,
    last_error: Mutex<Option<String>>,
}

/// One reading of [`ReloadStatus`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReloadReading {
    /// Reloads that took effect.
    pub succeeded: u64,
    /// Reloads refused (the old configuration kept running).
    pub failed: u64,
    /// Whether the last reload took effect (true before the first one).
    pub last_ok: bool,
    /// When the last reload was tried, seconds since the Unix epoch (0: never).
    pub last_unix_s: u64,
    /// Why the last reload was refused, if it was.
    pub last_error: Option<String>,
}

impl ReloadStatus {
    /// Record a reload that took effect.
    pub fn record_success(&self) {
        self.succeeded.fetch_add(1, Relaxed);
        self.last_ok.store(true, Relaxed);
        self.last_unix_s.store(now_s(), Relaxed);
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Record a refused reload and why.
    pub fn record_failure(&self, why: &str) {
        self.failed.fetch_add(1, Relaxed);
        self.last_ok.store(false, Relaxed);
        self.last_unix_s.store(now_s(), Relaxed);
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.to_string());
    }

    /// The current reading.
    pub fn read(&self) -> ReloadReading {
        let failed = self.failed.load(Relaxed);
        let succeeded = self.succeeded.load(Relaxed);
        ReloadReading {
            succeeded,
            failed,
            last_ok: self.last_ok.load(Relaxed) || (succeeded == 0 && failed == 0),
            last_unix_s: self.last_unix_s.load(Relaxed),
            last_error: self
                .last_error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_keeps_the_last_error() {
        let s = ReloadStatus::default();
        assert!(s.read().last_ok);
        s.record_failure("line 3: unknown key `x`");
        let r = s.read();
        assert_eq!((r.succeeded, r.failed, r.last_ok), (0, 1, false));
        assert_eq!(r.last_error.as_deref(), Some("line 3: unknown key `x`"));
        s.record_success();
        let r = s.read();
        assert_eq!(
            (r.succeeded, r.failed, r.last_ok, r.last_error),
            (1, 1, true, None)
        );
        assert!(r.last_unix_s > 0);
    }
}
