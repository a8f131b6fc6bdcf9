/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * http.h - GET a URL into memory, many at once, on libcurl's multi
 * interface: one event-loop thread per engine drives one curl multi handle.
 *
 * Connections are kept open and reused (HTTP/1.1 keep-alive; HTTP/2
 * multiplexing when a TLS server offers it through ALPN, never forced).
 * Bodies are capped. 404 and 410 mean "missing" (-ENOENT, never retried);
 * any other status is -EIO with the status logged.
 *
 * A server may be slow, broken or hostile; no request outlives these
 * bounds (defaults in ca_http_opts):
 *  - connecting: connect_timeout_ms;
 *  - a transfer slower than low_speed_limit bytes/s for stall_timeout_s
 *    seconds is a timeout (a server dripping a byte a second is caught);
 *  - a deadline per request, every attempt and wait included:
 *    total_timeout_s from the first attempt, plus one second per 64 KiB
 *    the server announces (or has sent) so that a large file on a slow but
 *    honest link still arrives;
 *  - with a shared clock (ca_http_clock, o.clock: one per command), a
 *    deadline for the server's progress shared by every request of every
 *    engine on that clock: any request fails with -ETIMEDOUT (and none is
 *    retried) once no request made progress for the clock's deadline;
 *    progress is an answer (a success, 304 or 404) or another
 *    low_speed_limit bytes received by a transfer. So a command against a
 *    server that drips its bytes ends within one deadline, however many
 *    files it asks for one after another, while a slow transfer that
 *    keeps above the low speed keeps it going;
 *  - connection failures, timeouts, 408, 429 and 5xx are retried at most
 *    retries times, after a back-off with decorrelated jitter (between
 *    retry_delay_ms and three times the previous wait, at most 8 s; each
 *    engine draws from its own seed, so clients do not retry in step); a
 *    Retry-After (seconds or an HTTP date) is honoured up to 30 s; a retry
 *    that could not start before the deadline is not made;
 *  - redirects: at most 10, http(s) only, and a request that starts on
 *    https:// follows redirects to https:// only (never downgraded to
 *    plain http: -EREMCHG, which ca_strerror words as such);
 *  - credentials come from the options (the store settings file,
 *    storeconf.h), the URL or ~/.netrc (curl's --netrc-optional); libcurl
 *    does not send them, nor an Authorization or Cookie header of the
 *    options, on to another host after a redirect (other headers go).
 *
 * Results are 0 or a negative errno, converted once from curl's codes:
 *   -ENOENT       404/410             -ETIMEDOUT    connect, stall or deadline
 *   -EACCES       401/403 (the status logged as a warning; S3: see below)
 *   -ECONNREFUSED could not connect   -EHOSTUNREACH could not resolve the host
 *   -EFBIG        body over the cap   -ECONNRESET   connection dropped mid-way
 *   -EIO          other status/error  -ECANCELED    engine freed before the end
 *   -EOPNOTSUPP   a range GET answered with the whole file (see below)
 *   -EREMCHG      an https request redirected to another scheme (refused)
 *   -ESTALE       a range GET with If-Range: the file is another version
 * curl's own message is logged at debug level.
 *
 * Threads: every function may be called from any thread, except that
 * ca_http_free must not race with submissions. Completion callbacks run on
 * the engine's thread: they must be quick and must not call back into the
 * engine's blocking functions (ca_http_get) or free it.
 */
#ifndef CA_HTTP_H
#define CA_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

struct ca_http_opts {
	unsigned max_connections;    /* per host, CURLMOPT_MAX_HOST_CONNECTIONS; 0 = 8 */
	unsigned max_transfers;      /* transfers started at once; 0 = max_connections */
	unsigned connect_timeout_ms; /* 0 = 10000 */
	unsigned stall_timeout_s;    /* slower than low_speed_limit for this long = timeout; 0 = 15 */
	unsigned low_speed_limit;    /* bytes/s; 0 = 1024 */
	unsigned total_timeout_s;    /* a request's deadline, retries included (see above); 0 = 45 */
	int retries;                 /* extra attempts after the first; < 0 = 3 */
	unsigned retry_delay_ms;     /* shortest back-off (see above); 0 = 250 */
	uint64_t max_recv_speed;     /* bytes/s, 0 = unlimited; when set, one transfer at a time
	                              * (max_transfers ignored), each started when the bytes of
	                              * the last took their time at this rate: it caps the
	                              * engine (casync's --rate-limit-bps: one store's downloads) */
	const char *ca_file;         /* CA bundle for https (copied); NULL = the system's */
	/* per-store settings (storeconf.h); every string is copied by
	 * ca_http_new, and none is ever put in a message */
	const char *const *headers;  /* "Name: value" lines added to every request */
	size_t n_headers;
	const char *username, *password; /* basic auth; NULL: the URL's, or netrc */
	int netrc;                   /* 0: optional (netrc_file or ~/.netrc), < 0: not read */
	const char *netrc_file;      /* NULL: ~/.netrc */
	const char *ssl_cert, *ssl_key, *ssl_key_password; /* TLS client certificate (PEM) */
	/* AWS Signature V4 (S3 stores, s3.h): when sigv4 is set ("aws:amz:REGION:s3")
	 * every request is signed with key and secret (and carries the session
	 * token, if any) and ~/.netrc is not read. All copied; the engine wipes
	 * its copy of the secret when freed. S3 error answers are read (1 KiB)
	 * and their code logged as a warning, once per code per 5 s; 403 is
	 * then -EACCES and 404 NoSuchBucket -ENXIO (never a "missing" chunk). */
	const char *sigv4, *sigv4_key, *sigv4_secret, *sigv4_token;
	/* The command's progress deadline (see above), shared; borrowed: it
	 * must outlive every engine made with it. NULL: none. */
	struct ca_http_clock *clock;
};

/* A progress deadline of deadline_s seconds shared by engines (see
 * above), started now. Thread-safe. */
struct ca_http_clock;
int ca_http_clock_new(unsigned deadline_s, struct ca_http_clock **ret);
void ca_http_clock_free(struct ca_http_clock *c); /* accepts NULL */

/* The defaults above, written out. */
void ca_http_opts_init(struct ca_http_opts *o);

/* What every transfer of ours carries, set on a libcurl easy handle (a
 * CURL *) for url, from o: redirects (at most 10, to http(s) only, never
 * from https down to http), the connect timeout, the rate, the CA bundle,
 * the TLS client certificate, TCP keep-alive, the User-Agent and, unless
 * sigv4 (the request is signed: its credentials are the signature's),
 * netrc, user and password. The caller adds the rest (write callback,
 * headers, its own timeouts). 0 or a CURLcode. */
int ca_http_easy_common(void *easy, const char *url, const struct ca_http_opts *o, bool sigv4);

/* the latency histogram's upper bounds, in microseconds (1 ms .. 30 s) */
#define CA_HTTP_LATENCY_BUCKETS 12
extern const uint64_t ca_http_latency_bounds_us[CA_HTTP_LATENCY_BUCKETS];

struct ca_http_stats {
	uint64_t requests; /* submitted */
	uint64_t attempts; /* GETs sent, retries included */
	uint64_t retries;
	uint64_t ok, missing, errors; /* final outcomes */
	uint64_t bytes;    /* body bytes of successful requests */
	uint64_t urgent;   /* queued ahead of others (CA_HTTP_URGENT, ca_http_hurry) */
	/* how long requests took from submission to their final outcome
	 * (retries and queueing included): latency[i] counts those that took
	 * at most ca_http_latency_bounds_us[i] and more than the bound before
	 * (not cumulative); the last slot is the rest (+Inf). Counted under
	 * the engine's lock where the outcome is counted: no extra cost but
	 * a clock read per request. */
	uint64_t latency[CA_HTTP_LATENCY_BUCKETS + 1];
	uint64_t latency_sum_us; /* total time of the requests counted */
};

struct ca_http;

/* Start an engine (and its thread). o may be NULL for the defaults. */
int ca_http_new(const struct ca_http_opts *o, struct ca_http **ret);
/* Stop it: transfers still queued or running complete with -ECANCELED
 * (their callbacks run, on the engine thread, before this returns), the
 * thread is joined and every handle freed. Accepts NULL. */
void ca_http_free(struct ca_http *h);
/* Cancel from any thread: what is queued or running completes with
 * -ECANCELED now, as in ca_http_free, and every later submission fails
 * with -ECANCELED; the engine is still freed with ca_http_free. */
void ca_http_cancel(struct ca_http *h);

/* Called exactly once per successful submission, on the engine thread.
 * r is 0 or a negative errno; body holds the response on success and may
 * be taken over (swap it out and leave it zeroed); what is left in it is
 * freed after the callback returns. */
typedef void (*ca_http_done_fn)(void *userdata, int r, struct ca_buf *body);

/* Queue a GET of url whose body may be at most cap bytes. Never blocks on
 * the network. 0 when queued (fn will be called), negative errno if not
 * (fn will not be called). */
int ca_http_submit(struct ca_http *h, const char *url, size_t cap, ca_http_done_fn fn, void *userdata);

/* The same with flags: CA_HTTP_HEAD asks only whether url exists (a HEAD
 * request: 0 for 200, -ENOENT for 404/410, no body; cap is ignored). */
#define CA_HTTP_HEAD 1u
/* CA_HTTP_NO_RETRY: one attempt, whatever o.retries says (a store's probe
 * during an outage, remote.h, whose back-off is its own). */
#define CA_HTTP_NO_RETRY 4u
/* CA_HTTP_URGENT: someone waits for it now (a reader's page fault):
 * queued ahead of every request not started yet that is not urgent
 * itself (read-ahead, a whole file's prefetch), behind the urgent ones
 * queued before it. It still waits for a free transfer slot: those
 * running are never stopped. */
#define CA_HTTP_URGENT 8u
int ca_http_submit_flags(struct ca_http *h, const char *url, size_t cap, unsigned flags, ca_http_done_fn fn,
                         void *userdata);
/* Make the queued, not yet started request submitted with userdata
 * urgent (as CA_HTTP_URGENT) now: a reader came to wait for what was a
 * prefetch. True if one was moved; false when it started already (or
 * ended, or is urgent already). */
bool ca_http_hurry(struct ca_http *h, const void *userdata);

/* Submit and wait: the body goes into out (which must be empty). */
int ca_http_get(struct ca_http *h, const char *url, size_t cap, struct ca_buf *out);

/* Range GETs: bytes [start, start + len) of url (len > 0), by a Range
 * header. Retries, timeouts and redirects as for any GET. The answer is
 * checked, never trusted:
 *   206  Content-Range must name exactly start..start+n-1 and the body be
 *        those n bytes; n == len, or less only when the range reaches the
 *        end of the file (Content-Range's total says so);
 *   200  the whole file: accepted only when start is 0 and the file is at
 *        most len bytes; otherwise the server ignores Range (-EOPNOTSUPP,
 *        detected from Content-Length before the body is read);
 *   416  with "bytes * /TOTAL" and start >= TOTAL: 0 with an empty body
 *        (the file ends before start, e.g. it is empty);
 * any other mismatch is -EIO (details at debug level); statuses and
 * transport errors as for ca_http_submit. The callback gets the file's
 * size in total (from Content-Range, or the 200's body; UINT64_MAX when
 * the server gave '*'); total is 0 on error. */
typedef void (*ca_http_range_fn)(void *userdata, int r, struct ca_buf *body, uint64_t total,
                                 const char *validator);
int ca_http_submit_range(struct ca_http *h, const char *url, uint64_t start, size_t len, ca_http_range_fn fn,
                         void *userdata);

/* A range answer's validator (RFC 9110 8.8), given to the callback: its
 * strong ETag as sent (quotes included), else its Last-Modified, else ""
 * (also "" on error, or when longer than CA_HTTP_VALIDATOR_MAX - 1). */
#define CA_HTTP_VALIDATOR_MAX 128
/* A range GET of the version of url that validator names (NULL or "":
 * ca_http_submit_range): sends If-Range: validator, and the answer must be
 * a 206 with the same validator. A 200 (the server's "that is not the file
 * any more", refused before its body is read) or a 206 with another or no
 * validator (a server ignoring If-Range) is -ESTALE, not retried. -EINVAL
 * for a validator too long or holding a line break. */
int ca_http_submit_range_if(struct ca_http *h, const char *url, uint64_t start, size_t len, const char *validator,
                            ca_http_range_fn fn, void *userdata);
/* Submit a range GET and wait; out must be empty; ret_total may be NULL. */
int ca_http_get_range(struct ca_http *h, const char *url, uint64_t start, size_t len, struct ca_buf *out,
                      uint64_t *ret_total);
/* The same, and the answer's validator into ret_validator
 * (CA_HTTP_VALIDATOR_MAX bytes; may be NULL). */
int ca_http_get_range_validator(struct ca_http *h, const char *url, uint64_t start, size_t len, struct ca_buf *out,
                                uint64_t *ret_total, char *ret_validator);

/* A GET of url unless the version a caller keeps is still the server's:
 * with validator (an earlier answer's, not "") the request carries
 * If-None-Match (an ETag) or If-Modified-Since (a date), and a 304 is 0
 * with out left empty and *ret_not_modified set. A 200's body goes into out
 * (empty on entry) and its validator into ret_validator
 * (CA_HTTP_VALIDATOR_MAX bytes): its strong ETag, else its Last-Modified,
 * and "" when it cannot tell this version from a later one (none, or a
 * Last-Modified less than a second before the answer's Date, which a
 * change within that second would not move; RFC 9110 8.8.2.2). Errors as
 * ca_http_get; -EINVAL for a validator too long or holding a line break. */
int ca_http_get_if_changed(struct ca_http *h, const char *url, size_t cap, const char *validator, struct ca_buf *out,
                           bool *ret_not_modified, char *ret_validator);

void ca_http_get_stats(struct ca_http *h, struct ca_http_stats *ret);
/* The engine's request deadline in seconds (o.total_timeout_s as filled in). */
unsigned ca_http_deadline_s(const struct ca_http *h);

/* Writes (S3 stores). A PUT of data[0..n) (copied), with
 * Content-Type: application/octet-stream; with CA_HTTP_NO_OVERWRITE it
 * sends If-None-Match: * and a 412 (the object exists) is -EEXIST. A signed
 * PUT carries the body's SHA-256, so the server checks what it received.
 * A DELETE (any 2xx is success, 404 -ENOENT). Retries, bounds and errors
 * as for GET; fn gets an empty body. */
#define CA_HTTP_NO_OVERWRITE 2u
int ca_http_submit_put(struct ca_http *h, const char *url, const void *data, size_t n, unsigned flags,
                       ca_http_done_fn fn, void *userdata);
int ca_http_submit_delete(struct ca_http *h, const char *url, ca_http_done_fn fn, void *userdata);

/* Any request, for protocols beyond GET (OCI registries, oci.h): method
 * "GET", "HEAD", "PUT", "POST" or "DELETE"; header lines added to the
 * store settings' (copied, wiped when done: they may carry an
 * Authorization); a body for PUT and POST (copied) with its
 * Content-Type; a 2xx body of at most cap bytes (-EFBIG past it, read no
 * further). Submits and waits. 0 for any 2xx; -ENOENT for 404/410;
 * -EACCES for 401/403, not logged (the caller may answer a challenge,
 * reply->www_authenticate); other statuses, retries, bounds and errors
 * as for GET. The reply keeps the status and a few headers of the last
 * response (each "" when absent or longer than its bound). flags:
 * CA_HTTP_NO_RETRY. */
struct ca_http_request {
	const char *method, *url;
	const char *const *headers;
	size_t n_headers;
	const void *body;
	size_t body_len;
	const char *content_type; /* NULL: none */
	size_t cap;
	unsigned flags;
};
#define CA_HTTP_REPLY_HDR_MAX 2048
#define CA_HTTP_REPLY_SHORT_MAX 256
struct ca_http_reply {
	long status; /* 0: no answer */
	struct ca_buf body;
	char www_authenticate[CA_HTTP_REPLY_HDR_MAX], location[CA_HTTP_REPLY_HDR_MAX], link[CA_HTTP_REPLY_HDR_MAX];
	char digest[CA_HTTP_REPLY_SHORT_MAX];       /* Docker-Content-Digest */
	char content_type[CA_HTTP_REPLY_SHORT_MAX];
};
/* ret is cleared first (its body released): zero it before the first use. */
int ca_http_request(struct ca_http *h, const struct ca_http_request *rq, struct ca_http_reply *ret);
void ca_http_reply_clear(struct ca_http_reply *r); /* the body released, all zeroed */

#endif
