/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * inode.h - the mount's inode table: FUSE inode number -> node, a bounded
 * cache.
 *
 * Inode numbers are archive positions (ENTRY offset + 1, so the root ENTRY
 * at 0 is FUSE_ROOT_ID), so a node can always be rebuilt from its number
 * (tree.c: fs_tree_node). The table therefore only caches nodes: it
 * counts the kernel's references (nlookup) so that forget drops a node at
 * once, but it also drops the least recently used nodes past
 * FS_INODES_MAX whatever the kernel still holds, so its memory does not
 * grow with the kernel's inode cache, and a server that never saw a
 * number (a fresh process on a live connection) answers for it too.
 *
 * Everything in a node except nlookup, refs and the list links is
 * immutable once it is in the table. A node is used under a reference
 * (fs_inode_find / fs_inode_add give one, fs_node_put returns it):
 * a node dropped from the table while referenced is freed at the last put.
 * Pinned nodes (the root, a blob's file) are never dropped.
 *
 * Locks: table->lock guards the buckets, the LRU list and every node's
 * nlookup, refs and links. It is a leaf lock: nothing else is taken while
 * holding it, and it is never held across I/O or a fuse_reply_*.
 */
#ifndef FS_INODE_H
#define FS_INODE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "image/fs_face.h"

struct fs_node {
	uint64_t ino;
	uint64_t parent;                /* for ".." */
	struct stat st;
	/* where the file's bytes start in the image (a regular file's payload) */
	uint64_t data_off;
	/* tree mounts: the parsed archive entry, NULL for the blob mount's
	 * root and file. Either a compact copy re-parsed from the entry's
	 * own bytes (own: one allocation, node then bytes), or, when that
	 * fails, the loaded random-access node (ra: one reference), which
	 * keeps its whole 4-8 KiB read window. */
	const struct ca_catar_node *cn;
	struct ca_catar_node *own;
	struct ca_catar_ra_node *ra;
	/* a node whose records are bigger than FS_META_SMALL keeps only
	 * the fields: its records are loaded when an xattr call needs them
	 * (tree.c's records cache) */
	bool thin;
	atomic_bool io_error_logged;    /* log a failing read once per inode */
	/* sequential-read detection for readahead: per inode, since the kernel
	 * does not tell us about opens (FUSE_CAP_NO_OPEN_SUPPORT) */
	_Atomic uint64_t next_off;         /* where the last read ended */
	_Atomic uint64_t readahead_end;    /* how far readahead was requested */
	_Atomic uint64_t readahead_window; /* grown by sequential reads (0: the first) */
	atomic_bool read_once;             /* a read came: a small file was asked for whole */

	/* table->lock */
	uint64_t nlookup;
	unsigned refs;                  /* users now (not the table) */
	bool pinned;
	bool in_table;
	struct fs_node *hnext;
	struct fs_node *lru_prev, *lru_next; /* unpinned nodes in the table */
};

/* Nodes kept past what is in use: each is a few hundred bytes plus
 * metadata records up to FS_META_SMALL (fs_private.h), so about 24 MiB. */
#define FS_INODES_MAX 16384u

struct fs_inode_table;

int fs_inode_table_new(struct fs_inode_table **ret);
void fs_inode_table_free(struct fs_inode_table *t); /* accepts NULL; frees every node */

/* A zeroed node to fill in; NULL on ENOMEM. */
struct fs_node *fs_node_new(uint64_t ino);
void fs_node_free(struct fs_node *n); /* accepts NULL */

/* Insert n, or, when its ino is already there, free n and use the one in
 * the table. Either way the node's nlookup grows by `lookups` (one per
 * entry the caller is about to hand the kernel; 0 for a node only
 * rebuilt). Returns the node in the table, with a reference for the
 * caller. Past `max` nodes the least recently used are dropped. */
struct fs_node *fs_inode_add(struct fs_inode_table *t, struct fs_node *n, uint64_t lookups);
/* Insert a node that is never forgotten (the root, a blob's file). */
void fs_inode_pin(struct fs_inode_table *t, struct fs_node *n);

/* The node for ino with a reference, or NULL when it is not cached. */
struct fs_node *fs_inode_find(struct fs_inode_table *t, uint64_t ino);
/* Give back a reference from find or add (accepts NULL). */
void fs_node_put(struct fs_inode_table *t, struct fs_node *n);
/* Change the table's cap (tests: a tiny cap makes every node be rebuilt). */
void fs_inode_set_max(struct fs_inode_table *t, uint64_t max);

/* The kernel dropped n references to ino; drops the node at zero. A
 * number the table does not know (a node rebuilt, or never seen by this
 * process) is fine. */
void fs_inode_forget(struct fs_inode_table *t, uint64_t ino, uint64_t n);

/* Number of nodes in the table (for stats). */
uint64_t fs_inode_count(struct fs_inode_table *t);

#endif
