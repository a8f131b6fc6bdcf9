/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-location - the source-string parser (location.c): what a command
 * line or an API caller names, path or URL, and the names derived from it.
 *
 * Input: the string (up to its first NUL). Properties: the predicates
 * agree with each other (a path has a local path, a URL other than file://
 * is remote, https is HTTP); the default store is "<dir>/default.castr"
 * with <dir> a prefix of the input; the base name is a usable file name
 * (non-empty, no '/', not "." or "..").
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "base/location.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	char *s = strndup((const char *)data, size);
	if (!s)
		return 0;
	enum ca_location_kind kind = ca_location_kind(s);
	bool url = ca_location_is_url(s), remote = ca_location_is_remote(s), https = ca_location_is_https(s);
	const char *path = ca_location_path(s);

	fuzz_check(remote == (kind != CA_LOCATION_PATH), "is_remote vs kind");
	fuzz_check(!https || kind == CA_LOCATION_HTTP, "https but not HTTP");
	fuzz_check((path != NULL) == (kind == CA_LOCATION_PATH), "path vs kind");
	fuzz_check(url || (kind == CA_LOCATION_PATH && path == s), "not a URL but not its own path");
	if (path)
		fuzz_check(path >= s && path <= s + strlen(s), "path points outside the string");
	if (url)
		fuzz_check(strstr(s, "://") != NULL, "a URL without ://");

	enum ca_image_kind ik = ca_location_image_kind(s);
	fuzz_check(ik >= CA_IMAGE_UNKNOWN && ik <= CA_IMAGE_ARCHIVE, "image kind");

	/* parsed once, it answers as the one-question functions do */
	struct ca_location l;
	ca_location_parse(s, &l);
	fuzz_check(l.s == s && l.kind == kind && l.url == url && l.https == https && l.path == path, "parse vs the questions");
	fuzz_check(l.image == ik && l.ssh_host_len == ca_location_ssh_host_len(s), "parse: image kind or ssh host");
	fuzz_check(!l.s3 || (kind == CA_LOCATION_HTTP && !strncasecmp(s, "s3+http", 7)), "s3 but not an s3+http(s) URL");
	fuzz_check(l.end <= strlen(s) && (url || l.end == strlen(s)), "parse: end");
	fuzz_check((l.scheme_len > 0) == url && (!url || !memcmp(s + l.scheme_len, "://", 3)), "parse: scheme");

	char *store = ca_location_default_store(s);
	size_t store_n = store ? strlen(store) : 0, castr_n = strlen("default.castr");
	/* a registry's repository: the index's directory, whatever its last
	 * name ends with ("oci+https://hdefault.castr/" has a host whose name
	 * ends so: its repository is still the host's root) */
	bool oci_repo = store && ca_location_is_oci(s) && store_n < strlen(s) && !memcmp(store, s, store_n) &&
	                s[store_n] == '/';
	if (store && ca_location_is_oci(s) && (store_n < castr_n || strcmp(store + store_n - castr_n, "default.castr"))) {
		/* a registry's index is a tag of its repository, and so are
		 * the chunks: the store is the repository, the index's directory
		 * (one with no repository, a bare host, is below: its root) */
		size_t n = strlen(store);
		fuzz_check(n < strlen(s) && !memcmp(store, s, n) && s[n] == '/', "oci: default store '%s' is not the repository",
		           store);
	} else if (store && !oci_repo) {
		size_t n = strlen(store), k = strlen("default.castr");
		fuzz_check(n >= k && !strcmp(store + n - k, "default.castr"), "default store '%s'", store);
		/* its directory is the input's; but a URL with no path
		 * ("https://h.caidx") names a host: the store is at its root */
		const char *auth = ca_location_is_url(s) ? strstr(s, "://") : NULL;
		bool host_root = auth && n > k && store[n - k - 1] == '/' && !memcmp(store, s, n - k - 1) &&
		                 (size_t)(auth + 3 - s) <= n - k - 1 &&
		                 !memchr(auth + 3, '/', (size_t)(s + (n - k - 1) - (auth + 3)));
		fuzz_check(!memcmp(store, s, n - k) || host_root, "the default store's directory is not the input's");
		/* beside the index's name: after its directory's '/', or after the
		 * "HOST:" of casync's SSH remoting ("host:x.caidx") */
		fuzz_check(n == k || store[n - k - 1] == '/' || (ca_location_ssh_host_len(s) == n - k - 1 && store[n - k - 1] == ':'),
		           "default store '%s': no '/' (or HOST:) before the name", store);
	}
	char *base = ca_location_basename(s);
	if (base) {
		fuzz_check(base[0] && !strchr(base, '/') && strcmp(base, ".") && strcmp(base, ".."),
		           "basename '%s'", base);
	}
	free(store);
	free(base);
	free(s);
	return 0;
}
