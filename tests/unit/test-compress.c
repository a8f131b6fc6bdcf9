/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-compress.c - what a chunk file may be: exactly one zstd frame
 * whose content is exactly the indexed size; skippable frames, a second
 * frame, trailing bytes or a stated size beyond the chunk are -EBADMSG.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "chunk/compress.h"
#include "tap.h"
#include "testdata.h"

#define N 37000

static int decode(struct ca_codec *c, const struct ca_buf *file, const uint8_t *id, uint64_t size)
{
	struct ca_buf out = CA_BUF_INIT;
	int r = ca_codec_decode_chunk(c, file->data, file->size, id, size, &out);
	if (r == 0 && out.cap != size)
		r = -E2BIG; /* decoded into more than the chunk's size */
	ca_buf_release(&out);
	return r;
}

int main(void)
{
	struct ca_codec *c;
	struct ca_buf file = CA_BUF_INIT, bad = CA_BUF_INIT;
	uint8_t *data = malloc(N), id[CA_CHUNK_ID_SIZE];
	check(data != NULL);
	testdata_xorshift(data, N, 7);
	memset(data + N / 2, 0, N / 2); /* compressible half */
	check_int(ca_codec_new(CA_DIGEST_SHA256, &c), ==, 0);
	check_int(ca_digest_once(ca_codec_digest(c), data, N, id), ==, 0);
	check_int(ca_codec_compress(c, data, N, &file), ==, 0);

	/* the accepted case: casync's frame, into exactly N bytes */
	check_int(decode(c, &file, id, N), ==, 0);
	/* the size must be the indexed one */
	check_int(decode(c, &file, id, N - 1), ==, -EBADMSG);
	check_int(decode(c, &file, id, N + 1), ==, -EBADMSG);

	/* a skippable frame after the chunk's frame */
	static const uint8_t skip[16] = { 0x50, 0x2a, 0x4d, 0x18, 8, 0, 0, 0 };
	bad.size = 0;
	check_int(ca_buf_append(&bad, file.data, file.size, SIZE_MAX), ==, 0);
	check_int(ca_buf_append(&bad, skip, sizeof(skip), SIZE_MAX), ==, 0);
	check_int(decode(c, &bad, id, N), ==, -EBADMSG);
	/* ... or before it (then the file does not start with a frame) */
	bad.size = 0;
	check_int(ca_buf_append(&bad, skip, sizeof(skip), SIZE_MAX), ==, 0);
	check_int(ca_buf_append(&bad, file.data, file.size, SIZE_MAX), ==, 0);
	check_int(decode(c, &bad, id, N), ==, -EBADMSG);
	/* trailing bytes */
	bad.size = 0;
	check_int(ca_buf_append(&bad, file.data, file.size, SIZE_MAX), ==, 0);
	check_int(ca_buf_append(&bad, "x", 1, SIZE_MAX), ==, 0);
	check_int(decode(c, &bad, id, N), ==, -EBADMSG);
	/* a second frame (of nothing) */
	bad.size = 0;
	check_int(ca_buf_append(&bad, file.data, file.size, SIZE_MAX), ==, 0);
	check_int(ca_buf_reserve(&bad, bad.size + 64, SIZE_MAX), ==, 0);
	size_t k = ZSTD_compress(bad.data + bad.size, 64, "", 0, 3);
	check(!ZSTD_isError(k));
	bad.size += k;
	check_int(decode(c, &bad, id, N), ==, -EBADMSG);

	/* a frame that states its size (zstd's one-shot API): the same rules */
	check_int(ca_buf_reserve(&bad, ZSTD_compressBound(N), SIZE_MAX), ==, 0);
	bad.size = ZSTD_compress(bad.data, bad.cap, data, N, 3);
	check(!ZSTD_isError(bad.size));
	check(ZSTD_getFrameContentSize(bad.data, bad.size) == N);
	check_int(decode(c, &bad, id, N), ==, 0);
	check_int(decode(c, &bad, id, N - 1), ==, -EBADMSG);

	/* the file bound covers zstd's worst case and little more */
	check(ca_compress_file_max(N) >= ZSTD_compressBound(N));
	check(ca_compress_file_max(N) < N + N / 64 + 8192);
	check(ca_compress_file_max(UINT64_MAX) == ca_compress_file_max(CA_CHUNK_SIZE_LIMIT_MAX));

	ca_buf_release(&file);
	ca_buf_release(&bad);
	ca_codec_free(c);
	free(data);
	return tap_done();
}
