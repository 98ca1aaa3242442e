# Sourced by the container tests: a podman that works on a machine without a
# Docker engine, a registry or a systemd user session.
#   . tools/podman-env.sh            sets up $PODMAN_DIR (default build-podman/)
#   podman_install                   installs the Debian packages it needs
#   podman_configure                 private storage and containers.conf
#   podman_base_image                debian:12-slim from debootstrap (no registry)
#   podman_build_image TAG           the repository's Dockerfile
#   podman_teardown                  removes every image, container and volume
#                                    of the private storage, and $PODMAN_DIR
# Networking: never podman's default bridge (it routes through 10.88.0.0/16);
# callers use --network host or slirp4netns with ports published on 127.0.0.1.

PODMAN_DIR=${PODMAN_DIR:-$PWD/build-podman}
PODMAN_PACKAGES=(podman runc slirp4netns uidmap debootstrap)

podman_install() {
	local missing=() p
	for p in "${PODMAN_PACKAGES[@]}" "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "podman-env: installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
}

podman_configure() {
	mkdir -p "$PODMAN_DIR/root" "$PODMAN_DIR/run"
	cat >"$PODMAN_DIR/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$PODMAN_DIR/root"
runroot = "$PODMAN_DIR/run"
EOF
	# crun refuses a hybrid cgroup layout; root without CAP_SYS_RESOURCE cannot
	# raise limits, so the defaults must not exceed the hard limits in force.
	local nofile nproc
	nofile=$(ulimit -Hn)
	nproc=$(ulimit -Hu)
	[ "$nofile" = unlimited ] && nofile=1048576
	if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
	cat >"$PODMAN_DIR/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
EOF
	export CONTAINERS_STORAGE_CONF="$PODMAN_DIR/storage.conf"
	export CONTAINERS_CONF="$PODMAN_DIR/containers.conf"
}

# The Dockerfile starts FROM debian:12-slim; with no registry, debootstrap
# makes it from the Debian mirror apt already uses.
podman_base_image() {
	if podman image exists docker.io/library/debian:12-slim; then return 0; fi
	local mirror rootfs
	mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
	[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
	[ -n "$mirror" ] || { echo "podman-env: no Debian mirror found in the apt sources" >&2; return 1; }
	rootfs="$PODMAN_DIR/rootfs"
	rm -rf "$rootfs"
	debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$PODMAN_DIR/debootstrap.log" 2>&1 ||
		{ tail -20 "$PODMAN_DIR/debootstrap.log" >&2; return 1; }
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		cp /etc/apt/sources.list.d/debian.sources "$rootfs/etc/apt/sources.list.d/"
		rm -f "$rootfs/etc/apt/sources.list"
	fi
	# What Debian's slim images leave out: documentation, manual pages, locales.
	mkdir -p "$rootfs/etc/dpkg/dpkg.cfg.d"
	printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
		'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
		'path-exclude /usr/share/locale/*' 'path-include /usr/share/locale/locale.alias' \
		>"$rootfs/etc/dpkg/dpkg.cfg.d/slim"
	find "$rootfs/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete 2>/dev/null || true
	rm -rf "$rootfs/usr/share/man/"* "$rootfs/usr/share/info/"* "$rootfs/var/cache/apt/"*.bin \
		"$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"* "$rootfs/var/log/"*.log
	find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} + 2>/dev/null || true
	tar -C "$rootfs" -c . | podman import - localhost/debian:12 >"$PODMAN_DIR/import.log" 2>&1 ||
		{ cat "$PODMAN_DIR/import.log" >&2; return 1; }
	podman tag localhost/debian:12 docker.io/library/debian:12-slim docker.io/library/debian:12
	rm -rf "$rootfs"
}

podman_build_image() {
	# --format docker keeps HEALTHCHECK; --network host keeps the build's apt off the bridge.
	# The revision label is the last layer's: a new commit rebuilds nothing else.
	local rev
	rev=$(git rev-parse HEAD 2>/dev/null || true)
	podman build --format docker --network host --pull=never --build-arg "RMQNS_REVISION=$rev" -t "$1" .
}

# podman without systemd complains at every health-check timer it cannot add
# or remove; the checks themselves run on demand (podman healthcheck run).
podman_q() {
	podman "$@" 2> >(grep -v 'unable to get systemd connection' >&2)
}

# podman kube down FILE, then its pods (POD...) removed by name if it
# failed: podman 4.3 sometimes fails to remove a stopped container's root
# filesystem while its /dev/shm mount is still busy ("unlinkat
# .../userdata/shm: device or resource busy"), which a removal a moment
# later gets past. Volumes stay, as with kube down. 0 once no POD is left.
podman_kube_down() {
	local file=$1 try pod left
	shift
	podman_q kube down "$file" >/dev/null && return 0
	for try in 1 2 3; do
		sleep 2
		left=0
		for pod in "$@"; do
			podman pod exists "$pod" 2>/dev/null || continue
			podman_q pod rm -f "$pod" >/dev/null || left=1
		done
		[ "$left" = 1 ] || { echo "podman-env: kube down $file failed; its pods removed by name" >&2; return 0; }
	done
	return 1
}

podman_teardown() {
	[ -f "$PODMAN_DIR/storage.conf" ] || return 0
	podman_configure
	podman system reset -f >/dev/null 2>&1 || true
	rm -rf "$PODMAN_DIR"
}
