/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * digest_pipe.h - a stream digest computed on a thread of its own.
 *
 * A stream digest (the one `make` prints, or `digest` of an archive) is a
 * single hash over every byte: it cannot be split, and at ~600 MB/s it
 * costs as much as producing the bytes. Bytes pushed here are copied into
 * one of four 1 MiB buffers; a full buffer is hashed by the pipe's thread
 * while the caller goes on. One pusher at a time.
 */
#ifndef CA_DIGEST_PIPE_H
#define CA_DIGEST_PIPE_H

#include <stddef.h>
#include <stdint.h>

#include "base/digest.h"

struct ca_digest_pipe;

int ca_digest_pipe_new(enum ca_digest_type type, struct ca_digest_pipe **ret);
/* Any length; blocks only while all buffers wait to be hashed. */
int ca_digest_pipe_push(struct ca_digest_pipe *dp, const void *p, size_t n);
/* Stops the thread and frees the pipe (accepts NULL); with out non-NULL,
 * first the digest of everything pushed. Returns 0 or the first error. */
int ca_digest_pipe_finish(struct ca_digest_pipe *dp, uint8_t out[CA_DIGEST_SIZE]);

#endif
