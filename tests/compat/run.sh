#!/bin/sh
# Runs the Node client compatibility tests (node's own test runner) against
# an rmqns binary. The packages are installed from package-lock.json into a
# work directory, kept between runs and reinstalled when the lock changes.
#
#   tests/compat/run.sh BUILD/rmqns [WORKDIR]
#
# Exit 77 (a skip for meson) when node or npm is missing or too old, or when
# the packages cannot be installed (set RMQNS_COMPAT_REQUIRED=1 to make that
# a failure instead).
set -eu

if [ $# -lt 1 ]; then
	echo "usage: $0 RMQNS_BINARY [WORKDIR]" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
work=${2:-}

. "$here/lib/skip.sh"

command -v node >/dev/null 2>&1 || skip "node not found"
command -v npm >/dev/null 2>&1 || skip "npm not found"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || skip "node $major is older than 18 (no node:test)"
[ -x "$bin" ] || { echo "compat: $bin is not an executable" >&2; exit 1; }

if [ -z "$work" ]; then
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
rm -rf "$work/lib" "$work/test"
cp -R "$here/lib" "$here/test" "$work/"
cp "$here/package.json" "$work/"
[ -f "$here/package-lock.json" ] && cp "$here/package-lock.json" "$work/"

cd "$work"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
stamp=node_modules/.rmqns-compat-installed
if [ -f package-lock.json ]; then
	if ! cmp -s package-lock.json "$stamp" 2>/dev/null; then
		npm ci --prefer-offline --no-audit --no-fund >npm-install.log 2>&1 ||
			{ cat npm-install.log >&2; skip "npm ci failed (see above)"; }
		cp package-lock.json "$stamp"
	fi
else
	npm install --no-audit --no-fund >npm-install.log 2>&1 ||
		{ cat npm-install.log >&2; skip "npm install failed (see above)"; }
fi

RMQNS_BIN=$bin exec node --test test/*.test.js
