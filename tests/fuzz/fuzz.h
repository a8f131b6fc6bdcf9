/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz.h - shared by the libFuzzer harnesses in tests/fuzz/ (fuzz-NAME.c).
 *
 * Each harness defines LLVMFuzzerTestOneInput and is built twice: with
 * clang -fsanitize=fuzzer (make fuzz), and as a plain program with
 * replay-main.c that runs it over its seed corpus and crash regressions
 * (make check). A harness checks properties the code promises (a clean
 * error or a consistent result) and calls fuzz_fail on a broken one, so
 * the fuzzer reports it like a crash.
 */
#ifndef CAFS_FUZZ_H
#define CAFS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define fuzz_fail(...)                                                        \
	do {                                                                  \
		fprintf(stderr, "%s:%d: property broken: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                                 \
		fputc('\n', stderr);                                          \
		abort();                                                      \
	} while (0)

#define fuzz_check(cond, ...)                                                 \
	do {                                                                  \
		if (!(cond))                                                  \
			fuzz_fail(__VA_ARGS__);                               \
	} while (0)

/* Messages are formatted at debug level (that code runs on hostile bytes
 * too) and dropped. Threads started by the library (ca_thread_create) inherit it. */
static void fuzz_log_sink(void *userdata, enum ca_log_level level, const char *line)
{
	(void)userdata;
	(void)level;
	(void)line;
}

static inline void fuzz_log_quiet(void)
{
	static struct ca_logger lg = { .fn = fuzz_log_sink, .level = CA_LOG_DEBUG };
	ca_log_use(&lg);
}

/* Little-endian integers from the front of the input, zero past its end. */
static inline uint64_t fuzz_take(const uint8_t **p, size_t *n, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++)
		if (i < *n)
			v |= (uint64_t)(*p)[i] << (8 * i);
	size_t k = bytes < *n ? bytes : *n;
	*p += k;
	*n -= k;
	return v;
}

/* A deterministic generator seeded from the input (split points, ...). */
static inline uint64_t fuzz_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* An archive in memory as a ca_catar_source read function (userdata: a
 * struct fuzz_mem). seed 0: whole reads; else short reads at points drawn
 * from it, as a network or a pipe gives them. */
struct fuzz_mem {
	const uint8_t *p;
	size_t n;
	uint64_t seed;
};

static inline ssize_t fuzz_mem_read(void *userdata, void *buf, size_t len, uint64_t off)
{
	struct fuzz_mem *rd = userdata;
	if (off >= rd->n)
		return 0;
	if (len > rd->n - off)
		len = rd->n - off;
	if (rd->seed && len > 1) {
		/* a short read: often tiny, sometimes up to the whole request */
		uint64_t x = fuzz_rand(&rd->seed);
		size_t cut = (x & 3) == 0 ? len : 1 + (size_t)((x >> 2) % ((x & 4) ? 64 : len));
		if (cut < len)
			len = cut;
	}
	memcpy(buf, rd->p + off, len);
	return (ssize_t)len;
}

static inline uint64_t fuzz_hash(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h ? h : 1;
}

#endif
