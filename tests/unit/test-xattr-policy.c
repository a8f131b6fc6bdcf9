/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-xattr-policy.c - the xattr policy (core/catar/xattr_policy.h) name by
 * name: which source may give which namespace, with and without root, a
 * SELinux host and the overlay option, and that the feature flags rule.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>

#include "format/format.h"
#include "tap.h"
#include "catar/xattr_policy.h"

#define ALL (CA_FORMAT_WITH_XATTRS | CA_FORMAT_WITH_ACL | CA_FORMAT_WITH_SELINUX | CA_FORMAT_WITH_FCAPS)

static bool allows(bool trusted, bool selinux, bool overlay, uint64_t flags, enum ca_xattr_source src,
                   const char *name)
{
	struct ca_xattr_policy p = { .trusted = trusted, .selinux = selinux, .overlay = overlay };
	return ca_xattr_policy_refuses(&p, flags, src, name) == NULL;
}

int main(void)
{
	/* generic records */
	check(allows(false, false, false, ALL, CA_XATTR_RECORD, "user.x"));
	check(!allows(false, false, false, ALL, CA_XATTR_RECORD, "trusted.foo"));
	check(allows(true, false, false, ALL, CA_XATTR_RECORD, "trusted.foo"));
	check(!allows(true, false, false, ALL, CA_XATTR_RECORD, "trusted.overlay.opaque"));
	check(allows(true, false, true, ALL, CA_XATTR_RECORD, "trusted.overlay.opaque"));
	check(!allows(false, false, true, ALL, CA_XATTR_RECORD, "trusted.overlay.opaque")); /* still trusted.* */
	check(!allows(true, false, false, ALL, CA_XATTR_RECORD, "user.overlay.x"));
	check(allows(false, false, true, ALL, CA_XATTR_RECORD, "user.overlay.x"));
	check(allows(false, false, false, ALL, CA_XATTR_RECORD, "user.overlayx")); /* not the namespace */
	check(allows(true, false, false, ALL, CA_XATTR_RECORD, "trusted.overlayx"));
	check(!allows(true, true, true, ALL, CA_XATTR_RECORD, "security.capability"));
	check(!allows(true, true, true, ALL, CA_XATTR_RECORD, "security.selinux"));
	check(!allows(true, true, true, ALL, CA_XATTR_RECORD, "security.ima"));
	check(!allows(true, true, true, ALL, CA_XATTR_RECORD, "system.posix_acl_access"));
	check(!allows(true, true, true, ALL, CA_XATTR_RECORD, "other.x"));
	check(!allows(true, true, true, ALL & ~CA_FORMAT_WITH_XATTRS, CA_XATTR_RECORD, "user.x"));
	/* their own records */
	check(allows(false, false, false, ALL, CA_XATTR_FCAPS, "security.capability"));
	check(!allows(true, true, true, ALL & ~CA_FORMAT_WITH_FCAPS, CA_XATTR_FCAPS, "security.capability"));
	check(!allows(true, true, true, ALL, CA_XATTR_FCAPS, "security.selinux"));
	check(!allows(true, false, false, ALL, CA_XATTR_SELINUX, "security.selinux"));
	check(allows(false, true, false, ALL, CA_XATTR_SELINUX, "security.selinux"));
	check(!allows(true, true, true, ALL & ~CA_FORMAT_WITH_SELINUX, CA_XATTR_SELINUX, "security.selinux"));
	check(allows(false, false, false, ALL, CA_XATTR_ACL, "system.posix_acl_access"));
	check(allows(false, false, false, ALL, CA_XATTR_ACL, "system.posix_acl_default"));
	check(!allows(true, true, true, ALL, CA_XATTR_ACL, "system.other"));
	check(!allows(true, true, true, ALL & ~CA_FORMAT_WITH_ACL, CA_XATTR_ACL, "system.posix_acl_access"));
	/* where a name comes from */
	check_int(ca_xattr_source_of("security.capability"), ==, CA_XATTR_FCAPS);
	check_int(ca_xattr_source_of("security.selinux"), ==, CA_XATTR_SELINUX);
	check_int(ca_xattr_source_of("system.posix_acl_access"), ==, CA_XATTR_ACL);
	check_int(ca_xattr_source_of("system.posix_acl_default"), ==, CA_XATTR_ACL);
	check_int(ca_xattr_source_of("user.x"), ==, CA_XATTR_RECORD);
	check_int(ca_xattr_source_of("security.ima"), ==, CA_XATTR_RECORD); /* refused there */
	/* whether an archive may show anything: what getxattr ENOSYS rests on */
	struct ca_xattr_policy off = { 0 }, se = { .selinux = true };
	check(!ca_xattr_policy_shows_any(&se, ALL, 0));
	check(!ca_xattr_policy_shows_any(&off, ALL, 1u << CA_XATTR_SELINUX)); /* SELinux off here */
	check(ca_xattr_policy_shows_any(&se, ALL, 1u << CA_XATTR_SELINUX));
	check(ca_xattr_policy_shows_any(&off, ALL, 1u << CA_XATTR_RECORD));
	check(ca_xattr_policy_shows_any(&off, ALL, 1u << CA_XATTR_FCAPS));
	check(ca_xattr_policy_shows_any(&off, ALL, 1u << CA_XATTR_ACL));
	check(!ca_xattr_policy_shows_any(&se, 0, CA_XATTR_SOURCES_ALL)); /* made without any */
	check(ca_xattr_policy_shows_any(&off, CA_FORMAT_WITH_ACL, CA_XATTR_SOURCES_ALL));
	check(!ca_xattr_policy_shows_any(&off, CA_FORMAT_WITH_SELINUX, CA_XATTR_SOURCES_ALL));
	return tap_done();
}
