/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * acl.h - the one codec for POSIX ACLs: between an archive node's ACL
 * records (format.h: ACL_USER, ACL_GROUP, ACL_GROUP_OBJ, ACL_DEFAULT,
 * ACL_DEFAULT_USER, ACL_DEFAULT_GROUP) and the kernel's xattr values
 * system.posix_acl_access / system.posix_acl_default, through one plain
 * struct, struct ca_acl.
 *
 * The xattr format is the kernel ABI of linux/posix_acl_xattr.h: a le32
 * version (2), then 8-byte entries {le16 tag, le16 perm, le32 id} in the
 * kernel's order (user_obj, users by id, group_obj, groups by id, mask,
 * other). The archive keeps an access ACL's owner, group-or-mask and
 * other bits in the ENTRY mode, and its group entry in ACL_GROUP_OBJ only
 * when there is a mask; a default ACL has all four in ACL_DEFAULT.
 *
 * Errors: -EBADMSG for a malformed xattr value, -EINVAL for a struct
 * ca_acl the kernel would refuse, -ENODATA when a node has no such ACL,
 * -ENOMEM. Malformed input never crashes. No global state; thread-safe.
 */
#ifndef CA_ACL_H
#define CA_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "catar/catar_node.h"

#define CA_ACL_XATTR_ACCESS "system.posix_acl_access"
#define CA_ACL_XATTR_DEFAULT "system.posix_acl_default"

struct ca_acl_entry {
	uint64_t id;   /* uid or gid */
	uint64_t perm; /* CA_ACL_PERM_* bits */
	char *name;    /* owned; NULL when none (the xattr format has no names) */
};

struct ca_acl {
	/* permissions of the object entries; CA_ACL_NO_MASK (UINT64_MAX) when absent */
	uint64_t user_obj, group_obj, other, mask;
	struct ca_acl_entry *users, *groups; /* owned */
	size_t n_users, n_groups;
};

/* An empty ACL: every object entry absent, no named entries. */
void ca_acl_init(struct ca_acl *a);
/* Free the named entries (and their names), then init again. NULL-safe. */
void ca_acl_release(struct ca_acl *a);

/* True when a has no entry at all (the file had no such xattr). */
bool ca_acl_is_empty(const struct ca_acl *a);

/* Decode an xattr value into *ret (init'd by this call; release it even
 * on failure). Entries may come in any order; named entries are returned
 * sorted by id. -EBADMSG: wrong version, size not 4 + 8n, unknown tag, an
 * object entry twice, a named entry without id (UINT32_MAX). */
int ca_acl_from_xattr(const void *value, size_t size, struct ca_acl *ret);

/* Encode a as an xattr value, malloc'd into *ret (*ret_size bytes).
 * -EINVAL unless user_obj, group_obj and other are present, permissions
 * fit in 3 bits, ids fit in 32 bits and named ids strictly increase
 * within users and within groups, and a mask is present when there are
 * named entries (what the kernel demands). */
int ca_acl_to_xattr(const struct ca_acl *a, uint8_t **ret, size_t *ret_size);

/* The access (dflt false) or default ACL that a parsed node's records
 * describe, into *ret (init'd by this call; names are not copied).
 * -ENODATA when it has none: an access ACL only exists when it is more
 * than the mode (ACL_USER, ACL_GROUP or ACL_GROUP_OBJ records). */
int ca_acl_from_node(const struct ca_catar_node *n, bool dflt, struct ca_acl *ret);

/* ca_acl_from_node then ca_acl_to_xattr: the node's ACL as the kernel's
 * xattr value, what the mount serves and extract writes. */
int ca_acl_node_xattr(const struct ca_catar_node *n, bool dflt, uint8_t **ret, size_t *ret_size);

/* Sort named entries as casync writes their records: by id, an entry
 * without a name before one with, then by name, then by permissions. */
void ca_acl_sort_records(struct ca_acl *a);

/* Append the ACL records of one node to out, in archive order, for its
 * access ACL and its default ACL (either may be empty): ACL_USER*,
 * ACL_GROUP*, ACL_GROUP_OBJ (only with a mask: without one the mode's
 * group bits are the group entry), ACL_DEFAULT, ACL_DEFAULT_USER*,
 * ACL_DEFAULT_GROUP*. Named entries must be sorted (ca_acl_sort_records). */
int ca_acl_put_records(const struct ca_acl *access, const struct ca_acl *dflt, struct ca_buf *out);

#endif
