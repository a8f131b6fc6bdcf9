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

#include "base/location.h"
#include "base/log.h"
#include "format/idset.h"
#include "format/index.h"
#include "image/source.h"
#include "image/store_ops.h"
#include "net/s3.h"
#include "store/cache_fill.h"
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
	if (store && ca_location_is_remote(store) && !ca_s3_is_url(store))
		return refuse(msg, len, "%s: only local stores and S3 buckets can be collected", store);
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
	bool s3 = ca_s3_is_url(store);
	if (!s3)
		store = ca_location_path(store);
	r = keep_set(indexes, n, 4096, &keep);
	if (r < 0)
		goto out;
	struct ca_store_gc_opts go = { .keep = keep, .dry_run = o->dry_run, .on_chunk = gc_report, .userdata = (void *)o };
	if (s3) {
		struct ca_http_opts ho;
		ca_source_http_opts(&ho);
		r = ca_s3_gc(store, &ho, &go, ret); /* logs its errors */
	} else {
		r = ca_store_open(store, &st);
		if (r == 0)
			r = ca_store_gc(st, &go, ret);
		if (r < 0)
			ca_log_error_errno(r, "%s", store);
	}
out:
	ca_store_free(st);
	ca_idset_free(keep);
	free(def);
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
		                           .repair = o->repair, .on_bad = verify_bad };
	struct ca_store *s = NULL;
	int r = ca_store_open_private(o->store, false, &s); /* logs */
	if (r == 0) {
		r = ca_store_verify(s, &vo, ret);
		if (r < 0)
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

int ca_store_ops_stat(const char *dir, struct ca_store_ops_stat *ret)
{
	struct ca_store *s = NULL;
	*ret = (struct ca_store_ops_stat){ 0 };
	int r = ca_store_open_private(dir, false, &s); /* logs */
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
