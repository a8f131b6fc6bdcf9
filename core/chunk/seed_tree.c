/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seed_tree.c - hard links to, and clones of, seed files in an extracted tree. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "format/format.h"
#include "chunk/seed_tree.h"
#include "base/log.h"
#include "base/atomic_file.h"

#define MAX_DEPTH 4096

struct seed_file {
	char *path;
	struct stat st;
};

struct hl {
	struct seed_file *v;
	size_t n, cap;
	uint64_t flags;
	const struct ca_seed_tree_opts *o;
	char *const *seeds;
	size_t n_seeds;
	bool no_clone; /* the file system refused a clone */
	struct ca_seed_tree_stats stats;
	unsigned tmp_n;
};

static int add_seed_file(struct hl *h, const char *path, const struct stat *st)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 256;
		struct seed_file *v = realloc(h->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	h->v[h->n].path = strdup(path);
	if (!h->v[h->n].path)
		return -ENOMEM;
	h->v[h->n++].st = *st;
	return 0;
}

/* every regular file under path (symlinks not followed) */
static int walk_seed(struct hl *h, const char *path, unsigned depth)
{
	DIR *d = depth < MAX_DEPTH ? opendir(path) : NULL;
	struct dirent *e;
	int r = 0;
	if (!d)
		return 0; /* a seed is best effort */
	while (r == 0 && (e = readdir(d))) {
		struct stat st;
		char *p = NULL;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (asprintf(&p, "%s/%s", path, e->d_name) < 0)
			return closedir(d), -ENOMEM;
		if (lstat(p, &st) == 0) {
			if (S_ISREG(st.st_mode))
				r = add_seed_file(h, p, &st);
			else if (S_ISDIR(st.st_mode))
				r = walk_seed(h, p, depth + 1);
		}
		free(p);
	}
	closedir(d);
	return r;
}

static int by_size(const void *a, const void *b)
{
	const struct seed_file *x = a, *y = b;
	return x->st.st_size < y->st.st_size ? -1 : x->st.st_size > y->st.st_size;
}

static uint64_t granularity(uint64_t f)
{
	if (f & CA_FORMAT_WITH_NSEC_TIME)
		return 1;
	if (f & CA_FORMAT_WITH_USEC_TIME)
		return 1000;
	if (f & CA_FORMAT_WITH_SEC_TIME)
		return 1000000000;
	if (f & CA_FORMAT_WITH_2SEC_TIME)
		return 2000000000;
	return 0;
}

static uint64_t ns(struct timespec t)
{
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* casync's superficial checks: mode under its mask, owner, mtime */
static bool same_meta(const struct hl *h, const struct stat *a, const struct stat *b)
{
	/* the mode as casync's encoder stores it, so as its seed's digest has it */
	mode_t mask = h->flags & (CA_FORMAT_WITH_PERMISSIONS | CA_FORMAT_WITH_ACL) ? 07777 :
	              h->flags & CA_FORMAT_WITH_READ_ONLY ? 0200 : 0;
	uint64_t g = granularity(h->flags);
	if (a->st_size != b->st_size || ((a->st_mode ^ b->st_mode) & mask) || a->st_dev != b->st_dev)
		return false;
	if ((h->flags & (CA_FORMAT_WITH_16BIT_UIDS | CA_FORMAT_WITH_32BIT_UIDS)) &&
	    (a->st_uid != b->st_uid || a->st_gid != b->st_gid))
		return false;
	return !g || ns(a->st_mtim) / g == ns(b->st_mtim) / g;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the sorted, NUL-separated names of fd's xattrs in *ret (malloc'd), count in *ret_n */
static ssize_t xattr_names(int fd, char **ret)
{
	ssize_t n = flistxattr(fd, NULL, 0);
	*ret = NULL;
	if (n <= 0)
		return n < 0 && errno != ENOTSUP ? -errno : 0;
	char *buf = malloc((size_t)n + 1);
	if (!buf)
		return -ENOMEM;
	n = flistxattr(fd, buf, (size_t)n);
	if (n < 0) {
		free(buf);
		return -errno;
	}
	*ret = buf;
	return n;
}

/* the same xattrs with the same values */
static bool same_xattrs(int a, int b)
{
	char *na = NULL, *nb = NULL, **va = NULL, **vb = NULL;
	bool same = false;
	ssize_t la = xattr_names(a, &na), lb = xattr_names(b, &nb);
	size_t ka = 0, kb = 0;
	if (la < 0 || lb < 0 || la != lb)
		goto out;
	for (ssize_t i = 0; i < la; i += (ssize_t)strlen(na + i) + 1)
		ka++;
	for (ssize_t i = 0; i < lb; i += (ssize_t)strlen(nb + i) + 1)
		kb++;
	if (ka != kb)
		goto out;
	va = calloc(ka + 1, sizeof(char *));
	vb = calloc(kb + 1, sizeof(char *));
	if (!va || !vb)
		goto out;
	for (ssize_t i = 0, j = 0; i < la; i += (ssize_t)strlen(na + i) + 1)
		va[j++] = na + i;
	for (ssize_t i = 0, j = 0; i < lb; i += (ssize_t)strlen(nb + i) + 1)
		vb[j++] = nb + i;
	qsort(va, ka, sizeof(char *), cmp_names);
	qsort(vb, kb, sizeof(char *), cmp_names);
	same = true;
	for (size_t i = 0; same && i < ka; i++) {
		char x[65536], y[65536];
		ssize_t sx, sy;
		if (strcmp(va[i], vb[i])) {
			same = false;
			break;
		}
		sx = fgetxattr(a, va[i], x, sizeof(x));
		sy = fgetxattr(b, vb[i], y, sizeof(y));
		same = sx >= 0 && sx == sy && !memcmp(x, y, (size_t)sx);
	}
out:
	free(va);
	free(vb);
	free(na);
	free(nb);
	return same;
}

static bool same_chattr(int a, int b)
{
	unsigned fa = 0, fb = 0;
	bool ka = ioctl(a, FS_IOC_GETFLAGS, &fa) == 0, kb = ioctl(b, FS_IOC_GETFLAGS, &fb) == 0;
	/* a file system without chattr flags has none to differ */
	return ka == kb && (!ka || fa == fb);
}

static bool same_bytes(int a, int b)
{
	static const size_t N = 65536;
	char *x = malloc(N), *y = malloc(N);
	bool same = x && y;
	off_t off = 0;
	while (same) {
		ssize_t k = pread(a, x, N, off), l = pread(b, y, N, off);
		if (k < 0 || k != l || memcmp(x, y, (size_t)k))
			same = false;
		if (k <= 0)
			break;
		off += k;
	}
	free(x);
	free(y);
	return same;
}

/* link the seed file over dfd/name; 1 done, 0 not possible, < 0 error */
static int link_over(struct hl *h, int dfd, const char *name, const char *seed)
{
	char tmp[48];
	char base[17];
	int r = ca_random_hex16(base);
	if (r < 0)
		return r;
	snprintf(tmp, sizeof(tmp), ".#cafs%s%x", base, h->tmp_n++);
	if (linkat(AT_FDCWD, seed, dfd, tmp, 0) < 0)
		return errno == EXDEV || errno == EMLINK || errno == EPERM || errno == ENOENT ? 0 : -errno;
	if (renameat(dfd, tmp, dfd, name) < 0) {
		r = errno == EPERM ? 0 : -errno; /* an immutable file stays */
		unlinkat(dfd, tmp, 0);
		return r;
	}
	return 1;
}

static int try_file(struct hl *h, int dfd, const char *name, const struct stat *st, const char *path)
{
	struct seed_file key = { .st.st_size = st->st_size };
	struct seed_file *c = bsearch(&key, h->v, h->n, sizeof(*h->v), by_size);
	int fd, r = 0;
	if (!c)
		return 0;
	while (c > h->v && c[-1].st.st_size == st->st_size)
		c--;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return ca_log_error_errno(errno, "%s", path);
	for (; r == 0 && c < h->v + h->n && c->st.st_size == st->st_size; c++) {
		struct stat ss;
		if (c->st.st_ino == st->st_ino && c->st.st_dev == st->st_dev)
			break; /* already that file */
		int sfd = open(c->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
		if (sfd < 0)
			continue;
		/* the seed now, not when it was listed */
		if (fstat(sfd, &ss) == 0 && S_ISREG(ss.st_mode) && same_meta(h, st, &ss) &&
		    (!(h->flags & (CA_FORMAT_WITH_XATTRS | CA_FORMAT_WITH_ACL | CA_FORMAT_WITH_FCAPS |
		                   CA_FORMAT_WITH_SELINUX)) || same_xattrs(fd, sfd)) &&
		    same_chattr(fd, sfd) && same_bytes(fd, sfd)) {
			r = link_over(h, dfd, name, c->path);
			if (r > 0) {
				h->stats.linked_files++;
				h->stats.linked_bytes += (uint64_t)st->st_size;
			} else if (r < 0) {
				ca_log_error_errno(r, "%s", path);
			}
		}
		close(sfd);
	}
	close(fd);
	return r;
}

#define BLOCK 4096u
#define RUN_MAX (1u << 20)

/* clone len bytes at off from sfd into fd, where they are equal to
 * want; 0 done (or put back as they were), 1 the file system refuses */
static int clone_run(struct hl *h, int sfd, int fd, uint64_t off, uint64_t len, const char *want, char *check)
{
	struct file_clone_range fcr = { .src_fd = sfd, .src_offset = off, .src_length = len, .dest_offset = off };
	if (ioctl(fd, FICLONERANGE, &fcr) < 0)
		return errno == EOPNOTSUPP || errno == EXDEV || errno == EINVAL || errno == ENOTTY ? 1 : 0;
	/* the seed may have changed since it was compared: read back */
	if (pread(fd, check, len, (off_t)off) != (ssize_t)len || memcmp(check, want, len)) {
		if (pwrite(fd, want, len, (off_t)off) != (ssize_t)len)
			return -EIO;
		return 0;
	}
	h->stats.cloned_bytes += len;
	return 0;
}

/* the blocks of dfd/name equal to those of the seed at rel, cloned */
static int clone_file(struct hl *h, int dfd, const char *name, const struct stat *st, const char *rel,
                      const char *path)
{
	char *a = NULL, *b = NULL, *c = NULL;
	int fd = -1, r = 0;
	for (size_t i = 0; !h->no_clone && r == 0 && i < h->n_seeds; i++) {
		char *sp = NULL;
		struct stat ss;
		int sfd;
		if (asprintf(&sp, "%s/%s", h->seeds[i], rel) < 0)
			return -ENOMEM;
		sfd = open(sp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
		free(sp);
		if (sfd < 0)
			continue;
		/* the same file (DEST inside a seed, or already linked) has nothing to clone */
		if (fstat(sfd, &ss) < 0 || !S_ISREG(ss.st_mode) || ss.st_dev != st->st_dev || ss.st_size < BLOCK ||
		    ss.st_ino == st->st_ino) {
			close(sfd);
			continue;
		}
		if (fd < 0) {
			fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
			a = malloc(RUN_MAX);
			b = malloc(RUN_MAX);
			c = malloc(RUN_MAX);
			if (fd < 0 || !a || !b || !c) {
				close(sfd);
				break; /* not writable here: it stays as written */
			}
		}
		uint64_t end = (uint64_t)(ss.st_size < st->st_size ? ss.st_size : st->st_size) / BLOCK * BLOCK;
		for (uint64_t off = 0; r == 0 && off < end;) {
			size_t n = end - off < RUN_MAX ? (size_t)(end - off) : RUN_MAX;
			if (pread(fd, a, n, (off_t)off) != (ssize_t)n || pread(sfd, b, n, (off_t)off) != (ssize_t)n)
				break;
			/* runs of equal blocks in this window */
			for (size_t k = 0; r == 0 && k < n;) {
				size_t e = k;
				while (e < n && !memcmp(a + e, b + e, BLOCK))
					e += BLOCK;
				if (e > k) {
					r = clone_run(h, sfd, fd, off + k, e - k, a + k, c);
					if (r > 0) {
						h->no_clone = true;
						r = 0;
						end = 0;
						break;
					}
				}
				k = e + BLOCK;
			}
			off += n;
		}
		close(sfd);
	}
	if (fd >= 0) {
		/* writing moved the mtime: it is the archive's */
		struct timespec ts[2] = { st->st_atim, st->st_mtim };
		futimens(fd, ts);
		close(fd);
	}
	free(a);
	free(b);
	free(c);
	if (r < 0)
		ca_log_error_errno(r, "%s", path);
	return r;
}

static int walk_dest(struct hl *h, int dfd, const char *path, const char *rel, unsigned depth)
{
	int fd = dup(dfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;
	struct stat before, after;
	int r = 0;
	/* a link put in place (link, rename) moves the directory's mtime,
	 * which the extract set from the archive: it is put back */
	bool timed = fstat(dfd, &before) == 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return ca_log_error_errno(errno, "%s", path);
	}
	while (r == 0 && (e = readdir(d))) {
		struct stat st;
		char *p = NULL;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		char *q = NULL;
		if (asprintf(&p, "%s/%s", path, e->d_name) < 0 ||
		    asprintf(&q, "%s%s%s", rel, *rel ? "/" : "", e->d_name) < 0) {
			free(p);
			r = -ENOMEM;
			break;
		}
		if (S_ISREG(st.st_mode)) {
			r = h->o->hardlink && h->n ? try_file(h, dfd, e->d_name, &st, p) : 0;
			if (r == 0 && h->o->reflink && !h->no_clone && st.st_size >= BLOCK)
				r = clone_file(h, dfd, e->d_name, &st, q, p);
			r = r < 0 ? r : 0;
		} else if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH) {
			int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				r = ca_log_error_errno(errno, "%s", p);
			} else {
				r = walk_dest(h, sub, p, q, depth + 1);
				close(sub);
			}
		}
		free(p);
		free(q);
	}
	closedir(d);
	if (timed && fstat(dfd, &after) == 0 &&
	    (after.st_mtim.tv_sec != before.st_mtim.tv_sec || after.st_mtim.tv_nsec != before.st_mtim.tv_nsec)) {
		struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, before.st_mtim };
		(void)futimens(dfd, ts); /* best effort, as the extract's own times */
	}
	return r;
}

int ca_seed_tree_apply(const char *dest, char *const *seeds, size_t n_seeds, const struct ca_seed_tree_opts *o,
                       struct ca_seed_tree_stats *ret_stats)
{
	struct hl h = { .flags = o->feature_flags, .o = o };
	struct stat st;
	int r = 0, fd = -1;
	char **dirs = calloc(n_seeds + 1, sizeof(char *));
	if (!dirs)
		return ca_log_error_errno(ENOMEM, "%s", dest);
	for (size_t i = 0; i < n_seeds; i++)
		if (stat(seeds[i], &st) == 0 && S_ISDIR(st.st_mode))
			dirs[h.n_seeds++] = seeds[i];
	h.seeds = dirs;
	for (size_t i = 0; r == 0 && o->hardlink && i < h.n_seeds; i++)
		r = walk_seed(&h, dirs[i], 0);
	if (r < 0) {
		ca_log_error_errno(r, "seed");
		goto out;
	}
	if (h.n_seeds == 0 || (!o->reflink && h.n == 0))
		goto out;
	if (h.n)
		qsort(h.v, h.n, sizeof(*h.v), by_size);
	fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = ca_log_error_errno(errno, "%s", dest);
		goto out;
	}
	/* a file's path in a seed is its path in the archive */
	const char *sub = o->subtree ? o->subtree : "";
	while (*sub == '/')
		sub++;
	char *rel = strdup(sub);
	if (!rel) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t n = strlen(rel); n > 0 && rel[n - 1] == '/'; n--)
		rel[n - 1] = 0;
	r = walk_dest(&h, fd, dest, rel, 0);
	free(rel);
out:
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < h.n; i++)
		free(h.v[i].path);
	free(h.v);
	free(dirs);
	if (ret_stats)
		*ret_stats = h.stats;
	return r;
}
