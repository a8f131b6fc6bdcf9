/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cafs/store.h - keeping a chunk store or cache: collect what no index
 * uses, prune a cache to a size, verify every chunk, count what is there.
 * The same calls `cafs gc` and `cafs cache stat|prune|verify` make.
 *
 * A store is a casync-layout directory (also one casync made), a file://
 * URL, or (for gc only) an S3 bucket (s3+https://host/bucket/path,
 * credentials from the environment as for the cafs command). Indexes are
 * named as cafs_image_open takes them (paths or URLs).
 *
 * Options and stats structs begin with `size_t size` (cafs/context.h): set
 * it in both; the library fills a stats struct up to the smaller of its
 * size and its own (a size above 4096 is refused with -E2BIG). A NULL or
 * empty store, index or cache name is refused with -EINVAL (an empty one
 * would mean the current directory). Errors are negative errnos, each logged through the
 * context's log function. Every call runs in the calling thread (verify
 * also in threads of its own, joined before it returns).
 * cafs_ctx_cancel stops verify and a local store's gc at the next chunk
 * (-ECANCELED; what gc removed until then stays removed); the others, and
 * an S3 gc, only notice it before they start.
 */
#ifndef CAFS_STORE_H
#define CAFS_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <cafs/context.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cafs_gc_options {
	size_t size;       /* sizeof(struct cafs_gc_options) */
	const char *store; /* NULL: default.castr beside the first index (a local one) */
	int dry_run;       /* non-zero: remove nothing, only count and report */
	/* each chunk removed (or that would be): "<prefix>/<id>.cacnk"; may be NULL */
	void (*removed)(void *userdata, const char *name);
	void *userdata;
};

struct cafs_gc_stats {
	size_t size;                     /* sizeof(struct cafs_gc_stats) */
	uint64_t kept;                   /* chunks the indexes use */
	uint64_t removed;                /* chunks removed (or that would be) */
	uint64_t removed_bytes;          /* their bytes */
	uint64_t failed;                 /* chunks that could not be removed */
	uint64_t dirs;                   /* emptied prefix directories removed */
};

/* casync gc: remove every chunk of the store that none of the n indexes
 * (n >= 1) uses. Every index must load, else nothing is removed. 0, or
 * -EIO when some chunks could not be removed (stats still set), or another
 * negative errno. Do not run it while something writes the store. */
int cafs_store_gc(struct cafs_ctx *ctx, const char *const *indexes, size_t n, const struct cafs_gc_options *o,
                  struct cafs_gc_stats *stats);

struct cafs_prune_options {
	size_t size;                /* sizeof(struct cafs_prune_options) */
	uint64_t max_size;          /* bytes of chunk files the cache may keep */
	const char *const *keep;    /* indexes whose chunks are never evicted */
	size_t n_keep;
	int64_t min_age;            /* seconds a used chunk is safe from eviction; 0: 5; negative: none */
	int dry_run;                /* non-zero: choose, remove nothing */
};

struct cafs_prune_stats {
	size_t size;                      /* sizeof(struct cafs_prune_stats) */
	uint64_t removed;                 /* chunks evicted (or that would be) */
	uint64_t removed_bytes;           /* their bytes */
	uint64_t left_chunks;             /* what stays */
	uint64_t left_bytes;
	uint64_t stale_tmp;               /* temporary files a killed writer left, removed */
};

/* Evict the least recently used chunks of cache (NULL: the default cache,
 * as cafs_image_open's CAFS_CACHE_DIR) until it fits max_size, keeping the
 * chunks of the keep indexes and those used in the last min_age seconds
 * (so left_bytes may stay above max_size). 0, -EIO when some chunks
 * could not be removed (stats still set), or another negative errno. */
int cafs_cache_prune(struct cafs_ctx *ctx, const char *cache, const struct cafs_prune_options *o,
                     struct cafs_prune_stats *stats);

struct cafs_verify_options {
	size_t size;      /* sizeof(struct cafs_verify_options) */
	unsigned threads; /* 0: one per CPU, at most 16 */
	int repair;       /* non-zero: remove corrupt chunks (a cache fetches them again) */
};

struct cafs_verify_stats {
	size_t size;      /* sizeof(struct cafs_verify_stats) */
	uint64_t ok;      /* chunks that match their name */
	uint64_t corrupt; /* that do not (each logged) */
	uint64_t removed; /* corrupt ones repair removed */
	uint64_t errors;  /* that could not be read */
};

/* Check every chunk of a local store against its name (under either
 * digest). 0 when all are good or the corrupt ones were removed;
 * CAFS_ECHUNKCORRUPT when corrupt chunks stay; -EIO when some could not
 * be read; stats set in all three cases. */
int cafs_store_verify(struct cafs_ctx *ctx, const char *store, const struct cafs_verify_options *o,
                      struct cafs_verify_stats *stats);

struct cafs_store_stats {
	size_t size;      /* sizeof(struct cafs_store_stats) */
	uint64_t chunks;  /* chunk files */
	uint64_t bytes;   /* their sizes */
	uint64_t disk_bytes; /* what they take on disk */
	uint64_t tmp_files;  /* temporary files (a writer's, or a killed one's) */
};

/* Count what a local store holds; nothing is changed (its modes neither:
 * a store others are served from stays readable by them). */
int cafs_store_stat(struct cafs_ctx *ctx, const char *store, struct cafs_store_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
