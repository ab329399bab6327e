//! RFC 1071 Internet checksum, written independently of both `etherparse` and
//! `sixgate-core` so the oracle is a second opinion, not a copy.

/// One's-complement sum of `data` as big-endian 16-bit words (odd byte padded with
/// zero), added to `initial`, not yet folded.
pub fn sum(initial: u32, data: &[u8]) -> u32 {
    let mut acc = u64::from(initial);
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(u16::from_be_bytes([*last, 0]));
    }
    fold64(acc)
}

fn fold64(mut acc: u64) -> u32 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u32
}

/// Fold a running sum to 16 bits (end-around carry).
pub fn fold(acc: u32) -> u16 {
    fold64(u64::from(acc)) as u16
}

/// The checksum field value for `data` (complement of the folded sum).
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum(0, data))
}

/// Sum of the IPv4 pseudo-header (RFC 768 / RFC 9293).
pub fn pseudo_v4(src: [u8; 4], dst: [u8; 4], protocol: u8, l4_len: usize) -> u32 {
    let mut acc = sum(0, &src);
    acc = sum(acc, &dst);
    acc += u32::from(protocol);
    acc += l4_len as u32 & 0xffff;
    acc + (l4_len as u32 >> 16)
}

/// Sum of the IPv6 pseudo-header (RFC 8200 §8.1).
pub fn pseudo_v6(src: [u8; 16], dst: [u8; 16], next_header: u8, l4_len: usize) -> u32 {
    let mut acc = sum(0, &src);
    acc = sum(acc, &dst);
    acc = sum(acc, &(l4_len as u32).to_be_bytes());
    acc + u32::from(next_header)
}

/// True when `data` (which contains its own checksum field) sums to all ones
/// after adding `pseudo`, i.e. the checksum verifies.
pub fn verifies(pseudo: u32, data: &[u8]) -> bool {
    fold(sum(pseudo, data)) == 0xffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3 example: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(0, &data)), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(sum(0, &[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
    }

    #[test]
    fn known_ipv4_header() {
        // A header from the Wikipedia IPv4 checksum example.
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert!(verifies(0, &hdr));
        let mut zeroed = hdr;
        zeroed[10] = 0;
        zeroed[11] = 0;
        assert_eq!(checksum(&zeroed), 0xb861);
    }
}
