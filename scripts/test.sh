#!/usr/bin/env bash
# THE test command (CI runs it through .ci/run): set up the machine, then
#   cargo fmt --check, cargo clippy -D warnings, cargo test (whole workspace),
#   and a short fuzz smoke run (scripts/fuzz-smoke.sh).
# Benchmarks are compiled by clippy --all-targets but not run (scripts/bench.sh).
#
# usage: scripts/test.sh    (FUZZ_SECONDS=N: the fuzz run takes 4 x N seconds in all, default 30)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
start=$SECONDS
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
step() { printf '\n==> %s  [%d s]\n' "$*" $((SECONDS - start)); }

step "scripts/setup.sh"
scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

step "cargo fmt --all --check"
cargo fmt --all --check
(cd fuzz && cargo fmt --check)

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
# fuzz/ is a separate workspace; its Cargo.lock is not --locked so that a new
# dependency of sixgate-core does not fail CI until someone refreshes it.
(cd fuzz && cargo clippy --all-targets -- -D warnings)

step "cargo test --workspace"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked 2>&1 | tee "$log"
# The fuzz harness's own unit tests (its workspace is separate).
(cd fuzz && cargo test --lib) 2>&1 | tee -a "$log"
read -r passed failed < <(awk '/^test result:/ { p += $4; f += $6 } END { print p + 0, f + 0 }' "$log")

step "scripts/fuzz-smoke.sh ${FUZZ_SECONDS:-30}"
scripts/fuzz-smoke.sh "${FUZZ_SECONDS:-30}"

echo
echo "test.sh: fmt, clippy, ${passed} tests and the fuzz smoke run passed in $((SECONDS - start)) s"
echo "sixgate: ${passed} passed, ${failed} failed"
