/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* buf.c - growable capped byte buffer. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"

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

int ca_buf_read_fd(struct ca_buf *b, int fd, size_t limit)
{
	for (;;) {
		/* room for one byte past the limit: that byte tells a file that
		 * is larger than the limit from one that ends there */
		int r = b->size < b->cap ? 0 : ca_buf_reserve(b, b->size + 1, limit + 1);
		if (r < 0)
			return r;
		ssize_t k = read(fd, b->data + b->size, b->cap - b->size);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return 0;
		b->size += (size_t)k;
		if (b->size > limit)
			return -EFBIG;
	}
}

int ca_buf_read_file(struct ca_buf *b, const char *path, int oflags, size_t limit)
{
	struct stat st;
	int r = 0, fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | oflags);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	else if ((uint64_t)st.st_size > limit - (limit < b->size ? limit : b->size))
		r = -EFBIG;
	else
		r = ca_buf_reserve(b, b->size + (size_t)st.st_size + 1, limit + 1);
	if (r == 0)
		r = ca_buf_read_fd(b, fd, limit);
	close(fd);
	return r;
}

void ca_buf_release(struct ca_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->size = b->cap = 0;
}
