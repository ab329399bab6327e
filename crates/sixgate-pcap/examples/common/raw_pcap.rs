//! What the sample makers share: a LINKTYPE_RAW pcap file with its clock
//! starting at a fixed time.

use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

/// 2024-01-01T00:00:00Z.
const START_SECS: u64 = 1_704_067_200;

/// `packets` (time from the start, bytes) as a LINKTYPE_RAW pcap file.
pub fn pcap_of(packets: impl IntoIterator<Item = (Duration, Vec<u8>)>) -> Vec<u8> {
    let header = PcapHeader {
        version_major: 2,
        version_minor: 4,
        ts_correction: 0,
        ts_accuracy: 0,
        snaplen: 65535,
        datalink: DataLink::RAW,
        ts_resolution: TsResolution::MicroSecond,
        endianness: Endianness::Little,
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).expect("pcap header");
    for (t, p) in packets {
        let ts = Duration::from_secs(START_SECS) + t;
        w.write_packet(&PcapPacket::new(ts, p.len() as u32, &p))
            .expect("pcap record");
    }
    w.into_writer()
}
