/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_meta.h - (internal to the catar encoder) read one node's metadata
 * from the filesystem and serialize its ENTRY and metadata records, as
 * casync does: which syscalls, which errors count as "none", which
 * records each feature flag produces.
 *
 * Two halves meet at struct ca_meta_info: catar_meta.c gathers what the
 * feature flags ask for into it (all filesystem access is there), and
 * catar_meta_put.c writes exactly the records it holds.
 *
 * A node is either open (regular files and directories: fd >= 0) or
 * reached by name from its parent directory (symlinks, devices, fifos,
 * sockets: fd == -1). Not thread-safe: the context holds caches and
 * scratch buffers.
 */
#ifndef CA_CATAR_META_H
#define CA_CATAR_META_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "catar/acl.h"
#include "base/buf.h"
#include "catar/uidshift.h"

struct ca_meta_ctx {
	uint64_t flags;
	uint64_t time_granularity; /* UINT64_MAX: no time stored */
	struct ca_buf xlist, xval, acl, scratch;
	/* last looked-up owner names, as casync caches them */
	bool user_cached, group_cached;
	uid_t cached_uid;
	gid_t cached_gid;
	char *cached_user, *cached_group; /* NULL: no record */
	char *pwbuf;
	size_t pwbuf_size;
	struct ca_uid_shift uid_shift; /* owners and ACL ids as stored (uidshift.h) */
};

struct ca_meta_node {
	int fd;              /* open node, or -1 */
	int parent_fd;       /* the directory holding it; -1 for the root */
	const char *name;    /* its name there; NULL for the root */
	struct stat st;
	long magic;          /* statfs f_type of its filesystem */
	unsigned chattr;     /* FS_IOC_GETFLAGS value, valid when chattr_read */
	bool chattr_read;
};

struct ca_meta_xattr {
	const char *name;
	const uint8_t *value;
	size_t size;
};

/* One node's records as data. Each field is a record, or NULL/0/empty for
 * none; the feature flags were applied when it was gathered. Borrowed
 * pointers (names, xattr names and values, fcaps) point into the context
 * and stay valid until its next ca_meta_serialize. */
struct ca_meta_info {
	/* ENTRY */
	uint64_t feature_flags, mode, flags, uid, gid, mtime;
	const char *user_name, *group_name;  /* borrowed */
	struct ca_meta_xattr *xattrs;        /* owned array, sorted by name */
	size_t n_xattrs;
	struct ca_acl acl_access, acl_default; /* owned; named entries in record order */
	char *selinux;                       /* owned */
	const uint8_t *fcaps;                /* borrowed */
	size_t fcaps_size;
	uint64_t quota_projid;
	/* the last record, by the type in mode: PAYLOAD header, SYMLINK,
	 * DEVICE, or none (directories, fifos, sockets) */
	uint64_t payload_size;
	char *symlink_target; /* owned */
	uint64_t device_major, device_minor;
};

void ca_meta_info_init(struct ca_meta_info *i);
/* Free what i owns, then init it again. */
void ca_meta_info_release(struct ca_meta_info *i);

/* Append i's records to out, in archive order (format.h). */
int ca_meta_put(const struct ca_meta_info *i, struct ca_buf *out);

int ca_meta_ctx_init(struct ca_meta_ctx *c, uint64_t flags);
void ca_meta_ctx_done(struct ca_meta_ctx *c);

/* Read chattr flags of an open regular file or directory when the flags
 * need them (chattr bits or EXCLUDE_NODUMP); unsupported = 0. */
int ca_meta_read_chattr(struct ca_meta_ctx *c, struct ca_meta_node *n);

/* Whether casync descends into / reads the content of this node: false
 * for nodes on virtual API filesystems, and for non-files. */
bool ca_meta_shall_enumerate(const struct ca_meta_node *n);

/* Append ENTRY, its metadata records and the node's last record header
 * (PAYLOAD header with the file size, SYMLINK, DEVICE, or nothing) to out. */
int ca_meta_serialize(struct ca_meta_ctx *c, struct ca_meta_node *n, struct ca_buf *out);

#endif
