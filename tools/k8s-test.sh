#!/usr/bin/env bash
# Checks deploy/k8s: every manifest against the Kubernetes schemas
# (kubernetes-models, tools/k8s-validate) and their cross-references; then runs
# the StatefulSet's pod template with `podman kube play`, ports published on
# 127.0.0.1, and probes its protocol port with rmqns-admin. The HTTP probes
# (/healthz, /readyz) are checked by the schema pass only: podman runs no
# kubelet probes. Fails (never skips) when node, npm or podman cannot run.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/podman-env.sh

TAG=${RMQNS_IMAGE:-localhost/rmqns:ci}
WORK=$PWD/build-k8s
POD=rmqns-kube-$$
CLAIM=rmqns-kube-data-$$
t0=$(date +%s)
step() { echo "k8s-test: $* ($(( $(date +%s) - t0 )) s)"; }
fail() { echo "k8s-test: FAIL: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are needed"
step "schema check"
mkdir -p "$WORK"
cp tools/k8s-validate/package.json tools/k8s-validate/package-lock.json tools/k8s-validate/validate.mjs "$WORK/"
if [ ! -d "$WORK/node_modules/kubernetes-models" ]; then
	(cd "$WORK" && timeout 300 npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1) ||
		{ tail -20 "$WORK/npm.log" >&2; fail "npm ci"; }
fi
PORT=$(free_port) HTTP=$(free_port)
node "$WORK/validate.mjs" deploy/k8s --pod "$WORK/pod.yaml" --image "$TAG" --port "$PORT" --http-port "$HTTP" \
	--claim "$CLAIM" --name "$POD" || fail "manifests"

step "podman kube play"
podman_install catatonit   # kube play builds its local pause image from it
podman_configure
podman info >/dev/null 2>&1 || fail "podman cannot run"
if ! podman image exists "$TAG"; then
	podman_base_image
	podman_build_image "$TAG" >"$PODMAN_DIR/build.log" 2>&1 || { tail -30 "$PODMAN_DIR/build.log" >&2; fail "build"; }
fi
cleanup() {
	podman_q kube down "$WORK/pod.yaml" >/dev/null 2>&1 || true
	podman pod rm -f "$POD" >/dev/null 2>&1 || true
	podman volume rm -f "$CLAIM" rmqns-config >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 143' INT TERM   # a timeout still cleans up
admin() { timeout 30 podman run --rm --network host --entrypoint /usr/local/bin/rmqns-admin "$TAG" "$@" 2> >(grep -v "unable to get systemd connection" >&2); }

podman_q kube play --network slirp4netns:port_handler=slirp4netns "$WORK/pod.yaml" >"$WORK/play.log" 2>&1 ||
	{ cat "$WORK/play.log" >&2; fail "podman kube play"; }
ok=
deadline=$(( $(date +%s) + 60 ))
while [ "$(date +%s)" -lt "$deadline" ]; do
	admin probe -n "127.0.0.1:$PORT" --timeout 2000 >/dev/null 2>&1 && { ok=1; break; }
	sleep 0.5
done
[ -n "$ok" ] || { podman logs "$POD-rmqns" >&2 || true; fail "no answer on 127.0.0.1:$PORT"; }
admin probe -n "127.0.0.1:$PORT"
admin getNamesrvConfig -n "127.0.0.1:$PORT" --json | grep -q '"scanNotActiveBrokerInterval": *"5000"' ||
	fail "the ConfigMap's rmqns.conf is not in force"
uid=$(podman exec "$POD-rmqns" id -u)
[ "$uid" = 10001 ] || fail "runs as uid $uid"
echo "k8s-test: pod $POD answers on 127.0.0.1:$PORT, config from the ConfigMap, uid $uid"
step "passed"
