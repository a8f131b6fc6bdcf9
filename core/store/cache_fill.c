/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cache_fill.c - plan what a cache lacks of an index, then fetch it with a thread pool. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "store/blob.h"
#include "store/cache_fill.h"
#include "store/chunksrc.h"
#include "format/idset.h"
#include "format/index.h"
#include "store/store.h"
#include "base/thread.h"

/* chunks announced ahead of the workers: enough to keep a remote store's transfers busy */
#define PREFETCH_AHEAD 64

struct want {
	const uint8_t *id; /* into the index */
	uint64_t size;
};

struct ca_cache_fill_plan {
	struct ca_store *cache; /* borrowed: to check that what was fetched got stored */
	struct want *w;
	size_t n;
};

int ca_cache_fill_presence(struct ca_store *cache, const struct ca_index *idx, uint64_t *ret_chunks,
                           uint64_t *ret_bytes)
{
	size_t n = ca_index_n_chunks(idx);
	struct ca_idset *seen = NULL;
	uint64_t have = 0, have_bytes = 0;
	int r = ca_idset_new(n, &seen);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		uint64_t a, b, v;
		const uint8_t *id;
		ca_index_chunk(idx, i, &a, &b, &id);
		if (!ca_idset_get(seen, id, &v)) {
			r = ca_store_has(cache, id);
			if (r < 0)
				goto out;
			v = (uint64_t)r;
			r = ca_idset_add(seen, id, v);
			if (r < 0)
				goto out;
		}
		if (v) {
			have++;
			have_bytes += b - a;
		}
	}
	*ret_chunks = have;
	*ret_bytes = have_bytes;
	r = 0;
out:
	ca_idset_free(seen);
	return r;
}

int ca_cache_fill_plan(struct ca_store *cache, const struct ca_index *idx, struct ca_idset *queued,
                       struct ca_cache_fill_plan **ret, struct ca_cache_fill_stats *ret_stats)
{
	size_t n = ca_index_n_chunks(idx);
	struct ca_idset *own = NULL;
	struct ca_cache_fill_stats st = { 0 };
	struct ca_cache_fill_plan *p = calloc(1, sizeof(*p));
	int r = -ENOMEM;
	if (!p)
		goto fail;
	p->cache = cache;
	p->w = malloc((n ? n : 1) * sizeof(*p->w));
	if (!p->w)
		goto fail;
	if (!queued) {
		r = ca_idset_new(n, &own);
		if (r < 0)
			goto fail;
		queued = own;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t a, b;
		const uint8_t *id;
		ca_index_chunk(idx, i, &a, &b, &id);
		r = ca_idset_add(queued, id, 0);
		if (r < 0)
			goto fail;
		if (r == 0) /* a repeat, or planned by an earlier index */
			continue;
		r = ca_store_has(cache, id);
		if (r < 0)
			goto fail;
		if (r > 0) {
			/* a fill is a use: keep what it needs away from prune */
			(void)ca_store_touch(cache, id);
			st.present++;
			st.present_bytes += b - a;
			continue;
		}
		p->w[p->n].id = id;
		p->w[p->n].size = b - a;
		p->n++;
		st.todo++;
		st.todo_bytes += b - a;
	}
	ret_stats->present += st.present;
	ret_stats->present_bytes += st.present_bytes;
	ret_stats->todo += st.todo;
	ret_stats->todo_bytes += st.todo_bytes;
	ca_idset_free(own);
	*ret = p;
	return 0;
fail:
	ca_idset_free(own);
	ca_cache_fill_plan_free(p);
	return r;
}

void ca_cache_fill_plan_free(struct ca_cache_fill_plan *p)
{
	if (!p)
		return;
	free(p->w);
	free(p);
}

struct job {
	const struct ca_cache_fill_plan *p;
	struct ca_chunksrc *src;
	const struct ca_cache_fill_opts *opts;
	uint64_t start_ns, wire_start; /* for the rate limit */
	uint64_t done_base;            /* fetched_bytes on entry, for progress */
	uint64_t failed_base;          /* failed on entry: the error lines' cap is over all runs */

	pthread_mutex_t lock;          /* guards the fields below */
	size_t next, prefetched;
	uint64_t fetched, fetched_bytes, failed;
	int first_err;
	bool cancelled;
};

/* The one line a chunk that could not be filled gets: a fetched chunk
 * the cache did not take names the cache; the rest as every reader says
 * it (ca_blob_log_chunk_error). */
static void log_failed(const struct job *j, const uint8_t *id, int err, bool not_stored)
{
	const char *name = j->opts->name;
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	if (!not_stored) {
		ca_blob_log_chunk_error(name, id, err);
		return;
	}
	ca_id_to_hex(id, hex);
	ca_log_error("%s%schunk %s: cannot store it in %s", name ? name : "", name ? ": " : "", hex,
	             ca_store_path(j->p->cache));
}

/* sleep until the bytes the backends delivered since the start fit the rate */
static void throttle(struct job *j)
{
	struct ca_chunksrc_stats st;
	ca_chunksrc_get_stats(j->src, &st);
	uint64_t bytes = st.fetched_bytes - j->wire_start;
	uint64_t due = j->start_ns + (uint64_t)((double)bytes * 1e9 / (double)j->opts->rate_limit_bps);
	uint64_t t = ca_now_ns();
	if (due > t) {
		uint64_t d = due - t;
		struct timespec ts = { (time_t)(d / 1000000000u), (long)(d % 1000000000u) };
		nanosleep(&ts, NULL);
	}
}

static void *worker_main(void *arg)
{
	struct job *j = arg;
	const struct ca_cache_fill_opts *o = j->opts;
	for (;;) {
		bool stop = o->cancel && *o->cancel;
		pthread_mutex_lock(&j->lock);
		if (stop)
			j->cancelled = true;
		size_t i = stop ? j->p->n : j->next++;
		size_t from = j->prefetched, to = i + PREFETCH_AHEAD < j->p->n ? i + PREFETCH_AHEAD : j->p->n;
		if (to > from)
			j->prefetched = to;
		pthread_mutex_unlock(&j->lock);
		if (i >= j->p->n)
			break;
		for (size_t k = from; k < to; k++)
			ca_chunksrc_prefetch(j->src, j->p->w[k].id);

		const struct want *w = &j->p->w[i];
		const struct ca_chunk *c = NULL;
		bool not_stored = false;
		int r = ca_chunksrc_get(j->src, w->id, w->size, &c);
		ca_chunksrc_put(j->src, c);
		if (r == 0) {
			/* the chunk source only warns when the cache write fails */
			r = ca_store_has(j->p->cache, w->id);
			not_stored = r == 0;
			r = r > 0 ? 0 : r == 0 ? -EIO : r;
		}
		bool log = false;
		pthread_mutex_lock(&j->lock);
		if (r == 0) {
			j->fetched++;
			j->fetched_bytes += w->size;
		} else {
			log = j->failed_base + j->failed++ < CA_CACHE_FILL_MAX_REPORTED;
			if (!j->first_err)
				j->first_err = not_stored ? -EIO : ca_blob_chunk_errno(r);
		}
		uint64_t done = j->done_base + j->fetched_bytes;
		pthread_mutex_unlock(&j->lock);
		if (log)
			log_failed(j, w->id, r, not_stored);
		if (o->progress)
			o->progress(o->progress_userdata, done);
		if (o->rate_limit_bps)
			throttle(j);
	}
	return NULL;
}

int ca_cache_fill_run(const struct ca_cache_fill_plan *p, struct ca_chunksrc *src,
                      const struct ca_cache_fill_opts *opts, struct ca_cache_fill_stats *ret_stats)
{
	struct ca_chunksrc_stats before, after;
	unsigned threads = opts->threads ? opts->threads : CA_CACHE_FILL_THREADS_DEFAULT;
	if (p->n == 0)
		return 0;
	ca_chunksrc_get_stats(src, &before);
	struct job j = {
		.p = p, .src = src, .opts = opts, .start_ns = ca_now_ns(), .wire_start = before.fetched_bytes,
		.done_base = ret_stats->fetched_bytes, .failed_base = ret_stats->failed,
	};
	if (threads > CA_CACHE_FILL_THREADS_MAX)
		threads = CA_CACHE_FILL_THREADS_MAX;
	if (threads > p->n)
		threads = (unsigned)p->n;
	pthread_mutex_init(&j.lock, NULL);
	ca_thread_pool_run(threads, worker_main, &j);
	pthread_mutex_destroy(&j.lock);
	ca_chunksrc_get_stats(src, &after);
	ret_stats->fetched += j.fetched;
	ret_stats->fetched_bytes += j.fetched_bytes;
	ret_stats->wire_bytes += after.fetched_bytes - before.fetched_bytes;
	ret_stats->failed += j.failed;
	if (!ret_stats->first_err)
		ret_stats->first_err = j.first_err;
	return j.cancelled ? -ECANCELED : 0;
}

void ca_cache_fill_log_rest(const struct ca_cache_fill_stats *st)
{
	if (st->failed > CA_CACHE_FILL_MAX_REPORTED)
		ca_log_error("%llu more chunks failed", (unsigned long long)(st->failed - CA_CACHE_FILL_MAX_REPORTED));
}
