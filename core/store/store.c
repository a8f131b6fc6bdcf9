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

#include "base/digest.h"
#include "base/fdio.h"
#include "base/log.h"
#include "store/crypt.h"
#include "store/store.h"
#include "base/atomic_file.h"

/* The smallest file that can hold a compressed chunk: a zstd frame of one
 * byte is longer (magic, frame header, block header, the byte); gzip and xz
 * frames are longer still. A shorter .cacnk is a torn write, not a chunk. */
#define MIN_CACNK_SIZE 9

struct ca_store {
	char *path;
	int dfd;      /* the store directory; -1 until it exists (atomic) */
	bool priv;    /* a cache: 0700 dirs, 0400 files, ownership checked */
	int odd_seen; /* a non-file at a chunk path was logged (atomic) */
	struct ca_crypt *crypt; /* chunks sealed under this key (crypt.h), or NULL */
	int other_key_seen;     /* a chunk only under another key was logged (atomic) */
};

static struct ca_store *store_new(const char *path, bool priv)
{
	struct ca_store *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->path = strdup(path);
	if (!s->path) {
		free(s);
		return NULL;
	}
	s->dfd = -1;
	s->priv = priv;
	return s;
}

int ca_store_open(const char *path, struct ca_store **ret)
{
	struct ca_store *s = store_new(path, false);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

void ca_store_free(struct ca_store *s)
{
	if (!s)
		return;
	if (s->dfd >= 0)
		close(s->dfd);
	ca_crypt_unref(s->crypt);
	free(s->path);
	free(s);
}

const char *ca_store_path(const struct ca_store *s)
{
	return s->path;
}

int ca_store_set_crypt(struct ca_store *s, struct ca_crypt *c)
{
	if (s->priv || s->crypt) /* a cache keeps chunks plain (and private) */
		return -EINVAL;
	s->crypt = ca_crypt_ref(c);
	return 0;
}

const struct ca_crypt *ca_store_crypt(const struct ca_store *s)
{
	return s->crypt;
}

/* ---- private stores (caches) ---- */

/* Is this directory fit to hold a cache? Ours, and nobody else may write
 * in it; one that others may only read (made by an older cafs under umask
 * 022) is tightened. 0, 1 if it was tightened, or -EPERM (logged). */
static int check_private_dir(const char *what, int fd, const struct stat *st)
{
	if (st->st_uid != geteuid())
		return ca_log_error("cache %s: owned by uid %u, not by you (uid %u): refusing to use it", what,
		                    (unsigned)st->st_uid, (unsigned)geteuid()),
		       -EPERM;
	if (st->st_mode & 022)
		return ca_log_error("cache %s: writable by group or others (mode %04o): refusing to use it; "
		                    "chmod 0700 it or give another cache",
		                    what, (unsigned)(st->st_mode & 07777)),
		       -EPERM;
	if (!(st->st_mode & 077))
		return 0;
	if (fchmod(fd, st->st_mode & 0700) < 0)
		return ca_log_error_errno(-errno, "cache %s: cannot make it private", what);
	return 1;
}

/* mkdir -p of path's parents and path itself, new ones 0700. */
static int mkdir_private(const char *path)
{
	char *p = strdup(path);
	int r = 0;
	if (!p)
		return -ENOMEM;
	for (char *c = p + 1;; c++) {
		if (*c != '/' && *c != 0)
			continue;
		char was = *c;
		*c = 0;
		if (mkdir(p, 0700) < 0 && errno != EEXIST) {
			r = -errno;
			break;
		}
		*c = was;
		if (!was)
			break;
	}
	free(p);
	return r;
}

static int tighten_one(const struct ca_store_entry *e, void *userdata)
{
	(void)userdata;
	if ((e->st.st_mode & 077) && fchmodat(e->dirfd, e->name, e->st.st_mode & 0700, 0) < 0)
		return -errno;
	return 0;
}

int ca_store_open_private(const char *path, bool create, struct ca_store **ret)
{
	struct ca_store *s = NULL;
	struct stat st;
	int r = create ? mkdir_private(path) : 0;
	if (r < 0)
		return ca_log_error_errno(r, "cache %s", path);
	s = store_new(path, true);
	if (!s)
		return ca_log_error_errno(-ENOMEM, "cache %s", path);
	/* the checks are made on the directory we then use, not on a path
	 * that could be swapped between the check and the use */
	s->dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->dfd < 0) {
		r = -errno;
		if (r == -ENOENT && !create) { /* an empty cache */
			*ret = s;
			return 0;
		}
		struct stat lst; /* O_DIRECTORY | O_NOFOLLOW says ENOTDIR for a symlink */
		if (r == -ENOTDIR && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
			r = -ELOOP;
		if (r == -ELOOP)
			ca_log_error("cache %s: is a symbolic link: give the directory it points to", path);
		else if (r == -ENOTDIR)
			ca_log_error("cache %s: not a directory", path);
		else
			ca_log_error_errno(r, "cache %s", path);
		goto fail;
	}
	if (fstat(s->dfd, &st) < 0) {
		r = ca_log_error_errno(-errno, "cache %s", path);
		goto fail;
	}
	r = check_private_dir(path, s->dfd, &st);
	if (r < 0)
		goto fail;
	if (r == 1) {
		/* a cache from an older cafs: now that nobody else can enter it,
		 * make what is inside private too (the walk tightens prefixes) */
		r = ca_store_walk(s, tighten_one, NULL);
		if (r < 0) {
			ca_log_error_errno(r, "cache %s: cannot make it private", path);
			goto fail;
		}
		ca_log_warning("cache %s: was readable by others (mode %04o); made it private (0700)", path,
		               (unsigned)(st.st_mode & 07777));
	}
	*ret = s;
	return 0;
fail:
	ca_store_free(s);
	return r;
}

/* ---- directories ---- */

/* The store's directory, opened on first use (made if create). -ENOENT if
 * it does not exist. The fd belongs to the store. */
static int root_fd(struct ca_store *s, bool create)
{
	int fd = __atomic_load_n(&s->dfd, __ATOMIC_ACQUIRE);
	if (fd >= 0)
		return fd;
	if (s->priv) /* opened (and checked) by ca_store_open_private, or absent */
		return -ENOENT;
	fd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdir(s->path, 0777) < 0 && errno != EEXIST)
			return -errno;
		fd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return errno == ENOTDIR && !create ? -ENOENT : -errno;
	int none = -1;
	if (!__atomic_compare_exchange_n(&s->dfd, &none, fd, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		close(fd); /* another thread was first */
		fd = none;
	}
	return fd;
}

/* Open the prefix directory <first 4 hex> (made if create), checked like
 * the cache itself in a private store. Returns an fd the caller closes,
 * -ENOENT if it is not there. */
static int prefix_fd(struct ca_store *s, const char *prefix, bool create)
{
	int dfd = root_fd(s, create);
	if (dfd < 0)
		return dfd;
	int fd = openat(dfd, prefix, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(dfd, prefix, s->priv ? 0700 : 0777) < 0 && errno != EEXIST)
			return -errno;
		fd = openat(dfd, prefix, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP ? -ENOENT : -errno;
	if (s->priv) {
		struct stat st;
		char what[PATH_MAX];
		int r = fstat(fd, &st) < 0 ? -errno : 0;
		if (r == 0 && (st.st_uid != geteuid() || (st.st_mode & 077))) {
			snprintf(what, sizeof(what), "%s/%s", s->path, prefix);
			r = check_private_dir(what, fd, &st);
		}
		if (r < 0) {
			close(fd);
			return r;
		}
	}
	return fd;
}

void ca_store_rel_path(const uint8_t id[CA_CHUNK_ID_SIZE], char out[CA_STORE_REL_PATH_LEN + 1])
{
	char rel[CA_CRYPT_CHUNK_REL_MAX + 1];
	ca_crypt_chunk_rel(NULL, id, rel);
	memcpy(out, rel, CA_STORE_REL_PATH_LEN + 1);
}

/* A chunk's place: its prefix ("abcd") and file name ("<id>.cacnk", with
 * the store's encryption suffix, or "<id>" when bare), or the two as one
 * path from the store's directory. */
struct chunk_name {
	char rel[CA_CRYPT_CHUNK_REL_MAX + 1]; /* "abcd/<id>.cacnk[.<alg>-<key id>]" */
	char prefix[5];
	const char *name; /* in the prefix directory: rel + 5; from the store's directory: rel */
};

static void chunk_name(const struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], bool bare, struct chunk_name *n)
{
	ca_crypt_chunk_rel(s->crypt, id, n->rel);
	if (bare)
		n->rel[69] = 0;
	memcpy(n->prefix, n->rel, 4);
	n->prefix[4] = 0;
	n->name = n->rel + 5;
}

/* Something that is not a regular file sits at a chunk path (a FIFO, a
 * device, a directory; in a cache also a symlink): a miss, said once per
 * store; writing the chunk replaces it. */
static void odd_file(struct ca_store *s, const struct chunk_name *n)
{
	if (__atomic_exchange_n(&s->odd_seen, 1, __ATOMIC_RELAXED))
		return;
	ca_log_warning("%s/%s: not a regular file; treated as missing, replaced when the chunk is written", s->path,
	               n->rel);
}

/* 1 if a usable chunk file is at n in the directory pfd (a regular file
 * long enough to be one), 0 if not, or negative errno. */
static int usable_at(struct ca_store *s, int pfd, const struct chunk_name *n, bool bare)
{
	struct stat st;
	if (fstatat(pfd, n->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	/* a symlink in a store is casync's "known missing" marker */
	if (!S_ISREG(st.st_mode) && (s->priv || !S_ISLNK(st.st_mode)))
		odd_file(s, n);
	return S_ISREG(st.st_mode) && st.st_size >= (bare ? 1 : MIN_CACNK_SIZE);
}

int ca_store_has(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	struct chunk_name n;
	chunk_name(s, id, false, &n);
	int pfd = prefix_fd(s, n.prefix, false);
	if (pfd < 0)
		return pfd == -ENOENT ? 0 : pfd;
	int r = usable_at(s, pfd, &n, false);
	if (r == 0 && !s->crypt) { /* an encrypted store has no bare chunks */
		chunk_name(s, id, true, &n);
		r = usable_at(s, pfd, &n, true);
	}
	close(pfd);
	return r;
}

static int read_file(int fd, const struct stat *st, struct ca_buf *out)
{
	/* a compressed chunk larger than the largest chunk is not one of ours;
	 * incompressible data grows by a few bytes, gzip/xz by a bit more */
	if ((uint64_t)st->st_size > (uint64_t)CA_CHUNK_SIZE_LIMIT_MAX + CA_CHUNK_SIZE_LIMIT_MAX / 64)
		return -EBADMSG;
	out->size = 0;
	int r = ca_buf_reserve(out, st->st_size + 1, SIZE_MAX);
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
		if (out->size == (size_t)st->st_size)
			return 0;
	}
}

/* Read the chunk file n in pfd. -ENOENT if it is absent or not a regular
 * file: O_NONBLOCK so a FIFO cannot block the open, O_NOFOLLOW so a
 * symlink is not followed, and the type is checked on the open file. */
static int read_at(struct ca_store *s, int pfd, const struct chunk_name *n, struct ca_buf *out)
{
	struct stat st;
	int fd = openat(pfd, n->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ELOOP && s->priv)
			odd_file(s, n);
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? -ENOENT : -errno;
	}
	int r = fstat(fd, &st) < 0 ? -errno : 0;
	if (r == 0 && !S_ISREG(st.st_mode)) {
		odd_file(s, n);
		r = -ENOENT;
	}
	if (r == 0)
		r = read_file(fd, &st, out);
	close(fd);
	return r;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* Is the chunk there in another form than this store's (plain, or under
 * another key)? Asked only on a miss in an encrypted store, to tell a
 * wrong key from a missing chunk: the prefix directory is read. */
static bool other_form(int pfd, const struct chunk_name *n)
{
	int fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	bool found = false;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (!found && (de = readdir(d)))
		found = !strncmp(de->d_name, n->name, 64 + 6) && strcmp(de->d_name, n->name) &&
		        (de->d_name[70] == 0 || de->d_name[70] == '.') && !has_suffix(de->d_name, ".tmp");
	closedir(d);
	return found;
}

/* A miss in an encrypted store: if the chunk is there under another key,
 * say once that this key is likely the wrong one (naming its id, which is
 * no secret). */
static void miss_in_crypt(struct ca_store *s, int pfd, const struct chunk_name *n)
{
	if (__atomic_load_n(&s->other_key_seen, __ATOMIC_RELAXED) || !other_form(pfd, n))
		return;
	if (__atomic_exchange_n(&s->other_key_seen, 1, __ATOMIC_RELAXED))
		return;
	ca_log_warning("store %s: chunk %.64s is there only plain or under another key, not under key id %s "
	               "(%s): wrong key?",
	               s->path, n->name, ca_crypt_key_id(s->crypt), ca_crypt_alg_name(ca_crypt_get_alg(s->crypt)));
}

/* A sealed chunk file's bytes in out opened in place: the plain
 * (compressed) chunk, or -EBADMSG when it does not authenticate. */
static int open_sealed(struct ca_store *s, struct ca_buf *out)
{
	struct ca_buf plain = CA_BUF_INIT;
	int r = ca_crypt_open(s->crypt, out->data, out->size, &plain);
	if (r == 0) {
		ca_buf_release(out);
		*out = plain;
	} else {
		ca_buf_release(&plain);
	}
	return r;
}

int ca_store_get_raw(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], struct ca_buf *out,
                     bool *ret_compressed)
{
	struct chunk_name n;
	bool compressed = true;
	chunk_name(s, id, false, &n);
	int pfd = prefix_fd(s, n.prefix, false);
	if (pfd < 0)
		return pfd;
	int r = read_at(s, pfd, &n, out);
	if (r == -ENOENT && s->crypt)
		miss_in_crypt(s, pfd, &n);
	else if (r == -ENOENT) {
		chunk_name(s, id, true, &n);
		r = read_at(s, pfd, &n, out);
		compressed = false;
	}
	close(pfd);
	if (r == 0 && s->crypt)
		r = open_sealed(s, out);
	if (r < 0)
		return r;
	if (ret_compressed)
		*ret_compressed = compressed;
	return 0;
}

/* Take away what is at a chunk path that is not a usable chunk (a torn
 * or empty file, a FIFO, a symlink, an empty directory). */
static int remove_unusable(int pfd, const char *name)
{
	if (unlinkat(pfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno == EISDIR && unlinkat(pfd, name, AT_REMOVEDIR) == 0)
		return 0;
	return -errno;
}

/* Link the anonymous file fd as name in pfd without replacing anything.
 * 0, 1 if a file was already there, or negative errno. */
static int link_anonymous(int fd, int pfd, const char *name)
{
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, pfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	return errno == EEXIST ? 1 : -errno;
}

/* Write p into an O_TMPFILE in the directory dir of pfd and link it at n
 * (n->name relative to pfd too). 1 written, 0 a usable chunk was there,
 * negative errno; -EOPNOTSUPP (and the like) when the file system or
 * /proc does not allow it. */
static int put_tmpfile(struct ca_store *s, int pfd, const char *dir, const struct chunk_name *n, const void *p,
                       size_t len, mode_t mode)
{
	/* An O_TMPFILE inode has no name until it is complete, so a crash can
	 * leave nothing behind, and linkat() refuses to replace: one directory
	 * operation instead of a create and a rename. */
	int fd = openat(pfd, dir, O_TMPFILE | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return errno == EISDIR || errno == EINVAL ? -EOPNOTSUPP : -errno;
	int r = ca_write_all(fd, p, len);
	if (r == 0)
		r = link_anonymous(fd, pfd, n->name);
	/* ...unless what is there is not a usable chunk: replace it */
	if (r == 1 && usable_at(s, pfd, n, false) == 0 && remove_unusable(pfd, n->name) == 0)
		r = link_anonymous(fd, pfd, n->name);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == -ENOENT || r == -EXDEV || r == -EPERM) /* no /proc */
		return -EOPNOTSUPP;
	return r < 0 ? r : r == 0 ? 1 : 0;
}

/* The same with a named temporary file "<id>.<16 hex>.tmp" (casync's name). */
static int put_named(struct ca_store *s, int pfd, const struct chunk_name *n, const void *p, size_t len, mode_t mode)
{
	char tmp[CA_STORE_REL_PATH_LEN + 32], rnd[17];
	int r = ca_random_hex16(rnd);
	if (r < 0)
		return r;
	snprintf(tmp, sizeof(tmp), "%.64s.%s.tmp", n->name, rnd);
	int fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	r = ca_write_all(fd, p, len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat2(pfd, tmp, pfd, n->name, RENAME_NOREPLACE) < 0) {
		r = errno == EEXIST ? 1 : -errno; /* a concurrent writer won: same bytes */
		if (r == 1 && usable_at(s, pfd, n, false) == 0 && remove_unusable(pfd, n->name) == 0 &&
		    renameat2(pfd, tmp, pfd, n->name, RENAME_NOREPLACE) == 0)
			r = 0;
	}
	if (r != 0) {
		unlinkat(pfd, tmp, 0);
		return r == 1 ? 0 : r;
	}
	return 1;
}

/* A published store's chunk in the fewest syscalls (make writes
 * thousands): the O_TMPFILE is made in the prefix directory by its path
 * from the store's, which is made when that says ENOENT (the first chunk
 * there, or gc removed it meanwhile), and linked by the whole path: no
 * open and close of the prefix directory per chunk. -EOPNOTSUPP (and the
 * like) where the general path must do it. */
static int put_flat(struct ca_store *s, struct chunk_name *cn, const void *p, size_t n, mode_t mode)
{
	int dfd = root_fd(s, true);
	if (dfd < 0)
		return dfd;
	cn->name = cn->rel;
	int r = -ENOENT;
	for (int tries = 0; r == -ENOENT && tries < 2; tries++) {
		r = put_tmpfile(s, dfd, cn->prefix, cn, p, n, mode);
		/* put_tmpfile's -EOPNOTSUPP also stands for a link into a
		 * directory gone since the open: make it and try once more */
		if ((r == -ENOENT || r == -EOPNOTSUPP) && tries == 0) {
			if (mkdirat(dfd, cn->prefix, 0777) == 0)
				r = -ENOENT;
			else if (errno != EEXIST)
				r = -errno;
		}
	}
	cn->name = cn->rel + 5;
	return r;
}

static int put_plain(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], const void *p, size_t n);

int ca_store_put_raw(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], const void *p, size_t n)
{
	struct ca_buf sealed = CA_BUF_INIT;
	if (!s->crypt)
		return put_plain(s, id, p, n);
	int r = ca_crypt_seal(s->crypt, p, n, &sealed);
	if (r == 0)
		r = put_plain(s, id, sealed.data, sealed.size);
	ca_buf_release(&sealed);
	return r;
}

/* Write the chunk file's bytes (sealed already in an encrypted store). */
static int put_plain(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], const void *p, size_t n)
{
	struct chunk_name cn;
	/* a cache's files are for their owner only; a store made for
	 * publishing follows the umask, as casync's */
	mode_t mode = s->priv ? 0400 : 0444;
	/* no existence check first: callers that care (make) check before
	 * compressing, and the no-replace link or rename settles races anyway */
	chunk_name(s, id, false, &cn);
	/* a cache (priv) has each prefix directory's owner and mode checked:
	 * the general path */
	if (!s->priv) {
		int r = put_flat(s, &cn, p, n, mode);
		if (r != -EOPNOTSUPP && r != -ELOOP && r != -ENOTDIR)
			return r;
	}
	int pfd = prefix_fd(s, cn.prefix, true);
	if (pfd < 0)
		return pfd;
	int r = put_tmpfile(s, pfd, ".", &cn, p, n, mode);
	if (r == -EOPNOTSUPP)
		r = put_named(s, pfd, &cn, p, n, mode);
	close(pfd);
	return r;
}

/* Apply fn(pfd, name) to the chunk's .cacnk and bare files; 0 if at least
 * one was there, -ENOENT if neither. */
static int each_name(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], int (*fn)(int pfd, const char *name))
{
	struct chunk_name n;
	int found = 0, r = 0;
	chunk_name(s, id, false, &n);
	int pfd = prefix_fd(s, n.prefix, false);
	if (pfd < 0)
		return pfd;
	for (int bare = 0; bare < (s->crypt ? 1 : 2) && r >= 0; bare++) {
		chunk_name(s, id, bare, &n);
		r = fn(pfd, n.name);
		if (r == 0)
			found = 1;
		else if (r == -ENOENT)
			r = 0;
	}
	close(pfd);
	return r < 0 ? r : found ? 0 : -ENOENT;
}

static int unlink_one(int pfd, const char *name)
{
	return unlinkat(pfd, name, 0) < 0 ? -errno : 0;
}

static int touch_one(int pfd, const char *name)
{
	return utimensat(pfd, name, NULL, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

int ca_store_remove(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	return each_name(s, id, unlink_one);
}

int ca_store_touch(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	struct chunk_name n;
	chunk_name(s, id, false, &n);
	int pfd = prefix_fd(s, n.prefix, false);
	if (pfd < 0)
		return pfd;
	int r = touch_one(pfd, n.name);
	close(pfd);
	return r;
}

int ca_store_sync(struct ca_store *s)
{
	int fd = root_fd(s, false);
	if (fd == -ENOENT)
		return 0; /* nothing was written */
	if (fd < 0)
		return fd;
	return syncfs(fd) < 0 ? -errno : 0;
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* The name of one file of a chunk (kind CHUNK or BARE) and its prefix
 * directory, opened: the fd, or a negative errno. */
static int file_prefix(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], enum ca_store_kind kind,
                       struct chunk_name *n)
{
	if (kind != CA_STORE_CHUNK && (kind != CA_STORE_BARE || s->crypt))
		return -EINVAL;
	chunk_name(s, id, kind == CA_STORE_BARE, n);
	return prefix_fd(s, n->prefix, false);
}

int ca_store_get_file(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], enum ca_store_kind kind,
                      struct ca_buf *out)
{
	struct chunk_name n;
	int pfd = file_prefix(s, id, kind, &n);
	if (pfd < 0)
		return pfd;
	int r = read_at(s, pfd, &n, out);
	close(pfd);
	if (r == 0 && s->crypt)
		r = open_sealed(s, out);
	return r;
}

int ca_store_remove_file(struct ca_store *s, const uint8_t id[CA_CHUNK_ID_SIZE], enum ca_store_kind kind)
{
	struct chunk_name n;
	int pfd = file_prefix(s, id, kind, &n);
	if (pfd < 0)
		return pfd;
	int r = unlink_one(pfd, n.name);
	close(pfd);
	return r;
}

/* Walk one prefix directory; takes dfd. */
static int walk_prefix(const struct ca_store *s, int dfd, const char *prefix, ca_store_walk_fn fn, void *userdata)
{
	DIR *d = fdopendir(dfd);
	int r = 0;
	if (!d) {
		r = -errno;
		close(dfd);
		return r;
	}
	struct dirent *de;
	const char *suffix = ca_crypt_chunk_suffix(s->crypt);
	while (r == 0 && (errno = 0, de = readdir(d))) {
		struct ca_store_entry e = { .dirfd = dirfd(d), .name = de->d_name };
		size_t len = strlen(de->d_name);
		char hex[65];

		/* only this store's form: another key's chunks (or plain ones
		 * in an encrypted store) are not its chunks, not even for gc */
		if (len == 64 + strlen(suffix) && !strcmp(de->d_name + 64, suffix))
			e.kind = CA_STORE_CHUNK;
		else if (len == 64 && !s->crypt)
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
	int dfd = root_fd(s, false);
	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return dfd;
	/* a DIR of its own: readdir moves the offset of the fd it is given */
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *top = fd < 0 ? NULL : fdopendir(fd);
	int r = 0;
	if (!top) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	struct dirent *de;
	/* callbacks may unlink files in a prefix directory while it is read:
	 * readdir copes, it may just not report entries added meanwhile */
	while (r == 0 && (errno = 0, de = readdir(top))) {
		if (strlen(de->d_name) != 4 || !is_hex(de->d_name, 4))
			continue;
		int pfd = prefix_fd(s, de->d_name, false);
		if (pfd == -ENOENT)
			continue;
		if (pfd < 0) {
			r = pfd;
			break;
		}
		r = walk_prefix(s, pfd, de->d_name, fn, userdata);
	}
	if (r == 0 && errno != 0)
		r = -errno;
	closedir(top);
	return r;
}
