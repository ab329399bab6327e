//! A keyed, non-cryptographic mix for per-packet choices (IPv4 ID start values,
//! RFC 6791 pool selection). Not MD5 under a lock (Jool's RFC 6056 bottleneck) and
//! not an RNG per packet: one 64×64→128 multiply per word, folded.

const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// Fold a 128-bit product to 64 bits.
fn folded_multiply(a: u64, b: u64) -> u64 {
    let r = u128::from(a).wrapping_mul(u128::from(b));
    (r as u64) ^ ((r >> 64) as u64)
}

/// Hash `words` under `key`: one folded multiply per word. The fold (high half
/// xor low half of the 128-bit product) already spreads every input bit into the
/// low bits that table indices use, so no finaliser is needed.
pub fn keyed(key: u64, words: &[u64]) -> u64 {
    let mut h = key ^ K;
    for &w in words {
        h = folded_multiply(h ^ w, K.rotate_left(23) | 1);
    }
    h
}

/// First 8 bytes of `a` and the rest folded in, as one word.
pub fn v6_word(a: &[u8; 16]) -> u64 {
    let hi = u64::from_be_bytes([a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]]);
    let lo = u64::from_be_bytes([a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15]]);
    hi ^ lo.rotate_left(29)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_changes_output() {
        assert_ne!(keyed(1, &[42]), keyed(2, &[42]));
        assert_eq!(keyed(1, &[42, 7]), keyed(1, &[42, 7]));
        assert_ne!(keyed(1, &[42, 7]), keyed(1, &[7, 42]));
    }
}
