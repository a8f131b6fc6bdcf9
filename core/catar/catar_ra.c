/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* catar_ra.c - random access into a catar through GOODBYE tables. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "catar/catar_ra.h"
#include "base/condwait.h"
#include "format/siphash.h"

#define WINDOW 4096u
/* content up to this size stays in memory with its node */
#define SMALL_FILE 1024u
/* read a GOODBYE table whole up to this size; bigger ones by parts */
#define TABLE_WHOLE_MAX (256u * 1024u)
/* the top of a big table: the first levels of the tree, contiguous */
#define TABLE_TOP_ITEMS 2047u
/* a listing reads the table in parts of this many items */
#define LIST_PART 2730u
/* the smallest child: a FILENAME with a 1-byte name and an ENTRY */
#define HDR sizeof(struct ca_format_header)
#define CHILD_MIN (HDR + 2u + sizeof(struct ca_format_entry))
#define GB_ITEM sizeof(struct ca_format_goodbye_item)
#define GB_TAIL sizeof(struct ca_format_goodbye_tail)
#define GB_MIN (HDR + GB_TAIL)

struct ca_catar_ra {
	struct ca_catar_source src;
	uint64_t flags;
	struct ca_catar_ra_node *root;
	/* bytes of live node buffers over 2 * WINDOW, loads included */
	pthread_mutex_t lock;
	pthread_cond_t room;
	size_t big;
};

struct ca_catar_ra_node {
	unsigned refs;
	struct ca_catar_node node;
	uint8_t *buf;
	struct ca_catar_ra *ra; /* when big: counted in ra->big */
	size_t big;
};

/* Take n more bytes of big buffers now, if others' (all but the `mine`
 * bytes the caller holds) leave room: a lone holder always gets them. */
static bool big_try(struct ca_catar_ra *ra, size_t mine, size_t n)
{
	pthread_mutex_lock(&ra->lock);
	bool ok = ra->big == mine || ra->big + n <= CA_CATAR_RA_BIG_MAX;
	if (ok)
		ra->big += n;
	pthread_mutex_unlock(&ra->lock);
	return ok;
}

/* Take n bytes, holding none: wait for others to give theirs back, at
 * most CA_CATAR_RA_BIG_WAIT_MS (-ETIMEDOUT after). A waiter holds nothing
 * (the loader gives its part back before it waits), so loads cannot wait
 * for each other in a circle; the deadline covers budget that live nodes
 * keep for longer. */
static int big_wait(struct ca_catar_ra *ra, size_t n)
{
	struct timespec dl = ca_deadline_ms(CA_CATAR_RA_BIG_WAIT_MS);
	int r = 0;
	pthread_mutex_lock(&ra->lock);
	while (ra->big > 0 && ra->big + n > CA_CATAR_RA_BIG_MAX && r == 0)
		if (pthread_cond_timedwait(&ra->room, &ra->lock, &dl) == ETIMEDOUT)
			r = -ETIMEDOUT;
	if (r == 0)
		ra->big += n;
	pthread_mutex_unlock(&ra->lock);
	return r;
}

static void big_give(struct ca_catar_ra *ra, size_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&ra->lock);
	ra->big -= n;
	pthread_cond_broadcast(&ra->room);
	pthread_mutex_unlock(&ra->lock);
}

/* Exactly len bytes at off, which the caller has checked to lie inside
 * the archive: a short read means the source is shorter than it claims. */
static int read_exact(struct ca_catar_ra *ra, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t k = ra->src.read(ra->src.userdata, (uint8_t *)buf + done, len - done, off + done);
		if (k < 0)
			return (int)k;
		if (k == 0)
			return ca_catar_corrupt("record", off + done, "the archive is shorter than its size");
		done += (size_t)k;
	}
	return 0;
}

uint64_t ca_catar_ra_size(const struct ca_catar_ra *ra)
{
	return ra->src.size;
}

uint64_t ca_catar_ra_feature_flags(const struct ca_catar_ra *ra)
{
	return ra->flags;
}

const struct ca_catar_node *ca_catar_ra_node_get(const struct ca_catar_ra_node *n)
{
	return &n->node;
}

struct ca_catar_ra_node *ca_catar_ra_node_ref(struct ca_catar_ra_node *n)
{
	if (n)
		__atomic_add_fetch(&n->refs, 1, __ATOMIC_RELAXED);
	return n;
}

void ca_catar_ra_node_unref(struct ca_catar_ra_node *n)
{
	if (!n || __atomic_sub_fetch(&n->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	free(n->buf);
	if (n->big)
		big_give(n->ra, n->big);
	free(n);
}

/* The GOODBYE tail of the directory node n (range known): fills
 * goodbye_offset and n_children. t holds the tail's bytes at the end. */
static int check_tail(struct ca_catar_node *n, const struct ca_format_goodbye_tail *t)
{
	uint64_t eo = ca_le64_read(&t->entry_offset), size = ca_le64_read(&t->size);
	uint64_t end = n->end_offset, at = end - GB_TAIL;
	if (ca_le64_read(&t->marker) != CA_FORMAT_GOODBYE_TAIL_MARKER)
		return ca_catar_corrupt("GOODBYE tail", at, "wrong marker");
	if (size < GB_MIN || (size - GB_MIN) % GB_ITEM != 0)
		return ca_catar_corrupt("GOODBYE tail", at, "size not a header, whole items and a tail");
	if (size > end - n->children_offset)
		return ca_catar_corrupt("GOODBYE tail", at, "size larger than the directory's children area");
	uint64_t g = end - size;
	if (eo != g - n->entry_offset)
		return ca_catar_corrupt("GOODBYE tail", at, "does not point back at the directory's ENTRY");
	uint64_t items = (size - GB_MIN) / GB_ITEM;
	/* each child needs at least CHILD_MIN bytes before the GOODBYE */
	if (items > (g - n->children_offset) / CHILD_MIN || (items == 0) != (g == n->children_offset))
		return ca_catar_corrupt("GOODBYE tail", at, "item count does not fit the children area");
	n->goodbye_offset = g;
	n->n_children = items;
	return 0;
}

/* Load the node whose serialization (FILENAME included when filename is
 * set) is [start, end). With want_name, a different name returns 1. */
static int load_at(struct ca_catar_ra *ra, uint64_t start, uint64_t end, bool filename, const char *want_name,
                   size_t want_len, const uint64_t *want_hash, struct ca_catar_ra_node **ret)
{
	struct ca_catar_ra_node *rn = NULL;
	uint64_t span, entry = start;
	size_t have, hdr = 0, need, big = 0;
	uint8_t *buf = NULL;
	int r;

	if (start >= end || end > ra->src.size)
		return ca_catar_corrupt("node", start, "empty, or goes past the end of the archive");
	span = end - start;
	have = span <= 2 * WINDOW ? (size_t)span : WINDOW;
	buf = malloc(have);
	if (!buf)
		return -ENOMEM;
	r = read_exact(ra, buf, have, start);
	if (r < 0)
		goto fail;

	const char *name = "";
	if (filename) {
		r = ca_catar_filename_parse(buf, have, start, &name, &need);
		if (r == -EAGAIN) /* a FILENAME is at most 272 bytes, the window holds it unless the span does not */
			r = ca_catar_corrupt("FILENAME", start, "larger than its child's range");
		if (r < 0)
			goto fail;
		hdr = (size_t)r;
		size_t nlen = (size_t)r - HDR - 1;
		if (want_name && (nlen != want_len || memcmp(name, want_name, nlen) != 0)) {
			r = 1;
			goto fail;
		}
		if (want_hash && ca_goodbye_hash(name, nlen) != *want_hash) {
			r = ca_catar_corrupt("FILENAME", start, "name does not match the GOODBYE item's hash");
			goto fail;
		}
		entry = start + hdr;
		if (entry >= end) {
			r = ca_catar_corrupt("FILENAME", start, "no ENTRY after it in its child's range");
			goto fail;
		}
	}

	rn = calloc(1, sizeof(*rn));
	if (!rn) {
		r = -ENOMEM;
		goto fail;
	}
	for (;;) {
		r = ca_catar_node_parse(buf + hdr, have - hdr, entry, end - entry, ra->flags, &rn->node, &need);
		if (r != -EAGAIN)
			break;
		if (need > CA_CATAR_META_MAX || need <= have - hdr || hdr + need > span) {
			r = ca_catar_corrupt("ENTRY", entry, "metadata records larger than the node or the cap");
			goto fail;
		}
		/* grow geometrically, so many small records cost few reads */
		size_t want = hdr + need;
		if (want < 2 * have)
			want = 2 * have;
		if (want > span)
			want = (size_t)span;
		if (want > hdr + CA_CATAR_META_MAX)
			want = hdr + CA_CATAR_META_MAX;
		if (!big_try(ra, big, want - big)) {
			/* give back what this load holds and wait for the whole
			 * size holding nothing; then read it all again (from the
			 * chunk LRU: a copy) */
			free(buf);
			buf = NULL;
			big_give(ra, big);
			big = 0;
			r = big_wait(ra, want);
			if (r < 0)
				goto fail;
			big = want;
			have = 0;
		} else {
			big = want;
		}
		uint8_t *nb = realloc(buf, want);
		if (!nb) {
			r = -ENOMEM;
			goto fail;
		}
		buf = nb;
		r = read_exact(ra, buf + have, want - have, start + have);
		if (r < 0)
			goto fail;
		have = want;
	}
	if (r < 0)
		goto fail;
	struct ca_catar_node *n = &rn->node;
	struct ca_format_goodbye_tail tail;
	if (S_ISDIR(n->mode)) {
		if (end <= start + have)
			memcpy(&tail, buf + (end - GB_TAIL - start), GB_TAIL);
		else if ((r = read_exact(ra, &tail, GB_TAIL, end - GB_TAIL)) < 0)
			goto fail;
	}
	/* Nodes live as long as their users (a mount's inode table): keep only
	 * the FILENAME, the metadata (and a directory's next header, which its
	 * parse needs), plus a small file's content, not the whole window. */
	size_t keep = hdr + n->meta_size + (S_ISDIR(n->mode) ? HDR : 0);
	bool cached = S_ISREG(n->mode) && n->payload_size <= SMALL_FILE &&
	              n->payload_offset + n->payload_size - start <= have;
	if (cached)
		keep = (size_t)(n->payload_offset + n->payload_size - start);
	if (keep < have) {
		uint8_t *nb = malloc(keep);
		if (!nb) {
			r = -ENOMEM;
			goto fail;
		}
		memcpy(nb, buf, keep);
		free(buf);
		buf = nb;
		have = keep;
		if (big) {
			big_give(ra, big - (keep > 2 * WINDOW ? keep : 0));
			big = keep > 2 * WINDOW ? keep : 0;
		}
		r = ca_catar_node_parse(buf + hdr, have - hdr, entry, end - entry, ra->flags, n, &need);
		if (r < 0) { /* cannot happen: the same bytes parsed a moment ago */
			r = ca_catar_corrupt("ENTRY", entry, "parses differently from a moment ago");
			goto fail;
		}
	}
	if (filename) {
		n->filename_offset = start;
		n->name = (const char *)buf + HDR;
	}
	if (S_ISDIR(n->mode)) {
		r = check_tail(n, &tail);
		if (r < 0)
			goto fail;
	}
	if (cached) {
		n->_cache = buf;
		n->_cache_off = start;
		n->_cache_len = have;
	}
	rn->buf = buf;
	rn->refs = 1;
	rn->ra = ra;
	rn->big = big;
	*ret = rn;
	return 0;
fail:
	free(rn);
	free(buf);
	big_give(ra, big);
	return r;
}

int ca_catar_ra_load(struct ca_catar_ra *ra, uint64_t entry_offset, uint64_t end_offset,
                     struct ca_catar_ra_node **ret)
{
	if (entry_offset == 0 && end_offset == ra->src.size && ra->root) {
		*ret = ca_catar_ra_node_ref(ra->root);
		return 0;
	}
	return load_at(ra, entry_offset, end_offset, false, NULL, 0, NULL, ret);
}

int ca_catar_ra_open(const struct ca_catar_source *src, struct ca_catar_ra **ret)
{
	struct ca_catar_ra *ra = calloc(1, sizeof(*ra));
	int r;
	if (!ra)
		return -ENOMEM;
	ra->src = *src;
	ra->flags = src->index_flags;
	pthread_mutex_init(&ra->lock, NULL);
	pthread_cond_init(&ra->room, NULL);
	if (src->size < sizeof(struct ca_format_entry) + GB_MIN) {
		r = ca_catar_corrupt("archive", 0, "smaller than an empty directory");
		goto fail;
	}
	r = load_at(ra, 0, src->size, false, NULL, 0, NULL, &ra->root);
	if (r < 0)
		goto fail;
	if (!S_ISDIR(ra->root->node.mode)) {
		r = ca_catar_corrupt("ENTRY", 0, "the root is not a directory");
		goto fail;
	}
	ra->flags = ra->root->node.feature_flags;
	*ret = ra;
	return 0;
fail:
	ca_catar_ra_free(ra);
	return r;
}

void ca_catar_ra_free(struct ca_catar_ra *ra)
{
	if (!ra)
		return;
	ca_catar_ra_node_unref(ra->root);
	pthread_cond_destroy(&ra->room);
	pthread_mutex_destroy(&ra->lock);
	free(ra);
}

int ca_catar_ra_root(struct ca_catar_ra *ra, struct ca_catar_ra_node **ret)
{
	*ret = ca_catar_ra_node_ref(ra->root);
	return 0;
}

/* A directory node as given by the caller: only trust what load checked. */
static int check_dir(struct ca_catar_ra *ra, const struct ca_catar_node *dir)
{
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	if (dir->goodbye_offset == UINT64_MAX || dir->end_offset > ra->src.size ||
	    dir->goodbye_offset < dir->children_offset || dir->goodbye_offset >= dir->end_offset)
		return ca_catar_corrupt("ENTRY", dir->entry_offset, "directory node without a valid GOODBYE position");
	return 0;
}

/* A GOODBYE table, or its first levels. */
struct table {
	uint8_t *buf;     /* from the GOODBYE header on */
	uint64_t n;       /* items in the directory */
	uint64_t n_have;  /* items in buf */
};

static int table_read(struct ca_catar_ra *ra, const struct ca_catar_node *dir, struct table *t)
{
	uint64_t size = dir->end_offset - dir->goodbye_offset;
	size_t want;
	int r;
	t->n = dir->n_children;
	if (size <= TABLE_WHOLE_MAX) {
		want = (size_t)size - sizeof(struct ca_format_goodbye_tail);
		t->n_have = t->n;
	} else {
		want = HDR + TABLE_TOP_ITEMS * GB_ITEM;
		t->n_have = TABLE_TOP_ITEMS;
	}
	t->buf = malloc(want);
	if (!t->buf)
		return -ENOMEM;
	r = read_exact(ra, t->buf, want, dir->goodbye_offset);
	if (r == 0 && (ca_le64_read(t->buf) != size || ca_le64_read(t->buf + 8) != CA_FORMAT_GOODBYE))
		r = ca_catar_corrupt("GOODBYE", dir->goodbye_offset, "header does not match its tail");
	if (r < 0) {
		free(t->buf);
		t->buf = NULL;
	}
	return r;
}

static int table_item(struct ca_catar_ra *ra, const struct ca_catar_node *dir, const struct table *t, uint64_t i,
                      uint64_t *ret_off, uint64_t *ret_size, uint64_t *ret_hash)
{
	struct ca_format_goodbye_item one;
	const struct ca_format_goodbye_item *p;
	if (i < t->n_have) {
		p = (const void *)(t->buf + HDR + i * GB_ITEM);
	} else {
		int r = read_exact(ra, &one, GB_ITEM, dir->goodbye_offset + HDR + i * GB_ITEM);
		if (r < 0)
			return r;
		p = &one;
	}
	*ret_off = ca_le64_read(&p->offset);
	*ret_size = ca_le64_read(&p->size);
	*ret_hash = ca_le64_read(&p->hash);
	return 0;
}

/* A child range from an item, checked to lie inside dir's children area. */
static int child_range(const struct ca_catar_node *dir, uint64_t off, uint64_t size, uint64_t *ret_f)
{
	uint64_t g = dir->goodbye_offset;
	*ret_f = 0;
	if (off == 0 || off > g - dir->children_offset || size < CHILD_MIN || size > off)
		return ca_catar_corrupt("GOODBYE", g, "an item's child range lies outside the children area");
	*ret_f = g - off;
	return 0;
}

/* casync's search: on equal hashes check the name, and keep looking on
 * both sides for other items with the same hash. Depth <= 64 for any n;
 * every item is visited at most once. */
static int search(struct ca_catar_ra *ra, const struct ca_catar_node *dir, const struct table *t, uint64_t i,
                  uint64_t h, const char *name, size_t len, struct ca_catar_ra_node **ret)
{
	uint64_t off, size, p, f;
	int r;
	if (i >= t->n)
		return -ENOENT;
	r = table_item(ra, dir, t, i, &off, &size, &p);
	if (r < 0)
		return r;
	if (p == h) {
		r = child_range(dir, off, size, &f);
		if (r < 0)
			return r;
		r = load_at(ra, f, f + size, true, name, len, NULL, ret);
		if (r <= 0)
			return r;
	}
	if (h <= p) {
		r = search(ra, dir, t, 2 * i + 1, h, name, len, ret);
		if (r != -ENOENT)
			return r;
	}
	if (h >= p)
		return search(ra, dir, t, 2 * i + 2, h, name, len, ret);
	return -ENOENT;
}

int ca_catar_ra_lookup(struct ca_catar_ra *ra, const struct ca_catar_node *dir, const char *name, size_t len,
                       struct ca_catar_ra_node **ret)
{
	struct table t = { 0 };
	int r = check_dir(ra, dir);
	if (r < 0)
		return r;
	if (!ca_catar_filename_is_valid(name, len) || dir->n_children == 0)
		return -ENOENT;
	r = table_read(ra, dir, &t);
	if (r < 0)
		return r;
	r = search(ra, dir, &t, 0, ca_goodbye_hash(name, len), name, len, ret);
	free(t.buf);
	return r;
}

int ca_catar_ra_lookup_path(struct ca_catar_ra *ra, const char *path, struct ca_catar_ra_node **ret)
{
	struct ca_catar_ra_node *cur = ca_catar_ra_node_ref(ra->root), *next;
	const char *p = path;
	int r;
	for (;;) {
		p += strspn(p, "/");
		size_t len = strcspn(p, "/");
		if (len == 0)
			break;
		if (len == 1 && p[0] == '.') {
			p += len;
			continue;
		}
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			r = -EINVAL;
			goto fail;
		}
		r = ca_catar_ra_lookup(ra, &cur->node, p, len, &next);
		if (r < 0)
			goto fail;
		ca_catar_ra_node_unref(cur);
		cur = next;
		p += len;
	}
	*ret = cur;
	return 0;
fail:
	ca_catar_ra_node_unref(cur);
	return r;
}

static int cmp_child(const void *a, const void *b)
{
	const struct ca_catar_child *x = a, *y = b;
	return x->filename_offset < y->filename_offset ? -1 : x->filename_offset > y->filename_offset;
}

int ca_catar_ra_list(struct ca_catar_ra *ra, const struct ca_catar_node *dir, struct ca_catar_child **ret,
                     size_t *ret_n)
{
	struct ca_catar_child *c = NULL;
	struct ca_format_goodbye_item *part = NULL;
	uint8_t head[HDR];
	uint64_t n = dir->n_children, g = dir->goodbye_offset;
	int r = check_dir(ra, dir);
	if (r < 0)
		return r;
	*ret = NULL;
	*ret_n = 0;
	if (n == 0)
		return 0;
	/* load checked the count against the directory's extent; this caps
	 * what a legitimately huge directory may cost (24 bytes a child) */
	if (n > CA_CATAR_RA_LIST_MAX)
		return ca_catar_corrupt("GOODBYE", g, "more children than a listing's memory budget");
	r = read_exact(ra, head, HDR, g);
	if (r < 0)
		return r;
	if (ca_le64_read(head) != dir->end_offset - g || ca_le64_read(head + 8) != CA_FORMAT_GOODBYE)
		return ca_catar_corrupt("GOODBYE", g, "header does not match its tail");
	c = malloc(n * sizeof(*c));
	part = malloc(LIST_PART * GB_ITEM);
	if (!c || !part) {
		r = -ENOMEM;
		goto out;
	}
	/* the table in parts, straight into the listing: no second copy */
	for (uint64_t i = 0; i < n; i += LIST_PART) {
		size_t k = n - i < LIST_PART ? (size_t)(n - i) : LIST_PART;
		r = read_exact(ra, part, k * GB_ITEM, g + HDR + i * GB_ITEM);
		if (r < 0)
			goto out;
		for (size_t j = 0; j < k; j++) {
			uint64_t f;
			r = child_range(dir, ca_le64_read(&part[j].offset), ca_le64_read(&part[j].size), &f);
			if (r < 0)
				goto out;
			c[i + j].filename_offset = f;
			c[i + j].end_offset = f + ca_le64_read(&part[j].size);
			c[i + j].hash = ca_le64_read(&part[j].hash);
		}
	}
	qsort(c, n, sizeof(*c), cmp_child);
	/* the children must tile [children_offset, goodbye_offset) exactly */
	uint64_t at = dir->children_offset;
	for (uint64_t i = 0; i < n; i++) {
		if (c[i].filename_offset != at) {
			r = ca_catar_corrupt("GOODBYE", g, "items overlap or leave a gap between children");
			goto out;
		}
		at = c[i].end_offset;
	}
	if (at != g) {
		r = ca_catar_corrupt("GOODBYE", g, "items do not reach the GOODBYE");
		goto out;
	}
	*ret = c;
	*ret_n = (size_t)n;
	c = NULL;
	r = 0;
out:
	free(c);
	free(part);
	return r;
}

int ca_catar_ra_load_child(struct ca_catar_ra *ra, const struct ca_catar_child *c, struct ca_catar_ra_node **ret)
{
	return load_at(ra, c->filename_offset, c->end_offset, true, NULL, 0, &c->hash, ret);
}

void ca_catar_ra_prefetch(struct ca_catar_ra *ra, uint64_t off, uint64_t len)
{
	if (!ra->src.readahead || off >= ra->src.size)
		return;
	if (len > ra->src.size - off)
		len = ra->src.size - off;
	ra->src.readahead(ra->src.userdata, off, len);
}

void ca_catar_ra_prefetch_children(struct ca_catar_ra *ra, const struct ca_catar_child *c, size_t n)
{
	uint64_t start = 0, end = 0;
	/* children are contiguous: merge their header windows into few ranges */
	for (size_t i = 0; i < n; i++) {
		uint64_t s = c[i].filename_offset, e = c[i].end_offset;
		if (e - s > 2 * WINDOW)
			e = s + WINDOW;
		if (end > start && s <= end) {
			if (e > end)
				end = e;
			continue;
		}
		if (end > start)
			ca_catar_ra_prefetch(ra, start, end - start);
		start = s;
		end = e;
	}
	if (end > start)
		ca_catar_ra_prefetch(ra, start, end - start);
}

ssize_t ca_catar_ra_read(struct ca_catar_ra *ra, const struct ca_catar_node *file, void *buf, size_t len,
                         uint64_t off)
{
	if (S_ISDIR(file->mode))
		return -EISDIR;
	if (!S_ISREG(file->mode))
		return -EINVAL;
	if (file->payload_offset + file->payload_size > ra->src.size ||
	    file->payload_offset + file->payload_size < file->payload_offset)
		return ca_catar_corrupt("PAYLOAD", file->payload_offset - HDR, "goes past the end of the archive");
	if (off >= file->payload_size)
		return 0;
	if (len > file->payload_size - off)
		len = (size_t)(file->payload_size - off);
	uint64_t at = file->payload_offset + off;
	if (file->_cache && at >= file->_cache_off && at - file->_cache_off <= file->_cache_len &&
	    len <= file->_cache_len - (at - file->_cache_off)) {
		memcpy(buf, file->_cache + (at - file->_cache_off), len);
		return (ssize_t)len;
	}
	int r = read_exact(ra, buf, len, at);
	return r < 0 ? r : (ssize_t)len;
}
