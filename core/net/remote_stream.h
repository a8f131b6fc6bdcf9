/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * remote_stream.h - one file behind an http(s):// URL read front to back
 * with a single GET, for a server that ignores Range (Python's
 * http.server, some CDNs' dynamic answers): what casync does for a remote
 * .catar. Only remote_file.c uses it, for a caller that reads
 * sequentially (list, mtree, digest, extract of a whole .catar).
 *
 * Reads must move forward: a read may skip ahead (the bytes in between
 * are received and dropped) but not go back, except into the first
 * CA_REMOTE_STREAM_HEAD bytes, which are kept (the root ENTRY is read
 * again by whoever looks at the feature flags first). Going back further
 * is -ESPIPE, logged once.
 *
 * Memory: a window of at most 1 MiB (more only when curl hands over a
 * larger piece at once) plus the head. The transfer is paused while the
 * window is full, so a slow reader holds no more.
 *
 * Bounds: connect_timeout_ms; no byte for stall_timeout_s while the reader
 * waits, or fewer than low_speed_limit bytes/s over that long (a server
 * dripping bytes), is -ETIMEDOUT; there is no overall deadline (the file
 * may be any size, read at the reader's pace); redirects as http.h (at most 10, https stays
 * https). The answer must be a 200 with a Content-Length (the decoder
 * needs the size): else -EIO, logged. 404/410 are -ENOENT. Credentials,
 * headers, TLS settings and the rate limit of the options apply; AWS
 * signing does not (-EOPNOTSUPP: an S3 store honours Range anyway).
 *
 * Threads: no thread of its own (the reader's thread drives the transfer);
 * a mutex makes every call safe from any thread. Not retried: a stream
 * that broke cannot resume without Range.
 */
#ifndef CA_REMOTE_STREAM_H
#define CA_REMOTE_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "net/http.h"

#define CA_REMOTE_STREAM_HEAD ((size_t)256 << 10)

struct ca_remote_stream;

/* Starts the GET and waits for the answer's head and first bytes. Logs
 * one line on failure ("<url>: not found on the server", ...). */
int ca_remote_stream_open(const char *url, const struct ca_http_opts *o, struct ca_remote_stream **ret);
void ca_remote_stream_free(struct ca_remote_stream *s); /* accepts NULL */

uint64_t ca_remote_stream_size(const struct ca_remote_stream *s);
/* As pread(2), under the rule above. A short count only at the end. */
ssize_t ca_remote_stream_pread(struct ca_remote_stream *s, void *buf, size_t len, uint64_t off);
void ca_remote_stream_get_stats(struct ca_remote_stream *s, struct ca_http_stats *ret);

#endif
