#!/usr/bin/env bash
# Runs the same rmqns-bench scenario against two NameServers, interleaved
# (A, B, A, B, ...) so that drifts of a shared machine hit both alike, then
# prints the median of every figure on each side and the A/B ratios.
# Typical use: A = rmqns, B = rmqns-floor (B's figures are then "the floor").
set -euo pipefail

usage() {
	cat <<'USAGE'
Usage: compare.sh ADDR_A ADDR_B [-r ROUNDS] [-o DIR] [--pid-a PID] [--pid-b PID] [-- SCENARIO OPTIONS...]

  ADDR_A, ADDR_B   HOST:PORT of the two servers
  -r ROUNDS        runs on each side (default 3)
  -o DIR           keep the JSON results here (default: a temporary directory, removed)
  --pid-a/--pid-b  server PIDs, for CPU and RSS figures (local servers only)
  -- ...           the rmqns-bench scenario and options (default: route -d 10s)

The rmqns-bench binary is $RMQNS_BENCH, or build/tools/bench/rmqns-bench.
USAGE
}

[ $# -ge 2 ] || { usage >&2; exit 2; }
case "$1" in -h|--help) usage; exit 0 ;; esac
addr_a=$1
addr_b=$2
shift 2
rounds=3
outdir=
pid_a=
pid_b=
while [ $# -gt 0 ]; do
	case "$1" in
	-r) rounds=$2; shift 2 ;;
	-o) outdir=$2; shift 2 ;;
	--pid-a) pid_a=$2; shift 2 ;;
	--pid-b) pid_b=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) usage; exit 0 ;;
	*) echo "compare.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
	esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: bad -r $rounds" >&2; exit 2; }
if [ $# -eq 0 ]; then
	set -- route -d 10s
fi

here=$(cd "$(dirname "$0")" && pwd)
bench=${RMQNS_BENCH:-$here/../../build/tools/bench/rmqns-bench}
[ -x "$bench" ] || { echo "compare.sh: no rmqns-bench at $bench (set RMQNS_BENCH)" >&2; exit 2; }

keep=1
if [ -z "$outdir" ]; then
	outdir=$(mktemp -d)
	keep=0
fi
mkdir -p "$outdir"
cleanup() { [ "$keep" = 1 ] || rm -rf "$outdir"; }
trap cleanup EXIT

failed=0
run_side() { # side addr pid round
	local side=$1 addr=$2 pid=$3 round=$4 extra=()
	[ -n "$pid" ] && extra=(--pid "$pid")
	local out="$outdir/$side-$round.json"
	echo "round $round: $side ($addr)" >&2
	if ! "$bench" "${bench_args[@]}" "${extra[@]}" -a "$addr" --json --quiet >"$out"; then
		echo "compare.sh: run $side-$round reported errors (kept in the figures)" >&2
		failed=$((failed + 1))
	fi
	[ -s "$out" ] || { echo "compare.sh: run $side-$round produced no result" >&2; rm -f "$out"; }
}
bench_args=("$@")
for ((i = 1; i <= rounds; i++)); do
	run_side A "$addr_a" "$pid_a" "$i"
	run_side B "$addr_b" "$pid_b" "$i"
done

shopt -s nullglob
a=("$outdir"/A-*.json)
b=("$outdir"/B-*.json)
if [ ${#a[@]} -eq 0 ] || [ ${#b[@]} -eq 0 ]; then
	echo "compare.sh: no results on one side" >&2
	exit 1
fi
echo "A = $addr_a, B = $addr_b, ${#a[@]}+${#b[@]} runs of: ${bench_args[*]}"
"$bench" ratio "${a[@]}" -- "${b[@]}"
[ "$failed" -eq 0 ]
