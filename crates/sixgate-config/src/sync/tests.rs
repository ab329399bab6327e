//! `[sync]`: keys, defaults and every impossible combination.

use super::*;
use crate::tests::ok;

const NAT64: &str = "[translator]\nmode = \"nat64\"\npool6 = \"2001:db8:64::/96\"\n\
[nat64]\npool4 = [\"192.0.2.0/30\", \"198.51.100.8\"]\n";

const SYNC: &str = "[sync]\nnode_id = 1\nbind = \"[fd00:5::1]:7464\"\n\
peers = [ { node_id = 2, address = \"[fd00:5::2]:7464\" } ]\n\
shards = [ { node_id = 1, pool4 = [\"192.0.2.0/31\"] }, \
{ node_id = 2, pool4 = [\"192.0.2.2/31\", \"198.51.100.8\"] } ]\n";

fn err(text: &str) -> String {
    crate::parse(text, "t.toml").unwrap_err().to_string()
}

fn with(extra: &str) -> String {
    format!("{NAT64}{SYNC}{extra}")
}

#[test]
fn a_two_node_pair_loads() {
    let s = ok(&with("")).sync.unwrap();
    assert_eq!(s.node_id, 1);
    assert_eq!(s.bind, "[fd00:5::1]:7464".parse().unwrap());
    assert_eq!(
        s.peers,
        vec![SyncPeer {
            node_id: 2,
            address: "[fd00:5::2]:7464".parse().unwrap()
        }]
    );
    assert_eq!(s.key, None);
    assert_eq!(s.mtu, 1500);
    assert_eq!(s.max_datagram(), 1452);
    assert_eq!(s.shards.len(), 2);
    assert_eq!(
        s.shards[1].pool4,
        vec![
            (Ipv4Addr::new(192, 0, 2, 2), 31),
            (Ipv4Addr::new(198, 51, 100, 8), 32)
        ]
    );
    assert_eq!(ok(NAT64).sync, None, "off without the section");
}

#[test]
fn keys_inline_or_from_a_file() {
    let hex = "00112233445566778899aabbccddeeff";
    let s = ok(&with(&format!("key = \"{hex}\"\nmtu = 9000\n")))
        .sync
        .unwrap();
    assert_eq!(s.key.as_ref().unwrap().load().unwrap().len(), 16);
    assert_eq!(format!("{:?}", s.key.unwrap()), "Inline(..)");
    assert_eq!(s.mtu, 9000);
    let e = err(&with("key = \"0011\"\n"));
    assert!(
        e.contains("key: 2 bytes") && e.contains("openssl rand -hex 32"),
        "{e}"
    );
    assert!(err(&with("key = \"xyz\"\n")).contains("hex digits"));
    let e = err(&with(&format!("key = \"{hex}\"\nkey_file = \"/k\"\n")));
    assert!(e.contains("both set"), "{e}");
    assert!(err(&with("key_file = \"k\"\n")).contains("absolute path"));
    let dir = std::env::temp_dir().join(format!("sixgate-sync-key-{}", std::process::id()));
    std::fs::write(&dir, format!("{hex}\n")).unwrap();
    let s = ok(&with(&format!("key_file = \"{}\"\n", dir.display())))
        .sync
        .unwrap();
    assert_eq!(s.key.unwrap().load().unwrap()[15], 0xff);
    std::fs::write(&dir, "short\n").unwrap();
    let e = SyncKey::File(dir.clone()).load().unwrap_err();
    assert!(e.contains("key_file") && e.contains("hex"), "{e}");
    std::fs::remove_file(&dir).unwrap();
    assert!(
        SyncKey::File(dir)
            .load()
            .unwrap_err()
            .contains("cannot read")
    );
}

#[test]
fn sync_needs_nat64_and_an_explicit_pool4() {
    let siit = "[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\n";
    let e = err(&format!("{siit}{SYNC}"));
    assert!(
        e.contains("mode = \\\"nat64\\\"") || e.contains("mode = \"nat64\""),
        "{e}"
    );
    let e = err(&format!("[translator]\nmode = \"nat64\"\n[nat64]\n{SYNC}"));
    assert!(e.contains("explicit pool4"), "{e}");
}

#[test]
fn missing_keys_are_named() {
    for (key, text) in [
        ("node_id", SYNC.replace("node_id = 1\n", "")),
        ("bind", SYNC.replace("bind = \"[fd00:5::1]:7464\"\n", "")),
        ("shards", SYNC.split("shards").next().unwrap().to_string()),
    ] {
        let e = err(&format!("{NAT64}{text}"));
        assert!(e.contains(&format!("no {key}")), "{key}: {e}");
    }
}

#[test]
fn impossible_peers_are_refused() {
    let cases = [
        (
            "node_id = 1, address = \"[fd00:5::2]:7464\"",
            "duplicate node id",
        ),
        ("node_id = 2, address = \"[fd00:5::1]:7465\"", "own address"),
        (
            "node_id = 2, address = \"10.5.0.2:7464\"",
            "another address family",
        ),
        (
            "node_id = 0, address = \"[fd00:5::2]:7464\"",
            "out of range",
        ),
        ("node_id = 2, address = \"[fd00:5::2]\"", "ADDR:PORT"),
    ];
    for (peer, want) in cases {
        let text = SYNC.replace("node_id = 2, address = \"[fd00:5::2]:7464\"", peer);
        let e = err(&format!("{NAT64}{text}"));
        assert!(e.contains(want), "{peer}: {e}");
    }
    let two = SYNC.replace(
        "{ node_id = 2, address = \"[fd00:5::2]:7464\" }",
        "{ node_id = 2, address = \"[fd00:5::2]:7464\" }, { node_id = 2, address = \"[fd00:5::3]:7464\" }",
    );
    assert!(err(&format!("{NAT64}{two}")).contains("duplicate node id"));
    assert!(
        err(&format!(
            "{NAT64}{}",
            SYNC.replace(
                "peers = [ { node_id = 2, address = \"[fd00:5::2]:7464\" } ]",
                "peers = []"
            )
        ))
        .contains("no peer")
    );
}

#[test]
fn the_shard_plan_must_cover_pool4_exactly() {
    let plan = |shards: &str| {
        let text = SYNC.split("shards").next().unwrap().to_string() + "shards = " + shards + "\n";
        err(&format!("{NAT64}{text}"))
    };
    let e = plan(
        "[ { node_id = 1, pool4 = [\"192.0.2.0/30\"] }, { node_id = 2, pool4 = [\"192.0.2.2/31\", \"198.51.100.8\"] } ]",
    );
    assert!(e.contains("overlaps a shard of node 1"), "{e}");
    let e = plan(
        "[ { node_id = 1, pool4 = [\"192.0.2.0/31\"] }, { node_id = 2, pool4 = [\"192.0.2.2/31\"] } ]",
    );
    assert!(e.contains("198.51.100.8 is in no shard"), "{e}");
    let e = plan("[ { node_id = 1, pool4 = [\"192.0.2.0/30\", \"198.51.100.8\"] } ]");
    assert!(e.contains("node 2 owns no pool4 address"), "{e}");
    let e = plan(
        "[ { node_id = 1, pool4 = [\"192.0.2.0/29\"] }, { node_id = 2, pool4 = [\"198.51.100.8\"] } ]",
    );
    assert!(e.contains("outside pool4"), "{e}");
    let e = plan("[ { node_id = 1, pool4 = [\"0.0.0.0/0\"] } ]");
    assert!(e.contains("outside pool4"), "{e}");
    let e = plan("[ { node_id = 3, pool4 = [\"192.0.2.0/30\"] } ]");
    assert!(e.contains("not this node's node_id nor a peer's"), "{e}");
    let e = plan("[ { node_id = 1, pool4 = [\"192.0.2.1/31\"] } ]");
    assert!(e.contains("host bits"), "{e}");
}

#[test]
fn the_config_hash_agrees_between_peers_and_differs_on_a_shared_value() {
    let node1 = ok(&with(""));
    let node2_text = with("")
        .replace(
            "node_id = 1\nbind = \"[fd00:5::1]:7464\"",
            "node_id = 2\nbind = \"[fd00:5::2]:7464\"",
        )
        .replace(
            "{ node_id = 2, address = \"[fd00:5::2]:7464\" }",
            "{ node_id = 1, address = \"[fd00:5::1]:7464\" }",
        );
    let node2 = ok(&node2_text);
    let hash =
        |l: &crate::Loaded, workers| l.sync.as_ref().unwrap().config_hash(&l.config, workers);
    assert_eq!(node2.sync.as_ref().unwrap().node_id, 2);
    assert_eq!(
        hash(&node1, 2),
        hash(&node2, 2),
        "node-local keys are not hashed"
    );
    assert_ne!(hash(&node1, 2), hash(&node1, 4), "worker count");
    let other_timeout = ok(&with("").replace("[nat64]\n", "[nat64]\nudp_timeout = 600\n"));
    assert_ne!(hash(&node1, 2), hash(&other_timeout, 2), "a timeout");
    let keyed = ok(&with("key = \"00112233445566778899aabbccddeeff\"\n"));
    assert_ne!(hash(&node1, 2), hash(&keyed, 2), "a key on one side only");
}

/// docs/restart.md: the state file's hash covers the NAT64 plan and the
/// workers, with `[sync]` its hash too, and nothing node-local of the daemon.
#[test]
fn the_state_file_hash_follows_the_nat64_plan() {
    use crate::sync::state_config_hash;
    let alone = ok(NAT64);
    let h = |l: &crate::Loaded, w| state_config_hash(&l.config, w, l.sync.as_ref());
    assert_eq!(h(&alone, 2), h(&ok(NAT64), 2), "deterministic");
    assert_ne!(h(&alone, 2), h(&alone, 3), "worker count");
    let other_timeout = ok(&NAT64.replace("[nat64]\n", "[nat64]\nudp_timeout = 600\n"));
    assert_ne!(h(&alone, 2), h(&other_timeout, 2), "a timeout");
    let other_user = ok(&format!("{NAT64}[daemon]\nsocket = \"/run/x/s.sock\"\n"));
    assert_eq!(
        h(&alone, 2),
        h(&other_user, 2),
        "[daemon] keys are not hashed"
    );
    let synced = ok(&with(""));
    assert_ne!(h(&alone, 2), h(&synced, 2), "[sync] is");
    // Not the sync protocol's own hash.
    assert_ne!(
        h(&synced, 2),
        synced.sync.as_ref().unwrap().config_hash(&synced.config, 2)
    );
}

/// docs/ha.md, "Failover and scale-out": the routing hook's table and the
/// join timeout; a table the kernel routes by, 0, or an unprivileged
/// process is refused at start.
#[test]
fn announce_table_and_join_timeout() {
    let s = ok(&with("")).sync.unwrap();
    assert_eq!((s.announce_table, s.join_timeout), (None, 3));
    assert_eq!(s.own_shards(), vec![("192.0.2.0".parse().unwrap(), 31)]);
    let s = ok(&with("announce_table = 100\njoin_timeout = 10\n"))
        .sync
        .unwrap();
    assert_eq!((s.announce_table, s.join_timeout), (Some(100), 10));
    let s = ok(&with("announce_table = 4294967295\n")).sync.unwrap();
    assert_eq!(s.announce_table, Some(u32::MAX));
    for (v, why) in [
        ("0", "out of range"),
        ("-1", "out of range"),
        ("4294967296", "out of range"),
        ("253", "default table"),
        ("254", "main table"),
        ("255", "local table"),
    ] {
        let e = err(&with(&format!("announce_table = {v}\n")));
        assert!(e.contains("announce_table") && e.contains(why), "{v}: {e}");
    }
    for v in ["0", "3601"] {
        let e = err(&with(&format!("join_timeout = {v}\n")));
        assert!(
            e.contains("join_timeout") && e.contains("out of range"),
            "{v}: {e}"
        );
    }
    let e = err(&format!(
        "{NAT64}[daemon]\nuser = \"nobody\"\n{SYNC}announce_table = 100\n"
    ));
    assert!(e.contains("announce_table with [daemon] user"), "{e}");
}
