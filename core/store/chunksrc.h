/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * chunksrc.h - where chunks come from: a chain of backends tried in order
 * (the local cache store first, then the stores in the order given: local,
 * remote, or failover groups of either, failover.h),
 * behind an in-memory LRU of decompressed, verified chunks.
 *
 *   get(id) -> LRU hit? -> someone already fetching id? wait for them
 *           -> backend 0, 1, ... until one has it
 *           -> decompress + verify against id (never hand out unverified data)
 *           -> write the compressed bytes back into the cache store
 *           -> LRU, wake waiters
 *
 * All functions are thread-safe. One in-flight table makes concurrent
 * requests for one chunk share one fetch. Locks: src->lock guards the LRU
 * and the in-flight table; it is never held across a backend fetch or a
 * decompression. ca_chunksrc_prefetch (and ca_chunksrc_hurry) holds it
 * across a cache lookup and the backend's non-blocking prefetch (or
 * hurry), so that a prefetch and a concurrent get of one chunk can never
 * download it twice.
 *
 * Memory: the LRU (lru_bytes), plus the chunks callers hold, plus fetches
 * in flight. Each fetch reserves its chunk file's bound and its decoded
 * size (from the index) before it starts, and waits while other fetches
 * hold CA_CHUNKSRC_INFLIGHT_MAX in total; one fetch alone always runs. So
 * 64 readers of a hostile index's 128 MiB chunks take turns, where a
 * normal index (chunks up to 256 KiB) never waits.
 */
#ifndef CA_CHUNKSRC_H
#define CA_CHUNKSRC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/digest.h"
#include "format/format.h"
#include "store/store.h"

/* A backend: something that can produce a chunk's compressed bytes. */
struct ca_chunk_backend_ops {
	const char *kind; /* "store", "http", ... for messages */
	/* Blocking, thread-safe. Fill out with the chunk file's bytes; *ret_compressed
	 * false for an uncompressed chunk. -ENOENT if this backend does not have it,
	 * -EIO (or another errno) if it failed to answer. */
	int (*fetch)(void *be, const uint8_t id[CA_CHUNK_ID_SIZE], struct ca_buf *out, bool *ret_compressed);
	/* Optional, non-blocking: start fetching id so a later fetch finds it fast. */
	void (*prefetch)(void *be, const uint8_t id[CA_CHUNK_ID_SIZE]);
	/* Optional: refuse (without keeping it) any chunk file over max bytes,
	 * before it is all read; called before the first fetch. */
	void (*set_file_max)(void *be, size_t max);
	/* Optional: 1 if the backend holds the chunk locally, 0 if not, without fetching. */
	int (*has)(void *be, const uint8_t id[CA_CHUNK_ID_SIZE]);
	/* Optional, non-blocking: a reader waits for id now (it joined a
	 * read-ahead's fetch): move its download, if one is queued behind
	 * others, to the front. A fetch learns the same from
	 * ca_chunksrc_fetch_is_demand. */
	void (*hurry)(void *be, const uint8_t id[CA_CHUNK_ID_SIZE]);
	void (*free)(void *be);
	/* true: the backend builds chunks here rather than downloading them
	 * (a delta pack): they count as built, not fetched */
	bool builds;
};

/* A decompressed, verified chunk, shared by reference. */
struct ca_chunk {
	const uint8_t *data;
	size_t size;
};

struct ca_chunksrc;

#define CA_CHUNKSRC_INFLIGHT_MAX ((size_t)64 << 20)

struct ca_chunksrc_stats {
	uint64_t lru_hits, cache_hits, fetched_chunks, fetched_bytes, errors, corrupt;
	uint64_t built_chunks, built_bytes; /* from a backend that builds (ops.builds), not fetched */
	uint64_t ra_decoded; /* chunks the read-ahead threads decoded into the LRU */
	/* demand gets (not background) that were not LRU hits: those that
	 * ran a fetch of their own (cache or backends), those that waited
	 * for one under way (a fill's, a read-ahead's, another reader's),
	 * and how long they waited in all: where a reader's time goes
	 * beside a background fill */
	uint64_t demand_fetches, demand_joins, demand_join_wait_us;
	uint64_t demand_fetch_us; /* how long the demand gets' own fetches took in all */
	uint64_t lru_bytes, lru_limit; /* the memory LRU now, and its bound */
};

/* lru_bytes bounds the memory LRU (0 disables it). */
int ca_chunksrc_new(enum ca_digest_type digest, size_t lru_bytes, struct ca_chunksrc **ret);
void ca_chunksrc_free(struct ca_chunksrc *src); /* accepts NULL; no get() may be running */

/* Append a backend; the chunksrc owns be and frees it with ops->free. */
int ca_chunksrc_add_backend(struct ca_chunksrc *src, const struct ca_chunk_backend_ops *ops, void *be);
/* The same, tried before every backend added before it (a delta pack,
 * which builds from the cache what the stores would download). */
int ca_chunksrc_add_backend_first(struct ca_chunksrc *src, const struct ca_chunk_backend_ops *ops, void *be);
/* Convenience: a local store as a read backend (owned). */
int ca_chunksrc_add_store(struct ca_chunksrc *src, struct ca_store *store);
/* The cache: tried first, and every chunk fetched from another backend is
 * written into it (owned). At most one. touch=true marks hits as used (mtime). */
int ca_chunksrc_set_cache(struct ca_chunksrc *src, struct ca_store *cache, bool touch);
/* Write the cache off the fetching thread's path: a fetched chunk goes to
 * its readers at once, and one writer thread compresses (a bare chunk)
 * and writes it, in order, through a bounded queue (256 chunks, 32 MiB;
 * a fetch waits while it is full). A queued chunk counts as cached
 * (is_local, the cache lookup); ca_chunksrc_free writes what is queued
 * before it returns. A failed write is a warning, as without. Off by
 * default: a caller that checks the cache store itself after a get
 * (cafs cache fill) keeps writes synchronous. */
void ca_chunksrc_set_cache_async(struct ca_chunksrc *src, bool async);
/* Readers first (a mount's): the writer holds a chunk back while demand
 * gets wait for chunks (one began or ended in the last 50 ms), for at
 * most 500 ms from its staging and not while half the queue is taken, so
 * the cache's file creation does not take the CPU from a cold start's
 * reads. Meanwhile the chunk counts as cached for this source (as any
 * queued one) but is not in the cache store yet: a caller that checks the
 * store itself after a get (an API fill) leaves this off, the default.
 * May be set at any time. */
void ca_chunksrc_set_cache_defer(struct ca_chunksrc *src, bool defer);
/* The index's largest chunk: chunk files beyond what it compresses to
 * (ca_compress_file_max) are corrupt, and backends with set_file_max stop
 * downloading there (the default is CA_CHUNK_SIZE_LIMIT_MAX's bound). */
void ca_chunksrc_set_chunk_size_max(struct ca_chunksrc *src, uint64_t chunk_size_max);
/* Offline: only the LRU and the cache are consulted; everything else fails with -ENOMEDIUM. */
void ca_chunksrc_set_offline(struct ca_chunksrc *src, bool offline);

/* The chunk id, uncompressed size `size` (UINT64_MAX if unknown). On success
 * *ret holds a reference; drop it with ca_chunksrc_put. -ENOENT: no backend
 * has it; -EBADMSG: every copy found was corrupt; other errno: I/O. */
int ca_chunksrc_get(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t size,
                    const struct ca_chunk **ret);
void ca_chunksrc_put(struct ca_chunksrc *src, const struct ca_chunk *chunk); /* accepts NULL */

/* Like get, but only makes sure the chunk will be quick to get: starts
 * backend prefetches; never blocks on the network. */
void ca_chunksrc_prefetch(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE]);

/* A reader is about to wait for id (a read that spans several chunks
 * gets them one after another): start its download now, or move one
 * queued behind background downloads (read-ahead, a whole file's) to the
 * front, as a demand get does itself. Never blocks; nothing when the
 * chunk is local or ready. */
void ca_chunksrc_hurry(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE]);

/* 1 if the chunk is in the LRU or the cache store, 0 if not. */
int ca_chunksrc_is_local(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE]);

void ca_chunksrc_get_stats(struct ca_chunksrc *src, struct ca_chunksrc_stats *ret);

/* The local-store backend ca_chunksrc_add_store uses (be: a struct
 * ca_store *, owned), for wrappers such as failover groups. */
const struct ca_chunk_backend_ops *ca_chunksrc_store_backend(void);
/* The backends in chain order (the cache not included): i < n, *ret_ops
 * may be NULL. Borrowed; they live as long as src. */
size_t ca_chunksrc_n_backends(const struct ca_chunksrc *src);
void *ca_chunksrc_backend(const struct ca_chunksrc *src, size_t i, const struct ca_chunk_backend_ops **ret_ops);

/* Background fetches (prefetch.h: profile replay, background fill) go
 * through get, with these flags; demand gets (ca_chunksrc_get) are
 * counted while they run a fetch of their own (not while they join one
 * under way), so that background work can stay out of their way. */
#define CA_CHUNKSRC_BACKGROUND 1u /* not a demand read (implied below) */
#define CA_CHUNKSRC_LRU_COLD 2u   /* enters the LRU at the end evicted first */
/* Fetched ahead of readers who may follow (a fill, in the order they
 * read): the chunk counts as unread in the LRU until a demand get takes
 * it, and while readers are taking such chunks (one in the last 500 ms)
 * it enters the LRU hot despite LRU_COLD, so that it is still decoded
 * there when its reader comes, not evicted by the fill's next chunk. */
#define CA_CHUNKSRC_AHEAD 4u
int ca_chunksrc_get_background(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t size,
                               unsigned flags, const struct ca_chunk **ret);
/* Block while a demand get runs a fetch (returns at once when none);
 * true if it had to wait. */
bool ca_chunksrc_wait_no_demand(struct ca_chunksrc *src);
/* Pace a fill to its readers: block while the unread AHEAD chunks hold
 * more than a quarter of the LRU and readers are taking them (a fill
 * further ahead would have its chunks evicted before they are read, and
 * each decoded again from the cache); a reader that stops taking them
 * (500 ms) lets the fill run free, and so does stop (looked at every
 * 50 ms). True if it had to wait. */
bool ca_chunksrc_ahead_wait(struct ca_chunksrc *src, const atomic_bool *stop);

/* Read-ahead of a chunk a reader will want soon (size as get's): starts
 * its download (as prefetch), and has one of the chunk source's own
 * threads fetch, decompress, verify and cache it into the LRU, so the
 * reader finds it ready and only copies: a sequential reader's decoding
 * runs beside its FUSE threads, on every core. Never blocks. Falls back to
 * a plain prefetch when the LRU could not keep what it decodes: no LRU, or
 * more than half of it already queued. The threads (CA_CHUNKSRC_RA_THREADS)
 * start with the first read-ahead and stop in ca_chunksrc_free (which waits
 * at most 2 s for one stuck in a fetch, then leaves it running and the
 * chunk source unfreed: the process is about to exit). Their
 * failures are not counted in the stats' errors: a reader who wants the
 * chunk asks again and sees (and counts) the error itself. */
#define CA_CHUNKSRC_RA_THREADS 4
void ca_chunksrc_readahead(struct ca_chunksrc *src, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t size);

/* The calling thread's way out of its waits for a chunk: a demand get
 * joining another thread's fetch, and a wait for a failing store
 * (remote.h). While fn(arg) returns true, such a wait ends with -EINTR.
 * The mount sets it per FUSE request (the kernel's INTERRUPT); fn is
 * polled about every 100 ms by the waiting thread itself. A thread-local
 * setting (as the logger, log.h); NULL clears it. */
typedef bool (*ca_chunk_cancelled_fn)(void *arg);
/* For a backend's fetch: true while the calling thread runs a demand get's
 * fetch (a reader waits for it), false in background ones (read-ahead, a
 * fill, a profile): a backend queues a demand fetch's download ahead of
 * the background ones it has queued (remote.h). Thread-local. */
bool ca_chunksrc_fetch_is_demand(void);
void ca_chunksrc_wait_hook(ca_chunk_cancelled_fn fn, void *arg);
bool ca_chunksrc_wait_cancelled(void);

#endif
