#!/usr/bin/env bash
# Runs the libFuzzer targets long, one after another, at the lowest CPU
# priority: tools/fuzz-long.sh [EXECUTIONS] [TARGET...]  (default 10000000
# executions each, every target; FUZZ_JOBS=N splits each target's count
# over N processes side by side on one corpus). Each target starts from its committed
# seeds (tests/fuzz/corpus/<target>) and keeps what it finds in
# build-fuzz-long/<target>/corpus, so a second run goes on from there.
# Prints the executions and time per target; exits 1 if any target found
# a crash (the input is in build-fuzz-long/<target>/). The targets are
# built with -O2 (ASan and UBSan as in CI's -O0 fuzz stage): the stateful
# fuzz_route runs 2.4 times as many inputs a second that way.
set -euo pipefail
cd "$(dirname "$0")/.."
execs=${1:-10000000}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_regbody fuzz_bodies fuzz_properties fuzz_kv_load fuzz_route fuzz_frame)

build=build-fuzz-long
if [ ! -f $build/build.ninja ]; then
	CC=clang meson setup $build -Dfuzz=true -Dtests=true -Db_lundef=false -Dbuildtype=debugoptimized >/dev/null
fi
nice -n 19 ninja -C $build $(printf 'tests/fuzz/%s ' "${targets[@]}") >/dev/null

# Frees the route registry defers to RCU callbacks land after the input
# that made them, which libFuzzer's per-input leak check reports as leaks;
# those targets run without it (the ASan and valgrind stages check leaks).
opts_for() {
	case "$1" in
	fuzz_route) echo "-detect_leaks=0 -max_len=256" ;;
	fuzz_bodies) echo "-detect_leaks=0 -max_len=4096" ;;
	*) echo "-max_len=4096" ;;
	esac
}

jobs=${FUZZ_JOBS:-1}
status=0
for t in "${targets[@]}"; do
	dir=$build/$t
	mkdir -p "$dir/corpus"
	seeds=tests/fuzz/corpus/$t
	[ "$t" = fuzz_frame ] && seeds=tests/data/java-4.9.8/frames
	begin=$(date +%s)
	rm -f "$dir"/fuzz-*.log
	rc=0
	# shellcheck disable=SC2046
	(cd "$dir" && nice -n 19 "../tests/fuzz/$t" -runs=$((execs / jobs)) -error_exitcode=1 -jobs="$jobs" -workers="$jobs" -timeout=20 \
		-rss_limit_mb=2048 -print_final_stats=1 $(opts_for "$t") corpus "../../$seeds" \
		>/dev/null 2>&1) || rc=$?
	# job k writes its output to fuzz-k.log
	runs=0
	for log in "$dir"/fuzz-*.log; do
		n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
		runs=$((runs + ${n:-0}))
	done
	log=$dir/fuzz-0.log
	if [ $rc -ne 0 ] && grep -q 'libFuzzer: run interrupted' "$dir"/fuzz-*.log; then
		echo "$t: ${runs:-?} executions in $(( $(date +%s) - begin )) s, interrupted"
		status=1
	else
		echo "$t: ${runs:-?} executions in $(( $(date +%s) - begin )) s$([ $rc -ne 0 ] && echo ", FAILED (exit $rc, see $log)")"
		[ $rc -eq 0 ] || status=1
	fi
	for log in "$dir"/fuzz-*.log; do cp "$log" "$dir/last-${log##*/fuzz-}"; done
done
exit $status
