#!/usr/bin/env bash
# Measures rmqns against its performance targets on this machine and prints
# the table: route throughput as a fraction of rmqns-floor (two shapes of
# load), route latency and throughput during a registration storm, RSS with
# many brokers and topics, and exec -> first answer. Starts its own rmqns and
# rmqns-floor on free loopback ports and stops exactly those (by PID).
set -euo pipefail

usage() {
	cat <<'USAGE'
Usage: targets.sh [-b BUILD_DIR] [-d SECONDS] [-r ROUNDS] [-o DIR] [-- RMQNS_ARGS...]

  -b BUILD_DIR   where rmqns and tools/bench/ were built (default: build)
  -d SECONDS     length of each route run (default 10; the storm run is twice that)
  -r ROUNDS      interleaved rmqns/floor rounds per route shape (default 3)
  -o DIR         keep logs and JSON results here (default: a temporary directory)
  -- ARGS        extra rmqns options, e.g. --routeQueryInline=true
USAGE
}

build=build
dur=10
rounds=3
outdir=
while [ $# -gt 0 ]; do
	case "$1" in
	-b) build=$2; shift 2 ;;
	-d) dur=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-o) outdir=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	*) usage >&2; exit 2 ;;
	esac
done
server_args=("$@")
rmqns=$build/rmqns
bench=$build/tools/bench/rmqns-bench
floor=$build/tools/bench/rmqns-floor
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

# 1-2. route throughput against the floor, interleaved
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

# 3. route during a registration storm
start_rmqns
echo "== mixed: route idle, then during 4 brokers x 10000 topics re-registering" >&2
"$bench" mixed -a "127.0.0.1:$server_port" -d "$((2 * dur))" --storm-brokers 4 --storm-topics 10000 \
	--pid "$server_pid" --quiet --plot "$outdir/mixed.svg" >"$outdir/mixed.txt" || true
cat "$outdir/mixed.txt" >&2
p99r=$(sed -n 's/^storm vs idle: p99 x \([0-9.]*\), throughput x \([0-9.]*\)$/\1/p' "$outdir/mixed.txt")
thr=$(sed -n 's/^storm vs idle: p99 x \([0-9.]*\), throughput x \([0-9.]*\)$/\2/p' "$outdir/mixed.txt")
row "route p99 during the storm / idle p99" "${p99r:-?}" "<= 3" "$(verdict "${p99r:-99}" "<=" 3)"
row "route throughput during the storm / idle" "${thr:-?}" ">= 0.5" "$(verdict "${thr:-0}" ">=" 0.5)"
stop_pid "$server_pid"

# 4. RSS with 32 brokers x 40,000 topics x 8 queues
for layout in shared distinct; do
	start_rmqns
	echo "== seed: 32 brokers x 40000 topics x 8 queues, $layout topics" >&2
	"$bench" seed -a "127.0.0.1:$server_port" -b 32 -t 40000 --queues 8 --layout "$layout" -d 3s \
		--pid "$server_pid" --quiet >"$outdir/rss-$layout.txt" || true
	cat "$outdir/rss-$layout.txt" >&2
	rss=$(sed -n 's/^server pid.* -> \([0-9]*\) kB, peak \([0-9]*\) kB.*/\1/p' "$outdir/rss-$layout.txt")
	mb=$(awk -v k="${rss:-0}" 'BEGIN { printf "%.0f", k / 1024 }')
	mbtxt=${rss:+$mb}
	row "RSS, 32 brokers x 40,000 topics x 8 queues ($layout), MB" "${mbtxt:-?}" "<= 150" \
		"$(verdict "${rss:-999999999}" "<=" $((150 * 1024)))"
	stop_pid "$server_pid"
done

# 5. exec -> first answer
echo "== startup" >&2
home=$(mktemp -d "$outdir/home.XXXXXX")
port=$((20000 + RANDOM % 30000))
"$bench" startup -a "127.0.0.1:$port" --runs 5 --quiet \
	--exec "env HOME=$home ROCKETMQ_HOME=$home $rmqns --listenPort=$port --bindAddress=127.0.0.1 ${server_args[*]}" \
	>"$outdir/startup.txt" 2>"$outdir/startup.log" || true
cat "$outdir/startup.txt" >&2
med=$(sed -n 's/^startup: .*median \([0-9.]*\) ms.*/\1/p' "$outdir/startup.txt")
row "start to first answer, median of 5, ms" "${med:-?}" "< 50" "$(verdict "${med:-9999}" "<=" 49.999)"

echo
printf '%-58s %-16s %-14s %s\n' "target" "measured" "wanted" "verdict"
printf '%s\n' "${rows[@]}"
