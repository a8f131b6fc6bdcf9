/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * format.h - every casync on-disk constant and structure, in one place.
 *
 * All integers are little-endian, all structures packed. Every object in
 * an index or archive starts with a 16-byte header {u64 size, u64 type}.
 *
 * Index file (.caibx for a blob, .caidx for a catar stream):
 *
 *   ca_format_index     48 bytes: header, feature_flags, min/avg/max
 *   ca_format_table     16 bytes: header with size = UINT64_MAX
 *   ca_format_table_item * N   40 bytes each: END offset + chunk id
 *   ca_format_table_tail 40 bytes: 0, 0, 48, table size, marker
 *
 * Archive (.catar), one node:
 *
 *   ENTRY [USER] [GROUP] [XATTR]* [ACL_USER]* [ACL_GROUP]* [ACL_GROUP_OBJ]
 *   [ACL_DEFAULT] [ACL_DEFAULT_USER]* [ACL_DEFAULT_GROUP]* [SELINUX]
 *   [FCAPS] [QUOTA_PROJID]
 *   then PAYLOAD | SYMLINK | DEVICE | nothing (fifo, socket)
 *   | for a directory: (FILENAME node)* GOODBYE
 *
 * The GOODBYE object closes a directory: n items {offset back from the
 * GOODBYE start to the child's FILENAME, size of FILENAME+child, siphash of
 * the name} laid out as an Eytzinger binary search tree, then a tail item
 * {offset back to the directory's ENTRY, object size, marker}.
 *
 * Names follow casync's src/caformat.h so that the two can be compared.
 */
#ifndef CA_FORMAT_H
#define CA_FORMAT_H

#include <assert.h>
#include <endian.h>
#include <stdint.h>
#include <string.h>

typedef uint64_t le64_t; /* documentation: stored little-endian */

#define CA_CHUNK_ID_SIZE 32 /* == CA_DIGEST_SIZE: a chunk id is a digest */
#define CA_CHUNK_SIZE_LIMIT_MIN 1u
#define CA_CHUNK_SIZE_LIMIT_MAX (128u * 1024u * 1024u)
#define CA_CHUNK_SIZE_AVG_DEFAULT 65536u
#define CA_CHUNKER_WINDOW_SIZE 48u

/* object types */
#define CA_FORMAT_ENTRY             UINT64_C(0x1396fabcea5bbb51)
#define CA_FORMAT_USER              UINT64_C(0xf453131aaeeaccb3)
#define CA_FORMAT_GROUP             UINT64_C(0x25eb6ac969396a52)
#define CA_FORMAT_XATTR             UINT64_C(0xb8157091f80bc486)
#define CA_FORMAT_ACL_USER          UINT64_C(0x297dc88b2ef12faf)
#define CA_FORMAT_ACL_GROUP         UINT64_C(0x36f2acb56cb3dd0b)
#define CA_FORMAT_ACL_GROUP_OBJ     UINT64_C(0x23047110441f38f3)
#define CA_FORMAT_ACL_DEFAULT       UINT64_C(0xfe3eeda6823c8cd0)
#define CA_FORMAT_ACL_DEFAULT_USER  UINT64_C(0xbdf03df9bd010a91)
#define CA_FORMAT_ACL_DEFAULT_GROUP UINT64_C(0xa0cb1168782d1f51)
#define CA_FORMAT_FCAPS             UINT64_C(0xf7267db0afed0629)
#define CA_FORMAT_QUOTA_PROJID      UINT64_C(0x161baf2d8772a72b)
#define CA_FORMAT_SELINUX           UINT64_C(0x46faf0602fd26c59)
#define CA_FORMAT_SYMLINK           UINT64_C(0x664a6fb6830e0d6c)
#define CA_FORMAT_DEVICE            UINT64_C(0xac3dace369dfe643)
#define CA_FORMAT_PAYLOAD           UINT64_C(0x8b9e1d93d6dcffc9)
#define CA_FORMAT_FILENAME          UINT64_C(0x6dbb6ebcb3161f0b)
#define CA_FORMAT_GOODBYE           UINT64_C(0xdfd35c5e8327c403)
#define CA_FORMAT_GOODBYE_TAIL_MARKER UINT64_C(0x57446fa533702943)
#define CA_FORMAT_INDEX             UINT64_C(0x96824d9c7b129ff9)
#define CA_FORMAT_TABLE             UINT64_C(0xe75b9e112f17417d)
#define CA_FORMAT_TABLE_TAIL_MARKER UINT64_C(0x4b4f050e5549ecd1)

/* GOODBYE hash key: SipHash-2-4, k0/k1 as little-endian u64 */
#define CA_FORMAT_GOODBYE_HASH_KEY \
	{ 0xb3, 0x84, 0x1d, 0x0f, 0x2b, 0x44, 0x74, 0x85, \
	  0xc1, 0x2e, 0xc2, 0xd1, 0x30, 0xed, 0x36, 0x27 }

/* feature flags: WITH_* bits */
#define CA_FORMAT_WITH_16BIT_UIDS       UINT64_C(0x1)
#define CA_FORMAT_WITH_32BIT_UIDS       UINT64_C(0x2)
#define CA_FORMAT_WITH_USER_NAMES       UINT64_C(0x4)
#define CA_FORMAT_WITH_SEC_TIME         UINT64_C(0x8)
#define CA_FORMAT_WITH_USEC_TIME        UINT64_C(0x10)
#define CA_FORMAT_WITH_NSEC_TIME        UINT64_C(0x20)
#define CA_FORMAT_WITH_2SEC_TIME        UINT64_C(0x40)
#define CA_FORMAT_WITH_READ_ONLY        UINT64_C(0x80)
#define CA_FORMAT_WITH_PERMISSIONS      UINT64_C(0x100)
#define CA_FORMAT_WITH_SYMLINKS         UINT64_C(0x200)
#define CA_FORMAT_WITH_DEVICE_NODES     UINT64_C(0x400)
#define CA_FORMAT_WITH_FIFOS            UINT64_C(0x800)
#define CA_FORMAT_WITH_SOCKETS          UINT64_C(0x1000)
#define CA_FORMAT_WITH_FLAG_HIDDEN      UINT64_C(0x2000)
#define CA_FORMAT_WITH_FLAG_SYSTEM      UINT64_C(0x4000)
#define CA_FORMAT_WITH_FLAG_ARCHIVE     UINT64_C(0x8000)
#define CA_FORMAT_WITH_FLAG_APPEND      UINT64_C(0x10000)
#define CA_FORMAT_WITH_FLAG_NOATIME     UINT64_C(0x20000)
#define CA_FORMAT_WITH_FLAG_COMPR       UINT64_C(0x40000)
#define CA_FORMAT_WITH_FLAG_NOCOW       UINT64_C(0x80000)
#define CA_FORMAT_WITH_FLAG_NODUMP      UINT64_C(0x100000)
#define CA_FORMAT_WITH_FLAG_DIRSYNC     UINT64_C(0x200000)
#define CA_FORMAT_WITH_FLAG_IMMUTABLE   UINT64_C(0x400000)
#define CA_FORMAT_WITH_FLAG_SYNC        UINT64_C(0x800000)
#define CA_FORMAT_WITH_FLAG_NOCOMP      UINT64_C(0x1000000)
#define CA_FORMAT_WITH_FLAG_PROJINHERIT UINT64_C(0x2000000)
#define CA_FORMAT_WITH_SUBVOLUME        UINT64_C(0x4000000)
#define CA_FORMAT_WITH_SUBVOLUME_RO     UINT64_C(0x8000000)
#define CA_FORMAT_WITH_XATTRS           UINT64_C(0x10000000)
#define CA_FORMAT_WITH_ACL              UINT64_C(0x20000000)
#define CA_FORMAT_WITH_SELINUX          UINT64_C(0x40000000)
#define CA_FORMAT_WITH_FCAPS            UINT64_C(0x80000000)
#define CA_FORMAT_WITH_QUOTA_PROJID     UINT64_C(0x100000000)
#define CA_FORMAT_EXCLUDE_FILE          UINT64_C(0x1000000000000000)
#define CA_FORMAT_SHA512_256            UINT64_C(0x2000000000000000)
#define CA_FORMAT_EXCLUDE_SUBMOUNTS     UINT64_C(0x4000000000000000)
#define CA_FORMAT_EXCLUDE_NODUMP        UINT64_C(0x8000000000000000)

#define CA_FORMAT_WITH_MASK        UINT64_C(0x00000001ffffffff)
#define CA_FORMAT_FEATURE_FLAGS_MAX UINT64_C(0xf0000001ffffffff)
#define CA_FORMAT_WITH_BEST        UINT64_C(0x1fffffe26)
#define CA_FORMAT_DEFAULT          UINT64_C(0xb0000001ffeffe26)
#define CA_FORMAT_BLOB_DEFAULT     (CA_FORMAT_EXCLUDE_NODUMP | CA_FORMAT_EXCLUDE_FILE | \
                                    CA_FORMAT_SHA512_256)

struct ca_format_header {
	le64_t size;
	le64_t type;
} __attribute__((packed));

struct ca_format_index {
	struct ca_format_header header;
	le64_t feature_flags;
	le64_t chunk_size_min;
	le64_t chunk_size_avg;
	le64_t chunk_size_max;
} __attribute__((packed));

struct ca_format_table_item {
	le64_t offset; /* end of the chunk in the blob, exclusive */
	uint8_t chunk[CA_CHUNK_ID_SIZE];
} __attribute__((packed));

struct ca_format_table_tail {
	le64_t _zero_fill1;
	le64_t _zero_fill2;
	le64_t index_offset; /* always sizeof(struct ca_format_index) */
	le64_t size;         /* the TABLE object's size */
	le64_t marker;
} __attribute__((packed));

struct ca_format_entry {
	struct ca_format_header header;
	le64_t feature_flags;
	le64_t mode;
	le64_t flags;
	le64_t uid;
	le64_t gid;
	le64_t mtime; /* nanoseconds since the epoch */
} __attribute__((packed));

struct ca_format_device {
	struct ca_format_header header;
	le64_t major;
	le64_t minor;
} __attribute__((packed));

struct ca_format_acl_entry { /* ACL_USER, ACL_GROUP and their DEFAULT twins */
	struct ca_format_header header;
	le64_t id;
	le64_t permissions;
	/* optional NUL-terminated name follows */
} __attribute__((packed));

struct ca_format_acl_group_obj {
	struct ca_format_header header;
	le64_t permissions;
} __attribute__((packed));

struct ca_format_acl_default {
	struct ca_format_header header;
	le64_t user_obj_permissions;
	le64_t group_obj_permissions;
	le64_t other_permissions;
	le64_t mask_permissions; /* UINT64_MAX when there is no mask */
} __attribute__((packed));

struct ca_format_quota_projid {
	struct ca_format_header header;
	le64_t projid;
} __attribute__((packed));

struct ca_format_goodbye_item {
	le64_t offset; /* back from the GOODBYE start to the child's FILENAME */
	le64_t size;   /* FILENAME plus the child's serialization */
	le64_t hash;   /* SipHash-2-4 of the name, without its NUL */
} __attribute__((packed));

struct ca_format_goodbye_tail {
	le64_t entry_offset; /* back from the GOODBYE start to the dir's ENTRY */
	le64_t size;         /* the GOODBYE object's size */
	le64_t marker;       /* CA_FORMAT_GOODBYE_TAIL_MARKER */
} __attribute__((packed));

#define CA_ACL_PERM_READ    4u
#define CA_ACL_PERM_WRITE   2u
#define CA_ACL_PERM_EXECUTE 1u
#define CA_ACL_NO_MASK      UINT64_MAX

/* limits on variable-size records, as casync's decoder enforces them */
#define CA_FORMAT_NAME_MAX        255u  /* FILENAME, USER, GROUP */
#define CA_FORMAT_XATTR_NAME_MAX  255u
#define CA_FORMAT_XATTR_SIZE_MAX  65536u
#define CA_FORMAT_SYMLINK_MAX     4095u
#define CA_FORMAT_SELINUX_MAX     4096u
#define CA_FORMAT_FCAPS_MAX       65536u

static inline uint64_t ca_le64_read(const void *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline void ca_le64_write(void *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static_assert(sizeof(struct ca_format_header) == 16, "header");
static_assert(sizeof(struct ca_format_index) == 48, "index");
static_assert(sizeof(struct ca_format_table_item) == 40, "table item");
static_assert(sizeof(struct ca_format_table_tail) == 40, "table tail");
static_assert(sizeof(struct ca_format_entry) == 64, "entry");
static_assert(sizeof(struct ca_format_device) == 32, "device");
static_assert(sizeof(struct ca_format_acl_entry) == 32, "acl entry");
static_assert(sizeof(struct ca_format_acl_group_obj) == 24, "acl group obj");
static_assert(sizeof(struct ca_format_acl_default) == 48, "acl default");
static_assert(sizeof(struct ca_format_quota_projid) == 24, "quota projid");
static_assert(sizeof(struct ca_format_goodbye_item) == 24, "goodbye item");
static_assert(sizeof(struct ca_format_goodbye_tail) == 24, "goodbye tail");

#endif
