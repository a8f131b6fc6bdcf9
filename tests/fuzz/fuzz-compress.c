/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-compress - chunk decompression (compress.c): zstd, xz and gzip by
 * magic, as chunksrc decodes what a store or a server hands it.
 *
 * Input: 4 bytes little-endian, the chunk's size as its index states it
 * (0xffffffff: unknown, as for a chunk fetched without an index entry;
 * otherwise its low 20 bits, as decode_chunk allocates the size up
 * front and 128 MiB per input would be all the fuzzer does), then the
 * compressed chunk. One codec is reused across inputs, as each
 * thread reuses its own (its zstd context must not carry state over).
 *
 * Properties: decompress and decode_chunk succeed or say -EBADMSG (or
 * -ENOMEM); never more output than the limit; with the size known,
 * decode_chunk accepts exactly what decompression with no size gives
 * (same bytes, checked by the digest it verifies), and refuses a wrong
 * size.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "chunk/compress.h"
#include "fuzz.h"

static struct ca_codec *codec;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ca_buf out = { 0 }, out2 = { 0 };
	uint8_t id[CA_CHUNK_ID_SIZE];
	fuzz_log_quiet();
	if (!codec && ca_codec_new(CA_DIGEST_SHA512_256, &codec) < 0)
		abort();
	uint64_t expected = fuzz_take(&data, &size, 4);
	expected = expected == 0xffffffffu ? UINT64_MAX : expected & 0xfffffu;

	/* no size known: the cap is CA_CHUNK_SIZE_LIMIT_MAX */
	int r = ca_codec_decompress(codec, data, size, &out, SIZE_MAX);
	fuzz_check(r == 0 || r == -EBADMSG || r == -ENOMEM, "decompress: %d", r);
	if (r == 0) {
		fuzz_check(out.size <= CA_CHUNK_SIZE_LIMIT_MAX, "decompressed %zu bytes", out.size);
		/* the id of what came out: decode_chunk must verify it */
		if (ca_digest_once(ca_codec_digest(codec), out.data, out.size, id) < 0)
			abort();
		int r2 = ca_codec_decode_chunk(codec, data, size, id, out.size, &out2);
		fuzz_check(r2 == 0 && out2.size == out.size && (out.size == 0 || !memcmp(out.data, out2.data, out.size)),
		           "decode_chunk with the right size (%zu): %d", out.size, r2);
		r2 = ca_codec_decode_chunk(codec, data, size, id, UINT64_MAX, &out2);
		fuzz_check(r2 == 0 && out2.size == out.size, "decode_chunk without a size: %d", r2);
		if (out.size > 0) {
			/* a limit one below what comes out is refused */
			r2 = ca_codec_decompress(codec, data, size, &out2, out.size - 1);
			fuzz_check(r2 == -EBADMSG, "decompress with a limit below the size: %d", r2);
		}
		r2 = ca_codec_decode_chunk(codec, data, size, id, out.size + 1, &out2);
		fuzz_check(r2 == -EBADMSG, "decode_chunk with a size one too large: %d", r2);
	} else {
		memset(id, 0, sizeof(id));
	}
	/* the index's size: whatever the input claims */
	ca_buf_release(&out2);
	int r3 = ca_codec_decode_chunk(codec, data, size, id, expected, &out2);
	fuzz_check(r3 == 0 || r3 == -EBADMSG || r3 == -ENOMEM, "decode_chunk(size %llu): %d",
	           (unsigned long long)expected, r3);
	if (r3 == 0)
		fuzz_check(r == 0 && out2.size == out.size && (expected == UINT64_MAX || expected == out.size),
		           "decode_chunk(size %llu) accepted what decompression refused (%d) or sized otherwise",
		           (unsigned long long)expected, r);
	ca_buf_release(&out);
	ca_buf_release(&out2);
	return 0;
}
