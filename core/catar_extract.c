/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* catar_extract.c - restore a decoded archive into a directory, fd-relative. */
#include "config.h"

#include <acl/libacl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "atomic_file.h"
#include "catar_extract.h"
#include "feature.h"
#include "fdio.h"
#include "log.h"

#define COPY_BLOCK (1u << 20)
/* Worker threads create small plain files while the decoder goes on:
 * creating a file costs far more in the kernel than decoding it. */
#define POOL_THREADS_MAX 3u
#define JOB_SIZE_MAX (256u << 10) /* larger files the decoder thread writes itself */
#define QUEUE_LEN 128u
#define QUEUE_BYTES (16u << 20)

#define TIME_FLAGS                                                                                       \
	(CA_FORMAT_WITH_NSEC_TIME | CA_FORMAT_WITH_USEC_TIME | CA_FORMAT_WITH_SEC_TIME | CA_FORMAT_WITH_2SEC_TIME)
#define UID_FLAGS (CA_FORMAT_WITH_16BIT_UIDS | CA_FORMAT_WITH_32BIT_UIDS)

struct names {
	char **v;
	size_t n, cap;
};

/* New directories are built out of sight: the outermost one under a
 * temporary name in its parent, renamed to its own when it is complete
 * (its whole subtree included). Everything inside it is then created
 * directly under its final name (one directory operation per entry, no
 * temporary name, no O_TMPFILE + link), yet no path under DEST ever shows
 * a partial file, and a new DEST appears complete or not at all. An
 * existing directory is updated in place: entries made there go through
 * a temporary name and a rename that replaces the old one. */
struct dir {
	int fd;
	bool fresh;         /* we created it: out of sight, nothing in it needs replacing or deleting */
	bool hidden_root;   /* fresh, in a directory that is not: under tmp in parent_fd until its end */
	int parent_fd;      /* hidden_root: the directory holding it (not ours to close) */
	char tmp[48];       /* hidden_root: its temporary name */
	bool plain;         /* no default ACL: files created here get their mode minus the umask */
	uid_t uid;          /* its owner when opened (we change it only at its end) */
	gid_t gid;
	gid_t child_gid;    /* the group a file created in it gets (setgid directories pass theirs on) */
	struct track *track; /* once a job for a file in it was queued */
	char *final_name;   /* hidden_root: its name (the node's, or DEST's last component) */
	struct names names; /* children the archive has, for --delete (not kept when fresh) */
};

/* The owner, mode and times a plain directory gets once it is complete. */
struct dir_meta {
	bool chown, times;
	uid_t uid;
	gid_t gid;
	mode_t mode;
	struct timespec ts[2];
};

/* A directory's queued files, shared by the decoder and the workers (under
 * pool.lock). The decoder does not wait at the end of a plain directory
 * whose files are still being written: it leaves the directory's fd and
 * metadata here, and the worker that finishes the last file applies them.
 * Waiting there would drain the queue at every directory end, leaving the
 * workers idle, and most directories of a real tree hold a few files. */
struct track {
	unsigned pending; /* jobs queued or running */
	bool left;        /* the decoder is done with it: fd and meta are the workers' */
	int fd;
	struct dir_meta meta;
	char *path; /* for messages */
};

/* One small regular file for a worker: everything apply_meta would do for
 * a file without xattrs, ACLs, fcaps or chattr flags. */
struct job {
	struct track *track;
	int dfd;
	mode_t create_mode, mode;
	bool chown, chmod, times;
	uid_t uid;
	gid_t gid;
	struct timespec ts[2];
	size_t size;
	const char *name; /* in path's allocation */
	char *path;       /* for messages */
	uint8_t data[];
};

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t work; /* workers: a job queued, or stop */
	pthread_cond_t done; /* decoder: what it waits for came true (see worker_done) */
	struct job *q[QUEUE_LEN];
	size_t head, n, bytes;
	bool stop, abort;
	size_t idle;         /* workers waiting in work */
	size_t outstanding;  /* jobs queued or running, directory metadata included */
	bool waiting;        /* the decoder waits in done: for wait_track, a drain, or room */
	bool wait_drain;
	struct track *wait_track;
	int err; /* a worker's first error (logged by it) */
	pthread_t th[POOL_THREADS_MAX];
	size_t n_th;
	bool started;
};

struct ex {
	struct ca_catar_dec *dec;
	const struct ca_catar_extract_opts *o;
	const char *dest;
	uint64_t flags;
	bool as_root;
	uid_t euid;
	gid_t egid;
	int umask; /* the process's, or -1 when unknown */
	bool warned_owner, warned_xattr, warned_acl, warned_chattr, warned_selinux;
	struct dir *dirs;
	size_t depth, cap;
	uint8_t *buf;
	uint64_t done;
	bool read_failed;
	char tmp_base[17]; /* temporary names: ".#cafs" + this + a counter */
	unsigned tmp_n;
	int dest_parent_fd; /* a new DEST's parent, while DEST is hidden */
	unsigned n_threads; /* workers to start (0: none) */
	struct pool pool;
	int pool_err;      /* copy of pool.err, read by the decoder thread (atomic) */
};

static int fail(struct ex *x, int r, const char *path)
{
	if (r == -EXDEV) {
		ca_log_error("%s%s%s: something is mounted there: not removed", x->dest, *path ? "/" : "", path);
		return r;
	}
	return ca_log_error_errno(r, "%s%s%s", x->dest, *path ? "/" : "", path);
}

static void warn_once(bool *flag, int r, const char *what)
{
	if (*flag)
		return;
	*flag = true;
	if (r)
		ca_log_warning_errno(r, "cannot restore %s, skipping them", what);
	else
		ca_log_warning("cannot restore %s, skipping them", what);
}

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

/* Remove name in dfd, recursively, never following symlinks or crossing mounts. */
static int rm_rf_at(int dfd, const char *name, unsigned depth)
{
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth > CA_CATAR_DEPTH_MAX)
		return -ELOOP;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && fchmodat(dfd, name, 0700, 0) == 0) /* one we extracted, mode 0000 say */
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* never empty something mounted in DEST (bind mounts share st_dev: compare mount ids) */
	if (!same_mount(dfd, fd)) {
		close(fd);
		return -EXDEV;
	}
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
		r = rm_rf_at(fd, de->d_name, depth + 1);
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

/* "/proc/self/fd/N/name": reaches name in the directory fd without
 * resolving anything but the final component (l* calls don't follow it). */
static void proc_path(char *out, size_t n, int dfd, const char *name)
{
	snprintf(out, n, "/proc/self/fd/%d/%s", dfd, name);
}

static void set_perms(acl_entry_t e, uint64_t p)
{
	acl_permset_t ps;
	if (acl_get_permset(e, &ps) < 0)
		return;
	acl_clear_perms(ps);
	if (p & CA_ACL_PERM_READ)
		acl_add_perm(ps, ACL_READ);
	if (p & CA_ACL_PERM_WRITE)
		acl_add_perm(ps, ACL_WRITE);
	if (p & CA_ACL_PERM_EXECUTE)
		acl_add_perm(ps, ACL_EXECUTE);
	acl_set_permset(e, ps);
}

static int add_entry(acl_t *acl, acl_tag_t tag, const uint64_t *id, uint64_t perms)
{
	acl_entry_t e;
	if (acl_create_entry(acl, &e) < 0 || acl_set_tag_type(e, tag) < 0)
		return -errno;
	if (id) {
		id_t q = (id_t)*id;
		if (acl_set_qualifier(e, &q) < 0)
			return -errno;
	}
	set_perms(e, perms);
	return 0;
}

static int add_named(acl_t *acl, const struct ca_catar_node *n, enum ca_catar_acl_kind kind, acl_tag_t tag)
{
	struct ca_catar_acl_entry a;
	size_t cur = 0;
	while (ca_catar_node_next_acl(n, kind, &cur, &a)) {
		int r = add_entry(acl, tag, &a.id, a.permissions);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The access ACL (only when it has named entries: otherwise the mode is
 * the whole story) and, for directories, the default ACL. */
static int apply_acls(struct ex *x, const struct ca_catar_node *n, int fd, const char *ppath, bool fresh)
{
	acl_t acl = NULL;
	int r = 0;
	uint64_t m = n->mode;
	if (!(x->flags & CA_FORMAT_WITH_ACL))
		return 0;
	/* GROUP_OBJ is only stored when the ACL has a mask: then it is an
	 * extended ACL even without named entries */
	if (n->n_acl_user || n->n_acl_group || n->has_acl_group_obj) {
		acl = acl_init(8);
		if (!acl)
			return -errno;
		r = add_entry(&acl, ACL_USER_OBJ, NULL, (m >> 6) & 7);
		if (r == 0)
			r = add_entry(&acl, ACL_GROUP_OBJ, NULL, n->acl_group_obj);
		if (r == 0)
			r = add_entry(&acl, ACL_OTHER, NULL, m & 7);
		if (r == 0)
			r = add_entry(&acl, ACL_MASK, NULL, (m >> 3) & 7);
		if (r == 0)
			r = add_named(&acl, n, CA_CATAR_ACL_USER, ACL_USER);
		if (r == 0)
			r = add_named(&acl, n, CA_CATAR_ACL_GROUP, ACL_GROUP);
		if (r == 0 && (fd >= 0 ? acl_set_fd(fd, acl) : acl_set_file(ppath, ACL_TYPE_ACCESS, acl)) < 0)
			r = -errno;
		acl_free(acl);
		acl = NULL;
		if (r < 0)
			goto out;
	}
	if (S_ISDIR(m)) {
		if (!n->has_acl_default) {
			if (!fresh && acl_delete_def_file(ppath) < 0 && errno != ENOTSUP && errno != EOPNOTSUPP)
				r = -errno;
			goto out;
		}
		acl = acl_init(8);
		if (!acl)
			return -errno;
		r = add_entry(&acl, ACL_USER_OBJ, NULL, n->acl_default_user_obj);
		if (r == 0)
			r = add_entry(&acl, ACL_GROUP_OBJ, NULL, n->acl_default_group_obj);
		if (r == 0)
			r = add_entry(&acl, ACL_OTHER, NULL, n->acl_default_other);
		if (r == 0 && n->acl_default_mask != CA_ACL_NO_MASK)
			r = add_entry(&acl, ACL_MASK, NULL, n->acl_default_mask);
		if (r == 0)
			r = add_named(&acl, n, CA_CATAR_ACL_DEFAULT_USER, ACL_USER);
		if (r == 0)
			r = add_named(&acl, n, CA_CATAR_ACL_DEFAULT_GROUP, ACL_GROUP);
		if (r == 0 && acl_set_file(ppath, ACL_TYPE_DEFAULT, acl) < 0)
			r = -errno;
		acl_free(acl);
	}
out:
	if (r == -ENOTSUP || r == -EOPNOTSUPP) {
		warn_once(&x->warned_acl, r, "ACLs");
		r = 0;
	}
	return r;
}

static int apply_xattrs(struct ex *x, const struct ca_catar_node *n, int fd, const char *ppath)
{
	struct ca_catar_xattr xa;
	size_t cur = 0;
	while (ca_catar_node_next_xattr(n, &cur, &xa)) {
		int k = fd >= 0 ? fsetxattr(fd, xa.name, xa.value, xa.size, 0)
		                : lsetxattr(ppath, xa.name, xa.value, xa.size, 0);
		if (k < 0) {
			if (errno == ENOTSUP || errno == EPERM) {
				warn_once(&x->warned_xattr, errno, "extended attributes");
				continue;
			}
			return -errno;
		}
	}
	if (n->selinux) {
		int k = fd >= 0 ? fsetxattr(fd, "security.selinux", n->selinux, strlen(n->selinux) + 1, 0)
		                : lsetxattr(ppath, "security.selinux", n->selinux, strlen(n->selinux) + 1, 0);
		if (k < 0)
			warn_once(&x->warned_selinux, errno, "SELinux labels");
	}
	return 0;
}

static void apply_chattr(struct ex *x, const struct ca_catar_node *n, int fd, bool fresh)
{
	unsigned mask = ca_feature_to_chattr(x->flags), want = ca_feature_to_chattr(x->flags & n->flags), cur = 0;
	if (!mask || (fresh && !want))
		return;
	if (ioctl(fd, FS_IOC_GETFLAGS, &cur) < 0) {
		if (want)
			warn_once(&x->warned_chattr, errno, "file attributes (chattr)");
		return;
	}
	unsigned next = (cur & ~mask) | want;
	if (next != cur && ioctl(fd, FS_IOC_SETFLAGS, &next) < 0)
		warn_once(&x->warned_chattr, errno, "file attributes (chattr)");
}

static void node_times(const struct ca_catar_node *n, struct timespec ts[2])
{
	/* the u64 holds a signed count: times before 1970 are negative */
	int64_t t = (int64_t)n->mtime, sec = t / 1000000000, nsec = t % 1000000000;
	if (nsec < 0) {
		nsec += 1000000000;
		sec--;
	}
	ts[0].tv_sec = ts[1].tv_sec = (time_t)sec;
	ts[0].tv_nsec = ts[1].tv_nsec = (long)nsec;
}

/* Owner, mode, xattrs, ACLs, fcaps, times; the same order for every type
 * (chown clears setuid bits and capabilities, so it goes first). fd is the
 * node itself (files, directories) or -1 (use dfd + name). */
/* have_uid/have_gid/have_mode: what the node has now (the chown and chmod
 * are skipped when they match); have_mode (mode_t)-1 when unknown. */
static int apply_meta(struct ex *x, const struct ca_catar_node *n, int fd, int dfd, const char *name, bool fresh,
                      uid_t have_uid, gid_t have_gid, mode_t have_mode)
{
	char ppath[64 + 256];
	bool lnk = S_ISLNK(n->mode);
	int r;

	if (fd >= 0)
		snprintf(ppath, sizeof(ppath), "/proc/self/fd/%d", fd);
	else
		proc_path(ppath, sizeof(ppath), dfd, name);

	if (x->flags & UID_FLAGS) {
		if (x->as_root && (n->uid != (uint64_t)have_uid || n->gid != (uint64_t)have_gid)) {
			int k = fd >= 0 ? fchown(fd, (uid_t)n->uid, (gid_t)n->gid)
			                : fchownat(dfd, name, (uid_t)n->uid, (gid_t)n->gid, AT_SYMLINK_NOFOLLOW);
			if (k < 0)
				return -errno;
		} else if (!x->as_root && (n->uid != (uint64_t)x->euid || n->gid != (uint64_t)x->egid)) {
			warn_once(&x->warned_owner, 0, "file owners (not running as root)");
		}
	}
	if (!lnk && ((n->mode & 07777) != (uint64_t)have_mode || (n->mode & 07000))) {
		int k = fd >= 0 ? fchmod(fd, (mode_t)(n->mode & 07777)) : fchmodat(dfd, name, (mode_t)(n->mode & 07777), 0);
		if (k < 0)
			return -errno;
	}
	if (!lnk) {
		r = apply_xattrs(x, n, fd, ppath);
		if (r < 0)
			return r;
		r = apply_acls(x, n, fd, ppath, fresh);
		if (r < 0)
			return r;
	}
	if (n->fcaps) {
		int k = fd >= 0 ? fsetxattr(fd, "security.capability", n->fcaps, n->fcaps_size, 0) : -1;
		if (k < 0)
			warn_once(&x->warned_xattr, errno, "file capabilities");
	}
	if (x->flags & TIME_FLAGS) {
		struct timespec ts[2];
		node_times(n, ts);
		int k = fd >= 0 ? futimens(fd, ts) : utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW);
		if (k < 0)
			return -errno;
	}
	return 0;
}

/* Make room for a new non-directory at name: renameat replaces files,
 * symlinks and special files itself, but not directories. */
static int clear_dir_at(int dfd, const char *name)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return 0;
	return rm_rf_at(dfd, name, 0);
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
static mode_t create_mode(const struct ex *x, const struct dir *p, uint64_t m)
{
	if (p->plain && x->umask >= 0 && !(m & 07000) && !(m & (uint64_t)x->umask))
		return (mode_t)(m & 0777);
	return 0600;
}

static int write_payload(struct ex *x, int fd)
{
	for (;;) {
		if (x->o->cancel && *x->o->cancel)
			return -ECANCELED;
		ssize_t k = ca_catar_dec_read_payload(x->dec, x->buf, COPY_BLOCK);
		if (k < 0) {
			x->read_failed = true;
			return (int)k;
		}
		if (k == 0)
			return 0;
		int r = ca_write_all(fd, x->buf, (size_t)k);
		if (r < 0)
			return r;
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
			fail(x, r, path);
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
	mode_t cm = create_mode(x, p, m);
	int fd = -1, r;
	if (S_ISREG(m)) {
		fd = openat(p->fd, n->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, cm);
		r = fd < 0 ? -errno : 0;
	} else if (S_ISLNK(m)) {
		r = symlinkat(n->symlink_target, p->fd, n->name) < 0 ? -errno : 0;
	} else {
		dev_t dev = (S_ISBLK(m) || S_ISCHR(m)) ? makedev(n->device_major, n->device_minor) : 0;
		r = mknodat(p->fd, n->name, (mode_t)((m & S_IFMT) | cm), dev) < 0 ? -errno : 0;
	}
	if (r < 0)
		return fail(x, r, path);
	if (fd >= 0) {
		r = fill_file(x, fd, path);
		if (r < 0)
			goto out; /* the hidden tree goes, this file with it */
	}
	r = apply_meta(x, n, fd, p->fd, n->name, true, x->euid, p->child_gid, cm);
	if (r < 0)
		fail(x, r, path);
	else if (fd >= 0)
		apply_chattr(x, n, fd, true);
out:
	if (fd >= 0)
		close(fd);
	return r;
}

/* What a worker does: make_leaf_direct for a plain file with the payload
 * in memory. Returns 0 or a negative errno (not logged: only the first error is). */
static int run_job(struct job *j)
{
	int fd = openat(j->dfd, j->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, j->create_mode);
	if (fd < 0)
		return -errno;
	int r = ca_write_all(fd, j->data, j->size);
	if (r == 0 && j->chown && fchown(fd, j->uid, j->gid) < 0)
		r = -errno;
	if (r == 0 && j->chmod && fchmod(fd, j->mode) < 0)
		r = -errno;
	if (r == 0 && j->times && futimens(fd, j->ts) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int apply_dir_meta(int fd, const struct dir_meta *m)
{
	if (m->chown && fchown(fd, m->uid, m->gid) < 0)
		return -errno;
	if (fchmod(fd, m->mode) < 0)
		return -errno;
	if (m->times && futimens(fd, m->ts) < 0)
		return -errno;
	return 0;
}

/* Under the lock: a job for t is finished. Returns t when it was the
 * directory's last one and the decoder has left it: the caller then
 * applies its metadata and frees it, outside the lock. */
static struct track *worker_done(struct pool *p, struct track *t, size_t bytes)
{
	p->bytes -= bytes;
	t->pending--;
	return t->pending == 0 && t->left ? t : NULL;
}

static void *worker(void *userdata)
{
	struct ex *x = userdata;
	struct pool *p = &x->pool;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->n && !p->stop) {
			p->idle++;
			pthread_cond_wait(&p->work, &p->lock);
			p->idle--;
		}
		if (!p->n)
			break;
		struct job *j = p->q[p->head];
		p->head = (p->head + 1) % QUEUE_LEN;
		p->n--;
		/* after an error or an interrupt, queued files are dropped: nothing of them exists yet */
		bool skip = p->abort || p->err || (x->o->cancel && *x->o->cancel);
		pthread_mutex_unlock(&p->lock);
		int r = skip ? 0 : run_job(j);
		const char *path = j->path;
		pthread_mutex_lock(&p->lock);
		struct track *t = worker_done(p, j->track, j->size);
		if (t) {
			pthread_mutex_unlock(&p->lock);
			skip = skip || r < 0;
			int k = skip ? 0 : apply_dir_meta(t->fd, &t->meta);
			close(t->fd);
			pthread_mutex_lock(&p->lock);
			if (k < 0 && r == 0) {
				r = k;
				path = t->path;
			}
		}
		if (r < 0 && !p->err && !p->abort) {
			p->err = fail(x, r, path);
			__atomic_store_n(&x->pool_err, p->err, __ATOMIC_RELEASE);
		}
		if (t) {
			free(t->path);
			free(t);
		}
		p->outstanding--;
		/* wake the decoder only when it can go on for a while: waking it
		 * for every finished job costs more than the jobs themselves */
		if (p->waiting && (p->wait_drain    ? p->outstanding == 0
		                   : p->wait_track ? p->wait_track->pending == 0
		                                   : p->n <= QUEUE_LEN / 2 && p->bytes <= QUEUE_BYTES / 2))
			pthread_cond_signal(&p->done);
		free(j->path);
		free(j);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static bool pool_start(struct ex *x)
{
	struct pool *p = &x->pool;
	if (p->started)
		return p->n_th > 0;
	p->started = true;
	if (pthread_mutex_init(&p->lock, NULL) != 0)
		return false;
	if (pthread_cond_init(&p->work, NULL) != 0 || pthread_cond_init(&p->done, NULL) != 0) {
		/* cannot tell which one: treat the pool as absent, leak nothing that matters */
		return false;
	}
	while (p->n_th < x->n_threads && pthread_create(&p->th[p->n_th], NULL, worker, x) == 0)
		p->n_th++;
	return p->n_th > 0;
}

/* Finish (or, with abort, drop) every queued job and join the workers:
 * before any directory fd closes. Returns the workers' first error. */
static int pool_stop(struct ex *x, bool abort)
{
	struct pool *p = &x->pool;
	if (!p->n_th)
		return 0;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	p->abort = abort;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (size_t i = 0; i < p->n_th; i++)
		pthread_join(p->th[i], NULL);
	p->n_th = 0;
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->lock);
	return p->err;
}

/* Under the lock: the workers' first error, after the jobs for files
 * in d (if any) are done. d's track is then the caller's to free. */
static int pool_wait_dir_locked(struct pool *p, struct dir *d)
{
	while (d->track && d->track->pending) {
		p->waiting = true;
		p->wait_track = d->track;
		pthread_cond_wait(&p->done, &p->lock);
		p->wait_track = NULL;
		p->waiting = false;
	}
	return p->err;
}

/* Every queued file and directory finished: the workers' first error. */
static int pool_drain(struct pool *p)
{
	if (!p->n_th)
		return 0;
	pthread_mutex_lock(&p->lock);
	while (p->outstanding) {
		p->waiting = p->wait_drain = true;
		pthread_cond_wait(&p->done, &p->lock);
		p->waiting = p->wait_drain = false;
	}
	int r = p->err;
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* Nothing to restore but owner, mode and times. */
static bool plain_meta(const struct ex *x, const struct ca_catar_node *n)
{
	struct ca_catar_xattr xa;
	size_t cur = 0;
	if (n->selinux || n->fcaps || ca_catar_node_next_xattr(n, &cur, &xa))
		return false;
	if ((x->flags & CA_FORMAT_WITH_ACL) &&
	    (n->n_acl_user || n->n_acl_group || n->has_acl_group_obj || n->has_acl_default))
		return false;
	return ca_feature_to_chattr(x->flags & n->flags) == 0;
}

/* A file a worker can make: small, plain, in a directory we created. */
static bool job_eligible(const struct ex *x, const struct ca_catar_node *n, const struct dir *p)
{
	if (!x->n_threads || !p->fresh || !S_ISREG(n->mode) || n->payload_size > JOB_SIZE_MAX)
		return false;
	return plain_meta(x, n);
}

/* Read the payload into a job and queue it. Returns 0, 1 when there is
 * no pool (the caller does the file itself), or a negative errno. */
static int submit_job(struct ex *x, const struct ca_catar_node *n, struct dir *p, const char *path)
{
	struct pool *pl = &x->pool;
	if (!pool_start(x))
		return 1;
	size_t size = (size_t)n->payload_size, got = 0, nl = strlen(n->name), pl_len = strlen(path);
	if (!p->track) { /* the workers reach it through their jobs only */
		p->track = calloc(1, sizeof(*p->track));
		if (!p->track)
			return fail(x, -ENOMEM, path);
		p->track->fd = -1;
	}
	struct job *j = malloc(sizeof(*j) + size);
	if (!j)
		return fail(x, -ENOMEM, path);
	*j = (struct job){ .track = p->track, .dfd = p->fd, .size = size };
	j->path = malloc(pl_len + 1 + nl + 1); /* path, then name */
	if (!j->path) {
		free(j);
		return fail(x, -ENOMEM, path);
	}
	memcpy(j->path, path, pl_len + 1);
	memcpy(j->path + pl_len + 1, n->name, nl + 1);
	j->name = j->path + pl_len + 1;
	j->create_mode = create_mode(x, p, n->mode);
	j->mode = (mode_t)(n->mode & 07777);
	j->chmod = j->mode != j->create_mode || (n->mode & 07000);
	if (x->flags & UID_FLAGS) {
		j->uid = (uid_t)n->uid;
		j->gid = (gid_t)n->gid;
		if (x->as_root)
			j->chown = n->uid != (uint64_t)x->euid || n->gid != (uint64_t)p->child_gid;
		else if (n->uid != (uint64_t)x->euid || n->gid != (uint64_t)x->egid)
			warn_once(&x->warned_owner, 0, "file owners (not running as root)");
	}
	j->times = x->flags & TIME_FLAGS;
	if (j->times)
		node_times(n, j->ts);
	int r = 0;
	for (;;) {
		if (x->o->cancel && *x->o->cancel) {
			r = -ECANCELED;
			break;
		}
		ssize_t k = ca_catar_dec_read_payload(x->dec, j->data + got, size - got);
		if (k < 0) {
			x->read_failed = true;
			r = (int)k;
			if (r == -EBADMSG)
				ca_log_error_errno(r, "%s: not a valid archive, at %s",
				                   x->o->archive_name ? x->o->archive_name : "archive", path);
			break;
		}
		if (k == 0)
			break;
		got += (size_t)k;
		x->done += (uint64_t)k;
		if (x->o->progress)
			x->o->progress(x->o->progress_userdata, x->done);
	}
	if (r == 0 && got != size) /* the decoder ends a payload only at its size */
		r = ca_log_error_errno(EBADMSG, "%s: not a valid archive, at %s",
		                       x->o->archive_name ? x->o->archive_name : "archive", path);
	if (r < 0) {
		free(j->path);
		free(j);
		return r;
	}
	pthread_mutex_lock(&pl->lock);
	while (pl->n == QUEUE_LEN || (pl->n && pl->bytes + size > QUEUE_BYTES)) {
		pl->waiting = true;
		pthread_cond_wait(&pl->done, &pl->lock);
		pl->waiting = false;
	}
	pl->q[(pl->head + pl->n) % QUEUE_LEN] = j;
	pl->n++;
	pl->bytes += size;
	pl->outstanding++;
	p->track->pending++;
	if (pl->idle)
		pthread_cond_signal(&pl->work);
	pthread_mutex_unlock(&pl->lock);
	return 0;
}

static int make_leaf(struct ex *x, const struct ca_catar_node *n, struct dir *p, const char *path)
{
	char tmp[48];
	int fd = -1, r, dfd = p->fd;
	bool created = false;
	uint64_t m = n->mode;
	mode_t cm = create_mode(x, p, m);

	if (job_eligible(x, n, p)) {
		r = submit_job(x, n, p, path);
		if (r <= 0)
			return r;
	}
	if (p->fresh)
		return make_leaf_direct(x, n, p, path);
	for (int tries = 0; tries < 16 && !created; tries++) {
		r = tmp_name(x, tmp);
		if (r < 0)
			return fail(x, r, path);
		if (S_ISREG(m)) {
			fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, cm);
			r = fd < 0 ? -errno : 0;
		} else if (S_ISLNK(m)) {
			r = symlinkat(n->symlink_target, dfd, tmp) < 0 ? -errno : 0;
		} else {
			dev_t dev = (S_ISBLK(m) || S_ISCHR(m)) ? makedev(n->device_major, n->device_minor) : 0;
			r = mknodat(dfd, tmp, (mode_t)((m & S_IFMT) | cm), dev) < 0 ? -errno : 0;
		}
		if (r == 0)
			created = true;
		else if (r != -EEXIST)
			return fail(x, r, path);
		else
			x->tmp_n = 0;
	}
	if (!created)
		return fail(x, -EEXIST, path);

	if (S_ISREG(m)) {
		r = fill_file(x, fd, path);
		if (r < 0)
			goto undo;
	}
	r = apply_meta(x, n, fd, dfd, tmp, true, x->euid, p->child_gid, cm);
	if (r < 0)
		goto undo_log;
	if (!p->fresh) {
		r = clear_dir_at(dfd, n->name);
		if (r < 0)
			goto undo_log;
	}
	if (renameat(dfd, tmp, dfd, n->name) < 0) {
		r = -errno;
		goto undo_log;
	}
	if (fd >= 0) {
		apply_chattr(x, n, fd, true);
		close(fd);
	}
	return 0;
undo_log:
	fail(x, r, path);
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
		else if (fgetxattr(fd, "system.posix_acl_default", NULL, 0) < 0)
			d.plain = errno == ENODATA || errno == ENOTSUP || errno == EOPNOTSUPP;
	}
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
			return fail(x, -errno, path);
	} else {
		/* a directory there is reused; anything else is replaced */
		if (fstatat(dfd, n->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISDIR(st.st_mode))
				fresh = false;
			else if (unlinkat(dfd, n->name, 0) < 0)
				return fail(x, -errno, path);
		} else if (errno != ENOENT) {
			return fail(x, -errno, path);
		}
		if (fresh) {
			r = mkdir_hidden(x, dfd, tmp);
			if (r < 0)
				return fail(x, r, path);
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
	return fail(x, r, path);
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
		return fail(x, -errno, path);
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return fail(x, -errno, path);
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
		r = rm_rf_at(d->fd, extra.v[i], 0);
		if (r == -EXDEV)
			ca_log_error("%s/%s%s%s: something is mounted there: not removed", x->dest, path, *path ? "/" : "",
			             extra.v[i]);
		else if (r < 0)
			ca_log_error_errno(r, "%s/%s%s%s", x->dest, path, *path ? "/" : "", extra.v[i]);
	}
	names_free(&extra);
	return r;
}

/* Hand a plain fresh directory whose files are still being written to
 * the workers (see struct track). Under the lock. Returns false when it
 * has to be finished here after all. */
static bool defer_dir(struct ex *x, const struct ca_catar_node *n, struct dir *d, const char *path)
{
	struct track *t = d->track;
	if (!t || !t->pending || !d->fresh || !d->plain || !plain_meta(x, n))
		return false;
	t->path = strdup(path);
	if (!t->path)
		return false;
	t->meta = (struct dir_meta){ .mode = (mode_t)(n->mode & 07777), .times = x->flags & TIME_FLAGS };
	if (x->flags & UID_FLAGS) {
		t->meta.uid = (uid_t)n->uid;
		t->meta.gid = (gid_t)n->gid;
		if (x->as_root)
			t->meta.chown = n->uid != (uint64_t)d->uid || n->gid != (uint64_t)d->gid;
		else if (n->uid != (uint64_t)x->euid || n->gid != (uint64_t)x->egid)
			warn_once(&x->warned_owner, 0, "file owners (not running as root)");
	}
	if (t->meta.times)
		node_times(n, t->meta.ts);
	t->fd = d->fd;
	t->left = true;
	return true;
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
	int r = rm_rf_at(d->parent_fd, d->tmp, 0);
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
		r = pool_drain(&x->pool);
	/* its mode and mtime go on once every file in it is complete */
	if (r == 0 && d->track) {
		struct pool *p = &x->pool;
		pthread_mutex_lock(&p->lock);
		bool deferred = defer_dir(x, n, d, path);
		if (!deferred)
			r = pool_wait_dir_locked(p, d);
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
			fail(x, r, path);
	}
	if (r < 0) {
		if (d->hidden_root)
			drop_hidden(x, d);
		dir_pop(x, true);
		return r;
	}
	/* a directory we made still inherited a default ACL from a parent with one */
	r = apply_meta(x, n, d->fd, -1, NULL, d->fresh && d->plain, d->uid, d->gid, (mode_t)-1);
	if (r < 0)
		fail(x, r, path);
	else
		apply_chattr(x, n, d->fd, d->fresh);
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
				fail(&x, r, path);
				break;
			}
		}
		r = S_ISDIR(n->mode) ? make_dir(&x, n, parent, path) : make_leaf(&x, n, parent, path);
		if (r < 0)
			break;
	}
	int k = pool_stop(&x, r < 0);
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
	free(x.dirs);
	free(x.buf);
	return r < 0 ? r : 0;
}
