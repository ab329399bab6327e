//! The config hash (docs/ha.md, "Config hash"): FNV-1a 64 over a canonical
//! byte string of what two nodes must agree on. Not a security measure (the
//! HMAC is); it only turns a configuration mistake into a clear refusal.

/// An FNV-1a 64 hasher.
#[derive(Clone, Copy, Debug)]
pub struct ConfigHash(u64);

impl Default for ConfigHash {
    fn default() -> Self {
        ConfigHash(0xcbf2_9ce4_8422_2325)
    }
}

impl ConfigHash {
    /// Adds one field, length-prefixed so that ("ab", "c") ≠ ("a", "bc").
    pub fn field(mut self, bytes: &[u8]) -> Self {
        for b in (bytes.len() as u64).to_be_bytes().iter().chain(bytes) {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    /// The hash.
    pub fn finish(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_delimited_and_order_matters() {
        let a = ConfigHash::default().field(b"ab").field(b"c").finish();
        let b = ConfigHash::default().field(b"a").field(b"bc").finish();
        let c = ConfigHash::default().field(b"c").field(b"ab").finish();
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(a, ConfigHash::default().field(b"ab").field(b"c").finish());
    }
}
