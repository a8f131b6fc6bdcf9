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

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "store/blob.h"

struct ca_blob_stream;

/* ahead: how many chunks to hold ready (at least 1); threads: how many
 * get them (0: one per CPU; at most 4). Decoding a chunk costs about what
 * the reader spends on its bytes, so one thread alone would pace the reader.
 * cancel (may be NULL): once it is set, a read waiting for a chunk returns
 * -ECANCELED within 100 ms, whatever the fetch is stuck in. */
int ca_blob_stream_new(struct ca_blob *b, unsigned ahead, unsigned threads, const volatile sig_atomic_t *cancel,
                       struct ca_blob_stream **ret);
/* Stops the threads and frees the stream (accepts NULL). Returns -EBUSY when,
 * cancelled, a thread was still stuck in a fetch after 2 s: it is left
 * running and the stream is not freed, so neither the blob nor its chunk
 * source may be freed either (the process is about to exit). */
int ca_blob_stream_free(struct ca_blob_stream *s);

/* Fetch nothing at or past image offset end (the reader will not go there). */
void ca_blob_stream_set_end(struct ca_blob_stream *s, uint64_t end);

/* As ca_blob_read: up to len bytes at off, short only at the end. A chunk
 * that failed gives its error when a read reaches it, and again if read again. */
ssize_t ca_blob_stream_read(struct ca_blob_stream *s, void *buf, size_t len, uint64_t off);

/* As ca_blob_stream_read without the copy: *ret points at up to len bytes
 * at off inside one chunk (so short at its end), valid until the next read
 * or peek (the chunk is let go then). 0 at the end. */
ssize_t ca_blob_stream_peek(struct ca_blob_stream *s, size_t len, uint64_t off, const void **ret);

#endif
