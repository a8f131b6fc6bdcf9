/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* remote_file.c - a file read by HTTP range requests through a block
 * cache (see remote_file.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/location.h"
#include "base/log.h"
#include "net/remote_file.h"
#include "net/remote_stream.h"

#define BLOCK CA_REMOTE_FILE_BLOCK
/* downloads running at once for readahead (a reader's own never waits) */
#define MAX_LOADING 32

/* One block: in the table (hash) from its download's start until it is
 * evicted or its download fails; in the LRU list once its bytes are in.
 * data is written once, by the download's callback, and then immutable, so
 * a reader holding a reference copies from it without the lock. */
struct block {
	uint64_t no;
	size_t len;       /* what the block must hold: BLOCK, less for the last */
	struct ca_buf data;
	int err;          /* the download's failure */
	bool loading, in_table;
	unsigned refs;    /* the table, the download, each reader */
	struct ca_remote_file *f;
	struct block *hnext;
	struct block *prev, *next; /* LRU, most recent first */
};

struct ca_remote_file {
	char *url;
	/* a server that ignores Range, read by a sequential caller: the one
	 * GET instead of everything below (remote_stream.h) */
	struct ca_remote_stream *stream;
	struct ca_http *http;
	uint64_t size;
	char validator[CA_HTTP_VALIDATOR_MAX]; /* the first answer's ("" = none: only the size is compared) */
	size_t budget;

	pthread_mutex_t lock; /* guards everything below, and the blocks' fields but data */
	pthread_cond_t done;  /* a download finished */
	struct block **buckets;
	size_t n_buckets;     /* a power of two */
	struct block lru;     /* sentinel */
	size_t used;          /* len of every block in the table */
	unsigned n_loading;
	bool changed;         /* the server gave another size or version: every read fails */
};

static size_t block_len(const struct ca_remote_file *f, uint64_t no)
{
	uint64_t start = no * BLOCK;
	return f->size - start < BLOCK ? (size_t)(f->size - start) : BLOCK;
}

static size_t bucket_of(const struct ca_remote_file *f, uint64_t no)
{
	return (size_t)((no * 0x9E3779B97F4A7C15ull) >> 32) & (f->n_buckets - 1);
}

static struct block *lookup(struct ca_remote_file *f, uint64_t no)
{
	struct block *b = f->buckets[bucket_of(f, no)];
	while (b && b->no != no)
		b = b->hnext;
	return b;
}

static void lru_unlink(struct block *b)
{
	if (!b->prev)
		return;
	b->prev->next = b->next;
	b->next->prev = b->prev;
	b->prev = b->next = NULL;
}

static void lru_push(struct ca_remote_file *f, struct block *b)
{
	lru_unlink(b);
	b->next = f->lru.next;
	b->prev = &f->lru;
	f->lru.next->prev = b;
	f->lru.next = b;
}

/* With the lock held. */
static void unref(struct block *b)
{
	if (--b->refs > 0)
		return;
	ca_buf_release(&b->data);
	free(b);
}

/* Out of the table (and the LRU); drops the table's reference. */
static void table_remove(struct ca_remote_file *f, struct block *b)
{
	struct block **pp = &f->buckets[bucket_of(f, b->no)];
	if (!b->in_table)
		return;
	while (*pp != b)
		pp = &(*pp)->hnext;
	*pp = b->hnext;
	b->hnext = NULL;
	b->in_table = false;
	lru_unlink(b);
	f->used -= b->len;
	unref(b);
}

/* Least recently used blocks out until the budget holds (blocks being
 * downloaded are not in the LRU: they stay). A reader still copying from
 * an evicted block keeps it alive by its reference. */
static void evict(struct ca_remote_file *f)
{
	while (f->used > f->budget && f->lru.prev != &f->lru)
		table_remove(f, f->lru.prev);
}

static void block_done(void *userdata, int r, struct ca_buf *body, uint64_t total, const char *validator)
{
	struct block *b = userdata;
	struct ca_remote_file *f = b->f;
	(void)validator; /* http compared it with ours (If-Range) */
	pthread_mutex_lock(&f->lock);
	if (r == -ESTALE && !f->changed) {
		/* same size perhaps, but another version: its bytes must not be
		 * mixed with the ones read before */
		f->changed = true;
		ca_log_error("%s: the file changed on the server while being read (its %s is not the same)", f->url,
		             f->validator[0] == '"' ? "ETag" : "Last-Modified");
	} else if (r == 0 && total != f->size && !f->changed) {
		/* truncated, grown or replaced: what we read before may not fit
		 * with what we would read now. Said once, here, so that a mount's
		 * log explains its EIOs (the reads themselves say no more) */
		f->changed = true;
		if (total == UINT64_MAX)
			ca_log_error("%s: the file changed on the server (its size is no longer given)", f->url);
		else
			ca_log_error("%s: the file changed on the server (%" PRIu64 " bytes, was %" PRIu64 ")", f->url,
			             total, f->size);
	}
	if (f->changed)
		r = -EIO;
	else if (r == 0 && body->size != b->len)
		r = -EIO; /* cannot happen after http's checks, but cheap */
	else if (r == -ENOENT)
		r = -EIO; /* the file was there at open: a missing range is no missing name */
	b->loading = false;
	f->n_loading--;
	if (r == 0) {
		b->data = *body;
		*body = (struct ca_buf)CA_BUF_INIT;
		lru_push(f, b);
		evict(f);
	} else {
		ca_log_debug("%s: bytes %" PRIu64 "+%zu: %s", f->url, b->no * BLOCK, b->len, strerror(-r));
		b->err = r;
		table_remove(f, b); /* the next read tries again */
	}
	pthread_cond_broadcast(&f->done);
	unref(b); /* the download's */
	pthread_mutex_unlock(&f->lock);
}

/* With the lock held: put block no in the table and start its download.
 * The block holds the table's and the download's references. */
static int start_block(struct ca_remote_file *f, uint64_t no, struct block **ret)
{
	struct block *b = calloc(1, sizeof(*b));
	size_t i;
	int r;
	if (!b)
		return -ENOMEM;
	b->no = no;
	b->len = block_len(f, no);
	b->loading = true;
	b->in_table = true;
	b->refs = 2;
	b->f = f;
	i = bucket_of(f, no);
	b->hnext = f->buckets[i];
	f->buckets[i] = b;
	f->used += b->len;
	f->n_loading++;
	evict(f);
	/* the callback takes f->lock on the engine thread, which never holds
	 * the engine's own lock then: submitting under f->lock is safe */
	r = ca_http_submit_range_if(f->http, f->url, no * BLOCK, b->len, f->validator, block_done, b);
	if (r < 0) {
		f->n_loading--;
		b->loading = false;
		b->err = r;
		table_remove(f, b);
		unref(b);
		return r;
	}
	if (ret)
		*ret = b;
	return 0;
}

/* With the lock held: start the blocks [first, last] that are not there,
 * while the readahead budget lasts; touch the ones that are. */
static void readahead_locked(struct ca_remote_file *f, uint64_t first, uint64_t last)
{
	if (f->size == 0)
		return;
	if (last > (f->size - 1) / BLOCK)
		last = (f->size - 1) / BLOCK; /* nothing past the end (the server would say 416) */
	for (uint64_t no = first; no <= last; no++) {
		struct block *b = lookup(f, no);
		if (b)
			continue;
		if (f->n_loading >= MAX_LOADING || (size_t)(f->n_loading + 1) * BLOCK > f->budget / 2)
			break;
		if (start_block(f, no, NULL) < 0)
			break;
	}
}

/* The server ignores Range; a sequential caller reads the file with one
 * GET (with the per-store settings remote_file's engine has). */
static int open_stream(struct ca_remote_file *f, const struct ca_endpoint *e)
{
	ca_log_debug("%s: the server ignores Range: read with one GET", f->url);
	int r = ca_remote_stream_open(f->url, &e->http, &f->stream); /* logs */
	if (r == 0)
		f->size = ca_remote_stream_size(f->stream);
	return r;
}

int ca_remote_file_open(const char *url, const struct ca_http_opts *o, size_t cache_bytes, unsigned flags,
                        struct ca_remote_file **ret)
{
	struct ca_endpoint e;
	if (ca_location_kind(url) != CA_LOCATION_HTTP)
		return ca_log_error_errno(EINVAL, "%s: not an http(s) URL", url);
	int r = ca_endpoint_init(&e, url, o, NULL);
	if (r == 0)
		r = ca_remote_file_open_at(&e, cache_bytes, flags, ret);
	ca_endpoint_clear(&e);
	return r;
}

int ca_remote_file_open_at(const struct ca_endpoint *e, size_t cache_bytes, unsigned flags,
                           struct ca_remote_file **ret)
{
	struct ca_remote_file *f = NULL;
	struct ca_buf first = CA_BUF_INIT;
	uint64_t total = 0;
	const char *url = e->fetch_url; /* an s3+ URL's object, as http(s) */
	int r;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->url = strdup(url))) {
		free(f);
		return ca_log_error_errno(ENOMEM, "%s", url);
	}
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->done, NULL);
	f->lru.next = f->lru.prev = &f->lru;
	f->budget = cache_bytes ? cache_bytes : CA_REMOTE_FILE_CACHE_DEFAULT;
	if (f->budget < CA_REMOTE_FILE_CACHE_MIN)
		f->budget = CA_REMOTE_FILE_CACHE_MIN;
	f->n_buckets = 64;
	while (f->n_buckets < 2 * (f->budget / BLOCK) && f->n_buckets < ((size_t)1 << 20))
		f->n_buckets *= 2;
	f->buckets = calloc(f->n_buckets, sizeof(*f->buckets));
	if (!f->buckets) {
		r = ca_log_error_errno(ENOMEM, "%s", url);
		goto fail;
	}
	r = ca_http_new(&e->http, &f->http); /* copies what e's options point to */
	url = f->url;
	if (r < 0) {
		ca_log_error_errno(r, "%s", url);
		goto fail;
	}
	/* the first block tells the size, and holds the root ENTRY anyway */
	r = ca_http_get_range_validator(f->http, url, 0, BLOCK, &first, &total, f->validator);
	if (r == -ENOENT) {
		ca_log_error("%s: not found on the server", url);
		goto fail;
	}
	if (r == -EOPNOTSUPP && (flags & CA_REMOTE_FILE_SEQUENTIAL) && !e->loc.s3) {
		r = open_stream(f, e);
		if (r < 0)
			goto fail;
		*ret = f;
		return 0;
	}
	if (r == -EOPNOTSUPP) {
		ca_log_error("%s: the server does not support range requests%s", url,
		             flags & CA_REMOTE_FILE_SEQUENTIAL ? "" : " (needed to read parts of a .catar)");
		goto fail;
	}
	if (r < 0) {
		ca_log_error_errno(r, "%s", url);
		goto fail;
	}
	if (total == UINT64_MAX) {
		r = ca_log_error_errno(EIO, "%s: the server does not say the file's size", url);
		goto fail;
	}
	f->size = total;
	if (total > 0) {
		struct block *b = calloc(1, sizeof(*b));
		if (!b) {
			r = ca_log_error_errno(ENOMEM, "%s", url);
			goto fail;
		}
		b->len = block_len(f, 0);
		b->data = first;
		first = (struct ca_buf)CA_BUF_INIT;
		b->in_table = true;
		b->refs = 1;
		b->f = f;
		f->buckets[bucket_of(f, 0)] = b;
		f->used = b->len;
		lru_push(f, b);
	}
	*ret = f;
	return 0;
fail:
	ca_buf_release(&first);
	ca_remote_file_free(f);
	return r;
}

void ca_remote_file_free(struct ca_remote_file *f)
{
	if (!f)
		return;
	/* completes what is in flight with -ECANCELED: the callbacks drop
	 * their blocks from the table */
	ca_remote_stream_free(f->stream);
	ca_http_free(f->http);
	for (size_t i = 0; f->buckets && i < f->n_buckets; i++)
		while (f->buckets[i])
			table_remove(f, f->buckets[i]);
	free(f->buckets);
	pthread_cond_destroy(&f->done);
	pthread_mutex_destroy(&f->lock);
	free(f->url);
	free(f);
}

uint64_t ca_remote_file_size(const struct ca_remote_file *f)
{
	return f->size;
}

ssize_t ca_remote_file_pread(struct ca_remote_file *f, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	int r = 0;
	if (f->stream)
		return ca_remote_stream_pread(f->stream, buf, len, off);
	if (off >= f->size)
		return 0;
	if (len > f->size - off)
		len = (size_t)(f->size - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	pthread_mutex_lock(&f->lock);
	/* the read's blocks download at once, not one after another (what
	 * comes after is the caller's to hint: only it knows where a
	 * subtree ends or which payloads a listing skips) */
	if (!f->changed)
		readahead_locked(f, off / BLOCK, (off + len - 1) / BLOCK);
	while (done < len) {
		uint64_t pos = off + done, no = pos / BLOCK;
		size_t in = (size_t)(pos - no * BLOCK), n;
		struct block *b;
		if (f->changed) {
			r = -EIO;
			break;
		}
		b = lookup(f, no);
		if (!b) {
			r = start_block(f, no, &b);
			if (r < 0)
				break;
		} else if (!b->loading) {
			lru_push(f, b);
		}
		b->refs++;
		while (b->loading)
			pthread_cond_wait(&f->done, &f->lock);
		if (b->err) {
			r = b->err;
			unref(b);
			break;
		}
		n = b->len - in < len - done ? b->len - in : len - done;
		pthread_mutex_unlock(&f->lock);
		memcpy((uint8_t *)buf + done, b->data.data + in, n);
		pthread_mutex_lock(&f->lock);
		unref(b);
		done += n;
	}
	pthread_mutex_unlock(&f->lock);
	return r < 0 ? r : (ssize_t)done;
}

void ca_remote_file_readahead(struct ca_remote_file *f, uint64_t off, uint64_t len)
{
	if (f->stream || off >= f->size || len == 0)
		return; /* the stream moves as fast as its reader */
	if (len > f->size - off)
		len = f->size - off;
	pthread_mutex_lock(&f->lock);
	if (!f->changed)
		readahead_locked(f, off / BLOCK, (off + len - 1) / BLOCK);
	pthread_mutex_unlock(&f->lock);
}

int ca_remote_file_log_read_error(struct ca_remote_file *f, int err, uint64_t off, size_t len)
{
	bool changed;
	if (f->stream)
		return err; /* the stream said why when it failed */
	pthread_mutex_lock(&f->lock);
	changed = f->changed;
	pthread_mutex_unlock(&f->lock);
	if (!changed) /* else block_done said it */
		ca_log_error_errno(err, "%s: bytes %" PRIu64 "-%" PRIu64, f->url, off, off + (len ? len - 1 : 0));
	return err;
}

void ca_remote_file_get_stats(struct ca_remote_file *f, struct ca_http_stats *ret)
{
	if (f->stream)
		ca_remote_stream_get_stats(f->stream, ret);
	else
		ca_http_get_stats(f->http, ret);
}
