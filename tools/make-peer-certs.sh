#!/usr/bin/env bash
# Makes the certificates for the embedded controllers' peer TLS
# (controllerPeerTlsCertPath, controllerPeerTlsKeyPath,
# controllerPeerTlsTrustCertPath) with openssl alone:
#
#   tools/make-peer-certs.sh [OPTIONS] OUTDIR HOST...
#
#   OUTDIR/ca.pem, OUTDIR/ca-key.pem     the CA; its key stays here, in no
#                                        node's directory
#   OUTDIR/HOST/HOST.pem, HOST-key.pem   per HOST: a certificate naming HOST
#   OUTDIR/HOST/ca.pem                   (subjectAltName DNS:HOST, and IP:HOST
#                                        when HOST is an address) and the CA's
#                                        certificate; mount this directory
#                                        read-only into the node of that host
#
# HOST is the host of the node's controllerDLegerPeers entry: a peer's
# certificate must name the host of the entry whose id it claims.
#
# Options:
#   --shared NAME       also OUTDIR/NAME/tls.crt, tls.key and ca.crt: one
#                       certificate naming every HOST (and every --name), in
#                       the layout of a kubernetes.io/tls Secret
#   --name NAME         one more name for the shared certificate only, e.g. a
#                       wildcard (*.rmqns-headless.default.svc.cluster.local)
#   --k8s-secret NAME   also OUTDIR/NAME.yaml: a Secret of type
#                       kubernetes.io/tls named NAME holding the shared
#                       certificate (tls.crt, tls.key, ca.crt, as cert-manager
#                       writes them); implies --shared NAME
#   --namespace NS      the Secret's namespace (default: none, kubectl's)
#   --owner UID:GID     owner of the nodes' directories and files when run as
#                       root (default 10001:10001, the image's rmqns user)
#   --days N            validity of the certificates (default 825)
#   --force             replace everything OUTDIR holds, the CA included
#
# Idempotent: what exists is kept (and checked against the CA), what is
# missing is made with the existing CA; a file that would change (a shared
# certificate naming other hosts, one the CA did not sign) is refused unless
# --force. Modes: the CA key 0600 in a 0700 OUTDIR; a node's directory 0750,
# its key 0400 and certificates 0444, owned by --owner when run as root
# (otherwise by the caller: for rootless podman, `podman unshare chown -R
# 10001:10001 OUTDIR/HOST` hands them to the container's user).
set -euo pipefail

usage() { sed -n '2,/^set -e/p' "$0" | sed -e '/^set -e/d' -e 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "make-peer-certs: $*" >&2; exit 1; }

shared="" secret="" namespace="" owner=10001:10001 days=825 force="" extra=() args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--shared) shared=${2:?--shared needs a NAME}; shift 2 ;;
	--name) extra+=("${2:?--name needs a NAME}"); shift 2 ;;
	--k8s-secret) secret=${2:?--k8s-secret needs a NAME}; shift 2 ;;
	--namespace) namespace=${2:?--namespace needs a namespace}; shift 2 ;;
	--owner) owner=${2:?--owner needs UID:GID}; shift 2 ;;
	--days) days=${2:?--days needs a number}; shift 2 ;;
	--force) force=1; shift ;;
	-h | --help) usage ;;
	--) shift; args+=("$@"); break ;;
	-*) die "unknown option $1 (--help lists them)" ;;
	*) args+=("$1"); shift ;;
	esac
done
[ ${#args[@]} -ge 2 ] || usage
out=${args[0]}
hosts=("${args[@]:1}")
command -v openssl >/dev/null || die "openssl is needed"
[[ $days =~ ^[1-9][0-9]*$ ]] || die "--days $days is not a number of days"
[[ $owner =~ ^[0-9]+:[0-9]+$ ]] || die "--owner $owner is not UID:GID"
[ -z "$secret" ] || { [ -z "$shared" ] || [ "$shared" = "$secret" ] || die "--shared $shared and --k8s-secret $secret name two things"; shared=$secret; }
[ ${#extra[@]} -eq 0 ] || [ -n "$shared" ] || die "--name needs --shared or --k8s-secret"

is_ip() { [[ $1 =~ ^[0-9]+(\.[0-9]+){3}$ || $1 == *:* ]]; }
# A host names a directory and files: letters, digits, '.', '-' (':' in an
# IPv6 address); a --name may start with '*.'.
for h in "${hosts[@]}" ${shared:+"$shared"}; do
	[[ $h =~ ^[A-Za-z0-9][A-Za-z0-9.:-]*$ ]] || die "'$h' is not a host name or address"
done
for h in "${extra[@]}"; do [[ $h =~ ^(\*\.)?[A-Za-z0-9][A-Za-z0-9.:-]*$ ]] || die "'$h' is not a name"; done

san_of() {
	local h list=()
	for h in "$@"; do
		list+=("DNS:$h")
		if is_ip "$h"; then list+=("IP:$h"); fi
	done
	(IFS=,; echo "${list[*]}")
}
# The DNS names of a subjectAltName (san_of's, or an existing
# certificate's), comma-separated: every HOST is one, so they tell.
dns_of() { tr -d ' ' | grep -o 'DNS:[^,]*' | paste -sd, -; }
san_in() { openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null | sed -n '2,$p' | dns_of; }

if [ -n "$force" ]; then
	for h in "${hosts[@]}" ${shared:+"$shared"}; do rm -rf "${out:?}/$h"; done
	rm -f "$out/ca.pem" "$out/ca-key.pem" ${secret:+"$out/$secret.yaml"}
fi
umask 077
mkdir -p "$out"
chmod 0700 "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -f "$out/ca.pem" ] && [ -f "$out/ca-key.pem" ]; then
	echo "make-peer-certs: keeping the CA $out/ca.pem"
elif [ -e "$out/ca.pem" ] || [ -e "$out/ca-key.pem" ]; then
	die "$out holds half a CA (ca.pem or ca-key.pem alone); --force makes a new one"
else
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 -days "$days" \
		-subj "/CN=rmqns controller peers CA" -keyout "$tmp/ca-key.pem" -out "$tmp/ca.pem" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		2>"$tmp/err" || { cat "$tmp/err" >&2; die "openssl could not make the CA"; }
	mv "$tmp/ca-key.pem" "$out/ca-key.pem"
	chmod 0444 "$tmp/ca.pem"
	mv "$tmp/ca.pem" "$out/ca.pem"
	echo "make-peer-certs: made the CA $out/ca.pem (key $out/ca-key.pem: keep it off the nodes)"
fi

# make_node DIR CERT KEY TRUST NAME...: a key and a certificate signed by the
# CA naming NAME..., and the CA's certificate, in DIR; kept when there and
# equal to what would be made.
make_node() {
	local dir=$1 cert=$2 key=$3 trust=$4
	shift 4
	local san
	san=$(san_of "$@")
	if [ -f "$dir/$cert" ] && [ -f "$dir/$key" ] && [ -f "$dir/$trust" ]; then
		openssl verify -CAfile "$out/ca.pem" "$dir/$cert" >/dev/null 2>&1 ||
			die "$dir/$cert is not signed by $out/ca.pem; --force replaces it"
		cmp -s "$dir/$trust" "$out/ca.pem" || die "$dir/$trust is not $out/ca.pem; --force replaces it"
		[ "$(san_in "$dir/$cert")" = "$(dns_of <<<"$san")" ] ||
			die "$dir/$cert names $(san_in "$dir/$cert"), not $san; --force replaces it"
		echo "make-peer-certs: keeping $dir/$cert ($san)"
		return 0
	fi
	[ ! -e "$dir" ] || die "$dir exists without all of $cert, $key and $trust; --force replaces it"
	local cn=${1:0:64}
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 -subj "/CN=$cn" \
		-keyout "$tmp/key.pem" -out "$tmp/req.pem" 2>"$tmp/err" || { cat "$tmp/err" >&2; die "openssl req for $dir"; }
	printf '%s\n' "subjectAltName=$san" "basicConstraints=critical,CA:FALSE" \
		"keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth,clientAuth" >"$tmp/ext"
	openssl x509 -req -sha256 -days "$days" -in "$tmp/req.pem" -CA "$out/ca.pem" -CAkey "$out/ca-key.pem" \
		-CAcreateserial -CAserial "$tmp/ca.srl" -extfile "$tmp/ext" -out "$tmp/cert.pem" 2>"$tmp/err" ||
		{ cat "$tmp/err" >&2; die "openssl x509 for $dir"; }
	mkdir "$tmp/node"
	mv "$tmp/cert.pem" "$tmp/node/$cert"
	mv "$tmp/key.pem" "$tmp/node/$key"
	cp "$out/ca.pem" "$tmp/node/$trust"
	chmod 0444 "$tmp/node/$cert" "$tmp/node/$trust"
	chmod 0400 "$tmp/node/$key"
	chmod 0750 "$tmp/node"
	if [ "$(id -u)" = 0 ]; then chown -R "$owner" "$tmp/node"; fi
	mv "$tmp/node" "$dir"
	echo "make-peer-certs: made $dir/$cert ($san)"
}

for h in "${hosts[@]}"; do make_node "$out/$h" "$h.pem" "$h-key.pem" ca.pem "$h"; done
[ -z "$shared" ] || make_node "$out/$shared" tls.crt tls.key ca.crt "${hosts[@]}" "${extra[@]}"
[ "$(id -u)" = 0 ] || echo "make-peer-certs: not root: the nodes' files are yours; the container's user (uid ${owner%%:*}) must be able to read them"

if [ -n "$secret" ]; then
	b64() { base64 -w0 "$out/$shared/$1"; }
	# Written anew each time: it holds exactly the files above.
	{
		echo "# Made by tools/make-peer-certs.sh: the controllers' peer certificate, its key and the CA."
		echo "apiVersion: v1"
		echo "kind: Secret"
		echo "metadata:"
		echo "  name: $secret"
		[ -z "$namespace" ] || echo "  namespace: $namespace"
		echo "  labels:"
		echo "    app.kubernetes.io/name: rmqns"
		echo "type: kubernetes.io/tls"
		echo "data:"
		echo "  tls.crt: $(b64 tls.crt)"
		echo "  tls.key: $(b64 tls.key)"
		echo "  ca.crt: $(b64 ca.crt)"
	} >"$tmp/secret.yaml"
	chmod 0600 "$tmp/secret.yaml"
	mv "$tmp/secret.yaml" "$out/$secret.yaml"
	echo "make-peer-certs: wrote the Secret $out/$secret.yaml (kubectl apply -f it)"
fi
