//! Percentiles and the summaries RFC 8219 asks for.
//!
//! RFC 8219 §7.2 (latency): typical latency is the median, worst-case latency
//! the 99.9th percentile of the tagged frames' latencies. §7.3 (PDV): the 99.9th
//! percentile of the one-way delays less their minimum. §7.4 (IPDV): the
//! difference of consecutive frames' delays. §10 asks for the median of the
//! repeated tests with their 1st and 99th percentiles.

use serde::Serialize;

/// The `p`th percentile (0 ≤ p ≤ 100) of `sorted` (ascending) by the
/// nearest-rank method: the smallest value with at least p % of the values at
/// or below it. `None` for an empty slice.
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    // Less a hair, so that 99.9 % of 1000 is rank 999, not 1000 by rounding.
    let rank = (p.clamp(0.0, 100.0) * n as f64 / 100.0 - 1e-9).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

/// The median (RFC 8219's “typical”): the 50th percentile, the lower middle
/// value for an even count.
pub fn median<T: Copy>(sorted: &[T]) -> Option<T> {
    percentile(sorted, 50.0)
}

/// Median and 1st / 99th percentiles of repeated results (RFC 8219 §10).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub median: f64,
    pub p1: f64,
    pub p99: f64,
    pub count: usize,
}

impl Spread {
    /// The spread of `values` (any order); `None` if empty or not numbers.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        Some(Spread {
            median: median(&v)?,
            p1: percentile(&v, 1.0)?,
            p99: percentile(&v, 99.0)?,
            count: v.len(),
        })
    }
}

/// Latency figures of one trial, nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct Latency {
    /// Frames measured.
    pub samples: usize,
    pub min_ns: u64,
    /// RFC 8219 §7.2 typical latency: the median.
    pub typical_ns: u64,
    /// RFC 8219 §7.2 worst-case latency: the 99.9th percentile.
    pub worst_ns: u64,
    pub max_ns: u64,
    /// RFC 8219 §7.3 packet delay variation: 99.9th percentile − minimum.
    pub pdv_ns: u64,
    /// RFC 8219 §7.4 IPDV of consecutive frames (absolute values): median.
    pub ipdv_median_ns: u64,
    /// RFC 8219 §7.4 IPDV: 99.9th percentile of the absolute values.
    pub ipdv_p999_ns: u64,
}

impl Latency {
    /// Figures from delays in arrival order (IPDV needs the order); `None`
    /// when there are none.
    pub fn from_delays(delays: &[u64]) -> Option<Latency> {
        let mut sorted = delays.to_vec();
        sorted.sort_unstable();
        let min = *sorted.first()?;
        let worst = percentile(&sorted, 99.9)?;
        let mut ipdv: Vec<u64> = delays.windows(2).map(|w| w[1].abs_diff(w[0])).collect();
        ipdv.sort_unstable();
        Some(Latency {
            samples: delays.len(),
            min_ns: min,
            typical_ns: median(&sorted)?,
            worst_ns: worst,
            max_ns: *sorted.last()?,
            pdv_ns: worst - min,
            ipdv_median_ns: median(&ipdv).unwrap_or(0),
            ipdv_p999_ns: percentile(&ipdv, 99.9).unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u32> = (1..=1000).collect();
        assert_eq!(percentile(&v, 99.9), Some(999));
        assert_eq!(percentile(&v, 50.0), Some(500));
        assert_eq!(percentile(&v, 1.0), Some(10));
        assert_eq!(percentile(&v, 100.0), Some(1000));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile::<u32>(&[], 50.0), None);
        assert_eq!(median(&[7]), Some(7));
        assert_eq!(median(&[1, 2, 3, 4]), Some(2));
        // 99.9th of fewer than 1000 values is the maximum.
        assert_eq!(percentile(&[1, 2, 3], 99.9), Some(3));
    }

    /// RFC 8219 §10: median with 1st and 99th percentiles of the repetitions.
    #[test]
    fn rfc8219_10_spread_of_repetitions() {
        let s = Spread::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!((s.median, s.p1, s.p99, s.count), (3.0, 1.0, 5.0, 5));
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[f64::NAN]), None);
    }

    /// RFC 8219 §7.2–7.4: typical, worst case, PDV and IPDV of a known series.
    #[test]
    fn rfc8219_7_2_to_7_4_latency_figures() {
        // 1000 frames: delays 100..=1099 in a scrambled order (7919 is prime).
        let delays: Vec<u64> = (0..1000u64).map(|i| 100 + (i * 7919) % 1000).collect();
        let l = Latency::from_delays(&delays).unwrap();
        assert_eq!(l.samples, 1000);
        assert_eq!(l.min_ns, 100);
        assert_eq!(l.max_ns, 1099);
        assert_eq!(l.typical_ns, 599);
        assert_eq!(l.worst_ns, 1098);
        assert_eq!(l.pdv_ns, 998);
        // Constant delays: no variation at all.
        let flat = Latency::from_delays(&[50; 600]).unwrap();
        assert_eq!(
            (flat.pdv_ns, flat.ipdv_median_ns, flat.ipdv_p999_ns),
            (0, 0, 0)
        );
        // One step of 10 between consecutive frames.
        let step = Latency::from_delays(&[10, 20, 10, 20]).unwrap();
        assert_eq!((step.ipdv_median_ns, step.ipdv_p999_ns), (10, 10));
        assert_eq!(Latency::from_delays(&[]), None);
    }
}
