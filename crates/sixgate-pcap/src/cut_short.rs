//! A capture that stops before its end. A killed tcpdump leaves its last
//! record half written; every record before it is whole and worth translating,
//! so the run keeps them and says where the capture ends (as tshark's "appears
//! to have been cut short in the middle of a packet"). A record header that
//! claims more bytes than any capture holds means the file is damaged from
//! there on: the run stops at that record and says so in its own words.

use std::fmt;

use serde::Serialize;

use crate::classic::MAX_CAPLEN;

/// Where and why the input stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CutShort {
    /// 1-based number of the record that is not whole (pcapng: of the packet
    /// block); the records before it were translated.
    pub record: u64,
    /// Byte offset of that record's header in the input (classic pcap only:
    /// pcapng's reader reads ahead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Bytes of input read when it stopped: where the capture ends.
    pub input_bytes: u64,
    /// The captured length the record header claims, when it is more than
    /// [`MAX_CAPLEN`] (a damaged header rather than a short file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bad_caplen: Option<u32>,
}

impl fmt::Display for CutShort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = match self.offset {
            Some(o) => format!(" (at byte offset {o})"),
            None => String::new(),
        };
        let kept = self.record - 1;
        let s = if kept == 1 { "" } else { "s" };
        match self.bad_caplen {
            Some(caplen) => write!(
                f,
                "record {}{at} claims a captured length of {caplen} bytes, more than any \
                 capture holds (at most {MAX_CAPLEN}): the capture is damaged from there; \
                 translated the {kept} record{s} before it",
                self.record
            ),
            None => write!(
                f,
                "the capture was cut short in the middle of record {}{at}; it ends at byte \
                 {}; translated the {kept} complete record{s} before it",
                self.record, self.input_bytes
            ),
        }
    }
}
