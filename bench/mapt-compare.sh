#!/usr/bin/env bash
# MAP-T BR throughput on one machine, in ONE run, next to sixgate SIIT and
# NAT64: sixgate mode = "mapt-br" (RFC 7599) with workers = 1 and = nproc, on
# the veth bed of bench/tun-compare.sh with its measurements (64-byte UDP
# zero-loss pps, delivered under 3x overload, single-stream TCP). The v6 host
# plays one CE (198.18.0.8, PSID 1), so the UDP source ports are pseudorandom in
# its port set 2048-4095 for every row (see tun-compare.sh --help, "MAP-T").
# Then the BR on the XDP data plane (docs/xdp.md), workers = 1 and = nproc.
# The "vs" column is relative to the first SIIT row.
#
# usage: bench/mapt-compare.sh [--quick] [--out FILE] [--no-build]
#   (any tun-compare.sh option; --only picks from sixgate1,sixgateN,nat64-1,
#   nat64-N,mapt-br-1,mapt-br-N,xdp-mapt-br-1,xdp-mapt-br-N)
# Needs root, iproute2, iperf3, python3 (scripts/setup.sh installs them).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 0
fi
export SRC_PORTS=${SRC_PORTS:-2048-4095}
exec "$here/tun-compare.sh" --only sixgate1,sixgateN,nat64-1,nat64-N,mapt-br-1,mapt-br-N,xdp-mapt-br-1,xdp-mapt-br-N "$@"
