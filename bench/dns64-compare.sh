#!/usr/bin/env bash
# DNS64 query rate: sixgate dns64, BIND 9 (`dns64`) and Unbound (dns64 module)
# side by side with dnsperf, in one network namespace, on loopback addresses:
#
#   127.0.0.2  BIND, authoritative for example. (A records only: a wildcard, so
#              every AAAA query is NODATA and gets synthesized from A)
#   127.0.0.3  BIND as DNS64, forwarding to 127.0.0.2
#   127.0.0.4  sixgate dns64, upstream 127.0.0.2
#   127.0.0.5  Unbound with "dns64 iterator", stub zone example. at 127.0.0.2
#
# All use the prefix 2001:db8:64::/96. Two loads per DNS64, AAAA queries from
# dnsperf (-c 10 clients, -q 500 outstanding):
#   hit:  100 names asked round and round (after the first round, ~100 % cache hits)
#   miss: unique names (every query misses the cache: AAAA then A upstream)
# and the figure is dnsperf's "Queries per second" (with the share lost).
#
# With --rounds N the servers take turns N times (sixgate, [--compare], Unbound,
# BIND, then again), so load from elsewhere on the machine hits all of them
# alike, and the report ends with each one's median. --compare BIN adds a
# second sixgate binary (an older build, say) to every round.
#
# usage: bench/dns64-compare.sh [--duration S] [--rounds N] [--compare BIN]
#                               [--out FILE] [--no-build]
# Needs root, bind9, unbound and dnsperf (scripts/setup.sh --bench installs them).
set -euo pipefail

DURATION=10
ROUNDS=1
COMPARE=""
OUT=""
BUILD=1
while (($#)); do
    case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --compare) COMPARE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    *) echo "usage: $0 [--duration S] [--rounds N] [--compare BIN] [--out FILE] [--no-build]" >&2; exit 2 ;;
    esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
for tool in named unbound dnsperf ip; do
    command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || {
        echo "skipped: $tool not installed" >&2
        exit 0
    }
done
if ((BUILD)); then
    cargo build --release -p sixgate --manifest-path "$root/Cargo.toml" >&2
fi
SIXGATE=${SIXGATE:-$root/target/release/sixgate}

ns=sg-dns64bench-$$
dir=$(mktemp -d /tmp/sg-dns64bench.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    sleep 0.5
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
for a in 2 3 4 5; do ip -n "$ns" addr add 127.0.0.$a/32 dev lo; done
inns() { ip netns exec "$ns" "$@"; }

mkdir -p "$dir/auth" "$dir/ref" "$dir/unbound"
cat >"$dir/example.zone" <<'EOF'
$TTL 3600
@  IN SOA ns.example. hostmaster.example. 1 3600 600 86400 3600
@  IN NS  ns
ns IN A   127.0.0.2
*  IN A   198.51.100.7
EOF
cat >"$dir/auth.conf" <<EOF
options { directory "$dir/auth"; pid-file none; listen-on port 53 { 127.0.0.2; };
  listen-on-v6 { none; }; recursion no; dnssec-validation no; };
controls { };
zone "example" { type primary; file "$dir/example.zone"; };
EOF
cat >"$dir/ref.conf" <<EOF
options { directory "$dir/ref"; pid-file none; listen-on port 53 { 127.0.0.3; };
  listen-on-v6 { none; }; recursion yes; allow-recursion { any; };
  forwarders { 127.0.0.2; }; forward only; dnssec-validation no;
  dns64 2001:db8:64::/96 { clients { any; }; }; };
controls { };
EOF
cat >"$dir/sixgate.toml" <<EOF
[dns64]
listen = ["127.0.0.4"]
upstream = ["127.0.0.2"]
prefixes = ["2001:db8:64::/96"]
acl = ["127.0.0.0/8"]
cache_size = 4000000
EOF
cat >"$dir/unbound.conf" <<EOF
server:
  interface: 127.0.0.5
  port: 53
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "$dir/unbound"
  pidfile: ""
  use-syslog: no
  logfile: ""
  verbosity: 0
  num-threads: $(nproc)
  access-control: 127.0.0.0/8 allow
  module-config: "dns64 iterator"
  dns64-prefix: 2001:db8:64::/96
  do-not-query-localhost: no
  qname-minimisation: no
  msg-cache-size: 512m
  rrset-cache-size: 1g
  outgoing-range: 4096
  num-queries-per-thread: 2048
stub-zone:
  name: "example."
  stub-addr: 127.0.0.2
EOF

# Queries: 100 names for "hit", a few million unique ones for "miss".
for i in $(seq 1 100); do echo "h$i.example AAAA"; done >"$dir/hit.txt"
awk 'BEGIN { for (i = 0; i < 4000000; i++) printf "m%d.example AAAA\n", i }' >"$dir/miss.txt"

started=0
start() { # label command...; sets $started to its pid
    local label=$1
    shift
    # Not through `inns`: a backgrounded function is a subshell, and its pid
    # would not be the program's. `ip netns exec` execs the program.
    ip netns exec "$ns" "$@" >"$dir/$label.log" 2>&1 &
    started=$!
    pids+=("$started")
}

wait_answer() { # server
    for _ in $(seq 1 100); do
        if inns dig +time=1 +tries=1 "@$1" h1.example AAAA 2>/dev/null | grep -q "status: NOERROR"; then
            return 0
        fi
        sleep 0.1
    done
    echo "no answer from $1" >&2
    return 1
}

start auth /usr/sbin/named -g -c "$dir/auth.conf"
auth_pid=$started
wait_answer 127.0.0.2

results=()
run_one() { # name server command...
    local name=$1 server=$2
    shift 2
    start "${name%% *}" "$@"
    local pid=$started
    wait_answer "$server"
    for load in hit miss; do
        local out qps lost
        out=$(inns dnsperf -s "$server" -d "$dir/$load.txt" -l "$DURATION" -c 10 -q 500 2>&1)
        qps=$(awk '/Queries per second:/ { print $4 }' <<<"$out")
        lost=$(awk '/Queries lost:/ { print $4 }' <<<"$out")
        results+=("$(printf '%-16s %-5s %10.0f qps  lost %s' "$name" "$load" "$qps" "$lost")")
        echo "${results[-1]}" >&2
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

bind_label="BIND $(/usr/sbin/named -v | awk '{print $2}')"
unbound_label="Unbound $(/usr/sbin/unbound -V | awk '/^Version/ {print $2}')"
for _ in $(seq 1 "$ROUNDS"); do
    run_one "sixgate dns64" 127.0.0.4 "$SIXGATE" dns64 --config "$dir/sixgate.toml"
    if [[ -n $COMPARE ]]; then
        run_one "sixgate $(basename "$COMPARE")" 127.0.0.4 "$COMPARE" dns64 --config "$dir/sixgate.toml"
    fi
    run_one "$unbound_label" 127.0.0.5 /usr/sbin/unbound -d -c "$dir/unbound.conf"
    run_one "$bind_label" 127.0.0.3 /usr/sbin/named -g -c "$dir/ref.conf"
done
kill "$auth_pid" 2>/dev/null || true

report=$(
    echo "# DNS64 query rate, $(date -u +%Y-%m-%d), $(nproc) CPUs ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo))"
    echo "# dnsperf -c 10 -q 500 -l $DURATION, AAAA for A-only names; hit = 100 names, miss = unique names"
    printf '%s\n' "${results[@]}"
    if ((ROUNDS > 1)); then
        echo "# medians over $ROUNDS rounds"
        printf '%s\n' "${results[@]}" | awk '
            { name = $0; sub(/ +(hit|miss) +[0-9]+ qps.*/, "", name)
              load = ($0 ~ / hit /) ? "hit" : "miss"
              for (i = 1; i <= NF; i++) if ($(i + 1) == "qps") q = $i
              k = name "\t" load; v[k] = v[k] " " q; if (!(k in seen)) { seen[k] = 1; keys[n++] = k } }
            END { for (j = 0; j < n; j++) { c = split(v[keys[j]], a, " ")
                      for (x = 1; x <= c; x++) for (y = x + 1; y <= c; y++) if (a[y] < a[x]) { t = a[x]; a[x] = a[y]; a[y] = t }
                      m = (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
                      split(keys[j], kk, "\t"); printf "%-30s %-5s median %8.0f qps  (%s)\n", kk[1], kk[2], m, substr(v[keys[j]], 2) } }'
    fi
)
echo "$report"
if [[ -n $OUT ]]; then echo "$report" >"$OUT"; fi
