/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * feature.h - casync feature flags: names, normalization and the CLI's
 * --with/--without rules.
 */
#ifndef CA_FEATURE_H
#define CA_FEATURE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/digest.h"
#include "format/format.h"

/* The smallest equivalent set, as casync stores it (acl implies uids and
 * names, nsec removes coarser times, ...). */
uint64_t ca_feature_normalize(uint64_t flags);
/* Known bits only, normalized, and not UINT64_MAX: what readers accept. */
bool ca_feature_is_valid(uint64_t flags);

/* Parse one --with/--without argument: a flag name ("symlinks") or a set
 * name ("best", "unix", "fat", "chattr", "fat-attrs", "privileged", "fuse",
 * "all"). -EINVAL for unknown names. */
int ca_feature_parse_name(const char *name, uint64_t *ret);

/* chattr: the kernel's FS_*_FL bits for the flag-* feature bits set in
 * flags (others ignored), and back. */
unsigned ca_feature_to_chattr(uint64_t flags);
uint64_t ca_feature_from_chattr(unsigned kernel_flags);

/* Comma-separated names of the WITH bits in flags into buf. */
void ca_feature_format(uint64_t flags, char *buf, unsigned len);

/* The digest a set of feature flags names (bit CA_FORMAT_SHA512_256). */
static inline enum ca_digest_type ca_digest_type_from_flags(uint64_t flags)
{
	return (flags & CA_FORMAT_SHA512_256) ? CA_DIGEST_SHA512_256 : CA_DIGEST_SHA256;
}

#endif
