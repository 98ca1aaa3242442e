#!/usr/bin/env bash
# Measures rmqns against its performance targets on this machine and prints
# the table: route throughput as a fraction of rmqns-floor (two shapes of
# load), route latency and throughput during a registration storm (closed
# and open loop), heartbeats and KV writes beside the storm, a mass
# disconnect, RSS with many brokers and topics, and exec -> first answer.
# Starts its own rmqns and rmqns-floor on free loopback ports and stops
# exactly those (by PID). Every run is bounded; -x skips groups of them.
set -euo pipefail

usage() {
	cat <<'USAGE'
Usage: targets.sh [-b BUILD_DIR] [-d SECONDS] [-r ROUNDS] [-s ROUNDS] [-x GROUPS] [-q]
                  [-o DIR] [-- RMQNS_ARGS...]

  -b BUILD_DIR   where rmqns and tools/bench/ were built (default: build)
  -d SECONDS     length of each route run (default 10; the storm runs are twice that)
  -r ROUNDS      interleaved rmqns/floor rounds per route shape (default 3)
  -s ROUNDS      storm rounds (default 1): each is a closed-loop storm run and, unless
                 kv is skipped, one with a KV PUT every 10 ms, interleaved; the route
                 ratio and 904 verdicts take the worst run, the KV one the medians
  -x GROUPS      skip these, comma-separated: route, storm, kv, openloop,
                 control, disconnect, rss, startup
  -q             quick: -x disconnect,rss (the runs that seed 32 x 40,000 topics)
  -o DIR         keep logs and JSON results here (default: a temporary directory)
  -- ARGS        extra rmqns options, e.g. --routeQueryInline=true

Groups: route (targets 1-2), storm (3, 4, 904), kv (registration p99 with KV
writes), openloop (30,000/s), control (the storm and open-loop runs with
rmqns-floor answering and the storm sent to a second rmqns: what the same
load costs on this machine a server that does none of the storm's work),
disconnect (32 x 40,000 mass disconnect), rss
(32 x 40,000 shared and distinct), startup.
USAGE
}

build=build
dur=10
rounds=3
storm_rounds=1
skip=,
outdir=
while [ $# -gt 0 ]; do
	case "$1" in
	-b) build=$2; shift 2 ;;
	-d) dur=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-s) storm_rounds=$2; shift 2 ;;
	-x) skip="$skip$2,"; shift 2 ;;
	-q) skip="${skip}disconnect,rss,"; shift ;;
	-o) outdir=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	*) usage >&2; exit 2 ;;
	esac
done
server_args=("$@")
for g in $(echo "$skip" | tr ',' ' '); do
	case "$g" in
	route|storm|kv|openloop|control|disconnect|rss|startup) ;;
	*) echo "targets.sh: unknown group '$g'" >&2; usage >&2; exit 2 ;;
	esac
done
want() { case "$skip" in *",$1,"*) return 1 ;; *) return 0 ;; esac; }
rmqns=$build/rmqns
bench=$build/tools/bench/rmqns-bench
floor=$build/tools/floor/rmqns-floor
here=$(cd "$(dirname "$0")" && pwd)
for b in "$rmqns" "$bench" "$floor"; do
	[ -x "$b" ] || { echo "targets.sh: $b is not built" >&2; exit 2; }
done
keep=1
if [ -z "$outdir" ]; then outdir=$(mktemp -d); keep=0; fi
mkdir -p "$outdir"

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ "$keep" = 1 ] || rm -rf "$outdir"
}
trap cleanup EXIT

# Starts rmqns in a fresh home; sets server_pid and server_port.
start_rmqns() {
	local home
	home=$(mktemp -d "$outdir/home.XXXXXX")
	HOME=$home ROCKETMQ_HOME=$home "$rmqns" --listenPort=0 --bindAddress=127.0.0.1 \
		"${server_args[@]}" >"$home/out" 2>"$home/log" &
	server_pid=$!
	pids+=("$server_pid")
	for _ in $(seq 200); do
		server_port=$(sed -n 's/.*boot success.*:\([0-9][0-9]*\).*/\1/p' "$home/out" | head -1)
		[ -n "$server_port" ] && return 0
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "targets.sh: rmqns did not boot; its log:" >&2
	cat "$home/log" >&2
	exit 1
}
stop_pid() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

"$floor" --port 0 >"$outdir/floor.out" 2>"$outdir/floor.log" &
floor_pid=$!
pids+=("$floor_pid")
for _ in $(seq 100); do
	floor_port=$(sed -n 's/.*127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$outdir/floor.out" | head -1)
	[ -n "$floor_port" ] && break
	sleep 0.05
done
[ -n "${floor_port:-}" ] || { echo "targets.sh: rmqns-floor did not start" >&2; exit 1; }

rows=()
row() { rows+=("$(printf '%-58s %-16s %-14s %s' "$1" "$2" "$3" "$4")"); }
verdict() { # value op limit
	awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN { ok = (op == ">=") ? (v >= l) : (v <= l); print ok ? "met" : "NOT met" }'
}
# median and maximum of the numbers on stdin ("" when none)
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
maximum() { sort -g | tail -1; }
# the p99 (ms) of the storm phase on a liveness line of a mixed report ("904 heartbeat:", ...)
storm_p99() { sed -n "s/^$1.*storm p50 [0-9.]* ms, p99 \([0-9.]*\) ms.*/\1/p" "$2"; }
ratio_of() { sed -n 's/^storm vs idle: p99 x \([0-9.]*\), throughput x \([0-9.]*\)$/\'"$1"'/p' "$2"; }
# the same ratio from the wire latencies (ending at the kernel's receive
# timestamp: without the bench thread's own wake-up delay)
wire_ratio_of() { sed -n 's/^storm vs idle, wire: p99 x \([0-9.]*\) .*/\1/p' "$1"; }

# 1-2. route throughput against the floor, interleaved
if want route; then
start_rmqns
for shape in "8 4" "16 8"; do
	set -- $shape
	echo "== route, 10 brokers x 100 topics, $1 conns x depth $2 (rmqns vs floor, $rounds rounds)" >&2
	RMQNS_BENCH=$bench "$here/compare.sh" "127.0.0.1:$server_port" "127.0.0.1:$floor_port" \
		-r "$rounds" -o "$outdir/route-$1x$2" --pid-a "$server_pid" --pid-b "$floor_pid" \
		-- route -d "$dur" -c "$1" -p "$2" -b 10 -t 100 >"$outdir/route-$1x$2.txt" || true
	cat "$outdir/route-$1x$2.txt" >&2
	frac=$(awk '$1 == "route.throughput_rps" { print $4 }' "$outdir/route-$1x$2.txt")
	rps=$(awk '$1 == "route.throughput_rps" { printf "%.0f/s", $2 }' "$outdir/route-$1x$2.txt")
	row "route throughput, $1 x $2, as a fraction of the floor" "${frac:-?} ($rps)" ">= 0.85" \
		"$(verdict "${frac:-0}" ">=" 0.85)"
done
stop_pid "$server_pid"
fi

# The mixed runs load for 2 s before measuring: without it the idle phase
# began with the connections' first second (an open-loop schedule counts
# the connects; p99 of 20 ms in that second), a reference that moved from
# run to run.
# 3. route during a registration storm (closed loop, 8 x 4), with four
# heartbeat brokers (904 + 322 every 10 ms); interleaved with the same run
# plus a KV PUT every 10 ms, each on a fresh rmqns
storm_run() { # name extra-args...
	local name=$1
	shift
	start_rmqns
	echo "== mixed ($name): route idle, then during 4 brokers x 10000 topics re-registering" >&2
	"$bench" mixed -a "127.0.0.1:$server_port" -d "$((2 * dur))" --warmup 2s --storm-brokers 4 \
		--storm-topics 10000 --heartbeats 4 --pid "$server_pid" --quiet "$@" \
		>"$outdir/$name.txt" || true
	cat "$outdir/$name.txt" >&2
	stop_pid "$server_pid"
}
if want storm || want kv; then
	for i in $(seq "$storm_rounds"); do
		if want storm || want kv; then storm_run "mixed-$i" --plot "$outdir/mixed-$i.svg"; fi
		if want kv; then storm_run "mixed-kv-$i" --kv-interval 10ms; fi
	done
fi
if want storm; then
	p99r=$(for i in $(seq "$storm_rounds"); do ratio_of 1 "$outdir/mixed-$i.txt"; done | maximum)
	thr=$(for i in $(seq "$storm_rounds"); do ratio_of 2 "$outdir/mixed-$i.txt"; done | sort -g | head -1)
	hb=$(for i in $(seq "$storm_rounds"); do storm_p99 "904 heartbeat:" "$outdir/mixed-$i.txt"; done | maximum)
	row "route p99 during the storm / idle p99 (worst of $storm_rounds)" "${p99r:-?}" "<= 3" \
		"$(verdict "${p99r:-99}" "<=" 3)"
	row "route throughput during the storm / idle (worst)" "${thr:-?}" ">= 0.5" \
		"$(verdict "${thr:-0}" ">=" 0.5)"
	row "BROKER_HEARTBEAT (904) p99 during the storm, ms (worst)" "${hb:-?}" "<= 2" \
		"$(verdict "${hb:-99}" "<=" 2)"
	p99w=$(for i in $(seq "$storm_rounds"); do wire_ratio_of "$outdir/mixed-$i.txt"; done | maximum)
	hbw=$(for i in $(seq "$storm_rounds"); do storm_p99 "wire 904 heartbeat:" "$outdir/mixed-$i.txt"; done | maximum)
	row "  the same, wire: route p99 storm / idle (worst)" "${p99w:-?}" "<= 3" \
		"$(verdict "${p99w:-99}" "<=" 3)"
	row "  the same, wire: 904 p99 during the storm, ms (worst)" "${hbw:-?}" "<= 2" \
		"$(verdict "${hbw:-99}" "<=" 2)"
fi
if want kv; then
	base=$(for i in $(seq "$storm_rounds"); do storm_p99 "103 storm registrations:" "$outdir/mixed-$i.txt"; done | median)
	withkv=$(for i in $(seq "$storm_rounds"); do storm_p99 "103 storm registrations:" "$outdir/mixed-kv-$i.txt"; done | median)
	kvr=$(awk -v a="${withkv:-0}" -v b="${base:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b }')
	row "registration p99 with a KV PUT every 10 ms / without" "${kvr:-?} (${withkv:-?}/${base:-?} ms)" \
		"<= 1.10" "$(verdict "${kvr:-99}" "<=" 1.10)"
fi

# 3'. the same storm, route queries in open loop at 30,000/s, with the
# heartbeat brokers beside it
if want openloop; then
	start_rmqns
	echo "== mixed, open loop at 30000 requests/s" >&2
	"$bench" mixed -a "127.0.0.1:$server_port" -d "$((2 * dur))" --warmup 2s -r 30000 --storm-brokers 4 \
		--storm-topics 10000 --heartbeats 4 --pid "$server_pid" --quiet >"$outdir/mixed-open.txt" || true
	cat "$outdir/mixed-open.txt" >&2
	p99o=$(ratio_of 1 "$outdir/mixed-open.txt")
	row "route p99 during the storm / idle, open loop 30,000/s" "${p99o:-?}" "<= 2" \
		"$(verdict "${p99o:-99}" "<=" 2)"
	p99ow=$(wire_ratio_of "$outdir/mixed-open.txt")
	row "  the same, wire" "${p99ow:-?}" "<= 2" "$(verdict "${p99ow:-99}" "<=" 2)"
	hbo=$(storm_p99 "904 heartbeat:" "$outdir/mixed-open.txt")
	row "  904 p99 during the storm, open loop, ms" "${hbo:-?}" "<= 2" "$(verdict "${hbo:-99}" "<=" 2)"
	stop_pid "$server_pid"
fi

# 3*. the control: the same two storm runs, but rmqns-floor answers the
# route and heartbeat traffic and the storm goes to a second rmqns. The
# floor does none of the storm's work, so what it measures is the cost of
# the load itself on this machine's CPUs: a bound no NameServer beats here.
if want control; then
	start_rmqns
	for mode in closed open; do
		rate=()
		[ "$mode" = open ] && rate=(-r 30000)
		echo "== control ($mode loop): rmqns-floor answering, the storm to a second rmqns" >&2
		"$bench" mixed -a "127.0.0.1:$floor_port" -d "$((2 * dur))" --warmup 2s "${rate[@]}" \
			--storm-brokers 4 --storm-topics 10000 --storm-addr "127.0.0.1:$server_port" \
			--heartbeats 4 --quiet >"$outdir/control-$mode.txt" || true
		cat "$outdir/control-$mode.txt" >&2
	done
	stop_pid "$server_pid"
	c904=$(storm_p99 "904 heartbeat:" "$outdir/control-closed.txt")
	row "control: 904 p99 during the storm, closed loop, ms" "${c904:-?}" "(the floor)" "-"
	c904w=$(storm_p99 "wire 904 heartbeat:" "$outdir/control-closed.txt")
	row "  the same, wire, ms" "${c904w:-?}" "(the floor)" "-"
	cp99o=$(ratio_of 1 "$outdir/control-open.txt")
	row "control: route p99 storm / idle, open loop 30,000/s" "${cp99o:-?}" "(the floor)" "-"
	cp99ow=$(wire_ratio_of "$outdir/control-open.txt")
	row "  the same, wire" "${cp99ow:-?}" "(the floor)" "-"
fi

# 3''. mass disconnect: 32 brokers x 40,000 topics close their connections at once
if want disconnect; then
	start_rmqns
	echo "== disconnect: 32 brokers x 40000 topics x 8 queues close at once" >&2
	"$bench" disconnect -a "127.0.0.1:$server_port" -b 32 -t 40000 --queues 8 -d 60s \
		--pid "$server_pid" --quiet >"$outdir/disconnect.txt" || true
	cat "$outdir/disconnect.txt" >&2
	gone=$(sed -n 's/^  routes gone after \([0-9.]*\) ms.*/\1/p' "$outdir/disconnect.txt")
	regmax=$(sed -n 's/.*registrations meanwhile: .* max \([0-9.]*\) ms$/\1/p' "$outdir/disconnect.txt")
	row "mass disconnect 32 x 40,000: every route gone, ms" "${gone:-?}" "< 1000" \
		"$(verdict "${gone:-999999}" "<=" 999.999)"
	row "a 100-topic registration during it (max), ms" "${regmax:-?}" "< 50" \
		"$(verdict "${regmax:-999999}" "<=" 49.999)"
	stop_pid "$server_pid"
fi

# 4. RSS with 32 brokers x 40,000 topics x 8 queues
for layout in shared distinct; do
	want rss || break
	start_rmqns
	echo "== seed: 32 brokers x 40000 topics x 8 queues, $layout topics" >&2
	"$bench" seed -a "127.0.0.1:$server_port" -b 32 -t 40000 --queues 8 --layout "$layout" -d 3s \
		--pid "$server_pid" --quiet >"$outdir/rss-$layout.txt" || true
	cat "$outdir/rss-$layout.txt" >&2
	rss=$(sed -n 's/^server pid.* -> \([0-9]*\) kB, peak \([0-9]*\) kB.*/\1/p' "$outdir/rss-$layout.txt")
	mb=$(awk -v k="${rss:-0}" 'BEGIN { printf "%.0f", k / 1024 }')
	mbtxt=${rss:+$mb}
	limit=150
	[ "$layout" = distinct ] && limit=120
	row "RSS, 32 brokers x 40,000 topics x 8 queues ($layout), MB" "${mbtxt:-?}" "<= $limit" \
		"$(verdict "${rss:-999999999}" "<=" $((limit * 1024)))"
	stop_pid "$server_pid"
done

# 5. exec -> first answer
if want startup; then
echo "== startup" >&2
home=$(mktemp -d "$outdir/home.XXXXXX")
port=$((20000 + RANDOM % 30000))
"$bench" startup -a "127.0.0.1:$port" --runs 5 --quiet \
	--exec "env HOME=$home ROCKETMQ_HOME=$home $rmqns --listenPort=$port --bindAddress=127.0.0.1 ${server_args[*]}" \
	>"$outdir/startup.txt" 2>"$outdir/startup.log" || true
cat "$outdir/startup.txt" >&2
med=$(sed -n 's/^startup: .*median \([0-9.]*\) ms.*/\1/p' "$outdir/startup.txt")
row "start to first answer, median of 5, ms" "${med:-?}" "< 50" "$(verdict "${med:-9999}" "<=" 49.999)"
fi

echo
printf '%-58s %-16s %-14s %s\n' "target" "measured" "wanted" "verdict"
[ ${#rows[@]} -eq 0 ] || printf '%s\n' "${rows[@]}"
