/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * endpoint.h - a remote location resolved once: the string parsed
 * (base/location.h), its section of the store settings file looked up
 * (storeconf.h), and for an s3+http(s):// URL its bucket, prefix, region
 * and credentials resolved (s3.h). What remote stores (remote.h), remote
 * files (remote_file.h) and whole-file GETs are opened with, so that none
 * of them classifies the string or reads the settings file again.
 *
 * The settings file is read once by whoever opens several endpoints (an
 * image's open: its index, the files beside it, every store) and shared:
 * a loaded struct ca_storeconf is read-only (storeconf.h).
 *
 * The files published beside an index (its signature, sidecar, profile)
 * are fetched with the index's endpoint (ca_endpoint_beside): the same
 * section of the settings file and, for S3, the same bucket and
 * credentials.
 *
 * An endpoint points into itself (the S3 signing options): it is filled
 * in place and never copied. Its http options point into the settings it
 * was resolved with, which must outlive it (ca_http_new copies them).
 */
#ifndef CA_ENDPOINT_H
#define CA_ENDPOINT_H

#include <stdbool.h>

#include "base/location.h"
#include "net/http.h"
#include "net/s3.h"
#include "net/storeconf.h"

struct ca_endpoint {
	char *url;                /* as given: messages, the settings file's key */
	struct ca_location loc;   /* url parsed (points into url) */
	const char *fetch_url;    /* the http(s) URL requests go to: url, or an s3+ URL's object */
	struct ca_http_opts http; /* the caller's, the section's overlaid, S3 signing */
	bool store_query;         /* the section passes a store URL's query on (storeconf.h) */
	const struct ca_store_settings *settings; /* url's section, or NULL; points into conf */
	struct ca_s3_conn s3;     /* an s3+ URL's bucket and credentials; zeroed for others */
	struct ca_storeconf *own_conf; /* loaded here when none was given */
};

/* Resolve url (an http(s), s3+http(s) or oci+http(s) URL, the last a
 * registry's, oci.h, whose fetch_url is not used; -EINVAL for anything else,
 * not logged) with the HTTP settings o (NULL: http.h's defaults) and the
 * settings file conf (NULL: read it here). S3 errors are logged (s3.h).
 * e is cleared on failure. */
int ca_endpoint_init(struct ca_endpoint *e, const char *url, const struct ca_http_opts *o,
                     const struct ca_storeconf *conf);

/* The same with S3 credentials set (NULL: the section's, as above)
 * instead of the section's aws-* keys: for a writer given its own. */
int ca_endpoint_init_s3(struct ca_endpoint *e, const char *url, const struct ca_s3_settings *set,
                        const struct ca_http_opts *o, const struct ca_storeconf *conf);

/* The file published beside of's URL (location.h ca_location_beside:
 * suffix before the query) with of's settings and credentials. */
int ca_endpoint_beside(struct ca_endpoint *e, const struct ca_endpoint *of, const char *suffix);

/* Wipe and free. Accepts a zeroed struct. */
void ca_endpoint_clear(struct ca_endpoint *e);

#endif
