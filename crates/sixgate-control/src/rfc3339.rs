//! RFC 3339 timestamps (UTC, `2026-11-26T10:25:03Z`) for what people read:
//! `show status` says when the daemon started and when it last reloaded in
//! these, not in Unix seconds. The API keeps Unix seconds for scripts.

/// `unix_s` seconds since the epoch as an RFC 3339 UTC time.
pub fn utc(unix_s: u64) -> String {
    let days = unix_s / 86_400;
    let secs = unix_s % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day): Howard
/// Hinnant's `civil_from_days` (eras of 400 years, March-based years).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
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
