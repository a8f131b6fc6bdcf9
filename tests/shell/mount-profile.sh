#!/bin/bash
# mount-profile.sh - prefetch profiles over a real nginx and a real mount:
# --record-profile writes (at unmount and on SIGTERM, private) the files
# read first, by path and byte range; --profile FILE and the profile
# published beside the index (IMG.caidx.caprofile, kept in the cache) are
# replayed at mount: their chunks come before any read, and the reads
# then fetch nothing; --profile=none fetches none; `cafs make --profile`
# copies one beside a new version of the image, naming the new index;
# with trusted keys a profile naming another index is ignored with one
# warning; a corrupt one is one warning and the mount works; a .catar
# cannot record or replay (one line) where its index can.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 minisign

W=$T/www
src=$T/src
mkdir -p "$W/v2" "$W/stale" "$src/big" "$src/etc" "$src/sp ace"
for i in $(seq -w 0 19); do "$GEN" 300K $((10#$i + 500)) >"$src/big/f$i"; done
printf 'hello\n' >"$src/etc/a"
printf 'world\n' >"$src/etc/b"
"$GEN" 200K 77 >"$src/sp ace/x%y"
"$CAFS" make --store="$W/default.castr" "$W/img.caidx" "$src" >/dev/null || exit 1
"$CAFS" make --store="$W/default.castr" "$W/img.catar" "$src" >/dev/null || exit 1
digest() { python3 -c 'import hashlib,sys; print(hashlib.new("sha512_256", open(sys.argv[1],"rb").read()).hexdigest())' "$1"; }

nginx_start "$W" || exit 1
U=$NGINX_URL
chunk_gets() { nginx_log | awk '$2 ~ /\.cacnk$/' | wc -l; }
chunk_set() { nginx_log | awk '$2 ~ /\.cacnk$/ { print $2 }' | sort -u; }
stat_of() { "$CAFS" stats "$1" | awk -v k="$2:" '$1 == k { print $2 }'; }
replayed() { [ -n "$(stat_of "$1" profile_chunks)" ] && [ "$(stat_of "$1" profile_chunks_done)" = "$(stat_of "$1" profile_chunks)" ]; }
mnt=$T/mnt
# refused DESC PATTERN CMD...: CMD fails (not by a signal) saying PATTERN in
# one line (and perhaps where to find help)
refused() {
	local desc=$1 pat=$2 rc=0 out
	shift 2
	out=$("$@" 2>&1) || rc=$?
	ok "$desc" sh -c '[ "$1" -ne 0 ] && [ "$1" -lt 128 ] && [ "$(printf "%s\n" "$2" | grep -vc "^Try ")" = 1 ] && printf "%s\n" "$2" | grep -q -- "$3" || { echo "exit $1: $2"; false; }' _ "$rc" "$out" "$pat"
}

# ---- recording ----
mount_start "mount --record-profile" "$mnt" "$T/log.rec" --cache="$T/c0" --record-profile="$T/p1" "$U/img.caidx"
ok "read etc/a" grep -qx hello "$mnt/etc/a"
ok "read big/f03" cmp "$mnt/big/f03" "$src/big/f03"
ok "read the start of big/f10" sh -c "head -c 50000 '$mnt/big/f10' | cmp - '$src/big/f10' -n 50000"
ok "read a name with a space and a %" cmp "$mnt/sp ace/x%y" "$src/sp ace/x%y"
ok "nothing written before the unmount" test ! -e "$T/p1"
mount_stop "unmount" "$mnt"
ok "the profile was written" test -s "$T/p1"
ok "... private (0600)" test "$(stat -c %a "$T/p1")" = 600
ok "... header and this index's digest" test "$(head -2 "$T/p1")" = "cafs-profile 1
index $(digest "$W/img.caidx")"
ok "... the files in the order read, by path and range" sh -c "sed -n '3,\$p' '$T/p1' | awk '{ print \$1, \$2, \$4 }' | tr '\n' '|' | grep -qx 'f 0 etc/a|f 0 big/f03|f 0 big/f10|f 0 sp%20ace/x%25y|'"
ok "... whole files for whole reads" grep -qx 'f 0 307200 big/f03' "$T/p1"
ok "... a part of a file read in part" sh -c "awk '\$4 == \"big/f10\" && \$3 >= 50000 && \$3 < 307200' '$T/p1' | grep -q ."

mount_start "mount --record-profile, stopped by SIGTERM" "$mnt" "$T/log.rec2" --cache="$T/c0" -o record_profile="$T/p2" "$U/img.caidx"
ok "read etc/b" grep -qx world "$mnt/etc/b"
mount_kill "SIGTERM" "$mnt" TERM
ok "the profile was written at SIGTERM" grep -qx 'f 0 6 etc/b' "$T/p2"

# ---- replay ----
# the chunks the recorded reads needed, from a cold mount without a profile
nginx_log_reset
mount_start "mount with --profile=none (cold cache)" "$mnt" "$T/log.none" --cache="$T/c1" --profile=none "$U/img.caidx"
sleep 1
ok "... fetches nothing by itself" test "$(chunk_gets)" = 0
cat "$mnt/etc/a" "$mnt/big/f03" "$mnt/sp ace/x%y" >/dev/null; head -c 50000 "$mnt/big/f10" >/dev/null
chunk_set >"$T/demand.set"
mount_stop "unmount" "$mnt"

nginx_log_reset
mount_start "mount --profile FILE (cold cache)" "$mnt" "$T/log.p1" --cache="$T/c2" --profile="$T/p1" "$U/img.caidx"
ok "the profile's chunks come without any read" wait_until 10 "$MOUNT_PID" replayed "$mnt"
ok "... stats count them" test "$(stat_of "$mnt" profile_chunks)" -ge "$(wc -l <"$T/demand.set")"
chunk_set >"$T/replay.set"
ok "... every chunk the recorded reads need" sh -c "comm -23 '$T/demand.set' '$T/replay.set' | grep -c . | grep -qx 0"
n=$(chunk_gets)
ok "the same reads then fetch nothing" sh -c "cmp '$mnt/big/f03' '$src/big/f03' && grep -qx hello '$mnt/etc/a' && cmp '$mnt/sp ace/x%y' '$src/sp ace/x%y'"
ok "... (no new chunk GET)" test "$(chunk_gets)" = "$n"
mount_stop "unmount" "$mnt"

cp "$T/p1" "$W/img.caidx.caprofile"
nginx_log_reset
mount_start "mount with the profile beside the index (automatic)" "$mnt" "$T/log.auto" --cache="$T/c3" "$U/img.caidx"
ok "... replayed without any read" wait_until 10 "$MOUNT_PID" replayed "$mnt"
ok "... the same chunks as --profile FILE" sh -c "chunk_set() { awk '\$2 ~ /\\.cacnk\$/ { print \$2 }' '$NGINX_CONF_DIR/access.log' | sort -u; }; chunk_set | cmp - '$T/replay.set'"
ok "... fetched the profile once" test "$(nginx_log | grep -c 'img.caidx.caprofile 200')" = 1
ok "... and kept it in the cache with the index" sh -c "ls '$T/c3/indexes/' | grep -q 'caidx.caprofile\$'"
mount_stop "unmount" "$mnt"

nginx_log_reset
mount_start "--profile=none with a profile beside the index" "$mnt" "$T/log.none2" --cache="$T/c4" --profile=none "$U/img.caidx"
sleep 1
ok "... fetches no chunk" test "$(chunk_gets)" = 0
ok "... nor the profile" test "$(nginx_log | grep -c caprofile)" = 0
ok "... and the mount reads" grep -qx hello "$mnt/etc/a"
mount_stop "unmount" "$mnt"

ok "cache fill keeps the profile with the index" sh -c "'$CAFS' cache fill --cache='$T/c8' '$U/img.caidx' >/dev/null 2>&1 && ls '$T/c8/indexes/' | grep -q 'caidx.caprofile\$'"
mount_start "... and an --offline mount of that cache replays it" "$mnt" "$T/log.off" --cache="$T/c8" --offline "$U/img.caidx"
ok "... replayed" wait_until 10 "$MOUNT_PID" replayed "$mnt"
ok "... nothing said" test ! -s "$T/log.off"
mount_stop "unmount" "$mnt"

# ---- corrupt profiles: one warning, the mount works ----
printf 'cafs-profile 1\nindex -\nf 0 zz etc/a\n' >"$W/img.caidx.caprofile"
nginx_log_reset
mount_start "a corrupt profile beside the index" "$mnt" "$T/log.bad" --cache="$T/c5" "$U/img.caidx"
ok "... one warning" test "$(grep -c 'img.caidx.caprofile: not a valid prefetch profile: ignored' "$T/log.bad")" = 1
ok "... nothing else said" test "$(wc -l <"$T/log.bad")" = 1
ok "... no chunk fetched" sh -c "sleep 0.5; test \$(awk '\$2 ~ /cacnk/' '$NGINX_CONF_DIR/access.log' | wc -l) = 0"
ok "... the mount reads" cmp "$mnt/big/f03" "$src/big/f03"
mount_stop "unmount" "$mnt"
head -c 3000 /dev/urandom >"$T/garbage"
mount_start "a corrupt --profile FILE" "$mnt" "$T/log.bad2" --cache="$T/c5" --profile="$T/garbage" "$U/img.caidx"
ok "... one warning" test "$(grep -c 'garbage: not a valid prefetch profile: ignored' "$T/log.bad2")" = 1
ok "... the mount reads" grep -qx world "$mnt/etc/b"
mount_stop "unmount" "$mnt"
rm -f "$W/img.caidx.caprofile"

# ---- make --profile: a new version of the image, signed ----
K=$T/keys
mkdir -p "$K"
minisign -G -W -p "$K/k.pub" -s "$K/k.key" >/dev/null || exit 1
"$GEN" 300K 999 >"$src/big/f05"
ok "cafs make --profile FILE for a new version" "$CAFS" make --profile="$T/p1" --store="$W/default.castr" "$W/v2/img.caidx" "$src"
ok "... copied beside it, naming the new index" test "$(sed -n 2p "$W/v2/img.caidx.caprofile")" = "index $(digest "$W/v2/img.caidx")"
ok "... the same items" cmp <(sed 1,2d "$T/p1") <(sed 1,2d "$W/v2/img.caidx.caprofile")
ln -s ../default.castr "$W/v2/default.castr"
cp "$W/v2/img.caidx" "$W/v2/img.caidx.cameta" "$W/stale/"
cp "$T/p1" "$W/stale/img.caidx.caprofile" # names the old index
ln -s ../default.castr "$W/stale/default.castr"
for f in {v2,stale}/img.caidx{,.cameta,.caprofile}; do
	minisign -S -s "$K/k.key" -m "$W/$f" >/dev/null || exit 1
done
nginx_log_reset
mount_start "trusted key: the signed profile naming this index" "$mnt" "$T/log.v2" --cache="$T/c6" --trusted-key="$K/k.pub" "$U/v2/img.caidx"
ok "... replayed" wait_until 10 "$MOUNT_PID" replayed "$mnt"
ok "... its chunks fetched" test "$(chunk_gets)" -ge "$(wc -l <"$T/demand.set")"
ok "... nothing said" test ! -s "$T/log.v2"
mount_stop "unmount" "$mnt"
nginx_log_reset
mount_start "trusted key: a signed profile naming another index" "$mnt" "$T/log.stale" --cache="$T/c7" --trusted-key="$K/k.pub" "$U/stale/img.caidx"
ok "... ignored with one warning" test "$(grep -c 'stale/img.caidx.caprofile: belongs to another index: prefetch profile ignored' "$T/log.stale")" = 1
ok "... nothing else said" test "$(wc -l <"$T/log.stale")" = 1
ok "... no chunk fetched" sh -c "sleep 0.5; test \$(awk '\$2 ~ /cacnk/' '$NGINX_CONF_DIR/access.log' | wc -l) = 0"
ok "... the mount reads the new version" cmp "$mnt/big/f05" "$src/big/f05"
mount_stop "unmount" "$mnt"
ok "without trusted keys the old profile's paths still serve the new version" sh -c "'$CAFS' make --profile='$T/p1' --meta=yes --store='$W/default.castr' '$T/v3.caidx' '$src' >/dev/null"

# ---- refusals, each beside its accepted case ----
refused "make --profile with a corrupt profile" "not a valid prefetch profile" "$CAFS" make --profile="$T/garbage" --store="$T/s" "$T/x.caidx" "$src/etc"
ok "... and with a good one" "$CAFS" make --profile="$T/p1" --store="$T/s" "$T/x.caidx" "$src/etc"
refused "make --profile of a .catar" "for an index" "$CAFS" make --profile="$T/p1" "$T/x.catar" "$src/etc"
refused "mount --record-profile of a .catar" "need an index" "$CAFS" mount -f --record-profile="$T/p3" "$U/img.catar" "$mnt"
ok "... nothing mounted" sh -c "! grep -q ' $mnt ' /proc/self/mountinfo"

mount_done_testing
