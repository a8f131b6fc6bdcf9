/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* feature.c - feature flag names and normalization. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <linux/fs.h>

#include "format/feature.h"

static const struct {
	const char *name;
	uint64_t bits;
} names[] = {
	{ "16bit-uids", CA_FORMAT_WITH_16BIT_UIDS },
	{ "32bit-uids", CA_FORMAT_WITH_32BIT_UIDS },
	{ "user-names", CA_FORMAT_WITH_USER_NAMES },
	{ "sec-time", CA_FORMAT_WITH_SEC_TIME },
	{ "usec-time", CA_FORMAT_WITH_USEC_TIME },
	{ "nsec-time", CA_FORMAT_WITH_NSEC_TIME },
	{ "2sec-time", CA_FORMAT_WITH_2SEC_TIME },
	{ "read-only", CA_FORMAT_WITH_READ_ONLY },
	{ "permissions", CA_FORMAT_WITH_PERMISSIONS },
	{ "symlinks", CA_FORMAT_WITH_SYMLINKS },
	{ "device-nodes", CA_FORMAT_WITH_DEVICE_NODES },
	{ "fifos", CA_FORMAT_WITH_FIFOS },
	{ "sockets", CA_FORMAT_WITH_SOCKETS },
	{ "flag-hidden", CA_FORMAT_WITH_FLAG_HIDDEN },
	{ "flag-system", CA_FORMAT_WITH_FLAG_SYSTEM },
	{ "flag-archive", CA_FORMAT_WITH_FLAG_ARCHIVE },
	{ "flag-append", CA_FORMAT_WITH_FLAG_APPEND },
	{ "flag-noatime", CA_FORMAT_WITH_FLAG_NOATIME },
	{ "flag-compr", CA_FORMAT_WITH_FLAG_COMPR },
	{ "flag-nocow", CA_FORMAT_WITH_FLAG_NOCOW },
	{ "flag-nodump", CA_FORMAT_WITH_FLAG_NODUMP },
	{ "flag-dirsync", CA_FORMAT_WITH_FLAG_DIRSYNC },
	{ "flag-immutable", CA_FORMAT_WITH_FLAG_IMMUTABLE },
	{ "flag-sync", CA_FORMAT_WITH_FLAG_SYNC },
	{ "flag-nocomp", CA_FORMAT_WITH_FLAG_NOCOMP },
	{ "flag-projinherit", CA_FORMAT_WITH_FLAG_PROJINHERIT },
	{ "subvolume", CA_FORMAT_WITH_SUBVOLUME },
	{ "subvolume-ro", CA_FORMAT_WITH_SUBVOLUME_RO },
	{ "xattrs", CA_FORMAT_WITH_XATTRS },
	{ "acl", CA_FORMAT_WITH_ACL },
	{ "selinux", CA_FORMAT_WITH_SELINUX },
	{ "fcaps", CA_FORMAT_WITH_FCAPS },
	{ "quota-projid", CA_FORMAT_WITH_QUOTA_PROJID },
	/* sets */
	{ "best", CA_FORMAT_WITH_BEST },
	{ "unix", UINT64_C(0x1f09) },
	{ "fat", UINT64_C(0xe0c0) },
	{ "chattr", UINT64_C(0x3ff0000) },
	{ "fat-attrs", UINT64_C(0xe000) },
	{ "privileged", UINT64_C(0x1ec414407) },
	{ "fuse", UINT64_C(0x13fffffb) },
	{ "all", CA_FORMAT_WITH_MASK },
};

#define N_SINGLE 33 /* entries above that name one bit */

/* The archive encodes chattr state with feature bits, not the kernel's values. */
static const struct {
	uint64_t feature;
	unsigned kernel;
} chattr_map[] = {
	{ CA_FORMAT_WITH_FLAG_APPEND, FS_APPEND_FL },       { CA_FORMAT_WITH_FLAG_NOATIME, FS_NOATIME_FL },
	{ CA_FORMAT_WITH_FLAG_COMPR, FS_COMPR_FL },         { CA_FORMAT_WITH_FLAG_NOCOW, FS_NOCOW_FL },
	{ CA_FORMAT_WITH_FLAG_NODUMP, FS_NODUMP_FL },       { CA_FORMAT_WITH_FLAG_DIRSYNC, FS_DIRSYNC_FL },
	{ CA_FORMAT_WITH_FLAG_IMMUTABLE, FS_IMMUTABLE_FL }, { CA_FORMAT_WITH_FLAG_SYNC, FS_SYNC_FL },
	{ CA_FORMAT_WITH_FLAG_NOCOMP, FS_NOCOMP_FL },       { CA_FORMAT_WITH_FLAG_PROJINHERIT, FS_PROJINHERIT_FL },
};

unsigned ca_feature_to_chattr(uint64_t flags)
{
	unsigned out = 0;
	for (size_t i = 0; i < sizeof(chattr_map) / sizeof(chattr_map[0]); i++)
		if (flags & chattr_map[i].feature)
			out |= chattr_map[i].kernel;
	return out;
}

uint64_t ca_feature_from_chattr(unsigned kernel_flags)
{
	uint64_t out = 0;
	for (size_t i = 0; i < sizeof(chattr_map) / sizeof(chattr_map[0]); i++)
		if (kernel_flags & chattr_map[i].kernel)
			out |= chattr_map[i].feature;
	return out;
}

uint64_t ca_feature_normalize(uint64_t f)
{
	if ((f & CA_FORMAT_WITH_ACL) &&
	    !(f & (CA_FORMAT_WITH_16BIT_UIDS | CA_FORMAT_WITH_32BIT_UIDS | CA_FORMAT_WITH_USER_NAMES)))
		f |= CA_FORMAT_WITH_32BIT_UIDS | CA_FORMAT_WITH_USER_NAMES;
	if (f & CA_FORMAT_WITH_32BIT_UIDS)
		f &= ~CA_FORMAT_WITH_16BIT_UIDS;
	if (f & CA_FORMAT_WITH_NSEC_TIME)
		f &= ~(CA_FORMAT_WITH_USEC_TIME | CA_FORMAT_WITH_SEC_TIME | CA_FORMAT_WITH_2SEC_TIME);
	if (f & CA_FORMAT_WITH_USEC_TIME)
		f &= ~(CA_FORMAT_WITH_SEC_TIME | CA_FORMAT_WITH_2SEC_TIME);
	if (f & CA_FORMAT_WITH_SEC_TIME)
		f &= ~CA_FORMAT_WITH_2SEC_TIME;
	if (f & CA_FORMAT_WITH_ACL)
		f &= ~(CA_FORMAT_WITH_PERMISSIONS | CA_FORMAT_WITH_READ_ONLY);
	if (f & CA_FORMAT_WITH_PERMISSIONS)
		f &= ~CA_FORMAT_WITH_READ_ONLY;
	if (f & CA_FORMAT_EXCLUDE_NODUMP)
		f &= ~CA_FORMAT_WITH_FLAG_NODUMP;
	if (f & CA_FORMAT_WITH_SUBVOLUME_RO)
		f |= CA_FORMAT_WITH_SUBVOLUME;
	return f;
}

bool ca_feature_is_valid(uint64_t f)
{
	if (f == UINT64_MAX || (f & ~CA_FORMAT_FEATURE_FLAGS_MAX))
		return false;
	return ca_feature_normalize(f) == f;
}

int ca_feature_parse_name(const char *name, uint64_t *ret)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i].name, name)) {
			*ret = names[i].bits;
			return 0;
		}
	return -EINVAL;
}

void ca_feature_format(uint64_t flags, char *buf, unsigned len)
{
	unsigned n = 0;
	buf[0] = 0;
	for (size_t i = 0; i < N_SINGLE; i++) {
		if (!(flags & names[i].bits))
			continue;
		int k = snprintf(buf + n, len - n, "%s%s", n ? "," : "", names[i].name);
		if (k < 0 || (unsigned)k >= len - n)
			return;
		n += k;
	}
}
