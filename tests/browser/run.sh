#!/bin/sh
# Runs the status page test (status_page.js) in Debian's headless chromium
# against an rmqns binary. puppeteer-core is installed from package-lock.json
# into a work directory, kept between runs and reinstalled when the lock
# changes; it never downloads a browser.
#
#   tests/browser/run.sh BUILD/rmqns BUILD/tools/bench/rmqns-bench [WORKDIR [SCREENSHOT.png]]
#
# Exit 77 (a skip for meson) when chromium, node or npm is missing or the
# package cannot be installed; RMQNS_BROWSER_REQUIRED=1 makes that a failure.
# CHROMIUM names another browser binary.
set -eu

if [ $# -lt 2 ]; then
	echo "usage: $0 RMQNS_BINARY RMQNS_BENCH_BINARY [WORKDIR [SCREENSHOT.png]]" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
bin=$(abs "$1")
bench=$(abs "$2")
work=${3:-}
shot=${4:-}
[ -n "$shot" ] && shot=$(abs "$shot")

skip() {
	if [ "${RMQNS_BROWSER_REQUIRED:-0}" = 1 ]; then
		echo "browser: $*" >&2
		exit 1
	fi
	echo "browser: SKIP: $*"
	exit 77
}

chromium=${CHROMIUM:-$(command -v chromium || true)}
[ -n "$chromium" ] && [ -x "$chromium" ] || skip "chromium not found (apt-get install chromium)"
command -v node >/dev/null 2>&1 || skip "node not found"
command -v npm >/dev/null 2>&1 || skip "npm not found"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || skip "node $major is older than 18"
[ -x "$bin" ] || { echo "browser: $bin is not an executable" >&2; exit 1; }
[ -x "$bench" ] || { echo "browser: $bench is not an executable" >&2; exit 1; }

if [ -z "$work" ]; then
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$work/"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
stamp=$work/node_modules/.rmqns-browser-installed
if ! cmp -s "$work/package-lock.json" "$stamp" 2>/dev/null; then
	(cd "$work" && npm ci --prefer-offline --no-audit --no-fund >npm-install.log 2>&1) ||
		{ cat "$work/npm-install.log" >&2; skip "npm ci failed (see above)"; }
	cp "$work/package-lock.json" "$stamp"
fi

RMQNS_BIN=$bin RMQNS_BENCH_BIN=$bench CHROMIUM=$chromium NODE_PATH=$work/node_modules \
	exec node "$here/status_page.js" $shot
