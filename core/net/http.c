/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* http.c - the libcurl multi event loop behind http.h. */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "format/format.h"
#include "base/clock.h"
#include "base/digest.h"
#include "net/http.h"
#include "base/location.h"
#include "base/log.h"
#include "base/rng.h"
#include "base/thread.h"

#define MAX_IDLE_HANDLES 64
#define MAX_BACKOFF_MS 8000
#define MAX_RETRY_AFTER_MS 30000
/* the deadline grows by a second per this many bytes announced or received */
#define DEADLINE_BYTES_PER_S (64u << 10)
#define POLL_MAX_MS 1000
/* Once the server speaks HTTP/2, streams are cheap: this many per connection slot */
#define H2_STREAMS_PER_SLOT 4

struct ca_http_clock {
	unsigned deadline_s;
	_Atomic uint64_t progress_ms; /* the last progress of any request */
};

int ca_http_clock_new(unsigned deadline_s, struct ca_http_clock **ret)
{
	struct ca_http_clock *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->deadline_s = deadline_s ? deadline_s : 45;
	c->progress_ms = ca_now_ms();
	*ret = c;
	return 0;
}

void ca_http_clock_free(struct ca_http_clock *c)
{
	free(c);
}

static void clock_progress(struct ca_http_clock *c)
{
	if (c)
		c->progress_ms = ca_now_ms();
}

/* When the shared clock runs out (UINT64_MAX without one). */
static uint64_t clock_deadline(const struct ca_http_clock *c)
{
	return c ? c->progress_ms + (uint64_t)c->deadline_s * 1000 : UINT64_MAX;
}

/* the answer to a conditional GET: not_modified for a 304 (body empty) */
typedef void (*cond_done_fn)(void *userdata, int r, struct ca_buf *body, bool not_modified, const char *validator);

struct req {
	struct ca_http *h;
	char *url;
	size_t cap;
	unsigned flags;
	ca_http_done_fn fn;
	ca_http_range_fn range_fn; /* a range GET: [start, start + cap) */
	void *userdata;
	uint64_t start;
	/* the last response's Content-Range: "bytes cr_first-cr_last/cr_total"
	 * (UINT64_MAX for a '*'); cr_seen when there was one we could parse */
	bool cr_seen;
	uint64_t cr_first, cr_last, cr_total;
	/* a range GET of a file that must not have changed: the validator sent
	 * in If-Range ("" = none); the last response's ETag and Last-Modified */
	char if_range[CA_HTTP_VALIDATOR_MAX];
	char etag[CA_HTTP_VALIDATOR_MAX], last_modified[CA_HTTP_VALIDATOR_MAX];
	/* a conditional GET (ca_http_get_if_changed): the validator sent in
	 * If-None-Match or If-Modified-Since ("" = none), the answer's Date,
	 * and whether it was a 304 */
	bool conditional, not_modified;
	char if_changed[CA_HTTP_VALIDATOR_MAX], date[CA_HTTP_VALIDATOR_MAX];
	cond_done_fn cond_fn;
	struct ca_buf body;
	unsigned attempts;
	uint64_t submit_us;   /* when it was queued: its latency (http.h) */
	uint64_t due_ms;      /* when a retry may start */
	uint64_t deadline_ms; /* set by the first attempt; see http.h */
	uint64_t last_delay_ms;
	int64_t retry_after_ms; /* the last response's Retry-After, capped; -1: none */
	CURL *easy;
	int body_err;    /* why the write callback refused data */
	uint64_t clock_mark; /* bytes received when it last counted as progress */
	struct curl_slist *headers; /* the If-Range line of the last attempt */
	char errbuf[CURL_ERROR_SIZE];
	struct req *next;
	/* writes (S3): PUT of put_data (owned) or DELETE; signed requests keep
	 * the start of an error answer to find S3's <Code> in it */
	enum { M_GET, M_PUT, M_DELETE, M_REQ } method;
	/* M_REQ (ca_http_request): the method's name, the caller's header
	 * lines (copied), and where the answer goes (the caller waits) */
	char *method_name;
	struct curl_slist *req_headers;
	char *content_type;
	struct ca_http_reply *reply;
	void *put_data;
	size_t put_len;
	char put_sha[2 * CA_CHUNK_ID_SIZE + 1];
	bool keep_error;
	char s3_err[1024];
	size_t s3_err_len;
};

struct ca_http {
	struct ca_http_opts o;
	char *ca_file; /* o.ca_file points here */
	char *owned[6]; /* o's other strings point here (opts_copy) */
	struct curl_slist *extra_headers; /* o.headers, copied */
	CURLM *multi;
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t lock; /* guards queue, stop and stats */
	struct req *queue_head, *queue_tail;
	/* the last urgent request in the queue (they lead it, in the order
	 * they became urgent), or NULL */
	struct req *queue_urgent;
	bool stop;
	struct ca_http_stats stats;

	/* only the engine thread touches these */
	struct req *active;  /* added to the multi handle */
	struct req *delayed; /* waiting for due_ms before a retry */
	unsigned n_active;
	unsigned max_active; /* o.max_transfers, more once HTTP/2 is seen */
	uint64_t rng;        /* back-off jitter (rng.h): only the engine thread draws */
	CURL *idle[MAX_IDLE_HANDLES];
	unsigned n_idle;
	uint64_t paced_ms; /* with o.max_recv_speed: no transfer starts before this */
	/* SigV4 (http.h); owned copies, the secret wiped on free */
	char *sigv4, *sigv4_key, *sigv4_secret, *sigv4_token;
	char last_code[64]; /* the S3 error code last logged, and when (engine thread) */
	uint64_t last_code_ms;
};

void ca_http_opts_init(struct ca_http_opts *o)
{
	*o = (struct ca_http_opts){
		.max_connections = 8,
		.max_transfers = 8,
		.connect_timeout_ms = 10000,
		.stall_timeout_s = 15,
		.low_speed_limit = 1024,
		.total_timeout_s = 45,
		.retries = 3,
		.retry_delay_ms = 250,
		.max_recv_speed = 0,
	};
}

static void opts_fill(struct ca_http_opts *o, const struct ca_http_opts *in)
{
	ca_http_opts_init(o);
	if (!in)
		return;
	*o = *in;
	if (!o->max_connections)
		o->max_connections = 8;
	if (!o->max_transfers)
		o->max_transfers = o->max_connections;
	if (!o->connect_timeout_ms)
		o->connect_timeout_ms = 10000;
	if (!o->stall_timeout_s)
		o->stall_timeout_s = 15;
	if (!o->low_speed_limit)
		o->low_speed_limit = 1024;
	if (!o->total_timeout_s)
		o->total_timeout_s = 45;
	if (o->retries < 0)
		o->retries = 3;
	if (!o->retry_delay_ms)
		o->retry_delay_ms = 250;
}

/* The one place curl's codes become errnos. */
static int curl_errno(CURLcode c)
{
	switch (c) {
	case CURLE_OK:
		return 0;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_URL_MALFORMAT:
		return -EINVAL;
	case CURLE_UNSUPPORTED_PROTOCOL:
		return -EPROTONOSUPPORT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_FILESIZE_EXCEEDED:
		return -EFBIG;
	case CURLE_TOO_MANY_REDIRECTS:
		return -ELOOP;
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return -ECONNRESET;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
		return -EPROTO;
	default:
		return -EIO;
	}
}

/* Worth another try: the network or the server may recover. */
static bool curl_retryable(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
	struct req *q = userdata;
	size_t len = size * n;
	long status = 0;
	int r;

	/* only a 200's body is wanted (or a range's 206); error pages are
	 * read and dropped */
	curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 300 && q->keep_error) {
		size_t k = sizeof(q->s3_err) - 1 - q->s3_err_len;
		k = k < len ? k : len;
		memcpy(q->s3_err + q->s3_err_len, p, k);
		q->s3_err_len += k;
		q->s3_err[q->s3_err_len] = 0;
		return len;
	}
	if (q->method == M_REQ) {
		if (status < 200 || status >= 300)
			return len;
	} else if (q->method != M_GET || (status != 200 && !(status == 206 && q->range_fn)))
		return len;
	/* a 200 to a range GET is the whole file: acceptable only when the
	 * range starts at 0 and the file fits in it; anything else means the
	 * server ignores Range, and reading on would download the whole file */
	if (status == 200 && q->range_fn && q->if_range[0]) {
		q->body_err = -ESTALE; /* If-Range's "not the same file any more" */
		return 0;
	}
	if (status == 200 && q->range_fn && q->start != 0) {
		q->body_err = -EOPNOTSUPP;
		return 0;
	}
	if (q->body.size == 0 && q->body.cap == 0) {
		curl_off_t cl = -1;
		if (curl_easy_getinfo(q->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK && cl > 0 &&
		    (uint64_t)cl <= q->cap)
			(void)ca_buf_reserve(&q->body, (size_t)cl, q->cap);
		else if (cl > 0 && q->range_fn) {
			q->body_err = status == 200 ? -EOPNOTSUPP : -EIO;
			return 0;
		}
	}
	r = ca_buf_append(&q->body, p, len, q->cap);
	if (r < 0) {
		/* a range answer longer than asked: the server is broken, or it
		 * sends the whole file */
		q->body_err = r == -EFBIG && q->range_fn ? (status == 200 ? -EOPNOTSUPP : -EIO) : r;
		return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
	}
	return len;
}

/* "bytes FIRST-LAST/TOTAL" or "bytes * /TOTAL" (no space), TOTAL may be
 * '*'. Strict: digits only, no sign, no overflow. */
static bool parse_u64(const char **p, uint64_t *ret)
{
	uint64_t v = 0;
	const char *s = *p;
	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*p = s;
	*ret = v;
	return true;
}

static void parse_content_range(struct req *q, const char *v, size_t n)
{
	char tmp[128];
	const char *p = tmp;
	if (n >= sizeof(tmp))
		return;
	memcpy(tmp, v, n);
	tmp[n] = 0;
	q->cr_seen = false;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncasecmp(p, "bytes ", 6))
		return;
	p += 6;
	if (*p == '*') {
		p++;
		q->cr_first = q->cr_last = UINT64_MAX;
	} else if (!parse_u64(&p, &q->cr_first) || *p++ != '-' || !parse_u64(&p, &q->cr_last) ||
	           q->cr_last < q->cr_first) {
		return;
	}
	if (*p++ != '/')
		return;
	if (*p == '*') {
		p++;
		q->cr_total = UINT64_MAX;
	} else if (!parse_u64(&p, &q->cr_total)) {
		return;
	}
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	q->cr_seen = *p == 0;
}

/* Retry-After: delay-seconds or an HTTP-date; capped, never negative. */
static void parse_retry_after(struct req *q, const char *v, size_t n)
{
	char tmp[128];
	const char *p = tmp;
	uint64_t secs;
	if (n >= sizeof(tmp))
		return;
	memcpy(tmp, v, n);
	tmp[n] = 0;
	while (*p == ' ' || *p == '\t')
		p++;
	tmp[strcspn(tmp, "\r\n")] = 0;
	if (parse_u64(&p, &secs)) {
		if (*p && *p != ' ' && *p != '\t')
			return;
		q->retry_after_ms = secs > MAX_RETRY_AFTER_MS / 1000 ? MAX_RETRY_AFTER_MS : (int64_t)secs * 1000;
		return;
	}
	time_t when = curl_getdate(p, NULL);
	if (when < 0)
		return;
	time_t now = time(NULL);
	int64_t ms = when > now ? ((int64_t)when - (int64_t)now) * 1000 : 0;
	q->retry_after_ms = ms > MAX_RETRY_AFTER_MS ? MAX_RETRY_AFTER_MS : ms;
}

/* A header's value without the blanks around it, or "" when it does not
 * fit (a validator too long to keep is no validator). */
static void header_value(char out[CA_HTTP_VALIDATOR_MAX], const char *v, size_t n)
{
	while (n > 0 && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n'))
		n--;
	if (n >= CA_HTTP_VALIDATOR_MAX || memchr(v, 0, n))
		n = 0;
	memcpy(out, v, n);
	out[n] = 0;
}

/* The strong ETag, else Last-Modified (RFC 9110 13.1.5: a weak ETag may
 * not go in If-Range); "" when neither. */
static const char *validator_of(const struct req *q)
{
	return q->etag[0] == '"' ? q->etag : q->last_modified;
}

/* The validator of a conditional GET's 200, or "" when it cannot tell
 * this version from the next: a Last-Modified (and an ETag made from it,
 * as nginx's is) names a second, so a file changed again within the
 * second the answer was sent would look the same. RFC 9110 8.8.2.2: such
 * a validator is strong only if the answer's Date is a second or more
 * after Last-Modified. */
static const char *version_validator(const struct req *q)
{
	if (q->not_modified)
		return "";
	if (q->last_modified[0]) {
		time_t lm = curl_getdate(q->last_modified, NULL), date = q->date[0] ? curl_getdate(q->date, NULL) : -1;
		if (lm < 0 || date < 0 || date - lm < 1)
			return "";
	}
	return validator_of(q);
}

/* Headers: Content-Range, ETag and Last-Modified (range GETs) and
 * Retry-After, only the last response's (a redirect's headers come
 * first). */
static size_t on_header(char *p, size_t size, size_t n, void *userdata)
{
	struct req *q = userdata;
	size_t len = size * n;
	static const char cr[] = "content-range:", ra[] = "retry-after:", et[] = "etag:", lm[] = "last-modified:",
	                  da[] = "date:";
	bool validators = q->range_fn || q->conditional;
	if (q->reply && !(len >= 5 && !memcmp(p, "HTTP/", 5))) {
		static const struct {
			const char *name;
			size_t off, cap;
		} keep[] = {
			{ "www-authenticate:", offsetof(struct ca_http_reply, www_authenticate), CA_HTTP_REPLY_HDR_MAX },
			{ "location:", offsetof(struct ca_http_reply, location), CA_HTTP_REPLY_HDR_MAX },
			{ "link:", offsetof(struct ca_http_reply, link), CA_HTTP_REPLY_HDR_MAX },
			{ "docker-content-digest:", offsetof(struct ca_http_reply, digest), CA_HTTP_REPLY_SHORT_MAX },
			{ "content-type:", offsetof(struct ca_http_reply, content_type), CA_HTTP_REPLY_SHORT_MAX },
		};
		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
			size_t k = strlen(keep[i].name);
			if (len > k && !strncasecmp(p, keep[i].name, k)) {
				/* blanks and the line end trimmed; a value too long is
				 * dropped whole (a cut one would be wrong, not short) */
				const char *v = p + k, *end = p + len;
				while (v < end && (*v == ' ' || *v == '\t'))
					v++;
				while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
					end--;
				char *out = (char *)q->reply + keep[i].off;
				size_t vn = (size_t)(end - v);
				if (vn < keep[i].cap) {
					memcpy(out, v, vn);
					out[vn] = 0;
				} else {
					out[0] = 0;
				}
			}
		}
	}
	if (len >= 5 && !memcmp(p, "HTTP/", 5)) {
		if (q->reply)
			q->reply->www_authenticate[0] = q->reply->location[0] = q->reply->link[0] = q->reply->digest[0] =
				q->reply->content_type[0] = 0;
		q->cr_seen = false;
		q->retry_after_ms = -1;
		q->etag[0] = q->last_modified[0] = q->date[0] = 0;
	} else if (q->range_fn && len > sizeof(cr) - 1 && !strncasecmp(p, cr, sizeof(cr) - 1)) {
		parse_content_range(q, p + sizeof(cr) - 1, len - (sizeof(cr) - 1));
	} else if (validators && len > sizeof(et) - 1 && !strncasecmp(p, et, sizeof(et) - 1)) {
		header_value(q->etag, p + sizeof(et) - 1, len - (sizeof(et) - 1));
	} else if (validators && len > sizeof(lm) - 1 && !strncasecmp(p, lm, sizeof(lm) - 1)) {
		header_value(q->last_modified, p + sizeof(lm) - 1, len - (sizeof(lm) - 1));
	} else if (q->conditional && len > sizeof(da) - 1 && !strncasecmp(p, da, sizeof(da) - 1)) {
		header_value(q->date, p + sizeof(da) - 1, len - (sizeof(da) - 1));
	} else if (len > sizeof(ra) - 1 && !strncasecmp(p, ra, sizeof(ra) - 1)) {
		parse_retry_after(q, p + sizeof(ra) - 1, len - (sizeof(ra) - 1));
	}
	return len;
}

/* The deadline (http.h), checked by curl about once a second, idle or not. */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct req *q = userdata;
	(void)ultotal;
	(void)ulnow;
	curl_off_t size = dltotal > dlnow ? dltotal : dlnow;
	uint64_t allowed = q->deadline_ms + (uint64_t)(size > 0 ? size : 0) / DEADLINE_BYTES_PER_S * 1000;
	struct ca_http_clock *c = q->h->o.clock;
	if (c && dlnow > 0 && (uint64_t)dlnow >= q->clock_mark + q->h->o.low_speed_limit) {
		q->clock_mark = (uint64_t)dlnow;
		clock_progress(c);
	}
	uint64_t now = ca_now_ms();
	if (now < allowed && now < clock_deadline(c))
		return 0;
	q->body_err = -ETIMEDOUT;
	return 1; /* CURLE_ABORTED_BY_CALLBACK */
}

/* One more request header (copied by curl_slist_append). */
static void add_header(struct req *q, CURLcode *c, const char *line)
{
	struct curl_slist *l = curl_slist_append(q->headers, line);
	if (!l)
		*c = CURLE_OUT_OF_MEMORY;
	else
		q->headers = l;
}

/* http.h: what every transfer of ours carries, whichever engine sends it */
int ca_http_easy_common(void *easy, const char *url, const struct ca_http_opts *o, bool sigv4)
{
	CURLcode c = CURLE_OK;
	/* what starts on TLS stays on TLS: a redirect may not downgrade it */
	bool tls = ca_location_is_https(url);
#define SET(opt, val)                                   \
	do {                                            \
		if (c == CURLE_OK)                      \
			c = curl_easy_setopt(easy, opt, val); \
	} while (0)
	SET(CURLOPT_URL, url);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_FOLLOWLOCATION, 1L);
	SET(CURLOPT_MAXREDIRS, 10L);
#if LIBCURL_VERSION_NUM >= 0x075500
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_REDIR_PROTOCOLS_STR, tls ? "https" : "http,https");
#else
	SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
	SET(CURLOPT_REDIR_PROTOCOLS, tls ? (long)CURLPROTO_HTTPS : (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	SET(CURLOPT_CONNECTTIMEOUT_MS, (long)o->connect_timeout_ms);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_USERAGENT, PACKAGE_NAME "/" PACKAGE_VERSION);
	if (o->max_recv_speed)
		SET(CURLOPT_MAX_RECV_SPEED_LARGE, (curl_off_t)o->max_recv_speed);
	if (o->ca_file)
		SET(CURLOPT_CAINFO, o->ca_file);
	if (!sigv4) {
		SET(CURLOPT_NETRC, o->netrc < 0 ? (long)CURL_NETRC_IGNORED : (long)CURL_NETRC_OPTIONAL);
		if (o->netrc >= 0 && o->netrc_file)
			SET(CURLOPT_NETRC_FILE, o->netrc_file);
		if (o->username)
			SET(CURLOPT_USERNAME, o->username);
		if (o->password)
			SET(CURLOPT_PASSWORD, o->password);
	}
	if (o->ssl_cert)
		SET(CURLOPT_SSLCERT, o->ssl_cert);
	if (o->ssl_key)
		SET(CURLOPT_SSLKEY, o->ssl_key);
	if (o->ssl_key_password)
		SET(CURLOPT_KEYPASSWD, o->ssl_key_password);
#undef SET
	return (int)c;
}

static int easy_setup(struct ca_http *h, struct req *q)
{
	CURL *e = h->n_idle ? h->idle[--h->n_idle] : curl_easy_init();
	CURLcode c = CURLE_OK;
	if (!e)
		return -ENOMEM;
	curl_easy_reset(e); /* keeps nothing but caches; connections live in the multi handle */
	q->easy = e;
	q->errbuf[0] = 0;
	q->body_err = 0;
	q->clock_mark = 0;
	q->body.size = 0;
	q->cr_seen = false;
	q->retry_after_ms = -1;
	q->etag[0] = q->last_modified[0] = q->date[0] = 0;
	q->not_modified = false;
	curl_slist_free_all(q->headers); /* the previous attempt's */
	q->headers = NULL;
	q->s3_err_len = 0;
	q->s3_err[0] = 0;
	q->keep_error = h->sigv4 != NULL;
#define SET(opt, val)                                \
	do {                                         \
		if (c == CURLE_OK)                   \
			c = curl_easy_setopt(e, opt, val); \
	} while (0)
	c = (CURLcode)ca_http_easy_common(e, q->url, &h->o, h->sigv4 != NULL);
	bool tls = ca_location_is_https(q->url);
	SET(CURLOPT_PRIVATE, q);
	SET(CURLOPT_WRITEFUNCTION, on_data);
	SET(CURLOPT_WRITEDATA, q);
	SET(CURLOPT_ERRORBUFFER, q->errbuf);
	SET(CURLOPT_LOW_SPEED_LIMIT, (long)h->o.low_speed_limit);
	SET(CURLOPT_LOW_SPEED_TIME, (long)h->o.stall_timeout_s);
	SET(CURLOPT_NOPROGRESS, 0L);
	SET(CURLOPT_XFERINFOFUNCTION, on_progress);
	SET(CURLOPT_XFERINFODATA, q);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, q);
	/* the store settings' headers: a fresh list per attempt, which an
	 * If-Range line may join */
	for (struct curl_slist *x = h->extra_headers; x && c == CURLE_OK; x = x->next) {
		struct curl_slist *n = curl_slist_append(q->headers, x->data);
		if (!n)
			c = CURLE_OUT_OF_MEMORY;
		else
			q->headers = n;
	}
	for (struct curl_slist *x = q->req_headers; x && c == CURLE_OK; x = x->next)
		add_header(q, &c, x->data);
	if (q->method == M_REQ) {
		bool with_body = !strcmp(q->method_name, "PUT") || !strcmp(q->method_name, "POST");
		if (!strcmp(q->method_name, "HEAD")) {
			SET(CURLOPT_NOBODY, 1L);
		} else if (strcmp(q->method_name, "GET") != 0) {
			SET(CURLOPT_CUSTOMREQUEST, q->method_name);
			if (with_body) {
				SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->put_len);
				SET(CURLOPT_POSTFIELDS, q->put_data ? q->put_data : ""); /* q owns it */
				add_header(q, &c, "Expect:"); /* no 100-continue round trip */
				if (q->content_type) {
					char line[300];
					snprintf(line, sizeof(line), "Content-Type: %s", q->content_type);
					add_header(q, &c, line);
				}
			}
		}
		if (strcmp(q->method_name, "HEAD") != 0)
			SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)q->cap);
	} else if (q->method == M_PUT) {
		SET(CURLOPT_CUSTOMREQUEST, "PUT");
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->put_len);
		SET(CURLOPT_POSTFIELDS, q->put_data); /* not copied: q owns it */
		add_header(q, &c, "Content-Type: application/octet-stream");
		if (q->flags & CA_HTTP_NO_OVERWRITE)
			add_header(q, &c, "If-None-Match: *");
	} else if (q->method == M_DELETE) {
		SET(CURLOPT_CUSTOMREQUEST, "DELETE");
	} else if (q->flags & CA_HTTP_HEAD) {
		SET(CURLOPT_NOBODY, 1L);
	} else if (q->range_fn) {
		/* no MAXFILESIZE: a 200's Content-Length is the whole file's, and
		 * on_data tells "ignores Range" from "too big" itself */
		char range[64];
		snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, q->start, q->start + q->cap - 1);
		SET(CURLOPT_RANGE, range); /* copied by curl */
		if (q->if_range[0]) {
			char line[sizeof("If-Range: ") + CA_HTTP_VALIDATOR_MAX];
			snprintf(line, sizeof(line), "If-Range: %s", q->if_range);
			add_header(q, &c, line);
		}
	} else {
		SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)q->cap);
		if (q->if_changed[0]) {
			/* a strong ETag is compared by If-None-Match; a date by
			 * If-Modified-Since (validator_of gives no weak ETag) */
			char line[sizeof("If-Modified-Since: ") + CA_HTTP_VALIDATOR_MAX];
			snprintf(line, sizeof(line), "%s: %s", q->if_changed[0] == '"' ? "If-None-Match" : "If-Modified-Since",
			         q->if_changed);
			add_header(q, &c, line);
		}
	}
	/* HTTP/2 where TLS negotiates it, HTTP/1.1 otherwise: never forced */
	SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	if (tls)
		SET(CURLOPT_PIPEWAIT, 1L); /* rather multiplex on the one connection than open more */
	if (h->sigv4) {
		/* libcurl signs; the payload hash goes in a header of ours, which
		 * curl 7.88 needs for S3 (8.0 adds it itself): UNSIGNED-PAYLOAD
		 * for requests without a body */
		char line[sizeof("x-amz-content-sha256: ") + sizeof(q->put_sha)];
		snprintf(line, sizeof(line), "x-amz-content-sha256: %s",
		         q->method == M_PUT ? q->put_sha : "UNSIGNED-PAYLOAD");
		add_header(q, &c, line);
		if (h->sigv4_token) {
			char *t = NULL;
			if (asprintf(&t, "x-amz-security-token: %s", h->sigv4_token) < 0)
				c = CURLE_OUT_OF_MEMORY;
			else
				add_header(q, &c, t);
			if (t)
				explicit_bzero(t, strlen(t));
			free(t);
		}
		SET(CURLOPT_AWS_SIGV4, h->sigv4);
		SET(CURLOPT_USERNAME, h->sigv4_key);
		SET(CURLOPT_PASSWORD, h->sigv4_secret);
	}
	if (q->headers)
		SET(CURLOPT_HTTPHEADER, q->headers); /* not copied: freed by the next attempt or complete */
#undef SET
	if (c != CURLE_OK) {
		ca_log_debug("GET %s: %s", q->url, curl_easy_strerror(c));
		return curl_errno(c);
	}
	return 0;
}

static void easy_release(struct ca_http *h, struct req *q)
{
	if (!q->easy)
		return;
	/* libcurl before 8.1.0 keeps a pointer to the previous response's last
	 * header across curl_easy_reset: a server whose next answer on the
	 * reused handle starts with a folded header line makes it write to
	 * freed memory (curl#11101; found by tests/fuzz/fuzz-http). A fresh
	 * handle costs little: connections and DNS live in the multi handle. */
	if (LIBCURL_VERSION_NUM >= 0x080100 && h->n_idle < MAX_IDLE_HANDLES)
		h->idle[h->n_idle++] = q->easy;
	else
		curl_easy_cleanup(q->easy);
	q->easy = NULL;
}

/* Header lines may hold a credential (an Authorization line). */
static void wipe_list(struct curl_slist *l)
{
	for (; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
}

const uint64_t ca_http_latency_bounds_us[CA_HTTP_LATENCY_BUCKETS] = {
	1000, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 10000000, 30000000,
};

/* the latency histogram's slot for t microseconds (12 bounds: a scan is
 * as cheap as a search) */
static size_t latency_slot(uint64_t t)
{
	size_t i = 0;
	while (i < CA_HTTP_LATENCY_BUCKETS && t > ca_http_latency_bounds_us[i])
		i++;
	return i;
}

static void complete(struct ca_http *h, struct req *q, int r)
{
	uint64_t took = ca_now_us() - q->submit_us;
	if (r == 0 || r == -ENOENT)
		clock_progress(h->o.clock); /* an answer */
	pthread_mutex_lock(&h->lock);
	h->stats.latency[latency_slot(took)]++;
	h->stats.latency_sum_us += took;
	if (r == 0) {
		h->stats.ok++;
		h->stats.bytes += q->body.size;
	} else if (r == -ENOENT) {
		h->stats.missing++;
	} else {
		h->stats.errors++;
	}
	pthread_mutex_unlock(&h->lock);
	if (r < 0)
		ca_buf_release(&q->body);
	if (q->reply) {
		struct ca_buf t = q->reply->body;
		q->reply->body = q->body;
		q->body = t;
	}
	if (q->range_fn)
		q->range_fn(q->userdata, r, &q->body, r < 0 ? 0 : q->cr_total, r < 0 ? "" : validator_of(q));
	else if (q->cond_fn)
		q->cond_fn(q->userdata, r, &q->body, r == 0 && q->not_modified, r < 0 ? "" : version_validator(q));
	else
		q->fn(q->userdata, r, &q->body);
	ca_buf_release(&q->body);
	if (q->method == M_REQ) {
		wipe_list(q->headers);
		wipe_list(q->req_headers);
	}
	curl_slist_free_all(q->headers);
	curl_slist_free_all(q->req_headers);
	free(q->method_name);
	free(q->content_type);
	free(q->put_data);
	free(q->url);
	free(q);
}

static void start(struct ca_http *h, struct req *q)
{
	int r = easy_setup(h, q);
	if (r == 0) {
		CURLMcode mc = curl_multi_add_handle(h->multi, q->easy);
		if (mc != CURLM_OK) {
			ca_log_debug("GET %s: %s", q->url, curl_multi_strerror(mc));
			r = mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : -EIO;
		}
	}
	if (r < 0) {
		easy_release(h, q);
		complete(h, q, r);
		return;
	}
	if (q->attempts++ == 0)
		q->deadline_ms = ca_now_ms() + (uint64_t)h->o.total_timeout_s * 1000;
	pthread_mutex_lock(&h->lock);
	h->stats.attempts++;
	pthread_mutex_unlock(&h->lock);
	q->next = h->active;
	h->active = q;
	h->n_active++;
}

static void unlink_active(struct ca_http *h, struct req *q)
{
	struct req **pp = &h->active;
	while (*pp != q)
		pp = &(*pp)->next;
	*pp = q->next;
	h->n_active--;
}

/* Is the answer to a range GET exactly what was asked? On success
 * q->cr_total is the file's size (UINT64_MAX: the server did not say). */
static int range_check(struct req *q, long status)
{
	uint64_t n = q->body.size;
	if (status == 200) {
		/* on_data refused a 200 unless start is 0 and the file fit */
		if (q->start != 0 || n > q->cap)
			return -EOPNOTSUPP;
		q->cr_total = n;
		return 0;
	}
	if (status == 416) {
		/* nothing at start: fine if the server says the file ends before it */
		if (!q->cr_seen || q->cr_total == UINT64_MAX || q->start < q->cr_total)
			goto bad;
		ca_buf_release(&q->body);
		return 0;
	}
	if (!q->cr_seen || q->cr_first != q->start || n == 0 || q->cr_last - q->cr_first + 1 != n || n > q->cap)
		goto bad;
	if (q->cr_total != UINT64_MAX && q->cr_last >= q->cr_total)
		goto bad;
	/* short only where the file ends */
	if (n < q->cap && (q->cr_total == UINT64_MAX || q->cr_last + 1 != q->cr_total))
		goto bad;
	return 0;
bad:
	if (q->cr_seen)
		ca_log_debug("GET %s bytes %" PRIu64 "+%zu: HTTP %ld with %zu bytes, Content-Range %" PRIu64 "-%" PRIu64
		             "/%" PRIu64 " does not match", q->url, q->start, q->cap, status, q->body.size, q->cr_first,
		             q->cr_last, q->cr_total);
	else
		ca_log_debug("GET %s bytes %" PRIu64 "+%zu: HTTP %ld with %zu bytes and no valid Content-Range", q->url,
		             q->start, q->cap, status, q->body.size);
	return -EIO;
}

/* How long to wait before the next attempt: decorrelated jitter (a random
 * wait between the shortest and three times the last one, capped), or the
 * server's Retry-After when that is longer. */
static uint64_t backoff(struct ca_http *h, struct req *q)
{
	uint64_t lo = h->o.retry_delay_ms, hi = q->last_delay_ms ? q->last_delay_ms * 3 : lo * 3;
	if (hi > MAX_BACKOFF_MS)
		hi = MAX_BACKOFF_MS;
	if (lo > hi)
		lo = hi;
	uint64_t d = lo + ca_rng_next(&h->rng) % (hi - lo + 1);
	q->last_delay_ms = d;
	if (q->retry_after_ms >= 0 && (uint64_t)q->retry_after_ms > d)
		d = (uint64_t)q->retry_after_ms;
	return d;
}

/* The <Code> of an S3 error answer (403, or 404 other than NoSuchKey) as
 * an errno, said as a warning once per code per FAIL_SAY_MS so that a
 * mount reading many chunks of a refused store says it once; 0 to treat
 * the status as any server's. The text is the server's: only printable
 * ASCII of it is shown. */
#define FAIL_SAY_MS 5000
static void xml_text(const char *body, const char *tag, char *out, size_t cap)
{
	char open[32], close[32];
	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	const char *a = strstr(body, open), *b;
	size_t n = 0;
	out[0] = 0;
	if (!a || !(b = strstr(a += strlen(open), close)))
		return;
	for (; a < b && n + 1 < cap; a++)
		out[n++] = *a >= 0x20 && *a < 0x7f ? *a : '?';
	out[n] = 0;
}

static int s3_error(struct ca_http *h, struct req *q, long status)
{
	char code[64], msg[160];
	xml_text(q->s3_err, "Code", code, sizeof(code));
	xml_text(q->s3_err, "Message", msg, sizeof(msg));
	if (status == 404 && strcmp(code, "NoSuchBucket"))
		return 0; /* NoSuchKey, or no body (HEAD): a missing object */
	uint64_t now = ca_now_ms();
	/* without a body (HEAD) there is nothing to add: the caller says it */
	if (code[0] && (strcmp(code, h->last_code) || now - h->last_code_ms > FAIL_SAY_MS)) {
		snprintf(h->last_code, sizeof(h->last_code), "%s", code);
		h->last_code_ms = now;
		ca_log_warning("%s %s: HTTP %ld%s%s%s%s", q->method == M_PUT ? "PUT" : q->method == M_DELETE ? "DELETE" : "GET",
		               q->url, status, code[0] ? ", " : "", code, msg[0] ? ": " : "", msg);
	}
	return status == 404 ? -ENXIO : -EACCES;
}

static void finished(struct ca_http *h, CURL *e, CURLcode code)
{
	struct req *q = NULL;
	long status = 0;
	bool retry = false, checked = false;
	int r;

	curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&q);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	long version = 0;
	/* HTTP/1.1 runs one transfer per connection, so more transfers than
	 * connections would only wait inside curl with their connect timer
	 * running; HTTP/2 multiplexes them, so allow more once it is in use */
	if (code == CURLE_OK && !h->o.max_recv_speed && curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &version) == CURLE_OK &&
	    version == CURL_HTTP_VERSION_2_0)
		h->max_active = h->o.max_transfers * H2_STREAMS_PER_SLOT;
	if (h->o.max_recv_speed) {
		/* curl's own limit lets a short transfer burst; the next one
		 * waits until this one's bytes took their time at the rate */
		curl_off_t got = 0, took_us = 0;
		curl_easy_getinfo(e, CURLINFO_SIZE_DOWNLOAD_T, &got);
		curl_easy_getinfo(e, CURLINFO_TOTAL_TIME_T, &took_us);
		h->paced_ms = ca_now_ms() - (uint64_t)took_us / 1000 + (uint64_t)got * 1000 / h->o.max_recv_speed;
	}
	curl_multi_remove_handle(h->multi, e);
	unlink_active(h, q);
	easy_release(h, q);

	if (q->reply)
		q->reply->status = code == CURLE_OK ? status : 0;
	if (code == CURLE_OK && q->method == M_REQ) {
		/* any 2xx is the answer; 401/403 are the caller's to handle
		 * (a registry's challenge), never logged here */
		if (status >= 200 && status < 300) {
			r = 0;
		} else if (status == 404 || status == 410) {
			r = -ENOENT;
		} else if (status == 401 || status == 403) {
			r = -EACCES;
			checked = true;
		} else {
			r = -EIO;
			retry = status >= 500 || status == 408 || status == 429;
		}
	} else if (code == CURLE_OK) {
		if (q->range_fn && (status == 200 || status == 206 || status == 416)) {
			r = range_check(q, status);
			checked = true; /* a status we wanted: range_check said what was wrong (debug) */
			if (r == 0 && q->if_range[0] && (status != 206 || strcmp(validator_of(q), q->if_range))) {
				/* a 200 is If-Range's "changed"; a 206 of another version
				 * comes from a server that ignores If-Range */
				ca_log_debug("GET %s: HTTP %ld, validator '%s', expected '%s'", q->url, status,
				             validator_of(q), q->if_range);
				r = -ESTALE;
			}
		} else if (status == 200 || (q->method != M_GET && status >= 200 && status < 300)) {
			r = 0;
		} else if (status == 304 && q->if_changed[0]) {
			r = 0;
			q->not_modified = true;
			ca_buf_release(&q->body);
		} else if (status == 412 && (q->flags & CA_HTTP_NO_OVERWRITE)) {
			r = -EEXIST;
			checked = true;
		} else if (q->keep_error && (status == 403 || status == 404) &&
		           (r = s3_error(h, q, status)) != 0) {
			checked = true; /* said by s3_error */
		} else if (status == 404 || status == 410) {
			r = -ENOENT;
		} else {
			r = -EIO;
			retry = status >= 500 || status == 408 || status == 429;
		}
	} else if ((code == CURLE_WRITE_ERROR || code == CURLE_ABORTED_BY_CALLBACK) && q->body_err) {
		r = q->body_err; /* over the cap, out of memory, or past the deadline */
		if (r == -ETIMEDOUT)
			ca_log_debug("GET %s: no answer within the deadline (%u s)", q->url, h->o.total_timeout_s);
	} else if (code == CURLE_UNSUPPORTED_PROTOCOL && ca_location_is_https(q->url)) {
		/* the URL itself is https, so this is where a redirect led; the
		 * caller's one line says so (ca_strerror), curl's words go to debug */
		r = -EREMCHG;
		ca_log_debug("GET %s: %s%s%s", q->url, curl_easy_strerror(code), q->errbuf[0] ? ": " : "", q->errbuf);
	} else {
		r = curl_errno(code);
		retry = curl_retryable(code);
		ca_log_debug("GET %s: %s%s%s", q->url, curl_easy_strerror(code), q->errbuf[0] ? ": " : "", q->errbuf);
	}

	uint64_t delay = retry ? backoff(h, q) : 0, now = ca_now_ms();
	if (retry && !(q->flags & CA_HTTP_NO_RETRY) && q->attempts <= (unsigned)h->o.retries &&
	    now + delay < q->deadline_ms && now + delay < clock_deadline(h->o.clock)) {
		ca_log_debug("GET %s: attempt %u failed (HTTP %ld), retrying in %llu ms", q->url, q->attempts, status,
		             (unsigned long long)delay);
		q->due_ms = now + delay;
		ca_buf_release(&q->body);
		q->next = h->delayed;
		h->delayed = q;
		pthread_mutex_lock(&h->lock);
		h->stats.retries++;
		pthread_mutex_unlock(&h->lock);
		return;
	}
	if (r == -EIO && code == CURLE_OK && !checked) {
		ca_log_warning("%s %s: HTTP status %ld", q->method_name ? q->method_name : "GET", q->url, status);
		/* a refusal, not a server in trouble: no outage to wait out (remote.h) */
		if (status == 401 || status == 403)
			r = -EACCES;
	}
	else if (r == -EPROTO) /* TLS: "Protocol error" alone would not tell the user what to fix */
		ca_log_warning("GET %s: %s", q->url, q->errbuf[0] ? q->errbuf : curl_easy_strerror(code));
	else if (r == -EFBIG)
		ca_log_debug("GET %s: body larger than %zu bytes", q->url, q->cap);
	complete(h, q, r);
}

/* The oldest submitted request not started yet, or NULL. */
static struct req *queue_pop(struct ca_http *h)
{
	pthread_mutex_lock(&h->lock);
	struct req *q = h->queue_head;
	if (q) {
		h->queue_head = q->next;
		if (!h->queue_head)
			h->queue_tail = NULL;
		if (h->queue_urgent == q)
			h->queue_urgent = NULL;
	}
	pthread_mutex_unlock(&h->lock);
	return q;
}

/* Put q (not in the queue) behind the urgent ones, ahead of the rest
 * (lock held). */
static void queue_urgent_insert(struct ca_http *h, struct req *q)
{
	struct req **pp = h->queue_urgent ? &h->queue_urgent->next : &h->queue_head;
	q->next = *pp;
	*pp = q;
	if (!q->next)
		h->queue_tail = q;
	h->queue_urgent = q;
	h->stats.urgent++;
}

/* Start what may start; returns how long the loop may sleep (ms). */
static long start_ready(struct ca_http *h)
{
	uint64_t now = ca_now_ms(), next = UINT64_MAX;
	struct req **pp = &h->delayed;
	bool paced = now < h->paced_ms; /* under --rate-limit-bps */

	/* retries first: they have waited longest */
	while (*pp) {
		struct req *q = *pp;
		if (q->due_ms <= now && !paced && h->n_active < h->max_active) {
			*pp = q->next;
			start(h, q);
			continue;
		}
		if (q->due_ms < next)
			next = q->due_ms;
		pp = &q->next;
	}
	while (!paced && h->n_active < h->max_active) {
		struct req *q = queue_pop(h);
		if (!q)
			break;
		start(h, q);
	}
	if (paced)
		next = h->paced_ms; /* nothing starts before then; look again then */
	if (next == UINT64_MAX)
		return POLL_MAX_MS;
	return next <= now ? (h->n_active < h->max_active ? 0 : POLL_MAX_MS) :
	       (long)(next - now < POLL_MAX_MS ? next - now : POLL_MAX_MS);
}

static void cancel_all(struct ca_http *h)
{
	struct req *q;
	while ((q = h->active)) {
		curl_multi_remove_handle(h->multi, q->easy);
		unlink_active(h, q);
		easy_release(h, q);
		complete(h, q, -ECANCELED);
	}
	while ((q = h->delayed)) {
		h->delayed = q->next;
		complete(h, q, -ECANCELED);
	}
	while ((q = queue_pop(h)))
		complete(h, q, -ECANCELED);
}

static void *loop(void *arg)
{
	struct ca_http *h = arg;
	for (;;) {
		pthread_mutex_lock(&h->lock);
		bool stop = h->stop;
		pthread_mutex_unlock(&h->lock);
		if (stop)
			break;
		long wait = start_ready(h);
		int running = 0;
		CURLMcode mc = curl_multi_perform(h->multi, &running);
		if (mc != CURLM_OK)
			ca_log_debug("curl_multi_perform: %s", curl_multi_strerror(mc));
		CURLMsg *m;
		int left;
		bool any = false;
		while ((m = curl_multi_info_read(h->multi, &left)))
			if (m->msg == CURLMSG_DONE) {
				finished(h, m->easy_handle, m->data.result);
				any = true;
			}
		if (any)
			continue; /* slots freed: start the next ones before sleeping */
		curl_multi_poll(h->multi, NULL, 0, (int)wait, NULL);
	}
	cancel_all(h);
	return NULL;
}

/* The store settings' strings and headers, copied: the caller's may go
 * as soon as ca_http_new returns. */
static int opts_copy(struct ca_http *h)
{
	const char **f[] = { &h->o.username, &h->o.password, &h->o.netrc_file,
		             &h->o.ssl_cert, &h->o.ssl_key,  &h->o.ssl_key_password };
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (!*f[i])
			continue;
		if (!(h->owned[i] = strdup(*f[i])))
			return -ENOMEM;
		*f[i] = h->owned[i];
	}
	for (size_t i = 0; i < h->o.n_headers; i++) {
		struct curl_slist *n = curl_slist_append(h->extra_headers, h->o.headers[i]);
		if (!n)
			return -ENOMEM;
		h->extra_headers = n;
	}
	h->o.headers = NULL; /* the caller's */
	return 0;
}

/* They may hold secrets: wiped before they are freed. */
static void opts_copy_free(struct ca_http *h)
{
	for (size_t i = 0; i < sizeof(h->owned) / sizeof(h->owned[0]); i++)
		if (h->owned[i]) {
			explicit_bzero(h->owned[i], strlen(h->owned[i]));
			free(h->owned[i]);
		}
	for (struct curl_slist *x = h->extra_headers; x; x = x->next)
		explicit_bzero(x->data, strlen(x->data));
	curl_slist_free_all(h->extra_headers);
}

/* libcurl's own process-wide state: curl_global_init must run once per
 * process before any handle exists, and a library cannot know whether its
 * caller did it, so the first engine does it (the only global in core). */
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_result;

static void global_init(void)
{
	global_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int ca_http_new(const struct ca_http_opts *o, struct ca_http **ret)
{
	struct ca_http *h;
	int r;

	pthread_once(&global_once, global_init);
	if (global_result != CURLE_OK)
		return curl_errno(global_result);
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	opts_fill(&h->o, o);
	/* a rate limit is the engine's, as casync's: its helper (casync-http)
	 * fetches one chunk at a time from a store, each at most that fast */
	h->max_active = h->o.max_recv_speed ? 1 : h->o.max_transfers;
	/* a seed per engine: two clients (or stores) failing together do not
	 * retry in step */
	h->rng = ca_rng_seed(h);
	pthread_mutex_init(&h->lock, NULL);
	if (h->o.sigv4) {
		h->sigv4 = strdup(h->o.sigv4);
		h->sigv4_key = strdup(h->o.sigv4_key ? h->o.sigv4_key : "");
		h->sigv4_secret = strdup(h->o.sigv4_secret ? h->o.sigv4_secret : "");
		h->sigv4_token = h->o.sigv4_token && *h->o.sigv4_token ? strdup(h->o.sigv4_token) : NULL;
		if (!h->sigv4 || !h->sigv4_key || !h->sigv4_secret || (h->o.sigv4_token && *h->o.sigv4_token && !h->sigv4_token)) {
			r = -ENOMEM;
			goto fail;
		}
	}
	h->o.sigv4 = h->o.sigv4_key = h->o.sigv4_secret = h->o.sigv4_token = NULL; /* the caller's */
	if (h->o.ca_file) {
		h->ca_file = strdup(h->o.ca_file);
		h->o.ca_file = h->ca_file;
		if (!h->ca_file) {
			r = -ENOMEM;
			goto fail;
		}
	}
	r = opts_copy(h);
	if (r < 0)
		goto fail;
	h->multi = curl_multi_init();
	if (!h->multi) {
		r = -ENOMEM;
		goto fail;
	}
	curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)h->o.max_connections);
	curl_multi_setopt(h->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	/* keep as many idle connections as may be busy at once */
	curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, (long)h->o.max_connections * 2);

	/* the engine thread takes no signals, SIGPIPE included (thread.h) */
	r = ca_thread_create(&h->thread, loop, h);
	if (r < 0)
		goto fail;
	h->thread_started = true;
	*ret = h;
	return 0;
fail:
	ca_http_free(h);
	return r;
}

void ca_http_free(struct ca_http *h)
{
	if (!h)
		return;
	if (h->thread_started) {
		pthread_mutex_lock(&h->lock);
		h->stop = true;
		pthread_mutex_unlock(&h->lock);
		curl_multi_wakeup(h->multi);
		pthread_join(h->thread, NULL);
	}
	for (unsigned i = 0; i < h->n_idle; i++)
		curl_easy_cleanup(h->idle[i]);
	if (h->multi)
		curl_multi_cleanup(h->multi);
	pthread_mutex_destroy(&h->lock);
	free(h->ca_file);
	opts_copy_free(h);
	if (h->sigv4_secret)
		explicit_bzero(h->sigv4_secret, strlen(h->sigv4_secret));
	if (h->sigv4_token)
		explicit_bzero(h->sigv4_token, strlen(h->sigv4_token));
	free(h->sigv4);
	free(h->sigv4_key);
	free(h->sigv4_secret);
	free(h->sigv4_token);
	free(h);
}

void ca_http_cancel(struct ca_http *h)
{
	/* the engine's thread leaves its loop and completes every request */
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_mutex_unlock(&h->lock);
	curl_multi_wakeup(h->multi);
}

int ca_http_submit(struct ca_http *h, const char *url, size_t cap, ca_http_done_fn fn, void *userdata)
{
	return ca_http_submit_flags(h, url, cap, 0, fn, userdata);
}

static int submit(struct ca_http *h, struct req *q, const char *url)
{
	q->h = h;
	q->submit_us = ca_now_us();
	q->url = strdup(url);
	if (!q->url) {
		free(q);
		return -ENOMEM;
	}
	pthread_mutex_lock(&h->lock);
	if (h->stop) {
		pthread_mutex_unlock(&h->lock);
		free(q->url);
		free(q);
		return -ECANCELED;
	}
	h->stats.requests++;
	if (q->flags & CA_HTTP_URGENT) {
		queue_urgent_insert(h, q);
	} else {
		if (h->queue_tail)
			h->queue_tail->next = q;
		else
			h->queue_head = q;
		h->queue_tail = q;
	}
	pthread_mutex_unlock(&h->lock);
	curl_multi_wakeup(h->multi);
	return 0;
}

int ca_http_submit_flags(struct ca_http *h, const char *url, size_t cap, unsigned flags, ca_http_done_fn fn,
                         void *userdata)
{
	struct req *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->cap = cap;
	q->flags = flags;
	q->fn = fn;
	q->userdata = userdata;
	return submit(h, q, url);
}

bool ca_http_hurry(struct ca_http *h, const void *userdata)
{
	bool moved = false;
	pthread_mutex_lock(&h->lock);
	/* the urgent ones lead the queue: past them, a plain one is moved */
	struct req **pp = h->queue_urgent ? &h->queue_urgent->next : &h->queue_head, *prev = h->queue_urgent;
	for (; *pp; prev = *pp, pp = &(*pp)->next) {
		struct req *q = *pp;
		if (q->userdata != userdata)
			continue;
		*pp = q->next;
		if (h->queue_tail == q)
			h->queue_tail = prev;
		q->flags |= CA_HTTP_URGENT;
		queue_urgent_insert(h, q);
		moved = true;
		break;
	}
	pthread_mutex_unlock(&h->lock);
	return moved;
}

int ca_http_submit_range(struct ca_http *h, const char *url, uint64_t start, size_t len, ca_http_range_fn fn,
                         void *userdata)
{
	return ca_http_submit_range_if(h, url, start, len, NULL, fn, userdata);
}

int ca_http_submit_range_if(struct ca_http *h, const char *url, uint64_t start, size_t len, const char *validator,
                            ca_http_range_fn fn, void *userdata)
{
	struct req *q;
	if (len == 0 || start > UINT64_MAX - len)
		return -EINVAL;
	if (validator && (strlen(validator) >= CA_HTTP_VALIDATOR_MAX || strpbrk(validator, "\r\n")))
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	if (validator)
		strcpy(q->if_range, validator);
	q->cap = len;
	q->start = start;
	q->range_fn = fn;
	q->userdata = userdata;
	return submit(h, q, url);
}

static int submit_if_changed(struct ca_http *h, const char *url, size_t cap, const char *validator,
                             cond_done_fn fn, void *userdata)
{
	struct req *q;
	if (validator && (strlen(validator) >= CA_HTTP_VALIDATOR_MAX || strpbrk(validator, "\r\n")))
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->conditional = true;
	if (validator)
		strcpy(q->if_changed, validator);
	q->cap = cap;
	q->cond_fn = fn;
	q->userdata = userdata;
	return submit(h, q, url);
}

int ca_http_submit_put(struct ca_http *h, const char *url, const void *data, size_t n, unsigned flags,
                       ca_http_done_fn fn, void *userdata)
{
	struct req *q = calloc(1, sizeof(*q));
	struct ca_digest *d = NULL;
	uint8_t sha[CA_CHUNK_ID_SIZE];
	int r;
	if (!q)
		return -ENOMEM;
	q->method = M_PUT;
	q->flags = flags & CA_HTTP_NO_OVERWRITE;
	q->fn = fn;
	q->userdata = userdata;
	q->put_len = n;
	q->put_data = malloc(n ? n : 1);
	r = q->put_data ? ca_digest_new(CA_DIGEST_SHA256, &d) : -ENOMEM;
	if (r == 0)
		r = ca_digest_once(d, data, n, sha);
	ca_digest_free(d);
	if (r < 0) {
		free(q->put_data);
		free(q);
		return r;
	}
	memcpy(q->put_data, data, n);
	ca_id_to_hex(sha, q->put_sha);
	void *data_copy = q->put_data;
	r = submit(h, q, url);
	if (r < 0)
		free(data_copy); /* submit freed q */
	return r;
}

int ca_http_submit_delete(struct ca_http *h, const char *url, ca_http_done_fn fn, void *userdata)
{
	struct req *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->method = M_DELETE;
	q->fn = fn;
	q->userdata = userdata;
	return submit(h, q, url);
}

struct sync_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int r;
	struct ca_buf *out;
	uint64_t total;
	char *validator; /* NULL or CA_HTTP_VALIDATOR_MAX bytes */
	bool not_modified;
};

static void sync_done(void *userdata, int r, struct ca_buf *body)
{
	struct sync_wait *w = userdata;
	pthread_mutex_lock(&w->lock);
	if (r == 0) {
		struct ca_buf t = *w->out;
		*w->out = *body;
		*body = t;
	}
	w->r = r;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void sync_range_done(void *userdata, int r, struct ca_buf *body, uint64_t total, const char *validator)
{
	struct sync_wait *w = userdata;
	w->total = total; /* before done: sync_done publishes these under the lock */
	if (w->validator)
		strcpy(w->validator, validator);
	sync_done(userdata, r, body);
}

static void sync_cond_done(void *userdata, int r, struct ca_buf *body, bool not_modified, const char *validator)
{
	struct sync_wait *w = userdata;
	w->not_modified = not_modified;
	strcpy(w->validator, validator);
	sync_done(userdata, r, body);
}

enum sync_kind { SYNC_GET, SYNC_RANGE, SYNC_IF_CHANGED };

/* Submit with sync_done, sync_range_done or sync_cond_done and wait. */
static int sync_wait_for(struct ca_http *h, const char *url, size_t cap, uint64_t start, enum sync_kind kind,
                         const char *if_changed, struct ca_buf *out, uint64_t *ret_total, char *ret_validator,
                         bool *ret_not_modified)
{
	struct sync_wait w = { .out = out, .validator = ret_validator };
	int r;
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	if (kind == SYNC_RANGE)
		r = ca_http_submit_range(h, url, start, cap, sync_range_done, &w);
	else if (kind == SYNC_IF_CHANGED)
		r = submit_if_changed(h, url, cap, if_changed, sync_cond_done, &w);
	else
		r = ca_http_submit(h, url, cap, sync_done, &w);
	if (r == 0) {
		pthread_mutex_lock(&w.lock);
		while (!w.done)
			pthread_cond_wait(&w.cond, &w.lock);
		r = w.r;
		if (ret_total)
			*ret_total = w.total;
		if (ret_not_modified)
			*ret_not_modified = w.not_modified;
		pthread_mutex_unlock(&w.lock);
	}
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	return r;
}

int ca_http_get(struct ca_http *h, const char *url, size_t cap, struct ca_buf *out)
{
	return sync_wait_for(h, url, cap, 0, SYNC_GET, NULL, out, NULL, NULL, NULL);
}

int ca_http_get_if_changed(struct ca_http *h, const char *url, size_t cap, const char *validator, struct ca_buf *out,
                           bool *ret_not_modified, char *ret_validator)
{
	*ret_not_modified = false;
	ret_validator[0] = 0;
	return sync_wait_for(h, url, cap, 0, SYNC_IF_CHANGED, validator, out, NULL, ret_validator, ret_not_modified);
}

int ca_http_get_range(struct ca_http *h, const char *url, uint64_t start, size_t len, struct ca_buf *out,
                      uint64_t *ret_total)
{
	return ca_http_get_range_validator(h, url, start, len, out, ret_total, NULL);
}

int ca_http_get_range_validator(struct ca_http *h, const char *url, uint64_t start, size_t len, struct ca_buf *out,
                                uint64_t *ret_total, char *ret_validator)
{
	if (ret_validator)
		ret_validator[0] = 0;
	return sync_wait_for(h, url, len, start, SYNC_RANGE, NULL, out, ret_total, ret_validator, NULL);
}

unsigned ca_http_deadline_s(const struct ca_http *h)
{
	return h->o.total_timeout_s;
}

void ca_http_get_stats(struct ca_http *h, struct ca_http_stats *ret)
{
	pthread_mutex_lock(&h->lock);
	*ret = h->stats;
	pthread_mutex_unlock(&h->lock);
}

/* ---- any request (http.h ca_http_request) ---- */

struct req_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int r;
};

static void req_done(void *userdata, int r, struct ca_buf *body)
{
	struct req_wait *w = userdata;
	(void)body; /* moved into the reply by complete() */
	pthread_mutex_lock(&w->lock);
	w->r = r;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int ca_http_request(struct ca_http *h, const struct ca_http_request *rq, struct ca_http_reply *ret)
{
	struct req_wait w = { .done = false };
	struct req *q = calloc(1, sizeof(*q));
	int r = q ? 0 : -ENOMEM;
	ca_buf_release(&ret->body);
	*ret = (struct ca_http_reply){ 0 };
	if (r == 0) {
		q->method = M_REQ;
		q->cap = rq->cap;
		q->flags = rq->flags & CA_HTTP_NO_RETRY;
		q->fn = req_done;
		q->userdata = &w;
		q->reply = ret;
		q->method_name = strdup(rq->method);
		if (!q->method_name || (rq->content_type && !(q->content_type = strdup(rq->content_type))))
			r = -ENOMEM;
	}
	for (size_t i = 0; r == 0 && i < rq->n_headers; i++) {
		struct curl_slist *n = curl_slist_append(q->req_headers, rq->headers[i]);
		if (!n)
			r = -ENOMEM;
		else
			q->req_headers = n;
	}
	if (r == 0 && rq->body_len) {
		q->put_data = malloc(rq->body_len);
		if (!q->put_data)
			r = -ENOMEM;
		else
			memcpy(q->put_data, rq->body, rq->body_len);
		q->put_len = rq->body_len;
	}
	if (r < 0) {
		if (q) {
			wipe_list(q->req_headers);
			curl_slist_free_all(q->req_headers);
			free(q->method_name);
			free(q->content_type);
			free(q->put_data);
			free(q);
		}
		return r;
	}
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	struct curl_slist *hl = q->req_headers;
	char *mn = q->method_name, *ct = q->content_type;
	void *pd = q->put_data;
	r = submit(h, q, rq->url); /* frees q (only) on failure */
	if (r < 0) {
		wipe_list(hl);
		curl_slist_free_all(hl);
		free(mn);
		free(ct);
		free(pd);
	} else {
		pthread_mutex_lock(&w.lock);
		while (!w.done)
			pthread_cond_wait(&w.cond, &w.lock);
		r = w.r;
		pthread_mutex_unlock(&w.lock);
	}
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	return r;
}

void ca_http_reply_clear(struct ca_http_reply *r)
{
	ca_buf_release(&r->body);
	*r = (struct ca_http_reply){ 0 };
}
