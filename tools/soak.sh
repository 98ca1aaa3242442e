#!/usr/bin/env bash
# Soak test: tools/soak.sh MINUTES (default 10). Starts build/rmqns on a free
# loopback port and runs rmqns-bench scenarios against it in parallel for
# MINUTES: route queries (open loop), re-registrations, brokers that stop
# re-registering and expire (the 120 s timeout) and come back, connection
# churn, and the liveness and KV traffic of `mixed` (heartbeats, data
# version queries, PUT_KV_CONFIG every 50 ms) beside a small registration
# storm. Idle connections are closed after 200 s, past the brokers' 120 s
# expiry, so that the expiring brokers expire rather than idle out. Every minute it prints the server's RSS and open descriptors
# (from /proc); at the end the requests served and errors per scenario.
# Fails (exit 1) when RSS or descriptors keep growing: the last sample
# above twice the one at minute 2 plus 32 MB, or more than 64 descriptors
# above it; or when the server does not exit 0 on SIGTERM.
# Not for CI; run it niced on a shared machine (nice -n 10 tools/soak.sh 10).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
[[ $minutes =~ ^[0-9]+$ && $minutes -ge 3 ]] || { echo "usage: $0 MINUTES (at least 3)" >&2; exit 2; }
bin=build/rmqns
bench=build/tools/bench/rmqns-bench
[ -x "$bin" ] && [ -x "$bench" ] || { echo "soak: build first (ninja -C build)" >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/rmqns-soak-XXXXXX")
pids=()
server=
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -n "$server" ] && kill "$server" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

HOME=$dir ROCKETMQ_HOME=$dir "$bin" --listenPort=0 --bindAddress=127.0.0.1 \
	--kvConfigPath="$dir/kvConfig.json" --serverChannelMaxIdleTimeSeconds=200 >"$dir/out.txt" 2>"$dir/rmqns.log" &
server=$!
port=
for _ in $(seq 200); do
	port=$(grep -o 'boot success.*address [0-9.]*:[0-9]*' "$dir/out.txt" 2>/dev/null | grep -o '[0-9]*$' || true)
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { echo "soak: the server did not boot" >&2; cat "$dir/rmqns.log" >&2; exit 1; }
addr=127.0.0.1:$port
dur=${minutes}m
echo "soak: rmqns pid $server on $addr for $minutes minutes"

run() { # name, scenario, then its options (a later -d wins)
	local name=$1 scenario=$2
	shift 2
	"$bench" "$scenario" -a "$addr" -d "$dur" "$@" --json >"$dir/$name.json" 2>"$dir/$name.err" &
	pids+=($!)
}
# the routes queried, kept registered until after the queries end
run seed seed -b 8 -t 100 --keepalive 30s -d $((minutes * 60 + 15))s
sleep 1
run route route --no-seed -b 8 -t 100 -c 4 -p 2 -r 1500
run register register -b 4 -t 500 --interval 200ms --broker-prefix reg --topic-prefix RegTopic \
	--broker-port 21000
# registered once every 150 s: each expires after 120 s, then comes back
run expiry seed -b 4 -t 20 --keepalive 150s --broker-prefix exp --topic-prefix ExpTopic --broker-port 22000
run churn churn -b 2 -t 10 -c 2 --churn-queries 4 --broker-prefix churn --topic-prefix ChurnTopic \
	--broker-port 23000
run mixed mixed -b 2 -t 20 -c 1 -p 1 -r 200 --no-idle --heartbeats 4 --heartbeat-interval 50ms \
	--kv-interval 50ms --storm-brokers 1 --storm-topics 1000 --broker-prefix mix --topic-prefix MixTopic \
	--broker-port 24000

sample() {
	local rss fds
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$server/status")
	fds=$(ls "/proc/$server/fd" | wc -l)
	echo "$rss $fds"
}
printf '%-8s %10s %6s\n' minute rss_kB fds
read -r rss fds < <(sample)
printf '%-8s %10s %6s\n' start "$rss" "$fds"
rss2=$rss fds2=$fds
for m in $(seq "$minutes"); do
	sleep 60
	kill -0 "$server" 2>/dev/null || { echo "soak: the server died" >&2; tail -50 "$dir/rmqns.log" >&2; exit 1; }
	read -r rss fds < <(sample)
	printf '%-8s %10s %6s\n' "$m" "$rss" "$fds"
	[ "$m" -eq 2 ] && rss2=$rss fds2=$fds
done
status=0
for p in "${pids[@]}"; do wait "$p" || true; done
pids=()
read -r rss fds < <(sample)
printf '%-8s %10s %6s\n' end "$rss" "$fds"

python3 - "$dir" <<'EOF'
import json, os, sys
d = sys.argv[1]
total_req = total_err = 0
for name in ['seed', 'route', 'register', 'expiry', 'churn', 'mixed']:
    try:
        doc = json.load(open(os.path.join(d, name + '.json')))
    except (OSError, ValueError):
        print(f'{name:9} no result: ' + open(os.path.join(d, name + '.err')).read().strip()[-200:])
        total_err += 1
        continue
    parts = []
    def walk(o, path):
        if isinstance(o, dict):
            if 'requests' in o and 'errors' in o and isinstance(o['requests'], int):
                why = {k: v for k, v in o.get('errors_by_code', {}).items() if v}
                why.update({k: v for k, v in o.get('transport_errors', {}).items() if v})
                parts.append((path, o['requests'], o['errors'], why))
                return
            for k, v in o.items():
                if not (path == [] and k in ('config', 'seed')):
                    walk(v, path + [k])
    walk(doc, [])
    for path, req, err, why in parts:
        total_req += req
        total_err += err
        print(f'{name:9} {"/".join(path[-2:]):28} {req:10d} requests {err:6d} errors'
              + (f'  {why}' if why else ''))
print(f'total     {"":28} {total_req:10d} requests {total_err:6d} errors')
EOF
echo "brokers expired: $(grep -c 'broker .* expired (silent' "$dir/rmqns.log" || true)," \
	"connections closed: $(grep -c 'closing connection' "$dir/rmqns.log" || true)"

if [ "$rss" -gt $((rss2 * 2 + 32768)) ]; then
	echo "soak: RSS grew from $rss2 kB (minute 2) to $rss kB" >&2
	status=1
fi
if [ "$fds" -gt $((fds2 + 64)) ]; then
	echo "soak: descriptors grew from $fds2 (minute 2) to $fds" >&2
	status=1
fi
kill -TERM "$server"
if wait "$server"; then
	echo "soak: the server exited 0"
else
	echo "soak: the server did not exit 0" >&2
	status=1
fi
server=
exit $status
