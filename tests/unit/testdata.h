/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * testdata.h - deterministic test data: the xorshift32 stream of the format
 * reference (section 12), so that chunk boundaries and ids can be compared
 * with the values casync produced. The only generator of test data: the
 * shell tests get it from tests/gen-data, which includes this file. Also:
 * running the reference tools (casync, zstd, xz, ...) through the shell.
 */
#ifndef CAFS_TESTDATA_H
#define CAFS_TESTDATA_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "testsh.h"

/* The one pseudo-random generator of the tests (C and, through
 * tests/gen-data, shell): xorshift32, x ^= x<<13; x ^= x>>17; x ^= x<<5.
 * One step: the next x (a zero state starts from 0x9e3779b9). Also a small
 * PRNG for split sizes and the like. */
static inline uint32_t testdata_rand(uint32_t *state)
{
	uint32_t x = *state ? *state : 0x9e3779b9u;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

/* The byte stream: one byte (x & 0xff) per step, continuing from *state. */
static inline void testdata_fill(uint32_t *state, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)testdata_rand(state);
}

/* The stream of the format reference (section 12) from its start: seed 0
 * means 1. `gen-data N SEED` writes the same bytes. */
static inline void testdata_xorshift(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed ? seed : 1;
	testdata_fill(&x, p, n);
}

/* path := n bytes of the stream of seed (created or truncated; the owner
 * and mode of an existing file stay). 0 or negative errno. */
static inline int testdata_write_file(const char *path, size_t n, uint32_t seed)
{
	uint8_t buf[65536];
	uint32_t x = seed ? seed : 1;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	while (n > 0) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf);
		testdata_fill(&x, buf, k);
		for (size_t done = 0; done < k;) {
			ssize_t w = write(fd, buf + done, k - done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				int r = -errno;
				close(fd);
				return r;
			}
			done += (size_t)w;
		}
		n -= k;
	}
	return close(fd) < 0 ? -errno : 0;
}

/* The 4 MiB reference blob (malloc'd; aborts on ENOMEM: it is a test). */
#define TESTDATA_BLOB_SIZE 4194304u
static inline uint8_t *testdata_blob(void)
{
	uint8_t *p = malloc(TESTDATA_BLOB_SIZE);
	if (!p)
		abort();
	testdata_xorshift(p, TESTDATA_BLOB_SIZE, 1);
	return p;
}

/* A whole file into out (its contents replaced). 0 or negative errno. */
static inline int testdata_read_file(const char *path, struct ca_buf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	out->size = 0;
	for (;;) {
		if (ca_buf_reserve(out, out->size + 65536, SIZE_MAX) < 0)
			abort();
		ssize_t k = read(fd, out->data + out->size, out->cap - out->size);
		if (k <= 0) {
			close(fd);
			return k < 0 ? -errno : 0;
		}
		out->size += k;
	}
}

#endif
