#!/bin/bash
# mount-signed-options.sh - what the trust options of `cafs mount` ask
# reaches the server that opens the image: the keeper runs it (and runs it
# again when it dies) with the options its table keeps (tools/cmd_mount.c,
# .keep). --signed-name=NAME and --allow-downgrade were dropped on the way,
# so a mount that needed them was refused by its own server, while -o
# signed_name= worked. Each is shown refused without the option, served
# with it, and served again by a server restarted after SIGKILL.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
need minisign

S=$T/stage
mkdir -p "$S/v1" "$S/v2" "$S/other" "$T/keys.d" "$T/pub"
printf 'version one\n' >"$S/v1/f"
printf 'version two\n' >"$S/v2/f"
printf 'another image\n' >"$S/other/f"
minisign -G -W -p "$T/keys.d/k.pub" -s "$T/k.key" >/dev/null || exit 1
export CAFS_TRUSTED_KEYS_DIR=$T/keys.d XDG_CACHE_HOME=$T/xdg CAFS_RUNTIME_DIR=$T/run
mkdir -p "$CAFS_RUNTIME_DIR"
for v in v1 v2 other; do
	"$CAFS" make -q --meta=no --store="$T/store" "$S/$v/img.caidx" "$S/$v" >/dev/null || exit 1
done
# other: signed as other.caidx, published as img2.caidx
mv "$S/other/img.caidx" "$S/other/other.caidx"
minisign -S -s "$T/k.key" -m "$S/other/other.caidx" >/dev/null || exit 1
cp "$S/other/other.caidx" "$T/pub/img2.caidx"
cp "$S/other/other.caidx.minisig" "$T/pub/img2.caidx.minisig"
# v1 signed a second before v2
minisign -S -s "$T/k.key" -m "$S/v1/img.caidx" >/dev/null || exit 1
sleep 1.1
"$CAFS" sign -s "$T/k.key" "$S/v2/img.caidx" || exit 1

# refused MNT CMD...: exit 1, one line saying why, nothing mounted
refused() {
	local mnt=$1 pat=$2 rc=0
	shift 2
	mkdir -p "$mnt"
	"$@" "$mnt" >"$T/out" 2>"$T/err" </dev/null || rc=$?
	[ "$rc" = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q -- "$pat" "$T/err" && ! is_mounted "$mnt" ||
		{ echo "exit $rc:"; cat "$T/err"; return 1; }
}
# restarted MNT LOG: SIGKILL the server; the keeper's next server serves
restarted() {
	local mnt=$1 log=$2 s i
	s=$(mount_server_pid "$mnt") && [ -n "$s" ] && kill -KILL "$s" || return 1
	for ((i = 0; i < 200; i++)); do
		grep -q 'serving .* again' "$log" && return 0
		sleep 0.05
	done
	echo "no new server:"
	cat "$log"
	return 1
}

# ---- --signed-name ----
ok "img2.caidx (signed as other.caidx): refused without --signed-name" refused "$T/m0" \
	"its signature is for the file 'other.caidx'" "$CAFS" mount -f --store="$T/store" "$T/pub/img2.caidx"
m=$T/m1
mount_start "... mounted with --signed-name=other.caidx" "$m" "$T/log1" -v --signed-name=other.caidx \
	--store="$T/store" "$T/pub/img2.caidx" || exit 1
ok "... and served" grep -qx 'another image' "$m/f"
ok "... by a restarted server too (the keeper passes --signed-name on)" restarted "$m" "$T/log1"
ok "... which serves" grep -qx 'another image' "$m/f"
mount_stop "... unmounted" "$m"
m=$T/m2
mount_start "as with -o signed_name=other.caidx" "$m" "$T/log2" -v -o signed_name=other.caidx \
	--store="$T/store" "$T/pub/img2.caidx" || exit 1
ok "... served" grep -qx 'another image' "$m/f"
mount_stop "... unmounted" "$m"

# ---- --allow-downgrade: v2 accepted at a path, then v1 there ----
cp "$S/v2/img.caidx" "$S/v2/img.caidx.minisig" "$T/pub/"
ok "v2 at pub/img.caidx: accepted (and recorded)" bash -c "'$CAFS' list --store='$T/store' '$T/pub/img.caidx' | grep -q ' f\$'"
cp "$S/v1/img.caidx" "$S/v1/img.caidx.minisig" "$T/pub/"
ok "v1 there: a mount is refused as a rollback" refused "$T/m3" "a rollback" \
	"$CAFS" mount -f --store="$T/store" "$T/pub/img.caidx"
m=$T/m4
mount_start "... mounted with --allow-downgrade" "$m" "$T/log4" -v --allow-downgrade \
	--store="$T/store" "$T/pub/img.caidx" || exit 1
ok "... and served (v1)" grep -qx 'version one' "$m/f"
ok "... by a restarted server too" restarted "$m" "$T/log4"
ok "... which serves v1" grep -qx 'version one' "$m/f"
mount_stop "... unmounted" "$m"

mount_done_testing
