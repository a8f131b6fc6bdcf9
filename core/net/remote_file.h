/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * remote_file.h - one file behind an http(s):// URL, read by byte ranges
 * (a remote .catar): only the blocks a reader touches are downloaded.
 *
 * Reads are rounded out to aligned blocks of CA_REMOTE_FILE_BLOCK bytes,
 * each fetched with one range GET (http.h checks the answer) and kept in a
 * memory cache bounded in bytes (least recently used blocks go first;
 * blocks being downloaded count too). Concurrent readers of one block
 * share its one download, and the blocks of one read download at once.
 * readahead() starts downloads and returns at once; nothing is read ahead
 * unasked (a caller streaming the file hints its way forward).
 *
 * The file's size and validator (strong ETag, else Last-Modified) are
 * learned at open from the first block's answer; every later range GET
 * sends If-Range with that validator, and its answer must agree with both
 * (and with the block's length): a file that changed on the server, even
 * to another of the same size, is -EIO from then on, said once, never a
 * short read or bytes of two versions mixed (a server that gives no
 * validator leaves only the size to compare). The server must honour
 * Range unless the whole file fits in the first block, or the caller
 * reads sequentially (CA_REMOTE_FILE_SEQUENTIAL).
 *
 * Errors (reads): -EIO (and the transport errnos of http.h: -ETIMEDOUT,
 * -ECONNREFUSED, ...) for anything the server did wrong, -ENOENT never
 * (a file found at open whose range is now 404 is -EIO), -ECANCELED when
 * freed under a read (cannot happen with the rules below).
 *
 * Threads: every function may be called from any number of threads at
 * once, except that ca_remote_file_free must not race with the others.
 * Owns one HTTP engine (one thread).
 */
#ifndef CA_REMOTE_FILE_H
#define CA_REMOTE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "net/endpoint.h"
#include "net/http.h"

#define CA_REMOTE_FILE_BLOCK ((size_t)256 << 10)
/* The cache when the caller gives none (cache_bytes 0); a smaller budget
 * is raised to CA_REMOTE_FILE_CACHE_MIN so readahead has room. */
#define CA_REMOTE_FILE_CACHE_DEFAULT ((size_t)64 << 20)
#define CA_REMOTE_FILE_CACHE_MIN ((size_t)16 * CA_REMOTE_FILE_BLOCK)

struct ca_remote_file;

/* The caller reads the file front to back (list, mtree, digest, extract
 * of a whole archive): a server that ignores Range is then read with one
 * GET (remote_stream.h: reads may not go back past its first 256 KiB),
 * as casync reads a remote .catar. Not for s3+ URLs. */
#define CA_REMOTE_FILE_SEQUENTIAL 1u

/* Open url (http:// or https://, else -EINVAL) and learn its size with a
 * range GET of the first block (kept in the cache). o may be NULL for the
 * defaults. Logs one line on failure ("<url>: not found on the server",
 * "<url>: the server does not support range requests", ...) and returns
 * -ENOENT for 404/410, -EOPNOTSUPP, -EIO or a transport errno. */
int ca_remote_file_open(const char *url, const struct ca_http_opts *o, size_t cache_bytes, unsigned flags,
                        struct ca_remote_file **ret);
/* The same at an endpoint resolved once (endpoint.h); e may go after. */
int ca_remote_file_open_at(const struct ca_endpoint *e, size_t cache_bytes, unsigned flags,
                           struct ca_remote_file **ret);
/* Cancels downloads in flight and frees everything. Accepts NULL. */
void ca_remote_file_free(struct ca_remote_file *f);

uint64_t ca_remote_file_size(const struct ca_remote_file *f);

/* Read up to len bytes at off: short only at the end of the file.
 * Returns the count or a negative errno (see above). */
ssize_t ca_remote_file_pread(struct ca_remote_file *f, void *buf, size_t len, uint64_t off);

/* Start downloading the blocks of [off, off+len) not cached yet, as far
 * as the cache budget allows. Never blocks on the network. */
void ca_remote_file_readahead(struct ca_remote_file *f, uint64_t off, uint64_t len);

/* Say in one line why a read of [off, off+len) failed with err; nothing
 * when the file changed on the server, which is said (once, at error
 * level, on the engine's thread) when it is seen. Returns err. */
int ca_remote_file_log_read_error(struct ca_remote_file *f, int err, uint64_t off, size_t len);

void ca_remote_file_get_stats(struct ca_remote_file *f, struct ca_http_stats *ret);

#endif
