/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seed_tree.h - what casync does with seed directories after an archive
 * is extracted, besides taking chunks from them (cache_seed.c):
 *
 * --hardlink=yes: each regular file of the tree that a seed directory
 * holds identically becomes a hard link to the seed's file. casync's
 * conditions (src/cadecoder.c ca_decoder_try_hardlink, and the seed's
 * "hardlink digest" over a file's encoded entry and payload): a regular
 * file of the same size and contents; the same mode bits (07777 with
 * permissions or ACLs, 0200 with read-only, none else: what casync's
 * encoder stores and so its seed's digest covers), owner and group (when
 * the archive has uids), mtime at the archive's granularity (when it has
 * times); here also the same extended attributes (ACLs, fcaps and the
 * SELinux label among them; when it has any) and chattr flags, which
 * casync's digest covers. The link is put in place under a temporary name
 * and renamed over the file; where the file system cannot link (another
 * device, too many links, EPERM) the file stays.
 *
 * --reflink=yes: in each regular file not linked, the 4 KiB blocks equal
 * to those at the same offsets of the file at the same path in a seed
 * directory are cloned from it (FICLONERANGE), so the two share their
 * extents, as casync clones a file's ranges that came from a seed file.
 * Each run is compared before and read back after the clone; a mismatch
 * (the seed changed meanwhile) writes the extracted bytes back. The
 * file's mtime is put back. The first refusal by the file system (no
 * reflink support, another device) ends this for the whole tree.
 *
 * Walks DEST with directory fds opened O_NOFOLLOW: no symlink in DEST is
 * followed. One thread, no global state.
 */
#ifndef CA_SEED_TREE_H
#define CA_SEED_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ca_seed_tree_opts {
	bool hardlink, reflink;
	uint64_t feature_flags; /* the archive's */
	const char *subtree;    /* the archive's directory DEST holds (extract PATH); NULL: its root */
};

struct ca_seed_tree_stats {
	uint64_t linked_files, linked_bytes; /* hard-linked instead of kept */
	uint64_t cloned_bytes;               /* shared with a seed file */
};

/* seeds: paths; those that are not directories are skipped. Returns 0
 * or a negative errno (logged: "cafs: PATH: why"). */
int ca_seed_tree_apply(const char *dest, char *const *seeds, size_t n_seeds, const struct ca_seed_tree_opts *o,
                       struct ca_seed_tree_stats *ret_stats);

#endif
