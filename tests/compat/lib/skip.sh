# Sourced by the compatibility runners. skip: exit 77 (a skip for meson),
# or 1 when RMQNS_COMPAT_REQUIRED=1 makes a missing prerequisite a failure.
skip() {
	if [ "${RMQNS_COMPAT_REQUIRED:-0}" = 1 ]; then
		echo "compat: $*" >&2
		exit 1
	fi
	echo "compat: SKIP: $*"
	exit 77
}
