/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* atomic_file.c - temp file + rename. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/fdio.h"

int ca_random_hex16(char out[17])
{
	uint64_t v;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		return -EIO;
	snprintf(out, 17, "%016llx", (unsigned long long)v);
	return 0;
}

int ca_atomic_file_open(struct ca_atomic_file *f, const char *path, mode_t mode)
{
	char rnd[17];
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
	int r;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	r = ca_random_hex16(rnd);
	if (r < 0)
		return r;
	f->final_path = strdup(path);
	f->tmp_path = malloc(strlen(path) + 2 + 16 + 1);
	if (!f->final_path || !f->tmp_path) {
		ca_atomic_file_abort(f);
		return -ENOMEM;
	}
	sprintf(f->tmp_path, "%.*s.#%s%s", (int)dirlen, path, path + dirlen, rnd);
	f->fd = open(f->tmp_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (f->fd < 0) {
		r = -errno;
		free(f->tmp_path); /* nothing was created: don't unlink someone else's file */
		f->tmp_path = NULL;
		ca_atomic_file_abort(f);
		return r;
	}
	return 0;
}

/* fsync the directory holding path (after a rename in it). */
static int sync_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	if (!dir)
		return -ENOMEM;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = fd < 0 || fsync(fd) < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	free(dir);
	return r;
}

int ca_atomic_file_commit(struct ca_atomic_file *f)
{
	int r = 0;
	if (f->durable && fsync(f->fd) < 0)
		r = -errno;
	if (close(f->fd) < 0 && r == 0)
		r = -errno;
	f->fd = -1;
	if (r == 0 && rename(f->tmp_path, f->final_path) < 0)
		r = -errno;
	if (r == 0 && f->durable) {
		r = sync_parent(f->final_path);
		if (r < 0) { /* renamed already: nothing to abort */
			free(f->tmp_path);
			free(f->final_path);
			f->tmp_path = f->final_path = NULL;
			return r;
		}
	}
	if (r < 0) {
		ca_atomic_file_abort(f);
		return r;
	}
	free(f->tmp_path);
	free(f->final_path);
	f->tmp_path = f->final_path = NULL;
	return 0;
}

void ca_atomic_file_abort(struct ca_atomic_file *f)
{
	/* the fd is only ours while a temp file exists, so a zeroed struct is safe */
	if (f->tmp_path) {
		if (f->fd >= 0)
			close(f->fd);
		unlink(f->tmp_path);
	}
	f->fd = -1;
	free(f->tmp_path);
	free(f->final_path);
	f->tmp_path = f->final_path = NULL;
}

int ca_atomic_file_write(const char *path, mode_t mode, const void *p, size_t n)
{
	struct ca_atomic_file f;
	int r = ca_atomic_file_open(&f, path, mode);
	if (r < 0)
		return r;
	r = ca_write_all(f.fd, p, n);
	if (r < 0) {
		ca_atomic_file_abort(&f);
		return r;
	}
	return ca_atomic_file_commit(&f);
}
