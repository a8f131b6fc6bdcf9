/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-s3.c - the pure parts of S3 stores: what an s3+ URL names
 * (path-style, ?lookup=dns, refusals), where credentials come from, and
 * the defensive ListObjectsV2 parser and chunk-key check (hostile pages:
 * no NUL, no overlong key, no unknown entity, truncated without token).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "net/s3.h"
#include "tap.h"

static void check_url(const char *url, const char *base, const char *bucket_url, const char *prefix)
{
	struct ca_s3_url u;
	check_int(ca_s3_url_parse(url, &u), ==, 0);
	check_str(u.base, base);
	check_str(u.bucket_url, bucket_url);
	check_str(u.prefix, prefix);
	ca_s3_url_clear(&u);
}

struct seen {
	char keys[8][128];
	uint64_t sizes[8];
	int n;
};

static int on_key(void *userdata, const char *key, uint64_t size)
{
	struct seen *s = userdata;
	if (s->n < 8) {
		snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", key);
		s->sizes[s->n] = size;
	}
	s->n++;
	return 0;
}

static int parse(const char *body, struct seen *s, bool *trunc, char *token)
{
	memset(s, 0, sizeof(*s));
	return ca_s3_parse_list(body, strlen(body), on_key, s, trunc, token);
}

int main(void)
{
	struct ca_logger quiet = { .level = CA_LOG_ERROR - 1 };
	ca_log_use(&quiet);
	check(ca_s3_is_url("s3+http://h/b"));
	check(ca_s3_is_url("S3+HTTPS://h/b"));
	check(!ca_s3_is_url("s3://h/b"));
	check_url("s3+http://h:9000/bkt/pre/fix/", "http://h:9000/bkt/pre/fix", "http://h:9000/bkt", "pre/fix/");
	check_url("s3+https://h/bkt", "https://h/bkt", "https://h/bkt", "");
	check_url("s3+http://h/bkt/p?lookup=dns", "http://bkt.h/p", "http://bkt.h", "p/");
	check_url("s3+http://h/bkt/p?lookup=path", "http://h/bkt/p", "http://h/bkt", "p/");
	check_url("s3+http://h/bkt/img.caidx", "http://h/bkt/img.caidx", "http://h/bkt", "img.caidx/");
	struct ca_s3_url u;
	check_int(ca_s3_url_parse("s3+http://h/", &u), ==, -EINVAL);
	check_int(ca_s3_url_parse("s3+http:///b", &u), ==, -EINVAL);
	check_int(ca_s3_url_parse("s3+http://k:s@h/b", &u), ==, -EINVAL);
	check_int(ca_s3_url_parse("s3+http://h/b?lookup=magic", &u), ==, -EINVAL);
	check_int(ca_s3_url_parse("s3+http://h/b%2f/x", &u), ==, -EINVAL);
	/* "." and ".." segments: an HTTP client squashes them, so requests
	 * would go to another bucket or prefix than the one named */
	check_int(ca_s3_url_parse("s3+http://h/../x", &u), ==, -EINVAL);
	check_int(ca_s3_url_parse("s3+http://h/./x", &u), ==, -EINVAL);
	check_int(ca_s3_url_parse("s3+http://h/b/../other/p", &u), ==, -EINVAL);
	check_int(ca_s3_url_parse("s3+http://h/b/p/..", &u), ==, -EINVAL);
	check_int(ca_s3_url_parse("s3+http://h/b/p/./q", &u), ==, -EINVAL);
	check_url("s3+http://h/b/..p/q..", "http://h/b/..p/q..", "http://h/b", "..p/q../");

	/* credentials: settings first, then AWS_*, then desync's S3_* */
	struct ca_s3_creds c;
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_REGION");
	setenv("S3_ACCESS_KEY", "dk", 1);
	setenv("S3_SECRET_KEY", "ds", 1);
	setenv("S3_REGION", "eu-west-3", 1);
	check_int(ca_s3_creds_resolve(NULL, &c), ==, 0);
	check_str(c.access_key, "dk");
	check_str(c.secret_key, "ds");
	check_str(c.region, "eu-west-3");
	check(c.session_token == NULL);
	ca_s3_creds_clear(&c);
	setenv("AWS_ACCESS_KEY_ID", "ak", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "as", 1);
	setenv("AWS_SESSION_TOKEN", "at", 1);
	check_int(ca_s3_creds_resolve(NULL, &c), ==, 0);
	check_str(c.access_key, "ak");
	check_str(c.session_token, "at");
	ca_s3_creds_clear(&c);
	struct ca_s3_settings set = { .access_key = "fk", .secret_key = "fs", .region = "r1" };
	check_int(ca_s3_creds_resolve(&set, &c), ==, 0);
	check_str(c.access_key, "fk");
	check_str(c.secret_key, "fs");
	check_str(c.region, "r1");
	check_str(c.session_token, "at"); /* field by field */
	ca_s3_creds_clear(&c);
	check(c.secret_key == NULL);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("S3_ACCESS_KEY");
	check_int(ca_s3_creds_resolve(NULL, &c), ==, -ENOKEY); /* a secret without a key */
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("S3_SECRET_KEY");
	unsetenv("S3_REGION");
	unsetenv("AWS_SESSION_TOKEN");
	check_int(ca_s3_creds_resolve(NULL, &c), ==, 0); /* none: unsigned, region by default */
	check(c.access_key == NULL);
	check_str(c.region, "us-east-1");
	ca_s3_creds_clear(&c);
	setenv("AWS_REGION", "x:y", 1);
	check_int(ca_s3_creds_resolve(NULL, &c), ==, -EINVAL);
	unsetenv("AWS_REGION");

	/* listings */
	struct seen s;
	bool trunc;
	char token[CA_S3_TOKEN_MAX];
	check_int(parse("<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>true</IsTruncated>"
	                "<Contents><Key>p/a&amp;b</Key><Size>12</Size></Contents>"
	                "<Contents><Key>p/c&#47;d</Key><Size>7</Size></Contents>"
	                "<NextContinuationToken>t+/=&lt;</NextContinuationToken></ListBucketResult>",
	                &s, &trunc, token),
	          ==, 0);
	check_int(s.n, ==, 2);
	check_str(s.keys[0], "p/a&b");
	check_u64(s.sizes[0], ==, 12);
	check_str(s.keys[1], "p/c/d");
	check(trunc);
	check_str(token, "t+/=<");
	check_int(parse("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>", &s, &trunc, token), ==, 0);
	check(!trunc && s.n == 0 && token[0] == 0);
	check_int(parse("<Error><Code>AccessDenied</Code></Error>", &s, &trunc, token), ==, -EBADMSG);
	check_int(parse("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", &s, &trunc, token), ==,
	          -EBADMSG); /* more, and no way to ask for it: never loop on page one */
	/* keys it cannot decode are skipped, not fatal */
	check_int(parse("<ListBucketResult><Contents><Key>a&bogus;</Key></Contents>"
	                "<Contents><Key>&#0;</Key></Contents><Contents><Key>ok</Key></Contents>"
	                "<Contents><Key>unterminated</Contents></ListBucketResult>",
	                &s, &trunc, token),
	          ==, 0);
	check_int(s.n, ==, 1);
	check_str(s.keys[0], "ok");
	char *huge = malloc(5000);
	strcpy(huge, "<ListBucketResult><Contents><Key>");
	memset(huge + strlen(huge), 'k', 3000);
	strcpy(huge + 33 + 3000, "</Key></Contents></ListBucketResult>");
	check_int(parse(huge, &s, &trunc, token), ==, 0);
	check_int(s.n, ==, 0); /* longer than any key we write: skipped */
	free(huge);

	/* keys of chunks, and nothing else */
	uint8_t id[CA_CHUNK_ID_SIZE];
	const char *hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char key[256];
	snprintf(key, sizeof(key), "pre/0123/%s.cacnk", hex);
	check_int(ca_s3_key_chunk_id(key, "pre/", id), ==, 0);
	check_int(id[0], ==, 0x01);
	check_int(ca_s3_key_chunk_id(key, "other/", id), ==, -EINVAL);
	snprintf(key, sizeof(key), "pre/0124/%s.cacnk", hex);
	check_int(ca_s3_key_chunk_id(key, "pre/", id), ==, -EINVAL); /* wrong directory */
	snprintf(key, sizeof(key), "pre/0123/%s", hex);
	check_int(ca_s3_key_chunk_id(key, "pre/", id), ==, -EINVAL); /* bare: not ours to delete */
	check_int(ca_s3_key_chunk_id("pre/img.caidx", "pre/", id), ==, -EINVAL);
	return tap_done();
}
