/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* s3.c - s3+http(s) URLs, credentials and listings (see s3.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/digest.h"
#include "base/log.h"
#include "net/s3.h"
#include "base/secret.h"
#include "net/storeconf.h"

bool ca_s3_is_url(const char *s)
{
	return !strncasecmp(s, "s3+http://", 10) || !strncasecmp(s, "s3+https://", 11);
}

void ca_s3_url_clear(struct ca_s3_url *u)
{
	free(u->base);
	free(u->bucket_url);
	free(u->bucket);
	free(u->prefix);
	*u = (struct ca_s3_url){ 0 };
}

/* The value of ?lookup= in query q[0..n) (NULL-terminated copy into out), or "". */
static void query_lookup(const char *q, size_t n, char *out, size_t cap)
{
	out[0] = 0;
	for (size_t i = 0; i < n;) {
		size_t e = i;
		while (e < n && q[e] != '&' && q[e] != ';')
			e++;
		if (e - i > 7 && !memcmp(q + i, "lookup=", 7)) {
			size_t k = e - i - 7 < cap - 1 ? e - i - 7 : cap - 1;
			memcpy(out, q + i + 7, k);
			out[k] = 0;
		}
		i = e + 1;
	}
}

static bool bucket_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       (c >= 'A' && c <= 'Z');
}

int ca_s3_url_parse(const char *url, struct ca_s3_url *ret)
{
	struct ca_s3_url u = { 0 };
	const char *why = NULL;
	char lookup[16];
	if (!ca_s3_is_url(url)) {
		why = "not an s3+http(s) URL";
		goto bad;
	}
	u.https = !strncasecmp(url, "s3+https://", 11);
	const char *host = url + (u.https ? 11 : 10);
	size_t end = strcspn(host, "?#");
	const char *q = host[end] == '?' ? host + end + 1 : NULL;
	size_t qn = q ? strcspn(q, "#") : 0;
	size_t hn = strcspn(host, "/?#");
	if (hn == 0) {
		why = "no host";
		goto bad;
	}
	if (memchr(host, '@', hn)) {
		why = "credentials are never taken from a URL (use the environment)";
		goto bad;
	}
	const char *path = host + hn;
	size_t pn = end - hn;
	while (pn && *path == '/')
		path++, pn--;
	while (pn && path[pn - 1] == '/')
		pn--;
	size_t bn = 0;
	while (bn < pn && path[bn] != '/')
		bn++;
	if (bn == 0) {
		why = "no bucket (s3+http://HOST/BUCKET[/PREFIX])";
		goto bad;
	}
	for (size_t i = 0; i < bn; i++)
		if (!bucket_char(path[i])) {
			why = "invalid bucket name";
			goto bad;
		}
	/* an HTTP client squashes "." and ".." segments: the requests would
	 * go to another bucket or prefix than the one named */
	for (size_t i = 0; i < pn;) {
		size_t k = i;
		while (k < pn && path[k] != '/')
			k++;
		if ((k - i == 1 && path[i] == '.') || (k - i == 2 && path[i] == '.' && path[i + 1] == '.')) {
			why = "a \".\" or \"..\" in the bucket or prefix";
			goto bad;
		}
		i = k + 1;
	}
	query_lookup(q ? q : "", qn, lookup, sizeof(lookup));
	if (!strcmp(lookup, "dns"))
		u.vhost = true;
	else if (lookup[0] && strcmp(lookup, "path") && strcmp(lookup, "auto")) {
		why = "lookup must be path, dns or auto";
		goto bad;
	}
	const char *scheme = u.https ? "https://" : "http://";
	const char *pre = bn < pn ? path + bn + 1 : "";
	int pren = bn < pn ? (int)(pn - bn - 1) : 0;
	u.bucket = strndup(path, bn);
	if (!u.bucket)
		goto nomem;
	if (u.vhost) {
		if (asprintf(&u.bucket_url, "%s%s.%.*s", scheme, u.bucket, (int)hn, host) < 0)
			u.bucket_url = NULL;
	} else if (asprintf(&u.bucket_url, "%s%.*s/%s", scheme, (int)hn, host, u.bucket) < 0) {
		u.bucket_url = NULL;
	}
	if (!u.bucket_url)
		goto nomem;
	if (asprintf(&u.base, "%s%s%.*s", u.bucket_url, pren ? "/" : "", pren, pre) < 0) {
		u.base = NULL;
		goto nomem;
	}
	if (asprintf(&u.prefix, "%.*s%s", pren, pre, pren ? "/" : "") < 0) {
		u.prefix = NULL;
		goto nomem;
	}
	*ret = u;
	return 0;
nomem:
	ca_s3_url_clear(&u);
	return -ENOMEM;
bad:
	ca_s3_url_clear(&u);
	ca_log_error("%s: %s", url, why);
	return -EINVAL;
}


void ca_s3_creds_clear(struct ca_s3_creds *c)
{
	free(c->access_key);
	ca_secret_free(c->secret_key);
	ca_secret_free(c->session_token);
	free(c->region);
	*c = (struct ca_s3_creds){ 0 };
}

/* The first non-empty of a setting and two environment variables, copied
 * (*ret NULL when none); -ENOMEM. */
static int pick(const char *set, const char *env1, const char *env2, char **ret)
{
	const char *v = set && *set ? set : NULL;
	if (!v && (v = getenv(env1)) && !*v)
		v = NULL;
	if (!v && (v = getenv(env2)) && !*v)
		v = NULL;
	*ret = NULL;
	if (!v)
		return 0;
	*ret = strdup(v);
	return *ret ? 0 : -ENOMEM;
}

int ca_s3_creds_resolve(const struct ca_s3_settings *set, struct ca_s3_creds *ret)
{
	struct ca_s3_settings none = { 0 };
	struct ca_s3_creds c = { 0 };
	int r;
	if (!set)
		set = &none;
	if ((r = pick(set->access_key, "AWS_ACCESS_KEY_ID", "S3_ACCESS_KEY", &c.access_key)) < 0 ||
	    (r = pick(set->secret_key, "AWS_SECRET_ACCESS_KEY", "S3_SECRET_KEY", &c.secret_key)) < 0 ||
	    (r = pick(set->session_token, "AWS_SESSION_TOKEN", "S3_SESSION_TOKEN", &c.session_token)) < 0 ||
	    (r = pick(set->region, "AWS_REGION", "S3_REGION", &c.region)) < 0)
		goto fail;
	if (!c.region && !(c.region = strdup("us-east-1"))) {
		r = -ENOMEM;
		goto fail;
	}
	if (!c.access_key != !c.secret_key) {
		r = ca_log_error_errno(ENOKEY, "S3 credentials: %s is set but not %s",
		                       c.access_key ? "an access key" : "a secret key",
		                       c.access_key ? "AWS_SECRET_ACCESS_KEY (or S3_SECRET_KEY)" :
		                                      "AWS_ACCESS_KEY_ID (or S3_ACCESS_KEY)");
		goto fail;
	}
	/* the key and the token go into request headers as they are: a line
	 * break there would end the header and start another */
	for (const char *k = c.access_key; k && *k; k++)
		if ((unsigned char)*k < 0x20 || *k == 0x7f) {
			r = ca_log_error_errno(EINVAL, "S3 access key: holds a control character");
			goto fail;
		}
	for (const char *k = c.session_token; k && *k; k++)
		if ((unsigned char)*k < 0x20 || *k == 0x7f) {
			r = ca_log_error_errno(EINVAL, "S3 session token: holds a control character");
			goto fail;
		}
	/* the region goes into curl's "aws:amz:REGION:s3": nothing that could end it */
	if (strpbrk(c.region, ": \t\r\n") || strlen(c.region) > 48) {
		r = ca_log_error_errno(EINVAL, "S3 region '%s': invalid", c.region);
		goto fail;
	}
	if (c.secret_key || c.session_token)
		ca_secret_hold(); /* signing keys, kept for the requests to come */
	*ret = c;
	return 0;
fail:
	ca_s3_creds_clear(&c);
	return r;
}

int ca_s3_connect(const char *url, const struct ca_s3_settings *set, const struct ca_http_opts *in,
                  struct ca_s3_conn *ret)
{
	struct ca_s3_conn *c = ret;
	struct ca_storeconf *conf = NULL;
	struct ca_s3_settings from_file;
	*c = (struct ca_s3_conn){ 0 };
	int r = ca_s3_url_parse(url, &c->u);
	if (r == 0 && !set) {
		/* the store settings file's section for url (storeconf.h) */
		r = ca_storeconf_load(CA_STORECONF_QUIET, &conf);
		const struct ca_store_settings *s = r < 0 ? NULL : ca_storeconf_lookup(conf, url);
		if (s) {
			from_file = (struct ca_s3_settings){ s->aws_access_key_id, s->aws_secret_access_key,
			                                     s->aws_session_token, s->aws_region };
			set = &from_file;
		}
	}
	if (r == 0)
		r = ca_s3_creds_resolve(set, &c->creds); /* copies: conf may go */
	ca_storeconf_free(conf);
	if (r < 0)
		goto fail;
	if (in)
		c->http = *in;
	else
		ca_http_opts_init(&c->http);
	if (c->creds.access_key) {
		snprintf(c->sigv4, sizeof(c->sigv4), "aws:amz:%s:s3", c->creds.region);
		c->http.sigv4 = c->sigv4;
		c->http.sigv4_key = c->creds.access_key;
		c->http.sigv4_secret = c->creds.secret_key;
		c->http.sigv4_token = c->creds.session_token;
	}
	/* the object's URL: the store base, plus whatever the URL names past
	 * the bucket/prefix is already in base; the query (lookup=) is ours */
	c->http_url = strdup(c->u.base);
	if (!c->http_url) {
		r = -ENOMEM;
		goto fail;
	}
	return 0;
fail:
	ca_s3_conn_clear(c);
	return r;
}

void ca_s3_conn_clear(struct ca_s3_conn *c)
{
	ca_s3_url_clear(&c->u);
	ca_s3_creds_clear(&c->creds);
	free(c->http_url);
	*c = (struct ca_s3_conn){ 0 };
}

/* ---- listings ---- */

/* The text between <tag> and </tag> at or after p within [p, end), or
 * NULL; *ret_n its length. */
static const char *element(const char *p, const char *end, const char *tag, size_t *ret_n)
{
	char open[40], close[40];
	int on = snprintf(open, sizeof(open), "<%s>", tag), cn = snprintf(close, sizeof(close), "</%s>", tag);
	const char *a = memmem(p, (size_t)(end - p), open, (size_t)on);
	if (!a)
		return NULL;
	a += on;
	const char *b = memmem(a, (size_t)(end - a), close, (size_t)cn);
	if (!b)
		return NULL;
	*ret_n = (size_t)(b - a);
	return a;
}

/* XML text to a string: the five predefined entities and numeric ones
 * below 128 decoded; anything else (and a NUL) is -EBADMSG. */
static int xml_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t k = 0;
	static const struct {
		const char *e;
		char c;
	} ents[] = { { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' } };
	for (size_t i = 0; i < n;) {
		char c = s[i];
		if (c == 0)
			return -EBADMSG;
		if (c == '&') {
			size_t j;
			for (j = 0; j < sizeof(ents) / sizeof(ents[0]); j++) {
				size_t l = strlen(ents[j].e);
				if (i + l <= n && !memcmp(s + i, ents[j].e, l)) {
					c = ents[j].c;
					i += l;
					break;
				}
			}
			if (j == sizeof(ents) / sizeof(ents[0])) {
				unsigned v = 0;
				size_t l = 2;
				if (i + 3 >= n || s[i + 1] != '#')
					return -EBADMSG;
				while (i + l < n && s[i + l] >= '0' && s[i + l] <= '9' && v < 1000)
					v = v * 10 + (unsigned)(s[i + l++] - '0');
				if (i + l >= n || s[i + l] != ';' || v == 0 || v >= 128)
					return -EBADMSG;
				c = (char)v;
				i += l + 1;
			}
		} else {
			i++;
		}
		if (k + 1 >= cap)
			return -ENAMETOOLONG;
		out[k++] = c;
	}
	out[k] = 0;
	return 0;
}

int ca_s3_parse_list(const char *body, size_t n, ca_s3_list_fn fn, void *userdata, bool *ret_truncated,
                     char ret_token[CA_S3_TOKEN_MAX])
{
	const char *end = body + n, *p = body;
	size_t k;
	*ret_truncated = false;
	ret_token[0] = 0;
	if (!memmem(body, n, "<ListBucketResult", 17))
		return -EBADMSG;
	for (;;) {
		const char *c = element(p, end, "Contents", &k);
		if (!c)
			break;
		const char *ce = c + k;
		size_t kn, sn;
		const char *key = element(c, ce, "Key", &kn), *size = element(c, ce, "Size", &sn);
		char name[1024];
		uint64_t sz = 0;
		p = ce;
		if (!key || xml_decode(key, kn, name, sizeof(name)) < 0)
			continue; /* not a key we could have written */
		for (size_t i = 0; size && i < sn && size[i] >= '0' && size[i] <= '9' && sz < UINT64_MAX / 10; i++)
			sz = sz * 10 + (uint64_t)(size[i] - '0');
		int r = fn(userdata, name, sz);
		if (r)
			return r;
	}
	const char *t = element(body, end, "IsTruncated", &k);
	*ret_truncated = t && k == 4 && !memcmp(t, "true", 4);
	t = element(body, end, "NextContinuationToken", &k);
	if (t && xml_decode(t, k, ret_token, CA_S3_TOKEN_MAX) < 0) {
		ret_token[0] = 0; /* a decode stopped half-way left no NUL (found by fuzz-s3-list) */
		return -EBADMSG;
	}
	if (*ret_truncated && !ret_token[0])
		return -EBADMSG; /* more, but no way to ask for it */
	return 0;
}

int ca_s3_key_chunk_id(const char *key, const char *prefix, uint8_t ret_id[CA_CHUNK_ID_SIZE])
{
	return ca_s3_key_chunk_id_suffix(key, prefix, ".cacnk", ret_id);
}

int ca_s3_key_chunk_id_suffix(const char *key, const char *prefix, const char *suffix,
                              uint8_t ret_id[CA_CHUNK_ID_SIZE])
{
	size_t pn = strlen(prefix);
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	if (strncmp(key, prefix, pn))
		return -EINVAL;
	key += pn;
	/* XXXX/<64 hex><suffix> */
	if (strlen(key) != 4 + 1 + 64 + strlen(suffix) || key[4] != '/' || strcmp(key + 69, suffix) ||
	    memcmp(key, key + 5, 4))
		return -EINVAL;
	memcpy(hex, key + 5, 64);
	hex[64] = 0;
	return ca_id_from_hex(hex, ret_id) < 0 ? -EINVAL : 0;
}
