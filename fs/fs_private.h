/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs_private.h - what fs.c (the ops, the blob mount) and tree.c (the
 * archive tree) share. Not for use outside fs/.
 */
#ifndef FS_FS_PRIVATE_H
#define FS_FS_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>

#include "fs.h"
#include "inode.h"

/* The image never changes: let the kernel cache everything for a day. */
#define FS_TIMEOUT 86400.0

/* Renderings of FS_IOC_STATS kept for their later pages: a reader
 * paging through one survives this many others starting meanwhile. */
#define FS_STATS_KEPT 4

/* The blob mount's file; its root is FUSE_ROOT_ID. */
#define FS_BLOB_FILE_INO 2

/* The requests counted in the stats (fuse_<name>: N), to see what the
 * kernel's caches leave to us. */
enum fs_op {
	FS_OP_LOOKUP,
	FS_OP_GETATTR,
	FS_OP_READLINK,
	FS_OP_OPENDIR,
	FS_OP_READDIR,
	FS_OP_READDIRPLUS,
	FS_OP_OPEN,
	FS_OP_READ,
	FS_OP_GETXATTR,
	FS_OP_LISTXATTR,
	FS_OP_N
};

struct fs {
	struct ca_image *im;           /* borrowed */
	struct ca_logger *logger;      /* the creator's: libfuse's threads log there too */
	struct ca_catar_source img;    /* the image's bytes */
	struct ca_catar_ra *ra;        /* random access: tree mounts without a metadata sidecar */
	const struct ca_sidecar *sc;   /* tree mounts with one (borrowed from im): no ra */
	bool tree;                     /* a .caidx/.catar mount (ra or sc) */
	struct fs_inode_table *inodes;
	char *blob_name;               /* blob mounts only */
	uint64_t readahead_bytes;
	struct fs_options o;
	struct ca_xattr_policy xattrs; /* what the archive's xattrs may show (trusted: per caller) */
	atomic_bool ready_sent;
	bool no_open;                  /* set once in init: the kernel skips file opens */
	bool no_opendir;               /* and directory opens */
	bool parallel_dirops;          /* set once in init: op_init wants them (init.c) */

	/* tree.c's bounded caches (see the budget below): the records of
	 * nodes too big to keep with the node, and directory listings */
	struct fs_mcache *records;
	struct fs_mcache *listings;

	/* counters for the stats xattr (relaxed atomics) */
	atomic_uint_fast64_t reads, bytes_read, read_errors, meta_errors, meta_loads;
	/* requests by kind: what the kernel did not answer from its caches */
	atomic_uint_fast64_t ops[FS_OP_N];

	/* no entry has an attribute to show (a blob; a tree whose sidecar or
	 * feature flags say so): getxattr is ENOSYS, after which the kernel
	 * sends none (fs.c, op_getxattr) */
	bool xattrs_none;
	/* the kinds of records the entries have (1u << enum ca_xattr_source;
	 * all when there is no sidecar to tell) and the archive's flags */
	unsigned xattr_sources;
	uint64_t archive_flags;
	/* the last few renderings FS_IOC_STATS handed out, for their later
	 * pages (fs.h), under stats_lock (a leaf). A new one replaces its
	 * caller's oldest, if the caller (uid) has one: another user of an
	 * allow_other mount asking again and again cannot push out the
	 * rendering root is paging through (ESTALE until cafs stats gives up) */
	pthread_mutex_t stats_lock;
	struct ca_cache_size *cache_size; /* the disk cache's size (metrics.c); NULL without a cache */
	struct fs_stats_doc {
		uint64_t digest; /* 0: empty */
		uint32_t format, len;
		char *bytes;
		uint64_t age; /* stats_clock when kept */
		uid_t uid;    /* whose request rendered it */
	} stats_kept[FS_STATS_KEPT];
	uint64_t stats_clock;
	bool no_stats_ioctl; /* a test hook (CAFS_TEST_NO_STATS_IOCTL): FS_IOC_STATS is ENOTTY */

	/* fs_stop_waits: failures are not answered from then on (fs.h) */
	atomic_bool stopping;
	atomic_uint_fast64_t unanswered;
};

/* The mount's memory budget for metadata (see docs/cafs.1, SECURITY):
 *   nodes: at most FS_INODES_MAX (inode.h) cached, each a few hundred
 *     bytes plus its records when they are at most FS_META_SMALL;
 *   records of bigger nodes: loaded when an xattr call needs them, kept
 *     as an index of their xattrs (16 bytes a record plus the names, no
 *     value) and their other records in an LRU of FS_RECORDS_MAX bytes
 *     (one load per node at a time, the others wait for it);
 *   listings (24 bytes a child): an LRU of FS_LISTINGS_MAX bytes, plus
 *     the one in use (at most CA_CATAR_RA_LIST_MAX children);
 *   loads under way: CA_CATAR_RA_BIG_MAX (catar_ra.h).
 * A reader that waits for a load or for budget gives up after
 * FS_META_WAIT_MS with EIO: never forever. */
#define FS_META_SMALL ((size_t)1 << 10)
#define FS_RECORDS_MAX ((size_t)16 << 20)
#define FS_LISTINGS_MAX ((size_t)8 << 20)
#define FS_META_WAIT_MS 30000u
/* The whole mount's budget beside the chunk LRU (cafs(1), Memory
 * budget: lru_size plus this), for the metrics' memory gauges. */
#define FS_MEMORY_BUDGET_FIXED ((uint64_t)192 << 20)

/* tree.c: the archive tree. All return 0 or a negative errno (-EBADMSG
 * for a corrupt archive, chunk errors as ca_blob_read gives them). */

/* The root node, pinned into the table, and the caches. */
int fs_tree_init(struct fs *fs);
void fs_tree_free(struct fs *fs); /* the caches */
/* The caches' memory for the metrics: records bytes and bound, listings
 * bytes and bound (zeros for a blob mount). */
void fs_tree_memory(struct fs *fs, uint64_t ret[4]);
/* The node for any inode number of the archive, with a reference (give it
 * back with fs_node_put): from the table, or rebuilt from the number
 * alone (the sidecar's entry, or a walk down from the root through the
 * listings), so nothing the kernel holds depends on this process having
 * handed it out. -ESTALE for a number that is no entry of the archive. */
int fs_tree_node(struct fs *fs, uint64_t ino, struct fs_node **ret);
/* Look name up in dir. On success *ret is a node in the table whose
 * nlookup was raised by one, with a reference for the caller; -ENOENT
 * when there is no such name. */
int fs_tree_lookup(struct fs *fs, struct fs_node *dir, const char *name, struct fs_node **ret);

/* Walk the children of directory dir in name order from index `from`
 * (0-based). For each, fn gets the index, the name and the child's node:
 * with plus, a node in the table with its nlookup raised by one; without,
 * a node only valid during the call. fn returns true to go on, false
 * when the reply is full (the walker then gives the reference back). The
 * listing comes from the listings cache: no per-open state. */
typedef bool (*fs_tree_dir_fn)(void *userdata, uint64_t index, const char *name, struct fs_node *child);
int fs_tree_readdir(struct fs *fs, struct fs_node *dir, uint64_t from, bool plus, fs_tree_dir_fn fn,
                    void *userdata);

/* Extended attributes (getxattr(2)/listxattr(2) rules for size: with
 * size == 0 only *ret_len is set; -ERANGE if buf is too small; -ENODATA
 * for a missing name), those fs->xattrs allows; trusted: the caller may
 * see trusted.* (root). */
int fs_tree_listxattr(struct fs *fs, struct fs_node *n, bool trusted, char *buf, size_t size,
                      size_t *ret_len);
int fs_tree_getxattr(struct fs *fs, struct fs_node *n, bool trusted, const char *name, char *buf,
                     size_t size, size_t *ret_len);

/* The node's chattr flags as FS_IOC_GETFLAGS reports them. */
unsigned fs_tree_chattr(const struct fs_node *n);
/* Whether no entry can have the attribute name, to any caller: its
 * namespace is refused, or no entry has records of its kind (a getxattr
 * of it is ENODATA without looking at the node). */
bool fs_tree_xattr_absent(const struct fs *fs, const char *name);

/* Log a failing read or parse once per inode (not per request). */
void fs_log_io_error(struct fs *fs, struct fs_node *n, int err, const char *what, uint64_t off);
/* The errno to hand the kernel for a failed image read: chunk problems
 * (missing, corrupt, offline, I/O) all become EIO. */
int fs_errno(int r);

#endif
