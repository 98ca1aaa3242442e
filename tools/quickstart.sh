#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (run as root):
#   tools/quickstart.sh run    install what is missing, build, start rmqns on 9876
#                              (with a copy of etc/rmqns.conf in build/rmqns.conf)
#   tools/quickstart.sh test   install what is missing, build, run the whole test suite
# Builds go to build/ (release-ish, debugoptimized); the server binary is build/rmqns.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(meson ninja-build pkg-config gcc libc6-dev libjansson-dev liburcu-dev zlib1g-dev
          libyaml-dev libcriterion-dev python3
          libcrypt-dev  # bcrypt for the HTTP port's basic_auth_users
          libssl-dev openssl  # OpenSSL: TLS and ACL signatures; the tests' certificates
          libraft-dev libuv1-dev)  # the embedded controller's Raft group

# The whole test suite also drives the status page in Debian's headless
# chromium (the browser suite); running the server does not need it.
TEST_PACKAGES=(chromium)

install_missing() {
	local missing=()
	for p in "${PACKAGES[@]}" "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	# The compatibility tests drive real Node RocketMQ clients; a machine that
	# already has a Node.js with npm keeps it.
	command -v node >/dev/null 2>&1 || missing+=(nodejs npm)
	if command -v node >/dev/null 2>&1 && ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi
	if [ ${#missing[@]} -gt 0 ]; then
		echo "quickstart: installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}"
	fi
}

build() {
	local dir=${BUILD_DIR:-build}
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@"
	fi
	ninja -C "$dir"
}

case "${1:-}" in
run)
	install_missing
	build
	shift
	# UPDATE_NAMESRV_CONFIG rewrites the -c file, so run from a copy and keep
	# etc/rmqns.conf the documented default.
	[ -f build/rmqns.conf ] || cp etc/rmqns.conf build/rmqns.conf
	exec build/rmqns -c build/rmqns.conf "$@"
	;;
test)
	install_missing "${TEST_PACKAGES[@]}"
	build
	# RMQNS_TEST_PROCESSES: tests run at once (2, one a CPU)
	meson test -C "${BUILD_DIR:-build}" --print-errorlogs --num-processes "${RMQNS_TEST_PROCESSES:-2}"
	;;
*)
	echo "usage: tools/quickstart.sh run|test" >&2
	exit 1
	;;
esac
