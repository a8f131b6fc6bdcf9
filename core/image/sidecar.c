/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sidecar.c - the metadata sidecar: builder, writer and strict reader (see sidecar.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "base/atomic_file.h"
#include "store/blob.h"
#include "catar/catar_attr.h"
#include "catar/catar_enc.h"
#include "store/chunksrc.h"
#include "base/digest.h"
#include "format/feature.h"
#include "base/fdio.h"
#include "format/index.h"
#include "base/location.h"
#include "base/log.h"
#include "image/sidecar.h"
#include "net/storeconf.h"
#include "store/store.h"

#define MAGIC "CAFSMETA"
#define SC_VERSION 1u
#define HDR 16u                 /* an archive record header */
#define GB_MIN (HDR + 24u)      /* GOODBYE header + tail item */
#define GB_ITEM 24u
#define REC_FIXED (8u + 8u + 8u + 4u + 4u + 2u)
#define REC_MIN (REC_FIXED + 1u + (uint32_t)sizeof(struct ca_format_entry))
#define CHECKSUMMED 88u /* header bytes the checksum covers */
/* Level 6: within 10% of level 19's size (a minbase tree: 114 KB vs 104 KB)
 * at a small fraction of its time and memory (level 19 was most of what
 * the sidecar added to make: ~0.6 s of CPU and ~40 MB of RSS). */
#define ZSTD_LEVEL 6
/* The chunk LRU of the read-back: random access jumps from a directory's
 * entry to its GOODBYE table and back, so only directories larger than
 * this read a chunk twice; 64 MiB put make over its memory budget. */
#define READBACK_LRU ((size_t)8 << 20)

struct entry {
	uint64_t entry_offset, end_offset, goodbye_offset;
	uint32_t parent, meta_off, meta_len, name_off;
	uint32_t first_kid, n_kids;
	uint16_t name_len;
	uint16_t meta_size_delta; /* meta_len - the node's meta_size: 16 for directories, else 0 */
};

struct ca_sidecar {
	uint8_t *body;
	size_t body_size;
	uint64_t archive_size, flags;
	unsigned xattr_sources; /* every entry's ca_catar_node_xattr_sources, or'ed */
	size_t n;
	struct entry *e;
	uint32_t *kids;
};

static int bad(const char *why)
{
	ca_log_debug("metadata sidecar: %s", why);
	return -EBADMSG;
}

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

static int sha(const void *a, size_t na, const void *b, size_t nb, uint8_t out[CA_CHUNK_ID_SIZE])
{
	struct ca_digest *d;
	int r = ca_digest_new(CA_DIGEST_SHA512_256, &d);
	if (r < 0)
		return r;
	r = ca_digest_update(d, a, na);
	if (r == 0 && nb)
		r = ca_digest_update(d, b, nb);
	if (r == 0)
		r = ca_digest_final(d, out);
	ca_digest_free(d);
	return r;
}

int ca_sidecar_index_digest(const void *index, size_t size, uint8_t ret[CA_CHUNK_ID_SIZE])
{
	return sha(index, size, NULL, 0, ret);
}

void ca_sidecar_free(struct ca_sidecar *sc)
{
	if (!sc)
		return;
	free(sc->body);
	free(sc->e);
	free(sc->kids);
	free(sc);
}

size_t ca_sidecar_count(const struct ca_sidecar *sc) { return sc->n; }
uint64_t ca_sidecar_feature_flags(const struct ca_sidecar *sc) { return sc->flags; }
unsigned ca_sidecar_xattr_sources(const struct ca_sidecar *sc) { return sc->xattr_sources; }
uint64_t ca_sidecar_entry_offset(const struct ca_sidecar *sc, size_t i) { return sc->e[i].entry_offset; }
size_t ca_sidecar_parent(const struct ca_sidecar *sc, size_t i) { return sc->e[i].parent; }
size_t ca_sidecar_n_children(const struct ca_sidecar *sc, size_t i) { return sc->e[i].n_kids; }
size_t ca_sidecar_child(const struct ca_sidecar *sc, size_t i, size_t k) { return sc->kids[sc->e[i].first_kid + k]; }

/* Parse entry e's bytes; the checks of parse_entries make this succeed. */
static int node_of(const struct ca_sidecar *sc, const struct entry *e, struct ca_catar_node *n)
{
	size_t need;
	int r = ca_catar_node_parse(sc->body + e->meta_off, e->meta_len, e->entry_offset,
	                            e->end_offset - e->entry_offset, sc->flags, n, &need);
	if (r < 0)
		return r == -EAGAIN ? -EBADMSG : r;
	n->end_offset = e->end_offset;
	n->name = (const char *)sc->body + e->name_off;
	n->filename_offset = e == sc->e ? UINT64_MAX : e->entry_offset - (HDR + e->name_len + 1u);
	if (S_ISDIR(n->mode)) {
		n->goodbye_offset = e->goodbye_offset;
		n->n_children = e->n_kids;
	}
	return 0;
}

void ca_sidecar_node(const struct ca_sidecar *sc, size_t i, struct ca_catar_node *ret)
{
	if (node_of(sc, &sc->e[i], ret) < 0) /* cannot happen: checked at parse */
		memset(ret, 0, sizeof(*ret));
}

int ca_sidecar_find(const struct ca_sidecar *sc, uint64_t off, size_t *ret_i)
{
	size_t lo = 0, hi = sc->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sc->e[mid].entry_offset < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= sc->n || sc->e[lo].entry_offset != off)
		return -ENOENT;
	*ret_i = lo;
	return 0;
}

/* strcmp order of two names given with their lengths (no NUL inside). */
static int name_cmp(const char *a, size_t la, const char *b, size_t lb)
{
	int c = memcmp(a, b, la < lb ? la : lb);
	if (c)
		return c;
	return la < lb ? -1 : la > lb;
}

int ca_sidecar_lookup(const struct ca_sidecar *sc, size_t dir, const char *name, size_t len, size_t *ret_i)
{
	const struct entry *d = &sc->e[dir];
	if (d->meta_size_delta == 0)
		return -ENOTDIR;
	size_t lo = 0, hi = d->n_kids;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct entry *c = &sc->e[sc->kids[d->first_kid + mid]];
		int k = name_cmp((const char *)sc->body + c->name_off, c->name_len, name, len);
		if (k == 0) {
			*ret_i = sc->kids[d->first_kid + mid];
			return 0;
		}
		if (k < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

int ca_sidecar_lookup_path(const struct ca_sidecar *sc, const char *path, size_t *ret_i)
{
	size_t at = 0;
	for (const char *q = path; *q;) {
		q += strspn(q, "/");
		size_t l = strcspn(q, "/");
		if (l == 0)
			break;
		if (l == 2 && q[0] == '.' && q[1] == '.')
			return -EINVAL;
		if (!(l == 1 && q[0] == '.')) {
			int r = ca_sidecar_lookup(sc, at, q, l, &at);
			if (r < 0)
				return r;
		}
		q += l;
	}
	*ret_i = at;
	return 0;
}

/* ---- reading ---- */

static int parse_header(const uint8_t *p, size_t size, const uint8_t *want_digest, uint64_t archive_size,
                        uint64_t *ret_n, uint64_t *ret_body)
{
	if (size < CA_SIDECAR_HEADER_SIZE || memcmp(p, MAGIC, 8) != 0)
		return bad("no header");
	if (le32(p + 8) != SC_VERSION || le32(p + 12) != CA_SIDECAR_HEADER_SIZE || ca_le64_read(p + 120) != 0)
		return bad("unknown version");
	uint64_t asize = ca_le64_read(p + 48), n = ca_le64_read(p + 64), body = ca_le64_read(p + 72);
	uint64_t csize = ca_le64_read(p + 80);
	if (body > CA_SIDECAR_BODY_MAX || csize != size - CA_SIDECAR_HEADER_SIZE)
		return bad("sizes out of bounds");
	if (n == 0 || n > body / REC_MIN || n > UINT32_MAX)
		return bad("entry count does not fit the body");
	if (want_digest && memcmp(p + 16, want_digest, CA_CHUNK_ID_SIZE) != 0)
		return -ESTALE;
	if (archive_size != UINT64_MAX && asize != archive_size)
		return -ESTALE;
	*ret_n = n;
	*ret_body = body;
	return 0;
}

static int decompress(const uint8_t *src, size_t n, uint8_t *dst, size_t want)
{
	unsigned long long cs = ZSTD_getFrameContentSize(src, n);
	if (cs == ZSTD_CONTENTSIZE_UNKNOWN || cs == ZSTD_CONTENTSIZE_ERROR || cs != want)
		return bad("frame size is not the header's");
	size_t fs = ZSTD_findFrameCompressedSize(src, n);
	if (ZSTD_isError(fs) || fs != n)
		return bad("not exactly one zstd frame");
	size_t k = ZSTD_decompress(dst, want ? want : 1, src, n);
	if (ZSTD_isError(k) || k != want)
		return bad("zstd frame does not decode");
	return 0;
}

/* Read the body's records into sc->e, checking each against the archive's
 * rules and its parent; then the children arrays. */
static int parse_entries(struct ca_sidecar *sc)
{
	const uint8_t *b = sc->body;
	size_t at = 0;
	uint64_t *cursor = calloc(sc->n, sizeof(*cursor)); /* next child's FILENAME offset per directory */
	int r = cursor ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && i < sc->n; i++) {
		struct entry *e = &sc->e[i];
		struct ca_catar_node node;
		if (sc->body_size - at < REC_FIXED) {
			r = bad("body ends inside a record");
			break;
		}
		e->entry_offset = ca_le64_read(b + at);
		e->end_offset = ca_le64_read(b + at + 8);
		e->goodbye_offset = ca_le64_read(b + at + 16);
		e->parent = le32(b + at + 24);
		e->meta_len = le32(b + at + 28);
		e->name_len = le16(b + at + 32);
		at += REC_FIXED;
		if (sc->body_size - at < (size_t)e->name_len + 1u ||
		    sc->body_size - at - e->name_len - 1u < e->meta_len) {
			r = bad("body ends inside a record");
			break;
		}
		e->name_off = (uint32_t)at;
		e->meta_off = (uint32_t)(at + e->name_len + 1u);
		at += (size_t)e->name_len + 1u + e->meta_len;
		if (b[e->name_off + e->name_len] != 0) {
			r = bad("name not terminated");
			break;
		}
		if (e->end_offset <= e->entry_offset || e->end_offset > sc->archive_size) {
			r = bad("entry range out of the archive");
			break;
		}
		if (i == 0) {
			if (e->entry_offset != 0 || e->end_offset != sc->archive_size || e->parent != 0 || e->name_len) {
				r = bad("the first entry is not the root");
				break;
			}
		} else {
			struct entry *p = &sc->e[e->parent];
			const char *nm = (const char *)b + e->name_off;
			if (e->parent >= i || p->meta_size_delta == 0) {
				r = bad("parent is not an earlier directory");
				break;
			}
			if (e->entry_offset <= sc->e[i - 1].entry_offset) {
				r = bad("entries not in archive order");
				break;
			}
			if (!ca_catar_filename_is_valid(nm, e->name_len) ||
			    e->entry_offset < HDR + e->name_len + 1u ||
			    e->entry_offset - (HDR + e->name_len + 1u) != cursor[e->parent] ||
			    e->end_offset > p->goodbye_offset) {
				r = bad("entry does not follow its previous sibling");
				break;
			}
			cursor[e->parent] = e->end_offset;
			p->n_kids++;
		}
		r = node_of(sc, e, &node);
		if (r < 0) {
			r = bad("entry bytes do not parse");
			break;
		}
		sc->xattr_sources |= ca_catar_node_xattr_sources(&node);
		if (S_ISDIR(node.mode)) {
			e->meta_size_delta = HDR;
			uint64_t gsize = e->end_offset - e->goodbye_offset;
			if (node.meta_size + HDR != e->meta_len || e->goodbye_offset < node.children_offset ||
			    e->goodbye_offset > e->end_offset || gsize < GB_MIN || (gsize - GB_MIN) % GB_ITEM) {
				r = bad("directory range does not fit its GOODBYE");
				break;
			}
			uint64_t t = ca_le64_read(b + e->meta_off + node.meta_size + 8);
			if (t != CA_FORMAT_GOODBYE && t != CA_FORMAT_FILENAME) {
				r = bad("directory metadata not followed by a FILENAME or GOODBYE");
				break;
			}
			cursor[i] = node.children_offset;
		} else {
			uint64_t end = S_ISREG(node.mode) ? node.payload_offset + node.payload_size :
			                                    e->entry_offset + node.meta_size;
			if (node.meta_size != e->meta_len || e->goodbye_offset != 0 || end != e->end_offset ||
			    end < e->entry_offset) {
				r = bad("entry size does not match its range");
				break;
			}
		}
	}
	if (r == 0 && at != sc->body_size)
		r = bad("bytes after the last entry");
	/* every directory's children must reach its GOODBYE, with as many
	 * GOODBYE items as children */
	for (size_t i = 0; r == 0 && i < sc->n; i++) {
		const struct entry *e = &sc->e[i];
		if (e->meta_size_delta && (cursor[i] != e->goodbye_offset ||
		                           (e->end_offset - e->goodbye_offset - GB_MIN) / GB_ITEM != e->n_kids))
			r = bad("children do not tile their directory");
	}
	free(cursor);
	if (r < 0)
		return r;
	/* children arrays, in archive order = name order (checked) */
	sc->kids = malloc(sc->n * sizeof(*sc->kids));
	if (!sc->kids)
		return -ENOMEM;
	uint32_t next = 0;
	for (size_t i = 0; i < sc->n; i++) {
		sc->e[i].first_kid = next;
		next += sc->e[i].n_kids;
		sc->e[i].n_kids = 0;
	}
	for (size_t i = 1; i < sc->n; i++) {
		struct entry *p = &sc->e[sc->e[i].parent];
		if (p->n_kids > 0) {
			const struct entry *prev = &sc->e[sc->kids[p->first_kid + p->n_kids - 1]];
			if (name_cmp((const char *)b + prev->name_off, prev->name_len, (const char *)b + sc->e[i].name_off,
			             sc->e[i].name_len) >= 0)
				return bad("names not in order");
		}
		sc->kids[p->first_kid + p->n_kids++] = (uint32_t)i;
	}
	return 0;
}

int ca_sidecar_parse(const void *data, size_t size, const uint8_t *index_digest, uint64_t archive_size,
                     struct ca_sidecar **ret)
{
	const uint8_t *p = data;
	uint64_t n, body;
	uint8_t sum[CA_CHUNK_ID_SIZE];
	int r = parse_header(p, size, index_digest, archive_size, &n, &body);
	if (r < 0)
		return r;
	struct ca_sidecar *sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	sc->n = (size_t)n;
	sc->body_size = (size_t)body;
	sc->archive_size = ca_le64_read(p + 48);
	sc->flags = ca_le64_read(p + 56);
	sc->body = malloc(body ? body : 1);
	sc->e = calloc(sc->n, sizeof(*sc->e));
	if (!sc->body || !sc->e) {
		r = -ENOMEM;
		goto fail;
	}
	r = decompress(p + CA_SIDECAR_HEADER_SIZE, size - CA_SIDECAR_HEADER_SIZE, sc->body, sc->body_size);
	if (r < 0)
		goto fail;
	r = sha(p, CHECKSUMMED, sc->body, sc->body_size, sum);
	if (r < 0)
		goto fail;
	if (memcmp(sum, p + CHECKSUMMED, sizeof(sum)) != 0) {
		r = bad("checksum mismatch");
		goto fail;
	}
	r = parse_entries(sc);
	if (r < 0)
		goto fail;
	*ret = sc;
	return 0;
fail:
	ca_sidecar_free(sc);
	return r;
}

/* ---- building ---- */

struct builder {
	const struct ca_catar_source *src;
	struct ca_catar_ra *ra;
	struct ca_buf body;
	uint64_t n;
	uint8_t *meta;
	size_t meta_cap;
};

/* Append one entry's record to body: meta_len bytes of metadata, of
 * which the first have are at meta (the rest zeros, filled in later);
 * *ret_pos (may be NULL) gets where the record starts. */
static int append_record(struct ca_buf *body, uint64_t n, uint64_t entry_off, uint64_t end_off, uint64_t gb_off,
                         uint32_t parent, const char *name, const void *meta, size_t have, size_t meta_len,
                         size_t *ret_pos)
{
	size_t name_len = strlen(name);
	uint8_t fixed[REC_FIXED];
	if (name_len > CA_FORMAT_NAME_MAX || meta_len > CA_CATAR_META_MAX || n >= UINT32_MAX)
		return -EBADMSG;
	if (ret_pos)
		*ret_pos = body->size;
	ca_le64_write(fixed, entry_off);
	ca_le64_write(fixed + 8, end_off);
	ca_le64_write(fixed + 16, gb_off);
	put32(fixed + 24, parent);
	put32(fixed + 28, (uint32_t)meta_len);
	put16(fixed + 32, (uint16_t)name_len);
	int r = ca_buf_append(body, fixed, sizeof(fixed), CA_SIDECAR_BODY_MAX);
	if (r == 0)
		r = ca_buf_append(body, name, name_len + 1, CA_SIDECAR_BODY_MAX);
	if (r == 0)
		r = ca_buf_append(body, meta, have, CA_SIDECAR_BODY_MAX);
	if (r == 0 && have < meta_len && (r = ca_buf_reserve(body, body->size + meta_len - have, CA_SIDECAR_BODY_MAX)) == 0) {
		memset(body->data + body->size, 0, meta_len - have);
		body->size += meta_len - have;
	}
	if (r == -EFBIG)
		ca_log_error("the archive's metadata exceeds %zu MiB: no sidecar", CA_SIDECAR_BODY_MAX >> 20);
	return r;
}

static int add_entry(struct builder *b, const struct ca_catar_node *n, uint32_t parent, const char *name)
{
	size_t meta_len = n->meta_size + (S_ISDIR(n->mode) ? HDR : 0);
	if (strlen(name) > CA_FORMAT_NAME_MAX || meta_len > CA_CATAR_META_MAX || b->n >= UINT32_MAX)
		return -EBADMSG;
	if (meta_len > b->meta_cap) {
		uint8_t *m = realloc(b->meta, meta_len);
		if (!m)
			return -ENOMEM;
		b->meta = m;
		b->meta_cap = meta_len;
	}
	/* the entry's own bytes again (from the chunk LRU): the sidecar holds
	 * exactly what the archive does */
	ssize_t k = b->src->read(b->src->userdata, b->meta, meta_len, n->entry_offset);
	if (k < 0)
		return (int)k;
	if ((size_t)k != meta_len)
		return -EBADMSG;
	int r = append_record(&b->body, b->n, n->entry_offset, n->end_offset, S_ISDIR(n->mode) ? n->goodbye_offset : 0,
	                      parent, name, b->meta, meta_len, meta_len, NULL);
	b->n++;
	return r;
}

static int walk(struct builder *b, const struct ca_catar_node *dir, uint32_t self, unsigned depth)
{
	struct ca_catar_child *c = NULL;
	size_t n = 0;
	char prev[CA_FORMAT_NAME_MAX + 1] = "";
	if (depth > 4096)
		return -EBADMSG;
	int r = ca_catar_ra_list(b->ra, dir, &c, &n);
	if (r < 0)
		return r;
	ca_catar_ra_prefetch_children(b->ra, c, n);
	for (size_t i = 0; i < n && r == 0; i++) {
		struct ca_catar_ra_node *rn;
		r = ca_catar_ra_load_child(b->ra, &c[i], &rn);
		if (r < 0)
			break;
		const struct ca_catar_node *cn = ca_catar_ra_node_get(rn);
		if (i > 0 && strcmp(prev, cn->name) >= 0) {
			ca_log_error("%s: names in a directory are not in order: no sidecar for this archive", cn->name);
			r = -EBADMSG;
		}
		snprintf(prev, sizeof(prev), "%s", cn->name);
		uint32_t me = (uint32_t)b->n;
		if (r == 0)
			r = add_entry(b, cn, self, cn->name);
		if (r == 0 && S_ISDIR(cn->mode))
			r = walk(b, cn, me, depth + 1);
		ca_catar_ra_node_unref(rn);
	}
	free(c);
	return r;
}

/* The file: header, then body compressed; out gets its bytes. */
static int seal(const struct ca_buf *body, uint64_t n, uint64_t archive_size, uint64_t flags,
                const uint8_t index_digest[CA_CHUNK_ID_SIZE], struct ca_buf *out)
{
	uint8_t hdr[CA_SIDECAR_HEADER_SIZE] = { 0 };
	memcpy(hdr, MAGIC, 8);
	put32(hdr + 8, SC_VERSION);
	put32(hdr + 12, CA_SIDECAR_HEADER_SIZE);
	memcpy(hdr + 16, index_digest, CA_CHUNK_ID_SIZE);
	ca_le64_write(hdr + 48, archive_size);
	ca_le64_write(hdr + 56, flags);
	ca_le64_write(hdr + 64, n);
	ca_le64_write(hdr + 72, body->size);
	size_t bound = ZSTD_compressBound(body->size);
	int r = ca_buf_reserve(out, CA_SIDECAR_HEADER_SIZE + bound, CA_SIDECAR_HEADER_SIZE + bound);
	if (r < 0)
		return r;
	size_t k = ZSTD_compress(out->data + CA_SIDECAR_HEADER_SIZE, bound, body->data ? (void *)body->data : (void *)"",
	                         body->size, ZSTD_LEVEL);
	if (ZSTD_isError(k))
		return ca_log_error_errno(EIO, "zstd: %s", ZSTD_getErrorName(k));
	ca_le64_write(hdr + 80, k);
	r = sha(hdr, CHECKSUMMED, body->data, body->size, hdr + CHECKSUMMED);
	if (r < 0)
		return r;
	memcpy(out->data, hdr, sizeof(hdr));
	out->size = CA_SIDECAR_HEADER_SIZE + k;
	return 0;
}

int ca_sidecar_build(const struct ca_catar_source *src, const uint8_t index_digest[CA_CHUNK_ID_SIZE],
                     struct ca_buf *out)
{
	struct builder b = { .src = src };
	struct ca_catar_ra_node *root = NULL;
	int r = ca_catar_ra_open(src, &b.ra);
	if (r == 0)
		r = ca_catar_ra_root(b.ra, &root);
	if (r == 0)
		r = add_entry(&b, ca_catar_ra_node_get(root), 0, "");
	if (r == 0)
		r = walk(&b, ca_catar_ra_node_get(root), 0, 0);
	if (r == 0)
		r = seal(&b.body, b.n, ca_catar_ra_size(b.ra), ca_catar_ra_node_get(root)->feature_flags, index_digest, out);
	ca_catar_ra_node_unref(root);
	ca_catar_ra_free(b.ra);
	ca_buf_release(&b.body);
	free(b.meta);
	return r;
}

char *ca_sidecar_name_for(const char *index)
{
	return ca_location_beside(index, CA_SIDECAR_SUFFIX);
}

int ca_sidecar_write(const char *path, const void *data, size_t size, unsigned mode)
{
	return ca_atomic_file_write(path, (mode_t)(mode & 0666), data, size);
}

/* ---- make's hook ---- */

static ssize_t blob_read(void *userdata, void *buf, size_t len, uint64_t off)
{
	return ca_blob_read(userdata, buf, len, off);
}

/* The sidecar's bytes as the file beside the index at index_path, with
 * the index's mode (a private image keeps a private sidecar). */
static int write_beside(const char *index_path, const struct ca_buf *out)
{
	struct stat st;
	char *name = ca_sidecar_name_for(index_path);
	if (!name)
		return -ENOMEM;
	int r = ca_sidecar_write(name, out->data, out->size, stat(index_path, &st) == 0 ? st.st_mode : 0644);
	free(name);
	return r;
}

int ca_sidecar_make_local(const char *index_path, const char *store)
{
	struct ca_index *idx = NULL;
	struct ca_store *st = NULL;
	struct ca_chunksrc *src = NULL;
	struct ca_blob *blob = NULL;
	struct ca_buf out = CA_BUF_INIT;
	char *def = NULL;
	uint8_t digest[CA_CHUNK_ID_SIZE];
	size_t isize;
	int r = ca_index_open(index_path, &idx);
	if (r < 0)
		goto out;
	if (!store && !(store = def = ca_location_default_store(index_path))) {
		r = -ENOMEM;
		goto out;
	}
	r = ca_storeconf_open_store(NULL, store, &st); /* an encrypted store too (logs) */
	if (r < 0)
		goto out;
	r = ca_chunksrc_new(ca_digest_type_from_flags(ca_index_feature_flags(idx)), READBACK_LRU, &src);
	if (r < 0) {
		ca_store_free(st);
		goto out;
	}
	r = ca_chunksrc_add_store(src, st); /* owns st, even on failure */
	if (r < 0)
		goto out;
	r = ca_blob_new(idx, src, &blob);
	if (r < 0)
		goto out;
	const void *bytes = ca_index_data(idx, &isize);
	r = ca_sidecar_index_digest(bytes, isize, digest);
	if (r < 0)
		goto out;
	struct ca_catar_source cs = { .read = blob_read, .userdata = blob, .size = ca_blob_size(blob),
		                      .index_flags = ca_index_feature_flags(idx) };
	r = ca_sidecar_build(&cs, digest, &out);
	if (r == 0)
		r = write_beside(index_path, &out);
out:
	if (r < 0)
		ca_log_error_errno(r, "%s: metadata sidecar", index_path);
	ca_buf_release(&out);
	ca_blob_free(blob);
	ca_chunksrc_free(src);
	ca_index_free(idx);
	free(def);
	return r;
}

/* ---- building from the encoder's stream ---- */

/* A node told but not ended yet: an ancestor of what comes next. */
struct open_node {
	size_t rec_pos;  /* its record in the body */
	size_t hdr_pos;  /* a directory's 16 bytes after its metadata; SIZE_MAX: written */
	uint32_t index;
	bool dir;
};

struct ca_sidecar_stream {
	struct ca_buf body;
	uint64_t n, flags;
	struct open_node *open;
	size_t depth, cap;
	int err; /* the first; then everything is ignored */
};

/* The header that follows a directory's metadata in the archive. */
static void fill_header(struct ca_sidecar_stream *s, struct open_node *o, uint64_t size, uint64_t type)
{
	if (o->hdr_pos == SIZE_MAX)
		return;
	ca_le64_write(s->body.data + o->hdr_pos, size);
	ca_le64_write(s->body.data + o->hdr_pos + 8, type);
	o->hdr_pos = SIZE_MAX;
}

static void stream_node(void *userdata, uint64_t entry_off, const char *name, const void *rec, size_t n, bool dir)
{
	struct ca_sidecar_stream *s = userdata;
	struct open_node *parent = s->depth ? &s->open[s->depth - 1] : NULL;
	size_t pos;
	if (s->err)
		return;
	if (!name)
		name = "";
	/* what the read-back refuses, refused alike: the walk's depth bound, a
	 * root that is no ENTRY */
	if ((dir && s->depth > 4096) || (!parent && (s->n != 0 || n < sizeof(struct ca_format_entry)))) {
		s->err = -EBADMSG;
		return;
	}
	if (parent) /* the child's FILENAME: its header is what followed the parent's metadata */
		fill_header(s, parent, HDR + strlen(name) + 1, CA_FORMAT_FILENAME);
	else
		s->flags = ca_le64_read((const uint8_t *)rec + 16);
	if (s->depth == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct open_node *v = realloc(s->open, cap * sizeof(*v));
		if (!v) {
			s->err = -ENOMEM;
			return;
		}
		s->open = v;
		s->cap = cap;
	}
	int r = append_record(&s->body, s->n, entry_off, 0, 0, parent ? parent->index : 0, name, rec, n,
	                      n + (dir ? HDR : 0), &pos);
	if (r < 0) {
		s->err = r;
		return;
	}
	s->open[s->depth++] = (struct open_node){ .rec_pos = pos, .hdr_pos = dir ? s->body.size - HDR : SIZE_MAX,
		                                  .index = (uint32_t)s->n, .dir = dir };
	s->n++;
}

static void stream_end(void *userdata, uint64_t goodbye_off, uint64_t end)
{
	struct ca_sidecar_stream *s = userdata;
	if (s->err)
		return;
	if (s->depth == 0) {
		s->err = -EBADMSG;
		return;
	}
	struct open_node *o = &s->open[--s->depth];
	if (o->dir) /* no child was stored: the GOODBYE follows the metadata */
		fill_header(s, o, end - goodbye_off, CA_FORMAT_GOODBYE);
	ca_le64_write(s->body.data + o->rec_pos + 8, end);
	ca_le64_write(s->body.data + o->rec_pos + 16, o->dir ? goodbye_off : 0);
}

int ca_sidecar_stream_new(struct ca_sidecar_stream **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void ca_sidecar_stream_observer(struct ca_sidecar_stream *s, struct ca_catar_enc_observer *ret)
{
	*ret = (struct ca_catar_enc_observer){ .node = stream_node, .end = stream_end, .userdata = s };
}

int ca_sidecar_stream_finish(struct ca_sidecar_stream *s, const uint8_t index_digest[CA_CHUNK_ID_SIZE],
                             uint64_t archive_size, struct ca_buf *out)
{
	if (s->err)
		return s->err;
	if (s->n == 0 || s->depth != 0)
		return -EBADMSG; /* not a whole archive */
	return seal(&s->body, s->n, archive_size, s->flags, index_digest, out);
}

void ca_sidecar_stream_free(struct ca_sidecar_stream *s)
{
	if (!s)
		return;
	ca_buf_release(&s->body);
	free(s->open);
	free(s);
}

int ca_sidecar_stream_write_local(struct ca_sidecar_stream *s, const char *index_path, uint64_t archive_size)
{
	struct ca_index *idx = NULL;
	struct ca_buf out = CA_BUF_INIT;
	uint8_t digest[CA_CHUNK_ID_SIZE];
	size_t isize;
	int r = ca_index_open(index_path, &idx);
	if (r < 0)
		goto out;
	const void *bytes = ca_index_data(idx, &isize);
	r = ca_sidecar_index_digest(bytes, isize, digest);
	if (r == 0)
		r = ca_sidecar_stream_finish(s, digest, archive_size, &out);
	if (r == 0)
		r = write_beside(index_path, &out);
out:
	if (r < 0)
		ca_log_error_errno(r, "%s: metadata sidecar", index_path);
	ca_buf_release(&out);
	ca_index_free(idx);
	return r;
}
