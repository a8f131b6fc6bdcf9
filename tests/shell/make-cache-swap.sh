#!/bin/bash
# make-cache-swap.sh - `cafs make --cache DIR` writes its record into the
# directory it checked when it started (owned by you, 0700), not into
# whatever DIR's name leads to when the make ends: a parent directory
# that someone else can write lets them swap DIR for a symlink meanwhile
# (here: the make runs, DIR is moved away and replaced by a symlink to
# another directory). An undisturbed make writes its record there.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
cd "$T"

"$GEN" 80M 91 >big.bin
mkdir -m 700 cache elsewhere
ok "make --cache: a record" bash -c "$CAFS make -q --cache '$T/cache' -s st a.caibx big.bin >/dev/null && ls cache/*.camake >/dev/null"
rm -rf cache && mkdir -m 700 cache

"$CAFS" make -q --cache "$T/cache" -s st2 b.caibx big.bin >/dev/null 2>err &
pid=$!
# the swap once the make is under way (its first chunks are stored)
for _ in $(seq 100); do
	[ -n "$(find st2 -name '*.cacnk' 2>/dev/null | head -n 1)" ] && break
	sleep 0.02
done
mv cache cache.moved && ln -s elsewhere cache
if kill -0 "$pid" 2>/dev/null; then
	wait "$pid"
	ok "a make whose DIR was swapped for a symlink while it ran: succeeds" test $? = 0
	ok "... nothing written where the symlink leads" test -z "$(ls -A elsewhere)"
	ok "... the record is in the directory it checked" bash -c 'ls cache.moved/*.camake >/dev/null'
else
	wait "$pid"
	for c in "succeeds" "nothing written where the symlink leads" "the record is in the directory it checked"; do
		skip "swapped DIR: $c" "the make ended before the swap"
	done
fi
done_testing
