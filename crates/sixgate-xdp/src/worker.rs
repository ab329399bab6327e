//! An XDP worker's packet I/O ([`PacketIo`]) for the runtime's worker loop:
//! one receive queue on each interface, one UMEM shared by its two AF_XDP
//! sockets, one [`Translator`].
//!
//! Each batch, for each socket: take up to [`BATCH`] received frames, translate
//! each in place (the IP header starts 14 bytes into the frame's data, behind
//! the kernel's 256-byte headroom, so the +20/+28 bytes of IPv4 → IPv6 fit in
//! front), write the Ethernet header for the next hop in front of the result and
//! queue the same frame on the tx ring of the interface the route leaves by.
//! Then, once per socket: publish the tx ring (one `sendto` in copy mode),
//! collect completed frames, top the fill rings up. Only an idle worker sleeps,
//! in `poll` on both sockets, its handoff doorbell and the stop pipe. Outputs
//! that are not the input frame (fragments, ICMP errors, timer output) are
//! copied into free frames.
//!
//! With several workers and per-worker state (stateful NAT64), a received
//! packet another worker owns ([`Owner`]) is copied into that worker's
//! [`handoff`](crate::handoff) ring instead of translated; each round a worker
//! also takes what the others handed it, copies each packet into a free frame
//! of its own and translates it as if received.

use std::sync::Arc;

use sixgate_core::{Config, HEADROOM, PacketBuf, Scratch, Translator, Verdict};
use sixgate_dataplane::worker::TICK_MS;
use sixgate_dataplane::{Follows, IoCounters, PacketIo, Sleep};

use crate::handoff::{Consumer, Doorbell, Producer};
use crate::kernel_path::KernelPath;
use crate::nexthop::{Hop, NextHops};
use crate::owner::Owner;
use crate::xsk::{FRAME_SIZE, Umem, Xsk};

/// Most frames taken from one rx ring per round.
pub const BATCH: u32 = 64;
/// Ethernet header length (no VLAN tag).
const ETH: usize = 14;
/// Where copied packets start in a free frame: as far in as received ones.
pub(crate) const COPY_OFFSET: usize = 256;

/// The frames, the sockets and where packets go: everything but the
/// translator, so that a packet the translator left in its scratch area can be
/// sent while the scratch area is borrowed.
pub(crate) struct Sockets {
    pub umem: Umem,
    /// Socket on the IPv6-side interface, then on the IPv4-side one.
    pub xsks: [Xsk; 2],
    /// Frames owned by user space and not in use.
    pub free: Vec<u64>,
    /// Frames handed to each fill ring and not received yet.
    pub filled: [u32; 2],
    /// How many frames each fill ring should hold.
    pub fill_target: u32,
    pub hops: NextHops,
    pub kernel: KernelPath,
    pub counters: IoCounters,
}

impl Sockets {
    /// Send the packet at `frame[start..start + len]` of the frame at `base`,
    /// which the caller owns; it is given back to the free list unless queued.
    fn send_frame(&mut self, base: u64, start: usize, len: usize, now_ns: u64) {
        let (_, frame) = self.umem.frame_mut(base);
        let hop = self.hops.for_packet(&frame[start..start + len], now_ns);
        match hop {
            Some(Hop::Xsk { side, dst, src }) if start >= ETH => {
                if self.xsks[side].tx_room(1) == 0 {
                    let _ = self.xsks[side].flush();
                    self.xsks[side].complete(&mut self.free);
                    if self.xsks[side].tx_room(1) == 0 {
                        self.counters.tx_errors += 1;
                        self.free.push(base);
                        return;
                    }
                }
                let eth = &mut frame[start - ETH..start];
                eth[0..6].copy_from_slice(&dst);
                eth[6..12].copy_from_slice(&src);
                let ethertype: u16 = if frame[start] >> 4 == 6 {
                    0x86dd
                } else {
                    0x0800
                };
                frame[start - 2..start].copy_from_slice(&ethertype.to_be_bytes());
                self.xsks[side].transmit(base + (start - ETH) as u64, (len + ETH) as u32);
                self.counters.tx_packets += 1;
                self.counters.tx_bytes += len as u64;
            }
            Some(_) => {
                match self.kernel.send(&frame[start..start + len]) {
                    Ok(()) => {
                        self.counters.to_kernel += 1;
                        self.counters.tx_packets += 1;
                        self.counters.tx_bytes += len as u64;
                    }
                    Err(_) => self.counters.no_route += 1,
                }
                self.free.push(base);
            }
            None => {
                self.counters.no_route += 1;
                self.free.push(base);
            }
        }
    }

    /// Send a packet that is not in a frame (scratch output): copied into a free
    /// frame first.
    fn send_copy(&mut self, pkt: &[u8], now_ns: u64) {
        if pkt.len() > FRAME_SIZE as usize - COPY_OFFSET {
            self.counters.tx_errors += 1;
            return;
        }
        let Some(base) = self.free.pop() else {
            self.counters.tx_errors += 1;
            return;
        };
        let (_, frame) = self.umem.frame_mut(base);
        frame[COPY_OFFSET..COPY_OFFSET + pkt.len()].copy_from_slice(pkt);
        self.send_frame(base, COPY_OFFSET, pkt.len(), now_ns);
    }

    /// Publish both tx rings, collect completions, refill both fill rings.
    pub(crate) fn housekeeping(&mut self) -> Result<(), String> {
        for (side, x) in self.xsks.iter_mut().enumerate() {
            if let Err(e) = x.flush() {
                self.counters.tx_errors += 1;
                if e.raw_os_error() == Some(libc::ENETDOWN) || e.raw_os_error() == Some(libc::ENXIO)
                {
                    return Err(format!("cannot transmit on interface {side}: {e}"));
                }
            }
            x.complete(&mut self.free);
        }
        for (side, x) in self.xsks.iter_mut().enumerate() {
            let want = self.fill_target.saturating_sub(self.filled[side]);
            if want > 0 {
                self.filled[side] += x.fill(&mut self.free, want);
            }
        }
        Ok(())
    }
}

/// One worker's ends of the handoff rings (none with one worker, or in a
/// stateless mode).
pub(crate) struct Handoff {
    /// Who translates what.
    pub owner: Owner,
    /// Ring to each other worker, by index (`None` at this worker's own).
    pub to: Vec<Option<Producer>>,
    /// Rings from the other workers.
    pub from: Vec<Consumer>,
    /// Rung by the others when they hand this worker packets.
    pub doorbell: std::sync::Arc<Doorbell>,
}

impl Handoff {
    /// Hand IP packet `ip` to worker `to`: counted as handed over, or as a
    /// drop when its ring is full.
    fn give(&mut self, to: u16, ip: &[u8], counters: &mut IoCounters) {
        let ring = self.to.get_mut(usize::from(to)).and_then(Option::as_mut);
        if ring.is_some_and(|p| p.push(ip)) {
            counters.handoff += 1;
        } else {
            counters.handoff_full += 1;
        }
    }

    /// Make this round's packets visible to their owners.
    fn publish(&mut self) {
        for p in self.to.iter_mut().flatten() {
            p.publish();
        }
    }
}

/// One worker's sockets, translator and handoff rings.
pub(crate) struct XdpIo {
    pub index: usize,
    pub sockets: Sockets,
    pub translator: Translator,
    pub scratch: Scratch,
    pub handoff: Option<Handoff>,
}

impl Follows for XdpIo {
    /// Static BIB entries and pool4 (hairpinning) decide owners too.
    fn reconfigure(&mut self, cfg: Arc<Config>) -> Result<(), sixgate_core::reconfigure::Refused> {
        self.translator.reconfigure(cfg)?;
        if let Some(h) = &mut self.handoff {
            let workers = h.to.len() as u16;
            h.owner = Owner::for_config(self.translator.config(), workers);
        }
        Ok(())
    }
    fn translator(&self) -> &Translator {
        &self.translator
    }
    fn translator_mut(&mut self) -> &mut Translator {
        &mut self.translator
    }
}

impl PacketIo for XdpIo {
    fn start(&mut self) -> Result<(), String> {
        self.sockets.housekeeping()
    }

    fn batch(&mut self, now_ns: u64) -> Result<bool, String> {
        let mut got = 0;
        for side in 0..2 {
            let mut descs = [(0u64, 0u32); BATCH as usize];
            let mut k = 0;
            let n = self.sockets.xsks[side].receive(BATCH, |a, l| {
                descs[k] = (a, l);
                k += 1;
            });
            self.sockets.filled[side] -= n;
            for &(addr, len) in &descs[..k] {
                self.handle(addr, len as usize, now_ns);
            }
            got += n;
        }
        got += self.take_handed(now_ns);
        if let Some(h) = &mut self.handoff {
            h.publish();
        }
        self.sockets.housekeeping()?;
        Ok(got > 0)
    }

    /// The translator's timers (RFC 6146 session expiry, held SYNs).
    fn tick(&mut self, now_ns: u64) {
        for _ in 0..4096 {
            let Some(v) = self.translator.tick(now_ns, &mut self.scratch) else {
                break;
            };
            for p in v.scratch_outputs(&self.scratch) {
                self.sockets.send_copy(p, now_ns);
            }
        }
    }

    fn io_counters(&self) -> &IoCounters {
        &self.sockets.counters
    }

    /// Sleep on both sockets and the handoff doorbell, at most 100 ms
    /// (timers). While transmitted frames are outstanding, at most 1 ms after
    /// kicking the tx rings again (copy mode completes them as the peer takes
    /// the packets). No sleep while packets handed over wait.
    fn sleep(&mut self) -> Option<Sleep> {
        let outstanding = self.sockets.xsks.iter_mut().any(|x| x.tx_outstanding());
        if outstanding {
            for x in &self.sockets.xsks {
                let _ = x.kick();
            }
        }
        // Packets handed over since this round looked: no sleep. Checked after
        // the last look (Consumer::is_empty pairs with Producer::publish), so
        // a packet handed over later rings the doorbell polled.
        let bell = match &mut self.handoff {
            Some(h) => {
                if !h.from.iter_mut().all(|c| c.is_empty()) {
                    return None;
                }
                h.doorbell.fd()
            }
            None => -1,
        };
        Some(Sleep {
            fds: [self.sockets.xsks[0].fd(), self.sockets.xsks[1].fd(), bell],
            timeout_ms: Some(if outstanding { 1 } else { TICK_MS }),
        })
    }

    fn woke(&mut self, revents: [i16; 3]) -> Result<(), String> {
        if revents[2] != 0
            && let Some(h) = &self.handoff
        {
            h.doorbell.clear();
        }
        Ok(())
    }

    /// What the kernel dropped before the worker saw it: not in the summary's
    /// counters (they count what sixgate handled), so said here.
    fn finish(&mut self, index: usize) {
        for (side, x) in self.sockets.xsks.iter().enumerate() {
            if let Ok(st) = x.statistics() {
                tracing::info!(
                    worker = index,
                    socket = if side == 0 { "ipv6 side" } else { "ipv4 side" },
                    rx_dropped = st.rx_dropped,
                    rx_ring_full = st.rx_ring_full,
                    fill_ring_empty = st.rx_fill_ring_empty_descs,
                    rx_invalid = st.rx_invalid_descs,
                    tx_invalid = st.tx_invalid_descs,
                    "AF_XDP socket statistics"
                );
            }
        }
    }
}

impl XdpIo {
    /// Translate one received frame and send what comes out, or hand it to
    /// the worker that owns it.
    fn handle(&mut self, addr: u64, len: usize, now_ns: u64) {
        let io = &mut self.sockets;
        let (base, frame) = io.umem.frame_mut(addr);
        let off = (addr - base) as usize;
        io.counters.rx_packets += 1;
        io.counters.rx_bytes += len as u64;
        // The IP header must have the core's headroom in front of it.
        if len <= ETH || off + len > frame.len() || off + ETH < HEADROOM {
            io.counters.rx_truncated += 1;
            io.free.push(base);
            return;
        }
        if let Some(h) = &mut self.handoff {
            let ip = &frame[off + ETH..off + len];
            let owner = h.owner.of(ip, self.index as u16);
            if usize::from(owner) != self.index {
                h.give(owner, ip, &mut io.counters);
                io.free.push(base);
                return;
            }
        }
        self.translate(base, off + ETH, len - ETH, now_ns);
    }

    /// Take up to a batch of packets from each ring the other workers hand
    /// this one, each copied into a free frame where a received one would be;
    /// returns how many.
    fn take_handed(&mut self, now_ns: u64) -> u32 {
        let Some(h) = &mut self.handoff else {
            return 0;
        };
        // Out of `self` while `translate` borrows it (no allocation: a move).
        let mut from = std::mem::take(&mut h.from);
        let mut got = 0;
        for c in &mut from {
            let io = &mut self.sockets;
            let mut taken = [(0u64, 0usize); BATCH as usize];
            let mut k = 0;
            c.drain(BATCH, |ip| {
                // No free frame: leave it in the ring for the next round.
                let Some(base) = io.free.pop() else {
                    return false;
                };
                let (_, frame) = io.umem.frame_mut(base);
                let at = COPY_OFFSET + ETH;
                let Some(dst) = frame.get_mut(at..at + ip.len()) else {
                    io.counters.rx_truncated += 1;
                    io.free.push(base);
                    return true;
                };
                dst.copy_from_slice(ip);
                taken[k] = (base, ip.len());
                k += 1;
                true
            });
            got += k as u32;
            for &(base, len) in &taken[..k] {
                self.translate(base, COPY_OFFSET + ETH, len, now_ns);
            }
        }
        if let Some(h) = &mut self.handoff {
            h.from = from;
        }
        got
    }

    /// Translate the IP packet at `start..start + len` of the frame at `base`
    /// (which this worker owns) and send what comes out. A translated packet
    /// that must be translated again (NAT64 hairpinning through another
    /// worker's port) goes to its owner, or once more through this worker.
    fn translate(&mut self, base: u64, start: usize, len: usize, now_ns: u64) {
        let (mut start, mut len) = (start, len);
        for pass in 0..2 {
            let io = &mut self.sockets;
            let (_, frame) = io.umem.frame_mut(base);
            let mut pkt = PacketBuf::new(frame, start, len);
            match self
                .translator
                .translate(&mut pkt, &mut self.scratch, now_ns)
            {
                Verdict::Translated => {
                    let (s, l) = (pkt.start(), pkt.data().len());
                    if let Some(h) = &mut self.handoff
                        && let Some(owner) = h.owner.hairpin(pkt.data())
                    {
                        if usize::from(owner) != self.index {
                            h.give(owner, pkt.data(), &mut io.counters);
                            io.free.push(base);
                            return;
                        }
                        if pass == 0 && s >= HEADROOM {
                            (start, len) = (s, l);
                            continue;
                        }
                    }
                    io.send_frame(base, s, l, now_ns);
                }
                // Held: the translator copied it; it leaves with a later packet.
                v => {
                    io.free.push(base);
                    for p in v.scratch_outputs(&self.scratch) {
                        io.send_copy(p, now_ns);
                    }
                }
            }
            return;
        }
    }
}
