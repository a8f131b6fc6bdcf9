/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cache.h - what the cache and gc commands share: the cache directory, sizes,
 * and seeding a cache from local data (also used by `cafs extract --seed`).
 *
 * The chunk cache is an ordinary casync-layout store; everything here also
 * works on a store made by casync.
 */
#ifndef CAFS_CACHE_H
#define CAFS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "format/format.h"

struct ca_index;
struct ca_store;

/* the verbs of `cafs cache` that live outside cmd_cache.c (argv[0] is the verb) */
int cafs_cache_fill(int argc, char **argv);
int cafs_cache_seed(int argc, char **argv);

/* --cache DIR, or ca_source_default_cache_dir(); malloc'd, NULL on ENOMEM (logged). */
char *cafs_cache_dir(const char *opt);

/* Parse a size: bytes, or with K, M, G, T (powers of 1024; "KiB"/"KB" alike). */
int cafs_parse_size(const char *s, uint64_t *ret);
/* "12.3 MiB" */
void cafs_format_size(uint64_t v, char *buf, size_t len);

struct cafs_seed_stats {
	uint64_t seed_bytes;    /* bytes of seed data chunked */
	uint64_t chunks, bytes; /* chunks (and their uncompressed bytes) put into the cache */
};

/* Put into cache every chunk idx needs that the seeds yield and the cache
 * lacks. A seed is a blob file, a block device or a .catar (chunked with
 * idx's sizes and digest), or a .caibx/.caidx whose chunks are copied from
 * seed_store (default: default.castr beside it) when its chunking matches
 * idx's, and otherwise read back and re-chunked; or, for an archive index,
 * a directory (encoded as a .catar with idx's feature flags). Logs its errors. */
struct ca_reflink;
/* reflink (may be NULL): also note where in seed files the chunks are */
int cafs_seed_cache(struct ca_store *cache, const struct ca_index *idx, char **seeds, size_t n_seeds,
                    const char *seed_store, struct ca_reflink *reflink, struct cafs_seed_stats *ret_stats);

#endif
