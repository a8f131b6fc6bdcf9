/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* catar_dec.c - the streaming catar decoder. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "catar/catar_dec.h"
#include "format/siphash.h"

#define BLOCK (256u * 1024u)
#define WINDOW_MAX (CA_CATAR_META_MAX + 2u * BLOCK)
#define HDR sizeof(struct ca_format_header)
#define GB_ITEM sizeof(struct ca_format_goodbye_item)
#define GB_TAIL sizeof(struct ca_format_goodbye_tail)
#define FILENAME_MAX_SIZE (HDR + CA_FORMAT_NAME_MAX + 1)
/* a closed level keeps a buffer this small for the next directory there;
 * bigger ones go back, so depth times this bounds what closed levels hold */
#define LEVEL_KEEP 1024u
#define ITEMS_KEEP 64u

struct child {
	uint64_t f, size, hash;
};

struct level {
	struct ca_buf meta; /* FILENAME + ENTRY + metadata of this directory */
	struct ca_catar_node node;
	size_t path_len;
	struct child *items;
	size_t n_items, cap_items;
	char prev[CA_FORMAT_NAME_MAX + 1];
	bool has_prev;
};

enum state { ST_START, ST_IN_DIR, ST_IN_PAYLOAD, ST_DONE };

struct ca_catar_dec {
	struct ca_catar_source src;
	bool size_unknown; /* src.size was UINT64_MAX: learned at the stream's end */
	uint64_t flags;
	enum state state;
	int error;

	/* the window: buf[at, len) is the stream at base + at */
	uint8_t *buf;
	size_t cap, len, at;
	uint64_t base;

	struct level *levels;
	size_t depth, cap_levels; /* depth = levels in use */
	/* the budget (catar_dec.h): capacities of every level's and the leaf's
	 * metadata buffer, and of every level's child list, in items */
	size_t meta_held, items_held;

	struct ca_buf leaf_meta;
	struct ca_catar_node leaf;
	uint64_t leaf_f;
	uint64_t payload_left;

	char *path;
	size_t path_cap, path_len;
	unsigned cur_depth; /* of the node the last event was about */
};

static uint64_t pos(const struct ca_catar_dec *d)
{
	return d->base + d->at;
}

int ca_catar_dec_new(const struct ca_catar_source *src, struct ca_catar_dec **ret)
{
	struct ca_catar_dec *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->src = *src;
	d->size_unknown = src->size == UINT64_MAX;
	d->flags = src->index_flags;
	d->cap = BLOCK;
	d->buf = malloc(d->cap);
	d->path_cap = 256;
	d->path = malloc(d->path_cap);
	if (!d->buf || !d->path) {
		ca_catar_dec_free(d);
		return -ENOMEM;
	}
	d->path[0] = 0;
	*ret = d;
	return 0;
}

void ca_catar_dec_free(struct ca_catar_dec *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->cap_levels; i++) {
		ca_buf_release(&d->levels[i].meta);
		free(d->levels[i].items);
	}
	free(d->levels);
	ca_buf_release(&d->leaf_meta);
	free(d->buf);
	free(d->path);
	free(d);
}

const char *ca_catar_dec_path(const struct ca_catar_dec *d)
{
	return d->path;
}

unsigned ca_catar_dec_depth(const struct ca_catar_dec *d)
{
	return d->cur_depth;
}

/* How much of len the current payload can give: its error, -EINVAL when
 * not in a payload, 0 at its end. */
static ssize_t payload_span(const struct ca_catar_dec *d, size_t len)
{
	if (d->error)
		return d->error;
	if (d->state != ST_IN_PAYLOAD)
		return -EINVAL;
	if (len > d->payload_left)
		len = (size_t)d->payload_left;
	return (ssize_t)len;
}

/* Up to *len bytes of the payload still in the window (advanced past;
 * *len cut to what it holds), or NULL when the window is used up. */
static const uint8_t *from_window(struct ca_catar_dec *d, size_t *len)
{
	size_t avail = d->len - d->at;
	if (avail == 0)
		return NULL;
	if (*len > avail)
		*len = avail;
	const uint8_t *p = d->buf + d->at;
	d->at += *len;
	d->payload_left -= *len;
	return p;
}

/* What the source gave past the window (k bytes, or its error, or 0: the
 * archive ends inside the payload), accounted for. */
static ssize_t past_window(struct ca_catar_dec *d, ssize_t k)
{
	if (k <= 0) {
		d->error = k < 0 ? (int)k : ca_catar_corrupt("PAYLOAD", pos(d), "the archive ends inside it");
		return d->error;
	}
	d->base += (size_t)k;
	d->payload_left -= (size_t)k;
	return k;
}

ssize_t ca_catar_dec_peek_payload(struct ca_catar_dec *d, size_t len, const void **ret)
{
	ssize_t n = payload_span(d, len);
	if (n <= 0)
		return n;
	len = (size_t)n;
	const uint8_t *w = from_window(d, &len);
	if (w) {
		*ret = w;
		return (ssize_t)len;
	}
	if (!d->src.peek)
		return -EOPNOTSUPP;
	ssize_t k = d->src.peek(d->src.userdata, len, pos(d), ret);
	return k == -EOPNOTSUPP ? k : past_window(d, k);
}

uint64_t ca_catar_dec_offset(const struct ca_catar_dec *d)
{
	return pos(d);
}

/* Make n bytes at the current position available in the window; with
 * partial, fewer when the stream of unknown size ends first (at least one). */
static int ensure_ex(struct ca_catar_dec *d, size_t n, bool partial)
{
	if (d->len - d->at >= n)
		return 0;
	if (n > WINDOW_MAX)
		return ca_catar_corrupt("record", pos(d), "larger than the decoder's window");
	if (n > d->src.size - pos(d))
		return ca_catar_corrupt("record", pos(d), "the archive ends inside it");
	if (d->at > 0) {
		memmove(d->buf, d->buf + d->at, d->len - d->at);
		d->base += d->at;
		d->len -= d->at;
		d->at = 0;
	}
	if (n > d->cap) {
		size_t c = d->cap;
		while (c < n)
			c *= 2;
		if (c > WINDOW_MAX)
			c = WINDOW_MAX;
		uint8_t *nb = realloc(d->buf, c);
		if (!nb)
			return -ENOMEM;
		d->buf = nb;
		d->cap = c;
	}
	while (d->len < n) {
		uint64_t at = d->base + d->len, left = d->src.size - at;
		size_t want = d->cap - d->len, to_block = BLOCK - (size_t)(at % BLOCK);
		/* what is needed, else no further than the aligned block's end: a
		 * header near a block's end must not pull in the next block, which
		 * a reader skipping payloads (list of a remote .catar, blocks of
		 * the same size) would otherwise download for nothing */
		if (want > to_block)
			want = to_block > n - d->len ? to_block : n - d->len;
		if (want > left)
			want = (size_t)left;
		ssize_t k = d->src.read(d->src.userdata, d->buf + d->len, want, d->base + d->len);
		if (k < 0)
			return (int)k;
		if (k == 0 && d->size_unknown) {
			/* the end of a stream of unknown size (a pipe): now known */
			d->src.size = d->base + d->len;
			d->size_unknown = false;
			if (partial && d->len > d->at)
				return 0;
			return ca_catar_corrupt("record", pos(d), "the archive ends inside it");
		}
		if (k == 0)
			return ca_catar_corrupt("record", d->base + d->len, "the archive is shorter than its size");
		d->len += (size_t)k;
	}
	return 0;
}

static int ensure(struct ca_catar_dec *d, size_t n)
{
	return ensure_ex(d, n, false);
}

/* The root's GOODBYE ended at the current position: nothing may follow. */
static int at_end(struct ca_catar_dec *d)
{
	uint8_t b;
	ssize_t k;
	if (!d->size_unknown)
		return pos(d) == d->src.size ? 0 : ca_catar_corrupt("GOODBYE", pos(d), "bytes after the root's GOODBYE");
	if (d->len > d->at)
		return ca_catar_corrupt("GOODBYE", pos(d), "bytes after the root's GOODBYE");
	k = d->src.read(d->src.userdata, &b, 1, pos(d));
	if (k < 0)
		return (int)k;
	if (k > 0)
		return ca_catar_corrupt("GOODBYE", pos(d), "bytes after the root's GOODBYE");
	d->src.size = pos(d);
	d->size_unknown = false;
	return 0;
}

static int path_set(struct ca_catar_dec *d, size_t parent_len, const char *name, size_t n)
{
	size_t need = parent_len + 1 + n + 1;
	if (need > d->path_cap) {
		size_t c = d->path_cap;
		while (c < need)
			c *= 2;
		char *np = realloc(d->path, c);
		if (!np)
			return -ENOMEM;
		d->path = np;
		d->path_cap = c;
	}
	d->path_len = parent_len;
	if (parent_len > 0)
		d->path[d->path_len++] = '/';
	memcpy(d->path + d->path_len, name, n);
	d->path_len += n;
	d->path[d->path_len] = 0;
	return 0;
}

/* Parse the node at the current position (its FILENAME, fsize bytes, was
 * already consumed at f) and copy it out of the window into out. */
static int parse_node(struct ca_catar_dec *d, uint64_t f, const uint8_t *fname_rec, size_t fsize,
                      struct ca_buf *out, struct ca_catar_node *node)
{
	size_t need = sizeof(struct ca_format_entry);
	int r;
	for (;;) {
		r = ensure(d, need);
		if (r < 0)
			return r;
		r = ca_catar_node_parse(d->buf + d->at, d->len - d->at, pos(d), UINT64_MAX, d->flags, node, &need);
		if (r != -EAGAIN)
			break;
		if (need > CA_CATAR_META_MAX)
			return ca_catar_corrupt("ENTRY", pos(d), "metadata records too large in total");
	}
	if (r < 0)
		return r;
	if (S_ISREG(node->mode) && node->payload_size > d->src.size - node->payload_offset)
		return ca_catar_corrupt("PAYLOAD", node->payload_offset - HDR, "goes past the end of the archive");
	out->size = 0;
	size_t want = fsize + node->meta_size;
	if (want > out->cap) {
		if (d->meta_held - out->cap + want > CA_CATAR_DEC_META_TOTAL)
			return ca_catar_corrupt("ENTRY", pos(d), "metadata of the open directories over the memory budget");
		size_t old = out->cap;
		r = ca_buf_reserve(out, want, want); /* exactly: the budget counts capacity */
		if (r < 0)
			return r;
		d->meta_held += out->cap - old;
	}
	if (fsize)
		memcpy(out->data, fname_rec, fsize);
	memcpy(out->data + fsize, d->buf + d->at, node->meta_size);
	out->size = fsize + node->meta_size;
	ca_catar_node_rebase(node, out->data + fsize);
	if (fsize) {
		node->name = (const char *)out->data + HDR;
		node->filename_offset = f;
	}
	d->at += node->meta_size;
	return 0;
}

static int push_dir(struct ca_catar_dec *d, struct level **ret)
{
	if (d->depth >= CA_CATAR_DEPTH_MAX)
		return ca_catar_corrupt("ENTRY", pos(d), "directories nested too deep");
	if (d->depth == d->cap_levels) {
		size_t c = d->cap_levels ? d->cap_levels * 2 : 16;
		struct level *nl = realloc(d->levels, c * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		memset(nl + d->cap_levels, 0, (c - d->cap_levels) * sizeof(*nl));
		d->levels = nl;
		d->cap_levels = c;
	}
	struct level *l = &d->levels[d->depth++];
	l->n_items = 0;
	l->has_prev = false;
	*ret = l;
	return 0;
}

/* A level closed: give back what is bigger than the next one there needs. */
static void level_trim(struct ca_catar_dec *d, struct level *l)
{
	if (l->meta.cap > LEVEL_KEEP) {
		d->meta_held -= l->meta.cap;
		ca_buf_release(&l->meta);
	}
	if (l->cap_items > ITEMS_KEEP) {
		d->items_held -= l->cap_items;
		free(l->items);
		l->items = NULL;
		l->cap_items = 0;
	}
}

static int add_item(struct ca_catar_dec *d, struct level *l, uint64_t f, uint64_t end, uint64_t hash)
{
	if (l->n_items == l->cap_items) {
		size_t c = l->cap_items ? l->cap_items * 2 : ITEMS_KEEP;
		if (d->items_held - l->cap_items + c > CA_CATAR_DEC_CHILDREN_MAX) {
			c = CA_CATAR_DEC_CHILDREN_MAX - (d->items_held - l->cap_items);
			if (c <= l->cap_items)
				return ca_catar_corrupt("FILENAME", f, "children of the open directories over the memory budget");
		}
		struct child *ni = realloc(l->items, c * sizeof(*ni));
		if (!ni)
			return -ENOMEM;
		d->items_held += c - l->cap_items;
		l->items = ni;
		l->cap_items = c;
	}
	l->items[l->n_items++] = (struct child){ f, end - f, hash };
	return 0;
}

static int cmp_hash(const void *a, const void *b)
{
	const struct child *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->f < y->f ? -1 : x->f > y->f;
}

/* Eytzinger layout of sorted items: in-order walk of the implicit tree. */
static void eytzinger(const struct child *sorted, size_t n, struct child *out)
{
	size_t next = 0, i = 0;
	/* iterative in-order walk: descend left, emit, go right */
	size_t stack[64], sp = 0;
	for (;;) {
		while (i < n) {
			stack[sp++] = i;
			i = 2 * i + 1;
		}
		if (sp == 0)
			break;
		i = stack[--sp];
		out[i] = sorted[next++];
		i = 2 * i + 2;
	}
}

static int check_goodbye(struct ca_catar_dec *d, struct level *l)
{
	uint64_t g = pos(d);
	uint64_t size = HDR + (uint64_t)l->n_items * GB_ITEM + GB_TAIL;
	struct child *tree = NULL;
	int r = ensure(d, HDR);
	if (r < 0)
		return r;
	if (ca_le64_read(d->buf + d->at + 8) != CA_FORMAT_GOODBYE)
		return ca_catar_corrupt("GOODBYE", g, "not a GOODBYE record");
	if (ca_le64_read(d->buf + d->at) != size)
		return ca_catar_corrupt("GOODBYE", g, "size does not match the directory's children");
	if (size > d->src.size - g)
		return ca_catar_corrupt("GOODBYE", g, "goes past the end of the archive");
	d->at += HDR;
	if (l->n_items) {
		/* the children are not needed in stream order any more: sort them
		 * in place, so the check costs one copy (the tree), not two */
		tree = malloc(l->n_items * sizeof(*tree));
		if (!tree) {
			r = -ENOMEM;
			goto out;
		}
		qsort(l->items, l->n_items, sizeof(*l->items), cmp_hash);
		eytzinger(l->items, l->n_items, tree);
	}
	for (size_t i = 0; i < l->n_items; i++) {
		r = ensure(d, GB_ITEM);
		if (r < 0)
			goto out;
		const struct ca_format_goodbye_item *it = (const void *)(d->buf + d->at);
		if (ca_le64_read(&it->offset) != g - tree[i].f || ca_le64_read(&it->size) != tree[i].size ||
		    ca_le64_read(&it->hash) != tree[i].hash) {
			r = ca_catar_corrupt("GOODBYE", g, "an item does not match the children or their order");
			goto out;
		}
		d->at += GB_ITEM;
	}
	r = ensure(d, GB_TAIL);
	if (r < 0)
		goto out;
	const struct ca_format_goodbye_tail *t = (const void *)(d->buf + d->at);
	if (ca_le64_read(&t->entry_offset) != g - l->node.entry_offset || ca_le64_read(&t->size) != size ||
	    ca_le64_read(&t->marker) != CA_FORMAT_GOODBYE_TAIL_MARKER) {
		r = ca_catar_corrupt("GOODBYE", g, "tail does not match the directory");
		goto out;
	}
	d->at += GB_TAIL;
	l->node.goodbye_offset = g;
	l->node.n_children = l->n_items;
	l->node.end_offset = g + size;
	r = 0;
out:
	free(tree);
	return r;
}

/* A leaf or subdirectory of the top level ended at the current position. */
static int child_done(struct ca_catar_dec *d, uint64_t f, const char *name)
{
	struct level *l = &d->levels[d->depth - 1];
	return add_item(d, l, f, pos(d), ca_goodbye_hash(name, strlen(name)));
}

static int step(struct ca_catar_dec *d, const struct ca_catar_node **ret_node)
{
	struct level *l;
	int r;

	/* the level the last DIR_END closed, if any, no longer needs its bytes */
	if (d->depth < d->cap_levels)
		level_trim(d, &d->levels[d->depth]);

	switch (d->state) {
	case ST_DONE:
		return CA_CATAR_DEC_DONE;
	case ST_START:
		r = push_dir(d, &l);
		if (r < 0)
			return r;
		r = parse_node(d, UINT64_MAX, NULL, 0, &l->meta, &l->node);
		if (r < 0)
			return r;
		if (!S_ISDIR(l->node.mode))
			return ca_catar_corrupt("ENTRY", 0, "the root is not a directory");
		d->flags = l->node.feature_flags;
		l->path_len = 0;
		d->path_len = 0;
		d->path[0] = 0;
		d->state = ST_IN_DIR;
		d->cur_depth = 0;
		*ret_node = &l->node;
		return CA_CATAR_DEC_NODE;
	case ST_IN_PAYLOAD:
		if (d->payload_left > d->len - d->at) {
			uint64_t skip = d->payload_left - (d->len - d->at);
			d->base += d->len + skip;
			d->at = d->len = 0;
		} else {
			d->at += (size_t)d->payload_left;
		}
		d->payload_left = 0;
		r = child_done(d, d->leaf_f, d->leaf.name);
		if (r < 0)
			return r;
		d->state = ST_IN_DIR;
		break;
	case ST_IN_DIR:
		break;
	}

	l = &d->levels[d->depth - 1];
	d->path_len = l->path_len;
	d->path[d->path_len] = 0;

	r = ensure(d, HDR);
	if (r < 0)
		return r;
	uint64_t type = ca_le64_read(d->buf + d->at + 8);
	if (type == CA_FORMAT_GOODBYE) {
		r = check_goodbye(d, l);
		if (r < 0)
			return r;
		d->depth--;
		/* l->node (and its name, in l->meta) is this event's: the level
		 * is trimmed at the next step */
		d->cur_depth = (unsigned)d->depth;
		*ret_node = &l->node;
		if (d->depth == 0) {
			r = at_end(d);
			if (r < 0)
				return r;
			d->state = ST_DONE;
		} else {
			r = child_done(d, l->node.filename_offset, l->node.name);
			if (r < 0)
				return r;
		}
		return CA_CATAR_DEC_DIR_END;
	}
	if (type != CA_FORMAT_FILENAME)
		return ca_catar_corrupt("record", pos(d), "neither FILENAME nor GOODBYE in a directory");

	uint64_t f = pos(d);
	const char *name;
	d->cur_depth = (unsigned)d->depth;
	size_t need;
	r = ensure_ex(d, FILENAME_MAX_SIZE < d->src.size - f ? FILENAME_MAX_SIZE : (size_t)(d->src.size - f), true);
	if (r < 0)
		return r;
	r = ca_catar_filename_parse(d->buf + d->at, d->len - d->at, f, &name, &need);
	if (r == -EAGAIN)
		r = ca_catar_corrupt("FILENAME", f, "the archive ends inside it");
	if (r < 0)
		return r;
	size_t fsize = (size_t)r, nlen = fsize - HDR - 1;
	if (l->has_prev && strcmp(name, l->prev) <= 0)
		return ca_catar_corrupt("FILENAME", f, "names not in strictly increasing order");
	memcpy(l->prev, name, nlen + 1);
	l->has_prev = true;
	r = path_set(d, l->path_len, name, nlen);
	if (r < 0)
		return r;
	/* keep the FILENAME bytes: parse_node may move the window */
	uint8_t frec[FILENAME_MAX_SIZE];
	memcpy(frec, d->buf + d->at, fsize);
	d->at += fsize;

	/* parse into the leaf slot first; directories move to a new level */
	r = parse_node(d, f, frec, fsize, &d->leaf_meta, &d->leaf);
	if (r < 0)
		return r;
	if (S_ISDIR(d->leaf.mode)) {
		struct level *nl;
		r = push_dir(d, &nl);
		if (r < 0)
			return r;
		/* swap buffers: the leaf slot's bytes become the level's */
		struct ca_buf tmp = nl->meta;
		nl->meta = d->leaf_meta;
		d->leaf_meta = tmp;
		nl->node = d->leaf;
		nl->path_len = d->path_len;
		*ret_node = &nl->node;
		return CA_CATAR_DEC_NODE;
	}
	d->leaf_f = f;
	*ret_node = &d->leaf;
	if (S_ISREG(d->leaf.mode)) {
		d->payload_left = d->leaf.payload_size;
		d->state = ST_IN_PAYLOAD;
	} else {
		r = child_done(d, f, d->leaf.name);
		if (r < 0)
			return r;
	}
	return CA_CATAR_DEC_NODE;
}

int ca_catar_dec_next(struct ca_catar_dec *d, const struct ca_catar_node **ret_node)
{
	const struct ca_catar_node *dummy;
	if (d->error)
		return d->error;
	int r = step(d, ret_node ? ret_node : &dummy);
	if (r < 0)
		d->error = r;
	return r;
}

ssize_t ca_catar_dec_read_payload(struct ca_catar_dec *d, void *buf, size_t len)
{
	ssize_t n = payload_span(d, len);
	if (n <= 0)
		return n;
	len = (size_t)n;
	const uint8_t *w = from_window(d, &len);
	if (w) {
		memcpy(buf, w, len);
		return (ssize_t)len;
	}
	/* past the window: read straight into the caller's buffer */
	return past_window(d, d->src.read(d->src.userdata, buf, len, pos(d)));
}
