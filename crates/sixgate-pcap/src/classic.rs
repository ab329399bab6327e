//! Classic pcap records, read with their byte offsets, so that a capture that
//! stops in the middle of a record (a killed tcpdump) keeps every complete one
//! and says where it ends, and a record header that is garbage (a length no
//! capture has) is told apart from a short file.
//!
//! Format (pcap(5), draft-ietf-opsawg-pcap): a 24-byte file header (magic,
//! version, zone, sigfigs, snaplen, link type), then records of a 16-byte header
//! (seconds, micro- or nanoseconds, captured length, length on the wire) and the
//! captured bytes; the magic's byte order is the file's.

use std::io::{ErrorKind, Read};

use pcap_file::{DataLink, TsResolution};

use crate::{CutShort, OfflineError};

/// Bytes of the file header and of each record header.
const FILE_HEADER: usize = 24;
const RECORD_HEADER: usize = 16;

/// Largest captured length a record may claim: libpcap's MAXIMUM_SNAPLEN
/// (its readers refuse more too). Beyond it the header is not a record header.
pub const MAX_CAPLEN: u32 = 262_144;

/// One record: capture time and bytes.
pub(crate) struct Record<'a> {
    pub ts_ns: u64,
    pub data: &'a [u8],
    pub orig_len: u32,
}

/// A classic pcap file being read.
pub(crate) struct Classic<R: Read> {
    input: R,
    big_endian: bool,
    resolution: TsResolution,
    link: DataLink,
    /// Bytes consumed so far: the offset of the next record.
    offset: u64,
    /// Records read so far.
    records: u64,
    buf: Vec<u8>,
    /// Where the capture stopped early, once [`Classic::next`] said so.
    pub cut: Option<CutShort>,
}

impl<R: Read> Classic<R> {
    /// Read the file header (its first four bytes, the magic, included).
    pub(crate) fn open(mut input: R) -> Result<Self, OfflineError> {
        let mut h = [0u8; FILE_HEADER];
        let got =
            read_full(&mut input, &mut h).map_err(|e| OfflineError::ReadInput(e.to_string()))?;
        if got < FILE_HEADER {
            return Err(OfflineError::ReadInput(format!(
                "the capture is {got} bytes long, shorter than the {FILE_HEADER}-byte pcap file header"
            )));
        }
        let (big_endian, resolution) = match h[..4] {
            [0xa1, 0xb2, 0xc3, 0xd4] => (true, TsResolution::MicroSecond),
            [0xd4, 0xc3, 0xb2, 0xa1] => (false, TsResolution::MicroSecond),
            [0xa1, 0xb2, 0x3c, 0x4d] => (true, TsResolution::NanoSecond),
            _ => (false, TsResolution::NanoSecond),
        };
        let mut c = Classic {
            input,
            big_endian,
            resolution,
            link: DataLink::RAW,
            offset: FILE_HEADER as u64,
            records: 0,
            buf: Vec::new(),
            cut: None,
        };
        // The low 28 bits are the link type (the rest: FCS length flags).
        c.link = DataLink::from(c.u32_at(&h, 20) & 0x0fff_ffff);
        Ok(c)
    }

    pub(crate) fn link(&self) -> DataLink {
        self.link
    }

    pub(crate) fn resolution(&self) -> TsResolution {
        self.resolution
    }

    /// The next record; `Ok(None)` at a clean end; `Err(Ok(cut))` where the
    /// capture stops early or a record header is garbage.
    pub(crate) fn next(&mut self) -> Result<Option<Record<'_>>, Result<CutShort, OfflineError>> {
        let at = self.offset;
        let record = self.records + 1;
        let cut = |input_bytes: u64, bad_caplen: Option<u32>| CutShort {
            record,
            offset: Some(at),
            input_bytes,
            bad_caplen,
        };
        let mut h = [0u8; RECORD_HEADER];
        let got = read_full(&mut self.input, &mut h).map_err(|e| Err(read_error(&e)))?;
        if got == 0 {
            return Ok(None);
        }
        if got < RECORD_HEADER {
            return Err(Ok(cut(at + got as u64, None)));
        }
        let (sec, frac) = (self.u32_at(&h, 0), self.u32_at(&h, 4));
        let (caplen, orig_len) = (self.u32_at(&h, 8), self.u32_at(&h, 12));
        if caplen > MAX_CAPLEN {
            return Err(Ok(cut(at + RECORD_HEADER as u64, Some(caplen))));
        }
        self.buf.resize(caplen as usize, 0);
        let got = read_full(&mut self.input, &mut self.buf).map_err(|e| Err(read_error(&e)))?;
        if got < caplen as usize {
            return Err(Ok(cut(at + (RECORD_HEADER + got) as u64, None)));
        }
        self.offset = at + (RECORD_HEADER as u64) + u64::from(caplen);
        self.records = record;
        let frac_ns = match self.resolution {
            TsResolution::MicroSecond => u64::from(frac) * 1_000,
            TsResolution::NanoSecond => u64::from(frac),
        };
        Ok(Some(Record {
            ts_ns: u64::from(sec) * 1_000_000_000 + frac_ns,
            data: &self.buf,
            orig_len,
        }))
    }

    fn u32_at(&self, b: &[u8], at: usize) -> u32 {
        let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if self.big_endian {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    }
}

fn read_error(e: &std::io::Error) -> OfflineError {
    OfflineError::ReadInput(e.to_string())
}

/// Read until `buf` is full or the input ends; the number of bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
