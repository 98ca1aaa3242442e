#!/usr/bin/env bash
# Cluster test in network namespaces this script creates (ip netns, veth, a
# bridge inside its own hub namespace; addresses exist only inside them):
#   1. three rmqns nodes, each in its own namespace;
#   2. a simulated broker (rmqns-bench seed, one connection per node, as a
#      broker keeps) registers with all three;
#   3. a client in a fourth namespace queries each node;
#   4. node 1 is killed: alone it answers nothing, the client's list fails over;
#   5. node 1 restarts while the broker's registration to it is held back
#      (the seed process is stopped): clusterDiff reports the drift;
#   6. the registration resumes and node 1 converges: clusterDiff reports none.
# Everything is bounded in time. Exit 77 (skipped) when namespaces cannot be
# created here, saying why. Namespaces and processes are removed on any exit.
#   tests/cluster/netns-cluster.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/cluster/netns-lib.sh
TAG=cluster
BUILD=${1:-build}
BENCH=$BUILD/tools/bench/rmqns-bench
netns_build "$BENCH"

ID=rmqnsc$$
NET=10.254.12      # only inside the namespaces below
NODES=(n1 n2 n3)
declare -A IP=([n1]=$NET.11 [n2]=$NET.12 [n3]=$NET.13 [broker]=$NET.20 [client]=$NET.30)
WORK=$(mktemp -d)
declare -A PID SEED
t0=$(date +%s)
step() { echo "cluster: $* ($(( $(date +%s) - t0 )) s)"; }
fail() { echo "cluster: FAIL: $*" >&2; tail -3 "$WORK/probe.log" >&2 2>/dev/null; for n in "${NODES[@]}"; do echo "--- $n" >&2; tail -5 "$WORK/$n.log" >&2 || true; done; exit 1; }

cleanup() { netns_kill "${PID[@]}" "${SEED[@]}"; netns_down; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 143' INT TERM   # a timeout still cleans up
netns_up "${NODES[@]}" broker client
ALL="${IP[n1]}:9876;${IP[n2]}:9876;${IP[n3]}:9876"

start_node() {
	local n=$1
	mkdir -p "$WORK/$n"
	HOME=$WORK/$n ip netns exec "$ID-$n" "$RMQNS" --bindAddress="${IP[$n]}" --listenPort=9876 \
		--scanNotActiveBrokerInterval=1000 >>"$WORK/$n.log" 2>&1 &
	PID[$n]=$!
	local i
	for i in $(seq 1 50); do
		client probe -n "${IP[$n]}:9876" --timeout 200 >>"$WORK/probe.log" 2>&1 && return 0
		sleep 0.1
	done
	fail "$n does not answer"
}

step "1. three nodes in three namespaces"
for n in "${NODES[@]}"; do start_node "$n"; done

step "2. a simulated broker registers with all three"
for n in "${NODES[@]}"; do
	ip netns exec "$ID-broker" "$BENCH" seed -a "${IP[$n]}:9876" -b 2 -t 6 --keepalive 1s -d 120s --quiet \
		--cluster NetCluster --broker-prefix net-broker --topic-prefix NetTopic >"$WORK/seed-$n.log" 2>&1 &
	SEED[$n]=$!
done

step "3. the client queries each node"
for n in "${NODES[@]}"; do
	ok=
	for i in $(seq 1 50); do
		if client topicRoute -n "${IP[$n]}:9876" -t NetTopic-b1-t5 --json 2>/dev/null | grep -q '"net-broker-1"'; then ok=1; break; fi
		sleep 0.2
	done
	[ -n "$ok" ] || fail "$n has no route for NetTopic-b1-t5"
	echo "cluster: $n (${IP[$n]}) routes NetTopic-b1-t5 to net-broker-1"
done
client clusterDiff -n "$ALL" >/dev/null || fail "the nodes disagree after the registrations"

step "4. node 1 is killed; the client fails over"
# The broker's registrations to node 1 are held back until step 6.
kill -STOP "${SEED[n1]}"
kill -KILL "${PID[n1]}"; wait "${PID[n1]}" 2>/dev/null || true
set +e; client probe -n "${IP[n1]}:9876" >/dev/null 2>&1; rc=$?; set -e
[ "$rc" = 3 ] || fail "probe of the killed node: exit $rc, expected 3 (no answer)"
client topicRoute -n "$ALL" -t NetTopic-b0-t2 --json 2>"$WORK/failover.log" | grep -q '"net-broker-0"' || fail "no failover to nodes 2 and 3"
grep -q "${IP[n1]}:9876.*trying the next" "$WORK/failover.log" || fail "the client did not try node 1 first"
echo "cluster: node 1 gives no answer; the list ${ALL} still routes NetTopic-b0-t2"

step "5. node 1 restarts and is behind"
start_node n1
set +e; diff_out=$(client clusterDiff -n "$ALL" 2>&1); rc=$?; set -e
{ head -4 <<<"$diff_out"; echo "..."; tail -1 <<<"$diff_out"; } | sed 's/^/cluster:   /'
grep -q '(missing)' <<<"$diff_out" || fail "clusterDiff does not show node 1's missing brokers"
[ "$rc" = 1 ] || fail "clusterDiff exit $rc while node 1 is behind, expected 1"

step "6. the next registration converges node 1"
kill -CONT "${SEED[n1]}"
rc=1
for i in $(seq 1 100); do
	set +e; diff_out=$(client clusterDiff -n "$ALL" 2>&1); rc=$?; set -e
	[ "$rc" = 0 ] && break
	sleep 0.2
done
echo "$diff_out" | sed 's/^/cluster:   /'
[ "$rc" = 0 ] || fail "node 1 did not converge"
client topicRoute -n "${IP[n1]}:9876" -t NetTopic-b1-t5 --json | grep -q '"net-broker-1"' || fail "node 1 has no route after converging"

step "passed"
