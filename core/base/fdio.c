/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fdio.c - read/write loops. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/fdio.h"

/* write (at the file position) or pwrite (at off) all n bytes; EINTR is
 * retried */
static int write_loop(int fd, const void *p, size_t n, bool at_off, uint64_t off)
{
	const uint8_t *q = p;
	while (n > 0) {
		ssize_t k = at_off ? pwrite(fd, q, n, (off_t)off) : write(fd, q, n);
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

int ca_write_all(int fd, const void *p, size_t n)
{
	return write_loop(fd, p, n, false, 0);
}

int ca_pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
	return write_loop(fd, p, n, true, off);
}

/* read (at the file position) or pread (at off) until n bytes, the end or
 * an error; EINTR is retried */
static ssize_t read_loop(int fd, void *p, size_t n, bool at_off, uint64_t off)
{
	uint8_t *q = p;
	size_t done = 0;
	while (done < n) {
		ssize_t k = at_off ? pread(fd, q + done, n - done, (off_t)(off + done)) : read(fd, q + done, n - done);
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

ssize_t ca_read_full(int fd, void *p, size_t n)
{
	return read_loop(fd, p, n, false, 0);
}

ssize_t ca_pread_full(int fd, void *p, size_t n, uint64_t off)
{
	return read_loop(fd, p, n, true, off);
}

#define SPARSE_BLOCK 4096

static bool block_zero(const uint8_t *p, size_t n)
{
	return p[0] == 0 && !memcmp(p, p + 1, n - 1);
}

/* at the file offset (seq) or at off */
static int put(int fd, const uint8_t *p, size_t n, uint64_t off, bool seq)
{
	return seq ? ca_write_all(fd, p, n) : ca_pwrite_all(fd, p, n, off);
}

static int write_sparse(int fd, const void *p, size_t n, uint64_t off, bool seq)
{
	const uint8_t *b = p;
	size_t i = 0, data = 0; /* [data, i): bytes not written yet */
	int r;
	while (i < n) {
		size_t len = SPARSE_BLOCK - (size_t)((off + i) % SPARSE_BLOCK);
		if (len > n - i)
			len = n - i;
		/* a block's zeros split over two calls are skipped in both */
		if (block_zero(b + i, len)) {
			if (i > data && (r = put(fd, b + data, i - data, off + data, seq)) < 0)
				return r;
			if (seq && lseek(fd, (off_t)len, SEEK_CUR) < 0)
				return -errno;
			data = i + len;
		}
		i += len;
	}
	return n > data ? put(fd, b + data, n - data, off + data, seq) : 0;
}

int ca_write_sparse(int fd, const void *p, size_t n, uint64_t off)
{
	return write_sparse(fd, p, n, off, true);
}

int ca_pwrite_sparse(int fd, const void *p, size_t n, uint64_t off)
{
	return write_sparse(fd, p, n, off, false);
}

/* pwritev of out[0..n) at off, retrying short writes; out is consumed */
static int pwritev_all(int fd, struct iovec *out, size_t n, uint64_t off)
{
	while (n > 0) {
		ssize_t k = pwritev(fd, out, (int)n, (off_t)off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EIO;
		off += (uint64_t)k;
		while (n > 0 && (size_t)k >= out->iov_len) {
			k -= (ssize_t)out->iov_len;
			out++;
			n--;
		}
		if (n > 0) {
			out->iov_base = (uint8_t *)out->iov_base + k;
			out->iov_len -= (size_t)k;
		}
	}
	return 0;
}

#define GATHER_MAX 64 /* below IOV_MAX (1024): a stack array */

int ca_pwritev_sparse(int fd, const struct iovec *iov, size_t n, uint64_t off, bool holes)
{
	struct iovec out[GATHER_MAX];
	size_t n_out = 0;
	uint64_t out_off = off, pos = off; /* out starts at out_off; pos: the next byte's offset */
	int r = 0;
	for (size_t k = 0; k < n && r == 0; k++) {
		const uint8_t *b = iov[k].iov_base;
		size_t len = iov[k].iov_len, i = 0;
		while (i < len && r == 0) {
			/* the data run from i: up to the next zero block (whole blocks checked, as write_sparse) */
			size_t run = i;
			while (run < len) {
				size_t blk = SPARSE_BLOCK - (size_t)((pos + (run - i)) % SPARSE_BLOCK);
				if (blk > len - run)
					blk = len - run;
				if (holes && block_zero(b + run, blk))
					break;
				run += blk;
			}
			if (run > i) {
				if (n_out == GATHER_MAX) {
					r = pwritev_all(fd, out, n_out, out_off);
					n_out = 0;
				}
				if (n_out == 0)
					out_off = pos;
				out[n_out++] = (struct iovec){ .iov_base = (void *)(b + i), .iov_len = run - i };
				pos += run - i;
				i = run;
			}
			if (i < len && r == 0) { /* a zero block: flush what is gathered, skip it */
				size_t blk = SPARSE_BLOCK - (size_t)(pos % SPARSE_BLOCK);
				if (blk > len - i)
					blk = len - i;
				if (n_out)
					r = pwritev_all(fd, out, n_out, out_off);
				n_out = 0;
				pos += blk;
				i += blk;
			}
		}
	}
	if (r == 0 && n_out)
		r = pwritev_all(fd, out, n_out, out_off);
	return r;
}

bool ca_sparse_ends_in_hole(const void *p, size_t n, uint64_t off)
{
	if (n == 0)
		return false;
	size_t in_block = (size_t)((off + n - 1) % SPARSE_BLOCK); /* bytes of the last block before its last byte */
	size_t start = in_block < n ? n - 1 - in_block : 0;
	return block_zero((const uint8_t *)p + start, n - start);
}
