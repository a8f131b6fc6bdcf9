/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_gc.c - `cafs gc [--store DIR] [--dry-run] INDEX...`: remove every
 * chunk of the store that none of the indexes references, as casync gc
 * does: only <prefix>/<id>.cacnk files are considered, and emptied prefix
 * directories are removed.
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
#include "digest.h"
#include "idset.h"
#include "index.h"
#include "log.h"
#include "store.h"

struct gc_ctx {
	struct ca_idset *keep;
	bool dry_run;
	uint64_t kept, removed, removed_bytes, dirs, failed;
	uint8_t touched[0x10000 / 8]; /* prefix directories that lost chunks: try rmdir after the walk */
};

static int gc_one(const struct ca_store_entry *e, void *userdata)
{
	struct gc_ctx *g = userdata;
	const char *name = e->name;
	if (e->kind != CA_STORE_CHUNK)
		return 0;
	if (ca_idset_get(g->keep, e->id, NULL)) {
		g->kept++;
		return 0;
	}
	if (g->dry_run) {
		printf("would remove %.4s/%s\n", name, name);
	} else if (unlinkat(e->dirfd, name, 0) < 0 && errno != ENOENT) {
		ca_log_error_errno(errno, "%.4s/%s", name, name);
		g->failed++;
		return 0;
	}
	unsigned p = (unsigned)strtoul((char[5]){ name[0], name[1], name[2], name[3], 0 }, NULL, 16);
	g->touched[p / 8] |= (uint8_t)(1u << (p % 8));
	g->removed++;
	g->removed_bytes += (uint64_t)e->st.st_size;
	return 0;
}

static int gc_rmdir(const char *store, const struct gc_ctx *g)
{
	char path[4096];
	int n = 0;
	for (unsigned p = 0; p < 0x10000; p++) {
		if (!(g->touched[p / 8] & (1u << (p % 8))))
			continue;
		if (snprintf(path, sizeof(path), "%s/%04x", store, p) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		if (rmdir(path) == 0)
			n++;
	}
	return n;
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
	char *def = NULL;
	struct gc_ctx *g = NULL;
	bool dry_run = false;
	int c, verbosity = 0, r = 1;
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
	if (!store) {
		if (ca_location_is_remote(argv[optind]))
			return cafs_usage_error("gc", "the store of a URL index must be given with --store");
		def = ca_location_default_store(argv[optind]);
		if (!def)
			return ca_log_error_errno(ENOMEM, "gc"), 1;
		store = def;
	}
	if (ca_location_is_remote(store)) {
		r = cafs_usage_error("gc", "%s: only local stores can be collected", store);
		free(def);
		return r;
	}
	store = ca_location_path(store);
	g = calloc(1, sizeof(*g)); /* 8 KiB bitmap: off the stack */
	if (!g || ca_idset_new(4096, &g->keep) < 0) {
		ca_log_error_errno(ENOMEM, "gc");
		goto out;
	}
	g->dry_run = dry_run;
	for (int i = optind; i < argc; i++) {
		struct ca_index *idx;
		/* every index must load: a missing one would get its chunks deleted */
		if (ca_source_open_index(argv[i], NULL, &idx) < 0)
			goto out;
		int k = cafs_idset_add_index(g->keep, idx);
		ca_index_free(idx);
		if (k < 0) {
			ca_log_error_errno(k, "%s", argv[i]);
			goto out;
		}
	}
	struct ca_store *st = NULL;
	int k = ca_store_open(store, &st);
	if (k == 0)
		k = ca_store_walk(st, gc_one, g);
	ca_store_free(st);
	if (k < 0) {
		ca_log_error_errno(k, "%s", store);
		goto out;
	}
	if (!g->dry_run && g->removed > 0) {
		k = gc_rmdir(store, g);
		g->dirs = k > 0 ? (uint64_t)k : 0;
	}
	if (verbosity > 0 || g->dry_run) {
		char h[32];
		cafs_format_size(g->removed_bytes, h, sizeof(h));
		fprintf(g->dry_run ? stdout : stderr, "%s %llu chunks (%s) and %llu directories, kept %llu chunks\n",
		        g->dry_run ? "would remove" : "removed", (unsigned long long)g->removed, h,
		        (unsigned long long)g->dirs, (unsigned long long)g->kept);
	}
	r = g->failed ? 1 : 0;
out:
	if (g)
		ca_idset_free(g->keep);
	free(g);
	free(def);
	return r;
}
