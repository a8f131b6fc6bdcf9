# bench/workdir.sh - the work directory and clean-up stack of the benches
# that start servers or mounts (sourced).
#
#   bench_workdir NAME [PARENT]  T=a new directory PARENT/cafs-bench-NAME.XXXXXX
#                                (PARENT: BENCH_DIR, else /var/tmp); at exit,
#                                the at_cleanup commands run, last first, then
#                                T is removed
#   at_cleanup CMD               (what tests/lib-http.sh and friends call)
#   now; since T0                the time; seconds since T0 (3 decimals)
#   drop_caches                  the page cache dropped (root)
#   is_mounted DIR               whether DIR is a mount point

_cleanups=()
at_cleanup() { _cleanups+=("$1"); }
_bench_cleanup() {
	local i
	for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do eval "${_cleanups[$i]}" >/dev/null 2>&1; done
	[ -n "${T:-}" ] && rm -rf "$T"
}

bench_workdir() {
	T=$(mktemp -d "${2:-${BENCH_DIR:-/var/tmp}}/cafs-bench-$1.XXXXXX") || return 1
	trap _bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
is_mounted() { awk -v d="$1" '$5 == d { f = 1 } END { exit !f }' /proc/self/mountinfo; }

# timed KEY CMD...: wall time of CMD (run under sh -c, capped at CAP s, out and err
# in $T) into R[KEY], its user and system time into R[KEY.us]
declare -gA R=()
timed() {
	local key=$1 t0 rc=0
	shift
	t0=$(now)
	timeout "$CAP" /usr/bin/time -f "%U %S" -o "$T/time.$key" sh -c "$*" >"$T/out.$key" 2>"$T/err.$key" || rc=$?
	# the command's own CPU (user, system), beside its wall time
	R[$key.us]=$(tail -n 1 "$T/time.$key" 2>/dev/null | awk 'NF == 2 { printf "u %.2f s %.2f", $1, $2 }')
	if [ "$rc" = 124 ]; then
		R[$key]="> $CAP"
	elif [ "$rc" != 0 ]; then
		R[$key]=FAILED
		echo "# $key failed ($rc): $(head -c 300 "$T/err.$key")"
	else
		R[$key]=$(since "$t0")
	fi
}
# best KEY N CMD: the best of N timed runs (warm figures: less noise from a busy machine)
best() {
	local key=$1 n=$2 i b= bu=
	shift 2
	for ((i = 0; i < n; i++)); do
		timed "$key" "$@"
		case ${R[$key]} in
		[0-9]*) ;;
		*) return ;;
		esac
		if [ -z "$b" ] || awk -v a="${R[$key]}" -v b="$b" 'BEGIN { exit !(a < b) }'; then b=${R[$key]} bu=${R[$key.us]}; fi
	done
	R[$key]=$b R[$key.us]=$bu
}
