/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* digest_pipe.c - hashing a stream on another thread, a few buffers behind. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest_pipe.h"
#include "base/thread.h"

#define NBUF 4
#define BUFSIZE (1u << 20)

struct ca_digest_pipe {
	struct ca_digest *digest;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint8_t *buf[NBUF];
	size_t len[NBUF];
	unsigned head, count; /* the buffer being filled; full buffers not hashed yet */
	bool done;
	int err;
};

static void *pipe_main(void *userdata)
{
	struct ca_digest_pipe *dp = userdata;
	unsigned tail = 0;
	pthread_mutex_lock(&dp->lock);
	for (;;) {
		while (dp->count == 0 && !dp->done)
			pthread_cond_wait(&dp->cond, &dp->lock);
		if (dp->count == 0)
			break;
		pthread_mutex_unlock(&dp->lock);
		int r = dp->err ? 0 : ca_digest_update(dp->digest, dp->buf[tail], dp->len[tail]);
		tail = (tail + 1) % NBUF;
		pthread_mutex_lock(&dp->lock);
		if (r < 0 && !dp->err)
			dp->err = r;
		dp->count--;
		pthread_cond_broadcast(&dp->cond);
	}
	pthread_mutex_unlock(&dp->lock);
	return NULL;
}

int ca_digest_pipe_new(enum ca_digest_type type, struct ca_digest_pipe **ret)
{
	struct ca_digest_pipe *dp = calloc(1, sizeof(*dp));
	if (!dp)
		return -ENOMEM;
	int r = ca_digest_new(type, &dp->digest);
	for (unsigned i = 0; r == 0 && i < NBUF; i++)
		if (!(dp->buf[i] = malloc(BUFSIZE)))
			r = -ENOMEM;
	if (r == 0)
		r = -pthread_mutex_init(&dp->lock, NULL);
	if (r == 0 && (r = -pthread_cond_init(&dp->cond, NULL)) < 0)
		pthread_mutex_destroy(&dp->lock);
	if (r == 0 && (r = ca_thread_create(&dp->thread, pipe_main, dp)) < 0) {
		pthread_cond_destroy(&dp->cond);
		pthread_mutex_destroy(&dp->lock);
	}
	if (r < 0) {
		ca_digest_free(dp->digest);
		for (unsigned i = 0; i < NBUF; i++)
			free(dp->buf[i]);
		free(dp);
		return r;
	}
	*ret = dp;
	return 0;
}

/* Hand the buffer being filled to the thread; wait for a free one. */
static int hand_off(struct ca_digest_pipe *dp)
{
	pthread_mutex_lock(&dp->lock);
	dp->count++;
	pthread_cond_broadcast(&dp->cond);
	while (dp->count == NBUF)
		pthread_cond_wait(&dp->cond, &dp->lock);
	int r = dp->err;
	pthread_mutex_unlock(&dp->lock);
	dp->head = (dp->head + 1) % NBUF;
	dp->len[dp->head] = 0;
	return r;
}

int ca_digest_pipe_push(struct ca_digest_pipe *dp, const void *p, size_t n)
{
	const uint8_t *q = p;
	/* only this thread touches buf[head]: the pipe's thread never has it */
	while (n) {
		size_t k = BUFSIZE - dp->len[dp->head];
		if (k > n)
			k = n;
		memcpy(dp->buf[dp->head] + dp->len[dp->head], q, k);
		dp->len[dp->head] += k;
		q += k;
		n -= k;
		if (dp->len[dp->head] == BUFSIZE) {
			int r = hand_off(dp);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int ca_digest_pipe_finish(struct ca_digest_pipe *dp, uint8_t out[CA_DIGEST_SIZE])
{
	if (!dp)
		return 0;
	if (dp->len[dp->head])
		(void)hand_off(dp);
	pthread_mutex_lock(&dp->lock);
	dp->done = true;
	pthread_cond_broadcast(&dp->cond);
	pthread_mutex_unlock(&dp->lock);
	pthread_join(dp->thread, NULL);
	int r = dp->err;
	if (r == 0 && out)
		r = ca_digest_final(dp->digest, out);
	ca_digest_free(dp->digest);
	for (unsigned i = 0; i < NBUF; i++)
		free(dp->buf[i]);
	pthread_cond_destroy(&dp->cond);
	pthread_mutex_destroy(&dp->lock);
	free(dp);
	return r;
}
