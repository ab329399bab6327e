#!/bin/sh
# A stand-in for `sixgate run`, for testing the test bed before the daemon exists:
# TAYGA behind sixgate's command line. `run --help` succeeds; `run --config FILE`
# reads `[tun] name` from FILE, makes that TUN device with TAYGA and routes pool6
# and 198.18.0.0/24 into it (unless FILE says `manage_routes = false`); on SIGTERM
# or SIGINT it stops TAYGA, removes the device (unless FILE contains LEAVE_TUN),
# prints a summary and exits 0. FILE containing DIE makes it fail at start.
#
#   SIXGATE_E2E_BINARY=$PWD/crates/sixgate-netns/tests/stand-in-sixgate.sh \
#       cargo test -p sixgate --test e2e
[ "$1" = run ] || exit 2
if [ "$2" = --help ]; then echo "usage: sixgate run --config FILE"; exit 0; fi
[ "$2" = --config ] || exit 2
cfg=$3
grep -q DIE "$cfg" && { echo "config says DIE" >&2; exit 1; }
tun=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$cfg")
dir=$(dirname "$cfg")
cat > "$dir/tayga.conf" <<EOF
tun-device $tun
ipv4-addr 192.0.2.1
prefix 2001:db8:64::/96
map 198.18.0.0/24 2001:db8:1::/120
data-dir $dir
EOF
tayga -c "$dir/tayga.conf" --mktun >/dev/null || exit 1
ip link set "$tun" up
if ! grep -q "manage_routes = false" "$cfg"; then
    ip route add 2001:db8:64::/96 dev "$tun"
    ip route add 198.18.0.0/24 dev "$tun"
fi
tayga -c "$dir/tayga.conf" --nodetach >/dev/null &
pid=$!
stop() {
    kill $pid; wait $pid
    grep -q LEAVE_TUN "$cfg" || ip link del "$tun"
    echo "stand-in summary: stopped"
    exit 0
}
trap stop TERM INT
wait $pid
