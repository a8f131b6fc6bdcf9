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

#include "acl.h"
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
	struct stat *st = &n->st;
	st->st_ino = (ino_t)n->ino;
	st->st_mode = (mode_t)cn->mode;
	st->st_uid = (uid_t)cn->uid;
	st->st_gid = (gid_t)cn->gid;
	st->st_nlink = S_ISDIR(st->st_mode) ? 2 : 1;
	st->st_blksize = 4096;
	if (S_ISREG(st->st_mode)) {
		st->st_size = (off_t)cn->payload_size;
		n->data_off = cn->payload_offset;
	} else if (S_ISLNK(st->st_mode) && cn->symlink_target) {
		st->st_size = (off_t)strlen(cn->symlink_target);
	} else if (S_ISBLK(st->st_mode) || S_ISCHR(st->st_mode)) {
		st->st_rdev = makedev((unsigned)cn->device_major, (unsigned)cn->device_minor);
	}
	st->st_blocks = (blkcnt_t)(((uint64_t)st->st_size + 511) / 512);
	/* times before 1970 are stored as two's complement nanoseconds */
	int64_t ns = (int64_t)cn->mtime, sec = ns / 1000000000, rem = ns % 1000000000;
	if (rem < 0) {
		sec--;
		rem += 1000000000;
	}
	st->st_mtim.tv_sec = (time_t)sec;
	st->st_mtim.tv_nsec = (long)rem;
	st->st_atim = st->st_ctim = st->st_mtim;
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

/* The attributes a node shows: its user.* / trusted.* records, the file
 * capability and the SELinux label, and its ACLs, under their kernel names. */
struct xattr_walk {
	const struct ca_catar_node *cn;
	size_t cursor;
	int stage;
	uint8_t *acl; /* the ACL value last returned (owned) */
	int err;      /* ENOMEM building one */
};

static bool acl_next(struct xattr_walk *w, bool dflt, struct ca_catar_xattr *ret)
{
	size_t size;
	free(w->acl);
	w->acl = NULL;
	int r = ca_acl_node_xattr(w->cn, dflt, &w->acl, &size);
	if (r == -ENODATA)
		return false;
	if (r < 0) {
		w->err = r;
		return false;
	}
	*ret = (struct ca_catar_xattr){ dflt ? CA_ACL_XATTR_DEFAULT : CA_ACL_XATTR_ACCESS, w->acl, size };
	return true;
}

static bool xattr_next(struct xattr_walk *w, struct ca_catar_xattr *ret)
{
	switch (w->stage) {
	case 0:
		if (ca_catar_node_next_xattr(w->cn, &w->cursor, ret))
			return true;
		w->stage = 1;
		/* fall through */
	case 1:
		w->stage = 2;
		if (w->cn->fcaps) {
			*ret = (struct ca_catar_xattr){ "security.capability", w->cn->fcaps, w->cn->fcaps_size };
			return true;
		}
		/* fall through */
	case 2:
		w->stage = 3;
		if (w->cn->selinux) {
			*ret = (struct ca_catar_xattr){ "security.selinux", (const uint8_t *)w->cn->selinux,
				                        strlen(w->cn->selinux) + 1 };
			return true;
		}
		/* fall through */
	case 3:
		w->stage = 4;
		if (acl_next(w, false, ret))
			return true;
		/* fall through */
	case 4:
		w->stage = 5;
		if (w->err == 0 && acl_next(w, true, ret))
			return true;
		/* fall through */
	default:
		return false;
	}
}

static int xattr_walk_done(struct xattr_walk *w)
{
	free(w->acl);
	w->acl = NULL;
	return w->err;
}

int cafs_tree_listxattr(struct cafs_fs *fs, struct cafs_node *n, char *buf, size_t size, size_t *ret_len)
{
	(void)fs;
	struct xattr_walk w = { .cn = n->cn };
	struct ca_catar_xattr x;
	size_t len = 0;
	while (xattr_next(&w, &x)) {
		size_t k = strlen(x.name) + 1;
		if (size > 0) {
			if (k > size - len) {
				xattr_walk_done(&w);
				return -ERANGE;
			}
			memcpy(buf + len, x.name, k);
		}
		len += k;
	}
	*ret_len = len;
	return xattr_walk_done(&w);
}

int cafs_tree_getxattr(struct cafs_fs *fs, struct cafs_node *n, const char *name, char *buf, size_t size,
                       size_t *ret_len)
{
	(void)fs;
	struct xattr_walk w = { .cn = n->cn };
	struct ca_catar_xattr x;
	int r = -ENODATA;
	while (xattr_next(&w, &x)) {
		if (strcmp(x.name, name))
			continue;
		r = 0;
		if (size > 0) {
			if (x.size > size) {
				r = -ERANGE;
				break;
			}
			memcpy(buf, x.value, x.size);
		}
		*ret_len = x.size;
		break;
	}
	int e = xattr_walk_done(&w);
	return e < 0 ? e : r;
}

unsigned cafs_tree_chattr(const struct cafs_node *n)
{
	return ca_feature_to_chattr(n->cn->flags);
}
