/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * remote.h - chunk stores and index files behind http:// and https://
 * URLs, on top of the HTTP engine (http.h); and behind s3+http(s):// URLs
 * (s3.h), which are translated to http(s) once and signed; and in OCI
 * registries, oci+http(s):// (oci.h): there a chunk's download is its
 * manifest then its blob, run by the store's 16 fetcher threads on its
 * engine, and otherwise the same (prefetch table, outages, probe by HEAD
 * of the chunk's tag); an oci+ file is fetched whole, unconditionally.
 *
 * A remote store is a chunk backend for chunksrc.h: fetch() downloads
 *   <store URL cut at the first '?', ';' or '#', trailing '/' stripped>
 *     + "/" + first 4 hex of the id + "/" + 64 hex + ".cacnk"
 * as casync's HTTP helper does. The bytes are handed to chunksrc, which
 * decompresses and verifies them (this module never trusts them).
 *
 * A download a reader waits for goes ahead of the prefetches queued on
 * the engine (CA_HTTP_URGENT): one a demand fetch starts
 * (ca_chunksrc_fetch_is_demand), and a queued prefetch that a demand
 * fetch joins or hurry() names (ca_http_hurry). An oci+ store's
 * downloads (its fetcher threads) keep their order.
 *
 * prefetch() starts a download without waiting and parks the result in a
 * small table, so the fetch() that follows takes it instead of downloading
 * again; a fetch() of an id whose prefetch is still running waits for that
 * one download (and gets its result, failures included). The table is
 * bounded (entries and bytes); finished downloads nobody claims are
 * dropped oldest first, or after a minute.
 *
 * A download that failed after its retries (anything but "missing") is
 * remembered for a few seconds (FAIL_MEMORY_MS, 5 s, from its end): every
 * fetch() of that id in the meantime gets the same error at once, without
 * a request, so concurrent or repeated readers of a chunk a failing server
 * cannot give do not multiply the requests.
 *
 * (That memory is for commands, CA_REMOTE_OUTAGE_FAIL, the default. A
 * mount sets CA_REMOTE_OUTAGE_SOFT or _HARD, where a failure is never
 * remembered as the answer to a later fetch; see "Outages" below.)
 *
 * Outages. A store is "failing" from the moment a download ends in a
 * failure of the server rather than an answer about the chunk (could not
 * connect, timeout, connection reset, 5xx or another unexpected status,
 * after the engine's retries) until a request gets an answer again (the
 * chunk, or 404). Hints (prefetch) are not sent to a failing store. In
 * the soft and hard modes a fetch that needs a failing store waits for
 * it, and one fetch at a time probes it (one request, no engine retry):
 * the first probe 0.25-0.5 s after the failure, then in windows that
 * double up to 15 s, each drawn from the window's upper half (jitter);
 * a fetch that arrives when nobody is waiting and no probe ran for 1 s
 * probes at once, so the first read after an outage goes straight to the
 * server. All waiters share the probe: when it succeeds they all send
 * their own requests, when it fails they wait for the next. A soft wait
 * ends after the engine's request deadline (total_timeout_s:
 * CAFS_HTTP_DEADLINE or the store's deadline setting) with the error the
 * last request ended in; a hard one waits as long as it takes. Every wait
 * ends at once with -EINTR when the calling thread's hook
 * (ca_chunksrc_wait_hook) says so, or -ECANCELED after
 * ca_remote_store_abort. While readers wait, a warning says so every
 * 30 s; the store's going down and coming back are warnings too.
 *
 * Each remote store owns its own engine (one thread, its own connection
 * pool). All functions are thread-safe; ca_remote_store_free must not race
 * with the others (chunksrc guarantees that for its backends).
 */
#ifndef CA_REMOTE_H
#define CA_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "store/chunksrc.h"
#include "format/format.h"
#include "net/http.h"

struct ca_endpoint; /* endpoint.h: only by pointer here */

/* A .cacnk larger than this is refused before it is decompressed; the
 * chunk source lowers it to what the index's largest chunk can compress
 * to (chunksrc.h, set_file_max). */
#define CA_REMOTE_CHUNK_FILE_MAX ((size_t)CA_CHUNK_SIZE_LIMIT_MAX + (size_t)(4u << 20))

struct ca_remote_store;

/* The store at an endpoint resolved once (endpoint.h): its URL, settings
 * and S3 signing. Copies what it needs: e may go after. Logs a failure
 * (one line naming the store, redacted): callers do not log it again. */
int ca_remote_store_open(const struct ca_endpoint *e, struct ca_remote_store **ret);
/* The same from a string (ca_endpoint_init with the settings file read
 * here); o may be NULL for the defaults. -EINVAL if url is not http(s)://
 * or s3+http(s):// (location.h). Logs a failure, as open does. */
int ca_remote_store_new(const char *url, const struct ca_http_opts *o, struct ca_remote_store **ret);
/* Accepts NULL. Logs the store's statistics at info level (-v). */
void ca_remote_store_free(struct ca_remote_store *rs);

/* The URL chunks are fetched under (no query, no trailing '/'). */
const char *ca_remote_store_base(const struct ca_remote_store *rs);

/* The chunk backend; its be pointer is a struct ca_remote_store *. */
extern const struct ca_chunk_backend_ops ca_remote_store_ops;

struct ca_remote_store_stats {
	struct ca_http_stats http;
	uint64_t prefetches;     /* downloads started by prefetch() */
	uint64_t prefetch_hits;  /* fetch() served (or joined) by a prefetch */
	uint64_t prefetch_drops; /* finished prefetches dropped unclaimed */
	uint64_t prefetch_skips; /* prefetch() hints ignored: table full */
	uint64_t failed_fast;    /* fetch() answered by a remembered failure */
	uint64_t probes;         /* requests sent as the probe of a failing store */
	uint64_t outage_waits;   /* fetch() calls that waited for a failing store */
	bool failing;            /* the store is failing now */
};
void ca_remote_store_get_stats(struct ca_remote_store *rs, struct ca_remote_store_stats *ret);

enum ca_remote_outage {
	CA_REMOTE_OUTAGE_FAIL, /* a failed download is the answer (commands) */
	CA_REMOTE_OUTAGE_SOFT, /* wait for a failing store, at most its deadline (mount default) */
	CA_REMOTE_OUTAGE_HARD, /* wait as long as it takes (mount -o hard) */
};
void ca_remote_store_set_outage(struct ca_remote_store *rs, enum ca_remote_outage mode);
/* End every wait for the store now (-ECANCELED), and every later one:
 * the mount is stopping. */
void ca_remote_store_abort(struct ca_remote_store *rs);
/* The store's state in one line into buf: "URL up", or "URL failing
 * since 2026-01-01T00:00:00Z (N s: error), next probe in N s" (or
 * "probing now"); the URL redacted. Returns its length. */
size_t ca_remote_store_state_text(struct ca_remote_store *rs, char *buf, size_t len);

/* Which of ids[0..n) the server holds, by HEAD requests (many at once,
 * never downloading a chunk): ret_present[i] = 1 or 0. Returns 0, or the
 * first error other than "missing" (then ret_present is incomplete). */
int ca_remote_store_probe(struct ca_remote_store *rs, const uint8_t *const *ids, size_t n, uint8_t *ret_present);

/* Download a whole file (an index, an archive) of at most cap bytes into
 * out (empty on entry; caller frees). One short-lived engine; o may be NULL. */
int ca_remote_get_file(const char *url, size_t cap, const struct ca_http_opts *o, struct ca_buf *out);

/* The same, unless the version validator names is still the server's
 * (ca_http_get_if_changed: then 0, out empty, *ret_not_modified set);
 * ret_validator (CA_HTTP_VALIDATOR_MAX bytes) gets the new version's. */
int ca_remote_get_file_if_changed(const char *url, size_t cap, const struct ca_http_opts *o, const char *validator,
                                  struct ca_buf *out, bool *ret_not_modified, char *ret_validator);
/* ca_remote_get_file_if_changed at an endpoint resolved once (validator
 * may be NULL). */
int ca_remote_fetch(const struct ca_endpoint *e, size_t cap, const char *validator, struct ca_buf *out,
                    bool *ret_not_modified, char *ret_validator);

#endif
