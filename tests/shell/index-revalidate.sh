#!/bin/bash
# index-revalidate.sh - an index (and its sidecar) kept in a cache by URL
# is revalidated, not downloaded again: against a real nginx, the second
# open sends the kept copy's validator and gets a 304; a changed index on
# the server wins; a validator that could miss a change (a file modified
# in the second it was served) is not kept; a kept copy that no longer
# matches its validator is not used.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"

W=$T/www
mkdir -p "$W" "$T/src/d"
"$GEN" 300K 1 >"$T/src/d/a"
"$GEN" 200K 2 >"$T/src/b"
"$CAFS" make -q --store="$W/default.castr" "$W/img.caidx" "$T/src" >/dev/null || exit 1
touch -d '-20 seconds' "$W/img.caidx" "$W/img.caidx.cameta"

nginx_start "$W" || exit 1
U=$NGINX_URL
C=$T/cache
# the status and size nginx logged for the last GET of a file
last() { nginx_log | awk -v p="/$1" '$2 == p { s = $3 " " $4 } END { print s }'; }
# nginx logs a request after its answer is sent: the client may be done
# (and the test reading the log) first, on a loaded machine. is WANT CMD...:
# CMD's output becomes WANT within 3 s
is() { local want=$1; shift; wait_until 3 "" eval '[ "$('"$*"')" = "$want" ]'; }

ok "list by URL with a cache" sh -c "'$CAFS' list --cache='$C' '$U/img.caidx' >'$T/l1'"
ok "... downloaded the index" is "200 $(stat -c %s "$W/img.caidx")" 'last img.caidx'
ok "... and the sidecar" is "200 $(stat -c %s "$W/img.caidx.cameta")" 'last img.caidx.cameta'
ok "... kept both with their validators, privately" sh -c "test \$(ls '$C/indexes' | grep -c '\.validator\$') = 2 && test -z \"\$(find '$C/indexes' -type f ! -perm 600)\""

nginx_log_reset
ok "list again" sh -c "'$CAFS' list --cache='$C' '$U/img.caidx' >'$T/l2'"
ok "... the index was not modified: a 304, no bytes" is "304 0" 'last img.caidx'
ok "... the sidecar neither" is "304 0" 'last img.caidx.cameta'
ok "... the same listing, from the kept copies" cmp "$T/l1" "$T/l2"
ok "... which names the files" grep -q ' d/a$' "$T/l2"
"$CAFS" list "$U/img.caidx" >/dev/null
ok "without a cache, a plain download" is "200 $(stat -c %s "$W/img.caidx")" 'last img.caidx'

# a new version on the server (older than a second): it wins
"$GEN" 100K 3 >"$T/src/new"
"$CAFS" make -q --store="$W/default.castr" "$W/img.caidx" "$T/src" >/dev/null
touch -d '-10 seconds' "$W/img.caidx" "$W/img.caidx.cameta"
nginx_log_reset
ok "a changed index on the server" sh -c "'$CAFS' list --cache='$C' '$U/img.caidx' >'$T/l3'"
ok "... is downloaded (200)" is 200 'last img.caidx | cut -d'\'' '\'' -f1'
ok "... and used" grep -q ' new$' "$T/l3"
nginx_log_reset
ok "... then revalidated in turn" sh -c "'$CAFS' list --cache='$C' '$U/img.caidx' >'$T/l4' && cmp '$T/l3' '$T/l4'"
ok "... a 304" is "304 0" 'last img.caidx'

# an index modified in the second it is served (here: dated in the
# future) has no validator that would see the next change: none is kept
touch -d '+100 seconds' "$W/img.caidx"
ok "an index dated at or after the answer" sh -c "'$CAFS' list --cache='$C' '$U/img.caidx' >/dev/null"
ok "... keeps no validator" is 0 'ls "$C/indexes" | grep -c '\''caidx\.validator$'\'''
nginx_log_reset
"$CAFS" list --cache="$C" "$U/img.caidx" >/dev/null
ok "... so the next open downloads it" is 200 'last img.caidx | cut -d'\'' '\'' -f1'
ok "... the sidecar (unchanged) still a 304" is "304 0" 'last img.caidx.cameta'

# a kept copy that is not the one its validator names is not used
touch -d '-10 seconds' "$W/img.caidx"
"$CAFS" list --cache="$C" "$U/img.caidx" >/dev/null
kept=$(ls "$C"/indexes/*.caidx)
ok "validator kept again" test -s "$kept.validator"
printf 'x' | dd of="$kept" bs=1 seek=100 conv=notrunc status=none
nginx_log_reset
ok "a damaged kept copy" sh -c "'$CAFS' list --cache='$C' '$U/img.caidx' >'$T/l5' && cmp '$T/l3' '$T/l5'"
ok "... was revalidated (304) and then downloaded (200)" is "304 200 " 'nginx_log | awk '\''$2 == "/img.caidx" { print $3 }'\'' | tr '\''\n'\'' '\'' '\'''
ok "... and replaced" sh -c "cmp '$kept' '$W/img.caidx'"

# offline still uses the copy
nginx_stop
ok "offline by URL, server gone" sh -c "'$CAFS' list --offline --cache='$C' '$U/img.caidx' >'$T/l6' && cmp '$T/l3' '$T/l6'"

done_testing
