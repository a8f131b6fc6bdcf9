/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_cache_fill.c - `cafs cache fill`: download every chunk the given
 * indexes need that the cache lacks, so extract and the mount then work
 * offline. The work is one core call (image/store_ops.h); here are the
 * options, the progress bar and the summary.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "cmd.h"
#include "image/source.h"
#include "image/store_ops.h"
#include "interrupt.h"
#include "base/log.h"
#include "progress.h"

static void progress_start(void *userdata, uint64_t total)
{
	cafs_progress_init(userdata, "fill", total);
}

static void progress_end(void *userdata)
{
	cafs_progress_done(userdata);
}

int cafs_cache_fill(const struct cafs_cache_request *q)
{
	char *dir = NULL;
	struct cafs_progress prog;
	struct ca_store_ops_fill_opts fo = {
		.progress_start = progress_start, .progress = cafs_progress_update, .progress_end = progress_end,
		.progress_userdata = &prog, .threads = q->threads, .rate_limit_bps = q->rate_limit_bps,
	};
	struct ca_store_ops_fill_stats fs;
	bool interrupts = false;
	struct ca_image_opts io = { 0 };
	int r = 1, k;

	/* before any thread exists (the index download, the chunk sources'):
	 * a signal then stops the workers between chunks */
	k = cafs_interrupt_start();
	if (k < 0) {
		ca_log_error_errno(k, "signals");
		goto out;
	}
	interrupts = true;
	fo.cancel = cafs_interrupt_flag();
	dir = cafs_cache_dir(q->cache);
	if (!dir)
		goto out;
	fo.cache = dir;
	fo.sources = q->operands;
	fo.n_sources = q->n_operands;
	fo.stores = q->stores;
	fo.delta = q->delta;
	fo.n_stores = q->n_stores;
	cafs_trusted_keys_apply(&q->trusted, &io);
	fo.io = &io;
	if (ca_store_ops_fill(&fo, &fs) < 0) /* logs its errors */
		goto out;
	const struct ca_cache_fill_stats st = fs.fill;
	double secs = (double)fs.fetch_ns / 1e9;
	char h1[32], h2[32], h3[32];
	cafs_format_size(st.fetched_bytes, h1, sizeof(h1));
	cafs_format_size(st.wire_bytes, h2, sizeof(h2));
	cafs_format_size(secs > 0 ? (uint64_t)((double)st.wire_bytes / secs) : 0, h3, sizeof(h3));
	if (q->base.verbosity >= 0)
		printf("fetched %llu chunks (%s, %s transferred, %s/s), %llu already cached, %llu failed\n",
		       (unsigned long long)st.fetched, h1, h2, h3, (unsigned long long)st.present,
		       (unsigned long long)st.failed);
	if (q->base.verbosity >= 0 && fs.delta_chunks)
		printf("delta pack gave %llu chunks in %llu requests (%llu bytes)\n", (unsigned long long)fs.delta_chunks,
		       (unsigned long long)fs.delta_requests, (unsigned long long)fs.delta_wire_bytes);
	r = st.failed || fs.broken ? 1 : 0;
out:
	free(dir);
	return interrupts ? cafs_interrupt_exit_code(r) : r;
}
