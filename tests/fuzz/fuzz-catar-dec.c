/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-catar-dec - the streaming catar decoder (catar_dec.c) on arbitrary
 * bytes taken as a whole .catar.
 *
 * The stream is decoded twice: once with a reader that hands out whole
 * blocks, once with one that returns short reads at split points drawn
 * from the input's hash and reads payloads in odd-sized pieces. Both must
 * end the same way (DONE or -EBADMSG, nothing else) after the same events
 * (paths, types, sizes, payload bytes): where the stream is cut must never
 * change what the decoder sees.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "catar/catar_dec.h"
#include "fuzz.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 1099511628211ull;
}

/* Decode all; the trace hash of every event and byte seen in *ret_trace. */
static int decode(const uint8_t *data, size_t size, uint64_t seed, uint64_t *ret_trace, unsigned *ret_events)
{
	struct fuzz_mem rd = { data, size, seed };
	struct ca_catar_source src = { fuzz_mem_read, NULL, &rd, size, UINT64_MAX };
	struct ca_catar_dec *d;
	uint64_t h = 1469598103934665603ull, pick = 0x9e3779b97f4a7c15ull; /* same picks in both runs */
	unsigned events = 0;
	static uint8_t buf[70000];
	int r = ca_catar_dec_new(&src, &d);
	if (r < 0)
		return r;
	for (;;) {
		const struct ca_catar_node *node;
		r = ca_catar_dec_next(d, &node);
		if (r <= 0)
			break;
		events++;
		h = mix(h, (uint64_t)r);
		h = mix(h, ca_catar_dec_depth(d));
		h = mix(h, fuzz_hash((const uint8_t *)ca_catar_dec_path(d), strlen(ca_catar_dec_path(d))));
		h = mix(h, node->mode);
		h = mix(h, node->entry_offset);
		h = mix(h, node->end_offset);
		h = mix(h, ca_catar_dec_offset(d));
		if (node->symlink_target)
			h = mix(h, fuzz_hash((const uint8_t *)node->symlink_target, strlen(node->symlink_target)));
		if (r != CA_CATAR_DEC_NODE || !S_ISREG(node->mode))
			continue;
		h = mix(h, node->payload_size);
		/* the same payloads are read in both runs, in different pieces */
		if (fuzz_rand(&pick) % 4 == 0)
			continue;
		uint64_t split = seed ? seed : 1;
		ssize_t k;
		do {
			size_t want = seed ? 1 + (size_t)(fuzz_rand(&split) % sizeof(buf)) : sizeof(buf);
			k = ca_catar_dec_read_payload(d, buf, want);
			if (k > 0)
				for (ssize_t i = 0; i < k; i++) /* bytes, whatever the pieces */
				h = mix(h, buf[i]);
		} while (k > 0);
		if (k < 0) {
			r = (int)k;
			break;
		}
	}
	/* after an error or the end, the decoder keeps saying so */
	const struct ca_catar_node *again;
	int r2 = ca_catar_dec_next(d, &again);
	fuzz_check(r2 == r, "next() after %d returned %d", r, r2);
	ca_catar_dec_free(d);
	*ret_trace = h;
	*ret_events = events;
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t t1 = 0, t2 = 0;
	unsigned e1 = 0, e2 = 0;
	fuzz_log_quiet();
	int r1 = decode(data, size, 0, &t1, &e1);
	fuzz_check(r1 == CA_CATAR_DEC_DONE || r1 == -EBADMSG, "whole reads: %d", r1);
	int r2 = decode(data, size, fuzz_hash(data, size), &t2, &e2);
	fuzz_check(r2 == r1, "split reads end with %d, whole reads with %d", r2, r1);
	fuzz_check(t1 == t2 && e1 == e2, "split reads saw other events (%u vs %u)", e2, e1);
	return 0;
}
