/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cache_seed.c - `cafs cache seed`: take chunks from local data instead of
 * downloading them. The seeding is one core call (image/image_seed.h),
 * which `cafs extract --seed` uses too; here are the options and the
 * summary.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cache.h"
#include "cmd.h"
#include "image/image_seed.h"

int cafs_cache_seed(const struct cafs_cache_request *q)
{
	struct ca_image_seed_stats st;
	int r = 1;
	char *dir = cafs_cache_dir(q->cache);
	if (!dir)
		return 1;
	int k = ca_image_seed_cache_at(dir, q->operands[0], q->operands + 1, q->n_operands - 1, q->seed_store,
	                               &st); /* logs its errors */
	if (!st.seeded)
		goto out;
	if (q->base.verbosity >= 0) {
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
