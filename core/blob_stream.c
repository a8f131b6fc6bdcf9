/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* blob_stream.c - sequential reads of a blob, chunks decoded ahead by a thread. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "blob_stream.h"

struct slot {
	const struct ca_chunk *c; /* NULL when the get failed */
	int err;
};

/* The window: chunks base .. base+n-1 are in ring[head ..] (in order), the
 * thread fetches chunk base+n next (at most one fetch in flight). */
struct ca_blob_stream {
	struct ca_index *idx;
	struct ca_chunksrc *src;
	size_t n_chunks;
	pthread_mutex_t lock;
	pthread_cond_t wake;  /* the thread: room in the ring, a restart, or stop */
	pthread_cond_t ready; /* the reader: a slot was filled */
	struct slot *ring;
	unsigned cap, head, n;
	size_t base;
	uint64_t gen; /* bumped by a restart: a fetch begun before it is dropped */
	bool stop;
	pthread_t th;
};

static void *fetcher(void *userdata)
{
	struct ca_blob_stream *s = userdata;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->stop && (s->n == s->cap || s->base + s->n >= s->n_chunks))
			pthread_cond_wait(&s->wake, &s->lock);
		if (s->stop)
			break;
		size_t i = s->base + s->n;
		uint64_t gen = s->gen, start, end;
		const uint8_t *id;
		pthread_mutex_unlock(&s->lock);

		const struct ca_chunk *c = NULL;
		ca_index_chunk(s->idx, i, &start, &end, &id);
		int r = ca_chunksrc_get(s->src, id, end - start, &c);

		pthread_mutex_lock(&s->lock);
		if (gen != s->gen) { /* the reader moved the window meanwhile */
			ca_chunksrc_put(s->src, c);
			continue;
		}
		s->ring[(s->head + s->n) % s->cap] = (struct slot){ .c = r < 0 ? NULL : c, .err = r };
		s->n++;
		pthread_cond_signal(&s->ready);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Under the lock: drop the first slot of the window. */
static void pop(struct ca_blob_stream *s)
{
	ca_chunksrc_put(s->src, s->ring[s->head].c);
	s->head = (s->head + 1) % s->cap;
	s->n--;
	s->base++;
	pthread_cond_signal(&s->wake);
}

/* Under the lock: make chunk i the first of the window. */
static void seek(struct ca_blob_stream *s, size_t i)
{
	/* skipping what is already there is cheap; anything else restarts */
	while (s->n && s->base < i)
		pop(s);
	if (s->base == i)
		return;
	while (s->n)
		pop(s);
	s->base = i;
	s->gen++;
	pthread_cond_signal(&s->wake);
}

int ca_blob_stream_new(struct ca_blob *b, unsigned ahead, struct ca_blob_stream **ret)
{
	struct ca_blob_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
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
	r = -pthread_create(&s->th, NULL, fetcher, s);
	if (r < 0)
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

void ca_blob_stream_free(struct ca_blob_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->th, NULL);
	while (s->n)
		pop(s);
	pthread_cond_destroy(&s->ready);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s->ring);
	free(s);
}

ssize_t ca_blob_stream_read(struct ca_blob_stream *s, void *buf, size_t len, uint64_t off)
{
	uint8_t *out = buf;
	size_t done = 0;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len) {
		uint64_t pos = off + done, start, end;
		ssize_t i = ca_index_find(s->idx, pos);
		if (i < 0) /* at or past the end */
			break;
		ca_index_chunk(s->idx, (size_t)i, &start, &end, NULL);

		pthread_mutex_lock(&s->lock);
		seek(s, (size_t)i);
		while (!s->n)
			pthread_cond_wait(&s->ready, &s->lock);
		struct slot sl = s->ring[s->head];
		pthread_mutex_unlock(&s->lock);
		if (!sl.c) /* stays in the window: read again, it fails again */
			return done ? (ssize_t)done : sl.err;

		/* the slot stays put until this thread pops it: copy without the lock */
		size_t k = end - pos < len - done ? (size_t)(end - pos) : len - done;
		memcpy(out + done, sl.c->data + (pos - start), k);
		done += k;
		if (pos + k == end) {
			pthread_mutex_lock(&s->lock);
			pop(s);
			pthread_mutex_unlock(&s->lock);
		}
	}
	return (ssize_t)done;
}
