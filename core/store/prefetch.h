/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * prefetch.h - background work for a mount: replaying a prefetch profile
 * (profile.h) and filling the cache with the whole image.
 *
 * A few worker threads (CA_PREFETCH_WORKERS, fewer than the HTTP engine's
 * connections per host, so a demand read always finds one free) take
 * chunks in order: first the profile's (in its order; kept in the memory
 * LRU, they are about to be read), then, with fill, every chunk of the
 * index in index order that is not already local (into the cache, and into
 * the LRU: CA_CHUNKSRC_AHEAD, hot while a reader follows the fill, and the
 * fill then waits, not counted in waits, while a quarter of the LRU is its
 * unread chunks, so that each is decoded once; cold otherwise, so that a
 * fill far ahead displaces nothing a reader uses). Before each fetch a
 * worker waits until no demand read is waiting on a fetch of its own
 * (ca_chunksrc_wait_no_demand): background work never starts ahead of a
 * demand read, and one already running is at most one chunk
 * per worker. A chunk a demand read is already fetching is joined, not
 * fetched twice (the chunk source's in-flight table).
 *
 * A chunk that fails (a server error, offline) is counted and left: the
 * fill ends "incomplete" and those chunks are fetched on demand.
 *
 * Threads: stats may be read from any thread; stop joins the workers
 * (a fetch under way finishes first).
 */
#ifndef CA_PREFETCH_H
#define CA_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/chunksrc.h"
#include "format/index.h"

#define CA_PREFETCH_WORKERS 6

struct ca_prefetch;

struct ca_prefetch_stats {
	uint64_t profile_chunks, profile_done;        /* the profile's chunks, and those now local */
	bool fill;                                    /* a fill was asked for */
	uint64_t fill_chunks, fill_done;              /* the index's chunks, and those now local */
	uint64_t fill_bytes, fill_done_bytes;         /* their (decompressed) sizes */
	uint64_t errors;                              /* background fetches that failed */
	bool finished;                                /* nothing left to do */
	uint64_t waits;                               /* fetches that first waited for a demand read's */
};

/* Start the workers over idx's chunks through src (both borrowed: they
 * must outlive the prefetch): the chunks order[0..n) first (taken over:
 * malloc'd, may be NULL when n is 0), then with fill all of them. */
int ca_prefetch_start(struct ca_chunksrc *src, const struct ca_index *idx, size_t *order, size_t n, bool fill,
                      struct ca_prefetch **ret);
void ca_prefetch_stop(struct ca_prefetch *p); /* accepts NULL */
void ca_prefetch_get_stats(struct ca_prefetch *p, struct ca_prefetch_stats *ret);

#endif
