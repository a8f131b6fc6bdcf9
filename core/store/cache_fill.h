/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cache_fill.h - pre-seed a chunk cache: fetch every chunk an index needs
 * that the cache lacks, so extract and the mount then work offline.
 *
 * Two steps, so several indexes can be planned first (one total for a
 * progress bar, shared chunks fetched once) and then filled each from its
 * own stores:
 *   ca_cache_fill_plan  which chunks of the index the cache lacks
 *   ca_cache_fill_run   a pool of threads of its own fetches them through
 *                       a chunk source whose cache is that cache
 *
 * The chunk source does the real work (fetch, verify, write atomically into
 * its cache), so an interrupted fill loses at most the chunks in flight and
 * the next one skips what is there. Workers announce the chunks ahead of
 * them (ca_chunksrc_prefetch), which lets a remote backend keep many
 * transfers in flight whatever the thread count.
 */
#ifndef CA_CACHE_FILL_H
#define CA_CACHE_FILL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "format/format.h"

struct ca_store;
struct ca_index;
struct ca_idset;
struct ca_chunksrc;

#define CA_CACHE_FILL_THREADS_DEFAULT 8
#define CA_CACHE_FILL_THREADS_MAX 64

struct ca_cache_fill_opts {
	unsigned threads;                    /* 0: CA_CACHE_FILL_THREADS_DEFAULT; at most _MAX */
	uint64_t rate_limit_bps;             /* bytes per second the backends deliver (compressed); 0: no limit */
	const volatile sig_atomic_t *cancel; /* polled before each chunk; non-zero stops the run. NULL: never */
	/* Called after each chunk with the bytes (uncompressed) fetched so far:
	 * stats->fetched_bytes as it was on entry plus this run's. From the
	 * worker threads, possibly concurrently. May be NULL. */
	void (*progress)(void *userdata, uint64_t done_bytes);
	void *progress_userdata;
	/* A chunk that could not be filled is logged by the run itself, one
	 * line each ("NAME: chunk ID: not found in any store", "...: cannot
	 * store it in CACHE", "...: <errno>"), the first
	 * CA_CACHE_FILL_MAX_REPORTED over every run summed into one stats
	 * struct; ca_cache_fill_log_rest says how many more. name: the
	 * image's, before each line; NULL: none. */
	const char *name;
};

/* chunk error lines a fill logs (over the runs summed into one stats struct) */
#define CA_CACHE_FILL_MAX_REPORTED 20

/* Counters that the plan and the runs add to, so one struct can sum the
 * fills of several indexes; zero it first. */
struct ca_cache_fill_stats {
	uint64_t present, present_bytes; /* plan: distinct chunks the cache held already */
	uint64_t todo, todo_bytes;       /* plan: distinct chunks to fetch */
	uint64_t fetched, fetched_bytes; /* run: chunks now in the cache (uncompressed bytes) */
	uint64_t wire_bytes;             /* run: compressed bytes the backends delivered */
	uint64_t failed;                 /* run: chunks that could not be filled */
	int first_err;                   /* run: the first failed chunk's error as a reader of the
	                                  * image sees it (ca_blob_chunk_errno), -EIO if it was
	                                  * fetched but not stored; 0 when none failed */
};

/* How much of idx's image cache holds, as `cache stat SOURCE` shows it:
 * the index entries whose chunk the cache has and their bytes (counted per
 * entry, so they add up to the image; each distinct chunk is looked up
 * once). Touches nothing. Returns 0 or a negative errno (a lookup failed,
 * -ENOMEM). */
int ca_cache_fill_presence(struct ca_store *cache, const struct ca_index *idx, uint64_t *ret_chunks,
                           uint64_t *ret_bytes);

struct ca_cache_fill_plan;

/* The distinct chunks of idx that cache lacks, in index order. Chunks
 * already in `queued` are left out and the plan's are added to it, so
 * indexes planned one after another with one set never fetch a chunk
 * twice (NULL: a set of the plan's own). Chunks found in the cache are
 * touched: a fill is a use, and keeps them from prune. Adds to
 * ret_stats->present, present_bytes, todo and todo_bytes.
 *
 * cache and idx are borrowed: the caller keeps them until the plan is
 * freed (the plan points into idx's chunk table). *ret is the caller's
 * (ca_cache_fill_plan_free). Returns 0 or a negative errno (a lookup in the
 * cache failed, -ENOMEM). */
int ca_cache_fill_plan(struct ca_store *cache, const struct ca_index *idx, struct ca_idset *queued,
                       struct ca_cache_fill_plan **ret, struct ca_cache_fill_stats *ret_stats);
void ca_cache_fill_plan_free(struct ca_cache_fill_plan *p); /* accepts NULL */

/* Fetch the plan's chunks through src, whose cache (ca_chunksrc_set_cache)
 * must be the plan's cache directory: a chunk counts as filled only once
 * the plan's cache store has it. src is borrowed and may be used by others
 * meanwhile (its wire bytes are then counted too). Adds to ret_stats
 * fetched, fetched_bytes, wire_bytes, failed and first_err. Returns 0 when every chunk
 * was tried (failures are counted, not returned), -ECANCELED if *cancel
 * stopped it, or another negative errno. Blocks until its threads are done. */
int ca_cache_fill_run(const struct ca_cache_fill_plan *p, struct ca_chunksrc *src,
                      const struct ca_cache_fill_opts *opts, struct ca_cache_fill_stats *ret_stats);

/* After the last run: "N more chunks failed" when the runs summed into st
 * failed more chunks than they logged lines for; nothing otherwise. */
void ca_cache_fill_log_rest(const struct ca_cache_fill_stats *st);

#endif
