/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* failover.c - failover groups of mirrored stores (see failover.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/failover.h"
#include "base/location.h"
#include "base/log.h"

struct member {
	const struct ca_chunk_backend_ops *ops;
	void *be;
	char *shown; /* the name, redacted */
};

struct ca_failover {
	struct member members[CA_FAILOVER_MAX_MEMBERS];
	size_t n;

	pthread_mutex_t lock; /* guards what follows */
	size_t active;
	uint64_t switches, failures;
	/* the last switch, said once the new member answers (a group whose
	 * every member is down says nothing but the read's error) */
	bool untold;
	size_t told_from;
	int told_err;
	/* the active member has served a fetch since it became active:
	 * only then does it get prefetches (see group_prefetch) */
	bool proven;
};

bool ca_failover_is_group(const char *s)
{
	return s && strchr(s, '|');
}

void ca_failover_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

int ca_failover_split(const char *s, char ***ret, size_t *ret_n)
{
	size_t n = 1;
	for (const char *p = s; *p; p++)
		n += *p == '|';
	if (n > CA_FAILOVER_MAX_MEMBERS)
		return -E2BIG;
	char **v = calloc(n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	const char *p = s;
	for (size_t i = 0; i < n; i++) {
		size_t len = strcspn(p, "|");
		if (len == 0) {
			ca_failover_strv_free(v);
			return -EINVAL;
		}
		v[i] = strndup(p, len);
		if (!v[i]) {
			ca_failover_strv_free(v);
			return -ENOMEM;
		}
		p += len + (p[len] == '|');
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

char *ca_failover_map(const char *s, char *(*fn)(const char *member))
{
	char **v = NULL, *out = NULL;
	size_t n = 0, len = 0;
	if (!ca_failover_is_group(s))
		return fn(s);
	/* an unsplittable group goes through as it is: opening it says why */
	if (ca_failover_split(s, &v, &n) < 0)
		return strdup(s);
	for (size_t i = 0; i < n; i++) {
		char *m = fn(v[i]);
		free(v[i]);
		v[i] = m;
		if (!m) {
			for (size_t j = i + 1; j < n; j++) /* the rest, behind the NULL */
				free(v[j]);
			goto out;
		}
		len += strlen(m) + 1;
	}
	out = malloc(len + 1); /* (+1: the compiler cannot tell n > 0) */
	if (!out)
		goto out;
	out[0] = 0;
	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(out, "|");
		strcat(out, v[i]);
	}
out:
	ca_failover_strv_free(v);
	return out;
}

int ca_failover_new(struct ca_failover **ret)
{
	struct ca_failover *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->lock, NULL);
	*ret = g;
	return 0;
}

void ca_failover_free(struct ca_failover *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++) {
		if (g->members[i].ops->free)
			g->members[i].ops->free(g->members[i].be);
		free(g->members[i].shown);
	}
	pthread_mutex_destroy(&g->lock);
	free(g);
}

int ca_failover_add(struct ca_failover *g, const char *name, const struct ca_chunk_backend_ops *ops, void *be)
{
	char *shown = ca_location_redact(name);
	if (g->n == CA_FAILOVER_MAX_MEMBERS || !shown) {
		if (ops->free)
			ops->free(be);
		free(shown);
		return shown ? -E2BIG : -ENOMEM;
	}
	g->members[g->n++] = (struct member){ ops, be, shown };
	return 0;
}

/* Only what a member did wrong moves the group on: not a cancellation, not
 * our own memory running out, and not "missing" (the mirrors agree). */
static bool member_failed(int r)
{
	return r < 0 && r != -ENOENT && r != -ECANCELED && r != -ENOMEM;
}

/* Member i answered: if the group moved to it and has not said so, say
 * it now, once, with the failure that started the move. */
static void tell_switch(struct ca_failover *g, size_t i)
{
	pthread_mutex_lock(&g->lock);
	if (g->active == i)
		g->proven = true;
	bool say = g->untold && g->active == i;
	size_t from = g->told_from;
	int err = g->told_err;
	if (say)
		g->untold = false;
	pthread_mutex_unlock(&g->lock);
	if (say) {
		char e[128];
		ca_log_warning("store %s failed (%s): using %s", g->members[from].shown, ca_strerror(err, e, sizeof(e)),
		               g->members[i].shown);
	}
}

static int group_fetch(void *be, const uint8_t id[CA_CHUNK_ID_SIZE], struct ca_buf *out, bool *ret_compressed)
{
	struct ca_failover *g = be;
	uint32_t tried = 0; /* members this request has failed on */
	int r = -ENOENT;

	for (;;) {
		pthread_mutex_lock(&g->lock);
		size_t i = g->active;
		/* the active member, unless this request failed there already */
		for (size_t k = 0; k < g->n && (tried & (1u << i)); k++)
			i = (i + 1) % g->n;
		pthread_mutex_unlock(&g->lock);
		if (tried & (1u << i))
			return r; /* every member failed: the last one's error */
		const struct member *m = &g->members[i];
		out->size = 0;
		r = m->ops->fetch(m->be, id, out, ret_compressed);
		if (!member_failed(r)) {
			tell_switch(g, i);
			return r;
		}
		tried |= 1u << i;
		pthread_mutex_lock(&g->lock);
		g->failures++;
		/* requests that failed on a member already left behind do not
		 * move the group again */
		bool moved = g->active == i && g->n > 1;
		if (moved) {
			g->active = (i + 1) % g->n;
			g->switches++;
			g->proven = false;
			if (!g->untold) {
				g->untold = true;
				g->told_from = i;
				g->told_err = r;
			} else if (g->active == g->told_from) {
				g->untold = false; /* round and back: nothing changed */
			}
		}
		pthread_mutex_unlock(&g->lock);
	}
}

/* Prefetches go to the active member once it has answered a fetch: a
 * reader's prefetch window (extract asks for hundreds of chunks ahead)
 * sent to a member that answers 503 would be one failed request per
 * chunk before the first fetch finds out and moves the group on. */
static void group_prefetch(void *be, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	struct ca_failover *g = be;
	pthread_mutex_lock(&g->lock);
	const struct member *m = &g->members[g->active];
	bool proven = g->proven;
	pthread_mutex_unlock(&g->lock);
	if (!proven)
		return;
	if (m->ops->has && m->ops->has(m->be, id) > 0)
		return;
	if (m->ops->prefetch)
		m->ops->prefetch(m->be, id);
}

/* A reader waits for id: the active member's queued download of it goes first. */
static void group_hurry(void *be, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	struct ca_failover *g = be;
	pthread_mutex_lock(&g->lock);
	const struct member *m = &g->members[g->active];
	pthread_mutex_unlock(&g->lock);
	if (m->ops->hurry)
		m->ops->hurry(m->be, id);
}

static void group_set_file_max(void *be, size_t max)
{
	struct ca_failover *g = be;
	for (size_t i = 0; i < g->n; i++)
		if (g->members[i].ops->set_file_max)
			g->members[i].ops->set_file_max(g->members[i].be, max);
}

static void group_free(void *be)
{
	ca_failover_free(be);
}

const struct ca_chunk_backend_ops ca_failover_ops = {
	.kind = "group",
	.fetch = group_fetch,
	.prefetch = group_prefetch,
	.hurry = group_hurry,
	.set_file_max = group_set_file_max,
	.free = group_free,
};

void ca_failover_get_stats(struct ca_failover *g, struct ca_failover_stats *ret)
{
	pthread_mutex_lock(&g->lock);
	*ret = (struct ca_failover_stats){
		.active = g->active,
		.n_members = g->n,
		.switches = g->switches,
		.failures = g->failures,
	};
	pthread_mutex_unlock(&g->lock);
}

void ca_failover_active_name(struct ca_failover *g, char *out, size_t cap)
{
	pthread_mutex_lock(&g->lock);
	size_t i = g->active;
	pthread_mutex_unlock(&g->lock);
	snprintf(out, cap, "%s", g->n ? g->members[i].shown : "");
}
