/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* blob.c - byte ranges of an image over its index and a chunk source. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/digest.h"
#include "base/log.h"
#include "store/blob.h"

struct ca_blob {
	struct ca_index *idx;
	struct ca_chunksrc *src;
	uint64_t size;
};

int ca_blob_new(struct ca_index *idx, struct ca_chunksrc *src, struct ca_blob **ret)
{
	struct ca_blob *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->idx = idx;
	b->src = src;
	b->size = ca_index_blob_size(idx);
	*ret = b;
	return 0;
}

void ca_blob_free(struct ca_blob *b)
{
	free(b);
}

int ca_blob_chunk_errno(int r)
{
	/* readers above us use -ENOENT (no such name) and -EBADMSG (malformed
	 * archive) for themselves: a chunk's trouble must never look like them */
	if (r == -ENOENT)
		return -ENOLINK;
	if (r == -EBADMSG)
		return -EUCLEAN;
	return r;
}

int ca_blob_log_chunk_error(const char *name, const uint8_t *id, int err)
{
	const char *sep = name ? ": " : "";
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	ca_id_to_hex(id, hex);
	if (!name)
		name = "";
	if (err == -ENOENT) {
		ca_log_error("%s%schunk %s: not found in any store", name, sep, hex);
		return -ENOENT;
	}
	return ca_log_error_errno(err, "%s%schunk %s", name, sep, hex);
}

uint64_t ca_blob_size(const struct ca_blob *b) { return b->size; }
struct ca_index *ca_blob_index(const struct ca_blob *b) { return b->idx; }
struct ca_chunksrc *ca_blob_chunksrc(const struct ca_blob *b) { return b->src; }

/* Each chunk of [off, off+len) (cut to the blob), in order: hurried
 * (a reader waits for them) or read ahead (the chunk source's own
 * threads decode them, the reader only copies). */
static void each_chunk(struct ca_blob *b, uint64_t off, uint64_t len, bool hurry)
{
	if (off >= b->size || len == 0)
		return;
	if (len > b->size - off)
		len = b->size - off;
	ssize_t i = ca_index_find(b->idx, off);
	if (i < 0)
		return;
	for (size_t n = ca_index_n_chunks(b->idx); (size_t)i < n; i++) {
		uint64_t start, end;
		const uint8_t *id;
		ca_index_chunk(b->idx, i, &start, &end, &id);
		if (start >= off + len)
			break;
		if (hurry)
			ca_chunksrc_hurry(b->src, id);
		else
			ca_chunksrc_readahead(b->src, id, end - start);
	}
}

void ca_blob_readahead(struct ca_blob *b, uint64_t off, uint64_t len)
{
	each_chunk(b, off, len, false);
}

void ca_blob_hurry(struct ca_blob *b, uint64_t off, uint64_t len)
{
	each_chunk(b, off, len, true);
}

ssize_t ca_blob_read(struct ca_blob *b, void *buf, size_t len, uint64_t off)
{
	if (off >= b->size || len == 0)
		return 0;
	if (len > b->size - off)
		len = b->size - off;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	ssize_t first = ca_index_find(b->idx, off);
	if (first < 0)
		return first;

	/* a range over several chunks: let them all be fetched at once */
	uint64_t fstart, fend;
	ca_index_chunk(b->idx, first, &fstart, &fend, NULL);
	if (off + len > fend)
		ca_blob_readahead(b, fend, off + len - fend);
	if (off + len > fend) /* this read waits for them in turn: all downloads at once */
		ca_blob_hurry(b, fend, off + len - fend);

	uint8_t *out = buf;
	size_t done = 0;
	for (size_t i = first; done < len; i++) {
		uint64_t start, end;
		const uint8_t *id;
		const struct ca_chunk *c;
		ca_index_chunk(b->idx, i, &start, &end, &id);
		int r = ca_chunksrc_get(b->src, id, end - start, &c);
		if (r < 0)
			return ca_blob_chunk_errno(r);
		uint64_t pos = off + done;
		size_t k = end - pos < len - done ? (size_t)(end - pos) : len - done;
		memcpy(out + done, c->data + (pos - start), k);
		ca_chunksrc_put(b->src, c);
		done += k;
	}
	return (ssize_t)done;
}

void ca_blob_put_spans(struct ca_blob *b, struct ca_blob_span *spans, size_t n)
{
	for (size_t i = 0; spans && i < n; i++)
		ca_chunksrc_put(b->src, spans[i].chunk);
	free(spans);
}

int ca_blob_get_spans(struct ca_blob *b, uint64_t off, size_t len, struct ca_blob_span **ret_spans, size_t *ret_n)
{
	struct ca_blob_span *spans = NULL;
	size_t n = 0;
	int r = 0;
	*ret_spans = NULL;
	*ret_n = 0;
	if (off >= b->size || len == 0)
		return 0;
	if (len > b->size - off)
		len = b->size - off;
	ssize_t first = ca_index_find(b->idx, off), last = ca_index_find(b->idx, off + len - 1);
	if (first < 0 || last < first)
		return first < 0 ? (int)first : last < 0 ? (int)last : -EBADMSG;
	spans = calloc((size_t)(last - first + 1), sizeof(*spans));
	if (!spans)
		return -ENOMEM;
	uint64_t fstart, fend;
	ca_index_chunk(b->idx, first, &fstart, &fend, NULL);
	if (off + len > fend)
		ca_blob_readahead(b, fend, off + len - fend);
	if (off + len > fend) /* this read waits for them in turn: all downloads at once */
		ca_blob_hurry(b, fend, off + len - fend);
	for (ssize_t i = first; i <= last; i++) {
		uint64_t start, end;
		const uint8_t *id;
		ca_index_chunk(b->idx, i, &start, &end, &id);
		r = ca_chunksrc_get(b->src, id, end - start, &spans[n].chunk);
		if (r < 0) {
			r = ca_blob_chunk_errno(r);
			goto fail;
		}
		n++;
		/* a chunk the LRU kept from another index entry of the same id
		 * but another size (a lying index) must not be read past */
		if (spans[n - 1].chunk->size != end - start) {
			r = -EUCLEAN;
			goto fail;
		}
		uint64_t from = off > start ? off : start, to = off + len < end ? off + len : end;
		spans[n - 1].data = spans[n - 1].chunk->data + (from - start);
		spans[n - 1].len = (size_t)(to - from);
	}
	*ret_spans = spans;
	*ret_n = n;
	return 0;
fail:
	ca_blob_put_spans(b, spans, n);
	return r;
}
