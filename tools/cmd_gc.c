/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_gc.c - `cafs gc [--store DIR] [--dry-run] INDEX...`: remove every
 * chunk of the store that none of the indexes references, as casync gc
 * does: only <prefix>/<id>.cacnk files are considered, and emptied prefix
 * directories are removed. The collection is core's (store_gc.h); here
 * are the options, the indexes and the messages.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "cmd.h"
#include "base/digest.h"
#include "format/idset.h"
#include "format/index.h"
#include "base/log.h"
#include "net/s3.h"
#include "store/store.h"
#include "store/store_gc.h"

static void gc_report(void *userdata, const char *rel, int err)
{
	bool dry_run = *(const bool *)userdata;
	if (err < 0)
		ca_log_error_errno(err, "%s", rel);
	else if (dry_run)
		printf("would remove %s\n", rel);
}

/* what `cafs gc` is asked to do */
struct gc_request {
	struct cafs_request base;
	const char *store; /* -s; NULL: beside the first index */
	bool dry_run;
	char **indexes;
	int n_indexes;
};

static int gc_set(struct cafs_request *q, int id, const char *arg)
{
	struct gc_request *g = (struct gc_request *)q;
	if (id == CAFS_OPT_STORE)
		g->store = arg;
	else if (id == CAFS_OPT_DRY_RUN)
		g->dry_run = true;
	return 0;
}

static int gc_operands(struct cafs_request *q, int n, char **arg)
{
	struct gc_request *g = (struct gc_request *)q;
	/* casync refuses an empty list too: it would delete the whole store */
	if (n == 0)
		return cafs_usage_error("gc", "expected at least one INDEX");
	g->indexes = arg;
	g->n_indexes = n;
	return 0;
}

static int gc_run(struct cafs_request *q)
{
	const struct gc_request *g = (const struct gc_request *)q;
	const char *store = g->store;
	char *def = NULL;
	struct ca_idset *keep = NULL;
	struct ca_store *st = NULL;
	struct ca_store_gc_stats gs;
	bool dry_run = g->dry_run;
	int verbosity = q->verbosity, r = 1;
	if (!store) {
		if (ca_location_is_remote(g->indexes[0]))
			return cafs_usage_error("gc", "the store of a URL index must be given with --store");
		def = ca_location_default_store(g->indexes[0]);
		if (!def)
			return ca_log_error_errno(ENOMEM, "gc"), 1;
		store = def;
	}
	bool s3 = ca_s3_is_url(store);
	if (ca_location_is_remote(store) && !s3) {
		r = cafs_usage_error("gc", "%s: only local stores and S3 buckets can be collected", store);
		free(def);
		return r;
	}
	if (!s3)
		store = ca_location_path(store);
	if (ca_idset_new(4096, &keep) < 0) {
		ca_log_error_errno(ENOMEM, "gc");
		goto out;
	}
	for (int i = 0; i < g->n_indexes; i++) {
		struct ca_index *idx;
		/* every index must load: a missing one would get its chunks deleted */
		if (ca_source_open_index(g->indexes[i], NULL, &idx) < 0)
			goto out;
		int k = ca_idset_add_index(keep, idx);
		ca_index_free(idx);
		if (k < 0) {
			ca_log_error_errno(k, "%s", g->indexes[i]);
			goto out;
		}
	}
	struct ca_store_gc_opts o = { .keep = keep, .dry_run = dry_run, .on_chunk = gc_report, .userdata = &dry_run };
	int k;
	if (s3) {
		struct ca_http_opts ho;
		ca_source_http_opts(&ho);
		if (ca_s3_gc(store, &ho, &o, &gs) < 0) /* logs its errors */
			goto out;
	} else {
		k = ca_store_open(store, &st);
		if (k == 0)
			k = ca_store_gc(st, &o, &gs);
		if (k < 0) {
			ca_log_error_errno(k, "%s", store);
			goto out;
		}
	}
	if (verbosity > 0 || dry_run) {
		char h[32];
		cafs_format_size(gs.removed_bytes, h, sizeof(h));
		fprintf(dry_run ? stdout : stderr, "%s %llu chunks (%s) and %llu directories, kept %llu chunks\n",
		        dry_run ? "would remove" : "removed", (unsigned long long)gs.removed, h,
		        (unsigned long long)gs.dirs, (unsigned long long)gs.kept);
	}
	r = gs.failed ? 1 : 0;
out:
	ca_store_free(st);
	ca_idset_free(keep);
	free(def);
	return r;
}

static const struct cafs_option gc_options[] = {
	{ "store", 's', "DIR|S3URL", CAFS_OPT_STORE,
	  .help = "the store, a directory or an S3 bucket (default: default.castr beside the\n"
	  "first INDEX; required when that INDEX is a URL)" },
	{ "dry-run", 'n', NULL, CAFS_OPT_DRY_RUN,
	  .help = "only list what would be removed" },
	{ NULL },
};

const struct cafs_command cafs_command_gc = {
	.name = "gc",
	.synopsis = "gc [OPTIONS] INDEX...",
	.options = gc_options,
	.help_column = 26,
	.help_tail = "Removes every chunk none of the INDEXes references, as casync gc does.\n",
	.request_size = sizeof(struct gc_request),
	.set = gc_set,
	.operands = gc_operands,
	.run = gc_run,
};

