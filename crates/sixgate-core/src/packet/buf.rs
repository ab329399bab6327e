//! The packet buffer (with headroom for in-place growth) and the per-worker scratch
//! area for outputs that do not fit in place (fragments, generated ICMP errors).

/// Headroom a data plane must leave in front of every packet.
///
/// IPv4→IPv6 grows the header by 20 bytes, 28 with a Fragment header; an ICMPv4
/// error grows by twice that (outer and inner header), so 64 covers every case.
pub const HEADROOM: usize = 64;

/// Most packets one translation can emit (RFC 7915 §4 fragmentation of a 64 KiB
/// IPv4 datagram into 1280-byte IPv6 packets needs 53).
pub const MAX_OUTPUTS: usize = 64;

/// A packet at `buf[start..start + len]`, with `start` bytes of headroom before it.
pub struct PacketBuf<'a> {
    buf: &'a mut [u8],
    start: usize,
    len: usize,
}

impl<'a> PacketBuf<'a> {
    /// Wrap `buf[start..start + len]`.
    ///
    /// # Panics
    /// If the range is outside `buf` (a data-plane bug, not packet input).
    pub fn new(buf: &'a mut [u8], start: usize, len: usize) -> Self {
        assert!(start.checked_add(len).is_some_and(|end| end <= buf.len()));
        PacketBuf { buf, start, len }
    }

    /// The packet bytes.
    pub fn data(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    /// The packet bytes, mutable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }

    /// Offset of the packet in the underlying buffer.
    pub fn start(&self) -> usize {
        self.start
    }

    /// Packet length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the packet has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes available in front of the packet.
    pub fn headroom(&self) -> usize {
        self.start
    }

    /// The whole underlying buffer and the packet's range in it, for in-place rewriting.
    pub(crate) fn raw(&mut self) -> (&mut [u8], usize, usize) {
        (self.buf, self.start, self.len)
    }

    /// Move the packet's window to `buf[start..start + len]`.
    pub(crate) fn set_window(&mut self, start: usize, len: usize) {
        debug_assert!(start + len <= self.buf.len());
        self.start = start;
        self.len = len;
    }
}

/// Per-worker output area, allocated once. Holds the packets of a
/// [`crate::Verdict::Fragmented`] or [`crate::Verdict::Replied`].
pub struct Scratch {
    buf: Box<[u8]>,
    pkts: [(u32, u32); MAX_OUTPUTS],
    n: usize,
    used: usize,
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

impl Scratch {
    /// Bytes in the scratch area: 64 KiB of fragments plus their 48-byte headers.
    pub const SIZE: usize = 65_536 + MAX_OUTPUTS * 64;

    /// Allocate the scratch area (once per worker).
    pub fn new() -> Self {
        Scratch {
            buf: vec![0; Self::SIZE].into_boxed_slice(),
            pkts: [(0, 0); MAX_OUTPUTS],
            n: 0,
            used: 0,
        }
    }

    /// The packets of the last verdict, in order.
    pub fn packets(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.pkts[..self.n]
            .iter()
            .map(|&(s, l)| &self.buf[s as usize..(s + l) as usize])
    }

    /// The packets of the last verdict, in order, writable: for a data
    /// plane's last change before it sends them (the TUN plane's hop count,
    /// docs/tun.md "Hop count"). They lie in order in the area, one after
    /// the other.
    pub fn packets_mut(&mut self) -> impl Iterator<Item = &mut [u8]> + '_ {
        let mut rest: &mut [u8] = &mut self.buf[..];
        let mut at = 0usize;
        self.pkts[..self.n].iter().map(move |&(s, l)| {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(s as usize - at);
            let (p, tail) = tail.split_at_mut(l as usize);
            rest = tail;
            at = (s + l) as usize;
            p
        })
    }

    /// Forget all packets.
    pub(crate) fn clear(&mut self) {
        self.n = 0;
        self.used = 0;
    }

    /// Reserve `len` bytes for a new output packet; `None` if full.
    pub(crate) fn push(&mut self, len: usize) -> Option<&mut [u8]> {
        if self.n == MAX_OUTPUTS || self.used + len > self.buf.len() {
            return None;
        }
        let s = self.used;
        self.pkts[self.n] = (s as u32, len as u32);
        self.n += 1;
        self.used += len;
        Some(&mut self.buf[s..s + len])
    }

    /// Add a copy of `pkt` as an output packet; false if full.
    pub(crate) fn push_copy(&mut self, pkt: &[u8]) -> bool {
        match self.push(pkt.len()) {
            Some(out) => {
                out.copy_from_slice(pkt);
                true
            }
            None => false,
        }
    }

    /// Forget the packets after the first `n`.
    pub(crate) fn truncate(&mut self, n: usize) {
        if n < self.n {
            self.used = self.pkts[n].0 as usize;
            self.n = n;
        }
    }

    /// Number of packets held.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True if no packets are held.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `packets_mut` gives each packet once, in order, writable, also
    /// after a truncation.
    #[test]
    fn packets_mut_walks_the_packets_in_order() {
        let mut s = Scratch::new();
        for (i, len) in [3usize, 1, 5].into_iter().enumerate() {
            s.push(len).unwrap().fill(i as u8);
        }
        for p in s.packets_mut() {
            p[0] += 10;
        }
        let got: Vec<Vec<u8>> = s.packets().map(<[u8]>::to_vec).collect();
        assert_eq!(got, [vec![10, 0, 0], vec![11], vec![12, 2, 2, 2, 2]]);
        s.truncate(2);
        assert_eq!(s.packets_mut().count(), 2);
        s.clear();
        assert_eq!(s.packets_mut().count(), 0);
    }
}
