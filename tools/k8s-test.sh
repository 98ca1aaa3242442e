#!/usr/bin/env bash
# Checks deploy/k8s: renders the kustomize base, the Prometheus variant and the
# example overlay with `kubectl kustomize` of Debian's kubernetes-client (the
# kubectl of Debian 12: 1.20 and its kustomize), checks every rendered object
# against the Kubernetes schemas (kubernetes-models, tools/k8s-validate) and
# their cross-references, and that the base needs no CRD. Then runs the
# StatefulSet's pod template with `podman kube play`, ports published on
# 127.0.0.1, probes its protocol port with rmqns-admin, changes a value of the
# ConfigMap, rolls the pod (kube down and play, same data volume) and sees the
# new value in force. The HTTP probes (/healthz, /readyz) are checked by the
# schema pass only here: podman runs no kubelet probes (tools/container-test.sh
# checks /healthz with ACL and TLS on).
#
# The controller overlay (embedded controllers, one Raft group, peers
# authenticated by mutual TLS): its peers checked against the StatefulSet's
# stable names and declared ports, its peer TLS options against the Secret
# volume, the cert-manager variant's Certificate against the peers' hosts
# (and the overlay itself found free of cert-manager's kinds); then the
# Secret rmqns-peer-tls made by tools/make-peer-certs.sh --k8s-secret and
# three pods of the overlay (ordinals 0-2) played on a podman network of
# their own, mounting the Secret's files (podman 4.3 cannot mount Secret
# volumes: the directory they come from).
# podman has no Services, so the headless Service's per-pod names
# (rmqns-0.rmqns-headless, ...) are written into the pods' /etc/hosts with
# the static addresses kube play gives them; everything else is the
# overlay's own: the peers, the self id from the pod's name (downward API),
# the ports, the Secret. Waits until the three name one leader, checks that
# each says its peers authenticate by TLS, stops the leader's pod
# and waits for the two others to name another. Fails (never skips) when
# node, npm, kubectl or podman cannot run.
#
# The standalone-controller overlay (three controllers beside the base's
# NameServers): rendered and schema-checked with the same cross-references
# (peers against the stable names, ports on the headless Service), its pods
# run mqcontroller and declare no NameServer port, and its objects select
# only its own pods. Then played as the controller overlay is, once those
# pods are down: three pods on the same network, the stable names
# controller-rmqns-K.controller-rmqns-headless in /etc/hosts, one leader
# named by all three, each pod logging "mode: standalone controller" and
# serving its controller port but no NameServer port (9876), the leader's
# pod stopped and another leader named by the two others.
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
mkdir -p "$WORK"

# Debian's kubectl, unpacked beside the build: a kubectl already installed
# (another version, or another package owning /usr/bin/kubectl) is left alone.
KUBECTL=$WORK/kubernetes-client/usr/bin/kubectl
if [ ! -x "$KUBECTL" ]; then
	step "Debian's kubernetes-client"
	rm -rf "$WORK/kubernetes-client" "$WORK"/kubernetes-client_*.deb
	(cd "$WORK" && { apt-get download kubernetes-client >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get download kubernetes-client >/dev/null; }; }) || fail "apt-get download kubernetes-client"
	dpkg-deb -x "$WORK"/kubernetes-client_*.deb "$WORK/kubernetes-client" || fail "unpack kubernetes-client"
fi
echo "k8s-test: $("$KUBECTL" version --client --short 2>/dev/null || "$KUBECTL" version --client | head -n 1)"

step "kustomize: base, prometheus, overlays/example, overlays/controller, overlays/controller-cert-manager, overlays/standalone-controller"
render() { "$KUBECTL" kustomize "$1" >"$2" 2>"$2.err" || { cat "$2.err" >&2; fail "kubectl kustomize $1"; }; }
render deploy/k8s/base "$WORK/base.yaml"
render deploy/k8s/prometheus "$WORK/prometheus.yaml"
render deploy/k8s/overlays/example "$WORK/example.yaml"
render deploy/k8s/overlays/controller "$WORK/controller.yaml"
render deploy/k8s/overlays/controller-cert-manager "$WORK/controller-cert-manager.yaml"
render deploy/k8s/overlays/standalone-controller "$WORK/standalone-controller.yaml"
# apply -k on a cluster without the Prometheus Operator: no ServiceMonitor in the base.
! grep -q '^kind: ServiceMonitor' "$WORK/base.yaml" || fail "the base holds a ServiceMonitor (needs the operator's CRDs)"
[ "$(grep -c '^kind: ServiceMonitor' "$WORK/prometheus.yaml")" = 1 ] || fail "prometheus/ holds no ServiceMonitor"
# The controller overlay applies without cert-manager; its variant carries the Certificate.
! grep -q '^apiVersion: cert-manager.io/' "$WORK/controller.yaml" || fail "overlays/controller holds cert-manager objects (needs its CRDs)"
grep -q '^kind: Certificate$' "$WORK/controller-cert-manager.yaml" || fail "overlays/controller-cert-manager holds no Certificate"
[ "$(grep -c '^  namespace: messaging' "$WORK/example.yaml")" = "$(grep -c '^kind:' "$WORK/example.yaml")" ] ||
	fail "the example overlay leaves objects outside its namespace"

step "schema check"
cp tools/k8s-validate/package.json tools/k8s-validate/package-lock.json tools/k8s-validate/validate.mjs "$WORK/"
if [ ! -d "$WORK/node_modules/kubernetes-models" ] || [ ! -d "$WORK/node_modules/@kubernetes-models/cert-manager" ]; then
	(cd "$WORK" && timeout 300 npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1) ||
		{ tail -20 "$WORK/npm.log" >&2; fail "npm ci"; }
fi
node "$WORK/validate.mjs" "$WORK/prometheus.yaml" || fail "prometheus manifests"
node "$WORK/validate.mjs" "$WORK/example.yaml" || fail "example overlay manifests"
node "$WORK/validate.mjs" "$WORK/controller-cert-manager.yaml" | tee "$WORK/cert-manager.out" || fail "controller-cert-manager overlay manifests"
grep -q 'Certificate rmqns-peer-tls makes the Secret rmqns-peer-tls and names every peer' "$WORK/cert-manager.out" ||
	fail "the Certificate was not checked against the peers"
# Three pods of a controller overlay (ordinals 0-2), each publishing its
# protocol (where it has one), controller and HTTP ports on 127.0.0.1 (Raft
# stays on the pod network). The controller overlay's pods are $POD-ctl-K,
# the standalone-controller overlay's $POD-sc-K; one group plays at a time,
# on the same host ports.
CTL_PORTS=() CTL_HTTP=() publish=()
for k in 0 1 2; do
	CTL_PORTS+=("$(free_port)") CTL_HTTP+=("$(free_port)")
	publish+=("namesrv=$(free_port),controller=${CTL_PORTS[$k]},http=${CTL_HTTP[$k]}")
done
CTL_NET=rmqns-kube-net-$$
CTL_GROUPS=(ctl sc)
# group_pods OVERLAY GROUP IPS [validate.mjs options]: the pods of the
# rendered overlay's StatefulSet as $WORK/pods-GROUP.yaml, at the addresses
# IPS the pods get on the network (chosen once it exists).
group_pods() {
	node "$WORK/validate.mjs" "$WORK/$1.yaml" --pods "$WORK/pods-$2.yaml" --image "$TAG" \
		--publish "$(IFS=';'; echo "${publish[*]}")" --ips "$3" --claim "$CLAIM-$2" --name "$POD-$2" "${@:4}"
}
CTL_TLS=(--secret-dir "rmqns-peer-tls=$WORK/peer-tls/rmqns-peer-tls")
group_pods controller ctl "10.0.0.10;10.0.0.11;10.0.0.12" "${CTL_TLS[@]}" || fail "controller overlay manifests"
grep -q 'containerPort: 10878' "$WORK/controller.yaml" || fail "the controller overlay declares no Raft port"
SC=$WORK/standalone-controller.yaml
group_pods standalone-controller sc "10.0.0.10;10.0.0.11;10.0.0.12" || fail "standalone-controller overlay manifests"
grep -q 'exec /usr/local/bin/mqcontroller -c ' "$SC" || fail "the standalone controllers do not start mqcontroller"
! grep -q 'containerPort: 9876' "$SC" || fail "a standalone controller declares a NameServer port"
! grep -q 'component: nameserver' "$SC" || fail "an object of the standalone-controller overlay selects the NameServers"
[ "$(grep -c '^kind:' "$SC")" = "$(grep -c '^  name: controller-' "$SC")" ] ||
	fail "an object of the standalone-controller overlay keeps a NameServer's name"
PORT=$(free_port) HTTP=$(free_port)
node "$WORK/validate.mjs" "$WORK/base.yaml" --pod "$WORK/pod.yaml" --image "$TAG" --port "$PORT" --http-port "$HTTP" \
	--claim "$CLAIM" --name "$POD" || fail "base manifests"

# A config edit as an operator makes it: an overlay replacing rmqns.conf with
# one value changed. Its ConfigMap gets another name, so the StatefulSet's pod
# template changes and a cluster rolls the pods.
step "a changed ConfigMap value (overlay)"
rm -rf "$WORK/edit" && mkdir -p "$WORK/edit"
sed 's/^scanNotActiveBrokerInterval=5000$/scanNotActiveBrokerInterval=6000/' deploy/k8s/base/rmqns.conf >"$WORK/edit/rmqns.conf"
grep -q '^scanNotActiveBrokerInterval=6000$' "$WORK/edit/rmqns.conf" || fail "base/rmqns.conf has no scanNotActiveBrokerInterval=5000"
cat >"$WORK/edit/kustomization.yaml" <<YAML
bases:
  - $(realpath --relative-to="$WORK/edit" deploy/k8s/base)
configMapGenerator:
  - name: rmqns-config
    behavior: replace
    files:
      - rmqns.conf
YAML
render "$WORK/edit" "$WORK/edit.yaml"
cm_name() { sed -n '/^kind: StatefulSet/,$p' "$1" | grep -A1 'configMap:' | sed -n 's/^ *name: //p'; }
[ "$(cm_name "$WORK/base.yaml")" != "$(cm_name "$WORK/edit.yaml")" ] ||
	fail "the pod template names the same ConfigMap after the edit: no rollout"
echo "k8s-test: the pod template's ConfigMap: $(cm_name "$WORK/base.yaml") -> $(cm_name "$WORK/edit.yaml")"
node "$WORK/validate.mjs" "$WORK/edit.yaml" --pod "$WORK/pod-edit.yaml" --image "$TAG" --port "$PORT" --http-port "$HTTP" \
	--claim "$CLAIM" --name "$POD" >/dev/null || fail "edited manifests"

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
	local g k
	for g in "${CTL_GROUPS[@]}"; do
		podman_q kube down "$WORK/pods-$g.yaml" >/dev/null 2>&1 || true
		for k in 0 1 2; do
			podman pod rm -f "$POD-$g-$k" >/dev/null 2>&1 || true
			podman volume rm -f "$CLAIM-$g-$k" >/dev/null 2>&1 || true
		done
	done
	podman network rm -f "$CTL_NET" >/dev/null 2>&1 || true
	podman pod rm -f "$POD" >/dev/null 2>&1 || true
	podman volume rm -f "$CLAIM" >/dev/null 2>&1 || true
	podman volume ls --format '{{.Name}}' | grep '^rmqns-config' | xargs -r podman volume rm -f >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 143' INT TERM   # a timeout still cleans up
# rmqns-admin on the host's network; the image's NAMESRV_ADDR emptied, so
# that clusterDiff -a compares the controllers only.
admin() {
	timeout 30 podman run --rm --network host -e NAMESRV_ADDR= --entrypoint /usr/local/bin/rmqns-admin "$TAG" "$@" \
		2> >(grep -v "unable to get systemd connection" >&2)
}

# Plays a pod file and waits for the protocol port.
play() {
	podman_q kube play --network slirp4netns:port_handler=slirp4netns "$1" >"$WORK/play.log" 2>&1 ||
		{ cat "$WORK/play.log" >&2; fail "podman kube play $1"; }
	local deadline=$(( $(date +%s) + 60 ))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		admin probe -n "127.0.0.1:$PORT" --timeout 2000 >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	podman logs "$POD-rmqns" >&2 || true
	fail "no answer on 127.0.0.1:$PORT"
}
scan_interval() {
	admin getNamesrvConfig -n "127.0.0.1:$PORT" --json | sed -n 's/.*"scanNotActiveBrokerInterval": *"\([0-9]*\)".*/\1/p'
}

play "$WORK/pod.yaml"
admin probe -n "127.0.0.1:$PORT"
[ "$(scan_interval)" = 5000 ] || fail "the ConfigMap's rmqns.conf is not in force: scanNotActiveBrokerInterval=$(scan_interval)"
uid=$(podman exec "$POD-rmqns" id -u)
[ "$uid" = 10001 ] || fail "runs as uid $uid"
echo "k8s-test: pod $POD answers on 127.0.0.1:$PORT, config from the ConfigMap, uid $uid"

step "rollout with the edited ConfigMap (same data volume)"
podman_kube_down "$WORK/pod.yaml" "$POD" || fail "podman kube down $WORK/pod.yaml"
podman volume exists "$CLAIM" || fail "the data volume went with the pod"
play "$WORK/pod-edit.yaml"
[ "$(scan_interval)" = 6000 ] || fail "after the rollout scanNotActiveBrokerInterval=$(scan_interval), the ConfigMap says 6000"
podman exec "$POD-rmqns" test -f /var/lib/rmqns/rmqns.conf.previous || fail "no rmqns.conf.previous kept"
echo "k8s-test: after the rollout the ConfigMap's new value is in force"
podman_kube_down "$WORK/pod-edit.yaml" "$POD" || fail "podman kube down $WORK/pod-edit.yaml"

# The Secret the overlay mounts, made as docs/deployment.md says, for the
# pods' stable names. podman 4.3's kube play crashes (nil pointer in
# VolumeFromSecret) on a pod with a Secret volume, so the pods mount the
# Secret's files, the directory make-peer-certs.sh wrote it from, instead
# (--secret-dir); the Secret is checked to hold exactly those files.
step "tools/make-peer-certs.sh --k8s-secret rmqns-peer-tls (rmqns-0..2.rmqns-headless)"
tools/make-peer-certs.sh "$WORK/peer-tls" --k8s-secret rmqns-peer-tls \
	rmqns-0.rmqns-headless rmqns-1.rmqns-headless rmqns-2.rmqns-headless || fail "make-peer-certs.sh"
node "$WORK/validate.mjs" "$WORK/peer-tls/rmqns-peer-tls.yaml" || fail "the Secret made by make-peer-certs.sh"
python3 - "$WORK/peer-tls/rmqns-peer-tls.yaml" "$WORK/peer-tls/rmqns-peer-tls" <<'PY' || fail "the Secret does not hold the files of its directory"
import base64, re, sys
text = open(sys.argv[1]).read()
for key in ("tls.crt", "tls.key", "ca.crt"):
    m = re.search(r"^  " + re.escape(key) + r": (\S+)$", text, re.M)
    if not m or base64.b64decode(m.group(1)) != open(f"{sys.argv[2]}/{key}", "rb").read():
        sys.exit(f"{key} differs")
PY

podman network create "$CTL_NET" >/dev/null || fail "podman network create $CTL_NET"
subnet=$(podman network inspect "$CTL_NET" --format '{{range .Subnets}}{{.Subnet}}{{end}}')
# play_group OVERLAY GROUP FIRST [validate.mjs options]: three pods of the
# overlay played on $CTL_NET at its hosts FIRST..FIRST+2 (each group its own
# addresses, none reused from a group just taken down).
play_group() {
	local ips ip ip_args=()
	ips=$(python3 -c 'import ipaddress, sys; h = list(ipaddress.ip_network(sys.argv[1]).hosts()); k = int(sys.argv[2]); print(";".join(str(a) for a in h[k:k + 3]))' "$subnet" "$3")
	group_pods "$1" "$2" "$ips" "${@:4}" >/dev/null || fail "$1 pods for $ips"
	for ip in ${ips//;/ }; do ip_args+=(--ip "$ip"); done
	podman_q kube play --network "$CTL_NET" "${ip_args[@]}" "$WORK/pods-$2.yaml" >"$WORK/play-$2.log" 2>&1 ||
		{ cat "$WORK/play-$2.log" >&2; fail "podman kube play $WORK/pods-$2.yaml"; }
	echo "k8s-test: pods $POD-$2-0..2 at $ips ($subnet), controllers on 127.0.0.1:${CTL_PORTS[*]}"
}
step "controller overlay: three pods on the network $CTL_NET"
play_group controller ctl 9 "${CTL_TLS[@]}"

# "LEADER_ID LEADER_ADDRESS IS_LEADER" as the controller at $1 answers,
# "- - false" when it knows no leader or does not answer.
leader_of() {
	admin getControllerMetaData -a "$1" --json 2>/dev/null | python3 -c '
import json, sys
try: m = json.load(sys.stdin)
except ValueError: m = {}
print(m.get("controllerLeaderId") or "-", m.get("controllerLeaderAddress") or "-", "true" if m.get("isLeader") else "false")' ||
		echo "- - false"
}
# Waits (up to 90 s) until the pods of the given ordinals name one leader and
# exactly one of them is it; prints "ID ADDRESS".
wait_one_leader() {
	local deadline=$(( $(date +%s) + 90 )) k views ids
	while [ "$(date +%s)" -lt "$deadline" ]; do
		views=""
		for k in "$@"; do views+="$(leader_of "127.0.0.1:${CTL_PORTS[$k]}")"$'\n'; done
		ids=$(awk 'NF { print $1, $2 }' <<<"$views" | sort -u)
		if [ "$ids" != "- -" ] && [ "$(wc -l <<<"$ids")" = 1 ] && [ "$(grep -c ' true$' <<<"$views")" = 1 ]; then
			echo "$ids"
			return 0
		fi
		sleep 0.5
	done
	echo "k8s-test: the controllers' views: $(tr '\n' ',' <<<"$views")" >&2
	return 1
}
ctl_addrs() { local k a=(); for k in "$@"; do a+=("127.0.0.1:${CTL_PORTS[$k]}"); done; (IFS=';'; echo "${a[*]}"); }

# elect GROUP STS: waits until the three pods of GROUP, of the StatefulSet
# STS, name one leader; sets leader, leader_addr and k (its ordinal).
elect() {
	local out j
	out=$(wait_one_leader 0 1 2) || {
		for j in 0 1 2; do echo "--- $POD-$1-$j" >&2; podman logs "$POD-$1-$j-rmqns" 2>&1 | tail -8 >&2; done
		fail "the three pods of $1 name no common leader"
	}
	read -r leader leader_addr <<<"$out"
	[ -n "$leader" ] || fail "no leader"
	k=${leader#n}
	# The leader's address is its pod's stable name under the headless
	# Service, and each pod took the self id of its ordinal from its name.
	[ "$leader_addr" = "$2-$k.$2-headless:9878" ] || fail "leader $leader at $leader_addr"
	for j in 0 1 2; do
		grep -q "controller n$j: raft member $2-$j.$2-headless:10878" <<<"$(podman logs "$POD-$1-$j-rmqns" 2>&1)" ||
			fail "$POD-$1-$j did not start as n$j at $2-$j.$2-headless:10878"
	done
	admin clusterDiff -a "$(ctl_addrs 0 1 2)" || fail "clusterDiff -a: the pods of $1 disagree"
	echo "k8s-test: leader $leader at $leader_addr; self ids n0..n2 from the pod names"
}
# fail_over GROUP: stops the leader's pod, waits for the two others to name
# another, takes the group down.
fail_over() {
	local rest=() j out new new_addr
	step "stop the leader's pod $POD-$1-$k"
	for j in 0 1 2; do [ "$j" = "$k" ] || rest+=("$j"); done
	podman_q pod stop -t 10 "$POD-$1-$k" >/dev/null || fail "podman pod stop $POD-$1-$k"
	out=$(wait_one_leader "${rest[@]}") || fail "no new leader after $POD-$1-$k stopped"
	read -r new new_addr <<<"$out"
	[ -n "$new" ] && [ "$new" != "$leader" ] || fail "the two others name '$new' (the stopped leader was $leader)"
	admin clusterDiff -a "$(ctl_addrs "${rest[@]}")" || fail "clusterDiff -a: the two others disagree"
	echo "k8s-test: leader $leader -> $new at $new_addr"
	podman_kube_down "$WORK/pods-$1.yaml" "$POD-$1-0" "$POD-$1-1" "$POD-$1-2" || fail "podman kube down $WORK/pods-$1.yaml"
}

elect ctl rmqns
# Elected over TLS, with the Secret's files as the pods see them.
for j in 0 1 2; do
	auth=$(curl -fsS --max-time 5 "http://127.0.0.1:${CTL_HTTP[$j]}/controller" |
		python3 -c 'import json, sys; print(json.load(sys.stdin).get("peerAuthentication"))') || fail "/controller of pod $j"
	[ "$auth" = mutual-tls ] || fail "pod $j: /controller says peerAuthentication $auth, not mutual-tls"
	logs=$(podman logs "$POD-ctl-$j-rmqns" 2>&1)   # whole: grep -q in a pipe would cut podman short (pipefail)
	grep -q 'peers authenticate by mutual TLS' <<<"$logs" || fail "$POD-ctl-$j logs no 'peers authenticate by mutual TLS'"
done
echo "k8s-test: every pod says peerAuthentication mutual-tls; the Secret in pod 0: $(podman exec "$POD-ctl-0-rmqns" \
	sh -c 'cd /etc/rmqns/peer-tls && stat -L -c "%n %a %u:%g" tls.crt tls.key ca.crt' | tr '\n' ' ')"
fail_over ctl

step "standalone-controller overlay: three pods on the network $CTL_NET"
play_group standalone-controller sc 19
elect sc controller-rmqns
# mqcontroller, not a NameServer: its mode line, the controller port served
# and the NameServer's not.
for j in 0 1 2; do
	c=$POD-sc-$j-rmqns
	logs=$(podman logs "$c" 2>&1)   # whole, as above
	grep -q 'mode: standalone controller' <<<"$logs" || fail "$c logs no 'mode: standalone controller'"
	podman exec "$c" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9878' || fail "$c does not listen on 9878"
	! podman exec "$c" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9876' 2>/dev/null || fail "$c serves a NameServer port (9876)"
done
echo "k8s-test: every pod says 'mode: standalone controller', serves 9878 and not 9876"
fail_over sc
step "passed"
