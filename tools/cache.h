/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cache.h - what the cache and gc commands share: the cache directory,
 * sizes, and `cafs cache`'s request (one for all verbs: the parser sets
 * only the fields of the options its verb takes). Seeding a cache from
 * local data is core's (image/image_seed.h).
 *
 * The chunk cache is an ordinary casync-layout store; everything here also
 * works on a store made by casync.
 */
#ifndef CAFS_CACHE_H
#define CAFS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmd.h"

/* `cafs cache`'s verbs: base.verb indexes these (cmd_cache.c's list) */
enum { CAFS_CACHE_STAT, CAFS_CACHE_FILL, CAFS_CACHE_PRUNE, CAFS_CACHE_VERIFY, CAFS_CACHE_SEED };

struct cafs_cache_request {
	struct cafs_request base;
	const char *cache;        /* --cache (NULL: the default) */
	char **operands;          /* stat, fill: sources; seed: SOURCE SEED... */
	size_t n_operands;
	bool json;                /* stat --json */
	/* fill */
	char **stores;            /* -s/--store (repeatable) */
	size_t n_stores;
	unsigned threads;         /* -j (fill and verify) */
	uint64_t rate_limit_bps;  /* --rate-limit-bps */
	struct cafs_trusted_keys trusted;
	const char *delta;        /* --delta */
	/* prune */
	uint64_t max_size;
	bool have_max;
	char **keep;              /* --keep (repeatable) */
	size_t n_keep;
	long min_age;
	bool dry_run;
	/* verify */
	bool repair;
	bool any_digest;          /* no --digest, or --digest=default */
	enum ca_digest_type digest;
	/* seed */
	const char *seed_store;
};

/* the verbs of `cafs cache` that live outside cmd_cache.c: the exit code */
int cafs_cache_fill(const struct cafs_cache_request *q);
int cafs_cache_seed(const struct cafs_cache_request *q);

/* --cache DIR, or ca_source_default_cache_dir(); malloc'd, NULL on ENOMEM (logged). */
char *cafs_cache_dir(const char *opt);

/* Parse a size: bytes, or with K, M, G, T (powers of 1024; "KiB"/"KB" alike). */
int cafs_parse_size(const char *s, uint64_t *ret);
/* "12.3 MiB" */
void cafs_format_size(uint64_t v, char *buf, size_t len);

#endif
