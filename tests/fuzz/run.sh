#!/bin/sh
# run.sh NAME BUILD SRCDIR SECONDS MAX_LEN - run one libFuzzer harness
# (BUILD/tests/fuzz/fuzz-NAME) for SECONDS over a copy of its seed corpus
# and its regressions, in BUILD/out/NAME/ (corpus/, crashes/, fuzz.log).
# Writes BUILD/fuzz-NAME.trs (one test result) and fails on any crash,
# leak, timeout or out-of-memory report.
set -u
name=$1 build=$2 src=$3 seconds=$4 max_len=$5
bin=$build/tests/fuzz/fuzz-$name
out=$build/out/$name
rm -rf "$out/corpus" "$out/crashes"
mkdir -p "$out/corpus" "$out/crashes"
for d in "$src/tests/fuzz/corpus/$name" "$src/tests/fuzz/regress/$name"; do
	[ -d "$d" ] && find "$d" -maxdepth 1 -type f ! -name '.*' -exec cp {} "$out/corpus/" \;
done
echo "fuzz-$name: ${seconds}s ..."
# -timeout: one input may take this long (a hang is a failure);
# -rss_limit_mb / -malloc_limit_mb: beyond that is an out-of-memory failure
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$bin" -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 -timeout=30 \
	-print_final_stats=1 -artifact_prefix="$out/crashes/" "$out/corpus" >"$out/fuzz.log" 2>&1
rc=$?
stats=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE|INITED)' "$out/fuzz.log" | tail -n 1)
crashes=$(find "$out/crashes" -type f | wc -l)
if [ "$rc" -eq 0 ] && [ "$crashes" -eq 0 ]; then
	echo ":test-result: PASS fuzz-$name" >"$build/fuzz-$name.trs"
	echo "PASS: fuzz-$name $stats"
	exit 0
fi
echo ":test-result: FAIL fuzz-$name" >"$build/fuzz-$name.trs"
echo "FAIL: fuzz-$name (exit $rc, $crashes crash files in $out/crashes) $stats"
grep -E -A 30 '^==[0-9]+==ERROR|runtime error|property broken|ERROR: libFuzzer' "$out/fuzz.log" | head -n 60
exit 1
