/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * extras.h - what a mount does with its image beside serving it: replay a
 * prefetch profile (and --fill the rest), record one (--record-profile),
 * the kept index's sha256 a restarted server names, the stores of a
 * failover group mapped member by member. The mount command (tools/
 * cmd_mount.c) calls these, so that it needs no core header beyond the
 * filesystem's face (image/fs_face.h).
 */
#ifndef FS_EXTRAS_H
#define FS_EXTRAS_H

#include <stdbool.h>
#include <stddef.h>

#include "image/fs_face.h"
#include "warm.h"

/* what runs beside the filesystem: give rec and pf to fs_options (record,
 * prefetch); zeroed: nothing */
struct fs_extras {
	struct ca_profile_rec *rec; /* --record-profile */
	struct ca_prefetch *pf;     /* profile replay and fill */
	struct fs_warm *warm;       /* the replayed profile's files into the kernel's caches */
};

/* --record-profile: start recording. 0 or a negative errno (logged). */
int fs_extras_record(struct fs_extras *x);

/* Start the background work: the profile's chunks, then with fill the
 * rest; and, for a tree mount with a sidecar that records no profile,
 * x->warm: the profile's files, for fs_serve to warm once the mount
 * answers (warm.h; not when recording: the recorder must see the reads). profile: a file, "none", or NULL for the one published beside the
 * index (its bytes into kept, for a restarted server); a profile that
 * cannot be used is one warning and the mount goes on without it.
 * source names the image in messages. 0 or a negative errno (logged). */
int fs_extras_prefetch(struct fs_extras *x, struct ca_image *im, const char *source, const char *profile,
                       bool fill, const struct ca_image_opts *io, struct ca_buf *kept);

/* --record-profile, at unmount: write what was read to path, files by
 * path through the sidecar, bound to the image's index. 0 or a negative
 * errno (logged). */
int fs_extras_write_profile(struct fs_extras *x, struct ca_image *im, const char *path);

/* Stop the prefetch: before the image and the fs it reads through go. */
void fs_extras_stop(struct fs_extras *x);
/* ... and free the rest (after the fs, which records into it). */
void fs_extras_release(struct fs_extras *x);

/* SHA-256 of an index's bytes as hex (what `sha256sum` of the file says,
 * for an admin to compare); "?" if it cannot be computed. */
#define FS_SHA256_HEX_SIZE 65
void fs_index_sha256(const void *data, size_t size, char hex[FS_SHA256_HEX_SIZE]);

/* s (a store, or a failover group "A|B") with fn applied to each member;
 * malloc'd, NULL when fn returns NULL or on ENOMEM. */
char *fs_stores_map(const char *s, char *(*fn)(const char *member));

#endif
