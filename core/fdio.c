/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fdio.c - read/write loops. */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include "fdio.h"

int ca_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *q = p;
	while (n > 0) {
		ssize_t k = write(fd, q, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		q += k;
		n -= k;
	}
	return 0;
}

int ca_pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
	const uint8_t *q = p;
	while (n > 0) {
		ssize_t k = pwrite(fd, q, n, (off_t)off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		q += k;
		n -= k;
		off += k;
	}
	return 0;
}

ssize_t ca_read_full(int fd, void *p, size_t n)
{
	uint8_t *q = p;
	size_t done = 0;
	while (done < n) {
		ssize_t k = read(fd, q + done, n - done);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		done += k;
	}
	return (ssize_t)done;
}

ssize_t ca_pread_full(int fd, void *p, size_t n, uint64_t off)
{
	uint8_t *q = p;
	size_t done = 0;
	while (done < n) {
		ssize_t k = pread(fd, q + done, n - done, (off_t)(off + done));
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		done += k;
	}
	return (ssize_t)done;
}
