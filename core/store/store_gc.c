/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* store_gc.c - remove the chunks no kept index references, then emptied prefix directories. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/idset.h"
#include "store/crypt.h"
#include "store/store.h"
#include "store/store_gc.h"

struct gc {
	const struct ca_store_gc_opts *opts;
	struct ca_store_gc_stats stats;
	uint8_t touched[0x10000 / 8]; /* prefix directories that lost chunks: try rmdir after the walk */
};

static int gc_one(const struct ca_store_entry *e, void *userdata)
{
	struct gc *g = userdata;
	const struct ca_store_gc_opts *o = g->opts;
	char rel[CA_CRYPT_CHUNK_REL_MAX + 1];
	int r = 0;
	if (o->cancel && *o->cancel)
		return -ECANCELED;
	if (e->kind != CA_STORE_CHUNK)
		return 0;
	if (ca_idset_get(o->keep, e->id, NULL)) {
		g->stats.kept++;
		return 0;
	}
	/* the file's own name: an encrypted store's has its key's suffix */
	snprintf(rel, sizeof(rel), "%.4s/%s", e->name, e->name);
	if (!o->dry_run && unlinkat(e->dirfd, e->name, 0) < 0 && errno != ENOENT)
		r = -errno;
	if (o->on_chunk)
		o->on_chunk(o->userdata, rel, r);
	if (r < 0) {
		g->stats.failed++;
		return 0;
	}
	unsigned p = (unsigned)strtoul((char[5]){ e->name[0], e->name[1], e->name[2], e->name[3], 0 }, NULL, 16);
	g->touched[p / 8] |= (uint8_t)(1u << (p % 8));
	g->stats.removed++;
	g->stats.removed_bytes += (uint64_t)e->st.st_size;
	return 0;
}

/* rmdir fails on a directory that still holds anything: exactly what we want */
static uint64_t remove_empty_dirs(struct ca_store *s, const struct gc *g)
{
	char path[PATH_MAX];
	uint64_t n = 0;
	for (unsigned p = 0; p < 0x10000; p++) {
		if (!(g->touched[p / 8] & (1u << (p % 8))))
			continue;
		if (snprintf(path, sizeof(path), "%s/%04x", ca_store_path(s), p) >= (int)sizeof(path))
			break;
		if (rmdir(path) == 0)
			n++;
	}
	return n;
}

int ca_store_gc(struct ca_store *s, const struct ca_store_gc_opts *opts, struct ca_store_gc_stats *ret_stats)
{
	struct gc *g = calloc(1, sizeof(*g)); /* 8 KiB bitmap: off the stack */
	int r;
	if (!g)
		return -ENOMEM;
	g->opts = opts;
	r = ca_store_walk(s, gc_one, g);
	if (r < 0)
		goto out;
	if (!opts->dry_run && g->stats.removed > 0)
		g->stats.dirs = remove_empty_dirs(s, g);
	*ret_stats = g->stats;
out:
	free(g);
	return r;
}
