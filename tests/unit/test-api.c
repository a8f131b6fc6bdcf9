/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-api.c - libcafs's context as a caller sees it, through the public
 * headers and the shared library only: messages reach the log function
 * (also from threads the library starts), the priority filters them,
 * cancellation stops calls and can be undone, and an image opened
 * through the library reads back what was archived. The version macros
 * agree with the library; a node outlives the caller's reference on its
 * image (run under valgrind or ASan, that shows no use after free). A
 * walk hands over what `cafs list` prints.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <cafs/cafs.h>

#include "tap.h"
#include "testsh.h"

struct seen {
	pthread_mutex_t lock;
	int n, worst, n_other_thread;
	pthread_t main_thread;
	char last[512];
};

static void on_log(void *userdata, int priority, const char *message)
{
	struct seen *s = userdata;
	pthread_mutex_lock(&s->lock);
	s->n++;
	if (s->n == 1 || priority < s->worst)
		s->worst = priority;
	if (!pthread_equal(pthread_self(), s->main_thread))
		s->n_other_thread++;
	snprintf(s->last, sizeof(s->last), "%s", message);
	pthread_mutex_unlock(&s->lock);
}

struct kept {
	int n;
	struct cafs_node *last; /* a reference */
};

static int keep_child(void *userdata, struct cafs_node *child)
{
	struct kept *k = userdata;
	k->n++;
	cafs_node_unref(k->last);
	k->last = cafs_node_ref(child);
	return 0;
}

static int count_child(void *userdata, struct cafs_node *child)
{
	struct kept *k = userdata;
	(void)child;
	k->n++;
	return 0;
}

/* casync list's mode column (the kinds the test tree has) */
static void mode_string(mode_t m, char out[11])
{
	out[0] = S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : '-';
	for (int i = 0; i < 9; i++)
		out[1 + i] = m & (0400 >> i) ? "rwxrwxrwx"[i] : '-';
	out[10] = 0;
}

/* what cafs_image_walk hands over, printed as `cafs list` (and the digest
 * of each regular file, when asked, after it) */
struct listing {
	char buf[4096];
	size_t len;
	int n, stop_at;
	struct cafs_node *last; /* a reference */
};

static int list_entry(void *userdata, const char *path, struct cafs_node *node, const uint8_t *digest)
{
	struct listing *l = userdata;
	struct stat st;
	char mode[11];
	cafs_node_get_stat(node, &st);
	mode_string(st.st_mode, mode);
	l->len += (size_t)snprintf(l->buf + l->len, sizeof(l->buf) - l->len, "%s %s", mode, *path ? path : ".");
	for (int i = 0; digest && i < CAFS_DIGEST_SIZE; i++)
		l->len += (size_t)snprintf(l->buf + l->len, sizeof(l->buf) - l->len, "%s%02x", i ? "" : " ", digest[i]);
	l->len += (size_t)snprintf(l->buf + l->len, sizeof(l->buf) - l->len, "\n");
	cafs_node_unref(l->last);
	l->last = cafs_node_ref(node);
	return ++l->n == l->stop_at ? 42 : 0;
}

/* the output of a cafs command line (its stdout, at most 4 KiB) */
static const char *command_output(const char *dir, const char *cmd)
{
	static char out[4096];
	size_t n = 0;
	char *file = testdata_path(dir, "cmd.out");
	FILE *f = NULL;
	if (testdata_sh("%s >%s", cmd, file) == 0 && (f = fopen(file, "r")))
		n = fread(out, 1, sizeof(out) - 1, f);
	if (f)
		fclose(f);
	out[n] = 0;
	return out;
}

int main(void)
{
	struct seen s = { .lock = PTHREAD_MUTEX_INITIALIZER, .main_thread = pthread_self() };
	struct cafs_ctx *ctx = NULL;
	struct cafs_image *img = NULL;
	struct cafs_node *n = NULL;
	const char *cafs = getenv("CAFS");
	char dir[] = "/tmp/cafs-test-api.XXXXXX", path[256];

	check(cafs && mkdtemp(dir));
	check_int(testdata_sh("mkdir -p %s/t/d && printf hello >%s/t/d/f && ln -s f %s/t/d/l && "
	                      "setfattr -n user.cafs -v yes %s/t/d/f && %s make -q %s/x.caidx %s/t >/dev/null",
	                      dir, dir, dir, dir, cafs, dir, dir),
	          ==, 0);

	check_int(cafs_ctx_new(&ctx), ==, 0);
	check_int(cafs_ctx_get_log_priority(ctx), ==, LOG_ERR);

	/* the headers' version is the library's (built together here) */
	{
		char v[64];
		snprintf(v, sizeof(v), "%d.%d.%d", CAFS_VERSION_MAJOR, CAFS_VERSION_MINOR, CAFS_VERSION_MICRO);
		check_str(cafs_version(), v);
		check_int(cafs_version_number(), ==, CAFS_VERSION_NUMBER);
		check_int(CAFS_VERSION_NUMBER, ==,
		          CAFS_VERSION_MAJOR * 10000 + CAFS_VERSION_MINOR * 100 + CAFS_VERSION_MICRO);
		check(CAFS_VERSION_CHECK(CAFS_VERSION_MAJOR, CAFS_VERSION_MINOR, CAFS_VERSION_MICRO));
		check(CAFS_VERSION_CHECK(0, 0, 0));
		check(!CAFS_VERSION_CHECK(CAFS_VERSION_MAJOR, CAFS_VERSION_MINOR, CAFS_VERSION_MICRO + 1));
		check(!CAFS_VERSION_CHECK(CAFS_VERSION_MAJOR, CAFS_VERSION_MINOR + 1, 0));
		check(!CAFS_VERSION_CHECK(CAFS_VERSION_MAJOR + 1, 0, 0));
	}
	cafs_ctx_set_log_fn(ctx, on_log, &s);

	/* an error: one message, through the function, at LOG_ERR */
	snprintf(path, sizeof(path), "%s/missing.caidx", dir);
	check_int(cafs_image_open(ctx, path, NULL, &img), ==, -ENOENT);
	check_int(s.n, ==, 1);
	check_int(s.worst, ==, LOG_ERR);
	check(strstr(s.last, "missing.caidx") != NULL);

	/* below the priority: dropped */
	cafs_ctx_set_log_priority(ctx, LOG_CRIT);
	check_int(cafs_image_open(ctx, path, NULL, &img), ==, -ENOENT);
	check_int(s.n, ==, 1);

	/* what the library's own HTTP thread says (at debug level) reaches us */
	cafs_ctx_set_log_priority(ctx, LOG_DEBUG);
	setenv("CAFS_HTTP_RETRIES", "0", 1);
	s.n = 0;
	check(cafs_image_open(ctx, "http://127.0.0.1:1/x.caidx", NULL, &img) < 0);
	check(s.n >= 2);
	check_int(s.n_other_thread, >=, 1);
	check_int(s.worst, ==, LOG_ERR);

	/* cancelled: every call says so at once; undone, they work */
	snprintf(path, sizeof(path), "%s/x.caidx", dir);
	cafs_ctx_cancel(ctx);
	check_int(cafs_image_open(ctx, path, NULL, &img), ==, -ECANCELED);
	cafs_ctx_uncancel(ctx);
	check_int(cafs_image_open(ctx, path, NULL, &img), ==, 0);
	check_int(cafs_image_get_kind(img), ==, CAFS_IMAGE_ARCHIVE_INDEX);
	check_int(cafs_image_lookup(img, "d/f", &n), ==, 0);
	if (n) {
		char buf[16] = { 0 };
		struct stat st;
		cafs_node_get_stat(n, &st);
		check(S_ISREG(st.st_mode) && st.st_size == 5);
		check_str(cafs_node_get_name(n), "f");
		cafs_ctx_cancel(ctx);
		check_int(cafs_image_read(img, n, buf, sizeof(buf), 0), ==, -ECANCELED);
		cafs_ctx_uncancel(ctx);
		check_int(cafs_image_read(img, n, buf, sizeof(buf), 0), ==, 5);
		check_str(buf, "hello");
		check_int(cafs_node_readlink(n, buf, sizeof(buf)), ==, -EINVAL);
		check_int(cafs_node_getxattr(n, "user.none", buf, sizeof(buf)), ==, -ENODATA);
		n = cafs_node_unref(n);
	}
	check_int(cafs_image_lookup(img, "d/nope", &n), ==, -ENOENT);
	check_int(cafs_image_lookup(img, "d/f/x", &n), ==, -ENOTDIR);

	/* a walk hands over what `cafs list` prints, entry for entry, and
	 * the contents' digest `cafs digest IN PATH` prints */
	{
		struct listing l = { 0 };
		struct cafs_walk_options wo = { .size = sizeof wo };
		char cmd[1024];
		check_int(cafs_image_walk(img, NULL, list_entry, &l), ==, 0);
		snprintf(cmd, sizeof(cmd), "%s list %s", cafs, path);
		check_str(l.buf, command_output(dir, cmd));
		check_int(l.n, ==, 4);
		cafs_node_unref(l.last);
		memset(&l, 0, sizeof(l));
		wo.path = "d/";
		check_int(cafs_image_walk(img, &wo, list_entry, &l), ==, 0);
		snprintf(cmd, sizeof(cmd), "%s list %s d/", cafs, path);
		check_str(l.buf, command_output(dir, cmd));
		check_int(l.n, ==, 3);
		cafs_node_unref(l.last);
		memset(&l, 0, sizeof(l));
		wo.path = NULL;
		wo.flat = true;
		check_int(cafs_image_walk(img, &wo, list_entry, &l), ==, 0);
		snprintf(cmd, sizeof(cmd), "%s list --recursive=no %s", cafs, path);
		check_str(l.buf, command_output(dir, cmd));
		check_int(l.n, ==, 2);
		cafs_node_unref(l.last);
		memset(&l, 0, sizeof(l));
		wo.path = "d/f";
		wo.digests = true;
		check_int(cafs_image_walk(img, &wo, list_entry, &l), ==, 0);
		snprintf(cmd, sizeof(cmd), "printf '%%s %%s\\n' \"$(%s list %s d/f)\" \"$(%s digest %s d/f)\"", cafs, path,
		         cafs, path);
		check_str(l.buf, command_output(dir, cmd));
		check_int(l.n, ==, 1);
		/* the node handed over is kept past the walk */
		check_str(l.last ? cafs_node_get_name(l.last) : "", "f");
		l.last = cafs_node_unref(l.last);
		/* fn's non-zero return stops the walk and is returned */
		cafs_node_unref(l.last);
		memset(&l, 0, sizeof(l));
		l.stop_at = 2;
		check_int(cafs_image_walk(img, NULL, list_entry, &l), ==, 42);
		check_int(l.n, ==, 2);
		l.last = cafs_node_unref(l.last);
		/* a path not in the archive, and an options struct too small */
		wo.path = "d/nope";
		check_int(cafs_image_walk(img, &wo, list_entry, &l), ==, -ENOENT);
		wo.path = "d/f/x";
		check_int(cafs_image_walk(img, &wo, list_entry, &l), ==, -ENOTDIR);
		wo.size = 4;
		check_int(cafs_image_walk(img, &wo, list_entry, &l), ==, -EINVAL);
		check_int(l.n, ==, 2);
		cafs_ctx_cancel(ctx);
		check_int(cafs_image_walk(img, NULL, list_entry, &l), ==, -ECANCELED);
		cafs_ctx_uncancel(ctx);
		cafs_node_unref(l.last);
	}

	/* nodes outlive the caller's image: each holds a reference on it */
	{
		struct cafs_image *im = NULL;
		struct cafs_node *f = NULL, *l = NULL, *d = NULL;
		struct kept kept = { 0 };
		char buf[16] = { 0 };
		check_int(cafs_image_open(ctx, path, NULL, &im), ==, 0);
		check(cafs_image_ref(im) == im);
		check(cafs_image_unref(im) == NULL); /* one of two: im lives on */
		check(cafs_image_ref(NULL) == NULL && cafs_image_unref(NULL) == NULL);
		check_int(im ? cafs_image_lookup(im, "d/f", &f) : -1, ==, 0);
		check_int(im ? cafs_image_lookup(im, "d/l", &l) : -1, ==, 0);
		check_int(im ? cafs_image_lookup(im, "d", &d) : -1, ==, 0);
		check(f && cafs_node_get_image(f) == im);
		/* a readdir child kept past the walk, and past the image */
		check_int(im && d ? cafs_image_readdir(im, d, keep_child, &kept) : -1, ==, 0);
		check_int(kept.n, ==, 2);
		im = cafs_image_unref(im); /* the caller's last reference */
		if (f && l && d && kept.last) {
			struct cafs_image *of = cafs_node_get_image(f);
			check_int(cafs_image_read(of, f, buf, sizeof(buf), 0), ==, 5);
			check_str(buf, "hello");
			check_int(cafs_node_readlink(l, buf, sizeof(buf)), ==, 1);
			check(buf[0] == 'f');
			memset(buf, 0, sizeof(buf));
			check_int(cafs_node_getxattr(f, "user.cafs", buf, sizeof(buf)), ==, 3);
			check_str(buf, "yes");
			check_int(cafs_node_listxattr(f, buf, sizeof(buf)), ==, (int)sizeof("user.cafs"));
			check_str(cafs_node_get_name(kept.last), "l");
			check_int(cafs_node_readlink(kept.last, buf, sizeof(buf)), ==, 1);
			kept.n = 0;
			check_int(cafs_image_readdir(of, d, count_child, &kept), ==, 0);
			check_int(kept.n, ==, 2);
			/* a node of another image is refused, not misread */
			check_int(cafs_image_read(img, f, buf, sizeof(buf), 0), ==, -EINVAL);
			check_int(cafs_image_readdir(img, d, count_child, &kept), ==, -EINVAL);
		}
		/* the nodes go in any order; the last frees the image */
		cafs_node_unref(d);
		cafs_node_unref(kept.last);
		cafs_node_unref(f);
		cafs_node_unref(l);
	}

	/* whole images: make one, extract it, fill a cache and read offline */
	{
		char out[256], in[256], dest[256], cache[256], store[256];
		uint8_t d1[CAFS_DIGEST_SIZE], d2[CAFS_DIGEST_SIZE];
		struct cafs_make_options mo = { .size = sizeof mo, .chunk_size_avg = 4096 };
		struct cafs_image *im2 = NULL;
		struct cafs_node *f = NULL;
		char buf[16] = { 0 };
		snprintf(in, sizeof(in), "%s/t", dir);
		snprintf(out, sizeof(out), "%s/y.caidx", dir);
		snprintf(store, sizeof(store), "%s/default.castr", dir);
		cafs_ctx_cancel(ctx);
		check_int(cafs_make(ctx, out, in, &mo, d1), ==, -ECANCELED);
		check(access(out, F_OK) != 0);
		cafs_ctx_uncancel(ctx);
		check_int(cafs_make(ctx, out, in, &mo, d1), ==, 0);
		check_int(testdata_sh("%s make -q --chunk-size 4096 %s/z.caidx %s >%s/z.digest", cafs, dir, in, dir), ==, 0);
		check_int(testdata_sh("cmp -s %s %s/z.caidx", out, dir), ==, 0); /* the same index as the command's */
		check_int(cafs_make(ctx, out, in, NULL, d2), ==, 0);
		/* options carry their size: too small to hold it, a longer struct
		 * from a newer program with a member in use, one with a zero tail */
		{
			struct {
				struct cafs_make_options o;
				uint64_t newer;
			} big = { { .size = sizeof big, .chunk_size_avg = 4096 }, 1 };
			struct cafs_make_options tiny = { .size = 4 };
			check_int(cafs_make(ctx, out, in, &tiny, d2), ==, -EINVAL);
			check_int(cafs_make(ctx, out, in, &big.o, d2), ==, -E2BIG);
			big.newer = 0;
			check_int(cafs_make(ctx, out, in, &big.o, d2), ==, 0);
			check_int(testdata_sh("cmp -s %s %s/z.caidx", out, dir), ==, 0);
		}
		check(memcmp(d1, d2, sizeof(d1)) == 0); /* the stream digest does not depend on chunking */

		const char *stores[] = { store };
		struct cafs_image_options io = { .size = sizeof io, .stores = stores, .n_stores = 1, .cache_mode = CAFS_CACHE_DIR,
			                         .cache_dir = cache };
		snprintf(cache, sizeof(cache), "%s/cache", dir);
		check_int(cafs_image_open(ctx, out, &io, &im2), ==, 0);
		snprintf(dest, sizeof(dest), "%s/x", dir);
		check_int(im2 ? cafs_image_extract(im2, dest, NULL) : -1, ==, 0);
		check_int(testdata_sh("diff -r %s %s", in, dest), ==, 0);
		check_int(im2 ? cafs_image_fill_cache(im2, NULL) : -1, ==, 0);
		im2 = cafs_image_unref(im2);
		/* the store gone, offline: everything comes from the cache */
		check_int(testdata_sh("mv %s %s.away", store, store), ==, 0);
		io.n_stores = 0;
		io.offline = true;
		check_int(cafs_image_open(ctx, out, &io, &im2), ==, 0);
		check_int(im2 ? cafs_image_lookup(im2, "d/f", &f) : -1, ==, 0);
		check_int(f ? cafs_image_read(im2, f, buf, sizeof(buf), 0) : -1, ==, 5);
		cafs_node_unref(f);
		cafs_image_free(im2);
		im2 = NULL;
		/* and without the cache either: a chunk error, not a missing name */
		io.cache_mode = CAFS_CACHE_NONE;
		io.offline = false;
		io.stores = stores;
		io.n_stores = 1;
		check_int(cafs_image_open(ctx, out, &io, &im2), ==, CAFS_ECHUNKMISSING);
		cafs_image_free(im2);
	}

	/* trusted keys: a context with one opens only indexes its key signed
	 * (minisign made the keys and the signature), refusing before any
	 * chunk is read; a context without is unchanged */
	if (testdata_have("minisign")) {
		struct cafs_ctx *tctx = NULL;
		struct cafs_image *ti = NULL;
		char pub[256], other[256], away[256];
		const char *away_stores[] = { away };
		struct cafs_image_options to = { .size = sizeof to, .stores = away_stores, .n_stores = 1 };
		snprintf(away, sizeof(away), "%s/default.castr.away", dir); /* moved there above */
		snprintf(pub, sizeof(pub), "%s/k.pub", dir);
		snprintf(other, sizeof(other), "%s/o.pub", dir);
		setenv("CAFS_TRUSTED_KEYS_DIR", dir, 1); /* holds no *.pub yet: none trusted */
		check_int(testdata_sh("cd %s && minisign -G -W -p k.pub0 -s k.sec >/dev/null && "
		                      "minisign -G -W -p o.pub0 -s o.sec >/dev/null && mv k.pub0 k.pub && mv o.pub0 o.pub && "
		                      "cp x.caidx s.caidx && minisign -S -s k.sec -m s.caidx >/dev/null",
		                      dir),
		          ==, 0);
		/* the keys in dir would be trusted by every context: move them out of its view */
		check_int(testdata_sh("mkdir %s/keys && mv %s %s %s/keys/", dir, pub, other, dir), ==, 0);
		snprintf(pub, sizeof(pub), "%s/keys/k.pub", dir);
		snprintf(other, sizeof(other), "%s/keys/o.pub", dir);
		check_int(cafs_ctx_new(&tctx), ==, 0);
		cafs_ctx_set_log_priority(tctx, LOG_CRIT);
		snprintf(path, sizeof(path), "%s/x.caidx", dir);
		check_int(cafs_ctx_add_trusted_key(tctx, path), ==, -EBADMSG); /* not a key */
		snprintf(path, sizeof(path), "%s/keys/none.pub", dir);
		check_int(cafs_ctx_add_trusted_key(tctx, path), ==, -ENOENT);
		check_int(cafs_ctx_add_trusted_key(tctx, other), ==, 0);
		snprintf(path, sizeof(path), "%s/s.caidx", dir);
		check_int(cafs_image_open(tctx, path, NULL, &ti), ==, CAFS_EUNTRUSTED); /* another key's signature */
		check_int(cafs_ctx_add_trusted_key(tctx, pub), ==, 0);
		check_int(cafs_image_open(tctx, path, &to, &ti), ==, 0); /* one of the two keys matches */
		cafs_image_free(ti);
		ti = NULL;
		snprintf(path, sizeof(path), "%s/x.caidx", dir);
		check_int(cafs_image_open(tctx, path, &to, &ti), ==, CAFS_EUNTRUSTED); /* unsigned */
		check_int(cafs_image_open(ctx, path, &to, &ti), ==, 0); /* no keys: as before */
		cafs_image_free(ti);
		cafs_ctx_unref(tctx);
		unsetenv("CAFS_TRUSTED_KEYS_DIR");
	}

	/* the image holds its own reference: the caller's may go first */
	ctx = cafs_ctx_unref(ctx);
	check(ctx == NULL);
	cafs_image_free(img);
	testdata_sh("rm -rf %s", dir);
	return tap_done();
}
