/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * acl.h - an archive node's ACL records as the kernel's POSIX ACL xattr
 * values (system.posix_acl_access / system.posix_acl_default): a le32
 * version 2 header, then {le16 tag, le16 perm, le32 id} entries in the
 * kernel's order (user_obj, users by id, group_obj, groups by id, mask,
 * other). The owner, group and other entries of an access ACL come from
 * the mode, as the archive leaves them there; its mask is the mode's
 * group bits.
 */
#ifndef CAFS_ACL_H
#define CAFS_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catar_node.h"

/* The access (dflt false) or default ACL of cn as an xattr value, malloc'd
 * into *ret. -ENODATA when the node has none (a plain mode, or no default
 * ACL), -ENOMEM. */
int cafs_acl_xattr(const struct ca_catar_node *cn, bool dflt, uint8_t **ret, size_t *ret_size);

#endif
