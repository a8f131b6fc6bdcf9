/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_ra.h - random access into a .catar stream through a byte-range
 * reader: look names up through GOODBYE tables, list directories, stat
 * nodes and read file contents without decoding the rest of the archive.
 *
 * The reader is pread on a .catar file, or ca_blob_read for a .caidx (so
 * only the chunks a lookup touches get fetched). Steps (reference 6.4):
 * the root is [0, size); a directory's GOODBYE tail is the last 24 bytes of
 * its range; a child's range [F, F + item.size) comes from its GOODBYE
 * item and must lie strictly inside the parent's children area, so every
 * step works on a smaller range and no corrupt archive can make us loop.
 *
 * Everything read is untrusted: offsets and sizes are bounds-checked and
 * names validated; anything wrong is -EBADMSG. I/O errors from the reader
 * are passed through (-EIO, -ENOENT for a chunk no store has, ...).
 *
 * Threads: a ca_catar_ra is immutable after open and has no cursor; any
 * number of threads may call any function at once. Nodes are refcounted
 * and immutable (ref/unref are atomic).
 *
 * Memory: a node holds its FILENAME and metadata records (about 100 bytes
 * plus names, xattrs and ACLs; at most CA_CATAR_META_MAX) and, for a file
 * of at most 1 KiB, its content, which ca_catar_ra_read then serves
 * without a read. Struct copies of a node are not independent: keep the
 * node referenced. Buffers over 8 KiB (live nodes and loads under way)
 * share CA_CATAR_RA_BIG_MAX: a load that would go over gives back what it
 * holds and waits until others release theirs (a lone holder never
 * waits), at most CA_CATAR_RA_BIG_WAIT_MS, then fails with -ETIMEDOUT; so
 * hold few big nodes at once (they make loads wait). A listing costs 24 bytes a child plus a 64 KiB part of the table,
 * never the whole table.
 *
 * Bytes touched: loading a node reads one 4 KiB window at its ENTRY (more
 * only if its metadata is larger), plus the 24-byte GOODBYE tail for a
 * directory (same window when the directory is small). A lookup reads the
 * directory's GOODBYE items (once, whole, up to 256 KiB; beyond that the
 * top of the tree and then single items) and one window at the candidate
 * FILENAME, which also holds the child's ENTRY.
 */
#ifndef CA_CATAR_RA_H
#define CA_CATAR_RA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "catar/catar_node.h"

/* Read up to len bytes at off; short only at the end of the stream. */
typedef ssize_t (*ca_range_read_fn)(void *userdata, void *buf, size_t len, uint64_t off);
/* Hint that [off, off+len) will be read soon; must not block. */
typedef void (*ca_range_readahead_fn)(void *userdata, uint64_t off, uint64_t len);

struct ca_catar_source {
	ca_range_read_fn read;
	ca_range_readahead_fn readahead; /* optional */
	void *userdata;
	uint64_t size; /* the archive's size: file size or ca_blob_size() */
	/* The .caidx header's feature flags (every ENTRY must carry them), or
	 * UINT64_MAX for a plain .catar (the root ENTRY decides). */
	uint64_t index_flags;
	/* Optional, for the streaming decoder: as read, without the copy:
	 * *ret points at up to len bytes at off (fewer at a chunk's end), valid
	 * until the next call on the source; -EOPNOTSUPP when it cannot (the
	 * caller reads instead). NULL: never. */
	ssize_t (*peek)(void *userdata, size_t len, uint64_t off, const void **ret);
};

struct ca_catar_ra;

/* The memory budget (see Memory above). */
#define CA_CATAR_RA_BIG_MAX ((size_t)32 << 20)
#define CA_CATAR_RA_BIG_WAIT_MS 30000u
#define CA_CATAR_RA_LIST_MAX ((size_t)1 << 20) /* children in one listing: 24 MiB */

/* Check the root: ENTRY at 0 is a directory, the root GOODBYE tail at the
 * end points back to 0. Copies *src. -EBADMSG if it is not an archive. */
int ca_catar_ra_open(const struct ca_catar_source *src, struct ca_catar_ra **ret);
void ca_catar_ra_free(struct ca_catar_ra *ra); /* accepts NULL; no call may be running */

uint64_t ca_catar_ra_size(const struct ca_catar_ra *ra);
uint64_t ca_catar_ra_feature_flags(const struct ca_catar_ra *ra);

/* A loaded node: the parsed fields (see catar_node.h) plus a reference
 * count. Fields are read-only. */
struct ca_catar_ra_node;
const struct ca_catar_node *ca_catar_ra_node_get(const struct ca_catar_ra_node *n);
struct ca_catar_ra_node *ca_catar_ra_node_ref(struct ca_catar_ra_node *n);
void ca_catar_ra_node_unref(struct ca_catar_ra_node *n); /* accepts NULL */

/* The root directory (entry_offset 0). */
int ca_catar_ra_root(struct ca_catar_ra *ra, struct ca_catar_ra_node **ret);

/* Load the node at entry_offset whose serialization ends at end_offset
 * (e.g. an inode number and end kept from an earlier lookup). Both are
 * checked against the archive; a pair that is not a node is -EBADMSG. The
 * node's name is "" (use ca_catar_ra_load_child to get it). */
int ca_catar_ra_load(struct ca_catar_ra *ra, uint64_t entry_offset, uint64_t end_offset,
                     struct ca_catar_ra_node **ret);

/* Find name (len bytes, no NUL needed) in directory dir: GOODBYE search by
 * SipHash, candidate FILENAMEs compared (hash collisions are searched on
 * both sides, as casync does). 0 and the child in *ret; -ENOENT if absent
 * (also for names that cannot exist: "", ".", "..", with '/'); -ENOTDIR if
 * dir is not a directory. */
int ca_catar_ra_lookup(struct ca_catar_ra *ra, const struct ca_catar_node *dir, const char *name, size_t len,
                       struct ca_catar_ra_node **ret);

/* Resolve "a/b/c" from the root (empty path or "/" = root; repeated and
 * leading '/' ignored; "." components skipped, ".." refused with -EINVAL).
 * Symlinks are not followed. */
int ca_catar_ra_lookup_path(struct ca_catar_ra *ra, const char *path, struct ca_catar_ra_node **ret);

/* One child of a directory as its GOODBYE item gives it, without reading
 * the child: [filename_offset, end_offset) is the FILENAME record plus the
 * child's serialization. */
struct ca_catar_child {
	uint64_t filename_offset, end_offset;
	uint64_t hash; /* SipHash of the name, checked when the child is loaded */
};

/* The children of dir in name order (sorted by filename_offset), checked
 * to tile dir's children area exactly. *ret is malloc'd (free() it; NULL
 * when *ret_n is 0). -ENOTDIR if dir is not a directory; -EBADMSG beyond
 * CA_CATAR_RA_LIST_MAX children, as for the streaming decoder. */
int ca_catar_ra_list(struct ca_catar_ra *ra, const struct ca_catar_node *dir, struct ca_catar_child **ret,
                     size_t *ret_n);

/* Load a child from its listing entry: one read at filename_offset gets
 * the FILENAME and the ENTRY; node->name is set. */
int ca_catar_ra_load_child(struct ca_catar_ra *ra, const struct ca_catar_child *c, struct ca_catar_ra_node **ret);

/* Pass a readahead hint to the source (no-op without one). For a readdir,
 * call it for every child's [filename_offset, filename_offset + 4096)
 * (clamped to end_offset) before loading them: ca_catar_ra_prefetch_children
 * does exactly that. */
void ca_catar_ra_prefetch(struct ca_catar_ra *ra, uint64_t off, uint64_t len);
void ca_catar_ra_prefetch_children(struct ca_catar_ra *ra, const struct ca_catar_child *c, size_t n);

/* Read up to len bytes of a regular file's content at off. Returns the
 * count (0 at or past the end of the file), -EISDIR / -EINVAL for other
 * node types, or the reader's error (short reads inside the file are
 * -EBADMSG: the archive is truncated). */
ssize_t ca_catar_ra_read(struct ca_catar_ra *ra, const struct ca_catar_node *file, void *buf, size_t len,
                         uint64_t off);

#endif
