/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * delta_source.h - a delta pack (delta.h) as a chunk source backend
 * (chunksrc.h), for an image read a chunk at a time (the mount): a chunk
 * the chain must fetch that the pack encodes, and whose FROM references
 * the chunk cache holds, is rebuilt from the pack (one range request for
 * its entry), verified against its id and handed to the chain, which
 * serves and caches it like a fetched one. Anything else (no entry, a
 * reference the cache lacks, a bad pack) is -ENOENT: the stores after it
 * in the chain serve it.
 *
 *   open (source.c, the image's open) -> a thread of its own fetches the
 *   pack's header and table (ca_delta_client_load); until it is done every
 *   fetch is -ENOENT at once (nothing waits for the pack: a 404, a slow
 *   or missing server never delays a read); a 404 or an unusable pack is
 *   remembered for the source's life ("no pack"); a bad pack is said in
 *   exactly one warning and used no further.
 *   bulk (a mount's --fill): the thread then rebuilds every entry the
 *   cache lacks at once into the cache (ca_delta_client_run: neighbours
 *   merged into a few ranges, as cache fill); a fetch of a chunk the pack
 *   has waits for it to reach the cache, 3 s at most: then the pack is
 *   slow, and this and later fetches go to the stores.
 *
 * A stop (the unmount) ends the loader's fill between two ranges or
 * chunks and cancels its range request, so that free's join is prompt.
 *
 * has() says 1 for a chunk the pack has, so that a chunk source's
 * prefetch (read-ahead) does not download what the pack will build.
 * Memory: the pack's table (delta.h), a chunk and its references per
 * fetch in flight. The backend owns its own handle on the cache
 * directory, for the references; free joins the thread.
 */
#ifndef CA_IMAGE_DELTA_SOURCE_H
#define CA_IMAGE_DELTA_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "format/index.h"
#include "net/http.h"
#include "net/storeconf.h"
#include "store/chunksrc.h"

struct ca_delta_source_opts {
	const char *location;       /* the pack: a path or an http(s) URL */
	const uint8_t *from_digest; /* FROM's index file's SHA-256, when known (the kept index); NULL: unknown */
	bool quiet_missing;         /* found by name: a 404 is silent */
	bool none_if_from;          /* no pack when TO's index is FROM's (from_digest): told by the loader */
	bool bulk;                  /* rebuild everything at once (--fill) */
	const struct ca_http_opts *http; /* copied; NULL: source.h's defaults */
	const char *cache_dir;      /* the chunk cache: where references are read */
	const struct ca_storeconf *conf; /* the settings file as read already (NULL: read it) */
};

extern const struct ca_chunk_backend_ops ca_delta_source_ops;

/* What the pack did for the mount (its stats and metrics): chunks rebuilt
 * from it (by a fill's run or a chunk at a time) and their uncompressed
 * bytes, the requests made for it and the bytes they read, and its state:
 * "loading" (its table), "filling" (--fill's run), "ready", "none" (no
 * pack: 404) or "unusable" (bad, unreadable, or proved bad since). */
struct ca_delta_source_stats {
	uint64_t chunks, bytes, requests, wire_bytes;
	const char *state; /* static */
};
void ca_delta_source_get_stats(void *be, struct ca_delta_source_stats *ret);
/* The mount is stopping: the loader's run and range request end now
 * (delta.h's ca_delta_client_stop); every later fetch is -ENOENT. */
void ca_delta_source_stop(void *be);

/* A backend (for ca_chunksrc_add_backend_first) for the index to, which
 * must outlive it; its thread started. Errors: -ENOMEM, or the cache's
 * (logged). */
int ca_delta_source_new(const struct ca_delta_source_opts *o, const struct ca_index *to, void **ret);

#endif
