/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_enc.c - the directory walk and the stream: FILENAME, payloads and
 * GOODBYE tables. Per-node metadata is catar_meta.c, exclusion rules
 * exclude.c.
 *
 * The walk keeps a stack of directory frames on the heap. Each frame holds
 * the directory fd, its sorted names and, for the GOODBYE table, the
 * offset range of every child written so far. Output is staged in one
 * buffer; file contents are read straight into it.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "catar/catar_enc.h"
#include "catar/catar_meta.h"
#include "catar/exclude.h"
#include "format/feature.h"
#include "format/format.h"
#include "base/log.h"
#include "format/siphash.h"

struct gb_item {
	uint64_t hash, start, end;
};

struct frame {
	int fd;
	dev_t dev;
	long magic;
	int mnt_id;         /* -1: not read yet */
	uint64_t entry_off; /* this directory's ENTRY */
	const char *name;   /* in the parent's arena; NULL for the root */
	char *arena;        /* names, each preceded by its d_type byte */
	char **names;       /* sorted */
	size_t n_names, idx;
	struct gb_item *items;
	size_t n_items, cap_items;
	struct ca_exclude_set excl;
	bool excl_loaded;
};

struct enc {
	const struct ca_catar_enc_opts *o;
	uint64_t flags;
	uint64_t off;
	uint8_t *out;
	size_t out_len;
	bool quiet; /* the sink failed or an error was logged: log nothing more */
	struct ca_meta_ctx meta;
	struct ca_buf rec;
	struct ca_buf gb;
	struct ca_exclude_rules *rules;
	struct ca_exclude_set child_excl;
	struct frame *frames;
	size_t n_frames, cap_frames;
};

/* ---- output ---- */

static int flush(struct enc *e)
{
	if (e->out_len == 0)
		return 0;
	int r = e->o->write(e->o->userdata, e->out, e->out_len);
	e->out_len = 0;
	if (r < 0) {
		e->quiet = true;
		return r;
	}
	return 0;
}

/* Room in the staging buffer for up to n more bytes (flushing it when
 * full): *k bytes at e->out + e->out_len, k >= 1 when n >= 1. */
static int room(struct enc *e, uint64_t n, size_t *k)
{
	if (e->out_len == CA_CATAR_ENC_BUFSIZE) {
		int r = flush(e);
		if (r < 0)
			return r;
	}
	*k = CA_CATAR_ENC_BUFSIZE - e->out_len;
	if (*k > n)
		*k = (size_t)n;
	return 0;
}

static int emit(struct enc *e, const void *p, size_t n)
{
	const uint8_t *q = p;
	e->off += n;
	while (n > 0) {
		size_t k;
		int r = room(e, n, &k);
		if (r < 0)
			return r;
		memcpy(e->out + e->out_len, q, k);
		e->out_len += k;
		q += k;
		n -= k;
	}
	return 0;
}

/* n bytes of the file at its current position, read into the staging
 * buffer; a file that shrank since stat is -EIO (casync's rule). */
static int emit_file_bytes(struct enc *e, int fd, uint64_t n)
{
	while (n > 0) {
		size_t k;
		int r = room(e, n, &k);
		if (r < 0)
			return r;
		ssize_t l = read(fd, e->out + e->out_len, k);
		if (l < 0 && errno == EINTR)
			continue;
		if (l < 0)
			return -errno;
		if (l == 0)
			return -EIO;
		e->out_len += (size_t)l;
		e->off += (uint64_t)l;
		n -= (uint64_t)l;
	}
	return 0;
}

static int emit_zeros(struct enc *e, uint64_t n)
{
	while (n > 0) {
		size_t k;
		int r = room(e, n, &k);
		if (r < 0)
			return r;
		memset(e->out + e->out_len, 0, k);
		e->out_len += k;
		e->off += k;
		n -= k;
	}
	return 0;
}

/* The content of a regular file, exactly st_size bytes. Holes of sparse
 * files are written as zeros without reading them. */
static int emit_payload(struct enc *e, int fd, const struct stat *st)
{
	uint64_t size = (uint64_t)st->st_size, pos = 0;
	int r;

	if ((uint64_t)st->st_blocks * 512 >= size)
		return emit_file_bytes(e, fd, size);
	while (pos < size) {
		off_t data = lseek(fd, (off_t)pos, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			data = (off_t)size; /* only a hole up to the end */
		else if (data < 0) /* no SEEK_DATA here: read it all */
			return lseek(fd, (off_t)pos, SEEK_SET) < 0 ? -errno : emit_file_bytes(e, fd, size - pos);
		if ((uint64_t)data > size)
			data = (off_t)size;
		r = emit_zeros(e, (uint64_t)data - pos);
		if (r < 0)
			return r;
		pos = (uint64_t)data;
		if (pos == size)
			break;
		off_t hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		if ((uint64_t)hole > size)
			hole = (off_t)size;
		if (lseek(fd, data, SEEK_SET) < 0)
			return -errno;
		r = emit_file_bytes(e, fd, (uint64_t)(hole - data));
		if (r < 0)
			return r;
		pos = (uint64_t)hole;
	}
	return 0;
}

/* ---- errors ---- */

/* Log "root/dir/.../name: why" (name may be NULL), once per walk, and
 * never for the sink's own errors. */
static int fail(struct enc *e, int r, const char *name)
{
	if (e->quiet)
		return r;
	e->quiet = true;
	size_t len = strlen(e->o->root_name ? e->o->root_name : ".") + 1;
	for (size_t i = 1; i < e->n_frames; i++)
		len += strlen(e->frames[i].name) + 1;
	if (name)
		len += strlen(name) + 1;
	char *p = malloc(len);
	if (!p)
		return ca_log_error_errno(r, "%s", e->o->root_name ? e->o->root_name : ".");
	strcpy(p, e->o->root_name ? e->o->root_name : ".");
	for (size_t i = 1; i < e->n_frames; i++) {
		strcat(p, "/");
		strcat(p, e->frames[i].name);
	}
	if (name) {
		strcat(p, "/");
		strcat(p, name);
	}
	r = ca_log_error_errno(r, "%s", p);
	free(p);
	return r;
}

/* ---- GOODBYE ---- */

static void layout_fill(size_t n, size_t *perm, size_t i, size_t *next)
{
	while (i < n) {
		layout_fill(n, perm, 2 * i + 1, next);
		perm[i] = (*next)++;
		i = 2 * i + 2;
	}
}

void ca_catar_goodbye_layout(size_t n, size_t *perm)
{
	size_t next = 0;
	layout_fill(n, perm, 0, &next);
}

static int cmp_gb(const void *a, const void *b)
{
	const struct gb_item *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static void observe_end(struct enc *e, uint64_t goodbye_off)
{
	if (e->o->observer)
		e->o->observer->end(e->o->observer->userdata, goodbye_off, e->off);
}

/* The GOODBYE of the directory at entry_off, which ends the directory for an observer. */
static int emit_goodbye(struct enc *e, uint64_t entry_off, struct gb_item *items, size_t n)
{
	uint64_t g = e->off;
	uint64_t size = 16 + 24 * (uint64_t)n + 24;
	size_t *perm = NULL;
	int r;

	if (n > 1) {
		qsort(items, n, sizeof(*items), cmp_gb);
		perm = malloc(n * sizeof(*perm));
		if (!perm)
			return -ENOMEM;
		ca_catar_goodbye_layout(n, perm);
	}
	e->gb.size = 0;
	r = ca_buf_reserve(&e->gb, (size_t)size, SIZE_MAX);
	if (r < 0)
		goto out;
	uint8_t *p = e->gb.data;
	ca_le64_write(p, size);
	ca_le64_write(p + 8, CA_FORMAT_GOODBYE);
	p += 16;
	for (size_t i = 0; i < n; i++, p += 24) {
		const struct gb_item *it = &items[perm ? perm[i] : i];
		ca_le64_write(p, g - it->start);
		ca_le64_write(p + 8, it->end - it->start);
		ca_le64_write(p + 16, it->hash);
	}
	ca_le64_write(p, g - entry_off);
	ca_le64_write(p + 8, size);
	ca_le64_write(p + 16, CA_FORMAT_GOODBYE_TAIL_MARKER);
	r = emit(e, e->gb.data, (size_t)size);
	if (r == 0)
		observe_end(e, g);
out:
	free(perm);
	return r;
}

/* ---- directory frames ---- */

static void frame_free(struct frame *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->arena);
	free(f->names);
	free(f->items);
	ca_exclude_set_release(&f->excl);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* All names of the directory but . and .., sorted bytewise. */
static int read_names(struct frame *f)
{
	size_t len = 0, cap = 0, n = 0;
	char *arena = NULL;
	struct dirent *de;
	int r = 0;

	int fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	rewinddir(d);
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			r = -errno;
			break;
		}
		const char *s = de->d_name;
		if (s[0] == '.' && (!s[1] || (s[1] == '.' && !s[2])))
			continue;
		size_t l = strlen(s) + 2;
		if (len + l > cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			while (ncap < len + l)
				ncap *= 2;
			char *a = realloc(arena, ncap);
			if (!a) {
				r = -ENOMEM;
				break;
			}
			arena = a;
			cap = ncap;
		}
		arena[len] = (char)de->d_type;
		memcpy(arena + len + 1, s, l - 1);
		len += l;
		n++;
	}
	closedir(d);
	if (r < 0) {
		free(arena);
		return r;
	}
	char **names = malloc((n ? n : 1) * sizeof(char *));
	if (!names) {
		free(arena);
		return -ENOMEM;
	}
	for (size_t i = 0, pos = 0; i < n; i++) {
		names[i] = arena + pos + 1;
		pos += strlen(names[i]) + 2;
	}
	qsort(names, n, sizeof(char *), cmp_names);
	f->arena = arena;
	f->names = names;
	f->n_names = n;
	f->idx = 0;
	return 0;
}

static int read_mount_id(int fd, int *ret)
{
#ifdef STATX_MNT_ID
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID)) {
		*ret = (int)sx.stx_mnt_id;
		return 0;
	}
#endif
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	FILE *fi = fopen(path, "re");
	if (!fi)
		return -errno;
	int r = -ENODATA;
	while (fgets(line, sizeof(line), fi)) {
		if (!strncmp(line, "mnt_id:", 7)) {
			*ret = atoi(line + 7);
			r = 0;
			break;
		}
	}
	fclose(fi);
	return r;
}

/* ---- nodes ---- */

/* Write ENTRY and metadata, then the payload; a directory to descend into
 * becomes a new frame (taking over n->fd), other directories get an empty
 * GOODBYE. *pushed tells which. */
static int write_node(struct enc *e, struct ca_meta_node *n, const char *name, bool *pushed)
{
	uint64_t entry_off = e->off;
	bool enumerate = ca_meta_shall_enumerate(n);
	int r;

	*pushed = false;
	e->rec.size = 0;
	r = ca_meta_serialize(&e->meta, n, &e->rec);
	if (r < 0)
		return fail(e, r, name);
	r = emit(e, e->rec.data, e->rec.size);
	if (r < 0)
		return r;
	if (e->o->observer)
		e->o->observer->node(e->o->observer->userdata, entry_off, name, e->rec.data, e->rec.size,
		                     S_ISDIR(n->st.st_mode));
	if (S_ISREG(n->st.st_mode) && enumerate) {
		int taken = 0;
		if (e->o->payload && n->st.st_size > 0) {
			r = flush(e); /* the bytes before it go first */
			if (r < 0)
				return r;
			taken = e->o->payload(e->o->userdata, n->fd, &n->st);
			if (taken < 0) {
				e->quiet = true;
				return taken;
			}
			if (taken)
				e->off += (uint64_t)n->st.st_size;
		}
		r = taken ? 0 : emit_payload(e, n->fd, &n->st);
		if (r < 0)
			return fail(e, r, name);
	}
	if (!S_ISDIR(n->st.st_mode)) {
		observe_end(e, 0);
		return 0;
	}
	if (!enumerate)
		return emit_goodbye(e, entry_off, NULL, 0);

	if (e->n_frames == e->cap_frames) {
		size_t cap = e->cap_frames ? e->cap_frames * 2 : 16;
		struct frame *v = realloc(e->frames, cap * sizeof(*v));
		if (!v)
			return fail(e, -ENOMEM, name);
		e->frames = v;
		e->cap_frames = cap;
	}
	struct frame *f = &e->frames[e->n_frames];
	memset(f, 0, sizeof(*f));
	f->fd = n->fd;
	f->dev = n->st.st_dev;
	f->magic = n->magic;
	f->mnt_id = -1;
	f->entry_off = entry_off;
	f->name = name;
	/* the patterns in force inside come from the test in the parent */
	f->excl = e->child_excl;
	e->child_excl = (struct ca_exclude_set)CA_EXCLUDE_SET_INIT;
	n->fd = -1;
	e->n_frames++;
	*pushed = true;
	r = read_names(f);
	if (r < 0)
		return fail(e, r, NULL);
	return 0;
}

static bool has_name(const struct frame *f, const char *name)
{
	const char *key = name;
	return bsearch(&key, f->names, f->n_names, sizeof(char *), cmp_names) != NULL;
}

/* casync's filter, in its order: node type flags, chattr +d, other mounts,
 * .caexclude. 1 store, 0 skip. */
static int shall_store(struct enc *e, struct frame *f, struct ca_meta_node *c, const char *name)
{
	mode_t m = c->st.st_mode;
	int r;

	if ((S_ISLNK(m) && !(e->flags & CA_FORMAT_WITH_SYMLINKS)) ||
	    ((S_ISBLK(m) || S_ISCHR(m)) && !(e->flags & CA_FORMAT_WITH_DEVICE_NODES)) ||
	    (S_ISFIFO(m) && !(e->flags & CA_FORMAT_WITH_FIFOS)) ||
	    (S_ISSOCK(m) && !(e->flags & CA_FORMAT_WITH_SOCKETS)))
		return 0;
	r = ca_meta_read_chattr(&e->meta, c);
	if (r < 0)
		return r;
	if ((e->flags & CA_FORMAT_EXCLUDE_NODUMP) && (c->chattr & FS_NODUMP_FL))
		return 0;
	if ((e->flags & CA_FORMAT_EXCLUDE_SUBMOUNTS) && c->fd >= 0) {
		int id;
		if (f->mnt_id < 0) {
			r = read_mount_id(f->fd, &f->mnt_id);
			if (r < 0)
				return r;
		}
		r = read_mount_id(c->fd, &id);
		if (r < 0)
			return r;
		if (id != f->mnt_id)
			return 0;
	}
	if ((e->flags & CA_FORMAT_EXCLUDE_FILE) && !f->excl_loaded) {
		f->excl_loaded = true;
		if (has_name(f, ".caexclude")) {
			int fd = openat(f->fd, ".caexclude", O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
			if (fd < 0)
				return fail(e, -errno, ".caexclude");
			r = ca_exclude_load_fd(e->rules, fd, &f->excl);
			close(fd);
			if (r < 0)
				return fail(e, r, ".caexclude");
		}
	}
	ca_exclude_set_clear(&e->child_excl);
	r = ca_exclude_test(&f->excl, name, S_ISDIR(m), &e->child_excl);
	if (r < 0)
		return r;
	return !r;
}

/* Open or stat a child as casync does: regular files and directories
 * (by d_type, else by stat) are opened, the rest only stat'ed. */
static int open_child(struct frame *f, const char *name, unsigned char dtype, struct ca_meta_node *c)
{
	int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW;
	bool open_it, have_stat = false;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->parent_fd = f->fd;
	c->name = name;
	if (dtype == DT_DIR || dtype == DT_REG) {
		open_it = true;
		if (dtype == DT_DIR)
			flags |= O_DIRECTORY;
	} else {
		if (fstatat(f->fd, name, &c->st, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		have_stat = true;
		open_it = S_ISREG(c->st.st_mode) || S_ISDIR(c->st.st_mode);
		if (S_ISDIR(c->st.st_mode))
			flags |= O_DIRECTORY;
	}
	if (open_it) {
		/* atime is not archived; leave it alone when we may */
		c->fd = openat(f->fd, name, flags | (flags & O_DIRECTORY ? 0 : O_NOATIME));
		if (c->fd < 0 && errno == EPERM && !(flags & O_DIRECTORY))
			c->fd = openat(f->fd, name, flags);
		if (c->fd < 0)
			return -errno;
		if (!have_stat && fstat(c->fd, &c->st) < 0)
			return -errno;
	}
	if (c->fd < 0 || c->st.st_dev == f->dev) {
		c->magic = f->magic;
	} else {
		struct statfs sfs;
		if (fstatfs(c->fd, &sfs) < 0)
			return -errno;
		c->magic = sfs.f_type;
	}
	return 0;
}

static int add_item(struct frame *f, const char *name, uint64_t start)
{
	if (f->n_items == f->cap_items) {
		size_t cap = f->cap_items ? f->cap_items * 2 : 16;
		struct gb_item *v = realloc(f->items, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		f->items = v;
		f->cap_items = cap;
	}
	f->items[f->n_items++] = (struct gb_item){ ca_goodbye_hash(name, strlen(name)), start, UINT64_MAX };
	return 0;
}

/* One step in the top frame: the next child, or the GOODBYE. */
static int step(struct enc *e)
{
	size_t top = e->n_frames - 1;
	struct frame *f = &e->frames[top];
	struct ca_meta_node c;
	bool pushed;
	int r;

	if (f->idx == f->n_names) {
		r = emit_goodbye(e, f->entry_off, f->items, f->n_items);
		if (r < 0)
			return r;
		frame_free(f);
		e->n_frames--;
		if (e->n_frames > 0) {
			struct frame *p = &e->frames[e->n_frames - 1];
			p->items[p->n_items - 1].end = e->off;
		}
		return 0;
	}
	const char *name = f->names[f->idx++];
	r = open_child(f, name, (unsigned char)name[-1], &c);
	if (r < 0) {
		r = fail(e, r, name);
		goto out;
	}
	r = shall_store(e, f, &c, name);
	if (r < 0) {
		r = fail(e, r, name);
		goto out;
	}
	if (r == 0)
		goto out;
	r = add_item(f, name, e->off);
	if (r < 0) {
		r = fail(e, r, name);
		goto out;
	}
	size_t nl = strlen(name) + 1;
	uint8_t h[16];
	ca_le64_write(h, 16 + nl);
	ca_le64_write(h + 8, CA_FORMAT_FILENAME);
	r = emit(e, h, 16);
	if (r == 0)
		r = emit(e, name, nl);
	if (r < 0)
		goto out;
	r = write_node(e, &c, name, &pushed);
	if (r < 0)
		goto out;
	if (!pushed) {
		f = &e->frames[top];
		f->items[f->n_items - 1].end = e->off;
	}
out:
	if (c.fd >= 0)
		close(c.fd);
	return r;
}

int ca_catar_encode(int dir_fd, const struct ca_catar_enc_opts *o, uint64_t *ret_size)
{
	struct enc e = { .o = o, .flags = o->feature_flags, .child_excl = CA_EXCLUDE_SET_INIT };
	struct ca_meta_node root = { .fd = -1, .parent_fd = -1 };
	struct statfs sfs;
	bool pushed;
	int r;

	if ((o->feature_flags & ~CA_FORMAT_FEATURE_FLAGS_MAX) || ca_feature_normalize(o->feature_flags) != o->feature_flags)
		return ca_log_error_errno(-EINVAL, "feature flags 0x%016llx", (unsigned long long)o->feature_flags);
	e.out = malloc(CA_CATAR_ENC_BUFSIZE);
	r = e.out ? ca_meta_ctx_init(&e.meta, o->feature_flags) : -ENOMEM;
	e.meta.uid_shift = o->uid_shift;
	if (r == 0)
		r = ca_exclude_rules_new(&e.rules);
	if (r < 0) {
		r = ca_log_error_errno(r, "archive");
		goto out;
	}
	/* our own open file description: readdir must start at 0 */
	root.fd = openat(dir_fd, ".", O_RDONLY | O_CLOEXEC | O_DIRECTORY);
	if (root.fd < 0 || fstat(root.fd, &root.st) < 0 || fstatfs(root.fd, &sfs) < 0) {
		r = fail(&e, -errno, NULL);
		goto out;
	}
	root.magic = sfs.f_type;
	r = write_node(&e, &root, NULL, &pushed);
	while (r == 0 && e.n_frames > 0)
		r = step(&e);
	if (r == 0)
		r = flush(&e);
	if (r == 0 && ret_size)
		*ret_size = e.off;
out:
	if (root.fd >= 0)
		close(root.fd);
	while (e.n_frames > 0)
		frame_free(&e.frames[--e.n_frames]);
	free(e.frames);
	ca_exclude_set_release(&e.child_excl);
	ca_exclude_rules_free(e.rules);
	ca_meta_ctx_done(&e.meta);
	ca_buf_release(&e.rec);
	ca_buf_release(&e.gb);
	free(e.out);
	return r;
}
