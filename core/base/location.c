/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* location.c - classify source strings (see location.h). */
#include "config.h"

#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/location.h"

/* Length of the scheme of "scheme://...", or 0 when s is not a URL. */
static size_t scheme_len(const char *s)
{
	const char *p = strstr(s, "://");
	if (!p || p == s)
		return 0;
	for (const char *q = s; q < p; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '+' ||
		      *q == '-' || *q == '.'))
			return 0;
	return (size_t)(p - s);
}

static bool scheme_is(const char *s, const char *scheme)
{
	size_t n = scheme_len(s);
	return n && n == strlen(scheme) && !strncasecmp(s, scheme, n);
}

bool ca_location_is_url(const char *s)
{
	return scheme_len(s) > 0;
}

enum ca_location_kind ca_location_kind(const char *s)
{
	if (!ca_location_is_url(s) || scheme_is(s, "file"))
		return CA_LOCATION_PATH;
	if (scheme_is(s, "http") || scheme_is(s, "https") || scheme_is(s, "s3+http") || scheme_is(s, "s3+https") ||
	    scheme_is(s, "oci+http") || scheme_is(s, "oci+https"))
		return CA_LOCATION_HTTP;
	return CA_LOCATION_OTHER;
}

void ca_location_parse(const char *s, struct ca_location *ret)
{
	size_t n = scheme_len(s);
	*ret = (struct ca_location){
		.s = s,
		.url = n > 0,
		.scheme_len = n,
		.kind = ca_location_kind(s),
		.https = ca_location_is_https(s),
		.s3 = scheme_is(s, "s3+http") || scheme_is(s, "s3+https"),
		.oci = ca_location_is_oci(s),
		.path = ca_location_path(s),
		.ssh_host_len = ca_location_ssh_host_len(s),
		.end = n ? strcspn(s, "?#") : strlen(s),
		.image = ca_location_image_kind(s),
	};
}

bool ca_location_is_remote(const char *s)
{
	return ca_location_kind(s) != CA_LOCATION_PATH;
}

bool ca_location_is_https(const char *s)
{
	return scheme_is(s, "https") || scheme_is(s, "s3+https") || scheme_is(s, "oci+https");
}

bool ca_location_is_oci(const char *s)
{
	return scheme_is(s, "oci+http") || scheme_is(s, "oci+https");
}

const char *ca_location_path(const char *s)
{
	if (!ca_location_is_url(s))
		return s;
	if (scheme_is(s, "file"))
		return s + strlen("file://");
	return NULL;
}

static bool has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && !memcmp(s + n - k, suffix, k);
}

enum ca_image_kind ca_location_image_kind(const char *name)
{
	size_t n = ca_location_is_url(name) ? strcspn(name, "?#") : strlen(name);
	if (has_suffix(name, n, ".caibx"))
		return CA_IMAGE_BLOB_INDEX;
	if (has_suffix(name, n, ".caidx"))
		return CA_IMAGE_ARCHIVE_INDEX;
	if (has_suffix(name, n, ".catar"))
		return CA_IMAGE_ARCHIVE;
	return CA_IMAGE_UNKNOWN;
}

size_t ca_location_ssh_host_len(const char *s)
{
	static const char host[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";
	size_t n;
	/* a leading '-' would be an option to ssh ("-Fevil:x" reads ./evil as
	 * its config): such a name is a local path */
	if (ca_location_is_url(s) || s[0] == '/' || s[0] == '-' || !strncmp(s, "./", 2))
		return 0;
	n = strspn(s, host);
	if (n == 0)
		return 0;
	if (s[n] == '@') {
		size_t k = strspn(s + n + 1, host);
		if (k == 0)
			return 0;
		n += 1 + k;
	}
	return s[n] == ':' && s[n + 1] ? n : 0;
}

char *ca_location_default_store(const char *index)
{
	size_t n = ca_location_is_url(index) ? strcspn(index, "?#") : strlen(index);
	const char *slash = memrchr(index, '/', n);
	size_t dir = slash ? (size_t)(slash - index + 1) : 0;
	const char *authority = ca_location_is_url(index) ? strstr(index, "://") : NULL;
	bool root = false;
	if (!slash && ca_location_ssh_host_len(index))
		dir = ca_location_ssh_host_len(index) + 1; /* "host:x.caidx" -> "host:default.castr" */
	/* "https://h.caidx" names a host, not a file: the store is at its root,
	 * never "https://default.castr", another host */
	if (authority && slash && slash < authority + 3) {
		dir = n;
		root = true;
	}
	/* a registry: the index is a tag of its repository, and so are the
	 * chunks (net/oci.h): the store is the repository itself */
	if (ca_location_is_oci(index) && slash && !root)
		return strndup(index, (size_t)(slash - index));
	char *s = malloc(dir + 1 + sizeof("default.castr"));
	if (!s)
		return NULL;
	memcpy(s, index, dir);
	strcpy(s + dir, root ? "/default.castr" : "default.castr");
	return s;
}

char *ca_location_beside(const char *index, const char *suffix)
{
	char *r = NULL;
	/* a query means something only to a server: in a path (file:// too,
	 * ca_location_path), "?" is a name's */
	size_t n = ca_location_kind(index) == CA_LOCATION_HTTP ? strcspn(index, "?#") : strlen(index);
	if (asprintf(&r, "%.*s%s%s", (int)n, index, suffix, index + n) < 0)
		return NULL;
	return r;
}

char *ca_location_basename(const char *s)
{
	size_t n = ca_location_is_url(s) ? strcspn(s, "?#") : strlen(s);
	while (n > 1 && s[n - 1] == '/')
		n--;
	const char *slash = memrchr(s, '/', n);
	const char *b = slash ? slash + 1 : s;
	size_t k = n - (size_t)(b - s);
	static const char *const suffixes[] = { ".caibx", ".caidx", ".catar" };
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (k > 6 && !memcmp(b + k - 6, suffixes[i], 6))
			k -= 6;
	if (k == 0 || (k == 1 && b[0] == '.') || (k == 2 && b[0] == '.' && b[1] == '.'))
		return strdup("image");
	return strndup(b, k);
}

/* ---- redaction ---- */

struct sink {
	char *out;
	size_t cap, len; /* len < cap always: room for the NUL */
};

static void put(struct sink *k, const char *s, size_t n)
{
	size_t room = k->cap - 1 - k->len;
	if (n > room)
		n = room;
	memcpy(k->out + k->len, s, n);
	k->len += n;
	k->out[k->len] = 0;
}

static bool scheme_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
	       c == '.';
}

/* One URL u[0..n) (it has "://" at u + scheme), redacted into k. */
static void put_url(struct sink *k, const char *u, size_t n, size_t scheme)
{
	size_t a = scheme + 3;                 /* the authority starts here */
	size_t e = a;                          /* and ends at the path, query or fragment */
	while (e < n && u[e] != '/' && u[e] != '?' && u[e] != '#')
		e++;
	const char *at = memrchr(u + a, '@', e - a);
	put(k, u, a);
	if (at) {
		put(k, "***@", 4);
		a = (size_t)(at - u) + 1;
	}
	size_t q = e;
	while (q < n && u[q] != '?' && u[q] != '#')
		q++;
	put(k, u + a, q - a);
	if (q < n)
		put(k, "?***", 4);
}

size_t ca_location_redact_text(const char *text, char *out, size_t cap)
{
	struct sink k = { out, cap, 0 };
	const char *p = text;
	out[0] = 0;
	for (;;) {
		const char *m = strstr(p, "://");
		if (!m) {
			put(&k, p, strlen(p));
			break;
		}
		const char *s = m;
		while (s > p && scheme_char(s[-1]))
			s--;
		/* a scheme starts with a letter */
		while (s < m && !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			s++;
		if (s == m) {
			put(&k, p, (size_t)(m + 3 - p));
			p = m + 3;
			continue;
		}
		const char *e = m + 3;
		while (*e && *e != ' ' && *e != '\t' && *e != '\n' && *e != '"' && *e != '\'' && *e != '<' &&
		       *e != '>')
			e++;
		while (e > m + 3 && strchr(":,;).", e[-1]))
			e--;
		put(&k, p, (size_t)(s - p));
		put_url(&k, s, (size_t)(e - s), (size_t)(m - s));
		p = e;
	}
	return k.len;
}

char *ca_location_redact(const char *s)
{
	size_t n = strlen(s);
	size_t cap = n + 8; /* "***@" and "?***" may be longer than what they replace */
	char *out = malloc(cap);
	if (!out)
		return NULL;
	struct sink k = { out, cap, 0 };
	out[0] = 0;
	size_t scheme = scheme_len(s);
	if (scheme)
		put_url(&k, s, n, scheme);
	else
		put(&k, s, n);
	return out;
}
