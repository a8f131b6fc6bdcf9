/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seed.h - chunk a local byte stream (a seed: an old image, a block device,
 * a .catar) with given chunk sizes and digest, and report every chunk with
 * its id, offset and bytes. Used to find, in data the user already has, the
 * chunks a new index needs, so they need not be downloaded.
 *
 * Unlike ca_maker this stores nothing and hands each chunk's bytes to the
 * caller. One thread; the callback runs in the feeding thread and the data
 * pointer is valid only during the call. Not thread-safe.
 */
#ifndef CA_SEED_H
#define CA_SEED_H

#include <stddef.h>
#include <stdint.h>

#include "base/digest.h"
#include "format/format.h"

/* Return 0 to go on, > 0 to stop early (returned by feed/finish), < 0 for an error. */
typedef int (*ca_seed_chunk_fn)(const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t offset, const void *data,
                                size_t size, void *userdata);

struct ca_seeder;

/* Sizes as in the target index header (validated like ca_chunker_init). */
int ca_seeder_new(uint64_t min, uint64_t avg, uint64_t max, enum ca_digest_type digest, ca_seed_chunk_fn fn,
                  void *userdata, struct ca_seeder **ret);
void ca_seeder_free(struct ca_seeder *s); /* accepts NULL */

/* Push bytes; callbacks fire for each chunk completed. Returns 0, the
 * callback's positive stop value, or a negative errno. */
int ca_seeder_feed(struct ca_seeder *s, const void *p, size_t n);
/* The last (partial) chunk. Same returns. */
int ca_seeder_finish(struct ca_seeder *s);
/* feed everything readable from fd, then finish. */
int ca_seeder_feed_fd(struct ca_seeder *s, int fd);

/* bytes fed so far */
uint64_t ca_seeder_offset(const struct ca_seeder *s);

#endif
