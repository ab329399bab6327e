#!/usr/bin/env bash
# NAT64 state sync at the gateway (docs/ha.md, docs/perf-log/2026-11-26.md "State sync
# between nodes"): what sync costs a node that forwards, and what a node's
# kill -9 loses, on a namespace bed of two sixgate nat64 nodes (release build)
# with a dedicated sync veth and a tester host on each side:
#
#             fd00:1::/64 ── gw1 ── 10.1.0.0/24
#   client  <                │ sync 10.5.0.0/24   > server (198.51.100.10 on lo)
#             fd00:2::/64 ── gw2 ── 10.2.0.0/24
#
# pool6 2001:db8:64::/96, pool4 198.18.0.0/24 routed by the server to gw1;
# gw1 owns 198.18.0.0/25, gw2 198.18.0.128/25. All test traffic crosses gw1.
# Part 1, sync off and on, alternating on the same bed in one run (ROUNDS
# rounds of off then on; the "on/off" row divides the means):
#  - off: gw1 alone, its config without [sync], pool4 198.18.0.0/25 (the
#    addresses it owns when on); gw2 not running;
#  - on: gw1 and gw2 with [sync] (HMAC key) over the sync veth, started and
#    each holding the other's snapshot before the measurements. gw2 imports
#    every record gw1 exports: on this one machine it takes CPU from the same
#    cores (on real hardware it is another box), so "on" is pessimistic.
# Each measures, sender pinned to SENDER_CPU (0), gateways unpinned:
#  - long flows: the zero-loss rate of 64-byte UDP (18-byte payload, RFC 8219
#    sizes) over 4096 flows (64 source addresses x 64 source ports, loadgen
#    --src-hosts, pseudorandom ports) that exist after the first packets: an
#    unpaced probe, then up to STEPS trials of TRIAL_S s (steps of 10 %, 20 %
#    ... until bracketed, then bisection to 1 %); a trial passes at <= 0.1 %
#    loss. Then single-stream TCP with iperf3 for TCP_S s, client -> server.
#  - new-session-heavy: the same search with 4096 source addresses x source
#    ports pseudorandom in 1024-65535 (268 M tuples: nearly every packet creates
#    a session), each trial on fresh nodes (restarted, empty tables, so that
#    every trial starts from the same state); the
#    sessions created per second (gw1's sixgate_nat64_sessions before and
#    after the best passing trial) and, on, how many gw2 holds against gw1.
#  - both: each node's CPU time (all threads, /proc/PID/task/*/schedstat) per
#    packet at a fixed rate for FIXED_S s: FIXED_LONG pps of the long flows,
#    FIXED_NEW new sessions per second. On a shared machine this is the figure
#    that carries over; the zero-loss rates follow the scheduler.
# Part 2, sessions lost at kill -9 (sync on, fresh nodes): a python client
# creates KILL_SESSIONS UDP sessions through gw1 at KILL_RATE per second (from
# 20 source addresses, one source port each, through raw sockets), kills gw1
# with SIGKILL right after the last one, moves its route to pool6 to gw2 (the
# routing daemon's part) and sends each session's next datagram through gw2
# (paced, KILL_RATE2 per second). The server records each session's IPv4 source on both datagrams:
# a session gw2 did not know arrives from a new mapping of gw2's own shard (or
# not at all). Reported: the share lost among sessions older than 100 ms at
# the kill (the goal: <= 0.01 %), and among the younger ones.
#
# usage: bench/ha-gateway.sh [--quick] [--no-build] [--only sync|kill] [--out FILE]
#   --quick      1 s trials, <= 4 steps, 3 s TCP, 1 round, 5000 sessions
#   --only WHAT  part 1 (sync) or part 2 (kill) alone
#   --out FILE   also write the tables (with the machine and command) to FILE
# Environment: ROUNDS (2), TRIAL_S (2), STEPS (6), TCP_S (5), FIXED_S (4),
# FIXED_LONG (50000), FIXED_NEW (30000), WORKERS (1, per node), FASTPATH (auto:
# [daemon] fastpath of both nodes; "off" keeps every packet on TUN), SYNC_MTU
# (1500: the sync veth's MTU and [sync] mtu; 9000 for a jumbo-frame link),
# GW1_CPUS, GW2_CPUS (unset: unpinned; a taskset list for each node's whole
# process, e.g. GW1_CPUS=1 GW2_CPUS=0: gw2's import beside the sender, not on
# gw1's CPU, as on two boxes), KILL_SESSIONS
# (20000), KILL_RATE (2000), KILL_RATE2 (5000), SENDER_CPU (0), SIXGATE=,
# LOADGEN= (binaries, default target/release), KEEP=1 (keep the logs in /tmp),
# SYSCALLS=1 (strace -c each node's sync thread during the fixed
# new-session trial with sync on; it slows that thread, so not with figures).
# About 4 minutes on 2 CPUs. Needs root, iproute2, iperf3, python3. Cleans up
# its namespaces on exit, Ctrl-C or error.
set -euo pipefail
export LC_ALL=C

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=${ROUNDS:-2}
TRIAL_S=${TRIAL_S:-2}
STEPS=${STEPS:-6}
TCP_S=${TCP_S:-5}
FIXED_LONG=${FIXED_LONG:-50000}
FIXED_NEW=${FIXED_NEW:-30000}
FIXED_S=${FIXED_S:-4}
WORKERS=${WORKERS:-1}
FASTPATH=${FASTPATH:-auto}
SYNC_MTU=${SYNC_MTU:-1500}
KILL_SESSIONS=${KILL_SESSIONS:-20000}
KILL_RATE=${KILL_RATE:-2000}
KILL_RATE2=${KILL_RATE2:-5000}
SENDER_CPU=${SENDER_CPU:-0}
LOSS_MAX=0.1
PAYLOAD=18
UDP_PORT=5001
TCP_PORT=5201
KILL_PORT=9000
build=1
only="sync,kill"
out=""
cmdline="bench/ha-gateway.sh $*"

while (($# > 0)); do
    case "$1" in
        --quick)
            TRIAL_S=1
            STEPS=4
            TCP_S=3
            ROUNDS=1
            KILL_SESSIONS=5000
            ;;
        --no-build) build=0 ;;
        --only)
            only=${2:?--only needs sync or kill}
            shift
            ;;
        --out)
            out=${2:?--out needs a file}
            shift
            ;;
        -h | --help)
            awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
            exit 0
            ;;
        *)
            echo "ha-gateway: unknown argument: $1 (see --help)" >&2
            exit 2
            ;;
    esac
    shift
done

log() { printf 'ha-gateway: %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces)"
for tool in ip taskset python3 iperf3; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run scripts/setup.sh)"
done

# --- cleanup: every process we started lives in one of our namespaces -------
id=$$
NSC="hgb${id}-client"
NS1="hgb${id}-gw1"
NS2="hgb${id}-gw2"
NSS="hgb${id}-server"
ALL_NS=("$NSC" "$NS1" "$NS2" "$NSS")
tmp=$(mktemp -d "/tmp/ha-gateway.XXXXXX")
started=$SECONDS

ns_exists() { [[ -e /run/netns/$1 ]]; }

kill_ns_procs() {
    local ns=$1 sig=$2 pids
    ns_exists "$ns" || return 0
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [[ -n $pids ]]; then
        # shellcheck disable=SC2086 # one pid per word
        kill "-$sig" $pids 2>/dev/null || true
    fi
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    local ns i busy
    for ns in "${ALL_NS[@]}"; do kill_ns_procs "$ns" TERM; done
    for i in $(seq 20); do
        busy=0
        for ns in "${ALL_NS[@]}"; do
            if ns_exists "$ns" && [[ -n $(ip netns pids "$ns" 2>/dev/null) ]]; then busy=1; fi
        done
        ((busy)) || break
        sleep 0.2
    done
    for ns in "${ALL_NS[@]}"; do kill_ns_procs "$ns" KILL; done
    for ns in "${ALL_NS[@]}"; do
        if ns_exists "$ns"; then ip netns del "$ns"; fi
    done
    if [[ -n ${KEEP:-} ]]; then log "kept $tmp"; else rm -rf "$tmp"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

# --- binaries ------------------------------------------------------------------
export PATH="$HOME/.cargo/bin:$PATH"
LOADGEN=${LOADGEN:-$root/target/release/sixgate-loadgen}
SIXGATE=${SIXGATE:-$root/target/release/sixgate}
if ((build)); then
    log "building sixgate-loadgen and sixgate (release)"
    (cd "$root" && cargo build --release --quiet -p sixgate-loadgen -p sixgate) ||
        die "cargo build failed"
fi
[[ -x $LOADGEN ]] || die "no loadgen at $LOADGEN (build it or set LOADGEN=)"
[[ -x $SIXGATE ]] || die "no sixgate at $SIXGATE (build it or set SIXGATE=)"

# --- the bed -------------------------------------------------------------------
SERVER4=198.51.100.10
SERVER6=2001:db8:64::c633:640a # SERVER4 in pool6
POOL6=2001:db8:64::/96
POOL4=198.18.0.0/24
SHARD1=198.18.0.0/25
SHARD2=198.18.0.128/25
KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
MAC_C1=02:00:5e:10:01:02  # client, towards gw1
MAC_L1=02:00:5e:10:01:01  # gw1 lan
MAC_W1=02:00:5e:10:04:01  # gw1 wan
MAC_S1=02:00:5e:10:04:02  # server, towards gw1

nsx() {
    local ns=$1
    shift
    ip netns exec "$ns" "$@"
}

build_bed() {
    local ns i
    for ns in "${ALL_NS[@]}"; do
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        # Replies may come back on another link than requests left by.
        nsx "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 \
            net.ipv6.conf.all.accept_ra=0 net.ipv6.conf.default.accept_ra=0 \
            net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
    done
    ip link add c1 netns "$NSC" address "$MAC_C1" type veth peer name lan netns "$NS1" address "$MAC_L1"
    ip link add c2 netns "$NSC" type veth peer name lan netns "$NS2"
    ip link add wan netns "$NS1" address "$MAC_W1" type veth peer name s1 netns "$NSS" address "$MAC_S1"
    ip link add wan netns "$NS2" type veth peer name s2 netns "$NSS"
    ip link add sync netns "$NS1" mtu "$SYNC_MTU" type veth peer name sync netns "$NS2" mtu "$SYNC_MTU"
    for i in 1 2; do
        ns=$NS1
        ((i == 2)) && ns=$NS2
        nsx "$ns" sysctl -qw net.ipv6.conf.all.forwarding=1 net.ipv4.ip_forward=1
        ip -n "$ns" addr add "fd00:$i::1/64" dev lan nodad
        ip -n "$ns" addr add "10.$i.0.1/24" dev wan
        ip -n "$ns" addr add "10.5.0.$i/24" dev sync
        ip -n "$ns" link set lan up
        ip -n "$ns" link set wan up
        ip -n "$ns" link set sync up
        ip -n "$ns" route add "$SERVER4/32" via "10.$i.0.2"
        ip -n "$ns" -6 route add "fd00:$((3 - i))::/64" via "fd00:$i::2"
    done
    ip -n "$NSC" addr add fd00:1::2/64 dev c1 nodad
    ip -n "$NSC" addr add fd00:2::2/64 dev c2 nodad
    ip -n "$NSC" link set c1 up
    ip -n "$NSC" link set c2 up
    ip -n "$NSC" -6 route add "$POOL6" via fd00:1::1 dev c1
    ip -n "$NSS" addr add 10.1.0.2/24 dev s1
    ip -n "$NSS" addr add 10.2.0.2/24 dev s2
    ip -n "$NSS" addr add "$SERVER4/32" dev lo
    ip -n "$NSS" link set s1 up
    ip -n "$NSS" link set s2 up
    ip -n "$NSS" route add "$POOL4" via 10.1.0.1 dev s1
    # Static neighbours on the measured path: no ND/ARP during the trials.
    ip -n "$NSC" neigh replace fd00:1::1 lladdr "$MAC_L1" dev c1 nud permanent
    ip -n "$NS1" neigh replace 10.1.0.2 lladdr "$MAC_S1" dev wan nud permanent
    ip -n "$NSS" neigh replace 10.1.0.1 lladdr "$MAC_W1" dev s1 nud permanent
    # The kill test's client addresses (bound sockets, 1000 sessions each).
    for i in $(seq 0 19); do
        ip -n "$NSC" addr add "fd00:1::$(printf '%x' $((0x100 + i)))/128" dev c1 nodad
    done
}

# A node's config: $1 node (1 or 2), $2 sync (1: with [sync]).
gateway_toml() {
    local node=$1 sync=$2 peer=$((3 - $1)) pool4=$SHARD1
    ((sync)) && pool4=$POOL4
    cat <<EOF
[translator]
mode = "nat64"
pool6 = "$POOL6"

[nat64]
pool4 = ["$pool4"]
# One subscriber per source address: the new-session traffic's 4096 hosts
# stay far from the per-subscriber limits.
subscriber_prefix_len = 128
max_sessions = 4194304

[daemon]
workers = $WORKERS
socket = "$tmp/gw$node.sock"
fastpath = "$FASTPATH"

[tun]
name = "sixgate0"
offload = true
manage_routes = true

[metrics]
listen = "127.0.0.1:9464"
EOF
    if ((sync)); then
        cat <<EOF

[sync]
node_id = $node
bind = "10.5.0.$node:7464"
mtu = $SYNC_MTU
peers = [ { node_id = $peer, address = "10.5.0.$peer:7464" } ]
key = "$KEY"
shards = [
    { node_id = 1, pool4 = ["$SHARD1"] },
    { node_id = 2, pool4 = ["$SHARD2"] },
]
EOF
    fi
}

GW1_PID=""
GW2_PID=""
FRESH=""

# fresh_nodes SYNC: gw1 (and with SYNC=1 gw2) restarted, tables empty.
fresh_nodes() {
    stop_node "$GW1_PID"
    stop_node "$GW2_PID"
    GW2_PID=""
    start_node 1 "$1"
    if (($1)); then
        start_node 2 1
        wait_synced
    fi
}

# start_node NODE SYNC: sixgate run in gwNODE's namespace; sets GWn_PID.
start_node() {
    local node=$1 sync=$2 ns=$NS1 i
    ((node == 2)) && ns=$NS2
    gateway_toml "$node" "$sync" >"$tmp/gw$node.toml"
    local cpus=${GW1_CPUS:-}
    ((node == 2)) && cpus=${GW2_CPUS:-}
    local pin=()
    [[ -n $cpus ]] && pin=(taskset -c "$cpus")
    ip netns exec "$ns" "${pin[@]}" "$SIXGATE" run --config "$tmp/gw$node.toml" >"$tmp/gw$node.log" 2>&1 &
    if ((node == 1)); then GW1_PID=$!; else GW2_PID=$!; fi
    for i in $(seq 100); do
        ip -n "$ns" -6 route show "$POOL6" 2>/dev/null | grep -q sixgate0 && return 0
        sleep 0.1
    done
    die "gw$node did not start: $(tail -n 5 "$tmp/gw$node.log")"
}

stop_node() {
    local pid=$1 i
    [[ -n $pid ]] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# Both nodes up, each holding the other's snapshot.
wait_synced() {
    local i
    for i in $(seq 150); do
        grep -q "snapshot from peer 2 received" "$tmp/gw1.log" &&
            grep -q "snapshot from peer 1 received" "$tmp/gw2.log" && return 0
        sleep 0.1
    done
    die "the nodes did not exchange snapshots: gw1: $(tail -n 3 "$tmp/gw1.log") gw2: $(tail -n 3 "$tmp/gw2.log")"
}

# metric NS NAME [LABEL-SUBSTRING]: the sum of a metric's series.
metric() {
    nsx "$1" python3 - "$2" "${3:-}" <<'EOF'
import sys, urllib.request
name, label = sys.argv[1], sys.argv[2]
text = urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=5).read().decode()
total = 0.0
for line in text.splitlines():
    if line.startswith(name + "{") or line.startswith(name + " "):
        if label in line:
            total += float(line.split()[-1])
print(int(total))
EOF
}

# drops NS: gw's non-zero drop reasons, "reason=count ...".
drops() {
    nsx "$1" python3 - <<'EOF2'
import re, urllib.request
text = urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=5).read().decode()
out = []
for line in text.splitlines():
    m = re.match(r'sixgate_dropped_packets_total\{reason="([^"]+)"\} (\S+)', line)
    if m and float(m.group(2)) > 0:
        out.append("%s=%d" % (m.group(1), float(m.group(2))))
print(" ".join(out) or "none")
EOF2
}

# --- measuring -------------------------------------------------------------------
DST="[$SERVER6]:$UDP_PORT"
LONG_ARGS=(--via c1 --dst-mac "$MAC_L1" --src-hosts 64 --src-port-range 1024-1087)
NEW_ARGS=(--via c1 --dst-mac "$MAC_L1" --src-hosts 4096 --src-port-range 1024-65535)
SEND_ARGS=()

# cpu_ns PID: CPU time of all the process's threads so far, ns (user and
# system: a TUN worker's reads and writes are system time); 0 without PID.
cpu_ns() {
    if [[ -z $1 ]]; then
        echo 0
        return
    fi
    cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ t += $1 } END { printf "%.0f\n", t }'
}

# threads_ns PID: "name=ns" per thread (by name, summed), for a breakdown.
threads_ns() {
    [[ -n $1 ]] || return 0
    local t
    for t in /proc/"$1"/task/*; do
        printf '%s %s\n' "$(tr ' ' _ <"$t/comm")" "$(cut -d' ' -f1 "$t/schedstat")"
    done 2>/dev/null | awk '{ n[$1] += $2 } END { for (k in n) printf "%s=%.0f ", k, n[k] }'
}

# The per-thread difference of two threads_ns, per packet: "name ns/packet ...".
threads_diff() {
    python3 -c '
import sys
a = dict(kv.split("=") for kv in sys.argv[1].split())
b = dict(kv.split("=") for kv in sys.argv[2].split())
n = int(sys.argv[3]) or 1
print(" ".join("%s %d" % (k, (int(v) - int(a.get(k, 0))) / n) for k, v in sorted(b.items()) if int(v) - int(a.get(k, 0)) > 0))' "$1" "$2" "$3"
}

# trial RATE SECS: sets T_OFFERED T_DELIVERED T_LOSS T_SESSIONS (sessions
# created on gw1 per second during the trial).
trial() {
    local rate=$1 secs=$2 rpid s0 s1
    if [[ -n $FRESH ]]; then fresh_nodes "$FRESH"; fi
    rm -f "$tmp/ready" "$tmp/recv.json" "$tmp/send.json"
    ip netns exec "$NSS" "$LOADGEN" recv --bind "0.0.0.0:$UDP_PORT" \
        --duration "$(awk -v s="$secs" 'BEGIN { print s + 5 }')" --idle-timeout 0.3 \
        --json --ready-file "$tmp/ready" >"$tmp/recv.json" &
    rpid=$!
    for _ in $(seq 100); do
        [[ -s $tmp/ready ]] && break
        sleep 0.02
    done
    [[ -s $tmp/ready ]] || die "receiver did not start"
    s0=$(metric "$NS1" sixgate_nat64_sessions)
    local a1 a2 b1 b2
    a1=$(cpu_ns "$GW1_PID")
    a2=$(cpu_ns "$GW2_PID")
    local t1 t2
    t1=$(threads_ns "$GW1_PID")
    t2=$(threads_ns "$GW2_PID")
    local spids=()
    if [[ -n ${STRACE:-} ]]; then
        local p t
        for p in "$GW1_PID" "$GW2_PID"; do
            for t in /proc/"$p"/task/*; do
                if [[ $(cat "$t/comm") == sixgate-sync ]]; then
                    strace -c -q -p "${t##*/}" -o "$tmp/strace.$p" &
                    spids+=($!)
                fi
            done
        done
        sleep 0.2
    fi
    nsx "$NSC" taskset -c "$SENDER_CPU" "$LOADGEN" send --dst "$DST" --rate "$rate" \
        --duration "$secs" --size "$PAYLOAD" "${SEND_ARGS[@]}" --json >"$tmp/send.json" ||
        die "sender failed"
    wait "$rpid" || die "receiver failed"
    if ((${#spids[@]})); then
        kill -INT "${spids[@]}"
        wait "${spids[@]}" || true
        log "    system calls of gw1's sync thread (strace -c):"
        sed 's/^/      /' "$tmp/strace.$GW1_PID" >&2 || true
        log "    system calls of gw2's sync thread (strace -c):"
        sed 's/^/      /' "$tmp/strace.$GW2_PID" >&2 || true
    fi
    b1=$(cpu_ns "$GW1_PID")
    b2=$(cpu_ns "$GW2_PID")
    T_THREADS1=$(threads_diff "$t1" "$(threads_ns "$GW1_PID")" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["packets"])' "$tmp/send.json")")
    T_THREADS2=$(threads_diff "$t2" "$(threads_ns "$GW2_PID")" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["packets"])' "$tmp/send.json")")
    s1=$(metric "$NS1" sixgate_nat64_sessions)
    read -r T_OFFERED T_DELIVERED T_LOSS T_SESSIONS T_CPU1 T_CPU2 < <(
        python3 - "$tmp" "$s0" "$s1" "$((b1 - a1))" "$((b2 - a2))" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1] + "/send.json"))
r = json.load(open(sys.argv[1] + "/recv.json"))
sent, recv, el = s["packets"], r["packets"], s["elapsed_s"]
loss = 100.0 * (sent - recv) / sent if sent else 100.0
print(round(s["offered_pps"]), round(recv / el) if el > 0 else 0, f"{loss:.4f}",
      round((int(sys.argv[3]) - int(sys.argv[2])) / el) if el > 0 else 0,
      round(int(sys.argv[4]) / sent) if sent else 0, round(int(sys.argv[5]) / sent) if sent else 0)
EOF
    )
}

loss_ok() { awk -v l="$T_LOSS" -v m="$LOSS_MAX" 'BEGIN { exit !(l <= m) }'; }

tlog() {
    log "$(printf '  %-8s target %8s  offered %8d  delivered %8d  loss %8s %%  sessions/s %8d  %s' \
        "$1" "$2" "$T_OFFERED" "$T_DELIVERED" "$T_LOSS" "$T_SESSIONS" "$3")"
}

# Zero-loss search (tun-compare.sh's, shorter): an unpaced probe, then from 95 %
# of what it delivered, up while trials pass or down while they fail by 10 %,
# 20 %, 40 %..., then bisection until within 1 %. Sets R_ZERO (the highest rate
# offered with <= LOSS_MAX loss) and R_SESS (that trial's sessions/s).
search() {
    local lo=0 hi mid step passed=0 failed=0 pct=10
    R_ZERO=0
    R_SESS=0
    trial 0 "$TRIAL_S"
    hi=$T_OFFERED
    if loss_ok; then
        tlog probe unpaced "no loss: sender-limited"
        R_ZERO=$T_OFFERED
        R_SESS=$T_SESSIONS
        return
    fi
    tlog probe unpaced loss
    mid=$(awk -v d="$T_DELIVERED" -v h="$hi" 'BEGIN { m = int(d * 0.95); print (m < h ? m : int(h / 2)) }')
    for ((step = 1; step <= STEPS; step++)); do
        ((mid > 0)) || break
        trial "$mid" "$TRIAL_S"
        if loss_ok; then
            tlog "step $step" "$mid" pass
            if ((T_OFFERED > R_ZERO)); then
                R_ZERO=$T_OFFERED
                R_SESS=$T_SESSIONS
            fi
            lo=$mid
            passed=1
        else
            tlog "step $step" "$mid" fail
            hi=$mid
            failed=1
        fi
        ((hi - lo > hi / 100)) || break
        if ((!failed)); then
            mid=$((lo * (100 + pct) / 100))
            ((mid < hi)) || mid=$(((lo + hi) / 2))
            pct=$((pct * 2))
        elif ((!passed)); then
            mid=$((hi * (100 - pct) / 100))
            pct=$((pct * 2 > 50 ? 50 : pct * 2))
        else
            mid=$(((lo + hi) / 2))
        fi
    done
}

# Single-stream TCP client -> server through gw1. Sets R_TCP (Gb/s).
measure_tcp() {
    local spid
    ip netns exec "$NSS" iperf3 -s -1 -B "$SERVER4" -p "$TCP_PORT" >/dev/null 2>&1 &
    spid=$!
    for _ in $(seq 100); do
        nsx "$NSS" ss -Hltn "sport = :$TCP_PORT" | grep -q LISTEN && break
        sleep 0.05
    done
    if nsx "$NSC" taskset -c "$SENDER_CPU" iperf3 -c "$SERVER6" -p "$TCP_PORT" -t "$TCP_S" -J \
        --connect-timeout 3000 >"$tmp/iperf.json" 2>/dev/null; then
        R_TCP=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])).get("end",{}).get("sum_received"); print("%.2f" % (r["bits_per_second"]/1e9) if r else "0")' "$tmp/iperf.json")
    else
        R_TCP=0
    fi
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    log "  TCP ${TCP_S} s single stream: $R_TCP Gb/s"
}

ROWS=()

# One mode's measurements: $1 = 0 (off) or 1 (on), $2 = round.
run_mode() {
    local sync=$1 round=$2 name replicas="-" g1 g2
    name="off"
    ((sync)) && name="on"
    log "== round $round, sync $name"
    start_node 1 "$sync"
    if ((sync)); then
        start_node 2 1
        wait_synced
    fi
    SEND_ARGS=("${LONG_ARGS[@]}")
    # The 4096 long flows' sessions exist before the first measured trial.
    trial 40000 1
    log "  long flows (4096 UDP flows), 64-byte UDP:"
    search
    local long=$R_ZERO
    trial "$FIXED_LONG" "$FIXED_S"
    tlog fixed "$FIXED_LONG" "CPU per packet: gw1 $T_CPU1 ns, gw2 $T_CPU2 ns"
    log "    by thread, ns per packet: gw1: $T_THREADS1; gw2: $T_THREADS2"
    local long_cpu1=$T_CPU1 long_cpu2=$T_CPU2
    log "  gw1's drops so far: $(drops "$NS1")"
    measure_tcp
    SEND_ARGS=("${NEW_ARGS[@]}")
    log "  new-session-heavy (4096 hosts, pseudorandom ports), 64-byte UDP:"
    # Every trial from empty tables (FRESH): the cost of creating a session
    # grows with the sessions already there, so trials must start equal.
    FRESH=$sync
    search
    if [[ ${SYSCALLS:-} == 1 ]] && ((sync)); then STRACE=1; fi
    trial "$FIXED_NEW" "$FIXED_S"
    STRACE=""
    tlog fixed "$FIXED_NEW" "CPU per packet: gw1 $T_CPU1 ns, gw2 $T_CPU2 ns"
    log "    by thread, ns per packet: gw1: $T_THREADS1; gw2: $T_THREADS2"
    local new_cpu1=$T_CPU1 new_cpu2=$T_CPU2
    FRESH=""
    log "  gw1's drops so far: $(drops "$NS1")"
    if ((sync)); then
        sleep 1 # the last records' way to gw2
        g1=$(metric "$NS1" sixgate_nat64_sessions)
        g2=$(metric "$NS2" sixgate_nat64_sessions)
        replicas="$g2 / $g1"
        log "  sessions: gw2 holds $g2, gw1 $g1; gw1 exported $(metric "$NS1" sixgate_sync_worker_changes_total exported), lost $(metric "$NS1" sixgate_sync_worker_changes_total export_lost); gw2 imported $(metric "$NS2" sixgate_sync_worker_changes_total '"imported"'), refused $(metric "$NS2" sixgate_sync_worker_changes_total import_refused); gw1 sent $(metric "$NS1" sixgate_sync_records_total '"out"') records in $(metric "$NS1" sixgate_sync_datagrams_total '"out"') datagrams, gw2 $(metric "$NS2" sixgate_sync_records_total '"out"') in $(metric "$NS2" sixgate_sync_datagrams_total '"out"')"
    fi
    ROWS+=("$name"$'\t'"$round"$'\t'"$long"$'\t'"$R_TCP"$'\t'"$R_ZERO"$'\t'"$R_SESS"$'\t'"$long_cpu1"$'\t'"$new_cpu1"$'\t'"$long_cpu2 / $new_cpu2"$'\t'"$replicas")
    stop_node "$GW1_PID"
    if ((sync)); then stop_node "$GW2_PID"; fi
    GW1_PID=""
    GW2_PID=""
}

sync_table() {
    echo "| sync | round | long flows: 64-byte UDP zero-loss pps | TCP single stream Gb/s | new sessions: zero-loss pps | sessions created/s at it | gw1 CPU ns/packet, long flows at $FIXED_LONG pps | gw1 CPU ns/packet, new sessions at $FIXED_NEW/s | gw2 CPU ns/packet (long / new) | gw2 / gw1 sessions at the end |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    local row a b c d e f g h i j
    for row in "${ROWS[@]}"; do
        IFS=$'\t' read -r a b c d e f g h i j <<<"$row"
        echo "| $a | $b | $c | $d | $e | $f | $g | $h | $i | $j |"
    done
    printf '%s\n' "${ROWS[@]}" | python3 -c '
import sys
rows = [l.rstrip("\n").split("\t") for l in sys.stdin if l.strip()]
def mean(mode, i):
    v = [float(r[i]) for r in rows if r[0] == mode]
    return sum(v) / len(v) if v else 0.0
def ratio(i):
    off, on = mean("off", i), mean("on", i)
    return "%.3f" % (on / off) if off > 0 else "-"
print("| **on / off** (means) | | %s | %s | %s | %s | %s | %s | | |" % (ratio(2), ratio(3), ratio(4), ratio(5), ratio(6), ratio(7)))'
}

# --- part 2: sessions lost at kill -9 ----------------------------------------
kill_test() {
    log "== sessions lost at kill -9: $KILL_SESSIONS UDP sessions at $KILL_RATE/s through gw1"
    start_node 1 1
    start_node 2 1
    wait_synced
    cat >"$tmp/server.py" <<'EOF'
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
s.bind((sys.argv[1], int(sys.argv[2])))
open(sys.argv[4], "w").write("ready")
first, second = {}, {}
s.settimeout(1.0)
last = time.monotonic()
while True:
    try:
        d, a = s.recvfrom(100)
    except socket.timeout:
        # Stop 3 s after the last datagram once the second round has begun.
        if second and time.monotonic() - last > 3:
            break
        continue
    last = time.monotonic()
    i, _, phase = d.decode().partition(" ")
    (second if phase else first).setdefault(i, "%s:%d" % a)
json.dump({"first": first, "second": second}, open(sys.argv[3], "w"))
EOF
    # One raw socket per source address (20), the UDP header written here and
    # its checksum filled in by the kernel (IPV6_CHECKSUM): session i is
    # (address i % 20, port 10000 + i / 20), without a socket per session.
    cat >"$tmp/client.py" <<'EOF'
import json, os, socket, struct, subprocess, sys, time
n, rate, rate2, pid, dst, port, out = (int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]),
    int(sys.argv[4]), sys.argv[5], int(sys.argv[6]), sys.argv[7])
socks = []
for k in range(20):
    s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_UDP)
    s.setsockopt(socket.IPPROTO_IPV6, getattr(socket, "IPV6_CHECKSUM", 7), 6)
    s.bind(("fd00:1::%x" % (0x100 + k), 0))
    socks.append(s)
def paced(r, phase):
    t0, at = time.monotonic(), []
    for i in range(n):
        wait = t0 + i / r - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        payload = b"%d%s" % (i, phase)
        udp = struct.pack("!HHHH", 10000 + i // 20, port, 8 + len(payload), 0) + payload
        socks[i % 20].sendto(udp, (dst, 0))
        at.append(time.monotonic())
    return at
created = paced(rate, b"")
t_kill = time.monotonic()
os.kill(pid, 9)
subprocess.run(["ip", "-6", "route", "replace", "2001:db8:64::/96", "via", "fd00:2::1", "dev", "c2"], check=True)
moved = time.monotonic() - t_kill
time.sleep(0.5)
paced(rate2, b" 2")
json.dump({"age_ms": [1000 * (t_kill - t) for t in created], "route_moved_ms": 1000 * moved,
           "created_s": created[-1] - created[0]}, open(out, "w"))
EOF
    rm -f "$tmp/kready"
    ip netns exec "$NSS" python3 "$tmp/server.py" "$SERVER4" "$KILL_PORT" "$tmp/kserver.json" "$tmp/kready" &
    local spid=$!
    for _ in $(seq 100); do
        [[ -s $tmp/kready ]] && break
        sleep 0.05
    done
    nsx "$NSC" python3 "$tmp/client.py" "$KILL_SESSIONS" "$KILL_RATE" "$KILL_RATE2" "$GW1_PID" \
        "$SERVER6" "$KILL_PORT" "$tmp/kclient.json" || die "the kill test's client failed"
    wait "$GW1_PID" 2>/dev/null || true
    GW1_PID=""
    wait "$spid" || die "the kill test's server failed"
    log "  gw2 after the failover: $(metric "$NS2" sixgate_nat64_sessions) sessions, imported $(metric "$NS2" sixgate_sync_worker_changes_total '"imported"')"
    KILL_ROW=$(python3 - "$tmp/kclient.json" "$tmp/kserver.json" <<'EOF'
import json, sys
c, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
first, second = s["first"], s["second"]
res = {}
for old in (True, False):
    ids = [str(i) for i, a in enumerate(c["age_ms"]) if (a >= 100) == old and str(i) in first]
    kept = sum(1 for i in ids if second.get(i) == first[i])
    new = sum(1 for i in ids if i in second and second[i] != first[i])
    missing = len(ids) - kept - new
    res[old] = (len(ids), kept, new, missing)
never = len(c["age_ms"]) - len(first)
o, y = res[True], res[False]
share = 100.0 * (o[2] + o[3]) / o[0] if o[0] else 0.0
yshare = 100.0 * (y[2] + y[3]) / y[0] if y[0] else 0.0
if never > len(c["age_ms"]) / 100:
    print(f"ha-gateway: warning: {never} first datagrams never arrived: the run is not valid", file=sys.stderr)
print(f"| {len(c['age_ms'])} | {len(c['age_ms']) / c['created_s']:.0f} | {o[0]} | {o[2]} + {o[3]} | **{share:.4f} %** | {y[0]} | {y[2]} + {y[3]} ({yshare:.1f} %) | {never} | {c['route_moved_ms']:.0f} ms |")
EOF
    )
    stop_node "$GW2_PID"
    GW2_PID=""
}

kill_table() {
    echo "| sessions | created/s | older than 100 ms at the kill | of them lost: new mapping + no arrival | lost share (goal ≤ 0.01 %) | younger | of them lost (share) | first datagram lost | route moved after |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    echo "$KILL_ROW"
}

# --- run -------------------------------------------------------------------------
model=$(lscpu | awk -F: '/^Model name/ { gsub(/^[ \t]+/, "", $2); print $2; exit }')
load=$(cut -d' ' -f1-3 /proc/loadavg)
log "machine: $(nproc) CPUs ($model), kernel $(uname -r), load average $load"
if awk -v l="${load%% *}" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
    log "warning: load average $load: other work is running, figures will be noisy"
fi
build_bed
KILL_ROW=""
if [[ ,$only, == *,sync,* ]]; then
    for ((r = 1; r <= ROUNDS; r++)); do
        run_mode 0 "$r"
        run_mode 1 "$r"
    done
fi
if [[ ,$only, == *,kill,* ]]; then kill_test; fi

elapsed=$((SECONDS - started))
{
    if ((${#ROWS[@]})); then
        sync_table
        echo
    fi
    if [[ -n $KILL_ROW ]]; then
        kill_table
        echo
    fi
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs ($model); kernel $(uname -r); load average at start $load."
    echo "Command: \`$cmdline\` (took ${elapsed} s). workers = $WORKERS per node; ${TRIAL_S} s trials, <= $STEPS steps, pass = loss <= $LOSS_MAX %; TCP ${TCP_S} s."
} >"$tmp/table.md"
cat "$tmp/table.md"
if [[ -n $out ]]; then
    cp "$tmp/table.md" "$out"
    log "tables written to $out"
fi
log "done in ${elapsed} s"
