/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* inode.c - the inode table: a chained hash that doubles as it fills,
 * with an LRU list of the unpinned nodes. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "inode.h"

struct fs_inode_table {
	pthread_mutex_t lock; /* guards everything below; a leaf lock */
	struct fs_node **buckets;
	size_t n_buckets; /* a power of two */
	uint64_t count, max;
	struct fs_node *lru_head, *lru_tail; /* most recently used first */
};

static size_t bucket_of(uint64_t ino, size_t n_buckets)
{
	/* inos are archive offsets: mix them so aligned offsets spread out */
	ino *= UINT64_C(0x9e3779b97f4a7c15);
	return (size_t)(ino >> 32) & (n_buckets - 1);
}

int fs_inode_table_new(struct fs_inode_table **ret)
{
	struct fs_inode_table *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->n_buckets = 1024;
	t->max = FS_INODES_MAX;
	t->buckets = calloc(t->n_buckets, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	*ret = t;
	return 0;
}

void fs_inode_table_free(struct fs_inode_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_buckets; i++)
		while (t->buckets[i]) {
			struct fs_node *n = t->buckets[i];
			t->buckets[i] = n->hnext;
			fs_node_free(n);
		}
	free(t->buckets);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

struct fs_node *fs_node_new(uint64_t ino)
{
	struct fs_node *n = calloc(1, sizeof(*n));
	if (n)
		n->ino = ino;
	return n;
}

void fs_node_free(struct fs_node *n)
{
	if (!n)
		return;
	free(n->own);
	ca_catar_ra_node_unref(n->ra);
	free(n);
}

static struct fs_node *find_locked(struct fs_inode_table *t, uint64_t ino)
{
	for (struct fs_node *n = t->buckets[bucket_of(ino, t->n_buckets)]; n; n = n->hnext)
		if (n->ino == ino)
			return n;
	return NULL;
}

static void lru_unlink(struct fs_inode_table *t, struct fs_node *n)
{
	if (n->pinned)
		return;
	if (n->lru_prev)
		n->lru_prev->lru_next = n->lru_next;
	else
		t->lru_head = n->lru_next;
	if (n->lru_next)
		n->lru_next->lru_prev = n->lru_prev;
	else
		t->lru_tail = n->lru_prev;
	n->lru_prev = n->lru_next = NULL;
}

static void lru_front(struct fs_inode_table *t, struct fs_node *n)
{
	if (n->pinned)
		return;
	n->lru_next = t->lru_head;
	if (t->lru_head)
		t->lru_head->lru_prev = n;
	t->lru_head = n;
	if (!t->lru_tail)
		t->lru_tail = n;
}

/* Take n out of the table; returns it when nobody uses it (free it after
 * unlocking), NULL when the last put will. */
static struct fs_node *drop_locked(struct fs_inode_table *t, struct fs_node *n)
{
	struct fs_node **pp = &t->buckets[bucket_of(n->ino, t->n_buckets)];
	while (*pp != n)
		pp = &(*pp)->hnext;
	*pp = n->hnext;
	n->hnext = NULL;
	lru_unlink(t, n);
	n->in_table = false;
	t->count--;
	return n->refs == 0 ? n : NULL;
}

/* Keep chains short; a failed allocation just leaves them longer. */
static void grow_locked(struct fs_inode_table *t)
{
	size_t nb = t->n_buckets * 2;
	struct fs_node **b = calloc(nb, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < t->n_buckets; i++)
		while (t->buckets[i]) {
			struct fs_node *n = t->buckets[i];
			t->buckets[i] = n->hnext;
			size_t k = bucket_of(n->ino, nb);
			n->hnext = b[k];
			b[k] = n;
		}
	free(t->buckets);
	t->buckets = b;
	t->n_buckets = nb;
}

/* Drop least recently used nodes past the cap; they go on *freeq (linked
 * by hnext) to be freed after unlocking. */
static void trim_locked(struct fs_inode_table *t, struct fs_node **freeq)
{
	struct fs_node *n = t->lru_tail;
	while (t->count > t->max && n) {
		struct fs_node *prev = n->lru_prev;
		struct fs_node *f = drop_locked(t, n);
		if (f) {
			f->hnext = *freeq;
			*freeq = f;
		}
		n = prev;
	}
}

static void free_queue(struct fs_node *q)
{
	while (q) {
		struct fs_node *next = q->hnext;
		fs_node_free(q);
		q = next;
	}
}

struct fs_node *fs_inode_add(struct fs_inode_table *t, struct fs_node *n, uint64_t lookups)
{
	struct fs_node *freeq = NULL;
	pthread_mutex_lock(&t->lock);
	struct fs_node *have = find_locked(t, n->ino);
	if (have) {
		have->nlookup += lookups;
		have->refs++;
		lru_unlink(t, have);
		lru_front(t, have);
		pthread_mutex_unlock(&t->lock);
		fs_node_free(n);
		return have;
	}
	if (t->count >= t->n_buckets)
		grow_locked(t);
	size_t k = bucket_of(n->ino, t->n_buckets);
	n->nlookup = lookups;
	n->refs = 1;
	n->in_table = true;
	n->hnext = t->buckets[k];
	t->buckets[k] = n;
	t->count++;
	lru_front(t, n);
	trim_locked(t, &freeq);
	pthread_mutex_unlock(&t->lock);
	free_queue(freeq);
	return n;
}

void fs_inode_pin(struct fs_inode_table *t, struct fs_node *n)
{
	n->pinned = true;
	fs_node_put(t, fs_inode_add(t, n, 0));
}

struct fs_node *fs_inode_find(struct fs_inode_table *t, uint64_t ino)
{
	pthread_mutex_lock(&t->lock);
	struct fs_node *n = find_locked(t, ino);
	if (n) {
		n->refs++;
		lru_unlink(t, n);
		lru_front(t, n);
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

void fs_node_put(struct fs_inode_table *t, struct fs_node *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&t->lock);
	bool last = --n->refs == 0 && !n->in_table;
	pthread_mutex_unlock(&t->lock);
	if (last)
		fs_node_free(n);
}

void fs_inode_set_max(struct fs_inode_table *t, uint64_t max)
{
	struct fs_node *freeq = NULL;
	pthread_mutex_lock(&t->lock);
	t->max = max;
	trim_locked(t, &freeq);
	pthread_mutex_unlock(&t->lock);
	free_queue(freeq);
}

void fs_inode_forget(struct fs_inode_table *t, uint64_t ino, uint64_t n)
{
	struct fs_node *drop = NULL;
	pthread_mutex_lock(&t->lock);
	struct fs_node *node = find_locked(t, ino);
	if (node) {
		node->nlookup = node->nlookup > n ? node->nlookup - n : 0;
		if (node->nlookup == 0 && !node->pinned)
			drop = drop_locked(t, node);
	}
	pthread_mutex_unlock(&t->lock);
	fs_node_free(drop);
}

uint64_t fs_inode_count(struct fs_inode_table *t)
{
	pthread_mutex_lock(&t->lock);
	uint64_t c = t->count;
	pthread_mutex_unlock(&t->lock);
	return c;
}
