#!/usr/bin/env bash
# The alert rules (deploy/prometheus) and the Grafana dashboard
# (deploy/grafana) against a live server: promtool checks the rules and a
# scrape; a real rmqns with an embedded controller (a group of one), seeded
# brokers and a broker set in controller mode is scraped every second by a
# short-lived Prometheus on loopback (its own data directory), and every
# rule and every dashboard expression is evaluated through its HTTP API.
# Fails when an expression errors, a rule's evaluation fails, an
# expression names a metric that has no series (a renamed metric fails
# here), or a dashboard panel shows nothing; the PENDING list in the check
# names what other branches add.
#   tools/observability-test.sh [BUILD_DIR]   (default build)
# RULES= and DASHBOARD= name other files to check.
# Installs Debian's prometheus package when promtool or prometheus is
# missing. Ends only the processes it started.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
RULES=${RULES:-deploy/prometheus/rmqns-rules.yml}
DASHBOARD=${DASHBOARD:-deploy/grafana/rmqns-dashboard.json}
t0=$(date +%s)
step() { echo "observability-test: $* ($(( $(date +%s) - t0 )) s)"; }
fail() { echo "observability-test: FAIL: $*" >&2; exit 1; }

[ -x "$BUILD/rmqns" ] || fail "$BUILD/rmqns is not built"
BUILD=$(cd "$BUILD" && pwd)
[ -x "$BUILD/tools/bench/rmqns-bench" ] || fail "$BUILD/tools/bench/rmqns-bench is not built"
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
	step "installing prometheus"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
command -v python3 >/dev/null || fail "python3 is needed"

step "promtool check rules"
promtool check rules "$RULES"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rmqns-observability-XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ "${KEEP:-}" = 1 ]; then echo "observability-test: keeping $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# A free port below the ephemeral range, so that no outbound connection
# (the server's, Prometheus's scrapes) takes it between this pick and the bind.
free_port() {
	python3 -c 'import random, socket
for _ in range(200):
    p = random.randint(10000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break'
}
HTTP_PORT=$(free_port)
PROM_PORT=$(free_port)

# the controller port and its Raft port (controllerRaftPortOffset=1) side by side
CTL_PORT=$(python3 -c '
import socket
for _ in range(100):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", p + 1)); print(p); break
    except OSError: pass
    finally: s.close(); t.close()
')

step "starting rmqns with an embedded controller (HTTP port $HTTP_PORT, controller $CTL_PORT)"
mkdir -p "$TMP/rmqns"
(cd "$TMP/rmqns" && HOME="$TMP/rmqns" exec "$BUILD/rmqns" --listenPort=0 \
	--bindAddress=127.0.0.1 --httpPort="$HTTP_PORT" --enableControllerInNamesrv=true \
	--controllerDLegerGroup=ObsGroup --controllerDLegerPeers="n0-127.0.0.1:$CTL_PORT" \
	--controllerDLegerSelfId=n0 --controllerRaftPortOffset=1 \
	--controllerStorePath="$TMP/rmqns/controller" >stdout.txt 2>stderr.txt) &
pids+=($!)
PORT=
for _ in $(seq 100); do
	PORT=$(sed -n 's/.*boot success.*address 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$TMP/rmqns/stdout.txt")
	[ -n "$PORT" ] && break
	kill -0 "${pids[0]}" 2>/dev/null || { cat "$TMP/rmqns/stderr.txt" >&2; fail "rmqns exited"; }
	sleep 0.1
done
[ -n "$PORT" ] || fail "rmqns did not boot"

step "seeding brokers on port $PORT"
# two brokers re-registering every 5 s for the rest of the run, and a few
# route queries so the request families have series
"$BUILD/tools/bench/rmqns-bench" seed -a "127.0.0.1:$PORT" -b 2 -t 4 --keepalive 5s -d 240s \
	>"$TMP/seed.txt" 2>&1 &
pids+=($!)
# wait_sample NAME VALUE: until the node's unlabelled sample NAME is VALUE (20 s at most)
wait_sample() {
	local i
	for i in $(seq 200); do
		[ "$(curl -sf "http://127.0.0.1:$HTTP_PORT/metrics" | sed -n "s/^$1 //p")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
wait_sample rmqns_brokers_live 2 || { cat "$TMP/seed.txt" >&2; fail "the seeded brokers did not register"; }
"$BUILD/tools/bench/rmqns-bench" route -a "127.0.0.1:$PORT" --no-seed -b 2 -t 4 -c 1 -p 1 -n 200 \
	-d 5s >"$TMP/route.txt" 2>&1 ||
	{ cat "$TMP/route.txt" >&2; fail "route queries failed"; }

step "brokers in controller mode: one set of two"
"$BUILD/tools/bench/rmqns-bench" controller --controller-addr "127.0.0.1:$CTL_PORT" \
	-a "127.0.0.1:$PORT" --broker-sets 1 --replicas 2 --broker-prefix obsset -d 240s --quiet \
	>"$TMP/controller.txt" 2>&1 &
pids+=($!)
wait_sample rmqns_controller_masters 1 || { cat "$TMP/controller.txt" >&2; fail "the controller elected no master"; }

step "promtool check metrics"
curl -sf "http://127.0.0.1:$HTTP_PORT/metrics" >"$TMP/scrape.txt"
promtool check metrics <"$TMP/scrape.txt"

step "starting prometheus on 127.0.0.1:$PROM_PORT"
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $(realpath "$RULES")
scrape_configs:
  - job_name: rmqns
    static_configs:
      - targets: ['127.0.0.1:$HTTP_PORT']
EOF
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$TMP/prometheus.log" 2>&1 &
pids+=($!)
API="http://127.0.0.1:$PROM_PORT"
for _ in $(seq 150); do
	curl -sf "$API/-/ready" >/dev/null 2>&1 && break
	kill -0 "${pids[3]}" 2>/dev/null || { cat "$TMP/prometheus.log" >&2; fail "prometheus exited"; }
	sleep 0.2
done
curl -sf "$API/-/ready" >/dev/null || { cat "$TMP/prometheus.log" >&2; fail "prometheus not ready"; }

step "evaluating the rules and the dashboard"
python3 - "$API" "$DASHBOARD" <<'PY' || { cat "$TMP/prometheus.log" >&2; fail "see above"; }
import json, re, sys, time, urllib.parse, urllib.request

api, dashboard = sys.argv[1], sys.argv[2]

def get(path, **params):
    url = api + path + ("?" + urllib.parse.urlencode(params, doseq=True) if params else "")
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)

def instant(q):
    return get("/api/v1/query", query=q)

# a few scrapes, the brokers' heartbeat series among them, and every rule evaluated
deadline = time.time() + 60
while True:
    up = instant('count_over_time(up{job="rmqns"}[1m])')
    hb = instant("rmqns_broker_heartbeat_age_seconds")
    rules = [r for g in get("/api/v1/rules")["data"]["groups"] for r in g["rules"]]
    scrapes = float(up["data"]["result"][0]["value"][1]) if up["data"]["result"] else 0
    if scrapes >= 8 and hb["data"]["result"] and rules and all(r["health"] != "unknown" for r in rules):
        break
    if time.time() > deadline:
        sys.exit("no scrapes or no rule evaluations within 60 s (%g scrapes, %d rules)" % (scrapes, len(rules)))
    time.sleep(0.5)

names = set(get("/api/v1/label/__name__/values")["data"])

# PENDING (the lead removes these after merging the branches that add the
# series): names and panels that have no series on this branch's server.
#   rmqns_controller_live_brokers_max     branch ctl-guard
#   rmqns_controller_raft_refused_total   branch raft-tls
#   rmqns_requests_total{port="controller"} and the duration histogram's
#   port="controller" (the two "Controller port" panels)   branch admin-details
PENDING_NAMES = set()
PENDING_PANELS = set()
# panels empty by design while nothing is wrong
QUIET_PANELS = {"Brokers gone in the last 10 minutes", "Answers other than SUCCESS"}

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan", "atan2",
            # aggregations, which may put their grouping before the parenthesis
            "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
            "bottomk", "topk", "quantile"}

def metric_names(expr):
    """Metric names an expression selects: identifiers that are neither
    functions, keywords, label names (in braces or grouping lists) nor parts
    of strings and durations."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r" \1 ", e)
    found = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word, rest = m.group(0), e[m.end():]
        if word in KEYWORDS or rest.lstrip().startswith("("):
            continue
        if m.start() > 0 and (e[m.start() - 1].isdigit() or e[m.start() - 1] == "."):
            continue  # 1e3, 0.5 and the like
        found.add(word)
    return found

failures = []

def check(where, expr):
    """The expression evaluates; returns its number of series."""
    r = instant(expr)
    if r.get("status") != "success":
        failures.append("%s: %s\n    %s" % (where, r.get("error", r), expr))
        return 0
    for name in sorted(metric_names(expr)):
        if name not in names and name not in PENDING_NAMES:
            failures.append("%s: metric %s has no series\n    %s" % (where, name, expr))
    n = len(r["data"]["result"]) if isinstance(r["data"]["result"], list) else 1
    print("  ok  %-45s %3d series  %s" % (where[:45], n, expr.replace("\n", " ")[:90]))
    return n

print("rules:")
for r in rules:
    check("rule " + r["name"], r["query"])
    if r["health"] != "ok":
        failures.append("rule %s: evaluation failed: %s" % (r["name"], r.get("lastError")))

def dashboard_panels(d):
    for p in d.get("panels", []):
        yield from dashboard_panels(p)
        exprs = [t["expr"] for t in p.get("targets", []) if t.get("expr")]
        if exprs:
            yield p.get("title", "?"), exprs

def grafana_vars(expr):
    # the values a Grafana user would pick: the job scraped here, all nodes
    for var, val in (("__rate_interval", "1m"), ("__interval", "15s"), ("__range", "1h"),
                     ("job", "rmqns"), ("instance", ".*"), ("datasource", "")):
        expr = expr.replace("${%s}" % var, val).replace("$" + var, val)
    if "$" in expr:
        failures.append("an unknown dashboard variable in: " + expr)
    return expr

d = json.load(open(dashboard))
print("dashboard:")
count = 0
# every panel shows something on a node with a controller and brokers,
# but those empty by design and the PENDING ones
for title, exprs in dashboard_panels(d):
    shown = sum(check("panel " + title, grafana_vars(e)) for e in exprs)
    count += len(exprs)
    if not shown and title not in QUIET_PANELS | PENDING_PANELS:
        failures.append("panel %s shows no series" % title)
for v in d.get("templating", {}).get("list", []):
    q = v.get("query")
    q = q.get("query") if isinstance(q, dict) else q
    m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q or "")
    if v.get("type") == "query" and m:
        check("variable " + v["name"], grafana_vars(m.group(1)))
        count += 1
if count == 0:
    failures.append("no expressions found in " + dashboard)

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("%d rules and %d dashboard expressions checked" % (len(rules), count))
PY
step "done"
