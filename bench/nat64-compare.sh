#!/usr/bin/env bash
# Stateful NAT64 on one machine, in ONE run: kernel NAT44 (nft masquerade,
# IPv4 on both sides), TAYGA + NAT44 (TAYGA's dynamic pool, then nft
# masquerade: the classic stateful set-up around a SIIT), and sixgate
# mode = "nat64" with workers = 1 and = nproc, on the veth bed of
# bench/tun-compare.sh, with its measurements: 64-byte UDP zero-loss pps,
# delivered under 3x overload, single-stream TCP (iperf3). The "vs" column is
# relative to kernel NAT44. UDP comes from 64 source addresses x 256 source
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
# 64 source addresses (64 subscribers) x 256 source ports: 16 k flows. Not
# more: the masquerade rows map every flow to the one address of the DUT, all to
# the same destination address and port, and with 64 k flows its port space is
# full (about 1.5 % of the packets were dropped for want of a free port).
export SRC_HOSTS=${SRC_HOSTS:-64}
export SRC_PORTS=${SRC_PORTS:-1024-1279}
exec "$here/tun-compare.sh" --only nat44,tayga44,nat64-1,nat64-N "$@"
