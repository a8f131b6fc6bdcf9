/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-sha512mb.c - the multi-buffer SHA-512/256 and SHA-512 against
 * OpenSSL: every implementation this CPU has, over random lengths up to
 * 2 MiB and the padding's edge lengths, in batches of every size around
 * the lane counts (so lanes are refilled mid-batch and left idle), and
 * over every chunk of the reference blob and of a test tree's archive.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "base/sha512mb.h"
#include "chunk/chunker.h"
#include "catar-testtree.h"
#include "tap.h"
#include "testdata.h"

#define MAX_LEN (2u << 20)

static void reference(bool full512, const void *p, size_t n, uint8_t out[64])
{
	unsigned len = 0;
	if (EVP_Digest(p, n, out, &len, full512 ? EVP_sha512() : EVP_sha512_256(), NULL) != 1)
		abort();
}

/* Hash msgs with impl and compare each with OpenSSL; the count that differ. */
static unsigned compare(enum ca_sha512mb_impl impl, bool full512, struct ca_sha512mb_msg *msgs, size_t n)
{
	uint8_t *outs = calloc(n ? n : 1, 64), want[64];
	unsigned bad = 0;
	if (!outs)
		abort();
	for (size_t i = 0; i < n; i++)
		msgs[i].out = outs + 64 * i;
	if (ca_sha512mb_hash(impl, full512, msgs, n) != 0)
		bad = (unsigned)n + 1;
	for (size_t i = 0; i < n && bad <= n; i++) {
		reference(full512, msgs[i].data, msgs[i].size, want);
		if (memcmp(want, msgs[i].out, full512 ? 64 : 32)) {
			if (!bad)
				printf("# %s %s: message %zu of %zu (%zu bytes) differs\n", ca_sha512mb_impl_name(impl),
				       full512 ? "sha512" : "sha512-256", i, n, msgs[i].size);
			bad++;
		}
	}
	free(outs);
	return bad;
}

/* every chunk of buf (cut with min:avg:max) in one batch */
static unsigned chunks_of(enum ca_sha512mb_impl impl, const uint8_t *buf, size_t size, size_t min, size_t avg,
                          size_t max, size_t *ret_n)
{
	struct ca_chunker c;
	struct ca_sha512mb_msg *msgs = calloc(size / min + 2, sizeof(*msgs));
	size_t n = 0, pos = 0;
	unsigned bad;
	if (!msgs || ca_chunker_init(&c, min, avg, max) != 0)
		abort();
	while (pos < size) {
		size_t k = ca_chunker_scan(&c, buf + pos, size - pos);
		if (k == CA_CHUNKER_NO_CUT)
			k = size - pos;
		msgs[n++] = (struct ca_sha512mb_msg){ .data = buf + pos, .size = k };
		pos += k;
	}
	bad = compare(impl, false, msgs, n);
	free(msgs);
	*ret_n = n;
	return bad;
}

int main(void)
{
	static const size_t edges[] = { 0, 1, 55, 56, 63, 64, 110, 111, 112, 113, 127, 128, 129, 239, 240, 241, 255, 256, 257, 1000, 4096 };
	enum ca_sha512mb_impl impls[3];
	unsigned n_impls = 0;
	uint32_t seed = 7;
	uint8_t *big = malloc(MAX_LEN + 64);

	if (!big)
		abort();
	testdata_fill(&seed, big, MAX_LEN + 64);
	impls[n_impls++] = CA_SHA512MB_OPENSSL;
	for (enum ca_sha512mb_impl i = CA_SHA512MB_AVX2; i <= CA_SHA512MB_AVX512; i++) {
		uint8_t out[32];
		struct ca_sha512mb_msg m = { .data = "", .size = 0, .out = out };
		if (ca_sha512mb_hash(i, false, &m, 1) == 0)
			impls[n_impls++] = i;
		else
			printf("# %s: not on this CPU\n", i == CA_SHA512MB_AVX2 ? "avx2" : "avx512");
	}
	printf("# best: %s (%u lanes); testing %u implementations\n", ca_sha512mb_impl_name(CA_SHA512MB_AUTO),
	       ca_sha512mb_lanes(CA_SHA512MB_AUTO), n_impls);
	check(ca_sha512mb_lanes(CA_SHA512MB_OPENSSL) == 1);
	check(ca_sha512mb_hash(CA_SHA512MB_AUTO, false, NULL, 0) == 0);

	for (unsigned k = 0; k < n_impls; k++) {
		enum ca_sha512mb_impl impl = impls[k];
		struct ca_sha512mb_msg msgs[40];
		printf("# %s\n", ca_sha512mb_impl_name(impl));
		/* the padding's edges: each alone, all in one batch, at odd alignments */
		size_t n_edges = sizeof(edges) / sizeof(edges[0]);
		unsigned bad = 0;
		for (size_t i = 0; i < n_edges; i++) {
			msgs[0] = (struct ca_sha512mb_msg){ .data = big + i % 8, .size = edges[i] };
			bad += compare(impl, false, msgs, 1) + compare(impl, true, msgs, 1);
			msgs[i] = (struct ca_sha512mb_msg){ .data = big + i, .size = edges[i] };
		}
		check_int(bad, ==, 0);
		check_int(compare(impl, false, msgs, n_edges), ==, 0);
		check_int(compare(impl, true, msgs, n_edges), ==, 0);
		/* random lengths 0..2 MiB, batches of 1..17 (below, at and past the lanes) */
		bad = 0;
		for (size_t batch = 1; batch <= 17; batch++) {
			for (size_t i = 0; i < batch; i++) {
				size_t len = testdata_rand(&seed) % (MAX_LEN + 1);
				if (testdata_rand(&seed) % 3 == 0)
					len %= 3 * 128; /* many short ones too */
				msgs[i] = (struct ca_sha512mb_msg){ .data = big + testdata_rand(&seed) % 64, .size = len };
			}
			bad += compare(impl, batch % 2 == 0, msgs, batch);
		}
		check_int(bad, ==, 0);
		/* the largest: exactly 2 MiB, beside tiny ones */
		msgs[0] = (struct ca_sha512mb_msg){ .data = big, .size = MAX_LEN };
		msgs[1] = (struct ca_sha512mb_msg){ .data = big + 1, .size = 111 };
		msgs[2] = (struct ca_sha512mb_msg){ .data = big + 2, .size = 112 };
		check_int(compare(impl, false, msgs, 3), ==, 0);
		/* more messages than fit in the sorting's stack array */
		struct ca_sha512mb_msg many[100];
		for (size_t i = 0; i < 100; i++)
			many[i] = (struct ca_sha512mb_msg){ .data = big + i, .size = (i * 977) % 5000 };
		check_int(compare(impl, false, many, 100), ==, 0);
	}

	/* every chunk of the reference blob, with casync's default sizes and small ones */
	uint8_t *blob = testdata_blob();
	for (unsigned k = 0; k < n_impls; k++) {
		size_t n = 0;
		check_int(chunks_of(impls[k], blob, TESTDATA_BLOB_SIZE, 16384, 65536, 262144, &n), ==, 0);
		check_int(n, ==, 55);
		check_int(chunks_of(impls[k], blob, TESTDATA_BLOB_SIZE, 64, 256, 1024, &n), ==, 0);
	}
	free(blob);

	/* every chunk of a test tree's archive */
	char base[300], tree[320], catar[320];
	snprintf(base, sizeof(base), "%s/cafs-sha512mb.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!testdata_have("casync") || !mkdtemp(base)) {
		tap_skip("every chunk of a test tree", "casync not installed, or no temp dir");
	} else {
		snprintf(tree, sizeof(tree), "%s/tree", base);
		snprintf(catar, sizeof(catar), "%s/t.catar", base);
		size_t size = 0, n = 0;
		uint8_t *ar = NULL;
		check_int(tt_make_tree(base, 0), ==, 0);
		check_int(testdata_sh("casync make '%s' '%s' >/dev/null", catar, tree), ==, 0);
		check((ar = tt_slurp(catar, &size)) != NULL);
		for (unsigned k = 0; ar && k < n_impls; k++) {
			check_int(chunks_of(impls[k], ar, size, 64, 256, 1024, &n), ==, 0);
			check(n > 100);
			check_int(chunks_of(impls[k], ar, size, 16384, 65536, 262144, &n), ==, 0);
		}
		free(ar);
		testdata_sh("rm -rf '%s'", base);
	}
	free(big);
	return tap_done();
}
