/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_gc.c - `cafs gc [--store DIR] [--dry-run] INDEX...`: remove every
 * chunk of the store that none of the indexes references, as casync gc
 * does: only <prefix>/<id>.cacnk files are considered, and emptied prefix
 * directories are removed. The collection is one core call
 * (image/store_ops.h); here are the options and the messages.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "cmd.h"
#include "image/store_ops.h"

static void gc_removed(void *userdata, const char *rel)
{
	if (*(const bool *)userdata) /* a dry run shows what would go */
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
	bool dry_run = g->dry_run;
	char msg[256];
	if (ca_store_ops_gc_check(g->store, g->indexes[0], msg, sizeof(msg)) < 0)
		return cafs_usage_error("gc", "%s", msg);
	struct ca_store_ops_gc_opts o = { .store = g->store, .dry_run = dry_run, .on_remove = gc_removed,
		                          .userdata = &dry_run };
	struct ca_store_gc_stats gs;
	if (ca_store_ops_gc(g->indexes, (size_t)g->n_indexes, &o, &gs) < 0) /* logs its errors */
		return 1;
	if (q->verbosity > 0 || dry_run) {
		char h[32];
		cafs_format_size(gs.removed_bytes, h, sizeof(h));
		fprintf(dry_run ? stdout : stderr, "%s %llu chunks (%s) and %llu directories, kept %llu chunks\n",
		        dry_run ? "would remove" : "removed", (unsigned long long)gs.removed, h,
		        (unsigned long long)gs.dirs, (unsigned long long)gs.kept);
	}
	return gs.failed ? 1 : 0;
}

static const struct cafs_option gc_options[] = {
	{ "store", 's', "DIR|S3URL|OCIURL", CAFS_OPT_STORE,
	  .help = "the store, a directory, an S3 bucket or a registry's\n"
	  "repository (default: default.castr beside the first INDEX;\n"
	  "required when that INDEX is a URL)" },
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

