/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * delta.c - static delta packs: make (choose each new chunk's encoding and
 * references), info (an update's cost) and the client (fetch the ranges
 * needed, rebuild, verify, store).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "base/atomic_file.h"
#include "base/buf.h"
#include "base/digest.h"
#include "base/fdio.h"
#include "base/location.h"
#include "base/log.h"
#include "chunk/compress.h"
#include "format/feature.h"
#include "format/format.h"
#include "image/delta.h"
#include "image/source.h"
#include "net/endpoint.h"
#include "store/chunksrc.h"

/* ---- shared ---- */

int ca_delta_index_digest(const struct ca_index *idx, uint8_t out[CA_DELTA_DIGEST_SIZE])
{
	size_t n;
	const void *p = ca_index_data(idx, &n);
	struct ca_digest *d = NULL;
	int r = ca_digest_new(CA_DIGEST_SHA256, &d);
	if (r == 0)
		r = ca_digest_once(d, p, n, out);
	ca_digest_free(d);
	return r;
}

char *ca_delta_pack_name(const char *index, const uint8_t from_digest[CA_DELTA_DIGEST_SIZE])
{
	char hex[2 * CA_DELTA_DIGEST_SIZE + 1], suffix[sizeof(CA_DELTA_SUFFIX) + sizeof(hex)];
	ca_id_to_hex(from_digest, hex);
	snprintf(suffix, sizeof(suffix), "%s%s", CA_DELTA_SUFFIX, hex);
	return ca_location_beside(index, suffix);
}

/* ---- make ---- */

struct maker {
	struct ca_index *from, *to;
	struct ca_chunksrc *from_src, *to_src;
	struct ca_idset *from_ids; /* FROM's chunk ids -> their position in FROM */
	ZSTD_CCtx *cctx;
	int level;
	struct ca_buf prefix, best, trial;
	struct ca_buf table, data;
	struct ca_delta_make_stats *st;
};

/* FROM's chunks around [start, end) of its stream, at most REFS_MAX and
 * CA_DELTA_PREFIX_MAX bytes: the references for a TO chunk thought to sit there */
static size_t pick_refs(struct maker *m, int64_t start, int64_t end, size_t *ret_first)
{
	uint64_t size = ca_index_blob_size(m->from);
	if (end <= 0 || start >= (int64_t)size)
		return 0;
	if (start < 0)
		start = 0;
	ssize_t j = ca_index_find(m->from, (uint64_t)start);
	if (j < 0)
		return 0;
	/* four chunks before the span and three spans' length after it: the
	 * edit that made the chunk new moved its neighbourhood (measured on a
	 * minbase point release, tar image / tree: 16% / 12% smaller than
	 * the span alone) */
	for (int k = 0; k < 4 && j > 0; k++)
		j--;
	end += 3 * (end - start);
	size_t n = 0;
	uint64_t total = 0;
	for (size_t k = (size_t)j; k < ca_index_n_chunks(m->from) && n < CA_DELTA_REFS_MAX; k++) {
		uint64_t a, b;
		const uint8_t *id;
		ca_index_chunk(m->from, k, &a, &b, &id);
		if ((int64_t)a >= end || total + (b - a) > CA_DELTA_PREFIX_MAX)
			break;
		total += b - a;
		n++;
	}
	*ret_first = (size_t)j;
	return n;
}

static int zstd_err(size_t z, const char *what)
{
	ca_log_error("%s: %s", what, ZSTD_getErrorName(z));
	return -EIO;
}

/* Compress data with FROM chunks [first, first+n) as prefix (n == 0:
 * none) into out. */
static int encode(struct maker *m, const struct ca_chunk *c, size_t first, size_t n, struct ca_buf *out)
{
	int r;
	m->prefix.size = 0;
	for (size_t k = first; k < first + n; k++) {
		uint64_t a, b;
		const uint8_t *id;
		const struct ca_chunk *rc = NULL;
		ca_index_chunk(m->from, k, &a, &b, &id);
		r = ca_chunksrc_get(m->from_src, id, b - a, &rc);
		if (r < 0)
			return ca_log_error_errno(r, "FROM chunk");
		r = ca_buf_append(&m->prefix, rc->data, rc->size, SIZE_MAX);
		ca_chunksrc_put(m->from_src, rc);
		if (r < 0)
			return r;
	}
	size_t bound = ZSTD_compressBound(c->size);
	r = ca_buf_reserve(out, bound, SIZE_MAX);
	if (r < 0)
		return r;
	ZSTD_CCtx_reset(m->cctx, ZSTD_reset_session_and_parameters);
	size_t z = ZSTD_CCtx_setParameter(m->cctx, ZSTD_c_compressionLevel, m->level);
	if (!ZSTD_isError(z))
		z = ZSTD_CCtx_setParameter(m->cctx, ZSTD_c_checksumFlag, 0);
	/* the window must reach back over the whole prefix */
	if (!ZSTD_isError(z) && n)
		z = ZSTD_CCtx_setParameter(m->cctx, ZSTD_c_windowLog, CA_DELTA_WINDOW_LOG);
	if (!ZSTD_isError(z) && n)
		z = ZSTD_CCtx_refPrefix(m->cctx, m->prefix.data, m->prefix.size);
	if (!ZSTD_isError(z))
		z = ZSTD_compress2(m->cctx, out->data, bound, c->data, c->size);
	if (ZSTD_isError(z))
		return zstd_err(z, "delta pack");
	out->size = z;
	return 0;
}

static void swap_best(struct maker *m)
{
	struct ca_buf t = m->best;
	m->best = m->trial;
	m->trial = t;
}

static int add_entry(struct maker *m, const uint8_t *id, uint64_t size, int64_t shift, int64_t start, int64_t end)
{
	const struct ca_chunk *c = NULL;
	struct ca_delta_entry e = { .size = size, .encoding = CA_DELTA_PLAIN };
	size_t first = 0, n = 0, f2 = 0, n2 = 0;
	int r = ca_chunksrc_get(m->to_src, id, size, &c);
	if (r < 0)
		return ca_log_error_errno(r, "TO chunk");
	memcpy(e.id, id, CA_CHUNK_ID_SIZE);
	r = encode(m, c, 0, 0, &m->best);
	int won = 0; /* 0 plain, 1 shifted, 2 same place */
	/* two guesses at where the chunk was: beside the last chunk both
	 * images share (an archive whose files grew or shrank before it), and
	 * at the same offset (a disk image changed in place) */
	if (r == 0 && (n = pick_refs(m, start + shift, end + shift, &first)) > 0) {
		r = encode(m, c, first, n, &m->trial);
		if (r == 0 && m->trial.size < m->best.size) {
			swap_best(m);
			won = 1;
		}
	}
	if (r == 0 && shift != 0 && (n2 = pick_refs(m, start, end, &f2)) > 0) {
		r = encode(m, c, f2, n2, &m->trial);
		if (r == 0 && m->trial.size < m->best.size) {
			swap_best(m);
			won = 2;
		}
	}
	ca_chunksrc_put(m->to_src, c);
	if (r < 0)
		return r;
	if (won) {
		size_t f = won == 1 ? first : f2, k = won == 1 ? n : n2;
		e.encoding = CA_DELTA_PREFIX;
		e.n_refs = (uint8_t)k;
		for (size_t i = 0; i < k; i++) {
			uint64_t a, b;
			const uint8_t *rid;
			ca_index_chunk(m->from, f + i, &a, &b, &rid);
			memcpy(e.refs[i].id, rid, CA_CHUNK_ID_SIZE);
			e.refs[i].size = b - a;
		}
	}
	if (won == 0)
		m->st->plain++;
	else if (won == 1)
		m->st->prefix_shifted++;
	else
		m->st->prefix_same++;
	e.offset = m->data.size;
	e.length = m->best.size;
	uint8_t buf[CA_DELTA_ENTRY_SIZE + CA_DELTA_REFS_MAX * CA_DELTA_REF_SIZE];
	size_t len = ca_delta_entry_write(&e, buf);
	r = ca_buf_append(&m->table, buf, len, CA_DELTA_TABLE_MAX);
	if (r == 0)
		r = ca_buf_append(&m->data, m->best.data, m->best.size, SIZE_MAX);
	return r;
}

static int open_pair(const char *from, const char *to, const struct ca_image_opts *from_io,
                     const struct ca_image_opts *to_io, struct ca_image **ret_from, struct ca_image **ret_to)
{
	struct ca_image_opts fo = { 0 }, tio = { 0 };
	if (from_io)
		fo = *from_io;
	if (to_io)
		tio = *to_io;
	fo.lru_bytes = tio.lru_bytes = 16u << 20;
	int r = ca_image_open(from, &fo, ret_from);
	if (r == 0)
		r = ca_image_open(to, &tio, ret_to);
	if (r == 0 && (!ca_image_index(*ret_from) || !ca_image_index(*ret_to)))
		r = ca_log_error_errno(EINVAL, "%s: a delta is made between two indexes (.caibx or .caidx)", to);
	return r;
}

int ca_delta_make(const char *from, const char *to, const char *pack, const struct ca_delta_make_opts *o,
                  struct ca_delta_make_stats *ret)
{
	struct ca_image *fi = NULL, *ti = NULL;
	struct ca_idset *seen = NULL;
	struct maker m = { .st = ret, .level = o && o->level ? o->level : 19 };
	struct ca_atomic_file af = { .fd = -1 };
	int r;
	*ret = (struct ca_delta_make_stats){ 0 };
	r = open_pair(from, to, o ? o->from_io : NULL, o ? o->to_io : NULL, &fi, &ti);
	if (r < 0)
		goto out;
	m.from = ca_image_index(fi);
	m.to = ca_image_index(ti);
	m.from_src = ca_image_chunksrc(fi);
	m.to_src = ca_image_chunksrc(ti);
	m.cctx = ZSTD_createCCtx();
	if (!m.cctx || ca_idset_new(ca_index_n_chunks(m.from), &m.from_ids) < 0 ||
	    ca_idset_new(ca_index_n_chunks(m.to), &seen) < 0) {
		r = ca_log_error_errno(ENOMEM, "%s", pack);
		goto out;
	}
	for (size_t i = 0; i < ca_index_n_chunks(m.from); i++) {
		uint64_t a, b;
		const uint8_t *id;
		ca_index_chunk(m.from, i, &a, &b, &id);
		if (ca_idset_add(m.from_ids, id, i) < 0) {
			r = ca_log_error_errno(ENOMEM, "%s", pack);
			goto out;
		}
	}
	int64_t shift = 0;
	for (size_t i = 0; i < ca_index_n_chunks(m.to); i++) {
		uint64_t a, b, j;
		const uint8_t *id;
		ca_index_chunk(m.to, i, &a, &b, &id);
		if (ca_idset_get(m.from_ids, id, &j) > 0) {
			uint64_t fa, fb;
			const uint8_t *fid;
			ca_index_chunk(m.from, (size_t)j, &fa, &fb, &fid);
			shift = (int64_t)fa - (int64_t)a;
			continue;
		}
		r = ca_idset_add(seen, id, 1);
		if (r < 0) {
			ca_log_error_errno(r, "%s", pack);
			goto out;
		}
		if (r == 0)
			continue; /* a chunk TO holds twice is in the pack once */
		ret->new_chunks++;
		ret->new_bytes += b - a;
		r = add_entry(&m, id, b - a, shift, (int64_t)a, (int64_t)b);
		if (r < 0) {
			ca_log_error_errno(r, "%s", pack);
			goto out;
		}
	}
	/* TO's distinct chunks: the new ones are in seen already */
	r = ca_idset_add_index(seen, m.to);
	if (r < 0) {
		ca_log_error_errno(r, "%s", pack);
		goto out;
	}
	ret->to_chunks = ca_idset_size(seen);
	struct ca_delta_header h = { .feature_flags = ca_index_feature_flags(m.to),
		                     .from_size = ca_index_blob_size(m.from), .to_size = ca_index_blob_size(m.to),
		                     .n_entries = ret->new_chunks, .table_size = m.table.size + CA_DELTA_DIGEST_SIZE,
		                     .data_size = m.data.size };
	uint8_t hdr[CA_DELTA_HEADER_SIZE], td[CA_DELTA_DIGEST_SIZE];
	r = ca_delta_index_digest(m.from, h.from_digest);
	if (r == 0)
		r = ca_delta_index_digest(m.to, h.to_digest);
	ca_delta_header_write(&h, hdr);
	if (r == 0)
		r = ca_delta_table_digest(hdr, m.table.data, m.table.size, td);
	if (r == 0)
		r = ca_atomic_file_open(&af, pack, 0644);
	if (r == 0)
		r = ca_write_all(af.fd, hdr, sizeof(hdr));
	if (r == 0 && m.table.size)
		r = ca_write_all(af.fd, m.table.data, m.table.size);
	if (r == 0)
		r = ca_write_all(af.fd, td, sizeof(td));
	if (r == 0 && m.data.size)
		r = ca_write_all(af.fd, m.data.data, m.data.size);
	if (r == 0)
		r = ca_atomic_file_commit(&af);
	if (r < 0) {
		ca_log_error_errno(r, "%s", pack);
		goto out;
	}
	ret->pack_bytes = CA_DELTA_HEADER_SIZE + h.table_size + h.data_size;
out:
	ca_atomic_file_abort(&af);
	ZSTD_freeCCtx(m.cctx);
	ca_buf_release(&m.prefix);
	ca_buf_release(&m.best);
	ca_buf_release(&m.trial);
	ca_buf_release(&m.table);
	ca_buf_release(&m.data);
	ca_idset_free(m.from_ids);
	ca_idset_free(seen);
	ca_image_free(fi);
	ca_image_free(ti);
	return r;
}

/* ---- the client ---- */

#define WINDOWS 4

struct ca_delta_client {
	char *location;
	bool remote;
	int fd;
	struct ca_endpoint ep;
	struct ca_http *http;
	struct ca_delta_header h;
	struct ca_delta_entry *entries;
	enum ca_digest_type digest;
	uint64_t requests, wire_bytes;
	bool from_known; /* the header's FROM is checked: missing references are a partial cache, not a lie */
	const struct ca_index *to; /* borrowed */
	struct ca_buf head;        /* the pack's first bytes, read with the header: ranges inside are not read again */
	char *shown; /* the location as messages show it */
	/* a chunk at a time (ca_delta_client_build): entries by id, and the
	 * lock over the counters and broken, which ends the pack's use once
	 * it proved bad (one warning) */
	struct ca_idset *by_id;
	pthread_mutex_t lock;
	bool broken;
	bool stopped; /* ca_delta_client_stop: no more requests */
	uint64_t built_chunks, built_bytes;
	/* the data read a chunk at a time, in windows of CA_DELTA_WINDOW
	 * bytes at multiples of it (no two overlap): a reader in TO's order
	 * finds the next entries in the last ones. win_lock is held across
	 * their reads, so that readers of neighbouring entries (read-ahead
	 * threads) share one request instead of each reading the window */
	pthread_mutex_t win_lock;
	struct window {
		uint64_t k; /* data [k * CA_DELTA_WINDOW, ...) */
		struct ca_buf b;
		uint64_t used; /* LRU clock */
	} win[WINDOWS];
	uint64_t win_clock;
	bool quiet_missing;
	int open_errno; /* a local pack that could not be opened: said by the load */
	bool not_regular; /* a local pack that is not a regular file: said by the load */
	uint8_t from_digest[CA_DELTA_DIGEST_SIZE];
	uint8_t to_digest[CA_DELTA_DIGEST_SIZE];
	bool to_digest_set;
};

static bool stopped(struct ca_delta_client *c)
{
	pthread_mutex_lock(&c->lock);
	bool st = c->stopped;
	pthread_mutex_unlock(&c->lock);
	return st;
}

void ca_delta_client_free(struct ca_delta_client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	ca_http_free(c->http);
	ca_endpoint_clear(&c->ep);
	free(c->entries);
	ca_idset_free(c->by_id);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->win_lock);
	for (size_t i = 0; i < WINDOWS; i++)
		ca_buf_release(&c->win[i].b);
	ca_buf_release(&c->head);
	free(c->location);
	free(c->shown);
	free(c);
}

/* bytes [off, off+len) of the pack into out (emptied first); *ret_total:
 * the pack's size */
static int read_range(struct ca_delta_client *c, uint64_t off, size_t len, struct ca_buf *out, uint64_t *ret_total)
{
	int r;
	out->size = 0;
	/* what the first read brought is not read again */
	if (off < c->head.size) {
		size_t have = c->head.size - off < len ? (size_t)(c->head.size - off) : len;
		r = ca_buf_append(out, c->head.data + off, have, SIZE_MAX);
		if (r < 0 || have == len)
			return r;
		struct ca_buf more = CA_BUF_INIT;
		r = read_range(c, off + have, len - have, &more, ret_total);
		if (r == 0)
			r = ca_buf_append(out, more.data, more.size, SIZE_MAX);
		ca_buf_release(&more);
		return r;
	}
	pthread_mutex_lock(&c->lock);
	bool stopped = c->stopped;
	c->requests += !stopped;
	pthread_mutex_unlock(&c->lock);
	if (stopped)
		return -ECANCELED;
	if (c->remote) {
		uint64_t total = UINT64_MAX;
		r = ca_http_get_range(c->http, c->ep.fetch_url, off, len, out, &total);
		if (r == 0 && ret_total)
			*ret_total = total;
	} else {
		struct stat st;
		if (fstat(c->fd, &st) < 0)
			return -errno;
		if (ret_total)
			*ret_total = (uint64_t)st.st_size;
		if (off >= (uint64_t)st.st_size)
			return 0;
		if (len > (uint64_t)st.st_size - off)
			len = (size_t)((uint64_t)st.st_size - off);
		r = ca_buf_reserve(out, len, SIZE_MAX);
		if (r < 0)
			return r;
		ssize_t k = ca_pread_full(c->fd, out->data, len, off);
		if (k < 0)
			return (int)k;
		out->size = (size_t)k;
		r = 0;
	}
	if (r == 0) {
		pthread_mutex_lock(&c->lock);
		c->wire_bytes += out->size;
		pthread_mutex_unlock(&c->lock);
	}
	return r;
}

static int client_warn(struct ca_delta_client *c, const char *why)
{
	ca_log_warning("%s: %s; fetching from the chunk store instead", c->shown, why);
	return -EBADMSG;
}

int ca_delta_client_new(const char *location, const struct ca_index *to, const struct ca_delta_client_opts *o,
                        struct ca_delta_client **ret)
{
	static const struct ca_delta_client_opts none = { 0 };
	struct ca_delta_client *c = calloc(1, sizeof(*c));
	struct ca_http_opts http;
	int r;
	*ret = NULL;
	if (!o)
		o = &none;
	if (!c)
		return ca_log_error_errno(ENOMEM, "delta pack");
	c->fd = -1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->win_lock, NULL);
	c->location = strdup(location);
	c->shown = ca_location_redact(location);
	if (!c->location || !c->shown) {
		r = ca_log_error_errno(ENOMEM, "delta pack");
		goto fail;
	}
	c->to = to;
	c->quiet_missing = o->quiet_missing;
	c->from_known = o->from_digest != NULL;
	if (o->from_digest)
		memcpy(c->from_digest, o->from_digest, CA_DELTA_DIGEST_SIZE);
	c->digest = ca_digest_type_from_flags(ca_index_feature_flags(to));
	c->remote = ca_location_kind(location) == CA_LOCATION_HTTP;
	if (ca_location_kind(location) == CA_LOCATION_OTHER) {
		ca_log_warning("%s: a delta pack is a path or an http(s) URL; fetching from the chunk store instead",
		               c->shown);
		r = 0;
		goto fail;
	}
	if (c->remote) {
		if (!o->http)
			ca_source_http_opts(&http);
		r = ca_endpoint_init(&c->ep, location, o->http ? o->http : &http, o->conf);
		if (r == 0)
			r = ca_http_new(&c->ep.http, &c->http);
		if (r < 0) {
			ca_log_warning_errno(r, "%s", c->shown);
			r = 0;
			goto fail;
		}
	} else {
		/* O_NONBLOCK: a FIFO planted under the pack's name (beside an
		 * index in a shared directory) cannot hang the open; only a
		 * regular file is read (both said by the load) */
		struct stat st;
		c->fd = open(ca_location_path(location), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (c->fd < 0 || fstat(c->fd, &st) < 0)
			c->open_errno = -errno;
		else if (!S_ISREG(st.st_mode))
			c->not_regular = true;
	}
	*ret = c;
	return 0;
fail:
	ca_delta_client_free(c);
	return r;
}

int ca_delta_client_to_digest(struct ca_delta_client *c, uint8_t out[CA_DELTA_DIGEST_SIZE])
{
	if (!c->to_digest_set) {
		int r = ca_delta_index_digest(c->to, c->to_digest);
		if (r < 0)
			return r;
		c->to_digest_set = true;
	}
	memcpy(out, c->to_digest, CA_DELTA_DIGEST_SIZE);
	return 0;
}

int ca_delta_client_load(struct ca_delta_client *c)
{
	struct ca_buf first = CA_BUF_INIT, rest = CA_BUF_INIT;
	uint8_t to_digest[CA_DELTA_DIGEST_SIZE];
	const struct ca_index *to = c->to;
	uint64_t total = 0;
	int r = c->open_errno;
	if (r < 0)
		goto unusable;
	if (c->not_regular) {
		r = client_warn(c, "not a regular file");
		goto out;
	}
	/* the header and (nearly always) the whole table in one request */
	r = read_range(c, 0, CA_DELTA_FIRST_READ, &first, &total);
	if (r < 0)
		goto unusable;
	r = ca_delta_header_parse(first.data, first.size, &c->h);
	if (r < 0) {
		r = client_warn(c, "not a delta pack, or a corrupt one");
		goto out;
	}
	if (total != UINT64_MAX && total != CA_DELTA_HEADER_SIZE + c->h.table_size + c->h.data_size) {
		r = client_warn(c, "truncated or of the wrong size");
		goto out;
	}
	r = ca_delta_client_to_digest(c, to_digest);
	if (r < 0)
		goto out;
	if (memcmp(to_digest, c->h.to_digest, sizeof(to_digest)) || c->h.feature_flags != ca_index_feature_flags(to)) {
		r = client_warn(c, "made for another TO index");
		goto out;
	}
	if (c->from_known && memcmp(c->from_digest, c->h.from_digest, CA_DELTA_DIGEST_SIZE)) {
		r = client_warn(c, "made for another FROM index");
		goto out;
	}
	/* a table with more entries than TO has chunks is a lie: its memory is
	 * bounded by TO's size as well as CA_DELTA_TABLE_MAX */
	if (c->h.n_entries > ca_index_n_chunks(to)) {
		r = client_warn(c, "more entries than TO has chunks");
		goto out;
	}
	uint64_t need = CA_DELTA_HEADER_SIZE + c->h.table_size;
	if (first.size < need) {
		if (first.size != CA_DELTA_FIRST_READ) {
			r = client_warn(c, "truncated");
			goto out;
		}
		r = read_range(c, first.size, (size_t)(need - first.size), &rest, NULL);
		if (r == 0)
			r = ca_buf_append(&first, rest.data, rest.size, SIZE_MAX);
		if (r < 0)
			goto unusable;
		if (first.size < need) {
			r = client_warn(c, "truncated");
			goto out;
		}
	}
	r = ca_delta_table_parse(&c->h, first.data, first.data + CA_DELTA_HEADER_SIZE, (size_t)c->h.table_size,
	                         ca_index_chunk_size_max(to), &c->entries);
	if (r == -ENOMEM) {
		ca_log_error_errno(r, "%s", c->shown);
		goto out;
	}
	if (r < 0) {
		r = client_warn(c, "corrupt table");
		goto out;
	}
	r = ca_idset_new(c->h.n_entries, &c->by_id);
	for (uint64_t i = 0; r >= 0 && i < c->h.n_entries; i++)
		r = ca_idset_add(c->by_id, c->entries[i].id, i);
	if (r < 0) {
		ca_log_error_errno(r, "%s", c->shown);
		goto out;
	}
	c->head = first; /* ranges inside it cost no request */
	first = (struct ca_buf)CA_BUF_INIT;
	r = 0;
	goto out;
unusable:
	if (r == -ENOMEM)
		ca_log_error_errno(r, "%s", c->shown);
	else if (!(r == -ENOENT && c->quiet_missing) && !stopped(c))
		ca_log_warning_errno(r, "%s: the delta pack cannot be read; fetching from the chunk store instead",
		                     c->shown);
out:
	ca_buf_release(&first);
	ca_buf_release(&rest);
	return r;
}

int ca_delta_client_open(const char *location, const struct ca_index *to, const struct ca_delta_client_opts *o,
                         struct ca_delta_client **ret)
{
	struct ca_delta_client *c = NULL;
	int r = ca_delta_client_new(location, to, o, &c);
	if (r == 0 && c)
		r = ca_delta_client_load(c);
	if (r < 0 || !c) {
		ca_delta_client_free(c);
		*ret = NULL;
		return r == -ENOMEM ? r : 0;
	}
	*ret = c;
	return 0;
}

int ca_delta_client_refs(const struct ca_delta_client *c, struct ca_idset *s)
{
	for (uint64_t i = 0; i < c->h.n_entries; i++)
		for (unsigned k = 0; k < c->entries[i].n_refs; k++) {
			int r = ca_idset_add(s, c->entries[i].refs[k].id, c->entries[i].refs[k].size);
			if (r < 0)
				return r;
		}
	return 0;
}

struct range {
	uint64_t start, end;
};

static void count_built(struct ca_delta_client *c, uint64_t size);

void ca_delta_client_stop(struct ca_delta_client *c)
{
	pthread_mutex_lock(&c->lock);
	c->stopped = true;
	pthread_mutex_unlock(&c->lock);
	if (c->http)
		ca_http_cancel(c->http); /* the range request under way ends now */
}

void ca_delta_client_get_counts(struct ca_delta_client *c, struct ca_delta_client_counts *ret)
{
	pthread_mutex_lock(&c->lock);
	*ret = (struct ca_delta_client_counts){ .chunks = c->built_chunks, .bytes = c->built_bytes,
		                                .requests = c->requests, .wire_bytes = c->wire_bytes,
		                                .broken = c->broken };
	pthread_mutex_unlock(&c->lock);
}

/* Rebuild entry e from its bytes p[0..n) into out (the chunk, verified),
 * its references read from store. */
static int rebuild(const struct ca_delta_entry *e, struct ca_store *store, const uint8_t *p, size_t n,
                   struct ca_codec *codec, ZSTD_DCtx *dctx, struct ca_buf *prefix, struct ca_buf *raw,
                   struct ca_buf *out)
{
	int r;
	if (e->encoding == CA_DELTA_PLAIN)
		return ca_codec_decode_chunk(codec, p, n, e->id, e->size, out);
	prefix->size = 0;
	for (unsigned k = 0; k < e->n_refs; k++) {
		bool compressed = true;
		raw->size = 0;
		r = ca_store_get_raw(store, e->refs[k].id, raw, &compressed);
		if (r < 0)
			return r;
		if (compressed) {
			r = ca_codec_decode_chunk(codec, raw->data, raw->size, e->refs[k].id, e->refs[k].size, out);
			if (r == 0)
				r = ca_buf_append(prefix, out->data, out->size, SIZE_MAX);
		} else {
			/* a bare chunk: what the store says it is, checked as a decoded one */
			uint8_t rid[CA_CHUNK_ID_SIZE];
			r = ca_digest_once(ca_codec_digest(codec), raw->data, raw->size, rid);
			if (r == 0 && (raw->size != e->refs[k].size || memcmp(rid, e->refs[k].id, CA_CHUNK_ID_SIZE)))
				r = -EBADMSG;
			if (r == 0)
				r = ca_buf_append(prefix, raw->data, raw->size, SIZE_MAX);
		}
		if (r < 0)
			return r;
	}
	r = ca_buf_reserve(out, (size_t)e->size, SIZE_MAX);
	if (r < 0)
		return r;
	ZSTD_DCtx_reset(dctx, ZSTD_reset_session_and_parameters);
	/* a hostile frame may not ask for more window than a pack needs */
	size_t z = ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, CA_DELTA_WINDOW_LOG);
	if (!ZSTD_isError(z))
		z = ZSTD_DCtx_refPrefix(dctx, prefix->data, prefix->size);
	if (!ZSTD_isError(z))
		z = ZSTD_decompressDCtx(dctx, out->data, (size_t)e->size, p, n);
	if (ZSTD_isError(z) || z != e->size)
		return -EBADMSG;
	out->size = z;
	uint8_t id[CA_CHUNK_ID_SIZE];
	r = ca_digest_once(ca_codec_digest(codec), out->data, out->size, id);
	if (r < 0)
		return r;
	if (memcmp(id, e->id, CA_CHUNK_ID_SIZE))
		return -EBADMSG;
	return 0;
}

/* Rebuild entry e (as rebuild) and put it into store: a plain entry's
 * bytes are its chunk file as they are. */
static int rebuild_put(const struct ca_delta_entry *e, struct ca_store *store, const uint8_t *p, size_t n,
                       struct ca_codec *codec, ZSTD_DCtx *dctx, struct ca_buf *prefix, struct ca_buf *raw,
                       struct ca_buf *out)
{
	int r = rebuild(e, store, p, n, codec, dctx, prefix, raw, out);
	if (r < 0)
		return r;
	if (e->encoding == CA_DELTA_PLAIN)
		return ca_store_put_raw(store, e->id, p, n);
	r = ca_codec_compress(codec, out->data, out->size, raw);
	if (r == 0)
		r = ca_store_put_raw(store, e->id, raw->data, raw->size);
	return r;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

int ca_delta_client_run(struct ca_delta_client *c, struct ca_store *store, struct ca_delta_client_stats *ret)
{
	uint64_t *use = NULL; /* entries to use: data offset << 24 | entry number, sorted */
	struct range *ranges = NULL;
	size_t n_use = 0, n_ranges = 0;
	struct ca_codec *codec = NULL;
	ZSTD_DCtx *dctx = NULL;
	struct ca_buf data = CA_BUF_INIT, prefix = CA_BUF_INIT, raw = CA_BUF_INIT, out = CA_BUF_INIT;
	bool failed = false;
	int r;
	*ret = (struct ca_delta_client_stats){ 0 };
	pthread_mutex_lock(&c->lock);
	failed = c->broken; /* said already */
	pthread_mutex_unlock(&c->lock);
	if (failed)
		return 0;
	dctx = ZSTD_createDCtx();
	use = calloc(c->h.n_entries ? c->h.n_entries : 1, sizeof(*use));
	ranges = calloc(c->h.n_entries ? c->h.n_entries : 1, sizeof(*ranges));
	r = ca_codec_new(c->digest, &codec);
	if (!use || !ranges || !dctx || r < 0) {
		r = ca_log_error_errno(ENOMEM, "%s", c->shown);
		goto out;
	}
	/* what the store lacks and can rebuild: its references are here */
	uint64_t no_ref = 0;
	for (uint64_t i = 0; i < c->h.n_entries; i++) {
		const struct ca_delta_entry *e = &c->entries[i];
		if (i % 4096 == 0 && stopped(c)) { /* a stat per entry: seconds for a big pack */
			r = -ECANCELED;
			goto out;
		}
		if (ca_store_has(store, e->id) > 0)
			continue;
		bool refs = true;
		for (unsigned k = 0; k < e->n_refs && refs; k++)
			refs = ca_store_has(store, e->refs[k].id) > 0;
		if (!refs) {
			no_ref++;
			continue;
		}
		use[n_use++] = i;
	}
	ret->left = no_ref;
	/* by data offset, then ranges: neighbours merge, then the smallest
	 * gaps until CA_DELTA_RANGES_MAX are left */
	/* sort keys: offset << 24 | entry number, which both fit */
	if (c->h.n_entries >= ((uint64_t)1 << 24) || c->h.data_size >= ((uint64_t)1 << 40)) {
		client_warn(c, "too large for this client");
		ret->left += n_use;
		n_use = 0;
		failed = true;
	}
	for (size_t i = 0; i < n_use; i++)
		use[i] = c->entries[use[i]].offset << 24 | use[i];
	qsort(use, n_use, sizeof(*use), cmp_u64);
	for (size_t i = 0; i < n_use; i++) {
		const struct ca_delta_entry *e = &c->entries[use[i] & 0xffffff];
		if (n_ranges && e->offset <= ranges[n_ranges - 1].end + (64u << 10)) {
			if (e->offset + e->length > ranges[n_ranges - 1].end)
				ranges[n_ranges - 1].end = e->offset + e->length;
		} else {
			ranges[n_ranges++] = (struct range){ e->offset, e->offset + e->length };
		}
	}
	if (n_ranges > CA_DELTA_RANGES_MAX) {
		/* merging the smallest gap until CA_DELTA_RANGES_MAX are left
		 * keeps the CA_DELTA_RANGES_MAX - 1 largest gaps (a merge leaves
		 * the other gaps as they are): found in one pass, not a pass per
		 * merge (a table of a million ranges took minutes) */
		enum { K = CA_DELTA_RANGES_MAX - 1 };
		size_t keep[K], nk = 0;
		for (size_t i = 0; i + 1 < n_ranges; i++) {
			uint64_t g = ranges[i + 1].start - ranges[i].end;
			size_t j = nk;
			for (; j > 0 && ranges[keep[j - 1] + 1].start - ranges[keep[j - 1]].end < g; j--)
				if (j < K)
					keep[j] = keep[j - 1];
			if (j < K) {
				keep[j] = i;
				nk += nk < K;
			}
		}
		qsort(keep, nk, sizeof(*keep), cmp_size);
		struct range merged[CA_DELTA_RANGES_MAX];
		uint64_t start = ranges[0].start;
		for (size_t k = 0; k < nk; k++) {
			merged[k] = (struct range){ start, ranges[keep[k]].end };
			start = ranges[keep[k] + 1].start;
		}
		merged[nk] = (struct range){ start, ranges[n_ranges - 1].end };
		n_ranges = nk + 1;
		memcpy(ranges, merged, n_ranges * sizeof(*ranges));
	}
	/* each range, in pieces of at most CA_DELTA_RANGE_MAX that end on an
	 * entry's end (an entry longer than that is a piece of its own) */
	size_t u = 0;
	uint64_t base = CA_DELTA_HEADER_SIZE + c->h.table_size;
	for (size_t k = 0; k < n_ranges && !failed; k++) {
		uint64_t pos = ranges[k].start;
		while (pos < ranges[k].end && !failed) {
			if (stopped(c)) {
				r = -ECANCELED;
				goto out;
			}
			uint64_t end = pos;
			size_t v = u;
			for (; v < n_use; v++) {
				const struct ca_delta_entry *e = &c->entries[use[v] & 0xffffff];
				uint64_t ee = e->offset + e->length;
				if (e->offset >= ranges[k].end)
					break;
				if (ee > end) {
					if (end > pos && ee - pos > CA_DELTA_RANGE_MAX)
						break;
					end = ee;
				}
			}
			if (end <= pos)
				break;
			r = read_range(c, base + pos, (size_t)(end - pos), &data, NULL);
			if (r == -ENOMEM || stopped(c)) {
				r = r == -ENOMEM ? r : -ECANCELED; /* a cancelled transfer is no fault of the pack's */
				goto out;
			}
			if (r < 0 || data.size != end - pos) {
				if (r < 0)
					ca_log_warning_errno(r, "%s: fetching from the chunk store instead", c->shown);
				else
					client_warn(c, "truncated");
				failed = true;
				break;
			}
			for (; u < v; u++) {
				const struct ca_delta_entry *e = &c->entries[use[u] & 0xffffff];
				if (stopped(c)) {
					r = -ECANCELED;
					goto out;
				}
				if (ca_store_has(store, e->id) > 0)
					continue; /* the same chunk twice in a lying table */
				r = rebuild_put(e, store, data.data + (e->offset - pos), (size_t)e->length, codec, dctx,
				                &prefix, &raw, &out);
				if (r == -ENOMEM)
					goto out;
				if (r < 0) {
					client_warn(c, r == -EBADMSG ? "a chunk does not match its id" : "a chunk failed");
					failed = true;
					break;
				}
				ret->chunks++;
				ret->bytes += e->size;
				count_built(c, e->size);
			}
			pos = end;
		}
	}
	if (failed) {
		ret->left += n_use - u;
		pthread_mutex_lock(&c->lock);
		c->broken = true; /* said once: a chunk at a time no longer tries it */
		pthread_mutex_unlock(&c->lock);
	} else {
		/* TO's chunks the store still lacks: the pack did not have them */
		uint64_t lacking = 0;
		for (size_t i = 0; i < ca_index_n_chunks(c->to); i++) {
			uint64_t a, b;
			const uint8_t *id;
			if (i % 4096 == 0 && stopped(c)) {
				r = -ECANCELED;
				goto out;
			}
			ca_index_chunk(c->to, i, &a, &b, &id);
			lacking += ca_store_has(store, id) <= 0;
		}
		/* with FROM checked, both are a store that holds only part of
		 * FROM (a cache); otherwise the pack is not for what is here */
		if ((no_ref || lacking) && c->from_known)
			ca_log_info("%s: %llu chunks need FROM chunks not here, %llu are not in the pack; fetching them "
			            "from the chunk store",
			            c->shown, (unsigned long long)no_ref, (unsigned long long)lacking);
		else if (no_ref || lacking)
			ca_log_warning("%s: %llu chunks need FROM chunks not here, %llu are not in the pack (a pack "
			               "for another FROM?); fetching them from the chunk store instead",
			               c->shown, (unsigned long long)no_ref, (unsigned long long)lacking);
	}
	r = 0;
out:
	ret->requests = c->requests;
	ret->wire_bytes = c->wire_bytes;
	ZSTD_freeDCtx(dctx);
	ca_codec_free(codec);
	ca_buf_release(&data);
	ca_buf_release(&prefix);
	ca_buf_release(&raw);
	ca_buf_release(&out);
	free(use);
	free(ranges);
	return r;
}

/* ---- a chunk at a time ---- */

static void count_built(struct ca_delta_client *c, uint64_t size)
{
	pthread_mutex_lock(&c->lock);
	c->built_chunks++;
	c->built_bytes += size;
	pthread_mutex_unlock(&c->lock);
}

/* The entry for id, or NULL (also once the pack proved bad). */
static const struct ca_delta_entry *entry_of(struct ca_delta_client *c, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	uint64_t i;
	pthread_mutex_lock(&c->lock);
	bool broken = c->broken;
	pthread_mutex_unlock(&c->lock);
	if (broken || ca_idset_get(c->by_id, id, &i) <= 0)
		return NULL;
	return &c->entries[i];
}

/* The pack proved bad: the first to see it says so, and it is used no further. */
static void client_break(struct ca_delta_client *c, const char *why)
{
	pthread_mutex_lock(&c->lock);
	bool first = !c->broken;
	c->broken = true;
	pthread_mutex_unlock(&c->lock);
	if (first)
		client_warn(c, why);
}

/* The kept window k, or NULL (win_lock held). */
static struct window *window_find(struct ca_delta_client *c, uint64_t k)
{
	for (size_t i = 0; i < WINDOWS; i++)
		if (c->win[i].used && c->win[i].k == k) {
			c->win[i].used = ++c->win_clock;
			return &c->win[i];
		}
	return NULL;
}

/* Entry e's bytes into out, from the windows it spans; those not kept are
 * read in one request (win_lock held). An entry larger than the windows
 * kept is read alone. */
static int read_windows(struct ca_delta_client *c, const struct ca_delta_entry *e, struct ca_buf *out)
{
	const uint64_t W = CA_DELTA_WINDOW, base = CA_DELTA_HEADER_SIZE + c->h.table_size;
	uint64_t k0 = e->offset / W, k1 = (e->offset + e->length - 1) / W, lo = UINT64_MAX, hi = 0;
	struct ca_buf got = CA_BUF_INIT;
	int r = 0;
	if (e->length == 0)
		return 0;
	if (k1 - k0 >= WINDOWS)
		return read_range(c, base + e->offset, (size_t)e->length, out, NULL);
	for (uint64_t k = k0; k <= k1; k++)
		if (!window_find(c, k)) {
			lo = k < lo ? k : lo;
			hi = k;
		}
	if (lo != UINT64_MAX) {
		uint64_t end = (hi + 1) * W < c->h.data_size ? (hi + 1) * W : c->h.data_size;
		r = read_range(c, base + lo * W, (size_t)(end - lo * W), &got, NULL);
		for (uint64_t k = lo; r == 0 && k <= hi; k++) {
			struct window *w = &c->win[0];
			for (size_t i = 1; i < WINDOWS; i++)
				if (c->win[i].used < w->used)
					w = &c->win[i];
			uint64_t from = (k - lo) * W;
			w->b.size = 0;
			w->used = 0;
			if (from < got.size)
				r = ca_buf_append(&w->b, got.data + from, got.size - from < W ? got.size - from : W, SIZE_MAX);
			if (r == 0) {
				w->k = k;
				w->used = ++c->win_clock;
			}
		}
	}
	/* a short read (a truncated pack) leaves the entry short: said by the caller */
	for (uint64_t k = k0; r == 0 && k <= k1; k++) {
		struct window *w = window_find(c, k);
		uint64_t a = k == k0 ? e->offset - k * W : 0;
		uint64_t b = k == k1 ? e->offset + e->length - k * W : W;
		if (!w || w->b.size < b)
			break;
		r = ca_buf_append(out, w->b.data + a, (size_t)(b - a), SIZE_MAX);
	}
	ca_buf_release(&got);
	return r;
}

/* Entry e's bytes into out (emptied first). */
static int read_entry(struct ca_delta_client *c, const struct ca_delta_entry *e, struct ca_buf *out)
{
	out->size = 0;
	pthread_mutex_lock(&c->win_lock);
	int r = read_windows(c, e, out);
	pthread_mutex_unlock(&c->win_lock);
	return r;
}

bool ca_delta_client_has(struct ca_delta_client *c, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	return entry_of(c, id) != NULL;
}

int ca_delta_client_build(struct ca_delta_client *c, struct ca_store *store, const uint8_t id[CA_CHUNK_ID_SIZE],
                          struct ca_buf *out)
{
	const struct ca_delta_entry *e = entry_of(c, id);
	struct ca_codec *codec = NULL;
	ZSTD_DCtx *dctx = NULL;
	struct ca_buf data = CA_BUF_INIT, prefix = CA_BUF_INIT, raw = CA_BUF_INIT;
	int r;
	if (!e)
		return -ENOENT;
	for (unsigned k = 0; k < e->n_refs; k++)
		if (ca_store_has(store, e->refs[k].id) <= 0)
			return -ENOENT; /* a partial cache: the chunk store serves it */
	dctx = ZSTD_createDCtx();
	r = ca_codec_new(c->digest, &codec);
	if (r < 0 || !dctx) {
		r = -ENOMEM;
		goto out;
	}
	r = read_entry(c, e, &data);
	if (r == -ENOMEM)
		goto out;
	if (stopped(c)) {
		r = -ENOENT; /* the mount is stopping: no fault of the pack's */
		goto out;
	}
	if (r < 0 || data.size != e->length) {
		if (r < 0)
			ca_log_debug_errno(r, "%s", c->shown);
		client_break(c, r < 0 ? "cannot be read" : "truncated");
		r = -ENOENT;
		goto out;
	}
	r = rebuild(e, store, data.data, data.size, codec, dctx, &prefix, &raw, out);
	if (r == 0)
		count_built(c, e->size);
	if (r == -EBADMSG) {
		client_break(c, "a chunk does not match its id");
		r = -ENOENT;
	} else if (r < 0 && r != -ENOMEM) {
		r = -ENOENT; /* a reference gone since (a prune): the chunk store serves it */
	}
out:
	ca_codec_free(codec);
	ZSTD_freeDCtx(dctx);
	ca_buf_release(&data);
	ca_buf_release(&prefix);
	ca_buf_release(&raw);
	return r;
}

/* ---- info ---- */

int ca_delta_info(const char *from, const char *to, const char *pack, const struct ca_image_opts *from_io,
                  const struct ca_image_opts *to_io, struct ca_delta_info *ret)
{
	struct ca_image *fi = NULL, *ti = NULL;
	struct ca_idset *from_ids = NULL, *seen = NULL;
	struct ca_codec *codec = NULL;
	struct ca_buf z = CA_BUF_INIT;
	struct ca_delta_client *c = NULL;
	size_t n_index;
	int r;
	*ret = (struct ca_delta_info){ 0 };
	r = open_pair(from, to, from_io, to_io, &fi, &ti);
	if (r < 0)
		goto out;
	struct ca_index *f = ca_image_index(fi), *t = ca_image_index(ti);
	r = ca_codec_new(ca_digest_type_from_flags(ca_index_feature_flags(t)), &codec);
	if (r == 0)
		r = ca_idset_new(ca_index_n_chunks(f), &from_ids);
	if (r == 0)
		r = ca_idset_new(ca_index_n_chunks(t), &seen);
	if (r == 0)
		r = ca_idset_add_index(from_ids, f);
	if (r < 0) {
		ca_log_error_errno(r, "%s", to);
		goto out;
	}
	ret->image_size = ca_index_blob_size(t);
	(void)ca_index_data(t, &n_index);
	ret->index_bytes = n_index;
	for (size_t i = 0; i < ca_index_n_chunks(t); i++) {
		uint64_t a, b;
		const uint8_t *id;
		const struct ca_chunk *ch = NULL;
		ca_index_chunk(t, i, &a, &b, &id);
		r = ca_idset_add(seen, id, 1);
		if (r < 0)
			goto out;
		if (r == 0)
			continue;
		/* what a store holds: the chunk file make writes */
		r = ca_chunksrc_get(ca_image_chunksrc(ti), id, b - a, &ch);
		if (r == 0)
			r = ca_codec_compress(codec, ch->data, ch->size, &z);
		ca_chunksrc_put(ca_image_chunksrc(ti), ch);
		if (r < 0) {
			ca_log_error_errno(r, "%s", to);
			goto out;
		}
		ret->to_chunks++;
		ret->to_store_bytes += z.size;
		if (ca_idset_get(from_ids, id, NULL) > 0)
			continue;
		ret->store_chunks++;
		ret->store_bytes += z.size;
	}
	r = 0;
	if (!pack)
		goto out;
	ret->have_pack = true;
	struct ca_delta_client_opts co = { 0 };
	uint8_t fd[CA_DELTA_DIGEST_SIZE];
	r = ca_delta_index_digest(f, fd);
	if (r < 0)
		goto out;
	co.from_digest = fd;
	r = ca_delta_client_open(pack, t, &co, &c);
	if (r < 0 || !c)
		goto out;
	ret->pack_matches = true;
	/* a client holding FROM needs every entry: the data is one run in
	 * TO's order, read past what the first read brought */
	uint64_t lo = UINT64_MAX, hi = 0, base = CA_DELTA_HEADER_SIZE + c->h.table_size;
	struct ca_idset *in_pack = NULL;
	r = ca_idset_new(c->h.n_entries, &in_pack);
	for (uint64_t i = 0; r >= 0 && i < c->h.n_entries; i++) {
		const struct ca_delta_entry *e = &c->entries[i];
		if (e->offset < lo)
			lo = e->offset;
		if (e->offset + e->length > hi)
			hi = e->offset + e->length;
		r = ca_idset_add(in_pack, e->id, 0);
	}
	ret->pack_requests = c->requests;
	ret->pack_bytes = c->wire_bytes;
	if (r >= 0 && hi > lo && base + hi > c->head.size) {
		uint64_t from_off = base + lo > c->head.size ? base + lo : c->head.size;
		ret->pack_requests += (base + hi - from_off + CA_DELTA_RANGE_MAX - 1) / CA_DELTA_RANGE_MAX;
		ret->pack_bytes += base + hi - from_off;
	}
	/* what the pack lacks comes from the store */
	struct ca_idset *s2 = NULL;
	if (r >= 0)
		r = ca_idset_new(ca_index_n_chunks(t), &s2);
	for (size_t i = 0; r >= 0 && i < ca_index_n_chunks(t); i++) {
		uint64_t a, b;
		const uint8_t *id;
		ca_index_chunk(t, i, &a, &b, &id);
		if (ca_idset_get(from_ids, id, NULL) > 0 || ca_idset_get(in_pack, id, NULL) > 0)
			continue;
		if ((r = ca_idset_add(s2, id, 0)) == 0)
			continue;
		ret->pack_missing++;
		ret->pack_missing_bytes += b - a;
	}
	ca_idset_free(s2);
	ca_idset_free(in_pack);
	if (r < 0)
		ca_log_error_errno(r, "%s", pack);
	else
		r = 0;
out:
	ca_delta_client_free(c);
	ca_buf_release(&z);
	ca_codec_free(codec);
	ca_idset_free(from_ids);
	ca_idset_free(seen);
	ca_image_free(fi);
	ca_image_free(ti);
	return r;
}
