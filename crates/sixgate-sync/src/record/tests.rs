use super::*;

pub(crate) fn tcp(i: u16) -> Record {
    Record {
        op: Op::SessionUpsert,
        proto: Proto::Tcp,
        tcp_state: Some(TcpState::Established),
        lifetime_ms: 7_440_000,
        v6_host: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i),
        v6_remote: Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0xc633, 0x6407),
        v4_pool: Ipv4Addr::new(192, 0, 2, 1),
        v4_remote: Ipv4Addr::new(198, 51, 100, 7),
        port6: 40000,
        port4: 61000u16.wrapping_add(i),
        remote_port: 443,
    }
}

#[test]
fn round_trip_and_layout() {
    let r = tcp(5);
    let mut b = [0u8; RECORD_LEN];
    r.encode(&mut b);
    assert_eq!(b[0], 1);
    assert_eq!(b[1], 6);
    assert_eq!(b[2], 3);
    assert_eq!(&b[4..8], &7_440_000u32.to_be_bytes());
    assert_eq!(&b[40..44], &[192, 0, 2, 1]);
    assert_eq!(&b[50..52], &61005u16.to_be_bytes());
    assert_eq!(&b[52..54], &443u16.to_be_bytes());
    assert_eq!(Record::decode(&b), Some(r));
}

#[test]
fn out_of_range_fields_are_refused() {
    let mut good = [0u8; RECORD_LEN];
    tcp(1).encode(&mut good);
    let bad = |i: usize, v: u8| {
        let mut b = good;
        b[i] = v;
        Record::decode(&b)
    };
    assert!(bad(0, 0).is_none(), "op 0");
    assert!(bad(0, 5).is_none(), "op 5");
    assert!(bad(1, 2).is_none(), "protocol 2");
    assert!(bad(2, 8).is_none(), "state 8");
    assert!(bad(2, 0).is_none(), "TCP without a state");
    assert!(bad(3, 1).is_none(), "flags");
    assert!(bad(55, 1).is_none(), "reserved");
    assert!(bad(4, 0xff).is_none(), "lifetime beyond the cap");
    let mut udp = tcp(1);
    udp.proto = Proto::Udp;
    udp.encode(&mut good);
    assert!(Record::decode(&good).is_none(), "UDP with a TCP state");
    udp.tcp_state = None;
    udp.encode(&mut good);
    assert_eq!(Record::decode(&good), Some(udp));
}
