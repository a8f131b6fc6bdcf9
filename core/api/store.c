/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * store.c - cafs_store_gc, cafs_cache_prune, cafs_store_verify,
 * cafs_store_stat (see cafs/store.h): the public face of
 * core/image/store_ops, the calls `cafs gc` and `cafs cache` make.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "cafs/context.h"
#include "cafs/store.h"
#include "image/source.h"
#include "image/store_ops.h"

/* A stats struct the caller sized (its first member): refused before any
 * work when it cannot even hold its size. */
static int stats_check(const void *user)
{
	size_t size;
	if (!user)
		return 0;
	memcpy(&size, user, sizeof(size));
	if (size < sizeof(size_t) || size > API_STRUCT_MAX)
		return ca_log_error_errno(size < sizeof(size_t) ? EINVAL : E2BIG,
		                          "stats: size %zu: not a size (set .size = sizeof s)", size);
	return 0;
}

/* ours (n bytes, its own size member first) into user, up to the smaller
 * size; the caller's size member stays as it set it. */
static void stats_fill(void *user, const void *ours, size_t n)
{
	size_t size;
	if (!user)
		return;
	memcpy(&size, user, sizeof(size));
	if (size > n)
		memset((char *)user + n, 0, size - n);
	memcpy((char *)user + sizeof(size_t), (const char *)ours + sizeof(size_t),
	       (size < n ? size : n) - sizeof(size_t));
}

struct gc_cb {
	void (*fn)(void *userdata, const char *name);
	void *userdata;
};

static void gc_removed(void *userdata, const char *rel)
{
	struct gc_cb *c = userdata;
	c->fn(c->userdata, rel);
}

int cafs_store_gc(struct cafs_ctx *ctx, const char *const *indexes, size_t n, const struct cafs_gc_options *user_o,
                  struct cafs_gc_stats *stats)
{
	if (!ctx)
		return -EINVAL;
	struct ca_logger *old = api_enter(ctx);
	struct cafs_gc_options o;
	struct ca_store_gc_stats gs = { 0 };
	int r = api_options(user_o, &o, sizeof(o));
	if (r == 0)
		r = stats_check(stats);
	if (r == 0 && n && !indexes)
		r = api_refuse_arg("gc", "no index list");
	for (size_t i = 0; r == 0 && i < n; i++)
		if (!indexes[i] || !*indexes[i])
			r = api_refuse_arg("gc", "an index with no name");
	if (r == 0 && o.store && !*o.store)
		r = api_refuse_arg("gc", "an empty store name");
	if (r < 0)
		goto out;
	struct gc_cb cb = { o.removed, o.userdata };
	struct ca_store_ops_gc_opts go = { .store = o.store, .dry_run = o.dry_run != 0, .cancel = &ctx->cancelled,
		                           .on_remove = o.removed ? gc_removed : NULL, .userdata = &cb };
	r = ctx->cancelled ? -ECANCELED : ca_store_ops_gc((char *const *)indexes, n, &go, &gs);
	if (r == 0) {
		struct cafs_gc_stats s = { sizeof(s), gs.kept, gs.removed, gs.removed_bytes, gs.failed, gs.dirs };
		stats_fill(stats, &s, sizeof(s));
		if (gs.failed)
			r = -EIO;
	}
out:
	api_leave(old);
	return r;
}

int cafs_cache_prune(struct cafs_ctx *ctx, const char *cache, const struct cafs_prune_options *user_o,
                     struct cafs_prune_stats *stats)
{
	if (!ctx)
		return -EINVAL;
	struct ca_logger *old = api_enter(ctx);
	struct cafs_prune_options o;
	struct ca_cache_prune_stats ps = { 0 };
	char *def = NULL;
	bool failed = false;
	int r = api_options(user_o, &o, sizeof(o));
	if (r == 0)
		r = stats_check(stats);
	if (r == 0 && cache && !*cache)
		r = api_refuse_arg("cache prune", "an empty cache name");
	if (r == 0 && o.n_keep && !o.keep)
		r = api_refuse_arg("cache prune", "no list of indexes to keep");
	for (size_t i = 0; r == 0 && i < o.n_keep; i++)
		if (!o.keep[i] || !*o.keep[i])
			r = api_refuse_arg("cache prune", "an index to keep with no name");
	if (r < 0)
		goto out;
	if (!cache) {
		cache = def = ca_source_default_cache_dir();
		if (!def) {
			r = ca_log_error_errno(errno == ENOENT ? ENOENT : ENOMEM, "cache: no default cache directory");
			goto out;
		}
	}
	struct ca_store_ops_prune_opts po = {
		.cache = cache, .max_size = o.max_size, .keep = (char *const *)o.keep, .n_keep = o.n_keep,
		.min_age = o.min_age == 0 ? CA_CACHE_PRUNE_MIN_AGE_DEFAULT : o.min_age < 0 ? 0 : o.min_age,
		.dry_run = o.dry_run != 0,
	};
	r = ctx->cancelled ? -ECANCELED : ca_store_ops_prune(&po, &ps, &failed);
	if (r == 0) {
		struct cafs_prune_stats s = { sizeof(s), ps.victims, ps.victim_bytes, ps.left_chunks, ps.left_bytes,
			                      ps.stale_tmp };
		stats_fill(stats, &s, sizeof(s));
		if (failed)
			r = -EIO;
	}
out:
	free(def);
	api_leave(old);
	return r;
}

int cafs_store_verify(struct cafs_ctx *ctx, const char *store, const struct cafs_verify_options *user_o,
                      struct cafs_verify_stats *stats)
{
	if (!ctx)
		return -EINVAL;
	struct ca_logger *old = api_enter(ctx);
	struct cafs_verify_options o;
	struct ca_store_verify_stats vs = { 0 };
	int r = api_options(user_o, &o, sizeof(o));
	if (r == 0)
		r = stats_check(stats);
	if (r == 0 && (!store || !*store))
		r = api_refuse_arg("verify", "no store given");
	if (r < 0)
		goto out;
	struct ca_store_ops_verify_opts vo = { .store = store, .threads = o.threads, .any_digest = true,
		                               .repair = o.repair != 0, .cache = false, .cancel = &ctx->cancelled };
	r = ctx->cancelled ? -ECANCELED : ca_store_ops_verify(&vo, &vs);
	if (r == 0) {
		struct cafs_verify_stats s = { sizeof(s), vs.ok, vs.corrupt, vs.removed, vs.errors };
		stats_fill(stats, &s, sizeof(s));
		r = vs.errors ? -EIO : vs.corrupt != vs.removed ? CAFS_ECHUNKCORRUPT : 0;
	}
out:
	api_leave(old);
	return r;
}

int cafs_store_stat(struct cafs_ctx *ctx, const char *store, struct cafs_store_stats *stats)
{
	if (!ctx)
		return -EINVAL;
	struct ca_logger *old = api_enter(ctx);
	struct ca_store_ops_stat st;
	int r = stats_check(stats);
	if (r == 0 && (!store || !*store))
		r = api_refuse_arg("stat", "no store given");
	if (r == 0)
		r = ctx->cancelled ? -ECANCELED : ca_store_ops_stat(store, false, &st);
	if (r == 0) {
		struct cafs_store_stats s = { sizeof(s), st.chunks, st.bytes, st.disk, st.tmp };
		stats_fill(stats, &s, sizeof(s));
	}
	api_leave(old);
	return r;
}
