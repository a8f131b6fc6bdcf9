#!/bin/bash
# http-auth-tls.sh - the store settings file's TLS settings against a real
# nginx on 127.0.0.1 that verifies client certificates (ssl_verify_client)
# with a CA this test makes with openssl: the server's certificate is
# trusted only with ca-file, the server refuses a client without a
# certificate or with one from another CA, and takes ours (its key plain,
# or encrypted with client-key-password); the password is never shown.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need openssl timeout

W=$T/www
P=$T/pki
mkdir -p "$W" "$P" "$T/o" "$NGINX_CONF_DIR"
"$GEN" 500K 1 >"$T/a.img"
"$CAFS" make -q --chunk-size 16384 --store "$W/default.castr" "$W/a.caibx" "$T/a.img" >/dev/null || exit 1

# pki NAME CN [CA]: NAME.key and NAME.pem, signed by CA (self-signed: none)
pki() {
	local name=$1 cn=$2 ca=${3:-}
	if [ -z "$ca" ]; then
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$cn" -keyout "$P/$name.key" \
			-out "$P/$name.pem" >/dev/null 2>&1
	else
		openssl req -newkey rsa:2048 -nodes -subj "/CN=$cn" -keyout "$P/$name.key" -out "$P/$name.csr" \
			>/dev/null 2>&1 &&
			openssl x509 -req -in "$P/$name.csr" -CA "$P/$ca.pem" -CAkey "$P/$ca.key" -CAcreateserial \
				-days 2 -extfile <(printf 'subjectAltName=IP:127.0.0.1\n') -out "$P/$name.pem" >/dev/null 2>&1
	fi
}
pki ca "cafs test CA" && pki server 127.0.0.1 ca && pki client "cafs client" ca &&
	pki otherca "another CA" && pki stranger "stranger" otherca || { echo "Bail out! openssl failed"; exit 1; }
KEYPW=keypw-SECRET1
openssl pkey -in "$P/client.key" -aes256 -passout "pass:$KEYPW" -out "$P/client-enc.key" 2>/dev/null || exit 1
# lib-http.sh takes a certificate it finds in place: ours, signed by our CA
cp "$P/server.pem" "$NGINX_CONF_DIR/cert.pem"
cp "$P/server.key" "$NGINX_CONF_DIR/key.pem"
NGINX_SSL=1
NGINX_EXTRA="ssl_verify_client on; ssl_client_certificate $P/ca.pem;"
nginx_start "$W" || exit 1
U=$NGINX_URL
export CAFS_HTTP_TIMEOUT=3 CAFS_HTTP_RETRIES=0 CAFS_CONFIG=$T/cafs.conf
unset CAFS_HTTP_CAINFO

conf() {
	printf '%s\n' "$1" >"$CAFS_CONFIG"
	chmod 600 "$CAFS_CONFIG"
}
run() {
	local rc=0
	"$@" >"$T/out" 2>&1 || rc=$?
	cat "$T/out" >>"$T/all"
	cat "$T/out"
	return $rc
}
# fails_with PATTERN COMMAND...: exit 1, at most two lines, PATTERN among them
fails_with() {
	local pat=$1 rc=0
	shift
	run timeout 60 "$@" || rc=$?
	[ "$rc" = 1 ] || { echo "exit $rc, wanted 1"; return 1; }
	[ "$(wc -l <"$T/out")" -le 2 ] || { echo "wanted at most two lines"; return 1; }
	grep -qi -- "$pat" "$T/out" || { echo "no '$pat'"; return 1; }
}
extract_ok() {
	rm -f "$T/o/a.img"
	run timeout 60 "$CAFS" extract "$U/a.caibx" "$T/o/a.img" && cmp "$T/o/a.img" "$T/a.img"
}

conf "[$U/]
client-cert = $P/client.pem
client-key = $P/client.key"
ok "without ca-file the server's certificate is not trusted" fails_with 'certificate\|SSL\|TLS\|peer' \
	"$CAFS" extract "$U/a.caibx" "$T/o/a.img"
conf "[$U/]
ca-file = $P/ca.pem"
ok "with ca-file but no client certificate: refused by the server" fails_with 'HTTP status 400' \
	"$CAFS" extract "$U/a.caibx" "$T/o/a.img"
conf "[$U/]
ca-file = $P/ca.pem
client-cert = $P/stranger.pem
client-key = $P/stranger.key"
ok "a client certificate from another CA: refused" fails_with 'HTTP status 400' \
	"$CAFS" extract "$U/a.caibx" "$T/o/a.img"
conf "[$U/]
ca-file = $P/ca.pem
client-cert = $P/client.pem
client-key = $P/client.key"
nginx_log_reset
ok "ca-file and our client certificate: works" extract_ok
ok "... every request was answered 200" sh -c "! awk '\$3 != 200' '$NGINX_CONF_DIR/access.log' | grep -q ."
conf "[$U/]
ca-file = $P/ca.pem
client-cert = $P/client.pem
client-key = $P/client-enc.key
client-key-password = $KEYPW"
ok "an encrypted key with client-key-password: works" extract_ok
conf "[$U/]
ca-file = $P/ca.pem
client-cert = $P/client.pem
client-key = $P/client-enc.key
client-key-password = wrong-SECRET2"
ok "... with a wrong password: one failure" fails_with 'key\|certificate\|SSL' "$CAFS" extract "$U/a.caibx" "$T/o/a.img"
conf "[$U/]
ca-file = $P/ca.pem
client-cert = $P/client.pem
client-key = $P/client-enc.key
client-key-password = $KEYPW"
mnt=$T/mnt
mount_start "a mount with the client certificate" "$mnt" "$T/mlog" -v --no-cache "$U/a.caibx"
ok "... reads right" sh -c "cmp '$mnt/a' '$T/a.img' || cmp \"\$(ls -d '$mnt'/* | head -1)\" '$T/a.img'"
"$CAFS" stats "$mnt" >>"$T/all" 2>&1
grep " $mnt " /proc/mounts >>"$T/all"
mount_stop "... unmounts" "$mnt"
cat "$T/mlog" >>"$T/all"
ok "the key password is in no output ($(wc -l <"$T/all") lines)" sh -c "! grep -n SECRET '$T/all'"

mount_done_testing
