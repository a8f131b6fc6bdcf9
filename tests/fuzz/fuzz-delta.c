/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-delta - the delta pack's header and table parser (delta_pack.c) on
 * arbitrary bytes.
 *
 * Each input is parsed twice: as it is, and with its table digest made
 * right (so that the entries' own checks are reached, not only the
 * digest's). Properties: a header or table is accepted or refused with
 * -EBADMSG; an accepted table's entries keep every promise the header
 * makes (encoding and reference count, sizes within the maximum, bytes
 * inside the data section, in table order and not overlapping), and
 * written back they are the input's bytes.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "format/delta_pack.h"

#define SIZE_MAX_FUZZ ((uint64_t)256 << 10)

static void check_table(const struct ca_delta_header *h, const uint8_t *hdr, const uint8_t *table, size_t n)
{
	struct ca_delta_entry *es = NULL;
	int r = ca_delta_table_parse(h, hdr, table, n, SIZE_MAX_FUZZ, &es);
	if (r < 0) {
		fuzz_check(r == -EBADMSG || r == -ENOMEM, "ca_delta_table_parse: %d", r);
		return;
	}
	size_t pos = 0;
	uint64_t data_end = 0;
	uint8_t buf[CA_DELTA_ENTRY_SIZE + CA_DELTA_REFS_MAX * CA_DELTA_REF_SIZE];
	for (uint64_t i = 0; i < h->n_entries; i++) {
		const struct ca_delta_entry *e = &es[i];
		fuzz_check(e->offset >= data_end, "entry %llu's bytes begin inside the one before",
		           (unsigned long long)i);
		data_end = e->offset + e->length;
		fuzz_check(e->encoding == CA_DELTA_PLAIN ? e->n_refs == 0
		                                         : e->encoding == CA_DELTA_PREFIX && e->n_refs >= 1 &&
		                                                   e->n_refs <= CA_DELTA_REFS_MAX,
		           "entry %llu: encoding %u with %u refs", (unsigned long long)i, e->encoding, e->n_refs);
		fuzz_check(e->size >= 1 && e->size <= SIZE_MAX_FUZZ, "entry size");
		fuzz_check(e->length >= 1 && e->offset <= h->data_size && e->length <= h->data_size - e->offset,
		           "entry bytes outside the data");
		uint64_t prefix = 0;
		for (unsigned k = 0; k < e->n_refs; k++) {
			fuzz_check(e->refs[k].size >= 1 && e->refs[k].size <= SIZE_MAX_FUZZ, "ref size");
			prefix += e->refs[k].size;
		}
		fuzz_check(prefix <= CA_DELTA_PREFIX_MAX, "prefix size");
		size_t len = ca_delta_entry_write(e, buf);
		fuzz_check(pos + len <= n - CA_DELTA_DIGEST_SIZE && !memcmp(buf, table + pos, len),
		           "entry %llu does not write back as read", (unsigned long long)i);
		pos += len;
	}
	fuzz_check(pos == n - CA_DELTA_DIGEST_SIZE, "entries end at %zu of %zu", pos, n);
	free(es);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ca_delta_header h;
	fuzz_log_quiet();
	int r = ca_delta_header_parse(data, size, &h);
	if (r < 0) {
		fuzz_check(r == -EBADMSG, "ca_delta_header_parse: %d", r);
		return 0;
	}
	uint8_t back[CA_DELTA_HEADER_SIZE];
	ca_delta_header_write(&h, back);
	fuzz_check(!memcmp(back, data, CA_DELTA_HEADER_SIZE), "the header does not write back as read");
	fuzz_check(h.table_size <= CA_DELTA_TABLE_MAX, "table size");
	if (size - CA_DELTA_HEADER_SIZE < h.table_size)
		return 0;
	size_t n = (size_t)h.table_size;
	const uint8_t *table = data + CA_DELTA_HEADER_SIZE;
	check_table(&h, data, table, n);
	/* again with the digest right: the entries' checks */
	uint8_t *copy = malloc(n);
	if (!copy)
		return 0;
	memcpy(copy, table, n);
	if (ca_delta_table_digest(data, copy, n - CA_DELTA_DIGEST_SIZE, copy + n - CA_DELTA_DIGEST_SIZE) == 0)
		check_table(&h, data, copy, n);
	free(copy);
	return 0;
}
