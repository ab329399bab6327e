//! Pacing: when may the next batch go, and how far behind schedule are we.
//!
//! The schedule is fixed up front: packet `i` (0-based) is due `i / rate` seconds
//! after the start, and a trial is exactly `rate × duration` packets. The sender
//! works as a token bucket whose depth is one batch: tokens arrive at `rate`, and
//! a `sendmmsg` goes out once a whole batch is due (or the last, shorter batch).
//! A sender that fell behind (a late wake-up, a slow system call) does not sleep:
//! it keeps sending whole batches back to back until it has caught up, so the
//! backlog is carried, never dropped, and the lateness is measured instead
//! ([`Pacer::lateness`]). A trial is time-bound: at `duration` (plus [`GRACE`])
//! it stops even if part of the schedule is unsent, and that shortfall is
//! reported. This is what RFC 8219 testers (siitperf) do: a trial whose sender
//! ends too far behind its schedule did not offer the rate it claims.

use std::time::Duration;

const NANOS: u128 = 1_000_000_000;

/// How long after `duration` a paced trial may still send what is left of its
/// schedule: the last batch is due just before the end, and a wake-up a few
/// microseconds late must not cut it off.
pub const GRACE: Duration = Duration::from_millis(10);

/// What the sender should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Send this many packets now (never more than one batch).
    Send(usize),
    /// Nothing is due yet: wait until this offset from the start.
    WaitUntil(Duration),
    /// Every packet of the trial has been sent (or, unpaced, the time is up).
    Done,
}

/// The schedule of one trial.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    /// Packets per second; `None` = as fast as possible for `duration`.
    /// Integer arithmetic throughout, so that a packet is due exactly at
    /// [`Pacer::due_at`] and not a rounding error later.
    rate: Option<u64>,
    /// Packets in the trial (paced only).
    total: u64,
    duration: Duration,
    batch: usize,
}

impl Pacer {
    /// A schedule of `rate` packets per second (0 = unpaced) for `duration`,
    /// in batches of at most `batch` packets.
    pub fn new(rate: u64, duration: Duration, batch: usize) -> Self {
        assert!(batch > 0, "batch must be at least 1");
        let (rate, total) = if rate == 0 {
            (None, u64::MAX)
        } else {
            let total = (u128::from(rate) * duration.as_nanos()).div_ceil(NANOS) as u64;
            (Some(rate), total.max(1))
        };
        Pacer {
            rate,
            total,
            duration,
            batch,
        }
    }

    /// Packets in the trial; `None` when unpaced (it is time-bound instead).
    pub fn total(&self) -> Option<u64> {
        self.rate.map(|_| self.total)
    }

    /// Offset from the start at which packet `index` is due.
    pub fn due_at(&self, index: u64) -> Duration {
        match self.rate {
            // Rounded up, so that the packet is due (per `due_count`) at that instant.
            Some(rate) => {
                let ns = (u128::from(index) * NANOS).div_ceil(u128::from(rate));
                Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
            }
            None => Duration::ZERO,
        }
    }

    /// How many packets are due `elapsed` after the start (counting packet 0,
    /// due at once), capped at the trial's total.
    pub fn due_count(&self, elapsed: Duration) -> u64 {
        match self.rate {
            Some(rate) => {
                let n = elapsed.as_nanos() * u128::from(rate) / NANOS + 1;
                u64::try_from(n).unwrap_or(u64::MAX).min(self.total)
            }
            None => u64::MAX,
        }
    }

    /// The next step, `elapsed` after the start, with `sent` packets already
    /// handed to the kernel (or given up on after an error).
    pub fn step(&self, sent: u64, elapsed: Duration) -> Step {
        let Some(_) = self.rate else {
            return if elapsed >= self.duration {
                Step::Done
            } else {
                Step::Send(self.batch)
            };
        };
        if sent >= self.total || elapsed >= self.duration + GRACE {
            return Step::Done;
        }
        let left = self.total - sent;
        // A full batch, or the final remainder.
        let want = left.min(self.batch as u64);
        let due = self.due_count(elapsed).saturating_sub(sent);
        if due >= want {
            // Caught up or behind: send as much as is due, one batch at most.
            Step::Send(due.min(self.batch as u64) as usize)
        } else {
            // The batch goes when its last packet is due.
            Step::WaitUntil(self.due_at(sent + want - 1))
        }
    }

    /// How late packet `index` went out if it was sent `elapsed` after the start
    /// (zero if on time or early).
    pub fn lateness(&self, index: u64, elapsed: Duration) -> Duration {
        elapsed.saturating_sub(self.due_at(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn total_is_rate_times_duration() {
        assert_eq!(Pacer::new(1000, ms(3000), 32).total(), Some(3000));
        assert_eq!(Pacer::new(300_000, ms(500), 32).total(), Some(150_000));
        // Never an empty trial.
        assert_eq!(Pacer::new(1, ms(10), 32).total(), Some(1));
        assert_eq!(Pacer::new(0, ms(10), 32).total(), None);
    }

    #[test]
    fn due_times_follow_the_rate() {
        let p = Pacer::new(1000, ms(1000), 10);
        assert_eq!(p.due_at(0), Duration::ZERO);
        assert_eq!(p.due_at(500), ms(500));
        assert_eq!(p.due_count(Duration::ZERO), 1);
        assert_eq!(p.due_count(ms(9)), 10);
        assert_eq!(p.due_count(ms(10)), 11);
        // Capped at the total.
        assert_eq!(p.due_count(ms(5000)), 1000);
    }

    #[test]
    fn waits_for_a_whole_batch() {
        // 1000 pps, batch 10: the first batch's last packet (index 9) is due at 9 ms.
        let p = Pacer::new(1000, ms(1000), 10);
        assert_eq!(p.step(0, Duration::ZERO), Step::WaitUntil(ms(9)));
        assert_eq!(p.step(0, ms(9)), Step::Send(10));
        assert_eq!(p.step(10, ms(9)), Step::WaitUntil(ms(19)));
    }

    #[test]
    fn catches_up_in_whole_batches_when_late() {
        let p = Pacer::new(1000, ms(1000), 10);
        // 100 ms in, nothing sent: 101 packets are due, so full batches go at once.
        assert_eq!(p.step(0, ms(100)), Step::Send(10));
        assert_eq!(p.step(90, ms(100)), Step::Send(10));
        // 100 sent, 101 due: one short of a batch, so wait for the batch.
        assert_eq!(p.step(100, ms(100)), Step::WaitUntil(ms(109)));
    }

    #[test]
    fn last_batch_is_the_remainder_and_then_done() {
        // 25 packets in batches of 10: the last batch is 5 packets, due at 24 ms.
        let p = Pacer::new(1000, ms(25), 10);
        assert_eq!(p.total(), Some(25));
        assert_eq!(p.step(20, ms(20)), Step::WaitUntil(ms(24)));
        assert_eq!(p.step(20, ms(24)), Step::Send(5));
        assert_eq!(p.step(25, ms(30)), Step::Done);
        // Late (within the grace), the last batch is still no more than what is left.
        assert_eq!(p.step(20, ms(30)), Step::Send(5));
    }

    #[test]
    fn the_schedule_sends_every_packet_once() {
        // Walk the schedule with a simulated clock that wakes exactly on time.
        let p = Pacer::new(12_345, ms(700), 32);
        let total = p.total().unwrap();
        let (mut sent, mut now, mut syscalls) = (0u64, Duration::ZERO, 0);
        loop {
            match p.step(sent, now) {
                Step::Send(n) => {
                    assert!(n <= 32);
                    assert_eq!(p.lateness(sent + n as u64 - 1, now), Duration::ZERO);
                    sent += n as u64;
                    syscalls += 1;
                }
                Step::WaitUntil(t) => {
                    assert!(t > now);
                    now = t;
                }
                Step::Done => break,
            }
        }
        assert_eq!(sent, total);
        assert_eq!(syscalls, total.div_ceil(32));
        // The last packet went when it was due, at the end of the trial.
        assert!(now <= ms(700));
        assert!(now >= ms(699));
    }

    #[test]
    fn a_sender_that_cannot_keep_up_stops_at_the_deadline() {
        let p = Pacer::new(1000, ms(1000), 10);
        assert_eq!(p.step(500, ms(1000) + GRACE - ms(1)), Step::Send(10));
        assert_eq!(p.step(510, ms(1000) + GRACE), Step::Done);
    }

    #[test]
    fn unpaced_is_time_bound() {
        let p = Pacer::new(0, ms(100), 64);
        assert_eq!(p.step(0, Duration::ZERO), Step::Send(64));
        assert_eq!(p.step(1_000_000, ms(99)), Step::Send(64));
        assert_eq!(p.step(1_000_000, ms(100)), Step::Done);
    }

    #[test]
    fn lateness_is_measured_against_the_schedule() {
        let p = Pacer::new(1000, ms(1000), 10);
        assert_eq!(p.lateness(9, ms(9)), Duration::ZERO);
        assert_eq!(p.lateness(9, ms(5)), Duration::ZERO);
        assert_eq!(p.lateness(9, ms(12)), ms(3));
    }
}
