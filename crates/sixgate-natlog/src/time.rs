//! RFC 3339 timestamps (`2026-12-04T05:40:00.123Z`) from Unix milliseconds:
//! RFC 5424 §6.2.3 TIMESTAMP and the JSON lines' `time`, always UTC, always
//! with milliseconds, so two records order as their text does.

/// Append `unix_ms` as RFC 3339 UTC with milliseconds.
pub fn rfc3339_ms(unix_ms: u64, out: &mut String) {
    use crate::text::push_dec;
    let secs = unix_ms / 1000;
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    // `{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{ms:03}Z`, without fmt.
    push_dec(out, y.max(0) as u64, 4);
    for (sep, v, w) in [
        ('-', u64::from(m), 2),
        ('-', u64::from(d), 2),
        ('T', s / 3600, 2),
        (':', s / 60 % 60, 2),
        (':', s % 60, 2),
        ('.', unix_ms % 1000, 3),
    ] {
        out.push(sep);
        push_dec(out, v, w);
    }
    out.push('Z');
}

/// `unix_s` as RFC 3339 UTC to the second (`2026-11-26T09:28:22Z`): what
/// people read in `show status`.
pub fn rfc3339_s(unix_s: u64) -> String {
    let mut s = rfc3339_ms_string(unix_s.saturating_mul(1000));
    s.truncate(s.len() - 5);
    s.push('Z');
    s
}

/// [`rfc3339_ms`] as a new string.
pub fn rfc3339_ms_string(unix_ms: u64) -> String {
    let mut s = String::with_capacity(24);
    rfc3339_ms(unix_ms, &mut s);
    s
}

/// Parse what [`rfc3339_ms`] writes, and the other RFC 3339 forms an operator
/// types: `2026-12-04T05:40:00Z`, `2026-12-04 05:40:00.5+01:00`. Unix ms.
pub fn parse_rfc3339(text: &str) -> Option<u64> {
    let t = text.trim();
    let b = t.as_bytes();
    if b.len() < 19 || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| t.get(r)?.parse::<u64>().ok();
    if b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &t[19..];
    let mut ms = 0u64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let f = &frac[..digits];
        ms = f[..digits.min(3)].parse::<u64>().ok()? * 10u64.pow(3 - digits.min(3) as u32);
        rest = &frac[digits..];
    }
    let offset_s: i64 = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && matches!(&rest[..1], "+" | "-") && &rest[3..4] == ":" => {
            let oh: i64 = rest[1..3].parse().ok()?;
            let om: i64 = rest[4..6].parse().ok()?;
            let o = oh * 3600 + om * 60;
            if &rest[..1] == "-" { -o } else { o }
        }
        _ => return None,
    };
    let days = days_from_civil(y as i64, mo as u32, d as u32);
    let secs = days * 86_400 + (h * 3600 + mi * 60 + s) as i64 - offset_s;
    u64::try_from(secs).ok().map(|s| s * 1000 + ms)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (H. Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The inverse of [`civil_from_days`].
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc5424_s6_2_3_timestamps_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(rfc3339_ms_string(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339_ms_string(1_796_362_800_123),
            "2026-12-04T05:40:00.123Z"
        );
        // A leap day.
        assert_eq!(
            rfc3339_ms_string(951_782_400_000),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(rfc3339_s(1_795_685_302), "2026-11-26T09:28:22Z");
        assert_eq!(rfc3339_s(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn parse_takes_what_we_write_and_what_operators_type() {
        for ms in [0, 951_782_400_000, 1_796_362_800_123, 4_102_444_799_999] {
            assert_eq!(parse_rfc3339(&rfc3339_ms_string(ms)), Some(ms));
        }
        assert_eq!(
            parse_rfc3339("2026-12-04 06:40:00.1+01:00"),
            Some(1_796_362_800_100)
        );
        assert_eq!(
            parse_rfc3339("2026-12-04T05:40:00Z"),
            Some(1_796_362_800_000)
        );
        for bad in [
            "",
            "2026-12-04",
            "2026-13-04T00:00:00Z",
            "2026-12-04T05:40:00",
            "x",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
