//! Numbers and addresses appended to text without `core::fmt` (the syslog
//! and JSON encoders' inner loop: `write!` costs more than the rest of a
//! line together, docs/PERFORMANCE.md "NAT event logging").

use std::fmt::Write;
use std::net::{Ipv4Addr, Ipv6Addr};

/// `v` in decimal, at least `width` digits (zeros in front).
pub fn push_dec(out: &mut String, mut v: u64, width: usize) {
    let mut buf = [b'0'; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let start = i.min(buf.len() - width.min(buf.len()));
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&buf[start..]).unwrap_or("0"));
}

/// `a` dotted-quad.
pub fn push_v4(out: &mut String, a: Ipv4Addr) {
    for (i, o) in a.octets().into_iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        push_dec(out, u64::from(o), 1);
    }
}

/// `a` as RFC 5952 text (`Ipv6Addr`'s own `Display`, which compresses the
/// longest run of zeros).
pub fn push_v6(out: &mut String, a: Ipv6Addr) {
    let _ = write!(out, "{a}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_and_addresses_as_fmt_writes_them() {
        let mut s = String::new();
        for (v, w) in [
            (0u64, 1),
            (7, 2),
            (2026, 4),
            (5, 3),
            (u64::MAX, 1),
            (65535, 1),
        ] {
            s.clear();
            push_dec(&mut s, v, w);
            assert_eq!(s, format!("{v:0w$}"));
        }
        s.clear();
        push_v4(&mut s, Ipv4Addr::new(198, 51, 100, 7));
        assert_eq!(s, "198.51.100.7");
        s.clear();
        push_v6(&mut s, "2001:db8::1".parse().unwrap());
        assert_eq!(s, "2001:db8::1");
    }
}
