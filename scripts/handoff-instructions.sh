#!/usr/bin/env bash
# Instructions per packet of stateful NAT64 on the XDP data plane with two
# workers, for a packet its owner received (`local`) and one handed over by the
# other worker (`handed`), counted by callgrind on the socket-free loop
# crates/sixgate-xdp/examples/handoff_loop.rs (docs/xdp.md, "Handoff").
# Each figure is (total(N2) - total(N1)) / (N2 - N1), so start-up cancels out.
# `copy` is the loop's restore copy, which `local` pays and a real worker does
# not (it translates the received frame in place).
#
# usage: scripts/handoff-instructions.sh [PAYLOAD ...]   (UDP payload bytes; default 18 1400)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
command -v valgrind >/dev/null || { echo "handoff-instructions.sh: valgrind missing (scripts/setup.sh installs it)" >&2; exit 1; }
payloads=("$@")
[ ${#payloads[@]} -gt 0 ] || payloads=(18 1400)
cargo build -q --release -p sixgate-xdp --example handoff_loop
bin=target/release/examples/handoff_loop
n1=6400
n2=70400
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$@" 2>&1 >/dev/null |
        awk '/Collected/ { print $NF }'
}
printf '%-8s %-8s %s\n' payload mode instructions/packet
for p in "${payloads[@]}"; do
    for mode in copy local handed; do
        a=$(count "$mode" "$n1" "$p")
        b=$(count "$mode" "$n2" "$p")
        printf '%-8s %-8s %d\n' "$p" "$mode" $(((b - a) / (n2 - n1)))
    done
done
