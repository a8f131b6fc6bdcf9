/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * image_seed.h - take chunks from local data instead of downloading them,
 * and `cafs extract` as one call: open the image, give its chunk source
 * the --cache and the chunks the --seed data yields, extract, then link
 * or clone what the seed trees have identically.
 *
 * A seed is chunked with the target index's own chunk sizes and digest (a
 * directory is first encoded as an archive with the target's feature
 * flags), so any region it shares with the target yields the very same
 * chunk ids; the chunks the target needs are compressed into the cache. An
 * index seed with the same chunking needs no re-chunking: its chunks are
 * copied from its store (verified on the way).
 *
 * Errors: 0 or a negative errno, logged as one line "cafs: <what>: <why>".
 * Runs in the calling thread (extract also in threads of its own, joined
 * before return).
 */
#ifndef CA_IMAGE_SEED_H
#define CA_IMAGE_SEED_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catar/uidshift.h"
#include "image/image_extract.h"

struct ca_index;
struct ca_store;
struct ca_reflink;
struct ca_image_opts;

struct ca_image_seed_stats {
	uint64_t seed_bytes;    /* bytes of seed data chunked */
	uint64_t chunks, bytes; /* chunks (and their uncompressed bytes) put into the cache */
	bool seeded;            /* ca_image_seed_cache_at: the cache and the index opened, seeding ran */
};

/* Put into cache every chunk idx needs that the seeds yield and the cache
 * lacks. A seed is a blob file, a block device or a .catar (chunked with
 * idx's sizes and digest), or a .caibx/.caidx whose chunks are copied from
 * seed_store (default: default.castr beside it) when its chunking matches
 * idx's, and otherwise read back and re-chunked; or, for an archive index,
 * a directory (encoded as a .catar with idx's feature flags). reflink (may
 * be NULL): also note where in seed files the chunks are. -EIO when a seed
 * failed (logged; the others were used). */
int ca_image_seed_cache(struct ca_store *cache, const struct ca_index *idx, char **seeds, size_t n_seeds,
                        const char *seed_store, struct ca_reflink *reflink, struct ca_image_seed_stats *ret_stats);

/* The same, with more chunks wanted beside idx's: extra's ids (value:
 * their size; may be NULL), e.g. the FROM chunks a delta pack refers to. */
struct ca_idset;
int ca_image_seed_cache_extra(struct ca_store *cache, const struct ca_index *idx, const struct ca_idset *extra,
                              char **seeds, size_t n_seeds, const char *seed_store, struct ca_reflink *reflink,
                              struct ca_image_seed_stats *ret_stats);

/* `cafs cache seed`: the cache at dir (made if missing; refused first,
 * before anything is fetched), the index of source, seeded as above.
 * ret_stats->seeded says whether seeding ran (its counts then hold, also
 * when a seed failed). */
int ca_image_seed_cache_at(const char *dir, const char *source, char **seeds, size_t n_seeds, const char *seed_store,
                           struct ca_image_seed_stats *ret_stats);

struct ca_image_seed_extract_opts {
	const char *path;        /* an archive's directory to extract instead of the root; NULL: all */
	/* stores, trusted keys and policy (source.h); NULL: none. The cache,
	 * offline, HTTP and reading settings are set from the members below. */
	const struct ca_image_opts *io;
	unsigned threads;
	char **seeds;            /* local data to take chunks from */
	size_t n_seeds;
	const char *cache;       /* keep fetched chunks (and a URL's index) in this store */
	/* a delta pack (delta.h) to build chunks from the seeds' (path or
	 * URL); NULL: the one named for an index given as a seed, else for
	 * the index the cache kept for IN (a URL) before, if any */
	const char *delta;
	bool offline;            /* only the cache (and the index kept there by URL) */
	uint64_t rate_limit_bps; /* per HTTP transfer; 0: none */
	bool no_delete, overlay_xattrs, undo_immutable, no_holes; /* image_extract.h */
	struct ca_uid_shift uid_shift;
	bool no_reflink;         /* casync's --reflink=no: copy, never clone from seeds */
	bool hardlink;           /* archives: hard-link files the seed trees have identically */
	const volatile sig_atomic_t *cancel;
	void (*progress_start)(void *userdata, uint64_t total);
	void (*progress)(void *userdata, uint64_t bytes);
	void (*progress_end)(void *userdata);
	void *progress_userdata;
};

/* Extract the image at in (kind by suffix) to out as `casync extract`
 * does, with o's seeds and cache. A bad destination is refused before any
 * download or seeding. -EBUSY: interrupted while a fetch still uses the
 * image, which is then left allocated for the process's exit to free. */
int ca_image_seed_extract(const char *in, const char *out, const struct ca_image_seed_extract_opts *o);

#endif
