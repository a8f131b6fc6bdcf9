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

/* A table node for an archive node (takes over the reference rn). */
static struct cafs_node *node_from(struct cafs_fs *fs, struct ca_catar_ra_node *rn, uint64_t parent)
{
	const struct ca_catar_node *cn = ca_catar_ra_node_get(rn);
	struct cafs_node *n = cafs_node_new(cn->entry_offset + 1);
	if (!n) {
		ca_catar_ra_node_unref(rn);
		return NULL;
	}
	n->own = compact(fs, cn);
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

int cafs_tree_init(struct cafs_fs *fs)
{
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
		if (plus) {
			n = cafs_inode_add(fs->inodes, n, 1);
			if (!fn(userdata, i, name, n)) {
				cafs_inode_forget(fs->inodes, n->ino, 1);
				break;
			}
		} else {
			bool more = fn(userdata, i, name, n);
			cafs_node_free(n);
			if (!more)
				break;
		}
	}
	return 0;
}

int cafs_tree_listxattr(struct cafs_fs *fs, struct cafs_node *n, bool trusted, char *buf, size_t size,
                        size_t *ret_len)
{
	struct ca_xattr_policy p = fs->xattrs;
	p.trusted = trusted;
	return ca_catar_node_listxattr(n->cn, &p, buf, size, ret_len);
}

int cafs_tree_getxattr(struct cafs_fs *fs, struct cafs_node *n, bool trusted, const char *name, char *buf,
                       size_t size, size_t *ret_len)
{
	struct ca_xattr_policy p = fs->xattrs;
	p.trusted = trusted;
	return ca_catar_node_getxattr(n->cn, &p, name, buf, size, ret_len);
}

unsigned cafs_tree_chattr(const struct cafs_node *n)
{
	return ca_feature_to_chattr(n->cn->flags);
}
