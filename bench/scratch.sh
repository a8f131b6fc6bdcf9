# bench/scratch.sh - a fresh file system for every timed run (sourced).
#
# Creating inodes is most of what `make .caidx` and `extract` cost, and
# on a file system that has seen many deletes each create costs far more
# (ext4 without a journal scans past recently deleted inodes: ~500 us
# instead of ~10 us, seen with perf on /var/tmp here), so timings on a
# reused directory swing several-fold between identical runs. Each timed
# run gets a new ext4 instead (default options, journal included) on a
# loop device over a sparse image in /dev/shm: the same starting state for
# both tools, in RAM so that a shared disk adds no noise.
#
#   scratch_init WORKDIR MIB  once; the image's size in MiB
#   scratch_fresh             a new empty file system; prints its mount point
#   scratch_done              unmount, remove the image (call it from the EXIT trap)
#
# Without root or mkfs.ext4, or with BENCH_SCRATCH=dir, runs use
# WORKDIR/scratch instead, emptied between runs (and say so).

scratch_init() {
	SCRATCH_W=$1 SCRATCH_MIB=$2 SCRATCH_IMG= SCRATCH_MNT=$1/scratch SCRATCH_KIND=dir
	if [ "${BENCH_SCRATCH:-loop}" = loop ] && [ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null &&
		[ -d /dev/shm ]; then
		SCRATCH_IMG=$(mktemp /dev/shm/cafs-bench.XXXXXX.img) && SCRATCH_KIND=loop
	fi
	mkdir -p "$SCRATCH_MNT"
	if [ "$SCRATCH_KIND" = loop ]; then
		echo "# every timed run on a fresh ext4 (${SCRATCH_MIB} MiB loop image in /dev/shm)"
	else
		echo "# timed runs in $SCRATCH_MNT, emptied between runs (no fresh file system: results vary more)"
	fi
}

scratch_fresh() {
	if [ "$SCRATCH_KIND" = dir ]; then
		rm -rf "$SCRATCH_MNT" && mkdir "$SCRATCH_MNT" && sync && echo "$SCRATCH_MNT"
		return
	fi
	if mountpoint -q "$SCRATCH_MNT"; then umount "$SCRATCH_MNT" || return 1; fi
	rm -f "$SCRATCH_IMG" && truncate -s "${SCRATCH_MIB}M" "$SCRATCH_IMG" || return 1
	# everything initialized now: no ext4lazyinit thread zeroing tables during a timed run
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$SCRATCH_IMG" || return 1
	mount -o loop "$SCRATCH_IMG" "$SCRATCH_MNT" || return 1
	echo "$SCRATCH_MNT"
}

scratch_done() {
	[ -n "${SCRATCH_MNT:-}" ] && mountpoint -q "$SCRATCH_MNT" && umount "$SCRATCH_MNT"
	[ -n "${SCRATCH_IMG:-}" ] && rm -f "$SCRATCH_IMG"
	return 0
}
