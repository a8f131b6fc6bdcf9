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

#include "format/format.h"
#include "base/buf.h"
#include "base/digest.h"

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

/* The largest chunk file (any format, or bare) whose content is at most
 * chunk_size bytes: zstd's bound plus room for headers. */
size_t ca_compress_file_max(uint64_t chunk_size);

/* Compress n bytes as a casync chunk into out (replacing its contents):
 * zstd unless ca_codec_set_compression chose another. */
int ca_codec_compress(struct ca_codec *c, const void *p, size_t n, struct ca_buf *out);

/* The most an xz chunk's decoder may allocate. casync writes xz chunks
 * with the default preset (8 MiB dictionary, 9 MiB to decode); xz -7
 * still fits, -8 and -9 (32 and 64 MiB dictionaries) are -EBADMSG. */
#define CA_XZ_MEMLIMIT (24u << 20)

/* Decompress one complete stream (format by magic) into out, replacing its
 * contents. Output beyond `limit` bytes (at most 128 MiB) is -EBADMSG, as is
 * an unknown magic, a truncated or corrupt stream, or trailing garbage.
 * zstd: exactly one frame (casync writes one) and nothing after it, so no
 * skippable frames; a stated content size must fit limit. xz: one stream,
 * decoder memory at most CA_XZ_MEMLIMIT. gzip: one member. When out->cap
 * >= limit on entry (decode_chunk), a zstd frame decodes in place and out
 * never grows: memory is exactly the chunk's size. */
int ca_codec_decompress(struct ca_codec *c, const void *p, size_t n, struct ca_buf *out, size_t limit);

/* Decompress and check the digest against id (and the size, if
 * expected_size != UINT64_MAX). Returns 0, -EBADMSG for corrupt data or a
 * digest mismatch, other negative errno otherwise. */
int ca_codec_decode_chunk(struct ca_codec *c, const void *p, size_t n, const uint8_t id[CA_CHUNK_ID_SIZE],
                          uint64_t expected_size, struct ca_buf *out);

/* What ca_codec_compress writes from now on, as casync's --compression=
 * (its .cacnk files hold whichever): zstd (the default), xz (preset 6,
 * CRC64 check: casync's lzma_easy_encoder settings) or gzip (zlib level 6,
 * window 15, memLevel 8: casync's deflateInit2 settings). With the same
 * libraries the bytes are casync's. -EINVAL for NONE, -EOPNOTSUPP for a
 * format this build has no library for. */
int ca_codec_set_compression(struct ca_codec *c, enum ca_compression type);

/* casync's names: "zstd", "xz", "gzip", "default" (zstd). -EINVAL for any other. */
int ca_compression_parse(const char *name, enum ca_compression *ret);

#endif
