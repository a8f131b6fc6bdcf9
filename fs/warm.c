/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* warm.c - a replayed profile's files into the kernel's caches (warm.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "warm.h"

/* what one WILLNEED asks for: the kernel's default readahead window, which
 * caps each call */
#define WARM_STEP (UINT64_C(128) << 10)

struct warm_item {
	char *path;
	uint64_t start, len;
	bool name_only; /* an "l" item: looked up, a symlink's target read */
};

struct fs_warm {
	atomic_uint refs;
	atomic_bool stop;
	atomic_bool started;
	atomic_uint_fast64_t done;
	char *mountpoint;
	struct warm_item *items;
	size_t n;
};

static void warm_unref(struct fs_warm *w)
{
	if (!w || atomic_fetch_sub(&w->refs, 1) != 1)
		return;
	for (size_t i = 0; i < w->n; i++)
		free(w->items[i].path);
	free(w->items);
	free(w->mountpoint);
	free(w);
}

int fs_warm_new(const struct ca_profile *p, struct fs_warm **ret)
{
	size_t n = ca_profile_count(p), k = 0;
	const char *path;
	uint64_t start, len;
	*ret = NULL;
	for (size_t i = 0; i < n; i++)
		k += ca_profile_file(p, i, &path, &start, &len) || ca_profile_lookup(p, i, &path);
	if (k == 0)
		return 0;
	struct fs_warm *w = calloc(1, sizeof(*w));
	if (!w || !(w->items = calloc(k, sizeof(*w->items)))) {
		free(w);
		return -ENOMEM;
	}
	atomic_init(&w->refs, 1);
	for (size_t i = 0; i < n; i++) {
		bool name_only = false;
		if (!ca_profile_file(p, i, &path, &start, &len)) {
			if (!ca_profile_lookup(p, i, &path))
				continue;
			name_only = true;
			start = len = 0;
		}
		struct warm_item *it = &w->items[w->n++];
		it->start = start;
		it->len = len;
		it->name_only = name_only;
		if (!(it->path = strdup(path))) {
			warm_unref(w);
			return -ENOMEM;
		}
	}
	*ret = w;
	return 0;
}

/* A regular file beneath dir, read-only, or -1; *ret_size its size.
 * Looked up O_PATH first and opened only once it is a regular file: the
 * image's device nodes are the host's devices (a root mount has no
 * nodev), and opening one may do something (a watchdog, a tape). */
static int open_beneath(int dir, const char *path, uint64_t *ret_size)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	struct stat st;
	char self[64];
	dev_t dev;
	ino_t ino;
	int fd = -1, at = (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
	if (at < 0 || fstat(at, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;
	dev = st.st_dev;
	ino = st.st_ino;
	/* the same inode again, now for reading: by our own descriptor, no
	 * second walk of the path; without /proc, by the path again (the
	 * image does not change under it: the inode it found is checked) */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", at);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 && errno == ENOENT) {
		how.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
		fd = (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
	}
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != dev || st.st_ino != ino)) {
		close(fd);
		fd = -1;
	}
	*ret_size = fd >= 0 ? (uint64_t)st.st_size : 0;
out:
	if (at >= 0)
		close(at);
	return fd;
}

/* Look path up beneath dir (the kernel keeps the entry, or that there is
 * none), and a symlink's target too (FUSE_CACHE_SYMLINKS keeps it). */
static void look_up(int dir, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	char target[256];
	int fd = (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
	if (fd < 0)
		return;
	(void)readlinkat(fd, "", target, sizeof(target)); /* EINVAL for a non-symlink: nothing asked */
	close(fd);
}

static void *warm_thread(void *arg)
{
	struct fs_warm *w = arg;
	size_t skipped = 0;
	dev_t dev = 0;
	for (size_t i = 0; i < w->n && !atomic_load(&w->stop); i++) {
		/* the root again for each file: no descriptor of ours keeps the
		 * mount busy while the next one is looked up. The first one is
		 * the mount (it answers: INIT is done); a later one that is not
		 * (unmounted, or another mount over it) ends the warm */
		struct stat st;
		struct statfs sfs;
		int dir = open(w->mountpoint, O_PATH | O_DIRECTORY | O_CLOEXEC);
		/* the first one a FUSE mount's root (not the directory under
		 * it, were it unmounted before the warm began) */
		if (dir >= 0 && fstat(dir, &st) == 0 &&
		    (i > 0 ? st.st_dev == dev :
		             fstatfs(dir, &sfs) == 0 && sfs.f_type == FUSE_SUPER_MAGIC && st.st_ino == 1 /* FUSE_ROOT_ID */)) {
			dev = st.st_dev;
		} else {
			if (dir >= 0)
				close(dir);
			break;
		}
		if (w->items[i].name_only) {
			look_up(dir, w->items[i].path);
			close(dir);
			atomic_fetch_add(&w->done, 1);
			continue;
		}
		uint64_t size = 0;
		int fd = open_beneath(dir, w->items[i].path, &size);
		if (fd >= 0) {
			/* the reads run in the kernel's background, into its page
			 * cache; one call reads no more than the mount's readahead
			 * window (128 KiB on a tree mount), so the range goes in
			 * steps: within the file (a profile's range may say 2^62
			 * bytes: 2^45 calls, a core busy for the mount's life) */
			uint64_t end = w->items[i].start + w->items[i].len;
			if (end > size)
				end = size;
			for (uint64_t off = w->items[i].start; off < end && !atomic_load(&w->stop); off += WARM_STEP)
				(void)posix_fadvise(fd, (off_t)off, (off_t)(end - off < WARM_STEP ? end - off : WARM_STEP),
				                    POSIX_FADV_WILLNEED);
			close(fd);
		} else {
			skipped++;
		}
		close(dir);
		atomic_fetch_add(&w->done, 1);
	}
	if (skipped)
		ca_log_debug("prefetch profile: %zu of %zu files not opened through the mount", skipped, w->n);
	warm_unref(w);
	return NULL;
}

void fs_warm_start(struct fs_warm *w, const char *mountpoint)
{
	pthread_t t;
	if (!w || atomic_exchange(&w->started, true))
		return;
	if (!(w->mountpoint = strdup(mountpoint))) {
		ca_log_warning_errno(ENOMEM, "prefetch profile: not warming the kernel's caches");
		return;
	}
	atomic_fetch_add(&w->refs, 1);
	int r = ca_thread_create(&t, warm_thread, w);
	if (r < 0) {
		atomic_fetch_sub(&w->refs, 1);
		ca_log_warning_errno(r, "prefetch profile: not warming the kernel's caches");
		return;
	}
	pthread_detach(t);
}

void fs_warm_release(struct fs_warm *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	warm_unref(w);
}

void fs_warm_progress(struct fs_warm *w, uint64_t *files, uint64_t *done)
{
	*files = w ? w->n : 0;
	*done = w ? atomic_load(&w->done) : 0;
}
