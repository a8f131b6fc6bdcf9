/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * store_ops.h - what `cafs gc` and `cafs cache stat|fill|prune|verify` do, one
 * call each, for the command and the library (cafs/store.h) alike: the
 * store or cache named by a string (a directory, file://, or for gc an S3
 * bucket), the indexes that pin chunks named by source strings (source.h),
 * opened, used and closed within the call. The policies are the store
 * layer's (store_gc.h, cache_prune.h, store_verify.h); here is only the
 * wiring from strings to them, hence the image layer (it opens indexes,
 * and reaches S3).
 *
 * Errors: 0 or a negative errno, logged as one line "cafs: <what>: <why>"
 * (the store, an index, a chunk). What the caller prints (summaries, dry
 * runs) comes back in stats and callbacks, so that the command's output
 * stays the command's. Callbacks run in the calling thread.
 */
#ifndef CA_STORE_OPS_H
#define CA_STORE_OPS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/digest.h"
#include "store/cache_fill.h"
#include "store/cache_prune.h"
#include "store/store_gc.h"
#include "store/store_verify.h"

/* ---- gc ---- */

struct ca_store_ops_gc_opts {
	/* the store: a directory, file:// or an S3 bucket; NULL: default.castr
	 * beside the first index (which must then be local) */
	const char *store;
	bool dry_run;
	/* each chunk removed (or that would be, in a dry run): "<prefix>/<id>.cacnk"
	 * (an object key for S3); may be NULL. Failed removals are logged. */
	void (*on_remove)(void *userdata, const char *rel);
	void *userdata;
	const volatile sig_atomic_t *cancel; /* optional: set stops a local store's gc (-ECANCELED) */
};

/* What ca_store_ops_gc refuses before any work as a usage error: -EINVAL
 * with msg set (nothing logged), or 0. */
int ca_store_ops_gc_check(const char *store, const char *first_index, char *msg, size_t len);

/* casync gc: keep every chunk of the n indexes (n >= 1: every one must
 * load, else nothing is removed), remove the store's others. *ret is set
 * whenever the store was walked; chunks that could not be removed are
 * counted in ret->failed and logged, not returned. */
int ca_store_ops_gc(char *const *indexes, size_t n, const struct ca_store_ops_gc_opts *o,
                    struct ca_store_gc_stats *ret);

/* ---- fill ---- */

struct ca_image_opts;

struct ca_store_ops_fill_opts {
	const char *cache;          /* the cache directory (made if missing) */
	char *const *sources;       /* the images whose chunks to fetch (source strings) */
	size_t n_sources;
	char *const *stores;        /* where chunks come from; none: each index's default */
	size_t n_stores;
	/* how the indexes are opened (trusted keys, policy; source.h); its
	 * cache settings are ours: each URL's index, sidecar and profile are
	 * kept in the cache too, for a later --offline. May be NULL. */
	const struct ca_image_opts *io;
	/* a delta pack (delta.h; path or URL) to build chunks from those the
	 * cache holds, before the store is asked; NULL: for a URL, the pack
	 * named for the index the cache kept for it before, if there */
	const char *delta;
	unsigned threads;           /* transfers in flight; 0: 8 */
	uint64_t rate_limit_bps;    /* per transfer; 0: none */
	const volatile sig_atomic_t *cancel; /* raised: stop between chunks */
	/* once with the bytes to fetch, then the bytes fetched so far (from
	 * the workers), then progress_end once before the summary; may be NULL */
	void (*progress_start)(void *userdata, uint64_t total);
	void (*progress)(void *userdata, uint64_t bytes);
	void (*progress_end)(void *userdata);
	void *progress_userdata;
};

struct ca_store_ops_fill_stats {
	struct ca_cache_fill_stats fill; /* over all sources (cache_fill.h) */
	/* chunks (and their uncompressed bytes) delta packs gave, in requests (and bytes read) */
	uint64_t delta_chunks, delta_bytes, delta_requests, delta_wire_bytes;
	uint64_t fetch_ns;  /* time spent fetching (after every index was planned) */
	bool broken;        /* a source's stores could not be opened (logged; the others filled) */
};

/* `cafs cache fill`: every chunk the sources need that the cache lacks,
 * fetched once even when several sources share it. Chunk errors are
 * logged one a line, the first 20, then counted ("N more chunks failed").
 * 0 with *ret set once fetching began (failures counted in it), or a
 * negative errno (logged) for what failed before: an index, the cache. */
int ca_store_ops_fill(const struct ca_store_ops_fill_opts *o, struct ca_store_ops_fill_stats *ret);

/* ---- prune ---- */

struct ca_store_ops_prune_opts {
	const char *cache;  /* the cache directory */
	uint64_t max_size;
	char *const *keep;  /* indexes whose chunks stay (source strings); each must load */
	size_t n_keep;
	int64_t min_age;    /* seconds (CA_CACHE_PRUNE_MIN_AGE_DEFAULT) */
	bool dry_run;       /* choose, remove nothing */
	/* each chosen chunk, in eviction order, before any is removed; may be NULL */
	void (*on_victim)(void *userdata, const char *hex_id);
	void *userdata;
};

/* Evict the least recently used chunks until cache fits max_size
 * (cache_prune.h). *ret is set when 0 is returned or when removals failed
 * (*ret_failed then true: each logged, the others removed). */
int ca_store_ops_prune(const struct ca_store_ops_prune_opts *o, struct ca_cache_prune_stats *ret, bool *ret_failed);

/* ---- verify ---- */

struct ca_store_ops_verify_opts {
	const char *store; /* a local store or cache directory */
	unsigned threads;  /* 0: one per CPU, at most 16 */
	bool any_digest;   /* a chunk matches under either digest */
	enum ca_digest_type digest; /* else this one */
	bool repair;       /* remove the corrupt ones */
	bool cache;        /* store is a cache: opened private (store.h), as the cache's owner keeps it */
	const volatile sig_atomic_t *cancel; /* optional: set stops it (-ECANCELED) */
};

/* Check every chunk file against its name (store_verify.h); each corrupt
 * or unreadable chunk is logged ("chunk <id>: corrupt data[, removed]").
 * 0 with *ret set (even if chunks are corrupt), or a negative errno. */
int ca_store_ops_verify(const struct ca_store_ops_verify_opts *o, struct ca_store_verify_stats *ret);

/* ---- stat ---- */

struct ca_store_ops_stat {
	uint64_t chunks, bytes; /* chunk files and their sizes */
	uint64_t disk;          /* bytes they take on disk */
	uint64_t tmp;           /* temporary files (a writer's, or a killed one's) */
};

/* Count the chunk files of the store at dir (nothing is changed; a
 * cache, opened private, may have its modes made private, store.h). */
int ca_store_ops_stat(const char *dir, bool cache, struct ca_store_ops_stat *ret);

struct ca_store_ops_presence {
	char *shown;             /* the source as it may be shown (credentials redacted; malloc'd, NULL if no memory) */
	uint64_t have, have_bytes; /* index entries whose chunk the store has, and their bytes */
	uint64_t chunks, bytes;  /* all entries of the index, and the image's size */
};

/* How much of the image at source (its index) the store at dir holds. On
 * 0, ret->shown is the caller's to free. */
int ca_store_ops_presence(const char *dir, const char *source, struct ca_store_ops_presence *ret);

/* ---- info ---- */

struct ca_store_ops_info {
	bool archive_index;       /* a .caidx (else a .caibx) */
	uint64_t flags;           /* the index's feature flags */
	char flag_names[1024];    /* their WITH bits by name, comma-separated */
	const char *digest;       /* the digest's name ("sha512-256") */
	uint64_t chunk_min, chunk_avg, chunk_max; /* the chunker's parameters */
	uint64_t size, chunks;    /* the image's bytes and index entries */
	uint64_t smallest, median, largest; /* entry sizes (0 without entries) */
	bool in_stores;           /* the stores were asked: */
	uint64_t present, present_bytes; /* entries (and bytes) one of them holds */
};

/* What `cafs info` prints of the index at source (opened with io, which
 * may be NULL): its parameters and entry sizes, and with stores, how much
 * of it they hold (asked with HEAD requests for remote ones). */
int ca_store_ops_info(const char *source, const struct ca_image_opts *io, char *const *stores, size_t n_stores,
                      struct ca_store_ops_info *ret);

/* ---- settings ---- */

/* Read the store settings files (cafs.conf, net/storeconf.h) once, with
 * their warnings, and forget them: a program's start-up check, so that a
 * bad file is one line before any work. 0, or a negative errno (logged). */
int ca_store_ops_check_settings(void);

#endif
