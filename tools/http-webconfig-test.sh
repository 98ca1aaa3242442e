#!/usr/bin/env bash
# The HTTP port behind TLS and basic authentication, scraped by a real
# Prometheus: one rmqns node with httpWebConfigFile (a certificate signed
# by a CA made here, a bcrypt user made with crypt(3)) and a short-lived
# Prometheus on loopback scraping it three ways: scheme https with
# tls_config (the CA, the name checked) and basic_auth (password_file),
# which must be up == 1; the same with a wrong password, and plain http,
# which must both be up == 0. Read through Prometheus's HTTP API.
#   tools/http-webconfig-test.sh [BUILD_DIR]   (default build)
# Installs Debian's prometheus package when it is missing. Ends only the
# processes it started.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
t0=$(date +%s)
step() { echo "http-webconfig-test: $* ($(( $(date +%s) - t0 )) s)"; }
fail() { echo "http-webconfig-test: FAIL: $*" >&2; exit 1; }

[ -x "$BUILD/rmqns" ] || fail "$BUILD/rmqns is not built"
BUILD=$(cd "$BUILD" && pwd)
if ! command -v prometheus >/dev/null; then
	step "installing prometheus"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
for tool in openssl curl python3; do
	command -v "$tool" >/dev/null || fail "$tool is needed"
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rmqns-webconfig-XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ "${KEEP:-}" = 1 ]; then echo "http-webconfig-test: keeping $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

step "certificates and the bcrypt hash"
(
	cd "$TMP"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
		-out ca.pem -days 2 -subj /CN=rmqns-webconfig-test-ca
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout http.key \
		-out http.csr -subj /CN=rmqns-http
	printf 'subjectAltName=DNS:rmqns-http,IP:127.0.0.1\n' >san.ext
	openssl x509 -req -in http.csr -CA ca.pem -CAkey ca.key -set_serial 7 -days 2 \
		-extfile san.ext -out http.pem
) >"$TMP/openssl.log" 2>&1 || { cat "$TMP/openssl.log" >&2; fail "openssl"; }
PASSWORD="scrape-$RANDOM-$RANDOM"
printf '%s' "$PASSWORD" >"$TMP/password"
printf 'wrong-%s' "$PASSWORD" >"$TMP/wrong-password"
# crypt(3) (libxcrypt) through Python's crypt module: $2b$, cost 10
HASH=$(python3 -W ignore -c 'import crypt, sys
print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10)))' "$PASSWORD") ||
	fail "python3 cannot make a bcrypt hash"
case "$HASH" in '$2b$10$'*) ;; *) fail "not a bcrypt hash: $HASH" ;; esac
cat >"$TMP/web.yml" <<EOF
tls_server_config:
  cert_file: http.pem
  key_file: http.key
  min_version: TLS12
basic_auth_users:
  prometheus: '$HASH'
EOF

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HTTP_PORT=$(free_port)
PROM_PORT=$(free_port)

step "starting rmqns (HTTP port $HTTP_PORT, TLS and basic authentication)"
mkdir -p "$TMP/rmqns"
(cd "$TMP/rmqns" && HOME="$TMP/rmqns" exec "$BUILD/rmqns" --listenPort=0 \
	--bindAddress=127.0.0.1 --httpPort="$HTTP_PORT" --httpWebConfigFile="$TMP/web.yml" \
	>stdout.txt 2>stderr.txt) &
pids+=($!)
for _ in $(seq 100); do
	grep -q 'boot success' "$TMP/rmqns/stdout.txt" 2>/dev/null && break
	kill -0 "${pids[0]}" 2>/dev/null || { cat "$TMP/rmqns/stderr.txt" >&2; fail "rmqns exited"; }
	sleep 0.1
done
grep -q 'boot success' "$TMP/rmqns/stdout.txt" || fail "rmqns did not boot"

URL="https://127.0.0.1:$HTTP_PORT/metrics"
code() { curl -s -o /dev/null -w '%{http_code}' --cacert "$TMP/ca.pem" "$@"; }
[ "$(code "$URL")" = 401 ] || fail "/metrics without credentials is not 401"
[ "$(code -u "prometheus:wrong" "$URL")" = 401 ] || fail "/metrics with a wrong password is not 401"
[ "$(code -u "prometheus:$PASSWORD" "$URL")" = 200 ] || fail "/metrics with the password is not 200"
[ "$(code "https://127.0.0.1:$HTTP_PORT/healthz")" = 200 ] || fail "/healthz is not open"
step "curl: 401 without or with a wrong password, 200 with it, /healthz open"

step "starting prometheus on 127.0.0.1:$PROM_PORT"
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: rmqns-https
    scheme: https
    tls_config:
      ca_file: $TMP/ca.pem
      server_name: rmqns-http
    basic_auth:
      username: prometheus
      password_file: $TMP/password
    static_configs:
      - targets: ['127.0.0.1:$HTTP_PORT']
  - job_name: rmqns-wrong-password
    scheme: https
    tls_config:
      ca_file: $TMP/ca.pem
    basic_auth:
      username: prometheus
      password_file: $TMP/wrong-password
    static_configs:
      - targets: ['127.0.0.1:$HTTP_PORT']
  - job_name: rmqns-plaintext
    static_configs:
      - targets: ['127.0.0.1:$HTTP_PORT']
EOF
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$TMP/prometheus.log" 2>&1 &
pids+=($!)
API="http://127.0.0.1:$PROM_PORT"
for _ in $(seq 150); do
	curl -sf "$API/-/ready" >/dev/null 2>&1 && break
	kill -0 "${pids[1]}" 2>/dev/null || { cat "$TMP/prometheus.log" >&2; fail "prometheus exited"; }
	sleep 0.2
done
curl -sf "$API/-/ready" >/dev/null || { cat "$TMP/prometheus.log" >&2; fail "prometheus not ready"; }

step "waiting for the scrapes (up per job, through the Prometheus API)"
python3 - "$API" <<'PY' || { cat "$TMP/prometheus.log" >&2; fail "see above"; }
import json, sys, time, urllib.parse, urllib.request

api = sys.argv[1]
want = {"rmqns-https": 1, "rmqns-wrong-password": 0, "rmqns-plaintext": 0}

def query(q):
    url = api + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)["data"]["result"]

def targets():
    with urllib.request.urlopen(api + "/api/v1/targets", timeout=10) as r:
        return {t["labels"]["job"]: t for t in json.load(r)["data"]["activeTargets"]}

deadline = time.time() + 60
while True:
    # three scrapes of each job, so one is not a fluke
    seen = {r["metric"]["job"]: r for r in query("count_over_time(up[1m]) >= 3")}
    up = {r["metric"]["job"]: int(float(r["value"][1])) for r in query("up")}
    if set(seen) >= set(want) and all(up.get(j) == v for j, v in want.items()):
        break
    if time.time() > deadline:
        t = targets()
        sys.exit("within 60 s: up %s, wanted %s; last errors: %s" % (
            up, want, {j: t[j].get("lastError") for j in t}))
    time.sleep(0.5)
t = targets()
for job, v in sorted(want.items()):
    print("  %-22s up == %d  %s" % (job, v, t[job].get("lastError") or ""))
series = query('rmqns_build_info{job="rmqns-https"}')
if not series:
    sys.exit("no rmqns_build_info scraped through TLS and basic authentication")
print("  rmqns_build_info scraped through https + basic_auth:", series[0]["metric"].get("version"))
PY
step "PASS"
