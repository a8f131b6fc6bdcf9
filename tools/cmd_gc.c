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
#include <getopt.h>
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

int cafs_cmd_gc(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *store = NULL;
	bool dry_run = false;
	int c, verbosity = 0;
	while ((c = getopt_long(argc, argv, "s:nvqh", opts, NULL)) >= 0) {
		switch (c) {
		case 's':
			store = optarg;
			break;
		case 'n':
			dry_run = true;
			break;
		default: {
			int e = cafs_common_option("gc", c, &verbosity);
			if (e >= 0)
				return e;
			break;
		}
		}
	}
	cafs_set_verbosity(verbosity);
	/* casync refuses an empty list too: it would delete the whole store */
	if (optind == argc)
		return cafs_usage_error("gc", "expected at least one INDEX");
	char msg[256];
	if (ca_store_ops_gc_check(store, argv[optind], msg, sizeof(msg)) < 0)
		return cafs_usage_error("gc", "%s", msg);
	struct ca_store_ops_gc_opts o = { .store = store, .dry_run = dry_run, .on_remove = gc_removed,
		                          .userdata = &dry_run };
	struct ca_store_gc_stats gs;
	if (ca_store_ops_gc(argv + optind, (size_t)(argc - optind), &o, &gs) < 0) /* logs its errors */
		return 1;
	if (verbosity > 0 || dry_run) {
		char h[32];
		cafs_format_size(gs.removed_bytes, h, sizeof(h));
		fprintf(dry_run ? stdout : stderr, "%s %llu chunks (%s) and %llu directories, kept %llu chunks\n",
		        dry_run ? "would remove" : "removed", (unsigned long long)gs.removed, h,
		        (unsigned long long)gs.dirs, (unsigned long long)gs.kept);
	}
	return gs.failed ? 1 : 0;
}
