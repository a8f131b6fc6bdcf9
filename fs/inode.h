/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * inode.h - the mount's inode table: FUSE inode number -> node.
 *
 * Inode numbers are archive positions (ENTRY offset + 1, so the root ENTRY
 * at 0 is FUSE_ROOT_ID), so a node can always be rebuilt from its number;
 * the table only keeps what lookup and readdirplus already parsed, and
 * counts the kernel's references (nlookup) so forget can drop it.
 *
 * Everything in a node except nlookup and hnext is immutable once it is in
 * the table, so a node found by cafs_inode_find may be read without a
 * lock for as long as the kernel holds a reference to its number (the
 * kernel sends no request for an inode after forgetting it). Pinned nodes
 * (the root) are never dropped.
 *
 * Locks: table->lock guards the buckets, every node's nlookup and hnext.
 * It is a leaf lock: nothing else is taken while holding it, and it is
 * never held across I/O or a fuse_reply_*.
 */
#ifndef CAFS_INODE_H
#define CAFS_INODE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "catar_ra.h"

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
	/* a node whose metadata did not fit the mount's budget (tree.c) keeps
	 * only the fields: no records, so xattrs are read again on demand */
	bool thin;
	/* metadata bytes counted in *held_in (the fs's budget); given back on free */
	size_t held;
	atomic_size_t *held_in;
	atomic_bool io_error_logged;    /* log a failing read once per inode */
	/* sequential-read detection for readahead: per inode, since the kernel
	 * does not tell us about opens (FUSE_CAP_NO_OPEN_SUPPORT) */
	_Atomic uint64_t next_off;      /* where the last read ended */
	_Atomic uint64_t ra_end;        /* how far read-ahead was requested */
	_Atomic uint64_t ra_window;     /* read-ahead window, grown by sequential reads (0: the first) */

	/* table->lock */
	uint64_t nlookup;
	bool pinned;
	struct cafs_node *hnext;
};

struct cafs_inode_table;

int cafs_inode_table_new(struct cafs_inode_table **ret);
void cafs_inode_table_free(struct cafs_inode_table *t); /* accepts NULL; frees every node */

/* A zeroed node to fill in; NULL on ENOMEM. */
struct cafs_node *cafs_node_new(uint64_t ino);
void cafs_node_free(struct cafs_node *n); /* accepts NULL */

/* Insert n, or, when its ino is already there, free n and use the one in
 * the table. Either way the node's nlookup grows by `lookups` (>= 1: one
 * per entry the caller is about to hand the kernel). Returns the node in
 * the table. */
struct cafs_node *cafs_inode_add(struct cafs_inode_table *t, struct cafs_node *n, uint64_t lookups);
/* Insert a node that is never forgotten (the root, a blob's file). */
void cafs_inode_pin(struct cafs_inode_table *t, struct cafs_node *n);

/* The node for ino, or NULL. See above for when the result may be used. */
struct cafs_node *cafs_inode_find(struct cafs_inode_table *t, uint64_t ino);

/* The kernel dropped n references to ino; frees the node at zero. */
void cafs_inode_forget(struct cafs_inode_table *t, uint64_t ino, uint64_t n);

/* Number of nodes in the table (for stats). */
uint64_t cafs_inode_count(struct cafs_inode_table *t);

#endif
