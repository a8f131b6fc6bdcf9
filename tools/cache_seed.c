/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cache_seed.c - `cafs cache seed`: take chunks from local data instead of
 * downloading them. The seeding is one core call (image/image_seed.h),
 * which `cafs extract --seed` uses too; here are the options and the
 * summary.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache.h"
#include "cmd.h"
#include "image/image_seed.h"

enum { OPT_CACHE = 0x100, OPT_SEED_STORE };

int cafs_cache_seed(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cache", required_argument, NULL, OPT_CACHE },
		{ "seed-store", required_argument, NULL, OPT_SEED_STORE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *cache_opt = NULL, *seed_store = NULL;
	int c, verbosity = 0, r = 1;
	while ((c = getopt_long(argc, argv, "vqh", opts, NULL)) >= 0) {
		switch (c) {
		case OPT_CACHE:
			cache_opt = optarg;
			break;
		case OPT_SEED_STORE:
			seed_store = optarg;
			break;
		default: {
			int e = cafs_common_option(&cafs_command_cache, c, &verbosity);
			if (e >= 0)
				return e;
			break;
		}
		}
	}
	cafs_set_verbosity(verbosity);
	if (argc - optind < 2)
		return cafs_usage_error("cache", "seed needs SOURCE and at least one SEED");

	struct ca_image_seed_stats st;
	char *dir = cafs_cache_dir(cache_opt);
	if (!dir)
		return 1;
	int k = ca_image_seed_cache_at(dir, argv[optind], argv + optind + 1, (size_t)(argc - optind - 1), seed_store,
	                               &st); /* logs its errors */
	if (!st.seeded)
		goto out;
	if (verbosity >= 0) {
		char h1[32], h2[32];
		cafs_format_size(st.bytes, h1, sizeof(h1));
		cafs_format_size(st.seed_bytes, h2, sizeof(h2));
		printf("seeded %llu chunks (%s) from %s of seed data\n", (unsigned long long)st.chunks, h1, h2);
	}
	r = k < 0 ? 1 : 0;
out:
	free(dir);
	return r;
}

