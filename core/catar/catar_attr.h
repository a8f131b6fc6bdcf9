/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_attr.h - what an archive node looks like to stat(2) and to the
 * xattr calls: the one translation, used by the mount and by libcafs.
 *
 * Extended attributes are the node's user.* / trusted.* records, then the
 * file capability (security.capability), the SELinux label
 * (security.selinux) and the ACLs (system.posix_acl_access and _default,
 * encoded by acl.h), in that order. Pure functions of the node; thread-safe.
 */
#ifndef CA_CATAR_ATTR_H
#define CA_CATAR_ATTR_H

#include <stddef.h>
#include <sys/stat.h>

#include "catar/catar_node.h"
#include "catar/xattr_policy.h"

/* st_ino = entry offset + 1 (stable for the archive; the root is 1),
 * mode, owner, size (payload, or the symlink target's length), rdev,
 * mtime (also atime and ctime), nlink 1 (2 for a directory), 4 KiB
 * blocks. */
void ca_catar_node_stat(const struct ca_catar_node *n, struct stat *st);

/* listxattr(2)/getxattr(2) rules: with size 0 only *ret_len is set;
 * -ERANGE if buf is too small; -ENODATA for a missing name; -ENOMEM.
 * p: only what the policy allows (xattr_policy.h; what is refused is
 * -ENODATA, as if absent); NULL: all the archive has (to describe it). */
int ca_catar_node_listxattr(const struct ca_catar_node *n, const struct ca_xattr_policy *p, char *buf, size_t size,
                            size_t *ret_len);
int ca_catar_node_getxattr(const struct ca_catar_node *n, const struct ca_xattr_policy *p, const char *name,
                           void *buf, size_t size, size_t *ret_len);

/* The kinds of attribute records n has: a mask of 1u << enum
 * ca_xattr_source (xattr_policy.h), 0 when it shows none at all. */
unsigned ca_catar_node_xattr_sources(const struct ca_catar_node *n);

#endif
