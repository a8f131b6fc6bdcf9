/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-image.c - the core's "make an image" and "extract an image"
 * (image_make.h, image_extract.h), as the library offers them: a small
 * tree made into a .caibx (one file of it), a .caidx and a .catar in a
 * temporary directory, each opened (source.h) and extracted back, and
 * compared with what it was made of; a subtree extracted alone; the
 * digests agree with each other and with the data's; progress is begun,
 * advanced and ended; a cancel flag already up makes make return
 * -ECANCELED and leave no output.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/digest.h"
#include "image/image_extract.h"
#include "image/image_make.h"
#include "image/source.h"
#include "tap.h"
#include "testdata.h"

static char tmpdir[] = "/tmp/cafs-test-image.XXXXXX";

static char *path(const char *name)
{
	return testdata_path(tmpdir, name);
}

#define BIG_SIZE (700u * 1024u + 123u) /* several chunks at the default sizes */

static int write_file(const char *p, const uint8_t *data, size_t n)
{
	FILE *f = fopen(p, "wb");
	if (!f)
		return -errno;
	int r = n == 0 || fwrite(data, 1, n, f) == n ? 0 : -EIO;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	return r;
}

/* src/big, src/empty, src/link -> big, src/sub/small, src/sub/deeper/x */
static int make_tree(const uint8_t *big)
{
	static const char small[] = "a small file\n";
	int r = 0;
	if (mkdir(path("src"), 0755) < 0 || mkdir(path("src/sub"), 0750) < 0 || mkdir(path("src/sub/deeper"), 0700) < 0)
		return -errno;
	if (r == 0)
		r = write_file(path("src/big"), big, BIG_SIZE);
	if (r == 0)
		r = write_file(path("src/empty"), NULL, 0);
	if (r == 0)
		r = write_file(path("src/sub/small"), (const uint8_t *)small, sizeof(small) - 1);
	if (r == 0)
		r = write_file(path("src/sub/deeper/x"), big + 1000, 5000);
	if (r == 0 && symlink("big", path("src/link")) < 0)
		r = -errno;
	return r;
}

struct progress_log {
	unsigned starts, ends;
	uint64_t total, last;
};

static void on_start(void *userdata, uint64_t total)
{
	struct progress_log *p = userdata;
	p->starts++;
	p->total = total;
}

static void on_progress(void *userdata, uint64_t done)
{
	struct progress_log *p = userdata;
	if (done > p->last)
		p->last = done;
}

static void on_end(void *userdata)
{
	struct progress_log *p = userdata;
	p->ends++;
}

static int extract(const char *image, const char *dest, const char *sub)
{
	struct ca_image_opts io = { .lru_bytes = 64u << 20 };
	struct ca_image *im = NULL;
	int r = ca_image_open(image, &io, &im);
	if (r < 0)
		return r;
	struct ca_image_extract_opts eo = { .path = sub, .threads = 2 };
	r = ca_image_extract(im, dest, &eo);
	ca_image_free(im);
	return r;
}

static bool same_tree(const char *a, const char *b)
{
	/* contents, types, names and symlink targets */
	return testdata_sh("diff -r --no-dereference '%s' '%s' >/dev/null", a, b) == 0;
}

static bool same_mtime(const char *a, const char *b)
{
	struct stat x, y;
	return lstat(a, &x) == 0 && lstat(b, &y) == 0 && x.st_mtim.tv_sec == y.st_mtim.tv_sec &&
	       x.st_mtim.tv_nsec == y.st_mtim.tv_nsec && (x.st_mode & 07777) == (y.st_mode & 07777);
}

static bool exists(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0;
}

static void test_roundtrip(const uint8_t *big)
{
	struct ca_image_make_opts o;
	struct progress_log pl = { 0 };
	struct ca_make_stats st = { 0 };
	uint8_t d_blob[CA_CHUNK_ID_SIZE], d_data[CA_CHUNK_ID_SIZE], d_idx[CA_CHUNK_ID_SIZE], d_tar[CA_CHUNK_ID_SIZE],
		d_dir[CA_CHUNK_ID_SIZE];
	struct ca_digest *dg = NULL;

	ca_image_make_opts_init(&o);
	o.threads = 2;
	o.progress_start = on_start;
	o.progress = on_progress;
	o.progress_end = on_end;
	o.progress_userdata = &pl;

	/* a .caibx of one file: its digest is the data's */
	check_int(ca_image_make(path("big.caibx"), path("src/big"), &o, d_blob, &st), ==, 0);
	check_int(pl.starts, ==, 1);
	check_int(pl.ends, ==, 1);
	check_u64(pl.total, ==, BIG_SIZE);
	check_u64(pl.last, ==, BIG_SIZE);
	check_u64(st.bytes, ==, BIG_SIZE);
	check(st.chunks > 1);
	check(exists(path("default.castr")));
	check_int(ca_digest_new(CA_DIGEST_SHA512_256, &dg), ==, 0);
	if (dg) {
		ca_digest_update(dg, big, BIG_SIZE);
		ca_digest_final(dg, d_data);
		check(!memcmp(d_blob, d_data, CA_CHUNK_ID_SIZE));
	}
	ca_digest_free(dg);

	/* a .caidx into a store of our choosing, and a .catar: the same stream */
	o.store = path("tree.castr");
	pl = (struct progress_log){ 0 };
	check_int(ca_image_make(path("tree.caidx"), path("src"), &o, d_idx, &st), ==, 0);
	check_int(pl.starts, ==, 1);
	check_int(pl.ends, ==, 1);
	check(st.bytes > BIG_SIZE);
	check(exists(path("tree.castr")));
	o.store = NULL;
	check_int(ca_image_make(path("tree.catar"), path("src"), &o, d_tar, &st), ==, 0);
	check(!memcmp(d_idx, d_tar, CA_CHUNK_ID_SIZE));
	check_int(ca_image_digest_dir(path("src"), CA_DIGEST_SHA512_256, NULL, d_dir), ==, 0);
	check(!memcmp(d_idx, d_dir, CA_CHUNK_ID_SIZE));

	/* and back */
	check_int(extract(path("big.caibx"), path("big.out"), NULL), ==, 0);
	check(testdata_sh("cmp -s '%s' '%s'", path("src/big"), path("big.out")) == 0);
	char store[4096]; /* path()'s buffers are reused */
	snprintf(store, sizeof(store), "%s", path("tree.castr"));
	char *stores[] = { store };
	struct ca_image_opts io = { .stores = stores, .n_stores = 1, .lru_bytes = 64u << 20 };
	struct ca_image *im = NULL;
	check_int(ca_image_open(path("tree.caidx"), &io, &im), ==, 0);
	if (im) {
		pl = (struct progress_log){ 0 };
		struct ca_image_extract_opts eo = { .progress_start = on_start, .progress = on_progress,
			                            .progress_end = on_end, .progress_userdata = &pl };
		check_int(ca_image_extract(im, path("from-caidx"), &eo), ==, 0);
		check_int(pl.starts, ==, 1);
		check_int(pl.ends, ==, 1);
		check_u64(pl.last, ==, BIG_SIZE + 5000 + 13);
		ca_image_free(im);
	}
	check(same_tree(path("src"), path("from-caidx")));
	check(same_mtime(path("src/big"), path("from-caidx/big")));
	check(same_mtime(path("src/sub"), path("from-caidx/sub")));
	check_int(extract(path("tree.catar"), path("from-catar"), NULL), ==, 0);
	check(same_tree(path("src"), path("from-catar")));

	/* one directory alone, from the index and from the plain archive */
	check_int(extract(path("tree.catar"), path("sub-catar"), "sub"), ==, 0);
	check(same_tree(path("src/sub"), path("sub-catar")));
	check(same_mtime(path("src/sub/deeper"), path("sub-catar/deeper")));
	check_int(ca_image_open(path("tree.caidx"), &io, &im), ==, 0);
	if (im) {
		struct ca_image_extract_opts eo = { .path = "sub/deeper" };
		check_int(ca_image_extract(im, path("sub-caidx"), &eo), ==, 0);
		check(same_tree(path("src/sub/deeper"), path("sub-caidx")));
		eo.path = "big"; /* not a directory */
		check_int(ca_image_extract(im, path("sub-big"), &eo), ==, -ENOTDIR);
		eo.path = "nope";
		check_int(ca_image_extract(im, path("sub-nope"), &eo), ==, -ENOENT);
		check(!exists(path("sub-big")));
		check(!exists(path("sub-nope")));
		ca_image_free(im);
	}

	/* a blob goes to a file, never over a directory */
	check_int(extract(path("big.caibx"), path("src"), NULL), ==, -EEXIST);
	/* kinds that do not fit */
	check_int(ca_image_make(path("x.caibx"), path("src"), &o, d_blob, NULL), ==, -EISDIR);
	check_int(ca_image_make(path("x.caidx"), path("src/big"), &o, d_blob, NULL), ==, -ENOTDIR);
	check_int(ca_image_make(path("x.img"), path("src/big"), &o, d_blob, NULL), ==, -EINVAL);
	check(!exists(path("x.caibx")));
	check(!exists(path("x.caidx")));
}

static void test_cancel(void)
{
	static volatile sig_atomic_t flag = 1;
	struct ca_image_make_opts o;
	struct progress_log pl = { 0 };
	uint8_t d[CA_CHUNK_ID_SIZE];
	ca_image_make_opts_init(&o);
	o.cancel = &flag;
	o.progress_start = on_start;
	o.progress_end = on_end;
	o.progress_userdata = &pl;
	check_int(ca_image_make(path("c.caibx"), path("src/big"), &o, d, NULL), ==, -ECANCELED);
	check_int(ca_image_make(path("c.caidx"), path("src"), &o, d, NULL), ==, -ECANCELED);
	check_int(ca_image_make(path("c.catar"), path("src"), &o, d, NULL), ==, -ECANCELED);
	check(!exists(path("c.caibx")));
	check(!exists(path("c.caidx")));
	check(!exists(path("c.catar")));
	check_int(pl.starts, ==, pl.ends);
	/* nothing temporary left beside the outputs either */
	check(testdata_sh("ls -A '%s' | grep -q '^\\.#'", tmpdir) != 0);
}

/* make's options by name (what --chunk-size, --with, --compression give):
 * the accepted and the refused */
static void test_set_by_name(void)
{
	struct ca_image_make_opts o;
	ca_image_make_opts_init(&o);
	check_int(ca_image_make_set_chunk_size(&o, "16384:65536:262144"), ==, 0);
	check(o.chunk_min == 16384 && o.chunk_avg == 65536 && o.chunk_max == 262144);
	check_int(ca_image_make_set_chunk_size(&o, "1:2"), ==, -EINVAL);
	check(o.chunk_avg == 65536);
	check(!o.with_set);
	check_int(ca_image_make_set_feature(&o, "xattrs", true), ==, 0);
	check(o.with_set && o.with != 0);
	check_int(ca_image_make_set_feature(&o, "xattrs", false), ==, 0);
	check(o.without == o.with);
	check_int(ca_image_make_set_feature(&o, "no-such-feature", true), ==, -EINVAL);
	int r = ca_image_make_set_compression(&o, "default");
	check(r == 0 || r == -EOPNOTSUPP);
	check_int(ca_image_make_set_compression(&o, "no-such-codec"), ==, -EINVAL);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	uint8_t *big = malloc(BIG_SIZE);
	if (!big)
		abort();
	testdata_xorshift(big, BIG_SIZE, 7);
	int r = make_tree(big);
	check_int(r, ==, 0);
	if (r == 0) {
		test_roundtrip(big);
		test_cancel();
	}
	test_set_by_name();
	free(big);
	testdata_sh("rm -rf '%s'", tmpdir);
	return tap_done();
}
