#!/usr/bin/env bash
# `meson install --destdir` of a build into a temporary tree, and what must be
# there: the server, rmqns-admin, the configuration in sysconfdir/rmqns, the
# systemd unit with this prefix's paths, its sysusers.d user, both manual pages
# (clean under groff's warnings); the floor server must not be. The installed
# rmqns reads the installed configuration (-p). Prints the tree.
#   tools/install-test.sh [BUILD_DIR]      default: build
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DEST=$(mktemp -d /tmp/rmqns-install-XXXXXX)
trap 'rm -rf "$DEST"' EXIT
fail() { echo "install-test: FAIL: $*" >&2; exit 1; }

meson install -C "$BUILD" --no-rebuild --destdir "$DEST" >"$DEST.log" 2>&1 || { cat "$DEST.log" >&2; rm -f "$DEST.log"; fail "meson install"; }
grep 'rmqns: ' "$DEST.log" || true
rm -f "$DEST.log"
prefix=$(meson introspect "$BUILD" --buildoptions | python3 -c 'import json,sys; print({o["name"]: o["value"] for o in json.load(sys.stdin)}["prefix"])')
sysconf=$(meson introspect "$BUILD" --buildoptions | python3 -c 'import json,sys; print({o["name"]: o["value"] for o in json.load(sys.stdin)}["sysconfdir"])')
case "$sysconf" in /*) ;; *) sysconf=$prefix/$sysconf ;; esac
root=$DEST$prefix
echo "install-test: prefix $prefix, sysconfdir $sysconf"
(cd "$DEST" && find . ! -type d | sort | sed 's|^\.|  |')

for f in bin/rmqns bin/rmqns-admin lib/systemd/system/rmqns.service lib/sysusers.d/rmqns.conf \
	share/man/man8/rmqns.8 share/man/man8/rmqns-admin.8 share/rmqns/rmqns.conf; do
	[ -e "$root/$f" ] || fail "$prefix/$f not installed"
done
[ -f "$DEST$sysconf/rmqns/rmqns.conf" ] || fail "$sysconf/rmqns/rmqns.conf not installed"
! find "$DEST" -name 'rmqns-floor*' | grep -q . || fail "the floor server is installed"

unit=$root/lib/systemd/system/rmqns.service
grep -qx "ExecStart=$prefix/bin/rmqns -c $sysconf/rmqns/rmqns.conf" "$unit" || fail "ExecStart: $(grep ExecStart= "$unit")"
grep -qx "ReadWritePaths=$sysconf/rmqns" "$unit" || fail "ReadWritePaths: $(grep ReadWritePaths= "$unit")"
grep -qx 'User=rmqns' "$unit" || fail "the unit's user"
grep -q '^u rmqns ' "$root/lib/sysusers.d/rmqns.conf" || fail "sysusers.d has no user rmqns"
if command -v systemd-sysusers >/dev/null; then
	mkdir -p "$DEST/etc"
	systemd-sysusers --root "$DEST" "$root/lib/sysusers.d/rmqns.conf"
	grep -q '^rmqns:' "$DEST/etc/passwd" || fail "systemd-sysusers made no user rmqns"
	echo "install-test: systemd-sysusers --root: $(grep '^rmqns:' "$DEST/etc/passwd")"
fi

if ! command -v groff >/dev/null; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq --no-install-recommends groff-base >/dev/null || fail "groff-base"
fi
for m in rmqns rmqns-admin; do
	page=$root/share/man/man8/$m.8
	warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1 || true)
	[ -z "$warn" ] || fail "$m.8: $warn"
	grep -q '^\.SH NAME' "$page" || fail "$m.8 has no NAME"
done
grep -q 'RMQNS_listenPort' "$root/share/man/man8/rmqns.8" || fail "rmqns.8 does not give the environment rule"
for o in $("$root/bin/rmqns" -p | sed -n 's/^.* INFO main - \([^=]*\)=.*/\1/p'); do
	grep -q "^\.BR $o " "$root/share/man/man8/rmqns.8" || fail "rmqns.8 lacks option $o"
done
grep -q 'probe' "$root/share/man/man8/rmqns-admin.8" || fail "rmqns-admin.8 lacks its subcommands"

HOME=$DEST "$root/bin/rmqns" -c "$DEST$sysconf/rmqns/rmqns.conf" -p >/dev/null || fail "the installed rmqns cannot read the installed config"
echo "install-test: passed"
