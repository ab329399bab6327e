//! Which worker owns a packet (docs/architecture.md, "Multi-core without a shared
//! table"). The TUN data plane's eBPF steering program computes the same two
//! functions; they must agree bit for bit.

/// Golden-ratio multiplier of [`subscriber_worker`].
pub const SUBSCRIBER_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// Size of the port groups workers own: the port-block size when blocks are on,
/// else 2 (port pairs, so a worker can keep a port's parity).
pub const fn port_group(port_block_size: u16) -> u16 {
    if port_block_size >= 2 {
        port_block_size
    } else {
        2
    }
}

/// The worker that owns pool4 port (or ICMP identifier) `port`:
/// `(port / group) % workers`, with `group` from [`port_group`].
pub const fn port_owner(port: u16, port_block_size: u16, workers: u16) -> u16 {
    if workers <= 1 {
        return 0;
    }
    (port / port_group(port_block_size)) % workers
}

/// The worker that owns IPv6 host `src6` (as a big-endian integer):
/// `(fold(src6 & mask(prefix_len)) * 0x9E3779B97F4A7C15 >> 32) % workers`, where
/// `fold(x) = (x >> 64) ^ (x & 0xffff_ffff_ffff_ffff)` and the multiplication wraps
/// at 64 bits.
pub const fn subscriber_worker(src6: u128, subscriber_prefix_len: u8, workers: u16) -> u16 {
    if workers <= 1 {
        return 0;
    }
    let masked = src6 & subscriber_mask(subscriber_prefix_len);
    let fold = ((masked >> 64) as u64) ^ (masked as u64);
    ((fold.wrapping_mul(SUBSCRIBER_MULTIPLIER) >> 32) % workers as u64) as u16
}

/// The subscriber prefix of `src6`: its first `subscriber_prefix_len` bits.
pub const fn subscriber_prefix(src6: u128, subscriber_prefix_len: u8) -> u128 {
    src6 & subscriber_mask(subscriber_prefix_len)
}

const fn subscriber_mask(len: u8) -> u128 {
    if len == 0 {
        0
    } else if len >= 128 {
        u128::MAX
    } else {
        u128::MAX << (128 - len as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_pairs_stay_on_one_worker() {
        for p in (0..u16::MAX).step_by(2) {
            assert_eq!(port_owner(p, 0, 2), port_owner(p + 1, 0, 2));
        }
        assert_eq!(port_owner(0, 0, 2), 0);
        assert_eq!(port_owner(2, 0, 2), 1);
        assert_eq!(port_owner(4, 0, 2), 0);
        assert_eq!(port_owner(130, 64, 4), 2);
        assert_eq!(port_owner(12345, 0, 1), 0);
    }

    #[test]
    fn subscriber_worker_ignores_host_bits() {
        let a: u128 = 0x2001_0db8_0001_0002_0000_0000_0000_0005;
        let b: u128 = 0x2001_0db8_0001_0002_ffff_0000_0000_0009;
        assert_eq!(subscriber_worker(a, 64, 7), subscriber_worker(b, 64, 7));
        assert!(subscriber_worker(a, 64, 7) < 7);
        assert_eq!(subscriber_worker(a, 64, 1), 0);
        // Spread: 1000 subscribers over 2 workers are not all on one.
        let on0 = (0..1000u128)
            .filter(|i| subscriber_worker(a + (i << 64), 64, 2) == 0)
            .count();
        assert!((300..700).contains(&on0), "{on0}");
    }
}
