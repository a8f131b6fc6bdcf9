/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * index.h - .caibx / .caidx index files: a chunk table mapping the image's
 * byte stream to chunk ids.
 *
 * Reading maps the file (or adopts a buffer downloaded over HTTP) and checks
 * all of it once, as casync does: header, flags, sizes, strictly increasing
 * end offsets, chunk sizes within max, and the tail. The chunk table is
 * then used in place: an index costs no memory beyond its own size.
 * A ca_index is immutable after open, so any number of threads may read it.
 *
 * Writing appends items to a temporary file and renames it into place on
 * commit, as casync writes ".#<name><16 hex>"; the file is fsynced before
 * the rename and its directory after it.
 */
#ifndef CA_INDEX_H
#define CA_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/format.h"

struct ca_index;

/* Map and validate an index file. -EBADMSG for anything malformed (a
 * message saying what is logged at debug level), other errno for I/O. */
int ca_index_open(const char *path, struct ca_index **ret);
/* Validate an index held in memory and take ownership of data (free()d). */
int ca_index_adopt(void *data, size_t size, struct ca_index **ret);
void ca_index_free(struct ca_index *idx); /* accepts NULL */

uint64_t ca_index_feature_flags(const struct ca_index *idx);
/* The index file's bytes as read (what the metadata sidecar's digest names). */
const void *ca_index_data(const struct ca_index *idx, size_t *ret_size);
uint64_t ca_index_chunk_size_min(const struct ca_index *idx);
uint64_t ca_index_chunk_size_avg(const struct ca_index *idx);
uint64_t ca_index_chunk_size_max(const struct ca_index *idx);
size_t ca_index_n_chunks(const struct ca_index *idx);
/* The size of the image: the last chunk's end, 0 when empty. */
uint64_t ca_index_blob_size(const struct ca_index *idx);

/* Chunk i (< n_chunks): [*ret_start, *ret_end) of the image and its id.
 * The id points into the index and lives as long as it. */
void ca_index_chunk(const struct ca_index *idx, size_t i, uint64_t *ret_start, uint64_t *ret_end,
                    const uint8_t **ret_id);
/* The chunk holding image offset off (< blob size), by binary search. -ERANGE past the end. */
ssize_t ca_index_find(const struct ca_index *idx, uint64_t off);

struct ca_index_writer;

/* Start writing path (temp name, mode & 0666). */
int ca_index_writer_open(const char *path, uint64_t feature_flags, uint64_t min, uint64_t avg, uint64_t max,
                         mode_t mode, struct ca_index_writer **ret);
/* Append a chunk that ends at image offset `end`. -EINVAL if it is out of order or larger than max. */
int ca_index_writer_add(struct ca_index_writer *w, uint64_t end, const uint8_t id[CA_CHUNK_ID_SIZE]);
/* Write the tail and rename into place; frees w whatever happens. */
int ca_index_writer_commit(struct ca_index_writer *w);
/* Drop the temporary file; accepts NULL. */
void ca_index_writer_abort(struct ca_index_writer *w);

#endif
