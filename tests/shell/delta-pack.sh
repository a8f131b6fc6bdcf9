#!/bin/bash
# Static delta packs over a real nginx: delta make/info, a RAUC-style
# update (the old image as --seed, the new one extracted to a file and to
# stdout) with --delta and with the pack found by name beside the index,
# fewer bytes than without it (the access log); cache fill with a pack
# (given, and found for the index the cache kept before); packs that are
# corrupt, truncated, for another FROM, lying or missing chunks: one
# warning each, and the right data from the store.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-cache.sh"
. "$top_srcdir/tests/lib-http.sh"

# bytes and requests in the access log (every GET)
log_bytes() { nginx_log | awk '$1 == "GET" { s += $4 } END { print s + 0 }'; }
chunk_gets() { nginx_log | awk '$1 == "GET" && $2 ~ /\.cacnk$/' | wc -l; }
pack_gets() { nginx_log | awk '$1 == "GET" && $2 ~ /cadelta|\.pack$/' | wc -l; }
warnings() { grep -c 'warning' "$1"; }

cd "$T"
gen_tree v1 61 0.4
update_tree v1 v2 62
update_tree v1 v0 63
tar_image v1 v1.tar
tar_image v2 v2.tar
tar_image v0 v0.tar
mkdir www
$CAFS make -q --store www/store www/v2.caibx v2.tar >/dev/null
$CAFS make -q --store www/store www/v1.caibx v1.tar >/dev/null
$CAFS make -q v1.caibx v1.tar >/dev/null          # the device's own index, default.castr beside it
mkdir d0 && $CAFS make -q d0/v0.caibx v0.tar >/dev/null
V1SUM=$(sha256sum v1.caibx | cut -c1-64)

ok "delta make" $CAFS delta make --from-store default.castr --store www/store v1.caibx www/v2.caibx www/v2.pack
cp www/v2.pack "www/v2.caibx.cadelta-$V1SUM"
ok "delta info: by store, by pack, the image" bash -c "$CAFS delta info --from-store default.castr --store www/store v1.caibx www/v2.caibx www/v2.pack >info.txt &&
	grep -q '^By chunk store: [0-9]* bytes in [0-9]* requests' info.txt && grep -q '^By delta pack: [0-9]* bytes in [12] requests, then 0 chunks' info.txt &&
	grep -q '^Image: $(stat -c %s v2.tar) bytes' info.txt"
store_b=$(sed -n 's/^By chunk store: \([0-9]*\) bytes.*/\1/p' info.txt)
pack_b=$(stat -c %s www/v2.pack)
ok "the pack ($pack_b bytes) is smaller than the chunks ($store_b bytes)" test "$pack_b" -lt "$store_b"

nginx_start www
U=$NGINX_URL

# ---- RAUC style: the installed image as seed ----
nginx_log_reset
ok "extract --seed without a pack" bash -c "$CAFS extract --seed v1.tar --store $U/store $U/v2.caibx out0 && cmp out0 v2.tar"
plain=$(log_bytes)
nginx_log_reset
ok "extract --seed --delta to a file" bash -c "$CAFS extract --seed v1.tar --delta $U/v2.pack --store $U/store $U/v2.caibx out1 2>err1 && cmp out1 v2.tar"
ok "... fewer bytes with the pack ($(log_bytes) < $plain)" test "$(log_bytes)" -lt "$plain"
ok "... no chunk from the store, the pack in at most 4 requests" test "$(chunk_gets)" = 0 -a "$(pack_gets)" -le 4
ok "... and no warning" test "$(warnings err1)" = 0
nginx_log_reset
ok "extract --seed --delta to stdout" bash -c "$CAFS extract --seed v1.tar --delta $U/v2.pack --store $U/store $U/v2.caibx - | cmp - v2.tar"
ok "... no chunk from the store" test "$(chunk_gets)" = 0
nginx_log_reset
ok "an index as seed finds the pack named for it" bash -c "$CAFS extract --seed v1.caibx --store $U/store $U/v2.caibx out2 2>err2 && cmp out2 v2.tar"
ok "... beside the index, and no chunk from the store" test "$(nginx_log | grep -c "GET /v2.caibx.cadelta-$V1SUM 206")" = 1 -a "$(chunk_gets)" = 0
nginx_log_reset
ok "no pack by that name: silent, the store serves" bash -c "$CAFS extract --seed d0/v0.caibx --store $U/store $U/v2.caibx out3 2>err3 ; cmp out3 v2.tar && test \$(grep -c warning err3) = 0" 
ok "... its 404 was asked" test "$(nginx_log | grep -c 'cadelta-.* 404')" = 1

# ---- cache fill ----
ok "cache fill v1" $CAFS cache fill -q --cache C1 --store "$U/store" "$U/v1.caibx"
nginx_log_reset
ok "cache fill v2 --delta" bash -c "$CAFS cache fill --cache C1 --delta $U/v2.pack --store $U/store $U/v2.caibx >fill.txt 2>errf && grep -q 'delta pack gave' fill.txt"
ok "... no chunk from the store, no warning" test "$(chunk_gets)" = 0 -a "$(warnings errf)" = 0
ok "... the cache extracts v2 offline" bash -c "$CAFS extract --offline --cache C1 $U/v2.caibx out4 && cmp out4 v2.tar"
# a release published at one URL: the cache's kept index names the pack
cp www/v1.caibx www/cur.caibx
ok "cache fill of a release" $CAFS cache fill -q --cache C2 --store "$U/store" "$U/cur.caibx"
cp www/v2.caibx www/cur.caibx
cp www/v2.pack "www/cur.caibx.cadelta-$(sha256sum www/v1.caibx | cut -c1-64)"
nginx_log_reset
ok "the next release: fill finds the pack by the kept index" bash -c "$CAFS cache fill -q --cache C2 --store $U/store $U/cur.caibx 2>errc"
ok "... no chunk from the store, no warning" test "$(chunk_gets)" = 0 -a "$(warnings errc)" = 0 -a "$(pack_gets)" -le 4
ok "... the cache extracts it offline" bash -c "$CAFS extract --offline --cache C2 $U/cur.caibx out5 && cmp out5 v2.tar"

# the same for extract --cache: the cache kept the last release's index
cp www/v1.caibx www/cur.caibx
ok "extract --cache of a release" bash -c "$CAFS extract --cache XC --store $U/store $U/cur.caibx outx1 && cmp outx1 v1.tar"
cp www/v2.caibx www/cur.caibx
nginx_log_reset
ok "the next release: extract --cache finds the pack by the kept index" bash -c "$CAFS extract --cache XC --seed v1.tar --store $U/store $U/cur.caibx outx2 2>errx && cmp outx2 v2.tar"
ok "... no chunk from the store, no warning" test "$(chunk_gets)" = 0 -a "$(warnings errx)" = 0 -a "$(pack_gets)" -ge 1

# ---- bad packs: one warning, the right data ----
size=$(stat -c %s www/v2.pack)
head -c $((size - 1000)) www/v2.pack >www/trunc.pack
cp www/v2.pack www/corrupt.pack
printf 'XXXXXXXX' | dd of=www/corrupt.pack bs=1 seek=$((size - 3000)) conv=notrunc status=none
ok "a pack for another FROM (v0)" $CAFS delta make --from-store d0/default.castr --store www/store d0/v0.caibx www/v2.caibx www/other.pack
# lying tables, their digest made right: two entries' ids swapped; the last entry dropped
/usr/bin/python3 - www/v2.pack <<'PY'
import hashlib, struct, sys
d = open(sys.argv[1], 'rb').read()
n, tsize = struct.unpack_from('<QQ', d, 104)
hdr, body = bytearray(d[:128]), d[128:128 + tsize - 32]
ents, p = [], 0
while p < len(body):
    k = 64 + 40 * body[p + 33]
    ents.append(bytearray(body[p:p + k])); p += k
def write(name, es):
    b = b''.join(es); h = bytearray(hdr)
    struct.pack_into('<QQ', h, 104, len(es), len(b) + 32)
    open(name, 'wb').write(bytes(h) + b + hashlib.sha256(bytes(h) + b).digest() + d[128 + tsize:])
sw = [bytearray(e) for e in ents]
sw[0][:32], sw[1][:32] = ents[1][:32], ents[0][:32]
write('www/lying.pack', sw)
write('www/missing.pack', ents[:-1])
PY
for bad in trunc corrupt other lying missing; do
	nginx_log_reset
	ok "$bad pack: the right data" bash -c "$CAFS extract --seed v1.tar --delta $U/$bad.pack --store $U/store $U/v2.caibx out-$bad 2>err-$bad && cmp out-$bad v2.tar"
	ok "... with exactly one warning" test "$(warnings err-$bad)" = 1
done
ok "... the missing chunks came from the store" test "$(chunk_gets)" -ge 1
ok "a local pack works too" bash -c "$CAFS extract --seed v1.tar --delta www/v2.pack --store $U/store $U/v2.caibx out6 && cmp out6 v2.tar"
ok "a pack named for another FROM index is refused by its digest" bash -c "cp www/other.pack www/v2.caibx.cadelta-$V1SUM &&
	$CAFS extract --seed v1.caibx --store $U/store $U/v2.caibx out7 2>err7 && cmp out7 v2.tar && grep -c warning err7 | grep -qx 1 && grep -q 'another FROM' err7"
fails "delta make of a .catar is refused" $CAFS delta make v1.tar www/v2.caibx x.pack
fails "delta make needs three operands" $CAFS delta make v1.caibx www/v2.caibx

done_testing
