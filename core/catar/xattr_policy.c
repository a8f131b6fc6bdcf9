/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* xattr_policy.c - which archive xattrs extract applies and the mount serves (see xattr_policy.h). */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "catar/acl.h"
#include "format/format.h"
#include "catar/xattr_policy.h"

static bool has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static const char *record_refuses(const struct ca_xattr_policy *p, const char *name)
{
	if (has_prefix(name, "user.")) {
		if (has_prefix(name, "user.overlay.") && !p->overlay)
			return "overlayfs attribute";
		return NULL;
	}
	if (has_prefix(name, "trusted.")) {
		if (has_prefix(name, "trusted.overlay.") && !p->overlay)
			return "overlayfs attribute";
		return p->trusted ? NULL : "trusted.* needs root";
	}
	if (has_prefix(name, "security."))
		return "security.* only from its own record";
	if (has_prefix(name, "system."))
		return "system.* only from the ACL records";
	return "unknown namespace";
}

const char *ca_xattr_policy_refuses(const struct ca_xattr_policy *p, uint64_t flags, enum ca_xattr_source src,
                                    const char *name)
{
	switch (src) {
	case CA_XATTR_RECORD:
		if (!(flags & CA_FORMAT_WITH_XATTRS))
			return "not in the archive's feature flags";
		return record_refuses(p, name);
	case CA_XATTR_FCAPS:
		if (!(flags & CA_FORMAT_WITH_FCAPS) || strcmp(name, "security.capability"))
			return "not in the archive's feature flags";
		return NULL;
	case CA_XATTR_SELINUX:
		if (!(flags & CA_FORMAT_WITH_SELINUX) || strcmp(name, "security.selinux"))
			return "not in the archive's feature flags";
		return p->selinux ? NULL : "SELinux is off on this host";
	case CA_XATTR_ACL:
		if (!(flags & CA_FORMAT_WITH_ACL) || (strcmp(name, CA_ACL_XATTR_ACCESS) && strcmp(name, CA_ACL_XATTR_DEFAULT)))
			return "not in the archive's feature flags";
		return NULL;
	}
	return "unknown source";
}

enum ca_xattr_source ca_xattr_source_of(const char *name)
{
	if (!strcmp(name, "security.capability"))
		return CA_XATTR_FCAPS;
	if (!strcmp(name, "security.selinux"))
		return CA_XATTR_SELINUX;
	if (!strcmp(name, CA_ACL_XATTR_ACCESS) || !strcmp(name, CA_ACL_XATTR_DEFAULT))
		return CA_XATTR_ACL;
	return CA_XATTR_RECORD;
}

bool ca_xattr_policy_shows_any(const struct ca_xattr_policy *p, uint64_t flags, unsigned sources)
{
	return ((sources & (1u << CA_XATTR_RECORD)) && (flags & CA_FORMAT_WITH_XATTRS)) ||
	       ((sources & (1u << CA_XATTR_FCAPS)) && (flags & CA_FORMAT_WITH_FCAPS)) ||
	       ((sources & (1u << CA_XATTR_SELINUX)) && (flags & CA_FORMAT_WITH_SELINUX) && p->selinux) ||
	       ((sources & (1u << CA_XATTR_ACL)) && (flags & CA_FORMAT_WITH_ACL));
}

bool ca_xattr_host_selinux(void)
{
	return access("/sys/fs/selinux/enforce", F_OK) == 0;
}
