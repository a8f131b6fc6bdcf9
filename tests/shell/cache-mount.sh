#!/bin/bash
# After `cafs cache fill`, the mount works offline from the cache (the
# server is gone): the same cache the mount uses for what it fetches.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-cache.sh"
. "$top_srcdir/tests/lib-http.sh"
. "$top_srcdir/tests/lib-mount.sh"

cd "$T"
gen_tree v2 61 0.3
tar_image v2 v2.tar
mkdir www mnt1 mnt2 mnt3
$CAFS make -q --store www/store www/v2.caibx v2.tar >/dev/null
$CAFS make -q --store www/store www/v2.caidx v2 >/dev/null
nginx_start www
U=$NGINX_URL
ok "fill the cache for the image and the tree" $CAFS cache fill -q --cache C --store "$U/store" "$U/v2.caibx" "$U/v2.caidx"
nginx_stop

mount_start "offline mount of the image from the filled cache" mnt1 log1 --offline --cache C --store "$U/store" www/v2.caibx
ok "... reads the whole image" bash -c "cmp mnt1/* v2.tar"
mount_stop "... unmounts" mnt1
mount_start "offline mount of the tree from the filled cache" mnt2 log2 --offline --cache C --store "$U/store" www/v2.caidx
ok "... the tree is complete" diff -r mnt2 v2
mount_stop "... unmounts" mnt2
# the same offline mount over an empty cache cannot read (proves the cache was used)
mount_start "offline mount over an empty cache" mnt3 log3 --offline --cache Cempty --store "$U/store" www/v2.caibx
ok "... fails to read (EIO)" expect_errno EIO cat mnt3/v2
mount_stop "... unmounts" mnt3

mount_done_testing
