//! The NAT64 state file (docs/restart.md, `sixgate_sync::state_file`): a
//! round trip, and every way a file is refused, each with its reason and
//! without touching anything (no half table: the decoder returns all or
//! nothing).

use std::net::{Ipv4Addr, Ipv6Addr};

use sixgate_core::addr::WELL_KNOWN_PREFIX;
use sixgate_core::nat64::tcp::TcpState;
use sixgate_core::nat64::{Proto, Replica};
use sixgate_sync::state_file::{
    self, Expect, HEADER_LEN, MAGIC, Refused, TRAILER_LEN, decode, encode,
};

const HASH: u64 = 0x1234_5678_9abc_def0;
const NOW: u64 = 1_800_000_000_000;

fn sessions() -> Vec<Replica> {
    let mut v = Vec::new();
    for i in 0..50u16 {
        let (proto, tcp_state, rport) = match i % 3 {
            0 => (Proto::Tcp, Some(TcpState::Established), 443),
            1 => (Proto::Udp, None, 53),
            _ => (Proto::Icmp, None, 7000 + i),
        };
        v.push(Replica {
            proto,
            tcp_state,
            remaining_ms: 60_000 + u32::from(i) * 1000,
            v6: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i + 1),
            port6: 40_000 + i,
            v4: Ipv4Addr::new(192, 0, 2, 1),
            port4: if proto == Proto::Icmp {
                7000 + i
            } else {
                61_000 + i
            },
            remote4: Ipv4Addr::new(198, 51, 100, (i % 200) as u8 + 1),
            rport,
        });
    }
    v
}

fn expect() -> Expect {
    Expect {
        config_hash: HASH,
        now_unix_ms: NOW,
        max_age_ms: 60_000,
        max_records: 1000,
    }
}

fn file() -> Vec<u8> {
    encode(
        HASH,
        NOW - 2_000,
        &sessions(),
        &[],
        Some(&WELL_KNOWN_PREFIX),
    )
}

#[test]
fn round_trip_keeps_every_session_less_the_downtime() {
    let bytes = file();
    assert_eq!(bytes.len(), HEADER_LEN + 50 * 56 + TRAILER_LEN);
    let r = decode(&bytes, &expect()).expect("accepted");
    assert_eq!(r.age_ms, 2_000);
    assert_eq!(r.written_unix_ms, NOW - 2_000);
    assert_eq!(r.expired, 0);
    let want: Vec<Replica> = sessions()
        .into_iter()
        .map(|mut s| {
            s.remaining_ms -= 2_000;
            s
        })
        .collect();
    assert_eq!(r.sessions, want);
    // An empty table is a valid file too.
    let empty = encode(HASH, NOW, &[], &[], None);
    assert_eq!(empty.len(), HEADER_LEN + TRAILER_LEN);
    assert!(decode(&empty, &expect()).unwrap().sessions.is_empty());
}

/// RFC 6888 REQ-8 across a restart: BIB entries cooling come back after
/// the sessions, with the rest of their wait less the downtime, shortest
/// first; those whose wait ran out are left out; a cooling record with a
/// remote, or a session after a cooling record, is refused.
#[test]
fn cooling_bib_entries_round_trip_less_the_downtime() {
    let cool = |port: u16, ms: u32| Replica {
        proto: Proto::Tcp,
        tcp_state: None,
        remaining_ms: ms,
        v6: Ipv6Addr::new(0x2001, 0xdb8, 9, 0, 0, 0, 0, 1),
        port6: port,
        v4: Ipv4Addr::new(192, 0, 2, 1),
        port4: port,
        remote4: Ipv4Addr::UNSPECIFIED,
        rport: 0,
    };
    let cooling = [cool(5000, 90_000), cool(5001, 1_500), cool(5002, 30_000)];
    let bytes = encode(HASH, NOW - 2_000, &sessions(), &cooling, None);
    assert_eq!(bytes.len(), HEADER_LEN + 53 * 56 + TRAILER_LEN);
    let r = decode(&bytes, &expect()).unwrap();
    assert_eq!(r.sessions.len(), 50);
    let got: Vec<(u16, u32)> = r
        .cooling
        .iter()
        .map(|c| (c.port4, c.remaining_ms))
        .collect();
    assert_eq!(got, [(5002, 28_000), (5000, 88_000)]);
    assert!(
        r.cooling
            .iter()
            .all(|c| c.tcp_state.is_none() && c.rport == 0)
    );

    // A cooling record with a remote port.
    let mut bad = bytes.clone();
    let at = HEADER_LEN + 50 * 56;
    bad[at + 52] = 1;
    state_file::reseal(&mut bad);
    let err = decode(&bad, &expect()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "record 50: a cooling BIB entry with a remote"
    );
    // A session after a cooling record.
    let mut bad = encode(HASH, NOW, &sessions()[..2], &cooling[..1], None);
    let (a, b) = (HEADER_LEN + 56, HEADER_LEN + 2 * 56);
    let (first, rest) = bad.split_at_mut(b);
    first[a..b].swap_with_slice(&mut rest[..56]);
    state_file::reseal(&mut bad);
    let err = decode(&bad, &expect()).unwrap_err();
    assert_eq!(err.to_string(), "record 2: not a session upsert");
}

#[test]
fn sessions_that_expired_during_the_downtime_are_left_out() {
    let bytes = encode(HASH, NOW - 59_500, &sessions(), &[], None);
    let r = decode(&bytes, &expect()).expect("accepted");
    // 60 000 ms left at writing: gone after 59.5 s? No: 500 ms left; the
    // first one is alive, all are.
    assert_eq!(r.expired, 0);
    let mut short = sessions();
    short[0].remaining_ms = 1_000;
    short[1].remaining_ms = 59_500;
    let r = decode(&encode(HASH, NOW - 59_500, &short, &[], None), &expect()).unwrap();
    assert_eq!(r.expired, 2);
    assert_eq!(r.sessions.len(), 48);
    assert_eq!(r.sessions[0].remaining_ms, short[2].remaining_ms - 59_500);
}

#[test]
fn truncated_anywhere_is_refused() {
    let bytes = file();
    for cut in [
        0,
        7,
        8,
        39,
        40,
        71,
        72,
        100,
        bytes.len() - 33,
        bytes.len() - 1,
    ] {
        let err = decode(&bytes[..cut], &expect()).unwrap_err();
        assert!(
            matches!(err, Refused::Truncated { .. }),
            "cut at {cut}: {err:?}"
        );
        assert!(err.to_string().starts_with("truncated"), "{err}");
    }
}

#[test]
fn any_bit_flip_is_refused() {
    let bytes = file();
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            let err = decode(&b, &expect()).expect_err("a flipped bit is refused");
            // Header fields are refused by name; anything else by the checksum.
            if i >= HEADER_LEN {
                assert_eq!(err, Refused::Checksum, "byte {i} bit {bit:#x}");
                assert_eq!(err.to_string(), "checksum mismatch: the file is damaged");
            }
        }
    }
}

#[test]
fn another_programs_file_or_another_version_is_refused() {
    let mut b = file();
    b[..8].copy_from_slice(b"SQLite f");
    assert_eq!(decode(&b, &expect()), Err(Refused::NotAStateFile));
    assert!(
        Refused::NotAStateFile
            .to_string()
            .contains("not a sixgate NAT64 state file")
    );
    assert_eq!(
        decode(b"#!/bin/sh\necho hi\n", &expect()),
        Err(Refused::NotAStateFile)
    );
    // A sync datagram is not a state file either.
    assert_eq!(
        decode(b"SGSY\x01\x01\x00\x00........", &expect()),
        Err(Refused::NotAStateFile)
    );
    let mut b = file();
    b[8] = 2;
    let err = decode(&b, &expect()).unwrap_err();
    assert_eq!(err, Refused::Version(2));
    assert_eq!(
        err.to_string(),
        "format version 2, this sixgate reads version 1"
    );
    let mut b = file();
    b[11] = 57;
    assert!(matches!(decode(&b, &expect()), Err(Refused::BadHeader(_))));
}

#[test]
fn another_configuration_is_refused() {
    let e = Expect {
        config_hash: HASH ^ 1,
        ..expect()
    };
    let err = decode(&file(), &e).unwrap_err();
    assert_eq!(
        err,
        Refused::ConfigChanged {
            file: HASH,
            running: HASH ^ 1
        }
    );
    assert!(
        err.to_string()
            .starts_with("written under another configuration (config hash 123456789abcdef0"),
        "{err}"
    );
}

#[test]
fn too_old_or_from_the_future_is_refused() {
    let old = encode(HASH, NOW - 60_001, &sessions(), &[], None);
    let err = decode(&old, &expect()).unwrap_err();
    assert_eq!(
        err,
        Refused::TooOld {
            age_ms: 60_001,
            max_ms: 60_000
        }
    );
    assert!(
        err.to_string()
            .contains("longer than the shortest session timeout (60 s)"),
        "{err}"
    );
    // Exactly the limit is still taken.
    assert!(decode(&encode(HASH, NOW - 60_000, &[], &[], None), &expect()).is_ok());
    // A little ahead (clocks of a restart in a VM): age 0.
    let ahead = encode(HASH, NOW + 5_000, &sessions(), &[], None);
    let r = decode(&ahead, &expect()).unwrap();
    assert_eq!(r.age_ms, 0);
    assert_eq!(r.sessions, sessions());
    let far = encode(
        HASH,
        NOW + state_file::FUTURE_SLACK_MS + 1,
        &sessions(),
        &[],
        None,
    );
    assert!(matches!(
        decode(&far, &expect()),
        Err(Refused::FromTheFuture { .. })
    ));
}

/// A header whose fields are set by hand, with a valid checksum over what
/// follows: what a hostile writer could make.
fn forged(count: u64, records: &[[u8; 56]]) -> Vec<u8> {
    use sha2::Digest;
    let mut b = Vec::new();
    b.extend_from_slice(&MAGIC);
    b.extend_from_slice(&[1, 0, 0, 56, 0, 0, 0, 0]);
    b.extend_from_slice(&HASH.to_be_bytes());
    b.extend_from_slice(&NOW.to_be_bytes());
    b.extend_from_slice(&count.to_be_bytes());
    for r in records {
        b.extend_from_slice(r);
    }
    let sum = sha2::Sha256::digest(&b);
    b.extend_from_slice(&sum);
    b
}

#[test]
fn hostile_counts_and_records_are_refused_without_allocating_for_them() {
    // A count far beyond the tables: refused before any arithmetic or
    // allocation from it.
    for count in [u64::MAX, u64::MAX / 56, 1 << 40, 1001] {
        let err = decode(&forged(count, &[]), &expect()).unwrap_err();
        assert_eq!(err, Refused::TooMany { count, max: 1000 }, "{count}");
        assert!(err.to_string().contains("more than the tables hold (1000)"));
    }
    // A count within the tables but more than the bytes hold: truncated.
    let err = decode(&forged(1000, &[]), &expect()).unwrap_err();
    assert_eq!(
        err,
        Refused::Truncated {
            len: 72,
            need: 72 + 56_000
        }
    );
    // Fewer than the bytes hold: trailing bytes.
    let mut rec = [0u8; 56];
    rec[0] = 1;
    rec[1] = 17;
    rec[4..8].copy_from_slice(&1000u32.to_be_bytes());
    let err = decode(&forged(0, &[rec]), &expect()).unwrap_err();
    assert!(matches!(err, Refused::TrailingBytes { .. }), "{err:?}");
    // A valid record is taken...
    assert_eq!(
        decode(&forged(1, &[rec]), &expect())
            .unwrap()
            .sessions
            .len(),
        1
    );
    // ...but not a delete, an unknown protocol, a TCP session without a
    // state, a lifetime over 10^9 ms or reserved bytes set.
    let bad = |f: fn(&mut [u8; 56])| {
        let mut r = rec;
        f(&mut r);
        decode(&forged(2, &[rec, r]), &expect()).unwrap_err()
    };
    for (what, err) in [
        ("delete", bad(|r| r[0] = 2)),
        ("bib delete", bad(|r| r[0] = 4)),
        ("proto", bad(|r| r[1] = 99)),
        ("tcp without state", bad(|r| r[1] = 6)),
        ("state on udp", bad(|r| r[2] = 3)),
        (
            "lifetime",
            bad(|r| r[4..8].copy_from_slice(&2_000_000_000u32.to_be_bytes())),
        ),
        ("reserved", bad(|r| r[55] = 1)),
        ("flags", bad(|r| r[3] = 1)),
    ] {
        assert!(
            matches!(err, Refused::BadRecord { index: 1, .. }),
            "{what}: {err:?}"
        );
        assert!(err.to_string().starts_with("record 1: "), "{err}");
    }
    // The most a file may be for a table.
    assert_eq!(state_file::max_len(1000), 72 + 56_000);
    assert_eq!(state_file::max_len(u64::MAX), u64::MAX);
}
