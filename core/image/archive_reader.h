/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * archive_reader.h - an opened image (source.h) read as an archive: the
 * byte sources catar_ra and catar_dec take, with what whole-archive
 * readers (extract, list, mtree, digest) add on top of ca_image_pread:
 *
 *   - sequential reads ("stream" source) of a .caidx keep the chunk source
 *     busy ahead of the reader (readahead marks 16 MiB ahead) and get their
 *     chunks decompressed and verified ahead by a ca_blob_stream (threads
 *     of its own), started at the first stream read;
 *   - an optional digest of every byte the stream source reads, hashed on
 *     a thread of its own (casync digest of an archive);
 *   - a subtree window: one directory's ENTRY..GOODBYE range, found by
 *     random access, read as an archive of its own (extract IN OUT PATH);
 *     nothing past its end is fetched;
 *   - one error line per reader: the first failed read is explained once
 *     (which chunk, missing or corrupt: ca_image_log_read_error), and
 *     ca_archive_reader_report() says nothing more about it.
 *
 * Ownership: the reader borrows the image, which must outlive it (see
 * ca_archive_reader_free for the one exception). Open images read this way
 * with lru_bytes of at least CA_ARCHIVE_READER_LRU: random access re-reads
 * the chunks of a directory's GOODBYE and of its children's entries.
 *
 * Threads: one reader thread at a time (the decoder's, or the random
 * access walker's); the reader's own threads (decode-ahead, digest) are
 * internal. No global state.
 *
 * Errors: 0 or a negative errno; the read error policy is that of
 * source.h (a missing chunk is -ENOLINK, never -ENOENT), plus -ECANCELED
 * once the cancel flag is up (never logged).
 */
#ifndef CA_ARCHIVE_READER_H
#define CA_ARCHIVE_READER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "catar/catar_ra.h"
#include "base/digest.h"
#include "image/source.h"

/* The memory LRU an image read as an archive should be opened with. */
#define CA_ARCHIVE_READER_LRU (64u << 20)

struct ca_archive_reader_opts {
	/* the stream's payloads will mostly be skipped (list): no readahead,
	 * no decode-ahead, which would fetch what nobody reads */
	bool no_readahead;
	/* when non-NULL and it becomes non-zero, a stream read waiting for a
	 * chunk returns -ECANCELED (within 100 ms) */
	const volatile sig_atomic_t *cancel;
};

struct ca_archive_reader;

/* o may be NULL (defaults: readahead on, no cancel). Only -ENOMEM. */
int ca_archive_reader_new(struct ca_image *im, const struct ca_archive_reader_opts *o,
                          struct ca_archive_reader **ret);
/* Stops the reader's threads and frees it (accepts NULL). Returns -EBUSY
 * when, cancelled, a decode-ahead thread was still stuck in a chunk fetch
 * after 2 s: it is left running and the reader is not freed, so the
 * image must not be freed either (the process is about to exit). */
int ca_archive_reader_free(struct ca_archive_reader *a);

/* Random access reads (catar_ra): ca_image_pread, with the first error
 * explained once. Valid while the reader lives. */
void ca_archive_reader_random(struct ca_archive_reader *a, struct ca_catar_source *ret);
/* Sequential reads (catar_dec), front to back, as described above. One
 * stream per reader. */
void ca_archive_reader_stream(struct ca_archive_reader *a, struct ca_catar_source *ret);

/* The stream of directory path (relative to the root, '/'-separated)
 * alone, as an archive of its own: a stream source whose offset 0 is the
 * directory's ENTRY. Logs one line: "IN: PATH: not in the archive"
 * (-ENOENT), "IN: PATH: not a directory (extract takes one)" (-ENOTDIR),
 * or as ca_archive_reader_report. Once per reader. */
int ca_archive_reader_subtree(struct ca_archive_reader *a, const char *path, struct ca_catar_source *ret);

/* Hash every byte the stream source reads from now on (before the first
 * stream read, for the digest of the whole stream, or of the subtree
 * window's once ca_archive_reader_subtree set it). Not logged. */
int ca_archive_reader_digest_start(struct ca_archive_reader *a, enum ca_digest_type type);
/* Stop hashing; ret_digest gets the digest of the bytes read. -EIO when
 * the stream skipped bytes (the digest would be wrong), or the digest's
 * own error. Not logged. */
int ca_archive_reader_digest_finish(struct ca_archive_reader *a, uint8_t ret_digest[CA_CHUNK_ID_SIZE]);

/* Say in one line that reading the archive failed with r, at path inside
 * it (NULL or "" for the archive itself): "cafs: IN[: PATH]: not a valid
 * archive" for -EBADMSG, "cafs: IN[: PATH]: <why>" otherwise; nothing
 * when the failed read was already explained, or for -ECANCELED. Returns
 * r. */
int ca_archive_reader_report(const struct ca_archive_reader *a, int r, const char *path);

#endif
