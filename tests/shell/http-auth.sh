#!/bin/bash
# http-auth.sh - the store settings file (core/net/storeconf.c) against a real
# nginx on 127.0.0.1: a bearer header, basic auth (settings and netrc),
# two prefixes with two tokens (the longest prefix wins), a pre-signed
# style index URL whose query reaches the index only (and the chunks too
# with store-query = yes), every request kind (index, chunks, a .catar's
# ranges, HEAD presence checks, a mount) carrying the settings; a settings
# file refused for its mode, a malformed line, an unknown key: one line,
# exit 1, each next to its accepted case; and no secret in any output,
# stats or /proc/mounts.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need openssl timeout

W=$T/www
src=$T/src
mkdir -p "$W/base" "$src/d" "$T/o" "$T/home"
"$GEN" 700K 1 >"$T/a.img"
"$CAFS" make -q --chunk-size 16384 --store "$W/base/default.castr" "$W/base/a.caibx" "$T/a.img" >/dev/null || exit 1
"$GEN" 300K 2 >"$src/d/f"
printf 'hello\n' >"$src/h.txt"
"$CAFS" make -q --store "$W/base/default.castr" "$W/base/t.caidx" "$src" >/dev/null || exit 1
"$CAFS" make -q "$W/base/t.catar" "$src" >/dev/null || exit 1
for d in bearer bearer2 basic presigned; do cp -a "$W/base" "$W/$d"; done

# secrets: every one holds SECRET, and no output may
TOK1=tok-one-SECRET1 TOK2=tok-two-SECRET2 PW=pw-SECRET3 SIG=sig-SECRET4
printf 'alice:%s\n' "$(openssl passwd -apr1 "$PW")" >"$T/nginx-htpasswd"
NGINX_EXTRA="
		location /bearer/ { if (\$http_authorization != 'Bearer $TOK1') { return 403; } }
		location /bearer2/ { if (\$http_authorization != 'Bearer $TOK2') { return 403; } }
		location /basic/ { auth_basic cafs; auth_basic_user_file $T/nginx-htpasswd; }
		location /presigned/ {
			location ~ \\.caibx\$ { if (\$args !~ 'X-Amz-Signature=$SIG') { return 403; } }
		}"
nginx_start "$W" || exit 1
U=$NGINX_URL
export CAFS_HTTP_TIMEOUT=3 CAFS_HTTP_RETRIES=0
# this test's settings file only, and a home of its own (~/.netrc)
export CAFS_CONFIG=$T/cafs.conf HOME=$T/home
unset XDG_CONFIG_HOME

# conf TEXT: the settings file, private
conf() {
	printf '%s\n' "$1" >"$CAFS_CONFIG"
	chmod 600 "$CAFS_CONFIG"
}

# run COMMAND...: run it, its output kept in $T/out and added to $T/all
run() {
	local rc=0
	"$@" >"$T/out" 2>&1 || rc=$?
	cat "$T/out" >>"$T/all"
	cat "$T/out"
	return $rc
}

# one_line PATTERN COMMAND...: exit 1 with one line matching PATTERN
one_line() {
	local pat=$1 rc=0
	shift
	run timeout 60 "$@" || rc=$?
	[ "$rc" = 1 ] || { echo "exit $rc, wanted 1"; return 1; }
	[ "$(wc -l <"$T/out")" = 1 ] || { echo "wanted one line"; return 1; }
	grep -q -- "$pat" "$T/out" || { echo "no '$pat'"; return 1; }
}

# refused STATUS COMMAND...: exit 1 naming the HTTP status (a warning
# with the status, then the error: http.c's words, at most two lines)
refused() {
	local st=$1 rc=0
	shift
	run timeout 60 "$@" || rc=$?
	[ "$rc" = 1 ] || { echo "exit $rc, wanted 1"; return 1; }
	[ "$(wc -l <"$T/out")" -le 2 ] || { echo "wanted at most two lines"; return 1; }
	grep -q "HTTP status $st" "$T/out" || { echo "no status $st"; return 1; }
}

# extract_ok URL: the blob extracts and equals the source
extract_ok() {
	rm -f "$T/o/a.img"
	run timeout 60 "$CAFS" extract "$1" "$T/o/a.img" && cmp "$T/o/a.img" "$T/a.img"
}

# log_all SELECT TEST: some access log lines match awk's SELECT, and all of those TEST
log_all() {
	nginx_log | awk "$1 { n++; if (!($2)) { bad++; print } } END { exit !(n > 0 && !bad) }"
}
one_warning() { [ "$(wc -l <"$T/out")" = 1 ] && grep -q 'holds secrets and others may read it' "$T/out"; }
quiet_extract_ok() { extract_ok "$1" && [ ! -s "$T/out" ]; }

# ---- a bearer header ----
conf ''
ok "bearer: refused without the setting" refused 403 "$CAFS" extract "$U/bearer/a.caibx" "$T/o/a.img"
conf "[$U/bearer/]
header = Authorization: Bearer $TOK1"
nginx_log_reset
ok "bearer: works with the header setting" extract_ok "$U/bearer/a.caibx"
ok "... and every chunk GET carried it (all 200)" log_all '$2 ~ /cacnk/' '$3 == 200'
conf "[$U/bearer/]
header = Authorization: Bearer wrong-SECRET5"
ok "bearer: a wrong token is refused (and never shown: see the last check)" refused 403 "$CAFS" extract "$U/bearer/a.caibx" "$T/o/a.img"
conf "[$U/bearer/]
header = Authorization: Bearer $TOK1"
ok "bearer: a .catar by range requests" sh -c "'$CAFS' list '$U/bearer/t.catar' | grep -q ' h.txt\$'"
conf ''
ok "... refused without the setting" refused 403 "$CAFS" list "$U/bearer/t.catar"
conf "[$U/bearer/]
header = Authorization: Bearer $TOK1"
nginx_log_reset
ok "bearer: info --store: HEAD presence checks carry it" \
	sh -c "'$CAFS' info --store '$U/bearer/default.castr' '$U/bearer/t.caidx' >'$T/info' 2>&1"
ok "... HEAD requests were answered 200" log_all '$1 == "HEAD"' '$3 == 200'
cat "$T/info" >>"$T/all"
conf ''
ok "... and without the setting they are refused" fails "$CAFS" info --store "$U/bearer/default.castr" "$W/bearer/t.caidx"

# ---- two prefixes, two tokens; the longest prefix wins ----
conf "[$U/]
header = Authorization: Bearer $TOK2
[$U/bearer/]
header = Authorization: Bearer $TOK1"
ok "prefixes: /bearer/ gets its own section's token" extract_ok "$U/bearer/a.caibx"
ok "prefixes: /bearer2/ gets the host's token" extract_ok "$U/bearer2/a.caibx"
conf "[$U/bearer/]
header = Authorization: Bearer $TOK1"
ok "prefixes: without a section for it, /bearer2/ is refused" refused 403 "$CAFS" extract "$U/bearer2/a.caibx" "$T/o/a.img"
# a URL holding userinfo is matched on its host: no section, no token
ok "prefixes: user@host matches the host's section" extract_ok "http://x@127.0.0.1:$NGINX_PORT/bearer/a.caibx"

# ---- basic auth: the settings, or a netrc ----
conf ''
ok "basic: refused without credentials" refused 401 "$CAFS" extract "$U/basic/a.caibx" "$T/o/a.img"
conf "[$U/basic/]
user = alice
password = $PW"
ok "basic: works with user and password" extract_ok "$U/basic/a.caibx"
printf 'machine 127.0.0.1 login alice password %s\n' "$PW" >"$T/netrc"
chmod 600 "$T/netrc"
conf "[$U/basic/]
netrc = $T/netrc"
ok "basic: works with netrc = FILE" extract_ok "$U/basic/a.caibx"
cp "$T/netrc" "$HOME/.netrc"
conf ''
ok "basic: ~/.netrc is read by default" extract_ok "$U/basic/a.caibx"
conf "[$U/basic/]
netrc = no"
ok "basic: netrc = no: it is not" refused 401 "$CAFS" extract "$U/basic/a.caibx" "$T/o/a.img"
rm -f "$HOME/.netrc"

# ---- a pre-signed style index URL ----
P="$U/presigned/a.caibx?X-Amz-Expires=60&X-Amz-Signature=$SIG"
conf ''
ok "presigned: the index without its query is refused" refused 403 "$CAFS" extract "$U/presigned/a.caibx" "$T/o/a.img"
nginx_log_reset
ok "presigned: the index with its query works" extract_ok "$P"
ok "... the index GET carried the query" log_all '$2 ~ /caibx/' "\$2 == \"/presigned/a.caibx?X-Amz-Expires=60&X-Amz-Signature=$SIG\" && \$3 == 200"
ok "... no chunk GET did" log_all '$2 ~ /cacnk/' '$2 !~ /[?]/ && $3 == 200'
conf "[$U/presigned/]
store-query = yes"
nginx_log_reset
ok "presigned: store-query = yes passes it on" extract_ok "$P"
ok "... every chunk GET carried it" log_all '$2 ~ /cacnk/' '$2 ~ /[.]cacnk[?]X-Amz-Expires=60&X-Amz-Signature=/ && $3 == 200'
conf ''
ok "presigned: a failure shows the URL without its query" one_line 'presigned/b.caibx?\*\*\*' "$CAFS" extract "$U/presigned/b.caibx?X-Amz-Signature=$SIG" "$T/o/a.img"

# ---- the settings file itself ----
conf "[$U/bearer/]
header = Authorization: Bearer $TOK1"
chmod 666 "$CAFS_CONFIG"
ok "file: writable by others: refused" one_line 'writable by group or others' "$CAFS" extract "$U/bearer/a.caibx" "$T/o/a.img"
chmod 620 "$CAFS_CONFIG"
ok "file: writable by the group: refused" one_line 'writable by group or others' "$CAFS" extract "$U/bearer/a.caibx" "$T/o/a.img"
chmod 644 "$CAFS_CONFIG"
ok "file: readable by others: works" extract_ok "$U/bearer/a.caibx"
ok "... with one warning" one_warning
chmod 600 "$CAFS_CONFIG"
ok "file: private: works, no message" quiet_extract_ok "$U/bearer/a.caibx"
conf "[$U/bearer/]
header = Authorization: Bearer $TOK1
retries = lots"
ok "file: a malformed value: file:line, exit 1" one_line "cafs.conf:3: retries: expected a number" "$CAFS" extract "$U/bearer/a.caibx" "$T/o/a.img"
conf "[$U/bearer/]
header Authorization: Bearer $TOK1"
ok "file: a malformed line: file:line, not the line" one_line "cafs.conf:2: malformed line" "$CAFS" extract "$U/bearer/a.caibx" "$T/o/a.img"
conf "[$U/bearer/]
haeder = Authorization: Bearer $TOK1"
ok "file: an unknown key (a typo) is an error" one_line "cafs.conf:2: unknown key 'haeder'" "$CAFS" extract "$U/bearer/a.caibx" "$T/o/a.img"
ok "file: also for a mount, before it starts" one_line "unknown key 'haeder'" "$CAFS" mount "$U/bearer/t.caidx" "$T/mnt-never"
ok "file: also for a local image" one_line "unknown key" "$CAFS" extract "$W/base/a.caibx" "$T/o/a.img"
ok "file: help needs no settings" "$CAFS" help extract
CAFS_CONFIG=$T/none.conf ok "file: a CAFS_CONFIG that does not exist: one line" one_line 'none.conf' "$CAFS" extract "$W/base/a.caibx" "$T/o/a.img"
conf "[$U/bearer/]
header = Authorization: Bearer $TOK1"
ok "file: fixed: works again" extract_ok "$U/bearer/a.caibx"

# ---- a mount: every request (index, sidecar, chunks) with the settings ----
conf "[$U/bearer/]
header = Authorization: Bearer $TOK1
[$U/presigned/]
header = Authorization: Bearer $TOK2"
mnt=$T/mnt
nginx_log_reset
mount_start "mount over a bearer-protected store" "$mnt" "$T/mlog" -v --cache="$T/cache" "$U/bearer/t.caidx"
ok "... reads right" cmp "$mnt/d/f" "$src/d/f"
ok "... no request was refused" log_all '1' '$3 < 400 || $3 == 404'
"$CAFS" stats "$mnt" >>"$T/all" 2>&1
grep " $mnt " /proc/mounts >>"$T/all"
mount_stop "... unmounts" "$mnt"
cat "$T/mlog" >>"$T/all"
mount_start "mount of a pre-signed index URL" "$mnt" "$T/mlog2" -v --cache="$T/cache2" \
	"$U/presigned/t.caidx?X-Amz-Signature=$SIG"
ok "... reads right" cmp "$mnt/h.txt" "$src/h.txt"
"$CAFS" stats "$mnt" >>"$T/all" 2>&1
grep " $mnt " /proc/mounts >"$T/mounts"
ok "... /proc/mounts shows it, without the query" grep -q 'presigned/t.caidx?\*\*\*' "$T/mounts"
cat "$T/mounts" >>"$T/all"
mount_stop "... unmounts" "$mnt"
cat "$T/mlog2" >>"$T/all"

# verbose and debug runs too: still no secret
conf "[$U/bearer/]
header = Authorization: Bearer $TOK1
[$U/basic/]
user = alice
password = $PW"
run "$CAFS" extract -v -v "$U/bearer/a.caibx" "$T/o/v.img" >/dev/null
run "$CAFS" extract -v -v "$U/basic/a.caibx" "$T/o/v2.img" >/dev/null
run "$CAFS" extract -v -v "$U/presigned/a.caibx?X-Amz-Signature=$SIG" "$T/o/v3.img" >/dev/null
ok "no secret in any output, stats or /proc/mounts ($(wc -l <"$T/all") lines)" sh -c "! grep -n SECRET '$T/all'"

mount_done_testing
