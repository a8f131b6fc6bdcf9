/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* compress.c - zstd/xz/gzip chunk encoding as casync's; decoding by magic. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>
#ifdef HAVE_LZMA
#include <lzma.h>
#endif
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

#include "format/format.h"
#include "chunk/compress.h"
#include "base/log.h"

struct ca_codec {
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
	struct ca_digest *digest;
	enum ca_compression compression; /* what ca_codec_compress writes */
};

int ca_codec_new(enum ca_digest_type type, struct ca_codec **ret)
{
	struct ca_codec *c = calloc(1, sizeof(*c));
	int r = -ENOMEM;
	if (!c)
		return r;
	c->cctx = ZSTD_createCCtx();
	c->dctx = ZSTD_createDCtx();
	if (!c->cctx || !c->dctx)
		goto fail;
	r = ca_digest_new(type, &c->digest);
	if (r < 0)
		goto fail;
	c->compression = CA_COMPRESSION_ZSTD;
	*ret = c;
	return 0;
fail:
	ca_codec_free(c);
	return r;
}

void ca_codec_free(struct ca_codec *c)
{
	if (!c)
		return;
	ZSTD_freeCCtx(c->cctx);
	ZSTD_freeDCtx(c->dctx);
	ca_digest_free(c->digest);
	free(c);
}

struct ca_digest *ca_codec_digest(struct ca_codec *c)
{
	return c->digest;
}

enum ca_compression ca_compression_detect(const void *data, size_t n)
{
	const uint8_t *p = data;
	if (n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd)
		return CA_COMPRESSION_ZSTD;
	if (n >= 6 && !memcmp(p, "\xfd" "7zXZ\0", 6))
		return CA_COMPRESSION_XZ;
	if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
		return CA_COMPRESSION_GZIP;
	return CA_COMPRESSION_NONE;
}

size_t ca_compress_file_max(uint64_t chunk_size)
{
	if (chunk_size > CA_CHUNK_SIZE_LIMIT_MAX)
		chunk_size = CA_CHUNK_SIZE_LIMIT_MAX;
	/* xz and gzip store incompressible data with less overhead than zstd's
	 * bound (5 bytes per 64 KiB block, plus fixed headers) */
	return ZSTD_compressBound((size_t)chunk_size) + 4096;
}

static int zstd_fail(size_t rc, const char *what)
{
	return ca_log_debug_errno(-EBADMSG, "zstd %s failed (%s)", what, ZSTD_getErrorName(rc));
}

#ifdef HAVE_LZMA
/* casync: lzma_easy_encoder(LZMA_PRESET_DEFAULT, LZMA_CHECK_CRC64), input
 * fed with LZMA_RUN then LZMA_FINISH; liblzma's output does not depend on
 * how the input is split, so one call gives the same stream */
static int compress_xz(const void *p, size_t n, struct ca_buf *out)
{
	lzma_stream s = LZMA_STREAM_INIT;
	int r = 0;
	if (lzma_easy_encoder(&s, LZMA_PRESET_DEFAULT, LZMA_CHECK_CRC64) != LZMA_OK)
		return -ENOMEM;
	s.next_in = p;
	s.avail_in = n;
	out->size = 0;
	for (;;) {
		if (out->size == out->cap && (r = ca_buf_reserve(out, out->cap < 65536 ? 65536 : out->cap * 2, SIZE_MAX)) < 0)
			break;
		s.next_out = out->data + out->size;
		s.avail_out = out->cap - out->size;
		lzma_ret lr = lzma_code(&s, LZMA_FINISH);
		out->size = out->cap - s.avail_out;
		if (lr == LZMA_STREAM_END)
			break;
		if (lr != LZMA_OK) {
			r = lr == LZMA_MEM_ERROR ? -ENOMEM : -EIO;
			break;
		}
	}
	lzma_end(&s);
	return r;
}
#endif

#ifdef HAVE_ZLIB
/* casync: deflateInit2(Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 | 16, 8,
 * Z_DEFAULT_STRATEGY), Z_NO_FLUSH then Z_FINISH: a gzip member with no
 * name and mtime 0, so the bytes depend on the data only */
static int compress_gzip(const void *p, size_t n, struct ca_buf *out)
{
	z_stream s;
	int r = 0;
	memset(&s, 0, sizeof(s));
	if (deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 | 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	r = ca_buf_reserve(out, deflateBound(&s, n), SIZE_MAX);
	s.next_in = (Bytef *)p;
	s.avail_in = n;
	out->size = 0;
	while (r == 0) {
		if (out->size == out->cap && (r = ca_buf_reserve(out, out->cap * 2, SIZE_MAX)) < 0)
			break;
		s.next_out = out->data + out->size;
		s.avail_out = out->cap - out->size;
		int zr = deflate(&s, Z_FINISH);
		out->size = out->cap - s.avail_out;
		if (zr == Z_STREAM_END)
			break;
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			r = -EIO;
	}
	deflateEnd(&s);
	return r;
}
#endif

int ca_codec_set_compression(struct ca_codec *c, enum ca_compression type)
{
	switch (type) {
	case CA_COMPRESSION_ZSTD:
		break;
	case CA_COMPRESSION_XZ:
#ifndef HAVE_LZMA
		return -EOPNOTSUPP;
#endif
		break;
	case CA_COMPRESSION_GZIP:
#ifndef HAVE_ZLIB
		return -EOPNOTSUPP;
#endif
		break;
	default:
		return -EINVAL;
	}
	c->compression = type;
	return 0;
}

int ca_compression_parse(const char *name, enum ca_compression *ret)
{
	static const char *const names[] = {
		[CA_COMPRESSION_ZSTD] = "zstd",
		[CA_COMPRESSION_XZ] = "xz",
		[CA_COMPRESSION_GZIP] = "gzip",
	};
	if (!strcmp(name, "default")) { /* casync's word for zstd */
		*ret = CA_COMPRESSION_ZSTD;
		return 0;
	}
	for (size_t i = CA_COMPRESSION_ZSTD; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i])) {
			*ret = (enum ca_compression)i;
			return 0;
		}
	return -EINVAL;
}

int ca_codec_compress(struct ca_codec *c, const void *p, size_t n, struct ca_buf *out)
{
#ifdef HAVE_LZMA
	if (c->compression == CA_COMPRESSION_XZ)
		return compress_xz(p, n, out);
#endif
#ifdef HAVE_ZLIB
	if (c->compression == CA_COMPRESSION_GZIP)
		return compress_gzip(p, n, out);
#endif

	/* casync streams each chunk through ZSTD_compressStream + ZSTD_endStream
	 * without a pledged size; feeding the input with ZSTD_e_continue first
	 * keeps libzstd from inferring one, which would change the frame header. */
	size_t rc = ZSTD_CCtx_reset(c->cctx, ZSTD_reset_session_and_parameters);
	if (!ZSTD_isError(rc))
		rc = ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_compressionLevel, 3);
	if (ZSTD_isError(rc))
		return zstd_fail(rc, "setup");

	int r = ca_buf_reserve(out, ZSTD_compressBound(n) + 64, SIZE_MAX);
	if (r < 0)
		return r;
	ZSTD_inBuffer in = { p, n, 0 };
	ZSTD_outBuffer ob = { out->data, out->cap, 0 };
	while (in.pos < in.size) {
		rc = ZSTD_compressStream2(c->cctx, &ob, &in, ZSTD_e_continue);
		if (ZSTD_isError(rc))
			return zstd_fail(rc, "compress");
	}
	do {
		if (ob.pos == ob.size) {
			r = ca_buf_reserve(out, out->cap * 2, SIZE_MAX);
			if (r < 0)
				return r;
			ob.dst = out->data;
			ob.size = out->cap;
		}
		rc = ZSTD_compressStream2(c->cctx, &ob, &in, ZSTD_e_end);
		if (ZSTD_isError(rc))
			return zstd_fail(rc, "compress");
	} while (rc != 0);
	out->size = ob.pos;
	return 0;
}

static int grow(struct ca_buf *out, size_t limit)
{
	size_t want = out->cap < 65536 ? 65536 : out->cap * 2;
	if (out->cap >= limit)
		return -EBADMSG; /* more output than allowed */
	if (want > limit)
		want = limit;
	return ca_buf_reserve(out, want, limit);
}

/* casync writes one frame per chunk. Anything else is refused before a
 * byte is decoded: skippable frames or trailing bytes would let a 37 KB
 * chunk file carry 50 MiB of padding into the cache. */
static int zstd_one_frame(const uint8_t *p, size_t n, size_t limit)
{
	size_t fsize = ZSTD_findFrameCompressedSize(p, n);
	if (ZSTD_isError(fsize))
		return zstd_fail(fsize, "frame");
	if (fsize != n)
		return ca_log_debug_errno(-EBADMSG, "zstd: %zu bytes after the chunk's frame", n - fsize);
	unsigned long long cs = ZSTD_getFrameContentSize(p, n);
	if (cs == ZSTD_CONTENTSIZE_ERROR || (cs != ZSTD_CONTENTSIZE_UNKNOWN && cs > limit))
		return ca_log_debug_errno(-EBADMSG, "zstd: frame content size larger than the chunk");
	return 0;
}

static int decompress_zstd(struct ca_codec *c, const uint8_t *p, size_t n, struct ca_buf *out, size_t limit)
{
	int r = zstd_one_frame(p, n, limit);
	if (r < 0)
		return r;
	ZSTD_DCtx_reset(c->dctx, ZSTD_reset_session_only);
	/* room for all it may hold (the caller knew the size): decoded in one
	 * call straight into place, where streaming copies out of its window;
	 * more output than limit fails in libzstd (dst too small). libzstd's
	 * streaming decoder accepts some frames its one-shot decoder refuses
	 * (make fuzz found them): on a failure the streaming decoder has the
	 * last word, so a chunk gets one answer whether its size is known */
	if (limit > 0 && out->cap >= limit) {
		size_t rc = ZSTD_decompressDCtx(c->dctx, out->data, limit, p, n);
		if (!ZSTD_isError(rc)) {
			out->size = rc;
			return 0;
		}
		ZSTD_DCtx_reset(c->dctx, ZSTD_reset_session_only);
	}
	/* a frame that states its size lets us size the buffer once */
	unsigned long long fs = ZSTD_getFrameContentSize(p, n);
	if (fs != ZSTD_CONTENTSIZE_UNKNOWN) {
		r = ca_buf_reserve(out, fs + 1, limit + 1);
		if (r < 0)
			return r;
	}
	ZSTD_inBuffer in = { p, n, 0 };
	ZSTD_outBuffer ob = { out->data, out->cap, 0 };
	size_t rc;
	for (;;) {
		if (ob.pos == ob.size) {
			r = grow(out, limit + 1); /* one byte more: overlong output shows */
			if (r < 0)
				return r;
			ob.dst = out->data;
			ob.size = out->cap;
		}
		rc = ZSTD_decompressStream(c->dctx, &ob, &in);
		if (ZSTD_isError(rc))
			return zstd_fail(rc, "decompress");
		if (rc == 0)
			break; /* frame complete */
		if (in.pos == in.size && ob.pos < ob.size)
			return -EBADMSG; /* truncated */
	}
	if (in.pos != in.size)
		return -EBADMSG; /* one stream per chunk: trailing bytes are corruption */
	out->size = ob.pos;
	return 0;
}

#ifdef HAVE_LZMA
static int decompress_xz(const uint8_t *p, size_t n, struct ca_buf *out, size_t limit)
{
	lzma_stream s = LZMA_STREAM_INIT;
	int r = 0;
	/* one stream, and a decoder no bigger than casync's presets need
	 * (xz -9 wants 65 MiB): a header asking for more is refused */
	if (lzma_stream_decoder(&s, CA_XZ_MEMLIMIT, 0) != LZMA_OK)
		return -ENOMEM;
	s.next_in = p;
	s.avail_in = n;
	out->size = 0;
	for (;;) {
		if (out->size == out->cap && (r = grow(out, limit)) < 0)
			break;
		s.next_out = out->data + out->size;
		s.avail_out = out->cap - out->size;
		lzma_ret lr = lzma_code(&s, LZMA_FINISH);
		out->size = out->cap - s.avail_out;
		if (lr == LZMA_STREAM_END) {
			if (s.avail_in)
				r = -EBADMSG; /* one stream per chunk */
			break;
		}
		if (lr == LZMA_MEMLIMIT_ERROR)
			ca_log_debug("xz: the stream needs more than %u MiB to decode", CA_XZ_MEMLIMIT >> 20);
		if (lr != LZMA_OK) {
			r = -EBADMSG;
			break;
		}
	}
	lzma_end(&s);
	return r;
}
#endif

#ifdef HAVE_ZLIB
static int decompress_gzip(const uint8_t *p, size_t n, struct ca_buf *out, size_t limit)
{
	z_stream s;
	int r = 0;
	memset(&s, 0, sizeof(s));
	if (inflateInit2(&s, 15 + 16) != Z_OK)
		return -ENOMEM;
	s.next_in = (Bytef *)p;
	s.avail_in = n;
	out->size = 0;
	for (;;) {
		if (out->size == out->cap && (r = grow(out, limit)) < 0)
			break;
		s.next_out = out->data + out->size;
		s.avail_out = out->cap - out->size;
		int zr = inflate(&s, Z_NO_FLUSH);
		out->size = out->cap - s.avail_out;
		if (zr == Z_STREAM_END) {
			if (s.avail_in)
				r = -EBADMSG;
			break;
		}
		if (zr != Z_OK && !(zr == Z_BUF_ERROR && s.avail_out == 0)) {
			r = -EBADMSG;
			break;
		}
	}
	inflateEnd(&s);
	return r;
}
#endif

int ca_codec_decompress(struct ca_codec *c, const void *p, size_t n, struct ca_buf *out, size_t limit)
{
	int r;
	if (limit > CA_CHUNK_SIZE_LIMIT_MAX)
		limit = CA_CHUNK_SIZE_LIMIT_MAX;
	/* room for one byte more than allowed, so that the decoder never stalls
	 * on a full buffer exactly at the limit and overlong output shows */
	size_t cap = limit + 1;
	out->size = 0;
	switch (ca_compression_detect(p, n)) {
	case CA_COMPRESSION_ZSTD:
		r = decompress_zstd(c, p, n, out, limit);
		break;
#ifdef HAVE_LZMA
	case CA_COMPRESSION_XZ:
		r = decompress_xz(p, n, out, cap);
		break;
#endif
#ifdef HAVE_ZLIB
	case CA_COMPRESSION_GZIP:
		r = decompress_gzip(p, n, out, cap);
		break;
#endif
	default:
		return -EBADMSG;
	}
	if (r == 0 && out->size > limit)
		r = -EBADMSG;
	return r;
}

int ca_codec_decode_chunk(struct ca_codec *c, const void *p, size_t n, const uint8_t id[CA_CHUNK_ID_SIZE],
                          uint64_t expected_size, struct ca_buf *out)
{
	uint8_t got[CA_CHUNK_ID_SIZE];
	size_t limit = expected_size != UINT64_MAX && expected_size < CA_CHUNK_SIZE_LIMIT_MAX ?
	               (size_t)expected_size : CA_CHUNK_SIZE_LIMIT_MAX;
	int r;
	/* exactly the indexed size: the zstd one-shot path decodes into it and
	 * fails on more; the streaming decoders stop at the cap (+1 byte) */
	if (expected_size != UINT64_MAX) {
		r = ca_buf_reserve(out, limit, limit);
		if (r < 0)
			return r;
	}
	r = ca_codec_decompress(c, p, n, out, limit);
	if (r < 0)
		return r;
	if (expected_size != UINT64_MAX && out->size != expected_size)
		return -EBADMSG;
	r = ca_digest_once(c->digest, out->data, out->size, got);
	if (r < 0)
		return r;
	return memcmp(got, id, CA_CHUNK_ID_SIZE) ? -EBADMSG : 0;
}
