#!/usr/bin/env bash
# Instructions per packet for each benchmark case, counted by callgrind: repeatable
# on a noisy 2-core machine where wall-clock time is not. The loop's own cost (the
# copy that restores the packet) is included; `restore` in the criterion bench is
# its wall-clock counterpart.
#
# The NAT64 cases (nat64_udp_6to4, nat64_udp_4to6, nat64_tcp_6to4, nat64_tcp_4to6:
# one established flow, examples/nat64_loop.rs) are counted at N and N/2 packets
# and the difference taken, so the flow's set-up cancels.
#
# usage: scripts/profile.sh [CASE ...]    (default: every case)
#        ANNOTATE=1 scripts/profile.sh udp_6to4   also prints the callgrind_annotate report
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
command -v valgrind >/dev/null || { echo "profile.sh: valgrind missing (scripts/setup.sh installs it)" >&2; exit 1; }
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(udp_6to4 udp_4to6 tcp_6to4 icmp_echo_6to4 icmp_echo_4to6 icmp_error_4to6
    mapt_br_udp_6to4 mapt_br_udp_4to6 nat64_udp_6to4 nat64_udp_4to6 nat64_tcp_6to4 nat64_tcp_4to6)
cargo build -q --release -p sixgate-core --example translate_loop --example nat64_loop
bin=target/release/examples/translate_loop
nat=target/release/examples/nat64_loop
n=200000
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-18s %s\n' case instructions/packet
count() { callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'; }
for c in "${cases[@]}"; do
    if [[ $c == nat64_* ]]; then
        valgrind --tool=callgrind --callgrind-out-file="$out/$c.half" "$nat" "${c#nat64_}" $((n / 2)) >/dev/null 2>&1
        valgrind --tool=callgrind --callgrind-out-file="$out/$c" "$nat" "${c#nat64_}" "$n" >/dev/null 2>&1
        printf '%-18s %d\n' "$c" $(( ($(count "$out/$c") - $(count "$out/$c.half")) / (n - n / 2) ))
    else
        valgrind --tool=callgrind --callgrind-out-file="$out/$c" "$bin" "$c" "$n" >/dev/null 2>&1
        printf '%-18s %d\n' "$c" $(($(count "$out/$c") / n))
    fi
    if [ -n "${ANNOTATE:-}" ]; then callgrind_annotate --inclusive=yes "$out/$c" | head -60; fi
done
