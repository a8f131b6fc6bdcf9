/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * make_cache.h - incremental make (`cafs make --cache DIR`): what a make
 * of an index learned, kept so that the next make of the same input
 * neither reads, hashes nor compresses what did not change, and still
 * writes the same index and store, byte for byte, as a make without it.
 *
 * Why it is exact: the chunker's cuts after a cut depend only on the
 * bytes after that cut (the hash window is refilled from the chunk's own
 * bytes, the minimum skip and the maximum count from the cut; chunker.c).
 * So when the new stream sits at a cut that maps to a chunk boundary of
 * the old stream, and the old chunk that follows lies wholly in bytes
 * proven equal (same relative layout), that old chunk is the new chunk:
 * its id is given (ca_maker_feed_known) after checking the store has it.
 * Anywhere else the chunker runs on the real bytes, which resyncs with
 * the old cuts a few chunks after a change. The last chunk of the old
 * stream (cut by its end, not by its content) is never taken.
 *
 * What is proven equal: the stream is cut in items, alternately the
 * bytes between two file payloads ("gaps": the catar's metadata,
 * compared by SHA-256) and the payload of a regular file (compared by
 * its identity: st_dev, st_ino, size, mtime and ctime in ns; a file whose
 * mtime or ctime lay within 2 s of the make that recorded it is never
 * trusted, since a change in the same timestamp tick would not show). A
 * blob is one payload. A trusted payload is not read unless a chunk
 * around it must be recomputed (then only those bytes, by pread).
 *
 * The cache: DIR (made 0700; must be owned by the user and not open to
 * others, as a chunk cache, store.h; the directory checked when the make
 * begins is the one written at its end, by its descriptor, whatever its
 * name leads to by then) holds one file per input (named
 * after the input's real path and the index kind), written atomically,
 * at most CA_MAKE_CACHE_MAX_FILE bytes (a cap on records and chunks),
 * and at most CA_MAKE_CACHE_MAX_ENTRIES files (the oldest is removed). A
 * file that is corrupt, truncated, of another version, or made with other
 * chunk sizes or feature flags is ignored with one warning and replaced
 * after the make. Not for a .catar (made in full), nor for stdin or a
 * block device (no identity to trust).
 *
 * The stream digest: known when the stream is proven equal to the
 * recorded one (then the recorded digest), or when no chunk was taken;
 * otherwise not computed (ret_digest_known false): `cafs digest OUT`
 * gives it.
 *
 * A file changing while make runs can make the archive inconsistent, as
 * without the cache; a payload that shrank is -EIO.
 */
#ifndef CA_MAKE_CACHE_H
#define CA_MAKE_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "format/format.h"
#include "store/make.h"

#define CA_MAKE_CACHE_MAX_FILE ((uint64_t)1 << 30)
#define CA_MAKE_CACHE_MAX_ENTRIES 32

struct ca_make_cache;

/* What the cache is keyed and checked by. */
struct ca_make_cache_key {
	const char *input; /* the input's path, resolved with realpath */
	char kind;         /* 'b' blob index, 'a' archive index */
	uint64_t feature_flags, chunk_min, chunk_avg, chunk_max;
};

/* Open DIR (made if missing) and load the record of this input, if any.
 * An untrusted directory or record is warned about once and not used
 * (*ret is then a cache that remembers nothing and writes nothing back
 * when the directory itself is untrusted). 0 or -ENOMEM. */
int ca_make_cache_open(const char *dir, const struct ca_make_cache_key *k, struct ca_make_cache **ret);
void ca_make_cache_free(struct ca_make_cache *c);

/* Bind a make to the cache: bytes go to m through the cache, which
 * records the new stream as it goes. */
int ca_make_cache_begin(struct ca_make_cache *c, struct ca_maker *m);
/* The catar encoder's write callback (catar_enc.h) */
int ca_make_cache_write(void *cache, const void *p, size_t n);
/* The catar encoder's payload callback: 1 taken (not read now), 0 read
 * it (its bytes come through write), or a negative errno. */
int ca_make_cache_payload(void *cache, int fd, const struct stat *st);
/* A blob not taken (its payload call said 0) that the caller fed to the
 * pipeline itself, n bytes in all, rather than through write: nothing of
 * it could be taken, and the cache's own chunker need not see it. Call
 * after ca_maker_finish, before ca_make_cache_digest. */
void ca_make_cache_fed_directly(struct ca_make_cache *c, uint64_t n);
/* After the last byte, before ca_maker_finish. */
int ca_make_cache_end(struct ca_make_cache *c);
/* After ca_maker_finish: the digest to report (*digest_known false: none),
 * and the bytes of files read. */
void ca_make_cache_digest(struct ca_make_cache *c, const struct ca_make_stats *st, uint8_t digest[CA_CHUNK_ID_SIZE],
                          bool *digest_known, uint64_t *file_bytes_read);
/* After the index is committed at index_path: record this make (logs a
 * warning on failure, which does not fail the make). */
void ca_make_cache_save(struct ca_make_cache *c, const char *index_path, const uint8_t digest[CA_CHUNK_ID_SIZE],
                        bool digest_known);

#endif
