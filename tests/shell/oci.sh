#!/bin/bash
# oci.sh - OCI registries as stores against a real registry (Debian's
# docker-registry, distribution 2.8, on 127.0.0.1): make uploads the
# chunks (desync's layout: skopeo reads what cafs pushed) and the index
# as artifacts; extract, mount (nothing but the registry URL) and cache
# fill read them back byte-identical; a second make uploads nothing, a
# changed tree only the new chunks; gc deletes exactly the chunk manifests
# no index names. Then the same registry behind htpasswd (bcrypt) basic
# auth: refused without credentials, accepted with skopeo login's
# auth.json and with cafs.conf's user/password, which no output shows.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-oci.sh"
need python3 timeout htpasswd skopeo fusermount3
[ -x "$REGISTRY_BIN" ] || skip_all "no docker-registry"

export CAFS_HTTP_TIMEOUT=3 CAFS_HTTP_RETRIES=1
ALL=$T/all-output
run() { "$@" 2>&1 | tee -a "$ALL"; return "${PIPESTATUS[0]}"; }

registry_start open || exit 1
P=$REGISTRY_PORT
LOG=$REGISTRY_LOG
R=oci+http://127.0.0.1:$P/team/images
chunk_puts() { grep -cE '"PUT /v2/team/images/manifests/[0-9a-f]{64}\.cacnk HTTP/1.1" 201' "$LOG" || true; }

src=$T/src
mkdir -p "$src/big" "$src/small"
for i in 0 1 2; do "$GEN" 1M $((i + 20)) >"$src/big/f$i"; done
printf 'hello\n' >"$src/small/a.txt"
ln -s big/f0 "$src/link"
"$CAFS" make --store="$T/local.castr" "$T/local.caidx" "$src" >/dev/null || exit 1
n_chunks=$(find "$T/local.castr" -name '*.cacnk' | wc -l)

# ---- make ----
ok "make to a registry: index and chunks as artifacts" run "$CAFS" make "$R/app.caidx" "$src"
ok "... one chunk manifest per chunk ($(chunk_puts) of $n_chunks)" test "$(chunk_puts)" = "$n_chunks"
tags=$(curl -s "http://127.0.0.1:$P/v2/team/images/tags/list?n=10000")
ok "... the index is tagged app.caidx" grep -q '"app.caidx"' <<<"$tags"
ok "... its metadata sidecar app.caidx.cameta" grep -q '"app.caidx.cameta"' <<<"$tags"
one=$(find "$T/local.castr" -name '*.cacnk' | head -1 | xargs basename)
ok "... chunks are tagged <id>.cacnk, as their files" grep -q "\"$one\"" <<<"$tags"
raw=$(skopeo inspect --raw --tls-verify=false "docker://127.0.0.1:$P/team/images:$one" 2>&1)
ok "skopeo reads a chunk's manifest: desync's artifact type" grep -q '"artifactType":"application/vnd.desync.chunk.v1"' <<<"$raw"
ok "... the empty config" grep -q '"config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2}' <<<"$raw"
size=$(stat -c %s "$(find "$T/local.castr" -name "$one")")
ok "... one layer holding the chunk file ($size bytes)" python3 -c '
import json, sys
m = json.loads(sys.argv[1])
assert len(m["layers"]) == 1 and m["layers"][0]["size"] == int(sys.argv[2]), m
assert m["annotations"]["org.opencontainers.image.title"] == sys.argv[3]' "$raw" "$size" "$one"
p0=$(chunk_puts)
ok "a second make of the same tree" run "$CAFS" make "$R/app2.caidx" "$src"
ok "... uploads no chunk ($(($(chunk_puts) - p0)))" test "$(chunk_puts)" = "$p0"
cp -a "$src" "$T/src2"
echo extra >"$T/src2/small/new.txt"
ok "a make with one new file" run "$CAFS" make "$R/app3.caidx" "$T/src2"
d=$(($(chunk_puts) - p0))
ok "... uploads only the new chunks ($d)" test "$d" -ge 1 -a "$d" -le 3

# ---- reading ----
ok "extract from the registry (index and chunks)" run "$CAFS" extract "$R/app.caidx" "$T/x1"
ok "... equals the source" diff -r "$src" "$T/x1"
ok "cache fill from the registry" run "$CAFS" cache fill --cache="$T/cache" --store="$R" "$T/local.caidx"
ok "... then an offline extract needs no registry" run "$CAFS" extract --offline --cache="$T/cache" \
	--store="$R" "$T/local.caidx" "$T/x2"
ok "... equals the source" diff -r "$src" "$T/x2"
mnt=$T/mnt
mount_start "mount oci+http://.../app.caidx: nothing but the registry" "$mnt" "$T/m1.log" --no-cache \
	"$R/app.caidx" || exit 1
ok "... every file reads right" diff -r "$src" "$mnt"
mount_stop "... unmount" "$mnt"

# ---- a signature in the registry ----
if command -v minisign >/dev/null; then
	minisign -G -W -p "$T/k.pub" -s "$T/k.key" >/dev/null
	ok "cafs sign an index in the registry: app.caidx.minisig beside it" run "$CAFS" sign -s "$T/k.key" "$R/app.caidx"
	ok "... a trusted key accepts the image from the registry alone" run "$CAFS" list --trusted-key "$T/k.pub" "$R/app.caidx"
	minisign -G -W -p "$T/k2.pub" -s "$T/k2.key" >/dev/null
	fails "... another key refuses it" "$CAFS" list --trusted-key "$T/k2.pub" "$R/app.caidx"
else
	skip "signatures in a registry" "no minisign"
fi

# ---- an encrypted store in a registry (desync's suffix on the tags) ----
E=oci+http://127.0.0.1:$P/team/sealed
K=$(openssl rand -hex 32)
printf '[%s]\nencryption = aes-256-gcm\nencryption-key = %s\n' "$E" "$K" >"$T/enc.conf"
chmod 600 "$T/enc.conf"
ok "make into an encrypted registry store (index local)" run env CAFS_CONFIG="$T/enc.conf" \
	"$CAFS" make --store="$E" "$T/enc.caidx" "$src"
ok "... the index is the same as a plain store's" cmp "$T/local.caidx" "$T/enc.caidx"
kid=$(python3 -c 'import hashlib, sys; print(hashlib.sha256(bytes.fromhex(sys.argv[1])).hexdigest()[:8])' "$K")
etags=$(curl -s "http://127.0.0.1:$P/v2/team/sealed/tags/list?n=10000")
ok "... chunks are tagged <id>.cacnk.aes-256-gcm-$kid" grep -q "\"${one}.aes-256-gcm-$kid\"" <<<"$etags"
ok "... and none plain" test "$(grep -cE '[0-9a-f]{64}[.]cacnk"' <<<"$etags")" = 0
eraw=$(skopeo inspect --raw --tls-verify=false "docker://127.0.0.1:$P/team/sealed:${one}.aes-256-gcm-$kid" 2>&1)
ok "... a layer 28 bytes longer than the plain chunk file (nonce and tag)" python3 -c '
import json, sys
m = json.loads(sys.argv[1])
assert m["layers"][0]["size"] == int(sys.argv[2]) + 28, m' "$eraw" "$size"
ok "extract from it with the key" run env CAFS_CONFIG="$T/enc.conf" "$CAFS" extract --store="$E" "$T/enc.caidx" "$T/xe"
ok "... equals the source" diff -r "$src" "$T/xe"
printf '[%s]\nencryption = aes-256-gcm\nencryption-key = %s\n' "$E" "$(openssl rand -hex 32)" >"$T/enc2.conf"
chmod 600 "$T/enc2.conf"
CAFS_CONFIG=$T/enc2.conf "$CAFS" extract --store="$E" "$T/enc.caidx" "$T/xe2" >"$T/enc2.out" 2>&1
ok "... with another key: no chunk found" test $? -ne 0
ok "... and the message names the key id tried" grep -q "key id" "$T/enc2.out"

# ---- gc ----
mkdir -p "$T/other"
"$GEN" 700K 99 >"$T/other/o.bin"
ok "make another image into the repository" run "$CAFS" make "$R/other.caidx" "$T/other"
n_tags() { curl -s "http://127.0.0.1:$P/v2/team/images/tags/list?n=10000" | python3 -c '
import json, re, sys
print(sum(1 for t in json.load(sys.stdin)["tags"] or [] if re.fullmatch("[0-9a-f]{64}[.]cacnk", t)))'; }
before=$(n_tags)
ok "gc keeping app.caidx and app3.caidx" run "$CAFS" gc --store="$R" "$R/app.caidx" "$R/app3.caidx"
after=$(n_tags)
ok "... removed the other image's chunks ($before -> $after tags)" test "$after" -lt "$before"
ok "... app3 still extracts from the registry" run "$CAFS" extract "$R/app3.caidx" "$T/x3"
ok "... equals its source" diff -r "$T/src2" "$T/x3"
fails "... other.caidx lost its chunks" "$CAFS" extract "$R/other.caidx" "$T/x4"
ok "... and its tag is still there (gc leaves non-chunk tags alone)" \
	sh -c "curl -s 'http://127.0.0.1:$P/v2/team/images/tags/list?n=10000' | grep -q other.caidx"

# ---- authentication: htpasswd (bcrypt) basic auth ----
registry_start auth alice 's3cret-Pa55' || exit 1
A=oci+http://127.0.0.1:$REGISTRY_PORT/private/app
unset REGISTRY_AUTH_FILE
export XDG_RUNTIME_DIR=$T/run HOME=$T/home
mkdir -p "$XDG_RUNTIME_DIR" "$HOME"
out=$("$CAFS" make "$A/img.caidx" "$src" 2>&1)
ok "no credentials: refused" test $? -ne 0
one_line() { test "$(printf '%s\n' "$1" | wc -l)" = 1 && grep -q "$2" <<<"$1"; }
ok "... in one line: access denied" one_line "$out" "access denied"
printf '%s\n' "$out" >>"$ALL"
ok "skopeo login --tls-verify=false" sh -c "echo 's3cret-Pa55' | skopeo login --tls-verify=false -u alice \
	--password-stdin 127.0.0.1:$REGISTRY_PORT >/dev/null 2>&1 && test -s '$XDG_RUNTIME_DIR/containers/auth.json'"
ok "make with the auth.json skopeo wrote" run "$CAFS" make "$A/img.caidx" "$src"
ok "... extract with it" run "$CAFS" extract "$A/img.caidx" "$T/y1"
ok "... equals the source" diff -r "$src" "$T/y1"
rm -f "$XDG_RUNTIME_DIR/containers/auth.json"
fails "without it: refused again" "$CAFS" extract "$A/img.caidx" "$T/y2"
cat >"$T/cafs.conf" <<EOC
[oci+http://127.0.0.1:$REGISTRY_PORT/private/]
user = alice
password = s3cret-Pa55
EOC
chmod 600 "$T/cafs.conf"
export CAFS_CONFIG=$T/cafs.conf
ok "credentials from cafs.conf" run "$CAFS" extract "$A/img.caidx" "$T/y3"
ok "... equals the source" diff -r "$src" "$T/y3"
mount_start "mount with them" "$mnt" "$T/m2.log" --no-cache "$A/img.caidx" || exit 1
ok "... reads right" diff -r "$src" "$mnt"
ok "... no credential in /proc/mounts" sh -c "! grep -q -e s3cret -e alice /proc/mounts"
mount_stop "... unmount" "$mnt"
cat "$T"/m*.log >>"$ALL"
ok "no output ever showed the password" sh -c "! grep -q s3cret '$ALL'"
done_testing
