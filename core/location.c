/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* location.c - classify source strings (see location.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "location.h"

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
	if (scheme_is(s, "http") || scheme_is(s, "https"))
		return CA_LOCATION_HTTP;
	return CA_LOCATION_OTHER;
}

bool ca_location_is_remote(const char *s)
{
	return ca_location_kind(s) != CA_LOCATION_PATH;
}

bool ca_location_is_https(const char *s)
{
	return scheme_is(s, "https");
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

char *ca_location_default_store(const char *index)
{
	size_t n = ca_location_is_url(index) ? strcspn(index, "?#") : strlen(index);
	const char *slash = memrchr(index, '/', n);
	size_t dir = slash ? (size_t)(slash - index + 1) : 0;
	char *s = malloc(dir + sizeof("default.castr"));
	if (!s)
		return NULL;
	memcpy(s, index, dir);
	strcpy(s + dir, "default.castr");
	return s;
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
