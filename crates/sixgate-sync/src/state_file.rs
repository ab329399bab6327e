//! The NAT64 state file (docs/restart.md): what `sixgate run` writes when it
//! stops and reads back when it starts, so that a restart of one node keeps
//! its subscribers' sessions. Pure: bytes in, bytes out; the caller reads and
//! writes the file (atomically) and gives the clock.
//!
//! ```text
//!  offset size field (integers big-endian)
//!  0      8    magic "SGNAT64S"
//!  8      1    version: 1
//!  9      1    flags, 0
//!  10     2    record length: 56
//!  12     4    reserved, 0
//!  16     8    config hash (`sixgate_config::sync::state_config_hash`)
//!  24     8    written at: milliseconds since the Unix epoch
//!  32     8    record count n
//!  40     56n  records: the sync protocol's SESSION_UPSERT record
//!              (docs/ha.md, "Record"), lifetime = remaining ms when written;
//!              then BIB_COOLING records (op 5: a BIB entry without
//!              sessions in its port-reuse wait, remote fields zero,
//!              lifetime = the rest of the wait)
//!  40+56n 32   SHA-256 of bytes 0 .. 40+56n
//! ```
//!
//! [`decode`] checks all of it before it returns anything: a file it accepts
//! has exactly one encoding, every record valid; a file it refuses says why
//! ([`Refused`]). It never allocates more than the bytes it was given hold.

use sha2::{Digest, Sha256};
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::nat64::{Replica, ReplicaOp};
use std::net::Ipv6Addr;

use crate::record::{Op, RECORD_LEN, Record};
use crate::tables;

/// The first 8 bytes of every state file.
pub const MAGIC: [u8; 8] = *b"SGNAT64S";
/// The version this code writes and reads.
pub const VERSION: u8 = 1;
/// Bytes before the records.
pub const HEADER_LEN: usize = 40;
/// The checksum after them.
pub const TRAILER_LEN: usize = 32;
/// A file more than this far ahead of the clock is refused (the clock was
/// set back, or the file is not ours); less counts as written now.
pub const FUTURE_SLACK_MS: u64 = 60_000;

/// The bytes of a state file holding `sessions` and the BIB entries
/// `cooling` (RFC 6888 REQ-8; their remote fields are not read), written at
/// `written_unix_ms` under a configuration whose hash is `config_hash`.
/// `pool6` gives each remote's IPv6 form (as a sync record has it; zero
/// without one).
pub fn encode(
    config_hash: u64,
    written_unix_ms: u64,
    sessions: &[Replica],
    cooling: &[Replica],
    pool6: Option<&Rfc6052Prefix>,
) -> Vec<u8> {
    let n = sessions.len() + cooling.len();
    let mut out = Vec::with_capacity(HEADER_LEN + n * RECORD_LEN + TRAILER_LEN);
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(0);
    out.extend_from_slice(&(RECORD_LEN as u16).to_be_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&config_hash.to_be_bytes());
    out.extend_from_slice(&written_unix_ms.to_be_bytes());
    out.extend_from_slice(&(n as u64).to_be_bytes());
    let mut b = [0u8; RECORD_LEN];
    for r in sessions {
        let mut rec = match pool6 {
            Some(p) => tables::to_record(ReplicaOp::Upsert, r, p),
            None => {
                let p = sixgate_core::addr::rfc6052::WELL_KNOWN_PREFIX;
                let mut rec = tables::to_record(ReplicaOp::Upsert, r, &p);
                rec.v6_remote = Ipv6Addr::UNSPECIFIED;
                rec
            }
        };
        rec.op = Op::SessionUpsert;
        rec.encode(&mut b);
        out.extend_from_slice(&b);
    }
    for r in cooling {
        let p = sixgate_core::addr::rfc6052::WELL_KNOWN_PREFIX;
        let mut rec = tables::to_record(ReplicaOp::Upsert, r, &p);
        rec.op = Op::BibCooling;
        rec.tcp_state = None;
        rec.v6_remote = Ipv6Addr::UNSPECIFIED;
        rec.v4_remote = std::net::Ipv4Addr::UNSPECIFIED;
        rec.remote_port = 0;
        rec.encode(&mut b);
        out.extend_from_slice(&b);
    }
    let sum = Sha256::digest(&out);
    out.extend_from_slice(&sum);
    out
}

/// Rewrites the checksum (the last [`TRAILER_LEN`] bytes) of `file` over
/// what precedes it: for tests and the fuzzer, which would otherwise never
/// get past it. Shorter than a trailer: unchanged.
pub fn reseal(file: &mut [u8]) {
    if let Some(body) = file.len().checked_sub(TRAILER_LEN) {
        let sum = Sha256::digest(&file[..body]);
        file[body..].copy_from_slice(&sum);
    }
}

/// The largest file that can hold `max_records` records: read no more.
pub fn max_len(max_records: u64) -> u64 {
    max_records
        .saturating_mul(RECORD_LEN as u64)
        .saturating_add((HEADER_LEN + TRAILER_LEN) as u64)
}

/// What the running daemon expects of a state file.
#[derive(Clone, Copy, Debug)]
pub struct Expect {
    /// Its own config hash.
    pub config_hash: u64,
    /// Now, milliseconds since the Unix epoch.
    pub now_unix_ms: u64,
    /// The oldest file it takes (the shortest session timeout), ms.
    pub max_age_ms: u64,
    /// The most sessions its tables hold: a file claiming more is refused.
    pub max_records: u64,
}

/// A state file's sessions, their lifetimes less the time since it was
/// written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restored {
    /// When it was written, ms since the Unix epoch.
    pub written_unix_ms: u64,
    /// How long ago, ms.
    pub age_ms: u64,
    /// The sessions still alive now, remaining lifetimes as of now.
    pub sessions: Vec<Replica>,
    /// Sessions (and cooling BIB entries) whose time ran out meanwhile
    /// (left out).
    pub expired: u64,
    /// Dynamic BIB entries still in their port-reuse wait (RFC 6888
    /// REQ-8), remaining waits as of now, shortest first; remote fields
    /// zero. Those whose wait ran out meanwhile are left out.
    pub cooling: Vec<Replica>,
}

/// Why a state file is not read back. Its `Display` is the reason, for a
/// log line that names the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Shorter than its header and checksum, or than its record count says.
    Truncated {
        /// Its length.
        len: u64,
        /// The length it would need.
        need: u64,
    },
    /// Not a sixgate NAT64 state file (another program's, or garbage).
    NotAStateFile,
    /// Another version of the format.
    Version(u8),
    /// A header field out of its range.
    BadHeader(&'static str),
    /// A record count above what the tables hold (a hostile or foreign file).
    TooMany {
        /// The count in the file.
        count: u64,
        /// The most the running tables hold.
        max: u64,
    },
    /// Bytes after the checksum.
    TrailingBytes {
        /// Its length.
        len: u64,
        /// What the record count says it should be.
        expected: u64,
    },
    /// The checksum does not match: the file is damaged.
    Checksum,
    /// Written under another configuration.
    ConfigChanged {
        /// The file's config hash.
        file: u64,
        /// The running one's.
        running: u64,
    },
    /// Written after now (the clock went back).
    FromTheFuture {
        /// How far ahead, ms.
        ahead_ms: u64,
    },
    /// Older than the shortest session timeout.
    TooOld {
        /// Its age, ms.
        age_ms: u64,
        /// The most accepted, ms.
        max_ms: u64,
    },
    /// A record out of range.
    BadRecord {
        /// Its position, from 0.
        index: u64,
        /// What is wrong.
        why: &'static str,
    },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Refused::Truncated { len, need } => {
                write!(f, "truncated: {len} bytes, its header says {need}")
            }
            Refused::NotAStateFile => f.write_str(
                "not a sixgate NAT64 state file (no \"SGNAT64S\" magic): another program's?",
            ),
            Refused::Version(v) => write!(
                f,
                "format version {v}, this sixgate reads version {VERSION}"
            ),
            Refused::BadHeader(why) => write!(f, "bad header: {why}"),
            Refused::TooMany { count, max } => write!(
                f,
                "claims {count} records, more than the tables hold ({max})"
            ),
            Refused::TrailingBytes { len, expected } => write!(
                f,
                "{len} bytes where its header says {expected}: bytes after the checksum"
            ),
            Refused::Checksum => f.write_str("checksum mismatch: the file is damaged"),
            Refused::ConfigChanged { file, running } => write!(
                f,
                "written under another configuration (config hash {file:016x}, the running \
                 one's is {running:016x}: [nat64] pool4, pool6, timeouts, port blocks, \
                 workers or [sync] changed)"
            ),
            Refused::FromTheFuture { ahead_ms } => write!(
                f,
                "written {} s in the future: the clock went back?",
                ahead_ms / 1000
            ),
            Refused::TooOld { age_ms, max_ms } => write!(
                f,
                "written {} s ago, longer than the shortest session timeout ({} s): every \
                 session may have expired",
                age_ms / 1000,
                max_ms / 1000
            ),
            Refused::BadRecord { index, why } => write!(f, "record {index}: {why}"),
        }
    }
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_be_bytes(a)
}

/// Reads a state file's bytes: everything is checked (format, checksum,
/// config hash, age, every record) before anything is returned.
pub fn decode(bytes: &[u8], expect: &Expect) -> Result<Restored, Refused> {
    let len = bytes.len() as u64;
    let min = (HEADER_LEN + TRAILER_LEN) as u64;
    if bytes.len() >= MAGIC.len() && bytes[..MAGIC.len()] != MAGIC {
        return Err(Refused::NotAStateFile);
    }
    if len < min {
        return Err(Refused::Truncated { len, need: min });
    }
    if bytes[8] != VERSION {
        return Err(Refused::Version(bytes[8]));
    }
    if bytes[9] != 0 {
        return Err(Refused::BadHeader("unknown flags"));
    }
    if u16::from_be_bytes([bytes[10], bytes[11]]) as usize != RECORD_LEN {
        return Err(Refused::BadHeader("record length is not 56"));
    }
    if bytes[12..16] != [0; 4] {
        return Err(Refused::BadHeader("reserved bytes are not 0"));
    }
    let config_hash = u64_at(bytes, 16);
    let written_unix_ms = u64_at(bytes, 24);
    let count = u64_at(bytes, 32);
    if count > expect.max_records {
        return Err(Refused::TooMany {
            count,
            max: expect.max_records,
        });
    }
    // count ≤ max_records, so no overflow below for any sane maximum; the
    // checked arithmetic covers the rest.
    let need = count
        .checked_mul(RECORD_LEN as u64)
        .and_then(|r| r.checked_add(min))
        .ok_or(Refused::TooMany {
            count,
            max: expect.max_records,
        })?;
    if len < need {
        return Err(Refused::Truncated { len, need });
    }
    if len > need {
        return Err(Refused::TrailingBytes {
            len,
            expected: need,
        });
    }
    let body = bytes.len() - TRAILER_LEN;
    if Sha256::digest(&bytes[..body]).as_slice() != &bytes[body..] {
        return Err(Refused::Checksum);
    }
    if config_hash != expect.config_hash {
        return Err(Refused::ConfigChanged {
            file: config_hash,
            running: expect.config_hash,
        });
    }
    let age_ms = match expect.now_unix_ms.checked_sub(written_unix_ms) {
        Some(a) => a,
        None => {
            let ahead_ms = written_unix_ms - expect.now_unix_ms;
            if ahead_ms > FUTURE_SLACK_MS {
                return Err(Refused::FromTheFuture { ahead_ms });
            }
            0
        }
    };
    if age_ms > expect.max_age_ms {
        return Err(Refused::TooOld {
            age_ms,
            max_ms: expect.max_age_ms,
        });
    }
    // At most as many as the bytes hold (checked above).
    let mut sessions = Vec::with_capacity(count as usize);
    let mut cooling = Vec::new();
    let mut seen_cooling = false;
    let mut expired = 0;
    for (index, chunk) in bytes[HEADER_LEN..body].chunks_exact(RECORD_LEN).enumerate() {
        let index = index as u64;
        let mut b = [0u8; RECORD_LEN];
        b.copy_from_slice(chunk);
        let rec = Record::decode(&b).ok_or(Refused::BadRecord {
            index,
            why: "a field out of range",
        })?;
        // Record::decode refused a lifetime over MAX_LIFETIME_MS.
        let is_cooling = rec.op == Op::BibCooling;
        if is_cooling {
            if rec.v6_remote != Ipv6Addr::UNSPECIFIED
                || !rec.v4_remote.is_unspecified()
                || rec.remote_port != 0
            {
                return Err(Refused::BadRecord {
                    index,
                    why: "a cooling BIB entry with a remote",
                });
            }
            seen_cooling = true;
        } else if rec.op != Op::SessionUpsert || seen_cooling {
            // Sessions first, then the cooling BIB entries.
            return Err(Refused::BadRecord {
                index,
                why: "not a session upsert",
            });
        }
        let mut r = tables::replica_of(&rec);
        match u64::from(r.remaining_ms).checked_sub(age_ms) {
            Some(left) if left > 0 => {
                r.remaining_ms = left as u32;
                if is_cooling {
                    &mut cooling
                } else {
                    &mut sessions
                }
                .push(r);
            }
            _ => expired += 1,
        }
    }
    cooling.sort_by_key(|r| r.remaining_ms);
    Ok(Restored {
        written_unix_ms,
        age_ms,
        sessions,
        expired,
        cooling,
    })
}
