/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * store_ops.c - gc, prune, verify and stat of a store named by a string
 * (store_ops.h): indexes loaded into a keep set, the store opened, the
 * store layer's policy run, everything closed.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/location.h"
#include "base/log.h"
#include "format/feature.h"
#include "format/idset.h"
#include "format/index.h"
#include "image/delta.h"
#include "image/index_cache.h"
#include "image/profile.h"
#include "image/sidecar.h"
#include "image/source.h"
#include "image/store_ops.h"
#include "net/oci.h"
#include "net/s3.h"
#include "net/storeconf.h"
#include "store/cache_fill.h"
#include "store/chunksrc.h"
#include "store/store.h"

/* Every index into a new set: all must load, since what the set lacks is
 * deleted. */
static int keep_set(char *const *indexes, size_t n, size_t hint, struct ca_idset **ret)
{
	struct ca_idset *keep = NULL;
	int r = ca_idset_new(hint, &keep);
	if (r < 0)
		return ca_log_error_errno(r, "keep set");
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct ca_index *idx;
		r = ca_source_open_index(indexes[i], NULL, &idx); /* logs */
		if (r < 0)
			break;
		r = ca_idset_add_index(keep, idx);
		ca_index_free(idx);
		if (r < 0)
			ca_log_error_errno(r, "%s", indexes[i]);
	}
	if (r < 0) {
		ca_idset_free(keep);
		return r;
	}
	*ret = keep;
	return 0;
}

/* ---- gc ---- */

#define refuse(msg, len, ...) (snprintf((msg), (len), __VA_ARGS__), -EINVAL)

int ca_store_ops_gc_check(const char *store, const char *first_index, char *msg, size_t len)
{
	*msg = 0;
	if (!store && first_index && ca_location_is_remote(first_index))
		return refuse(msg, len, "the store of a URL index must be given with --store");
	if (store && ca_location_is_remote(store) && !ca_s3_is_url(store) && !ca_location_is_oci(store))
		return refuse(msg, len, "%s: only local stores, S3 buckets and registries can be collected", store);
	return 0;
}

static void gc_report(void *userdata, const char *rel, int err)
{
	const struct ca_store_ops_gc_opts *o = userdata;
	if (err < 0)
		ca_log_error_errno(err, "%s", rel);
	else if (o->on_remove)
		o->on_remove(o->userdata, rel);
}

int ca_store_ops_gc(char *const *indexes, size_t n, const struct ca_store_ops_gc_opts *o,
                    struct ca_store_gc_stats *ret)
{
	struct ca_idset *keep = NULL;
	struct ca_store *st = NULL;
	char *def = NULL;
	const char *store = o->store;
	char msg[256];
	/* casync refuses an empty list too: it would delete the whole store */
	int r = n ? ca_store_ops_gc_check(store, indexes[0], msg, sizeof(msg)) : -EINVAL;
	if (r < 0) {
		ca_log_error("gc: %s", n ? msg : "no index to keep the chunks of");
		return r;
	}
	if (!store) {
		store = def = ca_location_default_store(indexes[0]);
		if (!def)
			return ca_log_error_errno(ENOMEM, "gc");
	}
	bool s3 = ca_s3_is_url(store), oci = ca_location_is_oci(store);
	if (!s3 && !oci)
		store = ca_location_path(store);
	r = keep_set(indexes, n, 4096, &keep);
	if (r < 0)
		goto out;
	struct ca_store_gc_opts go = { .keep = keep, .dry_run = o->dry_run, .on_chunk = gc_report, .userdata = (void *)o,
		                       .cancel = o->cancel };
	if (s3 || oci) {
		struct ca_http_opts ho;
		ca_source_http_opts(&ho);
		r = s3 ? ca_s3_gc(store, &ho, &go, ret) : ca_oci_gc(store, &ho, &go, ret); /* log their errors */
	} else {
		r = ca_storeconf_open_store(NULL, store, &st); /* logs; encrypted: only its key's chunks */
		if (r == 0) {
			r = ca_store_gc(st, &go, ret);
			if (r < 0 && r != -ECANCELED)
				ca_log_error_errno(r, "%s", store);
		}
	}
out:
	ca_store_free(st);
	ca_idset_free(keep);
	free(def);
	return r;
}

/* ---- fill ---- */

/* one source: its index and what to fetch for it */
struct fill_source {
	const char *name;
	struct ca_index *idx;
	struct ca_cache_fill_plan *plan;
};

/* Open s's chunk source with dir as its cache and fill it. */
static int fill_one(const struct fill_source *s, const struct ca_store_ops_fill_opts *o,
                    const struct ca_cache_fill_opts *fo, struct ca_cache_fill_stats *st)
{
	struct ca_chunksrc *src = NULL;
	struct ca_store *cache = NULL;
	/* the index is open already */
	struct ca_image_opts io = { .stores = (char **)o->stores, .n_stores = o->n_stores };
	int r = ca_source_open_chunksrc(s->name, s->idx, &io, &src);
	if (r < 0)
		return r;
	r = ca_store_open_private(o->cache, true, &cache);
	if (r < 0)
		goto out;
	ca_chunksrc_set_cache(src, cache, false);
	r = ca_cache_fill_run(s->plan, src, fo, st);
out:
	ca_chunksrc_free(src);
	return r;
}

/* The index, kept in the cache by URL with its sidecar and prefetch
 * profile (and their signatures) for a later --offline open or mount. */
static int open_kept(const char *name, const struct ca_image_opts *io, struct ca_index **ret)
{
	struct ca_sidecar *sc = NULL;
	struct ca_profile *prof = NULL;
	int r = ca_source_open_index(name, io, ret);
	if (r == 0 && ca_location_image_kind(name) == CA_IMAGE_ARCHIVE_INDEX)
		r = ca_source_open_sidecar(name, *ret, io, &sc);
	if (r == 0)
		r = ca_source_open_profile(name, *ret, io, &prof);
	ca_sidecar_free(sc);
	ca_profile_free(prof);
	return r;
}

/* Build into cache what a delta pack gives for source (opened as idx):
 * --delta, or for a URL whose kept index (from_digest, the one before
 * this fill) changed, the pack named for that one beside it. */
static int fill_delta(const struct ca_store_ops_fill_opts *o, const char *name, const struct ca_index *idx,
                      const uint8_t *from_digest, struct ca_store *cache, struct ca_store_ops_fill_stats *ret)
{
	struct ca_delta_client_opts co = { .http = o->io ? o->io->http : NULL, .from_digest = from_digest };
	struct ca_delta_client *c = NULL;
	struct ca_delta_client_stats ds;
	char *auto_name = NULL;
	const char *at = o->delta;
	int r;
	if (!at) {
		uint8_t now[CA_DELTA_DIGEST_SIZE];
		r = ca_delta_index_digest(idx, now);
		if (r < 0 || !from_digest || !memcmp(now, from_digest, sizeof(now)))
			return r;
		auto_name = ca_delta_pack_name(name, from_digest);
		if (!auto_name)
			return ca_log_error_errno(ENOMEM, "%s", name);
		at = auto_name;
		co.quiet_missing = true;
	}
	r = ca_delta_client_open(at, idx, &co, &c); /* NULL: none (said) */
	if (r == 0 && c)
		r = ca_delta_client_run(c, cache, &ds);
	if (r == 0 && c) {
		ret->delta_chunks += ds.chunks;
		ret->delta_bytes += ds.bytes;
		ret->delta_requests += ds.requests;
		ret->delta_wire_bytes += ds.wire_bytes;
	}
	ca_delta_client_free(c);
	free(auto_name);
	return r;
}

int ca_store_ops_fill(const struct ca_store_ops_fill_opts *o, struct ca_store_ops_fill_stats *ret)
{
	struct fill_source *sources = calloc(o->n_sources ? o->n_sources : 1, sizeof(*sources));
	struct ca_idset *queued = NULL;
	struct ca_store *cache = NULL;
	struct ca_cache_fill_opts fo = {
		.threads = o->threads, .rate_limit_bps = o->rate_limit_bps, .cancel = o->cancel,
		.progress = o->progress, .progress_userdata = o->progress_userdata,
	};
	struct ca_image_opts io = { 0 };
	int r = 0;
	*ret = (struct ca_store_ops_fill_stats){ 0 };
	if (!sources || ca_idset_new(4096, &queued) < 0) {
		r = ca_log_error_errno(ENOMEM, "cache");
		goto out;
	}
	r = ca_store_open_private(o->cache, true, &cache); /* logs */
	if (r < 0)
		goto out;
	if (o->io)
		io = *o->io;
	/* the cache keeps each URL's index and sidecar too, for --offline */
	io.cache_mode = CA_CACHE_DIR;
	io.cache_dir = o->cache;
	for (size_t i = 0; i < o->n_sources; i++) {
		sources[i].name = o->sources[i];
		/* the index this cache kept for the URL before: the FROM of an update */
		uint8_t from[CA_DELTA_DIGEST_SIZE];
		bool have_from = false;
		if (!io.offline && ca_location_is_url(sources[i].name)) {
			r = ca_index_cache_kept_digest(o->cache, sources[i].name, from);
			if (r < 0 && r != -ENOENT)
				goto out; /* a cache refused (logged): not again by the open */
			have_from = r == 0;
		}
		r = open_kept(sources[i].name, &io, &sources[i].idx); /* logs */
		if (r < 0)
			goto out;
		if (!io.offline && (o->delta || have_from)) {
			r = fill_delta(o, sources[i].name, sources[i].idx, have_from ? from : NULL, cache, ret);
			if (r < 0)
				goto out;
		}
		r = ca_cache_fill_plan(cache, sources[i].idx, queued, &sources[i].plan, &ret->fill);
		if (r < 0) {
			ca_log_error_errno(r, "%s", sources[i].name);
			goto out;
		}
	}
	uint64_t t0 = ca_now_ns();
	if (o->progress_start)
		o->progress_start(o->progress_userdata, ret->fill.todo_bytes);
	for (size_t i = 0; i < o->n_sources && !(o->cancel && *o->cancel); i++) {
		/* a source whose stores cannot be opened fails alone; the rest still fill */
		if (fill_one(&sources[i], o, &fo, &ret->fill) < 0)
			ret->broken = true;
	}
	if (o->progress_end)
		o->progress_end(o->progress_userdata);
	ca_cache_fill_log_rest(&ret->fill);
	ret->fetch_ns = ca_now_ns() - t0;
out:
	for (size_t i = 0; sources && i < o->n_sources; i++) {
		ca_cache_fill_plan_free(sources[i].plan);
		ca_index_free(sources[i].idx);
	}
	free(sources);
	ca_idset_free(queued);
	ca_store_free(cache);
	return r;
}

/* ---- prune ---- */

int ca_store_ops_prune(const struct ca_store_ops_prune_opts *o, struct ca_cache_prune_stats *ret, bool *ret_failed)
{
	struct ca_idset *pinned = NULL;
	struct ca_store *cache = NULL;
	struct ca_cache_prune_plan *plan = NULL;
	*ret_failed = false;
	/* without its pins we could evict what the user wants kept */
	int r = keep_set(o->keep, o->n_keep, 1024, &pinned);
	if (r < 0)
		goto out;
	struct ca_cache_prune_opts po = { .max_size = o->max_size, .keep = pinned, .min_age = o->min_age };
	r = ca_store_open_private(o->cache, false, &cache); /* logs */
	if (r < 0)
		goto out;
	r = ca_cache_prune_plan(cache, &po, &plan);
	if (r < 0) {
		ca_log_error_errno(r, "%s", o->cache);
		goto out;
	}
	for (size_t i = 0; o->on_victim && i < ca_cache_prune_plan_n_victims(plan); i++) {
		char hex[2 * CA_CHUNK_ID_SIZE + 1];
		ca_id_to_hex(ca_cache_prune_plan_victim(plan, i, NULL), hex);
		o->on_victim(o->userdata, hex);
	}
	if (!o->dry_run && ca_cache_prune_apply(plan) < 0)
		*ret_failed = true; /* each failed chunk was logged; the rest went */
	ca_cache_prune_plan_stats(plan, ret);
out:
	ca_cache_prune_plan_free(plan);
	ca_store_free(cache);
	ca_idset_free(pinned);
	return r;
}

/* ---- verify ---- */

static void verify_bad(void *userdata, const uint8_t id[CA_CHUNK_ID_SIZE], int err, bool removed)
{
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	(void)userdata;
	ca_id_to_hex(id, hex);
	if (err == -EBADMSG)
		ca_log_error("chunk %s: corrupt data%s", hex, removed ? ", removed" : "");
	else
		ca_log_error_errno(err, "chunk %s", hex);
}

int ca_store_ops_verify(const struct ca_store_ops_verify_opts *o, struct ca_store_verify_stats *ret)
{
	struct ca_store_verify_opts vo = { .threads = o->threads, .any_digest = o->any_digest, .digest = o->digest,
		                           .repair = o->repair, .on_bad = verify_bad, .cancel = o->cancel };
	struct ca_store *s = NULL;
	/* a store others are served from keeps its modes; only a cache is private */
	int r = o->cache ? ca_store_open_private(o->store, false, &s) /* logs */
	                 : ca_storeconf_open_store(NULL, o->store, &s); /* logs */
	if (r == 0) {
		r = ca_store_verify(s, &vo, ret);
		if (r < 0 && r != -ECANCELED)
			ca_log_error_errno(r, "%s", o->store);
	}
	ca_store_free(s);
	return r;
}

/* ---- stat ---- */

static int stat_one(const struct ca_store_entry *e, void *userdata)
{
	struct ca_store_ops_stat *a = userdata;
	if (e->kind == CA_STORE_TMP) {
		a->tmp++;
		return 0;
	}
	a->chunks++;
	a->bytes += (uint64_t)e->st.st_size;
	a->disk += (uint64_t)e->st.st_blocks * 512;
	return 0;
}

int ca_store_ops_stat(const char *dir, bool cache, struct ca_store_ops_stat *ret)
{
	struct ca_store *s = NULL;
	*ret = (struct ca_store_ops_stat){ 0 };
	int r = cache ? ca_store_open_private(dir, false, &s) /* logs */
	              : ca_storeconf_open_store(NULL, dir, &s); /* logs */
	if (r == 0) {
		r = ca_store_walk(s, stat_one, ret);
		if (r < 0)
			ca_log_error_errno(r, "%s", dir);
	}
	ca_store_free(s);
	return r;
}

int ca_store_ops_presence(const char *dir, const char *source, struct ca_store_ops_presence *ret)
{
	struct ca_store *s = NULL;
	struct ca_index *idx = NULL;
	*ret = (struct ca_store_ops_presence){ 0 };
	int r = ca_store_open_private(dir, false, &s); /* logs */
	if (r == 0)
		r = ca_source_open_index(source, NULL, &idx); /* logs */
	if (r == 0) {
		r = ca_cache_fill_presence(s, idx, &ret->have, &ret->have_bytes);
		if (r < 0)
			ca_log_error_errno(r, "%s", source);
	}
	if (r == 0) {
		ret->chunks = ca_index_n_chunks(idx);
		ret->bytes = ca_index_blob_size(idx);
		ret->shown = ca_location_redact(source); /* NULL (no memory): the caller names it otherwise */
	}
	ca_index_free(idx);
	ca_store_free(s);
	return r;
}

/* ---- info ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int ca_store_ops_info(const char *source, const struct ca_image_opts *io, char *const *stores, size_t n_stores,
                      struct ca_store_ops_info *ret)
{
	struct ca_index *idx = NULL;
	uint8_t *have = NULL;
	uint64_t *sizes = NULL;
	*ret = (struct ca_store_ops_info){ 0 };
	int r = ca_source_open_index(source, io, &idx); /* logs */
	if (r < 0)
		return r;
	size_t n = ca_index_n_chunks(idx);
	if (n_stores > 0) {
		have = calloc(n ? n : 1, 1);
		if (!have) {
			r = ca_log_error_errno(ENOMEM, "%s", stores[0]);
			goto out;
		}
		r = ca_source_stores_presence(stores, n_stores, idx, have); /* logs */
		if (r < 0)
			goto out;
		ret->in_stores = true;
	}
	sizes = malloc((n ? n : 1) * sizeof(uint64_t));
	if (!sizes) {
		r = -ENOMEM; /* as the command always was: exit 1, no line */
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t s, e;
		const uint8_t *id;
		ca_index_chunk(idx, i, &s, &e, &id);
		sizes[i] = e - s;
		if (have && have[i]) {
			ret->present++;
			ret->present_bytes += e - s;
		}
	}
	qsort(sizes, n, sizeof(uint64_t), cmp_u64);
	ret->archive_index = ca_location_image_kind(source) == CA_IMAGE_ARCHIVE_INDEX;
	ret->flags = ca_index_feature_flags(idx);
	ca_feature_format(ret->flags, ret->flag_names, sizeof(ret->flag_names));
	ret->digest = ca_digest_type_name(ca_digest_type_from_flags(ret->flags));
	ret->chunk_min = ca_index_chunk_size_min(idx);
	ret->chunk_avg = ca_index_chunk_size_avg(idx);
	ret->chunk_max = ca_index_chunk_size_max(idx);
	ret->size = ca_index_blob_size(idx);
	ret->chunks = n;
	if (n) {
		ret->smallest = sizes[0];
		ret->median = sizes[n / 2];
		ret->largest = sizes[n - 1];
	}
out:
	free(sizes);
	free(have);
	ca_index_free(idx);
	return r;
}

int ca_store_ops_check_settings(void)
{
	return ca_storeconf_check();
}
