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
#include "base/thread.h"

#define THREADS_MAX 4

enum { SLOT_EMPTY, SLOT_FETCHING, SLOT_READY };

struct slot {
	int state;
	const struct ca_chunk *c; /* READY: NULL when the get failed */
	int err;
};

/* The window: chunks base .. base+cap-1, chunk i in ring[i % cap]. The
 * threads claim chunks in order from `next` (base <= next <= base+cap)
 * and fill their slots in any order; the reader takes them in order. */
struct ca_blob_stream {
	struct ca_index *idx;
	struct ca_chunksrc *src;
	size_t n_chunks;
	pthread_mutex_t lock;
	pthread_cond_t wake;  /* the threads: room in the window, a restart, or stop */
	pthread_cond_t ready; /* the reader: a slot was filled */
	struct slot *ring;
	unsigned cap;
	size_t base, next;
	uint64_t gen; /* bumped by a restart: a fetch claimed before it is dropped */
	bool started; /* the first read placed the window: nothing is fetched before */
	bool stop;
	const volatile sig_atomic_t *cancel;
	unsigned n_th, exited;
	unsigned idle; /* threads waiting in wake */
	pthread_t th[THREADS_MAX];
};

static bool cancelled(const struct ca_blob_stream *s)
{
	return s->cancel && *s->cancel;
}

static void *fetcher(void *userdata)
{
	struct ca_blob_stream *s = userdata;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->stop && (!s->started || s->next >= s->base + s->cap || s->next >= s->n_chunks)) {
			s->idle++;
			pthread_cond_wait(&s->wake, &s->lock);
			s->idle--;
		}
		if (s->stop)
			break;
		size_t i = s->next++;
		uint64_t gen = s->gen, start, end;
		const uint8_t *id;
		s->ring[i % s->cap].state = SLOT_FETCHING;
		pthread_mutex_unlock(&s->lock);

		const struct ca_chunk *c = NULL;
		ca_index_chunk(s->idx, i, &start, &end, &id);
		int r = ca_chunksrc_get(s->src, id, end - start, &c);

		pthread_mutex_lock(&s->lock);
		if (gen != s->gen) { /* the reader moved the window meanwhile: the slot is not ours */
			ca_chunksrc_put(s->src, c);
			continue;
		}
		s->ring[i % s->cap] = (struct slot){ .state = SLOT_READY, .c = r < 0 ? NULL : c, .err = r };
		pthread_cond_broadcast(&s->ready);
	}
	s->exited++;
	pthread_cond_broadcast(&s->ready);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Under the lock: drop the first chunk of the window (ready). */
static void pop(struct ca_blob_stream *s)
{
	struct slot *sl = &s->ring[s->base % s->cap];
	ca_chunksrc_put(s->src, sl->c);
	*sl = (struct slot){ .state = SLOT_EMPTY };
	s->base++;
	/* idle threads wait for a full window to drain: wake them once a
	 * quarter of it is free (and then all), not at every chunk read, which
	 * cost a wake-up and two context switches per chunk. Not short of
	 * work meanwhile: the rest of the window is ready. */
	if (s->idle && s->base + s->cap - s->next >= (s->cap + 3) / 4)
		pthread_cond_broadcast(&s->wake);
}

/* Under the lock: make chunk i the first of the window. */
static void seek(struct ca_blob_stream *s, size_t i)
{
	if (!s->started) {
		s->started = true;
		s->base = s->next = i;
		pthread_cond_broadcast(&s->wake);
		return;
	}
	/* skipping chunks that are there is cheap; anything else restarts */
	while (s->base < i && s->base < s->next && s->ring[s->base % s->cap].state == SLOT_READY)
		pop(s);
	if (s->base == i)
		return;
	for (size_t k = s->base; k < s->next; k++) {
		struct slot *sl = &s->ring[k % s->cap];
		if (sl->state == SLOT_READY)
			ca_chunksrc_put(s->src, sl->c);
		*sl = (struct slot){ .state = SLOT_EMPTY };
	}
	s->base = s->next = i;
	s->gen++;
	pthread_cond_broadcast(&s->wake);
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
	r = -pthread_cond_init(&s->wake, NULL);
	if (r < 0)
		goto fail_wake;
	r = -pthread_cond_init(&s->ready, NULL);
	if (r < 0)
		goto fail_ready;
	if (threads == 0) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		threads = ncpu < 1 ? 1 : ncpu > THREADS_MAX ? THREADS_MAX : (unsigned)ncpu;
	}
	while (s->n_th < threads && s->n_th < THREADS_MAX && (r = ca_thread_create(&s->th[s->n_th], fetcher, s)) == 0)
		s->n_th++;
	if (s->n_th == 0)
		goto fail_thread;
	*ret = s;
	return 0;
fail_thread:
	pthread_cond_destroy(&s->ready);
fail_ready:
	pthread_cond_destroy(&s->wake);
fail_wake:
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
	int grace = 20;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->wake);
	while (s->exited < s->n_th && !(cancelled(s) && grace-- == 0))
		ca_cond_wait_ms(&s->ready, &s->lock, 100);
	bool stuck = s->exited < s->n_th;
	pthread_mutex_unlock(&s->lock);
	if (stuck) {
		/* in a call no flag reaches (a FIFO in the store, a hung NFS
		 * server): leave it, and what it points to, to the exit */
		for (unsigned t = 0; t < s->n_th; t++)
			pthread_detach(s->th[t]);
		return -EBUSY;
	}
	for (unsigned t = 0; t < s->n_th; t++)
		pthread_join(s->th[t], NULL);
	for (size_t k = s->base; k < s->next; k++) /* every fetch has returned: all are ready */
		ca_chunksrc_put(s->src, s->ring[k % s->cap].c);
	pthread_cond_destroy(&s->ready);
	pthread_cond_destroy(&s->wake);
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
	seek(s, (size_t)i);
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
		}
	}
	return (ssize_t)done;
}
