#!/usr/bin/env bash
# Benchmarks of the translation core:
#   1. criterion: wall-clock ns per packet (translate/<case>, and restore/<case>,
#      the cost of copying the packet back before each iteration: subtract it);
#   2. gungraun: instructions per packet under valgrind (repeatable on a noisy box);
#   3. stateful NAT64: criterion (established flows, new sessions, 1 vs 2 workers)
#      and bytes per session at 1 M sessions (examples/nat64_memory.rs).
# Installs what it needs first (scripts/setup.sh --bench: valgrind, gungraun-runner).
# Reports stay in target/criterion/ and target/gungraun/.
#
# usage: scripts/bench.sh [--quick]    (--quick: shorter criterion runs, for a smoke check)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
criterion_args=()
for arg in "$@"; do
    case "$arg" in
        --quick) criterion_args=(--warm-up-time 0.2 --measurement-time 0.5) ;;
        *)
            echo "usage: $0 [--quick]" >&2
            exit 2
            ;;
    esac
done

scripts/setup.sh --bench
export PATH="$HOME/.cargo/bin:$PATH"

echo "==> criterion (wall clock): cargo bench -p sixgate-core --bench translate"
cargo bench --locked -p sixgate-core --bench translate -- "${criterion_args[@]}"

echo "==> criterion (wall clock): cargo bench -p sixgate-core --bench nat64"
cargo bench --locked -p sixgate-core --bench nat64 -- "${criterion_args[@]}"

echo "==> NAT64 memory per session: cargo run --release -p sixgate-core --example nat64_memory"
cargo run --locked --release -p sixgate-core --example nat64_memory

echo "==> gungraun (instruction counts): cargo bench -p sixgate-core --bench translate_instructions"
cargo bench --locked -p sixgate-core --bench translate_instructions

echo "bench.sh: done; criterion reports in target/criterion/, callgrind outputs in target/gungraun/"
