//! RFC 6146 §3.5.2.2: unsolicited IPv4 SYNs, held up to `syn_hold` seconds in case
//! the IPv6 host opens the same connection (simultaneous open, NAT traversal). An
//! IPv6 SYN for the same pair of transport addresses in time discards the held
//! packet (the IPv4 host's own handshake carries on); otherwise `tick` answers it
//! with ICMP Port Unreachable. Preallocated: `max_held_syns` slots of
//! [`HELD_BYTES`] bytes, a linear scan (the store is small and usually empty).

/// Bytes kept of a held SYN: IPv4 header with options and TCP header with
/// options (60 + 60) fit; an ICMP error quotes no more than that anyway.
pub const HELD_BYTES: usize = 120;

#[derive(Clone, Copy)]
struct Held {
    live: bool,
    /// Pool4 address and port the SYN was sent to.
    v4: u32,
    port4: u16,
    /// The IPv4 host.
    remote4: u32,
    rport: u16,
    deadline: u32,
    len: u8,
    data: [u8; HELD_BYTES],
}

pub(crate) struct SynStore {
    slots: Vec<Held>,
    len: u32,
}

impl SynStore {
    pub fn new(cap: u32) -> Self {
        let blank = Held {
            live: false,
            v4: 0,
            port4: 0,
            remote4: 0,
            rport: 0,
            deadline: 0,
            len: 0,
            data: [0; HELD_BYTES],
        };
        SynStore {
            slots: vec![blank; cap as usize],
            len: 0,
        }
    }

    pub fn len(&self) -> u32 {
        self.len
    }

    /// Hold `pkt` (a SYN to `v4:port4` from `remote4:rport`). A retransmission
    /// replaces the held copy and keeps its deadline. `false`: the store is full.
    pub fn hold(&mut self, key: (u32, u16, u32, u16), pkt: &[u8], deadline: u32) -> bool {
        let (v4, port4, remote4, rport) = key;
        let same = |h: &Held| {
            h.live && h.v4 == v4 && h.port4 == port4 && h.remote4 == remote4 && h.rport == rport
        };
        let slot = match self.slots.iter().position(same) {
            Some(i) => i,
            None => match self.slots.iter().position(|h| !h.live) {
                Some(i) => {
                    self.len += 1;
                    self.slots[i].deadline = deadline;
                    i
                }
                None => return false,
            },
        };
        let h = &mut self.slots[slot];
        let n = pkt.len().min(HELD_BYTES);
        h.live = true;
        (h.v4, h.port4, h.remote4, h.rport) = key;
        h.len = n as u8;
        h.data[..n].copy_from_slice(&pkt[..n]);
        true
    }

    /// An IPv6 SYN from `v4:port4` (after mapping) to `remote4:rport`: forget the
    /// held SYN of that pair, if any.
    pub fn release(&mut self, key: (u32, u16, u32, u16)) -> bool {
        if self.len == 0 {
            return false;
        }
        for h in &mut self.slots {
            if h.live && (h.v4, h.port4, h.remote4, h.rport) == key {
                h.live = false;
                self.len -= 1;
                return true;
            }
        }
        false
    }

    /// Take one held SYN whose time ran out, copying its bytes into `out`.
    pub fn take_expired(&mut self, now_ms: u32, out: &mut [u8; HELD_BYTES]) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        for h in &mut self.slots {
            if h.live && super::reached(now_ms, h.deadline) {
                h.live = false;
                self.len -= 1;
                let n = usize::from(h.len);
                out[..n].copy_from_slice(&h.data[..n]);
                return Some(n);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6146_3_5_2_2_store_is_bounded_and_releases() {
        let mut s = SynStore::new(2);
        assert!(s.hold((1, 2, 3, 4), &[0x45; 40], 6000));
        assert!(s.hold((1, 2, 3, 4), &[0x45; 40], 9000)); // retransmission
        assert!(s.hold((1, 2, 3, 5), &[0x45; 40], 6000));
        assert!(!s.hold((1, 2, 3, 6), &[0x45; 40], 6000));
        assert!(s.release((1, 2, 3, 5)));
        let mut out = [0; HELD_BYTES];
        assert_eq!(s.take_expired(5999, &mut out), None);
        assert_eq!(s.take_expired(6000, &mut out), Some(40));
        assert_eq!(s.len(), 0);
    }
}
