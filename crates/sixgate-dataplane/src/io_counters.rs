//! The counters a data plane keeps of its own packet I/O (reads, writes,
//! offload handling, XDP's kernel path and handoff), beside the translator's
//! [`sixgate_core::Counters`]; one struct for every data plane, so that the
//! metrics and the summary name them once. Fields a data plane does not have
//! stay 0.

/// Defines [`IoCounters`] from one list of its fields, so that merging,
/// publishing and reading them back cannot miss one.
macro_rules! io_counters {
    ($($(#[doc = $doc:literal])* $name:ident,)*) => {
        /// Counters of the I/O and offload handling (the translator counts the rest).
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct IoCounters {
            $($(#[doc = $doc])* pub $name: u64,)*
        }

        impl IoCounters {
            /// How many counters there are.
            pub const COUNT: usize = [$(stringify!($name)),*].len();

            /// Every counter, in the order of the fields.
            pub fn to_array(&self) -> [u64; Self::COUNT] {
                [$(self.$name),*]
            }

            /// The counters of [`IoCounters::to_array`]'s order.
            pub fn from_array(a: [u64; Self::COUNT]) -> IoCounters {
                let [$($name),*] = a;
                IoCounters { $($name),* }
            }

            /// Add another worker's counters into these.
            pub fn merge(&mut self, o: &IoCounters) {
                $(self.$name += o.$name;)*
            }
        }
    };
}

io_counters! {
    /// Packets read from TUN (a super-packet counts once).
    rx_packets,
    /// Bytes read, without the virtio-net header.
    rx_bytes,
    /// Packets written to TUN (a super-packet counts once).
    tx_packets,
    /// Bytes written, without the virtio-net header.
    tx_bytes,
    /// Failed reads (other than "nothing to read").
    rx_errors,
    /// Failed writes.
    tx_errors,
    /// Reads that filled the whole buffer (dropped), or too short for the header.
    rx_truncated,
    /// GSO super-packets read.
    gso_in,
    /// Super-packets translated as one.
    gso_whole,
    /// Super-packets segmented in software before translation.
    gso_split,
    /// Partial checksums finished in software before translation.
    csum_sw,
    /// Packets dropped by the offload handling itself (bad virtio-net header,
    /// a GSO type or layout sixgate cannot segment).
    offload_dropped,
    /// XDP data plane: translated packets handed to the kernel's stack instead of
    /// sent on an AF_XDP socket (next hop not resolved yet, which this makes the
    /// kernel do, or routed out of another interface). Always 0 on TUN.
    to_kernel,
    /// XDP data plane: packets that could not be handed to the kernel either
    /// (dropped, `no_route`). Always 0 on TUN.
    no_route,
    /// XDP data plane: received packets handed to the worker that owns them
    /// (stateful NAT64 with several workers). Always 0 on TUN.
    handoff,
    /// XDP data plane: packets for another worker dropped because its ring
    /// was full (or the packet longer than a slot). Always 0 on TUN.
    handoff_full,
}
