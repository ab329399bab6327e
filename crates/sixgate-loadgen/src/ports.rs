//! RFC 4814 pseudorandom port numbers: each packet gets a source port drawn
//! uniformly from a range, so that a flow-hashing device under test (RSS,
//! multi-queue TUN) spreads the load over its queues as real traffic would.

use std::fmt;
use std::str::FromStr;

/// An inclusive port range `A-B` (a single port `A` is `A-A`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    pub first: u16,
    pub last: u16,
}

impl PortRange {
    /// How many ports the range holds.
    pub fn len(&self) -> u32 {
        u32::from(self.last) - u32::from(self.first) + 1
    }

    /// Never true: a range holds at least one port.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl FromStr for PortRange {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (a, b) = s.split_once('-').unwrap_or((s, s));
        let port = |t: &str| -> Result<u16, String> {
            match t.trim().parse::<u16>() {
                Ok(0) => Err("port 0 is not a usable source port".to_string()),
                Ok(p) => Ok(p),
                Err(_) => Err(format!("`{t}` is not a port number (1-65535)")),
            }
        };
        let (first, last) = (port(a)?, port(b)?);
        if first > last {
            return Err(format!("range `{s}` is backwards (first > last)"));
        }
        Ok(PortRange { first, last })
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

/// A small, fast pseudorandom source (xorshift64*), seeded per run; the test
/// traffic needs spread, not cryptographic quality.
#[derive(Debug, Clone)]
pub struct PortGen {
    state: u64,
    range: PortRange,
}

impl PortGen {
    pub fn new(range: PortRange, seed: u64) -> Self {
        // SplitMix64 of the seed, so that 0 and small seeds give a good state.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        PortGen {
            state: z | 1,
            range,
        }
    }

    /// The next port, uniform over the range (multiply-shift, no modulo).
    pub fn next_port(&mut self) -> u16 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32;
        let offset = (r * u64::from(self.range.len())) >> 32;
        self.range.first + offset as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges() {
        assert_eq!(
            "1024-65535".parse::<PortRange>(),
            Ok(PortRange {
                first: 1024,
                last: 65535
            })
        );
        assert_eq!(
            "9".parse::<PortRange>(),
            Ok(PortRange { first: 9, last: 9 })
        );
        assert!("0-10".parse::<PortRange>().is_err());
        assert!("10-5".parse::<PortRange>().is_err());
        assert!("1-70000".parse::<PortRange>().is_err());
        assert!("a-b".parse::<PortRange>().is_err());
        assert_eq!("1024-2047".parse::<PortRange>().unwrap().len(), 1024);
        assert_eq!("1-65535".parse::<PortRange>().unwrap().len(), 65535);
    }

    #[test]
    fn ports_stay_in_range_and_cover_it() {
        let range: PortRange = "1000-1015".parse().unwrap();
        let mut seen = [0u32; 16];
        let mut g = PortGen::new(range, 42);
        for _ in 0..16_000 {
            let p = g.next_port();
            assert!((1000..=1015).contains(&p), "{p}");
            seen[usize::from(p - 1000)] += 1;
        }
        // Uniform enough: every port within ±25 % of its share of 1000.
        for (i, n) in seen.iter().enumerate() {
            assert!(
                (750..=1250).contains(n),
                "port {} drawn {n} times",
                1000 + i
            );
        }
    }

    #[test]
    fn single_port_and_full_range() {
        let mut g = PortGen::new("53-53".parse().unwrap(), 0);
        assert!((0..100).all(|_| g.next_port() == 53));
        let mut g = PortGen::new("1-65535".parse().unwrap(), 7);
        let ports: Vec<u16> = (0..1000).map(|_| g.next_port()).collect();
        assert!(ports.iter().all(|&p| p >= 1));
        // Not stuck: many distinct values.
        let mut d = ports.clone();
        d.sort_unstable();
        d.dedup();
        assert!(d.len() > 950);
    }

    #[test]
    fn seeds_give_different_sequences() {
        let r: PortRange = "1024-65535".parse().unwrap();
        let a: Vec<u16> = {
            let mut g = PortGen::new(r, 1);
            (0..8).map(|_| g.next_port()).collect()
        };
        let b: Vec<u16> = {
            let mut g = PortGen::new(r, 2);
            (0..8).map(|_| g.next_port()).collect()
        };
        assert_ne!(a, b);
    }
}
