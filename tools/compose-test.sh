#!/usr/bin/env bash
# Runs deploy/compose.yaml with podman-compose: three NameServers publishing on
# 127.0.0.1 and the simulated broker; checks that every node knows the seeded
# brokers (clusterList) and that the nodes agree (clusterDiff); tears it down.
# Fails (never skips) when podman or podman-compose cannot run.
# Reuses localhost/rmqns:ci and localhost/rmqns-broker-sim:ci when present
# (KEEP_IMAGE=1 tools/container-test.sh leaves them), else builds them.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/podman-env.sh

export RMQNS_IMAGE=${RMQNS_IMAGE:-localhost/rmqns:ci}
export RMQNS_SIM_IMAGE=${RMQNS_SIM_IMAGE:-localhost/rmqns-broker-sim:ci}
PROJECT=rmqns-compose-$$
t0=$(date +%s)
step() { echo "compose-test: $* ($(( $(date +%s) - t0 )) s)"; }
fail() { echo "compose-test: FAIL: $*" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

podman_install podman-compose
podman_configure
podman info >/dev/null 2>&1 || fail "podman cannot run"

# podman-compose 1.0.3 gives every container the project's bridge network and
# a network alias, even with network_mode (upstream issues 397 and 1186): podman
# then refuses the container. This shim drops both when a --network is given,
# and answers `network exists` so that no bridge network is ever created.
SHIM="$PODMAN_DIR/podman-compose-shim"
cat >"$SHIM" <<'SH'
#!/usr/bin/env bash
if [ "${1:-}" = network ] && [ "${2:-}" = exists ]; then exit 0; fi
if [ "${1:-}" = network ] && [ "${2:-}" = create ]; then echo "shim: no bridge network" >&2; exit 1; fi
mode=
for a in "$@"; do [ "$a" = --network ] && mode=1; done
args=()
while [ $# -gt 0 ]; do
	if [ -n "$mode" ] && { [ "$1" = --net ] || [ "$1" = --network-alias ]; }; then shift 2; continue; fi
	args+=("$1"); shift
done
exec podman "${args[@]}"
SH
chmod +x "$SHIM"
compose() {
	timeout 120 podman-compose --podman-path "$SHIM" -p "$PROJECT" -f deploy/compose.yaml "$@" \
		>>"$PODMAN_DIR/compose.log" 2>&1
}

cleanup() {
	compose down -v -t 10 || true
	local c v
	for c in $(podman ps -a --format '{{.Names}}' | grep "^${PROJECT}_" || true); do podman rm -f -t 0 "$c" >/dev/null 2>&1 || true; done
	for v in $(podman volume ls --format '{{.Name}}' | grep "^${PROJECT}_" || true); do podman volume rm -f "$v" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
trap 'exit 143' INT TERM   # a timeout still cleans up

if ! podman image exists "$RMQNS_IMAGE" || ! podman image exists "$RMQNS_SIM_IMAGE"; then
	step "images"
	podman_base_image
	podman_build_image "$RMQNS_IMAGE" >"$PODMAN_DIR/build.log" 2>&1 || { tail -30 "$PODMAN_DIR/build.log" >&2; fail "build"; }
	podman build --format docker --network host --pull=never --target broker-sim -t "$RMQNS_SIM_IMAGE" . \
		>"$PODMAN_DIR/build-sim.log" 2>&1 || { tail -30 "$PODMAN_DIR/build-sim.log" >&2; fail "build broker-sim"; }
fi

export NS1_PORT NS2_PORT NS3_PORT NS1_HTTP NS2_HTTP NS3_HTTP
NS1_PORT=$(free_port) NS2_PORT=$(free_port) NS3_PORT=$(free_port)
NS1_HTTP=$(free_port) NS2_HTTP=$(free_port) NS3_HTTP=$(free_port)
export SEED_DURATION=300s
ADDRS="127.0.0.1:$NS1_PORT;127.0.0.1:$NS2_PORT;127.0.0.1:$NS3_PORT"
admin() { timeout 30 podman run --rm --network host --entrypoint /usr/local/bin/rmqns-admin "$RMQNS_IMAGE" "$@" 2> >(grep -v "unable to get systemd connection" >&2); }

step "up ($ADDRS)"
: >"$PODMAN_DIR/compose.log"
compose up -d || { tail -40 "$PODMAN_DIR/compose.log" >&2; fail "podman-compose up"; }

step "every node knows the seeded brokers"
for a in ${ADDRS//;/ }; do
	out=""
	deadline=$(( $(date +%s) + 90 ))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		out=$(admin clusterList -n "$a" 2>/dev/null || true)
		[ "$(grep -c 'DemoCluster *demo-broker-' <<<"$out")" = 2 ] && break
		sleep 0.5
	done
	[ "$(grep -c 'DemoCluster *demo-broker-' <<<"$out")" = 2 ] || { tail -40 "$PODMAN_DIR/compose.log" >&2; fail "$a lists: $out"; }
	echo "compose-test: $a lists demo-broker-0 and demo-broker-1"
done
admin clusterDiff -n "$ADDRS" || fail "the nodes disagree"
admin topicRoute -n "$ADDRS" -t DemoTopic-b1-t7 --json | grep -q '"demo-broker-1"' || fail "no route for DemoTopic-b1-t7"

step "down"
compose down -v -t 10 || { tail -40 "$PODMAN_DIR/compose.log" >&2; fail "podman-compose down"; }
left=$(podman ps -a --format '{{.Names}}' | grep -c "^${PROJECT}_" || true)
[ "$left" = 0 ] || fail "$left containers left after down"
step "passed"
