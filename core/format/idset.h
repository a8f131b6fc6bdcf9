/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * idset.h - a set of chunk ids, each with a 64-bit value (a size, a flag):
 * what gc, prune, fill and seed use to ask "does this index need that
 * chunk?" in O(1). Open addressing on the id's first bytes (ids are
 * digests, already uniform). Not thread-safe: build it, then share it
 * read-only (or guard it with a lock of the caller's, as the chunk
 * source's set of chunks queued for its cache does).
 */
#ifndef CA_IDSET_H
#define CA_IDSET_H

#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

struct ca_idset;
struct ca_index;

/* hint: expected number of ids (the set grows as needed). */
int ca_idset_new(size_t hint, struct ca_idset **ret);
void ca_idset_free(struct ca_idset *s); /* accepts NULL */

/* Add id with value. 1 if added, 0 if it was already there (value kept), -ENOMEM. */
int ca_idset_add(struct ca_idset *s, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t value);
/* 1 and *ret_value (may be NULL) if present, 0 if not. */
int ca_idset_get(const struct ca_idset *s, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t *ret_value);
/* Change the value of a present id; -ENOENT if absent. */
int ca_idset_set(struct ca_idset *s, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t value);
/* Remove id: 1 if it was there, 0 if not. Positions of ca_idset_next
 * are not kept across a removal (a slot's neighbours move back). */
int ca_idset_remove(struct ca_idset *s, const uint8_t id[CA_CHUNK_ID_SIZE]);
size_t ca_idset_size(const struct ca_idset *s);

/* Add every chunk of idx (value: the chunk's uncompressed size; a chunk
 * already there keeps its value). 0 or -ENOMEM. */
int ca_idset_add_index(struct ca_idset *s, const struct ca_index *idx);

/* Iterate: start with *pos = 0; returns 1 with the next id (pointing into
 * the set, valid until it changes) and value, 0 at the end. */
int ca_idset_next(const struct ca_idset *s, size_t *pos, const uint8_t **ret_id, uint64_t *ret_value);

#endif
