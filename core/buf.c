/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* buf.c - growable capped byte buffer. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

int ca_buf_reserve(struct ca_buf *b, size_t want, size_t limit)
{
	if (want > limit)
		return -EFBIG;
	if (want <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	if (cap > limit)
		cap = limit;
	uint8_t *p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int ca_buf_append(struct ca_buf *b, const void *p, size_t n, size_t limit)
{
	if (n > SIZE_MAX - b->size)
		return -EFBIG;
	int r = ca_buf_reserve(b, b->size + n, limit);
	if (r < 0)
		return r;
	memcpy(b->data + b->size, p, n);
	b->size += n;
	return 0;
}

void ca_buf_release(struct ca_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->size = b->cap = 0;
}
