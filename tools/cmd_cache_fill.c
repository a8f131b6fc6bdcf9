/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_cache_fill.c - `cafs cache fill`: download every chunk the given
 * indexes need that the cache lacks, so extract and the mount then work
 * offline. The work is one core call (image/store_ops.h); here are the
 * options, the progress bar and the summary.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "cmd.h"
#include "image/store_ops.h"
#include "interrupt.h"
#include "base/log.h"
#include "progress.h"

enum { OPT_CACHE = 0x300, OPT_STORE, OPT_RATE }; /* above cmd.h's CAFS_OPT_* */

static void progress_start(void *userdata, uint64_t total)
{
	cafs_progress_init(userdata, "fill", total);
}

static void progress_end(void *userdata)
{
	cafs_progress_done(userdata);
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
	size_t n_stores = 0;
	struct cafs_progress prog;
	struct ca_store_ops_fill_opts fo = {
		.progress_start = progress_start, .progress = cafs_progress_update, .progress_end = progress_end,
		.progress_userdata = &prog,
	};
	struct ca_store_ops_fill_stats fs;
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
	fo.cache = dir;
	fo.sources = argv + optind;
	fo.n_sources = (size_t)(argc - optind);
	fo.stores = stores;
	fo.n_stores = n_stores;
	cafs_trusted_keys_apply(&tk, &io);
	fo.io = &io;
	if (ca_store_ops_fill(&fo, &fs) < 0) /* logs its errors */
		goto out;
	const struct ca_cache_fill_stats st = fs.fill;
	double secs = (double)fs.fetch_ns / 1e9;
	char h1[32], h2[32], h3[32];
	cafs_format_size(st.fetched_bytes, h1, sizeof(h1));
	cafs_format_size(st.wire_bytes, h2, sizeof(h2));
	cafs_format_size(secs > 0 ? (uint64_t)((double)st.wire_bytes / secs) : 0, h3, sizeof(h3));
	if (verbosity >= 0)
		printf("fetched %llu chunks (%s, %s transferred, %s/s), %llu already cached, %llu failed\n",
		       (unsigned long long)st.fetched, h1, h2, h3, (unsigned long long)st.present,
		       (unsigned long long)st.failed);
	r = st.failed || fs.broken ? 1 : 0;
out:
	free(dir);
	free(stores);
	cafs_trusted_keys_release(&tk);
	return interrupts ? cafs_interrupt_exit_code(r) : r;
}
