#!/usr/bin/env bash
# Fuzz smoke test: build the cargo-fuzz targets on stable Rust with no sanitizer
# (`-s none`; sanitizers need nightly) and run each one briefly, starting from the
# committed seed corpus in fuzz/seeds/<target>/. Fails when libFuzzer finds a
# crash: a panic, a failed invariant (see fuzz/src/lib.rs) or an input slower
# than 10 s. Long campaigns: docs/fuzzing.md.
#
# usage: scripts/fuzz-smoke.sh [SECONDS]    (default 30)
#
# The run takes 4 x SECONDS in all (what it took with the four translate
# targets, before sync_receive joined), split evenly across the targets, so CI
# time stays the same as targets are added.
set -euo pipefail

secs=${1:-30}
if [[ ! $secs =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [SECONDS_PER_TARGET]" >&2
    exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
targets=(translate_v6 translate_v4 translate_nat64 translate_mapt sync_receive state_file)
per=$(( secs * 4 / ${#targets[@]} ))
(( per >= 1 )) || per=1

echo "fuzz-smoke: cargo fuzz build -s none (${targets[*]})"
cargo fuzz build -s none

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "${targets[@]}"; do
    # New inputs go to the working corpus (git-ignored); the seeds stay as committed.
    corpus="fuzz/corpus/$t"
    mkdir -p "$corpus"
    echo "fuzz-smoke: $t for ${per} s"
    if ! cargo fuzz run -s none "$t" "$corpus" "fuzz/seeds/$t" -- \
        -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        >"$log" 2>&1; then
        tail -n 80 "$log"
        echo "fuzz-smoke: $t FAILED; the input is in fuzz/artifacts/$t/." >&2
        echo "fuzz-smoke: reproduce: cargo fuzz run -s none $t fuzz/artifacts/$t/<file>" >&2
        exit 1
    fi
    runs=$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1 || true)
    cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -n 1 || true)
    echo "fuzz-smoke: $t ok: ${runs:-done}(s), ${cov:-no coverage line}"
done
echo "fuzz-smoke: ${#targets[@]} targets x ${per} s, no crash"
