#!/bin/sh
# tests/timed-driver.sh DRIVER ARGS...: run automake's test driver and add how
# long the test took to the end of its .log ("# duration: N s"), so that
# ./setup.sh check can name the slowest tests (and a test that grows slow
# shows in its own log).
log=
prev=
for a in "$@"; do
	case $prev in --log-file) log=$a ;; esac
	case $a in --log-file=*) log=${a#--log-file=} ;; esac
	prev=$a
done
t0=$(date +%s.%N)
"$@"
rc=$?
t1=$(date +%s.%N)
[ -z "$log" ] || [ ! -f "$log" ] ||
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "# duration: %.1f s\n", b - a }' >>"$log"
exit $rc
