//! RFC 6146 §3.5.2: the TCP session state machine. Pure: a state, the packet's
//! direction and flags in; the next state and what happens to the session's
//! lifetime out. The tables apply it.

/// §3.5.2 states (CLOSED is "no session").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TcpState {
    /// An IPv4 SYN created the session; waiting for the IPv6 SYN.
    V4Init,
    /// An IPv6 SYN created the session; waiting for the IPv4 SYN.
    V6Init,
    /// Both SYNs seen.
    Established,
    /// FIN seen from the IPv4 side.
    V4FinRcv,
    /// FIN seen from the IPv6 side.
    V6FinRcv,
    /// FINs seen from both sides.
    V4FinV6FinRcv,
    /// RST seen, or the established lifetime ran out: about to close.
    Trans,
}

impl TcpState {
    /// Stable lower-case name, as `show sessions` prints it.
    pub const fn as_str(self) -> &'static str {
        match self {
            TcpState::V4Init => "v4_init",
            TcpState::V6Init => "v6_init",
            TcpState::Established => "established",
            TcpState::V4FinRcv => "v4_fin_rcv",
            TcpState::V6FinRcv => "v6_fin_rcv",
            TcpState::V4FinV6FinRcv => "v4_fin_v6_fin_rcv",
            TcpState::Trans => "trans",
        }
    }

    pub(crate) fn from_u8(v: u8) -> TcpState {
        match v {
            0 => TcpState::V4Init,
            1 => TcpState::V6Init,
            2 => TcpState::Established,
            3 => TcpState::V4FinRcv,
            4 => TcpState::V6FinRcv,
            5 => TcpState::V4FinV6FinRcv,
            _ => TcpState::Trans,
        }
    }
}

/// The packet's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Arrived from IPv6.
    V6,
    /// Arrived from IPv4.
    V4,
}

/// The TCP flags the state machine reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    /// Not read by the state machine: a SYN-ACK is the reply of a
    /// handshake, never an unsolicited open (docs/ha.md).
    pub ack: bool,
}

impl Flags {
    /// From the TCP header's flags byte (offset 13).
    pub fn from_byte(b: u8) -> Flags {
        Flags {
            fin: b & 0x01 != 0,
            syn: b & 0x02 != 0,
            rst: b & 0x04 != 0,
            ack: b & 0x10 != 0,
        }
    }
}

/// Which lifetime a session runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifetime {
    /// `TCP_EST`.
    Established,
    /// `TCP_TRANS`.
    Transitory,
    /// `TCP_INCOMING_SYN` (the V4 INIT lifetime).
    IncomingSyn,
}

/// What a packet does to the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub state: TcpState,
    /// `Some`: restart the lifetime on this timer; `None`: leave it running.
    pub refresh: Option<Lifetime>,
}

/// §3.5.2.2: the state a new session starts in, for a SYN from `side`.
pub fn on_open(side: Side) -> Step {
    match side {
        Side::V6 => Step {
            state: TcpState::V6Init,
            refresh: Some(Lifetime::Transitory),
        },
        Side::V4 => Step {
            state: TcpState::V4Init,
            refresh: Some(Lifetime::IncomingSyn),
        },
    }
}

/// §3.5.2.2: a packet on an existing session.
pub fn on_packet(state: TcpState, side: Side, f: Flags) -> Step {
    use Lifetime::{Established as Est, Transitory};
    use TcpState::*;
    let stay = Step {
        state,
        refresh: None,
    };
    let go = |state, refresh| Step {
        state,
        refresh: Some(refresh),
    };
    match state {
        // "V4 INIT": the IPv6 SYN completes the simultaneous or inbound open.
        V4Init if side == Side::V6 && f.syn => go(Established, Est),
        V4Init => stay,
        // "V6 INIT": the IPv4 SYN (SYN-ACK) completes it; a repeated IPv6 SYN
        // restarts the transitory lifetime.
        V6Init if f.syn && side == Side::V4 => go(Established, Est),
        V6Init if f.syn => go(V6Init, Transitory),
        V6Init => stay,
        Established if f.rst => go(Trans, Transitory),
        Established if f.fin && side == Side::V4 => go(V4FinRcv, Est),
        Established if f.fin => go(V6FinRcv, Est),
        Established => go(Established, Est),
        V4FinRcv if f.fin && side == Side::V6 => go(V4FinV6FinRcv, Transitory),
        V4FinRcv => go(V4FinRcv, Est),
        V6FinRcv if f.fin && side == Side::V4 => go(V4FinV6FinRcv, Transitory),
        V6FinRcv => go(V6FinRcv, Est),
        // Both FINs seen: packets pass, the transitory lifetime runs out.
        V4FinV6FinRcv => stay,
        // "TRANS": anything but a RST revives the connection.
        Trans if f.rst => stay,
        Trans => go(Established, Est),
    }
}

/// §3.5.2.2: the lifetime ran out. `Some(step)`: the session lives on in a new
/// state (ESTABLISHED and the FIN RCV states fall to TRANS rather than vanish, so a
/// quiet but live connection gets `TCP_TRANS` more to show itself; the RFC's
/// probe is not sent); `None`: delete it.
pub fn on_expiry(state: TcpState) -> Option<Step> {
    match state {
        TcpState::Established | TcpState::V4FinRcv | TcpState::V6FinRcv => Some(Step {
            state: TcpState::Trans,
            refresh: Some(Lifetime::Transitory),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Side::*;
    use TcpState::*;

    const SYN: Flags = Flags {
        syn: true,
        fin: false,
        rst: false,
        ack: false,
    };
    const FIN: Flags = Flags {
        syn: false,
        fin: true,
        rst: false,
        ack: false,
    };
    const RST: Flags = Flags {
        syn: false,
        fin: false,
        rst: true,
        ack: false,
    };
    const ACK: Flags = Flags {
        syn: false,
        fin: false,
        rst: false,
        ack: true,
    };

    #[test]
    fn rfc6146_3_5_2_2_handshake_and_close() {
        let s = on_open(V6);
        assert_eq!(s.state, V6Init);
        let s = on_packet(s.state, V4, SYN);
        assert_eq!(s.state, Established);
        let s = on_packet(s.state, V6, FIN);
        assert_eq!(s.state, V6FinRcv);
        let s = on_packet(s.state, V6, ACK);
        assert_eq!(
            (s.state, s.refresh),
            (V6FinRcv, Some(Lifetime::Established))
        );
        let s = on_packet(s.state, V4, FIN);
        assert_eq!(
            (s.state, s.refresh),
            (V4FinV6FinRcv, Some(Lifetime::Transitory))
        );
        let s = on_packet(s.state, V4, ACK);
        assert_eq!((s.state, s.refresh), (V4FinV6FinRcv, None));
    }

    #[test]
    fn rfc6146_3_5_2_2_v4_init_needs_v6_syn() {
        let s = on_open(V4);
        assert_eq!((s.state, s.refresh), (V4Init, Some(Lifetime::IncomingSyn)));
        assert_eq!(on_packet(V4Init, V4, SYN).state, V4Init);
        assert_eq!(on_packet(V4Init, V6, SYN).state, Established);
    }

    #[test]
    fn rfc6146_3_5_2_2_rst_and_trans() {
        assert_eq!(on_packet(Established, V4, RST).state, Trans);
        assert_eq!(on_packet(Trans, V4, RST).refresh, None);
        assert_eq!(on_packet(Trans, V6, ACK).state, Established);
        assert_eq!(on_expiry(Established).map(|s| s.state), Some(Trans));
        assert_eq!(on_expiry(Trans), None);
        assert_eq!(on_expiry(V6Init), None);
    }
}
