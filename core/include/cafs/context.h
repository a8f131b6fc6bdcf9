/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cafs/context.h - libcafs's context: where messages go, and how to stop
 * work in progress. Every other libcafs object is made from a context.
 *
 * Errors. Every function that can fail returns 0 (or a count) on success
 * and a negative errno on failure, and says what went wrong in one message
 * to the context's log function. The errnos that mean something specific:
 *
 *   -ENOENT            no such file (index, archive, store) or no such
 *                      name in the archive
 *   -EBADMSG           the index or the archive is malformed
 *   CAFS_ECHUNKMISSING a chunk the index names is in no store (-ENOLINK)
 *   CAFS_ECHUNKCORRUPT a chunk is corrupt in every store that has it
 *                      (-EUCLEAN)
 *   CAFS_EOFFLINE      offline, and a chunk is not in the cache (-ENOMEDIUM)
 *   CAFS_EUNTRUSTED    trusted keys are configured and the image has no
 *                      valid signature by one of them (-EKEYREJECTED)
 *   -ECANCELED         cafs_ctx_cancel() was called
 *   -EPROTONOSUPPORT   a URL scheme libcafs cannot read
 *   -EREMCHG           an https URL redirected to another scheme (refused)
 *   -EIO, -ETIMEDOUT, -ECONNREFUSED, ...  I/O or network failures
 *
 * A chunk problem is never reported as -ENOENT or -EBADMSG, so "no such
 * file" and "the store lacks a chunk" can always be told apart.
 *
 * Threads: a context may be used from any number of threads at once; the
 * log function is called on whichever thread logs (libcafs starts threads
 * of its own: they log to the context that asked for their work).
 */
#ifndef CAFS_CONTEXT_H
#define CAFS_CONTEXT_H

#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CAFS_ECHUNKMISSING (-ENOLINK)
#define CAFS_ECHUNKCORRUPT (-EUCLEAN)
#define CAFS_EOFFLINE (-ENOMEDIUM)
#define CAFS_EUNTRUSTED (-EKEYREJECTED)

/*
 * Options structs (struct cafs_*_options) begin with `size_t size`: set it to
 * the sizeof the struct as your program was built (`{ .size = sizeof o }`).
 * A newer library reads that many bytes and gives every later member its
 * default (zero); an older library refuses a larger struct whose unknown
 * tail is not all zero with -E2BIG, and any call refuses a size smaller than
 * the size member itself with -EINVAL, and one above 4096 bytes (no real
 * struct is that long: the size is garbage) with -E2BIG. A NULL options pointer means all
 * defaults. Members are only ever added at the end.
 */

struct cafs_ctx;

/* A new context with one reference: messages of priority LOG_ERR go to
 * stderr as "cafs: <message>". */
int cafs_ctx_new(struct cafs_ctx **ret);
struct cafs_ctx *cafs_ctx_ref(struct cafs_ctx *ctx);
/* Drops a reference; frees the context with the last one. Objects made
 * from the context hold references of their own. Accepts NULL; returns
 * NULL. */
struct cafs_ctx *cafs_ctx_unref(struct cafs_ctx *ctx);

/* Gets each message that passes the priority (syslog's LOG_ERR,
 * LOG_WARNING, LOG_INFO, LOG_DEBUG), one line without a trailing newline,
 * on the thread that logs. NULL: stderr. */
typedef void (*cafs_log_fn)(void *userdata, int priority, const char *message);
/* Set the log function before the context is shared between threads. */
void cafs_ctx_set_log_fn(struct cafs_ctx *ctx, cafs_log_fn fn, void *userdata);
/* Messages less important than priority are dropped (default LOG_ERR). */
void cafs_ctx_set_log_priority(struct cafs_ctx *ctx, int priority);
int cafs_ctx_get_log_priority(const struct cafs_ctx *ctx);

/* Ask every call running on this context, and every later one, to stop:
 * they return -ECANCELED as soon as they notice (a make or an extract
 * within a chunk; a read blocked on the network when its transfer ends or
 * times out). Async-signal-safe: may be called from a signal handler. */
void cafs_ctx_cancel(struct cafs_ctx *ctx);
/* Undo cafs_ctx_cancel for the calls that start from now on. */
void cafs_ctx_uncancel(struct cafs_ctx *ctx);

/* Trust the minisign public key in the file at path (as `minisign -G`
 * writes it): from now on every image this context opens must be an index
 * signed by one of the context's keys or of the trusted key directory
 * (/etc/cafs/trusted-keys.d/\*.pub, or $CAFS_TRUSTED_KEYS_DIR), in
 * SOURCE.minisig beside it; anything else fails with CAFS_EUNTRUSTED
 * before a chunk is read. The file is read now (the key is kept, not the
 * path): -ENOENT, -EBADMSG (not a minisign public key), ... Call it
 * before the context is shared between threads. */
int cafs_ctx_add_trusted_key(struct cafs_ctx *ctx, const char *path);

/* The running library's version, "MAJOR.MINOR.MICRO" (the headers': see
 * cafs/version.h). */
const char *cafs_version(void);
/* The same as one number, as CAFS_VERSION_ENCODE() makes it: compare it
 * with CAFS_VERSION_NUMBER to learn whether the library is older than the
 * headers a program was built with. */
unsigned cafs_version_number(void);

#ifdef __cplusplus
}
#endif

#endif
