/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cache_size.c - a cache's size counted in the background (cache_size.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/thread.h"
#include "store/cache_size.h"
#include "store/store.h"

struct ca_cache_size {
	char *dir;
	uint64_t interval_ms;
	pthread_mutex_t lock;
	bool have; /* a count has ended */
	struct ca_cache_size_stats last;
	uint64_t ended_ms; /* when it did (monotonic) */
	uint64_t started_ms;
	bool walking, joinable; /* a walk under way; a thread to join */
	pthread_t thread;
	atomic_bool stop;
};

struct count {
	struct ca_cache_size *cs;
	uint64_t chunks, bytes;
};

static int count_one(const struct ca_store_entry *e, void *userdata)
{
	struct count *c = userdata;
	if (atomic_load(&c->cs->stop))
		return -ECANCELED;
	if (e->kind != CA_STORE_TMP) {
		c->chunks++;
		c->bytes += (uint64_t)e->st.st_size;
	}
	return 0;
}

static void *walker(void *arg)
{
	struct ca_cache_size *cs = arg;
	struct ca_store *s = NULL;
	struct count c = { .cs = cs };
	uint64_t t0 = ca_now_ms();
	int r = ca_store_open_private(cs->dir, false, &s); /* logs */
	if (r == 0)
		r = ca_store_walk(s, count_one, &c);
	ca_store_free(s);
	if (r < 0 && r != -ECANCELED)
		ca_log_debug_errno(r, "cache %s: cannot count its chunks", cs->dir);
	pthread_mutex_lock(&cs->lock);
	if (r == 0) {
		cs->have = true;
		cs->ended_ms = ca_now_ms();
		cs->last = (struct ca_cache_size_stats){ .chunks = c.chunks, .bytes = c.bytes,
			                                 .walk_ms = cs->ended_ms - t0 };
	}
	cs->walking = false;
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

int ca_cache_size_new(const char *dir, unsigned interval_s, struct ca_cache_size **ret)
{
	struct ca_cache_size *cs = calloc(1, sizeof(*cs));
	*ret = NULL;
	if (!cs || !(cs->dir = strdup(dir))) {
		free(cs);
		return -ENOMEM;
	}
	cs->interval_ms = (uint64_t)(interval_s ? interval_s : CA_CACHE_SIZE_INTERVAL_S) * 1000;
	pthread_mutex_init(&cs->lock, NULL);
	*ret = cs;
	return 0;
}

void ca_cache_size_free(struct ca_cache_size *cs)
{
	if (!cs)
		return;
	atomic_store(&cs->stop, true);
	if (cs->joinable)
		pthread_join(cs->thread, NULL);
	pthread_mutex_destroy(&cs->lock);
	free(cs->dir);
	free(cs);
}

bool ca_cache_size_get(struct ca_cache_size *cs, struct ca_cache_size_stats *ret)
{
	uint64_t now = ca_now_ms();
	pthread_mutex_lock(&cs->lock);
	bool have = cs->have;
	*ret = cs->last;
	ret->age_ms = have ? now - cs->ended_ms : 0;
	/* a new count when the last is old (a failed one is tried again no
	 * sooner either), never two at once */
	bool due = !cs->walking && (!cs->started_ms || now - cs->started_ms >= cs->interval_ms);
	if (due && !atomic_load(&cs->stop)) {
		if (cs->joinable)
			pthread_join(cs->thread, NULL); /* ended: walking is false */
		cs->joinable = false;
		cs->started_ms = now ? now : 1;
		cs->walking = ca_thread_create(&cs->thread, walker, cs) == 0;
		cs->joinable = cs->walking;
	}
	pthread_mutex_unlock(&cs->lock);
	return have;
}
