//! Capture input: classic pcap or pcapng, told apart by the magic number.

use std::cell::Cell;
use std::io::{Cursor, Read};
use std::rc::Rc;

use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::{DataLink, PcapError, TsResolution};

use crate::classic::Classic;
use crate::{CutShort, OfflineError};

/// One captured frame.
pub(crate) struct Frame<'a> {
    /// Capture time in nanoseconds since the epoch.
    pub ts_ns: u64,
    /// Link type of the interface it was captured on.
    pub link: DataLink,
    /// Bytes captured.
    pub data: &'a [u8],
    /// Length on the wire (more than `data.len()` if the capture truncated it).
    pub orig_len: u32,
}

/// What pcapng says about one interface.
pub(crate) struct Interface {
    link: DataLink,
    /// if_tsresol: bit 7 clear: 10^-n s per unit; set: 2^-n s per unit. Default 6 (µs).
    tsresol: u8,
    /// if_tsoffset, seconds.
    tsoffset: u64,
}

type Prefixed<R> = std::io::Chain<Cursor<[u8; 4]>, R>;

/// A reader that counts the bytes it hands out (pcapng's reader buffers ahead,
/// so this is where the input ends, not where a block starts).
pub(crate) struct Counted<R> {
    inner: R,
    bytes: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.set(self.bytes.get() + n as u64);
        Ok(n)
    }
}

/// A pcapng input: its reader, interfaces, bytes read and packets seen.
pub(crate) struct PcapNg<R: Read> {
    reader: PcapNgReader<Counted<Prefixed<R>>>,
    ifaces: Vec<Interface>,
    bytes: Rc<Cell<u64>>,
    packets: u64,
    cut: Option<CutShort>,
}

pub(crate) enum Source<R: Read> {
    Pcap(Classic<Prefixed<R>>),
    PcapNg(PcapNg<R>),
}

const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
/// Classic pcap, µs and ns resolution, both byte orders.
const PCAP_MAGICS: [[u8; 4]; 4] = [
    [0xa1, 0xb2, 0xc3, 0xd4],
    [0xd4, 0xc3, 0xb2, 0xa1],
    [0xa1, 0xb2, 0x3c, 0x4d],
    [0x4d, 0x3c, 0xb2, 0xa1],
];

impl<R: Read> Source<R> {
    /// Open `input`, reading its magic number to choose the format.
    pub(crate) fn open(mut input: R) -> Result<Self, OfflineError> {
        let mut magic = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match input.read(&mut magic[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(OfflineError::ReadInput(e.to_string())),
            }
        }
        if got < 4 {
            return Err(OfflineError::NotACapture(format!(
                "input is {got} bytes long, too short for a pcap or pcapng header"
            )));
        }
        let stream = Cursor::new(magic).chain(input);
        if magic == PCAPNG_MAGIC {
            let bytes = Rc::new(Cell::new(0));
            let counted = Counted {
                inner: stream,
                bytes: Rc::clone(&bytes),
            };
            let reader = PcapNgReader::new(counted).map_err(|e| OfflineError::from_read(&e))?;
            Ok(Source::PcapNg(PcapNg {
                reader,
                ifaces: Vec::new(),
                bytes,
                packets: 0,
                cut: None,
            }))
        } else if PCAP_MAGICS.contains(&magic) {
            Ok(Source::Pcap(Classic::open(stream)?))
        } else {
            Err(OfflineError::NotACapture(format!(
                "magic number {:02x}{:02x}{:02x}{:02x} is neither pcap nor pcapng",
                magic[0], magic[1], magic[2], magic[3]
            )))
        }
    }

    /// The link type every frame has, for classic pcap; `None` for pcapng (per interface).
    pub(crate) fn file_link(&self) -> Option<DataLink> {
        match self {
            Source::Pcap(c) => Some(c.link()),
            Source::PcapNg(..) => None,
        }
    }

    /// Timestamps of the output: as fine as the input's.
    pub(crate) fn ts_resolution(&self) -> TsResolution {
        match self {
            Source::Pcap(c) => c.resolution(),
            Source::PcapNg(..) => TsResolution::NanoSecond,
        }
    }

    /// Where the input stopped early, once [`Source::next_frame`] said `None`.
    pub(crate) fn cut_short(&self) -> Option<CutShort> {
        match self {
            Source::Pcap(c) => c.cut,
            Source::PcapNg(ng) => ng.cut,
        }
    }

    /// Hand the next frame to `f`; `Ok(None)` at the end of the input, or
    /// where it stops early (then [`Source::ended`] says where).
    pub(crate) fn next_frame<T>(
        &mut self,
        f: impl FnOnce(Frame<'_>) -> Result<T, OfflineError>,
    ) -> Result<Option<T>, OfflineError> {
        match self {
            Source::Pcap(c) => {
                let link = c.link();
                match c.next() {
                    Ok(Some(r)) => f(Frame {
                        ts_ns: r.ts_ns,
                        link,
                        data: r.data,
                        orig_len: r.orig_len,
                    })
                    .map(Some),
                    Ok(None) => Ok(None),
                    Err(Ok(cut)) => {
                        c.cut = Some(cut);
                        Ok(None)
                    }
                    Err(Err(e)) => Err(e),
                }
            }
            Source::PcapNg(ng) => loop {
                let PcapNg {
                    reader: r,
                    ifaces,
                    bytes,
                    packets,
                    cut,
                } = ng;
                let Some(block) = r.next_block() else {
                    return Ok(None);
                };
                let block = match block {
                    Ok(b) => b,
                    // The last block stops in the middle (a killed capture).
                    Err(PcapError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                        *cut = Some(CutShort {
                            record: *packets + 1,
                            offset: None,
                            input_bytes: bytes.get(),
                            bad_caplen: None,
                        });
                        return Ok(None);
                    }
                    Err(e) => return Err(OfflineError::from_read(&e)),
                };
                match block {
                    Block::SectionHeader(_) => ifaces.clear(),
                    Block::InterfaceDescription(idb) => {
                        let mut iface = Interface {
                            link: idb.linktype,
                            tsresol: 6,
                            tsoffset: 0,
                        };
                        for o in &idb.options {
                            match o {
                                InterfaceDescriptionOption::IfTsResol(n) => iface.tsresol = *n,
                                InterfaceDescriptionOption::IfTsOffset(s) => iface.tsoffset = *s,
                                _ => {}
                            }
                        }
                        ifaces.push(iface);
                    }
                    Block::EnhancedPacket(epb) => {
                        let iface = ifaces.get(epb.interface_id as usize).ok_or_else(|| {
                            OfflineError::ReadInput(format!(
                                "packet refers to interface {} which the capture never described",
                                epb.interface_id
                            ))
                        })?;
                        // pcap-file hands over the raw 64-bit timestamp as if it were ns.
                        let units = epb.timestamp.as_nanos();
                        let frame = Frame {
                            ts_ns: to_ns(units, iface.tsresol, iface.tsoffset),
                            link: iface.link,
                            data: &epb.data,
                            orig_len: epb.original_len,
                        };
                        *packets += 1;
                        return f(frame).map(Some);
                    }
                    Block::SimplePacket(spb) => {
                        let iface = ifaces.first().ok_or_else(|| {
                            OfflineError::ReadInput(
                                "simple packet block before any interface description".into(),
                            )
                        })?;
                        let frame = Frame {
                            ts_ns: 0,
                            link: iface.link,
                            data: &spb.data,
                            orig_len: spb.original_len,
                        };
                        *packets += 1;
                        return f(frame).map(Some);
                    }
                    _ => {}
                }
            },
        }
    }
}

/// A pcapng timestamp in interface units to nanoseconds.
fn to_ns(units: u128, tsresol: u8, tsoffset: u64) -> u64 {
    let exp = u32::from(tsresol & 0x7f);
    let ns = if tsresol & 0x80 == 0 {
        if exp <= 9 {
            units * 10u128.pow(9 - exp)
        } else {
            units / 10u128.pow((exp - 9).min(38))
        }
    } else {
        (units * 1_000_000_000) >> exp.min(127)
    };
    let ns = ns + u128::from(tsoffset) * 1_000_000_000;
    u64::try_from(ns).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::to_ns;

    #[test]
    fn pcapng_resolutions() {
        assert_eq!(to_ns(1_500_000, 6, 0), 1_500_000_000);
        assert_eq!(to_ns(7, 9, 0), 7);
        assert_eq!(to_ns(7_000, 12, 0), 7);
        assert_eq!(to_ns(3, 0, 2), 5_000_000_000);
        assert_eq!(to_ns(1 << 10, 0x80 | 10, 0), 1_000_000_000);
    }
}
