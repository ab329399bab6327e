#!/usr/bin/env bash
# Side-by-side RFC 8219 throughput of every DUT preset, in ONE run of
# `sixgate bench` on one bed (docs/bench.md):
#
#   self-test (no DUT: the tester's own ceiling), kernel IPv6 forwarding,
#   TAYGA, sixgate SIIT on TUN (1 and 2 workers) and on the AF_XDP data plane
#   (1 and 2 workers, docs/xdp.md), kernel NAT44, TAYGA + NAT44, sixgate NAT64
#   on TUN and on XDP (1 and 2 workers each; RFC 9693 phase 1 then phase 2),
#   sixgate MAP-T BR (TUN: 1 and 2 workers, XDP: 2 workers; the left tester
#   plays one CE: its MAP address, source ports in its port set 2048-4095), and
#   the MAP-T CE + BR chain on a dual bed (IPv4 -> sixgate CE -> IPv6 ->
#   sixgate BR -> IPv4; the CE's NAPT44 is stateful: phase 1 opens
#   MAPT_CONNECTIONS first).
#
# Each row is a binary search for the highest zero-loss rate (RFC 8219 §7.1),
# 84-byte IPv6 / 64-byte IPv4 frames, bidirectional, RFC 4814 pseudorandom
# ports; a trial whose sender ended more than BEHIND % of its frames behind
# schedule is invalid (siitperf: 0.001). The table gives the median rate per
# direction (and the 1st/99th percentiles with REPS > 1), the ratio to kernel
# forwarding, and the flags: "tester-limited" (near the self-test ceiling, or
# invalid trials, or the tester's receive ring dropped).
#
# usage: bench/bench-compare.sh [--quick] [--out FILE] [--only LIST] [--no-build]
#   --quick      2 s trials, <= 8 steps
#   --out FILE   also write the markdown table to FILE
#   --only LIST  comma-separated subset of:
#                self,kernel,tayga,siit1,siit2,siit-fp,xdp1,xdp2,nat44,tayga44,
#                nat64-1,nat64-2,nat64-fp,xdp-nat64-1,xdp-nat64-2,mapt-br-1,
#                mapt-br-2,xdp-mapt-br-2,mapt-ce-br
#                (siit-fp and nat64-fp, the TC fast path in front of one TUN
#                worker, are not in the default set)
#   --no-build   use target/release/sixgate as it is (SIXGATE= overrides)
# Environment: TRIAL_S (10), STEPS (12), REPS (1), BEHIND (0.001 %),
# LOSS_GOAL (0 %), DUT_CPU (unset: the DUT is not pinned; set, TAYGA and the
# 1-worker rows are pinned to it), CONNECTIONS (10000, stateful rows), MAX_RATE (default: 1.1 × the
# self-test ceiling), HOSTS (16: RFC 4814-style pseudorandom source addresses;
# one sixgate NAT64 subscriber per address, so both workers get some),
# BACKGROUND (0: the % of the left tester's frames that are native IPv6
# background traffic, RFC 8219 §5.2), MAPT_CONNECTIONS (1000, mapt-ce-br: the
# CE has 2048 ports).
# Needs root, iproute2, tayga, nftables, conntrack (scripts/setup.sh).
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

TRIAL_S_IN=${TRIAL_S:-10}
STEPS_IN=${STEPS:-12}
TRIAL_S=${TRIAL_S:-10}
STEPS=${STEPS:-12}
REPS=${REPS:-1}
BEHIND=${BEHIND:-0.001}
LOSS_GOAL=${LOSS_GOAL:-0}
CONNECTIONS=${CONNECTIONS:-10000}
HOSTS=${HOSTS:-16}
DUT_CPU=${DUT_CPU:-}
BACKGROUND=${BACKGROUND:-0}
out=""
MAPT_CONNECTIONS=${MAPT_CONNECTIONS:-1000}
WORKERS=${WORKERS:-}
TESTER_CPUS=${TESTER_CPUS:-}
only="self,kernel,tayga,siit1,siit2,xdp1,xdp2,nat44,tayga44,nat64-1,nat64-2,xdp-nat64-1,xdp-nat64-2,mapt-br-1,mapt-br-2,xdp-mapt-br-2,mapt-ce-br"
build=1
cmdline="TRIAL_S=$TRIAL_S_IN STEPS=$STEPS_IN BEHIND=${BEHIND:-0.001} LOSS_GOAL=${LOSS_GOAL:-0} BACKGROUND=$BACKGROUND${WORKERS:+ WORKERS=$WORKERS}${TESTER_CPUS:+ TESTER_CPUS=$TESTER_CPUS} bench/bench-compare.sh $*"

while (($# > 0)); do
    case "$1" in
        --quick)
            TRIAL_S=2
            STEPS=8
            ;;
        --out)
            out=${2:?--out needs a file}
            shift
            ;;
        --only)
            only=${2:?--only needs a list}
            shift
            ;;
        --no-build) build=0 ;;
        -h | --help)
            awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
            exit 0
            ;;
        *)
            echo "bench-compare: unknown argument: $1 (see --help)" >&2
            exit 2
            ;;
    esac
    shift
done

log() { printf 'bench-compare: %s\n' "$*" >&2; }
[[ $(id -u) -eq 0 ]] || {
    log "needs root"
    exit 1
}
export PATH="$HOME/.cargo/bin:$PATH"
SIXGATE=${SIXGATE:-$root/target/release/sixgate}
if ((build)); then
    log "building sixgate (release)"
    (cd "$root" && cargo build --release --quiet -p sixgate)
fi
name="cmp$$"
tmp=$(mktemp -d /tmp/bench-compare.XXXXXX)
cleanup() {
    "$SIXGATE" bench bed down --name "$name" >/dev/null 2>&1 || true
    "$SIXGATE" bench bed down --name "${name}d" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'log interrupted; exit 130' INT TERM
started=$SECONDS

common=(--duration "$TRIAL_S" --steps "$STEPS" --repetitions "$REPS" --hosts "$HOSTS"
    --behind-limit "$BEHIND" --loss-goal "$LOSS_GOAL" --background "$BACKGROUND" --quiet)
if [[ -n $TESTER_CPUS ]]; then common+=(--tx-cpus "$TESTER_CPUS" --rx-cpus "$TESTER_CPUS"); fi
IFS=, read -r -a worker_counts <<<"$WORKERS"
for n in "${worker_counts[@]}"; do only+=",siit-w$n,nat64-w$n"; done
IFS=, read -r -a selected <<<"$only"
rows=()
want() { [[ ",$only," == *",$1,"* ]]; }

if want self; then
    log "self-test (no DUT)"
    "$SIXGATE" bench self-test --name "$name" "${common[@]}" --max-rate "${MAX_RATE:-2000000}" \
        --json "$tmp/self.json" >"$tmp/self.txt"
    rows+=("self|tester self-test (no DUT, one veth pair)")
fi
max=()
if [[ -n ${MAX_RATE:-} ]]; then max=(--max-rate "$MAX_RATE"); fi
"$SIXGATE" bench bed up --name "$name" >/dev/null

row() {
    local key=$1 label=$2
    shift 2
    want "$key" || return 0
    log "$label"
    if "$SIXGATE" bench throughput --name "$name" "${common[@]}" "${max[@]}" "$@" \
        --json "$tmp/$key.json" --csv "$tmp/$key.csv" >"$tmp/$key.txt" 2>"$tmp/$key.err"; then
        rows+=("$key|$label")
    else
        log "  failed: $(tail -n 2 "$tmp/$key.err")"
        rows+=("$key|$label (failed)")
    fi
}
cfg=$root/bench/configs
pin=()
if [[ -n $DUT_CPU ]]; then pin=(--dut-cpu "$DUT_CPU"); fi
row kernel "kernel IPv6 forwarding (kernel-v6)" --dut kernel-v6
row tayga "TAYGA $(dpkg-query -W -f='${Version}' tayga 2>/dev/null || echo '?') (tayga)" --dut tayga "${pin[@]}"
row siit1 "sixgate SIIT, TUN, workers = 1" --dut sixgate --config "$cfg/siit.toml" "${pin[@]}"
row siit2 "sixgate SIIT, TUN, workers = 2" --dut sixgate --config "$cfg/siit-2w.toml"
row siit-fp "sixgate SIIT, TC fast path + TUN, workers = 1" --dut sixgate --config "$cfg/siit-fastpath.toml" "${pin[@]}"
# The XDP rows: the bed's veths have 2 queues; the preset puts as many in use
# as the configuration has workers (docs/bench.md).
# WORKERS: the 2-worker TUN configurations with `workers = N`.
scaled() {
    sed "s/^workers = 2$/workers = $2/" "$cfg/$1" >"$tmp/$(basename "$1" .toml)-$2.toml"
    echo "$tmp/$(basename "$1" .toml)-$2.toml"
}
for n in "${worker_counts[@]}"; do
    row "siit-w$n" "sixgate SIIT, TUN, workers = $n" --dut sixgate --config "$(scaled siit-2w.toml "$n")"
done
row xdp1 "sixgate SIIT, XDP, workers = 1" --dut sixgate --config "$cfg/siit-xdp.toml" "${pin[@]}"
row xdp2 "sixgate SIIT, XDP, workers = 2" --dut sixgate --config "$cfg/siit-xdp-2w.toml"
row nat44 "kernel NAT44, nft masquerade (nat44)" --dut nat44 --connections "$CONNECTIONS"
row tayga44 "TAYGA + NAT44 (tayga-nat44)" --dut tayga-nat44 "${pin[@]}" --connections "$CONNECTIONS"
row nat64-1 "sixgate NAT64, TUN, workers = 1" --dut sixgate --config "$cfg/nat64.toml" "${pin[@]}" --connections "$CONNECTIONS"
row nat64-2 "sixgate NAT64, TUN, workers = 2" --dut sixgate --config "$cfg/nat64-2w.toml" --connections "$CONNECTIONS"
row nat64-fp "sixgate NAT64, TC fast path + TUN, workers = 1" --dut sixgate --config "$cfg/nat64-fastpath.toml" "${pin[@]}" --connections "$CONNECTIONS"
for n in "${worker_counts[@]}"; do
    row "nat64-w$n" "sixgate NAT64, TUN, workers = $n" --dut sixgate --config "$(scaled nat64-2w.toml "$n")" --connections "$CONNECTIONS"
done
row xdp-nat64-1 "sixgate NAT64, XDP, workers = 1" --dut sixgate --config "$cfg/nat64-xdp.toml" "${pin[@]}" --connections "$CONNECTIONS"
row xdp-nat64-2 "sixgate NAT64, XDP, workers = 2" --dut sixgate --config "$cfg/nat64-xdp-2w.toml" --connections "$CONNECTIONS"
row mapt-br-1 "sixgate MAP-T BR, TUN, workers = 1" --dut sixgate --config "$cfg/mapt-br.toml" "${pin[@]}"
row mapt-br-2 "sixgate MAP-T BR, TUN, workers = 2" --dut sixgate --config "$cfg/mapt-br-2w.toml"
row xdp-mapt-br-2 "sixgate MAP-T BR, XDP, workers = 2" --dut sixgate --config "$cfg/mapt-br-xdp-2w.toml"
if want mapt-ce-br; then
    # RFC 8219 §4.2: the dual bed, a bed of its own.
    "$SIXGATE" bench bed up --dual --name "${name}d" >/dev/null
    name=${name}d row mapt-ce-br "sixgate MAP-T CE + BR (dual DUT), TUN, workers = 1 each" \
        --dut sixgate --config "$cfg/mapt-br.toml" --connections "$MAPT_CONNECTIONS"
    "$SIXGATE" bench bed down --name "${name}d" >/dev/null
fi

elapsed=$((SECONDS - started))
python3 - "$tmp" "$cmdline" "$elapsed" "${rows[@]}" >"$tmp/table.md" <<'EOF'
import json, os, sys
tmp, cmdline, elapsed, rows = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def k(v):
    return f"{v / 1000:.1f} k"
res, kernel, machine = [], None, None
for r in rows:
    key, label = r.split("|", 1)
    path = os.path.join(tmp, key + ".json")
    if not os.path.exists(path):
        res.append((label, None, None, "failed", 0, 0))
        continue
    j = json.load(open(path))
    machine = machine or j["machine"]
    t = j["throughput"][0] if j["throughput"] else None
    fps = t["fps"] if t else None
    flags = []
    if t and t["tester_limited"]:
        flags.append("tester-limited")
    if t and any(s["max_rate_passed"] for s in t["searches"]):
        flags.append("max rate passed")
    invalid = sum(1 for x in j["trials"] if not x["valid"])
    if key == "kernel" and fps:
        kernel = fps["median"]
    res.append((label, fps, t, ", ".join(flags), invalid, len(j["trials"])))
print("| system | throughput, frames/s per direction (median) | 1st / 99th pct | vs kernel forwarding | trials (invalid) | flags |")
print("|---|---:|---:|---:|---:|---|")
for label, fps, t, flags, invalid, n in res:
    if fps is None:
        print(f"| {label} | - | - | - | - | {flags or 'no result'} |")
        continue
    vs = f"{fps['median'] / kernel:.2f}" if kernel else "-"
    print(f"| {label} | {k(fps['median'])} | {k(fps['p1'])} / {k(fps['p99'])} | {vs} | {n} ({invalid}) | {flags} |")
if machine:
    print()
    print(f"{machine['cpus']} CPUs ({machine['model']}), kernel {machine['kernel']}, load average at the start of the first row {machine['load_average']}.")
print(f"Command: `{cmdline}` ({elapsed} s).")
EOF
cat "$tmp/table.md"
for f in "$tmp"/*.txt; do
    log "--- $(basename "$f" .txt)"
    sed 's/^/  /' "$f" >&2
done
if [[ -n $out ]]; then
    cp "$tmp/table.md" "$out"
    mkdir -p "$out.d" && cp "$tmp"/*.json "$tmp"/*.csv "$out.d/" 2>/dev/null || true
    log "table written to $out (JSON and CSV per row in $out.d/)"
fi
