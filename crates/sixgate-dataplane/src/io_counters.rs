//! The counters a data plane keeps of its own packet I/O (reads, writes,
//! offload handling, XDP's kernel path and handoff), beside the translator's
//! [`sixgate_core::Counters`]; one struct for every data plane, so that the
//! metrics and the summary name them once. Fields a data plane does not have
//! stay 0.

/// Counters of the I/O and offload handling (the translator counts the rest).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Packets read from TUN (a super-packet counts once).
    pub rx_packets: u64,
    /// Bytes read, without the virtio-net header.
    pub rx_bytes: u64,
    /// Packets written to TUN (a super-packet counts once).
    pub tx_packets: u64,
    /// Bytes written, without the virtio-net header.
    pub tx_bytes: u64,
    /// Failed reads (other than "nothing to read").
    pub rx_errors: u64,
    /// Failed writes.
    pub tx_errors: u64,
    /// Reads that filled the whole buffer (dropped), or too short for the header.
    pub rx_truncated: u64,
    /// GSO super-packets read.
    pub gso_in: u64,
    /// Super-packets translated as one.
    pub gso_whole: u64,
    /// Super-packets segmented in software before translation.
    pub gso_split: u64,
    /// Partial checksums finished in software before translation.
    pub csum_sw: u64,
    /// Packets dropped by the offload handling itself (bad virtio-net header,
    /// a GSO type or layout sixgate cannot segment).
    pub offload_dropped: u64,
    /// XDP data plane: translated packets handed to the kernel's stack instead of
    /// sent on an AF_XDP socket (next hop not resolved yet, which this makes the
    /// kernel do, or routed out of another interface). Always 0 on TUN.
    pub to_kernel: u64,
    /// XDP data plane: packets that could not be handed to the kernel either
    /// (dropped, `no_route`). Always 0 on TUN.
    pub no_route: u64,
    /// XDP data plane: received packets handed to the worker that owns them
    /// (stateful NAT64 with several workers). Always 0 on TUN.
    pub handoff: u64,
    /// XDP data plane: packets for another worker dropped because its ring
    /// was full (or the packet longer than a slot). Always 0 on TUN.
    pub handoff_full: u64,
}

impl IoCounters {
    /// Add another worker's counters into these.
    pub fn merge(&mut self, o: &IoCounters) {
        self.rx_packets += o.rx_packets;
        self.rx_bytes += o.rx_bytes;
        self.tx_packets += o.tx_packets;
        self.tx_bytes += o.tx_bytes;
        self.rx_errors += o.rx_errors;
        self.tx_errors += o.tx_errors;
        self.rx_truncated += o.rx_truncated;
        self.gso_in += o.gso_in;
        self.gso_whole += o.gso_whole;
        self.gso_split += o.gso_split;
        self.csum_sw += o.csum_sw;
        self.offload_dropped += o.offload_dropped;
        self.to_kernel += o.to_kernel;
        self.no_route += o.no_route;
        self.handoff += o.handoff;
        self.handoff_full += o.handoff_full;
    }
}
