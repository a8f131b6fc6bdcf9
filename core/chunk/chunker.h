/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * chunker.h - casync's content-defined chunker (buzhash over a 48-byte
 * window), cut for cut identical to casync for the same min/avg/max.
 *
 * The chunker is a pure streaming state machine: feed it bytes in any split
 * and it reports the same cut points. It holds no memory of the data beyond
 * the 48-byte window, so the caller owns buffering. Not thread-safe; use one
 * per stream.
 */
#ifndef CA_CHUNKER_H
#define CA_CHUNKER_H

#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

struct ca_chunker {
	uint64_t min, avg, max;
	uint64_t discriminator;
	uint64_t fastmod_m;      /* floor((2^64-1)/discriminator)+1, for the divisibility test */
	uint64_t first_test;     /* max(min, window size): first length a cut may be hashed at */
	uint64_t chunk_size;     /* bytes in the chunk being built */
	uint32_t h;
	uint8_t window[CA_CHUNKER_WINDOW_SIZE]; /* the 48 bytes before the scan position, oldest first */
};

#define CA_CHUNKER_NO_CUT ((size_t)-1)

/* Set up for min/avg/max. Returns 0, or -EINVAL when the sizes break casync's
 * rules (1 <= min <= avg <= max <= 128 MiB, and max >= 48 unless min == avg == max). */
int ca_chunker_init(struct ca_chunker *c, uint64_t min, uint64_t avg, uint64_t max);

/* The discriminator casync derives from avg, clamped to [min, max]. */
uint64_t ca_chunker_discriminator(uint64_t min, uint64_t avg, uint64_t max);

/* Scan n bytes. If a chunk ends inside them, returns how many bytes of p
 * belong to that chunk (1..n) and resets for the next chunk; the caller
 * calls again with the rest. Otherwise consumes all n and returns
 * CA_CHUNKER_NO_CUT. At end of stream, whatever is pending is the last chunk. */
size_t ca_chunker_scan(struct ca_chunker *c, const void *p, size_t n);

/* Bytes in the chunk currently being built. */
static inline uint64_t ca_chunker_pending(const struct ca_chunker *c) { return c->chunk_size; }

/* The buzhash of one full 48-byte window (w[0] oldest); for tests. */
uint32_t ca_buzhash(const uint8_t w[CA_CHUNKER_WINDOW_SIZE]);

/* Parse "AVG" or "MIN:AVG:MAX" as casync does (sizes may carry K, M or G,
 * powers of 1024; "auto" means the defaults). AVG alone gives min = avg/4
 * (at least 1) and max = avg*4 (at most 128 MiB). Returns 0 or -EINVAL.
 * The result is validated as ca_chunker_init would. */
int ca_chunk_size_parse(const char *s, uint64_t *ret_min, uint64_t *ret_avg, uint64_t *ret_max);

#endif
