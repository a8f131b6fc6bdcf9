/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * xattr_policy.h - which of an archive's extended attributes extract
 * applies and the mount serves: the one rule, for both.
 *
 * An archive is input from elsewhere; some namespaces are instructions to
 * the kernel, not data: trusted.overlay.* (and user.overlay.* on a
 * userxattr overlay) make a directory opaque or a file a whiteout or a
 * redirect when the tree is an overlayfs layer, security.capability grants
 * privileges at exec, security.* labels steer an LSM, system.* are ACLs.
 * So a name is allowed by where it comes from and what it is:
 *
 *   generic XATTR record (feature flag xattrs)
 *     user.*                allowed; user.overlay.* only with overlay
 *     trusted.*             only when trusted (extract as root, a root
 *                           caller of the mount); trusted.overlay.* only
 *                           with overlay as well
 *     security.*, system.*  never: those come from their own records
 *     anything else         never (no other namespace exists)
 *   FCAPS record (fcaps)    security.capability
 *   SELINUX record (selinux) security.selinux, only when the host runs
 *                           SELinux (/sys/fs/selinux/enforce exists)
 *   ACL records (acl)       system.posix_acl_access / _default
 *
 * A record whose feature flag the archive lacks is never allowed (the
 * parser refuses such records anyway). Listing tools (list, mtree,
 * libcafs' getxattr) describe the archive and do not use the policy.
 * Pure functions; thread-safe.
 */
#ifndef CA_XATTR_POLICY_H
#define CA_XATTR_POLICY_H

#include <stdbool.h>
#include <stdint.h>

enum ca_xattr_source {
	CA_XATTR_RECORD,  /* a generic XATTR record */
	CA_XATTR_FCAPS,   /* the FCAPS record: security.capability */
	CA_XATTR_SELINUX, /* the SELINUX record: security.selinux */
	CA_XATTR_ACL,     /* the ACL records: system.posix_acl_* */
};

struct ca_xattr_policy {
	bool trusted; /* trusted.* may be applied or served */
	bool selinux; /* the host runs SELinux (ca_xattr_host_selinux) */
	bool overlay; /* trusted.overlay.* / user.overlay.* too (asked for by the user) */
};

/* NULL when name, from src in a node with feature flags flags, is
 * allowed; otherwise why not, a short static phrase for messages
 * ("overlayfs attribute", "trusted.* needs root", ...). */
const char *ca_xattr_policy_refuses(const struct ca_xattr_policy *p, uint64_t flags, enum ca_xattr_source src,
                                    const char *name);

/* The record a name can come from (security.capability: FCAPS, ...;
 * anything else: a generic XATTR record, which the policy may refuse). */
enum ca_xattr_source ca_xattr_source_of(const char *name);

/* Every source (for an archive whose records are not known). */
#define CA_XATTR_SOURCES_ALL ((1u << CA_XATTR_RECORD) | (1u << CA_XATTR_FCAPS) | (1u << CA_XATTR_SELINUX) | \
                              (1u << CA_XATTR_ACL))

/* Whether an archive with feature flags flags whose entries have records
 * of the kinds in sources (a mask of 1u << enum ca_xattr_source) may show
 * any attribute under p, to any caller (trusted or not). True for generic
 * XATTR records whatever their names (they are not looked at); false
 * means no getxattr can find anything. */
bool ca_xattr_policy_shows_any(const struct ca_xattr_policy *p, uint64_t flags, unsigned sources);

/* Whether this host runs SELinux (selinuxfs mounted with its enforce
 * file, as libselinux's is_selinux_enabled looks). */
bool ca_xattr_host_selinux(void);

#endif
