/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-chunker.c - the chunker against casync's numbers (format reference
 * sections 2 and 12) and against a naive transcription of the boundary
 * rule that hashes every window from scratch.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "chunk/buzhash_table.h"
#include "chunk/chunker.h"
#include "base/digest.h"
#include "tap.h"
#include "testdata.h"

#define W CA_CHUNKER_WINDOW_SIZE

struct cuts {
	uint64_t *end;
	size_t n, cap;
};

static void cuts_add(struct cuts *c, uint64_t end)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 1024;
		c->end = realloc(c->end, c->cap * sizeof(uint64_t));
		if (!c->end)
			abort();
	}
	c->end[c->n++] = end;
}

static bool cuts_equal(const struct cuts *a, const struct cuts *b)
{
	return a->n == b->n && !memcmp(a->end, b->end, a->n * sizeof(uint64_t));
}

/* How to split the input into scan calls. */
struct split {
	size_t max_piece;        /* 0: one call for everything; else random 1..max_piece */
	size_t ones_lo, ones_hi; /* 1-byte calls over [ones_lo, ones_hi) */
	uint32_t seed;
};

/* Chunk p[0..n) with the chunker, fed as sp says. Returns 0 or -EINVAL (init). */
static int chunk_with(const uint8_t *p, size_t n, uint64_t min, uint64_t avg, uint64_t max, const struct split *sp,
                      struct cuts *out)
{
	struct ca_chunker c;
	uint32_t rs = sp ? sp->seed : 0;
	size_t pos = 0;
	int r = ca_chunker_init(&c, min, avg, max);
	if (r < 0)
		return r;
	while (pos < n) {
		size_t k = n - pos;
		if (sp && pos >= sp->ones_lo && pos < sp->ones_hi)
			k = 1;
		else if (sp && sp->max_piece && k > 1) {
			size_t want = 1 + testdata_rand(&rs) % sp->max_piece;
			if (want < k)
				k = want;
		}
		size_t off = 0;
		while (off < k) {
			size_t used = ca_chunker_scan(&c, p + pos + off, k - off);
			if (used == CA_CHUNKER_NO_CUT)
				break;
			if (used == 0 || used > k - off)
				return -EIO; /* broken contract; shows up as a mismatch */
			off += used;
			cuts_add(out, pos + off);
		}
		pos += k;
	}
	if (ca_chunker_pending(&c) != n - (out->n ? out->end[out->n - 1] : 0))
		return -EIO;
	if (ca_chunker_pending(&c) > 0)
		cuts_add(out, n);
	return 0;
}

/* The boundary rule of reference section 2.4, hashing each window afresh. */
static void chunk_naive(const uint8_t *p, size_t n, uint64_t min, uint64_t avg, uint64_t max, struct cuts *out)
{
	uint64_t d = ca_chunker_discriminator(min, avg, max);
	bool fixed = min == avg && avg == max;
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t len = i + 1 - start;
		bool cut = len >= max;
		if (!cut && !fixed && len >= W && len >= min)
			cut = ca_buzhash(p + i + 1 - W) % d == d - 1;
		if (cut) {
			cuts_add(out, i + 1);
			start = i + 1;
		}
	}
	if (start < n)
		cuts_add(out, n);
}

static uint32_t rol32(uint32_t x, unsigned r)
{
	r &= 31;
	return r ? (x << r) | (x >> (32 - r)) : x;
}

static void test_buzhash(const uint8_t *blob)
{
	uint8_t w[W];
	uint8_t digest[CA_CHUNK_ID_SIZE];
	char hex[65];
	struct ca_digest *d = NULL;

	memset(w, 0, W);
	check_u64(ca_buzhash(w), ==, 0x9e489e48);
	for (unsigned i = 0; i < W; i++)
		w[i] = (uint8_t)i;
	check_u64(ca_buzhash(w), ==, 0x6b67dec6);
	check_u64(ca_buzhash(blob), ==, 0xa52d2961);

	/* the whole table, as little-endian bytes, against the reference file's */
	uint8_t le[1024];
	for (unsigned i = 0; i < 256; i++) {
			le[4 * i] = (uint8_t)ca_buzhash_table[i];
			le[4 * i + 1] = (uint8_t)(ca_buzhash_table[i] >> 8);
			le[4 * i + 2] = (uint8_t)(ca_buzhash_table[i] >> 16);
			le[4 * i + 3] = (uint8_t)(ca_buzhash_table[i] >> 24);
	}
	check_int(ca_digest_new(CA_DIGEST_SHA256, &d), ==, 0);
	check_int(ca_digest_once(d, le, sizeof(le), digest), ==, 0);
	ca_id_to_hex(digest, hex);
	check_str(hex, "5b52080d38287da9d2e278466e3e0db7ec98e5e8b226f50612a56fa012b1f660");
	ca_digest_free(d);

	/* rolling identity of reference 2.3 at every offset of 64 KiB */
	unsigned bad = 0;
	uint32_t h = ca_buzhash(blob);
	for (size_t i = W; i < 65536; i++) {
		h = rol32(h, 1) ^ rol32(ca_buzhash_table[blob[i - W]], W) ^ ca_buzhash_table[blob[i]];
		if (h != ca_buzhash(blob + i + 1 - W))
			bad++;
	}
	check_int(bad, ==, 0);
}

/* Byte by byte, the chunker's running hash and window must be those of the
 * last 48 bytes at every offset once a chunk is long enough to be tested,
 * and it must cut exactly where a fresh hash says (casync's test-cachunker). */
static void test_rolling_property(const uint8_t *p, size_t n, uint64_t min, uint64_t avg, uint64_t max)
{
	struct ca_chunker c;
	unsigned bad_hash = 0, bad_window = 0, bad_cut = 0, tested = 0;
	size_t start = 0;
	check_int(ca_chunker_init(&c, min, avg, max), ==, 0);
	uint64_t d = c.discriminator;
	for (size_t i = 0; i < n; i++) {
		size_t used = ca_chunker_scan(&c, p + i, 1);
		uint64_t len = i + 1 - start;
		bool want_cut = len >= max || (len >= W && len >= min && ca_buzhash(p + i + 1 - W) % d == d - 1);
		if ((used != CA_CHUNKER_NO_CUT) != want_cut)
			bad_cut++;
		if (used != CA_CHUNKER_NO_CUT) {
			start = i + 1;
			continue;
		}
		if (len >= c.first_test) {
			tested++;
			if (c.h != ca_buzhash(p + i + 1 - W))
				bad_hash++;
			if (memcmp(c.window, p + i + 1 - W, W))
				bad_window++;
		}
	}
	check_int(bad_cut, ==, 0);
	check_int(bad_hash, ==, 0);
	check_int(bad_window, ==, 0);
	check(tested > n / 2);
}

static void test_reference_blob(const uint8_t *blob)
{
	struct cuts c = { 0 };
	check_int(chunk_with(blob, TESTDATA_BLOB_SIZE, 16384, 65536, 262144, NULL, &c), ==, 0);
	check_int(c.n, ==, 55);
	if (c.n >= 3) {
		check_u64(c.end[0], ==, 146476);
		check_u64(c.end[1], ==, 187455);
		check_u64(c.end[2], ==, 254768);
	}
	check_u64(c.n ? c.end[c.n - 1] : 0, ==, TESTDATA_BLOB_SIZE);
	free(c.end);

	static const uint64_t small[] = { 787, 1204, 1296, 1820, 2556, 2732, 2819, 3118 };
	struct cuts s = { 0 };
	check_int(chunk_with(blob, TESTDATA_BLOB_SIZE, 64, 256, 1024, NULL, &s), ==, 0);
	check_int(s.n, ==, 16565);
	check(s.n >= 8 && !memcmp(s.end, small, sizeof(small)));
	unsigned at_min = 0;
	for (size_t i = 0; i < s.n; i++)
		if (s.end[i] - (i ? s.end[i - 1] : 0) == 64)
			at_min++;
	/* casync cuts at exactly min (reference 2.4); desync cannot */
	check(at_min > 0);
	free(s.end);
}

struct params {
	uint64_t min, avg, max;
};

static const struct params param_sets[] = {
	{ 64, 256, 1024 },     { 16384, 65536, 262144 }, { 1000, 4000, 9000 }, { 48, 200, 800 },
	{ 20, 64, 300 },       { 4096, 4096, 4096 },     { 1024, 65536, 131072 }, { 100, 100, 5000 },
	{ 16, 16, 16 },        { 1, 1, 1 },              { 48, 48, 96 },
};

/* Against the naive rule, and identical cuts whatever the read splits. */
static void test_params(const char *what, const uint8_t *p, size_t n)
{
	for (size_t k = 0; k < sizeof(param_sets) / sizeof(param_sets[0]); k++) {
		const struct params *ps = &param_sets[k];
		struct cuts ref = { 0 }, one = { 0 }, rnd = { 0 }, tiny = { 0 };
		struct split random_split = { .max_piece = 70000, .ones_lo = n / 5, .ones_hi = n / 5 + 70000, .seed = 7 };
		struct split tiny_split = { .max_piece = 100, .seed = 11 };
		char msg[160];

		snprintf(msg, sizeof(msg), "%s, %llu:%llu:%llu", what, (unsigned long long)ps->min,
		         (unsigned long long)ps->avg, (unsigned long long)ps->max);
		tap_diag(msg);
		chunk_naive(p, n, ps->min, ps->avg, ps->max, &ref);
		check_int(chunk_with(p, n, ps->min, ps->avg, ps->max, NULL, &one), ==, 0);
		check_int(chunk_with(p, n, ps->min, ps->avg, ps->max, &random_split, &rnd), ==, 0);
		check_int(chunk_with(p, n, ps->min, ps->avg, ps->max, &tiny_split, &tiny), ==, 0);
		check(cuts_equal(&one, &ref));
		check(cuts_equal(&rnd, &ref));
		check(cuts_equal(&tiny, &ref));

		/* every chunk but the last within [max(min,48), max], or exactly
		 * the fixed size */
		bool fixed = ps->min == ps->avg && ps->avg == ps->max;
		uint64_t lo = fixed ? ps->min : ps->min > W ? ps->min : W;
		unsigned out_of_range = 0;
		for (size_t i = 0; i + 1 < one.n; i++) {
			uint64_t len = one.end[i] - (i ? one.end[i - 1] : 0);
			if (len < lo || len > ps->max)
				out_of_range++;
		}
		check_int(out_of_range, ==, 0);
		if (one.n)
			check(one.end[one.n - 1] - (one.n > 1 ? one.end[one.n - 2] : 0) <= ps->max);
		free(ref.end);
		free(one.end);
		free(rnd.end);
		free(tiny.end);
	}
}

static void test_edges(const uint8_t *blob)
{
	struct cuts c = { 0 };
	uint8_t *zeros = calloc(1, 1 << 20);
	if (!zeros)
		abort();

	/* empty stream: no chunk at all */
	check_int(chunk_with(blob, 0, 16384, 65536, 262144, NULL, &c), ==, 0);
	check_int(c.n, ==, 0);

	/* the last chunk may be smaller than min */
	c.n = 0;
	check_int(chunk_with(blob, 100, 16384, 65536, 262144, NULL, &c), ==, 0);
	check(c.n == 1 && c.end[0] == 100);
	c.n = 0;
	check_int(chunk_with(blob, 1, 64, 256, 1024, NULL, &c), ==, 0);
	check(c.n == 1 && c.end[0] == 1);

	/* zeros never hash to a cut with the defaults (H % d = 37425): all max */
	c.n = 0;
	check_u64(0x9e489e48u % 49535u, !=, 49535u - 1);
	check_int(chunk_with(zeros, 1 << 20, 16384, 65536, 262144, NULL, &c), ==, 0);
	check_int(c.n, ==, 4);
	check(c.n == 4 && c.end[0] == 262144 && c.end[3] == 1 << 20);

	/* fixed-size mode: exact avg-sized chunks, the remainder last */
	c.n = 0;
	check_int(chunk_with(blob, 10000, 4096, 4096, 4096, NULL, &c), ==, 0);
	check(c.n == 3 && c.end[0] == 4096 && c.end[1] == 8192 && c.end[2] == 10000);
	c.n = 0;
	check_int(chunk_with(blob, 10, 3, 3, 3, NULL, &c), ==, 0);
	check(c.n == 4 && c.end[0] == 3 && c.end[3] == 10);

	/* a chunk of exactly max ends right there, not one byte later */
	c.n = 0;
	check_int(chunk_with(zeros, 262144, 16384, 65536, 262144, NULL, &c), ==, 0);
	check(c.n == 1 && c.end[0] == 262144);

	free(c.end);
	free(zeros);
}

static void test_init_rules(void)
{
	struct ca_chunker c;
	check_int(ca_chunker_init(&c, 16384, 65536, 262144), ==, 0);
	check_u64(c.discriminator, ==, 49535);
	check_int(ca_chunker_init(&c, 0, 65536, 262144), ==, -EINVAL);
	check_int(ca_chunker_init(&c, 70000, 65536, 262144), ==, -EINVAL);
	check_int(ca_chunker_init(&c, 1, 65536, 60000), ==, -EINVAL);
	check_int(ca_chunker_init(&c, 1, 64, CA_CHUNK_SIZE_LIMIT_MAX + 1ull), ==, -EINVAL);
	check_int(ca_chunker_init(&c, 1, 64, CA_CHUNK_SIZE_LIMIT_MAX), ==, 0);
	check_int(ca_chunker_init(&c, 1, 2, 40), ==, -EINVAL); /* max < 48, not fixed */
	check_int(ca_chunker_init(&c, 40, 40, 40), ==, 0);     /* fixed: fine */
}

static void test_discriminator(void)
{
	/* reference 2.2, unclamped (min 1, max 128 MiB) */
	static const uint64_t table[][2] = {
		{ 64, 48 },         { 256, 192 },       { 1024, 768 },       { 4096, 3075 },
		{ 16384, 12318 },   { 65536, 49535 },   { 131072, 99777 },   { 1048576, 886711 },
		{ 200, 150 },       { 4000, 3003 },
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		check_u64(ca_chunker_discriminator(1, table[i][0], CA_CHUNK_SIZE_LIMIT_MAX), ==, table[i][1]);
	/* clamped into [min, max] */
	check_u64(ca_chunker_discriminator(1000, 1024, 4096), ==, 1000);
	check_u64(ca_chunker_discriminator(1, 65536, 40000), ==, 40000);
	check_u64(ca_chunker_discriminator(16384, 65536, 262144), ==, 49535);
}

static void parse_ok(const char *s, uint64_t min, uint64_t avg, uint64_t max)
{
	uint64_t a = 0, b = 0, c = 0;
	int r = ca_chunk_size_parse(s, &a, &b, &c);
	tap_diag(s);
	check_int(r, ==, 0);
	check_u64(a, ==, min);
	check_u64(b, ==, avg);
	check_u64(c, ==, max);
}

static void parse_bad(const char *s)
{
	uint64_t a = 7, b = 8, c = 9;
	int r = ca_chunk_size_parse(s, &a, &b, &c);
	tap_diag(s);
	check_int(r, ==, -EINVAL);
	check(a == 7 && b == 8 && c == 9); /* untouched on failure */
}

static void test_parse(void)
{
	parse_ok("65536", 16384, 65536, 262144);
	parse_ok("64K", 16384, 65536, 262144);
	parse_ok("auto", 16384, 65536, 262144);
	parse_ok("16K:64K:256K", 16384, 65536, 262144);
	parse_ok("64:256:1024", 64, 256, 1024);
	parse_ok("8192:32768:131072", 8192, 32768, 131072);
	parse_ok("1M", 262144, 1048576, 4194304);
	parse_ok("1:1:1", 1, 1, 1);
	parse_ok("4096:4096:4096", 4096, 4096, 4096);
	parse_ok("200", 50, 200, 800);
	parse_ok("48", 12, 48, 192);
	parse_ok("32M", 8388608, 33554432, 134217728);
	parse_ok("64M", 16777216, 67108864, 134217728); /* max capped at 128 MiB */
	parse_ok("1:2:134217728", 1, 2, 134217728);

	parse_bad("0");
	parse_bad("0:1:2");
	parse_bad("300:200:400");      /* min > avg */
	parse_bad("1:500:400");        /* avg > max */
	parse_bad("1:2:134217729");    /* max > 128 MiB */
	parse_bad("1:2:200M");
	parse_bad("1:2:40");           /* max < 48 outside fixed-size mode */
	parse_bad("3");                /* min 1, max 12 < 48 */
	parse_bad("");
	parse_bad("abc");
	parse_bad("64Q");
	parse_bad("-64");
	parse_bad("1:2");
	parse_bad("1:2:3:4");
	parse_bad("::");
	parse_bad("64:256:");
	parse_bad("99999999999999999999999");
	parse_bad("1G");               /* avg beyond 128 MiB */
}

int main(void)
{
	uint8_t *blob = testdata_blob();
	test_buzhash(blob);
	test_rolling_property(blob, 262144, 64, 256, 1024);
	test_rolling_property(blob, 524288, 48, 65536, CA_CHUNK_SIZE_LIMIT_MAX);
	test_reference_blob(blob);

	test_params("random", blob, 1 << 20);

	/* text-like: words from a small vocabulary, so windows repeat */
	static const char *words[] = { "the ", "chunk ", "store ", "index ", "of ", "casync\n", "a ", "blob ", "zstd ",
		                       "mount " };
	uint8_t *text = malloc(1 << 20);
	if (!text)
		abort();
	uint32_t rs = 5;
	for (size_t i = 0; i < 1 << 20;) {
		const char *wd = words[testdata_rand(&rs) % 10];
		for (size_t k = 0; wd[k] && i < 1 << 20; k++)
			text[i++] = (uint8_t)wd[k];
	}
	test_params("text", text, 1 << 20);
	memset(text, 0, 1 << 20);
	test_params("zeros", text, 1 << 20);
	free(text);

	test_edges(blob);
	test_init_rules();
	test_discriminator();
	test_parse();
	free(blob);
	return tap_done();
}
