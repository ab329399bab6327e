//! docs/fastpath.md, "Kernel requirements" and docs/config.md `fastpath`:
//! the decision with made-up probe results.

use sixgate_core::Config;
use sixgate_core::addr::Rfc6052Prefix;
use sixgate_core::nat64::Nat64Config;

use super::{Forwarding, Want, choose};
use crate::probe::{self, Unsupported};

fn siit() -> Config {
    Config::with_pool6(Some(
        Rfc6052Prefix::new("64:ff9b::".parse().unwrap(), 96).unwrap(),
    ))
}

fn nat64() -> Config {
    Config {
        nat64: Some(Nat64Config::default()),
        ..siit()
    }
}

/// Out of scope: RFC 6146 NAT64 without a pool6 to look sessions up by.
fn nat64_without_pool6() -> Config {
    Config {
        nat64: Some(Nat64Config::default()),
        ..Config::with_pool6(None)
    }
}

fn ifaces() -> Vec<String> {
    vec!["eth6".into(), "eth4".into()]
}

fn has_all() -> Result<(), Unsupported> {
    Ok(())
}

fn lacks_change_proto() -> Result<(), Unsupported> {
    Err(Unsupported::Missing(vec![
        "bpf_skb_change_proto",
        "bpf_fib_lookup",
    ]))
}

/// RFC 7915 in the kernel needs `bpf_skb_change_proto`: a kernel without it
/// leaves the TUN plane alone, with ONE line naming every missing feature: a
/// warning for "tc" and "xdp" (asked for by name), an info line for "auto".
#[test]
fn missing_helper_is_off_naming_it() {
    for want in [Want::Tc, Want::Xdp, Want::Auto] {
        let off = choose(want, &ifaces(), &siit(), None, lacks_change_proto).unwrap_err();
        assert_eq!(off.is_warning(), want != Want::Auto);
        let line = off.to_string();
        for needle in [
            want.as_str(),
            "bpf_skb_change_proto, bpf_fib_lookup",
            "every packet takes the TUN device",
        ] {
            assert!(line.contains(needle), "{line}");
        }
    }
}

#[test]
fn in_scope_with_a_capable_kernel_loads() {
    for want in [Want::Tc, Want::Auto] {
        assert_eq!(
            choose(want, &ifaces(), &siit(), None, has_all),
            Ok(Forwarding::Redirect)
        );
    }
}

/// `auto`: off, with the core's reason, for a configuration out of scope
/// (RFC 6146 NAT64 without a pool6 to look sessions up by); the kernel is not
/// even probed.
#[test]
fn auto_out_of_scope_is_off_with_the_reason() {
    let off = choose(Want::Auto, &ifaces(), &nat64_without_pool6(), None, || {
        panic!("probed for a configuration out of scope")
    })
    .unwrap_err();
    assert!(!off.is_warning());
    assert!(off.why.contains("NAT64 fast path needs pool6"), "{off}");
}

/// docs/fastpath.md, "NAT64 established sessions": RFC 6146 NAT64 with a
/// /96 pool6 is in scope (its installed sessions).
#[test]
fn nat64_with_a_96_pool6_loads() {
    for want in [Want::Tc, Want::Auto] {
        assert_eq!(
            choose(want, &ifaces(), &nat64(), None, has_all),
            Ok(Forwarding::Redirect)
        );
    }
}

#[test]
fn auto_without_interfaces_is_off() {
    let off = choose(Want::Auto, &[], &siit(), None, has_all).unwrap_err();
    assert!(off.why.contains("fastpath_interfaces"), "{off}");
}

/// A probe that cannot tell (no permission) is reported as such.
#[test]
fn probe_error_is_off_saying_so() {
    let off = choose(Want::Tc, &ifaces(), &siit(), None, || {
        Err(Unsupported::Unknown(
            probe::PROGRAM_TYPE,
            "Operation not permitted".into(),
        ))
    })
    .unwrap_err();
    assert!(off.why.contains("cannot probe"), "{off}");
    assert!(off.why.contains("CAP_BPF"), "{off}");
}

fn strict() -> Option<String> {
    Some("eth6 has strict reverse-path filtering".into())
}

/// docs/fastpath.md, "Forwarding": strict reverse-path filtering (RFC 3704
/// strict mode) does not leave the fast path off, "tc" or "auto": the
/// program runs translating only what it forwards itself, and the reason
/// comes back for the start log.
#[test]
fn strict_rp_filter_runs_redirect_only() {
    for want in [Want::Tc, Want::Auto] {
        assert_eq!(
            choose(want, &ifaces(), &siit(), strict(), has_all),
            Ok(Forwarding::RedirectOnly(
                "eth6 has strict reverse-path filtering".into()
            ))
        );
    }
}

/// Strict reverse-path filtering changes how the program forwards, not
/// whether it may run: scope and kernel still decide first.
#[test]
fn strict_rp_filter_does_not_override_a_refusal() {
    let off = choose(
        Want::Auto,
        &ifaces(),
        &nat64_without_pool6(),
        strict(),
        has_all,
    )
    .unwrap_err();
    assert!(off.why.contains("NAT64 fast path needs pool6"), "{off}");
    let off = choose(Want::Tc, &ifaces(), &siit(), strict(), lacks_change_proto).unwrap_err();
    assert!(off.why.contains("bpf_skb_change_proto"), "{off}");
}
