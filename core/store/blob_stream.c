/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* blob_stream.c - sequential reads of a blob, chunks decoded ahead by threads. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/blob_stream.h"
#include "base/condwait.h"
#include "base/workq.h"

#define THREADS_MAX 4

enum { SLOT_EMPTY, SLOT_FETCHING, SLOT_READY };

struct slot {
	int state;
	size_t i;                 /* FETCHING, READY: the chunk it is for */
	const struct ca_chunk *c; /* READY: NULL when the get failed */
	int err;
};

/* The window: chunks base .. base+cap-1, chunk i in ring[i % cap]. The
 * reader claims chunks in order up to `next` (base <= next <= base+cap),
 * each a job of the work queue (base/workq.h) that fills its slot; the
 * reader takes them in order. A restart empties the window: a job whose
 * slot no longer waits for its chunk fetches nothing, or drops what it got. */
struct ca_blob_stream {
	struct ca_index *idx;
	struct ca_chunksrc *src;
	size_t n_chunks;
	pthread_mutex_t lock;
	pthread_cond_t ready; /* the reader: a slot was filled */
	struct slot *ring;
	unsigned cap;
	size_t base, next;
	bool started; /* the first read placed the window: nothing is fetched before */
	const volatile sig_atomic_t *cancel;
	struct ca_workq *q;
};

static bool cancelled(const struct ca_blob_stream *s)
{
	return s->cancel && *s->cancel;
}

/* Under the lock: does ring slot of chunk i still wait for it? */
static bool wanted_locked(struct ca_blob_stream *s, size_t i)
{
	const struct slot *sl = &s->ring[i % s->cap];
	return sl->state == SLOT_FETCHING && sl->i == i;
}

static int fetch(void *qdata, void *wdata, void *job)
{
	struct ca_blob_stream *s = qdata;
	size_t i = (size_t)(uintptr_t)job;
	uint64_t start, end;
	const uint8_t *id;
	const struct ca_chunk *c = NULL;
	(void)wdata;
	pthread_mutex_lock(&s->lock);
	bool wanted = wanted_locked(s, i);
	pthread_mutex_unlock(&s->lock);
	if (!wanted) /* the reader moved the window meanwhile */
		return 0;
	ca_index_chunk(s->idx, i, &start, &end, &id);
	int r = ca_chunksrc_get(s->src, id, end - start, &c);
	pthread_mutex_lock(&s->lock);
	if (wanted_locked(s, i)) {
		s->ring[i % s->cap] = (struct slot){ .state = SLOT_READY, .i = i, .c = r < 0 ? NULL : c, .err = r };
		pthread_cond_broadcast(&s->ready);
		c = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	ca_chunksrc_put(s->src, c);
	return 0; /* a failed chunk is its slot's error, given to the read that reaches it */
}

/* Claim what the window has room for and queue it (lock not held: a
 * full queue waits for the jobs, which take the lock). Claims come in
 * batches of a quarter window, not at every chunk read: a wake-up and two
 * context switches per chunk cost more. Not short of work meanwhile: the
 * rest of the window is ready. */
static void refill(struct ca_blob_stream *s, bool force)
{
	pthread_mutex_lock(&s->lock);
	size_t from = s->next, to = s->base + s->cap < s->n_chunks ? s->base + s->cap : s->n_chunks;
	/* the reader waits for nothing yet (next > base), and the batch is not the last */
	bool later = !force && s->next > s->base && to - from < (s->cap + 3) / 4 && to < s->n_chunks;
	if (!s->started || to <= from || later) {
		pthread_mutex_unlock(&s->lock);
		return;
	}
	for (size_t k = from; k < to; k++)
		s->ring[k % s->cap] = (struct slot){ .state = SLOT_FETCHING, .i = k };
	s->next = to;
	pthread_mutex_unlock(&s->lock);
	/* refused only once cancelled: those slots never fill, and the read
	 * waiting for one notices the flag */
	for (size_t k = from; k < to && ca_workq_submit(s->q, (void *)(uintptr_t)k, 1) == 0; k++)
		;
}

/* Under the lock: drop the first chunk of the window (ready). */
static void pop(struct ca_blob_stream *s)
{
	struct slot *sl = &s->ring[s->base % s->cap];
	ca_chunksrc_put(s->src, sl->c);
	*sl = (struct slot){ .state = SLOT_EMPTY };
	s->base++;
}

/* Under the lock: make chunk i the first of the window. True when the
 * window was (re)placed and wants filling at once. */
static bool seek(struct ca_blob_stream *s, size_t i)
{
	if (!s->started) {
		s->started = true;
		s->base = s->next = i;
		return true;
	}
	/* skipping chunks that are there is cheap; anything else restarts */
	while (s->base < i && s->base < s->next && s->ring[s->base % s->cap].state == SLOT_READY)
		pop(s);
	if (s->base == i)
		return false;
	for (size_t k = s->base; k < s->next; k++) {
		struct slot *sl = &s->ring[k % s->cap];
		if (sl->state == SLOT_READY)
			ca_chunksrc_put(s->src, sl->c);
		*sl = (struct slot){ .state = SLOT_EMPTY };
	}
	s->base = s->next = i;
	return true;
}

int ca_blob_stream_new(struct ca_blob *b, unsigned ahead, unsigned threads, const volatile sig_atomic_t *cancel,
                       struct ca_blob_stream **ret)
{
	struct ca_blob_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cancel = cancel;
	s->idx = ca_blob_index(b);
	s->src = ca_blob_chunksrc(b);
	s->n_chunks = ca_index_n_chunks(s->idx);
	s->cap = ahead ? ahead : 1;
	s->ring = calloc(s->cap, sizeof(*s->ring));
	int r = -ENOMEM;
	if (!s->ring)
		goto fail_ring;
	r = -pthread_mutex_init(&s->lock, NULL);
	if (r < 0)
		goto fail_ring;
	r = -pthread_cond_init(&s->ready, NULL);
	if (r < 0)
		goto fail_ready;
	if (threads == 0) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		threads = ncpu < 1 ? 1 : ncpu > THREADS_MAX ? THREADS_MAX : (unsigned)ncpu;
	}
	static const struct ca_workq_ops ops = { .run = fetch };
	/* room for a window of jobs left behind by a restart and a new one */
	struct ca_workq_opts qo = {
		.workers = threads < THREADS_MAX ? threads : THREADS_MAX, .max_jobs = 2 * (size_t)s->cap, .cancel = cancel,
	};
	r = ca_workq_new(&ops, s, &qo, &s->q);
	if (r < 0)
		goto fail_queue;
	*ret = s;
	return 0;
fail_queue:
	pthread_cond_destroy(&s->ready);
fail_ready:
	pthread_mutex_destroy(&s->lock);
fail_ring:
	free(s->ring);
	free(s);
	return r;
}

int ca_blob_stream_free(struct ca_blob_stream *s)
{
	if (!s)
		return 0;
	ca_workq_cancel(s->q, -ECANCELED); /* queued fetches are not wanted any more */
	if (ca_workq_free(s->q) == -EBUSY) {
		/* in a call no flag reaches (a FIFO in the store, a hung NFS
		 * server): the queue left it, and what it points to, to the exit */
		return -EBUSY;
	}
	for (unsigned k = 0; k < s->cap; k++) /* every job has returned: only ready slots hold chunks */
		if (s->ring[k].state == SLOT_READY)
			ca_chunksrc_put(s->src, s->ring[k].c);
	pthread_cond_destroy(&s->ready);
	pthread_mutex_destroy(&s->lock);
	free(s->ring);
	free(s);
	return 0;
}

void ca_blob_stream_set_end(struct ca_blob_stream *s, uint64_t end)
{
	ssize_t last = end ? ca_index_find(s->idx, end - 1) : -1;
	pthread_mutex_lock(&s->lock);
	if (last >= 0 && (size_t)last + 1 < s->n_chunks)
		s->n_chunks = (size_t)last + 1;
	pthread_mutex_unlock(&s->lock);
}

/* The chunk holding pos, first in the window and ready: 1 with its data
 * and range, 0 at the end, or a negative errno. */
static int chunk_at(struct ca_blob_stream *s, uint64_t pos, const struct ca_chunk **ret, uint64_t *start, uint64_t *end)
{
	ssize_t i = ca_index_find(s->idx, pos);
	if (i < 0) /* at or past the end */
		return 0;
	ca_index_chunk(s->idx, (size_t)i, start, end, NULL);
	pthread_mutex_lock(&s->lock);
	bool moved = seek(s, (size_t)i);
	pthread_mutex_unlock(&s->lock);
	refill(s, moved);
	pthread_mutex_lock(&s->lock);
	struct slot *sl = &s->ring[s->base % s->cap];
	while (sl->state != SLOT_READY && !cancelled(s))
		ca_cond_wait_ms(&s->ready, &s->lock, 100);
	if (sl->state != SLOT_READY) {
		pthread_mutex_unlock(&s->lock);
		return -ECANCELED;
	}
	const struct ca_chunk *c = sl->c;
	int err = sl->err;
	pthread_mutex_unlock(&s->lock);
	if (!c) /* stays in the window: read again, it fails again */
		return ca_blob_chunk_errno(err);
	*ret = c;
	return 1;
}

ssize_t ca_blob_stream_peek(struct ca_blob_stream *s, size_t len, uint64_t off, const void **ret)
{
	const struct ca_chunk *c;
	uint64_t start, end;
	/* the chunk stays first in the window (and its bytes where they are)
	 * until a read or peek further on pops it */
	int r = chunk_at(s, off, &c, &start, &end);
	if (r <= 0)
		return r;
	if (len > end - off)
		len = (size_t)(end - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	*ret = c->data + (off - start);
	return (ssize_t)len;
}

ssize_t ca_blob_stream_read(struct ca_blob_stream *s, void *buf, size_t len, uint64_t off)
{
	uint8_t *out = buf;
	size_t done = 0;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len) {
		uint64_t pos = off + done, start, end;
		const struct ca_chunk *c;
		int r = chunk_at(s, pos, &c, &start, &end);
		if (r == 0)
			break;
		if (r == -ECANCELED)
			return r;
		if (r < 0)
			return done ? (ssize_t)done : r;

		/* the slot stays put until this thread pops it: copy without the lock */
		size_t k = end - pos < len - done ? (size_t)(end - pos) : len - done;
		memcpy(out + done, c->data + (pos - start), k);
		done += k;
		if (pos + k == end) {
			pthread_mutex_lock(&s->lock);
			pop(s);
			pthread_mutex_unlock(&s->lock);
			refill(s, false);
		}
	}
	return (ssize_t)done;
}
