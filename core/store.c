/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* store.c - local casync chunk store: lookup, atomic write, walking. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "fdio.h"
#include "log.h"
#include "store.h"
#include "atomic_file.h"

struct ca_store {
	char *path;
};

int ca_store_open(const char *path, struct ca_store **ret)
{
	struct ca_store *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->path = strdup(path);
	if (!s->path) {
		free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

void ca_store_free(struct ca_store *s)
{
	if (!s)
		return;
	free(s->path);
	free(s);
}

const char *ca_store_path(const struct ca_store *s)
{
	return s->path;
}

void ca_store_rel_path(const uint8_t id[CA_CHUNK_ID_SIZE], char out[CA_STORE_REL_PATH_LEN + 1])
{
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	ca_id_to_hex(id, hex);
	memcpy(out, hex, 4);
	out[4] = '/';
	memcpy(out + 5, hex, 64);
	memcpy(out + 69, ".cacnk", 7);
}

/* full path of the chunk; bare=true drops the suffix */
static int chunk_path(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], bool bare, char *out, size_t len)
{
	char rel[CA_STORE_REL_PATH_LEN + 1];
	ca_store_rel_path(id, rel);
	if (bare)
		rel[69] = 0;
	int n = snprintf(out, len, "%s/%s", s->path, rel);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A regular file at the path: a symlink there is casync's "known missing" marker. */
static int regular_at(const char *p)
{
	struct stat st;
	if (fstatat(AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return S_ISREG(st.st_mode) ? 1 : 0;
	return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
}

int ca_store_has(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	char p[PATH_MAX];
	int r = chunk_path(s, id, false, p, sizeof(p));
	if (r < 0)
		return r;
	r = regular_at(p);
	if (r != 0)
		return r;
	p[strlen(p) - 6] = 0;
	return regular_at(p);
}

static int read_file(int fd, struct ca_buf *out)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADMSG;
	/* a compressed chunk larger than the largest chunk is not one of ours;
	 * incompressible data grows by a few bytes, gzip/xz by a bit more */
	if ((uint64_t)st.st_size > (uint64_t)CA_CHUNK_SIZE_LIMIT_MAX + CA_CHUNK_SIZE_LIMIT_MAX / 64)
		return -EBADMSG;
	out->size = 0;
	int r = ca_buf_reserve(out, st.st_size + 1, SIZE_MAX);
	if (r < 0)
		return r;
	for (;;) {
		if (out->size == out->cap) {
			r = ca_buf_reserve(out, out->cap * 2, (size_t)CA_CHUNK_SIZE_LIMIT_MAX * 2);
			if (r < 0)
				return r == -EFBIG ? -EBADMSG : r;
		}
		ssize_t k = read(fd, out->data + out->size, out->cap - out->size);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return 0;
		out->size += k;
		/* chunk files are immutable once renamed into place: stop at the
		 * size fstat saw instead of paying another read for EOF */
		if (out->size == (size_t)st.st_size)
			return 0;
	}
}

int ca_store_get_raw(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], struct ca_buf *out,
                     bool *ret_compressed)
{
	char p[PATH_MAX];
	int r = chunk_path(s, id, false, p, sizeof(p));
	if (r < 0)
		return r;
	/* O_NOFOLLOW: a symlink at a chunk path means "known missing" to casync */
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	bool compressed = true;
	if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) {
		p[strlen(p) - 6] = 0;
		fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
		compressed = false;
	}
	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP ? -ENOENT : -errno;
	r = read_file(fd, out);
	close(fd);
	if (r < 0)
		return r;
	if (ret_compressed)
		*ret_compressed = compressed;
	return 0;
}

/* Make <store>/<prefix>/ for a chunk path; `final` is modified and restored. */
static int make_prefix_dir(struct ca_store *s, char *final)
{
	char *slash = strrchr(final, '/');
	int r = 0;
	*slash = 0;
	if (mkdir(final, 0777) < 0) {
		r = errno == EEXIST ? 0 : -errno;
		if (r == -ENOENT) { /* the store itself is new */
			r = 0;
			if (mkdir(s->path, 0777) < 0 && errno != EEXIST)
				r = -errno;
			else if (mkdir(final, 0777) < 0 && errno != EEXIST)
				r = -errno;
		}
	}
	*slash = '/';
	return r;
}

/* Link the anonymous file fd at final without replacing anything. 0, 1 if
 * a file was already there, or negative errno. */
static int link_anonymous(int fd, const char *final)
{
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, final, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	return errno == EEXIST ? 1 : -errno;
}

int ca_store_put_raw(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], const void *p, size_t n)
{
	char final[PATH_MAX], tmp[PATH_MAX], rnd[17];
	/* no existence check first: callers that care (make) check before
	 * compressing, and the no-replace link or rename settles races anyway */
	int r = chunk_path(s, id, false, final, sizeof(final));
	if (r < 0)
		return r;

	/* An O_TMPFILE inode has no name until it is complete, so a crash can
	 * leave nothing behind, and linkat() refuses to replace: one directory
	 * operation instead of a create and a rename. */
	char *slash = strrchr(final, '/');
	*slash = 0;
	errno = 0;
	int fd = open(final, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0444);
	if (fd < 0 && errno == ENOENT) {
		*slash = '/';
		r = make_prefix_dir(s, final);
		if (r < 0)
			return r;
		*slash = 0;
		fd = open(final, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0444);
	}
	*slash = '/';
	if (fd >= 0) {
		r = ca_write_all(fd, p, n);
		if (r == 0)
			r = link_anonymous(fd, final);
		/* ...unless what is there is a "known missing" symlink: replace it */
		if (r == 1 && regular_at(final) == 0 && unlink(final) == 0)
			r = link_anonymous(fd, final);
		if (close(fd) < 0 && r == 0)
			r = -errno;
		if (r >= 0 || (r != -ENOENT && r != -EXDEV && r != -EPERM))
			return r < 0 ? r : r == 0 ? 1 : 0;
		/* no /proc: fall back to a named temporary file */
	} else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
		return -errno;
	}

	r = ca_random_hex16(rnd);
	if (r < 0)
		return r;
	/* "<prefix>/<id>.<16 hex>.tmp", the name casync uses */
	int k = snprintf(tmp, sizeof(tmp), "%.*s.%s.tmp", (int)(strlen(final) - 6), final, rnd);
	if (k < 0 || (size_t)k >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0 && errno == ENOENT) {
		r = make_prefix_dir(s, final);
		if (r < 0)
			return r;
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	}
	if (fd < 0)
		return -errno;
	r = ca_write_all(fd, p, n);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) < 0) {
		r = errno == EEXIST ? 1 : -errno; /* a concurrent writer won: same bytes */
		if (r == 1 && regular_at(final) == 0 && unlink(final) == 0 &&
		    renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) == 0)
			r = 0;
	}
	if (r != 0) {
		unlink(tmp);
		return r == 1 ? 0 : r;
	}
	return 1;
}

int ca_store_remove(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	char p[PATH_MAX];
	int r = chunk_path(s, id, false, p, sizeof(p));
	if (r < 0)
		return r;
	int found = 0;
	if (unlink(p) == 0)
		found = 1;
	else if (errno != ENOENT)
		return -errno;
	p[strlen(p) - 6] = 0;
	if (unlink(p) == 0)
		found = 1;
	else if (errno != ENOENT)
		return -errno;
	return found ? 0 : -ENOENT;
}

int ca_store_touch(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	char p[PATH_MAX];
	int r = chunk_path(s, id, false, p, sizeof(p));
	if (r < 0)
		return r;
	if (utimensat(AT_FDCWD, p, NULL, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* The path of one exact file of a chunk: its .cacnk or its bare form. */
static int file_path(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], enum ca_store_kind kind, char *p,
                     size_t len)
{
	if (kind != CA_STORE_CHUNK && kind != CA_STORE_BARE)
		return -EINVAL;
	return chunk_path(s, id, kind == CA_STORE_BARE, p, len);
}

int ca_store_get_file(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], enum ca_store_kind kind,
                      struct ca_buf *out)
{
	char p[PATH_MAX];
	int r = file_path(s, id, kind, p, sizeof(p));
	if (r < 0)
		return r;
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP ? -ENOENT : -errno;
	r = read_file(fd, out);
	close(fd);
	return r;
}

int ca_store_remove_file(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], enum ca_store_kind kind)
{
	char p[PATH_MAX];
	int r = file_path(s, id, kind, p, sizeof(p));
	if (r < 0)
		return r;
	return unlink(p) < 0 ? -errno : 0;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* Walk one prefix directory; takes dfd. */
static int walk_prefix(int dfd, const char *prefix, ca_store_walk_fn fn, void *userdata)
{
	DIR *d = fdopendir(dfd);
	int r = 0;
	if (!d) {
		r = -errno;
		close(dfd);
		return r;
	}
	struct dirent *de;
	while (r == 0 && (errno = 0, de = readdir(d))) {
		struct ca_store_entry e = { .dirfd = dirfd(d), .name = de->d_name };
		size_t len = strlen(de->d_name);
		char hex[65];

		if (len == 70 && !strcmp(de->d_name + 64, ".cacnk"))
			e.kind = CA_STORE_CHUNK;
		else if (len == 64)
			e.kind = CA_STORE_BARE;
		else if (len > 64 && has_suffix(de->d_name, ".tmp"))
			e.kind = CA_STORE_TMP;
		else
			continue;
		if (memcmp(de->d_name, prefix, 4) || !is_hex(de->d_name, 64))
			continue;
		memcpy(hex, de->d_name, 64);
		hex[64] = 0;
		if (ca_id_from_hex(hex, e.id) < 0)
			continue;
		if (fstatat(e.dirfd, e.name, &e.st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT) /* raced with a remover or a rename */
				continue;
			r = -errno;
			break;
		}
		/* symlinks are casync's "known missing" markers, not chunks */
		if (!S_ISREG(e.st.st_mode))
			continue;
		r = fn(&e, userdata);
	}
	if (r == 0 && errno != 0)
		r = -errno;
	closedir(d);
	return r;
}

int ca_store_walk(struct ca_store *s, ca_store_walk_fn fn, void *userdata)
{
	DIR *top = opendir(s->path);
	int r = 0;
	if (!top)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *de;
	/* callbacks may unlink files in a prefix directory while it is read:
	 * readdir copes, it may just not report entries added meanwhile */
	while (r == 0 && (errno = 0, de = readdir(top))) {
		if (strlen(de->d_name) != 4 || !is_hex(de->d_name, 4))
			continue;
		int dfd = openat(dirfd(top), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (dfd < 0) {
			if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
				continue;
			r = -errno;
			break;
		}
		r = walk_prefix(dfd, de->d_name, fn, userdata);
	}
	if (r == 0 && errno != 0)
		r = -errno;
	closedir(top);
	return r;
}
