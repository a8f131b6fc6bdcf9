/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * blob.h - an image's byte stream, any range: the one path every reader of
 * an image takes. Maps [off, off+len) to chunks through the index, asks the
 * chunk source for all of them at once (prefetch), then copies out.
 *
 * Borrows the index and the chunk source: both must outlive the blob.
 * Thread-safe (the index is immutable, the chunk source is thread-safe).
 */
#ifndef CA_BLOB_H
#define CA_BLOB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "store/chunksrc.h"
#include "format/index.h"

struct ca_blob;

int ca_blob_new(struct ca_index *idx, struct ca_chunksrc *src, struct ca_blob **ret);
void ca_blob_free(struct ca_blob *b); /* accepts NULL */

uint64_t ca_blob_size(const struct ca_blob *b);
struct ca_index *ca_blob_index(const struct ca_blob *b);
struct ca_chunksrc *ca_blob_chunksrc(const struct ca_blob *b);

/* Read up to len bytes at off. Returns the count (short only at the end of
 * the image, 0 at or past it) or a negative errno: -EUCLEAN when a chunk is
 * corrupt everywhere, -ENOLINK when no store has it, -ENOMEDIUM when it is
 * not cached and the chunk source is offline, -EIO and friends. */
ssize_t ca_blob_read(struct ca_blob *b, void *buf, size_t len, uint64_t off);

/* The chunk source's error for a chunk, as the readers of an image see it:
 * -ENOENT becomes -ENOLINK, -EBADMSG becomes -EUCLEAN, the rest is kept. */
int ca_blob_chunk_errno(int r);

/* The one line a chunk that could not be had gets, from the chunk source's
 * err: "NAME: chunk ID: not found in any store" for -ENOENT, else "NAME:
 * chunk ID: <err's text>" (name NULL: no "NAME: "). Returns -abs(err). */
int ca_blob_log_chunk_error(const char *name, const uint8_t *id, int err);

/* Hint: [off, off+len) will be read soon; start fetching it. Never blocks on I/O. */
void ca_blob_readahead(struct ca_blob *b, uint64_t off, uint64_t len);
/* A reader waits for [off, off+len) now: the downloads of its chunks
 * start, or move ahead of those queued for read-ahead, as urgent
 * (ca_chunksrc_hurry). Never blocks. */
void ca_blob_hurry(struct ca_blob *b, uint64_t off, uint64_t len);

/* The chunks that hold [off, off+len), for a reader that hands their bytes
 * on without copying them (the mount's reply to a read): *ret_n spans in
 * order (*ret_spans, malloc'd), covering the range clamped to the image
 * (none at or past its end). Each span holds a reference to its chunk, so
 * its bytes stay valid until ca_blob_put_spans, whatever the LRU evicts.
 * Errors as ca_blob_read's; on error no reference is held. */
struct ca_blob_span {
	const struct ca_chunk *chunk;
	const uint8_t *data; /* inside chunk->data */
	size_t len;
};
int ca_blob_get_spans(struct ca_blob *b, uint64_t off, size_t len, struct ca_blob_span **ret_spans, size_t *ret_n);
/* Drop the references and free spans (accepts NULL). */
void ca_blob_put_spans(struct ca_blob *b, struct ca_blob_span *spans, size_t n);

#endif
