#!/usr/bin/env bash
# setup.sh - one entry point for a fresh Debian 12 machine (run as root):
#
#   ./setup.sh demo    install build deps, build cafs, and mount a demo image
#                      lazily over HTTP on 127.0.0.1 (tests/demo.sh)
#   ./setup.sh check   install deps, build, run the functional suite (make check:
#                      unit, shell and fuzz-replay tests, two at a time; a few
#                      minutes); names the slowest tests and ends with
#                      "N passed, N failed, N skipped"
#   ./setup.sh check --full   the same, then the stress variants (CAFS_TEST_FULL=1),
#                      the sanitizer build, each fuzzer for a minute (make fuzz),
#                      make distcheck and the Debian packages built, lintian'd,
#                      unpacked and run on the demo, installed by apt into a
#                      debootstrap minbase copy and purged (what CI runs)
#   ./setup.sh check TEST...  build, run only these tests (tests/shell/NAME.sh,
#                      tests/unit/test-NAME, tests/fuzz/replay-NAME, or just
#                      NAME.sh, test-NAME); their TAP lines, then the same summary
#   ./setup.sh build   install deps and build only
#   ./setup.sh deb     build the Debian packages (debian/) into build/deb/
#                      (cafs, libcafs2, libcafs-dev) and run lintian on them
#   ./setup.sh packages  print the Debian packages the build and tests need
#
# Installing is idempotent: apt-get only runs when a package is missing.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"
top=$PWD
build=${CAFS_BUILD_DIR:-$top/build}
# tests run two at a time at least: each has its own $T directory and its
# servers bind ports the kernel picked (tests/lib-http.sh)
jobs=${CAFS_TEST_JOBS:-$(nproc)}
[ "$jobs" -ge 2 ] || jobs=2

packages=(
	build-essential autoconf automake libtool pkg-config
	libfuse3-dev fuse3 libcurl4-openssl-dev libssl-dev libzstd-dev zstd
	liblzma-dev zlib1g-dev libattr1-dev
	attr acl libcap2-bin xz-utils python3 e2fsprogs xfsprogs
	casync nginx-light curl rsync valgrind strace time openssl
	minisign clang libclang-rt-14-dev
	busybox-static crun
	docker-registry skopeo apache2-utils
	python3-prometheus-client prometheus-node-exporter
	debhelper dpkg-dev lintian systemd debootstrap
	python3-nacl python3-cryptography
)

install_deps() {
	local missing=()
	for p in "${packages[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup.sh: missing packages: ${missing[*]} (run as root to install them)" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# nginx-light's package starts a system nginx on port 80; tests run their own
	if command -v systemctl >/dev/null 2>&1; then
		systemctl stop nginx >/dev/null 2>&1 || true
		systemctl disable nginx >/dev/null 2>&1 || true
	fi
}

build() {
	[ -x "$top/configure" ] || ./autogen.sh >/dev/null
	mkdir -p "$build"
	cd "$build"
	[ -f Makefile ] || "$top/configure" -q
	make -j"$(nproc)" >/dev/null
	cd "$top"
}

# Read automake's per-test .trs files (both builds; or only the files named)
# and print one closing line.
summarize() {
	local pass=0 fail=0 skip=0 line
	local -a trs=("$@")
	[ $# -gt 0 ] || mapfile -t trs < <(find "$build" -name '*.trs')
	while IFS= read -r line; do
		case "$line" in
		":test-result: PASS"*|":test-result: XFAIL"*) pass=$((pass + 1)) ;;
		":test-result: SKIP"*) skip=$((skip + 1)) ;;
		":test-result: "*) fail=$((fail + 1)) ;;
		esac
	done < <(cat "${trs[@]}" 2>/dev/null)
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" -eq 0 ]
}

# slowest N: the N tests that took longest (tests/timed-driver.sh ends each
# .log with "# duration: S s")
slowest() {
	echo "setup.sh: the $1 slowest tests (seconds):"
	find "$build/tests" -name '*.log' -exec grep -H '^# duration: ' {} + 2>/dev/null |
		sed -e "s|^$build/||" -e 's|\.log:# duration: | |' -e 's| s$||' |
		sort -k2 -rn | head -n "$1" | awk '{ printf "  %7.1f  %s\n", $2, $1 }'
}

# test_name ARG: the make check name of one test: tests/shell/NAME.sh,
# tests/unit/test-NAME, tests/fuzz/replay-NAME (a leading ./ or build/, or the
# bare file name, are fine)
test_name() {
	local t=${1#./}
	t=${t#build/}
	case $t in
	*/*) ;;
	*.sh) t=tests/shell/$t ;;
	test-*) t=tests/unit/$t ;;
	replay-*) t=tests/fuzz/$t ;;
	esac
	t=${t%.c}
	case $t in
	tests/shell/*.sh) [ -f "$top/$t" ] ;;
	tests/unit/test-*) [ -f "$top/$t.c" ] ;;
	tests/fuzz/replay-*) [ -f "$top/tests/fuzz/fuzz-${t#tests/fuzz/replay-}.c" ] ;;
	*) false ;;
	esac || { echo "setup.sh: check: $1: not a test (tests/shell/*.sh, tests/unit/test-*, tests/fuzz/replay-*)" >&2; return 1; }
	echo "$t"
}

# check_some TEST...: make check TESTS='TEST...' in the build, verbose
check_some() {
	local rc=0 names=() t
	for t in "$@"; do names+=("$(test_name "$t")") || exit 2; done
	cd "$build"
	# this run's results only (the other tests' .trs stay)
	for t in "${names[@]}"; do rm -f "${t%.sh}.trs"; done
	make -j"$jobs" check TESTS="${names[*]}" VERBOSE=1 || rc=1
	cd "$top"
	local trs=()
	for t in "${names[@]}"; do trs+=("$build/${t%.sh}.trs"); done
	summarize "${trs[@]}" || rc=1
	return $rc
}

# The functional suite; with --full, then the unit tests and archive reader
# again under ASan and UBSan (make check-sanitizers, in
# $build/sanitizers-build), the fuzzers and distcheck.
check() {
	local rc=0 full=${1:-}
	cd "$build"
	find . -name '*.trs' -delete 2>/dev/null || true
	local t0=$SECONDS
	make -j"$jobs" check || { rc=1; cat test-suite.log || true; }
	echo "setup.sh: functional suite: $((SECONDS - t0)) s"
	slowest 10
	if [ "$full" != --full ]; then
		cd "$top"
		summarize || rc=1
		return $rc
	fi
	# the stress variants (hundreds of readers of a hostile archive behind a
	# slow server; 40 takeovers with reads in flight; make --cache against
	# random changes): minutes, so not in the functional suite
	local stress='tests/shell/mount-hostile-wide.sh tests/shell/mount-takeover-inflight.sh tests/shell/tree-make-cache.sh'
	CAFS_TEST_FULL=1 make check TESTS="$stress" \
		>full-stress.log 2>&1 ||
		{ rc=1; tail -n 50 full-stress.log; }
	make check-sanitizers >sanitizers.log 2>&1 ||
		{ rc=1; tail -n 50 sanitizers.log; cat sanitizers-build/test-suite.log 2>/dev/null || true; }
	# each libFuzzer harness for FUZZ_SECONDS (a minute) on top of its seed
	# corpus: one test result each (fuzz-build/fuzz-NAME.trs)
	make fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-60}" >fuzz.log 2>&1 || {
		rc=1
		tail -n 80 fuzz.log
		# no harness ran (no clang, a build failure): still a counted failure
		ls fuzz-build/fuzz-*.trs >/dev/null 2>&1 || echo ":test-result: FAIL fuzz" >fuzz.trs
	}
	# the release tarball builds, passes its tests out of a read-only source
	# tree, installs and uninstalls cleanly: counted as one test
	if make -j"$(nproc)" distcheck >distcheck.log 2>&1; then
		echo ":test-result: PASS distcheck" >distcheck.trs
	else
		rc=1
		echo ":test-result: FAIL distcheck" >distcheck.trs
		tail -n 80 distcheck.log
	fi
	# the Debian packages build, pass lintian, and the unpacked binary
	# mounts and reads the demo image: counted as one test (docs/systemd.md)
	if (deb_test) >deb.log 2>&1; then
		echo ":test-result: PASS deb" >deb.trs
	else
		rc=1
		echo ":test-result: FAIL deb" >deb.trs
		tail -n 80 deb.log
	fi
	cd "$top"
	summarize || rc=1
	return $rc
}

# deb: dpkg-buildpackage -b on a copy of the tree's own files (tracked and
# untracked, not ignored: uncommitted edits count; no build output) in
# $build/deb/src, so the .debs land in $build/deb and the tree stays clean;
# then lintian, which must find no error (warnings are printed). Prints the
# .deb files.
deb() {
	local out=$build/deb src f
	src=$out/src
	rm -rf "$out"
	mkdir -p "$src"
	if [ "$(git -C "$top" rev-parse --show-toplevel 2>/dev/null)" = "$top" ]; then
		(cd "$top" && git ls-files -z --cached --others --exclude-standard |
			while IFS= read -r -d '' f; do
				# not the build (when it is in the tree and not ignored); a
				# tracked file deleted in the tree is not copied
				case $top/$f in "$build"/*) continue ;; esac
				if [ -e "$f" ] || [ -L "$f" ]; then cp -a --parents "$f" "$src/"; fi
			done)
	else
		# a release tarball: everything but the build
		tar -C "$top" --exclude=./build --exclude="./${build#"$top"/}" -cf - . | tar -C "$src" -xf -
	fi
	(cd "$src" && dpkg-buildpackage -b -uc -us -j"$(nproc)") >"$out/build.log" 2>&1 ||
		{ tail -n 60 "$out/build.log"; echo "setup.sh: deb: dpkg-buildpackage failed ($out/build.log)" >&2; return 1; }
	# --fail-on error: warnings are listed, not fatal (docs/systemd.md says which and why)
	lintian --fail-on error --info --display-level '>=warning' "$out"/*.changes >"$out/lintian.log" 2>&1 ||
		{ cat "$out/lintian.log"; echo "setup.sh: deb: lintian reported errors ($out/lintian.log)" >&2; return 1; }
	# (lintian's notice about running as root is not about the packages)
	grep -v '^running with root privileges is not recommended!$' "$out/lintian.log" | sed 's/^/lintian: /' || true
	ls "$out"/*.deb
}

# deb_test: the package as a machine gets it (check --full): deb (build,
# lintian), every .deb unpacked into a scratch root ($build/deb/root, dpkg -x:
# the machine's own dpkg database is not touched), the unpacked cafs
# --version, docs/example.c built against the unpacked libcafs-dev, and the
# demo (tests/demo.sh: make, nginx on 127.0.0.1, mount, read every file,
# unmount) run with the unpacked binary
deb_test() {
	local root=$build/deb/root d want
	deb || return 1
	rm -rf "$root"
	mkdir -p "$root"
	for d in "$build"/deb/*.deb; do dpkg -x "$d" "$root" || return 1; done
	want="cafs $(sed -n '1s/^cafs (\([^)]*\)).*/\1/p' "$top/debian/changelog")"
	echo "setup.sh: deb: $root/usr/bin/cafs --version: $("$root/usr/bin/cafs" --version)"
	[ "$("$root/usr/bin/cafs" --version)" = "$want" ] ||
		{ echo "setup.sh: deb: the unpacked cafs is not $want" >&2; return 1; }
	[ "$(readlink -f "$root/sbin/mount.cafs")" = /usr/bin/cafs ] ||
		{ echo "setup.sh: deb: /sbin/mount.cafs does not lead to /usr/bin/cafs" >&2; return 1; }
	# libcafs-dev and libcafs2: docs/example.c builds and links against the
	# unpacked headers, cafs.pc and libcafs.so (-> libcafs.so.2)
	local pcdir flags
	pcdir=$(dirname "$(find "$root" -name cafs.pc | head -n 1)")
	flags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs cafs) || return 1
	# shellcheck disable=SC2086 # pkg-config's words
	cc -o "$build/deb/example" "$top/docs/example.c" $flags || return 1
	objdump -p "$build/deb/example" | grep -q 'NEEDED *libcafs\.so\.2$' ||
		{ echo "setup.sh: deb: docs/example.c did not link libcafs.so.2" >&2; return 1; }
	# ... and reads a file through the unpacked libcafs.so.2
	rm -rf "$build/deb/img"
	mkdir -p "$build/deb/img/src/d"
	echo "read through libcafs2" >"$build/deb/img/src/d/f"
	"$root/usr/bin/cafs" make -q --store="$build/deb/img/default.castr" "$build/deb/img/x.caidx" \
		"$build/deb/img/src" >/dev/null || return 1
	LD_LIBRARY_PATH=$(dirname "$(find "$root" -name 'libcafs.so.2' | head -n 1)") \
		"$build/deb/example" "$build/deb/img/x.caidx" d d/f | grep -qx "read through libcafs2" ||
		{ echo "setup.sh: deb: docs/example.c could not read through the unpacked libcafs.so.2" >&2; return 1; }
	echo "setup.sh: deb: docs/example.c built against libcafs-dev ($flags), read a file through libcafs2"
	make -C "$build" tests/gen-data >/dev/null || return 1
	GEN=$build/tests/gen-data top_builddir=$build "$top/tests/demo.sh" "$root/usr/bin/cafs" || return 1
	deb_install_test
}

# deb_install_test: the packages installed as a machine installs them: apt
# in a throwaway copy ($build/deb/chroot) of a debootstrap minbase bookworm
# root (CAFS_DEB_ROOTFS, else the one bench/minbase.sh keeps, made here the
# first time), their dependencies from the Debian mirror; dpkg has all three
# installed, the installed cafs has the changelog's version and makes and
# extracts a tree there, and a purge leaves none of their files behind
deb_install_test() {
	local base=${CAFS_DEB_ROOTFS:-${BENCH_CACHE:-/var/tmp/cafs-bench-cache}/minbase-bookworm}
	local root=$build/deb/chroot f left=0 want
	want="cafs $(sed -n '1s/^cafs (\([^)]*\)).*/\1/p' "$top/debian/changelog")"
	if [ ! -x "$base/bin/sh" ]; then
		echo "setup.sh: deb: debootstrap --variant=minbase bookworm $base"
		mkdir -p "$(dirname "$base")" && rm -rf "$base.tmp" &&
			debootstrap --variant=minbase bookworm "$base.tmp" http://deb.debian.org/debian \
				>"$build/deb/debootstrap.log" 2>&1 && mv "$base.tmp" "$base" ||
			{ tail -n 20 "$build/deb/debootstrap.log"; echo "setup.sh: deb: debootstrap failed" >&2; return 1; }
	fi
	rm -rf "$root"
	cp -a "$base" "$root" || return 1
	mkdir -p "$root/tmp/debs"
	cp "$build"/deb/cafs_*.deb "$build"/deb/libcafs2_*.deb "$build"/deb/libcafs-dev_*.deb "$root/tmp/debs/" || return 1
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	chroot "$root" sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends /tmp/debs/*.deb' >"$build/deb/install.log" 2>&1 ||
		{ tail -n 30 "$build/deb/install.log"; echo "setup.sh: deb: apt could not install the packages" >&2; return 1; }
	[ "$(chroot "$root" dpkg-query -W -f='${Status}\n' cafs libcafs2 libcafs-dev | sort -u)" = "install ok installed" ] ||
		{ echo "setup.sh: deb: dpkg does not have all three installed" >&2; return 1; }
	[ "$(chroot "$root" cafs --version)" = "$want" ] ||
		{ echo "setup.sh: deb: the installed cafs is not $want" >&2; return 1; }
	chroot "$root" sh -c 'mkdir -p /tmp/t/src && echo installed >/tmp/t/src/f &&
		cafs make -q --store=/tmp/t/s /tmp/t/x.caidx /tmp/t/src >/dev/null &&
		cafs extract --store=/tmp/t/s /tmp/t/x.caidx /tmp/t/out && cmp /tmp/t/src/f /tmp/t/out/f' ||
		{ echo "setup.sh: deb: the installed cafs cannot make and extract a tree" >&2; return 1; }
	chroot "$root" dpkg -L cafs libcafs2 libcafs-dev >"$build/deb/files.txt" || return 1
	chroot "$root" sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q cafs libcafs2 libcafs-dev' \
		>"$build/deb/purge.log" 2>&1 ||
		{ tail -n 30 "$build/deb/purge.log"; echo "setup.sh: deb: apt could not purge the packages" >&2; return 1; }
	while read -r f; do
		[ -d "$root$f" ] && continue # directories (and usrmerge's /lib, /sbin links) are shared
		if [ -e "$root$f" ] || [ -L "$root$f" ]; then
			echo "setup.sh: deb: left after purge: $f" >&2
			left=$((left + 1))
		fi
	done <"$build/deb/files.txt"
	[ "$left" = 0 ] || return 1
	echo "setup.sh: deb: apt installed the packages into a minbase root ($(wc -l <"$build/deb/files.txt") paths), cafs ran there, a purge removed them"
	rm -rf "$root"
}

case "${1:-}" in
packages) echo "${packages[@]}" ;;
build) install_deps; build ;;
deb) install_deps; deb ;;
check)
	shift
	case "${1:-}" in
	""|--full) [ $# -le 1 ] || { echo "setup.sh: check: --full takes no tests" >&2; exit 2; }
		install_deps; build; check "${1:-}" ;;
	-*) echo "setup.sh: check: unknown option $1" >&2; exit 2 ;;
	*) for t in "$@"; do test_name "$t" >/dev/null || exit 2; done
		install_deps; build; check_some "$@" ;;
	esac ;;
demo) install_deps; build; make -C "$build" tests/gen-data >/dev/null; exec "$top/tests/demo.sh" "$build/cafs" ;;
*) sed -n '2,21p' "$0"; exit 2 ;;
esac
