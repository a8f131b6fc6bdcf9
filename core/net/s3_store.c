/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* s3_store.c - writing and collecting S3 chunk stores (see s3.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "format/idset.h"
#include "base/location.h"
#include "base/log.h"
#include "net/endpoint.h"
#include "net/oci.h"
#include "net/s3.h"
#include "store/store.h"
#include "store/store_gc.h"
#include "store/store_writer.h"

#define MAX_IN_FLIGHT 64
#define MAX_BYTES_IN_FLIGHT (32u << 20)
#define LIST_PAGE_MAX (8u << 20)

/* Many requests on one engine, waited for together. */
struct batch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned in_flight;
	size_t bytes;
	int err;
};

static void batch_init(struct batch *b)
{
	*b = (struct batch){ .err = 0 };
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
}

static void batch_destroy(struct batch *b)
{
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
}

/* Wait for room for one more of size n (0 when there is, else the first error). */
static int batch_enter(struct batch *b, size_t n)
{
	pthread_mutex_lock(&b->lock);
	while (!b->err && (b->in_flight >= MAX_IN_FLIGHT || (b->in_flight && b->bytes + n > MAX_BYTES_IN_FLIGHT)))
		pthread_cond_wait(&b->cond, &b->lock);
	int r = b->err;
	if (!r) {
		b->in_flight++;
		b->bytes += n;
	}
	pthread_mutex_unlock(&b->lock);
	return r;
}

static void batch_leave(struct batch *b, size_t n, int r)
{
	pthread_mutex_lock(&b->lock);
	b->in_flight--;
	b->bytes -= n;
	if (r < 0 && !b->err)
		b->err = r;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static int batch_wait(struct batch *b)
{
	pthread_mutex_lock(&b->lock);
	while (b->in_flight)
		pthread_cond_wait(&b->cond, &b->lock);
	int r = b->err;
	pthread_mutex_unlock(&b->lock);
	return r;
}

static void one_done(void *userdata, int r, struct ca_buf *body)
{
	(void)body;
	batch_leave(userdata, 0, r);
}

/* A bucket that answers: one HEAD of the bucket (signed like everything
 * else, so a wrong secret shows here). Logs its one line. */
static int check_bucket(struct ca_http *h, const struct ca_s3_conn *c, const char *url)
{
	struct batch b;
	batch_init(&b);
	int r = batch_enter(&b, 0);
	if (r == 0 && (r = ca_http_submit_flags(h, c->u.bucket_url, 0, CA_HTTP_HEAD, one_done, &b)) < 0)
		batch_leave(&b, 0, 0);
	if (r == 0)
		r = batch_wait(&b);
	batch_destroy(&b);
	if (r == -ENXIO || r == -ENOENT)
		return ca_log_error("%s: no such bucket", url), -ENXIO;
	if (r == -EACCES)
		ca_log_error("%s: access denied: check the key and secret (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) "
		             "and the region (AWS_REGION)", url);
	else if (r < 0)
		ca_log_error_errno(r, "%s", url);
	return r;
}

struct ca_s3_writer {
	struct ca_endpoint e; /* the bucket, credentials and settings, resolved once */
	char *url;
	struct ca_http *http;
	struct batch b;
	uint64_t skipped, skipped_bytes; /* under b.lock */
};

struct upload {
	struct ca_s3_writer *w;
	char *url;
	void *data;
	size_t n;
};

static void upload_end(struct upload *u, int r, bool skipped)
{
	struct ca_s3_writer *w = u->w;
	if (r < 0 && r != -ECANCELED)
		ca_log_debug("%s: %d", u->url, r);
	if (skipped) {
		pthread_mutex_lock(&w->b.lock);
		w->skipped++;
		w->skipped_bytes += u->n;
		pthread_mutex_unlock(&w->b.lock);
	}
	size_t n = u->n;
	free(u->url);
	free(u->data);
	free(u);
	batch_leave(&w->b, n, r);
}

static void put_done(void *userdata, int r, struct ca_buf *body)
{
	(void)body;
	struct upload *u = userdata;
	/* 412: someone else put it between our HEAD and PUT: it is there */
	upload_end(u, r == -EEXIST ? 0 : r, r == -EEXIST);
}

static void head_done(void *userdata, int r, struct ca_buf *body)
{
	(void)body;
	struct upload *u = userdata;
	if (r == 0) {
		upload_end(u, 0, true);
		return;
	}
	if (r != -ENOENT) {
		upload_end(u, r, false);
		return;
	}
	/* on the engine thread: submitting does not block */
	r = ca_http_submit_put(u->w->http, u->url, u->data, u->n, CA_HTTP_NO_OVERWRITE, put_done, u);
	if (r < 0)
		upload_end(u, r, false);
}

/* url (an s3+ URL, else -EINVAL logged as s3.h says) resolved once:
 * one read of the settings file for its section and credentials. */
static int s3_endpoint(struct ca_endpoint *e, const char *url, const struct ca_s3_settings *set,
                       const struct ca_http_opts *http)
{
	struct ca_location at;
	ca_location_parse(url, &at);
	*e = (struct ca_endpoint){ 0 };
	if (!at.s3)
		return ca_log_error("%s: not an s3+http(s) URL", url), -EINVAL;
	return ca_endpoint_init_s3(e, url, set, http, NULL); /* logs S3's own errors */
}

int ca_s3_writer_new(const char *url, const struct ca_s3_settings *set, const struct ca_http_opts *http,
                     struct ca_s3_writer **ret)
{
	struct ca_s3_writer *w = calloc(1, sizeof(*w));
	int r;
	if (!w)
		return -ENOMEM;
	batch_init(&w->b);
	r = s3_endpoint(&w->e, url, set, http);
	if (r < 0)
		goto fail;
	w->url = strdup(url);
	if (!w->url) {
		r = -ENOMEM;
		goto fail;
	}
	r = ca_http_new(&w->e.http, &w->http);
	if (r < 0)
		goto fail;
	r = check_bucket(w->http, &w->e.s3, url);
	if (r < 0)
		goto fail;
	*ret = w;
	return 0;
fail:
	ca_s3_writer_free(w);
	return r;
}

int ca_s3_writer_put(struct ca_s3_writer *w, struct ca_codec *codec, const uint8_t id[CA_CHUNK_ID_SIZE],
                     const void *p, size_t n)
{
	char rel[CA_STORE_REL_PATH_LEN + 1];
	struct upload *u = NULL;
	int r;
	/* what goes out is what the id names: a bug or bad memory between the
	 * hash and here would publish a chunk no reader could use */
	struct ca_buf plain = CA_BUF_INIT;
	r = ca_codec_decode_chunk(codec, p, n, id, UINT64_MAX, &plain);
	ca_buf_release(&plain);
	if (r < 0) {
		char hex[2 * CA_CHUNK_ID_SIZE + 1];
		ca_id_to_hex(id, hex);
		ca_log_error("chunk %s: does not match its id before upload", hex);
		return -EUCLEAN;
	}
	r = batch_enter(&w->b, n);
	if (r < 0)
		return r;
	u = calloc(1, sizeof(*u));
	if (!u || !(u->data = malloc(n ? n : 1))) {
		free(u);
		batch_leave(&w->b, n, 0);
		return -ENOMEM;
	}
	memcpy(u->data, p, n);
	u->n = n;
	u->w = w;
	ca_store_rel_path(id, rel);
	if (asprintf(&u->url, "%s/%s", w->e.s3.u.base, rel) < 0) {
		free(u->data);
		free(u);
		batch_leave(&w->b, n, 0);
		return -ENOMEM;
	}
	r = ca_http_submit_flags(w->http, u->url, 0, CA_HTTP_HEAD, head_done, u);
	if (r < 0) {
		upload_end(u, 0, false);
		return r;
	}
	return 1;
}

int ca_s3_writer_finish(struct ca_s3_writer *w, uint64_t *ret_skipped, uint64_t *ret_skipped_bytes)
{
	int r = batch_wait(&w->b);
	if (ret_skipped)
		*ret_skipped = w->skipped;
	if (ret_skipped_bytes)
		*ret_skipped_bytes = w->skipped_bytes;
	return r;
}

void ca_s3_writer_free(struct ca_s3_writer *w)
{
	if (!w)
		return;
	/* after finish nothing is in flight; after a failure or an interrupt,
	 * freeing the engine cancels what is (each upload ends through its
	 * callback), rather than waiting for it */
	ca_http_free(w->http);
	(void)batch_wait(&w->b);
	ca_endpoint_clear(&w->e);
	batch_destroy(&w->b);
	free(w->url);
	free(w);
}

int ca_s3_put_file(const char *url, const struct ca_s3_settings *set, const struct ca_http_opts *http,
                   const void *p, size_t n)
{
	struct ca_endpoint e;
	struct ca_http *h = NULL;
	struct batch b;
	int r = s3_endpoint(&e, url, set, http);
	if (r < 0)
		return r;
	batch_init(&b);
	r = ca_http_new(&e.http, &h);
	if (r == 0)
		r = batch_enter(&b, 0);
	if (r == 0 && (r = ca_http_submit_put(h, e.fetch_url, p, n, 0, one_done, &b)) < 0)
		batch_leave(&b, 0, 0);
	if (r == 0)
		r = batch_wait(&b);
	ca_http_free(h);
	batch_destroy(&b);
	ca_endpoint_clear(&e);
	return r;
}

/* ---- gc ---- */

struct gc {
	const struct ca_store_gc_opts *o;
	struct ca_store_gc_stats *st;
	struct ca_s3_conn *c;
	struct ca_http *http;
	struct batch b;
	/* the last chunk listed: S3 lists keys in binary order, so chunk ids
	 * only go up, and a server that repeats itself is caught */
	bool any;
	uint8_t last[CA_CHUNK_ID_SIZE];
};

/* A listing that ends: at most this many pages (of up to 1,000 keys each) */
#define LIST_PAGES_MAX (1u << 20)

struct del {
	struct gc *g;
	char *key;
	uint64_t size;
};

static void del_done(void *userdata, int r, struct ca_buf *body)
{
	(void)body;
	struct del *d = userdata;
	struct gc *g = d->g;
	if (r == -ENOENT)
		r = 0; /* gone already: what we wanted */
	pthread_mutex_lock(&g->b.lock);
	if (r == 0) {
		g->st->removed++;
		g->st->removed_bytes += d->size;
	} else {
		g->st->failed++;
	}
	pthread_mutex_unlock(&g->b.lock);
	/* on_chunk runs on the engine thread, one call at a time */
	if (g->o->on_chunk)
		g->o->on_chunk(g->o->userdata, d->key, r);
	free(d->key);
	free(d);
	batch_leave(&g->b, 0, 0); /* failures are counted, not fatal */
}

static int gc_key(void *userdata, const char *key, uint64_t size)
{
	struct gc *g = userdata;
	uint8_t id[CA_CHUNK_ID_SIZE];
	if (ca_s3_key_chunk_id(key, g->c->u.prefix, id) < 0)
		return 0;
	if (g->any && memcmp(id, g->last, sizeof(id)) <= 0)
		return -ELOOP;
	g->any = true;
	memcpy(g->last, id, sizeof(id));
	if (ca_idset_get(g->o->keep, id, NULL) > 0) {
		g->st->kept++;
		return 0;
	}
	if (g->o->dry_run) {
		g->st->removed++;
		g->st->removed_bytes += size;
		if (g->o->on_chunk)
			g->o->on_chunk(g->o->userdata, key, 0);
		return 0;
	}
	struct del *d = calloc(1, sizeof(*d));
	char *url = NULL;
	int r = batch_enter(&g->b, 0);
	if (r < 0) {
		free(d);
		return r;
	}
	if (!d || !(d->key = strdup(key)) ||
	    asprintf(&url, "%s/%s", g->c->u.bucket_url, key) < 0) {
		if (d)
			free(d->key);
		free(d);
		batch_leave(&g->b, 0, 0);
		return -ENOMEM;
	}
	d->g = g;
	d->size = size;
	/* the key came from the listing: it is a chunk name, nothing to escape */
	r = ca_http_submit_delete(g->http, url, del_done, d);
	free(url);
	if (r < 0) {
		free(d->key);
		free(d);
		batch_leave(&g->b, 0, 0);
	}
	return r;
}

/* Percent-encode s into out: RFC 3986's unreserved characters and '/'
 * are kept, as botocore sends a prefix (libcurl 7.88 signs the query as
 * it is given, and servers accept '/' raw but not always %2F). */
static int url_encode(const char *s, char *out, size_t cap)
{
	size_t k = 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		            c == '_' || c == '.' || c == '~' || c == '/';
		if (k + 4 >= cap)
			return -ENAMETOOLONG;
		if (keep)
			out[k++] = (char)c;
		else
			k += (size_t)snprintf(out + k, cap - k, "%%%02X", c);
	}
	out[k] = 0;
	return 0;
}

int ca_s3_gc(const char *url, const struct ca_http_opts *http, const struct ca_store_gc_opts *o,
             struct ca_store_gc_stats *ret)
{
	struct ca_endpoint e;
	struct ca_store_gc_stats st = { 0 };
	struct gc g = { .o = o, .st = &st, .c = &e.s3 };
	char token[CA_S3_TOKEN_MAX], prev[CA_S3_TOKEN_MAX] = "", etoken[3 * CA_S3_TOKEN_MAX], eprefix[3 * 1024];
	struct ca_buf page = CA_BUF_INIT;
	bool more = true;
	unsigned pages = 0;
	int r = s3_endpoint(&e, url, NULL, http);
	if (r < 0)
		return r;
	batch_init(&g.b);
	token[0] = 0;
	bool said = false;
	r = ca_http_new(&e.http, &g.http);
	if (r == 0)
		said = (r = check_bucket(g.http, &e.s3, url)) < 0;
	if (r == 0)
		r = url_encode(e.s3.u.prefix, eprefix, sizeof(eprefix));
	while (r == 0 && more) {
		char *lu = NULL;
		r = url_encode(token, etoken, sizeof(etoken));
		if (r < 0)
			break;
		/* parameters in the order SigV4 canonicalizes them */
		if (asprintf(&lu, "%s/?%s%s%slist-type=2&prefix=%s", e.s3.u.bucket_url, token[0] ? "continuation-token=" : "",
		             etoken, token[0] ? "&" : "", eprefix) < 0) {
			r = -ENOMEM;
			break;
		}
		page.size = 0;
		r = ca_http_get(g.http, lu, LIST_PAGE_MAX, &page);
		free(lu);
		if (r < 0)
			break;
		r = ca_s3_parse_list((const char *)page.data, page.size, gc_key, &g, &more, token);
		if (r == -EBADMSG) {
			ca_log_error("%s: the listing is not a ListObjectsV2 answer", url);
			said = true;
		} else if (r == 0 && more && (!token[0] || !strcmp(token, prev) || ++pages >= LIST_PAGES_MAX)) {
			r = -ELOOP; /* a server that would keep us listing forever */
		}
		if (r == -ELOOP) {
			ca_log_error("%s: the listing does not end (keys out of order, a repeated or missing "
			             "continuation token, or over %u pages): nothing more removed", url, LIST_PAGES_MAX);
			said = true;
		}
		strcpy(prev, token);
	}
	int k = batch_wait(&g.b);
	if (r == 0)
		r = k;
	if (r < 0 && !said)
		ca_log_error_errno(r, "%s: listing", url);
	if (r == 0 && ret)
		*ret = st;
	ca_http_free(g.http);
	ca_buf_release(&page);
	batch_destroy(&g.b);
	ca_endpoint_clear(&e);
	return r;
}

/* ---- the store writer backend ---- */

static int s3w_has(void *be, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	(void)be;
	(void)id;
	return 0; /* put asks (HEAD), in parallel */
}

static int s3w_put(void *be, struct ca_codec *codec, const uint8_t id[CA_CHUNK_ID_SIZE], const void *p, size_t n)
{
	return ca_s3_writer_put(be, codec, id, p, n);
}

static int s3w_finish(void *be, uint64_t *ret_skipped, uint64_t *ret_skipped_bytes)
{
	return ca_s3_writer_finish(be, ret_skipped, ret_skipped_bytes);
}

static void s3w_free(void *be)
{
	ca_s3_writer_free(be);
}

static const struct ca_store_writer_ops s3_writer_ops = {
	.kind = "s3",
	.has = s3w_has,
	.put = s3w_put,
	.finish = s3w_finish,
	.free = s3w_free,
};

int ca_store_writer_open(const char *location, const struct ca_http_opts *http, struct ca_store_writer **ret)
{
	struct ca_location at;
	ca_location_parse(location, &at);
	if (at.s3) {
		struct ca_s3_writer *w;
		int r = ca_s3_writer_new(location, NULL, http, &w);
		if (r < 0)
			return r;
		return ca_store_writer_new(&s3_writer_ops, w, location, ret);
	}
	if (at.oci)
		return ca_oci_writer_open(location, http, ret);
	if (!at.path)
		return -EPROTONOSUPPORT;
	return ca_store_writer_open_local(at.path, ret);
}
