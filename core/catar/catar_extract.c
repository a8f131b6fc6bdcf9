/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* catar_extract.c - restore a decoded archive into a directory, fd-relative. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "catar/acl.h"
#include "catar/catar_extract_int.h"
#include "base/fdio.h"
#include "base/log.h"

#define COPY_BLOCK (1u << 20)

static void names_free(struct names *n)
{
	for (size_t i = 0; i < n->n; i++)
		free(n->v[i]);
	free(n->v);
	*n = (struct names){ 0 };
}

static int names_add(struct names *n, const char *s)
{
	if (n->n == n->cap) {
		size_t c = n->cap ? n->cap * 2 : 32;
		char **nv = realloc(n->v, c * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		n->v = nv;
		n->cap = c;
	}
	n->v[n->n] = strdup(s);
	if (!n->v[n->n])
		return -ENOMEM;
	n->n++;
	return 0;
}

/* the archive's names arrive in strcmp order: binary search */
static bool names_has(const struct names *n, const char *s)
{
	size_t lo = 0, hi = n->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(n->v[mid], s);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static bool same_mount(int a, int b)
{
	struct statx xa, xb;
	if (statx(a, "", AT_EMPTY_PATH, STATX_MNT_ID, &xa) == 0 && statx(b, "", AT_EMPTY_PATH, STATX_MNT_ID, &xb) == 0 &&
	    (xa.stx_mask & xb.stx_mask & STATX_MNT_ID))
		return xa.stx_mnt_id == xb.stx_mnt_id;
	struct stat sa, sb; /* kernels before 5.8: at least another file system shows */
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev;
}

/* Lift chattr +i / +a from fd: extract may have set them on what it made
 * (and --undo-immutable lifts them from what is in the way), and neither
 * the node nor (for a directory) its entries can go then. true: lifted. */
static bool unpin(int fd)
{
	unsigned f;
	if (ioctl(fd, FS_IOC_GETFLAGS, &f) < 0 || !(f & (FS_IMMUTABLE_FL | FS_APPEND_FL)))
		return false;
	f &= ~(unsigned)(FS_IMMUTABLE_FL | FS_APPEND_FL);
	return ioctl(fd, FS_IOC_SETFLAGS, &f) == 0;
}

/* The same for a regular file or directory name in dfd (only those get
 * flags; opening a device node could have side effects). */
static bool unpin_at(int dfd, const char *name)
{
	struct stat st;
	bool r = false;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)))
		return false;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
		r = unpin(fd);
	close(fd);
	return r;
}

/* Remove name in dfd, recursively, never following symlinks, crossing
 * mounts or leaving dfd. unpin_ok: a tree extract made (its hidden one),
 * or --undo-immutable: chattr +i/+a flags are lifted; elsewhere (--delete
 * in DEST) an immutable file stays, and its error says so. */
static int rm_rf_at(int dfd, const char *name, unsigned depth, bool unpin_ok)
{
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	int e = errno;
	if (e == EPERM && unpin_ok && unpin_at(dfd, name)) {
		if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
			return 0;
		e = errno;
	}
	if (e != EISDIR && e != EPERM)
		return -e;
	if (depth > CA_CATAR_DEPTH_MAX)
		return -ELOOP;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && fchmodat(dfd, name, 0700, 0) == 0) /* one we extracted, mode 0000 say */
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) /* not a directory after all: the unlink's error is the one */
		return errno == ENOTDIR ? -e : -errno;
	/* never empty something mounted in DEST (bind mounts share st_dev: compare mount ids) */
	if (!same_mount(dfd, fd)) {
		close(fd);
		return -EXDEV;
	}
	if (unpin_ok)
		(void)unpin(fd);
	struct stat st;
	if (fstat(fd, &st) == 0 && (st.st_mode & 0300) != 0300) /* without write, nothing in it can go */
		(void)fchmod(fd, (st.st_mode & 07777) | 0700);
	DIR *dir = fdopendir(fd);
	if (!dir) {
		int r = -errno;
		close(fd);
		return r;
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (errno = 0, de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r = rm_rf_at(fd, de->d_name, depth + 1, unpin_ok);
	}
	if (r == 0 && errno)
		r = -errno;
	closedir(dir);
	if (r == 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		r = -errno;
	return r;
}

static int tmp_name(struct ex *x, char out[48])
{
	/* a new random base after a collision, a counter otherwise */
	if (!x->tmp_base[0] || x->tmp_n == 0) {
		int r = ca_random_hex16(x->tmp_base);
		if (r < 0)
			return r;
	}
	snprintf(out, 48, ".#cafs%s%x", x->tmp_base, x->tmp_n++);
	return 0;
}

/* Make room for a new non-directory at name: renameat replaces files,
 * symlinks and special files itself, but not directories. */
static int clear_dir_at(int dfd, const char *name, bool undo)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return 0;
	return rm_rf_at(dfd, name, 0, undo);
}

/* The process umask without changing it (umask() would, for every thread):
 * from /proc, or -1. */
static int read_umask(void)
{
	char line[128];
	int m = -1;
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned v;
		if (sscanf(line, "Umask: %o", &v) == 1) {
			m = (int)(v & 0777);
			break;
		}
	}
	fclose(f);
	return m;
}

/* The mode to create a node with in p: its final one when that is what
 * the kernel will give it (no special bits, no umask or default ACL in
 * the way), so that apply_meta can skip the chmod; else owner-only. */
mode_t ca_ex_create_mode(const struct ex *x, const struct dir *p, uint64_t m)
{
	if (p->plain && x->umask >= 0 && !(m & 07000) && !(m & (uint64_t)x->umask))
		return (mode_t)(m & 0777);
	return 0600;
}

/* A fresh file's contents; zero blocks left as holes unless --punch-holes=no. */
static int write_payload(struct ex *x, int fd)
{
	uint64_t off = 0;
	bool tail_hole = false; /* the last bytes written were left a hole */
	for (;;) {
		if (x->o->cancel && *x->o->cancel)
			return -ECANCELED;
		/* written from where the decoded chunk is, where the source allows:
		 * a copy less of most of an archive's bytes (its large files) */
		const void *p = x->buf;
		ssize_t k = ca_catar_dec_peek_payload(x->dec, COPY_BLOCK, &p);
		if (k == -EOPNOTSUPP) {
			p = x->buf;
			k = ca_catar_dec_read_payload(x->dec, x->buf, COPY_BLOCK);
		}
		if (k < 0) {
			x->read_failed = true;
			return (int)k;
		}
		if (k == 0)
			/* a file that ends in a hole gets its size */
			return !x->o->no_holes && tail_hole && ftruncate(fd, (off_t)off) < 0 ? -errno : 0;
		int r = x->o->no_holes ? ca_write_all(fd, p, (size_t)k) : ca_write_sparse(fd, p, (size_t)k, off);
		if (r < 0)
			return r;
		tail_hole = !x->o->no_holes && ca_sparse_ends_in_hole(p, (size_t)k, off);
		off += (uint64_t)k;
		x->done += (uint64_t)k;
		if (x->o->progress)
			x->o->progress(x->o->progress_userdata, x->done);
	}
}

static int fill_file(struct ex *x, int fd, const char *path)
{
	int r = write_payload(x, fd);
	if (r < 0 && r != -ECANCELED) {
		if (!x->read_failed)
			ca_ex_fail(x, r, path);
		else if (r == -EBADMSG) /* the reader's other errors are its owner's to report */
			ca_log_error_errno(r, "%s: not a valid archive, at %s",
			                   x->o->archive_name ? x->o->archive_name : "archive", path);
	}
	return r;
}

/* An entry in a fresh (hidden) directory: straight under its final name. */
static int make_leaf_direct(struct ex *x, const struct ca_catar_node *n, struct dir *p, const char *path)
{
	uint64_t m = n->mode;
	mode_t cm = ca_ex_create_mode(x, p, m);
	int fd = -1, r;
	if (S_ISREG(m)) {
		fd = openat(p->fd, n->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, cm);
		r = fd < 0 ? -errno : 0;
	} else if (S_ISLNK(m)) {
		r = symlinkat(n->symlink_target, p->fd, n->name) < 0 ? -errno : 0;
	} else {
		dev_t dev = (S_ISBLK(m) || S_ISCHR(m)) ? makedev(n->device_major, n->device_minor) : 0;
		r = mknodat(p->fd, n->name, (mode_t)((m & S_IFMT) | cm), dev) < 0 ? -errno : 0;
		if (r == -EPERM || r == -EOPNOTSUPP)
			return ca_ex_skip_uncreatable(x, n, path, r);
	}
	if (r < 0)
		return ca_ex_fail(x, r, path);
	if (fd >= 0) {
		r = fill_file(x, fd, path);
		if (r < 0)
			goto out; /* the hidden tree goes, this file with it */
	}
	r = ca_ex_apply_meta(x, n, fd, p->fd, n->name, true, x->euid, p->child_gid, cm);
	if (r < 0) {
		ca_ex_fail(x, r, path);
	} else if (fd >= 0) {
		ca_ex_apply_projid(x, n, fd, !p->projinherit);
		ca_ex_apply_chattr(x, n, fd, true);
	}
out:
	if (fd >= 0)
		close(fd);
	return r;
}

static int make_leaf(struct ex *x, const struct ca_catar_node *n, struct dir *p, const char *path)
{
	char tmp[48];
	int fd = -1, r, dfd = p->fd;
	bool created = false;
	uint64_t m = n->mode;
	mode_t cm = ca_ex_create_mode(x, p, m);

	if (ca_ex_job_eligible(x, n, p)) {
		r = ca_ex_submit_job(x, n, p, path);
		if (r <= 0)
			return r;
	}
	if (p->fresh)
		return make_leaf_direct(x, n, p, path);
	for (int tries = 0; tries < 16 && !created; tries++) {
		r = tmp_name(x, tmp);
		if (r < 0)
			return ca_ex_fail(x, r, path);
		if (S_ISREG(m)) {
			fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, cm);
			r = fd < 0 ? -errno : 0;
		} else if (S_ISLNK(m)) {
			r = symlinkat(n->symlink_target, dfd, tmp) < 0 ? -errno : 0;
		} else {
			dev_t dev = (S_ISBLK(m) || S_ISCHR(m)) ? makedev(n->device_major, n->device_minor) : 0;
			r = mknodat(dfd, tmp, (mode_t)((m & S_IFMT) | cm), dev) < 0 ? -errno : 0;
			if (r == -EPERM || r == -EOPNOTSUPP)
				return ca_ex_skip_uncreatable(x, n, path, r);
		}
		if (r == 0)
			created = true;
		else if (r != -EEXIST)
			return ca_ex_fail(x, r, path);
		else
			x->tmp_n = 0;
	}
	if (!created)
		return ca_ex_fail(x, -EEXIST, path);

	if (S_ISREG(m)) {
		r = fill_file(x, fd, path);
		if (r < 0)
			goto undo;
	}
	r = ca_ex_apply_meta(x, n, fd, dfd, tmp, true, x->euid, p->child_gid, cm);
	if (r < 0)
		goto undo_log;
	if (!p->fresh) {
		r = clear_dir_at(dfd, n->name, x->o->undo_immutable);
		if (r < 0)
			goto undo_log;
	}
	r = renameat(dfd, tmp, dfd, n->name) < 0 ? -errno : 0;
	/* an immutable file is in the way: casync's --undo-immutable */
	if (r == -EPERM && x->o->undo_immutable && unpin_at(dfd, n->name))
		r = renameat(dfd, tmp, dfd, n->name) < 0 ? -errno : 0;
	if (r < 0)
		goto undo_log;
	if (fd >= 0) {
		ca_ex_apply_projid(x, n, fd, !p->projinherit);
		ca_ex_apply_chattr(x, n, fd, true);
		close(fd);
	}
	return 0;
undo_log:
	ca_ex_fail(x, r, path);
undo:
	if (fd >= 0)
		close(fd);
	unlinkat(dfd, tmp, 0);
	return r;
}

/* parent: the directory holding it, NULL for DEST */
static int push_dir(struct ex *x, int fd, bool fresh, const struct dir *parent)
{
	/* parent may point into dirs, which may move below: read it first */
	struct stat st;
	struct dir d = { .fd = fd, .fresh = fresh, .uid = (uid_t)-1, .gid = (gid_t)-1, .child_gid = x->egid };
	if (fstat(fd, &st) == 0) {
		d.uid = st.st_uid;
		d.gid = st.st_gid;
		if (st.st_mode & S_ISGID)
			d.child_gid = st.st_gid;
		/* made by us in a directory without a default ACL: it has none either */
		if (fresh && parent)
			d.plain = parent->plain;
		else if (fgetxattr(fd, CA_ACL_XATTR_DEFAULT, NULL, 0) < 0)
			d.plain = errno == ENODATA || errno == ENOTSUP || errno == EOPNOTSUPP;
	}
	/* the same for project id inheritance (our directories get their flags at their end) */
	struct fsxattr fa;
	if (fresh && parent)
		d.projinherit = parent->projinherit;
	else if ((x->flags & CA_FORMAT_WITH_QUOTA_PROJID) && ioctl(fd, FS_IOC_FSGETXATTR, &fa) == 0)
		d.projinherit = fa.fsx_xflags & FS_XFLAG_PROJINHERIT;
	if (x->depth == x->cap) { /* workers never look at dirs, only at tracks */
		size_t c = x->cap ? x->cap * 2 : 16;
		struct dir *nd = realloc(x->dirs, c * sizeof(*nd));
		if (!nd)
			return -ENOMEM;
		x->dirs = nd;
		x->cap = c;
	}
	x->dirs[x->depth++] = d;
	return 0;
}

/* Make a new directory out of sight: under a temporary name in dfd. */
static int mkdir_hidden(struct ex *x, int dfd, char tmp[48])
{
	for (int tries = 0; tries < 16; tries++) {
		int r = tmp_name(x, tmp);
		if (r < 0)
			return r;
		if (mkdirat(dfd, tmp, 0700) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
		x->tmp_n = 0; /* a new random base */
	}
	return -EEXIST;
}

/* The directory just pushed was made by mkdir_hidden in parent_fd. */
static int mark_hidden(struct ex *x, int parent_fd, const char *tmp, const char *name)
{
	struct dir *d = &x->dirs[x->depth - 1];
	d->final_name = strdup(name);
	if (!d->final_name)
		return -ENOMEM;
	d->hidden_root = true;
	d->parent_fd = parent_fd;
	snprintf(d->tmp, sizeof(d->tmp), "%s", tmp);
	return 0;
}

static int make_dir(struct ex *x, const struct ca_catar_node *n, const struct dir *p, const char *path)
{
	struct stat st;
	char tmp[48] = "";
	bool fresh = true;
	int fd, r, dfd = p->fd;
	const char *at = n->name;
	if (p->fresh) {
		/* owner-only until its children are in: the archive's mode may not let us write */
		if (mkdirat(dfd, n->name, 0700) < 0)
			return ca_ex_fail(x, -errno, path);
	} else {
		/* a directory there is reused; anything else is replaced */
		if (fstatat(dfd, n->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISDIR(st.st_mode))
				fresh = false;
			else if (unlinkat(dfd, n->name, 0) < 0)
				return ca_ex_fail(x, -errno, path);
		} else if (errno != ENOENT) {
			return ca_ex_fail(x, -errno, path);
		}
		if (fresh) {
			r = mkdir_hidden(x, dfd, tmp);
			if (r < 0)
				return ca_ex_fail(x, r, path);
			at = tmp;
		}
	}
	fd = openat(dfd, at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto undo;
	}
	if (!fresh && fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700)
		(void)fchmod(fd, (st.st_mode & 07777) | 0700);
	r = push_dir(x, fd, fresh, p);
	if (r < 0) {
		close(fd);
		goto undo;
	}
	if (*tmp) {
		r = mark_hidden(x, dfd, tmp, n->name);
		if (r < 0) {
			x->depth--;
			close(fd);
			goto undo;
		}
	}
	return 0;
undo:
	if (*tmp)
		unlinkat(dfd, tmp, AT_REMOVEDIR);
	return ca_ex_fail(x, r, path);
}

/* DEST: used as it is when it exists (followed if it is a symlink: the
 * user named it); a new one is built hidden in its parent. */
static int open_dest(struct ex *x)
{
	struct stat st;
	char tmp[48];
	int fd, r;
	if (lstat(x->dest, &st) == 0 || errno != ENOENT) {
		fd = open(x->dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return ca_log_error_errno(errno, "%s", x->dest);
		r = push_dir(x, fd, false, NULL);
		if (r < 0) {
			close(fd);
			return ca_log_error_errno(r, "%s", x->dest);
		}
		return 0;
	}
	/* its parent and its last component ("a/b/" -> "a", "b") */
	char *parent = strdup(x->dest);
	if (!parent)
		return ca_log_error_errno(ENOMEM, "%s", x->dest);
	size_t l = strlen(parent);
	while (l > 1 && parent[l - 1] == '/')
		parent[--l] = 0;
	char *slash = strrchr(parent, '/'), *base = slash ? slash + 1 : parent;
	const char *dir = slash == parent ? "/" : slash ? parent : ".";
	if (slash)
		*slash = 0;
	x->dest_parent_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x->dest_parent_fd < 0) {
		r = ca_log_error_errno(errno, "%s", x->dest);
		goto out;
	}
	r = mkdir_hidden(x, x->dest_parent_fd, tmp);
	if (r < 0) {
		ca_log_error_errno(r, "%s", x->dest);
		goto out;
	}
	fd = openat(x->dest_parent_fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = fd < 0 ? -errno : push_dir(x, fd, true, NULL);
	if (r == 0) {
		r = mark_hidden(x, x->dest_parent_fd, tmp, base);
		if (r < 0)
			x->depth--;
	}
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		unlinkat(x->dest_parent_fd, tmp, AT_REMOVEDIR);
		ca_log_error_errno(r, "%s", x->dest);
	}
out:
	free(parent);
	return r;
}

/* Remove what the archive does not have from a directory we reused. */
static int delete_extra(struct ex *x, struct dir *d, const char *path)
{
	int fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ca_ex_fail(x, -errno, path);
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return ca_ex_fail(x, -errno, path);
	}
	struct names extra = { 0 };
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!names_has(&d->names, de->d_name))
			r = names_add(&extra, de->d_name);
	}
	closedir(dir);
	for (size_t i = 0; r == 0 && i < extra.n; i++) {
		r = rm_rf_at(d->fd, extra.v[i], 0, x->o->undo_immutable);
		if (r == -EXDEV)
			ca_log_error("%s/%s%s%s: something is mounted there: not removed", x->dest, path, *path ? "/" : "",
			             extra.v[i]);
		else if (r < 0)
			ca_log_error_errno(r, "%s/%s%s%s", x->dest, path, *path ? "/" : "", extra.v[i]);
	}
	names_free(&extra);
	return r;
}

static void dir_pop(struct ex *x, bool close_fd)
{
	struct dir *d = &x->dirs[--x->depth];
	if (close_fd)
		close(d->fd);
	names_free(&d->names);
	free(d->final_name);
}

/* After an error: a hidden directory and all in it go. */
static void drop_hidden(struct ex *x, const struct dir *d)
{
	int r = rm_rf_at(d->parent_fd, d->tmp, 0, true);
	if (r < 0)
		ca_log_warning_errno(r, "cannot remove the partial tree %s (%s)", d->tmp, d->final_name);
}

/* A hidden directory is complete: it takes its name (never replacing
 * anything: there was nothing there when it was made). */
static int reveal(int pfd, const char *tmp, const char *name)
{
	if (renameat2(pfd, tmp, pfd, name, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno;
	/* a file system without RENAME_NOREPLACE */
	if (faccessat(pfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	return renameat(pfd, tmp, pfd, name) < 0 ? -errno : 0;
}

static int dir_done(struct ex *x, const struct ca_catar_node *n, const char *path)
{
	struct dir *d = &x->dirs[x->depth - 1];
	int r = 0;
	/* before it shows, its whole subtree must be in: everything queued is in it */
	if (d->hidden_root)
		r = ca_ex_pool_drain(&x->pool);
	/* its mode and mtime go on once every file in it is complete */
	if (r == 0 && d->track) {
		struct pool *p = &x->pool;
		pthread_mutex_lock(&p->lock);
		bool deferred = ca_ex_defer_dir(x, n, d, path);
		if (!deferred)
			r = ca_ex_pool_wait_dir_locked(p, d);
		pthread_mutex_unlock(&p->lock);
		if (deferred) {
			dir_pop(x, false);
			return 0;
		}
		free(d->track);
		d->track = NULL;
	}
	if (r == 0 && !x->o->no_delete && !d->fresh)
		r = delete_extra(x, d, path);
	if (r == 0 && d->hidden_root) {
		r = reveal(d->parent_fd, d->tmp, d->final_name);
		if (r < 0)
			ca_ex_fail(x, r, path);
	}
	if (r < 0) {
		if (d->hidden_root)
			drop_hidden(x, d);
		dir_pop(x, true);
		return r;
	}
	/* a directory we made still inherited a default ACL from a parent with one */
	r = ca_ex_apply_meta(x, n, d->fd, -1, NULL, d->fresh && d->plain, d->uid, d->gid, (mode_t)-1);
	if (r < 0) {
		ca_ex_fail(x, r, path);
	} else {
		ca_ex_apply_projid(x, n, d->fd, d->fresh && !d->projinherit);
		ca_ex_apply_chattr(x, n, d->fd, d->fresh);
	}
	dir_pop(x, true);
	return r;
}

int ca_catar_extract(struct ca_catar_dec *d, const char *dest, const struct ca_catar_extract_opts *opts)
{
	static const struct ca_catar_extract_opts defaults = { 0 };
	struct ex x = { .dec = d, .o = opts ? opts : &defaults, .dest = dest, .as_root = geteuid() == 0,
		        .euid = geteuid(), .egid = getegid(), .umask = read_umask(), .dest_parent_fd = -1 };
	const struct ca_catar_node *n;
	struct rlimit rl;
	int r;

	/* one fd per directory level: let deep trees use what the hard limit allows */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	x.n_threads = ncpu < 2 ? 0 : ncpu > (long)POOL_THREADS_MAX ? POOL_THREADS_MAX : (unsigned)ncpu;
	x.policy = (struct ca_xattr_policy){ .trusted = x.as_root, .selinux = ca_xattr_host_selinux(),
		                             .overlay = x.o->overlay_xattrs };
	x.buf = malloc(COPY_BLOCK);
	if (!x.buf)
		return ca_log_error_errno(ENOMEM, "%s", dest);

	for (;;) {
		if (x.o->cancel && *x.o->cancel) {
			r = -ECANCELED;
			break;
		}
		r = __atomic_load_n(&x.pool_err, __ATOMIC_ACQUIRE);
		if (r < 0) /* a worker logged it */
			break;
		r = ca_catar_dec_next(d, &n);
		const char *path = ca_catar_dec_path(d);
		if (r < 0) {
			const char *an = x.o->archive_name ? x.o->archive_name : "archive";
			if (r == -EBADMSG)
				ca_log_error_errno(r, "%s: not a valid archive%s%s", an, *path ? ", at " : "", path);
			break;
		}
		if (r == CA_CATAR_DEC_DONE)
			break;
		/* --uid-shift: the owners on disk; a copy of the node (its
		 * buffers stay the decoder's, valid until the next step) */
		struct ca_catar_node shifted;
		if (x.o->uid_shift.on) {
			shifted = *n;
			if (ca_uid_shift_decode(&x.o->uid_shift, n->uid, &shifted.uid) < 0 ||
			    ca_uid_shift_decode(&x.o->uid_shift, n->gid, &shifted.gid) < 0) {
				r = ca_ex_fail(&x, -EINVAL, path);
				break;
			}
			n = &shifted;
		}
		if (r == CA_CATAR_DEC_DIR_END) {
			r = dir_done(&x, n, path);
			if (r < 0)
				break;
			continue;
		}
		if (x.depth == 0) { /* the root: DEST itself */
			x.flags = n->feature_flags;
			r = open_dest(&x);
			if (r < 0)
				break;
			continue;
		}
		struct dir *parent = &x.dirs[x.depth - 1];
		if (!x.o->no_delete && !parent->fresh) {
			r = names_add(&parent->names, n->name);
			if (r < 0) {
				ca_ex_fail(&x, r, path);
				break;
			}
		}
		r = S_ISDIR(n->mode) ? make_dir(&x, n, parent, path) : make_leaf(&x, n, parent, path);
		if (r < 0)
			break;
	}
	int k = ca_ex_pool_stop(&x, r < 0);
	if (r >= 0 && k < 0)
		r = k;
	/* after an error: the workers are gone, their tracks are ours, and the
	 * outermost hidden directory (all the others are inside it) goes */
	for (size_t i = 0; i < x.depth; i++)
		if (x.dirs[i].hidden_root) {
			drop_hidden(&x, &x.dirs[i]);
			break;
		}
	while (x.depth > 0) {
		free(x.dirs[x.depth - 1].track);
		dir_pop(&x, true);
	}
	if (x.dest_parent_fd >= 0)
		close(x.dest_parent_fd);
	if (r >= 0)
		ca_ex_report_skipped(&x);
	/* the rest is in place; the exit says not all of it (as GNU tar's) */
	if (r >= 0 && x.uncreatable) {
		ca_log_error("%s: %" PRIu64 " entr%s of the archive could not be created (see above)", dest, x.uncreatable,
		             x.uncreatable == 1 ? "y" : "ies");
		r = -EPERM;
	}
	for (size_t i = 0; i < EX_SKIP_NAMES; i++)
		free(x.skip_names[i]);
	free(x.dirs);
	free(x.buf);
	return r < 0 ? r : 0;
}
