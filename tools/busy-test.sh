#!/usr/bin/env bash
# The README's test command once more, with both CPUs kept busy by another
# process (stress-ng --cpu 2 beside the suite): the suite must hold on a
# loaded host, where every test waits its turn for a CPU. Installs
# stress-ng when missing; stops it by its PID when the suite ends.
#   tools/busy-test.sh            (BUSY_CPUS=N: N busy workers instead of 2)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v stress-ng >/dev/null 2>&1; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends stress-ng
fi

# --timeout bounds the load even if this script is killed before its trap
stress-ng --cpu "${BUSY_CPUS:-2}" --timeout 3600s --quiet &
stress_pid=$!
stop_stress() {
	kill "$stress_pid" 2>/dev/null || true
	wait "$stress_pid" 2>/dev/null || true
}
trap stop_stress EXIT
sleep 2
if ! kill -0 "$stress_pid" 2>/dev/null; then
	echo "busy-test: stress-ng did not start" >&2
	exit 1
fi
echo "busy-test: stress-ng --cpu ${BUSY_CPUS:-2} (pid $stress_pid) beside the suite, load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
# One test at a time: the load is stress-ng's, not the suite's own tests
# competing with each other (three-node controller groups two at a time on
# two busy CPUs measure the machine, not rmqns).
RMQNS_TEST_PROCESSES=${RMQNS_TEST_PROCESSES:-1} tools/quickstart.sh test
echo "busy-test: the suite passed in $(( $(date +%s) - start )) s beside the load, load $(cut -d' ' -f1-3 /proc/loadavg)"
