/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * compress.h - chunk compression as casync writes it, and decompression of
 * whatever casync may have written, chosen by magic: zstd (always), xz and
 * gzip (when built with liblzma / zlib).
 *
 * zstd output is byte-identical to casync's: streaming API, level 3, no
 * pledged size, no checksum. One ca_codec per thread: it holds the zstd
 * contexts and a digest and is not thread-safe.
 */
#ifndef CA_COMPRESS_H
#define CA_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "digest.h"

enum ca_compression {
	CA_COMPRESSION_NONE,
	CA_COMPRESSION_ZSTD,
	CA_COMPRESSION_XZ,
	CA_COMPRESSION_GZIP,
};

struct ca_codec;

int ca_codec_new(enum ca_digest_type digest, struct ca_codec **ret);
void ca_codec_free(struct ca_codec *c); /* accepts NULL */
struct ca_digest *ca_codec_digest(struct ca_codec *c);

/* The format a compressed chunk is in, from its first bytes; NONE if unknown. */
enum ca_compression ca_compression_detect(const void *p, size_t n);

/* Compress n bytes as a casync zstd chunk into out (replacing its contents). */
int ca_codec_compress(struct ca_codec *c, const void *p, size_t n, struct ca_buf *out);

/* Decompress one complete stream (format by magic) into out, replacing its
 * contents. Output beyond `limit` bytes (at most 128 MiB) is -EBADMSG, as is
 * an unknown magic, a truncated or corrupt stream, or trailing garbage. */
int ca_codec_decompress(struct ca_codec *c, const void *p, size_t n, struct ca_buf *out, size_t limit);

/* Decompress and check the digest against id (and the size, if
 * expected_size != UINT64_MAX). Returns 0, -EBADMSG for corrupt data or a
 * digest mismatch, other negative errno otherwise. */
int ca_codec_decode_chunk(struct ca_codec *c, const void *p, size_t n, const uint8_t id[CA_CHUNK_ID_SIZE],
                          uint64_t expected_size, struct ca_buf *out);

#endif
