/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * source.h - the one door into an image: a source string plus options
 * becomes an opened image (index or archive, chunk source chain, blob,
 * archive reader). Every command, the mount and the public library open
 * images here; a new kind of source or a new check at open time is added
 * here and nowhere else.
 *
 *   "path | file://path | http(s)://..."  + stores, cache, offline
 *     -> classify once (location.h ca_location_parse); a URL, index or
 *        store, resolved once into an endpoint (endpoint.h: its settings
 *        section, an S3 bucket's credentials) that carries it down
 *     -> .catar: the local file or block device, read with pread; or
 *        an http(s) URL read by range requests through a block cache
 *        (remote_file.h)
 *        .caibx/.caidx: the index (mapped, or downloaded whole and
 *        validated; read whole and checked against INDEX.minisig first
 *        when keys are trusted), then the chunk source chain
 *            memory LRU -> cache store -> stores in the order given
 *        (default: default.castr beside the index), then the blob
 *     -> ca_image_archive_source(): the byte-range reader for catar_ra /
 *        catar_dec
 *
 * Errors. The open functions log one line ("cafs: <source>: <why>") and
 * return a negative errno. Reads of an image's bytes (ca_image_pread and
 * the archive source) follow one policy, so that a caller can always tell
 * a missing name from a missing chunk:
 *   -ENOLINK    a chunk the index names is in no store
 *   -EUCLEAN    a chunk is corrupt in every store that has it
 *   -ENOMEDIUM  offline, and the chunk is not in the cache
 *   -ECANCELED  the read was cancelled
 *   -EIO ...    the store or the server failed to answer (a remote
 *               .catar: also a byte range missing, malformed, or from a
 *               file whose size changed since the open)
 * The archive readers add -EBADMSG (a malformed archive) and -ENOENT (no
 * such name); neither is ever used for a chunk.
 *
 * Threads: an opened image is immutable; reads may run on any number of
 * threads at once (the chunk source is thread-safe). ca_image_free must
 * not race with anything.
 */
#ifndef CA_SOURCE_H
#define CA_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/location.h" /* enum ca_image_kind */
#include "net/remote.h"     /* enum ca_remote_outage; the remote stores' stats */
#include "trust/minisign.h" /* ca_source_read_trusted_key fills the caller's key */

/* the rest only by pointer: a caller that uses one includes its header */
struct ca_blob;
struct ca_catar_source;
struct ca_index;
struct ca_store;

/* HTTP settings: the defaults of http.h, overridden by the environment:
 * CAFS_HTTP_TIMEOUT=SECONDS (connect timeout, and how long a transfer may
 * stay below the low speed), CAFS_HTTP_LOW_SPEED=BYTES_PER_SECOND,
 * CAFS_HTTP_DEADLINE=SECONDS (a request's deadline, retries included),
 * CAFS_HTTP_RETRIES=N, CAFS_HTTP_CONNECTIONS=N, CAFS_HTTP_CAINFO=FILE (CA
 * bundle for https). A bad value is ignored with a warning. */
void ca_source_http_opts(struct ca_http_opts *o);

/* The chunk cache when none is given: $XDG_CACHE_HOME/cafs, /var/cache/cafs
 * for root, else ~/.cache/cafs (malloc'd). NULL with errno ENOMEM, or
 * ENOENT when the user has no home directory: there is no shared fallback
 * (open it with ca_store_open_private). */
char *ca_source_default_cache_dir(void);

struct ca_image_opts;

/* An index from a path, file:// or http(s):// URL (downloaded whole, at
 * most 1 GiB), with o's HTTP settings and trusted keys (o may be NULL:
 * the defaults). With trusted keys (o's or the trusted key directory's,
 * trust.h), its signature SOURCE.minisig is fetched first and the index
 * is refused (-EKEYREJECTED, one line) unless one of them signed it; the
 * bytes checked are the bytes parsed. A URL with o's cache (cache_mode
 * DIR or AUTO) is kept there with its signature, and o->offline reads the
 * kept copy instead (index_cache.h). Logs. */
int ca_source_open_index(const char *source, const struct ca_image_opts *o, struct ca_index **ret);

/* The metadata sidecar of idx (opened from source with o), checked like
 * the index (index_cache.h): *ret = NULL when there is none that can be
 * used. Errors only for ENOMEM. */
struct ca_sidecar;
int ca_source_open_sidecar(const char *source, const struct ca_index *idx, const struct ca_image_opts *o,
                           struct ca_sidecar **ret);

/* The prefetch profile published beside idx (profile.h), found, kept and
 * checked as index_cache.h says: *ret = NULL when there is none that can
 * be used. Errors only for ENOMEM. */
struct ca_profile;
int ca_source_open_profile(const char *source, const struct ca_index *idx, const struct ca_image_opts *o,
                           struct ca_profile **ret);
/* The same, and the bytes used in *ret_bytes (empty when *ret is NULL;
 * initialised here) for a mount's keeper to keep. With o->profile_data,
 * those bytes are used instead: nothing is read or fetched. */
struct ca_buf;
int ca_source_open_profile_kept(const char *source, const struct ca_index *idx, const struct ca_image_opts *o,
                                struct ca_profile **ret, struct ca_buf *ret_bytes);

/* A key for ca_image_opts.trusted_keys from the file at path (--trusted-key),
 * checked as a key of the trusted key directory is (trust.h). 0, or a
 * negative errno, not logged, with why (why_size bytes) the reason for
 * "PATH: <why>". */
int ca_source_read_trusted_key(const char *path, struct ca_minisign_key *ret, char *why, size_t why_size);

/* A local store (a path or file:// URL; -EPROTONOSUPPORT for other URLs).
 * Logs. */
int ca_source_open_store(const char *store, struct ca_store **ret);

/* Which chunks of idx the store (a path, file:// or http(s):// URL) holds:
 * ret_have[i] = 1 or 0 for chunk i (remote stores are asked with HEAD
 * requests, nothing is downloaded). Logs. */
int ca_source_store_presence(const char *store, const struct ca_index *idx, uint8_t *ret_have);
/* The same for a store list: ret_have[i] = 1 when any of them holds chunk
 * i. A failover group (failover.h) is asked through its first member that
 * answers. Logs. */
int ca_source_stores_presence(char *const *stores, size_t n_stores, const struct ca_index *idx,
                              uint8_t *ret_have);

enum ca_cache_mode {
	CA_CACHE_NONE, /* no chunk cache on disk */
	CA_CACHE_DIR,  /* cache_dir (made if missing) */
	CA_CACHE_AUTO, /* cache_dir if given, else the default one when anything is remote */
};

struct ca_image_opts {
	/* Chunk stores, tried in this order: paths, file:// or http(s):// URLs.
	 * None: default.castr beside the index. */
	char *const *stores;
	size_t n_stores;
	enum ca_cache_mode cache_mode;
	const char *cache_dir;
	bool cache_touch; /* a cache hit marks the chunk as used (for prune) */
	bool offline;     /* only the LRU and the cache; nothing is downloaded */
	size_t lru_bytes; /* decompressed chunks kept in memory (0: none) */
	const struct ca_http_opts *http; /* NULL: ca_source_http_opts() */
	/* Minisign keys an index must be signed by, with the trusted key
	 * directory's (trust.h); none anywhere: nothing is checked. With
	 * any, a .catar is refused: only an index can carry a signature. */
	const struct ca_minisign_key *trusted_keys;
	size_t n_trusted_keys;
	/* With trusted keys, what the index's signature must also say
	 * (trust.h ca_trust_policy): its file: name (NULL: the name asked
	 * for), and a signing time not before the newest accepted for that
	 * index (recorded in cache_dir, else the default cache) unless
	 * allow_downgrade. */
	const char *signed_name;
	bool allow_downgrade;
	bool no_sidecar;  /* ignore the index's metadata sidecar (index_cache.h) */
	/* The index's bytes as an earlier open of the same source read and
	 * checked them (a mount's restarted server, fs/keeper.h): parsed
	 * and validated like a download instead of fetching SOURCE's index
	 * again, so the image is the one served before even if the index at
	 * the URL changed or there is no copy anywhere; the signature was
	 * checked on those very bytes and is not fetched again. The sidecar
	 * and the stores are opened as usual (a sidecar of another index is
	 * refused by its digest). NULL: fetch. Copied. */
	const void *index_data;
	size_t index_size;
	/* The same for the metadata sidecar and the prefetch profile: the
	 * bytes an earlier open used (ca_image_sidecar_data,
	 * ca_source_open_profile_kept), size 0 when it had none. Not NULL:
	 * nothing is fetched for them (no network: a restarted server serves
	 * during an outage as it did before); they are parsed and checked
	 * against the index as fetched ones are (a sidecar or, with trusted
	 * keys, a profile of another index is refused by its digest); their
	 * signature was checked on these very bytes. NULL: fetch. */
	const void *sidecar_data, *profile_data;
	size_t sidecar_size, profile_size;
	/* the caller reads a .catar front to back (the stream source of
	 * archive_reader.h, no subtree): a remote .catar whose server
	 * ignores Range is then read with one GET (remote_file.h) */
	bool sequential;
	/* What a chunk read does while an http(s) store is failing (remote.h,
	 * outages): FAIL (commands) gives the failure; SOFT and HARD (the
	 * mount) wait for the store. Failover groups' members never wait:
	 * their group moves on to the next member instead. */
	enum ca_remote_outage outage;
	/* A delta pack (delta_source.h) tried before the stores, for an
	 * image read a chunk at a time (the mount): delta, a path or an
	 * http(s) URL (--delta); else, with delta_kept, the pack named
	 * (delta.h) for the index the cache kept for this URL before this
	 * open, when that differs from the one opened (a 404 is silent). Its
	 * references are read from the chunk cache: none, or offline, no
	 * pack. delta_bulk: the pack's chunks are built at once (--fill).
	 * The pack is read on a thread of its own: the open never waits. */
	const char *delta;
	bool delta_kept, delta_bulk;
};

struct ca_image;

/* Open source (its kind from its suffix). A .catar is a regular file, a
 * block device, or an http(s) URL whose server honours Range (unless the
 * archive fits in one block); its block cache takes o->lru_bytes (0: 64
 * MiB), and offline it is -ENOMEDIUM. Logs its errors. */
int ca_image_open(const char *source, const struct ca_image_opts *o, struct ca_image **ret);
void ca_image_free(struct ca_image *im); /* accepts NULL */

/* Just the chunk source chain for an index already open (cache fill and
 * seeds read several indexes with one cache). index_name places the
 * default store. Logs. */
int ca_source_open_chunksrc(const char *index_name, const struct ca_index *idx, const struct ca_image_opts *o,
                            struct ca_chunksrc **ret);

const char *ca_image_name(const struct ca_image *im); /* the source as given */
enum ca_image_kind ca_image_kind(const struct ca_image *im);
/* The local file behind the image (index or .catar), NULL when remote. */
const char *ca_image_local_path(const struct ca_image *im);
uint64_t ca_image_size(const struct ca_image *im);
/* The index header's feature flags, UINT64_MAX for a .catar. */
uint64_t ca_image_index_flags(const struct ca_image *im);
/* The archive's feature flags: the index's, or a .catar root ENTRY's
 * (unchecked here; SHA-512/256 if it cannot be read). */
uint64_t ca_image_feature_flags(struct ca_image *im);

/* The cache directory the chunk source writes to (as opened; a cache set
 * later on the chunk source is not seen here), or NULL. */
const char *ca_image_cache_dir(const struct ca_image *im);

/* NULL for a .catar. Borrowed: they live as long as the image. */
struct ca_index *ca_image_index(const struct ca_image *im);
struct ca_chunksrc *ca_image_chunksrc(const struct ca_image *im);
struct ca_blob *ca_image_blob(const struct ca_image *im);
/* The .caidx's metadata sidecar (sidecar.h), found and checked at open:
 * X.caidx.cameta beside a local index, URL.cameta for a remote one (kept
 * in the cache with the index, index_cache.h); NULL when there is none
 * or it was ignored (said once). Borrowed. */
struct ca_sidecar;
const struct ca_sidecar *ca_image_sidecar(const struct ca_image *im);
/* The bytes that sidecar was parsed from (for ca_image_opts.sidecar_data),
 * or NULL (*ret_size 0) when there is none. Borrowed. */
const void *ca_image_sidecar_data(const struct ca_image *im, size_t *ret_size);

/* Make the sidecar of an opened .caidx image by walking its archive
 * through its chunk source (an image made by casync or desync), and write
 * it to out (atomically; mode 0644). Logs. */
int ca_image_make_sidecar(struct ca_image *im, const char *out);

/* Read up to len bytes of the image at off (short only at its end), with
 * the error policy above. */
ssize_t ca_image_pread(struct ca_image *im, void *buf, size_t len, uint64_t off);
/* Hint: [off, off+len) will be read soon. Never blocks. */
void ca_image_readahead(struct ca_image *im, uint64_t off, uint64_t len);

/* The image as an archive reader's byte source (ca_image_pread and
 * ca_image_readahead; userdata is im). */
void ca_image_archive_source(struct ca_image *im, struct ca_catar_source *ret);

/* The http(s) stores' counters, summed; false when there are none. */
bool ca_image_remote_stats(const struct ca_image *im, struct ca_remote_store_stats *ret);

/* Say in one line why a read of [off, off+len) failed with err: for an
 * index, which chunk and whether it was missing or corrupt. Returns err. */
int ca_image_log_read_error(struct ca_image *im, int err, uint64_t off, size_t len);

/* The image's http(s) stores (failover members included), in chain
 * order: the i-th, or NULL past the last. Borrowed. */
struct ca_remote_store *ca_image_remote(const struct ca_image *im, size_t i);
/* End every wait of a read for a failing store, now and later (the mount
 * is stopping; remote.h), and a delta pack's fill run (delta_source.h). */
void ca_image_abort_waits(struct ca_image *im);
/* The delta pack's counters and state (delta_source.h); false when the
 * image has no pack to use (none given or named, or no cache). */
struct ca_delta_source_stats;
bool ca_image_delta_stats(const struct ca_image *im, struct ca_delta_source_stats *ret);

/* The failover groups among the image's stores (failover.h), in chain
 * order: the i-th, or NULL past the last. Borrowed, as long as im lives. */
struct ca_failover;
struct ca_failover *ca_image_failover(const struct ca_image *im, size_t i);

#endif
