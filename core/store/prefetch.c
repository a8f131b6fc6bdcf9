/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* prefetch.c - profile replay and background fill workers. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/log.h"
#include "store/prefetch.h"
#include "base/workq.h"

struct ca_prefetch {
	struct ca_chunksrc *src;
	const struct ca_index *idx;
	size_t *order, n_order;
	bool fill;
	atomic_bool stop;
	struct ca_workq *q; /* CA_PREFETCH_WORKERS jobs, each a worker's share of the cursors */

	pthread_mutex_t lock; /* guards the rest */
	size_t next_profile, next_fill; /* cursors */
	unsigned running;               /* workers not yet out of work */
	struct ca_prefetch_stats st;
};

/* The next chunk to look at: 0 and *ret_i, *ret_fill; -ENOENT when done. */
static int take(struct ca_prefetch *p, size_t *ret_i, bool *ret_fill)
{
	if (p->next_profile < p->n_order) {
		*ret_i = p->order[p->next_profile++];
		*ret_fill = false;
		return 0;
	}
	if (p->fill && p->next_fill < ca_index_n_chunks(p->idx)) {
		*ret_i = p->next_fill++;
		*ret_fill = true;
		return 0;
	}
	return -ENOENT;
}

static void done(struct ca_prefetch *p, size_t i, bool fill, int r)
{
	uint64_t start, end;
	const uint8_t *id;
	ca_index_chunk(p->idx, i, &start, &end, &id);
	pthread_mutex_lock(&p->lock);
	if (r < 0)
		p->st.errors++;
	else if (fill) {
		p->st.fill_done++;
		p->st.fill_done_bytes += end - start;
	} else {
		p->st.profile_done++;
	}
	pthread_mutex_unlock(&p->lock);
}

/* One job per worker: take chunks from the shared cursors until none
 * is left (the order is the cursors', not the queue's: a fill of a
 * million chunks needs no million jobs, nor a thread to submit them). */
static int worker(void *qdata, void *wdata, void *job)
{
	struct ca_prefetch *p = qdata;
	size_t i;
	bool fill;
	(void)wdata;
	(void)job;
	for (;;) {
		pthread_mutex_lock(&p->lock);
		int r = atomic_load(&p->stop) ? -ECANCELED : take(p, &i, &fill);
		if (r < 0) {
			if (--p->running == 0 && r == -ENOENT)
				p->st.finished = true;
			pthread_mutex_unlock(&p->lock);
			return 0;
		}
		pthread_mutex_unlock(&p->lock);

		uint64_t start, end;
		const uint8_t *id;
		const struct ca_chunk *c = NULL;
		ca_index_chunk(p->idx, i, &start, &end, &id);
		/* a local chunk costs a stat, not a decompression */
		if (ca_chunksrc_is_local(p->src, id) > 0) {
			done(p, i, fill, 0);
			continue;
		}
		/* a fill keeps pace with a reader that follows it (chunksrc.h) */
		if (fill)
			(void)ca_chunksrc_ahead_wait(p->src, &p->stop);
		if (ca_chunksrc_wait_no_demand(p->src)) {
			pthread_mutex_lock(&p->lock);
			p->st.waits++;
			pthread_mutex_unlock(&p->lock);
		}
		if (atomic_load(&p->stop)) {
			pthread_mutex_lock(&p->lock);
			p->running--;
			pthread_mutex_unlock(&p->lock);
			return 0;
		}
		r = ca_chunksrc_get_background(p->src, id, end - start, fill ? CA_CHUNKSRC_LRU_COLD | CA_CHUNKSRC_AHEAD : 0, &c);
		ca_chunksrc_put(p->src, c);
		if (r < 0)
			ca_log_debug_errno(r, "background fetch of chunk %zu", i);
		done(p, i, fill, r);
	}
}

int ca_prefetch_start(struct ca_chunksrc *src, const struct ca_index *idx, size_t *order, size_t n, bool fill,
                      struct ca_prefetch **ret)
{
	struct ca_prefetch *p = calloc(1, sizeof(*p));
	if (!p) {
		free(order);
		return -ENOMEM;
	}
	p->src = src;
	p->idx = idx;
	p->order = order;
	p->n_order = n;
	p->fill = fill;
	pthread_mutex_init(&p->lock, NULL);
	p->st.profile_chunks = n;
	p->st.fill = fill;
	if (fill) {
		p->st.fill_chunks = ca_index_n_chunks(idx);
		p->st.fill_bytes = ca_index_blob_size(idx);
	}
	unsigned want = CA_PREFETCH_WORKERS;
	if (!fill && n < want)
		want = (unsigned)n;
	static const struct ca_workq_ops ops = { .run = worker };
	struct ca_workq_opts qo = { .workers = want, .max_jobs = want };
	pthread_mutex_lock(&p->lock);
	if (want > 0 && ca_workq_new(&ops, p, &qo, &p->q) == 0) {
		/* under the lock: a worker's running-- waits for all the ++ */
		want = ca_workq_workers(p->q);
		for (unsigned k = 0; k < want && ca_workq_submit(p->q, NULL, 0) == 0; k++)
			p->running++;
	}
	if (p->running == 0)
		p->st.finished = true; /* nothing to do, or no thread: it is all on demand then */
	pthread_mutex_unlock(&p->lock);
	*ret = p;
	return 0;
}

void ca_prefetch_stop(struct ca_prefetch *p)
{
	if (!p)
		return;
	atomic_store(&p->stop, true);
	(void)ca_workq_free(p->q); /* a fetch under way finishes first */
	pthread_mutex_destroy(&p->lock);
	free(p->order);
	free(p);
}

void ca_prefetch_get_stats(struct ca_prefetch *p, struct ca_prefetch_stats *ret)
{
	pthread_mutex_lock(&p->lock);
	*ret = p->st;
	pthread_mutex_unlock(&p->lock);
}
