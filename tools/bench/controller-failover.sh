#!/usr/bin/env bash
# Fail-over figures of a three-node rmqns group with embedded controllers
# (docs/benchmarks/history.md, "Embedded controller"), all on loopback:
#   masters  rmqns-bench controller plays --sets broker sets of 2 replicas
#            against the group and kills a master --kills times (its
#            process "dies": every socket closes); per kill: death -> new
#            master elected -> notified (1008) -> a route naming it id 0.
#   frozen   the same with the master frozen (sockets open, no heartbeats).
#   heartbeats  150 brokers heart-beat every controller every 10 ms while
#            rmqns-bench route queries node 0's NameServer port; route
#            throughput alone and beside them.
#   leader   the controller leader process is killed (SIGKILL) --leader-kills
#            times while brokers play; per kill: death -> a survivor serves
#            as leader (a leader-only request answered) -> every survivor
#            names it (CONTROLLER_GET_METADATA_INFO). The node comes back
#            before the next kill.
# Timings: "default" (Java's: election timeout 800 ms, scans every 5 s,
# heartbeat timeout 10 s) or "tight" (300 ms, 1 s scans, 3 s heartbeat
# timeout). Output: one JSON file per part and a summary on stdout.
#   tools/bench/controller-failover.sh BUILD_DIR OUT_DIR [default|tight] [KILLS] [LEADER_KILLS] [PARTS]
# e.g. tools/bench/controller-failover.sh build-rel /tmp/fo default 20 20 "masters frozen leader"
# PEER_TLS=1 in the environment: the nodes run with mutual TLS between the
# peers (controllerPeerTls*, certificates made here with openssl).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:?build dir}
OUT=${2:?output dir}
TIMINGS=${3:-default}
KILLS=${4:-20}
LEADER_KILLS=${5:-20}
PARTS=${6:-masters frozen leader}
RMQNS=$BUILD/rmqns
BENCH=$BUILD/tools/bench/rmqns-bench
ADMIN=$BUILD/tools/admin/rmqns-admin
for b in "$RMQNS" "$BENCH" "$ADMIN"; do [ -x "$b" ] || { echo "controller-failover: $b not built" >&2; exit 1; }; done
mkdir -p "$OUT"
WORK=$(mktemp -d)
declare -a PID NS CTL HTTP

case $TIMINGS in
default) node_opts=(); bench_opts=(--heartbeat-interval 1s --heartbeat-timeout 10s) ;;
tight)
	node_opts=(--controllerElectionTimeoutMillis=300 --controllerHeartbeatTimeoutMillis=50
		--scanNotActiveBrokerInterval=1000 --scanInactiveMasterInterval=1000)
	bench_opts=(--heartbeat-interval 500ms --heartbeat-timeout 3s) ;;
*) echo "controller-failover: timings are default or tight" >&2; exit 2 ;;
esac

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# a port p with p + 1000 (its Raft port) free too
free_pair() {
	python3 -c '
import socket
for _ in range(50):
    s=socket.socket(); s.bind(("127.0.0.1",0)); p=s.getsockname()[1]
    if p+1000>65535: continue
    t=socket.socket()
    try: t.bind(("127.0.0.1",p+1000))
    except OSError: continue
    print(p); break'
}

cleanup() {
	local p
	# (|| true: a helper already gone must not end the clean-up early)
	[ -z "${players:-}" ] || kill "$players" 2>/dev/null || true
	[ -z "${hb:-}" ] || kill "$hb" 2>/dev/null || true
	for p in "${PID[@]:-}"; do [ -z "$p" ] || kill "$p" 2>/dev/null || true; done
	for p in "${PID[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' INT TERM

if [ -n "${PEER_TLS:-}" ]; then
	mkdir -p "$WORK/tls"
	(cd "$WORK/tls" &&
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
			-out ca.pem -days 2 -subj /CN=bench-peer-ca &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout peer.key \
			-out peer.csr -subj /CN=peer -addext subjectAltName=IP:127.0.0.1 &&
		openssl x509 -req -in peer.csr -CA ca.pem -CAkey ca.key -set_serial 1 -days 2 \
			-copy_extensions copy -out peer.pem) >/dev/null 2>&1 ||
		{ echo "controller-failover: cannot make the peer certificates" >&2; exit 1; }
	node_opts+=(--controllerPeerTlsCertPath="$WORK/tls/peer.pem"
		--controllerPeerTlsKeyPath="$WORK/tls/peer.key"
		--controllerPeerTlsTrustCertPath="$WORK/tls/ca.pem")
fi

for i in 0 1 2; do NS[$i]=$(free_port); CTL[$i]=$(free_pair); HTTP[$i]=$(free_port); done
PEERS="n0-127.0.0.1:${CTL[0]};n1-127.0.0.1:${CTL[1]};n2-127.0.0.1:${CTL[2]}"
CTLS="127.0.0.1:${CTL[0]};127.0.0.1:${CTL[1]};127.0.0.1:${CTL[2]}"
NSS="127.0.0.1:${NS[0]};127.0.0.1:${NS[1]};127.0.0.1:${NS[2]}"

start_node() {
	local i=$1
	mkdir -p "$WORK/n$i"
	HOME=$WORK/n$i "$RMQNS" --listenPort="${NS[$i]}" --httpPort="${HTTP[$i]}" \
		--enableControllerInNamesrv=true --controllerDLegerGroup=bench --controllerDLegerPeers="$PEERS" \
		--controllerDLegerSelfId="n$i" --controllerStorePath="$WORK/n$i/store" "${node_opts[@]}" \
		>"$WORK/n$i.out" 2>>"$WORK/n$i.log" &
	PID[$i]=$!
	for _ in $(seq 1 200); do grep -q "boot success" "$WORK/n$i.out" && return 0; sleep 0.05; done
	echo "controller-failover: node $i did not start" >&2; tail -5 "$WORK/n$i.log" >&2; exit 1
}
now_ms() { date +%s%3N; }
# After the leader (index $2) was killed at $1 (ms since the epoch): asks
# the survivors over the wire, every 2 ms, with a leader-only request
# (1012) and the metadata query (1005). Prints the new leader's index, the
# ms until it served and until every survivor named it.
watch_takeover() {
	python3 - "$1" "$2" "${CTL[@]}" <<'EOF'
import json, socket, struct, sys, time
t0, dead, ports = int(sys.argv[1]), int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
live = [i for i in range(len(ports)) if i != dead]
def ask(i, code, ext):
    h = json.dumps({"code": code, "flag": 0, "language": "JAVA", "opaque": 1, "version": 479,
                    "serializeTypeCurrentRPC": "JSON", "extFields": ext}).encode()
    try:
        with socket.create_connection(("127.0.0.1", ports[i]), timeout=0.5) as s:
            s.sendall(struct.pack(">II", 4 + len(h), len(h)) + h)
            d = b""
            while len(d) < 4 or len(d) < 4 + struct.unpack(">I", d[:4])[0]:
                c = s.recv(65536)
                if not c:
                    return None
                d += c
            hl = struct.unpack(">I", d[4:8])[0] & 0xFFFFFF
            return json.loads(d[8:8 + hl])
    except (OSError, ValueError):
        return None
now = lambda: int(time.time() * 1000)
new, served, named = -1, None, None
while now() - t0 < 30000 and named is None:
    if served is None:
        for i in live:
            a = ask(i, 1012, {"clusterName": "C", "brokerName": "takeover-probe"})
            if a and a.get("code") == 0:
                new, served = i, now() - t0
                break
    else:
        names = [(ask(i, 1005, {}) or {}).get("extFields", {}).get("controllerLeaderId") for i in live if i != new]
        if all(n == "n%d" % new for n in names):
            named = now() - t0
    time.sleep(0.002)
print(new, served if served is not None else -1, named if named is not None else -1)
EOF
}
node_cpu_ticks() { # user+system ticks of the three nodes
	local t=0 i f
	for i in 0 1 2; do
		[ -n "${PID[$i]}" ] || continue
		f=$(cut -d' ' -f14,15 "/proc/${PID[$i]}/stat")
		t=$(( t + ${f% *} + ${f#* } ))
	done
	echo "$t"
}
serving() { # node i answers as a serving leader: rmqns_controller_leader 1
	curl -s --max-time 1 "http://127.0.0.1:${HTTP[$1]}/metrics" 2>/dev/null | grep -qx "rmqns_controller_leader 1"
}
wait_leader() { # prints the serving leader's index
	local t0; t0=$(now_ms)
	while [ $(( $(now_ms) - t0 )) -lt 30000 ]; do
		for i in 0 1 2; do [ -n "${PID[$i]}" ] && serving "$i" && { echo "$i"; return 0; }; done
		sleep 0.01
	done
	echo -1
}

for i in 0 1 2; do start_node "$i"; done
leader=$(wait_leader)
[ "$leader" -ge 0 ] || { echo "controller-failover: no leader" >&2; exit 1; }
echo "controller-failover: three nodes ($TIMINGS timings), leader n$leader; NameServers $NSS; controllers $CTLS"

# the bench's distribution of the three stages, one line each
stages() {
	python3 - "$1" <<'EOF'
import json,sys
c=json.load(open(sys.argv[1]))["controller"]
print("controller-failover: %s, %d kills (missing: %s)" % (c["mode"], c["kills"], c["missing"]))
for k in ("elected_ms", "notified_ms", "route_ms"):
    s=c["stages"][k]
    print("  %-12s n %2d  min %8.1f  p50 %8.1f  p90 %8.1f  max %8.1f ms" % (k, s["n"], s["min"], s["p50"], s["p90"], s["max"]))
EOF
}

bench() { "$BENCH" controller -a "$NSS" --controller-addr "$CTLS" "${bench_opts[@]}" "$@"; }
# the same in the background, its own PID in $! (a function would leave a subshell's)
bench_bg() { "$BENCH" controller -a "$NSS" --controller-addr "$CTLS" "${bench_opts[@]}" "$@" & }

for part in $PARTS; do
case $part in
masters)
	echo "controller-failover: $KILLS master kills"
	# a set is killed again only after its returned master is back in
	# the sync-state set (the master adds it at its next replica poll)
	bench --broker-sets 4 --replicas 2 --kills "$KILLS" --kill-every 2s --return-after 500ms \
		--replica-poll 1s --json >"$OUT/masters-$TIMINGS.json" || true
	bench --broker-sets 4 --replicas 2 --kills 0 -d 1s >/dev/null 2>&1 || true
	stages "$OUT/masters-$TIMINGS.json"
	;;
frozen)
	n=$(( KILLS / 4 > 0 ? KILLS / 4 : 1 ))
	echo "controller-failover: $n frozen masters"
	bench --broker-sets 4 --replicas 2 --kills "$n" --freeze --kill-every 2s --return-after 500ms \
		--replica-poll 1s --json >"$OUT/frozen-$TIMINGS.json" || true
	stages "$OUT/frozen-$TIMINGS.json"
	;;
leader)
	echo "controller-failover: $LEADER_KILLS controller leader kills"
	bench_bg --broker-sets 4 --replicas 2 -d 3600s >"$WORK/players.txt" 2>&1
	players=$!
	sleep 5
	: >"$OUT/leader-$TIMINGS.txt"
	for k in $(seq 1 "$LEADER_KILLS"); do
		leader=$(wait_leader)
		t0=$(now_ms)
		kill -9 "${PID[$leader]}"; wait "${PID[$leader]}" 2>/dev/null || true; PID[$leader]=
		set -- $(watch_takeover "$t0" "$leader")
		next=$1 t_serve=$2 t_named=$3
		echo "$k killed n$leader new n$next serving_ms $t_serve named_ms $t_named" | tee -a "$OUT/leader-$TIMINGS.txt"
		start_node "$leader"
		sleep 2
	done
	kill "$players" 2>/dev/null || true; wait "$players" 2>/dev/null || true
	python3 - "$OUT/leader-$TIMINGS.txt" <<'EOF'
import sys
rows=[l.split() for l in open(sys.argv[1]) if l.strip()]
for name, col in (("a survivor serves as leader", 6), ("every survivor names it", 8)):
    v=sorted(int(r[col]) for r in rows)
    q=lambda f: v[min(len(v)-1, int(f*len(v)))]
    print("controller-failover: leader kills %d: %s: min %d p50 %d p90 %d max %d ms" % (len(v), name, v[0], q(0.5), q(0.9), v[-1]))
EOF
	;;
heartbeats)
	# route queries on node 0's NameServer port alone, then with 150 brokers
	# heart-beating all three controllers every $HB_INTERVAL (10ms: as fast
	# as the bench sends; 1s: as real brokers do); the nodes' CPU per heartbeat
	hbi=${HB_INTERVAL:-10ms}
	echo "controller-failover: heartbeats every $hbi with route load beside"
	"$BENCH" route -a "127.0.0.1:${NS[0]}" -b 10 -t 100 -c 8 -p 4 -d 8s --json >"$OUT/route-alone-$TIMINGS.json"
	bench_bg --broker-sets 50 --replicas 3 --heartbeat-interval "$hbi" -d 20s \
		--json >"$OUT/heartbeats-$TIMINGS.json" 2>"$WORK/hb.err"
	hb=$!
	sleep 2
	cpu0=$(node_cpu_ticks)
	sleep 4 # the three nodes' CPU for the heartbeats alone
	cpu1=$(node_cpu_ticks)
	"$BENCH" route -a "127.0.0.1:${NS[0]}" -b 10 -t 100 -c 8 -p 4 -d 8s --json >"$OUT/route-beside-$TIMINGS.json"
	for i in 0 1 2; do
		echo "  node $i: $(curl -s "http://127.0.0.1:${HTTP[$i]}/metrics" | grep -E '^rmqns_controller_(live_brokers|turn_age_seconds) ' | tr '\n' ' ')"
	done
	wait "$hb" || true
	python3 - "$OUT" "$TIMINGS" "$cpu0" "$cpu1" "$(getconf CLK_TCK)" <<'EOF'
import json,sys
out,t=sys.argv[1],sys.argv[2]
def tput(f):
    d=json.load(open(f)); r=d["roles"]["route"]
    return r["throughput_rps"], r["latency_us"]["p99"] / 1000, r["seconds"]
a=tput(f"{out}/route-alone-{t}.json"); b=tput(f"{out}/route-beside-{t}.json")
hb=json.load(open(f"{out}/heartbeats-{t}.json"))["controller"]["heartbeats"]
print("controller-failover: %.0f heartbeats/s sent to the three controllers in all (%.0f/s each)" % (hb["per_s"], hb["per_s"]/3))
print("controller-failover: route alone %.0f/s p99 %.2f ms; beside the heartbeats %.0f/s p99 %.2f ms (ratio %.3f)" % (a[0], a[1], b[0], b[1], b[0]/a[0]))
cpu_s = (int(sys.argv[4]) - int(sys.argv[3])) / int(sys.argv[5])
print("controller-failover: the three nodes' CPU for heartbeats alone: %.2f s in 4 s, %.1f us per heartbeat" % (cpu_s, cpu_s / (4 * hb["per_s"]) * 1e6 if hb["per_s"] else 0))
EOF
	;;
*) echo "controller-failover: unknown part $part" >&2; exit 2 ;;
esac
done
