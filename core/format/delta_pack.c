/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * delta_pack.c - the delta pack's header and table: parse (checking every
 * field a hostile file could get wrong) and write.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "base/log.h"
#include "format/delta_pack.h"

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static int bad(const char *why)
{
	ca_log_debug("delta pack: %s", why);
	return -EBADMSG;
}

int ca_delta_header_parse(const void *data, size_t n, struct ca_delta_header *ret)
{
	const uint8_t *p = data;
	memset(ret, 0, sizeof(*ret));
	if (n < CA_DELTA_HEADER_SIZE)
		return bad("shorter than its header");
	if (memcmp(p, CA_DELTA_MAGIC, 8))
		return bad("not a delta pack (magic)");
	if (get_le32(p + 8) != CA_DELTA_VERSION)
		return bad("unknown version");
	if (get_le32(p + 12) != CA_DELTA_HEADER_SIZE)
		return bad("unknown header size");
	ret->feature_flags = get_le64(p + 16);
	memcpy(ret->from_digest, p + 24, CA_DELTA_DIGEST_SIZE);
	memcpy(ret->to_digest, p + 56, CA_DELTA_DIGEST_SIZE);
	ret->from_size = get_le64(p + 88);
	ret->to_size = get_le64(p + 96);
	ret->n_entries = get_le64(p + 104);
	ret->table_size = get_le64(p + 112);
	ret->data_size = get_le64(p + 120);
	if (ret->table_size > CA_DELTA_TABLE_MAX || ret->table_size < CA_DELTA_DIGEST_SIZE)
		return bad("table size out of range");
	if (ret->n_entries > (ret->table_size - CA_DELTA_DIGEST_SIZE) / CA_DELTA_ENTRY_SIZE)
		return bad("more entries than the table holds");
	/* and no more table than its entries can fill: a reader bounding the
	 * entries bounds the bytes it reads */
	if (ret->table_size - CA_DELTA_DIGEST_SIZE >
	    ret->n_entries * (CA_DELTA_ENTRY_SIZE + CA_DELTA_REFS_MAX * CA_DELTA_REF_SIZE))
		return bad("a table larger than its entries");
	if (ret->data_size > UINT64_MAX / 2)
		return bad("data size out of range");
	return 0;
}

void ca_delta_header_write(const struct ca_delta_header *h, uint8_t out[CA_DELTA_HEADER_SIZE])
{
	memset(out, 0, CA_DELTA_HEADER_SIZE);
	memcpy(out, CA_DELTA_MAGIC, 8);
	put_le32(out + 8, CA_DELTA_VERSION);
	put_le32(out + 12, CA_DELTA_HEADER_SIZE);
	put_le64(out + 16, h->feature_flags);
	memcpy(out + 24, h->from_digest, CA_DELTA_DIGEST_SIZE);
	memcpy(out + 56, h->to_digest, CA_DELTA_DIGEST_SIZE);
	put_le64(out + 88, h->from_size);
	put_le64(out + 96, h->to_size);
	put_le64(out + 104, h->n_entries);
	put_le64(out + 112, h->table_size);
	put_le64(out + 120, h->data_size);
}

int ca_delta_table_digest(const uint8_t hdr[CA_DELTA_HEADER_SIZE], const void *entries, size_t n,
                          uint8_t out[CA_DELTA_DIGEST_SIZE])
{
	struct ca_digest *d = NULL;
	int r = ca_digest_new(CA_DIGEST_SHA256, &d);
	if (r == 0)
		r = ca_digest_update(d, hdr, CA_DELTA_HEADER_SIZE);
	if (r == 0)
		r = ca_digest_update(d, entries, n);
	if (r == 0)
		r = ca_digest_final(d, out);
	ca_digest_free(d);
	return r;
}

size_t ca_delta_entry_write(const struct ca_delta_entry *e, uint8_t *out)
{
	memset(out, 0, CA_DELTA_ENTRY_SIZE);
	memcpy(out, e->id, CA_CHUNK_ID_SIZE);
	out[32] = e->encoding;
	out[33] = e->n_refs;
	put_le64(out + 40, e->size);
	put_le64(out + 48, e->offset);
	put_le64(out + 56, e->length);
	uint8_t *q = out + CA_DELTA_ENTRY_SIZE;
	for (unsigned i = 0; i < e->n_refs; i++, q += CA_DELTA_REF_SIZE) {
		memcpy(q, e->refs[i].id, CA_CHUNK_ID_SIZE);
		put_le64(q + 32, e->refs[i].size);
	}
	return CA_DELTA_ENTRY_SIZE + (size_t)e->n_refs * CA_DELTA_REF_SIZE;
}

static int parse_entry(const struct ca_delta_header *h, const uint8_t *p, size_t left, uint64_t size_max,
                       struct ca_delta_entry *e, size_t *ret_used)
{
	static const uint8_t zero[6];
	if (left < CA_DELTA_ENTRY_SIZE)
		return bad("table ends inside an entry");
	memset(e, 0, sizeof(*e));
	memcpy(e->id, p, CA_CHUNK_ID_SIZE);
	e->encoding = p[32];
	e->n_refs = p[33];
	e->size = get_le64(p + 40);
	e->offset = get_le64(p + 48);
	e->length = get_le64(p + 56);
	if (memcmp(p + 34, zero, sizeof(zero)))
		return bad("entry padding not zero");
	if (e->encoding == CA_DELTA_PLAIN ? e->n_refs != 0
	                                  : e->encoding != CA_DELTA_PREFIX || e->n_refs < 1 ||
	                                            e->n_refs > CA_DELTA_REFS_MAX)
		return bad("unknown encoding or reference count");
	if (e->size == 0 || e->size > size_max)
		return bad("chunk size out of range");
	if (e->length == 0 || e->offset > h->data_size || e->length > h->data_size - e->offset)
		return bad("entry's bytes outside the data");
	size_t used = CA_DELTA_ENTRY_SIZE + (size_t)e->n_refs * CA_DELTA_REF_SIZE;
	if (left < used)
		return bad("table ends inside an entry's references");
	const uint8_t *q = p + CA_DELTA_ENTRY_SIZE;
	uint64_t prefix = 0;
	for (unsigned i = 0; i < e->n_refs; i++, q += CA_DELTA_REF_SIZE) {
		memcpy(e->refs[i].id, q, CA_CHUNK_ID_SIZE);
		e->refs[i].size = get_le64(q + 32);
		if (e->refs[i].size == 0 || e->refs[i].size > size_max)
			return bad("reference size out of range");
		prefix += e->refs[i].size;
	}
	if (prefix > CA_DELTA_PREFIX_MAX)
		return bad("references larger than a prefix may be");
	*ret_used = used;
	return 0;
}

int ca_delta_table_parse(const struct ca_delta_header *h, const uint8_t hdr[CA_DELTA_HEADER_SIZE],
                         const void *table, size_t n, uint64_t size_max, struct ca_delta_entry **ret_entries)
{
	const uint8_t *p = table;
	struct ca_delta_entry *es = NULL;
	uint8_t d[CA_DELTA_DIGEST_SIZE];
	size_t pos = 0, body;
	int r;
	*ret_entries = NULL;
	if (n != h->table_size || n < CA_DELTA_DIGEST_SIZE)
		return bad("table size does not match the header");
	body = n - CA_DELTA_DIGEST_SIZE;
	/* the digest first: a table that is not the writer's is refused before
	 * any entry is believed */
	r = ca_delta_table_digest(hdr, p, body, d);
	if (r < 0)
		return r;
	if (memcmp(d, p + body, CA_DELTA_DIGEST_SIZE))
		return bad("table digest mismatch");
	es = calloc(h->n_entries ? h->n_entries : 1, sizeof(*es));
	if (!es)
		return -ENOMEM;
	uint64_t data_end = 0;
	for (uint64_t i = 0; i < h->n_entries; i++) {
		size_t used;
		r = parse_entry(h, p + pos, body - pos, size_max, &es[i], &used);
		if (r < 0)
			goto fail;
		/* the writer lays the entries' bytes out in table order; a reader
		 * that cuts the data into ranges relies on no entry beginning
		 * before the end of the one before it */
		if (es[i].offset < data_end) {
			r = bad("entries' bytes out of order or overlapping");
			goto fail;
		}
		data_end = es[i].offset + es[i].length;
		pos += used;
	}
	if (pos != body) {
		r = bad("bytes after the last entry");
		goto fail;
	}
	*ret_entries = es;
	return 0;
fail:
	free(es);
	return r;
}
