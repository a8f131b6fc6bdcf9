/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * buf.h - a growable byte buffer with a hard cap, for data whose size comes
 * from untrusted input (chunk files, HTTP bodies, archive records).
 */
#ifndef CA_BUF_H
#define CA_BUF_H

#include <stddef.h>
#include <stdint.h>

struct ca_buf {
	uint8_t *data;
	size_t size; /* bytes in use */
	size_t cap;  /* bytes allocated */
};

#define CA_BUF_INIT { NULL, 0, 0 }

/* Make room for at least `want` bytes in total. -ENOMEM, or -EFBIG when
 * want exceeds limit. Contents up to size are kept. */
int ca_buf_reserve(struct ca_buf *b, size_t want, size_t limit);
/* Append n bytes, growing up to limit. */
int ca_buf_append(struct ca_buf *b, const void *p, size_t n, size_t limit);
/* Append what fd has left to read, up to limit bytes in all: -EFBIG past
 * it (a file that grows while it is read included), or -errno. */
int ca_buf_read_fd(struct ca_buf *b, int fd, size_t limit);
/* Append the whole regular file path, at most limit bytes in all: opened
 * O_NONBLOCK (a FIFO put in its place cannot block the reader) with
 * oflags added (e.g. O_NOFOLLOW); -EISDIR or -EINVAL when it is not a regular file,
 * -EFBIG past limit, -errno (-ENOENT: missing). */
int ca_buf_read_file(struct ca_buf *b, const char *path, int oflags, size_t limit);
/* Free the memory and reset to empty; accepts a zeroed buffer. */
void ca_buf_release(struct ca_buf *b);

#endif
