/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_node.h - one archive node (ENTRY, its metadata records and its
 * SYMLINK/DEVICE/PAYLOAD header) parsed and validated from a byte buffer.
 *
 * This is the one place that knows the record order and casync's decoder
 * rules (reference 6.2 and 6.5); both the streaming decoder (catar_dec.h)
 * and random access (catar_ra.h) call ca_catar_node_parse().
 *
 * A parsed node is plain data. Its string and record pointers point into
 * the buffer it was parsed from: they live as long as that buffer.
 */
#ifndef CA_CATAR_NODE_H
#define CA_CATAR_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/format.h"

/* Cap on ENTRY + metadata records of one node: bounds what a corrupt
 * record size can make us allocate or read. casync caps single records
 * (64 KiB xattr values) but not their number. */
#define CA_CATAR_META_MAX (8u * 1024u * 1024u)

struct ca_catar_node {
	/* Where it is: the ENTRY offset (stable, root = 0) and the end of the
	 * node's serialization (exclusive). UINT64_MAX = unknown (the
	 * streaming decoder learns a directory's end only at its GOODBYE). */
	uint64_t entry_offset, end_offset;
	/* The FILENAME record's offset, UINT64_MAX for the root. */
	uint64_t filename_offset;
	const char *name; /* "" for the root; points into the node's buffer */

	/* ENTRY */
	uint64_t feature_flags; /* the archive's: identical in every ENTRY */
	uint64_t mode;          /* S_IFMT | 07777 */
	uint64_t flags;         /* chattr/FAT bits in feature-flag encoding */
	uint64_t uid, gid;
	uint64_t mtime; /* ns since the epoch */

	const char *user_name, *group_name; /* NULL when absent */
	const char *selinux;                /* NULL when absent */
	const uint8_t *fcaps;               /* NULL when absent */
	size_t fcaps_size;
	uint64_t quota_projid; /* 0 when absent */

	size_t n_xattrs;
	size_t n_acl_user, n_acl_group, n_acl_default_user, n_acl_default_group;
	bool has_acl_group_obj;
	uint64_t acl_group_obj; /* permissions, when has_acl_group_obj */
	bool has_acl_default;
	uint64_t acl_default_user_obj, acl_default_group_obj, acl_default_other;
	uint64_t acl_default_mask; /* CA_ACL_NO_MASK when there is none */

	const char *symlink_target;       /* symlinks only */
	uint64_t device_major, device_minor; /* block/char devices only */

	/* Regular files: the content is [payload_offset, payload_offset +
	 * payload_size) of the archive (after the PAYLOAD header). */
	uint64_t payload_offset, payload_size;

	/* Directories: children start at children_offset (right after the
	 * metadata); random access also fills the GOODBYE position and the
	 * child count (UINT64_MAX in the streaming decoder). */
	uint64_t children_offset;
	uint64_t goodbye_offset, n_children;

	/* Bytes of ENTRY + metadata (+ SYMLINK / DEVICE / PAYLOAD header)
	 * starting at entry_offset: what ca_catar_node_parse consumed. */
	size_t meta_size;

	/* private: the parsed bytes, and where each record group sits in them */
	const uint8_t *_meta;
	size_t _xattr_begin, _xattr_end;
	size_t _acl_begin[4], _acl_end[4];
	/* private (random access): archive bytes [_cache_off, _cache_off +
	 * _cache_len) held in memory with the node, so a small file's content
	 * read with it costs no second read; NULL when none */
	const uint8_t *_cache;
	uint64_t _cache_off;
	size_t _cache_len;
};

/* Parse the node whose ENTRY starts buf[0] (archive offset entry_offset).
 *
 * limit: bytes of the archive from entry_offset to the node's end when
 * known (random access), UINT64_MAX when not (stream). The parse stops at
 * the SYMLINK or DEVICE record (included), at the PAYLOAD header
 * (included; the content is not needed), at a FILENAME/GOODBYE header
 * (not included), or when it reaches limit.
 *
 * archive_flags: the flags every ENTRY must carry, or UINT64_MAX to accept
 * any valid set (the root of an archive without an index).
 *
 * Returns 0 with *node filled (pointers into buf), -EAGAIN with *ret_need
 * set to the buffer length needed to get further (call again with more
 * bytes), or -EBADMSG (the failed check logged at debug level). Never
 * reads beyond len. Which records may come where, their sizes and their
 * checks are one table in catar_node.c. */
int ca_catar_node_parse(const uint8_t *buf, size_t len, uint64_t entry_offset, uint64_t limit,
                        uint64_t archive_flags, struct ca_catar_node *node, size_t *ret_need);

/* Iterate records: *cursor starts at 0; each call fills *ret and returns
 * true, or returns false at the end. Records were validated by parse. */
struct ca_catar_xattr {
	const char *name;
	const uint8_t *value;
	size_t size;
};
bool ca_catar_node_next_xattr(const struct ca_catar_node *n, size_t *cursor, struct ca_catar_xattr *ret);

enum ca_catar_acl_kind {
	CA_CATAR_ACL_USER,
	CA_CATAR_ACL_GROUP,
	CA_CATAR_ACL_DEFAULT_USER,
	CA_CATAR_ACL_DEFAULT_GROUP,
};
struct ca_catar_acl_entry {
	uint64_t id, permissions;
	const char *name; /* NULL when the record has none */
};
bool ca_catar_node_next_acl(const struct ca_catar_node *n, enum ca_catar_acl_kind kind, size_t *cursor,
                            struct ca_catar_acl_entry *ret);

/* Point a parsed node (and its records) at a copy of its bytes. */
void ca_catar_node_rebase(struct ca_catar_node *n, const uint8_t *copy);

/* FILENAME rules: non-empty, <= 255, no '/', no NUL, not "." or "..". */
bool ca_catar_filename_is_valid(const char *name, size_t len);

/* Parse a FILENAME record at buf (len bytes available; archive offset
 * offset, for messages). Returns the record size (>= 18) with the name in
 * *ret_name (points into buf), -EAGAIN with *ret_need, or -EBADMSG. */
int ca_catar_filename_parse(const uint8_t *buf, size_t len, uint64_t offset, const char **ret_name,
                            size_t *ret_need);

/* Every -EBADMSG of the archive parsers goes through here: logs at debug
 * level which check failed ("catar: FILENAME at 1234: name contains '/'")
 * and returns -EBADMSG, so a parser can say why in the return statement. */
int ca_catar_corrupt(const char *record, uint64_t offset, const char *why);

#endif
