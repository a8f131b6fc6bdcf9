/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * inode.h - the mount's inode table: FUSE inode number -> node, a bounded
 * cache.
 *
 * Inode numbers are archive positions (ENTRY offset + 1, so the root ENTRY
 * at 0 is FUSE_ROOT_ID), so a node can always be rebuilt from its number
 * (tree.c: cafs_tree_node). The table therefore only caches nodes: it
 * counts the kernel's references (nlookup) so that forget drops a node at
 * once, but it also drops the least recently used nodes past
 * CAFS_INODES_MAX whatever the kernel still holds, so its memory does not
 * grow with the kernel's inode cache, and a server that never saw a
 * number (a fresh process on a live connection) answers for it too.
 *
 * Everything in a node except nlookup, refs and the list links is
 * immutable once it is in the table. A node is used under a reference
 * (cafs_inode_find / cafs_inode_add give one, cafs_node_put returns it):
 * a node dropped from the table while referenced is freed at the last put.
 * Pinned nodes (the root, a blob's file) are never dropped.
 *
 * Locks: table->lock guards the buckets, the LRU list and every node's
 * nlookup, refs and links. It is a leaf lock: nothing else is taken while
 * holding it, and it is never held across I/O or a fuse_reply_*.
 */
#ifndef CAFS_INODE_H
#define CAFS_INODE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "catar/catar_ra.h"

struct cafs_node {
	uint64_t ino;
	uint64_t parent;                /* for ".." */
	struct stat st;
	/* where the file's bytes start in the image (a regular file's payload) */
	uint64_t data_off;
	/* tree mounts: the parsed archive entry, NULL for the blob mount's
	 * root and file. Either a compact copy re-parsed from the entry's
	 * own bytes (own: one allocation, node then bytes), or, when that
	 * fails, the loaded archive node (ra: one reference), which keeps its
	 * whole 4-8 KiB read window. */
	const struct ca_catar_node *cn;
	struct ca_catar_node *own;
	struct ca_catar_ra_node *ra;
	/* a node whose records are bigger than CAFS_META_SMALL keeps only
	 * the fields: its records are loaded when an xattr call needs them
	 * (tree.c's records cache) */
	bool thin;
	atomic_bool io_error_logged;    /* log a failing read once per inode */
	/* sequential-read detection for readahead: per inode, since the kernel
	 * does not tell us about opens (FUSE_CAP_NO_OPEN_SUPPORT) */
	_Atomic uint64_t next_off;      /* where the last read ended */
	_Atomic uint64_t ra_end;        /* how far read-ahead was requested */
	_Atomic uint64_t ra_window;     /* read-ahead window, grown by sequential reads (0: the first) */

	/* table->lock */
	uint64_t nlookup;
	unsigned refs;                  /* users now (not the table) */
	bool pinned;
	bool in_table;
	struct cafs_node *hnext;
	struct cafs_node *lru_prev, *lru_next; /* unpinned nodes in the table */
};

/* Nodes kept past what is in use: each is a few hundred bytes plus
 * metadata records up to CAFS_META_SMALL (fs_private.h), so about 24 MiB. */
#define CAFS_INODES_MAX 16384u

struct cafs_inode_table;

int cafs_inode_table_new(struct cafs_inode_table **ret);
void cafs_inode_table_free(struct cafs_inode_table *t); /* accepts NULL; frees every node */

/* A zeroed node to fill in; NULL on ENOMEM. */
struct cafs_node *cafs_node_new(uint64_t ino);
void cafs_node_free(struct cafs_node *n); /* accepts NULL */

/* Insert n, or, when its ino is already there, free n and use the one in
 * the table. Either way the node's nlookup grows by `lookups` (one per
 * entry the caller is about to hand the kernel; 0 for a node only
 * rebuilt). Returns the node in the table, with a reference for the
 * caller. Past `max` nodes the least recently used are dropped. */
struct cafs_node *cafs_inode_add(struct cafs_inode_table *t, struct cafs_node *n, uint64_t lookups);
/* Insert a node that is never forgotten (the root, a blob's file). */
void cafs_inode_pin(struct cafs_inode_table *t, struct cafs_node *n);

/* The node for ino with a reference, or NULL when it is not cached. */
struct cafs_node *cafs_inode_find(struct cafs_inode_table *t, uint64_t ino);
/* Give back a reference from find or add (accepts NULL). */
void cafs_node_put(struct cafs_inode_table *t, struct cafs_node *n);
/* Change the table's cap (tests: a tiny cap makes every node be rebuilt). */
void cafs_inode_set_max(struct cafs_inode_table *t, uint64_t max);

/* The kernel dropped n references to ino; drops the node at zero. A
 * number the table does not know (a node rebuilt, or never seen by this
 * process) is fine. */
void cafs_inode_forget(struct cafs_inode_table *t, uint64_t ino, uint64_t n);

/* Number of nodes in the table (for stats). */
uint64_t cafs_inode_count(struct cafs_inode_table *t);

#endif
