/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs.h - the read-only filesystem the mount serves: FUSE low-level
 * operations over one image (a ca_blob).
 *
 * Two shapes:
 *   blob mount (.caibx): a root directory holding ONE regular file, the image;
 *   tree mount (.caidx, .catar): the archive's directory tree, read lazily
 *     through the random-access decoder (catar_ra.h).
 *
 * Both read the image through a ca_catar_source (a byte-range reader):
 * ca_blob_read for an index, pread for a plain .catar.
 *
 * The image never changes, so every reply tells the kernel to cache for a
 * long time (entries, attributes, negative lookups, page cache, readdir).
 *
 * Threads: the ops run on libfuse's worker threads, any number at once. A
 * read that needs chunks blocks its worker in ca_blob_read (the chunk
 * source shares one fetch among all waiters); mount.c sizes the worker pool
 * so blocked readers cannot starve lookups. The fs object itself is
 * immutable after creation except for atomic counters and the inode table
 * (which has its own lock, see inode.h).
 */
#ifndef CAFS_FS_H
#define CAFS_FS_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "blob.h"
#include "catar_ra.h"
#include "chunksrc.h"

struct cafs_fs;

struct cafs_fs_options {
	/* Blob mount: the name of the one file (required) and the attributes
	 * of the root (mode is forced to a 0555 directory; the file gets
	 * 0444 and the same owner and times). */
	const char *blob_name;
	struct stat blob_st;
	/* Read-ahead for sequential reads: this many chunks (0: the default,
	 * 8) of chunk_size_avg bytes (0: 64 KiB). */
	unsigned readahead_chunks;
	uint64_t chunk_size_avg;
	/* Where the stats come from; NULL for a plain .catar (borrowed). */
	struct ca_chunksrc *chunksrc;
	/* Called once from the first FUSE request (INIT), when the mount can
	 * answer: the daemon uses it to let its parent exit. May be NULL. */
	void (*ready)(void *userdata);
	void *ready_userdata;
	/* Appends more "key: value" lines to the stats text (remote counters).
	 * Returns the bytes written (< len) or 0. May be NULL. */
	size_t (*extra_stats)(void *userdata, char *buf, size_t len);
	void *extra_stats_userdata;
};

/* The image source for reading blob b (borrowed) with ca_blob_read;
 * index_flags as in ca_catar_source (the .caidx header's flags). */
void cafs_fs_blob_source(struct ca_blob *b, uint64_t index_flags, struct ca_catar_source *ret);

/* A blob mount over blob (borrowed: it must outlive the fs). */
int cafs_fs_new_blob(struct ca_blob *blob, const struct cafs_fs_options *o, struct cafs_fs **ret);
/* A tree mount over an archive read through src (copied; its userdata must
 * outlive the fs). Checks the archive root now, so a corrupt archive fails
 * here (-EBADMSG) and not at the first ls. */
int cafs_fs_new_tree(const struct ca_catar_source *src, const struct cafs_fs_options *o, struct cafs_fs **ret);
void cafs_fs_free(struct cafs_fs *fs); /* accepts NULL */

/* The operations; pass the fs as userdata to fuse_session_new. */
extern const struct fuse_lowlevel_ops cafs_fs_ops;

/* The name of the virtual xattr on the mount root that holds the stats. */
#define CAFS_STATS_XATTR "user.cafs.stats"

/* The stats text (what CAFS_STATS_XATTR returns), NUL-terminated into buf;
 * returns its length (truncated to len - 1). */
size_t cafs_fs_stats_text(struct cafs_fs *fs, char *buf, size_t len);

#endif
