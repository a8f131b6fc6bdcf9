/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* profile.c - prefetch profiles: recording, the text format, resolving to chunks. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/atomic_file.h"
#include "base/digest.h"
#include "base/fdio.h"
#include "base/location.h"
#include "base/log.h"
#include "image/profile.h"

#define MAGIC_LINE "cafs-profile 1"
/* how many of the latest items a read may extend (the kernel's readahead
 * sends a file's reads a little out of order, and interleaves files) */
#define COALESCE_BACK 16
#define NUM_MAX (UINT64_C(1) << 62)
#define PATH_MAX_PROFILE 4096 /* a path's bytes, NUL included */

struct item {
	uint64_t entry; /* UINT64_MAX: an image range (r); a lookup's: its directory's */
	uint64_t payload;
	uint64_t start, len;
	char *path; /* parsed "f" and "l" items only */
	char *name; /* a recorded lookup's name (in entry) */
	bool lookup; /* an "l" item: a name looked up, no data */
};

/* ---- recording ---- */

struct ca_profile_rec {
	pthread_mutex_t lock;
	struct item *items;
	size_t n, cap;
	bool full;
	/* the lookups recorded, by a hash of directory and name (a hint: two
	 * names of one hash keep the first); LOOKUPS_MAX slots at most */
	uint64_t *seen;
	size_t n_lookups;
};

/* at most this many "l" items, the hash table twice as many slots */
#define LOOKUPS_MAX 16384

int ca_profile_rec_new(struct ca_profile_rec **ret)
{
	struct ca_profile_rec *rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	pthread_mutex_init(&rec->lock, NULL);
	*ret = rec;
	return 0;
}

void ca_profile_rec_free(struct ca_profile_rec *rec)
{
	if (!rec)
		return;
	pthread_mutex_destroy(&rec->lock);
	for (size_t i = 0; i < rec->n; i++)
		free(rec->items[i].name);
	free(rec->items);
	free(rec->seen);
	free(rec);
}

/* Do a and b (same file) touch or overlap? */
static bool joins(const struct item *a, uint64_t start, uint64_t end)
{
	return start <= a->start + a->len && end >= a->start;
}

static void extend(struct item *a, uint64_t start, uint64_t end)
{
	uint64_t s = start < a->start ? start : a->start;
	uint64_t e = end > a->start + a->len ? end : a->start + a->len;
	a->start = s;
	a->len = e - s;
}

/* Item j grew: it may now join another recent item of its file (reads
 * completing out of order leave gaps that a later read fills). The two
 * become one at the earlier place, the first read's. */
static void rejoin(struct ca_profile_rec *rec, size_t j)
{
	size_t lo = rec->n > COALESCE_BACK ? rec->n - COALESCE_BACK : 0;
	for (size_t i = lo; i < rec->n; i++) {
		struct item *a = &rec->items[i], *b = &rec->items[j];
		if (i == j || a->lookup || a->entry != b->entry || !joins(a, b->start, b->start + b->len))
			continue;
		size_t keep = i < j ? i : j, drop = i < j ? j : i;
		extend(&rec->items[keep], rec->items[drop].start, rec->items[drop].start + rec->items[drop].len);
		memmove(&rec->items[drop], &rec->items[drop + 1], (rec->n - drop - 1) * sizeof(*rec->items));
		rec->n--;
		j = keep;
		i = lo - 1; /* look again from the start of the window */
	}
}

/* Append it (rec->lock held): -ENOSPC when the profile is full. */
static int append(struct ca_profile_rec *rec, const struct item *it)
{
	if (rec->n == CA_PROFILE_ITEMS_MAX) {
		rec->full = true;
		return -ENOSPC;
	}
	if (rec->n == rec->cap) {
		size_t nc = rec->cap ? rec->cap * 2 : 256;
		struct item *ni = realloc(rec->items, nc * sizeof(*ni));
		if (!ni) {
			rec->full = true; /* a profile is a hint: recording stops, the mount goes on */
			return -ENOSPC;
		}
		rec->items = ni;
		rec->cap = nc;
	}
	rec->items[rec->n++] = *it;
	return 0;
}

void ca_profile_rec_read(struct ca_profile_rec *rec, uint64_t entry, uint64_t payload, uint64_t off, uint64_t len)
{
	if (len == 0 || off > NUM_MAX || len > NUM_MAX)
		return;
	uint64_t end = off + len;
	pthread_mutex_lock(&rec->lock);
	for (size_t k = 0; k < COALESCE_BACK && k < rec->n; k++) {
		size_t j = rec->n - 1 - k;
		struct item *it = &rec->items[j];
		if (it->lookup || it->entry != entry || !joins(it, off, end))
			continue;
		extend(it, off, end);
		rejoin(rec, j);
		goto out;
	}
	(void)append(rec, &(struct item){ .entry = entry, .payload = payload, .start = off, .len = len });
out:
	pthread_mutex_unlock(&rec->lock);
}

/* FNV-1a of a lookup, never 0 (an empty slot) */
static uint64_t lookup_hash(uint64_t dir, const char *name)
{
	uint64_t h = UINT64_C(14695981039346656037);
	for (int i = 0; i < 8; i++)
		h = (h ^ ((dir >> (8 * i)) & 0xff)) * UINT64_C(1099511628211);
	for (const unsigned char *s = (const unsigned char *)name; *s; s++)
		h = (h ^ *s) * UINT64_C(1099511628211);
	return h ? h : 1;
}

void ca_profile_rec_lookup(struct ca_profile_rec *rec, uint64_t dir_entry, const char *name)
{
	size_t len = name ? strlen(name) : 0;
	if ((name && len == 0) || len > 255 || dir_entry > NUM_MAX)
		return;
	uint64_t h = lookup_hash(dir_entry, name ? name : "");
	pthread_mutex_lock(&rec->lock);
	if (!rec->seen && !(rec->seen = calloc(2 * LOOKUPS_MAX, sizeof(*rec->seen))))
		goto out;
	if (rec->n_lookups == LOOKUPS_MAX)
		goto out;
	size_t i = (size_t)(h % (2 * LOOKUPS_MAX));
	while (rec->seen[i] && rec->seen[i] != h)
		i = (i + 1) % (2 * LOOKUPS_MAX);
	if (rec->seen[i])
		goto out; /* looked up before */
	struct item it = { .entry = dir_entry, .lookup = true, .name = name ? strdup(name) : NULL };
	if ((name && !it.name) || append(rec, &it) < 0) {
		free(it.name);
		goto out;
	}
	rec->seen[i] = h;
	rec->n_lookups++;
out:
	pthread_mutex_unlock(&rec->lock);
}

static int put(struct ca_buf *b, const char *s, size_t n)
{
	return ca_buf_append(b, s, n, CA_PROFILE_FILE_MAX);
}

static int put_escaped(struct ca_buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char t[4];
		int r;
		if (c <= 0x20 || c == '%' || c >= 0x7f) {
			snprintf(t, sizeof(t), "%%%02X", c);
			r = put(b, t, 3);
		} else {
			r = put(b, s, 1);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int put_header(struct ca_buf *b, const uint8_t *digest)
{
	char hex[2 * CA_CHUNK_ID_SIZE + 1] = "-";
	char line[128];
	if (digest)
		ca_id_to_hex(digest, hex);
	int n = snprintf(line, sizeof(line), MAGIC_LINE "\nindex %s\n", hex);
	return put(b, line, (size_t)n);
}

/* The path of sidecar entry i from the root, into path (cap bytes). */
static int entry_path(const struct ca_sidecar *sc, size_t i, char *path, size_t cap)
{
	size_t at = cap - 1;
	path[at] = 0;
	for (size_t depth = 0; i != 0; depth++) {
		struct ca_catar_node cn;
		if (depth > 4096)
			return -ELOOP;
		ca_sidecar_node(sc, i, &cn);
		size_t l = strlen(cn.name);
		if (l + 1 > at)
			return -ENAMETOOLONG;
		if (at != cap - 1)
			path[--at] = '/';
		at -= l;
		memcpy(path + at, cn.name, l);
		i = ca_sidecar_parent(sc, i);
	}
	memmove(path, path + at, cap - at);
	return 0;
}

static int put_item(struct ca_buf *b, const struct item *it, const char *path)
{
	char line[64];
	if (it->lookup) {
		int r = put(b, "#l ", 3);
		if (r == 0)
			r = put_escaped(b, path);
		return r == 0 ? put(b, "\n", 1) : r;
	}
	int n = snprintf(line, sizeof(line), "%c %" PRIu64 " %" PRIu64 "%s", path ? 'f' : 'r', it->start, it->len,
	                 path ? " " : "\n");
	int r = put(b, line, (size_t)n);
	if (r == 0 && path)
		r = put_escaped(b, path);
	if (r == 0 && path)
		r = put(b, "\n", 1);
	return r;
}

/* Write one item: a file's range by path through the sidecar, else an
 * image range. */
static int format_rec_item(struct ca_buf *b, const struct item *it, const struct ca_sidecar *sc, char *path,
                           size_t cap)
{
	size_t i;
	if (it->lookup) {
		/* its directory's path and the name (a readlink's: the entry's
		 * own path); none without a sidecar */
		if (!sc || ca_sidecar_find(sc, it->entry, &i) < 0 || entry_path(sc, i, path, cap) < 0)
			return 0;
		size_t l = strlen(path), nl = it->name ? strlen(it->name) : 0;
		if (l + 1 + nl + 1 > cap || (!it->name && !l))
			return 0;
		if (it->name && l)
			path[l++] = '/';
		if (it->name)
			memcpy(path + l, it->name, nl + 1);
		return put_item(b, it, path);
	}
	if (it->entry == UINT64_MAX)
		return put_item(b, it, NULL);
	if (sc && ca_sidecar_find(sc, it->entry, &i) == 0 && entry_path(sc, i, path, cap) == 0)
		return put_item(b, it, path);
	struct item r = { .entry = UINT64_MAX, .start = it->payload + it->start, .len = it->len };
	return put_item(b, &r, NULL);
}

int ca_profile_rec_write(struct ca_profile_rec *rec, const char *path, const uint8_t *index_digest,
                         const struct ca_sidecar *sc)
{
	struct ca_buf b = CA_BUF_INIT;
	char *p = malloc(PATH_MAX_PROFILE);
	int r = p ? put_header(&b, index_digest) : -ENOMEM;
	pthread_mutex_lock(&rec->lock);
	for (size_t k = 0; r == 0 && k < rec->n; k++)
		r = format_rec_item(&b, &rec->items[k], sc, p, PATH_MAX_PROFILE);
	if (rec->full)
		ca_log_warning("%s: the profile holds only the first %zu reads", path, rec->n);
	pthread_mutex_unlock(&rec->lock);
	if (r == -EFBIG)
		ca_log_warning("%s: the profile is cut at %zu bytes", path, b.size);
	if (r == -EFBIG)
		r = 0;
	if (r == 0)
		r = ca_atomic_file_write(path, 0600, b.data, b.size);
	if (r < 0)
		ca_log_error_errno(r, "%s: cannot write the profile", path);
	free(p);
	ca_buf_release(&b);
	return r;
}

/* ---- reading ---- */

struct ca_profile {
	struct item *items;
	size_t n, cap;
	bool has_digest;
	uint8_t digest[CA_CHUNK_ID_SIZE];
};

void ca_profile_free(struct ca_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->items[i].path);
	free(p->items);
	free(p);
}

size_t ca_profile_count(const struct ca_profile *p)
{
	return p->n;
}

bool ca_profile_file(const struct ca_profile *p, size_t i, const char **path, uint64_t *start, uint64_t *len)
{
	if (i >= p->n || !p->items[i].path || p->items[i].lookup)
		return false;
	*path = p->items[i].path;
	*start = p->items[i].start;
	*len = p->items[i].len;
	return true;
}

bool ca_profile_lookup(const struct ca_profile *p, size_t i, const char **path)
{
	if (i >= p->n || !p->items[i].lookup)
		return false;
	*path = p->items[i].path;
	return true;
}

const uint8_t *ca_profile_index_digest(const struct ca_profile *p)
{
	return p->has_digest ? p->digest : NULL;
}

static int bad(size_t line, const char *why)
{
	ca_log_debug("profile line %zu: %s", line, why);
	return -EBADMSG;
}

/* A decimal number up to NUM_MAX and the space or end after it. */
static int parse_num(const char **s, const char *end, uint64_t *ret)
{
	const char *q = *s;
	uint64_t v = 0;
	if (q == end || *q < '0' || *q > '9')
		return -1;
	for (; q < end && *q >= '0' && *q <= '9'; q++) {
		v = v * 10 + (uint64_t)(*q - '0');
		if (v > NUM_MAX)
			return -1;
	}
	*s = q;
	*ret = v;
	return 0;
}

/* An escaped path (the rest of the line) into a malloc'd string. */
static int parse_path(const char *s, const char *end, char **ret)
{
	size_t n = (size_t)(end - s);
	if (n == 0 || n >= PATH_MAX_PROFILE)
		return -1;
	char *p = malloc(n + 1), *o = p;
	if (!p)
		return -ENOMEM;
	for (; s < end; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '%') {
			int h, l;
			if (end - s < 3 || (h = ca_unhex_digit(s[1])) < 0 || (l = ca_unhex_digit(s[2])) < 0 || (h == 0 && l == 0))
				goto bad;
			*o++ = (char)(h * 16 + l);
			s += 2;
		} else if (c <= 0x20 || c == 0x7f) {
			goto bad;
		} else {
			*o++ = (char)c;
		}
	}
	*o = 0;
	*ret = p;
	return 0;
bad:
	free(p);
	return -1;
}

/* The lookup item of a "#l PATH" hint (s at "l "). */
static int parse_lookup_item(struct ca_profile *p, size_t lineno, const char *s, const char *end, struct item *itp)
{
	struct item it = *itp;
	int r = parse_path(s + 2, end, &it.path);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return bad(lineno, "bad path");
	it.entry = 0;
	it.lookup = true;
	if (p->n == p->cap) {
		free(it.path);
		return bad(lineno, "too many items");
	}
	p->items[p->n++] = it;
	return 0;
}

/* A "#l PATH" hint (profile.h): a name looked up. A bad one is skipped,
 * as the older readers that take it for a comment do; only -ENOMEM
 * fails. */
static int parse_lookup(struct ca_profile *p, size_t lineno, const char *s, const char *end)
{
	struct item it = { .entry = UINT64_MAX };
	int r = parse_lookup_item(p, lineno, s, end, &it);
	return r == -EBADMSG ? 0 : r;
}

static int parse_line(struct ca_profile *p, size_t lineno, const char *s, const char *end)
{
	struct item it = { .entry = UINT64_MAX };
	if (end - s >= 6 && !memcmp(s, "index ", 6)) {
		if (lineno != 2)
			return bad(lineno, "index line out of place");
		if (end - s == 7 && s[6] == '-')
			return 0;
		char hex[2 * CA_CHUNK_ID_SIZE + 1];
		if (end - s - 6 != 2 * CA_CHUNK_ID_SIZE)
			return bad(lineno, "bad index digest");
		memcpy(hex, s + 6, 2 * CA_CHUNK_ID_SIZE);
		hex[2 * CA_CHUNK_ID_SIZE] = 0;
		if (ca_id_from_hex(hex, p->digest) < 0)
			return bad(lineno, "bad index digest");
		p->has_digest = true;
		return 0;
	}
	if (end - s < 2 || (s[0] != 'f' && s[0] != 'r') || s[1] != ' ')
		return bad(lineno, "unknown item");
	bool file = s[0] == 'f';
	s += 2;
	if (parse_num(&s, end, &it.start) < 0 || s == end || *s++ != ' ' || parse_num(&s, end, &it.len) < 0 ||
	    it.len == 0)
		return bad(lineno, "bad range");
	if (file) {
		if (s == end || *s++ != ' ')
			return bad(lineno, "no path");
		int r = parse_path(s, end, &it.path);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return bad(lineno, "bad path");
		it.entry = 0;
	} else if (s != end) {
		return bad(lineno, "junk after the range");
	}
	if (p->n == p->cap) {
		free(it.path);
		return bad(lineno, "too many items");
	}
	p->items[p->n++] = it;
	return 0;
}

int ca_profile_parse(const void *data, size_t size, struct ca_profile **ret)
{
	const char *s = data, *end = s + size;
	size_t lineno = 0, n_lines = 0;
	int r = 0;
	if (size > CA_PROFILE_FILE_MAX || memchr(data, 0, size))
		return bad(0, "too big, or binary");
	if (size < sizeof(MAGIC_LINE) || memcmp(s, MAGIC_LINE "\n", sizeof(MAGIC_LINE)))
		return bad(1, "not a cafs profile (version 1)");
	for (const char *q = s; q < end; q++)
		n_lines += *q == '\n';
	struct ca_profile *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	size_t want = n_lines < CA_PROFILE_ITEMS_MAX ? n_lines : CA_PROFILE_ITEMS_MAX;
	p->cap = want;
	p->items = calloc(want ? want : 1, sizeof(*p->items));
	if (!p->items) {
		free(p);
		return -ENOMEM;
	}
	while (r == 0 && s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end;
		lineno++;
		if (!nl)
			r = bad(lineno, "no newline at the end");
		else if ((size_t)(e - s) > CA_PROFILE_LINE_MAX)
			r = bad(lineno, "line too long");
		else if (lineno > 1 && e - s >= 3 && !memcmp(s, "#l ", 3))
			r = parse_lookup(p, lineno, s + 1, e);
		else if (lineno > 1 && e > s && *s != '#')
			r = parse_line(p, lineno, s, e);
		s = e + 1;
	}
	if (r < 0) {
		ca_profile_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

/* Mark the chunks of image range [start, start+len) in order. */
static int add_range(const struct ca_index *idx, uint64_t start, uint64_t len, uint8_t *seen, size_t *order,
                     size_t *n)
{
	uint64_t size = ca_index_blob_size(idx);
	if (start >= size || len == 0)
		return -ENOENT;
	uint64_t end = len > size - start ? size : start + len;
	ssize_t a = ca_index_find(idx, start), z = ca_index_find(idx, end - 1);
	if (a < 0 || z < a)
		return -ENOENT;
	for (ssize_t i = a; i <= z; i++)
		if (!seen[i]) {
			seen[i] = 1;
			order[(*n)++] = (size_t)i;
		}
	return 0;
}

int ca_profile_resolve(const struct ca_profile *p, const struct ca_index *idx, const struct ca_sidecar *sc,
                       size_t **ret, size_t *ret_n, size_t *ret_skipped)
{
	size_t nc = ca_index_n_chunks(idx), n = 0, skipped = 0;
	uint8_t *seen = calloc(nc ? nc : 1, 1);
	size_t *order = malloc((nc ? nc : 1) * sizeof(*order));
	if (!seen || !order) {
		free(seen);
		free(order);
		return -ENOMEM;
	}
	for (size_t k = 0; k < p->n && n < nc; k++) {
		const struct item *it = &p->items[k];
		uint64_t start = it->start, len = it->len;
		if (it->lookup)
			continue; /* a name, no data */
		if (it->path) {
			size_t i;
			struct ca_catar_node cn;
			if (!sc || ca_sidecar_lookup_path(sc, it->path, &i) < 0) {
				skipped++;
				continue;
			}
			ca_sidecar_node(sc, i, &cn);
			if (!S_ISREG(cn.mode) || start >= cn.payload_size) {
				skipped++;
				continue;
			}
			if (len > cn.payload_size - start)
				len = cn.payload_size - start;
			start += cn.payload_offset;
		}
		if (add_range(idx, start, len, seen, order, &n) < 0)
			skipped++;
	}
	free(seen);
	*ret = order;
	*ret_n = n;
	*ret_skipped = skipped;
	return 0;
}

int ca_profile_format(const struct ca_profile *p, const uint8_t *index_digest, struct ca_buf *out)
{
	int r = put_header(out, index_digest);
	for (size_t k = 0; r == 0 && k < p->n; k++)
		r = put_item(out, &p->items[k], p->items[k].path);
	return r;
}

char *ca_profile_name_for(const char *index)
{
	return ca_location_beside(index, CA_PROFILE_SUFFIX);
}

int ca_profile_load(const char *path, struct ca_profile **ret)
{
	struct ca_buf b = CA_BUF_INIT;
	int r = ca_buf_read_file(&b, path, 0, CA_PROFILE_FILE_MAX);
	if (r == 0)
		r = ca_profile_parse(b.data, b.size, ret);
	ca_buf_release(&b);
	return r;
}

int ca_profile_write_beside(const struct ca_profile *p, const char *index_path)
{
	struct ca_buf b = CA_BUF_INIT;
	uint8_t digest[CA_CHUNK_ID_SIZE];
	char *name = ca_profile_name_for(index_path);
	struct ca_index *ix = NULL;
	int r = name ? ca_index_open(index_path, &ix) : -ENOMEM;
	if (r == 0) {
		size_t size;
		const void *bytes = ca_index_data(ix, &size);
		r = ca_sidecar_index_digest(bytes, size, digest);
	}
	if (r == 0)
		r = ca_profile_format(p, digest, &b);
	if (r == 0)
		r = ca_atomic_file_write(name, 0644, b.data, b.size);
	if (r < 0)
		ca_log_error_errno(r, "%s", name ? name : index_path);
	ca_index_free(ix);
	ca_buf_release(&b);
	free(name);
	return r;
}
