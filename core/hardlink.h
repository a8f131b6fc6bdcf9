/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hardlink.h - casync's --hardlink=yes: after an archive is extracted,
 * each regular file of the tree that a seed directory holds identically
 * (same contents, and the same metadata as far as the archive's feature
 * flags carry it) becomes a hard link to the seed's file.
 *
 * casync's conditions (src/cadecoder.c ca_decoder_try_hardlink, and the
 * seed's "hardlink digest" over a file's encoded entry and payload):
 * a regular file of the same size and contents; the same mode bits
 * (07777 with permissions or ACLs, 0200 with read-only, none else: what
 * casync's encoder stores and so its seed's digest covers), owner and
 * group (when the archive has uids), mtime at the archive's granularity
 * (when it has times); here also the same extended attributes (ACLs,
 * fcaps and the SELinux label among them; when it has any) and chattr
 * flags, which casync's digest covers. A link is put in place under a
 * temporary name and renamed over the file; where the file system
 * cannot link (another device, too many links, EPERM) the file stays.
 *
 * Walks DEST with directory fds opened O_NOFOLLOW: no symlink in DEST is
 * followed. One thread, no global state.
 */
#ifndef CA_HARDLINK_H
#define CA_HARDLINK_H

#include <stddef.h>
#include <stdint.h>

struct ca_hardlink_stats {
	uint64_t files, bytes; /* linked instead of kept */
};

/* seeds: paths; those that are not directories are skipped. Returns 0
 * or a negative errno (logged: "cafs: PATH: why"). */
int ca_hardlink_from_seeds(const char *dest, char *const *seeds, size_t n_seeds, uint64_t feature_flags,
                           struct ca_hardlink_stats *ret_stats);

#endif
