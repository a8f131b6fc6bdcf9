/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ops.c - cafs_make, cafs_image_extract, cafs_image_fill_cache (see
 * cafs/ops.h): the public face of image/image_make, image/image_extract and
 * store/cache_fill, the same calls the cafs command makes.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "chunk/compress.h"
#include "format/feature.h"
#include "store/cache_fill.h"
#include "cafs/ops.h"
#include "image/image_extract.h"
#include "image/image_make.h"
#include "store/store.h"

/* core reports done bytes (and the total once); the caller gets both */
struct progress {
	cafs_progress_fn fn;
	void *userdata;
	uint64_t total;
};

static void progress_start(void *userdata, uint64_t total)
{
	struct progress *p = userdata;
	p->total = total;
	p->fn(p->userdata, 0, total);
}

static void progress_step(void *userdata, uint64_t done)
{
	struct progress *p = userdata;
	p->fn(p->userdata, done, p->total);
}

/* with/without: comma-separated feature names, each as ca_feature_parse_name takes */
static int parse_features(const char *names, uint64_t *ret)
{
	char *copy = strdup(names), *save = NULL;
	int r = copy ? 0 : -ENOMEM;
	*ret = 0;
	for (char *n = copy ? strtok_r(copy, ",", &save) : NULL; r == 0 && n; n = strtok_r(NULL, ",", &save)) {
		uint64_t f = 0;
		r = ca_feature_parse_name(n, &f);
		if (r < 0)
			ca_log_error("make: unknown feature '%s'", n);
		*ret |= f;
	}
	free(copy);
	return r;
}

/* the public names into core's make options */
static int make_opts(const struct cafs_make_options *o, struct ca_image_make_opts *mo)
{
	int r = 0;
	mo->store = o->store;
	if (o->chunk_size_avg) {
		mo->chunk_avg = o->chunk_size_avg;
		mo->chunk_min = o->chunk_size_avg / 4;
		mo->chunk_max = o->chunk_size_avg * 4;
	}
	if (o->chunk_size_min)
		mo->chunk_min = o->chunk_size_min;
	if (o->chunk_size_max)
		mo->chunk_max = o->chunk_size_max;
	mo->threads = o->threads;
	mo->profile = o->profile;
	if (o->compression && ca_compression_parse(o->compression, &mo->compression) < 0)
		return ca_log_error_errno(EINVAL, "make: unknown compression '%s'", o->compression);
	if (o->digest && ca_digest_type_parse(o->digest, &mo->digest) < 0)
		return ca_log_error_errno(EINVAL, "make: unknown digest '%s'", o->digest);
	if (o->with) {
		r = parse_features(o->with, &mo->with);
		mo->with_set = true;
	}
	if (r == 0 && o->without)
		r = parse_features(o->without, &mo->without);
	return r;
}

int cafs_make(struct cafs_ctx *ctx, const char *out, const char *input, const struct cafs_make_options *user_o,
              uint8_t digest[CAFS_DIGEST_SIZE])
{
	if (!ctx)
		return -EINVAL;
	struct ca_logger *old = api_enter(ctx);
	struct cafs_make_options oc;
	const struct cafs_make_options *o = &oc;
	struct ca_image_make_opts mo;
	struct progress p = { 0 };
	uint8_t d[CA_CHUNK_ID_SIZE];
	int r = api_options(user_o, &oc, sizeof(oc));
	if (r == 0 && (!out || !*out))
		r = api_refuse_arg("make", "no output given");
	if (r == 0 && (!input || !*input))
		r = api_refuse_arg(out, "no input given");
	if (r < 0)
		goto out;
	ca_image_make_opts_init(&mo);
	r = make_opts(o, &mo);
	if (r < 0)
		goto out;
	mo.cancel = &ctx->cancelled;
	if (o->progress) {
		p = (struct progress){ o->progress, o->progress_userdata, 0 };
		mo.progress_start = progress_start;
		mo.progress = progress_step;
		mo.progress_userdata = &p;
	}
	r = ctx->cancelled ? -ECANCELED : ca_image_make(out, input, &mo, d, NULL);
	if (r == 0 && digest)
		memcpy(digest, d, CAFS_DIGEST_SIZE);
out:
	api_leave(old);
	return r;
}

int cafs_image_extract(struct cafs_image *img, const char *dest, const struct cafs_extract_options *user_o)
{
	if (!img)
		return -EINVAL;
	/* a progress callback may drop the caller's reference: the call keeps its own */
	cafs_image_ref(img);
	struct ca_logger *old = api_enter(img->ctx);
	struct ca_image_extract_opts eo = { .cancel = &img->ctx->cancelled };
	struct cafs_extract_options o;
	struct progress p = { 0 };
	int r = api_options(user_o, &o, sizeof(o));
	if (r == 0 && (!dest || !*dest))
		r = api_refuse_arg(ca_image_name(img->im), "extract: no destination given");
	if (r < 0)
		goto out;
	eo.path = o.path;
	eo.threads = o.threads;
	if (o.progress) {
		p = (struct progress){ o.progress, o.progress_userdata, 0 };
		eo.progress_start = progress_start;
		eo.progress = progress_step;
		eo.progress_userdata = &p;
	}
	r = img->ctx->cancelled ? -ECANCELED : ca_image_extract(img->im, dest, &eo);
out:
	api_leave(old);
	/* -EBUSY: after a cancel, a worker is stuck in a call no flag reaches
	 * (a hung NFS server) and still uses the image: our reference stays,
	 * so the caller's last unref cannot free it under that worker */
	if (r != -EBUSY)
		cafs_image_unref(img);
	return r;
}

static void fill_progress(void *userdata, uint64_t done)
{
	struct progress *p = userdata;
	if (p->fn)
		p->fn(p->userdata, done, p->total);
}

int cafs_image_fill_cache(struct cafs_image *img, const struct cafs_fill_options *user_o)
{
	struct cafs_fill_options o;
	if (!img)
		return -EINVAL;
	/* a progress callback may drop the caller's reference: the call keeps its own */
	cafs_image_ref(img);
	struct ca_logger *old = api_enter(img->ctx);
	const char *dir = ca_image_cache_dir(img->im);
	struct ca_cache_fill_plan *plan = NULL;
	struct ca_cache_fill_stats st = { 0 };
	struct ca_store *cache = NULL;
	struct progress p = { 0 };
	struct ca_cache_fill_opts fo = {
		.cancel = &img->ctx->cancelled,
		.progress = fill_progress,
		.progress_userdata = &p,
		.name = ca_image_name(img->im),
	};
	int r = api_options(user_o, &o, sizeof(o));
	if (r < 0)
		goto out;
	if (!ca_image_index(img->im) || !dir) {
		r = ca_log_error_errno(EINVAL, "%s: %s", fo.name,
		                       dir ? "a .catar has no chunks" : "opened without a cache: nothing to fill");
		goto out;
	}
	fo.threads = o.threads;
	fo.rate_limit_bps = o.rate_limit_bps;
	p = (struct progress){ o.progress, o.progress_userdata, 0 };
	r = img->ctx->cancelled ? -ECANCELED : ca_store_open_private(dir, true, &cache);
	if (r < 0) /* logged by ca_store_open_private */
		goto out;
	r = ca_cache_fill_plan(cache, ca_image_index(img->im), NULL, &plan, &st);
	if (r < 0) {
		ca_log_error_errno(r, "cache %s", dir);
		goto out;
	}
	p.total = st.todo_bytes;
	if (p.fn)
		p.fn(p.userdata, 0, p.total);
	r = ca_cache_fill_run(plan, ca_image_chunksrc(img->im), &fo, &st);
	ca_cache_fill_log_rest(&st);
	if (r == 0 && st.failed)
		r = st.first_err ? st.first_err : -EIO;
out:
	ca_cache_fill_plan_free(plan);
	ca_store_free(cache);
	api_leave(old);
	cafs_image_unref(img);
	return r;
}
