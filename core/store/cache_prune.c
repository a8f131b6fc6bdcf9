/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cache_prune.c - LRU eviction for a chunk cache: plan (walk, sort, choose), apply (unlink). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/cache_prune.h"
#include "base/digest.h"
#include "format/idset.h"
#include "base/log.h"
#include "store/store.h"

struct entry {
	uint8_t id[CA_CHUNK_ID_SIZE];
	uint64_t size;
	struct timespec mtime;
	enum ca_store_kind kind;
};

struct ca_cache_prune_plan {
	struct ca_store *cache; /* borrowed */
	struct entry *v;        /* every chunk file, sorted by mtime */
	size_t n, cap;
	size_t *victims;        /* indexes into v, in eviction order */
	size_t n_victims;
	char **tmp;             /* stale temporary files, "<prefix>/<name>" */
	size_t n_tmp, cap_tmp;
	struct ca_cache_prune_stats stats;
	time_t now;
	bool applied;
};

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 1024;
	void *p = realloc(*v, c * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

static int collect(const struct ca_store_entry *se, void *userdata)
{
	struct ca_cache_prune_plan *p = userdata;
	if (se->kind == CA_STORE_TMP) {
		if (se->st.st_mtim.tv_sec + CA_CACHE_PRUNE_STALE_TMP_SECONDS >= p->now)
			return 0;
		int r = grow((void **)&p->tmp, &p->cap_tmp, p->n_tmp, sizeof(*p->tmp));
		if (r < 0)
			return r;
		char *s = malloc(5 + strlen(se->name) + 1);
		if (!s)
			return -ENOMEM;
		sprintf(s, "%.4s/%s", se->name, se->name);
		p->tmp[p->n_tmp++] = s;
		p->stats.stale_tmp++;
		return 0;
	}
	int r = grow((void **)&p->v, &p->cap, p->n, sizeof(*p->v));
	if (r < 0)
		return r;
	struct entry *e = &p->v[p->n++];
	memcpy(e->id, se->id, CA_CHUNK_ID_SIZE);
	e->size = (uint64_t)se->st.st_size;
	e->mtime = se->st.st_mtim;
	e->kind = se->kind;
	p->stats.chunks++;
	p->stats.bytes += e->size;
	return 0;
}

static int cmp_mtime(const void *x, const void *y)
{
	const struct entry *a = x, *b = y;
	if (a->mtime.tv_sec != b->mtime.tv_sec)
		return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
	if (a->mtime.tv_nsec != b->mtime.tv_nsec)
		return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
	return memcmp(a->id, b->id, CA_CHUNK_ID_SIZE); /* deterministic order for ties */
}

/* Victims in mtime order until what is left fits or nothing more may go. */
static int choose(struct ca_cache_prune_plan *p, const struct ca_cache_prune_opts *opts)
{
	uint64_t left = p->stats.bytes;
	if (p->n > 1) /* qsort wants a non-NULL base even for 0 elements */
		qsort(p->v, p->n, sizeof(*p->v), cmp_mtime);
	p->victims = malloc((p->n ? p->n : 1) * sizeof(*p->victims));
	if (!p->victims)
		return -ENOMEM;
	for (size_t i = 0; i < p->n && left > opts->max_size; i++) {
		const struct entry *e = &p->v[i];
		if (opts->keep && ca_idset_get(opts->keep, e->id, NULL))
			continue;
		if (e->mtime.tv_sec + opts->min_age > p->now)
			continue;
		p->victims[p->n_victims++] = i;
		p->stats.victims++;
		p->stats.victim_bytes += e->size;
		left -= e->size;
	}
	p->stats.left_chunks = p->stats.chunks - p->stats.victims;
	p->stats.left_bytes = left;
	return 0;
}

int ca_cache_prune_plan(struct ca_store *cache, const struct ca_cache_prune_opts *opts,
                        struct ca_cache_prune_plan **ret)
{
	struct ca_cache_prune_plan *p = calloc(1, sizeof(*p));
	int r;
	if (!p)
		return -ENOMEM;
	p->cache = cache;
	p->now = opts->now ? opts->now : time(NULL);
	r = ca_store_walk(cache, collect, p);
	if (r < 0)
		goto fail;
	r = choose(p, opts);
	if (r < 0)
		goto fail;
	*ret = p;
	return 0;
fail:
	ca_cache_prune_plan_free(p);
	return r;
}

void ca_cache_prune_plan_free(struct ca_cache_prune_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_tmp; i++)
		free(p->tmp[i]);
	free(p->tmp);
	free(p->victims);
	free(p->v);
	free(p);
}

size_t ca_cache_prune_plan_n_victims(const struct ca_cache_prune_plan *p)
{
	return p->n_victims;
}

const uint8_t *ca_cache_prune_plan_victim(const struct ca_cache_prune_plan *p, size_t i, uint64_t *ret_size)
{
	const struct entry *e = &p->v[p->victims[i]];
	if (ret_size)
		*ret_size = e->size;
	return e->id;
}

void ca_cache_prune_plan_stats(const struct ca_cache_prune_plan *p, struct ca_cache_prune_stats *ret)
{
	*ret = p->stats;
}

int ca_cache_prune_apply(struct ca_cache_prune_plan *p)
{
	struct ca_cache_prune_stats *st = &p->stats;
	int first = 0;
	if (p->applied)
		return -EALREADY;
	p->applied = true;
	st->victims = st->victim_bytes = st->stale_tmp = 0;
	for (size_t i = 0; i < p->n_victims; i++) {
		const struct entry *e = &p->v[p->victims[i]];
		int r = ca_store_remove_file(p->cache, e->id, e->kind);
		if (r < 0 && r != -ENOENT) { /* gone already (another prune): as good as removed */
			char hex[2 * CA_CHUNK_ID_SIZE + 1];
			ca_id_to_hex(e->id, hex);
			ca_log_error_errno(r, "chunk %s", hex);
			if (!first)
				first = r;
			continue;
		}
		st->victims++;
		st->victim_bytes += e->size;
	}
	st->left_chunks = st->chunks - st->victims;
	st->left_bytes = st->bytes - st->victim_bytes;
	for (size_t i = 0; i < p->n_tmp; i++) {
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s", ca_store_path(p->cache), p->tmp[i]) >= (int)sizeof(path))
			continue;
		/* not an error if it failed: a writer may have finished it meanwhile */
		if (unlink(path) == 0)
			st->stale_tmp++;
	}
	return first;
}
