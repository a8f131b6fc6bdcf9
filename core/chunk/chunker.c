/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * chunker.c - buzhash content-defined chunking, casync-exact.
 *
 * A chunk ends after byte b when its length L reaches max, or when
 * L >= max(min, 48) and H(last 48 bytes) mod d == d - 1. The hash depends
 * only on the window, so the first first_test-48 bytes of a chunk are
 * skipped without hashing; the window is then filled and hashed once, and
 * rolled byte by byte from there on.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "chunk/buzhash_table.h"
#include "chunk/chunker.h"

#define W CA_CHUNKER_WINDOW_SIZE

static inline uint32_t rol32(uint32_t x, unsigned r)
{
	r &= 31;
	return r ? (x << r) | (x >> (32 - r)) : x;
}

/* casync cuts where h mod d == d - 1, i.e. where d divides h + 1. A
 * division per byte would dominate the loop, so test divisibility with one
 * multiplication (Lemire, Kaser, Kurz, "Faster remainder by direct
 * computation", 2019): for n < 2^32 and m = floor((2^64 - 1) / d) + 1,
 * d | n  <=>  n * m (mod 2^64) < m. h + 1 reaches 2^32 only for
 * h = 0xffffffff, which takes the slow path. */
static inline bool is_cut(uint32_t h, uint64_t m, uint32_t d)
{
	if (__builtin_expect(h == UINT32_MAX || m == 0, 0)) /* m == 0: d == 1 */
		return h % d == d - 1;
	return ((uint64_t)h + 1) * m < m;
}

/* The same test without the two guards, for the rolling loops (a quarter
 * of their instructions): the theorem holds for N-bit n when 64 >= N +
 * log2(d), so h + 1 = 2^32 (N = 33) is exact too for any d <= max <=
 * 2^27; and d == 1 never gets there, every chunk having been cut at its
 * first test. (Checked exhaustively for h = 2^32 - 1 and d <= 2^27.) */
static inline bool is_cut_rolling(uint32_t h, uint64_t m)
{
	return ((uint64_t)h + 1) * m < m;
}

uint32_t ca_buzhash(const uint8_t w[W])
{
	uint32_t h = 0;
	for (unsigned j = 0; j < W; j++)
		h ^= rol32(ca_buzhash_table[w[j]], W - 1 - j);
	return h;
}

uint64_t ca_chunker_discriminator(uint64_t min, uint64_t avg, uint64_t max)
{
	/* casync's empirical fit, evaluated in double and truncated */
	uint64_t d = (uint64_t)((double)avg / (-1.42888852e-7 * (double)avg + 1.33237515));
	if (d < min)
		d = min;
	if (d > max)
		d = max;
	return d;
}

int ca_chunker_init(struct ca_chunker *c, uint64_t min, uint64_t avg, uint64_t max)
{
	if (min < CA_CHUNK_SIZE_LIMIT_MIN || min > avg || avg > max || max > CA_CHUNK_SIZE_LIMIT_MAX)
		return -EINVAL;
	if (max < W && !(min == avg && avg == max))
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->min = min;
	c->avg = avg;
	c->max = max;
	c->discriminator = ca_chunker_discriminator(min, avg, max);
	if (c->discriminator == 0 || c->discriminator > UINT32_MAX)
		return -EINVAL;
	c->fastmod_m = UINT64_MAX / c->discriminator + 1;
	c->first_test = min > W ? min : W;
	return 0;
}

static size_t cut(struct ca_chunker *c, size_t consumed)
{
	c->chunk_size = 0;
	c->h = 0;
	return consumed;
}

/* Remember the last 48 bytes before the next scan position, given that the
 * window held the 48 before p and p[0..n) were just rolled in. */
static void window_advance(struct ca_chunker *c, const uint8_t *p, size_t n)
{
	if (n >= W) {
		memcpy(c->window, p + n - W, W);
	} else {
		memmove(c->window, c->window + n, W - n);
		memcpy(c->window + W - n, p, n);
	}
}

size_t ca_chunker_scan(struct ca_chunker *c, const void *data, size_t n)
{
	const uint8_t *p = data;
	size_t i = 0;

	if (c->min == c->max) { /* fixed-size mode: no hashing at all */
		uint64_t need = c->max - c->chunk_size;
		if (n >= need)
			return cut(c, need);
		c->chunk_size += n;
		return CA_CHUNKER_NO_CUT;
	}

	/* skip the bytes no cut can depend on */
	if (c->chunk_size < c->first_test - W) {
		uint64_t k = c->first_test - W - c->chunk_size;
		if (k > n)
			k = n;
		i += k;
		c->chunk_size += k;
	}

	/* fill the window up to the first testable length, then hash it */
	if (i < n && c->chunk_size < c->first_test) {
		uint64_t at = c->chunk_size - (c->first_test - W);
		uint64_t k = c->first_test - c->chunk_size;
		if (k > n - i)
			k = n - i;
		memcpy(c->window + at, p + i, k);
		i += k;
		c->chunk_size += k;
		if (c->chunk_size < c->first_test)
			return CA_CHUNKER_NO_CUT;
		c->h = ca_buzhash(c->window);
		if (c->chunk_size >= c->max || is_cut(c->h, c->fastmod_m, (uint32_t)c->discriminator))
			return cut(c, i);
	}
	if (i >= n)
		return CA_CHUNKER_NO_CUT;

	/* rolling: the window holds the 48 bytes before p + i */
	const uint8_t *base = p + i;
	size_t m = n - i, j = 0;
	uint32_t h = c->h;
	const uint64_t fm = c->fastmod_m;
	uint64_t room = c->max - c->chunk_size; /* bytes until the forced cut */
	size_t limit = m < room ? m : (size_t)room;

	for (; j < limit && j < W; j++) {
		h = rol32(h, 1) ^ rol32(ca_buzhash_table[c->window[j]], W) ^ ca_buzhash_table[base[j]];
		if (is_cut_rolling(h, fm))
			return cut(c, i + j + 1);
	}
	/* Two positions a round: the hash after the second is computed from the
	 * one before the first (rol distributes over xor), so the serial chain
	 * is one rotate and one xor per two bytes; the table terms do not
	 * depend on it. */
	for (; j + 1 < limit; j += 2) {
		uint32_t x1 = rol32(ca_buzhash_table[base[j - W]], W) ^ ca_buzhash_table[base[j]];
		uint32_t x2 = rol32(ca_buzhash_table[base[j + 1 - W]], W) ^ ca_buzhash_table[base[j + 1]];
		uint32_t h1 = rol32(h, 1) ^ x1;
		h = rol32(h, 2) ^ (rol32(x1, 1) ^ x2);
		if (is_cut_rolling(h1, fm))
			return cut(c, i + j + 1);
		if (is_cut_rolling(h, fm))
			return cut(c, i + j + 2);
	}
	for (; j < limit; j++) {
		h = rol32(h, 1) ^ (rol32(ca_buzhash_table[base[j - W]], W) ^ ca_buzhash_table[base[j]]);
		if (is_cut_rolling(h, fm))
			return cut(c, i + j + 1);
	}
	if (limit < m || (uint64_t)m == room) /* reached max */
		return cut(c, i + limit);

	c->h = h;
	c->chunk_size += m;
	window_advance(c, base, m);
	return CA_CHUNKER_NO_CUT;
}

static int parse_size(const char *s, uint64_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	uint64_t mul = 1;
	if (*end == 'K' || *end == 'k')
		mul = 1024, end++;
	else if (*end == 'M')
		mul = 1024 * 1024, end++;
	else if (*end == 'G')
		mul = 1024 * 1024 * 1024, end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -EINVAL;
	*ret = v * mul;
	return 0;
}

int ca_chunk_size_parse(const char *s, uint64_t *ret_min, uint64_t *ret_avg, uint64_t *ret_max)
{
	uint64_t min, avg, max;
	struct ca_chunker probe;

	if (!strcmp(s, "auto") || !strcmp(s, "default")) {
		avg = CA_CHUNK_SIZE_AVG_DEFAULT;
		min = avg / 4;
		max = avg * 4;
	} else if (strchr(s, ':')) {
		char a[32], b[32], c[32];
		const char *p1 = strchr(s, ':'), *p2 = strchr(p1 + 1, ':');
		if (!p2 || strchr(p2 + 1, ':') || p1 - s >= 32 || p2 - p1 - 1 >= 32 || strlen(p2 + 1) >= 32)
			return -EINVAL;
		memcpy(a, s, p1 - s), a[p1 - s] = 0;
		memcpy(b, p1 + 1, p2 - p1 - 1), b[p2 - p1 - 1] = 0;
		strcpy(c, p2 + 1);
		if (parse_size(a, &min) < 0 || parse_size(b, &avg) < 0 || parse_size(c, &max) < 0)
			return -EINVAL;
	} else {
		if (parse_size(s, &avg) < 0)
			return -EINVAL;
		min = avg / 4;
		if (min < 1)
			min = 1;
		max = avg > CA_CHUNK_SIZE_LIMIT_MAX / 4 ? CA_CHUNK_SIZE_LIMIT_MAX : avg * 4;
	}
	if (ca_chunker_init(&probe, min, avg, max) < 0)
		return -EINVAL;
	*ret_min = min;
	*ret_avg = avg;
	*ret_max = max;
	return 0;
}
