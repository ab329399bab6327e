//! RFC 3339 timestamps (UTC, `2026-11-26T10:25:03Z`) for what people read:
//! `show status` says when the daemon started and when it last reloaded in
//! these, not in Unix seconds. The API keeps Unix seconds for scripts. The
//! calendar arithmetic is the NAT log's (`sixgate_natlog::time`).

/// `unix_s` seconds since the epoch as an RFC 3339 UTC time.
pub fn utc(unix_s: u64) -> String {
    sixgate_natlog::time::rfc3339_s(unix_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        // The issue's `last_reload FAILED at 1795685302`.
        assert_eq!(utc(1_795_685_302), "2026-11-26T09:28:22Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(4_107_542_399), "2100-02-28T23:59:59Z");
    }
}
