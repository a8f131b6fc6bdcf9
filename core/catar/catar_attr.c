/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* catar_attr.c - a node's stat and extended attributes (see catar_attr.h). */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "catar/acl.h"
#include "catar/catar_attr.h"

void ca_catar_node_stat(const struct ca_catar_node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)(n->entry_offset + 1);
	st->st_mode = (mode_t)n->mode;
	st->st_uid = (uid_t)n->uid;
	st->st_gid = (gid_t)n->gid;
	st->st_nlink = S_ISDIR(st->st_mode) ? 2 : 1;
	st->st_blksize = 4096;
	if (S_ISREG(st->st_mode)) {
		st->st_size = (off_t)n->payload_size;
	} else if (S_ISLNK(st->st_mode) && n->symlink_target) {
		st->st_size = (off_t)strlen(n->symlink_target);
	} else if (S_ISBLK(st->st_mode) || S_ISCHR(st->st_mode)) {
		st->st_rdev = makedev((unsigned)n->device_major, (unsigned)n->device_minor);
	}
	st->st_blocks = (blkcnt_t)(((uint64_t)st->st_size + 511) / 512);
	/* times before 1970 are stored as two's complement nanoseconds */
	int64_t ns = (int64_t)n->mtime, sec = ns / 1000000000, rem = ns % 1000000000;
	if (rem < 0) {
		sec--;
		rem += 1000000000;
	}
	st->st_mtim.tv_sec = (time_t)sec;
	st->st_mtim.tv_nsec = (long)rem;
	st->st_atim = st->st_ctim = st->st_mtim;
}

/* The attributes a node shows: its user.* / trusted.* records, the file
 * capability and the SELinux label, and its ACLs, under their kernel names,
 * those a policy refuses left out. */
struct xattr_walk {
	const struct ca_catar_node *cn;
	const struct ca_xattr_policy *policy; /* NULL: all */
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

static bool xattr_next_any(struct xattr_walk *w, struct ca_catar_xattr *ret, enum ca_xattr_source *src)
{
	switch (w->stage) {
	case 0:
		*src = CA_XATTR_RECORD;
		if (ca_catar_node_next_xattr(w->cn, &w->cursor, ret))
			return true;
		w->stage = 1;
		/* fall through */
	case 1:
		w->stage = 2;
		*src = CA_XATTR_FCAPS;
		if (w->cn->fcaps) {
			*ret = (struct ca_catar_xattr){ "security.capability", w->cn->fcaps, w->cn->fcaps_size };
			return true;
		}
		/* fall through */
	case 2:
		w->stage = 3;
		*src = CA_XATTR_SELINUX;
		if (w->cn->selinux) {
			*ret = (struct ca_catar_xattr){ "security.selinux", (const uint8_t *)w->cn->selinux,
				                        strlen(w->cn->selinux) + 1 };
			return true;
		}
		/* fall through */
	case 3:
		w->stage = 4;
		*src = CA_XATTR_ACL;
		if (acl_next(w, false, ret))
			return true;
		/* fall through */
	case 4:
		w->stage = 5;
		*src = CA_XATTR_ACL;
		if (w->err == 0 && acl_next(w, true, ret))
			return true;
		/* fall through */
	default:
		return false;
	}
}

/* The next attribute the policy allows (all without one). */
static bool xattr_next(struct xattr_walk *w, struct ca_catar_xattr *ret)
{
	enum ca_xattr_source src;
	while (xattr_next_any(w, ret, &src))
		if (!w->policy || !ca_xattr_policy_refuses(w->policy, w->cn->feature_flags, src, ret->name))
			return true;
	return false;
}

static int xattr_walk_done(struct xattr_walk *w)
{
	free(w->acl);
	w->acl = NULL;
	return w->err;
}


int ca_catar_node_listxattr(const struct ca_catar_node *n, const struct ca_xattr_policy *p, char *buf, size_t size,
                            size_t *ret_len)
{
	struct xattr_walk w = { .cn = n, .policy = p };
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

int ca_catar_node_getxattr(const struct ca_catar_node *n, const struct ca_xattr_policy *p, const char *name,
                           void *buf, size_t size, size_t *ret_len)
{
	struct xattr_walk w = { .cn = n, .policy = p };
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

unsigned ca_catar_node_xattr_sources(const struct ca_catar_node *n)
{
	unsigned s = 0;
	if (n->n_xattrs)
		s |= 1u << CA_XATTR_RECORD;
	if (n->fcaps)
		s |= 1u << CA_XATTR_FCAPS;
	if (n->selinux)
		s |= 1u << CA_XATTR_SELINUX;
	if (n->n_acl_user || n->n_acl_group || n->n_acl_default_user || n->n_acl_default_group ||
	    n->has_acl_group_obj || n->has_acl_default)
		s |= 1u << CA_XATTR_ACL;
	return s;
}
