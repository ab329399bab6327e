#!/usr/bin/env bash
# Set up a fresh Debian 12 machine (as root) for building and testing sixgate.
#
# Idempotent: it checks what is there first and only installs what is missing,
# so a second run is a quick no-op. It prints every action it takes.
#
#   scripts/setup.sh           Debian packages, Rust (if cargo is absent), cargo-fuzz, cargo-deb
#   scripts/setup.sh --bench   also gungraun-runner, for scripts/bench.sh,
#                              dnsperf and unbound, for bench/dns64-compare.sh,
#                              and bpftrace, for bench/tun-compare.sh DUT_RATE=
set -euo pipefail

# Debian packages the tests and the planned network tests use:
# iproute2 (netns/veth test beds), iperf3 and tayga (comparisons), nftables and
# conntrack (the NAT44 rows of bench/nat64-compare.sh), libcap2-bin (capsh, for
# the steering fallback test), clang/llvm/
# libbpf-dev (eBPF programs), tshark (capture checks), dnsutils (DNS64 tests),
# valgrind (gungraun instruction counts), and the usual network tools.
# The namespace bed (crates/sixgate-netns, e2e tests, `sixgate demo`) uses
# iproute2 (ip, ss), procps (sysctl), tayga, python3, curl, iperf3, iputils; the
# 464XLAT chain test also dnsmasq-base (the DNS server for RFC 7050 discovery);
# bind9 (named) is the authoritative server, validating resolver and reference
# DNS64 of the DNS64 tests (crates/sixgate/tests/dns64.rs), bind9-utils
# (dnssec-keygen, dnssec-signzone) signs their DNSSEC test zone.
# fonts-dejavu-core gives `sixgate bench plot --out FILE.png` its text.
# bird2 (BIRD 2: BGP, BFD) is the routing daemon of the scale-out bed
# (crates/sixgate-netns/src/ecmp.rs, tests/ha_routing.rs) and checks the
# dist/bird/ configs; the tests start their own `bird -f -c … -s … -P …` in
# their namespaces, never the system service (disabled below when we install it).
# nfdump (nfcapd, built with NSEL/NEL) and rsyslog are the NAT event log's
# collectors (crates/sixgate/tests/log_export.rs: IPFIX, NetFlow v9, RFC 5424 over
# UDP and TCP); the test starts its own in a namespace, never the system services.
# prometheus (the server and promtool) proves the shipped monitoring
# (crates/sixgate/tests/monitoring.rs): promtool checks and unit-tests
# dist/prometheus/sixgate-rules.yml, and a server of the test's own, in a
# namespace, scrapes a live pair for every query of dist/grafana/sixgate.json.
# lintian checks the Debian package scripts/package.sh builds with cargo-deb
# (below); tests/packaging.rs builds, lints, installs and purges it.
PACKAGES=(
    iproute2 iperf3 tayga clang llvm libbpf-dev tshark curl dnsutils python3
    valgrind ethtool iputils-ping iputils-tracepath traceroute netcat-openbsd
    pkg-config procps dnsmasq-base nftables conntrack libcap2-bin bind9 bind9-utils
    fonts-dejavu-core bird2 nfdump rsyslog prometheus lintian
)
RUST_TOOLCHAIN=1.95.0
CARGO_FUZZ_VERSION=0.13.2
CARGO_DEB_VERSION=3.8.0

bench=0
for arg in "$@"; do
    case "$arg" in
        --bench) bench=1 ;;
        -h | --help)
            sed -n '2,9p' "$0"
            exit 0
            ;;
        *)
            echo "setup: unknown argument: $arg" >&2
            exit 2
            ;;
    esac
done

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
did=()

log() { echo "setup: $*"; }

as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "setup: need root to run: $*" >&2
        exit 1
    fi
}

# --- Debian packages -------------------------------------------------------
# The DNS64 comparison's other servers and load generator, and the DUT CPU
# column's softirq timer (bench only).
if ((bench)); then
    PACKAGES+=(dnsperf unbound bpftrace)
fi
missing=()
for pkg in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
    if [[ $status != ii* ]]; then
        missing+=("$pkg")
    fi
done
if ((${#missing[@]} > 0)); then
    log "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # tshark asks whether non-root users may capture; answer no, without a prompt.
    echo "wireshark-common wireshark-common/install-setuid boolean false" |
        as_root debconf-set-selections
    apt_log=$(mktemp)
    if ! { as_root apt-get update -qq &&
        as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
        </dev/null >"$apt_log" 2>&1; then
        tail -n 40 "$apt_log" >&2
        echo "setup: apt-get failed (full log: $apt_log)" >&2
        exit 1
    fi
    rm -f "$apt_log"
    did+=("apt: ${missing[*]}")
    # The package enables bird.service; the tests need no BIRD in the host's
    # own namespace, so a machine with systemd does not get one from us.
    if [[ " ${missing[*]} " == *" bird2 "* && -d /run/systemd/system ]]; then
        log "disabling bird.service (the tests run their own BIRD in namespaces)"
        as_root systemctl disable --now bird.service >/dev/null 2>&1 || true
    fi
    # Likewise nfdump.service (an nfcapd on port 9995); rsyslog stays, the
    # host's own logger.
    if [[ " ${missing[*]} " == *" nfdump "* && -d /run/systemd/system ]]; then
        log "disabling nfdump.service (the tests run their own nfcapd in namespaces)"
        as_root systemctl disable --now nfdump.service >/dev/null 2>&1 || true
    fi
    # And prometheus.service (a server on :9090 scraping this host); the
    # monitoring test runs its own.
    if [[ " ${missing[*]} " == *" prometheus "* && -d /run/systemd/system ]]; then
        log "disabling prometheus.service (the monitoring test runs its own server)"
        as_root systemctl disable --now prometheus.service >/dev/null 2>&1 || true
    fi
fi

# --- Rust --------------------------------------------------------------------
if [[ -x $HOME/.cargo/bin/cargo ]]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    # Not exercised on our machines (they ship the toolchain); kept for a bare box.
    log "cargo not found: installing Rust $RUST_TOOLCHAIN with rustup"
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
        sh -s -- -y --profile minimal --default-toolchain "$RUST_TOOLCHAIN" \
            --component clippy --component rustfmt
    export PATH="$HOME/.cargo/bin:$PATH"
    did+=("rust $RUST_TOOLCHAIN")
fi
# rustfmt and clippy are run by scripts/test.sh.
for tool in fmt:rustfmt clippy:clippy; do
    if ! cargo "${tool%%:*}" --version >/dev/null 2>&1; then
        component=${tool#*:}
        if ! command -v rustup >/dev/null 2>&1; then
            echo "setup: cargo ${tool%%:*} missing and no rustup to add $component" >&2
            exit 1
        fi
        log "adding rustup component $component"
        rustup component add "$component"
        did+=("rustup component $component")
    fi
done

# --- cargo-fuzz (stable, used with -s none) --------------------------------
if ! cargo fuzz --version >/dev/null 2>&1; then
    log "installing cargo-fuzz $CARGO_FUZZ_VERSION"
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
    did+=("cargo-fuzz $CARGO_FUZZ_VERSION")
fi

# --- cargo-deb (scripts/package.sh; tests/packaging.rs packages with it) ----
if [[ $(cargo deb --version 2>/dev/null) != "cargo-deb $CARGO_DEB_VERSION" ]]; then
    log "installing cargo-deb $CARGO_DEB_VERSION"
    cargo install cargo-deb --version "$CARGO_DEB_VERSION" --locked
    did+=("cargo-deb $CARGO_DEB_VERSION")
fi

# --- gungraun-runner (only with --bench) -----------------------------------
if ((bench)); then
    # The runner must be the same version as the gungraun library the bench links.
    gungraun_version=$(awk '/^name = "gungraun"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' \
        "$repo_root/Cargo.lock")
    if [[ -z $gungraun_version ]]; then
        echo "setup: gungraun not found in Cargo.lock" >&2
        exit 1
    fi
    have=$(gungraun-runner --version 2>/dev/null || true)
    if [[ $have != *"$gungraun_version"* ]]; then
        log "installing gungraun-runner $gungraun_version (found: ${have:-none})"
        cargo install gungraun-runner --version "$gungraun_version" --locked
        did+=("gungraun-runner $gungraun_version")
    fi
fi

if ((${#did[@]} == 0)); then
    log "everything already present"
else
    log "done: ${did[*]}"
fi
