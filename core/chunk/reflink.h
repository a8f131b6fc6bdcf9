/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * reflink.h - casync's --reflink for seeds: a chunk of a blob being
 * extracted that a local seed file holds is cloned from it (FICLONERANGE:
 * the output shares the seed's extents, no bytes are copied or allocated)
 * instead of being written, where the file system can (xfs with reflink,
 * btrfs) and the two offsets agree modulo the block size.
 *
 * Built while seeding (one thread: ca_reflink_add_seed, ca_reflink_note),
 * then used read-only by the extract's workers (ca_reflink_clone, any
 * number of threads at once). Every clone is checked: the output's bytes
 * are read back and hashed, so a seed changed since it was chunked is
 * never trusted (that chunk is then fetched and written as usual).
 */
#ifndef CA_REFLINK_H
#define CA_REFLINK_H

#include <stdint.h>

#include "base/digest.h"
#include "format/format.h"

struct ca_reflink;

/* digest: the index's, for the check. -ENOMEM. */
int ca_reflink_new(enum ca_digest_type digest, struct ca_reflink **ret);
void ca_reflink_free(struct ca_reflink *rl); /* accepts NULL */

/* A seed file (a regular file: nothing else can be cloned from); fd is
 * duplicated. *ret_seed names it for ca_reflink_note. -EMLINK past 1024
 * seeds, or the errno of dup. */
int ca_reflink_add_seed(struct ca_reflink *rl, int fd, unsigned *ret_seed);
/* Seed seed holds the chunk id at offset (the first place wins). */
int ca_reflink_note(struct ca_reflink *rl, unsigned seed, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t offset);

/* For ca_extract_opts.clone (userdata: the ca_reflink): put the chunk id
 * of size bytes at off in the regular file out_fd by cloning the blocks a
 * seed shares, its partial first and last blocks copied from the seed, all
 * checked against id. 1 when done, 0 when the caller must write it (no
 * seed has it at a compatible offset, the file system cannot clone, or
 * the check failed: the range is then zeros again), or a negative errno
 * when the output could not be put back. */
int ca_reflink_clone(void *userdata, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t size, int out_fd, uint64_t off);

/* Bytes cloned so far (shared with a seed, not written). */
uint64_t ca_reflink_bytes(const struct ca_reflink *rl);

#endif
