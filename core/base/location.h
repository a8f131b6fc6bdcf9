/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * location.h - what a source string names: the one place that tells a
 * local path from a URL, strips file://, and names things by suffix.
 *
 * casync's rules: "scheme://..." is a URL (a scheme is letters, digits,
 * '+', '-', '.'; schemes compare case-insensitively); anything else is a
 * path. file:// URLs are local paths. What an image is (.caibx, .caidx,
 * .catar) is decided by the name's suffix, ignoring a URL's query and
 * fragment.
 *
 * Pure functions on strings: no I/O, thread-safe.
 */
#ifndef CA_LOCATION_H
#define CA_LOCATION_H

#include <stdbool.h>
#include <stddef.h>

enum ca_location_kind {
	CA_LOCATION_PATH,  /* a local path, or file://PATH */
	CA_LOCATION_HTTP,  /* http://, https://, or an S3 store or object: s3+http(s):// (s3.h) */
	CA_LOCATION_OTHER, /* a URL we cannot read (ssh://, s3://, ...) */
};

enum ca_location_kind ca_location_kind(const char *s);


/* scheme://... (file:// included), as casync tells a URL from a path. */
bool ca_location_is_url(const char *s);

/* true for anything not on this machine: a URL other than file://. */
bool ca_location_is_remote(const char *s);

/* true for https:// and s3+https:// (any case): TLS. */
bool ca_location_is_https(const char *s);
/* true for oci+http:// and oci+https:// (any case): a registry (net/oci.h). */
bool ca_location_is_oci(const char *s);

/* The local path s names: s itself, or what follows file:// (any case).
 * NULL for a URL of another scheme. Points into s. */
const char *ca_location_path(const char *s);

enum ca_image_kind {
	CA_IMAGE_UNKNOWN,
	CA_IMAGE_BLOB_INDEX,    /* .caibx: one file's bytes */
	CA_IMAGE_ARCHIVE_INDEX, /* .caidx: a .catar stream in chunks */
	CA_IMAGE_ARCHIVE,       /* .catar */
};

/* By suffix, as casync decides (URLs too: query and fragment ignored). */
enum ca_image_kind ca_location_image_kind(const char *name);

/* A source or store string parsed once: what every later step asks of it
 * (its kind, whether it is TLS or S3, its local path, its ssh host, where
 * its query starts) without classifying the string again. Points into the
 * string, which must outlive it; the settings it names are resolved one
 * layer up (net/endpoint.h). */
struct ca_location {
	const char *s;              /* the string as given */
	enum ca_location_kind kind; /* as ca_location_kind(s) */
	bool url;                   /* scheme://... (file:// included) */
	bool https;                 /* https:// or s3+https:// */
	bool s3;                    /* s3+http(s)://: an S3 bucket (net/s3.h) */
	bool oci;                   /* oci+http(s)://: an OCI registry's repository (net/oci.h) */
	const char *path;           /* the local path (kind PATH), else NULL */
	size_t scheme_len;          /* "http" of "http://...", 0 for a path */
	size_t ssh_host_len;        /* casync's [USER@]HOST:PATH: ca_location_ssh_host_len(s) */
	size_t end;                 /* a URL's end before its query and fragment; strlen(s) for a path */
	enum ca_image_kind image;   /* as ca_location_image_kind(s) */
};

/* Fill *ret from s (never fails). */
void ca_location_parse(const char *s, struct ca_location *ret);

/* casync's HOST:PATH (ssh remoting, caremote.h): "[USER@]HOST:PATH",
 * HOST and USER of letters, digits, '-', '_', '.', PATH not empty, and
 * neither a URL nor starting with "/", "./" or "-" (an ssh option). The length of
 * "[USER@]HOST" (PATH starts one byte after it), 0 when s is not one. */
size_t ca_location_ssh_host_len(const char *s);

/* "<directory of index>/default.castr" for an index path or URL, the
 * store casync uses when none is given (malloc'd; NULL on ENOMEM). */
char *ca_location_default_store(const char *index);

/* The file published beside index: suffix appended to its path, before
 * an HTTP URL's query ("http://h/x.caidx?q" + ".cameta" -> "http://h/x.caidx.cameta?q";
 * in a path or a file:// URL "?" is part of the name)
 * (malloc'd; NULL on ENOMEM). */
char *ca_location_beside(const char *index, const char *suffix);

/* The last path component without the suffix: "disk.caibx" or
 * "http://h/x/disk.caibx?q" -> "disk"; "image" when there is none that
 * could name a file (malloc'd; NULL on ENOMEM). */
char *ca_location_basename(const char *s);

/* Secrets out of what is shown (messages, /proc/mounts, stats): a URL's
 * userinfo ("user:password@") becomes "***@" and its query (with any
 * fragment) becomes "?***". Everything else is kept, so the user still
 * sees which server and file it is about. Credentials belong in ~/.netrc
 * (curl's --netrc-optional) or the store settings file (storeconf.h),
 * where they are never shown.
 *
 * ca_location_redact: one location (a path is copied as it is); malloc'd,
 * NULL on ENOMEM.
 * ca_location_redact_text: every URL inside a line of text (a URL runs
 * from its scheme to the next blank or quote; trailing ':' ',' ';' ')' '.'
 * are left outside it), into out (cap > 0 bytes, always NUL-terminated,
 * cut if need be). Returns the length written. */
char *ca_location_redact(const char *s);
size_t ca_location_redact_text(const char *text, char *out, size_t cap);

#endif
