#!/usr/bin/env bash
# The embedded controller cut off by the network, in namespaces this script
# creates (ip netns, veth, a bridge inside its own hub namespace; addresses
# exist only inside them):
#   1. three rmqns nodes with embedded controllers, each in its own
#      namespace, peers on IP:9878; all three name one leader;
#   2. brokers in controller mode (ctl-player) make broker sets through it
#      and keep heart-beating every node;
#   3. the leader's link is cut at the hub: the two others elect a new
#      leader (the time is printed); the cut node stops serving (2007 from
#      within its own namespace); writes go on through the new leader (new
#      broker sets, an electMaster from rmqns-admin) while it is behind;
#   4. the link comes back: the node rejoins as a follower and catches up,
#      its /controller equal to the leader's (lastApplied, broker sets),
#      and clusterDiff -a reports agreement.
# Every wait is bounded in time. Exit 77 (skipped) when namespaces cannot be
# created here, saying why. Namespaces and processes are removed on any exit.
# CTL_STYLE=jraft configures the group with Java's jRaft keys instead
# (controllerType=jRaft; the leader is then named by its Raft address); a
# style ending in +tls (dledger+tls, jraft+tls) runs the Raft connections
# with mutual TLS, each node with a certificate naming its own address
# (tools/make-peer-certs.sh).
#   [CTL_STYLE=jraft|dledger+tls|jraft+tls] tests/cluster/netns-controller.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/cluster/netns-lib.sh
TAG="controller cluster"
BUILD=${1:-build}
PLAYER=$BUILD/tests/cluster/ctl-player
netns_build "$PLAYER" curl jq

ID=rmqnsk$$
NET=10.254.13      # only inside the namespaces below
NODES=(n0 n1 n2)
declare -A IP=([n0]=$NET.10 [n1]=$NET.11 [n2]=$NET.12 [broker]=$NET.20 [client]=$NET.30)
CTL_PORT=9878      # Raft between the nodes: 9878 + controllerRaftPortOffset (1000)
HTTP_PORT=8080
WORK=$(mktemp -d)
declare -A PID PLAY
t0=$(date +%s)
step() { echo "controller cluster: $* ($(( $(date +%s) - t0 )) s)"; }
say() { echo "controller cluster: $*"; }
fail() {
	echo "controller cluster: FAIL: $*" >&2
	local f
	for f in "$WORK"/*.log; do [ -e "$f" ] && { echo "--- $(basename "$f")" >&2; tail -8 "$f" >&2; }; done
	exit 1
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

cleanup() { netns_kill "${PLAY[@]}" "${PID[@]}"; netns_down; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 143' INT TERM   # a timeout still cleans up
netns_up "${NODES[@]}" broker client
PEERS="n0-${IP[n0]}:$CTL_PORT;n1-${IP[n1]}:$CTL_PORT;n2-${IP[n2]}:$CTL_PORT"
CTLS="${IP[n0]}:$CTL_PORT;${IP[n1]}:$CTL_PORT;${IP[n2]}:$CTL_PORT"
RAFT_PORT=$((CTL_PORT + 1000))
JRAFT_INIT="${IP[n0]}:$RAFT_PORT,${IP[n1]}:$RAFT_PORT,${IP[n2]}:$RAFT_PORT"
STYLE=${CTL_STYLE:-dledger}
PEER_TLS=
if [[ $STYLE == *+tls ]]; then PEER_TLS=1; STYLE=${STYLE%+tls}; fi
if [ -n "$PEER_TLS" ]; then
	tools/make-peer-certs.sh --owner 0:0 "$WORK/tls" "${IP[n0]}" "${IP[n1]}" "${IP[n2]}" >/dev/null ||
		fail "make-peer-certs.sh"
fi
# node n's controller options in the style asked for (and its peer TLS files)
group_args() {
	if [ -n "$PEER_TLS" ]; then
		local d=$WORK/tls/${IP[$1]}
		echo "--controllerPeerTlsCertPath=$d/${IP[$1]}.pem --controllerPeerTlsKeyPath=$d/${IP[$1]}-key.pem" \
			"--controllerPeerTlsTrustCertPath=$d/ca.pem"
	fi
	if [ "$STYLE" = jraft ]; then
		echo "--controllerType=jRaft --jRaftGroupId=NetGroup --jRaftInitConf=$JRAFT_INIT" \
			"--jRaftControllerRPCAddr=${CTLS//;/,} --jRaftServerId=${IP[$1]}:$RAFT_PORT"
	else
		echo "--controllerDLegerGroup=NetGroup --controllerDLegerPeers=$PEERS --controllerDLegerSelfId=$1"
	fi
}
# the node a controllerLeaderId names: its self id, or its Raft address
node_of_id() {
	local n
	for n in "${NODES[@]}"; do
		if [ "$1" = "$n" ] || [ "$1" = "${IP[$n]}:$RAFT_PORT" ]; then echo "$n"; fi
	done
	return 0
}

# view FROM NODE: NODE's /controller, asked from namespace FROM; "" if no answer
view() { inns "$1" curl -sf --max-time 1 "http://${IP[$2]}:$HTTP_PORT/controller" 2>/dev/null || true; }
field() { jq -r "$1" <<<"${2:-null}" 2>/dev/null || true; }
# What must be equal on every node: the replicated state. A replica's
# "alive" is the node's own heartbeat table, not replicated.
replicated() { jq -S '{lastApplied, leader, brokerSets: [.brokerSets[] | .replicas |= map(del(.alive))]}' <<<"$1"; }

start_node() {
	local n=$1 i
	mkdir -p "$WORK/$n"
	# shellcheck disable=SC2046 # group_args gives whole words, no blanks inside
	HOME=$WORK/$n ip netns exec "$ID-$n" "$RMQNS" --bindAddress="${IP[$n]}" --listenPort=9876 \
		--httpPort=$HTTP_PORT --enableControllerInNamesrv=true $(group_args "$n") \
		--controllerStorePath="$WORK/$n/controller" >>"$WORK/$n.log" 2>&1 &
	PID[$n]=$!
	for i in $(seq 1 50); do
		[ -n "$(view client "$n")" ] && return 0
		sleep 0.1
	done
	fail "$n does not answer on its HTTP port"
}

# What a node answers on the wire, asked from namespace FROM: the leader it
# names (1005, through rmqns-admin), and the code of a leader-only request
# (1012, through ctl-player ask; 0 when it serves, 2007 when it does not).
named_by() {
	node_of_id "$(inns "$1" timeout 5 "$ADMIN" getControllerMetaData -a "${IP[$2]}:$CTL_PORT" --timeout 1000 \
		--json 2>/dev/null | jq -r '.controllerLeaderId // empty' 2>/dev/null || true)"
}
code_of() { inns "$1" timeout 5 "$PLAYER" ask -a "${IP[$2]}:$CTL_PORT" 2>/dev/null | awk '$1 == "code" { print $2 }' || true; }

# The node that the given nodes all name as leader, one of them, once it
# serves; "" while there is none. Asked from the client namespace.
agreed_leader() {
	local n named leader=
	for n in "$@"; do
		named=$(named_by client "$n")
		[ -n "$named" ] || return 0
		[ -z "$leader" ] || [ "$leader" = "$named" ] || return 0
		leader=$named
	done
	[[ " $* " == *" $leader "* ]] || return 0
	[ "$(code_of client "$leader")" = 0 ] && echo "$leader"
	return 0
}

# within MS COMMAND...: COMMAND succeeds within MS milliseconds
within() {
	local ms=$1 s
	shift
	s=$(now_ms)
	until "$@"; do
		[ $(( $(now_ms) - s )) -lt "$ms" ] || return 1
		sleep 0.05
	done
}

# wait_ready LOG: the player's "ready" line within 30 s
wait_ready() {
	local i
	for i in $(seq 1 150); do
		grep -q '^ready' "$WORK/$1" 2>/dev/null && return 0
		sleep 0.2
	done
	fail "no ready line in $1"
}

step "1. three controller nodes in three namespaces"
for n in "${NODES[@]}"; do start_node "$n"; done
LEADER=
start_ms=$(now_ms)
while [ $(( $(now_ms) - start_ms )) -lt 30000 ]; do
	LEADER=$(agreed_leader "${NODES[@]}")
	[ -n "$LEADER" ] && break
	sleep 0.1
done
[ -n "$LEADER" ] || fail "the three do not name one serving leader"
if [ -n "$PEER_TLS" ]; then
	for n in "${NODES[@]}"; do
		auth=$(field .peerAuthentication "$(view client "$n")")
		[ "$auth" = mutual-tls ] || fail "$n: peerAuthentication '$auth', not mutual-tls"
	done
	say "every node's Raft peers authenticate by mutual TLS"
fi
say "all three name $LEADER (${IP[$LEADER]}:$CTL_PORT), serving $(( $(now_ms) - start_ms )) ms after the last start"
OTHERS=()
for n in "${NODES[@]}"; do [ "$n" = "$LEADER" ] || OTHERS+=("$n"); done

step "2. brokers in controller mode make broker sets through the leader"
inns broker "$PLAYER" play -a "$CTLS" -p NetA -s 4 -H "${IP[broker]}" -d 240 >"$WORK/player-a.log" 2>&1 &
PLAY[a]=$!
wait_ready player-a.log
sed 's/^/controller cluster:   /' "$WORK/player-a.log"
# /controller is rebuilt every 500 ms: it shows them shortly after
sets_in_sync() { [ "$(field '[.brokerSets[] | select(.masterBrokerId == 1 and .syncStateSet == [1,2])] | length' "$(view client "$LEADER")")" = 4 ]; }
within 5000 sets_in_sync || fail "the leader's /controller does not show 4 broker sets with master 1 and {1,2} in sync"

step "3. the leader ($LEADER) is cut off at the hub"
cut_ms=$(now_ms)
netns_link "$LEADER" down
NEW=
while [ $(( $(now_ms) - cut_ms )) -lt 20000 ]; do
	NEW=$(agreed_leader "${OTHERS[@]}")
	[ -n "$NEW" ] && [ "$NEW" != "$LEADER" ] && break
	NEW=
	sleep 0.05
done
[ -n "$NEW" ] || fail "the two connected nodes elect no new leader"
elected_ms=$(( $(now_ms) - cut_ms ))
say "new leader $NEW, named by ${OTHERS[*]} and serving, $elected_ms ms after the cut"

# The cut node, asked from within its own namespace, refuses leader-only
# requests once it notices it has lost its majority.
CUT=$LEADER
refuses() { [ "$(code_of "$CUT" "$CUT")" = 2007 ]; }
within 20000 refuses || fail "the cut node does not answer a leader-only request with 2007 20 s after the cut"
say "the cut node answers a leader-only request (1012) with 2007 (CONTROLLER_NOT_LEADER), checked $(( $(now_ms) - cut_ms )) ms after the cut"
cut_follows() { [ "$(field .role "$(view "$CUT" "$CUT")")" = follower ]; }
within 5000 cut_follows || fail "the cut node's /controller does not say follower"

# Writes through the new leader while the cut node is behind: two more
# broker sets, and NetA-0's master moved to replica 2 by rmqns-admin.
inns broker "$PLAYER" play -a "$CTLS" -p NetB -s 2 -H "${IP[broker]}" -d 240 >"$WORK/player-b.log" 2>&1 &
PLAY[b]=$!
wait_ready player-b.log
sed 's/^/controller cluster:   /' "$WORK/player-b.log"
grep -q "through ${IP[$NEW]}:$CTL_PORT" "$WORK/player-b.log" || fail "the new sets were not made through the new leader"
client electMaster -a "$CTLS" -c NetCluster -bn NetA-0 -b 2 >"$WORK/elect.log" 2>&1 || fail "electMaster through the new leader failed"
sed 's/^/controller cluster:   /' "$WORK/elect.log"
moved() { lead_view=$(view client "$NEW"); [ "$(field '.brokerSets[] | select(.brokerName == "NetA-0") | .masterBrokerId' "$lead_view")" = 2 ]; }
within 5000 moved || fail "NetA-0's master is not 2 on the new leader's /controller"
cut_view=$(view "$CUT" "$CUT")
[ "$(field '[.brokerSets[] | select(.brokerName | startswith("NetB"))] | length' "$cut_view")" = 0 ] ||
	fail "the cut node has the sets made while it was cut off"
say "the cut node is behind: lastApplied $(field .lastApplied "$cut_view"), the leader's $(field .lastApplied "$lead_view")"

step "4. the link comes back: $CUT rejoins and catches up"
up_ms=$(now_ms)
netns_link "$CUT" up
same=
while [ $(( $(now_ms) - up_ms )) -lt 30000 ]; do
	lead_view=$(view client "$NEW")
	cut_view=$(view client "$CUT")
	if [ -n "$lead_view" ] && [ -n "$cut_view" ] && [ "$(field .role "$cut_view")" = follower ] &&
		[ "$(replicated "$lead_view")" = "$(replicated "$cut_view")" ]; then
		same=1
		break
	fi
	sleep 0.1
done
[ -n "$same" ] || fail "$CUT does not catch up with $NEW within 30 s"
say "$CUT follows $(field .leader "$cut_view") with lastApplied $(field .lastApplied "$cut_view") and $(field '.brokerSets | length' "$cut_view") broker sets equal to the leader's, $(( $(now_ms) - up_ms )) ms after the link came back"
[ "$(field '.brokerSets[] | select(.brokerName == "NetA-0") | .masterBrokerId' "$cut_view")" = 2 ] ||
	fail "the rejoined node does not have NetA-0's new master"
set +e; diff_out=$(client clusterDiff -a "$CTLS" 2>&1); rc=$?; set -e
sed 's/^/controller cluster:   /' <<<"$diff_out"
[ "$rc" = 0 ] || fail "clusterDiff -a: exit $rc after the rejoin, expected 0"

step "passed (leader cut off: a new leader served after $elected_ms ms)"
