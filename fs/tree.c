/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tree.c - the archive tree of a .caidx/.catar mount over the random-access
 * decoder: nodes and their attributes, lookup, readdir, xattrs.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/sysmacros.h>

#include "fs_private.h"

/* ---- a bounded LRU of loaded things (records, listings) ----
 *
 * Keyed by a number; one load per key at a time (later callers wait for
 * it, at most FS_META_WAIT_MS); entries in use are never freed under
 * their users; past max bytes (or max entries) the least recently used
 * unused ones go. */

struct mc_entry {
	uint64_t key;
	unsigned refs;    /* users, not the cache */
	bool loading;     /* the first caller is loading it */
	bool linked;      /* in the cache's list (findable) */
	int err;          /* the load's result, for those who waited */
	void *val;
	size_t bytes;
	struct mc_entry *prev, *next;
};

struct fs_mcache {
	pthread_mutex_t lock;
	pthread_cond_t done; /* a load finished */
	size_t bytes, max_bytes, n, max_n;
	void (*free_val)(void *val);
	struct mc_entry *head, *tail; /* most recently used first */
};

typedef int (*mc_load_fn)(struct fs *fs, uint64_t key, void *ctx, void **ret_val, size_t *ret_bytes);

static struct fs_mcache *mc_new(size_t max_bytes, size_t max_n, void (*free_val)(void *))
{
	struct fs_mcache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->done, NULL);
	c->max_bytes = max_bytes;
	c->max_n = max_n;
	c->free_val = free_val;
	return c;
}

static void mc_entry_free(struct fs_mcache *c, struct mc_entry *e)
{
	if (e->val)
		c->free_val(e->val);
	free(e);
}

static void mc_free(struct fs_mcache *c)
{
	if (!c)
		return;
	while (c->head) {
		struct mc_entry *e = c->head;
		c->head = e->next;
		mc_entry_free(c, e);
	}
	pthread_cond_destroy(&c->done);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void mc_unlink(struct fs_mcache *c, struct mc_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
	e->linked = false;
	c->bytes -= e->bytes;
	c->n--;
}

static void mc_front(struct fs_mcache *c, struct mc_entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
	e->linked = true;
	c->bytes += e->bytes;
	c->n++;
}

/* Drop unused entries from the old end while over budget; entries in use
 * are dropped from the list too (their last user frees them), except the
 * one just used (keep), which may be alone over the budget. Freed entries
 * go on *q (by next). */
static void mc_trim_locked(struct fs_mcache *c, struct mc_entry *keep, struct mc_entry **q)
{
	struct mc_entry *e = c->tail;
	while ((c->bytes > c->max_bytes || c->n > c->max_n) && e) {
		struct mc_entry *prev = e->prev;
		if (e != keep && !e->loading) {
			mc_unlink(c, e);
			if (e->refs == 0) {
				e->next = *q;
				*q = e;
			}
		}
		e = prev;
	}
}

static void mc_free_queue(struct fs_mcache *c, struct mc_entry *q)
{
	while (q) {
		struct mc_entry *next = q->next;
		mc_entry_free(c, q);
		q = next;
	}
}

static void mc_put(struct fs_mcache *c, struct mc_entry *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&c->lock);
	bool last = --e->refs == 0 && !e->linked;
	pthread_mutex_unlock(&c->lock);
	if (last)
		mc_entry_free(c, e);
}

/* The entry for key with a reference (mc_put it), loaded by load when it
 * is not cached. */
static int mc_get(struct fs *fs, struct fs_mcache *c, uint64_t key, mc_load_fn load, void *ctx,
                  struct mc_entry **ret)
{
	struct mc_entry *e, *q = NULL;
	int r = 0;
	pthread_mutex_lock(&c->lock);
	for (e = c->head; e && e->key != key; e = e->next)
		;
	if (e) {
		e->refs++;
		if (e->loading) {
			struct timespec dl = ca_deadline_ms(FS_META_WAIT_MS);
			while (e->loading && r == 0)
				if (pthread_cond_timedwait(&c->done, &c->lock, &dl) == ETIMEDOUT)
					r = -ETIMEDOUT;
		}
		if (r == 0)
			r = e->err;
		if (r == 0 && e->linked) {
			/* to the front: out and in again */
			mc_unlink(c, e);
			mc_front(c, e);
		}
		pthread_mutex_unlock(&c->lock);
		if (r < 0) {
			mc_put(c, e);
			return r;
		}
		*ret = e;
		return 0;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&c->lock);
		return -ENOMEM;
	}
	e->key = key;
	e->refs = 1;
	e->loading = true;
	mc_front(c, e);
	pthread_mutex_unlock(&c->lock);

	void *val = NULL;
	size_t bytes = 0;
	r = load(fs, key, ctx, &val, &bytes);

	pthread_mutex_lock(&c->lock);
	e->loading = false;
	e->err = r;
	if (r < 0) {
		/* not cached: the next caller tries again; waiters see r */
		if (e->linked)
			mc_unlink(c, e);
	} else {
		e->val = val;
		if (e->linked) {
			c->bytes += bytes;
			e->bytes = bytes;
			mc_trim_locked(c, e, &q);
		} else {
			e->bytes = bytes;
		}
	}
	pthread_cond_broadcast(&c->done);
	pthread_mutex_unlock(&c->lock);
	mc_free_queue(c, q);
	if (r < 0) {
		mc_put(c, e);
		return r;
	}
	*ret = e;
	return 0;
}

/* A compact copy of a loaded node: its entry's bytes read again (they are
 * in the chunk LRU: a copy, no fetch) and parsed with the public parser,
 * so every pointer points into the copy. NULL when anything disagrees;
 * the caller then keeps the loaded node. */
static struct ca_catar_node *compact(struct fs *fs, const struct ca_catar_node *src)
{
	size_t need, size = src->meta_size;
	/* a directory's metadata ends where the next record header (a
	 * FILENAME or its GOODBYE) begins: the parser needs to see that one */
	size_t len = S_ISDIR(src->mode) ? size + 16 : size;
	if (size == 0 || size > CA_CATAR_META_MAX || src->end_offset - src->entry_offset < len)
		return NULL;
	struct ca_catar_node *cn = malloc(sizeof(*cn) + len);
	if (!cn)
		return NULL;
	uint8_t *bytes = (uint8_t *)(cn + 1);
	ssize_t k = fs->img.read(fs->img.userdata, bytes, len, src->entry_offset);
	if (k != (ssize_t)len ||
	    ca_catar_node_parse(bytes, len, src->entry_offset, src->end_offset - src->entry_offset,
	                        src->feature_flags, cn, &need) != 0 ||
	    cn->meta_size != size || cn->mode != src->mode || cn->mtime != src->mtime ||
	    cn->payload_offset != src->payload_offset || cn->payload_size != src->payload_size ||
	    cn->n_xattrs != src->n_xattrs) {
		free(cn);
		return NULL;
	}
	/* what random access knows beyond the entry itself */
	cn->end_offset = src->end_offset;
	cn->filename_offset = src->filename_offset;
	cn->children_offset = src->children_offset;
	cn->goodbye_offset = src->goodbye_offset;
	cn->n_children = src->n_children;
	cn->name = "";
	return cn;
}

/* The fields of a node without its records (a symlink keeps its target):
 * what stat, lookup, readdir, read and readlink need. */
static struct ca_catar_node *thin(const struct ca_catar_node *src)
{
	size_t tl = src->symlink_target ? strlen(src->symlink_target) + 1 : 0;
	struct ca_catar_node *cn = malloc(sizeof(*cn) + tl);
	if (!cn)
		return NULL;
	*cn = *src;
	cn->name = "";
	cn->user_name = cn->group_name = cn->selinux = NULL;
	cn->fcaps = NULL;
	cn->fcaps_size = 0;
	cn->_meta = NULL;
	cn->_xattr_begin = cn->_xattr_end = 0;
	memset(cn->_acl_begin, 0, sizeof(cn->_acl_begin));
	memset(cn->_acl_end, 0, sizeof(cn->_acl_end));
	cn->_cache = NULL;
	cn->_cache_len = 0;
	if (tl) {
		memcpy(cn + 1, src->symlink_target, tl);
		cn->symlink_target = (const char *)(cn + 1);
	}
	return cn;
}

static uint64_t fs_sc_ino(struct fs *fs, size_t i)
{
	return ca_sidecar_entry_offset(fs->sc, i) + 1;
}

/* A table node for an archive node (takes over the reference rn). */
static struct fs_node *node_from(struct fs *fs, struct ca_catar_ra_node *rn, uint64_t parent)
{
	const struct ca_catar_node *cn = ca_catar_ra_node_get(rn);
	struct fs_node *n = fs_node_new(cn->entry_offset + 1);
	if (!n) {
		ca_catar_ra_node_unref(rn);
		return NULL;
	}
	/* big records are not kept with the node (its memory would grow with
	 * the kernel's inode cache): the records cache loads them on demand */
	n->thin = cn->meta_size > FS_META_SMALL;
	n->own = n->thin ? thin(cn) : compact(fs, cn);
	if (n->own) {
		ca_catar_ra_node_unref(rn);
		cn = n->own;
	} else {
		ca_log_debug("entry at %" PRIu64 ": keeping the loaded node (no compact copy)", cn->entry_offset);
		n->ra = rn;
	}
	n->cn = cn;
	n->parent = parent;
	ca_catar_node_stat(cn, &n->st);
	if (S_ISREG(cn->mode))
		n->data_off = cn->payload_offset;
	return n;
}

/* ---- answers from the metadata sidecar (no chunk is read) ---- */

/* A node for sidecar entry i: a copy of the parsed node, whose pointers
 * point into the sidecar (it lives as long as the image). */
static struct fs_node *sc_node(struct fs *fs, size_t i)
{
	struct ca_catar_node *cn = malloc(sizeof(*cn));
	if (!cn)
		return NULL;
	ca_sidecar_node(fs->sc, i, cn);
	struct fs_node *n = fs_node_new(cn->entry_offset + 1);
	if (!n) {
		free(cn);
		return NULL;
	}
	n->own = cn;
	n->cn = cn;
	n->parent = i == 0 ? FUSE_ROOT_ID : fs_sc_ino(fs, ca_sidecar_parent(fs->sc, i));
	ca_catar_node_stat(cn, &n->st);
	if (S_ISREG(cn->mode))
		n->data_off = cn->payload_offset;
	return n;
}

static int sc_index(struct fs *fs, uint64_t ino, size_t *ret)
{
	/* the sidecar lists every entry: not found is no entry of ours */
	return ino == 0 || ca_sidecar_find(fs->sc, ino - 1, ret) < 0 ? -ESTALE : 0;
}

static int sc_lookup(struct fs *fs, struct fs_node *dir, const char *name, struct fs_node **ret)
{
	size_t d, c;
	int r = sc_index(fs, dir->ino, &d);
	if (r == 0)
		r = ca_sidecar_lookup(fs->sc, d, name, strlen(name), &c);
	if (r < 0)
		return r == -ESTALE ? -EIO : r;
	struct fs_node *n = sc_node(fs, c);
	if (!n)
		return -ENOMEM;
	*ret = fs_inode_add(fs->inodes, n, 1);
	return 0;
}

/* Hand entry i (the new node n) to a listing; false: the listing is full.
 * readdirplus gives the kernel a reference; plain readdir none. */
static bool emit(struct fs *fs, struct fs_node *n, uint64_t i, const char *name, bool plus,
                 fs_tree_dir_fn fn, void *userdata)
{
	if (plus) {
		n = fs_inode_add(fs->inodes, n, 1);
		bool more = fn(userdata, i, name, n);
		if (!more)
			fs_inode_forget(fs->inodes, n->ino, 1);
		fs_node_put(fs->inodes, n);
		return more;
	}
	bool more = fn(userdata, i, name, n);
	fs_node_free(n);
	return more;
}

static int sc_readdir(struct fs *fs, struct fs_node *dir, uint64_t from, bool plus, fs_tree_dir_fn fn,
                      void *userdata)
{
	size_t d;
	int r = sc_index(fs, dir->ino, &d);
	if (r < 0)
		return -EIO;
	for (uint64_t i = from; i < ca_sidecar_n_children(fs->sc, d); i++) {
		struct fs_node *n = sc_node(fs, ca_sidecar_child(fs->sc, d, (size_t)i));
		if (!n)
			return -ENOMEM;
		const char *name = n->cn->name; /* in the sidecar: outlives n */
		if (!emit(fs, n, i, name, plus, fn, userdata))
			break;
	}
	return 0;
}

/* ---- listings (random access): the listings cache, by directory ino ---- */

struct listing {
	struct ca_catar_child *children;
	size_t n;
};

static void listing_free(void *v)
{
	struct listing *l = v;
	free(l->children);
	free(l);
}

static int listing_load(struct fs *fs, uint64_t key, void *ctx, void **ret_val, size_t *ret_bytes)
{
	const struct fs_node *dir = ctx;
	struct listing *l = calloc(1, sizeof(*l));
	(void)key;
	if (!l)
		return -ENOMEM;
	int r = ca_catar_ra_list(fs->ra, dir->cn, &l->children, &l->n);
	if (r < 0) {
		free(l);
		return r;
	}
	/* ask for all the children's headers at once so that loading them
	 * one by one finds their chunks on the way */
	ca_catar_ra_prefetch_children(fs->ra, l->children, l->n);
	*ret_val = l;
	*ret_bytes = sizeof(*l) + l->n * sizeof(*l->children);
	return 0;
}

static int listing_get(struct fs *fs, const struct fs_node *dir, struct mc_entry **ret)
{
	return mc_get(fs, fs->listings, dir->ino, listing_load, (void *)dir, ret);
}

/* ---- the tree ---- */

static void records_free(void *v);

int fs_tree_init(struct fs *fs)
{
	fs->records = mc_new(FS_RECORDS_MAX, 1024, records_free);
	fs->listings = mc_new(FS_LISTINGS_MAX, 1024, listing_free);
	if (!fs->records || !fs->listings)
		return -ENOMEM;
	if (fs->sc) {
		struct fs_node *root = sc_node(fs, 0);
		if (!root)
			return -ENOMEM;
		fs_inode_pin(fs->inodes, root);
		return 0;
	}
	struct ca_catar_ra_node *rn;
	int r = ca_catar_ra_root(fs->ra, &rn);
	if (r < 0)
		return r;
	struct fs_node *root = node_from(fs, rn, FUSE_ROOT_ID);
	if (!root)
		return -ENOMEM;
	fs_inode_pin(fs->inodes, root);
	return 0;
}

/* bytes in use and the bound of one cache (NULL: a blob mount's none) */
static void mc_usage(struct fs_mcache *c, uint64_t *bytes, uint64_t *max)
{
	*bytes = *max = 0;
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	*bytes = c->bytes;
	*max = c->max_bytes;
	pthread_mutex_unlock(&c->lock);
}

void fs_tree_memory(struct fs *fs, uint64_t ret[4])
{
	mc_usage(fs->records, &ret[0], &ret[1]);
	mc_usage(fs->listings, &ret[2], &ret[3]);
}

void fs_tree_free(struct fs *fs)
{
	mc_free(fs->records);
	mc_free(fs->listings);
}

/* A child from dir's listing as a node (not in the table); its name into
 * name (256 bytes) when name is not NULL. */
static int load_child(struct fs *fs, const struct fs_node *dir, const struct ca_catar_child *c,
                      struct fs_node **ret, char *name)
{
	struct ca_catar_ra_node *rn;
	int r = ca_catar_ra_load_child(fs->ra, c, &rn);
	if (r < 0)
		return r;
	if (name) {
		/* it points into the loaded node, which a compact copy drops */
		const char *nm = ca_catar_ra_node_get(rn)->name;
		size_t len = strlen(nm);
		if (len >= 256) {
			ca_catar_ra_node_unref(rn);
			return -EBADMSG;
		}
		memcpy(name, nm, len + 1);
	}
	struct fs_node *n = node_from(fs, rn, dir->ino);
	if (!n)
		return -ENOMEM;
	*ret = n;
	return 0;
}

/* Rebuild the node at ENTRY offset `at` by walking down from the root:
 * each directory's children tile its children area in archive order, so
 * one binary search a level finds the child whose range holds `at`. */
static int ra_locate(struct fs *fs, uint64_t at, struct fs_node **ret)
{
	struct fs_node *dir = fs_inode_find(fs->inodes, FUSE_ROOT_ID);
	int r = 0;
	while (dir) {
		struct mc_entry *e;
		if (!S_ISDIR(dir->st.st_mode) || at <= dir->ino - 1 || at >= dir->cn->end_offset) {
			r = -ESTALE;
			break;
		}
		r = listing_get(fs, dir, &e);
		if (r < 0)
			break;
		const struct listing *l = e->val;
		size_t lo = 0, hi = l->n; /* the last child starting at or before at */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (l->children[mid].filename_offset <= at)
				lo = mid + 1;
			else
				hi = mid;
		}
		struct fs_node *child = NULL;
		if (lo == 0 || at >= l->children[lo - 1].end_offset)
			r = -ESTALE;
		else
			r = load_child(fs, dir, &l->children[lo - 1], &child, NULL);
		mc_put(fs->listings, e);
		if (r < 0)
			break;
		fs_node_put(fs->inodes, dir);
		/* every step is cached: the next rebuild below it is cheaper */
		dir = fs_inode_add(fs->inodes, child, 0);
		if (dir->ino - 1 == at) {
			*ret = dir;
			return 0;
		}
	}
	fs_node_put(fs->inodes, dir);
	return r;
}

int fs_tree_node(struct fs *fs, uint64_t ino, struct fs_node **ret)
{
	struct fs_node *n = fs_inode_find(fs->inodes, ino);
	if (n) {
		*ret = n;
		return 0;
	}
	if (!fs->tree || ino == 0 || ino - 1 >= fs->img.size)
		return -ESTALE;
	if (fs->sc) {
		size_t i;
		int r = sc_index(fs, ino, &i);
		if (r < 0)
			return r;
		n = sc_node(fs, i);
		if (!n)
			return -ENOMEM;
		*ret = fs_inode_add(fs->inodes, n, 0);
		return 0;
	}
	return ra_locate(fs, ino - 1, ret);
}

int fs_tree_lookup(struct fs *fs, struct fs_node *dir, const char *name, struct fs_node **ret)
{
	if (fs->sc)
		return sc_lookup(fs, dir, name, ret);
	struct ca_catar_ra_node *rn;
	int r = ca_catar_ra_lookup(fs->ra, dir->cn, name, strlen(name), &rn);
	if (r < 0)
		return r;
	struct fs_node *n = node_from(fs, rn, dir->ino);
	if (!n)
		return -ENOMEM;
	*ret = fs_inode_add(fs->inodes, n, 1);
	return 0;
}

int fs_tree_readdir(struct fs *fs, struct fs_node *dir, uint64_t from, bool plus, fs_tree_dir_fn fn,
                    void *userdata)
{
	if (fs->sc)
		return sc_readdir(fs, dir, from, plus, fn, userdata);
	struct mc_entry *e;
	int r = listing_get(fs, dir, &e);
	if (r < 0)
		return r;
	const struct listing *l = e->val;
	for (uint64_t i = from; i < l->n; i++) {
		struct fs_node *n;
		char name[256];
		r = load_child(fs, dir, &l->children[i], &n, name);
		if (r < 0)
			break;
		if (!emit(fs, n, i, name, plus, fn, userdata))
			break;
	}
	mc_put(fs->listings, e);
	return r;
}

/* ---- xattrs of big nodes: the records cache, by ENTRY offset ----
 *
 * A node with big records (thin, or from the sidecar with many xattrs)
 * keeps in the cache an index of its XATTR records (where each value
 * sits, 16 bytes a record, and the names) and a copy of its other records
 * (owner names, fcaps, SELinux, ACLs), not the values: listxattr and a
 * getxattr that asks the size read no chunk, a getxattr reads its one
 * value from the image (through the chunk LRU) or the sidecar. Names are
 * in strict strcmp order (the parser checks it), so a lookup is a binary
 * search. An entry of 8 MiB of xattrs is loaded once to build the index;
 * its values are not kept. */

/* sidecar nodes with fewer records are searched in place */
#define XATTR_INDEX_MIN 16u

struct xrec {
	uint64_t value_off; /* of the value from the ENTRY */
	uint32_t size;      /* of the value */
	uint32_t name;      /* offset of its name (NUL-terminated) in names */
};

struct records {
	/* the node's records without its XATTR ones (or, when that copy
	 * could not be made, all of them and an empty index) */
	struct ca_catar_node *own;     /* a compact copy, or */
	struct ca_catar_ra_node *ra;   /* the loaded node, or */
	struct ca_catar_node sc;       /* a copy of a sidecar node (pointers into it) */
	const struct ca_catar_node *cn;
	const uint8_t *mem; /* the entry's bytes (sidecar), NULL: read the image */
	uint64_t base;      /* the ENTRY's archive offset */
	size_t n;
	char *names; /* after x[n], in the same block */
	struct xrec x[];
};

static void records_free(void *v)
{
	struct records *rc = v;
	free(rc->own);
	ca_catar_ra_node_unref(rc->ra);
	free(rc);
}

/* The index of cn's XATTR records (cn's bytes in memory) in a new
 * records, and its byte count. */
static struct records *records_index(const struct ca_catar_node *cn, size_t *ret_bytes)
{
	size_t n = 0, names = 0, cursor = 0;
	struct ca_catar_xattr x;
	while (ca_catar_node_next_xattr(cn, &cursor, &x)) {
		n++;
		names += strlen(x.name) + 1;
	}
	size_t bytes = sizeof(struct records) + n * sizeof(struct xrec) + names;
	struct records *rc = calloc(1, bytes);
	if (!rc)
		return NULL;
	rc->names = (char *)&rc->x[n];
	size_t at = 0;
	cursor = 0;
	while (rc->n < n && ca_catar_node_next_xattr(cn, &cursor, &x)) {
		size_t k = strlen(x.name) + 1;
		rc->x[rc->n].value_off = (uint64_t)(x.value - cn->_meta);
		rc->x[rc->n].size = (uint32_t)x.size;
		rc->x[rc->n].name = (uint32_t)at;
		memcpy(rc->names + at, x.name, k);
		at += k;
		rc->n++;
	}
	rc->base = cn->entry_offset;
	*ret_bytes = bytes;
	return rc;
}

/* A copy of a loaded node's records without the XATTR ones, parsed by the
 * archive's parser (so its pointers point into the copy); NULL when
 * anything disagrees. */
static struct ca_catar_node *strip_xattrs(struct fs *fs, const struct ca_catar_node *src)
{
	size_t size = src->meta_size;
	size_t len = S_ISDIR(src->mode) ? size + 16 : size;
	size_t xb = src->_xattr_begin, xe = src->_xattr_end;
	if (src->n_xattrs == 0 || size > CA_CATAR_META_MAX || src->end_offset - src->entry_offset < len ||
	    xb >= xe || xe > size)
		return NULL;
	size_t cut = len - (xe - xb), need;
	struct ca_catar_node *cn = malloc(sizeof(*cn) + cut);
	if (!cn)
		return NULL;
	uint8_t *bytes = (uint8_t *)(cn + 1);
	memcpy(bytes, src->_meta, xb);
	memcpy(bytes + xb, src->_meta + xe, size - xe);
	/* a directory's next header is not among the parsed bytes: read it */
	ssize_t k = 0;
	if (len > size)
		k = fs->img.read(fs->img.userdata, bytes + xb + (size - xe), len - size, src->entry_offset + size);
	if (k != (ssize_t)(len - size) ||
	    ca_catar_node_parse(bytes, cut, src->entry_offset, src->end_offset - src->entry_offset,
	                        src->feature_flags, cn, &need) != 0 ||
	    cn->meta_size != size - (xe - xb) || cn->mode != src->mode || cn->n_xattrs != 0 ||
	    cn->n_acl_user != src->n_acl_user || cn->n_acl_group != src->n_acl_group ||
	    cn->n_acl_default_user != src->n_acl_default_user ||
	    cn->n_acl_default_group != src->n_acl_default_group) {
		free(cn);
		return NULL;
	}
	return cn;
}

static int records_load(struct fs *fs, uint64_t key, void *ctx, void **ret_val, size_t *ret_bytes)
{
	const struct fs_node *n = ctx;
	struct ca_catar_ra_node *rn = NULL;
	struct records *rc = NULL;
	size_t bytes;
	(void)key;
	if (fs->sc) {
		/* the sidecar holds the bytes: an index, nothing copied */
		rc = records_index(n->cn, &bytes);
		if (!rc)
			return -ENOMEM;
		rc->sc = *n->cn;
		rc->sc.n_xattrs = 0;
		rc->cn = &rc->sc;
		rc->mem = n->cn->_meta;
		goto done;
	}
	atomic_fetch_add_explicit(&fs->meta_loads, 1, memory_order_relaxed);
	int r = ca_catar_ra_load(fs->ra, n->cn->entry_offset, n->cn->end_offset, &rn);
	if (r < 0)
		return r;
	const struct ca_catar_node *full = ca_catar_ra_node_get(rn);
	struct ca_catar_node *rest = strip_xattrs(fs, full);
	if (rest) {
		rc = records_index(full, &bytes);
		if (!rc) {
			free(rest);
			ca_catar_ra_node_unref(rn);
			return -ENOMEM;
		}
		ca_catar_ra_node_unref(rn);
		rc->own = rest;
		rc->cn = rest;
		bytes += sizeof(*rest) + rest->meta_size;
		goto done;
	}
	/* no xattrs (or no stripped copy): all the records, no index; a
	 * copy of just them, so the load's buffer (and its share of the
	 * loads' budget) goes back at once */
	rc = calloc(1, sizeof(*rc));
	if (!rc) {
		ca_catar_ra_node_unref(rn);
		return -ENOMEM;
	}
	rc->own = compact(fs, full);
	if (rc->own) {
		ca_catar_ra_node_unref(rn);
		full = rc->own;
	} else {
		rc->ra = rn;
	}
	bytes = sizeof(*rc) + sizeof(*full) + full->meta_size;
	rc->cn = full;
done:
	*ret_val = rc;
	*ret_bytes = bytes;
	return 0;
}

/* Bytes [off, off + len) of the entry's records. */
static int records_read(struct fs *fs, const struct records *rc, void *buf, size_t len, uint64_t off)
{
	if (rc->mem) {
		memcpy(buf, rc->mem + off, len);
		return 0;
	}
	ssize_t k = fs->img.read(fs->img.userdata, buf, len, rc->base + off);
	return k == (ssize_t)len ? 0 : k < 0 ? (int)k : -EIO;
}

/* The node's records: its own, or from the records cache (*rc set, and *e
 * the cache reference to give back; NULL for the node's own). */
static int records_get(struct fs *fs, const struct fs_node *n, const struct ca_catar_node **ret,
                       const struct records **rc, struct mc_entry **e)
{
	*e = NULL;
	*rc = NULL;
	if (!n->thin && (!fs->sc || n->cn->n_xattrs < XATTR_INDEX_MIN)) {
		*ret = n->cn;
		return 0;
	}
	int r = mc_get(fs, fs->records, n->ino, records_load, (void *)n, e);
	if (r < 0)
		return r;
	*rc = (*e)->val;
	*ret = (*rc)->cn;
	return 0;
}

int fs_tree_listxattr(struct fs *fs, struct fs_node *n, bool trusted, char *buf, size_t size,
                      size_t *ret_len)
{
	struct ca_xattr_policy p = fs->xattrs;
	const struct ca_catar_node *cn;
	const struct records *rc;
	struct mc_entry *e;
	size_t len = 0, rest;
	p.trusted = trusted;
	int r = records_get(fs, n, &cn, &rc, &e);
	if (r < 0)
		return r;
	/* the XATTR records first (their order), then the others */
	for (size_t i = 0; rc && i < rc->n && r == 0; i++) {
		const char *name = rc->names + rc->x[i].name;
		if (ca_xattr_policy_refuses(&p, cn->feature_flags, CA_XATTR_RECORD, name))
			continue;
		size_t k = strlen(name) + 1;
		if (size > 0) {
			if (k > size - len)
				r = -ERANGE;
			else
				memcpy(buf + len, name, k);
		}
		len += k;
	}
	if (r == 0) {
		/* size 0 asks only the length: a full buffer must still say ERANGE */
		r = ca_catar_node_listxattr(cn, &p, size > 0 && size == len ? NULL : buf + len,
		                            size > 0 ? size - len : 0, &rest);
		if (r == 0 && size > 0 && size == len && rest > 0)
			r = -ERANGE;
		*ret_len = len + rest;
	}
	mc_put(fs->records, e);
	return r;
}

/* getxattr of an XATTR record by binary search: 1 with the value (or its
 * length), 0 when no record has that name (or the policy refuses it). */
static int records_getxattr(struct fs *fs, const struct records *rc, const struct ca_catar_node *cn,
                            const struct ca_xattr_policy *p, const char *name, char *buf, size_t size,
                            size_t *ret_len)
{
	size_t lo = 0, hi = rc->n;
	if (ca_xattr_policy_refuses(p, cn->feature_flags, CA_XATTR_RECORD, name))
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, rc->names + rc->x[mid].name);
		if (c < 0) {
			hi = mid;
		} else if (c > 0) {
			lo = mid + 1;
		} else {
			const struct xrec *x = &rc->x[mid];
			if (size > 0) {
				if (x->size > size)
					return -ERANGE;
				int r = records_read(fs, rc, buf, x->size, x->value_off);
				if (r < 0)
					return r;
			}
			*ret_len = x->size;
			return 1;
		}
	}
	return 0;
}

int fs_tree_getxattr(struct fs *fs, struct fs_node *n, bool trusted, const char *name, char *buf,
                     size_t size, size_t *ret_len)
{
	struct ca_xattr_policy p = fs->xattrs;
	const struct ca_catar_node *cn;
	const struct records *rc;
	struct mc_entry *e;
	p.trusted = trusted;
	int r = records_get(fs, n, &cn, &rc, &e);
	if (r < 0)
		return r;
	r = rc ? records_getxattr(fs, rc, cn, &p, name, buf, size, ret_len) : 0;
	if (r == 0)
		r = ca_catar_node_getxattr(cn, &p, name, buf, size, ret_len);
	else if (r > 0)
		r = 0;
	mc_put(fs->records, e);
	return r;
}

unsigned fs_tree_chattr(const struct fs_node *n)
{
	return ca_feature_to_chattr(n->cn->flags);
}

bool fs_tree_xattr_absent(const struct fs *fs, const char *name)
{
	struct ca_xattr_policy p = fs->xattrs;
	enum ca_xattr_source src = ca_xattr_source_of(name);
	p.trusted = true;
	return !(fs->xattr_sources & (1u << src)) || ca_xattr_policy_refuses(&p, fs->archive_flags, src, name);
}
