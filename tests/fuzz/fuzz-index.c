/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-index - the .caibx/.caidx parser (index.c) on arbitrary bytes.
 *
 * Properties: an index is accepted or refused with -EBADMSG; an accepted
 * one tiles the image [0, blob size) with its chunks in order, each within
 * the index's max, and ca_index_find agrees with the table at chunk edges
 * and at offsets picked from the input.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "format/index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ca_index *idx;
	fuzz_log_quiet();
	void *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	int r = ca_index_adopt(copy, size, &idx); /* owns copy, even on failure */
	if (r < 0) {
		fuzz_check(r == -EBADMSG, "ca_index_adopt: %d", r);
		return 0;
	}

	size_t n = ca_index_n_chunks(idx);
	uint64_t blob = ca_index_blob_size(idx), max = ca_index_chunk_size_max(idx);
	fuzz_check(ca_index_chunk_size_min(idx) <= ca_index_chunk_size_avg(idx) &&
	                   ca_index_chunk_size_avg(idx) <= max,
	           "chunk sizes");
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t s, e;
		const uint8_t *id;
		ca_index_chunk(idx, i, &s, &e, &id);
		fuzz_check(s == prev && e > s && e - s <= max, "chunk %zu: [%llu, %llu)", i, (unsigned long long)s,
		           (unsigned long long)e);
		volatile uint8_t x = id[0] ^ id[CA_CHUNK_ID_SIZE - 1]; /* ASan: the id is inside the index */
		(void)x;
		fuzz_check(ca_index_find(idx, s) == (ssize_t)i && ca_index_find(idx, e - 1) == (ssize_t)i,
		           "find at chunk %zu's edges", i);
		prev = e;
	}
	fuzz_check(prev == blob, "blob size %llu, chunks end at %llu", (unsigned long long)blob,
	           (unsigned long long)prev);
	fuzz_check(ca_index_find(idx, blob) == -ERANGE, "find past the end");
	uint64_t seed = fuzz_hash(data, size);
	for (int k = 0; k < 16 && blob > 0; k++) {
		uint64_t off = fuzz_rand(&seed) % blob;
		ssize_t i = ca_index_find(idx, off);
		uint64_t s, e;
		const uint8_t *id;
		fuzz_check(i >= 0 && (size_t)i < n, "find(%llu) = %zd", (unsigned long long)off, i);
		ca_index_chunk(idx, (size_t)i, &s, &e, &id);
		fuzz_check(s <= off && off < e, "find(%llu) gave [%llu, %llu)", (unsigned long long)off,
		           (unsigned long long)s, (unsigned long long)e);
	}
	ca_index_free(idx);
	return 0;
}
