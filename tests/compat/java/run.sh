#!/bin/sh
# TLS compatibility: a Netty client set up as a RocketMQ Java client started
# with -Dtls.enable=true (TlsClientCheck.java), and rmqns-bench --tls,
# against the real rmqns binary with a test certificate made here:
#   permissive  TLS (trusting any certificate, and checking it against the
#               CA) and plaintext on one port;
#   enforcing   TLS works, plaintext gets no answer;
#   enforcing with tls.server.need.client.auth=require
#               a client certificate signed by the trusted CA is accepted,
#               a client without one gets no answer.
#
#   tests/compat/java/run.sh java  RMQNS_BINARY WORKDIR
#   tests/compat/java/run.sh bench RMQNS_BINARY RMQNS_BENCH WORKDIR
#
# Exit 77 (a skip for meson) when a JDK, Debian's libnetty-java or the
# openssl tool is missing and cannot be installed with apt-get, or when the
# binary has no TLS; RMQNS_COMPAT_REQUIRED=1 makes these failures instead.
set -eu

usage() {
	echo "usage: $0 java RMQNS_BINARY WORKDIR | bench RMQNS_BINARY RMQNS_BENCH WORKDIR" >&2
	exit 2
}
[ $# -ge 1 ] || usage
what=$1
shift
case $what in
java) [ $# -eq 2 ] || usage; bin=$1; bench=; work=$2 ;;
bench) [ $# -eq 3 ] || usage; bin=$1; bench=$2; work=$3 ;;
*) usage ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
bin=$(abs "$bin")
[ -z "$bench" ] || bench=$(abs "$bench")
mkdir -p "$work"
work=$(abs "$work")

. "$here/../lib/skip.sh"

fail() {
	echo "compat: FAIL: $*" >&2
	exit 1
}

[ -x "$bin" ] || fail "$bin is not an executable"
[ -z "$bench" ] || [ -x "$bench" ] || fail "$bench is not an executable"

NETTY_JARS="common buffer transport resolver codec handler"
netty_cp() {
	cp=
	for j in $NETTY_JARS; do
		f=/usr/share/java/netty-$j.jar
		[ -f "$f" ] || return 1
		cp=$cp${cp:+:}$f
	done
	echo "$cp"
}

# Installs Debian packages when missing; false when that is not possible.
apt_install() {
	[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 1
	mkdir -p "$work"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends "$@" >"$work/apt.log" 2>&1 && return 0
	apt-get update -qq >>"$work/apt.log" 2>&1 &&
		apt-get install -y -qq --no-install-recommends "$@" >>"$work/apt.log" 2>&1
}

command -v openssl >/dev/null 2>&1 || apt_install openssl || skip "no openssl tool"
if [ "$what" = java ]; then
	if ! command -v javac >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
		apt_install openjdk-17-jdk-headless || skip "no JDK and apt-get cannot install one"
	fi
	netty_cp >/dev/null || apt_install libnetty-java || skip "libnetty-java cannot be installed"
	CP=$(netty_cp) || skip "libnetty-java has no $NETTY_JARS jars"
fi
"$bin" -p 2>&1 | grep -q 'tls\.server\.mode=' || skip "$bin has no tls.server.mode option"

mkdir -p "$work"
tmp=$(mktemp -d "$work/run.XXXXXX")
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- a CA, a server certificate for 127.0.0.1, a client certificate ----
certs() {
	c=$tmp/certs
	mkdir -p "$c"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=rmqns-test-ca \
		-keyout "$c/ca.key" -out "$c/ca.pem" 2>"$c/log" &&
	for who in server client; do
		openssl req -newkey rsa:2048 -nodes -subj "/CN=rmqns-test-$who" \
			-keyout "$c/$who.key" -out "$c/$who.csr" 2>>"$c/log" || return 1
		if [ "$who" = server ]; then
			printf 'subjectAltName=IP:127.0.0.1\n' >"$c/ext"
		else
			printf 'extendedKeyUsage=clientAuth\n' >"$c/ext"
		fi
		openssl x509 -req -in "$c/$who.csr" -CA "$c/ca.pem" -CAkey "$c/ca.key" \
			-CAcreateserial -days 2 -extfile "$c/ext" -out "$c/$who.pem" 2>>"$c/log" || return 1
	done
	# a second CA that signed nothing here: trusting it must fail the handshake
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=rmqns-other-ca \
		-keyout "$c/other.key" -out "$c/other.pem" 2>>"$c/log"
}
certs || { cat "$tmp/certs/log" >&2; fail "openssl could not make the test certificates"; }
C=$tmp/certs

# ---- the server ----
# start_server MODE [KEY=VALUE...]: rmqns on a free loopback port, $addr set.
start_server() {
	mode=$1
	shift
	extra="$*"
	home=$tmp/home-$mode-$$-$(date +%s%N)
	mkdir -p "$home"
	set -- "--tls.server.mode=$mode" "--tls.server.certPath=$C/server.pem" \
		"--tls.server.keyPath=$C/server.key" "$@"
	(cd "$home" && HOME=$home ROCKETMQ_HOME=$home exec "$bin" --listenPort=0 \
		--bindAddress=127.0.0.1 "$@" >"$home/stdout" 2>"$home/rmqns.log") &
	server_pid=$!
	server_home=$home
	addr=
	i=0
	while [ $i -lt 300 ]; do
		addr=$(sed -n 's/.*The Name Server boot success\. serializeType=JSON, address \(127\.0\.0\.1:[0-9]*\).*/\1/p' \
			"$home/stdout" 2>/dev/null | head -n 1)
		[ -n "$addr" ] && break
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	if [ -z "$addr" ]; then
		cat "$home/stdout" "$home/rmqns.log" >&2
		fail "rmqns (tls.server.mode=$mode $extra) did not boot"
	fi
	echo "== rmqns tls.server.mode=$mode $extra on $addr"
}

stop_server() {
	kill "$server_pid"
	wait "$server_pid" 2>/dev/null || true
	server_pid=
}

# ---- the clients ----
failed=0
# expect WANT LABEL COMMAND...: runs a client and compares its exit status (0 or not).
expect() {
	want=$1
	label=$2
	shift 2
	echo "-- $label"
	if "$@" >"$tmp/out" 2>&1; then got=0; else got=1; fi
	cat "$tmp/out"
	if [ "$got" != "$want" ]; then
		echo "compat: FAIL: $label (exit status $got, want $want)" >&2
		tail -n 20 "$server_home/rmqns.log" >&2 || true
		failed=1
	fi
}

java_client() {
	java -cp "$tmp/classes:$CP" "$@"
}

trusting() { java_client -Dtls.enable=true TlsClientCheck "$@"; }
checking() {
	java_client -Dtls.enable=true -Dtls.test.mode.enable=false -Dtls.client.authServer=true \
		-Dtls.client.trustCertPath="$C/ca.pem" TlsClientCheck "$@"
}
checking_other_ca() {
	java_client -Dtls.enable=true -Dtls.test.mode.enable=false -Dtls.client.authServer=true \
		-Dtls.client.trustCertPath="$C/other.pem" TlsClientCheck "$@"
}
with_cert() {
	java_client -Dtls.enable=true -Dtls.test.mode.enable=false -Dtls.client.authServer=true \
		-Dtls.client.trustCertPath="$C/ca.pem" -Dtls.client.certPath="$C/client.pem" \
		-Dtls.client.keyPath="$C/client.key" TlsClientCheck "$@"
}
plaintext() { java_client TlsClientCheck "$@"; }
tls13() {
	java_client -Dtls.enable=true -Dcheck.tls.protocols=TLSv1.3 TlsClientCheck "$@" &&
		grep -q '^connected to .* over TLSv1\.3 ' "$tmp/out"
}

run_java() {
	mkdir -p "$tmp/classes"
	javac -Xlint:all -Werror -d "$tmp/classes" -cp "$CP" "$here/TlsClientCheck.java" ||
		fail "TlsClientCheck.java does not compile"

	start_server permissive
	expect 0 "permissive: TLS, any certificate trusted (tls.test.mode)" trusting "$addr" check
	expect 0 "permissive: TLS, certificate checked against the CA" checking "$addr" check
	expect 0 "permissive: plaintext on the same port" plaintext "$addr" check
	expect 0 "permissive: TLSv1.3 (newer Netty releases offer it)" tls13 "$addr" check
	expect 0 "permissive: a client trusting another CA does not get through" \
		checking_other_ca "$addr" refused
	stop_server

	start_server enforcing
	expect 0 "enforcing: TLS, any certificate trusted" trusting "$addr" check
	expect 0 "enforcing: TLS, certificate checked against the CA" checking "$addr" check
	expect 0 "enforcing: plaintext is refused" plaintext "$addr" refused
	stop_server

	start_server enforcing --tls.server.need.client.auth=require \
		"--tls.server.trustCertPath=$C/ca.pem"
	expect 0 "require: a client certificate from the trusted CA" with_cert "$addr" check
	expect 0 "require: no client certificate is refused" trusting "$addr" refused
	stop_server
}

run_bench() {
	b() { "$bench" route -a "$addr" -n 2000 -c 2 -p 4 -b 2 -t 10 --quiet --timeout 10s "$@"; }
	start_server permissive
	expect 0 "bench: route over TLS, any certificate" b --tls
	expect 0 "bench: route over TLS, certificate checked" b --tls-ca "$C/ca.pem"
	expect 1 "bench: route over TLS, another CA: the handshake fails" b --tls-ca "$C/other.pem"
	expect 0 "bench: route in plaintext on the same port" b
	expect 0 "bench: register over TLS" "$bench" register -a "$addr" -n 200 -b 2 -t 100 --quiet --tls
	expect 0 "bench: churn over TLS (a handshake per cycle)" "$bench" churn -a "$addr" -n 100 -c 2 \
		-b 2 -t 10 --quiet --tls
	stop_server

	start_server enforcing --tls.server.need.client.auth=require \
		"--tls.server.trustCertPath=$C/ca.pem"
	expect 0 "bench: require: route with a client certificate" b --tls-ca "$C/ca.pem" \
		--tls-cert "$C/client.pem" --tls-key "$C/client.key"
	expect 1 "bench: require: route without a client certificate is refused" b --tls
	expect 1 "bench: require: plaintext is refused" b --register-timeout 5s
	stop_server
}

if [ "$what" = java ]; then
	run_java
else
	run_bench
fi
[ "$failed" = 0 ] || fail "some checks failed (see above)"
echo "compat: all TLS checks passed"
