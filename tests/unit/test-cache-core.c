/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-cache-core.c - idset (the chunk id set) and seed (per-chunk stream chunking). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chunk/chunker.h"
#include "base/digest.h"
#include "format/idset.h"
#include "chunk/seed.h"
#include "tap.h"
#include "testdata.h"

static void test_idset(void)
{
	struct ca_idset *s = NULL;
	uint8_t id[CA_CHUNK_ID_SIZE];
	uint64_t v = 0;
	check_int(ca_idset_new(0, &s), ==, 0);
	/* enough ids to force several grows; ids differ only past the hashed bytes too */
	int ok = 1;
	for (unsigned i = 0; i < 5000; i++) {
		memset(id, 0, sizeof(id));
		memcpy(id + (i % 2 ? 0 : 24), &i, sizeof(i));
		if (ca_idset_add(s, id, i) != 1)
			ok = 0;
	}
	check(ok);
	check_int(ca_idset_size(s), ==, 5000);
	memset(id, 0, sizeof(id));
	unsigned k = 4001;
	memcpy(id + 0, &k, sizeof(k));
	check_int(ca_idset_get(s, id, &v), ==, 1);
	check_u64(v, ==, 4001);
	check_int(ca_idset_add(s, id, 7), ==, 0); /* already there: value kept */
	check_int(ca_idset_get(s, id, &v), ==, 1);
	check_u64(v, ==, 4001);
	check_int(ca_idset_set(s, id, 9), ==, 0);
	check_int(ca_idset_get(s, id, &v), ==, 1);
	check_u64(v, ==, 9);
	id[31] ^= 1;
	check_int(ca_idset_get(s, id, NULL), ==, 0);
	check_int(ca_idset_set(s, id, 1), ==, -ENOENT);
	size_t pos = 0, n = 0;
	const uint8_t *it;
	while (ca_idset_next(s, &pos, &it, NULL))
		n++;
	check_int(n, ==, 5000);
	ca_idset_free(s);
	ca_idset_free(NULL);
}

/* Removal against a plain array, ids crowded into few home slots (equal
 * first bytes) so that removals shift long probe runs that wrap around */
static void test_idset_remove(void)
{
	enum { N = 600 };
	static uint8_t ids[N][CA_CHUNK_ID_SIZE];
	static int in[N];
	struct ca_idset *s = NULL;
	uint64_t v = 0;
	int ok = 1;
	check_int(ca_idset_new(0, &s), ==, 0);
	srand(24);
	for (unsigned i = 0; i < N; i++) {
		memset(ids[i], 0, CA_CHUNK_ID_SIZE);
		uint64_t home = (uint64_t)(rand() % 8) - (i % 3 ? 0 : 4); /* some wrap from the end */
		memcpy(ids[i], &home, sizeof(home));
		memcpy(ids[i] + 8, &i, sizeof(i));
	}
	for (unsigned round = 0; round < 20000; round++) {
		unsigned i = (unsigned)rand() % N;
		if (rand() % 2) {
			if (ca_idset_add(s, ids[i], i) != !in[i])
				ok = 0;
			in[i] = 1;
		} else {
			if (ca_idset_remove(s, ids[i]) != in[i])
				ok = 0;
			in[i] = 0;
		}
	}
	size_t want = 0;
	for (unsigned i = 0; i < N; i++) {
		want += (size_t)in[i];
		if (ca_idset_get(s, ids[i], &v) != in[i] || (in[i] && v != i))
			ok = 0;
	}
	check(ok);
	check_int(ca_idset_size(s), ==, want);
	for (unsigned i = 0; i < N; i++)
		ca_idset_remove(s, ids[i]);
	check_int(ca_idset_size(s), ==, 0);
	check_int(ca_idset_get(s, ids[0], NULL), ==, 0);
	ca_idset_free(s);
}

struct collect {
	uint64_t ends[4096];
	uint8_t ids[4096][CA_CHUNK_ID_SIZE];
	size_t n;
	uint64_t next_off;
	int bad_offset;
	size_t stop_after;
};

static int on_chunk(const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t off, const void *data, size_t size, void *u)
{
	struct collect *c = u;
	(void)data;
	if (off != c->next_off)
		c->bad_offset = 1;
	c->next_off = off + size;
	memcpy(c->ids[c->n], id, CA_CHUNK_ID_SIZE);
	c->ends[c->n++] = off + size;
	return c->stop_after && c->n == c->stop_after ? 5 : 0;
}

static void test_seed(void)
{
	const size_t size = 3u << 20;
	uint8_t *data = malloc(size);
	static struct collect a, b, c;
	struct ca_seeder *s = NULL;
	testdata_xorshift(data, size, 77);

	/* reference: the chunker and digest directly */
	struct ca_chunker ch;
	struct ca_digest *d = NULL;
	uint64_t ref_ends[4096];
	uint8_t ref_ids[4096][CA_CHUNK_ID_SIZE];
	size_t nref = 0, start = 0;
	check_int(ca_chunker_init(&ch, 4096, 16384, 65536), ==, 0);
	check_int(ca_digest_new(CA_DIGEST_SHA512_256, &d), ==, 0);
	for (size_t pos = 0; pos < size;) {
		size_t k = ca_chunker_scan(&ch, data + pos, size - pos);
		if (k == CA_CHUNKER_NO_CUT)
			break;
		pos += k;
		ca_digest_once(d, data + start, pos - start, ref_ids[nref]);
		ref_ends[nref++] = pos;
		start = pos;
	}
	if (start < size) {
		ca_digest_once(d, data + start, size - start, ref_ids[nref]);
		ref_ends[nref++] = size;
	}

	/* one feed */
	check_int(ca_seeder_new(4096, 16384, 65536, CA_DIGEST_SHA512_256, on_chunk, &a, &s), ==, 0);
	check_int(ca_seeder_feed(s, data, size), ==, 0);
	check_int(ca_seeder_finish(s), ==, 0);
	check_u64(ca_seeder_offset(s), ==, size);
	ca_seeder_free(s);
	check_int(a.n, ==, nref);
	check(!a.bad_offset);
	check(!memcmp(a.ends, ref_ends, nref * sizeof(uint64_t)));
	check(!memcmp(a.ids, ref_ids, nref * CA_CHUNK_ID_SIZE));

	/* odd splits give the same chunks */
	check_int(ca_seeder_new(4096, 16384, 65536, CA_DIGEST_SHA512_256, on_chunk, &b, &s), ==, 0);
	uint32_t x = 5;
	int r = 0;
	for (size_t pos = 0; pos < size && r == 0;) {
		x = x * 1103515245u + 12345u;
		size_t k = 1 + (x >> 8) % 70000;
		if (k > size - pos)
			k = size - pos;
		r = ca_seeder_feed(s, data + pos, k);
		pos += k;
	}
	check_int(r, ==, 0);
	check_int(ca_seeder_finish(s), ==, 0);
	ca_seeder_free(s);
	check_int(b.n, ==, nref);
	check(!memcmp(b.ids, ref_ids, nref * CA_CHUNK_ID_SIZE));

	/* a positive callback value stops the feed and comes back */
	c.stop_after = 3;
	check_int(ca_seeder_new(4096, 16384, 65536, CA_DIGEST_SHA512_256, on_chunk, &c, &s), ==, 0);
	check_int(ca_seeder_feed(s, data, size), ==, 5);
	check_int(c.n, ==, 3);
	ca_seeder_free(s);

	/* bad sizes are refused like the chunker's */
	check_int(ca_seeder_new(0, 16384, 65536, CA_DIGEST_SHA512_256, on_chunk, &c, &s), ==, -EINVAL);
	ca_seeder_free(NULL);
	ca_digest_free(d);
	free(data);
}

int main(void)
{
	test_idset();
	test_idset_remove();
	test_seed();
	return tap_done();
}
