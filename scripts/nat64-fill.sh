#!/usr/bin/env bash
# Instructions per new NAT64 session as the tables fill, counted by callgrind
# (repeatable on a noisy machine): examples/nat64_fill.rs under
# `--dump-before='*batch_mark'`, one profile per batch of 50 000 sessions.
#
# usage: scripts/nat64-fill.sh [N [hosts [pool4/len]]]   (default 1000000 64 198.18.0.0/24)
#        KEEP=DIR scripts/nat64-fill.sh ...   keeps the profiles in DIR (for callgrind_annotate)
#        BIN=PATH scripts/nat64-fill.sh ...   runs that build of the example (another tree's)
#        VG_ARGS=--cache-sim=yes scripts/nat64-fill.sh ...   more callgrind options (simulated cache misses)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
command -v valgrind >/dev/null || { echo "nat64-fill.sh: valgrind missing (scripts/setup.sh installs it)" >&2; exit 1; }
cargo build -q --release -p sixgate-core --example nat64_fill
bin=${BIN:-${CARGO_TARGET_DIR:-target}/release/examples/nat64_fill}
out=${KEEP:-$(mktemp -d)}
mkdir -p "$out"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$out"' EXIT
valgrind --tool=callgrind --dump-instr=no ${VG_ARGS:-} --dump-before='*batch_mark' \
    --callgrind-out-file="$out/fill.out" "$bin" "$@" >"$out/stdout" 2>"$out/stderr"
printf '%-10s %s\n' sessions instructions/session
# fill.out.1 is the set-up (flows generated, tables allocated); .2 on are the
# batches, in the order of the example's table (its first column: sessions so far).
prev=0
k=2
while read -r at _; do
    f=$out/fill.out.$k
    [ -f "$f" ] || break
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$f")
    printf '%-10d %d\n' "$at" $((total / (at - prev)))
    prev=$at
    k=$((k + 1))
done < <(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/' "$out/stdout")
