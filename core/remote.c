/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* remote.c - HTTP chunk stores (a chunksrc backend) and whole-file downloads. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "digest.h"
#include "log.h"
#include "location.h"
#include "remote.h"
#include "s3.h"
#include "store.h"
#include "storeconf.h"

#define PF_BUCKETS 256
#define PF_MAX_ENTRIES 1024              /* downloads tracked at once (running or parked) */
#define PF_MAX_PARKED_BYTES (64u << 20)  /* finished prefetches waiting for their fetch */
#define PF_MAX_AGE_MS 60000              /* a parked download nobody wanted for this long is dropped */
/* A chunk whose download failed (after its retries) fails at once for this
 * long: readers of a chunk a failing server cannot give do not each cost
 * another round of requests. "Missing" (404) is not remembered: it costs
 * one request and the next store may have it. */
#define FAIL_MEMORY_MS 5000

/* One download of one chunk, shared by the prefetch that started it and
 * every fetch that joins it. */
struct pf {
	uint8_t id[CA_CHUNK_ID_SIZE];
	struct ca_remote_store *rs;
	struct pf *hnext;
	struct pf *older, *newer; /* the parked list, while done && !waiters */
	unsigned waiters;         /* fetch() calls blocked on it */
	bool done, parked, prefetched;
	int r;
	struct ca_buf body;
	uint64_t done_ms;
};

struct ca_remote_store {
	char *base;
	struct ca_http *http;
	size_t file_max; /* a .cacnk download's cap: set_file_max, else CA_REMOTE_CHUNK_FILE_MAX */
	char *query;     /* "?..." after each chunk URL (store-query = yes), or NULL */

	pthread_mutex_t lock; /* guards everything below */
	pthread_cond_t cond;  /* broadcast when a download settles */
	struct pf *buckets[PF_BUCKETS];
	unsigned n_entries;
	size_t parked_bytes;
	struct pf *oldest, *newest;
	uint64_t prefetches, prefetch_hits, prefetch_drops, prefetch_skips, failed_fast;
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static unsigned bucket_of(const uint8_t *id)
{
	return id[0]; /* ids are digests: one byte is uniform enough */
}

static bool remembered(int r)
{
	return r < 0 && r != -ENOENT && r != -ECANCELED && r != -ENOMEM;
}

static struct pf *lookup(struct ca_remote_store *rs, const uint8_t *id)
{
	for (struct pf *e = rs->buckets[bucket_of(id)]; e; e = e->hnext)
		if (!memcmp(e->id, id, CA_CHUNK_ID_SIZE))
			return e;
	return NULL;
}

static void unpark(struct ca_remote_store *rs, struct pf *e)
{
	if (!e->parked)
		return;
	if (e->older)
		e->older->newer = e->newer;
	else
		rs->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		rs->newest = e->older;
	e->older = e->newer = NULL;
	e->parked = false;
	rs->parked_bytes -= e->body.size;
}

/* Take e out of the table and free it. */
static void drop(struct ca_remote_store *rs, struct pf *e)
{
	struct pf **pp = &rs->buckets[bucket_of(e->id)];
	unpark(rs, e);
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	rs->n_entries--;
	ca_buf_release(&e->body);
	free(e);
}

static bool expired(const struct pf *e, uint64_t now)
{
	return e->done_ms + (e->waiters == 0 && remembered(e->r) ? FAIL_MEMORY_MS : PF_MAX_AGE_MS) < now;
}

/* Parked downloads nobody came for: oldest first, past the byte bound,
 * the entry bound or the age. */
static void trim(struct ca_remote_store *rs)
{
	uint64_t now = now_ms();
	while (rs->oldest && (rs->parked_bytes > PF_MAX_PARKED_BYTES || rs->n_entries > PF_MAX_ENTRIES ||
	                      expired(rs->oldest, now))) {
		rs->prefetch_drops += rs->oldest->prefetched; /* nobody claimed it */
		drop(rs, rs->oldest);
	}
}

/* Into the parked list, newest end (with the lock held). */
static void park(struct ca_remote_store *rs, struct pf *e)
{
	e->parked = true;
	e->older = rs->newest;
	if (rs->newest)
		rs->newest->newer = e;
	else
		rs->oldest = e;
	rs->newest = e;
	rs->parked_bytes += e->body.size;
	trim(rs);
}

static struct pf *entry_new(struct ca_remote_store *rs, const uint8_t *id)
{
	struct pf *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	memcpy(e->id, id, CA_CHUNK_ID_SIZE);
	e->rs = rs;
	unsigned b = bucket_of(id);
	e->hnext = rs->buckets[b];
	rs->buckets[b] = e;
	rs->n_entries++;
	return e;
}

/* A download ended (or could not start): hand it to its waiters, or park it. */
static void settle(struct ca_remote_store *rs, struct pf *e, int r, struct ca_buf *body)
{
	pthread_mutex_lock(&rs->lock);
	e->r = r;
	e->done = true;
	e->done_ms = now_ms();
	if (r == 0 && body) {
		struct ca_buf t = e->body;
		e->body = *body;
		*body = t;
	}
	if (e->waiters == 0) {
		/* failures are parked too: the fetch that follows gets the answer
		 * (404, or the error the retries ended in) without asking again;
		 * a failure is kept only FAIL_MEMORY_MS, so a server that comes
		 * back is asked again soon */
		park(rs, e);
	}
	pthread_cond_broadcast(&rs->cond);
	pthread_mutex_unlock(&rs->lock);
}

static void on_done(void *userdata, int r, struct ca_buf *body)
{
	struct pf *e = userdata;
	settle(e->rs, e, r, body);
}

static void chunk_url(const struct ca_remote_store *rs, const uint8_t *id, char **ret)
{
	char rel[CA_STORE_REL_PATH_LEN + 1];
	ca_store_rel_path(id, rel);
	if (asprintf(ret, "%s/%s%s", rs->base, rel, rs->query ? rs->query : "") < 0)
		*ret = NULL;
}

static int start_download(struct ca_remote_store *rs, struct pf *e)
{
	char *url;
	chunk_url(rs, e->id, &url);
	int r = url ? ca_http_submit(rs->http, url, rs->file_max, on_done, e) : -ENOMEM;
	free(url);
	if (r < 0)
		settle(rs, e, r, NULL);
	return r;
}

static int remote_fetch(void *be, const uint8_t id[CA_CHUNK_ID_SIZE], struct ca_buf *out, bool *ret_compressed)
{
	struct ca_remote_store *rs = be;
	struct pf *e;
	int r;

	pthread_mutex_lock(&rs->lock);
	trim(rs);
	e = lookup(rs, id);
	if (e && e->done && e->waiters == 0 && expired(e, now_ms())) {
		drop(rs, e); /* a remembered failure behind a younger parked entry */
		e = NULL;
	}
	if (e) {
		if (e->done && remembered(e->r))
			rs->failed_fast++;
		else if (e->prefetched && e->waiters == 0)
			rs->prefetch_hits++;
		e->prefetched = false; /* claimed */
		unpark(rs, e);
		e->waiters++;
	} else {
		e = entry_new(rs, id);
		if (!e) {
			pthread_mutex_unlock(&rs->lock);
			return -ENOMEM;
		}
		e->waiters = 1;
		pthread_mutex_unlock(&rs->lock);
		(void)start_download(rs, e); /* a failure settles e */
		pthread_mutex_lock(&rs->lock);
	}
	while (!e->done)
		pthread_cond_wait(&rs->cond, &rs->lock);
	r = e->r;
	e->waiters--;
	if (r == 0) {
		out->size = 0;
		if (e->waiters == 0) {
			struct ca_buf t = *out;
			*out = e->body;
			e->body = t;
		} else {
			r = ca_buf_append(out, e->body.data, e->body.size, rs->file_max);
		}
	}
	if (e->waiters == 0) {
		if (remembered(r))
			park(rs, e); /* the next readers fail at once, for FAIL_MEMORY_MS */
		else
			drop(rs, e);
	}
	pthread_mutex_unlock(&rs->lock);
	*ret_compressed = true; /* casync's HTTP stores only serve .cacnk */
	return r;
}

static void remote_prefetch(void *be, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	struct ca_remote_store *rs = be;
	struct pf *e = NULL;

	pthread_mutex_lock(&rs->lock);
	trim(rs);
	if (lookup(rs, id)) {
		pthread_mutex_unlock(&rs->lock);
		return;
	}
	if (rs->n_entries >= PF_MAX_ENTRIES) {
		rs->prefetch_skips++;
		pthread_mutex_unlock(&rs->lock);
		return;
	}
	e = entry_new(rs, id);
	if (e) {
		e->prefetched = true;
		rs->prefetches++;
	}
	pthread_mutex_unlock(&rs->lock);
	if (e)
		(void)start_download(rs, e);
}

static void remote_free(void *be)
{
	ca_remote_store_free(be);
}

static void remote_set_file_max(void *be, size_t max)
{
	struct ca_remote_store *rs = be;
	rs->file_max = max < CA_REMOTE_CHUNK_FILE_MAX ? max : CA_REMOTE_CHUNK_FILE_MAX;
}

const struct ca_chunk_backend_ops ca_remote_store_ops = {
	.kind = "http",
	.fetch = remote_fetch,
	.prefetch = remote_prefetch,
	.set_file_max = remote_set_file_max,
	.free = remote_free,
};

int ca_remote_store_new(const char *url, const struct ca_http_opts *o, struct ca_remote_store **ret)
{
	struct ca_remote_store *rs;
	struct ca_s3_conn s3 = { 0 };
	int r;

	if (ca_location_kind(url) != CA_LOCATION_HTTP)
		return -EINVAL;
	const char *conf_url = url; /* settings are looked up by the URL as given */
	/* an s3+ URL: an HTTP one whose requests are signed (s3.h) */
	r = ca_s3_route(&url, &o, &s3);
	if (r < 0)
		return r;
	rs = calloc(1, sizeof(*rs));
	if (!rs) {
		ca_s3_conn_clear(&s3);
		return -ENOMEM;
	}
	pthread_mutex_init(&rs->lock, NULL);
	pthread_cond_init(&rs->cond, NULL);
	/* as casync: parameters are not part of the chunk URLs */
	size_t n = strcspn(url, "?;#");
	while (n > 0 && url[n - 1] == '/')
		n--;
	rs->file_max = CA_REMOTE_CHUNK_FILE_MAX;
	rs->base = strndup(url, n);
	if (!rs->base) {
		r = -ENOMEM;
		goto fail;
	}
	bool keep_query = false;
	r = ca_storeconf_http_new(conf_url, o, &rs->http, &keep_query);
	if (r < 0)
		goto fail;
	/* a store whose settings say so: its query goes on (a CDN's token) */
	const char *q = strchr(url, '?');
	if (keep_query && q && q[1] != '#' && q[1] && !(rs->query = strndup(q, strcspn(q, "#")))) {
		r = -ENOMEM;
		goto fail;
	}
	ca_s3_conn_clear(&s3);
	*ret = rs;
	return 0;
fail:
	ca_s3_conn_clear(&s3);
	ca_remote_store_free(rs);
	return r;
}

void ca_remote_store_free(struct ca_remote_store *rs)
{
	if (!rs)
		return;
	if (rs->http && ca_log_get_level() >= CA_LOG_INFO) {
		struct ca_remote_store_stats st;
		ca_remote_store_get_stats(rs, &st);
		if (st.http.requests)
			ca_log_info("%s: %llu requests (%llu retries), %.1f MiB, %llu missing, %llu failed; "
			            "%llu prefetched, %llu dropped unused",
			            rs->base, (unsigned long long)st.http.requests, (unsigned long long)st.http.retries,
			            st.http.bytes / 1048576.0, (unsigned long long)st.http.missing,
			            (unsigned long long)st.http.errors, (unsigned long long)st.prefetches,
			            (unsigned long long)st.prefetch_drops);
	}
	/* first the engine: its cancelled downloads settle into the table */
	ca_http_free(rs->http);
	for (unsigned i = 0; i < PF_BUCKETS; i++)
		while (rs->buckets[i])
			drop(rs, rs->buckets[i]);
	pthread_cond_destroy(&rs->cond);
	pthread_mutex_destroy(&rs->lock);
	free(rs->base);
	free(rs->query);
	free(rs);
}

const char *ca_remote_store_base(const struct ca_remote_store *rs)
{
	return rs->base;
}

int ca_chunksrc_add_remote(struct ca_chunksrc *src, const char *url, const struct ca_http_opts *o,
                           struct ca_remote_store **ret_rs)
{
	struct ca_remote_store *rs;
	int r = ca_remote_store_new(url, o, &rs);
	if (r < 0)
		return r;
	r = ca_chunksrc_add_backend(src, &ca_remote_store_ops, rs); /* frees rs on failure */
	if (r < 0)
		return r;
	if (ret_rs)
		*ret_rs = rs;
	return 0;
}

void ca_remote_store_get_stats(struct ca_remote_store *rs, struct ca_remote_store_stats *ret)
{
	ca_http_get_stats(rs->http, &ret->http);
	pthread_mutex_lock(&rs->lock);
	ret->prefetches = rs->prefetches;
	ret->prefetch_hits = rs->prefetch_hits;
	ret->prefetch_drops = rs->prefetch_drops;
	ret->prefetch_skips = rs->prefetch_skips;
	ret->failed_fast = rs->failed_fast;
	pthread_mutex_unlock(&rs->lock);
}

#define PROBE_IN_FLIGHT 256

struct probe {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t in_flight;
	int err;
};

struct probe_one {
	struct probe *p;
	uint8_t *present;
};

static void probe_done(void *userdata, int r, struct ca_buf *body)
{
	struct probe_one *o = userdata;
	struct probe *p = o->p;
	*o->present = r == 0;
	pthread_mutex_lock(&p->lock);
	if (r < 0 && r != -ENOENT && !p->err)
		p->err = r;
	p->in_flight--;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	free(o);
}

int ca_remote_store_probe(struct ca_remote_store *rs, const uint8_t *const *ids, size_t n, uint8_t *ret_present)
{
	struct probe p = { .err = 0 };
	int r = 0;
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	for (size_t i = 0; i < n && r == 0; i++) {
		struct probe_one *o = malloc(sizeof(*o));
		char *url;
		ret_present[i] = 0;
		if (!o) {
			r = -ENOMEM;
			break;
		}
		*o = (struct probe_one){ &p, &ret_present[i] };
		/* bounded: an index may list millions of chunks */
		pthread_mutex_lock(&p.lock);
		while (p.in_flight >= PROBE_IN_FLIGHT && !p.err)
			pthread_cond_wait(&p.cond, &p.lock);
		r = p.err;
		if (r == 0)
			p.in_flight++;
		pthread_mutex_unlock(&p.lock);
		if (r < 0) {
			free(o);
			break;
		}
		chunk_url(rs, ids[i], &url);
		r = url ? ca_http_submit_flags(rs->http, url, 0, CA_HTTP_HEAD, probe_done, o) : -ENOMEM;
		free(url);
		if (r < 0) {
			free(o);
			pthread_mutex_lock(&p.lock);
			p.in_flight--;
			pthread_mutex_unlock(&p.lock);
		}
	}
	pthread_mutex_lock(&p.lock);
	while (p.in_flight > 0)
		pthread_cond_wait(&p.cond, &p.lock);
	if (r == 0)
		r = p.err;
	pthread_mutex_unlock(&p.lock);
	pthread_cond_destroy(&p.cond);
	pthread_mutex_destroy(&p.lock);
	return r;
}

int ca_remote_get_file(const char *url, size_t cap, const struct ca_http_opts *o, struct ca_buf *out)
{
	bool not_modified;
	char validator[CA_HTTP_VALIDATOR_MAX];
	return ca_remote_get_file_if_changed(url, cap, o, NULL, out, &not_modified, validator);
}

int ca_remote_get_file_if_changed(const char *url, size_t cap, const struct ca_http_opts *o, const char *validator,
                                  struct ca_buf *out, bool *ret_not_modified, char *ret_validator)
{
	struct ca_http *h = NULL;
	struct ca_s3_conn s3 = { 0 };
	int r;
	*ret_not_modified = false;
	ret_validator[0] = 0;
	if (ca_location_kind(url) != CA_LOCATION_HTTP)
		return -EINVAL;
	const char *conf_url = url; /* settings are looked up by the URL as given */
	/* an s3+ URL: an HTTP one whose requests are signed (s3.h) */
	r = ca_s3_route(&url, &o, &s3);
	if (r < 0)
		return r;
	r = ca_storeconf_http_new(conf_url, o, &h, NULL);
	if (r == 0)
		r = ca_http_get_if_changed(h, url, cap, validator, out, ret_not_modified, ret_validator);
	ca_http_free(h);
	ca_s3_conn_clear(&s3);
	return r;
}
