/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * delta_source.c - a delta pack as a chunk source backend: the pack is
 * loaded off the reader's path, chunks are rebuilt by delta.c's client.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/condwait.h"
#include "base/log.h"
#include "base/thread.h"
#include "image/delta.h"
#include "image/delta_source.h"
#include "store/store.h"

/* how long a fetch of a chunk a fill's pack run will build waits for it
 * in the cache; past that the pack server is slow: this fetch and every
 * later one go to the stores (the run goes on, into the cache) */
#define BULK_WAIT_MS 3000

enum state {
	LOADING, /* the thread reads the header and table */
	BULK,    /* the thread rebuilds everything into the cache (--fill) */
	READY,
	NONE,     /* no pack (404): for the source's life */
	UNUSABLE, /* a pack that could not be used: for the source's life */
};

struct delta_source {
	struct ca_delta_client *c;
	struct ca_store *refs; /* the chunk cache, our own handle */
	bool bulk;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	enum state state;
	pthread_t thread;
	bool started;
	bool none_if_from;
	uint8_t from[CA_DELTA_DIGEST_SIZE];
	_Atomic bool stopped; /* ca_delta_source_stop */
	_Atomic bool run_slow; /* a fetch gave up waiting for the run: the rest do not wait */
};

static void set_state(struct delta_source *s, enum state st)
{
	pthread_mutex_lock(&s->lock);
	s->state = st;
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
}

static void *loader(void *arg)
{
	struct delta_source *s = arg;
	uint8_t to[CA_DELTA_DIGEST_SIZE];
	/* here, not on the mount's start: a 48 MB index is ~50 ms of SHA-256 */
	if (s->none_if_from && ca_delta_client_to_digest(s->c, to) == 0 && !memcmp(to, s->from, sizeof(to))) {
		set_state(s, NONE); /* the image the cache kept: nothing to update */
		return NULL;
	}
	int r = ca_delta_client_load(s->c); /* said, unless a quiet 404 */
	if (r < 0) {
		set_state(s, r == -ENOENT ? NONE : UNUSABLE);
		return NULL;
	}
	if (!s->bulk) {
		set_state(s, READY);
		return NULL;
	}
	set_state(s, BULK);
	struct ca_delta_client_stats ds;
	r = ca_delta_client_run(s->c, s->refs, &ds); /* -ECANCELED: stopped, quietly */
	if (r == 0)
		ca_log_info("delta pack gave %llu chunks (%llu bytes) in %llu requests (%llu bytes)",
		            (unsigned long long)ds.chunks, (unsigned long long)ds.bytes,
		            (unsigned long long)ds.requests, (unsigned long long)ds.wire_bytes);
	/* after a failed run the pack said so and builds nothing more */
	set_state(s, READY);
	return NULL;
}

static enum state state_of(struct delta_source *s)
{
	pthread_mutex_lock(&s->lock);
	enum state st = s->state;
	pthread_mutex_unlock(&s->lock);
	return st;
}

/* Wait while the state is st (or until the reader's request is
 * cancelled: chunksrc.h's wait hook); the state then. */
static enum state wait_while(struct delta_source *s, enum state st)
{
	pthread_mutex_lock(&s->lock);
	while (s->state == st && !ca_chunksrc_wait_cancelled())
		ca_cond_wait_ms(&s->changed, &s->lock, 100);
	enum state now = s->state;
	pthread_mutex_unlock(&s->lock);
	return now;
}

static int ds_fetch(void *be, const uint8_t id[CA_CHUNK_ID_SIZE], struct ca_buf *out, bool *ret_compressed)
{
	struct delta_source *s = be;
	enum state st = state_of(s);
	/* a fill (bulk) waits for the pack's table, not to download what the
	 * pack has; otherwise nothing waits for it: the stores serve meanwhile */
	if (st == LOADING && s->bulk) {
		st = wait_while(s, LOADING);
		if (st == LOADING)
			return -EINTR;
	}
	if ((st != READY && st != BULK) || s->stopped)
		return -ENOENT;
	if (!ca_delta_client_has(s->c, id))
		return -ENOENT;
	if (st == BULK) {
		/* the fill's run is building it, with its neighbours, into the
		 * cache: wait for it there, not for the whole run (a slow pack
		 * server would hold a read for minutes) */
		uint64_t until = ca_now_ms() + BULK_WAIT_MS;
		while ((st = state_of(s)) == BULK && !s->stopped && ca_store_has(s->refs, id) <= 0) {
			if (ca_chunksrc_wait_cancelled())
				return -EINTR;
			if (s->run_slow)
				return -ENOENT;
			if (ca_now_ms() >= until) {
				if (!atomic_exchange(&s->run_slow, true))
					ca_log_info("delta pack: its run is slow; the chunk stores serve meanwhile");
				return -ENOENT;
			}
			pthread_mutex_lock(&s->lock);
			if (s->state == BULK)
				ca_cond_wait_ms(&s->changed, &s->lock, 20);
			pthread_mutex_unlock(&s->lock);
		}
		if (s->stopped)
			return -ENOENT;
		if (ca_store_get_raw(s->refs, id, out, ret_compressed) == 0)
			return 0;
	}
	int r = ca_delta_client_build(s->c, s->refs, id, out);
	if (r == 0)
		*ret_compressed = false;
	return r;
}

static int ds_has(void *be, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	struct delta_source *s = be;
	enum state st = state_of(s);
	return (st == READY || st == BULK) && !s->stopped && ca_delta_client_has(s->c, id);
}

void ca_delta_source_stop(void *be)
{
	struct delta_source *s = be;
	s->stopped = true;
	ca_delta_client_stop(s->c);
	/* a fill's fetch waiting for the run sees it end now */
	pthread_mutex_lock(&s->lock);
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
}

void ca_delta_source_get_stats(void *be, struct ca_delta_source_stats *ret)
{
	static const char *const names[] = { [LOADING] = "loading", [BULK] = "filling", [READY] = "ready",
		                             [NONE] = "none", [UNUSABLE] = "unusable" };
	struct delta_source *s = be;
	struct ca_delta_client_counts k;
	ca_delta_client_get_counts(s->c, &k);
	enum state st = state_of(s);
	*ret = (struct ca_delta_source_stats){ .chunks = k.chunks, .bytes = k.bytes, .requests = k.requests,
		                               .wire_bytes = k.wire_bytes,
		                               .state = k.broken && st != NONE ? "unusable" : names[st] };
}

static void ds_free(void *be)
{
	struct delta_source *s = be;
	if (!s)
		return;
	if (s->started) {
		ca_delta_source_stop(s); /* a fill's run ends now, not when it is done */
		pthread_join(s->thread, NULL);
	}
	ca_delta_client_free(s->c);
	ca_store_free(s->refs);
	pthread_cond_destroy(&s->changed);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

const struct ca_chunk_backend_ops ca_delta_source_ops = {
	.kind = "delta pack",
	.fetch = ds_fetch,
	.has = ds_has,
	.free = ds_free,
	.builds = true,
};

int ca_delta_source_new(const struct ca_delta_source_opts *o, const struct ca_index *to, void **ret)
{
	struct delta_source *s = calloc(1, sizeof(*s));
	struct ca_delta_client_opts co = { .http = o->http, .from_digest = o->from_digest,
		                           .quiet_missing = o->quiet_missing, .conf = o->conf };
	int r;
	*ret = NULL;
	if (!s)
		return ca_log_error_errno(ENOMEM, "delta pack");
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->changed, NULL);
	s->bulk = o->bulk;
	s->none_if_from = o->none_if_from && o->from_digest;
	if (s->none_if_from)
		memcpy(s->from, o->from_digest, sizeof(s->from));
	s->state = LOADING;
	r = ca_store_open_private(o->cache_dir, true, &s->refs); /* logs */
	if (r == 0)
		r = ca_delta_client_new(o->location, to, &co, &s->c);
	if (r < 0 || !s->c)
		goto out; /* no pack (said): no backend */
	/* at once, beside the mount's start: its first reads find the table */
	r = ca_thread_create(&s->thread, loader, s);
	if (r < 0) {
		ca_log_error_errno(r, "delta pack");
		goto out;
	}
	s->started = true;
	*ret = s;
	return 0;
out:
	ds_free(s);
	return r;
}
