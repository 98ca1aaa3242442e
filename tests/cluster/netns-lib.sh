# Sourced by the tests/cluster scripts: hosts in network namespaces of
# their own, each with one address on eth0, a veth pair whose other end
# (p-HOST) is on a bridge inside a hub namespace. The script sets ID (the
# prefix of every namespace name, unique to the run), TAG (its name in
# messages), BUILD (the build folder) and IP (host -> address, one /24).

# netns_build [FILE|COMMAND]...: RMQNS and ADMIN in $BUILD; exit 1 unless
# they, the other files given, are built and the commands given are there.
netns_build() {
	local b
	RMQNS=$BUILD/rmqns
	ADMIN=$BUILD/tools/admin/rmqns-admin
	for b in "$RMQNS" "$ADMIN" "$@"; do
		if [[ $b == */* ]]; then
			[ -x "$b" ] || { echo "$TAG: $b not built" >&2; exit 1; }
		else
			command -v "$b" >/dev/null || { echo "$TAG: $b is needed" >&2; exit 1; }
		fi
	done
}

# netns_up HOST...: the hub and the hosts; exit 77 (skipped, saying why)
# when namespaces cannot be created here.
netns_up() {
	local err h ns
	NETNS_HOSTS=("$@")
	if ! err=$(ip netns add "$ID-hub" 2>&1); then
		echo "$TAG: SKIPPED: cannot create network namespaces here ($err)"
		exit 77
	fi
	ip -n "$ID-hub" link add br0 type bridge
	ip -n "$ID-hub" link set br0 up
	for h in "$@"; do
		ns=$ID-$h
		ip netns add "$ns"
		ip -n "$ns" link set lo up
		ip link add eth0 netns "$ns" type veth peer name "p-$h" netns "$ID-hub"
		ip -n "$ID-hub" link set dev "p-$h" master br0 up
		ip -n "$ns" addr add "${IP[$h]}/24" dev eth0
		ip -n "$ns" link set dev eth0 up
	done
}

# netns_link HOST up|down: HOST's port on the hub's bridge (down: cut off)
netns_link() { ip -n "$ID-hub" link set dev "p-$1" "$2"; }

# Every namespace netns_up made (or began to make); for the exit trap.
netns_down() {
	local h
	for h in ${NETNS_HOSTS[@]+"${NETNS_HOSTS[@]}"}; do ip netns del "$ID-$h" 2>/dev/null || true; done
	ip netns del "$ID-hub" 2>/dev/null || true
}

# netns_kill PID...: the script's own processes stopped (continued first,
# if it had stopped them) and waited for
netns_kill() {
	local p
	for p in "$@"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
	for p in "$@"; do wait "$p" 2>/dev/null || true; done
}

# inns HOST COMMAND...: COMMAND in HOST's namespace
inns() { local h=$1; shift; ip netns exec "$ID-$h" "$@"; }
# client SUBCOMMAND ARGS...: rmqns-admin ($ADMIN) from the client namespace
client() { local cmd=$1; shift; inns client timeout 20 "$ADMIN" "$cmd" --timeout 1000 "$@"; }
