//! Token bucket for ICMP errors the translator generates (RFC 4443 §2.4 (f),
//! RFC 1812 §4.3.2.8). Time comes from the caller, so the core reads no clock and
//! the offline mode can replay pcap timestamps.

/// A token bucket in nanosecond time.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    per_sec: u64,
    burst: u64,
    /// Tokens scaled by 1e9 so refills need no division per packet.
    tokens_ns: u64,
    last_ns: u64,
}

const NS: u64 = 1_000_000_000;

impl TokenBucket {
    /// `per_sec` tokens per second, at most `burst` saved up. Starts full.
    pub fn new(per_sec: u32, burst: u32) -> Self {
        let burst = u64::from(burst.max(1));
        TokenBucket {
            per_sec: u64::from(per_sec),
            burst,
            tokens_ns: burst * NS,
            last_ns: 0,
        }
    }

    /// Take one token at time `now_ns` if there is one.
    pub fn take(&mut self, now_ns: u64) -> bool {
        if self.per_sec == 0 {
            return false;
        }
        let elapsed = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        let refill = elapsed.saturating_mul(self.per_sec);
        self.tokens_ns = self.tokens_ns.saturating_add(refill).min(self.burst * NS);
        if self.tokens_ns >= NS {
            self.tokens_ns -= NS;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4443_s2_4_f_burst_then_rate() {
        let mut b = TokenBucket::new(10, 3);
        assert!(b.take(0) && b.take(0) && b.take(0));
        assert!(!b.take(0));
        assert!(!b.take(50_000_000)); // 0.05 s: half a token
        assert!(b.take(100_000_000)); // 0.1 s: one token
        assert!(!b.take(100_000_000));
        // A long idle period refills only up to the burst.
        assert!(b.take(100 * NS) && b.take(100 * NS) && b.take(100 * NS));
        assert!(!b.take(100 * NS));
    }

    #[test]
    fn zero_rate_disables() {
        assert!(!TokenBucket::new(0, 5).take(0));
    }
}
