/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-api-store.c - what the cafs command does with stores, done through
 * the public headers and the shared library only: make with the command's
 * choices (compression, digest, features, a file:// store) gives the
 * command's index; gc, prune, verify and stat of a store give the counts
 * the files on disk show, and refuse what the command refuses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <cafs/cafs.h>

#include "tap.h"
#include "testsh.h"

static char dir[] = "/tmp/cafs-test-api-store.XXXXXX";
static const char *cafs;

static char *p(const char *name)
{
	return testdata_path(dir, name);
}

/* chunk files under store, as find counts them */
static long n_chunks(const char *store)
{
	char cmd[512];
	long n = -1;
	snprintf(cmd, sizeof(cmd), "find %s -name '*.cacnk' | wc -l", store);
	FILE *f = popen(cmd, "r");
	if (f && fscanf(f, "%ld", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

static int removed_calls;
static void on_removed(void *userdata, const char *name)
{
	(void)userdata;
	removed_calls += strstr(name, ".cacnk") != NULL;
}

static void test_make(struct cafs_ctx *ctx)
{
	uint8_t d[CAFS_DIGEST_SIZE];
	char url[512];
	/* the command's choices, through the library: the same index */
	struct cafs_make_options mo = { .size = sizeof mo, .chunk_size_avg = 4096, .compression = "xz",
		                        .digest = "sha256", .store = p("xz.castr") };
	check_int(cafs_make(ctx, p("b.caibx"), p("blob"), &mo, d), ==, 0);
	check_int(testdata_sh("%s make -q --chunk-size 4096 --compression=xz --digest=sha256 --store %s %s %s >/dev/null",
	                      cafs, p("xz2.castr"), p("c.caibx"), p("blob")),
	          ==, 0);
	check_int(testdata_sh("cmp -s %s %s", p("b.caibx"), p("c.caibx")), ==, 0);
	/* the chunks are xz's (its magic), as the command's are */
	check_int(testdata_sh("f=$(find %s -name '*.cacnk' | head -1) && head -c 6 \"$f\" | od -An -tx1 | "
	                      "grep -q 'fd 37 7a 58 5a 00'",
	                      p("xz.castr")),
	          ==, 0);
	check_int(testdata_sh("diff -r %s %s", p("xz.castr"), p("xz2.castr")), ==, 0);

	/* features of an archive, and a store as a file:// URL */
	snprintf(url, sizeof(url), "file://%s", p("f.castr"));
	struct cafs_make_options fo = { .size = sizeof fo, .with = "unix,xattrs", .without = "symlinks", .store = url };
	check_int(cafs_make(ctx, p("t.caidx"), p("t"), &fo, d), ==, 0);
	check_int(testdata_sh("%s make -q --with=unix --with=xattrs --without=symlinks --store %s %s %s >/dev/null", cafs,
	                      p("f2.castr"), p("u.caidx"), p("t")),
	          ==, 0);
	check_int(testdata_sh("cmp -s %s %s", p("t.caidx"), p("u.caidx")), ==, 0);
	check(n_chunks(p("f.castr")) > 0);

	/* refused, with nothing made: unknown names, a URL that cannot be
	 * written, an unknown suffix, a profile for a .catar */
	struct cafs_make_options bad = { .size = sizeof bad, .compression = "lz4" };
	check_int(cafs_make(ctx, p("x.caibx"), p("blob"), &bad, d), ==, -EINVAL);
	bad = (struct cafs_make_options){ .size = sizeof bad, .digest = "md5" };
	check_int(cafs_make(ctx, p("x.caibx"), p("blob"), &bad, d), ==, -EINVAL);
	bad = (struct cafs_make_options){ .size = sizeof bad, .with = "unix,nonsense" };
	check_int(cafs_make(ctx, p("x.caidx"), p("t"), &bad, d), ==, -EINVAL);
	bad = (struct cafs_make_options){ .size = sizeof bad, .store = "https://127.0.0.1:1/s.castr" };
	check_int(cafs_make(ctx, p("x.caibx"), p("blob"), &bad, d), ==, -EINVAL);
	check_int(cafs_make(ctx, "https://127.0.0.1:1/x.caibx", p("blob"), NULL, d), ==, -EINVAL);
	check_int(cafs_make(ctx, p("x.img"), p("blob"), NULL, d), ==, -EINVAL);
	bad = (struct cafs_make_options){ .size = sizeof bad, .profile = p("none.profile") };
	check_int(cafs_make(ctx, p("x.catar"), p("t"), &bad, d), ==, -EINVAL);
	check_int(cafs_make(ctx, p("x.caibx"), p("blob"), &bad, d), ==, -ENOENT);
	check_int(testdata_sh("ls %s/x.* 2>/dev/null | grep -q .", dir), !=, 0);
}

static void test_stat_verify(struct cafs_ctx *ctx)
{
	struct cafs_store_stats ss = { .size = sizeof ss };
	struct cafs_verify_stats vs = { .size = sizeof vs };
	struct cafs_verify_options vo = { .size = sizeof vo };
	long n = n_chunks(p("xz.castr"));

	check_int(cafs_store_stat(ctx, p("xz.castr"), &ss), ==, 0);
	check_int((long)ss.chunks, ==, n);
	check(ss.bytes > 0 && ss.disk_bytes > 0 && ss.tmp_files == 0);
	/* a store not made yet (a cache before its first chunk) is empty */
	check_int(cafs_store_stat(ctx, p("missing.castr"), &ss), ==, 0);
	check_int((int)ss.chunks, ==, 0);
	/* a stats struct too small to hold its size */
	struct cafs_store_stats tiny = { .size = 2 };
	check_int(cafs_store_stat(ctx, p("xz.castr"), &tiny), ==, -EINVAL);
	/* an older, shorter one is filled up to its size */
	struct {
		size_t size;
		uint64_t chunks;
		uint64_t guard;
	} old = { sizeof(size_t) + sizeof(uint64_t), 0, 77 };
	check_int(cafs_store_stat(ctx, p("xz.castr"), (struct cafs_store_stats *)&old), ==, 0);
	check_int((long)old.chunks, ==, n);
	check_int((int)old.guard, ==, 77);

	check_int(cafs_store_verify(ctx, p("xz.castr"), &vo, &vs), ==, 0);
	check_int((long)vs.ok, ==, n);
	check_int((int)vs.corrupt, ==, 0);
	/* one chunk's bytes changed: found, then removed by repair */
	check_int(testdata_sh("f=$(find %s -name '*.cacnk' | head -1) && printf garbage | dd of=\"$f\" bs=1 seek=20 "
	                      "conv=notrunc 2>/dev/null",
	                      p("xz.castr")),
	          ==, 0);
	check_int(cafs_store_verify(ctx, p("xz.castr"), &vo, &vs), ==, CAFS_ECHUNKCORRUPT);
	check_int((int)vs.corrupt, ==, 1);
	check_int((int)vs.removed, ==, 0);
	check_int((long)n_chunks(p("xz.castr")), ==, n);
	vo.repair = 1;
	check_int(cafs_store_verify(ctx, p("xz.castr"), &vo, &vs), ==, 0);
	check_int((int)vs.removed, ==, 1);
	check_int((long)n_chunks(p("xz.castr")), ==, n - 1);
	check_int(cafs_store_verify(ctx, p("missing.castr"), NULL, NULL), ==, 0);
}

static void test_gc(struct cafs_ctx *ctx)
{
	struct cafs_gc_stats gs = { .size = sizeof gs };
	struct cafs_gc_options go = { .size = sizeof go, .store = p("g.castr"), .dry_run = 1, .removed = on_removed };
	const char *one[] = { p("g1.caibx") };
	const char *none[] = { p("nothere.caibx") };
	/* two blobs in one store; gc keeping only the first's chunks */
	check_int(testdata_sh("cd %s && head -c 300000 /dev/urandom >g1 && head -c 300000 /dev/urandom >g2 && "
	                      "%s make -q --chunk-size 4096 --store g.castr g1.caibx g1 >/dev/null && "
	                      "%s make -q --chunk-size 4096 --store g.castr g2.caibx g2 >/dev/null && "
	                      "cp -r g.castr g-casync.castr",
	                      dir, cafs, cafs),
	          ==, 0);
	long all = n_chunks(p("g.castr"));
	check_int(cafs_store_gc(ctx, one, 1, &go, &gs), ==, 0);
	check(gs.removed > 0 && gs.kept > 0);
	check_int((long)(gs.removed + gs.kept), ==, all);
	check_int(removed_calls, ==, (int)gs.removed);
	check_int(n_chunks(p("g.castr")), ==, all); /* a dry run removes nothing */
	go.dry_run = 0;
	check_int(cafs_store_gc(ctx, one, 1, &go, &gs), ==, 0);
	check_int(n_chunks(p("g.castr")), ==, (long)gs.kept);
	/* the command's gc leaves the same store */
	check_int(testdata_sh("cd %s && %s gc -q --store g-casync.castr g1.caibx && diff -r g.castr g-casync.castr", dir,
	                      cafs),
	          ==, 0);
	/* refused, with nothing removed: no index, an index that does not
	 * load, a store that cannot be collected, a URL index without a store */
	check_int(cafs_store_gc(ctx, one, 0, &go, &gs), ==, -EINVAL);
	check_int(cafs_store_gc(ctx, none, 1, &go, &gs), ==, -ENOENT);
	go.store = "https://127.0.0.1:1/s.castr";
	check_int(cafs_store_gc(ctx, one, 1, &go, &gs), ==, -EINVAL);
	const char *url[] = { "https://127.0.0.1:1/x.caibx" };
	go.store = NULL;
	check_int(cafs_store_gc(ctx, url, 1, &go, &gs), ==, -EINVAL);
	check_int(n_chunks(p("g.castr")), ==, (long)gs.kept);
}

static void test_prune(struct cafs_ctx *ctx)
{
	struct cafs_prune_stats ps = { .size = sizeof ps };
	const char *keep[] = { p("k1.caibx") };
	struct cafs_prune_options po = { .size = sizeof po, .max_size = 0, .min_age = -1, .dry_run = 1 };
	check_int(testdata_sh("cd %s && head -c 200000 /dev/urandom >k1 && head -c 200000 /dev/urandom >k2 && "
	                      "%s make -q --chunk-size 4096 --store c.cache k1.caibx k1 >/dev/null && "
	                      "%s make -q --chunk-size 4096 --store c.cache k2.caibx k2 >/dev/null && "
	                      "%s make -q --chunk-size 4096 --store k1.castr k1.caibx k1 >/dev/null",
	                      dir, cafs, cafs, cafs),
	          ==, 0);
	long all = n_chunks(p("c.cache")), k1 = n_chunks(p("k1.castr"));
	check_int(cafs_cache_prune(ctx, p("c.cache"), &po, &ps), ==, 0);
	check_int((long)ps.removed, ==, all);
	check_int((int)ps.left_chunks, ==, 0);
	check_int(n_chunks(p("c.cache")), ==, all); /* a dry run removes nothing */
	/* just used: the default minimum age keeps everything */
	po.min_age = 0;
	po.dry_run = 0;
	check_int(cafs_cache_prune(ctx, p("c.cache"), &po, &ps), ==, 0);
	check_int((int)ps.removed, ==, 0);
	check_int(n_chunks(p("c.cache")), ==, all);
	/* pinned by an index: its chunks stay, the rest go */
	po.min_age = -1;
	po.keep = keep;
	po.n_keep = 1;
	check_int(cafs_cache_prune(ctx, p("c.cache"), &po, &ps), ==, 0);
	check_int((long)ps.left_chunks, ==, k1);
	check_int(n_chunks(p("c.cache")), ==, k1);
	/* a pin that does not load: refused, nothing removed */
	const char *bad[] = { p("nothere.caibx") };
	po.keep = bad;
	check_int(cafs_cache_prune(ctx, p("c.cache"), &po, &ps), ==, -ENOENT);
	check_int(n_chunks(p("c.cache")), ==, k1);
}

/* `test-api-store s3 STORE INDEX INPUT` (tests/shell/api-s3.sh, which runs
 * the S3 server): make INPUT to INDEX with chunks in STORE, both in the
 * bucket, through the library alone; then a gc of STORE keeping INDEX
 * removes nothing. The script compares the bucket with the command's. */
static int s3_mode(char **argv)
{
	struct cafs_ctx *ctx = NULL;
	uint8_t d[CAFS_DIGEST_SIZE];
	struct cafs_make_options mo = { .size = sizeof mo, .store = argv[2] };
	struct cafs_gc_options go = { .size = sizeof go, .store = argv[2], .dry_run = 1 };
	struct cafs_gc_stats gs = { .size = sizeof gs };
	const char *keep[] = { argv[3] };
	check_int(cafs_ctx_new(&ctx), ==, 0);
	check_int(cafs_make(ctx, argv[3], argv[4], &mo, d), ==, 0);
	check_int(cafs_store_gc(ctx, keep, 1, &go, &gs), ==, 0);
	check(gs.kept > 0);
	check_int((int)gs.removed, ==, 0);
	/* a .catar cannot go to a bucket: refused, as the command refuses it */
	char bad[1024];
	snprintf(bad, sizeof(bad), "%s.catar", argv[3]);
	cafs_ctx_set_log_priority(ctx, LOG_CRIT);
	check_int(cafs_make(ctx, bad, argv[4], &mo, d), ==, -EINVAL);
	cafs_ctx_unref(ctx);
	return tap_done();
}

int main(int argc, char **argv)
{
	struct cafs_ctx *ctx = NULL;
	if (argc == 5 && !strcmp(argv[1], "s3"))
		return s3_mode(argv);
	cafs = getenv("CAFS");
	check(cafs && mkdtemp(dir));
	check_int(testdata_sh("cd %s && head -c 500000 /dev/urandom >blob && mkdir -p t/d && printf hello >t/d/f && "
	                      "ln -s d/f t/l",
	                      dir),
	          ==, 0);
	check_int(cafs_ctx_new(&ctx), ==, 0);
	cafs_ctx_set_log_priority(ctx, LOG_CRIT); /* the refusals are expected */
	test_make(ctx);
	test_stat_verify(ctx);
	test_gc(ctx);
	test_prune(ctx);
	cafs_ctx_unref(ctx);
	testdata_sh("rm -rf %s", dir);
	return tap_done();
}
