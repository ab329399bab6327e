//! The first drop of each kind, logged once with its reason and a hint
//! (`DropReason::hint`), so an operator learns why traffic vanishes without
//! reading counters. Outside the packet path: a thread reads the workers'
//! summed counters every [`EVERY`] and compares them with what it saw before;
//! a reason is logged the first time its count is above zero, never again
//! while the daemon runs, and at most [`MAX_LINES`] reasons per look (the rest
//! in one line), so a burst of new kinds cannot flood the log.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use sixgate_core::{Counters, DropReason};

/// How often the counters are read.
pub const EVERY: Duration = Duration::from_secs(1);

/// Most reasons logged with their hints in one look.
pub const MAX_LINES: usize = 5;

/// Which reasons have been counted already.
#[derive(Clone, Debug)]
pub struct FirstDrops {
    seen: [bool; DropReason::COUNT],
}

impl Default for FirstDrops {
    fn default() -> Self {
        FirstDrops {
            seen: [false; DropReason::COUNT],
        }
    }
}

impl FirstDrops {
    /// The reasons counted in `totals` that were not before, in counter order;
    /// each is returned once in the detector's life.
    pub fn newly_seen(&mut self, totals: &Counters) -> Vec<(DropReason, u64)> {
        let mut new = Vec::new();
        for &r in DropReason::ALL {
            let n = totals.drops(r);
            // The host's own control traffic, on every start: nothing to say.
            if r == DropReason::HostMulticast {
                continue;
            }
            if n > 0 && !self.seen[r as usize] {
                self.seen[r as usize] = true;
                new.push((r, n));
            }
        }
        new
    }
}

/// The log lines for `new` reasons: one per reason with its hint, up to
/// [`MAX_LINES`], then one naming the rest.
pub fn lines(new: &[(DropReason, u64)]) -> Vec<String> {
    let mut out: Vec<String> = new
        .iter()
        .take(MAX_LINES)
        .map(|(r, n)| {
            format!(
                "first {} drop ({n} so far; counted in `sixgate show counters`): {}",
                r.as_str(),
                r.hint()
            )
        })
        .collect();
    if new.len() > MAX_LINES {
        let rest: Vec<&str> = new[MAX_LINES..].iter().map(|(r, _)| r.as_str()).collect();
        out.push(format!(
            "first drops of {} more kinds: {} (see `sixgate show counters`)",
            rest.len(),
            rest.join(", ")
        ));
    }
    out
}

/// The running watcher; [`Watcher::stop`] ends it.
pub struct Watcher {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl Watcher {
    /// Read `totals` (the workers' counters, summed; `None` before there are
    /// workers) every [`EVERY`] and log the first drop of each kind.
    pub fn spawn(totals: impl Fn() -> Option<Counters> + Send + 'static) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("first-drops".into())
            .spawn(move || {
                let mut seen = FirstDrops::default();
                while !flag.load(Ordering::Relaxed) {
                    std::thread::park_timeout(EVERY);
                    if let Some(t) = totals() {
                        for line in lines(&seen.newly_seen(&t)) {
                            tracing::warn!(target: "sixgate::drops", "{line}");
                        }
                    }
                }
            })?;
        Ok(Watcher { stop, handle })
    }

    /// End the thread (within a moment).
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.thread().unpark();
        let _ = self.handle.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(drops: &[(DropReason, u64)]) -> Counters {
        let mut c = Counters::default();
        for &(r, n) in drops {
            c.dropped[r as usize] += n;
        }
        c
    }

    /// Each reason is reported the first time it is counted, then never again,
    /// however much it grows; a later new reason still is.
    #[test]
    fn a_reason_is_new_once() {
        let mut f = FirstDrops::default();
        assert!(f.newly_seen(&Counters::default()).is_empty());
        let t = with(&[(DropReason::WkpNonGlobal, 3)]);
        assert_eq!(f.newly_seen(&t), [(DropReason::WkpNonGlobal, 3)]);
        let t = with(&[(DropReason::WkpNonGlobal, 9)]);
        assert!(f.newly_seen(&t).is_empty());
        let t = with(&[(DropReason::WkpNonGlobal, 9), (DropReason::NoBibEntry, 1)]);
        assert_eq!(f.newly_seen(&t), [(DropReason::NoBibEntry, 1)]);
    }

    /// Every reason can be detected and gets a line with its name and hint.
    #[test]
    fn every_reason_gets_its_hint() {
        for &r in DropReason::ALL {
            let mut f = FirstDrops::default();
            let new = f.newly_seen(&with(&[(r, 1)]));
            if r == DropReason::HostMulticast {
                // Issue 30: the host's own MLD on every start is no WARN.
                assert!(new.is_empty());
                continue;
            }
            assert_eq!(new, [(r, 1)]);
            let l = lines(&new);
            assert_eq!(l.len(), 1);
            assert!(
                l[0].starts_with(&format!("first {} drop (1 so far", r.as_str()))
                    && l[0].ends_with(r.hint()),
                "{}",
                l[0]
            );
        }
        let l = lines(&[(DropReason::WkpNonGlobal, 2)]);
        assert!(
            l[0].contains("64:ff9b::/96 cannot reach non-global IPv4")
                && l[0].contains("wkp_strict = false"),
            "{l:?}"
        );
    }

    /// A burst of new kinds: MAX_LINES lines with hints, then one for the rest.
    #[test]
    fn many_new_kinds_at_once_are_capped() {
        let all: Vec<(DropReason, u64)> = DropReason::ALL.iter().map(|&r| (r, 1)).collect();
        let l = lines(&all);
        assert_eq!(l.len(), MAX_LINES + 1);
        assert!(
            l[MAX_LINES].starts_with(&format!(
                "first drops of {} more kinds",
                DropReason::COUNT - MAX_LINES
            )),
            "{}",
            l[MAX_LINES]
        );
    }
}
