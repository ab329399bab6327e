//! HMAC-SHA256 over the whole datagram (docs/ha.md, "Authentication and
//! replay"). The keyed state is computed once; each datagram clones it (a copy,
//! no allocation).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Length of the tag that ends an authenticated datagram.
pub const TAG_LEN: usize = 32;

/// The shared key of a sync group.
#[derive(Clone)]
pub struct Key {
    mac: Hmac<Sha256>,
}

impl Key {
    /// A key from its bytes. HMAC accepts any length; the config asks for at
    /// least 16 bytes (docs/config.md, `[sync]`). `None` for an empty key.
    pub fn new(bytes: &[u8]) -> Option<Key> {
        if bytes.is_empty() {
            return None;
        }
        Hmac::<Sha256>::new_from_slice(bytes)
            .ok()
            .map(|mac| Key { mac })
    }

    /// The tag of `data`.
    pub fn sign(&self, data: &[u8]) -> [u8; TAG_LEN] {
        let mut mac = self.mac.clone();
        mac.update(data);
        mac.finalize().into_bytes().into()
    }

    /// Whether `tag` is the tag of `data`, compared in constant time.
    pub fn verify(&self, data: &[u8], tag: &[u8]) -> bool {
        let mut mac = self.mac.clone();
        mac.update(data);
        mac.verify_slice(tag).is_ok()
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.write_str("Key(..)")
    }
}

#[cfg(test)]
mod tests;
