/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cache_prune.h - the LRU policy that keeps a chunk cache (a casync-layout
 * store) within a size: evict the least recently used chunks (oldest mtime
 * first; the chunk source and cache fill touch what they use) until the
 * cache fits, never a chunk of a pinned index nor one used in the last
 * min_age seconds, and clear away temporary files a killed writer left.
 *
 * Two steps, so a dry run is the first alone:
 *   ca_cache_prune_plan   walks the store and chooses (nothing is changed)
 *   ca_cache_prune_apply  removes what the plan chose
 * Safe against concurrent users of the cache (mounts, fills): a chunk that
 * vanished meanwhile counts as removed, and one evicted while in use is
 * fetched again. A plan is used by one thread at a time.
 */
#ifndef CA_CACHE_PRUNE_H
#define CA_CACHE_PRUNE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "format/format.h"

struct ca_store;
struct ca_idset;

/* A writer renames its temporary file within moments; one older than this lost its writer. */
#define CA_CACHE_PRUNE_STALE_TMP_SECONDS 3600
/* What prune leaves alone by default: chunks written or used this recently are in use now. */
#define CA_CACHE_PRUNE_MIN_AGE_DEFAULT 5

struct ca_cache_prune_opts {
	uint64_t max_size;           /* bytes of chunk files the cache may keep */
	const struct ca_idset *keep; /* chunks never evicted (ids only); NULL: none. Borrowed until the plan is freed. */
	int64_t min_age;             /* seconds: chunks with mtime newer than now - min_age stay */
	time_t now;                  /* the clock the ages are measured against; 0: time(NULL) */
};

struct ca_cache_prune_stats {
	uint64_t chunks, bytes;      /* in the cache when it was walked (chunk files, compressed or bare) */
	uint64_t victims, victim_bytes; /* chosen by the plan; after apply, actually removed */
	uint64_t left_chunks, left_bytes; /* what stays: chunks - victims, bytes - victim_bytes */
	uint64_t stale_tmp;          /* stale temporary files found; after apply, removed */
};

struct ca_cache_prune_plan;

/* Walk cache and choose the victims: the oldest unpinned chunks older than
 * min_age, in mtime order (ties by id), until what is left fits max_size
 * or nothing more may go. Changes nothing. *ret is owned by the caller
 * (ca_cache_prune_plan_free). Returns 0 or a negative errno (the store
 * could not be read, -ENOMEM). */
int ca_cache_prune_plan(struct ca_store *cache, const struct ca_cache_prune_opts *opts,
                        struct ca_cache_prune_plan **ret);
void ca_cache_prune_plan_free(struct ca_cache_prune_plan *p); /* accepts NULL */

/* The victims in eviction order: i < n_victims; *ret_size (may be NULL) is
 * the chunk file's size. The id points into the plan. */
size_t ca_cache_prune_plan_n_victims(const struct ca_cache_prune_plan *p);
const uint8_t *ca_cache_prune_plan_victim(const struct ca_cache_prune_plan *p, size_t i, uint64_t *ret_size);

/* Counts as planned, or as applied once ca_cache_prune_apply ran. */
void ca_cache_prune_plan_stats(const struct ca_cache_prune_plan *p, struct ca_cache_prune_stats *ret);

/* Remove the victims and the stale temporary files. A chunk that cannot
 * be removed is logged ("chunk <id>: <why>"), stays, and the others are
 * still removed. Returns 0, or the first negative errno of a removal.
 * At most once per plan (-EALREADY after). */
int ca_cache_prune_apply(struct ca_cache_prune_plan *p);

#endif
