#!/usr/bin/env bash
# Build the Debian package of sixgate (docs/packaging.md): one command.
#
#   scripts/package.sh                   release build (profile dist), then the .deb
#   scripts/package.sh --binary PATH     package PATH instead of building (e.g. the
#                                        debug binary, for the packaging test)
#   scripts/package.sh --out DIR         write the .deb into DIR (default target/debian)
#   scripts/package.sh --fast            faster, weaker compression (a bigger .deb)
#
# Needs cargo-deb (`cargo install cargo-deb --locked`). Prints the .deb's path
# on its last line. What goes in (crates/sixgate/Cargo.toml,
# [package.metadata.deb]):
#   /usr/bin/sixgate
#   /lib/systemd/system/sixgate.service, sixgate@.service   (dist/ units, /usr/bin paths;
#       sixgate.service is skipped until /etc/sixgate/sixgate.toml has [translator])
#   /etc/sixgate/sixgate.toml   conffile: dist/sixgate.toml, every line commented out
#   /etc/logrotate.d/sixgate
#   /usr/share/man/man1/sixgate*.1.gz, man5/sixgate.toml.5.gz   (sixgate generate man)
#   bash, zsh and fish completions                               (sixgate generate completions)
#   /usr/share/doc/sixgate/examples/{sixgate.toml,bird/,prometheus/,grafana/}
# and maintainer scripts (dist/debian/postinst, postrm, with cargo-deb's
# systemd snippets): enable and start on install, restart on upgrade, stop on
# remove, /var/lib/sixgate and /var/log/sixgate removed on purge.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export PATH="$HOME/.cargo/bin:$PATH"

binary=""
out=""
fast=()
while (($# > 0)); do
    case "$1" in
        --binary)
            binary=$(realpath "$2")
            shift 2
            ;;
        --out)
            out=$2
            shift 2
            ;;
        --fast)
            fast=(--fast)
            shift
            ;;
        -h | --help)
            sed -n '2,23p' "$0"
            exit 0
            ;;
        *)
            echo "package: unknown argument: $1" >&2
            exit 2
            ;;
    esac
done

log() { echo "package: $*" >&2; }

if ! cargo deb --version >/dev/null 2>&1; then
    echo "package: cargo-deb is missing: cargo install cargo-deb --locked" >&2
    exit 1
fi

target=$(cargo metadata --format-version 1 --no-deps --offline 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
if [[ -n $binary ]]; then
    # cargo-deb takes the binary from target/PROFILE/: put the given one in
    # a profile directory of its own (the profile is in Cargo.toml).
    profile=deb-prebuilt
    mkdir -p "$target/$profile"
    cp "$binary" "$target/$profile/sixgate"
else
    profile=dist
    log "building sixgate (profile $profile)"
    cargo build --locked --profile "$profile" -p sixgate >&2
fi
bin="$target/$profile/sixgate"

# Generated files, at the fixed place the manifest names.
extra="$root/target-deb" # ignored by git (/target-*)
rm -rf "$extra"
mkdir -p "$extra/man/man1" "$extra/completions" "$extra/systemd"
"$bin" generate man --out "$extra/man/man1" >/dev/null
gzip -9n "$extra"/man/man1/*.1 "$extra"/man/man5/*.5
"$bin" generate completions bash --out "$extra/completions" >/dev/null
mv "$extra/completions/sixgate.bash" "$extra/completions/sixgate"
"$bin" generate completions zsh --out "$extra/completions" >/dev/null
"$bin" generate completions fish --out "$extra/completions" >/dev/null

# The units, with the package's paths. The package's sixgate.toml starts
# nothing: the unit waits (skipped, not failed) until the file has a
# [translator] section.
sed -e '1i # sixgate.service of the Debian package (scripts/package.sh): dist/sixgate.service\n# with the package'"'"'s paths and a start condition.' \
    -e '1,/^\[Unit\]/{/^#/d}' \
    -e 's#/usr/local/bin/sixgate#/usr/bin/sixgate#g' \
    -e 's#^ExecStartPre=\(.*\)#\# Skipped (not failed) until the file is configured: the package installs\n\# it with every line commented out.\nExecCondition=/bin/grep -q "^[[]translator[]]" /etc/sixgate/sixgate.toml\nExecStartPre=\1#' \
    dist/sixgate.service >"$extra/systemd/sixgate.service"
sed -e '1i # sixgate@.service of the Debian package (scripts/package.sh): dist/sixgate@.service\n# with the package'"'"'s paths. sixgate@NAME runs /etc/sixgate/NAME.toml.' \
    -e '1,/^\[Unit\]/{/^#/d}' \
    -e 's#/usr/local/bin/sixgate#/usr/bin/sixgate#g' \
    dist/sixgate@.service >"$extra/systemd/sixgate@.service"

# The conffile: the example, commented out, under a header saying so.
{
    cat <<'EOF'
# /etc/sixgate/sixgate.toml: the configuration of sixgate.service.
#
# sixgate does not start until this file has a [translator] section: the
# example below (also in /usr/share/doc/sixgate/examples/sixgate.toml) is a
# stateful NAT64 with DNS64; uncomment it and change the addresses to yours
# (docs: man sixgate.toml), then
#
#   sixgate config check /etc/sixgate/sixgate.toml
#   systemctl restart sixgate
#
EOF
    sed -e 's/^\([^#]\)/#\1/' dist/sixgate.toml
} >"$extra/sixgate.toml"

outdir=${out:-$target/debian}
mkdir -p "$outdir"
log "cargo deb (profile $profile)"
deb=$(cargo deb --offline -p sixgate --no-build --profile "$profile" "${fast[@]}" --output "$outdir" | tail -n 1)
echo "$deb"
