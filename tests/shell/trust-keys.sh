#!/bin/bash
# trust-keys.sh - the trusted key directory ($CAFS_TRUSTED_KEYS_DIR, else
# /etc/cafs/trusted-keys.d) and its keys are checked as cafs.conf is
# (issue 21.9): a directory or key file that another user owns, or that
# group or others may write, is refused with one line and a non-zero
# exit, as is a key given with --trusted-key; a directory and keys of
# root's or the user's own, not writable by others, are accepted.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need minisign

[ "$(id -u)" = 0 ] || skip_all "needs root (to give files to another user)"
need setpriv
NOBODY=65534
as_nobody() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }

cd "$T"
chmod 0755 "$T"
umask 022
mkdir -p src
"$GEN" 200K 3 >src/a
"$CAFS" make -q img.caidx src >/dev/null || exit 1 # store: default.castr beside it
minisign -G -W -p k.pub -s k.key >/dev/null || exit 1
minisign -S -s k.key -m img.caidx img.caidx.cameta >/dev/null || exit 1
chmod -R a+rX "$T"

export CAFS_TRUSTED_KEYS_DIR=$T/keys.d XDG_CACHE_HOME=$T/xdg
mkdir -m 0755 keys.d
cp k.pub keys.d/k.pub
chmod 0644 keys.d/k.pub

# refused DESC PATTERN: `cafs list img.caidx` fails (exit 1) with exactly
# one stderr line matching PATTERN
refused() {
	local desc=$1 pat=$2 rc=0
	"$CAFS" list img.caidx >out 2>err </dev/null || rc=$?
	ok "$desc" bash -c '[ "$1" = 1 ] && [ "$(wc -l <"$2")" = 1 ] && grep -qE -- "$3" "$2" && [ ! -s "$4" ] ||
		{ echo "exit $1:"; cat "$2"; exit 1; }' _ "$rc" err "$pat" out
}
accepted() {
	ok "$1" bash -c '"$1" list img.caidx >out && grep -q " a$" out' _ "$CAFS"
}

accepted "root's 0755 directory with root's 0644 key: accepted"
ok "... and an unsigned index is refused (the keys are in use)" \
	bash -c "cp img.caidx un.caidx && ! '$CAFS' list un.caidx 2>/dev/null"

chmod 0777 keys.d
refused "a world-writable key directory is refused" \
	"^cafs: trusted keys: $T/keys.d: refused: writable by group or others"
chmod 1777 keys.d
refused "... sticky or not" "keys.d: refused: writable by group or others"
chmod 0775 keys.d
refused "a group-writable key directory is refused" "keys.d: refused: writable by group or others"
chmod 0755 keys.d
chown $NOBODY keys.d
refused "a key directory owned by another user is refused" "keys.d: refused: owned by another user \(uid $NOBODY\)"
chown 0 keys.d

chmod 0666 keys.d/k.pub
refused "a 0666 key is refused" "^cafs: $T/keys.d/k.pub: refused: writable by group or others"
chown $NOBODY keys.d/k.pub
refused "a 0666 key owned by another user is refused" "k.pub: refused: owned by another user \(uid $NOBODY\)"
chmod 0644 keys.d/k.pub
refused "a 0644 key owned by another user is refused" "k.pub: refused: owned by another user"
chown 0 keys.d/k.pub
chmod 0664 keys.d/k.pub
refused "a group-writable key is refused" "k.pub: refused: writable by group or others"
chmod 0644 keys.d/k.pub
mkfifo -m 0644 keys.d/fifo.pub
ok "a FIFO named *.pub is refused, without hanging" \
	bash -c "! timeout 10 '$CAFS' list img.caidx 2>err2 && grep -q 'fifo.pub: refused: not a regular file' err2"
rm keys.d/fifo.pub
accepted "back to root's 0644 key: accepted again"
ln -s "$T/k.pub" keys.d/link.pub
accepted "a key that is a symlink to a good file: accepted (the file it names is checked)"
chmod 0666 k.pub
refused "... and refused when that file is writable by others" "link.pub: refused: writable by group or others"
chmod 0644 k.pub
rm keys.d/link.pub

# --trusted-key FILE: the same rule, a usage error
unset CAFS_TRUSTED_KEYS_DIR
export CAFS_TRUSTED_KEYS_DIR=$T/none.d
mkdir none.d
ok "--trusted-key with root's 0644 key: accepted" "$CAFS" list --trusted-key k.pub img.caidx
chmod 0666 k.pub
ok "--trusted-key with a 0666 key: refused (usage error, exit 2)" \
	bash -c "'$CAFS' list --trusted-key k.pub img.caidx 2>err3; [ \$? = 2 ] &&
		grep -q '^cafs: list: --trusted-key k.pub: refused: writable by group or others' err3"
chmod 0644 k.pub

# the user's own directory and key, run as that user: accepted
mkdir -m 0700 nb.d nbc && cp k.pub nb.d/ && chown -R $NOBODY:$NOBODY nb.d nbc
ok "nobody's own directory and key, as nobody: accepted" \
	as_nobody env CAFS_TRUSTED_KEYS_DIR="$T/nb.d" XDG_CACHE_HOME="$T/nbc" "$(cafs_for_others)" list img.caidx
ok "... root refuses nobody's directory" \
	bash -c "! CAFS_TRUSTED_KEYS_DIR='$T/nb.d' '$CAFS' list img.caidx 2>err4 && grep -q 'owned by another user' err4"

# cafs.conf: the rule that was reused (one place) still holds for it
printf '[http://127.0.0.1/]\nretries = 1\n' >conf
chmod 0666 conf
ok "cafs.conf writable by others: still refused" \
	bash -c "! CAFS_CONFIG='$T/conf' '$CAFS' list http://127.0.0.1:9/x.caidx 2>err5 &&
		grep -q 'conf: refused: writable by group or others (chmod go-w)' err5"

done_testing
