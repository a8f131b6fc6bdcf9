/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_cache_fill.c - `cafs cache fill`: download every chunk the given
 * indexes need that the cache lacks, so extract and the mount then work
 * offline. The work is core/store/cache_fill.c's; here are the options, the
 * opening of each SOURCE's index and chunk source, and the messages.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache.h"
#include "store/cache_fill.h"
#include "store/chunksrc.h"
#include "cmd.h"
#include "base/digest.h"
#include "format/idset.h"
#include "format/index.h"
#include "image/index_cache.h"
#include "interrupt.h"
#include "base/log.h"
#include "image/profile.h"
#include "progress.h"
#include "store/store.h"

/* chunk errors printed one per line; past that only counted, since a store
 * that is gone entirely would otherwise print one line per chunk of the image */
#define MAX_REPORTED 20

enum { OPT_CACHE = 0x300, OPT_STORE, OPT_RATE }; /* above cmd.h's CAFS_OPT_* */

/* one SOURCE: its index and what to fetch for it */
struct source {
	const char *name;
	struct ca_index *idx;
	struct ca_cache_fill_plan *plan;
};

struct reporter {
	const char *cache_dir;
	uint64_t reported; /* chunk errors seen, over all sources (atomic: workers call in) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void report(void *userdata, const uint8_t id[CA_CHUNK_ID_SIZE], int r, bool not_stored)
{
	struct reporter *rep = userdata;
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	if (__atomic_fetch_add(&rep->reported, 1, __ATOMIC_RELAXED) >= MAX_REPORTED)
		return;
	ca_id_to_hex(id, hex);
	if (r == -ENOENT)
		ca_log_error("chunk %s: not found in any store", hex);
	else if (not_stored)
		ca_log_error("chunk %s: cannot store it in %s", hex, rep->cache_dir);
	else
		ca_log_error_errno(r, "chunk %s", hex);
}

/* Open s's chunk source with dir as its cache and fill it. */
static int fill_source(const struct source *s, char **stores, size_t n_stores, const char *dir,
                       const struct ca_cache_fill_opts *o, struct ca_cache_fill_stats *st)
{
	struct ca_chunksrc *src = NULL;
	struct ca_store *cache = NULL;
	struct ca_image_opts io = { .stores = stores, .n_stores = n_stores }; /* the index is open already */
	int r = ca_source_open_chunksrc(s->name, s->idx, &io, &src);
	if (r < 0)
		return r;
	r = ca_store_open_private(dir, true, &cache);
	if (r < 0)
		goto out;
	ca_chunksrc_set_cache(src, cache, false);
	r = ca_cache_fill_run(s->plan, src, o, st);
out:
	ca_chunksrc_free(src);
	return r;
}

/* The index, kept in the cache by URL with its metadata sidecar, so that
 * an offline open by URL finds both there (index_cache.h). */
/* The index, kept in the cache by URL with its sidecar (and their
 * signatures) for a later --offline. */
static int open_kept(const char *name, const struct ca_image_opts *io, struct ca_index **ret)
{
	struct ca_sidecar *sc = NULL;
	struct ca_profile *prof = NULL; /* its prefetch profile too, for an offline mount */
	int r = ca_source_open_index(name, io, ret);
	if (r == 0 && ca_location_image_kind(name) == CA_IMAGE_ARCHIVE_INDEX)
		r = ca_source_open_sidecar(name, *ret, io, &sc);
	if (r == 0)
		r = ca_source_open_profile(name, *ret, io, &prof);
	ca_sidecar_free(sc);
	ca_profile_free(prof);
	return r;
}

int cafs_cache_fill(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cache", required_argument, NULL, OPT_CACHE },
		{ "store", required_argument, NULL, OPT_STORE },
		{ "rate-limit-bps", required_argument, NULL, OPT_RATE },
		CAFS_TRUSTED_KEY_OPTION,
		CAFS_TRUST_POLICY_OPTIONS,
		{ "threads", required_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *cache_opt = NULL;
	char **stores = NULL, *dir = NULL;
	size_t n_stores = 0, n_sources = 0;
	struct source *sources = NULL;
	struct ca_idset *queued = NULL;
	struct ca_store *cache = NULL;
	struct reporter rep = { 0 };
	struct cafs_progress prog;
	struct ca_cache_fill_opts fo = {
		.progress = cafs_progress_update, .progress_userdata = &prog,
		.on_error = report, .error_userdata = &rep,
	};
	struct ca_cache_fill_stats st = { 0 };
	bool interrupts = false;
	struct cafs_trusted_keys tk = { 0 };
	struct ca_image_opts io = { 0 };
	int c, verbosity = 0, r = 1, k;

	while ((c = getopt_long(argc, argv, "s:j:vqh", opts, NULL)) >= 0) {
		switch (c) {
		case OPT_CACHE:
			cache_opt = optarg;
			break;
		case 's':
		case OPT_STORE: {
			char **n = realloc(stores, (n_stores + 1) * sizeof(char *));
			if (!n) {
				ca_log_error_errno(ENOMEM, "cache");
				goto out;
			}
			stores = n;
			stores[n_stores++] = optarg;
			break;
		}
		case CAFS_OPT_ALLOW_DOWNGRADE:
		case CAFS_OPT_SIGNED_NAME:
			k = cafs_trust_policy_option("cache", c, optarg, &tk);
			if (k) {
				r = k;
				goto out;
			}
			break;
		case CAFS_OPT_TRUSTED_KEY:
			k = cafs_trusted_key_add("cache", &tk, optarg);
			if (k) {
				r = k;
				goto out;
			}
			break;
		case OPT_RATE:
			if (cafs_parse_size(optarg, &fo.rate_limit_bps) < 0 || fo.rate_limit_bps == 0) {
				r = cafs_usage_error("cache", "invalid rate '%s'", optarg);
				goto out;
			}
			break;
		case 'j':
			if (cafs_parse_threads(optarg, &fo.threads) < 0) {
				r = cafs_usage_error("cache", "invalid thread count '%s'", optarg);
				goto out;
			}
			break;
		default:
			r = cafs_common_option(&cafs_command_cache, c, &verbosity);
			if (r >= 0)
				goto out;
			break;
		}
	}
	cafs_set_verbosity(verbosity);
	r = 1; /* cafs_common_option left -1 in it */
	if (optind == argc) {
		r = cafs_usage_error("cache", "fill needs at least one SOURCE index");
		goto out;
	}
	/* before any thread exists (the index download, the chunk sources'):
	 * a signal then stops the workers between chunks */
	k = cafs_interrupt_start();
	if (k < 0) {
		ca_log_error_errno(k, "signals");
		goto out;
	}
	interrupts = true;
	fo.cancel = cafs_interrupt_flag();
	dir = cafs_cache_dir(cache_opt);
	if (!dir)
		goto out;
	rep.cache_dir = dir;
	n_sources = (size_t)(argc - optind);
	sources = calloc(n_sources, sizeof(*sources));
	if (!sources || ca_idset_new(4096, &queued) < 0) {
		ca_log_error_errno(ENOMEM, "cache");
		goto out;
	}
	if (ca_store_open_private(dir, true, &cache) < 0)
		goto out;
	/* the cache keeps each URL's index and sidecar too, for --offline */
	io.cache_mode = CA_CACHE_DIR;
	io.cache_dir = dir;
	cafs_trusted_keys_apply(&tk, &io);
	for (size_t i = 0; i < n_sources; i++) {
		sources[i].name = argv[optind + i];
		if (open_kept(sources[i].name, &io, &sources[i].idx) < 0)
			goto out;
		k = ca_cache_fill_plan(cache, sources[i].idx, queued, &sources[i].plan, &st);
		if (k < 0) {
			ca_log_error_errno(k, "%s", sources[i].name);
			goto out;
		}
	}

	uint64_t t0 = now_ns();
	bool broken = false;
	cafs_progress_init(&prog, "fill", st.todo_bytes);
	for (size_t i = 0; i < n_sources && !*fo.cancel; i++) {
		/* a source whose stores cannot be opened fails alone; the rest still fill */
		k = fill_source(&sources[i], stores, n_stores, dir, &fo, &st);
		if (k < 0)
			broken = true;
	}
	cafs_progress_done(&prog);
	if (rep.reported > MAX_REPORTED)
		ca_log_error("%llu more chunks failed", (unsigned long long)(rep.reported - MAX_REPORTED));
	double secs = (double)(now_ns() - t0) / 1e9;
	char h1[32], h2[32], h3[32];
	cafs_format_size(st.fetched_bytes, h1, sizeof(h1));
	cafs_format_size(st.wire_bytes, h2, sizeof(h2));
	cafs_format_size(secs > 0 ? (uint64_t)((double)st.wire_bytes / secs) : 0, h3, sizeof(h3));
	if (verbosity >= 0)
		printf("fetched %llu chunks (%s, %s transferred, %s/s), %llu already cached, %llu failed\n",
		       (unsigned long long)st.fetched, h1, h2, h3, (unsigned long long)st.present,
		       (unsigned long long)st.failed);
	r = st.failed || broken ? 1 : 0;
out:
	for (size_t i = 0; sources && i < n_sources; i++) {
		ca_cache_fill_plan_free(sources[i].plan);
		ca_index_free(sources[i].idx);
	}
	free(sources);
	ca_idset_free(queued);
	ca_store_free(cache);
	free(dir);
	free(stores);
	cafs_trusted_keys_release(&tk);
	return interrupts ? cafs_interrupt_exit_code(r) : r;
}
