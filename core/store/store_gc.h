/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * store_gc.h - garbage collection of a store, as casync gc does it: remove
 * every <prefix>/<id>.cacnk that no kept index references (bare chunks and
 * temporary files are left alone), then the prefix directories that were
 * emptied. Runs in the calling thread.
 *
 * The keep set must hold every chunk of every index that uses the store:
 * what it lacks is deleted. A chunk written meanwhile by a concurrent make
 * can be lost, as with casync; run gc when nothing writes the store.
 */
#ifndef CA_STORE_GC_H
#define CA_STORE_GC_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct ca_store;
struct ca_idset;

struct ca_store_gc_opts {
	const struct ca_idset *keep; /* ids to keep (values ignored); borrowed, not NULL */
	bool dry_run;                /* remove nothing, only report */
	/* Called for each chunk that is not kept: rel is "<prefix>/<id>.cacnk";
	 * err is 0 when it was removed (would be, in a dry run), or the
	 * negative errno of a failed removal. May be NULL. */
	void (*on_chunk)(void *userdata, const char *rel, int err);
	void *userdata;
	/* optional: once set, no further chunk is removed; -ECANCELED */
	const volatile sig_atomic_t *cancel;
};

struct ca_store_gc_stats {
	uint64_t kept;                   /* chunks referenced by the keep set */
	uint64_t removed, removed_bytes; /* chunks removed (or to be, in a dry run) */
	uint64_t failed;                 /* chunks that could not be removed */
	uint64_t dirs;                   /* emptied prefix directories removed */
};

/* *ret_stats is set whenever the walk succeeded. Returns 0 (failed removals
 * are counted, not returned), or a negative errno if the store could not be
 * read or memory ran out. */
int ca_store_gc(struct ca_store *s, const struct ca_store_gc_opts *opts, struct ca_store_gc_stats *ret_stats);

#endif
