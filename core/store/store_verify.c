/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* store_verify.c - a thread pool that re-hashes every chunk file of a store. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "chunk/compress.h"
#include "store/store.h"
#include "store/store_verify.h"
#include "base/thread.h"

#define MAX_THREADS 64

struct item {
	uint8_t id[CA_CHUNK_ID_SIZE];
	enum ca_store_kind kind;
};

struct job {
	struct ca_store *store;
	const struct ca_store_verify_opts *opts;
	struct item *v;
	size_t n, cap;

	pthread_mutex_t lock; /* guards next and stats */
	size_t next;
	struct ca_store_verify_stats stats;
};

static bool cancelled(const struct job *j)
{
	return j->opts->cancel && *j->opts->cancel;
}

static int collect(const struct ca_store_entry *e, void *userdata)
{
	struct job *j = userdata;
	if (cancelled(j))
		return -ECANCELED;
	if (e->kind == CA_STORE_TMP)
		return 0;
	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 1024;
		struct item *v = realloc(j->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		j->v = v;
		j->cap = cap;
	}
	memcpy(j->v[j->n].id, e->id, CA_CHUNK_ID_SIZE);
	j->v[j->n++].kind = e->kind;
	return 0;
}

/* per-thread tools: a codec and both digests, never shared */
struct worker {
	struct ca_codec *codec;
	struct ca_digest *d[2];
	struct ca_buf raw, data;
};

/* 0 if the chunk matches its name under either digest (or the one asked
 * for), -EBADMSG if not, another negative errno if it could not be checked */
static int check_chunk(struct job *j, struct worker *w, const struct item *it)
{
	static const enum ca_digest_type order[2] = { CA_DIGEST_SHA512_256, CA_DIGEST_SHA256 };
	const struct ca_buf *plain = &w->raw;
	int r = ca_store_get_file(j->store, it->id, it->kind, &w->raw);
	if (r < 0)
		return r;
	if (it->kind == CA_STORE_CHUNK) {
		r = ca_codec_decompress(w->codec, w->raw.data, w->raw.size, &w->data, CA_CHUNK_SIZE_LIMIT_MAX);
		if (r < 0)
			return r;
		plain = &w->data;
	}
	for (int i = 0; i < 2; i++) {
		uint8_t got[CA_CHUNK_ID_SIZE];
		if (!j->opts->any_digest && order[i] != j->opts->digest)
			continue;
		r = ca_digest_once(w->d[i], plain->data, plain->size, got);
		if (r < 0)
			return r;
		if (!memcmp(got, it->id, CA_CHUNK_ID_SIZE))
			return 0;
	}
	return -EBADMSG;
}

static void *worker_main(void *arg)
{
	struct job *j = arg;
	struct worker w = { .raw = CA_BUF_INIT, .data = CA_BUF_INIT };
	/* a worker that cannot set up still takes its share, so every chunk
	 * is counted (as an error) and none is silently skipped */
	int setup = ca_codec_new(CA_DIGEST_SHA512_256, &w.codec);
	if (setup == 0)
		setup = ca_digest_new(CA_DIGEST_SHA512_256, &w.d[0]);
	if (setup == 0)
		setup = ca_digest_new(CA_DIGEST_SHA256, &w.d[1]);
	for (;;) {
		pthread_mutex_lock(&j->lock);
		size_t i = j->next++;
		pthread_mutex_unlock(&j->lock);
		if (i >= j->n || cancelled(j))
			break;
		const struct item *it = &j->v[i];
		int r = setup < 0 ? setup : check_chunk(j, &w, it);
		bool removed = false;
		if (r == -ENOENT) /* removed since the walk: nothing to check */
			continue;
		if (r == -EBADMSG && j->opts->repair) {
			int k = ca_store_remove_file(j->store, it->id, it->kind);
			removed = k == 0 || k == -ENOENT;
		}
		if (r < 0 && j->opts->on_bad)
			j->opts->on_bad(j->opts->userdata, it->id, r, removed);
		pthread_mutex_lock(&j->lock);
		if (r == 0)
			j->stats.ok++;
		else if (r == -EBADMSG)
			j->stats.corrupt++;
		else
			j->stats.errors++;
		if (removed)
			j->stats.removed++;
		pthread_mutex_unlock(&j->lock);
	}
	ca_buf_release(&w.raw);
	ca_buf_release(&w.data);
	ca_digest_free(w.d[0]);
	ca_digest_free(w.d[1]);
	ca_codec_free(w.codec);
	return NULL;
}

int ca_store_verify(struct ca_store *s, const struct ca_store_verify_opts *opts,
                    struct ca_store_verify_stats *ret_stats)
{
	struct job j = { .store = s, .opts = opts };
	unsigned threads = opts->threads;
	int r = ca_store_walk(s, collect, &j);
	if (r < 0)
		goto out;
	if (threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n < 1 ? 1 : n > 16 ? 16 : (unsigned)n;
	}
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	pthread_mutex_init(&j.lock, NULL);
	ca_thread_pool_run(threads, worker_main, &j);
	pthread_mutex_destroy(&j.lock);
	*ret_stats = j.stats;
	if (cancelled(&j))
		r = -ECANCELED;
out:
	free(j.v);
	return r;
}
