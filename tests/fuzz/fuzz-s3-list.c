/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-s3-list - the ListObjectsV2 answer parser (s3.c ca_s3_parse_list):
 * a page of XML an S3 server (or whoever answers in its place) wrote,
 * read by cafs gc to decide which objects to delete.
 *
 * Input: the body. Properties: 0, -EBADMSG or the callback's own value;
 * every key handed out is NUL-terminated within the decode buffer (1023
 * bytes) and holds no NUL; the continuation token is NUL-terminated in
 * CA_S3_TOKEN_MAX, and a truncated page that succeeds has one; a
 * callback that stops at the k-th key stops the parse there with its
 * value; two parses of the same bytes hand out the same keys (a hash) and
 * sizes; ca_s3_key_chunk_id on each key never reads past it.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "net/s3.h"

struct seen {
	unsigned n, stop_at;
	uint64_t hash;
};

static int on_key(void *userdata, const char *key, uint64_t size)
{
	struct seen *s = userdata;
	uint8_t id[CA_CHUNK_ID_SIZE];
	size_t n = strlen(key);
	fuzz_check(n < 1024, "a key of %zu bytes from a 1 KiB buffer", n);
	s->hash = (s->hash ^ fuzz_hash((const uint8_t *)key, n)) * 1099511628211ull + size;
	(void)ca_s3_key_chunk_id(key, "", id);
	(void)ca_s3_key_chunk_id(key, "pre/", id);
	if (++s->n == s->stop_at)
		return 4242;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen a = { 0 }, b = { 0 }, c = { 0 };
	char token[CA_S3_TOKEN_MAX], token2[CA_S3_TOKEN_MAX];
	bool trunc = false, trunc2 = false;
	if (size > (1u << 20))
		return 0;
	fuzz_log_quiet();
	/* the parser gets the body as the engine hands it over: not NUL-terminated */
	char *body = malloc(size ? size : 1);
	if (!body)
		return 0;
	memcpy(body, data, size);
	memset(token, 'x', sizeof(token));
	int r = ca_s3_parse_list(body, size, on_key, &a, &trunc, token);
	fuzz_check(r == 0 || r == -EBADMSG, "parse returned %d", r);
	fuzz_check(memchr(token, 0, sizeof(token)) != NULL, "the token is not NUL-terminated");
	if (r == 0 && trunc)
		fuzz_check(token[0], "a truncated page without a continuation token was accepted");
	int r2 = ca_s3_parse_list(body, size, on_key, &b, &trunc2, token2);
	fuzz_check(r == r2 && a.n == b.n && a.hash == b.hash && trunc == trunc2 && !strcmp(token, token2),
	           "two parses of the same page differ");
	if (a.n > 0) {
		c.stop_at = 1 + (unsigned)(fuzz_hash(data, size) % a.n);
		r2 = ca_s3_parse_list(body, size, on_key, &c, &trunc2, token2);
		fuzz_check(r2 == 4242 && c.n == c.stop_at, "a callback's stop was not obeyed (%d, %u of %u)", r2, c.n,
		           c.stop_at);
	}
	free(body);
	ca_log_use(NULL);
	return 0;
}
