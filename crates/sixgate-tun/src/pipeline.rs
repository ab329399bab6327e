//! One worker's packet path, without the I/O: a packet read from TUN (with its
//! virtio-net header when offloads are on) goes in, every packet to write back
//! comes out through `emit`. Kept apart from the file descriptors so that it can
//! be tested without a TUN device.
//!
//! What happens to a packet, by its virtio-net header:
//!
//! | input | handling |
//! |---|---|
//! | plain (no header, or `NEEDS_CSUM` clear) | [`Translator::translate`]; `DATA_VALID` carried over |
//! | `NEEDS_CSUM`, TCP/UDP right after the IP header, cannot be fragmented | translated with the partial-checksum rule; the output keeps `NEEDS_CSUM`, `csum_start` shifted |
//! | `NEEDS_CSUM`, anything else (ICMP, IPv6 extension headers, IPv4 DF=0 that may be fragmented) | checksum finished in software first, then translated as plain |
//! | GSO super-packet, TCP/UDP right after the IP header, IPv4 with DF=1, egress MTU keys unset | translated **once** with the partial rule; header rewritten ([`VnetHdr::translated`]) |
//! | any other GSO super-packet | segmented in software ([`crate::gso`]), each segment translated as plain |
//!
//! Fragmenting a super-packet would be wrong (the kernel would fragment every
//! segment, or the fragments would carry a partial checksum), and so would the
//! translator's own MTU checks on its 64 KiB length, hence the conditions above.

use std::sync::Arc;

use sixgate_core::packet::proto::{TCP, UDP};
use sixgate_core::packet::{IpHeader, ipv6};
use sixgate_core::rfc7915::v6_to_v4::DF_THRESHOLD_V4;
use sixgate_core::{Config, Counters, HEADROOM, PacketBuf, Scratch, Translator, Verdict, nat64};
use sixgate_dataplane::IoCounters;

use crate::vnet::{self, F_NEEDS_CSUM, Gso, TCP_CSUM_OFFSET, UDP_CSUM_OFFSET, VnetHdr};
use crate::{gso, hops};

/// Largest packet a TUN queue hands over: 64 KiB GSO super-packets (the TUN
/// device's `gso_max_size`), with room to spare. A read that fills the buffer
/// is taken as truncated and dropped.
pub const RX_MAX: usize = 65_536 + 1024;

/// Most `tick` calls in one [`Pipeline::tick`].
const TICK_ROUNDS: usize = 4096;

/// What the translator configuration says about offload decisions.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// An IPv4 DF=0 packet longer than this, plus 20, is fragmented by the core.
    frag_limit: usize,
    /// `ipv6_mtu` is set: the core checks DF=1 IPv4 packets against it.
    ipv6_mtu_set: bool,
    /// `ipv4_mtu` is set: the core checks IPv6 packets against it.
    ipv4_mtu_set: bool,
}

impl Limits {
    fn of(cfg: &Config) -> Limits {
        Limits {
            frag_limit: cfg.v6_fragment_limit(),
            ipv6_mtu_set: cfg.ipv6_mtu.is_some(),
            ipv4_mtu_set: cfg.ipv4_mtu.is_some(),
        }
    }
}

/// A worker's translator, buffers and counters. Everything is allocated here,
/// once; [`Pipeline::process`] allocates nothing.
pub struct Pipeline {
    translator: Translator,
    scratch: Scratch,
    rx_hdr: [u8; vnet::LEN],
    rx: Box<[u8]>,
    seg: Box<[u8]>,
    vnet: bool,
    stateful: bool,
    limits: Limits,
    /// Give back the hop the kernel takes forwarding a packet into the TUN
    /// device and out of it ([`crate::hops`]); on unless
    /// [`Pipeline::set_give_back_hops`] turned it off.
    give_back_hops: bool,
    /// I/O and offload counters.
    pub io: IoCounters,
}

impl Pipeline {
    /// A pipeline for packets with (`vnet`) or without a virtio-net header; the
    /// only worker.
    pub fn new(cfg: Arc<Config>, vnet: bool) -> Self {
        Self::for_worker(cfg, vnet, 0, 1)
    }

    /// The pipeline of worker `worker` of `workers`: in nat64 mode its
    /// translator owns that worker's share of pool4 ports and subscribers.
    pub fn for_worker(cfg: Arc<Config>, vnet: bool, worker: u16, workers: u16) -> Self {
        let limits = Limits::of(&cfg);
        // A MAP-T CE's NAPT44 has the same tables and timers as the NAT64.
        let stateful = cfg.nat64.is_some() || cfg.mapt.as_ref().is_some_and(|m| m.ce().is_some());
        Pipeline {
            stateful,
            translator: Translator::for_worker(cfg, worker, workers),
            scratch: Scratch::new(),
            rx_hdr: [0; vnet::LEN],
            rx: vec![0; HEADROOM + RX_MAX].into_boxed_slice(),
            // Only used for software segmentation, which only happens with vnet.
            seg: vec![0; if vnet { HEADROOM + RX_MAX } else { 0 }].into_boxed_slice(),
            vnet,
            limits,
            give_back_hops: true,
            io: IoCounters::default(),
        }
    }

    /// Whether to give back the kernel's hops ([`crate::hops`]): on for a
    /// TUN device, off to see the core's packets unchanged (tests).
    pub fn set_give_back_hops(&mut self, on: bool) {
        self.give_back_hops = on;
    }

    /// A runtime change (see [`sixgate_core::reconfigure`]): the translator
    /// keeps its state; the offload limits follow the new MTUs.
    pub fn reconfigure(
        &mut self,
        cfg: Arc<Config>,
    ) -> Result<(), sixgate_core::reconfigure::Refused> {
        let limits = Limits::of(&cfg);
        self.translator.reconfigure(cfg)?;
        self.limits = limits;
        Ok(())
    }

    /// The translator, to read its tables (control plane).
    pub fn translator(&self) -> &Translator {
        &self.translator
    }

    /// The translator, to change its tables between batches (a flush).
    pub(crate) fn translator_mut(&mut self) -> &mut Translator {
        &mut self.translator
    }

    /// True when packets carry a virtio-net header.
    pub fn vnet(&self) -> bool {
        self.vnet
    }

    /// The translator's counters.
    pub fn counters(&self) -> &Counters {
        self.translator.counters()
    }

    /// The translator's timers (stateful NAT64: session expiry, held SYNs), due at
    /// least every [`sixgate_dataplane::TICK_NS`]: runs them until they are done and emits the packets
    /// they leave (an ICMPv4 Port Unreachable for a held SYN, RFC 6146
    /// §3.5.2.2).
    pub fn tick(&mut self, now_ns: u64, emit: &mut impl FnMut(&VnetHdr, &[u8]) -> bool) {
        // Bounded, in case the core kept answering: the next tick goes on.
        for _ in 0..TICK_ROUNDS {
            let Some(v) = self.translator.tick(now_ns, &mut self.scratch) else {
                break;
            };
            let n = v.scratch_outputs(&self.scratch).count();
            for p in self.scratch.packets_mut().take(n) {
                send(emit, &mut self.io, self.give_back_hops, &VnetHdr::PLAIN, p);
            }
        }
    }

    /// Hand every logged NAT64 event (RFC 6888 §4, BIB/session and port-block
    /// creation and expiry) to `f`.
    pub fn drain_events(&mut self, f: impl FnMut(&nat64::Event)) {
        self.translator.drain_events(f);
    }

    /// NAT64 table sizes and pool4 port use; a MAP-T CE's NAPT44 tables and port
    /// set (`None` in the other modes).
    pub fn nat64_stats(&self) -> Option<nat64::Stats> {
        self.stateful.then(|| {
            let s = self.translator.nat64_stats();
            if self.translator.config().nat64.is_some() {
                s
            } else {
                self.translator.napt44_stats()
            }
        })
    }

    /// True in stateful NAT64 mode: [`Pipeline::tick`] is due every [`sixgate_dataplane::TICK_NS`].
    pub fn stateful(&self) -> bool {
        self.stateful
    }

    /// Where the next read goes: the virtio-net header (vnet mode only) and the
    /// packet, which lands at [`HEADROOM`] in the receive buffer.
    pub fn rx_buffers(&mut self) -> (&mut [u8; vnet::LEN], &mut [u8]) {
        (&mut self.rx_hdr, &mut self.rx[HEADROOM..])
    }

    /// Handle a read of `n` bytes (header included in vnet mode) into
    /// [`Pipeline::rx_buffers`]. `emit` writes one packet (with its header, in vnet
    /// mode) and says whether that worked.
    pub fn process(
        &mut self,
        n: usize,
        now_ns: u64,
        emit: &mut impl FnMut(&VnetHdr, &[u8]) -> bool,
    ) {
        let (hdr, len) = if self.vnet {
            if n <= vnet::LEN {
                self.io.rx_truncated += 1;
                return;
            }
            (VnetHdr::decode(&self.rx_hdr), n - vnet::LEN)
        } else {
            (VnetHdr::PLAIN, n)
        };
        if len == 0 {
            return;
        }
        if len >= RX_MAX {
            self.io.rx_truncated += 1;
            return;
        }
        self.io.rx_packets += 1;
        self.io.rx_bytes += len as u64;
        if self.give_back_hops {
            // The kernel's forwarding into the device took one (crate::hops).
            hops::give_back(&mut self.rx[HEADROOM..HEADROOM + len]);
        }

        let action = {
            let data = &mut self.rx[HEADROOM..HEADROOM + len];
            match hdr.gso() {
                Gso::None if !hdr.needs_csum() => Action::Whole(false, hdr),
                Gso::None if !csum_fits(&hdr, len) => Action::Drop,
                Gso::None if partial_ok(data, &hdr, &self.limits) => Action::Whole(true, hdr),
                Gso::None => {
                    vnet::complete_checksum(data, hdr.csum_start, hdr.csum_offset);
                    self.io.csum_sw += 1;
                    let plain = VnetHdr {
                        flags: hdr.flags & !F_NEEDS_CSUM,
                        ..hdr
                    };
                    Action::Whole(false, plain)
                }
                _ => {
                    self.io.gso_in += 1;
                    match one_shot(data, &hdr, &self.limits) {
                        OneShot::Whole => {
                            self.io.gso_whole += 1;
                            Action::Whole(true, hdr)
                        }
                        shot => match gso::plan(data, &hdr) {
                            Ok(plan) if shot == OneShot::HeadAndTail && plan.count >= 2 => {
                                self.io.gso_whole += 1;
                                Action::HeadAndTail(plan)
                            }
                            Ok(plan) => {
                                self.io.gso_split += 1;
                                Action::Split(plan)
                            }
                            Err(_) => Action::Drop,
                        },
                    }
                }
            }
        };

        let mut out = Out {
            t: &mut self.translator,
            scratch: &mut self.scratch,
            io: &mut self.io,
            hops: self.give_back_hops,
            now_ns,
            emit,
        };
        match action {
            Action::Whole(partial, h) => out.translate(&mut self.rx, len, partial, &h),
            Action::Split(plan) => {
                for i in 0..plan.count {
                    let data = &self.rx[HEADROOM..HEADROOM + len];
                    let n = gso::segment(data, &plan, i, &mut self.seg[HEADROOM..]);
                    out.translate(&mut self.seg, n, false, &VnetHdr::PLAIN);
                }
            }
            Action::HeadAndTail(plan) => {
                // The short last segment cut off first, from the whole
                // packet (it keeps FIN and PSH), then the rest translated
                // once: every segment gets the core's DF (one_shot).
                let n = gso::segment(
                    &self.rx[HEADROOM..HEADROOM + len],
                    &plan,
                    plan.count - 1,
                    &mut self.seg[HEADROOM..],
                );
                let tail = len - plan.hdrs - (plan.count - 1) * plan.mss;
                drop_tail(&mut self.rx[HEADROOM..HEADROOM + len], &plan, tail);
                out.translate(&mut self.rx, len - tail, true, &hdr);
                out.translate(&mut self.seg, n, false, &VnetHdr::PLAIN);
            }
            Action::Drop => out.io.offload_dropped += 1,
        }
    }
}

/// What to do with one input packet.
enum Action {
    /// Translate it as it is: with the partial-checksum rule or not, and the
    /// header to rewrite for the output.
    Whole(bool, VnetHdr),
    /// Segment it in software and translate each segment.
    Split(gso::Plan),
    /// An IPv6 TCP super-packet whose full segments keep DF=1 but whose
    /// short last one would not: that one cut in software, the rest
    /// translated once.
    HeadAndTail(gso::Plan),
    /// Drop it (counted as `offload_dropped`).
    Drop,
}

/// The translator and the way out, for one input packet.
struct Out<'a, E> {
    t: &'a mut Translator,
    scratch: &'a mut Scratch,
    io: &'a mut IoCounters,
    /// Give back the hop the kernel takes on the way out ([`crate::hops`]).
    hops: bool,
    now_ns: u64,
    emit: &'a mut E,
}

/// Write one packet through `emit`, counted as sent or as a failed write;
/// with `hops`, one hop given back first for the kernel's forwarding out of
/// the device ([`crate::hops`]).
fn send(
    emit: &mut impl FnMut(&VnetHdr, &[u8]) -> bool,
    io: &mut IoCounters,
    hops: bool,
    h: &VnetHdr,
    p: &mut [u8],
) {
    if hops {
        hops::give_back(p);
    }
    if emit(h, p) {
        io.tx_packets += 1;
        io.tx_bytes += p.len() as u64;
    } else {
        io.tx_errors += 1;
    }
}

impl<E: FnMut(&VnetHdr, &[u8]) -> bool> Out<'_, E> {
    /// Translate `buf[HEADROOM..HEADROOM + len]` and emit what comes out.
    fn translate(&mut self, buf: &mut [u8], len: usize, partial: bool, hdr: &VnetHdr) {
        let declared = ip_len(&buf[HEADROOM..HEADROOM + len]).unwrap_or(len);
        let mut pkt = PacketBuf::new(buf, HEADROOM, len);
        match self
            .t
            .translate_with(&mut pkt, self.scratch, self.now_ns, partial)
        {
            Verdict::Translated => {
                let out = pkt.data();
                let delta = out.len() as isize - declared as isize;
                let h = hdr.translated(delta, out.len(), out[0] >> 4 == 6);
                send(self.emit, self.io, self.hops, &h, pkt.data_mut());
            }
            Verdict::Fragmented(_) if partial || hdr.gso() != Gso::None => {
                // Excluded by partial_ok/one_shot; never send fragments that
                // carry a partial checksum or a GSO header.
                self.io.offload_dropped += 1;
            }
            // Held: the translator copied it; it leaves with a later packet.
            v => {
                let n = v.scratch_outputs(self.scratch).count();
                for p in self.scratch.packets_mut().take(n) {
                    send(self.emit, self.io, self.hops, &VnetHdr::PLAIN, p);
                }
            }
        }
    }
}

/// The length the IP header claims (IPv4 Total Length, IPv6 40 + Payload Length).
fn ip_len(p: &[u8]) -> Option<usize> {
    Some(IpHeader::of(p)?.declared_len())
}

fn csum_fits(h: &VnetHdr, len: usize) -> bool {
    usize::from(h.csum_start) + usize::from(h.csum_offset) + 2 <= len
}

/// The transport protocol right after a plain IP header (no IPv4 fragment, no
/// IPv6 extension header), if the checksum offsets point at its checksum.
fn transport_at_csum_start(p: &[u8], h: &VnetHdr) -> Option<u8> {
    let (l4, proto) = match IpHeader::of(p)? {
        // A fragment's checksum covers bytes that are not here.
        IpHeader::V4(h) if h.is_fragment() => return None,
        IpHeader::V4(h) => (h.header_len(), h.proto),
        IpHeader::V6(h) => (ipv6::HEADER_LEN, h.next_header),
    };
    let offset = match proto {
        TCP => TCP_CSUM_OFFSET,
        UDP => UDP_CSUM_OFFSET,
        _ => return None,
    };
    (usize::from(h.csum_start) == l4 && h.csum_offset == offset && csum_fits(h, p.len()))
        .then_some(proto)
}

/// A single (non-GSO) packet whose partial checksum the core can carry across.
fn partial_ok(p: &[u8], h: &VnetHdr, l: &Limits) -> bool {
    if transport_at_csum_start(p, h).is_none() {
        return false;
    }
    // IPv4 DF=0 that the core will fragment for the IPv6 side: finish it first.
    !matches!(IpHeader::of(p), Some(IpHeader::V4(h))
        if !h.df() && usize::from(h.total_len.get()) + 20 > l.frag_limit)
}

/// How a super-packet may be translated once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OneShot {
    /// All of it.
    Whole,
    /// All but its short last segment, which must get DF=0 (IPv6 TCP).
    HeadAndTail,
    /// Not at all: cut in software.
    No,
}

/// Whether a GSO super-packet can be translated once (see the module
/// table), or all of it but its last segment.
fn one_shot(p: &[u8], h: &VnetHdr, l: &Limits) -> OneShot {
    if !h.needs_csum() {
        return OneShot::No;
    }
    let Some(proto) = transport_at_csum_start(p, h) else {
        return OneShot::No;
    };
    let (v4, df) = match IpHeader::of(p) {
        Some(IpHeader::V4(h)) => (true, h.df()),
        _ => (false, false),
    };
    let type_fits = match h.gso() {
        Gso::TcpV4 => v4 && proto == TCP,
        Gso::TcpV6 => !v4 && proto == TCP,
        Gso::UdpL4 => proto == UDP,
        Gso::None | Gso::Other(_) => false,
    };
    // IPv4→IPv6: DF=0 would be fragmented, and a set ipv6_mtu would be checked
    // against the super-packet's length. IPv6→IPv4: the same for ipv4_mtu.
    let mtu_free = if v4 {
        df && !l.ipv6_mtu_set
    } else {
        !l.ipv4_mtu_set
    };
    if !(type_fits && mtu_free && h.gso_size > 0) {
        return OneShot::No;
    }
    if v4 {
        return OneShot::Whole;
    }
    match segments_df(p, h) {
        SegmentsDf::All => OneShot::Whole,
        SegmentsDf::AllButLast if h.gso() == Gso::TcpV6 => OneShot::HeadAndTail,
        _ => OneShot::No,
    }
}

/// Which segments of an IPv6 super-packet keep DF=1 once translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SegmentsDf {
    All,
    AllButLast,
    No,
}

/// IPv6→IPv4: RFC 7915 §5.1 gives a translated packet up to
/// [`DF_THRESHOLD_V4`] bytes DF=0 (and an Identification), a larger one
/// DF=1. Translated once, every segment of a super-packet would carry the
/// super-packet's DF=1, the short last one too: so only a super-packet
/// whose every segment (headers and `gso_size` bytes) translates above the
/// threshold goes whole, its last segment cut off first when that one does
/// not (TCP); the rest are cut in software and each segment gets its own
/// DF, as the core gives it (tests/differential.rs, GSO). For UDP every
/// segment is one datagram.
fn segments_df(p: &[u8], h: &VnetHdr) -> SegmentsDf {
    // TCP or UDP at csum_start (one_shot checked): its header's length.
    let l4 = usize::from(h.csum_start);
    let transport = if h.gso() == Gso::UdpL4 {
        8
    } else {
        match p.get(l4 + 12) {
            Some(&offset) => usize::from(offset >> 4) * 4,
            None => return SegmentsDf::No,
        }
    };
    let headers = IPV4_HEADER + transport;
    let Some(payload) = ip_len(p).and_then(|n| n.checked_sub(l4 + transport)) else {
        return SegmentsDf::No;
    };
    let size = usize::from(h.gso_size);
    let tail = payload % size;
    if headers + size <= DF_THRESHOLD_V4 {
        SegmentsDf::No
    } else if tail == 0 || headers + tail > DF_THRESHOLD_V4 {
        SegmentsDf::All
    } else if payload > 2 * size {
        SegmentsDf::AllButLast
    } else {
        SegmentsDf::No
    }
}

/// An IPv4 header without options: what an IPv6 header becomes.
const IPV4_HEADER: usize = 20;

/// Make `p` (an IPv6 TCP super-packet with a partial checksum) end before
/// its last `tail` bytes: Payload Length, the pseudo-header sum in the
/// checksum field (it holds the length, RFC 8200 §8.1), and FIN and PSH,
/// which go with the last segment cut off.
fn drop_tail(p: &mut [u8], plan: &gso::Plan, tail: usize) {
    let plen = u16::from_be_bytes([p[4], p[5]]) - tail as u16;
    p[4..6].copy_from_slice(&plen.to_be_bytes());
    let at = plan.l4_off + usize::from(TCP_CSUM_OFFSET);
    let field = u16::from_be_bytes([p[at], p[at + 1]]);
    // One's complement subtraction of the length difference.
    let mut sum = u32::from(field) + u32::from(!(tail as u16));
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    p[at..at + 2].copy_from_slice(&(sum as u16).to_be_bytes());
    p[plan.l4_off + 13] &= !0x09;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vnet::{F_DATA_VALID, GSO_TCPV4, GSO_TCPV6, GSO_UDP_L4};
    use sixgate_core::checksum;
    use sixgate_testkit::{Family, Ip4, Ip6};
    use std::net::{Ipv4Addr, Ipv6Addr};

    const CLIENT6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 5);
    const SERVER6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x64, 0, 0, 0, 0xcb00, 0x7101);
    const CLIENT4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 5);
    const SERVER4: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 1);

    /// The shipped sample configuration (pool6 2001:db8:64::/96, EAM
    /// 198.18.0.0/24 ↔ 2001:db8:1::/120): the tests translate what users run.
    fn config() -> Config {
        let text = include_str!("../../../samples/siit.toml");
        sixgate_config::parse(text, "samples/siit.toml")
            .unwrap()
            .config
    }

    /// Feed one packet (with header) through a fresh vnet pipeline.
    fn run(cfg: Config, hdr: VnetHdr, pkt: &[u8]) -> (Vec<(VnetHdr, Vec<u8>)>, Pipeline) {
        let mut p = Pipeline::new(Arc::new(cfg), true);
        let (h, data) = p.rx_buffers();
        *h = hdr.encode();
        data[..pkt.len()].copy_from_slice(pkt);
        let mut outs = Vec::new();
        p.process(vnet::LEN + pkt.len(), 0, &mut |h: &VnetHdr, d: &[u8]| {
            outs.push((*h, d.to_vec()));
            true
        });
        (outs, p)
    }

    /// The partial-checksum form of a packet with a complete TCP/UDP checksum.
    fn partial(mut p: Vec<u8>) -> (Vec<u8>, u16, u16) {
        let (l4, proto) = if p[0] >> 4 == 4 {
            (usize::from(p[0] & 15) * 4, p[9])
        } else {
            (40, p[6])
        };
        let at = if proto == TCP { 16 } else { 6 };
        let len = p.len() - l4;
        let pseudo = if p[0] >> 4 == 4 {
            checksum::v4_pseudo(
                &p[12..16].try_into().unwrap(),
                &p[16..20].try_into().unwrap(),
                len as u16,
                proto,
            )
        } else {
            checksum::v6_pseudo(
                &p[8..24].try_into().unwrap(),
                &p[24..40].try_into().unwrap(),
                len as u32,
                proto,
            )
        };
        p[l4 + at..l4 + at + 2].copy_from_slice(&pseudo.to_be_bytes());
        (p, l4 as u16, at as u16)
    }

    /// What the kernel does with a GSO packet we write: segment it (our own
    /// segmenter, checked against the oracle in gso.rs) and finish checksums.
    fn kernel_view(h: &VnetHdr, p: &[u8]) -> Vec<Vec<u8>> {
        if h.gso() == Gso::None {
            let mut p = p.to_vec();
            if h.needs_csum() {
                assert!(vnet::complete_checksum(&mut p, h.csum_start, h.csum_offset));
            }
            return vec![p];
        }
        let plan = gso::plan(p, h).unwrap();
        assert_eq!(usize::from(h.csum_start), plan.l4_off);
        let mut buf = vec![0u8; plan.hdrs + plan.mss];
        (0..plan.count)
            .map(|i| {
                let n = gso::segment(p, &plan, i, &mut buf);
                buf[..n].to_vec()
            })
            .collect()
    }

    fn gso_hdr(gso_type: u8, gso_size: u16, csum_start: u16, csum_offset: u16) -> VnetHdr {
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type,
            hdr_len: csum_start + if csum_offset == 16 { 20 } else { 8 },
            gso_size,
            csum_start,
            csum_offset,
        }
    }

    #[test]
    fn tso_v6_to_v4_translated_once() {
        let (pkt, l4, at) = partial(Ip6::new(CLIENT6, SERVER6).tcp(40000, 5001, 10 * 1428));
        let (outs, p) = run(config(), gso_hdr(GSO_TCPV6, 1428, l4, at), &pkt);
        assert_eq!(outs.len(), 1, "one super-packet out");
        let (h, out) = &outs[0];
        assert_eq!(h.gso_type, GSO_TCPV4);
        assert_eq!((h.csum_start, h.csum_offset, h.gso_size), (20, 16, 1428));
        assert_eq!(out.len(), pkt.len() - 20);
        let segs = kernel_view(h, out);
        assert_eq!(segs.len(), 10);
        for s in &segs {
            let v = sixgate_testkit::check(s).unwrap();
            assert_eq!(v.family, Family::V4);
            assert!(v.l4_verified);
            assert_eq!(v.src, std::net::IpAddr::V4(CLIENT4));
            assert!(s.len() <= 1500 - 20);
        }
        assert_eq!((p.io.gso_in, p.io.gso_whole, p.io.gso_split), (1, 1, 0));
        assert_eq!(p.counters().translated_6to4, 1);
    }

    #[test]
    fn tso_v4_to_v6_translated_once_segments_keep_their_wire_size() {
        let (pkt, l4, at) = partial(Ip4::new(SERVER4, CLIENT4).tcp(5001, 40000, 7 * 1448 + 100));
        let (outs, p) = run(config(), gso_hdr(GSO_TCPV4, 1448, l4, at), &pkt);
        assert_eq!(outs.len(), 1);
        let (h, out) = &outs[0];
        assert_eq!(h.gso_type, GSO_TCPV6);
        assert_eq!((h.csum_start, h.gso_size), (40, 1428));
        let segs = kernel_view(h, out);
        assert_eq!(segs.len(), 8, "10236 payload bytes in 1428-byte segments");
        for s in &segs {
            let v = sixgate_testkit::check(s).unwrap();
            assert_eq!(v.family, Family::V6);
            assert!(v.l4_verified);
            assert!(s.len() <= 1500, "segment of {} bytes", s.len());
        }
        assert_eq!(p.counters().translated_4to6, 1);
        assert_eq!(p.io.tx_packets, 1);
    }

    #[test]
    fn uso_both_ways_keeps_datagram_boundaries() {
        let (pkt, l4, at) = partial(Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 3 * 1300 + 1250));
        let (outs, _) = run(config(), gso_hdr(GSO_UDP_L4, 1300, l4, at), &pkt);
        let (h, out) = &outs[0];
        assert_eq!(
            (h.gso_type, h.gso_size, h.csum_start),
            (GSO_UDP_L4, 1300, 20)
        );
        let segs = kernel_view(h, out);
        assert_eq!(segs.len(), 4);
        for s in &segs {
            assert!(sixgate_testkit::check(s).unwrap().l4_verified);
        }
        let (pkt, l4, at) = partial(Ip4::new(SERVER4, CLIENT4).udp(53, 5000, 2 * 1200));
        let (outs, _) = run(config(), gso_hdr(GSO_UDP_L4, 1200, l4, at), &pkt);
        let (h, out) = &outs[0];
        assert_eq!(
            (h.gso_type, h.gso_size, h.csum_start),
            (GSO_UDP_L4, 1200, 40)
        );
        for s in kernel_view(h, out) {
            let v = sixgate_testkit::check(&s).unwrap();
            assert!(v.l4_verified);
            assert_eq!(v.payload_len, 1200);
        }
    }

    /// RFC 7915 §5.1: a translated IPv4 packet up to 1260 bytes has DF=0.
    /// An IPv6 super-packet whose segments (or whose last, shorter one)
    /// would translate that small is cut in software, so that each segment
    /// gets the DF the core gives it, not the super-packet's DF=1.
    #[test]
    fn rfc7915_s5_1_small_segments_of_a_super_packet_get_df_0() {
        for (pkt, gso, size) in [
            (
                Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 3 * 1200),
                GSO_UDP_L4,
                1200,
            ),
            (
                Ip6::new(CLIENT6, SERVER6).tcp(5000, 80, 4 * 1000),
                GSO_TCPV6,
                1000,
            ),
        ] {
            let (pkt, l4, at) = partial(pkt);
            let (outs, p) = run(config(), gso_hdr(gso, size, l4, at), &pkt);
            assert_eq!(p.io.gso_split, 1, "cut in software");
            for (h, out) in &outs {
                assert_eq!(h.gso(), Gso::None);
                let df = out[6] & 0x40 != 0;
                assert_eq!(df, out.len() > 1260, "DF of a {}-byte segment", out.len());
            }
        }
        // Full segments and a short last one: the last cut off, the rest
        // translated once; the stream whole and in order, FIN and PSH on
        // the last segment only.
        let whole = Ip6::new(CLIENT6, SERVER6).tcp_flags(5000, 80, 0x19, 3 * 1440 + 100);
        let (pkt, l4, at) = partial(whole.clone());
        let (outs, p) = run(config(), gso_hdr(GSO_TCPV6, 1440, l4, at), &pkt);
        assert_eq!((p.io.gso_whole, p.io.gso_split), (1, 0));
        assert_eq!(outs.len(), 2, "the head, then the tail");
        let mut segs = kernel_view(&outs[0].0, &outs[0].1);
        assert_eq!(segs.len(), 3);
        assert_eq!(outs[1].0.gso(), Gso::None);
        segs.push(outs[1].1.clone());
        let mut stream = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let v = sixgate_testkit::check(s).unwrap();
            assert!(v.l4_verified, "segment {i}");
            assert_eq!(s[6] & 0x40 != 0, s.len() > 1260, "DF of segment {i}");
            assert_eq!(s[33] & 0x09 != 0, i == 3, "FIN/PSH of segment {i}");
            stream.extend_from_slice(&s[40..]);
        }
        assert_eq!(stream, whole[60..], "the payload, in order");
    }

    /// IPv4 DF=0 super-packet: translating it as one would make the core
    /// fragment 64 KiB; it is segmented in software and each segment translated.
    #[test]
    fn tso_v4_df0_is_segmented_in_software() {
        let (pkt, l4, at) = partial(Ip4::new(SERVER4, CLIENT4).df(false).tcp(5001, 40000, 5000));
        let (outs, p) = run(config(), gso_hdr(GSO_TCPV4, 1000, l4, at), &pkt);
        assert_eq!(outs.len(), 5);
        for (h, s) in &outs {
            assert_eq!(*h, VnetHdr::PLAIN);
            let v = sixgate_testkit::check(s).unwrap();
            assert_eq!(v.family, Family::V6);
            assert!(v.l4_verified);
        }
        assert_eq!((p.io.gso_in, p.io.gso_whole, p.io.gso_split), (1, 0, 1));
        assert_eq!(p.counters().translated_4to6, 5);
    }

    /// A set egress MTU key means the core checks lengths: segment first.
    #[test]
    fn tso_with_ipv4_mtu_set_is_segmented() {
        let mut cfg = config();
        cfg.ipv4_mtu = Some(1500);
        let (pkt, l4, at) = partial(Ip6::new(CLIENT6, SERVER6).tcp(1, 2, 4000));
        let (outs, p) = run(cfg, gso_hdr(GSO_TCPV6, 1428, l4, at), &pkt);
        assert_eq!(outs.len(), 3);
        for (_, s) in &outs {
            assert!(sixgate_testkit::check(s).unwrap().l4_verified);
        }
        assert_eq!(p.io.gso_split, 1);
    }

    #[test]
    fn partial_single_packet_keeps_needs_csum() {
        let (pkt, l4, at) = partial(Ip6::new(CLIENT6, SERVER6).tcp(1, 2, 100));
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: 0,
            hdr_len: 60,
            gso_size: 0,
            csum_start: l4,
            csum_offset: at,
        };
        let (outs, p) = run(config(), h, &pkt);
        let (oh, out) = &outs[0];
        assert_eq!(
            (oh.flags, oh.csum_start, oh.gso_type),
            (F_NEEDS_CSUM, 20, 0)
        );
        let done = kernel_view(oh, out);
        assert!(sixgate_testkit::check(&done[0]).unwrap().l4_verified);
        assert_eq!(p.io.csum_sw, 0);
    }

    /// IPv4 DF=0 above the fragmentation limit: finished in software, fragmented
    /// by the core, fragments sent plain.
    #[test]
    fn partial_df0_big_packet_is_finished_then_fragmented() {
        let (pkt, l4, at) = partial(Ip4::new(SERVER4, CLIENT4).df(false).udp(53, 5000, 1400));
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            csum_start: l4,
            csum_offset: at,
            ..VnetHdr::PLAIN
        };
        let (outs, p) = run(config(), h, &pkt);
        assert_eq!(outs.len(), 2);
        assert!(outs.iter().all(|(h, _)| *h == VnetHdr::PLAIN));
        assert_eq!(p.io.csum_sw, 1);
        assert_eq!(p.counters().fragments_out, 2);
    }

    /// ICMP with NEEDS_CSUM (raw sockets can ask for it): finished in software.
    #[test]
    fn partial_icmp_is_finished_in_software() {
        let mut pkt = Ip6::new(CLIENT6, SERVER6).echo_request(1, 1, 56);
        // The ICMPv6 checksum replaced by its pseudo-header sum.
        let pseudo = checksum::v6_pseudo(&CLIENT6.octets(), &SERVER6.octets(), 64, 58);
        pkt[42..44].copy_from_slice(&pseudo.to_be_bytes());
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            csum_start: 40,
            csum_offset: 2,
            ..VnetHdr::PLAIN
        };
        let (outs, p) = run(config(), h, &pkt);
        assert_eq!(outs.len(), 1);
        assert_eq!(outs[0].0.flags, 0);
        assert!(sixgate_testkit::check(&outs[0].1).unwrap().l4_verified);
        assert_eq!(p.io.csum_sw, 1);
    }

    /// RFC 7915 §4.5 and §5.5 with `udp_zero_checksum = "drop"`: a UDP
    /// packet whose checksum is 0 gets the core's answer whatever its
    /// virtio-net header says (none, `DATA_VALID`), both ways: dropped and
    /// counted, answered "administratively prohibited" (§4.4, §5.4), never
    /// sent on with a computed checksum. (The kernel never hands one over with
    /// `NEEDS_CSUM`, and never merges one into a GSO packet: Linux's UDP GRO
    /// "requires non zero csum".)
    #[test]
    fn rfc7915_s4_5_s5_5_zero_udp_checksum_dropped_with_offload_as_in_the_core() {
        use sixgate_core::DropReason;
        use sixgate_core::config::UdpZeroChecksum;
        let mut cfg = config();
        cfg.udp_zero_checksum = UdpZeroChecksum::Drop;
        let v4 = Ip4::new(SERVER4, CLIENT4).udp_zero_checksum(53, 5000, 10);
        let mut v6 = Ip6::new(CLIENT6, SERVER6).udp(5000, 53, 10);
        v6[46..48].fill(0);
        for pkt in [v4, v6] {
            for flags in [0, F_DATA_VALID] {
                let h = VnetHdr {
                    flags,
                    ..VnetHdr::PLAIN
                };
                let (outs, p) = run(cfg.clone(), h, &pkt);
                assert_eq!(p.counters().drops(DropReason::UdpZeroChecksum), 1);
                assert_eq!(outs.len(), 1, "the ICMP error only");
                let s = sixgate_testkit::check(&outs[0].1).unwrap();
                assert_eq!(
                    s.family,
                    if pkt[0] >> 4 == 4 {
                        Family::V4
                    } else {
                        Family::V6
                    }
                );
                assert!(s.icmp().is_some(), "an error back to the sender");
            }
        }
    }

    /// RFC 7915 §5.1 and §4.1, one hop through the TUN device: a packet that
    /// left its sender with hop limit 2 reaches the device with 1 (the
    /// kernel's forwarding took one); it is translated, not answered Time
    /// Exceeded, and written with TTL 2, which the kernel's forwarding out
    /// makes the 1 the core gives it. An error the translator makes itself
    /// is written one above the core's too. Off, the core's packets as they
    /// are.
    #[test]
    fn rfc7915_s5_1_s4_1_the_kernels_two_hops_given_back() {
        let from_kernel6 = Ip6::new(CLIENT6, SERVER6).hop_limit(1).udp(5000, 53, 10);
        let (outs, _) = run(config(), VnetHdr::PLAIN, &from_kernel6);
        assert_eq!(outs.len(), 1);
        assert_eq!(outs[0].1[0] >> 4, 4, "translated, not answered");
        assert_eq!(
            outs[0].1[8], 2,
            "TTL written: the core's 1 and the kernel's"
        );
        assert!(sixgate_testkit::check(&outs[0].1).unwrap().l4_verified);
        let from_kernel4 = Ip4::new(SERVER4, CLIENT4).ttl(1).udp(53, 5000, 10);
        let (outs, _) = run(config(), VnetHdr::PLAIN, &from_kernel4);
        assert_eq!((outs[0].1[0] >> 4, outs[0].1[7]), (6, 2));
        // An ICMP error of the translator's own (protocol 253: prohibited).
        let (outs, _) = run(
            config(),
            VnetHdr::PLAIN,
            &Ip4::new(SERVER4, CLIENT4).raw(253, &[0; 8]),
        );
        assert_eq!(
            (outs[0].1[9], outs[0].1[8]),
            (1, 65),
            "ICMPv4, the core's 64 + 1"
        );
        assert!(sixgate_testkit::check(&outs[0].1).is_ok());
        let mut p = Pipeline::new(Arc::new(config()), true);
        p.set_give_back_hops(false);
        let (_, rx) = p.rx_buffers();
        rx[..from_kernel6.len()].copy_from_slice(&from_kernel6);
        let mut outs = Vec::new();
        p.process(vnet::LEN + from_kernel6.len(), 0, &mut |_, o: &[u8]| {
            outs.push(o.to_vec());
            true
        });
        assert_eq!(
            outs[0][0] >> 4,
            6,
            "hop limit 1 into the core: Time Exceeded"
        );
    }

    #[test]
    fn data_valid_is_carried_over_and_plain_mode_has_no_header() {
        let pkt = Ip4::new(SERVER4, CLIENT4).udp(53, 5000, 10);
        let h = VnetHdr {
            flags: F_DATA_VALID,
            ..VnetHdr::PLAIN
        };
        let (outs, _) = run(config(), h, &pkt);
        assert_eq!(outs[0].0.flags, F_DATA_VALID);

        let mut p = Pipeline::new(Arc::new(config()), false);
        let (_, data) = p.rx_buffers();
        data[..pkt.len()].copy_from_slice(&pkt);
        let mut n = 0;
        p.process(pkt.len(), 0, &mut |_: &VnetHdr, d: &[u8]| {
            n += 1;
            sixgate_testkit::check(d).unwrap();
            true
        });
        assert_eq!(n, 1);
        assert_eq!(p.io.rx_bytes, pkt.len() as u64);
    }

    #[test]
    fn bad_headers_are_counted_not_sent() {
        let pkt = Ip4::new(SERVER4, CLIENT4).udp(53, 5000, 10);
        // Checksum field past the end.
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            csum_start: 32,
            csum_offset: 6,
            ..VnetHdr::PLAIN
        };
        let (outs, p) = run(config(), h, &pkt);
        assert!(outs.is_empty());
        assert_eq!(p.io.offload_dropped, 1);
        // UFO is never enabled; refuse it.
        let h = VnetHdr {
            gso_type: vnet::GSO_UDP,
            gso_size: 8,
            ..VnetHdr::PLAIN
        };
        let (outs, p) = run(config(), h, &pkt);
        assert!(outs.is_empty());
        assert_eq!(p.io.offload_dropped, 1);
        // A read shorter than the header.
        let mut p = Pipeline::new(Arc::new(config()), true);
        p.process(4, 0, &mut |_: &VnetHdr, _: &[u8]| true);
        assert_eq!(p.io.rx_truncated, 1);
    }

    /// Stateful NAT64 (RFC 6146 §3.5.1): a UDP flow from an IPv6 host gets a
    /// session; `tick` keeps the timers running, the session expires after
    /// `udp_timeout` even with no traffic, and the events of both ends are drained.
    #[test]
    fn rfc6146_3_5_1_tick_expires_idle_sessions_and_events_drain() {
        let text = "[translator]\nmode = \"nat64\"\npool6 = \"2001:db8:64::/96\"\n\
                    [nat64]\npool4 = [\"192.0.2.1\"]\nudp_timeout = 1\nevent_log = \"sessions\"\n";
        let cfg = sixgate_config::parse(text, "test.toml").unwrap().config;
        let mut p = Pipeline::for_worker(Arc::new(cfg), false, 0, 1);
        assert!(p.stateful());
        let pkt = Ip6::new(CLIENT6, SERVER6).udp(40000, 53, 8);
        p.rx_buffers().1[..pkt.len()].copy_from_slice(&pkt);
        let mut out = Vec::new();
        p.process(pkt.len(), 0, &mut |_: &VnetHdr, d: &[u8]| {
            out.push(d.to_vec());
            true
        });
        assert_eq!(out.len(), 1, "translated");
        let s = sixgate_testkit::check(&out[0]).unwrap();
        assert_eq!(s.family, Family::V4);
        assert_eq!(s.src, std::net::IpAddr::from(Ipv4Addr::new(192, 0, 2, 1)));
        assert_eq!(p.nat64_stats().unwrap().sessions.udp, 1);

        let mut none = |_: &VnetHdr, _: &[u8]| -> bool { panic!("nothing to send") };
        p.tick(500_000_000, &mut none);
        assert_eq!(p.nat64_stats().unwrap().sessions.udp, 1, "not yet");
        p.tick(2_000_000_000, &mut none);
        assert_eq!(p.nat64_stats().unwrap().sessions.udp, 0, "expired");
        let mut kinds = Vec::new();
        p.drain_events(|e| kinds.push(e.kind.as_str()));
        assert_eq!(kinds, ["session_created", "session_expired"]);
    }

    #[test]
    fn siit_has_no_nat64_state() {
        let p = Pipeline::new(Arc::new(config()), false);
        assert!(!p.stateful());
        assert!(p.nat64_stats().is_none());
    }

    #[test]
    fn failed_writes_are_counted() {
        let pkt = Ip4::new(SERVER4, CLIENT4).udp(53, 5000, 10);
        let mut p = Pipeline::new(Arc::new(config()), false);
        p.rx_buffers().1[..pkt.len()].copy_from_slice(&pkt);
        p.process(pkt.len(), 0, &mut |_: &VnetHdr, _: &[u8]| false);
        assert_eq!((p.io.tx_packets, p.io.tx_errors), (0, 1));
    }
}
