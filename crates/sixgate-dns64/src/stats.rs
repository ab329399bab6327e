//! Counters for the later metrics endpoint: plain atomics, bumped on the query
//! path, read as a [`StatsSnapshot`].

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds of the upstream latency histogram buckets, milliseconds; a last
/// bucket takes everything slower.
pub const LATENCY_BUCKETS_MS: [u64; 11] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000];

/// Live counters, shared by every listener task.
#[derive(Debug, Default)]
pub struct Stats {
    queries: AtomicU64,
    synthesized: AtomicU64,
    ptr_synthesized: AtomicU64,
    ipv4only: AtomicU64,
    cache_hits: AtomicU64,
    cache_misses: AtomicU64,
    upstream_queries: AtomicU64,
    upstream_errors: AtomicU64,
    upstream_timeouts: AtomicU64,
    upstream_mismatched: AtomicU64,
    upstream_tcp_retries: AtomicU64,
    servfail: AtomicU64,
    formerr: AtomicU64,
    dropped_malformed: AtomicU64,
    refused: AtomicU64,
    truncated: AtomicU64,
    latency: [AtomicU64; LATENCY_BUCKETS_MS.len() + 1],
    latency_sum_us: AtomicU64,
}

/// One reading of [`Stats`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Queries received (well-formed or not).
    pub queries: u64,
    /// AAAA answers synthesized from A records (RFC 6147 §5.1.7).
    pub synthesized: u64,
    /// PTR queries under a prefix answered with a CNAME (RFC 6147 §5.3.1).
    pub ptr_synthesized: u64,
    /// Queries for `ipv4only.arpa` answered locally (RFC 8880 §7.2).
    pub ipv4only: u64,
    /// Answers served from the cache.
    pub cache_hits: u64,
    /// Lookups the cache could not serve.
    pub cache_misses: u64,
    /// Queries sent upstream (each try counts).
    pub upstream_queries: u64,
    /// Upstream I/O errors and unparsable answers.
    pub upstream_errors: u64,
    /// Upstream tries that got no answer in time.
    pub upstream_timeouts: u64,
    /// Upstream datagrams ignored: wrong source, ID or question (spoofing, stale answers).
    pub upstream_mismatched: u64,
    /// Truncated upstream answers retried over TCP.
    pub upstream_tcp_retries: u64,
    /// SERVFAIL answers sent because no upstream answered.
    pub servfail: u64,
    /// Malformed queries answered FORMERR.
    pub formerr: u64,
    /// Malformed datagrams dropped unanswered (no readable header, or a response).
    pub dropped_malformed: u64,
    /// Queries refused by the ACL.
    pub refused: u64,
    /// UDP answers sent truncated (TC=1) because they exceeded the client's size.
    pub truncated: u64,
    /// Upstream round trips per bucket of [`LATENCY_BUCKETS_MS`], plus one for slower.
    pub latency: [u64; LATENCY_BUCKETS_MS.len() + 1],
    /// Sum of every upstream round trip, microseconds (a histogram's sum).
    pub latency_sum_us: u64,
}

macro_rules! bump {
    ($($name:ident),*) => {
        impl Stats {
            $(
                pub(crate) fn $name(&self) {
                    self.$name.fetch_add(1, Relaxed);
                }
            )*
        }
    };
}

bump!(
    queries,
    synthesized,
    ptr_synthesized,
    ipv4only,
    cache_hits,
    cache_misses,
    upstream_queries,
    upstream_errors,
    upstream_timeouts,
    upstream_mismatched,
    upstream_tcp_retries,
    servfail,
    formerr,
    dropped_malformed,
    refused,
    truncated
);

impl Stats {
    /// Count one upstream round trip of `rtt`.
    pub(crate) fn upstream_latency(&self, rtt: Duration) {
        let ms = rtt.as_millis() as u64;
        let i = LATENCY_BUCKETS_MS
            .iter()
            .position(|&b| ms < b)
            .unwrap_or(LATENCY_BUCKETS_MS.len());
        self.latency[i].fetch_add(1, Relaxed);
        self.latency_sum_us
            .fetch_add(rtt.as_micros() as u64, Relaxed);
    }

    /// Read every counter.
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            queries: self.queries.load(Relaxed),
            synthesized: self.synthesized.load(Relaxed),
            ptr_synthesized: self.ptr_synthesized.load(Relaxed),
            ipv4only: self.ipv4only.load(Relaxed),
            cache_hits: self.cache_hits.load(Relaxed),
            cache_misses: self.cache_misses.load(Relaxed),
            upstream_queries: self.upstream_queries.load(Relaxed),
            upstream_errors: self.upstream_errors.load(Relaxed),
            upstream_timeouts: self.upstream_timeouts.load(Relaxed),
            upstream_mismatched: self.upstream_mismatched.load(Relaxed),
            upstream_tcp_retries: self.upstream_tcp_retries.load(Relaxed),
            servfail: self.servfail.load(Relaxed),
            formerr: self.formerr.load(Relaxed),
            dropped_malformed: self.dropped_malformed.load(Relaxed),
            refused: self.refused.load(Relaxed),
            truncated: self.truncated.load(Relaxed),
            latency: std::array::from_fn(|i| self.latency[i].load(Relaxed)),
            latency_sum_us: self.latency_sum_us.load(Relaxed),
        }
    }
}

impl StatsSnapshot {
    /// One line for people, in the style of `sixgate run`'s exit summary: the
    /// work done, then every non-zero problem by name.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} queries; synthesized {} AAAA, {} PTR; ipv4only.arpa {}; cache {} hits {} \
             misses; upstream {} queries",
            self.queries,
            self.synthesized,
            self.ptr_synthesized,
            self.ipv4only,
            self.cache_hits,
            self.cache_misses,
            self.upstream_queries,
        );
        let rtts: u64 = self.latency.iter().sum();
        if let Some(mean_us) = self.latency_sum_us.checked_div(rtts) {
            s.push_str(&format!(", mean {} ms", mean_us / 1000));
        }
        let problems: Vec<String> = [
            ("upstream_errors", self.upstream_errors),
            ("upstream_timeouts", self.upstream_timeouts),
            ("upstream_mismatched", self.upstream_mismatched),
            ("upstream_tcp_retries", self.upstream_tcp_retries),
            ("servfail", self.servfail),
            ("formerr", self.formerr),
            ("dropped_malformed", self.dropped_malformed),
            ("refused", self.refused),
            ("truncated", self.truncated),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
        if !problems.is_empty() {
            s.push_str(&format!(" ({})", problems.join(", ")));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 20: the exit summary reads like `sixgate run`'s, not a Rust struct.
    #[test]
    fn summary_is_one_line_for_people() {
        let s = Stats::default();
        s.queries();
        s.queries();
        s.synthesized();
        s.upstream_queries();
        s.refused();
        s.upstream_latency(Duration::from_millis(4));
        let line = s.snapshot().summary();
        assert_eq!(
            line,
            "2 queries; synthesized 1 AAAA, 0 PTR; ipv4only.arpa 0; cache 0 hits 0 misses; \
             upstream 1 queries, mean 4 ms (refused 1)"
        );
        assert!(!line.contains('{') && !line.contains("StatsSnapshot"));
    }

    #[test]
    fn latency_lands_in_its_bucket() {
        let s = Stats::default();
        s.upstream_latency(Duration::from_micros(500));
        s.upstream_latency(Duration::from_millis(7));
        s.upstream_latency(Duration::from_secs(5));
        let l = s.snapshot().latency;
        assert_eq!(l[0], 1);
        assert_eq!(l[3], 1, "7 ms is under 10 ms");
        assert_eq!(l[LATENCY_BUCKETS_MS.len()], 1);
        assert_eq!(s.snapshot().latency_sum_us, 5_007_500);
    }
}
