#!/usr/bin/env bash
# Builds the image with podman and proves it: a route query through the port
# published on 127.0.0.1, the health check turning unhealthy under SIGSTOP and
# healthy after SIGCONT, and healthy with ACL read checks and with TLS
# enforcing, KV surviving a restart with the same volume, the non-root user,
# `podman stop` ending it with exit 0 well under its timeout, apache/rocketmq's
# start commands (`sh mqnamesrv`, `mqnamesrv -c FILE`), RMQNS_* variables and
# the OCI labels.
# Removes what it made. If podman cannot run here, this fails: it never skips.
#   tools/container-test.sh            build and check
#   KEEP_IMAGE=1 tools/container-test.sh   leave the images (deploy tests reuse them)
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/podman-env.sh
# Output is captured before grep -q looks at it: with pipefail, a writer cut
# off by grep's early exit (SIGPIPE) would fail the check.

TAG=${RMQNS_IMAGE:-localhost/rmqns:ci}
SIM_TAG=${RMQNS_SIM_IMAGE:-localhost/rmqns-broker-sim:ci}
NAME=rmqns-ct-$$
SIM=rmqns-ct-sim-$$
VOL=rmqns-ct-data-$$
t0=$(date +%s)
step() { echo "container-test: $* ($(( $(date +%s) - t0 )) s)"; }
fail() { echo "container-test: FAIL: $*" >&2; exit 1; }

cleanup() {
	podman rm -f -v -t 0 "$NAME" "$SIM" "$NAME-cpu" "$NAME-acl" "$NAME-tls" "$NAME-mq" >/dev/null 2>&1 || true
	podman volume rm -f "$VOL" >/dev/null 2>&1 || true
	if [ -z "${KEEP_IMAGE:-}" ]; then
		podman rmi -f "$TAG" "$SIM_TAG" >/dev/null 2>&1 || true
		podman image prune -f >/dev/null 2>&1 || true   # the build stages
	fi
}
trap cleanup EXIT
trap 'exit 143' INT TERM   # a timeout still cleans up

# A free port on 127.0.0.1, for the published protocol port.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# rmqns-admin as a client outside the container, on the host's network.
admin() { timeout 30 podman run --rm --network host --entrypoint /usr/local/bin/rmqns-admin "$TAG" "$@" 2> >(grep -v "unable to get systemd connection" >&2); }

# The health check on demand (no systemd timer here); podman's systemd
# complaints go to the log, the verdict is the exit code.
healthcheck() { timeout 30 podman healthcheck run "${1:-$NAME}" 2>>"$PODMAN_DIR/healthcheck.log"; }
health_status() { podman inspect "${1:-$NAME}" --format '{{.State.Health.Status}}'; }
# The last health check's output (what rmqns-healthcheck printed).
health_output() { podman inspect "$1" --format '{{range .State.Health.Log}}{{.Output}}{{end}}' | tail -n 1; }

# Waits until the container's health check passes (up to 60 s).
wait_healthy() {
	local deadline=$(( $(date +%s) + 60 ))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		healthcheck "$1" >/dev/null && [ "$(health_status "$1")" = healthy ] && return 0
		sleep 1
	done
	podman logs "$1" 2>&1 | tail -20 >&2
	echo "container-test: last check of $1: $(health_output "$1")" >&2
	return 1
}

# Up to 60 s: a loaded machine starts containers and slirp4netns slowly.
wait_probe() {
	local deadline=$(( $(date +%s) + 60 ))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		admin probe -n "127.0.0.1:$1" --timeout 2000 >"$PODMAN_DIR/probe.log" 2>&1 && return 0
		sleep 0.5
	done
	cat "$PODMAN_DIR/probe.log" >&2
	return 1
}

step "podman setup"
podman_install
podman_configure
podman info >"$PODMAN_DIR/info.log" 2>&1 || { tail -20 "$PODMAN_DIR/info.log" >&2; fail "podman cannot run"; }

step "base image (debootstrap)"
podman_base_image || fail "no base image"

step "image build"
podman_build_image "$TAG" >"$PODMAN_DIR/build.log" 2>&1 || { tail -30 "$PODMAN_DIR/build.log" >&2; fail "podman build"; }
podman build --format docker --network host --pull=never --target broker-sim -t "$SIM_TAG" . \
	>"$PODMAN_DIR/build-sim.log" 2>&1 || { tail -30 "$PODMAN_DIR/build-sim.log" >&2; fail "podman build --target broker-sim"; }
size=$(podman image inspect "$TAG" --format '{{.Size}}')
echo "container-test: image $TAG is $(( size / 1000000 )) MB ($size bytes)"

step "image contents"
# Only the two binaries and their libraries: no compiler, no build tree, no apt cache.
extra=$(podman run --rm --network none --entrypoint /bin/sh "$TAG" -c \
	'ls -A /var/lib/apt/lists | grep -vx -e lock -e partial; ls /var/cache/apt/archives/*.deb /var/cache/apt/*.bin 2>/dev/null;
	 for b in gcc cc meson ninja rmqns-bench; do command -v "$b"; done; ls -d /src /build 2>/dev/null; true' 2>/dev/null)
[ -z "$extra" ] || fail "the runtime image holds: $extra"
podman run --rm --network none --entrypoint /bin/sh "$TAG" -c \
	'for b in rmqns rmqns-admin mqnamesrv rmqns-healthcheck; do test -x /usr/local/bin/$b || exit 1; done' ||
	fail "rmqns, rmqns-admin, mqnamesrv or rmqns-healthcheck missing"
# The runtime libraries docs/deployment.md counts: the packages the base stage installs.
libs=$(podman run --rm --network none --entrypoint /bin/sh "$TAG" -c \
	'ldd /usr/local/bin/rmqns /usr/local/bin/rmqns-admin | awk "/=>/ { print \$3 }" | sort -u |
	 while read -r f; do dpkg -S "$(readlink -f "$f")" 2>/dev/null || dpkg -S "$f"; done | cut -d: -f1 | sort -u |
	 grep -v -x -e libc6' 2>/dev/null | tr '\n' ' ')
echo "container-test: runtime libraries beyond libc: $libs"
label() { podman image inspect "$TAG" --format "{{index .Labels \"org.opencontainers.image.$1\"}}"; }
version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" meson.build | head -n 1)
[ "$(label version)" = "$version" ] || fail "label version '$(label version)', meson.build says '$version'"
[ "$(label licenses)" = Apache-2.0 ] || fail "label licenses '$(label licenses)'"
grep -q '"org.opencontainers.image.source"' <<<"$(podman image inspect "$TAG" --format '{{json .Labels}}')" || fail "no source label"
echo "container-test: labels version $(label version), licenses $(label licenses), revision $(label revision)"

PORT=$(free_port)
run_server() {
	podman_q run -d --name "$NAME" --network slirp4netns:port_handler=slirp4netns \
		-p "127.0.0.1:$PORT:9876" -v "$VOL:/var/lib/rmqns" "$TAG" --scanNotActiveBrokerInterval=1000 >/dev/null
}

step "run, published on 127.0.0.1:$PORT"
run_server
wait_probe "$PORT" || { podman logs "$NAME" >&2; fail "no answer on 127.0.0.1:$PORT"; }

step "non-root user"
uid=$(podman exec "$NAME" id -u)
[ "$uid" != 0 ] || fail "the server runs as root"
puid=$(podman top "$NAME" huser | tail -n +2 | head -1 | tr -d ' ')
[ "$puid" != 0 ] && [ "$puid" != root ] || fail "rmqns runs as host user $puid"
echo "container-test: uid in the container $uid, process user $puid"

step "route query through the published port"
# The simulated broker runs beside it on the host network and registers through
# the published port, as a broker outside the container would.
podman run -d --name "$SIM" --network host "$SIM_TAG" seed -a "127.0.0.1:$PORT" -b 2 -t 4 \
	--keepalive 1s -d 120s --cluster CtCluster --broker-prefix ct-broker --topic-prefix CtTopic >/dev/null
route=""
deadline=$(( $(date +%s) + 60 ))
while [ "$(date +%s)" -lt "$deadline" ]; do
	route=$(admin topicRoute -n "127.0.0.1:$PORT" -t CtTopic-b1-t3 --json 2>/dev/null) && break
	sleep 0.5
done
echo "$route" | grep -q '"ct-broker-1"' || fail "no route for CtTopic-b1-t3: $route"

step "health check under SIGSTOP and SIGCONT"
healthcheck >/dev/null || fail "health check fails on a running server"
[ "$(health_status)" = healthy ] || fail "status $(health_status), expected healthy"
podman kill --signal STOP "$NAME" >/dev/null
# Every check fails while it is stopped; three failures (the image's --retries)
# after the start period (5 s) make the container unhealthy.
st=""
for i in $(seq 1 8); do
	if healthcheck >/dev/null; then podman kill --signal CONT "$NAME" >/dev/null; fail "healthy while stopped"; fi
	st=$(health_status)
	[ "$st" = unhealthy ] && break
done
echo "container-test: unhealthy after $i failed checks"
podman kill --signal CONT "$NAME" >/dev/null
[ "$st" = unhealthy ] || fail "status $st under SIGSTOP, expected unhealthy"
healthcheck >/dev/null || fail "still unhealthy after SIGCONT"
[ "$(health_status)" = healthy ] || fail "status $(health_status) after SIGCONT, expected healthy"

step "KV and routes across a restart with the same volume"
admin updateKvConfig -n "127.0.0.1:$PORT" -s CT_NS -k ct.key -v "kept-$$" >/dev/null
# The simulated broker is frozen, its connection open: the server keeps its
# routes, writes them in its snapshot at SIGTERM (the image sets
# routeSnapshotPath in the volume), and the broker cannot register again
# after the restart, so a route answered then comes from the snapshot.
podman kill --signal STOP "$SIM" >/dev/null
stop_start=$(date +%s%N)
podman_q stop -t 30 "$NAME" >/dev/null
stop_ms=$(( ($(date +%s%N) - stop_start) / 1000000 ))
code=$(podman inspect "$NAME" --format '{{.State.ExitCode}}')
echo "container-test: podman stop took $stop_ms ms (timeout 30 s), exit code $code"
[ "$code" = 0 ] || { podman logs "$NAME" | tail -20 >&2; fail "exit code $code after SIGTERM"; }
[ "$stop_ms" -lt 10000 ] || fail "podman stop took $stop_ms ms"
podman_q rm "$NAME" >/dev/null
run_server
wait_probe "$PORT" || { podman logs "$NAME" >&2; fail "no answer after the restart"; }
got=$(admin getKvConfig -n "127.0.0.1:$PORT" -s CT_NS -k ct.key)
[ "$got" = "kept-$$" ] || fail "KV after restart: '$got'"
route=$(admin topicRoute -n "127.0.0.1:$PORT" -t CtTopic-b1-t3 --json 2>&1) ||
	fail "no route right after the restart (the snapshot was not restored): $route"
echo "$route" | grep -q '"ct-broker-1"' || fail "route after the restart: $route"
logs=$(podman logs "$NAME" 2>&1)   # whole: grep -q in a pipe would cut podman short (pipefail)
grep -q "route snapshot: restored from /var/lib/rmqns/namesrv/routes.snapshot" <<<"$logs" ||
	fail "no 'route snapshot: restored' line in the log"
podman rm -f -t 0 "$SIM" >/dev/null

step "config from arguments"
grep -q '"scanNotActiveBrokerInterval": *"1000"' <<<"$(podman exec "$NAME" rmqns-admin getNamesrvConfig --json)" ||
	fail "--scanNotActiveBrokerInterval=1000 not in force"
podman_q stop -t 30 "$NAME" >/dev/null

# The health check reads the server's options: with ACL checks on reads and
# with TLS enforced on the protocol port it still sees a healthy server (it
# asks /healthz on the HTTP port, which neither guards), while a plaintext
# client of the protocol port is refused. Options from RMQNS_* variables here,
# and the apache/rocketmq form `sh mqnamesrv` for the TLS one.
step "health check with aclEnable and aclReadRequests (RMQNS_* variables)"
APORT=$(free_port)
podman_q run -d --name "$NAME-acl" --network slirp4netns:port_handler=slirp4netns -p "127.0.0.1:$APORT:9876" \
	-e RMQNS_aclEnable=true -e RMQNS_aclReadRequests=true \
	-e RMQNS_aclFile=/usr/local/share/rmqns/etc/plain_acl.yml "$TAG" >/dev/null
wait_healthy "$NAME-acl" || fail "unhealthy with ACL on reads"
echo "container-test: $(health_output "$NAME-acl")"
out=$(admin getNamesrvConfig -n "127.0.0.1:$APORT" 2>&1) && fail "an unsigned read was answered with ACL on: $out"
grep -q "code 16" <<<"$out" || fail "expected an ACL refusal (code 16): $out"
podman_q rm -f -v -t 2 "$NAME-acl" >/dev/null

step "health check with tls.server.mode=enforcing (sh mqnamesrv)"
TPORT=$(free_port)
podman_q run -d --name "$NAME-tls" --network slirp4netns:port_handler=slirp4netns -p "127.0.0.1:$TPORT:9876" \
	"$TAG" sh mqnamesrv --tls.server.mode=enforcing --tls.test.mode.enable=true >/dev/null
wait_healthy "$NAME-tls" || fail "unhealthy with TLS enforcing"
echo "container-test: $(health_output "$NAME-tls")"
grep -q "load config properties file OK, /var/lib/rmqns/rmqns.conf" <<<"$(podman logs "$NAME-tls" 2>&1)" ||
	fail "sh mqnamesrv did not start rmqns with the image's config"
admin probe -n "127.0.0.1:$TPORT" --timeout 2000 >/dev/null 2>&1 && fail "a plaintext client was answered under enforcing"
podman kill --signal STOP "$NAME-tls" >/dev/null
healthcheck "$NAME-tls" >/dev/null && { podman kill --signal CONT "$NAME-tls" >/dev/null; fail "healthy while stopped (TLS)"; }
podman kill --signal CONT "$NAME-tls" >/dev/null
podman_q rm -f -v -t 2 "$NAME-tls" >/dev/null

# Without httpPort the check asks the protocol port itself: rmqns-admin probe,
# with --tls under enforcing, an ACL refusal counting as an answer.
step "health check without httpPort, with ACL on reads and with TLS enforcing"
podman_q run -d --name "$NAME-acl" --network none -e RMQNS_httpPort=0 -e RMQNS_aclEnable=true \
	-e RMQNS_aclReadRequests=true -e RMQNS_aclFile=/usr/local/share/rmqns/etc/plain_acl.yml "$TAG" >/dev/null
podman_q run -d --name "$NAME-tls" --network none "$TAG" --httpPort=0 --tls.server.mode=enforcing \
	--tls.test.mode.enable=true >/dev/null
for c in "$NAME-acl" "$NAME-tls"; do
	wait_healthy "$c" || fail "$c: unhealthy without httpPort"
	echo "container-test: ${c##*-}: $(health_output "$c")"
done
podman_q rm -f -v -t 2 "$NAME-acl" "$NAME-tls" >/dev/null

# `mqnamesrv -c FILE`: that file, not the image's (so no httpPort: the health
# check falls back to a protocol request); RMQNS_* over the file; the JVM
# settings of apache/rocketmq's charts are named as ignored.
step "mqnamesrv -c FILE, RMQNS_* over the file, JAVA_OPT_EXT ignored"
MPORT=$(free_port)
podman_q run -d --name "$NAME-mq" --network slirp4netns:port_handler=slirp4netns -p "127.0.0.1:$MPORT:9876" \
	-e RMQNS_scanNotActiveBrokerInterval=2500 -e "JAVA_OPT_EXT=-Xms256m -Xmx256m" \
	"$TAG" mqnamesrv -c /usr/local/share/rmqns/etc/rmqns.conf >/dev/null
wait_probe "$MPORT" || { podman logs "$NAME-mq" >&2; fail "mqnamesrv -c: no answer"; }
wait_healthy "$NAME-mq" || fail "unhealthy without httpPort"
echo "container-test: $(health_output "$NAME-mq")"
conf=$(admin getNamesrvConfig -n "127.0.0.1:$MPORT" --json)
grep -q '"scanNotActiveBrokerInterval": *"2500"' <<<"$conf" || fail "RMQNS_scanNotActiveBrokerInterval not in force"
grep -q '"httpPort": *"0"' <<<"$conf" || fail "mqnamesrv -c FILE did not use FILE"
grep -q "JAVA_OPT_EXT is a JVM setting" <<<"$(podman logs "$NAME-mq" 2>&1)" || fail "JAVA_OPT_EXT not reported as ignored"
podman_q rm -f -v -t 2 "$NAME-mq" >/dev/null

# Started with a CPU limit, the server sizes its threads to it (one reactor
# and one worker per usable CPU), not to the host's CPUs.
step "threads follow a CPU limit (--cpus 1)"
podman_q run -d --name "$NAME-cpu" --network none --cpus 1 "$TAG" >/dev/null
threads=
for _ in $(seq 100); do
	threads=$(podman logs "$NAME-cpu" 2>&1 | grep -m1 ' threads: ' || true)
	[ -n "$threads" ] && break
	sleep 0.1
done
echo "container-test: ${threads#* threads: }"
case "$threads" in
*" threads: 1 reactors, 1 processor workers"*"; 1 CPUs usable"*) ;;
*) podman logs "$NAME-cpu" | tail -20 >&2; fail "with --cpus 1: '${threads:-no threads line}'" ;;
esac
podman_q rm -f -v -t 2 "$NAME-cpu" >/dev/null

step "passed"
