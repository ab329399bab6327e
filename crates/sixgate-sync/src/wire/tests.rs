use super::*;
use crate::record::tests::tcp;

fn header(kind: Kind) -> Header {
    Header {
        kind,
        config_hash: 0x1122_3344_5566_7788,
        epoch: 42,
        sender: 1,
        receiver: 2,
        packet_number: 7,
        seq: 9,
        ack: Some(3),
    }
}

fn data(n: u16, key: Option<&Key>) -> Vec<u8> {
    let mut body = Vec::new();
    for i in 0..n {
        let mut b = [0u8; RECORD_LEN];
        tcp(i).encode(&mut b);
        body.extend_from_slice(&b);
    }
    let mut out = vec![0u8; 2000];
    let len = encode(&mut out, &header(Kind::Data), &body, n, key).unwrap();
    out.truncate(len);
    out
}

#[test]
fn header_layout_is_the_documented_one() {
    let d = data(1, None);
    assert_eq!(d.len(), HEADER_LEN + RECORD_LEN);
    assert_eq!(&d[..4], b"SGSY");
    assert_eq!(d[4], 1);
    assert_eq!(d[5], 1);
    assert_eq!(d[6], FLAG_ACK);
    assert_eq!(&d[8..16], &0x1122_3344_5566_7788u64.to_be_bytes());
    assert_eq!(&d[16..24], &42u64.to_be_bytes());
    assert_eq!(&d[24..28], &[0, 1, 0, 2]);
    assert_eq!(&d[28..32], &7u32.to_be_bytes());
    assert_eq!(&d[32..36], &9u32.to_be_bytes());
    assert_eq!(&d[36..40], &3u32.to_be_bytes());
    assert_eq!(&d[40..44], &[0, 56, 0, 1]);
    let got = decode(&d, None).unwrap();
    assert_eq!(got.header, header(Kind::Data));
    let Body::Data(r) = got.body else { panic!() };
    assert_eq!(r.iter().collect::<Vec<_>>(), vec![tcp(0)]);
}

#[test]
fn records_per_datagram_fill_the_mtu() {
    assert_eq!(records_per_datagram(1452, true), 24);
    assert_eq!(records_per_datagram(1452, false), 25);
    assert_eq!(records_per_datagram(8952, true), 158);
    assert_eq!(records_per_datagram(10, true), 0);
    let d = data(25, None);
    assert!(d.len() <= 1452);
}

#[test]
fn every_truncation_is_refused_without_panic() {
    let key = Key::new(b"a sync key of 16").unwrap();
    let d = data(3, Some(&key));
    for n in 0..d.len() {
        let r = decode(&d[..n], Some(&key));
        assert!(
            matches!(r, Err(Drop::Truncated | Drop::AuthFailed)),
            "{n}: {r:?}"
        );
    }
    assert!(decode(&d, Some(&key)).is_ok());
    let mut longer = d.clone();
    longer.push(0);
    assert_eq!(decode(&longer, Some(&key)), Err(Drop::BadLength));
}

#[test]
fn forged_or_unexpected_tags_fail_auth() {
    let key = Key::new(b"a sync key of 16").unwrap();
    let other = Key::new(b"another key, 16b").unwrap();
    let d = data(2, Some(&key));
    assert_eq!(decode(&d, Some(&other)), Err(Drop::AuthFailed));
    assert_eq!(
        decode(&d, None),
        Err(Drop::AuthFailed),
        "tag where none is expected"
    );
    assert_eq!(
        decode(&data(2, None), Some(&key)),
        Err(Drop::AuthFailed),
        "no tag"
    );
    // Any flipped bit anywhere after the fixed checks is caught by the tag.
    for i in 8..d.len() {
        let mut f = d.clone();
        f[i] ^= 0x10;
        assert!(decode(&f, Some(&key)).is_err(), "byte {i}");
    }
}

#[test]
fn header_checks_name_their_reason() {
    let d = data(1, None);
    let with = |i: usize, v: u8| {
        let mut f = d.clone();
        f[i] = v;
        decode(&f, None).map(|_| ())
    };
    assert_eq!(with(0, b'X'), Err(Drop::BadMagic));
    assert_eq!(with(4, 2), Err(Drop::BadVersion));
    assert_eq!(with(5, 9), Err(Drop::BadKind));
    assert_eq!(with(6, 0x80), Err(Drop::Malformed));
    assert_eq!(with(7, 1), Err(Drop::Malformed));
    assert_eq!(with(25, 0), Err(Drop::Malformed), "sender 0");
    assert_eq!(
        with(43, 2),
        Err(Drop::Malformed),
        "count disagrees with length"
    );
    assert_eq!(with(44, 0), Err(Drop::Malformed), "record op 0");
    assert_eq!(with(4, 1), Ok(()));
    let mut no_ack = d.clone();
    no_ack[6] = 0;
    assert_eq!(
        decode(&no_ack, None).map(|_| ()),
        Err(Drop::Malformed),
        "an ack without its flag"
    );
    assert_eq!(decode(b"GET / HTTP/1.1", None), Err(Drop::BadMagic));
    assert_eq!(decode(b"SG", None), Err(Drop::Truncated));
}

#[test]
fn control_bodies() {
    let mut out = [0u8; 200];
    let mut body = Vec::new();
    for (a, b) in [(5u32, 7u32), (9, 9)] {
        body.extend_from_slice(&a.to_be_bytes());
        body.extend_from_slice(&b.to_be_bytes());
    }
    let n = encode(&mut out, &header(Kind::Nack), &body, 0, None).unwrap();
    let Body::Nack(r) = decode(&out[..n], None).unwrap().body else {
        panic!()
    };
    assert_eq!(r.iter().collect::<Vec<_>>(), vec![(5, 7), (9, 9)]);
    // A range backwards is malformed.
    let n = encode(
        &mut out,
        &header(Kind::Nack),
        &[0, 0, 0, 9, 0, 0, 0, 5],
        0,
        None,
    )
    .unwrap();
    assert_eq!(decode(&out[..n], None), Err(Drop::Malformed));
    let n = encode(
        &mut out,
        &header(Kind::SnapEnd),
        &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3],
        0,
        None,
    )
    .unwrap();
    assert_eq!(decode(&out[..n], None).unwrap().body, Body::SnapEnd(1, 3));
    let n = encode(&mut out, &header(Kind::ResyncRequest), &[2], 0, None).unwrap();
    assert_eq!(
        decode(&out[..n], None).unwrap().body,
        Body::ResyncRequest(ResyncReason::Gap)
    );
    let n = encode(&mut out, &header(Kind::ResyncRequest), &[9], 0, None).unwrap();
    assert_eq!(decode(&out[..n], None), Err(Drop::Malformed));
    let n = encode(&mut out, &header(Kind::Keepalive), &[1], 0, None).unwrap();
    assert_eq!(decode(&out[..n], None), Err(Drop::Malformed));
    assert!(
        encode(&mut out[..50], &header(Kind::SnapEnd), &[0; 12], 0, None).is_none(),
        "too small"
    );
}

/// docs/ha.md, "Bodies": DRAIN is kind 7, reliable, with a 12-byte body
/// (drain id, records queued before it); any other length is malformed.
#[test]
fn drain_body_layout_and_checks() {
    let key = Key::new(b"a sync key of 16").unwrap();
    let mut out = [0u8; 200];
    let mut body = [0u8; DRAIN_LEN];
    body[..4].copy_from_slice(&3u32.to_be_bytes());
    body[4..].copy_from_slice(&1234u64.to_be_bytes());
    let n = encode(&mut out, &header(Kind::Drain), &body, 0, Some(&key)).unwrap();
    assert_eq!(n, HEADER_LEN + 12 + TAG_LEN);
    assert_eq!(out[5], 7);
    assert_eq!(out[6], FLAG_TAG | FLAG_ACK);
    assert_eq!(&out[40..44], &[0, 12, 0, 0]);
    assert_eq!(&out[44..48], &[0, 0, 0, 3]);
    assert_eq!(&out[48..56], &1234u64.to_be_bytes());
    let d = decode(&out[..n], Some(&key)).unwrap();
    assert_eq!(d.header, header(Kind::Drain));
    assert_eq!(d.body, Body::Drain(3, 1234));
    assert!(Kind::Drain.is_reliable());
    // Authenticated like every message: a flipped body bit, or no key.
    let mut flipped = out[..n].to_vec();
    flipped[50] ^= 1;
    assert_eq!(decode(&flipped, Some(&key)), Err(Drop::AuthFailed));
    assert_eq!(decode(&out[..n], None), Err(Drop::AuthFailed));
    for len in [0, 4, 11, 13] {
        let n = encode(&mut out, &header(Kind::Drain), &[0; 13][..len], 0, None).unwrap();
        assert_eq!(decode(&out[..n], None), Err(Drop::Malformed), "{len}");
    }
    // A record count on a DRAIN is malformed too.
    let n = encode(&mut out, &header(Kind::Drain), &body, 1, None).unwrap();
    assert_eq!(decode(&out[..n], None), Err(Drop::Malformed));
    // Kind 8 is unknown.
    let n = encode(&mut out, &header(Kind::Drain), &body, 0, None).unwrap();
    out[5] = 8;
    assert_eq!(decode(&out[..n], None), Err(Drop::BadKind));
}
