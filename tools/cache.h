/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cache.h - what the cache and gc commands share: the cache directory and
 * sizes. Seeding a cache from local data is core's (image/image_seed.h).
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

/* the verbs of `cafs cache` that live outside cmd_cache.c (argv[0] is the verb) */
int cafs_cache_fill(int argc, char **argv);
int cafs_cache_seed(int argc, char **argv);

/* --cache DIR, or ca_source_default_cache_dir(); malloc'd, NULL on ENOMEM (logged). */
char *cafs_cache_dir(const char *opt);

/* Parse a size: bytes, or with K, M, G, T (powers of 1024; "KiB"/"KB" alike). */
int cafs_parse_size(const char *s, uint64_t *ret);
/* "12.3 MiB" */
void cafs_format_size(uint64_t v, char *buf, size_t len);

#endif
