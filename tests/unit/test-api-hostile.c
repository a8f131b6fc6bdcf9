/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-api-hostile.c - the public library against a careless or hostile
 * caller: NULL and empty required arguments, an options or stats struct
 * whose size member is garbage, and a callback that drops the caller's
 * last reference on the image while the call runs. Each is a negative
 * errno (or, for the callback, the call finishing normally), never a
 * crash: every case runs in a child so that a crash is one failed check.
 * The same calls with good arguments succeed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <cafs/cafs.h>

#include "tap.h"
#include "testsh.h"

static char dir[] = "/tmp/cafs-test-api-hostile.XXXXXX";
static struct cafs_ctx *ctx;

static char *p(const char *name)
{
	return testdata_path(dir, name);
}

/* fn's return in a child; a crash gives INT32_MIN */
static long in_child(long (*fn)(void))
{
	int fd[2];
	long r = -1;
	if (pipe(fd) < 0)
		return INT32_MIN;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		r = fn();
		_exit(write(fd[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(fd[1]);
	int st = 0;
	if (read(fd[0], &r, sizeof(r)) != sizeof(r))
		r = INT32_MIN;
	close(fd[0]);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? r : INT32_MIN;
}

static struct cafs_image *open_tree(void)
{
	struct cafs_image *img = NULL;
	if (cafs_image_open(ctx, p("t.caidx"), NULL, &img) < 0)
		return NULL;
	return img;
}

static int count_cb(void *userdata, const char *path, struct cafs_node *node, const uint8_t *digest)
{
	(void)path, (void)node, (void)digest;
	++*(int *)userdata;
	return 0;
}

static long open_null(void)
{
	struct cafs_image *img = NULL;
	return cafs_image_open(ctx, NULL, NULL, &img);
}

static long open_null_store(void)
{
	struct cafs_image *img = NULL;
	const char *stores[] = { NULL };
	struct cafs_image_options o = { .size = sizeof o, .stores = stores, .n_stores = 1 };
	return cafs_image_open(ctx, p("t.caidx"), &o, &img);
}

static long open_huge_size(void)
{
	struct cafs_image *img = NULL;
	struct cafs_image_options o = { .size = (size_t)1 << 40 };
	return cafs_image_open(ctx, p("t.caidx"), &o, &img);
}

static long lookup_null(void)
{
	struct cafs_node *n = NULL;
	return cafs_image_lookup(open_tree(), NULL, &n);
}

static long walk_null_fn(void)
{
	return cafs_image_walk(open_tree(), NULL, NULL, NULL);
}

static long readdir_null_fn(void)
{
	struct cafs_image *img = open_tree();
	struct cafs_node *root = NULL;
	if (cafs_image_lookup(img, "", &root) < 0)
		return 1;
	return cafs_image_readdir(img, root, NULL, NULL);
}

static long walk_huge_size(void)
{
	int n = 0;
	struct cafs_walk_options o = { .size = SIZE_MAX };
	return cafs_image_walk(open_tree(), &o, count_cb, &n);
}

static long stat_null(void)
{
	return cafs_store_stat(ctx, NULL, NULL);
}

static long stat_empty(void)
{
	return cafs_store_stat(ctx, "", NULL);
}

static long stat_huge_stats(void)
{
	struct cafs_store_stats s = { .size = (size_t)1 << 40 };
	return cafs_store_stat(ctx, p("default.castr"), &s);
}

static long verify_null(void)
{
	return cafs_store_verify(ctx, NULL, NULL, NULL);
}

static long verify_empty(void)
{
	return cafs_store_verify(ctx, "", NULL, NULL);
}

static long gc_null_list(void)
{
	return cafs_store_gc(ctx, NULL, 1, NULL, NULL);
}

static long gc_null_index(void)
{
	const char *idx[] = { NULL };
	return cafs_store_gc(ctx, idx, 1, NULL, NULL);
}

static long prune_empty(void)
{
	struct cafs_prune_options o = { .size = sizeof o, .min_age = -1 };
	return cafs_cache_prune(ctx, "", &o, NULL);
}

static long prune_null_keep(void)
{
	struct cafs_prune_options o = { .size = sizeof o, .n_keep = 2, .min_age = -1 };
	return cafs_cache_prune(ctx, p("cache"), &o, NULL);
}

static long make_null_out(void)
{
	return cafs_make(ctx, NULL, p("t"), NULL, NULL);
}

static long make_null_in(void)
{
	return cafs_make(ctx, p("x.caidx"), NULL, NULL, NULL);
}

static long extract_null(void)
{
	return cafs_image_extract(open_tree(), NULL, NULL);
}

/* the callback drops the caller's only reference at the first entry: the
 * walk goes on over every entry */
static int unref_cb(void *userdata, const char *path, struct cafs_node *node, const uint8_t *digest)
{
	(void)path, (void)node, (void)digest;
	struct cafs_image **img = userdata;
	*img = cafs_image_unref(*img);
	return 0;
}

static int n_walked;
static int unref_count_cb(void *userdata, const char *path, struct cafs_node *node, const uint8_t *digest)
{
	n_walked++;
	return unref_cb(userdata, path, node, digest);
}

static long walk_unref(void)
{
	struct cafs_image *img = open_tree();
	int r = cafs_image_walk(img, NULL, unref_count_cb, &img);
	return r < 0 ? r : n_walked;
}

static int unref_readdir_cb(void *userdata, struct cafs_node *child)
{
	(void)child;
	struct cafs_image **img = userdata;
	*img = cafs_image_unref(*img);
	n_walked++;
	return 0;
}

static long readdir_unref(void)
{
	struct cafs_image *img = open_tree();
	struct cafs_node *root = NULL;
	if (cafs_image_lookup(img, "", &root) < 0)
		return -1;
	int r = cafs_image_readdir(img, root, unref_readdir_cb, &img);
	cafs_node_unref(root);
	return r < 0 ? r : n_walked;
}

/* the callback keeps a node past the walk and the image: it still reads */
static int keep_cb(void *userdata, const char *path, struct cafs_node *node, const uint8_t *digest)
{
	(void)digest;
	if (!strcmp(path, "a"))
		*(struct cafs_node **)userdata = cafs_node_ref(node);
	return 0;
}

static long walk_keep(void)
{
	struct cafs_image *img = open_tree();
	struct cafs_node *kept = NULL;
	char buf[16] = { 0 };
	int r = cafs_image_walk(img, NULL, keep_cb, &kept);
	cafs_image_unref(img);
	if (r < 0 || !kept)
		return -1;
	ssize_t k = cafs_image_read(cafs_node_get_image(kept), kept, buf, sizeof(buf), 0);
	cafs_node_unref(kept);
	return k == 5 && !memcmp(buf, "hello", 5) ? 0 : -2;
}

/* the accepted cases */
static long walk_ok(void)
{
	int n = 0;
	struct cafs_walk_options o = { .size = sizeof o };
	struct cafs_image *img = open_tree();
	int r = cafs_image_walk(img, &o, count_cb, &n);
	cafs_image_unref(img);
	return r < 0 ? r : n;
}

/* a store served to others (0755 dirs, 0444 chunks, as casync makes it):
 * stat and verify leave its modes alone */
static long modes_kept(void)
{
	struct cafs_store_stats s = { .size = sizeof s };
	struct cafs_verify_stats v = { .size = sizeof v };
	struct cafs_verify_options vo = { .size = sizeof vo };
	if (testdata_sh("cd %s && mkdir -p shared.castr/0000 && chmod 0755 shared.castr shared.castr/0000 && "
	                "cp -r default.castr/. shared.castr/ && chmod -R go+rX shared.castr",
	                dir) != 0)
		return -1;
	int r = cafs_store_stat(ctx, p("shared.castr"), &s);
	if (r == 0)
		r = cafs_store_verify(ctx, p("shared.castr"), &vo, &v);
	if (r < 0)
		return r;
	if (!s.chunks || v.ok != s.chunks)
		return -2;
	/* every directory still 0755, every chunk still readable by others */
	return testdata_sh("cd %s && test -z \"$(find shared.castr -type d ! -perm 0755)\" && "
	                   "test -z \"$(find shared.castr -type f ! -perm -0044)\"",
	                   dir);
}

/* cancel from inside: verify stops at the first corrupt chunk it logs,
 * gc at the first chunk it removes; both say -ECANCELED */
static void cancel_on_log(void *userdata, int priority, const char *message)
{
	(void)priority, (void)message;
	cafs_ctx_cancel(userdata);
}

static void cancel_on_remove(void *userdata, const char *name)
{
	(void)name;
	cafs_ctx_cancel(userdata);
}

static long verify_cancel(void)
{
	struct cafs_verify_options vo = { .size = sizeof vo, .threads = 1 };
	struct cafs_verify_stats v = { .size = sizeof v };
	/* 100 chunk files, every one corrupt */
	if (testdata_sh("cd %s && mkdir -p bad.castr/0000 && for i in $(seq 10 109); do "
	                "echo junk >bad.castr/0000/0000$(printf %%060d $i).cacnk; done",
	                dir) != 0)
		return -1;
	cafs_ctx_set_log_fn(ctx, cancel_on_log, ctx);
	cafs_ctx_set_log_priority(ctx, LOG_ERR);
	int r = cafs_store_verify(ctx, p("bad.castr"), &vo, &v);
	return r == -ECANCELED ? 0 : r < 0 ? r : -2;
}

static long gc_cancel(void)
{
	struct cafs_gc_options go = { .size = sizeof go, .store = p("g.castr"), .removed = cancel_on_remove,
		                      .userdata = ctx };
	const char *keep[] = { p("t.caidx") };
	/* the tree's chunks and 100 others */
	if (testdata_sh("cd %s && cp -r default.castr g.castr && chmod -R u+w g.castr && mkdir -p g.castr/0000 && "
	                "for i in $(seq 10 109); do echo x >g.castr/0000/0000$(printf %%060d $i).cacnk; done",
	                dir) != 0)
		return -1;
	int r = cafs_store_gc(ctx, keep, 1, &go, NULL);
	if (r != -ECANCELED)
		return r < 0 ? r : -2;
	/* one removed, the rest left */
	return testdata_sh("test $(ls %s/0000 | wc -l) = 99", p("g.castr"));
}

static long stat_ok(void)
{
	struct cafs_store_stats s = { .size = sizeof s };
	int r = cafs_store_stat(ctx, p("default.castr"), &s);
	return r < 0 ? r : (long)s.chunks;
}

int main(void)
{
	check(mkdtemp(dir));
	check_int(testdata_sh("cd %s && mkdir -p t/d cache && printf hello >t/a && printf x >t/d/b && ln -s a t/l", dir),
	          ==, 0);
	check_int(cafs_ctx_new(&ctx), ==, 0);
	cafs_ctx_set_log_priority(ctx, LOG_CRIT); /* the refusals are expected */
	struct cafs_make_options mo = { .size = sizeof mo };
	check_int(cafs_make(ctx, p("t.caidx"), p("t"), &mo, NULL), ==, 0);

	check_int(in_child(walk_ok), ==, 5); /* "", a, d, d/b, l */
	check_int(in_child(stat_ok), >, 0);
	check_int(in_child(modes_kept), ==, 0);
	check_int(in_child(verify_cancel), ==, 0);
	check_int(in_child(gc_cancel), ==, 0);

	check_int(in_child(open_null), ==, -EINVAL);
	check_int(in_child(open_null_store), ==, -EINVAL);
	check_int(in_child(open_huge_size), ==, -E2BIG);
	check_int(in_child(lookup_null), ==, -EINVAL);
	check_int(in_child(walk_null_fn), ==, -EINVAL);
	check_int(in_child(readdir_null_fn), ==, -EINVAL);
	check_int(in_child(walk_huge_size), ==, -E2BIG);
	check_int(in_child(stat_null), ==, -EINVAL);
	check_int(in_child(stat_empty), ==, -EINVAL);
	check_int(in_child(stat_huge_stats), ==, -E2BIG);
	check_int(in_child(verify_null), ==, -EINVAL);
	check_int(in_child(verify_empty), ==, -EINVAL);
	check_int(in_child(gc_null_list), ==, -EINVAL);
	check_int(in_child(gc_null_index), ==, -EINVAL);
	check_int(in_child(prune_empty), ==, -EINVAL);
	check_int(in_child(prune_null_keep), ==, -EINVAL);
	check_int(in_child(make_null_out), ==, -EINVAL);
	check_int(in_child(make_null_in), ==, -EINVAL);
	check_int(testdata_sh("test ! -e %s", p("x.caidx")), ==, 0);
	check_int(in_child(extract_null), ==, -EINVAL);

	/* a callback that drops the caller's last reference */
	check_int(in_child(walk_unref), ==, 5);
	check_int(in_child(readdir_unref), ==, 3); /* a, d, l */
	check_int(in_child(walk_keep), ==, 0);

	cafs_ctx_unref(ctx);
	testdata_sh("rm -rf %s", dir);
	return tap_done();
}
