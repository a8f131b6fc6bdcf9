/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seed.c - chunk a stream and report (id, offset, bytes) per chunk. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/buf.h"
#include "chunk/chunker.h"
#include "chunk/seed.h"

#define READ_SIZE (1u << 20)

struct ca_seeder {
	struct ca_chunker chunker;
	struct ca_digest *digest;
	ca_seed_chunk_fn fn;
	void *userdata;
	struct ca_buf chunk;   /* bytes of the chunk being built (<= max) */
	uint64_t chunk_start;  /* its offset in the stream */
	uint64_t fed;
};

int ca_seeder_new(uint64_t min, uint64_t avg, uint64_t max, enum ca_digest_type digest, ca_seed_chunk_fn fn,
                  void *userdata, struct ca_seeder **ret)
{
	struct ca_seeder *s = calloc(1, sizeof(*s));
	int r;
	if (!s)
		return -ENOMEM;
	r = ca_chunker_init(&s->chunker, min, avg, max);
	if (r < 0)
		goto fail;
	r = ca_digest_new(digest, &s->digest);
	if (r < 0)
		goto fail;
	s->fn = fn;
	s->userdata = userdata;
	*ret = s;
	return 0;
fail:
	ca_seeder_free(s);
	return r;
}

void ca_seeder_free(struct ca_seeder *s)
{
	if (!s)
		return;
	ca_digest_free(s->digest);
	ca_buf_release(&s->chunk);
	free(s);
}

static int emit(struct ca_seeder *s, const uint8_t *p, size_t n)
{
	uint8_t id[CA_CHUNK_ID_SIZE];
	int r = ca_digest_once(s->digest, p, n, id);
	if (r < 0)
		return r;
	r = s->fn(id, s->chunk_start, p, n, s->userdata);
	s->chunk_start += n;
	return r;
}

int ca_seeder_feed(struct ca_seeder *s, const void *data, size_t n)
{
	const uint8_t *p = data;
	int r;
	s->fed += n;
	while (n > 0) {
		size_t k = ca_chunker_scan(&s->chunker, p, n);
		if (k == CA_CHUNKER_NO_CUT) {
			r = ca_buf_append(&s->chunk, p, n, (size_t)s->chunker.max);
			return r == -EFBIG ? -EINVAL : r; /* the chunker cuts at max: cannot happen */
		}
		if (s->chunk.size == 0) {
			/* the whole chunk is in the caller's buffer: no copy */
			r = emit(s, p, k);
		} else {
			r = ca_buf_append(&s->chunk, p, k, (size_t)s->chunker.max);
			if (r == 0)
				r = emit(s, s->chunk.data, s->chunk.size);
			s->chunk.size = 0;
		}
		if (r != 0)
			return r;
		p += k;
		n -= k;
	}
	return 0;
}

int ca_seeder_finish(struct ca_seeder *s)
{
	if (s->chunk.size == 0)
		return 0;
	int r = emit(s, s->chunk.data, s->chunk.size);
	s->chunk.size = 0;
	return r;
}

int ca_seeder_feed_fd(struct ca_seeder *s, int fd)
{
	uint8_t *buf = malloc(READ_SIZE);
	int r = 0;
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t k = read(fd, buf, READ_SIZE);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = -errno;
			break;
		}
		if (k == 0) {
			r = ca_seeder_finish(s);
			break;
		}
		r = ca_seeder_feed(s, buf, (size_t)k);
		if (r != 0)
			break;
	}
	free(buf);
	return r;
}

uint64_t ca_seeder_offset(const struct ca_seeder *s)
{
	return s->fed;
}
