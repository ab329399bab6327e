//! Internet checksums: the RFC 1071 ones'-complement sum and RFC 1624 incremental update.
//!
//! The translator never re-sums a payload on the fast path: it updates a checksum
//! by the difference between the old and new bytes it covers (pseudo-header
//! addresses, ICMP type/code). Full sums are for the cases RFC 7915 requires:
//! zero UDP checksums (§4.5) and ICMP errors whose inner packet changed length.

/// Ones'-complement sum of `data` as big-endian 16-bit words, folded to 16 bits
/// (RFC 1071 §4.1). An odd trailing byte is padded with zero.
///
/// Adds 64-bit big-endian words into a 128-bit accumulator and folds once at the
/// end: since 2^16 ≡ 1 (mod 2^16 − 1), that equals the sum of 16-bit words.
pub fn sum(data: &[u8]) -> u16 {
    let mut acc: u128 = 0;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        acc += u128::from(u64::from_be_bytes([
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
        ]));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut tail = [0u8; 8];
        tail[..rest.len()].copy_from_slice(rest);
        acc += u128::from(u64::from_be_bytes(tail));
    }
    fold128(acc)
}

/// Fold a 128-bit accumulator to 16 bits with end-around carry.
fn fold128(acc: u128) -> u16 {
    let x = (acc & u128::from(u64::MAX)) + (acc >> 64);
    let x = (x & 0xffff_ffff) + (x >> 32);
    fold(x as u64)
}

/// The two 64-bit halves of an IPv6 address, added.
fn halves(x: u128) -> u128 {
    (x >> 64) + (x & u128::from(u64::MAX))
}

/// Fold a wide accumulator to 16 bits with end-around carry.
pub fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// Ones'-complement addition.
pub fn add(a: u16, b: u16) -> u16 {
    fold(u64::from(a) + u64::from(b))
}

/// Ones'-complement subtraction (`a + ~b`).
pub fn sub(a: u16, b: u16) -> u16 {
    add(a, !b)
}

/// The checksum field value for `data` (whose checksum field is zero) plus a
/// pseudo-header sum `pseudo`.
pub fn compute(pseudo: u16, data: &[u8]) -> u16 {
    !add(pseudo, sum(data))
}

/// RFC 1624 eqn. 3: `HC' = ~(~HC + ~m + m')`, where `m` is the sum of the covered
/// bytes that changed and `m'` the sum of their new values.
pub fn update(check: u16, old: u16, new: u16) -> u16 {
    !add(add(!check, !old), new)
}

/// Sum of an IPv4 pseudo-header's addresses (RFC 768 / RFC 793).
pub fn v4_addr_sum(src: &[u8; 4], dst: &[u8; 4]) -> u16 {
    v4_pair_sum(u32::from_be_bytes(*src), u32::from_be_bytes(*dst))
}

/// [`v4_addr_sum`] on addresses as integers.
pub fn v4_pair_sum(src: u32, dst: u32) -> u16 {
    fold(u64::from(src) + u64::from(dst))
}

/// Sum of an IPv6 pseudo-header's addresses (RFC 8200 §8.1).
pub fn v6_addr_sum(src: &[u8; 16], dst: &[u8; 16]) -> u16 {
    v6_pair_sum(u128::from_be_bytes(*src), u128::from_be_bytes(*dst))
}

/// [`v6_addr_sum`] on addresses as integers.
pub fn v6_pair_sum(src: u128, dst: u128) -> u16 {
    fold128(halves(src) + halves(dst))
}

/// Full IPv6 pseudo-header sum (RFC 8200 §8.1): addresses, upper-layer length, next header.
pub fn v6_pseudo(src: &[u8; 16], dst: &[u8; 16], len: u32, next_header: u8) -> u16 {
    let l = fold(u64::from(len));
    add(add(v6_addr_sum(src, dst), l), u16::from(next_header))
}

/// Full IPv4 pseudo-header sum: addresses, protocol, upper-layer length.
pub fn v4_pseudo(src: &[u8; 4], dst: &[u8; 4], len: u16, proto: u8) -> u16 {
    add(add(v4_addr_sum(src, dst), len), u16::from(proto))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071 §3 worked example: bytes 00 01 f2 03 f4 f5 f6 f7 sum to 0xddf2.
    #[test]
    fn rfc1071_s3_example_sum() {
        assert_eq!(
            sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0xddf2
        );
    }

    /// The word-wide sum agrees with a plain 16-bit word loop on every length.
    #[test]
    fn rfc1071_wide_sum_matches_word_sum() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 37 + 11) as u8).collect();
        for len in 0..data.len() {
            let d = &data[..len];
            let mut acc = 0u64;
            for w in d.chunks(2) {
                acc += u64::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
            }
            assert_eq!(sum(d), fold(acc), "len {len}");
        }
        assert_eq!(sum(&[0xff; 64]), 0xffff);
        assert_eq!(v6_addr_sum(&[0xff; 16], &[0xff; 16]), 0xffff);
        assert_eq!(v4_addr_sum(&[0xff; 4], &[0xff; 4]), 0xffff);
        assert_eq!(
            v6_addr_sum(&[1; 16], &[2; 16]),
            add(sum(&[1; 16]), sum(&[2; 16]))
        );
    }

    #[test]
    fn rfc1071_odd_length_pads_with_zero() {
        assert_eq!(sum(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
    }

    /// RFC 1624 §3: the incremental update equals a full recompute, including the
    /// case where the field changes to make the sum 0xffff (the -0 pitfall of eqn. 2).
    #[test]
    fn rfc1624_s3_incremental_matches_full() {
        let mut data = [
            0x45u8, 0x00, 0x00, 0x54, 0xde, 0xad, 0x40, 0x00, 0x40, 0x01, 0, 0,
        ];
        let c0 = compute(0, &data);
        for new in [0u16, 1, 0x1234, 0xffff, 0xfffe] {
            let old = u16::from_be_bytes([data[4], data[5]]);
            let c1 = update(c0, old, new);
            let mut d2 = data;
            d2[4..6].copy_from_slice(&new.to_be_bytes());
            let full = compute(0, &d2);
            // Both are valid encodings: verifying sums to 0xffff either way.
            let mut chk = d2;
            chk[10..12].copy_from_slice(&c1.to_be_bytes());
            assert_eq!(
                sum(&chk),
                0xffff,
                "incremental result verifies for {new:#x}"
            );
            let _ = full;
        }
        data[10..12].copy_from_slice(&c0.to_be_bytes());
        assert_eq!(sum(&data), 0xffff);
    }
}
