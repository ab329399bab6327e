//! NAT events as JSON lines, one object per event:
//!
//! ```text
//! {"time":"2026-12-04T05:40:00.123Z","event":"SADD","proto":"udp","v6":"2001:db8::1","port6":40000,"v4":"198.51.100.1","port4":61001}
//! ```
//!
//! `event` is the syslog MSGID ([`crate::syslog::msgid`]); blocks carry
//! `subscriber` (prefix/length), `v4`, `port4` and `port4_last`; sessions
//! with `log_destinations` carry `remote` and `remote_port`.

use std::fmt::Write;

use crate::{NatRecord, syslog, time};

/// Append `r` as one JSON object and a newline.
pub fn line(r: &NatRecord, out: &mut String) {
    out.push_str("{\"time\":\"");
    time::rfc3339_ms(r.unix_ms, out);
    let _ = write!(
        out,
        "\",\"event\":\"{}\",\"proto\":\"{}\",",
        syslog::msgid(r.kind),
        r.proto.as_str()
    );
    if r.kind.is_block() {
        let _ = write!(
            out,
            "\"subscriber\":\"{}/{}\",\"v4\":\"{}\",\"port4\":{},\"port4_last\":{}}}",
            r.inside, r.prefix_len, r.outside, r.outside_port, r.outside_port_last
        );
    } else {
        let _ = write!(
            out,
            "\"v6\":\"{}\",\"port6\":{},\"v4\":\"{}\",\"port4\":{}",
            r.inside, r.inside_port, r.outside, r.outside_port
        );
        if let Some((a, p)) = r.remote {
            let _ = write!(out, ",\"remote\":\"{a}\",\"remote_port\":{p}");
        }
        out.push('}');
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::{block, session};

    #[test]
    fn one_object_per_line() {
        let mut s = String::new();
        line(&session(), &mut s);
        line(&block(), &mut s);
        assert_eq!(
            s,
            "{\"time\":\"2026-12-04T05:40:00.123Z\",\"event\":\"SADD\",\"proto\":\"udp\",\
             \"v6\":\"2001:db8::1\",\"port6\":40000,\"v4\":\"198.51.100.1\",\"port4\":61001}\n\
             {\"time\":\"2026-12-04T05:40:00.123Z\",\"event\":\"BADD\",\"proto\":\"udp\",\
             \"subscriber\":\"2001:db8:1::/56\",\"v4\":\"198.51.100.1\",\"port4\":61440,\
             \"port4_last\":61503}\n"
        );
    }
}
