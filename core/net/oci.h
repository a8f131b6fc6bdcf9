/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * oci.h - OCI registries (the distribution API, /v2/) as chunk stores and
 * as homes of images, in desync's layout:
 *
 *   oci+https://HOST[:PORT]/REPO           a chunk store: the repository
 *   oci+http://HOST:PORT/REPO/NAME.caidx   a file in it: tag NAME.caidx
 *
 * Each chunk is an artifact: an image manifest (mediaType
 * application/vnd.oci.image.manifest.v1+json) with artifactType
 * application/vnd.desync.chunk.v1, the empty config
 * (application/vnd.oci.empty.v1+json, sha256:44136fa3..., "{}"), one
 * layer (application/octet-stream) holding the chunk file's bytes, the
 * annotation org.opencontainers.image.title = the tag, tagged with the
 * chunk's file name (ca_oci_chunk_tag: "<64 hex>.cacnk"). A file of an
 * image (index, sidecar, profile, signature) is the same with
 * artifactType application/vnd.cafs.file.v1 (desync keeps indexes
 * elsewhere: this is cafs's own) and tagged with its file name, so an
 * image in a registry needs nothing but the registry; the store of an
 * index URL defaults to its repository (location.h).
 *
 * Reading: GET the manifest by tag (at most 64 KiB; its mediaType, if
 * given, the OCI manifest's; the artifactType the one asked for, else
 * the tag is "missing": a foreign artifact under a chunk-shaped tag is
 * not a chunk; exactly one layer, its digest sha256, its size within
 * the caller's bound), then GET the blob by digest (no more than the
 * layer's size) and check its SHA-256 against the digest: a registry is
 * hostile, and a blob that is not what its manifest says is -EBADMSG.
 * (The chunk's own id is checked again by the chunk source.) Existence:
 * HEAD of the manifest. Writing: the empty config once per store, then
 * the blob (POST an upload, PUT it whole with its digest), then the
 * manifest by tag. gc: the tag list, page by page (the Link header), and
 * a DELETE of each chunk manifest no index names (by its digest: a
 * registry's garbage collection frees the blobs).
 *
 * Authentication: oci_auth.h. Requests go through the HTTP engine
 * (http.h ca_http_request): its connections, retries, deadlines and
 * bounds; many threads may read at once, each request in flight.
 * Thread-safe after open.
 */
#ifndef CA_OCI_H
#define CA_OCI_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "format/format.h"
#include "net/endpoint.h"
#include "net/http.h"

#define CA_OCI_CHUNK_TYPE "application/vnd.desync.chunk.v1"
#define CA_OCI_FILE_TYPE "application/vnd.cafs.file.v1"
#define CA_OCI_MANIFEST_MAX (64u << 10)
#define CA_OCI_TAG_MAX 129 /* 128 characters (the OCI tag grammar's bound) and a NUL */

struct ca_oci;

/* The tag of a chunk: its file name in the store o (NULL: a plain one),
 * "<64 hex>.cacnk", and in an encrypted store (crypt.h) the key's suffix
 * after it, as desync names them. The one place chunk tags are named. */
void ca_oci_chunk_tag(const struct ca_oci *o, const uint8_t id[CA_CHUNK_ID_SIZE], char out[CA_OCI_TAG_MAX]);

/* The repository of e (a store's URL; file: the URL names a file, whose
 * last path element is its tag). h: the engine to use (borrowed; NULL:
 * one of its own with e's options). The settings' user and password are
 * the registry's credentials (oci_auth.h), never curl's. -EINVAL
 * (logged) for a URL that is not a registry's repository. */
int ca_oci_open(const struct ca_endpoint *e, bool file, struct ca_http *h, struct ca_oci **ret);
void ca_oci_free(struct ca_oci *o); /* accepts NULL */
/* The file's tag (file URLs), "" for a store. */
const char *ca_oci_file_tag(const struct ca_oci *o);

/* An artifact's layer into out (empty on entry), at most cap bytes.
 * -ENOENT: no such tag (or another artifact type); -EBADMSG: the
 * manifest is malformed or the blob is not what it says; -EFBIG: the
 * manifest or the layer is over its bound. Logged (one line) except
 * -ENOENT. */
int ca_oci_get(struct ca_oci *o, const char *tag, const char *artifact_type, size_t cap, struct ca_buf *out);
/* 1 if tag exists (HEAD), 0 if not, negative errno. */
int ca_oci_has(struct ca_oci *o, const char *tag);
/* Store p[0..n) as an artifact tagged tag (replacing the tag's manifest). */
int ca_oci_put(struct ca_oci *o, const char *tag, const char *artifact_type, const void *p, size_t n);

/* Whether an error of this module was already said in one line (access
 * denied, a refused or lying answer, a token realm refused): callers
 * need not say it again. */
static inline bool ca_oci_said(int r)
{
	return r == -EACCES || r == -EFBIG || r == -EBADMSG || r == -EPROTO;
}

/* A chunk (ca_oci_get of its tag, as a chunk). */
int ca_oci_get_chunk(struct ca_oci *o, const uint8_t id[CA_CHUNK_ID_SIZE], size_t cap, struct ca_buf *out);
/* 1/0 as ca_oci_has, for a chunk. */
int ca_oci_has_chunk(struct ca_oci *o, const uint8_t id[CA_CHUNK_ID_SIZE]);

/* The file at endpoint e (an oci+ URL naming a file), whole. */
int ca_oci_fetch_file(const struct ca_endpoint *e, size_t cap, struct ca_buf *out);
/* Upload a file to an oci+ URL naming it (replacing it). http may be NULL. */
int ca_oci_put_file(const char *url, const struct ca_http_opts *http, const void *p, size_t n);

struct ca_store_writer;
/* A registry's repository as make's store (store_writer.h): has is a
 * HEAD of the chunk's tag; put uploads (blob, then manifest) what is not
 * there yet. */
int ca_oci_writer_open(const char *url, const struct ca_http_opts *http, struct ca_store_writer **ret);

struct ca_store_gc_opts;
struct ca_store_gc_stats;
/* gc (store_gc.h's options and stats) on a registry's repository: every
 * tag "<64 hex>.cacnk" whose chunk no kept id names and whose manifest
 * is a chunk's is deleted (by digest). Other tags are left alone. */
int ca_oci_gc(const char *url, const struct ca_http_opts *http, const struct ca_store_gc_opts *o,
              struct ca_store_gc_stats *ret);

#endif
