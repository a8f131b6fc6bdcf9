/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * warm.h - a replayed profile's files into the kernel's own caches.
 *
 * Replaying a profile (store/prefetch.h) brings its chunks into the
 * chunk LRU, but every name and page a start then touches is still a FUSE
 * round trip on a fresh mount: a lookup per path component, a read per
 * fault of a loader's mmap. Once the mount answers (after INIT), one
 * thread of the server opens each file the profile names ("f" items)
 * through the mount itself (the kernel looks its path up and keeps the
 * entries, for FS_TIMEOUT) and asks the kernel to read the profile's range
 * of it (POSIX_FADV_WILLNEED: asynchronous reads through the page cache,
 * which the kernel keeps, FOPEN_KEEP_CACHE); and looks up each name ("l"
 * items: one the image does not have, kept as a negative entry, or a
 * symlink, whose target it reads: FUSE_CACHE_SYMLINKS keeps it). A start
 * that follows finds names, links and pages in the kernel, as on a local
 * disk.
 *
 * Paths are looked up beneath the mount only (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV, O_PATH), a file opened for
 * reading only once it is a regular one (never the image's device nodes
 * or FIFOs: a root mount has no nodev), its range cut to the file's size,
 * and while the mount point is still the FUSE mount the warm began on: no
 * profile reaches outside the image or keeps the thread busy. Nothing is held
 * between files (an unmount is busy at most for one open), and nothing is
 * waited for but the opens: the reads run in the kernel's background.
 * Best effort: a file that cannot be opened is skipped; a kernel without
 * openat2 warms nothing.
 *
 * Threads: the warming thread is detached (it may be blocked on the mount
 * when the server stops: the process's end ends it); the fs_warm is
 * reference-counted between it and its owner.
 */
#ifndef FS_WARM_H
#define FS_WARM_H

#include <stdint.h>
#include <stddef.h>

#include "image/fs_face.h"

struct fs_warm;

/* The files and names of profile p ("f" and "l" items, in its order).
 * *ret is NULL when it names none. 0 or -ENOMEM. */
int fs_warm_new(const struct ca_profile *p, struct fs_warm **ret);
/* Start warming through the mount at mountpoint (an absolute path). Once
 * only; logs a failure to start (the mount goes on without it). */
void fs_warm_start(struct fs_warm *w, const char *mountpoint);
/* No further file is started; drops the owner's reference. Accepts NULL. */
void fs_warm_release(struct fs_warm *w);
/* For the stats: files to warm, and those handed to the kernel so far. */
void fs_warm_progress(struct fs_warm *w, uint64_t *files, uint64_t *done);

#endif
