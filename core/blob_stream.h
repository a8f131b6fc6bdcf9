/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * blob_stream.h - a blob read front to back, with the next chunks fetched,
 * decompressed and verified ahead by threads of its own.
 *
 * For readers that consume a whole image in order (extract of an
 * archive, mtree, digest): decompressing and hashing a chunk costs about
 * as much as decoding it, so doing it on another core while the reader
 * works halves the reader's path. Reads may skip forward (a reader
 * jumping over a payload); a read behind the window, or far ahead of it,
 * restarts the window there.
 *
 * One reader at a time (not thread-safe against itself). Borrows the blob.
 */
#ifndef CA_BLOB_STREAM_H
#define CA_BLOB_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "blob.h"

struct ca_blob_stream;

/* ahead: how many chunks to hold ready (at least 1); threads: how many
 * get them (0: one per CPU; at most 4). Decoding a chunk costs about what
 * the reader spends on its bytes, so one thread alone would pace the reader. */
int ca_blob_stream_new(struct ca_blob *b, unsigned ahead, unsigned threads, struct ca_blob_stream **ret);
void ca_blob_stream_free(struct ca_blob_stream *s); /* accepts NULL; stops the thread */

/* As ca_blob_read: up to len bytes at off, short only at the end. A chunk
 * that failed gives its error when a read reaches it, and again if read again. */
ssize_t ca_blob_stream_read(struct ca_blob_stream *s, void *buf, size_t len, uint64_t off);

#endif
