/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * image_extract.h - extract an opened image (source.h): the orchestration
 * behind `cafs extract` and the library's "extract an image".
 *
 *   .caibx          -> a file (replaced atomically), an existing block
 *                      device (written in place), or "-" (stdout):
 *                      ca_extract_blob (extract.h)
 *   .caidx, .catar  -> a directory tree: the streaming decoder over an
 *                      archive reader (archive_reader.h), whole or one
 *                      directory of it, into ca_catar_extract
 *                      (catar_extract.h: nothing partial under a final
 *                      name, DEST made whole or not at all)
 *
 * The caller opens the image (with lru_bytes CA_IMAGE_EXTRACT_LRU for an
 * archive) and may change its chunk source first, e.g. give it a cache
 * seeded with chunks from local data; the image is borrowed.
 *
 * Errors: 0 or a negative errno. Every failure but -ECANCELED is logged
 * as one line (the chunk that failed, the archive and position of a
 * malformed entry, or the destination path and why); -ECANCELED (the
 * cancel flag was raised) is returned silently. -EBUSY: cancelled, and a
 * thread is still stuck in a chunk fetch after 2 s; it still uses the
 * image, which must then not be freed (the process is about to exit).
 *
 * Threads: the extract runs worker threads of its own, all joined before
 * return (but for -EBUSY); callbacks may be called from any of them. No
 * global state.
 */
#ifndef CA_IMAGE_EXTRACT_H
#define CA_IMAGE_EXTRACT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/location.h"
#include "catar/uidshift.h"
#include "image/source.h"

struct ca_image_extract_opts {
	/* archives: the directory (relative to the root) to extract instead
	 * of the whole tree; NULL: all. -EINVAL (logged) for a blob. */
	const char *path;
	unsigned threads; /* a blob's workers (0: one per CPU); archives size their threads by CPU */
	bool no_delete;   /* archives: keep entries of an existing dest the archive does not have */
	bool overlay_xattrs; /* archives: apply trusted.overlay.* / user.overlay.* too (xattr_policy.h) */
	struct ca_uid_shift uid_shift; /* archives: casync's --uid-shift/--uid-range (uidshift.h) */
	bool undo_immutable; /* archives: replace or remove what is chattr +i in dest */
	bool no_holes;       /* write zeros too: no sparse files (casync's --punch-holes=no) */
	/* blobs: chunks put in place by other means first, as ca_extract_opts.clone */
	int (*clone)(void *userdata, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t size, int fd, uint64_t off);
	void *clone_userdata;
	/* progress_start (may be NULL) is called once before anything is
	 * written, with the bytes to write (0 if unknown: an archive); then
	 * progress (may be NULL) now and then, from any thread, with the bytes
	 * written so far (an archive: payload bytes); then progress_end (may be
	 * NULL) once, before returning. */
	void (*progress_start)(void *userdata, uint64_t total);
	void (*progress)(void *userdata, uint64_t done);
	void (*progress_end)(void *userdata);
	void *progress_userdata;
	/* when non-NULL and it becomes non-zero (a signal handler sets it),
	 * the extract stops, removes what it left unfinished and returns
	 * -ECANCELED */
	const volatile sig_atomic_t *cancel;
};

/* Whether dest can take an image of this kind, to ask before any work
 * (ca_image_extract asks again): a blob goes to a regular file (or a new
 * name), a block device or "-"; anything else already there (a
 * directory, a FIFO, a device node) is refused, as casync does, since the
 * atomic rename would replace it. Logs "cafs: DEST: not a regular file or
 * block device" (-EEXIST). Archives: always 0 (ca_catar_extract decides). */
int ca_image_extract_check_dest(enum ca_image_kind kind, const char *dest);

/* Extract im to dest. o may be NULL (no options). */
int ca_image_extract(struct ca_image *im, const char *dest, const struct ca_image_extract_opts *o);

/* The memory LRU of an archive opened to be extracted: the decoder reads
 * the stream once, in order, so only the few random reads that find a
 * subtree use it; CA_ARCHIVE_READER_LRU (64 MiB, for list and mount) put
 * extract over its memory budget and churned its pages. */
#define CA_IMAGE_EXTRACT_LRU (8u << 20)

#endif
