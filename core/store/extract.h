/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * extract.h - write a whole image (all chunks of an index) to a file,
 * in parallel: a pool of workers gets chunks from the chunk source
 * (decompressed, verified); one writer at a time (the queue's ordered
 * completion) puts them out in order, neighbouring chunks gathered into
 * one pwritev. All-zero chunks are left as holes in a fresh file. The output appears under its
 * final name only when complete.
 */
#ifndef CA_EXTRACT_H
#define CA_EXTRACT_H

#include <signal.h>
#include <stdint.h>

#include "store/chunksrc.h"
#include "format/index.h"

struct ca_extract_opts {
	unsigned threads; /* 0 = number of CPUs (at least 2) */
	/* called now and then, from any worker, with bytes written so far */
	void (*progress)(void *userdata, uint64_t bytes);
	void *progress_userdata;
	/* when non-NULL and it becomes non-zero (a signal handler sets it), the
	 * workers stop and the extract fails with -ECANCELED, output removed */
	const volatile sig_atomic_t *cancel;
	/* casync's --punch-holes=no: write the zeros of a new regular file too
	 * (by default they are left as holes) */
	bool no_holes;
	/* casync's --reflink: asked, before a chunk is fetched for a regular
	 * file, to put it there by other means (reflink.h ca_reflink_clone):
	 * 1 done, 0 fetch and write it, < 0 fail. NULL: never. */
	int (*clone)(void *userdata, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t size, int fd, uint64_t off);
	void *clone_userdata;
};

/* Extract the blob of idx to path (a regular file, replaced atomically; or
 * an existing block device, written in place up to the image size), or
 * to "-" for stdout. On failure nothing is left under path, and one line is
 * logged: the first chunk that failed, or the output's error. -EBUSY
 * (not logged): cancelled while a worker is stuck in a fetch; src is still
 * in use and must be left to the exit. */
int ca_extract_blob(struct ca_index *idx, struct ca_chunksrc *src, const char *path,
                    const struct ca_extract_opts *o);

/* Same into an open fd at offset 0, which must be seekable and already
 * truncated to the blob size (holes stay holes). Logs the first chunk that
 * failed; other errors are only returned. */
int ca_extract_blob_fd(struct ca_index *idx, struct ca_chunksrc *src, int fd, const struct ca_extract_opts *o);

#endif
