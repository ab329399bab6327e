//! Sessions whose packets an in-kernel fast path translates
//! (docs/fastpath.md, "NAT64 established sessions"): the core never sees
//! those packets, so the data plane reports, before expiry, that the fast
//! path saw the session, and the session is refreshed here as a packet of it
//! would (RFC 6146 §3.5.1.1, §3.5.2.2, §3.5.3: "the lifetime is set to" its
//! class's), with the refresh exported to other nodes like any other.

use super::Nat64;
use super::replica::Replica;
use super::session::{ICMP, TCP_EST, UDP};
use super::tcp::TcpState;

impl Nat64 {
    /// Session `r` (matched by its pool4 transport address, IPv6 side and
    /// remote) and the class a packet of it refreshes, if it is still one the
    /// fast path may carry (TCP: ESTABLISHED).
    fn offloadable(&self, r: &Replica) -> Option<(u32, u8)> {
        let b = self.bib_by4(r.proto as u8, u32::from(r.v4), r.port4)?;
        let e = self.bibs.get(b);
        if e.v6 != u128::from(r.v6).to_be_bytes() || e.port6 != r.port6 {
            return None;
        }
        let s = self.session_find(b, u32::from(r.remote4), r.rport)?;
        let class = match r.proto {
            super::Proto::Udp => UDP,
            super::Proto::Icmp => ICMP,
            super::Proto::Tcp => {
                if TcpState::from_u8(self.sessions.get(s).state) != TcpState::Established {
                    return None;
                }
                TCP_EST
            }
        };
        Some((s, class))
    }

    /// The fast path saw session `r`: restart its lifetime. False when the
    /// session is gone or is no longer one the fast path may carry (TCP left
    /// ESTABLISHED): the caller removes its entries.
    pub(crate) fn fast_path_seen(&mut self, r: &Replica, now_ns: u64) -> bool {
        let now = self.now_ms(now_ns);
        let Some((s, class)) = self.offloadable(r) else {
            return false;
        };
        self.session_refresh(s, class, now);
        true
    }

    /// Is session `r` still one the fast path may carry?
    pub(crate) fn fast_path_alive(&self, r: &Replica) -> bool {
        self.offloadable(r).is_some()
    }
}

#[cfg(test)]
mod tests {
    use crate::Translator;
    use crate::addr::Rfc6052Prefix;
    use crate::config::Config;
    use crate::nat64::{Nat64Config, Pool4Entry, Replica, ReplicaOp};
    use crate::verdict::Verdict;
    use sixgate_testkit::Ip6;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const S: u64 = 1_000_000_000;

    fn translator() -> Translator {
        let pool6 = Rfc6052Prefix::new("2001:db8:64::".parse().unwrap(), 96).unwrap();
        let mut c = Config::with_pool6(Some(pool6));
        let mut n = Nat64Config {
            pool4: vec![Pool4Entry::single(Ipv4Addr::new(203, 0, 113, 1))],
            ..Nat64Config::default()
        };
        n.timeouts.udp = 10;
        c.nat64 = Some(n);
        let mut t = Translator::new(std::sync::Arc::new(c));
        t.enable_replica_export(64);
        t
    }

    fn udp_session(t: &mut Translator, now: u64) -> Replica {
        let h6: Ipv6Addr = "2001:db8:1::5".parse().unwrap();
        let r6: Ipv6Addr = "2001:db8:64::c000:221".parse().unwrap();
        let ip = Ip6::new(h6, r6).udp(4000, 53, 10);
        let mut buf = vec![0u8; crate::HEADROOM + ip.len() + 64];
        buf[crate::HEADROOM..crate::HEADROOM + ip.len()].copy_from_slice(&ip);
        let mut p = crate::PacketBuf::new(&mut buf, crate::HEADROOM, ip.len());
        let mut scratch = crate::Scratch::new();
        let v = t.translate(&mut p, &mut scratch, now);
        assert!(matches!(v, Verdict::Translated), "{v:?}");
        let mut out = None;
        t.drain_replica_changes(|op, r| {
            assert_eq!(op, ReplicaOp::Upsert);
            out = Some(*r);
        });
        out.unwrap()
    }

    fn tick_all(t: &mut Translator, now: u64) {
        let mut scratch = crate::Scratch::new();
        while t.tick(now, &mut scratch).is_some() {}
    }

    /// RFC 6146 §3.5.1.1: a packet "resets the lifetime"; a fast-path packet,
    /// reported before expiry, does the same (exported to other nodes like
    /// any refresh), and a session not reported expires as before.
    #[test]
    fn rfc6146_s3_5_1_1_fast_path_packets_refresh_the_session() {
        let mut t = translator();
        let r = udp_session(&mut t, S);
        assert!(t.nat64_fast_path_alive(&r));
        assert!(t.nat64_fast_path_seen(&r, 8 * S));
        // docs/ha.md: the refresh reaches other nodes like any other.
        let mut exported = Vec::new();
        t.drain_replica_changes(|op, r| exported.push((op, r.remaining_ms)));
        assert_eq!(exported, [(ReplicaOp::Upsert, 10_000)]);
        tick_all(&mut t, 15 * S);
        assert_eq!(
            t.nat64_stats().sessions.udp,
            1,
            "refreshed at 8 s: lives to 18 s"
        );
        tick_all(&mut t, 19 * S);
        assert_eq!(t.nat64_stats().sessions.udp, 0);
        assert!(
            !t.nat64_fast_path_seen(&r, 20 * S),
            "gone: the entries go too"
        );
    }
}
