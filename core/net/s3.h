/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * s3.h - S3-compatible chunk stores: what an s3+http(s):// URL names, the
 * credentials requests are signed with, and the S3 requests beyond
 * GET/HEAD that writing and collecting a store need.
 *
 * URLs (desync's syntax):
 *   s3+http://HOST[:PORT]/BUCKET[/PREFIX][?lookup=path|dns|auto]
 *   s3+https://...
 * Chunks are objects PREFIX/XXXX/<id>.cacnk, as files in a casync store.
 * Path-style addressing (http://HOST/BUCKET/PREFIX/...) unless
 * lookup=dns: virtual-host style (http://BUCKET.HOST/PREFIX/...). auto is
 * path-style (what every S3-compatible server takes). An index may be an
 * s3+ URL too (".../img.caidx"): the same translation, one object.
 *
 * Reading goes through the ordinary HTTP store (remote.h) at an endpoint
 * (endpoint.h), which calls ca_s3_connect for such a URL once, with its
 * section of the settings file: the requests are then signed (SigV4, by
 * libcurl, http.h). Writing (ca_s3_writer) and collecting (ca_s3_gc) are
 * here.
 *
 * Credentials, in this order, each field on its own: the per-store
 * settings given (a settings file keyed by URL prefix fills a struct
 * ca_s3_settings), then AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
 * AWS_SESSION_TOKEN / AWS_REGION, then desync's S3_ACCESS_KEY /
 * S3_SECRET_KEY / S3_SESSION_TOKEN / S3_REGION. Region defaults to
 * us-east-1. Without a key and secret, requests go unsigned (a public
 * bucket). Never from the command line; never in a message: the secret
 * and token live in struct ca_s3_creds and the HTTP engine's copy only,
 * both wiped when freed.
 *
 * Pure functions are thread-safe; writer and gc as stated below.
 */
#ifndef CA_S3_H
#define CA_S3_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chunk/compress.h"
#include "format/format.h"
#include "net/http.h"

/* true for s3+http:// and s3+https:// (any case) */
bool ca_s3_is_url(const char *s);

struct ca_s3_url {
	char *base;   /* http(s) URL the store's objects are under, no trailing '/': "http://h:9000/bkt/pre" */
	char *bucket_url; /* http(s) URL of the bucket itself (listings): "http://h:9000/bkt" */
	char *bucket;
	char *prefix; /* "" or "pre/" */
	bool https, vhost;
};
/* Parse url. -EINVAL (logged: "URL: why") for anything but the syntax
 * above: no bucket, an empty host, userinfo (credentials are never taken
 * from a URL), an unknown lookup. */
int ca_s3_url_parse(const char *url, struct ca_s3_url *ret);
void ca_s3_url_clear(struct ca_s3_url *u); /* accepts a zeroed struct */

/* Per-store settings, e.g. from a settings file: any field may be NULL
 * (then the environment's is used). */
struct ca_s3_settings {
	const char *access_key, *secret_key, *session_token, *region;
};

struct ca_s3_creds {
	char *access_key, *secret_key, *session_token; /* NULL: none */
	char *region;                                  /* never NULL once resolved */
};
/* Resolve (see above); set may be NULL. 0 or -ENOMEM. A key without a
 * secret (or the reverse) is -ENOKEY, logged naming the variables; a
 * control character in the key or token, or a region holding ":" or a
 * blank, is -EINVAL (they go into headers and curl's provider string). */
int ca_s3_creds_resolve(const struct ca_s3_settings *set, struct ca_s3_creds *ret);
/* Wipe and free. Accepts a zeroed struct. */
void ca_s3_creds_clear(struct ca_s3_creds *c);

/* What remote.c needs to talk to an s3+ URL: the http(s) URL to use for
 * it (an index: the object's URL; a store: its base) and HTTP options
 * that sign with the resolved credentials. in may be NULL; set NULL:
 * the aws-* keys of url's section in the store settings file
 * (storeconf.h), if any, then the environment. */
struct ca_s3_conn {
	struct ca_s3_url u;
	char *http_url;
	struct ca_s3_creds creds;
	char sigv4[96];
	struct ca_http_opts http;
};
int ca_s3_connect(const char *url, const struct ca_s3_settings *set, const struct ca_http_opts *in,
                  struct ca_s3_conn *ret);
void ca_s3_conn_clear(struct ca_s3_conn *c);
/* ---- listings (ListObjectsV2), for gc ---- */

/* One page of a ListObjectsV2 answer, parsed minimally: for each
 * <Contents> its <Key> and <Size> go to fn (key NUL-terminated, entities
 * decoded); *ret_truncated and ret_token (<NextContinuationToken>, at
 * most CA_S3_TOKEN_MAX - 1 bytes, "" if none) say whether another page
 * follows. -EBADMSG for a body that is not such an answer. Non-zero from
 * fn stops and is returned. */
#define CA_S3_TOKEN_MAX 1024
typedef int (*ca_s3_list_fn)(void *userdata, const char *key, uint64_t size);
int ca_s3_parse_list(const char *body, size_t n, ca_s3_list_fn fn, void *userdata, bool *ret_truncated,
                     char ret_token[CA_S3_TOKEN_MAX]);

/* The chunk id of an object key under prefix ("pre/XXXX/<64 hex>.cacnk",
 * XXXX the id's first four digits): 0, or -EINVAL for any other key. */
int ca_s3_key_chunk_id(const char *key, const char *prefix, uint8_t ret_id[CA_CHUNK_ID_SIZE]);
/* The same for the chunk file suffix of an encrypted store (crypt.h
 * ca_crypt_chunk_suffix: ".cacnk.<algorithm>-<key id>"); ".cacnk" is the above. */
int ca_s3_key_chunk_id_suffix(const char *key, const char *prefix, const char *suffix,
                              uint8_t ret_id[CA_CHUNK_ID_SIZE]);

/* ---- writing ---- */

/* An S3 store being written by make (store_writer.h's backend).
 * ca_s3_writer_new checks that the bucket answers to our credentials (one
 * request; logged: "URL: no such bucket", "URL: access denied ...").
 * put verifies the compressed chunk against its id (codec), then asks
 * with HEAD whether the object exists and PUTs it only when it does not
 * (If-None-Match: *, so an object is never overwritten); it returns at
 * once (1: queued) and the requests run in parallel on the engine, at most
 * 64 chunks or 32 MiB in flight (put blocks past that). The first failure
 * of any upload is returned by the next put and by finish. finish waits
 * for every upload; ret_skipped says how many put chunks were already
 * there. put may be called from several threads. */
struct ca_s3_writer;
int ca_s3_writer_new(const char *url, const struct ca_s3_settings *set, const struct ca_http_opts *http,
                     struct ca_s3_writer **ret);
int ca_s3_writer_put(struct ca_s3_writer *w, struct ca_codec *codec, const uint8_t id[CA_CHUNK_ID_SIZE],
                     const void *p, size_t n);
int ca_s3_writer_finish(struct ca_s3_writer *w, uint64_t *ret_skipped, uint64_t *ret_skipped_bytes);
void ca_s3_writer_free(struct ca_s3_writer *w); /* accepts NULL; waits for uploads */

/* Upload a whole file (an index) to an s3+ URL, replacing it. */
int ca_s3_put_file(const char *url, const struct ca_s3_settings *set, const struct ca_http_opts *http,
                   const void *p, size_t n);

/* ---- gc ---- */

struct ca_idset;
struct ca_store_gc_opts;
struct ca_store_gc_stats;
/* casync gc on an S3 store: list the prefix page by page
 * (ListObjectsV2, 1000 keys a page, each page at most 8 MiB) and DELETE
 * every chunk object no kept id names (or only report it with dry_run),
 * as ca_store_gc does for a local store (store_gc.h: opts and stats;
 * on_chunk gets the object key). Objects that are not chunks are left
 * alone. Runs in the calling thread, deletions in parallel. */
int ca_s3_gc(const char *url, const struct ca_http_opts *http, const struct ca_store_gc_opts *o,
             struct ca_store_gc_stats *ret);

#endif
