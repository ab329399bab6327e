#!/usr/bin/env bash
# Stateful NAT64 on one machine, in ONE run: kernel NAT44 (nft masquerade,
# IPv4 on both sides), TAYGA + NAT44 (TAYGA's dynamic pool, then nft
# masquerade: the classic stateful set-up around a SIIT), and sixgate
# mode = "nat64" with workers = 1 and = nproc, on the veth bed of
# bench/tun-compare.sh, with its measurements: 64-byte UDP zero-loss pps,
# delivered under 3x overload, single-stream TCP (iperf3). The "vs" column is
# relative to kernel NAT44. UDP comes from 64 source addresses x 1024 source
# ports (SRC_HOSTS, SRC_PORTS override), so sixgate's workers each get
# subscribers; TCP is one stream from one host.
#
# usage: bench/nat64-compare.sh [--quick] [--out FILE] [--no-build]
#   (any tun-compare.sh option; --only picks from nat44,tayga44,nat64-1,nat64-N)
# Needs root, iproute2, nftables, conntrack, tayga, iperf3, python3
# (scripts/setup.sh installs them).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 0
fi
# 64 source addresses (64 subscribers) x 1024 source ports: the same 64 k flows
# as tun-compare.sh's one address x 64 k ports, well inside every state table.
export SRC_HOSTS=${SRC_HOSTS:-64}
export SRC_PORTS=${SRC_PORTS:-1024-2047}
exec "$here/tun-compare.sh" --only nat44,tayga44,nat64-1,nat64-N "$@"
