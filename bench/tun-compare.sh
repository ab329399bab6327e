#!/usr/bin/env bash
# Gateway data-plane comparison on one machine: kernel IPv6 forwarding, TAYGA
# and sixgate (TUN) side by side, in ONE run, on a three-namespace veth bed:
#
#   v6 host ns               DUT ns                                  v4 host ns
#   2001:db8:1::5/64 --veth-- 2001:db8:1::1/64  198.51.100.1/24 --veth-- 198.51.100.7/24
#   gw 2001:db8:1::1          pool6 2001:db8:64::/96                     gw 198.51.100.1
#                             EAM 198.18.0.0/24 <-> 2001:db8:1::/120
#
# Static neighbours everywhere (no ND/ARP during the runs). For the kernel
# case only, the DUT's and the v4 host's link also get 2001:db8:2::1/64 and
# 2001:db8:2::7/64, and the traffic is plain IPv6 forwarding to 2001:db8:2::7.
#
# For each system, in this order: kernel, TAYGA, sixgate workers = 1, sixgate
# workers = nproc, sixgate with the TC fast path (docs/fastpath.md; rows
# fastpath1 and fastpathN, not in the default set: [daemon] fastpath = "tc" on
# the DUT's two veths, same SIIT config; the exit log's "fast path:" line says
# how many packets the program translated and redirected; fastpath-xdp1: the
# same with fastpath = "xdp", native XDP on the veths, GRO on and complete
# checksums on the hosts' ends for that row), and on the AF_XDP
# data plane (docs/xdp.md) sixgate XDP
# workers = 1 and = nproc (the sixgate rows need `sixgate run`; without it they
# say "skipped: sixgate run not available"). The DUT's veths have nproc queues
# (XDP_QUEUES), one per XDP worker; for the XDP rows the hosts' veths send
# complete checksums (`ethtool -K ... tx off`, as a real NIC's link would carry):
#  - zero-loss throughput of 64-byte UDP IPv6->IPv4 (RFC 8219 sizes: 18-byte
#    payload, 66-byte IPv6 / 46-byte IPv4 packets, 84 / 64-byte frames; RFC 4814
#    pseudorandom source ports, 3 s trials): an unpaced probe gives the most the
#    sender can offer on that path (twice if it saw no loss), then a search on
#    the offered rate (steps of 10 %, 20 %, 40 %... until bracketed, then
#    bisection to 1 %). A trial passes when loss <= 0.1 % and the
#    sender left <= 0.1 % of its schedule unsent; a trial whose sender fell
#    behind is invalid and is run once more. The figure is the highest rate a
#    probe or search trial actually offered with loss <= 0.1 %.
#  - the rate delivered when offered 3x the zero-loss rate (or as much as the
#    sender can), and the most delivered in any trial ("peak").
#  - single-stream TCP, v6 host -> v4 host, with iperf3.
#
# Stateful systems (bench/nat64-compare.sh selects them), same traffic:
#  - nat44: kernel NAT44, IPv4 on both sides (the v6 host ns also gets
#    192.0.2.5/24, the DUT 192.0.2.1/24), nft masquerade out of the DUT;
#  - tayga44: TAYGA with a dynamic pool (198.18.0.0/24) and nft masquerade of
#    that pool out of the DUT: the classic stateful set-up around a SIIT;
#  - nat64-1, nat64-N: sixgate mode = "nat64", pool4 198.18.0.0/24 (routed back
#    to the DUT by the v4 host's default route) with ports NAT64_PORTS
#    (default 1024-65535, so that one subscriber's 64 512 flows all get a
#    port; a subscriber gets the ports of one address), workers = 1 and = nproc.
# MAP-T (bench/mapt-compare.sh selects them with the SIIT and NAT64 rows):
#  - mapt-br-1, mapt-br-N: sixgate mode = "mapt-br" (RFC 7599), workers = 1 and
#    = nproc; xdp-mapt-br-1, xdp-mapt-br-N: the same on the XDP data plane. DMR = pool6; BMR 2001:db8:1::/51 <-> 198.18.0.0/24, 13 EA bits,
#    PSID offset 0. The v6 host sends as the CE 198.18.0.8 PSID 1: from its MAP
#    address 2001:db8:1:101:0:c612:8:1 (a route to pool6 with that source), UDP
#    source ports pseudorandom in the PSID's set 2048-4095, TCP ports from that
#    set too (the v6 host's ip_local_port_range), so every packet passes the
#    BR's port-set check; the DUT routes 2001:db8:1:101::/64 back to it.
# The first stateful row run is the reference of the "vs" column when the
# kernel forwarding row is not in the run. SRC_HOSTS=N (environment, default 1;
# bench/nat64-compare.sh sets 64) spreads the UDP sources over N addresses
# (loadgen --src-hosts: the last 16 bits of the source plus 0..N-1), so that a
# stateful translator sees N subscribers (sixgate nat64 runs with
# subscriber_prefix_len = 128: one subscriber per address).
#
# usage: bench/tun-compare.sh [--quick] [--out FILE] [--only LIST] [--no-build]
#   --quick      1 s trials, <= 5 search steps, 3 s TCP (about a minute)
#   --out FILE   also write the table (with the machine and command) to FILE
#   --only LIST  comma-separated subset of: kernel,tayga,sixgate1,sixgateN,
#                fastpath1,fastpathN,fastpath-xdp1,xdp1,xdpN,nat44,tayga44,nat64-1,nat64-N,nat64-fp1,xdp-nat64,xdp-nat64-N,
#                mapt-br-1,mapt-br-N,xdp-mapt-br-1,xdp-mapt-br-N
#   --no-build   use the binaries already built (LOADGEN=, SIXGATE= override paths)
# TCP_S=N sets the iperf3 seconds (TCP_S_QUICK=N with --quick); TCP_ONLY=1
# skips the UDP search (for A/B runs of single-stream TCP). DUT_RATE=N adds a
# column: the DUT CPU's receive work per packet at N pps (measure_dut_cpu;
# with RPS=1 RECEIVER_CPU=0 DUT_CPU=1, the DUT's cost apart from the
# sender's; bpftrace, from scripts/setup.sh --bench, makes it exact;
# DUT_RATE_S=5 seconds), PERF_DUT=PREFIX
# a perf profile of DUT_CPU during that trial.
#
# Pinning (environment): SENDER_CPU=0, RECEIVER_CPU=last, DUT_CPU=last. TAYGA
# and sixgate workers = 1 run on DUT_CPU; sixgate workers = nproc is not pinned.
# On a many-core machine: DUT_CPUS=LIST (e.g. 4-11) runs the N-worker row on
# those CPUs with WORKERS_N workers (default: as many as listed), and with
# RPS=1 spreads the DUT veths' receive work over them; SENDERS=k runs k
# senders at rate/k each on SENDER_CPUS=LIST (one CPU each, default
# SENDER_CPU), and RECEIVERS=k receivers sharing the port on RECEIVER_CPUS,
# so that one sending or receiving core is not the limit.
# A veth delivers on the CPU that sent, so the DUT namespace's kernel work on
# the IPv6 leg (forwarding, TUN queueing) runs on the sender's CPU, and the IPv4
# leg's on the CPU that writes the TUN. RPS=1 instead steers each veth's
# receive work with RPS (DUT veths to DUT_CPU, hosts to their programs' CPUs).
# Full run about 4 minutes on 2 CPUs. Needs root, iproute2, tayga, iperf3 and
# python3 (scripts/setup.sh installs them). Cleans up on exit, Ctrl-C or error.
set -euo pipefail
export LC_ALL=C

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# --- parameters --------------------------------------------------------------
TRIAL_S=3         # seconds per UDP trial
STEPS=8           # binary-search trials after the probe
TCP_S=${TCP_S:-10} # iperf3 seconds (environment overrides, also with --quick)
LOSS_MAX=0.1      # % loss a trial may show and still pass
BEHIND_MAX=0.1    # % of its schedule the sender may leave unsent and still pass
OVERLOAD=3        # overload factor
PAYLOAD=18        # UDP payload: 46-byte IPv4 / 66-byte IPv6 packets (64 / 84-byte frames)
SRC_PORTS=${SRC_PORTS:-1024-65535} # RFC 4814 pseudorandom source ports
UDP_PORT=5001
TCP_ONLY=${TCP_ONLY:-0} # 1: skip the UDP search, measure single-stream TCP only
DUT_RATE=${DUT_RATE:-0}   # N: also the DUT CPU's ns per packet at N pps (measure_dut_cpu)
DUT_RATE_S=${DUT_RATE_S:-5}
TCP_PORT=5201
out=""
only="kernel,tayga,sixgate1,sixgateN,xdp1,xdpN"
build=1
quick=0
cmdline="bench/tun-compare.sh $*"

while (($# > 0)); do
    case "$1" in
        --quick) quick=1 ;;
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
            echo "tun-compare: unknown argument: $1 (see --help)" >&2
            exit 2
            ;;
    esac
    shift
done
if ((quick)); then
    TRIAL_S=1
    STEPS=5
    TCP_S=${TCP_S_QUICK:-3}
fi

# CPU list (0,2,4-7) -> one CPU per word.
cpu_list() {
    local part
    for part in ${1//,/ }; do
        if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
    done
}

ncpu=$(nproc)
last_cpu=$((ncpu - 1))
SENDER_CPU=${SENDER_CPU:-0}
RECEIVER_CPU=${RECEIVER_CPU:-$last_cpu}
DUT_CPU=${DUT_CPU:-$last_cpu}
DUT_CPUS=${DUT_CPUS:-}
SENDERS=${SENDERS:-1}
SENDER_CPUS=${SENDER_CPUS:-$SENDER_CPU}
RECEIVERS=${RECEIVERS:-1}
RECEIVER_CPUS=${RECEIVER_CPUS:-$RECEIVER_CPU}
RPS=${RPS:-0}
SENDER=${SENDER:-packet}
SRC_HOSTS=${SRC_HOSTS:-1}
if [[ -n $DUT_CPUS ]]; then
    WORKERS_N=${WORKERS_N:-$(cpu_list "$DUT_CPUS" | wc -l)}
    workers_where="CPUs $DUT_CPUS"
else
    WORKERS_N=${WORKERS_N:-$ncpu}
    workers_where="all CPUs"
fi
pinning="sender CPU $SENDER_CPU, receiver CPU $RECEIVER_CPU, DUT CPU $DUT_CPU"
if ((SENDERS > 1 || RECEIVERS > 1)); then
    pinning="$SENDERS sender(s) on CPUs $SENDER_CPUS, $RECEIVERS receiver(s) on CPUs $RECEIVER_CPUS, DUT CPU $DUT_CPU"
fi
if [[ -n $DUT_CPUS ]]; then pinning="$pinning, N workers on CPUs $DUT_CPUS"; fi
XDP_QUEUES=${XDP_QUEUES:-$WORKERS_N}

log() { printf 'tun-compare: %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces)"
for tool in ip taskset python3 iperf3 tayga nft conntrack; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found (run scripts/setup.sh)"
done

# --- cleanup: every process we started lives in one of our namespaces -------
id=$$
NS6="sgb${id}-v6"
NSD="sgb${id}-dut"
NS4="sgb${id}-v4"
tmp=$(mktemp -d "/tmp/tun-compare.XXXXXX")
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
    local ns
    for ns in "$NS6" "$NSD" "$NS4"; do kill_ns_procs "$ns" TERM; done
    # Give sixgate/tayga a moment to remove their TUN devices and routes.
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do
        local busy=0
        for ns in "$NS6" "$NSD" "$NS4"; do
            if ns_exists "$ns" && [[ -n $(ip netns pids "$ns" 2>/dev/null) ]]; then busy=1; fi
        done
        ((busy)) || break
        sleep 0.2
        if ((i == 10)); then
            for ns in "$NS6" "$NSD" "$NS4"; do kill_ns_procs "$ns" KILL; done
        fi
    done
    for ns in "$NS6" "$NSD" "$NS4"; do
        if ns_exists "$ns"; then ip netns del "$ns"; fi
    done
    rm -rf "$tmp"
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
have_sixgate_run=0
if [[ -x $SIXGATE ]] && "$SIXGATE" run --help >/dev/null 2>&1; then
    have_sixgate_run=1
fi

# --- the bed -------------------------------------------------------------------
MAC_V6H=02:00:5e:00:06:05 # v6 host
MAC_D6=02:00:5e:00:06:01  # DUT, IPv6 side
MAC_D4=02:00:5e:00:04:01  # DUT, IPv4 side
MAC_V4H=02:00:5e:00:04:07 # v4 host
V6H=2001:db8:1::5
D6=2001:db8:1::1
D4=198.51.100.1
V4H=198.51.100.7
POOL6=2001:db8:64::/96
V4H_VIA_POOL6=2001:db8:64::c633:6407 # 198.51.100.7 in pool6
EAM4=198.18.0.0/24
EAM6=2001:db8:1::/120
# Kernel forwarding case only: the v4 host's side also gets IPv6.
D4_6=2001:db8:2::1
V4H_6=2001:db8:2::7
# Stateful cases: IPv4 between the v6 host and the DUT (NAT44 only), and the
# IPv4 addresses the stateful translators map to.
V6H_4=192.0.2.5
D6_4=192.0.2.1
POOL4=198.18.0.0/24
# The NAT64 rows' pool4 ports (TCP, UDP, ICMP identifiers). sixgate pairs each
# subscriber with one pool4 address (docs/architecture.md, "paired" pooling), so
# one subscriber gets at most one address's ports: with the default range
# (61001-65535, 4535 ports) the one-subscriber run (SRC_HOSTS=1, the default)
# sending from 64 512 source ports had most of its flows dropped as
# pool4_exhausted and the row read 0 zero-loss pps, which measured the pool,
# not the translation (kernel NAT44's masquerade has no such limit). The
# whole range gives every flow of SRC_PORTS=1024-65535 a port.
NAT64_PORTS=${NAT64_PORTS:-1024-65535}
# MAP-T rows: the BR's rule (IPv4 side = POOL4) and the CE the v6 host plays.
MAPT_RULE6=2001:db8:1::/51
MAPT_CE_PREFIX=2001:db8:1:101::/64
MAPT_CE6=2001:db8:1:101:0:c612:8:1 # 198.18.0.8, PSID 1 (EA bits 0x101)
MAPT_PORTS=2048-4095

nsx() {
    local ns=$1
    shift
    ip netns exec "$ns" "$@"
}

build_bed() {
    local ns
    for ns in "$NS6" "$NSD" "$NS4"; do
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        nsx "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 \
            net.ipv6.conf.all.accept_ra=0 net.ipv6.conf.default.accept_ra=0
    done
    nsx "$NSD" sysctl -qw net.ipv6.conf.all.forwarding=1 net.ipv4.ip_forward=1 \
        net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0

    # XDP_QUEUES queues on every veth: one AF_XDP socket (worker) per queue.
    local q="numtxqueues $XDP_QUEUES numrxqueues $XDP_QUEUES"
    # shellcheck disable=SC2086 # $q is two options
    ip link add v6h netns "$NS6" address "$MAC_V6H" $q type veth peer name d6 netns "$NSD" address "$MAC_D6" $q
    # shellcheck disable=SC2086
    ip link add d4 netns "$NSD" address "$MAC_D4" $q type veth peer name v4h netns "$NS4" address "$MAC_V4H" $q

    ip -n "$NS6" addr add "$V6H/64" dev v6h nodad
    ip -n "$NSD" addr add "$D6/64" dev d6 nodad
    ip -n "$NSD" addr add "$D4/24" dev d4
    ip -n "$NS4" addr add "$V4H/24" dev v4h
    ip -n "$NS6" link set v6h up
    ip -n "$NSD" link set d6 up
    ip -n "$NSD" link set d4 up
    ip -n "$NS4" link set v4h up
    ip -n "$NS6" -6 route add default via "$D6" dev v6h
    ip -n "$NS4" route add default via "$D4" dev v4h

    # Static neighbours: no ND/ARP in the measurements.
    ip -n "$NS6" neigh replace "$D6" lladdr "$MAC_D6" dev v6h nud permanent
    ip -n "$NSD" neigh replace "$V6H" lladdr "$MAC_V6H" dev d6 nud permanent
    ip -n "$NSD" neigh replace "$V4H" lladdr "$MAC_V4H" dev d4 nud permanent
    ip -n "$NS4" neigh replace "$D4" lladdr "$MAC_D4" dev v4h nud permanent

    if ((RPS)); then
        rps "$NSD" d6 "${DUT_CPUS:-$DUT_CPU}"
        rps "$NSD" d4 "${DUT_CPUS:-$DUT_CPU}"
        rps "$NS6" v6h "$SENDER_CPUS"
        rps "$NS4" v4h "$RECEIVER_CPUS"
    fi
}

# Receive packet steering: what arrives on DEV is processed on the CPUs listed
# (flows hashed over them). A veth otherwise processes what it receives on the
# CPU that sent it.
rps() {
    local ns=$1 dev=$2 cpus=$3 mask=0 cpu
    for cpu in $(cpu_list "$cpus"); do mask=$((mask | (1 << cpu))); done
    nsx "$ns" sh -c "printf '%x' $mask > /sys/class/net/$dev/queues/rx-0/rps_cpus"
}

# The sender writes whole frames to the v6 host's veth (packet socket), or
# goes through its IP stack (raw IP socket) with SENDER=raw.
case "$SENDER" in
    packet) SENDER_ARGS=(--via v6h --dst-mac "$MAC_D6" --src-hosts "$SRC_HOSTS") ;;
    raw) SENDER_ARGS=() ;;
    *) die "SENDER must be packet or raw" ;;
esac

# --- measuring -------------------------------------------------------------------
# One UDP trial: sets T_SENT T_RECV T_OFFERED T_DELIVERED T_LOSS T_BEHIND T_DROPS.
# Raises R_PEAK to T_DELIVERED, and R_ZERO to T_OFFERED if the trial lost no
# more than LOSS_MAX: the rate a sender actually offered without loss counts,
# whether or not it kept to its schedule (a late sender bursts, which is harder
# on the DUT, not easier).
# The receiver stops 0.3 s after the last datagram (or at the trial's end + 5 s).
trial() {
    local dst=$1 bind=$2 rate=$3 secs=$4
    local rpids=() rcpus=() k i reuse=()
    rm -f "$tmp"/ready* "$tmp"/recv*.json
    # RECEIVERS receivers share the port (SO_REUSEPORT), each on its own CPU.
    mapfile -t rcpus < <(cpu_list "$RECEIVER_CPUS")
    ((RECEIVERS > 1)) && reuse=(--reuse-port)
    for ((k = 0; k < RECEIVERS; k++)); do
        # Background jobs run `ip netns exec` directly (not through nsx) so that $!
        # is the program itself: ip and taskset exec into it.
        ip netns exec "$NS4" taskset -c "${rcpus[k % ${#rcpus[@]}]}" "$LOADGEN" recv \
            --bind "$bind" "${reuse[@]}" \
            --duration "$(awk -v s="$secs" 'BEGIN { print s + 5 }')" --idle-timeout 0.3 \
            --json --ready-file "$tmp/ready$k" >"$tmp/recv$k.json" &
        rpids+=($!)
    done
    for ((k = 0; k < RECEIVERS; k++)); do
        for i in $(seq 100); do
            [[ -s $tmp/ready$k ]] && break
            sleep 0.02
        done
        [[ -s $tmp/ready$k ]] || die "receiver did not start"
    done
    # SENDERS senders, each on its own CPU with rate/k and its own slice of the ports.
    local cpus=() spids=() k lo=${SRC_PORTS%-*} hi=${SRC_PORTS#*-} span
    mapfile -t cpus < <(cpu_list "$SENDER_CPUS")
    span=$(((hi - lo + 1) / SENDERS))
    rm -f "$tmp"/send*.json
    for ((k = 0; k < SENDERS; k++)); do
        ip netns exec "$NS6" taskset -c "${cpus[k % ${#cpus[@]}]}" "$LOADGEN" send --dst "$dst" \
            --rate "$(awk -v r="$rate" -v k="$SENDERS" 'BEGIN { printf "%.0f", r / k }')" \
            --duration "$secs" --size "$PAYLOAD" \
            --src-port-range "$((lo + k * span))-$((lo + (k + 1) * span - 1))" "${SENDER_ARGS[@]}" \
            --json >"$tmp/send$k.json" &
        spids+=($!)
    done
    for k in "${spids[@]}"; do wait "$k" || die "sender failed"; done
    for k in "${rpids[@]}"; do wait "$k" || die "receiver failed"; done
    read -r T_SENT T_RECV T_OFFERED T_DELIVERED T_LOSS T_BEHIND T_DROPS < <(
        python3 - "$tmp" <<'EOF'
import glob, json, sys
rs = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/recv*.json")]
ss = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/send*.json")]
sent, recv = sum(s["packets"] for s in ss), sum(r["packets"] for r in rs)
elapsed = max(s["elapsed_s"] for s in ss)
loss = 100.0 * (sent - recv) / sent if sent else 100.0
delivered = recv / elapsed if elapsed > 0 else 0.0
print(sent, recv, round(sum(s["offered_pps"] for s in ss)), round(delivered), f"{loss:.4f}",
      f"{max(s['behind_pct'] for s in ss):.4f}", sum(r["socket_drops"] for r in rs))
EOF
    )
    if ((T_DELIVERED > R_PEAK)); then R_PEAK=$T_DELIVERED; fi
    if ((COUNT_ZERO)) && loss_ok && ((T_OFFERED > R_ZERO)); then R_ZERO=$T_OFFERED; fi
    if ((T_DROPS > 0)); then
        log "  warning: the receiver's socket dropped $T_DROPS (receiver too slow, not the DUT)"
    fi
}

loss_ok() {
    awk -v l="$T_LOSS" -v lm="$LOSS_MAX" 'BEGIN { exit !(l <= lm) }'
}

# pass: loss and sender shortfall both within bounds.
passes() {
    awk -v l="$T_LOSS" -v b="$T_BEHIND" -v lm="$LOSS_MAX" -v bm="$BEHIND_MAX" \
        'BEGIN { exit !(l <= lm && b <= bm) }'
}

# A trial whose sender fell behind did not offer its rate: it is invalid, not a
# failure (siitperf's rule). On this shared machine that is usually another
# process taking the sender's CPU for a moment, so such a trial is run once
# more; if the sender falls behind again, the rate is out of its reach and
# counts as a failure. Sets the T_* of the last trial; returns like passes.
search_trial() {
    local dst=$1 bind=$2 rate=$3 label=$4
    trial "$dst" "$bind" "$rate" "$TRIAL_S"
    if ! passes && loss_ok; then
        trial_log "$label" "$rate" "invalid (sender behind): again"
        trial "$dst" "$bind" "$rate" "$TRIAL_S"
    fi
    if passes; then
        trial_log "$label" "$rate" pass
    else
        trial_log "$label" "$rate" fail
        return 1
    fi
}

trial_log() {
    local label=$1 rate=$2 verdict=$3
    log "$(printf '  %-9s target %8s  offered %8d  delivered %8d  loss %7s %%  behind %6s %%  %s' \
        "$label" "$rate" "$T_OFFERED" "$T_DELIVERED" "$T_LOSS" "$T_BEHIND" "$verdict")"
}

# Zero-loss throughput. An unpaced probe gives the most the sender can offer on
# this path. The search starts at 95 % of what the probe delivered, steps up
# while trials pass or down while they fail, by 10 % and then twice the step each
# time up to 50 % (a DUT that collapses under the probe delivers far below its
# zero-loss rate), and bisects once it has a passing and a failing rate, until they are
# within 1 % (or STEPS trials).
# R_ZERO is the highest rate actually offered by any probe or search trial that
# lost <= LOSS_MAX (see trial): when the sender cannot outrun the DUT (kernel
# forwarding runs in the sender's softirq), that is the sender's ceiling on this
# path, and the probe is run twice. Then one trial at OVERLOAD x R_ZERO. Sets R_ZERO, R_PEAK, R_MAX_OFFERED and
# R_MAX_DELIVERED (the probe's), R_OVER_OFFERED, R_OVER_DELIVERED, R_OVER_LOSS.
measure_udp() {
    local dst=$1 bind=$2
    local lo=0 hi mid step passed=0 failed=0 pct=10
    R_PEAK=0
    R_ZERO=0
    trial "$dst" "$bind" 0 "$TRIAL_S"
    hi=$T_OFFERED
    R_MAX_OFFERED=$T_OFFERED
    R_MAX_DELIVERED=$T_DELIVERED
    if loss_ok; then
        # The sender is the limit; a second probe halves the odds that a
        # moment of CPU theft sets the figure.
        trial_log probe unpaced "no loss: sender-limited"
        trial "$dst" "$bind" 0 "$TRIAL_S"
        trial_log probe unpaced "again"
        if ((T_OFFERED > R_MAX_OFFERED)); then
            R_MAX_OFFERED=$T_OFFERED
            R_MAX_DELIVERED=$T_DELIVERED
        fi
    else
        trial_log probe unpaced loss
        mid=$(awk -v d="$T_DELIVERED" -v h="$hi" 'BEGIN { m = int(d * 0.95); print (m < h ? m : int(h / 2)) }')
        for ((step = 1; step <= STEPS; step++)); do
            ((mid > 0)) || break
            if search_trial "$dst" "$bind" "$mid" "step $step"; then
                lo=$mid
                passed=1
            else
                hi=$mid
                failed=1
            fi
            # Stop once the bracket is within 1 %.
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
    fi
    if ((R_ZERO == 0)); then
        R_OVER_OFFERED=0
        R_OVER_DELIVERED=0
        R_OVER_LOSS=100
        return
    fi
    local over=$((R_ZERO * OVERLOAD))
    COUNT_ZERO=0 # an overload trial is not a zero-loss candidate
    trial "$dst" "$bind" "$over" "$TRIAL_S"
    COUNT_ZERO=1
    trial_log "${OVERLOAD}x" "$over" "overload"
    R_OVER_OFFERED=$T_OFFERED
    R_OVER_DELIVERED=$T_DELIVERED
    R_OVER_LOSS=$T_LOSS
}

# Single-stream TCP, v6 host -> v4 host (or its IPv6 address). Sets R_TCP (Gb/s).
measure_tcp() {
    local dst=$1
    ip netns exec "$NS4" taskset -c "$RECEIVER_CPU" iperf3 -s -1 -p "$TCP_PORT" >/dev/null 2>&1 &
    local spid=$! i
    for i in $(seq 100); do
        nsx "$NS4" ss -Hltn "sport = :$TCP_PORT" | grep -q LISTEN && break
        sleep 0.05
    done
    if nsx "$NS6" taskset -c "$SENDER_CPU" iperf3 -c "$dst" -p "$TCP_PORT" -t "$TCP_S" -J \
        --connect-timeout 3000 >"$tmp/iperf.json" 2>/dev/null; then
        R_TCP=$(
            python3 - "$tmp/iperf.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
r = j.get("end", {}).get("sum_received")
# iperf3 can exit 0 with an "error" and no summary (the connection reset).
print("%.2f" % (r["bits_per_second"] / 1e9) if r else "fail (iperf3: %s)" % j.get("error", "no summary"))
EOF
        )
    else
        R_TCP=fail
    fi
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    log "  TCP ${TCP_S} s single stream: $R_TCP Gb/s"
}

# Does traffic get through at all? 2000 packets at 10 kpps, >= 99 % must arrive;
# a second try if not (the first packets through a fresh stateful translator
# each create state, and a scheduling stall then overflows its queue).
sanity() {
    local dst=$1 bind=$2 try
    for try in 1 2; do
        trial "$dst" "$bind" 10000 0.2
        if awk -v s="$T_SENT" -v r="$T_RECV" 'BEGIN { exit !(s > 0 && r >= 0.99 * s) }'; then
            return 0
        fi
        log "  sanity try $try: $T_RECV of $T_SENT packets arrived"
    done
    return 1
}

# --- the systems under test ------------------------------------------------------
ROWS=()
KERNEL_PPS=""
KERNEL_TCP=""
REF_NAME="kernel"
R_PEAK=0
R_ZERO=0
COUNT_ZERO=1

# name, zero-loss, peak, offered at overload, delivered at overload, loss at
# overload, TCP, probe offered, probe delivered
add_row() {
    local IFS=$'\t'
    ROWS+=("$*")
}

run_case() {
    local name=$1 dst=$2 bind=$3 tcp_dst=$4
    log "== $name"
    # The last row's figures ("-" after TCP_ONLY) are not this row's.
    R_PEAK=0
    R_ZERO=0
    if ! sanity "$dst" "$bind"; then
        log "  sanity check failed: $T_RECV of $T_SENT packets arrived"
        add_row "$name" "failed: no traffic through ($T_RECV/$T_SENT)" - - - - - - -
        return
    fi
    if ((TCP_ONLY)); then
        R_ZERO=- R_PEAK=- R_OVER_OFFERED=- R_OVER_DELIVERED=- R_OVER_LOSS=- R_MAX_OFFERED=- R_MAX_DELIVERED=-
    else
        measure_udp "$dst" "$bind"
    fi
    # Before the flush below: a stateful row's sessions are established.
    R_DUT_NS=-
    if ((DUT_RATE > 0)); then measure_dut_cpu "$dst" "$bind"; fi
    # The UDP search leaves a stateful sixgate's table full of sessions (one
    # per pseudorandom port, 5 min each): empty it so that TCP gets one.
    if [[ -S $tmp/sixgate-api.sock ]] && "$SIXGATE" session flush --socket "$tmp/sixgate-api.sock" >"$tmp/flush.txt" 2>&1; then
        log "  before TCP: $(cat "$tmp/flush.txt")"
    fi
    measure_tcp "$tcp_dst"
    add_row "$name" "$R_ZERO" "$R_PEAK" "$R_OVER_OFFERED" "$R_OVER_DELIVERED" "$R_OVER_LOSS" "$R_TCP" \
        "$R_MAX_OFFERED" "$R_MAX_DELIVERED" "$R_DUT_NS"
}

# DUT_RATE=N: one trial at N pps, and the DUT CPU's receive work per packet
# (R_DUT_NS, ns): the DUT's cost rather than the bed's, which on this machine
# sets every row's throughput (the sender's CPU runs out first). It means
# something when the DUT's work has DUT_CPU to itself: RPS=1 RECEIVER_CPU=0
# DUT_CPU=1 on two CPUs puts the sender and the receiver on CPU 0 and every
# DUT veth's receive work (forwarding, the TC program, the TUN queueing) in
# CPU 1's NET_RX softirq. With bpftrace, that softirq's time on DUT_CPU,
# measured to the nanosecond over the middle of the trial; without it,
# /proc/stat's busy ticks of DUT_CPU (250 Hz sampling: noisy at a few % busy).
# An XDP program on a veth runs in the sender's NAPI: not measurable this way.
measure_dut_cpu() {
    local dst=$1 bind=$2 before after hz bt_pid="" window_ms i peak=$R_PEAK
    # A trial of its own: it counts towards neither the zero-loss rate nor
    # the peak (which are "-" with TCP_ONLY).
    COUNT_ZERO=0
    R_PEAK=0
    if command -v bpftrace >/dev/null 2>&1; then
        [[ -d /sys/kernel/tracing/events ]] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
    fi
    if command -v bpftrace >/dev/null 2>&1 && [[ -d /sys/kernel/tracing/events/irq ]]; then
        # From 0.7 s after the probes are attached (the trial starts right
        # after) to 0.8 s before the sender stops.
        window_ms=$((DUT_RATE_S * 1000 - 1500))
        cat >"$tmp/softirq.bt" <<EOF
BEGIN { @t0 = nsecs; printf("ready\\n"); }
tracepoint:irq:softirq_entry /cpu == $DUT_CPU && args->vec == 3/ { @s = nsecs; }
tracepoint:irq:softirq_exit /cpu == $DUT_CPU && args->vec == 3 && @s > @t0 + 700000000/ { @ns = sum(nsecs - @s); @s = 0; }
interval:ms:$((window_ms + 700)) { exit(); }
EOF
        bpftrace "$tmp/softirq.bt" >"$tmp/softirq.out" 2>&1 &
        bt_pid=$!
        for i in $(seq 200); do
            grep -q ready "$tmp/softirq.out" && break
            sleep 0.05
        done
    fi
    local perf_pid="" perf_out
    if [[ -n ${PERF_DUT:-} ]]; then
        # PERF_DUT=PREFIX: a profile of DUT_CPU during that trial, one file a row.
        perf_out="$PERF_DUT.${#ROWS[@]}"
        perf record -C "$DUT_CPU" -g -o "$perf_out" -- sleep "$DUT_RATE_S" >/dev/null 2>&1 &
        perf_pid=$!
    fi
    before=$(cpu_busy "$DUT_CPU")
    trial "$dst" "$bind" "$DUT_RATE" "$DUT_RATE_S"
    after=$(cpu_busy "$DUT_CPU")
    COUNT_ZERO=1
    R_PEAK=$peak
    if [[ -n $perf_pid ]]; then
        wait "$perf_pid" || true
        log "  perf profile of CPU $DUT_CPU written to $perf_out"
    fi
    if [[ -n $bt_pid ]]; then
        trial_log "cpu" "$DUT_RATE" "DUT CPU $DUT_CPU"
        wait "$bt_pid" || true
        # No NET_RX softirq on DUT_CPU at all: the work ran elsewhere (XDP
        # on a veth runs in the sender's NAPI).
        R_DUT_NS=$(awk -v d="$T_DELIVERED" -v w="$window_ms" \
            '/^@ns:/ { if (d > 0) printf "%.0f", $2 / (d * w / 1000); else print "-"; found = 1; exit }
             END { if (!found) print "-" }' "$tmp/softirq.out")
        log "  DUT CPU $DUT_CPU: $R_DUT_NS ns of NET_RX softirq per packet at $T_DELIVERED pps delivered"
    else
        hz=$(getconf CLK_TCK)
        trial_log "cpu" "$DUT_RATE" "DUT CPU $DUT_CPU busy $(((after - before) * 100 / hz / DUT_RATE_S)) % (/proc/stat)"
        R_DUT_NS=$(awk -v a="$after" -v b="$before" -v hz="$hz" -v n="$T_RECV" \
            'BEGIN { if (n > 0) printf "%.0f", (a - b) / hz * 1e9 / n; else print "-" }')
        log "  DUT CPU $DUT_CPU: $R_DUT_NS ns busy per packet at $T_DELIVERED pps delivered (/proc/stat)"
    fi
}

# Busy time of CPU $1 so far, in USER_HZ ticks (/proc/stat: user, nice,
# system, irq and softirq; not idle, iowait or steal).
cpu_busy() {
    awk -v c="cpu$1" '$1 == c { print $2 + $3 + $4 + $7 + $8 }' /proc/stat
}

case_kernel() {
    ip -n "$NSD" addr add "$D4_6/64" dev d4 nodad
    ip -n "$NS4" addr add "$V4H_6/64" dev v4h nodad
    ip -n "$NS4" -6 route add default via "$D4_6" dev v4h
    ip -n "$NSD" neigh replace "$V4H_6" lladdr "$MAC_V4H" dev d4 nud permanent
    ip -n "$NS4" neigh replace "$D4_6" lladdr "$MAC_D4" dev v4h nud permanent
    run_case "kernel IPv6 forwarding (no translation)" "[$V4H_6]:$UDP_PORT" "[::]:$UDP_PORT" "$V4H_6"
    KERNEL_PPS=$R_ZERO
    KERNEL_TCP=$R_TCP
    REF_NAME="kernel forwarding"
    ip -n "$NS4" -6 route del default via "$D4_6" dev v4h
    ip -n "$NSD" addr del "$D4_6/64" dev d4
    ip -n "$NS4" addr del "$V4H_6/64" dev v4h
}

# The reference for stateful rows when the kernel forwarding row is not run.
stateful_reference() {
    if [[ -z $KERNEL_PPS ]] && [[ $R_ZERO =~ ^[0-9]+$ ]]; then
        KERNEL_PPS=$R_ZERO
        KERNEL_TCP=$R_TCP
        REF_NAME=$1
    fi
}

# nft masquerade of what leaves the DUT towards the v4 host (from the prefix $1,
# or anything): conntrack keeps the state.
masquerade_on() {
    local match=""
    if [[ -n ${1:-} ]]; then match="ip saddr $1"; fi
    printf 'table ip sgbench {\n chain post {\n  type nat hook postrouting priority srcnat; policy accept;\n  oifname "d4" %s masquerade\n }\n}\n' \
        "$match" >"$tmp/nat44.nft"
    nsx "$NSD" nft -f "$tmp/nat44.nft"
}

# Also forget the connections: a masquerade run leaves ~64k conntrack entries
# (one per RFC 4814 source port) that would hold every port of the DUT's address
# for the next masquerade run.
masquerade_off() {
    nsx "$NSD" nft delete table ip sgbench 2>/dev/null || true
    nsx "$NSD" conntrack -F >/dev/null 2>&1 || true
}

case_nat44() {
    ip -n "$NS6" addr add "$V6H_4/24" dev v6h
    ip -n "$NSD" addr add "$D6_4/24" dev d6
    ip -n "$NS6" route add default via "$D6_4" dev v6h
    ip -n "$NS6" neigh replace "$D6_4" lladdr "$MAC_D6" dev v6h nud permanent
    ip -n "$NSD" neigh replace "$V6H_4" lladdr "$MAC_V6H" dev d6 nud permanent
    masquerade_on
    run_case "kernel NAT44 (nft masquerade, IPv4 both sides)" "$V4H:$UDP_PORT" "0.0.0.0:$UDP_PORT" "$V4H"
    stateful_reference "kernel NAT44"
    masquerade_off
    ip -n "$NS6" route del default via "$D6_4" dev v6h
    ip -n "$NS6" addr del "$V6H_4/24" dev v6h
    ip -n "$NSD" addr del "$D6_4/24" dev d6
}

case_tayga44() {
    local version conf="$tmp/tayga44.conf" pid
    version=$(dpkg-query -W -f='${Version}' tayga 2>/dev/null || echo "?")
    printf 'tun-device nat64\nipv4-addr 192.0.2.1\nprefix %s\ndynamic-pool %s\n' "$POOL6" "$POOL4" >"$conf"
    ip netns exec "$NSD" taskset -c "$DUT_CPU" tayga -c "$conf" --nodetach >"$tmp/tayga44.log" 2>&1 &
    pid=$!
    if ! wait_for_link nat64; then
        log "  tayga did not create its TUN device: $(tail -n 3 "$tmp/tayga44.log")"
        add_row "TAYGA $version + NAT44" "failed: did not start" - - - - - - -
        return
    fi
    ip -n "$NSD" link set nat64 up
    ip -n "$NSD" route add "$POOL6" dev nat64
    ip -n "$NSD" route add "$POOL4" dev nat64
    masquerade_on "$POOL4"
    run_case "TAYGA $version + NAT44 (dynamic pool, nft masquerade)" \
        "[$V4H_VIA_POOL6]:$UDP_PORT" "0.0.0.0:$UDP_PORT" "$V4H_VIA_POOL6"
    stateful_reference "TAYGA + NAT44"
    masquerade_off
    stop_dut "$pid"
}

wait_for_link() {
    local dev=$1 i
    for i in $(seq 100); do
        ip -n "$NSD" link show "$dev" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

stop_dut() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

case_tayga() {
    local version conf="$tmp/tayga.conf" pid
    version=$(dpkg-query -W -f='${Version}' tayga 2>/dev/null || echo "?")
    cat >"$conf" <<EOF
tun-device nat64
ipv4-addr 192.0.2.1
prefix $POOL6
map $EAM4 $EAM6
EOF
    ip netns exec "$NSD" taskset -c "$DUT_CPU" tayga -c "$conf" --nodetach >"$tmp/tayga.log" 2>&1 &
    pid=$!
    if ! wait_for_link nat64; then
        log "  tayga did not create its TUN device: $(tail -n 3 "$tmp/tayga.log")"
        add_row "TAYGA $version" "failed: did not start" - - - - - - -
        return
    fi
    ip -n "$NSD" link set nat64 up
    ip -n "$NSD" route add "$POOL6" dev nat64
    ip -n "$NSD" route add "$EAM4" dev nat64
    run_case "TAYGA $version (Debian, TUN, 1 thread)" \
        "[$V4H_VIA_POOL6]:$UDP_PORT" "0.0.0.0:$UDP_PORT" "$V4H_VIA_POOL6"
    stop_dut "$pid"
}

# A NAT64 row whose subscribers need more ports than pool4 gives one of them
# measures pool4_exhausted drops, not translation: say so before the row.
# Each source address is a subscriber (subscriber_prefix_len = 128) sending
# from every port of SRC_PORTS, and gets the ports of one pool4 address.
nat64_port_check() {
    local flows=$((${SRC_PORTS#*-} - ${SRC_PORTS%-*} + 1))
    local ports=$((${NAT64_PORTS#*-} - ${NAT64_PORTS%-*} + 1))
    if ((flows > ports)); then
        log "warning: each NAT64 subscriber sends $flows flows (SRC_PORTS=$SRC_PORTS) but gets at most $ports pool4 ports (NAT64_PORTS=$NAT64_PORTS, one pool4 address per subscriber): the rest are dropped as pool4_exhausted and the zero-loss figure measures the pool, not translation; widen NAT64_PORTS or narrow SRC_PORTS and raise SRC_HOSTS"
    fi
}

case_sixgate() {
    local workers=$1 label=$2 mode=${3:-siit} dataplane=${4:-tun} fastpath=${5:-off}
    # The TUN rows measure the TUN plane alone: the fast path off (the
    # default, "auto", would put it in front).
    local conf="$tmp/sixgate.toml" pid pin=() section plane fp_keys='fastpath = "off"'
    if ((!have_sixgate_run)); then
        add_row "$label" "skipped: sixgate run not available" - - - - - - -
        log "== $label: skipped: sixgate run not available"
        return
    fi
    if [[ $mode == nat64 ]]; then
        # pool4 is the EAM prefix of the SIIT rows: the same route check below.
        nat64_port_check
        section=$(printf '[translator]\nmode = "nat64"\npool6 = "%s"\n\n[nat64]\npool4 = [ { prefix = "%s", tcp = "%s", udp = "%s", icmp = "%s" } ]\nsubscriber_prefix_len = 128\n' \
            "$POOL6" "$POOL4" "$NAT64_PORTS" "$NAT64_PORTS" "$NAT64_PORTS")
    elif [[ $mode == mapt-br ]]; then
        # The rule's IPv4 prefix is the EAM prefix too: the same route check.
        section=$(printf '[translator]\nmode = "mapt-br"\n\n[mapt]\ndmr = "%s"\nbmr = [ { ipv6_prefix = "%s", ipv4_prefix = "%s", ea_bits = 13, psid_offset = 0 } ]\n' \
            "$POOL6" "$MAPT_RULE6" "$POOL4")
    else
        section=$(printf '[translator]\nmode = "siit"\npool6 = "%s"\neam = [ { ipv4 = "%s", ipv6 = "%s" } ]\n' \
            "$POOL6" "$EAM4" "$EAM6")
    fi
    if [[ $dataplane == xdp ]]; then
        plane=$(printf 'dataplane = "xdp"\n\n[xdp]\nipv6_interface = "d6"\nipv4_interface = "d4"\n')
    else
        plane=$(printf '\n[tun]\nname = "sixgate0"\noffload = true\nmanage_routes = true\n')
    fi
    if [[ $fastpath != off ]]; then
        # docs/fastpath.md: the TC (or native XDP) program on both DUT
        # interfaces translates and forwards the common packets; the TUN
        # plane gets the rest.
        fp_keys=$(printf 'fastpath = "%s"\nfastpath_interfaces = ["d6", "d4"]\n' "$fastpath")
    fi
    cat >"$conf" <<EOF
$section

[daemon]
workers = $workers
socket = "$tmp/sixgate-api.sock"
$fp_keys
$plane
EOF
    # One worker: pinned like TAYGA. All workers: on DUT_CPUS if given, else
    # wherever the scheduler allows (sixgate pins each worker to one of them).
    if ((workers == 1)); then
        pin=(taskset -c "$DUT_CPU")
    elif [[ -n $DUT_CPUS ]]; then
        pin=(taskset -c "$DUT_CPUS")
    fi
    if [[ $dataplane == xdp ]]; then
        # As many queues as workers: a queue with no socket would hand its
        # packets to the kernel untranslated.
        veth_channels "$workers"
    fi
    ip netns exec "$NSD" "${pin[@]}" "$SIXGATE" run --config "$conf" >"$tmp/sixgate.log" 2>&1 &
    pid=$!
    if [[ $dataplane == xdp ]]; then
        case_sixgate_xdp "$pid" "$label" "$mode"
        return
    fi
    if ! wait_for_link sixgate0; then
        log "  sixgate did not create its TUN device: $(tail -n 3 "$tmp/sixgate.log")"
        add_row "$label" "failed: did not start" - - - - - - -
        stop_dut "$pid"
        return
    fi
    # manage_routes installs the routes; give it a moment, then check.
    local i
    for i in $(seq 50); do
        ip -n "$NSD" -6 route show "$POOL6" | grep -q sixgate0 &&
            ip -n "$NSD" route show "$EAM4" | grep -q sixgate0 && break
        sleep 0.1
    done
    if ! ip -n "$NSD" -6 route show "$POOL6" | grep -q sixgate0; then
        log "  warning: sixgate installed no route for $POOL6; adding the routes here"
        ip -n "$NSD" link set sixgate0 up
        ip -n "$NSD" route replace "$POOL6" dev sixgate0
        ip -n "$NSD" route replace "$EAM4" dev sixgate0
    fi
    local attached="fast path: TC program attached"
    [[ $fastpath == xdp ]] && attached="fast path: XDP program (native mode) attached"
    if [[ $fastpath != off ]] && ! grep -q "$attached" "$tmp/sixgate.log"; then
        log "  warning: the fast path is not attached: $(grep -i 'fast path' "$tmp/sixgate.log" | tail -n 1)"
        label="$label (fast path NOT attached)"
    fi
    # XDP on veth (docs/fastpath.md, "veth"): a redirected frame needs NAPI on
    # the egress veth's peer (GRO on), and the hosts send complete checksums.
    if [[ $fastpath == xdp ]]; then xdp_hosts on; fi
    run_case "$label" "[$V4H_VIA_POOL6]:$UDP_PORT" "0.0.0.0:$UDP_PORT" "$V4H_VIA_POOL6"
    if [[ $fastpath == xdp ]]; then xdp_hosts off; fi
    stop_dut "$pid"
    # sixgate run prints its counters on exit.
    log "  sixgate at exit: $(grep '^sixgate: ' "$tmp/sixgate.log" | tr '\n' ' ')"
    if [[ $fastpath != off ]]; then
        log "  $(grep -o 'fast path: received.*' "$tmp/sixgate.log" | tail -n 1)"
    fi
    if ip -n "$NSD" link show sixgate0 >/dev/null 2>&1; then
        log "  warning: sixgate0 still exists after SIGTERM"
    fi
    if [[ $mode == nat64 ]]; then stateful_reference "sixgate nat64"; fi
    # Without a kernel row (bench/mapt-compare.sh), SIIT is the reference.
    if [[ $mode == siit ]]; then stateful_reference "sixgate SIIT"; fi
}

# MAP-T BR: the v6 host is a CE (its MAP address, ports of its set); then the
# row as for SIIT; then the bed as it was.
case_mapt_br() {
    local workers=$1 label=$2 dataplane=${3:-tun} old_range
    old_range=$(nsx "$NS6" sysctl -n net.ipv4.ip_local_port_range)
    ip -n "$NS6" addr add "$MAPT_CE6/128" dev v6h nodad
    ip -n "$NS6" -6 route replace "$POOL6" via "$D6" dev v6h src "$MAPT_CE6"
    nsx "$NS6" sysctl -qw net.ipv4.ip_local_port_range="${MAPT_PORTS/-/ }"
    ip -n "$NSD" -6 route replace "$MAPT_CE_PREFIX" via "$V6H" dev d6
    SRC_PORTS=$MAPT_PORTS case_sixgate "$workers" "$label" mapt-br "$dataplane"
    ip -n "$NSD" -6 route del "$MAPT_CE_PREFIX" via "$V6H" dev d6
    nsx "$NS6" sysctl -qw net.ipv4.ip_local_port_range="$old_range"
    ip -n "$NS6" -6 route del "$POOL6" via "$D6" dev v6h
    ip -n "$NS6" addr del "$MAPT_CE6/128" dev v6h
}

# The hosts' veths as an XDP fast path on the DUT needs them (on) and as the
# other rows have them (off): GRO (NAPI, so that a frame redirected into the
# DUT's veth reaches its peer) and complete checksums.
xdp_hosts() {
    local gro=off tx=on
    if [[ $1 == on ]]; then gro=on tx=off; fi
    nsx "$NS6" ethtool -K v6h gro "$gro" tx "$tx" >/dev/null
    nsx "$NS4" ethtool -K v4h gro "$gro" tx "$tx" >/dev/null
}

# Receive and transmit queues in use on the four veth ends (at most XDP_QUEUES).
veth_channels() {
    local n=$1
    nsx "$NS6" ethtool -L v6h rx "$n" tx "$n" 2>/dev/null || true
    nsx "$NSD" ethtool -L d6 rx "$n" tx "$n" 2>/dev/null || true
    nsx "$NSD" ethtool -L d4 rx "$n" tx "$n" 2>/dev/null || true
    nsx "$NS4" ethtool -L v4h rx "$n" tx "$n" 2>/dev/null || true
}

# The rest of case_sixgate on the XDP data plane: ready once the program is on
# both interfaces and the workers run; no routes (the program redirects).
case_sixgate_xdp() {
    local pid=$1 label=$2 mode=$3 i
    for i in $(seq 100); do
        grep -q "workers started" "$tmp/sixgate.log" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -q "workers started" "$tmp/sixgate.log"; then
        log "  sixgate (xdp) did not start: $(tail -n 3 "$tmp/sixgate.log")"
        add_row "$label" "failed: did not start" - - - - - - -
        stop_dut "$pid"
        return
    fi
    log "  $(grep -o 'XDP program sixgate_xdp attached.*' "$tmp/sixgate.log" | head -1)"
    nsx "$NS6" ethtool -K v6h tx off >/dev/null
    nsx "$NS4" ethtool -K v4h tx off >/dev/null
    run_case "$label" "[$V4H_VIA_POOL6]:$UDP_PORT" "0.0.0.0:$UDP_PORT" "$V4H_VIA_POOL6"
    nsx "$NS6" ethtool -K v6h tx on >/dev/null
    nsx "$NS4" ethtool -K v4h tx on >/dev/null
    if [[ -n ${PERF_XDP:-} ]] && [[ $label == *"workers = 1"* ]]; then
        # Profile the worker under the zero-loss rate (PERF_XDP=FILE).
        perf record -g -o "$PERF_XDP" -t "$(ps -L -o tid=,comm= -p "$pid" | awk '$2 == "sixgate-x0" { print $1 }')" \
            -- sleep 4 >/dev/null 2>&1 &
        local perf_pid=$!
        trial "[$V4H_VIA_POOL6]:$UDP_PORT" "0.0.0.0:$UDP_PORT" "$R_ZERO" 5
        wait "$perf_pid" || true
        log "  perf profile of worker 0 at $R_ZERO pps written to $PERF_XDP"
    fi
    stop_dut "$pid"
    veth_channels "$XDP_QUEUES"
    log "  sixgate at exit: $(grep '^sixgate: ' "$tmp/sixgate.log" | tr '\n' ' ')"
    if ip -n "$NSD" -d link show d6 | grep -q prog/xdp; then
        log "  warning: an XDP program is still on d6 after SIGTERM"
    fi
    if [[ $mode == nat64 ]]; then stateful_reference "sixgate nat64 (xdp)"; fi
}

# --- run -------------------------------------------------------------------------
model=$(lscpu | awk -F: '/^Model name/ { gsub(/^[ \t]+/, "", $2); print $2; exit }')
kernel=$(uname -r)
load=$(cut -d' ' -f1-3 /proc/loadavg)
log "machine: $ncpu CPUs ($model), kernel $kernel, load average $load"
log "pinning: $pinning"
log "trials: ${TRIAL_S} s, <= $STEPS search steps, pass = loss <= $LOSS_MAX % and sender behind <= $BEHIND_MAX %"
if awk -v l="${load%% *}" -v n="$ncpu" 'BEGIN { exit !(l > n / 2) }'; then
    log "warning: load average $load: other work is running, figures will be noisy"
fi

build_bed
IFS=, read -r -a selected <<<"$only"
for sel in "${selected[@]}"; do
    case "$sel" in
        kernel) case_kernel ;;
        tayga) case_tayga ;;
        sixgate1) case_sixgate 1 "sixgate, workers = 1" ;;
        sixgateN) case_sixgate "$WORKERS_N" "sixgate, workers = $WORKERS_N ($workers_where)" ;;
        nat44) case_nat44 ;;
        tayga44) case_tayga44 ;;
        nat64-1) case_sixgate 1 "sixgate nat64, workers = 1" nat64 ;;
        nat64-N) case_sixgate "$WORKERS_N" "sixgate nat64, workers = $WORKERS_N ($workers_where)" nat64 ;;
        mapt-br-1) case_mapt_br 1 "sixgate mapt-br, workers = 1" ;;
        mapt-br-N) case_mapt_br "$WORKERS_N" "sixgate mapt-br, workers = $WORKERS_N ($workers_where)" ;;
        fastpath1) case_sixgate 1 "sixgate + TC fast path, workers = 1" siit tun tc ;;
        fastpathN) case_sixgate "$WORKERS_N" "sixgate + TC fast path, workers = $WORKERS_N ($workers_where)" siit tun tc ;;
        fastpath-xdp1) case_sixgate 1 "sixgate + XDP fast path, workers = 1" siit tun xdp ;;
        nat64-fp1) case_sixgate 1 "sixgate nat64 + TC fast path, workers = 1" nat64 tun tc ;;
        xdp1) case_sixgate 1 "sixgate XDP, workers = 1" siit xdp ;;
        xdpN) case_sixgate "$WORKERS_N" "sixgate XDP, workers = $WORKERS_N ($workers_where)" siit xdp ;;
        xdp-nat64) case_sixgate 1 "sixgate nat64 XDP, workers = 1" nat64 xdp ;;
        xdp-nat64-N) case_sixgate "$WORKERS_N" "sixgate nat64 XDP, workers = $WORKERS_N ($workers_where)" nat64 xdp ;;
        xdp-mapt-br-1) case_mapt_br 1 "sixgate mapt-br XDP, workers = 1" xdp ;;
        xdp-mapt-br-N) case_mapt_br "$WORKERS_N" "sixgate mapt-br XDP, workers = $WORKERS_N ($workers_where)" xdp ;;
        *) die "unknown system in --only: $sel" ;;
    esac
done

# --- the table ---------------------------------------------------------------------
fmt_k() { awk -v v="$1" 'BEGIN { printf "%.0f k", v / 1000 }'; }
table() {
    local dut_h="" dut_c=""
    if ((DUT_RATE > 0)); then
        dut_h=" DUT CPU $DUT_CPU ns/packet at $(fmt_k "$DUT_RATE") pps |"
        dut_c="---:|"
    fi
    echo "| system | zero-loss pps | peak delivered | ${OVERLOAD}× overload: offered (× zero-loss) → delivered | delivered at ${OVERLOAD}× / peak | sender's max offered → delivered | TCP Gb/s | vs $REF_NAME: pps / TCP |$dut_h"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|$dut_c"
    local row name zero peak off del oloss tcp moff mdel dut ratio pct factor cell
    for row in "${ROWS[@]}"; do
        IFS=$'\t' read -r name zero peak off del oloss tcp moff mdel dut <<<"$row"
        cell=""
        ((DUT_RATE > 0)) && cell=" ${dut:--} |"
        if [[ ! $zero =~ ^[0-9]+$ ]]; then
            echo "| $name | $zero | | | | | | |$cell"
            continue
        fi
        pct=$(awk -v d="$del" -v p="$peak" 'BEGIN { if (p > 0) printf "%.0f %%", 100 * d / p; else print "-" }')
        ratio="-"
        if [[ $KERNEL_PPS =~ ^[0-9]+$ ]] && ((KERNEL_PPS > 0)); then
            ratio=$(awk -v z="$zero" -v k="$KERNEL_PPS" -v t="$tcp" -v kt="$KERNEL_TCP" \
                'BEGIN { r = sprintf("%.2f", z / k); if (t + 0 > 0 && kt + 0 > 0) r = r sprintf(" / %.2f", t / kt); else r = r " / -"; print r }')
        fi
        factor=$(awk -v o="$off" -v z="$zero" 'BEGIN { printf "%.1f×", o / z }')
        echo "| $name | $(fmt_k "$zero") | $(fmt_k "$peak") | $(fmt_k "$off") ($factor) → $(fmt_k "$del") ($(printf '%.0f' "$oloss") % lost) | $pct | $(fmt_k "$moff") → $(fmt_k "$mdel") | $tcp | $ratio |$cell"
    done
}

elapsed=$((SECONDS - started))
{
    table
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $ncpu CPUs ($model); kernel $kernel; load average at start $load."
    echo "Command: \`$cmdline\` (run took ${elapsed} s). Pinning: $pinning; RPS=$RPS; SENDER=$SENDER."
    echo "UDP: ${PAYLOAD}-byte payload (IPv6 66 B / IPv4 46 B packets), source ports pseudorandom in $SRC_PORTS, from $SRC_HOSTS source address(es);"
    echo "${TRIAL_S} s trials; pass = loss <= $LOSS_MAX % and sender behind schedule <= $BEHIND_MAX %."
} >"$tmp/table.md"
cat "$tmp/table.md"
if [[ -n $out ]]; then
    cp "$tmp/table.md" "$out"
    log "table written to $out"
fi
log "done in ${elapsed} s"
