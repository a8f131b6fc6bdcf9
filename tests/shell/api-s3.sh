#!/bin/bash
# api-s3.sh - the library reaches an S3 bucket as the command does, against
# a real S3 server checking every signature (moto_server on 127.0.0.1):
# cafs_make puts the chunks and the index into the bucket, the same index
# and chunk names `cafs make` makes locally; cafs_store_gc collects the
# bucket keeping that index (tests/unit/test-api-store, its s3 mode).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-s3.sh"
need python3 timeout
API=$top_builddir/tests/unit/test-api-store
[ -x "$API" ] || skip_all "tests/unit/test-api-store is not built (make check builds it)"

s3_start || exit 1
U=$S3_URL
src=$T/src
mkdir -p "$src/d"
"$GEN" 1M 7 >"$src/d/f"
printf 'hello\n' >"$src/a.txt"
"$CAFS" make --store="$T/local.castr" "$T/local.caidx" "$src" >/dev/null || exit 1

ok "cafs_make to a bucket, then cafs_store_gc there" "$API" s3 "$U/bkt/store" "$U/bkt/img/tree.caidx" "$src"
s3_curl -o "$T/got.caidx" bkt/img/tree.caidx
ok "... the index in the bucket is the command's" cmp "$T/got.caidx" "$T/local.caidx"
s3_keys store/ | sed 's|^store/||' | sort >"$T/keys.s3"
(cd "$T/local.castr" && find . -name '*.cacnk' | sed 's|^./||' | sort) >"$T/keys.local"
ok "... its chunks are the command's, named as in a local store" cmp "$T/keys.s3" "$T/keys.local"
s3_keys img/ >"$T/keys.img"
ok "... and the refused .catar is not there" bash -c '! grep -q catar "$1"' _ "$T/keys.img"

done_testing
