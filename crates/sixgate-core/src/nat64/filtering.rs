//! RFC 6146 §3.5: "Filtering and Updating Binding and Session Information", for
//! TCP, UDP and ICMP queries in both directions, and the session look-ups ICMP
//! errors need (§3.5.1.1 last paragraph, §3.5.3: errors never create state).

use super::Nat64;
use super::bib::{Bib, COOLING};
use super::config::{Filtering, Proto};
use super::session::{ICMP, UDP, class_of};
use super::slab::{Link, NIL};
use super::tcp::{self, Flags, Side};
use crate::verdict::DropReason;

impl Nat64 {
    /// §3.5.1.1 / §3.5.2 / §3.5.3, IPv6 → IPv4: the pool4 transport address the
    /// packet from (`src6`, `sport`) to (`dst4`, `dport`) leaves with. Creates the
    /// BIB entry (endpoint-independent mapping: one per IPv6 transport address,
    /// whatever the destination) and the session as needed.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn outbound(
        &mut self,
        proto: Proto,
        src6: u128,
        sport: u16,
        dst4: u32,
        dport: u16,
        flags: Flags,
        now_ns: u64,
    ) -> Result<(u32, u16), DropReason> {
        let now = self.now_ms(now_ns);
        if self.workers > 1 && !self.owns_subscriber(src6) {
            return Err(DropReason::WrongWorker);
        }
        let p = proto as u8;
        let bib = self.bib_by6(p, src6, sport);
        // The §3.5.1.1 entry's session, else one of an alternate mapping a
        // peer made (`replica_conflict`): an existing flow keeps its port.
        let found = bib
            .and_then(|b| Some((b, self.session_find(b, dst4, dport)?)))
            .or_else(|| self.alt_session6(p, src6, sport, dst4, dport));
        if let Some((b, s)) = found {
            match proto {
                Proto::Tcp => self.session_tcp(s, Side::V6, flags, now),
                Proto::Udp => self.session_again(s, UDP, now),
                Proto::Icmp => self.session_again(s, ICMP, now),
            }
            let b = self.bibs.get(b);
            return Ok((b.v4, b.port4));
        }
        // §3.5.2.2 CLOSED: only a SYN opens a TCP session; other segments pass on
        // an existing mapping without creating state.
        if proto == Proto::Tcp && !flags.syn {
            return match bib {
                Some(b) if self.bibs.get(b).flags & COOLING == 0 => {
                    let b = self.bibs.get(b);
                    Ok((b.v4, b.port4))
                }
                _ => Err(DropReason::NoBibEntry),
            };
        }
        if !self.session_room() {
            return Err(DropReason::SessionTableFull);
        }
        if !self.log_room() {
            return Err(DropReason::EventLogFull);
        }
        if !self.subs.has_room_for(src6) {
            return Err(DropReason::SessionTableFull);
        }
        if !self.subs.may_add_session(src6) {
            return Err(DropReason::SubscriberLimit);
        }
        let b = match bib {
            Some(b) => b,
            None => {
                if self.bibs.is_full() {
                    return Err(DropReason::SessionTableFull);
                }
                let (v4, port4) = self.allocate(proto, src6, sport, dst4, dport, now_ns)?;
                let entry = Bib {
                    v6: src6.to_be_bytes(),
                    v4,
                    port6: sport,
                    port4,
                    proto: p,
                    flags: 0,
                    sessions: NIL,
                    cool: Link::NONE,
                    cool_until: 0,
                    mark: 0,
                };
                self.bib_insert(entry, now_ns)
                    .ok_or(DropReason::SessionTableFull)?
            }
        };
        let (state, class) = match proto {
            Proto::Tcp => {
                let st = tcp::on_open(Side::V6);
                (
                    st.state as u8,
                    class_of(st.refresh.unwrap_or(tcp::Lifetime::Transitory)),
                )
            }
            Proto::Udp => (0, UDP),
            Proto::Icmp => (0, ICMP),
        };
        if self
            .session_insert(b, dst4, dport, state, class, now, now_ns)
            .is_none()
        {
            self.bib_idle(b, now, now_ns);
            return Err(DropReason::SessionTableFull);
        }
        let b = *self.bibs.get(b);
        // §3.5.2.2: the IPv6 side opened the connection an IPv4 SYN was
        // waiting for (it is forgotten); a packet held for a peer's record
        // of this session goes now.
        self.held.session_made(p, (b.v4, b.port4, dst4, dport));
        Ok((b.v4, b.port4))
    }

    /// §3.5.1.2 / §3.5.2 / §3.5.3, IPv4 → IPv6: the IPv6 transport address a packet
    /// from (`src4`, `sport`) to pool4 (`dst4`, `dport`) goes to. Needs a BIB entry
    /// (static or dynamic) and must pass filtering. `pkt` is the packet as it
    /// arrived, for holding an unsolicited SYN (§3.5.2.2) or a packet that
    /// waits for a peer's record, and whether its transport checksum is
    /// partial (`Translator::translate_with`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn inbound(
        &mut self,
        proto: Proto,
        src4: u32,
        sport: u16,
        dst4: u32,
        dport: u16,
        flags: Flags,
        (pkt, partial): (&[u8], bool),
        now_ns: u64,
    ) -> Result<(u128, u16), DropReason> {
        let now = self.now_ms(now_ns);
        let p = proto as u8;
        let syn = proto == Proto::Tcp && flags.syn && !flags.rst;
        // An opening SYN; a SYN-ACK is the reply of a handshake.
        let opens = syn && !flags.ack;
        let bib = self
            .bib_by4(p, dst4, dport)
            .filter(|&b| self.bibs.get(b).flags & COOLING == 0);
        let Some(b) = bib else {
            if self.workers > 1 && !self.owns_port(dport) {
                return Err(DropReason::WrongWorker);
            }
            if !opens && self.peer_may_map(dst4, dport) {
                return self.hold_for_peer(proto, (dst4, dport, src4, sport), (pkt, partial), now);
            }
            if syn {
                return self.hold_syn((dst4, dport, src4, sport), pkt, now);
            }
            return Err(DropReason::NoBibEntry);
        };
        let entry = *self.bibs.get(b);
        let to = (entry.v6_int(), entry.port6);
        if let Some(s) = self.session_find(b, src4, sport) {
            match proto {
                Proto::Tcp => self.session_tcp(s, Side::V4, flags, now),
                Proto::Udp => self.session_again(s, UDP, now),
                Proto::Icmp => self.session_again(s, ICMP, now),
            }
            return Ok(to);
        }
        // RFC 4787 §5 / RFC 6146 §3.5.1.2: endpoint-independent filtering lets
        // anyone use the mapping; address-dependent only hosts the IPv6 side has
        // sent to.
        let allowed = match self.cfg.filtering {
            Filtering::EndpointIndependent => true,
            Filtering::AddressDependent => self.bib_has_remote(b, src4),
        };
        if !allowed && !opens && self.peer_may_map(dst4, dport) {
            // Address-dependent filtering: the peer may have the session
            // that allows it.
            return self.hold_for_peer(proto, (dst4, dport, src4, sport), (pkt, partial), now);
        }
        if proto == Proto::Tcp && !syn {
            return if allowed {
                Ok(to)
            } else {
                Err(DropReason::Filtered)
            };
        }
        if !allowed {
            return if syn {
                self.hold_syn((dst4, dport, src4, sport), pkt, now)
            } else {
                Err(DropReason::Filtered)
            };
        }
        if !self.session_room() {
            return Err(DropReason::SessionTableFull);
        }
        if !self.log_room() {
            return Err(DropReason::EventLogFull);
        }
        if !self.subs.has_room_for(entry.v6_int()) {
            return Err(DropReason::SessionTableFull);
        }
        if !self.subs.may_add_session(entry.v6_int()) {
            return Err(DropReason::SubscriberLimit);
        }
        let (state, class) = match proto {
            Proto::Tcp => {
                let st = tcp::on_open(Side::V4);
                (
                    st.state as u8,
                    class_of(st.refresh.unwrap_or(tcp::Lifetime::IncomingSyn)),
                )
            }
            Proto::Udp => (0, UDP),
            Proto::Icmp => (0, ICMP),
        };
        self.session_insert(b, src4, sport, state, class, now, now_ns)
            .ok_or(DropReason::SessionTableFull)?;
        Ok(to)
    }

    /// §3.5.2.2: keep an unsolicited IPv4 SYN for `syn_hold` seconds, or drop it.
    fn hold_syn(
        &mut self,
        key: (u32, u16, u32, u16),
        pkt: &[u8],
        now: u32,
    ) -> Result<(u128, u16), DropReason> {
        if self.cfg.drop_external_tcp {
            return Err(DropReason::ExternalTcp);
        }
        let deadline = now.wrapping_add(self.lifetimes_ms[super::session::TCP_SYN as usize]);
        if self.held.hold(key, pkt, deadline) {
            Err(DropReason::SynHeld)
        } else {
            Err(DropReason::HeldSynStoreFull)
        }
    }

    /// docs/ha.md, "A packet of a session this node does not own": a packet
    /// for a peer's shard that finds no mapping (or no session that lets it
    /// in) waits [`super::syn_store::SYNC_HOLD_MS`] for the peer's record
    /// of its session ([`Verdict::Held`](crate::Verdict::Held), through
    /// `held_now`), or is dropped: never an ICMP error (RFC 6146 §3.5.1.2
    /// would send one; the owner may well have the session).
    fn hold_for_peer(
        &mut self,
        proto: Proto,
        key: (u32, u16, u32, u16),
        (pkt, partial): (&[u8], bool),
        now: u32,
    ) -> Result<(u128, u16), DropReason> {
        let deadline = now.wrapping_add(super::syn_store::SYNC_HOLD_MS);
        self.held_now = self.held.hold_whole(proto as u8, key, pkt, deadline);
        if self.held_now && partial {
            // It leaves later, from the timers, with no offload metadata:
            // the copy carries a finished checksum.
            self.held.finish_last_checksum();
        }
        Err(DropReason::SyncPending)
    }

    /// With sync, whether a peer may have mapped (`a`, `port`): `a` is on a
    /// peer's shard of pool4 (not one of this node's own), or, with RFC 7422
    /// deterministic NAT, `port` is in another node's share of its block
    /// (docs/ha.md, "Deterministic NAT"). Only asked of packets that found no
    /// mapping.
    fn peer_may_map(&self, a: u32, port: u16) -> bool {
        let Some(own) = self.own_pool4.as_ref() else {
            return false;
        };
        if !own.iter().any(|e| e.contains(a)) {
            return true;
        }
        let (rank, nodes) = self.det_share;
        nodes > 1
            && matches!(&self.det, Ok(Some(d)) if d.in_a_block(port)
                && (port & (d.block_size() - 1)) % nodes != rank)
    }

    /// An ICMPv4 error quoting a packet we sent from pool4 (`v4`, `port4`) to
    /// (`remote4`, `rport`): the IPv6 transport address of its session. No refresh.
    pub(crate) fn session_of_outbound(
        &self,
        proto: Proto,
        v4: u32,
        port4: u16,
        remote4: u32,
        rport: u16,
    ) -> Option<(u128, u16)> {
        let b = self.bib_by4(proto as u8, v4, port4)?;
        self.session_find(b, remote4, rport)?;
        let e = self.bibs.get(b);
        Some((e.v6_int(), e.port6))
    }

    /// An ICMPv6 error quoting a packet we delivered to (`v6`, `port6`) from
    /// (`remote4`, `rport`): the pool4 transport address of its session. No refresh.
    pub(crate) fn session_of_inbound(
        &self,
        proto: Proto,
        v6: u128,
        port6: u16,
        remote4: u32,
        rport: u16,
    ) -> Option<(u32, u16)> {
        let p = proto as u8;
        let b = self
            .bib_by6(p, v6, port6)
            .filter(|&b| self.session_find(b, remote4, rport).is_some())
            .or_else(|| Some(self.alt_session6(p, v6, port6, remote4, rport)?.0))?;
        let e = self.bibs.get(b);
        Some((e.v4, e.port4))
    }

    /// Timers: held SYNs first (one per call, it leaves a packet), then a bounded
    /// sweep of expired sessions and cooled-down BIB entries. `Ok(n)`: a held SYN's
    /// `n` bytes are in `out`; `Err(more)`: nothing to send, `more` if the budget ran
    /// out with work left.
    pub(crate) fn tick(
        &mut self,
        now_ns: u64,
        out: &mut [u8; super::syn_store::HELD_BYTES],
    ) -> Result<usize, bool> {
        let now = self.now_ms(now_ns);
        if let Some(n) = self.held.take_expired(now, out) {
            return Ok(n);
        }
        let mut budget = super::SWEEP_BUDGET;
        self.expire_sessions(now, now_ns, &mut budget);
        self.expire_cooling(now, now_ns, &mut budget);
        if budget > 0 {
            // The round's last call: a step of the drained-prefix scan.
            self.scan_draining();
        }
        Err(budget == 0)
    }

    /// Remember where the later fragments of a datagram go.
    pub(crate) fn fragment_remember(&mut self, id: &[u64], addr: u128, now_ns: u64) {
        let now = self.now_ms(now_ns);
        let key = crate::hash::keyed(self.cfg.hash_key, id);
        self.frags.remember(key, addr, now);
    }

    /// Where a later fragment goes (`None`: its first fragment was not seen).
    pub(crate) fn fragment_recall(&mut self, id: &[u64], now_ns: u64) -> Option<u128> {
        let now = self.now_ms(now_ns);
        let key = crate::hash::keyed(self.cfg.hash_key, id);
        self.frags.recall(key, now)
    }
}
