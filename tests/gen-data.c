/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gen-data - deterministic test data on stdout, fast enough for GiBs.
 *
 *   gen-data SIZE SEED [MODE]      SIZE may end in K, M or G (powers of 1024)
 *
 * MODE:
 *   random  (default) the xorshift32 byte stream of the format reference,
 *           section 12: x ^= x<<13; x ^= x>>17; x ^= x<<5; emit x & 0xff
 *           (tests/unit/testdata.h: the unit tests' generator, the only
 *           one). `gen-data 4M 1` is the reference blob.
 *   zeros   all zero bytes (SEED unused)
 *   text    words and lines from a small vocabulary: compressible, and
 *           content-defined cuts still happen
 *   mixed   segments of 64 KiB..2 MiB, each one of: random (35%), text
 *           (30%), a zero run (15%), or a repeat of an earlier segment (20%,
 *           so chunks dedup); the kinds an image of a disk or a tree holds
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testdata.h"

#define BUF (1u << 20)

static uint64_t parse_size(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return UINT64_MAX;
	switch (*end) {
	case 'K': v <<= 10, end++; break;
	case 'M': v <<= 20, end++; break;
	case 'G': v <<= 30, end++; break;
	}
	return *end ? UINT64_MAX : v;
}

/* every pseudo-random choice and byte comes from testdata.h */
static uint32_t xs32(uint32_t *x)
{
	return testdata_rand(x);
}

static const char *const words[] = {
	"the ", "chunk ", "store ", "index ", "of ", "a ", "blob ", "and ", "mount ", "file ", "directory ",
	"casync ", "zstd ", "offset ", "size ", "to ", "is ", "in ", "read ", "write ", "image ", "block ",
	"seed ", "digest ", "0x1f ", "42 ", "-- ", "= ", "{ ", "} ", "return ", "int ",
};

/* A segment's bytes are a function of (kind, seed, length) only, so a
 * repeat regenerates an earlier one exactly. */
enum kind { RANDOM, TEXT, ZEROS };

struct segment {
	enum kind kind;
	uint64_t seed, len;
};

struct gen {
	struct segment cur;
	uint64_t pos; /* within cur */
	uint32_t rnd; /* random: state */
	uint32_t wst; /* text: word choice state */
	const char *word;
};

static void seg_start(struct gen *g, struct segment s)
{
	g->cur = s;
	g->pos = 0;
	g->rnd = (uint32_t)s.seed | 1;
	g->wst = (uint32_t)(s.seed * 2654435761u) | 1;
	g->word = "";
}

/* fill up to n bytes of the current segment; returns how many */
static size_t seg_fill(struct gen *g, uint8_t *p, size_t n)
{
	uint64_t left = g->cur.len - g->pos;
	if (n > left)
		n = (size_t)left;
	switch (g->cur.kind) {
	case ZEROS:
		memset(p, 0, n);
		break;
	case RANDOM:
		testdata_fill(&g->rnd, p, n);
		break;
	case TEXT:
		for (size_t i = 0; i < n; i++) {
			if (!*g->word) {
				uint32_t r = xs32(&g->wst);
				g->word = (r & 0x1f) == 0 ? "\n" : words[(r >> 5) % (sizeof(words) / sizeof(words[0]))];
			}
			p[i] = (uint8_t)*g->word++;
		}
		break;
	}
	g->pos += n;
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: gen-data SIZE SEED [random|zeros|text|mixed]\n");
		return 2;
	}
	uint64_t size = parse_size(argv[1]), seed = parse_size(argv[2]);
	const char *mode = argc == 4 ? argv[3] : "random";
	if (size == UINT64_MAX || seed > UINT32_MAX) {
		fprintf(stderr, "gen-data: bad SIZE or SEED\n");
		return 2;
	}
	if (strcmp(mode, "random") && strcmp(mode, "zeros") && strcmp(mode, "text") && strcmp(mode, "mixed")) {
		fprintf(stderr, "gen-data: unknown mode '%s'\n", mode);
		return 2;
	}
	uint8_t *buf = malloc(BUF);
	if (!buf)
		return 1;

	uint32_t x = seed ? (uint32_t)seed : 1;
	struct gen g;
	struct segment hist[64]; /* recent segments, for repeats */
	unsigned nhist = 0;
	uint32_t plan = (uint32_t)(seed * 7919 + 17) | 1;
	if (!strcmp(mode, "text"))
		seg_start(&g, (struct segment){ TEXT, seed, UINT64_MAX });
	else
		seg_start(&g, (struct segment){ ZEROS, 0, 0 });

	uint64_t done = 0;
	while (done < size) {
		size_t n = size - done < BUF ? (size_t)(size - done) : BUF;
		if (!strcmp(mode, "random")) {
			testdata_fill(&x, buf, n);
		} else if (!strcmp(mode, "zeros")) {
			memset(buf, 0, n);
		} else {
			size_t k = 0;
			while (k < n) {
				if (g.pos == g.cur.len) { /* mixed: next segment */
					struct segment s;
					uint32_t r = xs32(&plan) % 100;
					if (r < 20 && nhist > 0) {
						s = hist[xs32(&plan) % nhist];
					} else {
						s.kind = r < 55 ? RANDOM : r < 85 ? TEXT : ZEROS;
						s.seed = xs32(&plan);
						s.len = 65536 + xs32(&plan) % (2u << 20);
					}
					if (nhist < 64)
						hist[nhist++] = s;
					else
						hist[xs32(&plan) % 64] = s;
					seg_start(&g, s);
				}
				k += seg_fill(&g, buf + k, n - k);
			}
		}
		if (fwrite(buf, 1, n, stdout) != n) {
			perror("gen-data");
			free(buf);
			return 1;
		}
		done += n;
	}
	free(buf);
	if (fflush(stdout) != 0) {
		perror("gen-data");
		return 1;
	}
	return 0;
}
