/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cache_size.h - the size of a chunk cache (its chunk files and their
 * bytes) for a long-running reader of it (the mount's metrics), without
 * a walk of a big cache on each look: a look returns the last count at
 * once, and starts a new count in a background thread when none is under
 * way and the last one is older than the interval (or there is none yet).
 * So counts are at most one interval (plus a walk) old, a cache changes
 * under several writers and prunes anyway, and a scrape every 30 s of a
 * cache of a million chunks costs one walk per interval, off its path.
 *
 * Memory: constant. Thread-safe; free stops a walk under way (between
 * two files) and joins it.
 */
#ifndef CA_CACHE_SIZE_H
#define CA_CACHE_SIZE_H

#include <stdbool.h>
#include <stdint.h>

#define CA_CACHE_SIZE_INTERVAL_S 300

struct ca_cache_size;

struct ca_cache_size_stats {
	uint64_t chunks, bytes; /* chunk files (compressed and bare) and their sizes; temporary files not */
	uint64_t age_ms;        /* since that count ended */
	uint64_t walk_ms;       /* how long it took */
};

/* For the cache at dir (copied; opened by the walk, as store.h's private
 * cache, without creating it); interval_s 0: CA_CACHE_SIZE_INTERVAL_S.
 * Nothing is read until the first look. 0 or -ENOMEM. */
int ca_cache_size_new(const char *dir, unsigned interval_s, struct ca_cache_size **ret);
void ca_cache_size_free(struct ca_cache_size *cs); /* accepts NULL */
/* The last count into *ret: false when none has ended yet (the first
 * look starts it) or the cache could not be read. Never blocks on the
 * walk. */
bool ca_cache_size_get(struct ca_cache_size *cs, struct ca_cache_size_stats *ret);

#endif
