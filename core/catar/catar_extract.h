/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_extract.h - restore the tree a streaming decoder yields into a
 * destination directory.
 *
 * Safety: everything is created relative to directory fds opened from
 * DEST with O_NOFOLLOW (openat, mkdirat, symlinkat, mknodat, renameat):
 * names come validated from the decoder (no '/', '.', '..') and nothing
 * is ever resolved through a symlink, whether the archive made it or it
 * was already in DEST. No partial file ever carries its final name: a
 * new directory (DEST itself when it does not exist, or one added to an
 * existing tree) is built under a temporary name ".#cafs..." beside its
 * final one, with everything in it created directly under final names,
 * and renamed once its whole subtree is complete; after an error or an
 * interrupt it is removed. In directories that already existed, files,
 * symlinks and special files are written under a temporary name and
 * renamed into place.
 *
 * Syscalls: the chown and chmod are skipped when the new node already has
 * that owner and mode (created with its final mode when neither the umask
 * nor a default ACL of its directory would change it).
 *
 * Threads: with 2 or more CPUs, small regular files (payload read into
 * memory by the decoding thread) that need only owner, mode and mtime are
 * created by up to 3 worker threads, since creating a file costs far more
 * in the kernel than decoding it; a directory's own metadata is applied
 * only after every file in it is complete, by the worker that finishes
 * the last one. All are joined before ca_catar_extract() returns; on an
 * error or an interrupt, queued files are dropped.
 *
 * Into an existing tree: what differs is replaced (a directory where the
 * archive has a file is removed, and the other way round) and, like
 * casync's --delete=yes, entries the archive does not have are removed.
 *
 * Metadata: mode, owner (only as root; otherwise skipped with one
 * warning), mtime (ns, directories after their children), xattrs, ACLs,
 * fcaps, chattr flags, quota project ids and SELinux label (the last
 * three best effort: one warning when the file system refuses them).
 * Extended attributes as xattr_policy.h allows (trusted.* when running
 * as root; overlayfs ones only with overlay_xattrs): the others are
 * skipped, one debug line each and one warning at the end counting them.
 */
#ifndef CA_CATAR_EXTRACT_H
#define CA_CATAR_EXTRACT_H

#include <signal.h>
#include <stdbool.h>

#include "catar/catar_dec.h"
#include "catar/uidshift.h"

struct ca_catar_extract_opts {
	bool no_delete;           /* keep entries of DEST the archive does not have */
	bool overlay_xattrs;      /* apply trusted.overlay.* / user.overlay.* too (xattr_policy.h) */
	/* casync's --uid-shift/--uid-range: owners and ACL ids on disk from
	 * those stored (uidshift.h); an id that overflows fails (-EINVAL) */
	struct ca_uid_shift uid_shift;
	/* casync's --undo-immutable: a file chattr +i in DEST that is to be
	 * replaced or removed loses the flag first (else: EPERM) */
	bool undo_immutable;
	/* casync's --punch-holes=no: write files' zero blocks too (by
	 * default they are left as holes: sparse files) */
	bool no_holes;
	const char *archive_name; /* for messages about the archive (default "archive") */
	/* when non-NULL and it becomes non-zero (a signal handler sets it), the
	 * extract stops between blocks and fails with -ECANCELED, unlogged; no
	 * temporary file is left (what is complete stays) */
	const volatile sig_atomic_t *cancel;
	/* progress: bytes of payload written so far (may be NULL) */
	void (*progress)(void *userdata, uint64_t done);
	void *progress_userdata;
};

/* Drive d to the end, creating dest if missing. Returns 0 or a negative
 * errno. Logs one line: naming the path for destination errors ("cafs:
 * DEST/a/b: why"), the archive and position for -EBADMSG; errors of the
 * decoder's reader (I/O, missing chunks) are returned without a message,
 * since the reader's owner knows what failed. opts may be NULL. */
int ca_catar_extract(struct ca_catar_dec *d, const char *dest, const struct ca_catar_extract_opts *opts);

#endif
