/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * make.h - the make pipeline: a byte stream in, chunks in a store and an
 * index out, plus the digest of the whole stream.
 *
 *   feed() ──► segments ──► chunker thread ──► worker pool ──► store
 *                 └──────► digest thread         (hash, compress, write)
 *                                                   └──► index, in order
 *
 * The caller pushes bytes with ca_maker_feed (a file reader, or the catar
 * encoder's output callback) and ends with ca_maker_finish. Feed blocks
 * when the pipeline holds its memory bound. One caller thread at a time.
 */
#ifndef CA_MAKE_H
#define CA_MAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include "chunk/compress.h"
#include "base/digest.h"
#include "format/format.h"

struct ca_crypt;

struct ca_store_writer;

struct ca_make_opts {
	uint64_t chunk_min, chunk_avg, chunk_max;
	uint64_t feature_flags;    /* written to the index header; its SHA512_256 bit picks the digest */
	const char *store_path;    /* NULL: no chunks are stored (digest/measure only) */
	const char *index_path;    /* NULL: no index is written */
	mode_t index_mode;
	unsigned threads;          /* workers; 0 = number of CPUs */
	/* called now and then from the feeding thread with bytes fed so far */
	void (*progress)(void *userdata, uint64_t bytes);
	void *progress_userdata;
	/* when non-NULL and it becomes non-zero (a signal handler sets it), every
	 * stage stops and feed/finish return -ECANCELED; a read(2) of the input
	 * interrupted by a signal (EINTR) looks at it too */
	const volatile sig_atomic_t *cancel;
	/* how new chunks are compressed (compress.h); NONE (0): zstd */
	enum ca_compression compression;
	/* where chunks go instead of a local store at store_path (borrowed;
	 * store_path then only names it in errors): store_writer.h */
	struct ca_store_writer *store_writer;
	/* a local store at store_path seals its chunks under this (borrowed;
	 * crypt.h), or NULL: plain */
	struct ca_crypt *store_crypt;
};

struct ca_make_stats {
	uint64_t bytes, chunks, chunks_new, bytes_stored;
	/* bytes and chunks given by id (ca_maker_feed_known): not read, hashed
	 * nor compressed */
	uint64_t bytes_known, chunks_known;
	/* some bytes came as known chunks: the stream digest was not computed
	 * (finish leaves ret_digest zeroed) */
	bool digest_partial;
	/* an incremental make (image/make_cache.h) only: bytes of files read */
	bool cached;
	uint64_t file_bytes_read;
};

struct ca_maker;

int ca_maker_new(const struct ca_make_opts *o, struct ca_maker **ret);
/* Push n bytes. Returns 0 or the first error of any pipeline stage. */
int ca_maker_feed(struct ca_maker *m, const void *p, size_t n);
/* Flush, wait for every stage, sync the store (syncfs) and commit the
 * index (fsynced), so the index never names chunks a crash could lose.
 * ret_digest gets the digest of everything fed. */
int ca_maker_finish(struct ca_maker *m, uint8_t ret_digest[CA_CHUNK_ID_SIZE], struct ca_make_stats *ret_stats);
/* Stop and clean up; an unfinished index is removed. Accepts NULL. */
void ca_maker_free(struct ca_maker *m);

/* After feed or finish failed: the path the first error is about, the
 * store directory or the index (as given in the options), or NULL when it
 * is not one of them (then a read error is the input's). Thread-safe. */
const char *ca_maker_error_path(struct ca_maker *m);

/* Chunks the caller knows (an incremental make, make_cache.h): n chunks
 * of sizes[i] bytes whose ids are ids[i], stored already, given without
 * the bytes (a run costs one trip through the pipeline, not one per chunk). The caller must know that everything fed before ends at a
 * cut of the chunker (the chunker's cuts after a cut depend only on the
 * bytes after it) and that the store has the chunk (ca_maker_has). A
 * chunker not at a cut there fails the make with -EIO rather than write
 * a wrong index. The stream digest is then not computed. */
int ca_maker_feed_known(struct ca_maker *m, const uint8_t (*ids)[CA_CHUNK_ID_SIZE], const uint64_t *sizes, size_t n);
/* 1 when the store has the chunk, 0 when not (or no store), or a negative errno. */
int ca_maker_has(struct ca_maker *m, const uint8_t id[CA_CHUNK_ID_SIZE]);

/* Convenience: feed everything readable from fd. */
int ca_maker_feed_fd(struct ca_maker *m, int fd);

#endif
