/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * delta.h - static delta packs (format/delta_pack.h): make one for a
 * FROM/TO pair, tell what an update costs, and use one to build TO's
 * chunks from FROM's.
 *
 * Naming: a publisher keeps the pack for an update from FROM beside TO's
 * index as  TO.caidx.cadelta-<SHA-256 hex of FROM's index file>  (or
 * .caibx...), one per FROM it supports (the last N releases: N files).
 * casync never reads it. A client that knows FROM's index digest (an
 * index given as --seed; the index a cache keeps for the URL) asks for
 * that name beside TO's index; a 404 is silent.
 *
 * Using a pack (the client): the header and table come in one range
 * request (two when the table is over 256 KiB), the entries the store
 * lacks and whose references it holds are merged into at most
 * CA_DELTA_RANGES_MAX ranges (neighbours merged, the smallest gaps first;
 * a range over CA_DELTA_RANGE_MAX bytes is split), each chunk is rebuilt,
 * verified against its id, and put into the store; whatever the pack
 * lacks or could not rebuild is left for the chunk store. A pack for
 * another FROM or TO, truncated, corrupt or lying gives exactly one
 * warning and is used no further (its verified chunks stay: they are
 * right by their ids); never wrong data.
 *
 * Memory: the table (bounded by CA_DELTA_TABLE_MAX and by TO's chunk
 * count), one range (CA_DELTA_RANGE_MAX) and one chunk with its
 * references; a chunk at a time, 4 windows (1 MiB) and a chunk with its
 * references per build in flight. Errors: 0 or a negative errno, logged
 * as one line. Runs in the calling thread.
 */
#ifndef CA_IMAGE_DELTA_H
#define CA_IMAGE_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/delta_pack.h"
#include "format/idset.h"
#include "format/index.h"
#include "base/buf.h"
#include "net/http.h"
#include "net/storeconf.h"
#include "store/store.h"

struct ca_image_opts;

#define CA_DELTA_SUFFIX ".cadelta-"
#define CA_DELTA_RANGES_MAX 3               /* data ranges, beside the table's request */
#define CA_DELTA_RANGE_MAX ((size_t)64 << 20) /* bytes per range request */
#define CA_DELTA_FIRST_READ ((size_t)256 << 10)
#define CA_DELTA_WINDOW ((size_t)256 << 10) /* a chunk at a time: the data is read in windows of this */

/* ---- make ---- */

struct ca_delta_make_opts {
	const struct ca_image_opts *from_io, *to_io; /* stores etc. (source.h); NULL: defaults */
	int level;                                   /* zstd level of the pack's frames; 0: 19 */
};

struct ca_delta_make_stats {
	uint64_t to_chunks, new_chunks;      /* TO's distinct chunks, those FROM lacks */
	uint64_t new_bytes;                  /* their uncompressed bytes */
	uint64_t plain, prefix_shifted, prefix_same; /* which encoding won, per entry */
	uint64_t pack_bytes;                 /* the pack file's size */
};

/* `cafs delta make FROM TO PACK`: PACK written atomically. */
int ca_delta_make(const char *from, const char *to, const char *pack, const struct ca_delta_make_opts *o,
                  struct ca_delta_make_stats *ret);

/* ---- info: what an update costs ---- */

struct ca_delta_info {
	uint64_t image_size;                 /* TO's image bytes */
	uint64_t index_bytes;                /* TO's index file: every way of updating reads it first */
	uint64_t to_chunks, to_store_bytes;  /* TO's distinct chunks and their chunk files' bytes */
	uint64_t store_chunks, store_bytes;  /* the update by chunk store: TO's chunks FROM lacks */
	bool have_pack;
	bool pack_matches;                   /* made for this FROM and TO */
	uint64_t pack_requests, pack_bytes;  /* the update by the pack: table + ranges */
	uint64_t pack_missing;               /* chunks the pack lacks (then fetched from the store) */
	uint64_t pack_missing_bytes;
};

/* `cafs delta info FROM TO [PACK]` (pack may be NULL). Chunk files'
 * bytes are those in TO's stores where local, else what make writes. */
int ca_delta_info(const char *from, const char *to, const char *pack, const struct ca_image_opts *from_io,
                  const struct ca_image_opts *to_io, struct ca_delta_info *ret);

/* ---- use ---- */

struct ca_delta_client;

struct ca_delta_client_opts {
	const struct ca_http_opts *http; /* NULL: source.h's defaults */
	/* SHA-256 of FROM's index file when known: a pack for another FROM
	 * is refused (one warning). NULL: unknown; references are looked up
	 * by id in the store. */
	const uint8_t *from_digest; /* copied */
	bool quiet_missing; /* a pack found by name: 404 is silent */
	const struct ca_storeconf *conf; /* the settings file as read already (NULL: read it) */
};

/* Open the pack at location (a path or an http(s) URL) for building the
 * index to (whose file's bytes name it). *ret NULL when there is none or
 * it is unusable (said in one warning, or nothing for quiet_missing's
 * 404); errors only for ENOMEM. */
int ca_delta_client_open(const char *location, const struct ca_index *to, const struct ca_delta_client_opts *o,
                         struct ca_delta_client **ret);
/* The same in two steps, for a caller that reads the pack off its own
 * start-up path (delta_source.h): new does no I/O but open a local
 * path (*ret NULL when the location cannot be a pack, said); load reads
 * the header and table: 0, -ENOMEM, or another negative errno when the
 * pack is missing or unusable (said as open says it). A client whose
 * load failed is only freed. */
int ca_delta_client_new(const char *location, const struct ca_index *to, const struct ca_delta_client_opts *o,
                        struct ca_delta_client **ret);
int ca_delta_client_load(struct ca_delta_client *c);
/* SHA-256 of TO's index file, computed once (load uses it too); the
 * loading thread's, before or after load. */
int ca_delta_client_to_digest(struct ca_delta_client *c, uint8_t out[CA_DELTA_DIGEST_SIZE]);
void ca_delta_client_free(struct ca_delta_client *c); /* accepts NULL */
/* Add the FROM chunks the pack's entries refer to (value: size) to s,
 * for a seeder to put them into the store before ca_delta_client_run. */
int ca_delta_client_refs(const struct ca_delta_client *c, struct ca_idset *s);

struct ca_delta_client_stats {
	uint64_t chunks, bytes;      /* chunks rebuilt and stored, their uncompressed bytes */
	uint64_t requests, wire_bytes; /* range requests (the table's included) and bytes read */
	uint64_t left;               /* entries not used (no reference here, or the pack failed) */
};

/* Build into store every chunk of the pack it lacks (and whose
 * references it holds). 0 (also when the pack failed: said once, the
 * store then serves), or -ENOMEM/-ECANCELED (ca_delta_client_stop). */
int ca_delta_client_run(struct ca_delta_client *c, struct ca_store *store, struct ca_delta_client_stats *ret);

/* A chunk at a time (a mount: delta_source.h). Both are thread-safe and
 * never block on anything but the chunk's own range request. */
/* true if the pack has an entry for id (and has not proved bad). */
bool ca_delta_client_has(struct ca_delta_client *c, const uint8_t id[CA_CHUNK_ID_SIZE]);
/* Rebuild chunk id into out (emptied first; the chunk's bytes, verified
 * against id), its entry's bytes read by one range request and its
 * references from store. That request reads the windows of the data
 * section (CA_DELTA_WINDOW bytes at its multiples) the entry spans, and
 * the last 4 are kept for the entries in them: a reader in TO's order
 * needs one request per window, not one per chunk, and no byte twice.
 * -ENOENT: no entry, a reference store lacks, or the pack is bad (said
 * once for the client's life, then never used again, run included);
 * -ENOMEM. */
int ca_delta_client_build(struct ca_delta_client *c, struct ca_store *store, const uint8_t id[CA_CHUNK_ID_SIZE],
                          struct ca_buf *out);

/* Stop the client now, from any thread (a mount's unmount): a run ends
 * between ranges and chunks, the range request under way is cancelled,
 * and a later build or run is -ECANCELED; nothing is said. The client
 * is still freed by its owner. */
void ca_delta_client_stop(struct ca_delta_client *c);

/* The counters of the client's life (thread-safe): chunks rebuilt (run
 * and build), their uncompressed bytes, requests made for the pack (its
 * table's included) and the bytes read; broken: the pack proved bad. */
struct ca_delta_client_counts {
	uint64_t chunks, bytes, requests, wire_bytes;
	bool broken;
};
void ca_delta_client_get_counts(struct ca_delta_client *c, struct ca_delta_client_counts *ret);

/* The name beside index of a pack from the index whose file digest is
 * from_digest: index + ".cadelta-" + hex (location.h's beside rule, before
 * a URL's query). malloc'd; NULL: ENOMEM. */
char *ca_delta_pack_name(const char *index, const uint8_t from_digest[CA_DELTA_DIGEST_SIZE]);

/* SHA-256 of an index's file bytes. */
int ca_delta_index_digest(const struct ca_index *idx, uint8_t out[CA_DELTA_DIGEST_SIZE]);

#endif
