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

#include "catar_attr.h"
#include "feature.h"
#include "fs_private.h"
#include "log.h"

/* A compact copy of a loaded node: its entry's bytes read again (they are
 * in the chunk LRU: a copy, no fetch) and parsed with the public parser,
 * so every pointer points into the copy. NULL when anything disagrees;
 * the caller then keeps the loaded node. */
static struct ca_catar_node *compact(struct cafs_fs *fs, const struct ca_catar_node *src)
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

static uint64_t fs_sc_ino(struct cafs_fs *fs, size_t i)
{
	return ca_sidecar_entry_offset(fs->sc, i) + 1;
}

/* A table node for an archive node (takes over the reference rn). */
static struct cafs_node *node_from(struct cafs_fs *fs, struct ca_catar_ra_node *rn, uint64_t parent)
{
	const struct ca_catar_node *cn = ca_catar_ra_node_get(rn);
	struct cafs_node *n = cafs_node_new(cn->entry_offset + 1);
	if (!n) {
		ca_catar_ra_node_unref(rn);
		return NULL;
	}
	/* big metadata counts against the budget; past it the node is thin */
	if (cn->meta_size > CAFS_META_SMALL) {
		size_t was = atomic_fetch_add(&fs->meta_held, cn->meta_size);
		if (was + cn->meta_size > CAFS_META_HELD_MAX) {
			atomic_fetch_sub(&fs->meta_held, cn->meta_size);
			n->thin = true;
		} else {
			n->held = cn->meta_size;
			n->held_in = &fs->meta_held;
		}
	}
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

/* A table node for sidecar entry i: a copy of the parsed node, whose
 * pointers point into the sidecar (it lives as long as the image). */
static struct cafs_node *sc_node(struct cafs_fs *fs, size_t i)
{
	struct ca_catar_node *cn = malloc(sizeof(*cn));
	if (!cn)
		return NULL;
	ca_sidecar_node(fs->sc, i, cn);
	struct cafs_node *n = cafs_node_new(cn->entry_offset + 1);
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

static int sc_index(struct cafs_fs *fs, const struct cafs_node *n, size_t *ret)
{
	/* every node of a sidecar mount came from it: not found is a bug */
	return ca_sidecar_find(fs->sc, n->ino - 1, ret) < 0 ? -EIO : 0;
}

static int sc_lookup(struct cafs_fs *fs, struct cafs_node *dir, const char *name, struct cafs_node **ret)
{
	size_t d, c;
	int r = sc_index(fs, dir, &d);
	if (r == 0)
		r = ca_sidecar_lookup(fs->sc, d, name, strlen(name), &c);
	if (r < 0)
		return r;
	struct cafs_node *n = sc_node(fs, c);
	if (!n)
		return -ENOMEM;
	*ret = cafs_inode_add(fs->inodes, n, 1);
	return 0;
}

/* Hand entry i (the new node n) to a listing; false: the listing is full.
 * readdirplus gives the kernel a reference; plain readdir none. */
static bool emit(struct cafs_fs *fs, struct cafs_node *n, uint64_t i, const char *name, bool plus,
                 cafs_tree_dir_fn fn, void *userdata)
{
	if (plus) {
		n = cafs_inode_add(fs->inodes, n, 1);
		if (!fn(userdata, i, name, n)) {
			cafs_inode_forget(fs->inodes, n->ino, 1);
			return false;
		}
		return true;
	}
	bool more = fn(userdata, i, name, n);
	cafs_node_free(n);
	return more;
}

static int sc_readdir(struct cafs_fs *fs, struct cafs_dirh *dh, uint64_t from, bool plus, cafs_tree_dir_fn fn,
                      void *userdata)
{
	size_t d;
	int r = sc_index(fs, dh->node, &d);
	if (r < 0)
		return r;
	for (uint64_t i = from; i < ca_sidecar_n_children(fs->sc, d); i++) {
		struct cafs_node *n = sc_node(fs, ca_sidecar_child(fs->sc, d, (size_t)i));
		if (!n)
			return -ENOMEM;
		const char *name = n->cn->name; /* in the sidecar: outlives n */
		if (!emit(fs, n, i, name, plus, fn, userdata))
			break;
	}
	return 0;
}

/* ---- the tree ---- */

int cafs_tree_init(struct cafs_fs *fs)
{
	if (fs->sc) {
		struct cafs_node *root = sc_node(fs, 0);
		if (!root)
			return -ENOMEM;
		cafs_inode_pin(fs->inodes, root);
		return 0;
	}
	struct ca_catar_ra_node *rn;
	int r = ca_catar_ra_root(fs->ra, &rn);
	if (r < 0)
		return r;
	struct cafs_node *root = node_from(fs, rn, FUSE_ROOT_ID);
	if (!root)
		return -ENOMEM;
	cafs_inode_pin(fs->inodes, root);
	return 0;
}

int cafs_tree_lookup(struct cafs_fs *fs, struct cafs_node *dir, const char *name, struct cafs_node **ret)
{
	if (fs->sc)
		return sc_lookup(fs, dir, name, ret);
	struct ca_catar_ra_node *rn;
	int r = ca_catar_ra_lookup(fs->ra, dir->cn, name, strlen(name), &rn);
	if (r < 0)
		return r;
	struct cafs_node *n = node_from(fs, rn, dir->ino);
	if (!n)
		return -ENOMEM;
	*ret = cafs_inode_add(fs->inodes, n, 1);
	return 0;
}

void cafs_dirh_free(struct cafs_dirh *dh)
{
	if (!dh)
		return;
	free(dh->children);
	pthread_mutex_destroy(&dh->lock);
	free(dh);
}

/* List the directory once per open; ask for all the children's headers at
 * once so that loading them one by one finds their chunks on the way. */
static int dirh_list(struct cafs_fs *fs, struct cafs_dirh *dh)
{
	int r = 0;
	pthread_mutex_lock(&dh->lock);
	if (!dh->listed) {
		r = ca_catar_ra_list(fs->ra, dh->node->cn, &dh->children, &dh->n_children);
		if (r == 0) {
			dh->listed = true;
			ca_catar_ra_prefetch_children(fs->ra, dh->children, dh->n_children);
		}
	}
	pthread_mutex_unlock(&dh->lock);
	return r;
}

int cafs_tree_readdir(struct cafs_fs *fs, struct cafs_dirh *dh, uint64_t from, bool plus, cafs_tree_dir_fn fn,
                      void *userdata)
{
	if (fs->sc)
		return sc_readdir(fs, dh, from, plus, fn, userdata);
	int r = dirh_list(fs, dh);
	if (r < 0)
		return r;
	for (uint64_t i = from; i < dh->n_children; i++) {
		struct ca_catar_ra_node *rn;
		char name[256];
		r = ca_catar_ra_load_child(fs->ra, &dh->children[i], &rn);
		if (r < 0)
			return r;
		const char *nm = ca_catar_ra_node_get(rn)->name;
		size_t len = strlen(nm);
		if (len >= sizeof(name)) {
			ca_catar_ra_node_unref(rn);
			return -EBADMSG;
		}
		memcpy(name, nm, len + 1);
		struct cafs_node *n = node_from(fs, rn, dh->node->ino);
		if (!n)
			return -ENOMEM;
		if (!emit(fs, n, i, name, plus, fn, userdata))
			break;
	}
	return 0;
}

/* A thin node's records, read again: one at a time, so that the reloads
 * of many readers cost one node's metadata at most. */
static int reload(struct cafs_fs *fs, const struct cafs_node *n, struct ca_catar_ra_node **ret)
{
	pthread_mutex_lock(&fs->reload_lock);
	int r = ca_catar_ra_load(fs->ra, n->cn->entry_offset, n->cn->end_offset, ret);
	if (r < 0)
		pthread_mutex_unlock(&fs->reload_lock);
	return r;
}

static void reload_done(struct cafs_fs *fs, struct ca_catar_ra_node *rn)
{
	ca_catar_ra_node_unref(rn);
	pthread_mutex_unlock(&fs->reload_lock);
}

int cafs_tree_listxattr(struct cafs_fs *fs, struct cafs_node *n, bool trusted, char *buf, size_t size,
                        size_t *ret_len)
{
	struct ca_xattr_policy p = fs->xattrs;
	struct ca_catar_ra_node *rn;
	p.trusted = trusted;
	if (!n->thin)
		return ca_catar_node_listxattr(n->cn, &p, buf, size, ret_len);
	int r = reload(fs, n, &rn);
	if (r < 0)
		return r;
	r = ca_catar_node_listxattr(ca_catar_ra_node_get(rn), &p, buf, size, ret_len);
	reload_done(fs, rn);
	return r;
}

int cafs_tree_getxattr(struct cafs_fs *fs, struct cafs_node *n, bool trusted, const char *name, char *buf,
                       size_t size, size_t *ret_len)
{
	struct ca_xattr_policy p = fs->xattrs;
	struct ca_catar_ra_node *rn;
	p.trusted = trusted;
	if (!n->thin)
		return ca_catar_node_getxattr(n->cn, &p, name, buf, size, ret_len);
	int r = reload(fs, n, &rn);
	if (r < 0)
		return r;
	r = ca_catar_node_getxattr(ca_catar_ra_node_get(rn), &p, name, buf, size, ret_len);
	reload_done(fs, rn);
	return r;
}

unsigned cafs_tree_chattr(const struct cafs_node *n)
{
	return ca_feature_to_chattr(n->cn->flags);
}
