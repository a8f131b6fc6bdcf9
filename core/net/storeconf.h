/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * storeconf.h - the store settings file: per-URL-prefix HTTP settings
 * (headers, basic auth, netrc, client certificate, CA file, timeouts,
 * retries, connections, S3 credentials), as desync's store-options.
 * (Not "config.h": that name is autoconf's, included by every file.)
 *
 * Files, read in this order, a later one's section replacing an earlier
 * one's section of the same prefix whole:
 *   /etc/cafs/cafs.conf
 *   $XDG_CONFIG_HOME/cafs/cafs.conf (XDG_CONFIG_HOME absolute, else
 *   $HOME/.config/cafs/cafs.conf)
 * $CAFS_CONFIG=FILE replaces both: only FILE is read (it must exist; an
 * empty CAFS_CONFIG reads none). A missing default file is no error.
 *
 * Format (docs/cafs.1, STORE SETTINGS FILE):
 *   # a comment (a line whose first non-blank is '#' or ';')
 *   [https://host:port/some/prefix/]
 *   key = value
 * A section names a URL prefix: scheme://host[:port][/path...], no
 * userinfo; a prefix naming no path ends at the host ("/" is added). A
 * local store's section is its absolute path ([/srv/store], the same as
 * [file:///srv/store]); a local path looked up is made absolute first
 * (its real path where it exists, else its parent's).
 * Prefixes compare byte for byte, except scheme and host ignore case; a
 * URL's userinfo is removed before it is compared (so "https://a@b/"
 * never matches a section for https://a/). The longest matching prefix
 * wins, alone: settings are not inherited from shorter prefixes.
 *
 * The file holds secrets, and this module enforces the rules on it:
 *  - refused (an error) when not a regular file, not owned by root or the
 *    effective user, or writable by group or others;
 *  - a warning (not with CA_STORECONF_QUIET) when it holds a secret
 *    (header, password, client-key-password, aws-secret-access-key,
 *    aws-session-token, encryption-key) and group or others may read it;
 *  - a malformed line, an unknown key, a key given twice in a section, a
 *    section given twice in one file, a value out of range or holding a
 *    control character: an error naming FILE:LINE and what is wrong,
 *    never the value (it may be a secret).
 * Errors are logged (one line) and returned: -EINVAL for a bad file,
 * -EPERM for its ownership or mode, -ENOENT for a missing CAFS_CONFIG, or
 * the errno reading it; -ENOMEM.
 *
 * Threads: a loaded struct ca_storeconf is read-only and may be shared;
 * loading touches no global state. Messages go to the caller's logger.
 */
#ifndef CA_STORECONF_H
#define CA_STORECONF_H

#include <stdbool.h>
#include <stddef.h>

#include "net/http.h"

#define CA_STORECONF_SYSTEM "/etc/cafs/cafs.conf"
#define CA_STORECONF_FILE_MAX ((size_t)1 << 20)

/* What a section sets. Strings are NULL and numbers 0 (retries -1,
 * netrc and store_query CA_SET_UNSET) when the section does not set them. */
enum { CA_SET_UNSET = -1, CA_SET_NO = 0, CA_SET_YES = 1 };
struct ca_store_settings {
	const char *prefix;         /* the section's URL prefix (normalised) */
	char **headers;             /* "Name: value" lines, in file order */
	size_t n_headers;
	char *user, *password;      /* basic auth (libcurl: sent to this host only) */
	int netrc;                  /* yes/no, or yes with netrc_file */
	char *netrc_file;
	char *client_cert, *client_key, *client_key_password; /* PEM files */
	char *ca_file;
	unsigned connect_timeout_s; /* 1..3600 */
	unsigned low_speed_limit;   /* bytes/s, 1..2^30 */
	unsigned low_speed_time_s;  /* 1..3600 */
	unsigned deadline_s;        /* 1..86400 */
	int retries;                /* 0..20 */
	unsigned connections;       /* 1..256 */
	int store_query;            /* pass a store URL's query on to its chunk URLs */
	/* for s3+http(s):// stores (net/s3*.c); not used by the HTTP engine */
	char *aws_access_key_id, *aws_secret_access_key, *aws_session_token, *aws_region;
	/* chunks encrypted at rest (store/crypt.h): the algorithm (0: none),
	 * the key as 64 hex digits or an absolute key file's name */
	int encryption;
	char *encryption_key, *encryption_key_file;
};

struct ca_storeconf;

#define CA_STORECONF_QUIET 1u /* no warning about a readable file */

/* Read the files above (an empty set when there are none). */
int ca_storeconf_load(unsigned flags, struct ca_storeconf **ret);
/* Read one file, checked as above (missing: -ENOENT, logged). */
int ca_storeconf_load_file(struct ca_storeconf *c, const char *path, unsigned flags);
/* An empty set, for ca_storeconf_parse. */
int ca_storeconf_new(struct ca_storeconf **ret);
/* Add the sections of text[0..len) (NUL bytes refused), name being what
 * messages call it. On error c is left as it was before the call. */
int ca_storeconf_parse(struct ca_storeconf *c, const char *name, const char *text, size_t len);
/* Accepts NULL. Wipes the secrets before freeing them. */
void ca_storeconf_free(struct ca_storeconf *c);

/* The settings for url: those of the longest matching prefix, or NULL.
 * Points into c. */
const struct ca_store_settings *ca_storeconf_lookup(const struct ca_storeconf *c, const char *url);

/* Overlay s on o: what s sets replaces o's value (o's strings then point
 * into s, which must outlive o's use: ca_http_new copies them). */
void ca_storeconf_apply(const struct ca_store_settings *s, struct ca_http_opts *o);

/* A URL's settings are applied in one place: an endpoint (endpoint.h)
 * looks the URL up once and overlays its section on the caller's options. */

/* The store beside index (location.h ca_location_default_store), with
 * index's query kept when that store's settings in c (loaded) say
 * store-query = yes (malloc'd; NULL on ENOMEM). */
char *ca_storeconf_default_store(const struct ca_storeconf *c, const char *index);

/* The encryption of the store at location (a URL or a local path) by
 * its section in c: *ret NULL when it has none, else a context holding
 * the key from encryption-key, encryption-key-file or, when the section
 * names neither, $CAFS_ENCRYPTION_KEY. Errors are logged as "store
 * LOCATION: ..." without the key: a missing or malformed key, a key file
 * refused (crypt.h). Loading a key makes the process not dumpable
 * (secret.h). */
struct ca_crypt;
int ca_storeconf_crypt(const struct ca_storeconf *c, const char *location, struct ca_crypt **ret);
/* The same with location's section s looked up already (an endpoint's;
 * NULL: none). */
int ca_storeconf_crypt_of(const struct ca_store_settings *s, const char *location, struct ca_crypt **ret);

/* A local store at path, with its section's encryption (above); c NULL:
 * the files are read here. Logs. */
struct ca_store;
int ca_storeconf_open_store(const struct ca_storeconf *c, const char *path, struct ca_store **ret);

/* Indexes are never encrypted: -EPERM (logged) when the section of the
 * place an index is to be written (a URL or a local path) enables
 * encryption, rather than publish it where readers expect chunks only;
 * 0 otherwise. c NULL: the files are read here. */
int ca_storeconf_check_index(const struct ca_storeconf *c, const char *location);

/* Load the files once, with warnings, and forget them: for a program's
 * start, so a bad file is one line before any work. */
int ca_storeconf_check(void);

#endif
