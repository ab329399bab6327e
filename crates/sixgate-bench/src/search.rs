//! Throughput: the binary search of RFC 8219 §7.1 (RFC 2544 §26.1) for the
//! highest rate the DUT forwards with no loss, or with at most a loss goal (the
//! RFC 9971-style relaxation some testers offer).
//!
//! A trial whose sender fell behind its schedule did not offer the rate it
//! claims (siitperf's rule: more than 0.001 % of the trial's frames late); it is
//! run again, and if it stays invalid it counts as a failure at that rate, and
//! the result says that the tester, not the DUT, limited it.

use serde::Serialize;

/// How the search runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchParams {
    /// Lowest rate considered (frames/s per direction).
    pub min_rate: u64,
    /// Highest rate tried, first of all.
    pub max_rate: u64,
    /// Stop when the bracket is this narrow (frames/s).
    pub precision: u64,
    /// Loss a trial may show and still pass, percent (0 = RFC 8219 zero loss).
    pub loss_goal_pct: f64,
    /// Trials at most (the first, at `max_rate`, included).
    pub max_steps: u32,
    /// Reruns of a trial whose sender fell behind.
    pub invalid_retries: u32,
}

impl Default for SearchParams {
    fn default() -> Self {
        SearchParams {
            min_rate: 1_000,
            max_rate: 1_000_000,
            precision: 1_000,
            loss_goal_pct: 0.0,
            max_steps: 20,
            invalid_retries: 1,
        }
    }
}

/// What one trial saw (summed over the directions it ran).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct Outcome {
    pub sent: u64,
    pub received: u64,
    /// The sender kept to its schedule (within 0.001 % of the frames).
    pub valid: bool,
}

impl Outcome {
    /// Lost frames in percent of those sent (100 when nothing was sent).
    pub fn loss_pct(&self) -> f64 {
        if self.sent == 0 {
            return 100.0;
        }
        100.0 * self.sent.saturating_sub(self.received) as f64 / self.sent as f64
    }

    /// Within the loss goal (validity aside).
    pub fn within(&self, loss_goal_pct: f64) -> bool {
        if loss_goal_pct <= 0.0 {
            self.sent > 0 && self.received >= self.sent
        } else {
            self.loss_pct() <= loss_goal_pct
        }
    }
}

/// The verdict on one rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    Pass,
    Fail,
    /// The sender stayed behind schedule in every try: a failure to the
    /// search, a tester limit to the reader.
    Invalid,
}

/// One trial of the search.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Step {
    pub rate: u64,
    pub outcome: Outcome,
    pub verdict: Verdict,
}

/// The search's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResult {
    /// Highest rate that passed (0: none did).
    pub rate: u64,
    /// Every trial, in order (reruns of invalid trials included).
    pub steps: Vec<Step>,
    /// Some rate above the result was invalid: the tester may be the limit.
    pub tester_limited: bool,
    /// The maximum rate passed: the DUT may do more than was offered.
    pub max_rate_passed: bool,
    /// Stopped by the caller's deadline before the bracket was narrow enough.
    pub timed_out: bool,
}

/// Run the search; `trial(rate)` runs one trial, `out_of_time()` says when the
/// global timeout has passed.
pub fn binary_search<E>(
    params: &SearchParams,
    mut trial: impl FnMut(u64) -> Result<Outcome, E>,
    mut out_of_time: impl FnMut() -> bool,
) -> Result<SearchResult, E> {
    let mut result = SearchResult {
        rate: 0,
        steps: Vec::new(),
        tester_limited: false,
        max_rate_passed: false,
        timed_out: false,
    };
    // Invariant: `lo` passed (or is below min_rate), `hi` failed (or is above max).
    let (mut lo, mut hi) = (0u64, params.max_rate.saturating_add(1));
    let mut rate = params.max_rate.max(params.min_rate);
    let mut trials = 0u32;
    while trials < params.max_steps {
        if out_of_time() {
            result.timed_out = true;
            break;
        }
        let mut verdict = Verdict::Invalid;
        for _ in 0..=params.invalid_retries {
            if trials >= params.max_steps {
                break;
            }
            trials += 1;
            let outcome = trial(rate)?;
            // A late sender offered less than `rate`, yet what it did offer
            // may have been lost: a loss is a failure either way.
            verdict = if !outcome.within(params.loss_goal_pct) {
                Verdict::Fail
            } else if outcome.valid {
                Verdict::Pass
            } else {
                Verdict::Invalid
            };
            result.steps.push(Step {
                rate,
                outcome,
                verdict,
            });
            if verdict != Verdict::Invalid {
                break;
            }
        }
        match verdict {
            Verdict::Pass => {
                lo = rate;
                result.rate = rate;
                if rate >= params.max_rate {
                    result.max_rate_passed = true;
                    break;
                }
            }
            Verdict::Fail => hi = rate,
            Verdict::Invalid => {
                hi = rate;
                result.tester_limited = true;
            }
        }
        if hi.saturating_sub(lo) <= params.precision.max(1) {
            break;
        }
        let next = lo + (hi - lo) / 2;
        if next < params.min_rate {
            if hi <= params.min_rate {
                break; // even the lowest rate failed
            }
            rate = params.min_rate;
        } else {
            rate = next;
        }
        if rate == lo || rate == hi {
            break;
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A simulated DUT that forwards up to `capacity` frames/s without loss and
    /// drops the excess, for 1 s trials.
    fn dut(capacity: u64) -> impl FnMut(u64) -> Result<Outcome, ()> {
        move |rate| {
            Ok(Outcome {
                sent: rate,
                received: rate.min(capacity),
                valid: true,
            })
        }
    }

    fn params(max: u64, precision: u64) -> SearchParams {
        SearchParams {
            min_rate: 100,
            max_rate: max,
            precision,
            loss_goal_pct: 0.0,
            max_steps: 40,
            invalid_retries: 1,
        }
    }

    /// RFC 8219 §7.1: the highest zero-loss rate, within the precision.
    #[test]
    fn rfc8219_7_1_finds_the_capacity() {
        for capacity in [150u64, 12_345, 250_000, 999_999] {
            let r = binary_search(&params(1_000_000, 500), dut(capacity), || false).unwrap();
            assert!(r.rate <= capacity, "{capacity}: {}", r.rate);
            assert!(capacity - r.rate <= 500, "{capacity}: {}", r.rate);
            assert!(!r.tester_limited && !r.max_rate_passed && !r.timed_out);
            // Bisection: about log2(1e6 / 500) ≈ 11 trials.
            assert!(r.steps.len() <= 13, "{} trials", r.steps.len());
        }
    }

    #[test]
    fn a_dut_faster_than_the_maximum_passes_at_once() {
        let r = binary_search(&params(50_000, 100), dut(80_000), || false).unwrap();
        assert_eq!(r.rate, 50_000);
        assert!(r.max_rate_passed);
        assert_eq!(r.steps.len(), 1);
    }

    #[test]
    fn a_dut_that_forwards_nothing_gives_zero() {
        let r = binary_search(&params(50_000, 100), dut(0), || false).unwrap();
        assert_eq!(r.rate, 0);
        assert!(r.steps.iter().all(|s| s.verdict == Verdict::Fail));
        assert!(r.steps.len() < 40);
    }

    /// The RFC 9971-style loss goal: a DUT losing 0.005 % at every rate fails a
    /// zero-loss search but passes a 0.01 % goal.
    #[test]
    fn loss_goal_accepts_small_loss() {
        let lossy = |rate: u64| -> Result<Outcome, ()> {
            let lost = if rate > 40_000 {
                rate / 10
            } else {
                (rate / 20_000).max(1)
            };
            Ok(Outcome {
                sent: rate,
                received: rate - lost,
                valid: true,
            })
        };
        let strict = binary_search(&params(100_000, 100), lossy, || false).unwrap();
        assert_eq!(strict.rate, 0);
        let mut p = params(100_000, 100);
        p.loss_goal_pct = 0.01;
        let relaxed = binary_search(&p, lossy, || false).unwrap();
        assert!(
            (39_900..=40_000).contains(&relaxed.rate),
            "{}",
            relaxed.rate
        );
    }

    /// A noisy DUT (a rare random loss below capacity) still gives a result
    /// at or below its capacity, never above.
    #[test]
    fn noisy_dut_never_overstates() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noisy = move |rate: u64| -> Result<Outcome, ()> {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let blip = x.is_multiple_of(7);
            let received = if rate > 70_000 || blip {
                rate - 1
            } else {
                rate
            };
            Ok(Outcome {
                sent: rate,
                received,
                valid: true,
            })
        };
        let r = binary_search(&params(200_000, 200), noisy, || false).unwrap();
        assert!(r.rate <= 70_000, "{}", r.rate);
    }

    /// siitperf's rule: an invalid trial is rerun; one that stays invalid is a
    /// failure and marks the result tester-limited.
    #[test]
    fn invalid_trials_are_rerun_then_count_as_failures() {
        let mut calls = 0u32;
        // Capacity 90 k; the sender cannot keep up above 60 k; the first
        // trial at any rate is invalid once (a hiccup).
        let mut seen = std::collections::HashSet::new();
        let sim = |rate: u64| -> Result<Outcome, ()> {
            calls += 1;
            let hiccup = seen.insert(rate);
            Ok(Outcome {
                sent: rate,
                received: rate.min(90_000),
                valid: rate <= 60_000 && !hiccup,
            })
        };
        let r = binary_search(&params(100_000, 100), sim, || false).unwrap();
        assert!(r.tester_limited);
        assert!((59_900..=60_000).contains(&r.rate), "{}", r.rate);
        // Every rate that passed did so on its rerun.
        for w in r.steps.windows(2) {
            if w[1].verdict == Verdict::Pass {
                assert_eq!(w[0].verdict, Verdict::Invalid);
                assert_eq!(w[0].rate, w[1].rate);
            }
        }
    }

    #[test]
    fn the_global_timeout_stops_the_search() {
        let mut n = 0;
        let r = binary_search(&params(1_000_000, 1), dut(123_456), || {
            n += 1;
            n > 3
        })
        .unwrap();
        assert!(r.timed_out);
        assert_eq!(r.steps.len(), 3);
    }

    #[test]
    fn errors_from_a_trial_stop_the_search() {
        let r = binary_search(&params(1000, 1), |_| Err::<Outcome, _>("boom"), || false);
        assert_eq!(r.unwrap_err(), "boom");
    }
}
