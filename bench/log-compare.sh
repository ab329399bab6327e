#!/usr/bin/env bash
# NAT64 connection establishment rate (RFC 9693 phase 1) with the session log
# off, as JSON lines through [log], and exported as IPFIX and as syslog by the
# exporter thread (docs/logging.md), and with RFC 7422 deterministic NAT (no log
# needed, nat64-deterministic.toml), side by side, alternating, ROUNDS times.
#
#   bench/log-compare.sh [--no-build]      (ROUNDS=2 CONNECTIONS=20000 by default)
#
# Prints one line per trial: the configuration and the maximum connection
# establishment rate `sixgate bench stateful` found.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
if [[ ${1:-} != --no-build ]]; then
    cargo build --release -p sixgate
fi
S=target/release/sixgate
ROUNDS=${ROUNDS:-2}
CONNECTIONS=${CONNECTIONS:-20000}
for round in $(seq "$ROUNDS"); do
    for cfg in ${CONFIGS:-nat64 nat64-log-json nat64-log-ipfix nat64-log-syslog nat64-deterministic}; do
        rate=$($S bench stateful --dut sixgate --config "bench/configs/$cfg.toml" --duration 2 \
            --no-throughput --connections "$CONNECTIONS" --max-rate 400000 --steps 8 2>&1 |
            tee "/tmp/log-compare-$cfg-$round.txt" | grep -i "establishment rate" | tail -1)
        echo "round $round $cfg: $rate"
    done
done
rm -f /tmp/sixgate-bench-events.log
