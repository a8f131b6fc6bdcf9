/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-sidecar - the metadata sidecar reader (core/image/sidecar.c) on arbitrary
 * bytes (any index digest accepted, the header's archive size taken).
 *
 * Properties: a sidecar is accepted or refused with -EBADMSG (never
 * -ESTALE without a digest to compare, never a crash); an accepted one has
 * the root first, every entry found again by its ENTRY offset, every
 * child's parent is its directory, children in strictly increasing name
 * order, each found by lookup, each node's range inside its parent's, and
 * every xattr and ACL record readable.
 *
 * Input: the first byte picks the mode. 'R': the rest is a sidecar file
 * as is (header, frame, checksum). Otherwise the rest is a header's
 * archive size (8 bytes), feature flags (8) and entry count (4), then a
 * body: the harness compresses and checksums it into a file, so the
 * fuzzer reaches the entry checks past zstd and the checksum.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <stdlib.h>
#include <zstd.h>

#include "base/digest.h"
#include "fuzz.h"
#include "image/sidecar.h"

/* A sidecar file around body: what ca_sidecar_build writes. malloc'd. */
static uint8_t *wrap(const uint8_t *p, size_t n, size_t *ret_size)
{
	uint8_t h[CA_SIDECAR_HEADER_SIZE] = "CAFSMETA";
	if (n < 20)
		return NULL;
	h[8] = 1;
	h[12] = CA_SIDECAR_HEADER_SIZE;
	memcpy(h + 48, p, 16); /* archive size, flags */
	memcpy(h + 64, p + 16, 4); /* entry count */
	p += 20;
	n -= 20;
	ca_le64_write(h + 72, n);
	size_t bound = ZSTD_compressBound(n);
	uint8_t *out = malloc(sizeof(h) + bound);
	struct ca_digest *d;
	if (!out)
		return NULL;
	size_t k = ZSTD_compress(out + sizeof(h), bound, p, n, 1);
	if (ZSTD_isError(k) || ca_digest_new(CA_DIGEST_SHA512_256, &d) < 0) {
		free(out);
		return NULL;
	}
	ca_le64_write(h + 80, k);
	ca_digest_update(d, h, 88);
	ca_digest_update(d, p, n);
	ca_digest_final(d, h + 88);
	ca_digest_free(d);
	memcpy(out, h, sizeof(h));
	*ret_size = sizeof(h) + k;
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ca_sidecar *sc;
	uint8_t *file = NULL;
	fuzz_log_quiet();
	if (size < 1)
		return 0;
	if (data[0] == 'R') {
		data++;
		size--;
	} else {
		file = wrap(data + 1, size - 1, &size);
		if (!file)
			return 0;
		data = file;
	}
	int r = ca_sidecar_parse(data, size, NULL, UINT64_MAX, &sc);
	free(file);
	if (r < 0) {
		fuzz_check(r == -EBADMSG || r == -ENOMEM, "ca_sidecar_parse: %d", r);
		return 0;
	}
	size_t n = ca_sidecar_count(sc);
	fuzz_check(n >= 1, "no root");
	for (size_t i = 0; i < n; i++) {
		struct ca_catar_node node, parent;
		size_t j, k;
		ca_sidecar_node(sc, i, &node);
		fuzz_check(ca_sidecar_find(sc, node.entry_offset, &j) == 0 && j == i, "find entry %zu", i);
		fuzz_check(node.end_offset > node.entry_offset, "entry %zu: empty range", i);
		size_t cur = 0;
		struct ca_catar_xattr x;
		while (ca_catar_node_next_xattr(&node, &cur, &x))
			fuzz_check(x.name && (x.size == 0 || x.value), "entry %zu: xattr", i);
		if (i > 0) {
			ca_sidecar_node(sc, ca_sidecar_parent(sc, i), &parent);
			fuzz_check(S_ISDIR(parent.mode), "entry %zu: parent not a directory", i);
			fuzz_check(node.filename_offset >= parent.children_offset && node.end_offset <= parent.goodbye_offset,
			           "entry %zu: outside its parent", i);
			fuzz_check(ca_sidecar_lookup(sc, ca_sidecar_parent(sc, i), node.name, strlen(node.name), &k) == 0 &&
			                   k == i,
			           "entry %zu: lookup", i);
		}
		if (!S_ISDIR(node.mode)) {
			fuzz_check(ca_sidecar_n_children(sc, i) == 0, "entry %zu: children of a non-directory", i);
			continue;
		}
		for (size_t c = 0; c < ca_sidecar_n_children(sc, i); c++)
			fuzz_check(ca_sidecar_parent(sc, ca_sidecar_child(sc, i, c)) == i, "entry %zu: child %zu", i, c);
	}
	ca_sidecar_free(sc);
	return 0;
}
