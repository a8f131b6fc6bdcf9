/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* blob.c - byte ranges of an image over its index and a chunk source. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "blob.h"

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

uint64_t ca_blob_size(const struct ca_blob *b) { return b->size; }
struct ca_index *ca_blob_index(const struct ca_blob *b) { return b->idx; }
struct ca_chunksrc *ca_blob_chunksrc(const struct ca_blob *b) { return b->src; }

void ca_blob_readahead(struct ca_blob *b, uint64_t off, uint64_t len)
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
		/* decoded by the chunk source's threads: the reader only copies */
		ca_chunksrc_readahead(b->src, id, end - start);
	}
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
