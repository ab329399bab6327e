//! `[dns64]`: keys, errors, and the DNS64-only file.

use super::*;
use crate::parse_dns64;
use crate::schema::{DNS64_KEYS, Dns64Section};

const EVERY_KEY: &str = r#"[dns64]
listen = ["[2001:db8:1::53]:53", "127.0.0.1:5353"]
upstream = ["192.0.2.53", "[2001:db8::53]:53"]
prefixes = ["64:ff9b::/96", "2001:db8:100::/40"]
exclude = ["::ffff:0:0/96", "2001:db8:bad::/48"]
exclude_ipv4 = ["10.0.0.0/8"]
acl = ["2001:db8:1::/48", "127.0.0.1"]
cache_size = 5
max_ttl = 60
upstream_timeout_ms = 300
upstream_attempts = 3
"#;

fn err(text: &str) -> String {
    parse_dns64(text, "f.toml").unwrap_err().to_string()
}

#[test]
fn every_key_alone_and_the_key_list_matches_the_schema() {
    let d = parse_dns64(EVERY_KEY, "f.toml").unwrap().dns64;
    assert_eq!(d.listen[0], "[2001:db8:1::53]:53".parse().unwrap());
    assert_eq!(d.upstream[0], "192.0.2.53:53".parse().unwrap());
    assert_eq!(d.prefixes.len(), 2);
    assert_eq!(d.exclude.len(), 2);
    assert_eq!(d.exclude_ipv4, ["10.0.0.0/8".parse::<Ipv4Net>().unwrap()]);
    assert_eq!(d.acl[1], "127.0.0.1/32".parse::<IpNet>().unwrap());
    assert_eq!((d.cache_size, d.max_ttl), (5, 60));
    assert_eq!((d.upstream_timeout_ms, d.upstream_attempts), (300, 3));
    let keys: Vec<&str> = EVERY_KEY
        .lines()
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k))
        .collect();
    assert_eq!(keys, DNS64_KEYS);
    // Every field set means every key deserialised into its own field.
    let f: crate::schema::File = toml::from_str(EVERY_KEY).unwrap();
    let Dns64Section {
        listen,
        upstream,
        prefixes,
        exclude,
        exclude_ipv4,
        acl,
        cache_size,
        max_ttl,
        upstream_timeout_ms,
        upstream_attempts,
    } = f.dns64.unwrap().into_inner();
    let set = [
        listen.is_some(),
        upstream.is_some(),
        prefixes.is_some(),
        exclude.is_some(),
        exclude_ipv4.is_some(),
        acl.is_some(),
        cache_size.is_some(),
        max_ttl.is_some(),
        upstream_timeout_ms.is_some(),
        upstream_attempts.is_some(),
    ];
    assert_eq!(set.len(), DNS64_KEYS.len());
    assert!(set.iter().all(|&s| s));
}

#[test]
fn defaults_and_pool6_is_the_translator_prefix() {
    let text = "[translator]\nmode = \"siit\"\npool6 = \"2001:db8:64::/96\"\n\
                [dns64]\nupstream = [\"192.0.2.53\"]\n";
    let d = parse_dns64(text, "f.toml").unwrap().dns64;
    assert_eq!(d.prefixes, ["2001:db8:64::/96".parse().unwrap()]);
    assert_eq!(d.exclude, [DEFAULT_EXCLUDE.parse::<Ipv6Net>().unwrap()]);
    assert_eq!(d.listen.len(), 2);
    assert_eq!(d.acl.len(), 2);
    assert_eq!(d.cache_size, DEFAULT_CACHE_SIZE);
    // The gateway's loader sees the same section.
    let l = crate::parse(text, "f.toml").unwrap();
    assert_eq!(l.dns64, Some(d));
    let explicit = text.replace("[dns64]\n", "[dns64]\nprefixes = \"pool6\"\n");
    assert!(parse_dns64(&explicit, "f.toml").is_ok());
    // And a gateway file without [dns64] has none.
    assert_eq!(
        crate::parse(&text[..text.find("[dns64]").unwrap()], "f")
            .unwrap()
            .dns64,
        None
    );
}

#[test]
fn errors_name_file_line_and_key() {
    assert_eq!(
        err("[dns64]\nprefixes = [\"64:ff9b::/96\"]\n"),
        "f.toml:1:1: [dns64] has no upstream; expected upstream = a list of resolvers \
         to forward to, e.g. upstream = [\"192.0.2.53\"]"
    );
    assert!(err("[dns64]\nupstream = [\"192.0.2.53\"]\n").contains("no prefixes"));
    assert!(
        err("[dns64]\nupstream = [\"192.0.2.53\"]\nprefixes = \"pool6\"\n")
            .starts_with("f.toml:3:12: prefixes = ")
    );
    assert!(
        err("[dns64]\nupstream = [\"192.0.2.53\"]\nprefixes = [\"64:ff9b::/33\"]\n")
            .contains("length /33 is not an RFC 6052 length")
    );
    assert!(
        err("[dns64]\nupstream = [\"nonsense\"]\nprefixes = \"pool6\"\n")
            .starts_with("f.toml:2:13: upstream = \"nonsense\": not an address")
    );
    assert!(
        err("[dns64]\nupstream = [\"192.0.2.53\"]\nprefixes = [\"64:ff9b::/96\"]\nacl = [\"10.0.0.1/8\"]\n")
            .contains("bits beyond /8 are set; expected \"10.0.0.0/8\"")
    );
    assert!(
        err("[dns64]\nupstream = [\"192.0.2.53\"]\nprefixes = [\"64:ff9b::/96\"]\nupstream_attempts = 0\n")
            .starts_with("f.toml:4:21: upstream_attempts = 0: out of range")
    );
    assert!(err("[dns64]\nupstrem = 1\n").contains("unknown key `upstrem`"));
    assert!(
        err("[translator]\nmode = \"siit\"\npool6 = \"64:ff9b::/96\"\n").contains("no [dns64]")
    );
}
