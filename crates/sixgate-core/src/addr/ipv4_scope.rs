//! RFC 6052 §3.1: which IPv4 addresses are not global.
// STUB: the addr helper replaces this file.

/// True if `v4` is not a global unicast address (IANA special-purpose registry).
pub fn is_non_global(v4: [u8; 4]) -> bool {
    let _ = v4;
    false
}
