/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* acl.c - archive ACL records -> POSIX ACL xattr values. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "acl.h"

/* linux/posix_acl_xattr.h and linux/posix_acl.h, which not every libc
 * installation ships together */
#define ACL_XATTR_VERSION 0x0002
#define TAG_USER_OBJ 0x01
#define TAG_USER 0x02
#define TAG_GROUP_OBJ 0x04
#define TAG_GROUP 0x08
#define TAG_MASK 0x10
#define TAG_OTHER 0x20
#define ID_UNDEFINED UINT32_MAX

struct out {
	uint8_t *p;
	size_t n;
};

static void put(struct out *o, unsigned tag, uint64_t perm, uint32_t id)
{
	uint8_t *e = o->p + 4 + 8 * o->n++;
	e[0] = (uint8_t)tag;
	e[1] = (uint8_t)(tag >> 8);
	e[2] = (uint8_t)(perm & 7);
	e[3] = 0;
	e[4] = (uint8_t)id;
	e[5] = (uint8_t)(id >> 8);
	e[6] = (uint8_t)(id >> 16);
	e[7] = (uint8_t)(id >> 24);
}

static void put_named(struct out *o, const struct ca_catar_node *cn, enum ca_catar_acl_kind kind, unsigned tag)
{
	struct ca_catar_acl_entry a;
	size_t cursor = 0;
	while (ca_catar_node_next_acl(cn, kind, &cursor, &a))
		put(o, tag, a.permissions, (uint32_t)a.id);
}

int cafs_acl_xattr(const struct ca_catar_node *cn, bool dflt, uint8_t **ret, size_t *ret_size)
{
	size_t users = dflt ? cn->n_acl_default_user : cn->n_acl_user;
	size_t groups = dflt ? cn->n_acl_default_group : cn->n_acl_group;
	if (dflt ? !cn->has_acl_default : (users == 0 && groups == 0 && !cn->has_acl_group_obj))
		return -ENODATA;
	/* users + groups are bounded by the node's metadata size (a record each) */
	struct out o = { malloc(4 + 8 * (users + groups + 4)), 0 };
	if (!o.p)
		return -ENOMEM;
	o.p[0] = ACL_XATTR_VERSION;
	o.p[1] = o.p[2] = o.p[3] = 0;
	if (dflt) {
		put(&o, TAG_USER_OBJ, cn->acl_default_user_obj, ID_UNDEFINED);
		put_named(&o, cn, CA_CATAR_ACL_DEFAULT_USER, TAG_USER);
		put(&o, TAG_GROUP_OBJ, cn->acl_default_group_obj, ID_UNDEFINED);
		put_named(&o, cn, CA_CATAR_ACL_DEFAULT_GROUP, TAG_GROUP);
		if (cn->acl_default_mask != CA_ACL_NO_MASK)
			put(&o, TAG_MASK, cn->acl_default_mask, ID_UNDEFINED);
		put(&o, TAG_OTHER, cn->acl_default_other, ID_UNDEFINED);
	} else {
		uint64_t mode = cn->mode;
		put(&o, TAG_USER_OBJ, mode >> 6, ID_UNDEFINED);
		put_named(&o, cn, CA_CATAR_ACL_USER, TAG_USER);
		put(&o, TAG_GROUP_OBJ, cn->has_acl_group_obj ? cn->acl_group_obj : mode >> 3, ID_UNDEFINED);
		put_named(&o, cn, CA_CATAR_ACL_GROUP, TAG_GROUP);
		put(&o, TAG_MASK, mode >> 3, ID_UNDEFINED);
		put(&o, TAG_OTHER, mode, ID_UNDEFINED);
	}
	*ret = o.p;
	*ret_size = 4 + 8 * o.n;
	return 0;
}
