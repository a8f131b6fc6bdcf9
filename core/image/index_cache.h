/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * index_cache.h - what sits beside an index, and the indexes a cache
 * keeps by URL for offline use.
 *
 * The cache keeps every index it was used with by URL:
 *     CACHE/indexes/<SHA-256 hex of the URL as given>.caidx (or .caibx)
 *     CACHE/indexes/<same>.caidx.cameta       the metadata sidecar, if any
 *     CACHE/indexes/<same>.caidx.caprofile    the prefetch profile, if any
 *     <any of these>.minisig                  its signature, once it verified
 *     <any of these>.validator                "<SHA-256 of the copy> <validator>"
 * directory 0700, files 0600 (the URL may carry secrets; its hash does
 * not). Online, the index, sidecar and profile are asked for with the
 * kept copy's validator (ca_http_get_if_changed: If-None-Match or
 * If-Modified-Since), so the server's newer version always wins and an
 * unchanged one costs a 304 instead of its bytes; a validator that cannot
 * tell versions apart (a Last-Modified within a second of the answer) is
 * not kept, nor is one whose copy's digest does not match. Offline, the
 * copy is used, and its absence is an error that says to run `cafs cache
 * fill` first.
 *
 * The metadata sidecar (sidecar.h) of an index X is X.cameta: a local
 * file beside it, or the URL with ".cameta" before its query, fetched
 * with the same HTTP settings (404: no sidecar, silently; another error:
 * one warning). A sidecar that belongs to another index or does not parse
 * is ignored with one warning; the caller then walks the archive.
 *
 * An index's origin (struct ca_index_origin) is worked out once by whoever
 * opens it (source.h): the string parsed, a URL's endpoint (its settings
 * section, an S3 bucket's credentials), the cache, the trust policy. The
 * functions here take it and classify nothing again; the files beside the
 * index are fetched at its endpoint (endpoint.h ca_endpoint_beside).
 * This module opens no image: source.c stands on it, not the reverse.
 *
 * All functions log their errors (one line) and return 0 or a negative
 * errno.
 */
#ifndef CA_INDEX_CACHE_H
#define CA_INDEX_CACHE_H

#include <stdbool.h>

#include "base/buf.h"
#include "base/location.h"
#include "net/endpoint.h"
#include "format/index.h"
#include "trust/minisign.h"
#include "image/sidecar.h"
#include "trust/trust.h"

struct ca_index_origin {
	const char *source;            /* as given: messages, the cache's key */
	struct ca_location loc;        /* source parsed (ca_location_parse) */
	const struct ca_endpoint *ep;  /* a URL's, resolved unless offline with a cache; else NULL */
	const char *cache_dir;         /* a URL's copies are kept here; NULL: none */
	bool offline;                  /* the kept copies only */
	const struct ca_trust_policy *trust; /* NULL, or no keys: nothing to check */
};

/* Is cache_dir a cache this process may keep copies in: the cache and its
 * indexes/ ours and private (store.h ca_store_open_private; a cache of an
 * older cafs is tightened), or not there yet? 0, or one line logged and
 * -EPERM, -ELOOP, -ENOTDIR... Callers check once, before anything is
 * fetched, so a refused cache is said once and nothing is attempted. */
int ca_index_cache_check_dir(const char *cache_dir);

/* CACHE/indexes/<sha256 of url><suffix>, malloc'd (NULL: ENOMEM). */
char *ca_index_cache_path(const char *cache_dir, const char *url, const char *suffix);

/* SHA-256 of the index kept in cache_dir for url (read, nothing
 * fetched): what a delta pack from it is named by (delta.h). -ENOENT when
 * none is kept (or it cannot be read); another negative errno, logged,
 * when the cache itself is refused (not private), which the caller then
 * reports as its error rather than open the cache again. */
int ca_index_cache_kept_digest(const char *cache_dir, const char *url, uint8_t out[CA_CHUNK_ID_SIZE]);
/* Is data (the bytes of file name, published beside o's index with the
 * suffix beside: "" for the index itself, ".cameta", ".caprofile") signed
 * by one of o's trusted keys? Its signature name.minisig is read beside a
 * local file, downloaded for a URL (and, with a cache, kept under the
 * index URL's hash + kept + ".minisig" once it verifies), or offline the
 * kept one. 0, or one line logged and -EKEYREJECTED (missing, not a
 * minisign signature, no trusted key signed it) or another -errno. */
int ca_index_cache_check_signature(const struct ca_index_origin *o, const char *name, const char *beside,
                                   const char *kept, const void *data, size_t size,
                                   struct ca_trust_claim *ret_claim);

/* The rollback record (issue 21.6): cache_dir/signed/<SHA-256 of the
 * index's key> holds "<timestamp><tab><key>\n", the newest signing time
 * (the trusted comment's timestamp:) of an index accepted for it; the key
 * is a URL as shown (ca_location_redact: no userinfo, no query) or a path
 * made absolute through its directory. An index signed before it, or
 * whose signature names no time once a time is recorded, is refused with
 * one line naming both times (-EKEYREJECTED), unless allow_downgrade,
 * which accepts it and makes it the record (no time: the record is
 * removed). A newer one becomes the record. The check and the update are
 * one step under flock on cache_dir/signed (made 0700 and checked as the
 * cache is: its problems are said and returned: a record that cannot be
 * kept refuses, it does not skip the check). */
int ca_index_cache_check_rollback(const char *cache_dir, const struct ca_location *source,
                                  const struct ca_trust_claim *claim, bool allow_downgrade);

/* Everything an index's signature must pass (o->trust, trust.h
 * ca_trust_policy): ca_index_cache_check_signature, the name check
 * (ca_trust_check_name), the rollback record in trust->record_dir (when
 * not NULL), then a warning if the signature binds no time or name. 0 or
 * one line logged and -EKEYREJECTED (or another -errno). */
int ca_index_cache_accept_signed(const struct ca_index_origin *o, const void *data, size_t size);

/* The index at o's URL, kept in o->cache_dir: online, download it and
 * keep a copy; offline, the copy (-ENOMEDIUM when none). With trusted
 * keys, the bytes must pass ca_index_cache_accept_signed (the signature
 * downloaded and kept beside the copy; offline, the kept one) before they
 * are kept or parsed: -EKEYREJECTED otherwise. (Paths, and URLs without a
 * cache, are ca_source_open_index's.) */
int ca_index_cache_open(const struct ca_index_origin *o, struct ca_index **ret);

/* The sidecar of index idx (opened from o), or *ret = NULL when it
 * has none, or none that can be trusted (said once): with trusted keys,
 * one without a valid signature (X.cameta.minisig) by one of them is not
 * used. Errors only for ENOMEM, and -ETIMEDOUT (said) when the server
 * timed out: a server too slow for the sidecar is too slow for the rest
 * (http.h). The cache and offline as for ca_index_cache_open. ret_bytes
 * (may be NULL) gets the bytes used, when *ret is set (a mount's keeper
 * keeps them). */
int ca_index_cache_sidecar(const struct ca_index_origin *o, const struct ca_index *idx, struct ca_sidecar **ret,
                           struct ca_buf *ret_bytes);
/* The same from bytes an earlier ca_index_cache_sidecar of the same
 * source returned (their signature, if any was asked for, was checked on
 * these very bytes): parsed and checked against idx (its digest, size and
 * flags) as fetched ones are. Nothing is read or fetched. */
int ca_index_cache_sidecar_kept(const char *source, const struct ca_index *idx, const void *data, size_t size,
                                struct ca_sidecar **ret);

/* The prefetch profile published beside index idx (opened from o):
 * X.caprofile beside a local index, URL.caprofile (before the query) for
 * a remote one, kept in the cache as CACHE/indexes/<hash>.caidx.caprofile
 * (or .caibx...) and read from there offline. *ret = NULL when there is
 * none (silently) or none that can be used (one warning: unreadable,
 * invalid; with trusted keys also unsigned (X.caprofile.minisig) or
 * naming another index's digest). Errors only for ENOMEM. */
struct ca_profile;
int ca_index_cache_profile(const struct ca_index_origin *o, const struct ca_index *idx, struct ca_profile **ret,
                           struct ca_buf *ret_bytes);
/* The same from bytes an earlier ca_index_cache_profile returned in
 * ret_bytes: parsed, and with keys (trusted keys in use) checked to name
 * idx, as fetched ones are. Nothing is read or fetched. */
int ca_index_cache_profile_kept(const char *source, const struct ca_index *idx, const void *data, size_t size,
                                bool keys, struct ca_profile **ret);

#endif
