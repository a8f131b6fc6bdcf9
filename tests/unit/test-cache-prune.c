/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-cache-prune.c - the cache policies of core, called directly: the
 * prune planner (mtime order, --keep pins, min-age, fitting a size, stale
 * temporary files, dry run = plan alone), store verification (corrupt and
 * bare chunks, repair), gc (keep set, dry run, emptied directories) and
 * cache fill (plan, run, shared chunks, cancel).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/cache_fill.h"
#include "store/cache_prune.h"
#include "store/chunksrc.h"
#include "chunk/compress.h"
#include "base/digest.h"
#include "base/log.h"
#include "format/idset.h"
#include "format/index.h"
#include "store/store.h"
#include "store/store_gc.h"
#include "store/store_verify.h"
#include "tap.h"
#include "testdata.h"

static char tmpdir[] = "/tmp/cafs-test-cache-prune.XXXXXX";

#define N 6

struct chunk {
	uint8_t *data;
	size_t size;
	uint8_t id[CA_CHUNK_ID_SIZE];
	uint64_t file_size; /* compressed, as stored */
};

static struct chunk chunks[N];

static void chunks_make(void)
{
	struct ca_digest *d = NULL;
	if (ca_digest_new(CA_DIGEST_SHA512_256, &d) < 0)
		abort();
	for (unsigned i = 0; i < N; i++) {
		struct chunk *c = &chunks[i];
		/* distinct sizes, so a wrong victim shows in the byte counts */
		c->size = 20000 + i * 3001;
		c->data = malloc(c->size);
		if (!c->data)
			abort();
		testdata_xorshift(c->data, c->size, 100 + i);
		ca_digest_once(d, c->data, c->size, c->id);
	}
	ca_digest_free(d);
}

static const char *path_of(const char *store, const uint8_t *id, bool bare)
{
	char rel[CA_STORE_REL_PATH_LEN + 1];
	static char p[4096];
	ca_store_rel_path(id, rel);
	if (bare)
		rel[CA_STORE_REL_PATH_LEN - 6] = 0;
	snprintf(p, sizeof(p), "%s/%s", store, rel);
	return p;
}

static void set_mtime(const char *path, time_t t)
{
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };
	if (utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW) < 0)
		abort();
}

/* A fresh store at dir holding all chunks, chunk i used at time 1000 * (i + 1). */
static struct ca_store *store_make(const char *dir)
{
	struct ca_store *s = NULL;
	struct ca_codec *codec = NULL;
	struct ca_buf z = CA_BUF_INIT;
	testdata_sh("rm -rf '%s'", dir);
	if (ca_store_open(dir, &s) < 0 || ca_codec_new(CA_DIGEST_SHA512_256, &codec) < 0)
		abort();
	for (unsigned i = 0; i < N; i++) {
		struct stat st;
		if (ca_codec_compress(codec, chunks[i].data, chunks[i].size, &z) < 0 ||
		    ca_store_put_raw(s, chunks[i].id, z.data, z.size) != 1)
			abort();
		const char *p = path_of(dir, chunks[i].id, false);
		set_mtime(p, 1000 * (time_t)(i + 1));
		if (stat(p, &st) < 0)
			abort();
		chunks[i].file_size = (uint64_t)st.st_size;
	}
	ca_buf_release(&z);
	ca_codec_free(codec);
	return s;
}

static uint64_t total_size(void)
{
	uint64_t t = 0;
	for (unsigned i = 0; i < N; i++)
		t += chunks[i].file_size;
	return t;
}

/* the plan's victims are exactly chunks want[0..n) in that order */
static bool victims_are(const struct ca_cache_prune_plan *p, const unsigned *want, size_t n)
{
	if (ca_cache_prune_plan_n_victims(p) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		uint64_t size;
		const uint8_t *id = ca_cache_prune_plan_victim(p, i, &size);
		if (memcmp(id, chunks[want[i]].id, CA_CHUNK_ID_SIZE) || size != chunks[want[i]].file_size)
			return false;
	}
	return true;
}

static void test_prune(void)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/prune", tmpdir);
	struct ca_store *s = store_make(dir);
	struct ca_cache_prune_plan *p = NULL;
	struct ca_cache_prune_stats st;
	struct ca_idset *keep = NULL;
	uint64_t total = total_size();
	struct ca_cache_prune_opts o = { .now = 100000, .min_age = 0 };

	/* fits already: nothing to do */
	o.max_size = total;
	check_int(ca_cache_prune_plan(s, &o, &p), ==, 0);
	ca_cache_prune_plan_stats(p, &st);
	check_u64(st.chunks, ==, N);
	check_u64(st.bytes, ==, total);
	check_int(ca_cache_prune_plan_n_victims(p), ==, 0);
	ca_cache_prune_plan_free(p);

	/* oldest first, just enough to fit: one byte less than all but the two oldest */
	o.max_size = total - chunks[0].file_size - chunks[1].file_size;
	check_int(ca_cache_prune_plan(s, &o, &p), ==, 0);
	check(victims_are(p, (unsigned[]){ 0, 1 }, 2));
	o.max_size--;
	ca_cache_prune_plan_free(p);
	check_int(ca_cache_prune_plan(s, &o, &p), ==, 0);
	check(victims_are(p, (unsigned[]){ 0, 1, 2 }, 3));
	ca_cache_prune_plan_stats(p, &st);
	check_u64(st.victims, ==, 3);
	check_u64(st.left_chunks, ==, N - 3);
	check_u64(st.left_bytes, ==, total - chunks[0].file_size - chunks[1].file_size - chunks[2].file_size);
	ca_cache_prune_plan_free(p);

	/* the order is by mtime, not by name: make chunk 4 the oldest */
	set_mtime(path_of(dir, chunks[4].id, false), 10);
	o.max_size = total - chunks[4].file_size;
	check_int(ca_cache_prune_plan(s, &o, &p), ==, 0);
	check(victims_are(p, (unsigned[]){ 4 }, 1));
	ca_cache_prune_plan_free(p);
	set_mtime(path_of(dir, chunks[4].id, false), 5000);

	/* pinned chunks stay though oldest; the next ones go instead */
	check_int(ca_idset_new(4, &keep), ==, 0);
	check_int(ca_idset_add(keep, chunks[0].id, 0), ==, 1);
	o.keep = keep;
	o.max_size = total - chunks[1].file_size - chunks[2].file_size;
	check_int(ca_cache_prune_plan(s, &o, &p), ==, 0);
	check(victims_are(p, (unsigned[]){ 1, 2 }, 2));
	ca_cache_prune_plan_free(p);

	/* min-age: at 10000 with 7500 s, chunks used after 2500 (2..5) are spared;
	 * max 0 cannot be reached, and the stats say so */
	o.max_size = 0;
	o.now = 10000;
	o.min_age = 7500;
	check_int(ca_cache_prune_plan(s, &o, &p), ==, 0);
	check(victims_are(p, (unsigned[]){ 1 }, 1)); /* 0 is pinned */
	ca_cache_prune_plan_stats(p, &st);
	check(st.left_bytes > o.max_size);
	ca_cache_prune_plan_free(p);
	o.keep = NULL;
	o.now = 100000;
	o.min_age = 0;

	/* temporary files: not chunks; a stale one (over an hour old) is cleared */
	char stale[4096], fresh[4096];
	snprintf(stale, sizeof(stale), "%.*s.0123456789abcdef.tmp", (int)strlen(path_of(dir, chunks[3].id, true)),
	         path_of(dir, chunks[3].id, true));
	snprintf(fresh, sizeof(fresh), "%.*s.fedcba9876543210.tmp", (int)strlen(path_of(dir, chunks[3].id, true)),
	         path_of(dir, chunks[3].id, true));
	check_int(testdata_sh("echo x > '%s' && echo y > '%s'", stale, fresh), ==, 0);
	set_mtime(stale, o.now - CA_CACHE_PRUNE_STALE_TMP_SECONDS - 1);
	set_mtime(fresh, o.now - 10);

	/* a plan alone (dry run) changes nothing */
	o.max_size = total - chunks[0].file_size - chunks[1].file_size;
	check_int(ca_cache_prune_plan(s, &o, &p), ==, 0);
	ca_cache_prune_plan_stats(p, &st);
	check_u64(st.chunks, ==, N);
	check_u64(st.stale_tmp, ==, 1);
	check_int(access(stale, F_OK), ==, 0);
	check_int(ca_store_has(s, chunks[0].id), ==, 1);

	/* apply: the victims and the stale file go, the rest stays */
	check_int(ca_cache_prune_apply(p), ==, 0);
	check_int(ca_cache_prune_apply(p), ==, -EALREADY);
	ca_cache_prune_plan_stats(p, &st);
	check_u64(st.victims, ==, 2);
	check_u64(st.left_bytes, ==, o.max_size);
	check_u64(st.stale_tmp, ==, 1);
	check_int(ca_store_has(s, chunks[0].id), ==, 0);
	check_int(ca_store_has(s, chunks[1].id), ==, 0);
	check_int(ca_store_has(s, chunks[2].id), ==, 1);
	check_int(access(stale, F_OK), ==, -1);
	check_int(access(fresh, F_OK), ==, 0);
	ca_cache_prune_plan_free(p);
	ca_cache_prune_plan_free(NULL);

	/* a store that does not exist yet is an empty cache */
	struct ca_store *none = NULL;
	char nodir[4096];
	snprintf(nodir, sizeof(nodir), "%s/none", tmpdir);
	check_int(ca_store_open(nodir, &none), ==, 0);
	check_int(ca_cache_prune_plan(none, &o, &p), ==, 0);
	ca_cache_prune_plan_stats(p, &st);
	check_u64(st.chunks, ==, 0);
	ca_cache_prune_plan_free(p);
	ca_store_free(none);

	ca_idset_free(keep);
	ca_store_free(s);
}

struct bad_seen {
	unsigned n, corrupt, removed;
	uint8_t last[CA_CHUNK_ID_SIZE];
};

/* called from the pool's threads: the test runs it with threads = 1 */
static void on_bad(void *userdata, const uint8_t id[CA_CHUNK_ID_SIZE], int err, bool removed)
{
	struct bad_seen *b = userdata;
	b->n++;
	b->corrupt += err == -EBADMSG;
	b->removed += removed;
	memcpy(b->last, id, CA_CHUNK_ID_SIZE);
}

static void test_verify(void)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/verify", tmpdir);
	struct ca_store *s = store_make(dir);
	struct ca_store_verify_stats st;
	struct bad_seen b = { 0 };
	struct ca_store_verify_opts o = { .threads = 1, .any_digest = true, .on_bad = on_bad, .userdata = &b };

	check_int(ca_store_verify(s, &o, &st), ==, 0);
	check_u64(st.ok, ==, N);
	check_u64(st.corrupt + st.errors, ==, 0);
	check_int(b.n, ==, 0);

	/* chunk 1 holds chunk 2's (valid) bytes; a bare copy of chunk 3 is good, a bare chunk 4 is not */
	struct ca_buf two = CA_BUF_INIT;
	check_int(testdata_read_file(path_of(dir, chunks[2].id, false), &two), ==, 0);
	check_int(unlink(path_of(dir, chunks[1].id, false)), ==, 0);
	FILE *f = fopen(path_of(dir, chunks[1].id, false), "w");
	check(f && fwrite(two.data, 1, two.size, f) == two.size);
	if (f)
		fclose(f);
	ca_buf_release(&two);
	check_int(ca_store_remove(s, chunks[3].id), ==, 0);
	f = fopen(path_of(dir, chunks[3].id, true), "w");
	check(f && fwrite(chunks[3].data, 1, chunks[3].size, f) == chunks[3].size);
	if (f)
		fclose(f);
	check_int(ca_store_remove(s, chunks[4].id), ==, 0);
	f = fopen(path_of(dir, chunks[4].id, true), "w");
	check(f && fwrite(chunks[4].data, 1, chunks[4].size - 1, f) == chunks[4].size - 1);
	if (f)
		fclose(f);

	o.threads = 0; /* one per CPU: the counts must not depend on it */
	o.on_bad = NULL;
	check_int(ca_store_verify(s, &o, &st), ==, 0);
	check_u64(st.ok, ==, N - 2);
	check_u64(st.corrupt, ==, 2);
	check_u64(st.removed, ==, 0);
	check_int(ca_store_has(s, chunks[1].id), ==, 1); /* found, not removed */

	/* one digest only: SHA-256 ids none of these have */
	o.any_digest = false;
	o.digest = CA_DIGEST_SHA256;
	check_int(ca_store_verify(s, &o, &st), ==, 0);
	check_u64(st.ok, ==, 0);
	check_u64(st.corrupt, ==, N);
	o.any_digest = true;

	/* repair removes exactly the corrupt ones */
	o.threads = 1;
	o.on_bad = on_bad;
	o.repair = true;
	check_int(ca_store_verify(s, &o, &st), ==, 0);
	check_u64(st.corrupt, ==, 2);
	check_u64(st.removed, ==, 2);
	check_int(b.n, ==, 2);
	check_int(b.corrupt, ==, 2);
	check_int(b.removed, ==, 2);
	check_int(ca_store_has(s, chunks[1].id), ==, 0);
	check_int(ca_store_has(s, chunks[4].id), ==, 0);
	check_int(ca_store_has(s, chunks[3].id), ==, 1);
	check_int(ca_store_verify(s, &o, &st), ==, 0);
	check_u64(st.ok, ==, N - 2);
	check_u64(st.corrupt, ==, 0);
	ca_store_free(s);
}

static void on_gc(void *userdata, const char *rel, int err)
{
	unsigned *n = userdata;
	(*n)++;
	if (err != 0 || strlen(rel) != CA_STORE_REL_PATH_LEN)
		(*n) += 1000;
}

static void test_gc(void)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/gc", tmpdir);
	struct ca_store *s = store_make(dir);
	struct ca_idset *keep = NULL;
	struct ca_store_gc_stats st;
	unsigned seen = 0;
	struct ca_store_gc_opts o = { .dry_run = true, .on_chunk = on_gc, .userdata = &seen };
	check_int(ca_idset_new(4, &keep), ==, 0);
	for (unsigned i = 0; i < 3; i++)
		check_int(ca_idset_add(keep, chunks[i].id, 0), ==, 1);
	o.keep = keep;
	/* a bare chunk is not gc's business */
	FILE *f = fopen(path_of(dir, chunks[0].id, true), "w");
	check(f != NULL);
	if (f)
		fclose(f);

	check_int(ca_store_gc(s, &o, &st), ==, 0);
	check_u64(st.kept, ==, 3);
	check_u64(st.removed, ==, N - 3);
	check_u64(st.removed_bytes, ==, chunks[3].file_size + chunks[4].file_size + chunks[5].file_size);
	check_u64(st.dirs, ==, 0);
	check_int(seen, ==, N - 3);
	check_int(ca_store_has(s, chunks[5].id), ==, 1); /* dry run */

	o.dry_run = false;
	check_int(ca_store_gc(s, &o, &st), ==, 0);
	check_u64(st.removed, ==, N - 3);
	check_u64(st.failed, ==, 0);
	for (unsigned i = 0; i < N; i++)
		check_int(ca_store_has(s, chunks[i].id), ==, i < 3);
	/* each removed chunk had a prefix of its own (random ids): all emptied */
	char prefix[4096];
	snprintf(prefix, sizeof(prefix), "%s", path_of(dir, chunks[5].id, true));
	*strrchr(prefix, '/') = 0;
	check_int(access(prefix, F_OK), ==, -1);
	check_int(access(path_of(dir, chunks[0].id, true), F_OK), ==, 0);
	ca_idset_free(keep);
	ca_store_free(s);
}

/* the lines a fill logs (from its workers, which log where their creator does) */
struct fill_errs {
	unsigned n, enoent;
};

static void on_fill_log(void *userdata, enum ca_log_level level, const char *line)
{
	struct fill_errs *e = userdata;
	if (level != CA_LOG_ERROR)
		return;
	__atomic_fetch_add(&e->n, 1, __ATOMIC_RELAXED);
	if (strstr(line, "b.caibx: chunk ") == line && strstr(line, ": not found in any store"))
		__atomic_fetch_add(&e->enoent, 1, __ATOMIC_RELAXED);
}

static void progress(void *userdata, uint64_t done)
{
	uint64_t *max = userdata;
	/* workers report in any order: keep the largest */
	uint64_t cur = __atomic_load_n(max, __ATOMIC_RELAXED);
	while (done > cur && !__atomic_compare_exchange_n(max, &cur, done, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* an index of chunks want[0..n) in that order */
static struct ca_index *index_of(const char *path, const unsigned *want, size_t n)
{
	struct ca_index_writer *w = NULL;
	struct ca_index *idx = NULL;
	uint64_t end = 0;
	if (ca_index_writer_open(path, CA_FORMAT_BLOB_DEFAULT, 16384, 65536, 262144, 0644, &w) < 0)
		abort();
	for (size_t i = 0; i < n; i++) {
		end += chunks[want[i]].size;
		if (ca_index_writer_add(w, end, chunks[want[i]].id) < 0)
			abort();
	}
	if (ca_index_writer_commit(w) < 0 || ca_index_open(path, &idx) < 0)
		abort();
	return idx;
}

static void test_fill(void)
{
	char back[4096], cdir[4096], ipath[4096];
	snprintf(back, sizeof(back), "%s/fill-store", tmpdir);
	snprintf(cdir, sizeof(cdir), "%s/fill-cache", tmpdir);
	struct ca_store *store = store_make(back), *cache = NULL, *cache2 = NULL;
	struct ca_idset *queued = NULL;
	struct ca_cache_fill_plan *p1 = NULL, *p2 = NULL;
	struct ca_cache_fill_stats st = { 0 };
	struct ca_chunksrc *src = NULL;
	struct fill_errs errs = { 0 };
	uint64_t done = 0;
	struct ca_cache_fill_opts o = { .threads = 3, .progress = progress, .progress_userdata = &done };
	struct ca_logger lg = { .fn = on_fill_log, .userdata = &errs, .level = CA_LOG_ERROR };
	struct ca_logger *old_lg = ca_log_use(&lg);
	snprintf(ipath, sizeof(ipath), "%s/a.caibx", tmpdir);
	struct ca_index *a = index_of(ipath, (unsigned[]){ 0, 1, 2, 1, 3 }, 5);
	snprintf(ipath, sizeof(ipath), "%s/b.caibx", tmpdir);
	struct ca_index *b = index_of(ipath, (unsigned[]){ 2, 3, 4, 5 }, 4);

	check_int(ca_store_open(cdir, &cache), ==, 0);
	check_int(ca_store_open(cdir, &cache2), ==, 0);
	/* chunk 0 is in the cache already, chunk 5 nowhere */
	struct ca_buf raw = CA_BUF_INIT;
	check_int(ca_store_get_raw(store, chunks[0].id, &raw, NULL), ==, 0);
	check_int(ca_store_put_raw(cache, chunks[0].id, raw.data, raw.size), ==, 1);
	set_mtime(path_of(cdir, chunks[0].id, false), 1000);
	check_int(ca_store_remove(store, chunks[5].id), ==, 0);

	/* presence counts index entries: a has 5, of which chunk 0 only is cached */
	uint64_t have = 9, have_bytes = 9;
	check_int(ca_cache_fill_presence(cache, a, &have, &have_bytes), ==, 0);
	check_u64(have, ==, 1);
	check_u64(have_bytes, ==, chunks[0].size);

	/* plans: a needs 1, 2, 3 (1 once); b only 4 and 5, a queued 2 and 3 */
	check_int(ca_idset_new(16, &queued), ==, 0);
	check_int(ca_cache_fill_plan(cache, a, queued, &p1, &st), ==, 0);
	check_u64(st.present, ==, 1);
	check_u64(st.present_bytes, ==, chunks[0].size);
	check_u64(st.todo, ==, 3);
	check_int(ca_cache_fill_plan(cache, b, queued, &p2, &st), ==, 0);
	check_u64(st.todo, ==, 5);
	check_u64(st.todo_bytes, ==, chunks[1].size + chunks[2].size + chunks[3].size + chunks[4].size + chunks[5].size);
	struct stat sb;
	check_int(stat(path_of(cdir, chunks[0].id, false), &sb), ==, 0);
	check(sb.st_mtime > 1000); /* a fill is a use */

	/* cancelled before the first chunk: nothing fetched */
	volatile sig_atomic_t stop = 1;
	o.cancel = &stop;
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 0, &src), ==, 0);
	check_int(ca_chunksrc_add_store(src, store), ==, 0);
	store = NULL;
	check_int(ca_chunksrc_set_cache(src, cache2, false), ==, 0);
	cache2 = NULL;
	check_int(ca_cache_fill_run(p1, src, &o, &st), ==, -ECANCELED);
	check_u64(st.fetched + st.failed, ==, 0);

	stop = 0;
	check_int(ca_cache_fill_run(p1, src, &o, &st), ==, 0);
	check_u64(st.fetched, ==, 3);
	check_u64(st.failed, ==, 0);
	check_u64(st.wire_bytes, >, 0);
	check_int(st.first_err, ==, 0);
	o.name = "b.caibx";
	check_int(ca_cache_fill_run(p2, src, &o, &st), ==, 0);
	ca_log_use(old_lg);
	check_u64(st.fetched, ==, 4);
	check_u64(st.failed, ==, 1);
	check_int(st.first_err, ==, -ENOLINK); /* as a reader of the image sees it */
	check_int(errs.n, ==, 1);
	check_int(errs.enoent, ==, 1);
	check_u64(done, ==, st.fetched_bytes);
	for (unsigned i = 0; i < 5; i++)
		check_int(ca_store_has(cache, chunks[i].id), ==, 1);
	check_int(ca_cache_fill_presence(cache, a, &have, &have_bytes), ==, 0);
	check_u64(have, ==, 5); /* chunk 1 twice */
	check_u64(have_bytes, ==, ca_index_blob_size(a));

	/* planned again, only the missing chunk is left */
	struct ca_cache_fill_stats st2 = { 0 };
	ca_cache_fill_plan_free(p2);
	check_int(ca_cache_fill_plan(cache, b, NULL, &p2, &st2), ==, 0);
	check_u64(st2.todo, ==, 1);
	check_u64(st2.present, ==, 3);

	ca_buf_release(&raw);
	ca_cache_fill_plan_free(p1);
	ca_cache_fill_plan_free(p2);
	ca_chunksrc_free(src);
	ca_idset_free(queued);
	ca_index_free(a);
	ca_index_free(b);
	ca_store_free(cache);
	ca_store_free(cache2);
	ca_store_free(store);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	chunks_make();
	test_prune();
	test_verify();
	test_gc();
	test_fill();
	for (unsigned i = 0; i < N; i++)
		free(chunks[i].data);
	testdata_sh("rm -rf '%s'", tmpdir);
	return tap_done();
}
