#!/usr/bin/env bash
# NAT64 state sync's benchmarks (docs/ha.md, docs/perf-log/2026-11-26.md "State sync
# between nodes"): the replication rate (records created on node A,
# exported, encoded, HMAC-signed, sent over loopback UDP, received, checked,
# imported by node B) and a 1 M-session snapshot to a joining node, both
# nodes on this one thread, and a worker's own cost of sync per packet
# (crates/sixgate-dataplane/examples/sync_bench.rs).
# Prints wall and CPU time: on a shared machine the CPU time says what the
# code costs. At the gateway (two nodes in namespaces, sync on against off,
# sessions lost at kill -9): bench/ha-gateway.sh.
#
# usage: bench/ha-bench.sh [SESSIONS] [--no-build]   (default 1000000)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=1000000
build=1
for a in "$@"; do
    case $a in
        -h | --help)
            awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
            exit 0
            ;;
        --no-build) build=0 ;;
        *) n=$a ;;
    esac
done
cd "$here"
if ((build)); then
    cargo build --release -q -p sixgate-dataplane --example sync_bench
fi
bin=target/release/examples/sync_bench
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" replication "$n"
"$bin" snapshot "$n"
"$bin" worker "$n"
