#!/bin/bash
# s3.sh - S3 stores against a real S3 server that checks every SigV4
# signature (moto_server on 127.0.0.1): `cafs make` uploads exactly the
# chunks the bucket lacks (a second make uploads nothing) and the index
# itself; extract, mount, cache fill and list read from the bucket; gc
# removes exactly the unreferenced chunks; a wrong secret, a missing bucket,
# a missing chunk and the server dying under a mount each fail as they
# should, and the secret appears in no output.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-s3.sh"
need python3 timeout

s3_start || exit 1
U=$S3_URL
ST=$U/bkt/store
ALL=$T/all-output # everything any command printed, searched for the secret at the end
export CAFS_HTTP_TIMEOUT=3 CAFS_HTTP_RETRIES=1
run() { "$@" 2>&1 | tee -a "$ALL"; return "${PIPESTATUS[0]}"; }

src=$T/src
mkdir -p "$src/big" "$src/small"
for i in 0 1 2 3 4 5; do "$GEN" 1M $((i + 10)) >"$src/big/f$i"; done
printf 'hello\n' >"$src/small/a.txt"
ln -s big/f0 "$src/link"
"$CAFS" make --store="$T/local.castr" "$T/local.caidx" "$src" >/dev/null || exit 1
n_chunks=$(find "$T/local.castr" -name '*.cacnk' | wc -l)

# ---- make ----
puts0=$(s3_requests PUT)
ok "make --store s3+http://: chunks to the bucket" run "$CAFS" make --store="$ST" "$T/img.caidx" "$src"
ok "... the index is the local store's" cmp "$T/img.caidx" "$T/local.caidx"
puts1=$(s3_requests PUT)
ok "... one PUT per chunk ($((puts1 - puts0)) of $n_chunks)" test $((puts1 - puts0)) = "$n_chunks"
objects() { s3_keys "$1" | wc -l; }
ok "... the bucket holds them under PREFIX/XXXX/<id>.cacnk" test "$(objects store/)" = "$n_chunks"
s3_keys store/ | sed 's|^store/||' | sort >"$T/keys.s3"
(cd "$T/local.castr" && find . -name '*.cacnk' | sed 's|^./||' | sort) >"$T/keys.local"
ok "... named as in a local store" cmp "$T/keys.s3" "$T/keys.local"
ok "a second make of the same tree" run "$CAFS" make --store="$ST" "$T/img2.caidx" "$src"
puts2=$(s3_requests PUT)
ok "... uploads nothing ($((puts2 - puts1)) PUTs)" test "$puts2" = "$puts1"
touch -r "$src/small" "$T/small.mtime"
echo extra >"$src/small/new.txt"
ok "a make with one new file" run "$CAFS" make --store="$ST" "$T/img3.caidx" "$src"
puts3=$(s3_requests PUT)
ok "... uploads only the changed chunks ($((puts3 - puts2)))" test $((puts3 - puts2)) -ge 1 -a $((puts3 - puts2)) -le 3
rm "$src/small/new.txt"
touch -r "$T/small.mtime" "$src/small" # the tree as it was: img.caidx again
ok "make writes the index to the bucket too" run "$CAFS" make --store="$ST" "$U/bkt/img/tree.caidx" "$src"
s3_curl -o "$T/got.caidx" bkt/img/tree.caidx
ok "... the same index" cmp "$T/got.caidx" "$T/local.caidx"

# ---- reading ----
ok "extract from the bucket (index and chunks)" run "$CAFS" extract --store="$ST" "$U/bkt/img/tree.caidx" "$T/x1"
ok "... equals the source" diff -r "$src" "$T/x1"
ok "list of an index in the bucket" sh -c "'$CAFS' list --store='$ST' '$U/bkt/img/tree.caidx' | grep -q 'big/f3'"
ok "cache fill from the bucket" run "$CAFS" cache fill --cache="$T/cache" --store="$ST" "$T/img.caidx"
ok "... then an offline extract needs no server" run "$CAFS" extract --offline --cache="$T/cache" --store="$ST" \
	"$T/img.caidx" "$T/x2"
ok "... equals the source" diff -r "$src" "$T/x2"
ok "virtual-host addressing (?lookup=dns: http://bkt.localhost)" run "$CAFS" extract \
	--store="${U/127.0.0.1/localhost}/bkt/store?lookup=dns" "$T/img.caidx" "$T/x3"
ok "... equals the source" diff -r "$src" "$T/x3"

mnt=$T/mnt
gets() { grep -c '"GET /bkt/store/.*\.cacnk' "$S3_LOG"; }
mount_start "mount an index in the bucket with -o store=" "$mnt" "$T/m1.log" --no-cache --lru-size=0 \
	-o "store=$ST" "$U/bkt/img/tree.caidx" || exit 1
# the chunks of one file's middle, from the server's log, for the missing-chunk case
g0=$(gets)
cat "$mnt/big/f3" >/dev/null
missing=$(grep '"GET /bkt/store/.*\.cacnk' "$S3_LOG" | tail -n +$((g0 + 1)) | sed 's|.*/\([0-9a-f]*\)\.cacnk.*|\1|' |
	sed -n "$((($(gets) - g0) / 2))p")
ok "... a cold read costs signed chunk GETs ($(($(gets) - g0)))" test "$(gets)" -gt "$g0"
ok "... every file reads right" diff -r "$src" "$mnt"
mount_stop "... unmount" "$mnt"

# ---- gc ----
"$GEN" 700K 99 >"$T/other.bin"
ok "a second image, a blob, into the same bucket" run "$CAFS" make --store="$ST" "$U/bkt/img/other.caibx" "$T/other.bin"
"$CAFS" make --store="$T/other.castr" "$T/other.caibx" "$T/other.bin" >/dev/null
only_other=$(comm -13 <(cd "$T/local.castr" && find . -name '*.cacnk' | sort) \
	<(cd "$T/other.castr" && find . -name '*.cacnk' | sort) | wc -l)
before=$(objects store/)
both=$(cd "$T" && find local.castr other.castr -name '*.cacnk' | sed 's|.*/||' | sort -u | wc -l)
ok "gc --dry-run keeping both images: only the new file's chunks ($((before - both)))" sh -c "'$CAFS' gc \
	--dry-run --store='$ST' '$U/bkt/img/tree.caidx' '$U/bkt/img/other.caibx' |
	grep -q '^would remove $((before - both)) chunks'"
ok "... and removes nothing" test "$(objects store/)" = "$before"
dels0=$(s3_requests DELETE)
ok "gc keeping only the tree image" run "$CAFS" gc --store="$ST" "$U/bkt/img/tree.caidx"
gone=$((before - $(objects store/)))
ok "... deleted exactly the unreferenced chunks ($gone of $before)" \
	test "$gone" = $((before - n_chunks)) -a $(($(s3_requests DELETE) - dels0)) = "$gone"
ok "... among them the other image's own ($only_other)" test "$gone" -ge "$only_other" -a "$only_other" -gt 0
ok "... left the indexes alone" test "$(objects img/)" = 2
ok "... and the tree still extracts" run "$CAFS" extract --store="$ST" "$U/bkt/img/tree.caidx" "$T/x4"
ok "... right" diff -r "$src" "$T/x4"
fails "... the other image no longer does" "$CAFS" extract --store="$ST" "$U/bkt/img/other.caibx" "$T/x5"
# a store of more than one listing page (1000 keys): gc must see every page
"$GEN" 3M 77 >"$T/many.bin"
ok "an image of small chunks (more than 1000)" run "$CAFS" make --chunk-size=1K:2K:8K --store="$U/bkt/many" \
	"$T/many.caibx" "$T/many.bin"
n_many=$(s3_keys many/ | wc -l) # one page: at most 1000
lists0=$(grep -c 'list-type=2' "$S3_LOG")
ok "gc reads every listing page: keeps all of them" sh -c "'$CAFS' gc -v --store='$U/bkt/many' '$T/many.caibx' 2>&1 |
	grep -Eq 'removed 0 chunks .* kept [0-9]{4,} chunks'"
ok "... over more than one page ($(($(grep -c 'list-type=2' "$S3_LOG") - lists0)) requests; the first page had $n_many)" \
	test $(($(grep -c 'list-type=2' "$S3_LOG") - lists0)) -ge 2 -a "$n_many" = 1000

# ---- refusals, each next to its accepted case above ----
one_line() { # one_line PATTERN COMMAND...: fails, with exactly one line, matching
	local pat=$1 out rc=0
	shift
	out=$("$@" 2>&1) && rc=0 || rc=$?
	printf '%s\n' "$out" >>"$ALL"
	[ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && printf '%s\n' "$out" | grep -Eq "$pat" ||
		{ echo "rc=$rc: $out"; return 1; }
}
ok "make with a wrong secret: one line, non-zero" one_line '^cafs: s3\+http://.*/bkt/store: access denied' \
	env AWS_SECRET_ACCESS_KEY=wrong-secret "$CAFS" make --store="$ST" "$T/w.caidx" "$src"
ok "... and no index made" test ! -e "$T/w.caidx"
ok "extract with a wrong secret fails, saying SignatureDoesNotMatch once" sh -c "! env AWS_SECRET_ACCESS_KEY=wrong-secret \
	'$CAFS' extract --store='$ST' '$T/img.caidx' '$T/w' >'$T/w.out' 2>&1; cat '$T/w.out' >>'$ALL';
	test \$(grep -c SignatureDoesNotMatch '$T/w.out') = 1 && test \$(wc -l <'$T/w.out') -le 2"
ok "gc with a wrong secret: one line, nothing deleted" one_line 'access denied' \
	env AWS_SECRET_ACCESS_KEY=wrong-secret "$CAFS" gc --store="$ST" "$T/img.caidx"
ok "make into a missing bucket: one line" one_line '^cafs: s3\+http://.*/nobucket/store: no such bucket$' \
	"$CAFS" make --store="$U/nobucket/store" "$T/w.caidx" "$src"
ok "gc of a missing bucket: one line" one_line 'no such bucket$' "$CAFS" gc --store="$U/nobucket/s" "$T/img.caidx"
ok "extract from a missing bucket fails, saying NoSuchBucket" sh -c "! '$CAFS' extract --store='$U/nobucket/s' \
	'$T/img.caidx' '$T/w' >'$T/nb.out' 2>&1; cat '$T/nb.out' >>'$ALL'; grep -q NoSuchBucket '$T/nb.out'"
refused() { # refused PATTERN COMMAND...: fails, saying PATTERN
	local pat=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	printf '%s\n' "$out" >>"$ALL"
	[ "$rc" -ne 0 ] && printf '%s\n' "$out" | grep -Eq "$pat" || { echo "rc=$rc: $out"; return 1; }
}
ok "a key in the URL is refused" refused 'credentials are never taken from a URL' \
	"$CAFS" extract --store="s3+http://AKIA:secret@127.0.0.1:1/bkt" "$T/img.caidx" "$T/w"
ok "a key without a secret is refused" one_line 'AWS_SECRET_ACCESS_KEY' \
	env -u AWS_SECRET_ACCESS_KEY "$CAFS" make --store="$ST" "$T/w.caidx" "$src"
ok "desync's S3_ACCESS_KEY/S3_SECRET_KEY work as well" run env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
	S3_ACCESS_KEY="$S3_KEY" S3_SECRET_KEY="$S3_SECRET" "$CAFS" extract --store="$ST" "$T/img.caidx" "$T/x6"
# the store settings file (cafs.conf(5)): its section's aws-* keys come before the environment
printf '[%s/bkt/]\naws-access-key-id = %s\naws-secret-access-key = %s\n' "$U" "$S3_KEY" "$S3_SECRET" >"$T/good.conf"
printf '[%s/bkt/]\naws-access-key-id = %s\naws-secret-access-key = wrong-secret\n' "$U" "$S3_KEY" >"$T/bad.conf"
chmod 600 "$T/good.conf" "$T/bad.conf"
ok "credentials from the store settings file, none in the environment" run env -u AWS_ACCESS_KEY_ID \
	-u AWS_SECRET_ACCESS_KEY CAFS_CONFIG="$T/good.conf" "$CAFS" extract --store="$ST" "$T/img.caidx" "$T/x7"
ok "... equals the source" diff -r "$src" "$T/x7"
ok "... the file's secret wins over the environment's: a wrong one is refused" one_line 'access denied' \
	env CAFS_CONFIG="$T/bad.conf" "$CAFS" make --store="$ST" "$T/w.caidx" "$src"

# a missing chunk: EIO on the file that needs it, the rest reads
ok "a chunk of big/f3 was picked ($missing)" test -n "$missing"
s3_curl -X DELETE "bkt/store/${missing:0:4}/$missing.cacnk"
# (a soft mount's read of a gone server ends at CAFS_HTTP_DEADLINE: 3 s here)
CAFS_HTTP_DEADLINE=3 mount_start "mount with a chunk missing from the bucket" "$mnt" "$T/m2.log" --no-cache \
	-o "store=$ST" "$U/bkt/img/tree.caidx" || exit 1
ok "... its file is EIO" expect_errno EIO cat "$mnt/big/f3"
ok "... the others read right" sh -c "cmp '$mnt/big/f2' '$src/big/f2' && cmp '$mnt/big/f4' '$src/big/f4'"
ok "... a 404 is a miss, not a server failure" sh -c "'$CAFS' stats '$mnt' | grep -Eq '^http_missing: [1-9]'"

# the server dies under the mount: EIO at the soft deadline, the mount stays up
cmp "$mnt/big/f0" "$src/big/f0" || true
s3_stop
ok "server gone: an unread file is EIO" timeout 30 python3 -c "$EXPECT_ERRNO_PY" EIO cat "$mnt/big/f5"
ok "... a file read before still reads (memory LRU)" cmp "$mnt/big/f0" "$src/big/f0"
ok "... the mount is still up and answers" sh -c "grep -q ' $mnt ' /proc/mounts && stat '$mnt/big' >/dev/null &&
	'$CAFS' stats '$mnt' | grep -Eq '^http_errors: [1-9]'"
"$CAFS" stats "$mnt" >>"$ALL" 2>&1
grep " $mnt " /proc/mounts >>"$ALL"
mount_stop "... and unmounts cleanly" "$mnt"
cat "$T"/m*.log >>"$ALL"

# ---- a server whose listing never ends ----
# Answers HEAD of the bucket with 200 and every ListObjectsV2 page with
# one chunk key and IsTruncated: "loop" repeats the same key and token,
# "tokens" gives a new token but the same key, "honest" ends after 3
# pages with increasing keys (the accepted case). Signatures not checked.
cat >"$T/lister.py" <<'PY'
import http.server, os, sys, urllib.parse
port_file = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_HEAD(self):
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        mode = u.path.strip("/").split("/")[0]
        q = urllib.parse.parse_qs(u.query)
        n = int(q.get("continuation-token", ["t0"])[0][1:])
        step = 0 if mode == "loop" else 1
        k = n if mode == "honest" else 0
        key = "s/%04x/%04x" % (k, k) + "0" * 60 + ".cacnk"
        more = mode != "honest" or n < 2
        body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>%s</Name>"
                "<Contents><Key>%s</Key><Size>1</Size></Contents><IsTruncated>%s</IsTruncated>%s"
                "</ListBucketResult>") % (mode, key, "true" if more else "false",
                "<NextContinuationToken>t%d</NextContinuationToken>" % (n + step) if more else "")
        b = body.encode()
        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers()
        self.wfile.write(b)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(port_file + ".tmp", "w").write(str(s.server_address[1]))
os.rename(port_file + ".tmp", port_file)
s.serve_forever()
PY
python3 "$T/lister.py" "$T/lister.port" &
lister=$!
at_cleanup "kill $lister; wait $lister"
wait_until 10 "$lister" test -s "$T/lister.port"
LU=s3+http://127.0.0.1:$(cat "$T/lister.port")
ok "a listing that ends (3 pages): gc --dry-run works" sh -c "'$CAFS' gc --dry-run --store='$LU/honest/s' '$T/img.caidx' |
	grep -q '^would remove 3 chunks'"
ok "a listing repeating its token and key: one line, in time" one_line 'listing does not end' \
	sh -c "timeout 20 '$CAFS' gc --dry-run --store='$LU/loop/s' '$T/img.caidx' >/dev/null"
ok "a listing with new tokens but the same key: one line, in time" one_line 'listing does not end' \
	sh -c "timeout 20 '$CAFS' gc --dry-run --store='$LU/tokens/s' '$T/img.caidx' >/dev/null"

ok "the secret appears in no output, log or stats" sh -c "! grep -rqF -- '$S3_SECRET' '$ALL' '$T'/*.log '$T'/*.out"
ok "... (a search that did cover the failures' output)" sh -c "grep -q SignatureDoesNotMatch '$ALL' &&
	grep -q 'fuse.cafs' '$ALL' && grep -q '^http_errors' '$ALL'"
mount_done_testing
