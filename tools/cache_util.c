/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cache_util.c - store walking with stat, sizes, cache dir: shared by cache and gc. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "cmd.h"
#include "digest.h"
#include "idset.h"
#include "index.h"
#include "log.h"

static bool is_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !memcmp(s + n - k, suffix, k);
}

static int walk_prefix(int dfd, const char *prefix, cafs_store_walk_fn fn, void *userdata)
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
		const char *name = de->d_name;
		size_t len = strlen(name);
		enum cafs_store_file kind;
		uint8_t id[CA_CHUNK_ID_SIZE] = { 0 };
		char hex[65];

		if (len == 70 && !strcmp(name + 64, ".cacnk"))
			kind = CAFS_STORE_CHUNK;
		else if (len == 64)
			kind = CAFS_STORE_BARE;
		else if (has_suffix(name, ".tmp") && len > 64)
			kind = CAFS_STORE_TMP;
		else
			continue;
		if (memcmp(name, prefix, 4) || !is_lower_hex(name, 64))
			continue;
		memcpy(hex, name, 64);
		hex[64] = 0;
		if (ca_id_from_hex(hex, id) < 0)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT) /* raced with a remover or a rename */
				continue;
			r = -errno;
			break;
		}
		/* symlinks are casync's "known missing" markers, not chunks */
		if (!S_ISREG(st.st_mode))
			continue;
		r = fn(kind, id, dirfd(d), name, &st, userdata);
	}
	if (r == 0 && errno != 0)
		r = -errno;
	closedir(d);
	return r;
}

int cafs_store_walk(const char *dir, cafs_store_walk_fn fn, void *userdata)
{
	DIR *top = opendir(dir);
	int r = 0;
	if (!top)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *de;
	/* callbacks may unlink files in a prefix directory while it is read:
	 * readdir copes, it may just not report entries added meanwhile */
	while (r == 0 && (errno = 0, de = readdir(top))) {
		if (strlen(de->d_name) != 4 || !is_lower_hex(de->d_name, 4))
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

char *cafs_cache_dir(const char *opt)
{
	char *d = opt ? strdup(opt) : ca_source_default_cache_dir();
	if (!d)
		ca_log_error_errno(ENOMEM, "cache directory");
	return d;
}

int cafs_parse_size(const char *s, uint64_t *ret)
{
	char *end;
	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	uint64_t mul = 1;
	switch (*end) {
	case 'T': case 't': mul <<= 10; /* fall through */
	case 'G': case 'g': mul <<= 10; /* fall through */
	case 'M': case 'm': mul <<= 10; /* fall through */
	case 'K': case 'k': mul <<= 10; end++; break;
	case 'B': case 0: break;
	default: return -EINVAL;
	}
	if (!strcmp(end, "iB") || !strcmp(end, "B"))
		end += strlen(end);
	if (*end)
		return -EINVAL;
	double b = v * (double)mul;
	if (b >= 18446744073709551615.0)
		return -ERANGE;
	*ret = (uint64_t)b;
	return 0;
}

void cafs_format_size(uint64_t v, char *buf, size_t len)
{
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = (double)v;
	int i = 0;
	while (d >= 1024 && i < 4)
		d /= 1024, i++;
	snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", d, u[i]);
}

int cafs_idset_add_index(struct ca_idset *set, const struct ca_index *idx)
{
	for (size_t i = 0; i < ca_index_n_chunks(idx); i++) {
		uint64_t s, e;
		const uint8_t *id;
		ca_index_chunk(idx, i, &s, &e, &id);
		int r = ca_idset_add(set, id, e - s);
		if (r < 0)
			return r;
	}
	return 0;
}
