/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * image_seed.c - seeding a cache from local data, and extract with seeds
 * and a cache (image_seed.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/location.h"
#include "base/log.h"
#include "catar/catar_enc.h"
#include "chunk/compress.h"
#include "chunk/reflink.h"
#include "chunk/seed.h"
#include "chunk/seed_tree.h"
#include "format/feature.h"
#include "format/idset.h"
#include "format/index.h"
#include "image/delta.h"
#include "image/index_cache.h"
#include "image/image_seed.h"
#include "image/source.h"
#include "net/http.h"
#include "store/blob.h"
#include "store/chunksrc.h"
#include "store/store.h"

#define FOUND (UINT64_C(1) << 63)
#define BLOB_READ_SIZE (4u << 20)

struct seed_ctx {
	struct ca_store *cache;
	struct ca_idset *needed; /* id -> size, | FOUND once in the cache */
	size_t n_needed, n_found;
	struct ca_codec *codec;
	struct ca_buf buf;
	struct ca_image_seed_stats *stats;
	struct ca_reflink *reflink; /* NULL, or where chunks are in seed files */
	int seed;                   /* the seed file being chunked (reflink's), or -1 */
};

static int put_found(struct seed_ctx *x, const uint8_t *id, uint64_t v, const void *raw, size_t n, bool compressed)
{
	int r;
	if (compressed) {
		r = ca_store_put_raw(x->cache, id, raw, n);
	} else {
		r = ca_codec_compress(x->codec, raw, n, &x->buf);
		if (r == 0)
			r = ca_store_put_raw(x->cache, id, x->buf.data, x->buf.size);
	}
	if (r < 0) {
		char hex[2 * CA_CHUNK_ID_SIZE + 1];
		ca_id_to_hex(id, hex);
		return ca_log_error_errno(r, "chunk %s: cannot store it in %s", hex, ca_store_path(x->cache));
	}
	(void)ca_idset_set(x->needed, id, v | FOUND);
	x->n_found++;
	x->stats->chunks++;
	x->stats->bytes += v;
	/* everything needed is there: no need to read the rest of the seed */
	return x->n_found == x->n_needed ? 1 : 0;
}

static int on_chunk(const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t offset, const void *data, size_t size,
                    void *userdata)
{
	struct seed_ctx *x = userdata;
	uint64_t v;
	(void)offset;
	x->stats->seed_bytes += size;
	if (!ca_idset_get(x->needed, id, &v))
		return 0;
	if (x->reflink && x->seed >= 0) {
		int r = ca_reflink_note(x->reflink, (unsigned)x->seed, id, offset);
		if (r < 0)
			return r;
	}
	if (v & FOUND)
		return 0;
	return put_found(x, id, v, data, size, false);
}

static int seed_fd(struct seed_ctx *x, const struct ca_index *idx, int fd)
{
	struct ca_seeder *s = NULL;
	int r = ca_seeder_new(ca_index_chunk_size_min(idx), ca_index_chunk_size_avg(idx), ca_index_chunk_size_max(idx),
	                      ca_digest_type_from_flags(ca_index_feature_flags(idx)), on_chunk, x, &s);
	if (r == 0)
		r = ca_seeder_feed_fd(s, fd);
	ca_seeder_free(s);
	return r < 0 ? r : 0;
}

static bool same_chunking(const struct ca_index *a, const struct ca_index *b)
{
	return ca_index_chunk_size_min(a) == ca_index_chunk_size_min(b) &&
	       ca_index_chunk_size_avg(a) == ca_index_chunk_size_avg(b) &&
	       ca_index_chunk_size_max(a) == ca_index_chunk_size_max(b) &&
	       ca_digest_type_from_flags(ca_index_feature_flags(a)) == ca_digest_type_from_flags(ca_index_feature_flags(b));
}

/* an index seed: copy the shared chunks, or re-chunk its stream */
static int seed_index(struct seed_ctx *x, const struct ca_index *idx, const char *path, const char *seed_store)
{
	struct ca_index *sidx = NULL;
	struct ca_chunksrc *src = NULL;
	struct ca_blob *blob = NULL;
	struct ca_seeder *s = NULL;
	uint8_t *buf = NULL;
	char *store_path = (char *)seed_store;
	int r = ca_source_open_index(path, NULL, &sidx);
	if (r < 0)
		return r;
	if (same_chunking(idx, sidx)) {
		struct ca_store *st = NULL;
		char *def = seed_store ? NULL : ca_location_default_store(path);
		r = def || seed_store ? ca_source_open_store(seed_store ? seed_store : def, &st) : -ENOMEM;
		free(def);
		if (r < 0)
			goto out;
		for (size_t i = 0; r == 0 && i < ca_index_n_chunks(sidx); i++) {
			uint64_t a, b, v;
			const uint8_t *id;
			bool compressed;
			ca_index_chunk(sidx, i, &a, &b, &id);
			x->stats->seed_bytes += b - a;
			if (!ca_idset_get(x->needed, id, &v) || (v & FOUND))
				continue;
			int k = ca_store_get_raw(st, id, &x->buf, &compressed);
			if (k < 0)
				continue; /* a seed is best effort: the chunk will be downloaded */
			struct ca_buf raw = x->buf;
			x->buf = (struct ca_buf)CA_BUF_INIT;
			struct ca_buf plain = CA_BUF_INIT;
			k = compressed ? ca_codec_decode_chunk(x->codec, raw.data, raw.size, id, v, &plain) : 0;
			if (k == 0 && !compressed) {
				uint8_t got[CA_CHUNK_ID_SIZE];
				k = ca_digest_once(ca_codec_digest(x->codec), raw.data, raw.size, got);
				if (k == 0 && (memcmp(got, id, CA_CHUNK_ID_SIZE) || raw.size != v))
					k = -EBADMSG;
			}
			if (k == 0)
				r = put_found(x, id, v, raw.data, raw.size, compressed);
			ca_buf_release(&plain);
			ca_buf_release(&raw);
		}
		ca_store_free(st);
		goto out;
	}
	/* different chunking: read the seed's stream back and chunk it our way */
	char *stores[1] = { store_path };
	struct ca_image_opts io = { .stores = stores, .n_stores = seed_store ? 1 : 0 };
	r = ca_source_open_chunksrc(path, sidx, &io, &src);
	if (r == 0)
		r = ca_blob_new(sidx, src, &blob);
	if (r == 0)
		r = ca_seeder_new(ca_index_chunk_size_min(idx), ca_index_chunk_size_avg(idx),
		                  ca_index_chunk_size_max(idx), ca_digest_type_from_flags(ca_index_feature_flags(idx)),
		                  on_chunk, x, &s);
	if (r == 0 && !(buf = malloc(BLOB_READ_SIZE)))
		r = -ENOMEM;
	for (uint64_t off = 0; r == 0;) {
		ssize_t k = ca_blob_read(blob, buf, BLOB_READ_SIZE, off);
		if (k < 0) {
			r = (int)k;
			break;
		}
		if (k == 0) {
			r = ca_seeder_finish(s);
			break;
		}
		off += (uint64_t)k;
		r = ca_seeder_feed(s, buf, (size_t)k);
	}
out:
	if (r < 0)
		ca_log_error_errno(r, "seed %s", path);
	free(buf);
	ca_seeder_free(s);
	ca_blob_free(blob);
	ca_chunksrc_free(src);
	ca_index_free(sidx);
	return r < 0 ? r : 0;
}

static int seeder_write(void *userdata, const void *p, size_t n)
{
	int r = ca_seeder_feed(userdata, p, n);
	/* > 0: everything found; stop the walk with a code only we use */
	return r > 0 ? -ECANCELED : r;
}

/* A directory: encode it as the archive the target index chunks, with the
 * target's feature flags, so unchanged files give the same bytes, hence
 * the same chunks. */
static int seed_dir(struct seed_ctx *x, const struct ca_index *idx, int fd, const char *path)
{
	uint64_t flags = ca_index_feature_flags(idx);
	struct ca_seeder *s = NULL;
	if (!(flags & CA_FORMAT_WITH_MASK))
		return -EISDIR; /* a blob index: a directory cannot reproduce it */
	int r = ca_seeder_new(ca_index_chunk_size_min(idx), ca_index_chunk_size_avg(idx), ca_index_chunk_size_max(idx),
	                      ca_digest_type_from_flags(flags), on_chunk, x, &s);
	if (r < 0)
		return r;
	struct ca_catar_enc_opts o = {
		.feature_flags = flags, .write = seeder_write, .userdata = s, .root_name = path,
	};
	r = ca_catar_encode(fd, &o, NULL);
	if (r == 0)
		r = ca_seeder_finish(s);
	ca_seeder_free(s);
	return r == -ECANCELED || r > 0 ? 0 : r;
}

static int seed_one(struct seed_ctx *x, const struct ca_index *idx, const char *path, const char *seed_store)
{
	enum ca_image_kind kind = ca_location_image_kind(path);
	if (kind == CA_IMAGE_BLOB_INDEX || kind == CA_IMAGE_ARCHIVE_INDEX)
		return seed_index(x, idx, path, seed_store);
	/* a file, a block device or a .catar (the very stream a .caidx chunks) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return ca_log_error_errno(errno, "seed %s", path);
	struct stat st;
	int r = fstat(fd, &st) < 0 ? -errno : 0;
	if (r == 0 && S_ISDIR(st.st_mode))
		r = seed_dir(x, idx, fd, path);
	else if (r == 0) {
		/* a regular file can lend its blocks (--reflink) */
		unsigned seed;
		x->seed = -1;
		if (x->reflink && S_ISREG(st.st_mode) && ca_reflink_add_seed(x->reflink, fd, &seed) == 0)
			x->seed = (int)seed;
		r = seed_fd(x, idx, fd);
		x->seed = -1;
	}
	close(fd);
	if (r == -EISDIR) {
		ca_log_error("seed %s: a directory can only seed an archive index (.caidx)", path);
		return r;
	}
	if (r < 0)
		return ca_log_error_errno(r, "seed %s", path);
	return 0;
}

int ca_image_seed_cache(struct ca_store *cache, const struct ca_index *idx, char **seeds, size_t n_seeds,
                    const char *seed_store, struct ca_reflink *reflink, struct ca_image_seed_stats *ret_stats)
{
	return ca_image_seed_cache_extra(cache, idx, NULL, seeds, n_seeds, seed_store, reflink, ret_stats);
}

int ca_image_seed_cache_extra(struct ca_store *cache, const struct ca_index *idx, const struct ca_idset *extra,
                              char **seeds, size_t n_seeds, const char *seed_store, struct ca_reflink *reflink,
                              struct ca_image_seed_stats *ret_stats)
{
	struct seed_ctx x = { .cache = cache, .stats = ret_stats, .reflink = reflink, .seed = -1 };
	int r, failed = 0;
	memset(ret_stats, 0, sizeof(*ret_stats));
	r = ca_idset_new(ca_index_n_chunks(idx), &x.needed);
	if (r == 0)
		r = ca_codec_new(ca_digest_type_from_flags(ca_index_feature_flags(idx)), &x.codec);
	for (size_t i = 0; r == 0 && i < ca_index_n_chunks(idx); i++) {
		uint64_t a, b;
		const uint8_t *id;
		ca_index_chunk(idx, i, &a, &b, &id);
		if (ca_idset_get(x.needed, id, NULL))
			continue;
		r = ca_store_has(cache, id);
		if (r > 0) {
			r = 0;
			continue;
		}
		if (r == 0)
			r = ca_idset_add(x.needed, id, b - a);
		if (r > 0)
			r = 0;
	}
	/* more chunks wanted beside idx's (a delta pack's references) */
	size_t pos = 0;
	const uint8_t *eid;
	uint64_t ev;
	while (r == 0 && extra && ca_idset_next(extra, &pos, &eid, &ev) > 0) {
		r = ca_store_has(cache, eid);
		if (r == 0)
			r = ca_idset_add(x.needed, eid, ev);
		if (r > 0)
			r = 0;
	}
	if (r < 0) {
		ca_log_error_errno(r, "%s", ca_store_path(cache));
		goto out;
	}
	x.n_needed = ca_idset_size(x.needed);
	for (size_t i = 0; i < n_seeds && x.n_found < x.n_needed; i++)
		if (seed_one(&x, idx, seeds[i], seed_store) < 0)
			failed++;
	r = failed ? -EIO : 0;
out:
	ca_buf_release(&x.buf);
	ca_codec_free(x.codec);
	ca_idset_free(x.needed);
	return r;
}

int ca_image_seed_cache_at(const char *dir, const char *source, char **seeds, size_t n_seeds, const char *seed_store,
                           struct ca_image_seed_stats *ret_stats)
{
	struct ca_index *idx = NULL;
	struct ca_store *cache = NULL;
	*ret_stats = (struct ca_image_seed_stats){ 0 };
	/* the cache first: a refused one is said before anything is fetched */
	int r = ca_store_open_private(dir, true, &cache); /* logs */
	if (r == 0)
		r = ca_source_open_index(source, NULL, &idx); /* logs */
	if (r == 0) {
		r = ca_image_seed_cache(cache, idx, seeds, n_seeds, seed_store, NULL, ret_stats);
		ret_stats->seeded = true;
	}
	ca_store_free(cache);
	ca_index_free(idx);
	return r;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT)
		ca_log_warning_errno(errno, "%s", path);
	return 0;
}

static void seed_cleanup(char *tmp)
{
	if (!tmp)
		return;
	(void)nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	free(tmp);
}

/* The delta pack for in: --delta, or one named for an index given as a
 * seed (delta.h's naming). *ret NULL: none (said, if it was unusable). */
static int open_delta(const char *in, const struct ca_index *idx, const struct ca_image_seed_extract_opts *a,
                      const struct ca_http_opts *http, const uint8_t *kept, struct ca_delta_client **ret)
{
	struct ca_delta_client_opts co = { .http = http };
	*ret = NULL;
	if (a->offline)
		return 0;
	if (a->delta)
		return ca_delta_client_open(a->delta, idx, &co, ret);
	for (size_t i = 0; i < a->n_seeds; i++) {
		enum ca_image_kind k = ca_location_image_kind(a->seeds[i]);
		struct ca_index *from = NULL;
		uint8_t d[CA_DELTA_DIGEST_SIZE];
		if (k != CA_IMAGE_BLOB_INDEX && k != CA_IMAGE_ARCHIVE_INDEX)
			continue;
		if (ca_index_open(a->seeds[i], &from) < 0)
			continue; /* the seeding says why */
		int r = ca_delta_index_digest(from, d);
		ca_index_free(from);
		if (r < 0)
			return r;
		char *name = ca_delta_pack_name(in, d);
		if (!name)
			return ca_log_error_errno(ENOMEM, "%s", in);
		co.from_digest = d;
		co.quiet_missing = true;
		r = ca_delta_client_open(name, idx, &co, ret);
		free(name);
		return r;
	}
	/* the index --cache kept for this URL before, if this one is another */
	uint8_t now[CA_DELTA_DIGEST_SIZE];
	if (kept && ca_delta_index_digest(idx, now) == 0 && memcmp(now, kept, sizeof(now))) {
		char *name = ca_delta_pack_name(in, kept);
		if (!name)
			return ca_log_error_errno(ENOMEM, "%s", in);
		co.from_digest = kept;
		co.quiet_missing = true;
		int r = ca_delta_client_open(name, idx, &co, ret);
		free(name);
		return r;
	}
	return 0;
}

static int cache_seeds(struct ca_chunksrc *src, const struct ca_index *idx, const struct ca_image_seed_extract_opts *a,
                       char **ret_tmp, struct ca_reflink *reflink, struct ca_delta_client *dc)
{
	struct ca_store *cache = NULL, *target = NULL;
	struct ca_image_seed_stats st;
	struct ca_idset *refs = NULL;
	char *dir = NULL;
	int r;
	*ret_tmp = NULL;
	if (!a->cache && a->n_seeds == 0 && !dc)
		return 0;
	if (a->cache) {
		dir = strdup(a->cache);
		if (!dir)
			return ca_log_error_errno(ENOMEM, "cache");
		r = 0;
	} else {
		/* seeded chunks need a place to wait for the extraction: a private
		 * store, where casync keeps its temporary caches too (mkdtemp: a
		 * new 0700 directory, never one another user made first) */
		const char *t = getenv("TMPDIR");
		if (asprintf(&dir, "%s/cafs-seed.XXXXXX", t && *t ? t : "/var/tmp") < 0)
			return ca_log_error_errno(ENOMEM, "seed");
		r = mkdtemp(dir) ? 0 : -errno;
		if (r == 0)
			*ret_tmp = dir;
	}
	if (r < 0) {
		ca_log_error_errno(r, "%s", dir);
		goto fail;
	}
	r = ca_store_open_private(dir, true, &cache);
	if (r == 0)
		r = ca_store_open_private(dir, false, &target);
	if (r < 0)
		goto fail;
	ca_chunksrc_set_cache(src, cache, a->cache != NULL);
	cache = NULL;
	/* the seeds also give the FROM chunks the pack's entries refer to */
	if (dc && ((r = ca_idset_new(1024, &refs)) < 0 || (r = ca_delta_client_refs(dc, refs)) < 0)) {
		ca_log_error_errno(r, "delta pack");
		goto fail;
	}
	if (a->n_seeds > 0) {
		r = ca_image_seed_cache_extra(target, idx, refs, a->seeds, a->n_seeds, NULL, reflink, &st);
		if (r < 0)
			goto fail;
		ca_log_info("seeds gave %llu chunks (%llu bytes)", (unsigned long long)st.chunks,
		            (unsigned long long)st.bytes);
	}
	if (dc) {
		struct ca_delta_client_stats ds;
		r = ca_delta_client_run(dc, target, &ds);
		if (r < 0)
			goto fail;
		ca_log_info("delta pack gave %llu chunks (%llu bytes) in %llu requests (%llu bytes)",
		            (unsigned long long)ds.chunks, (unsigned long long)ds.bytes,
		            (unsigned long long)ds.requests, (unsigned long long)ds.wire_bytes);
	}
	ca_idset_free(refs);
	ca_store_free(target);
	if (!*ret_tmp)
		free(dir);
	return 0;
fail:
	ca_idset_free(refs);
	ca_store_free(cache);
	ca_store_free(target);
	if (*ret_tmp) {
		seed_cleanup(*ret_tmp);
		*ret_tmp = NULL;
	} else {
		free(dir);
	}
	return r;
}

int ca_image_seed_extract(const char *in, const char *out, const struct ca_image_seed_extract_opts *a)
{
	enum ca_image_kind kind = ca_location_image_kind(in);
	/* the cache also keeps a URL's index (and reads it back --offline) */
	struct ca_http_opts http;
	struct ca_image_opts io = { 0 };
	if (a->io)
		io = *a->io;
	io.lru_bytes = kind == CA_IMAGE_BLOB_INDEX ? 0 : CA_IMAGE_EXTRACT_LRU;
	io.cache_mode = a->cache ? CA_CACHE_DIR : CA_CACHE_NONE;
	io.cache_dir = a->cache;
	io.offline = a->offline;
	io.http = &http;
	io.sequential = !a->path;
	struct ca_image *im = NULL;
	struct ca_reflink *reflink = NULL;
	struct ca_delta_client *dc = NULL;
	char *seed_tmp = NULL;
	bool busy = false;
	ca_source_http_opts(&http);
	http.max_recv_speed = a->rate_limit_bps;
	/* refuse a bad destination before any download or seeding */
	int r = ca_image_extract_check_dest(kind, out);
	if (r < 0)
		goto out;
	/* the index the cache kept for this URL, before the open replaces it:
	 * the FROM of an update, naming its delta pack */
	uint8_t kept[CA_DELTA_DIGEST_SIZE];
	bool have_kept = false;
	if (a->cache && !a->offline && ca_location_is_url(in)) {
		r = ca_index_cache_kept_digest(a->cache, in, kept);
		if (r < 0 && r != -ENOENT)
			goto out; /* a cache refused (logged): not again by the open */
		have_kept = r == 0;
	}
	r = ca_image_open(in, &io, &im);
	if (r < 0)
		goto out;
	if (a->cache && !ca_image_index(im)) {
		r = ca_log_error_errno(EINVAL, "%s: --cache needs an index (.caidx), not a .catar", in);
		goto out;
	}
	/* a .catar has no chunks to take from seeds: as casync, its seed
	 * directories serve only --hardlink and --reflink, after the extract */
	if (ca_image_index(im) && (a->delta || a->n_seeds > 0 || have_kept)) {
		r = open_delta(in, ca_image_index(im), a, &http, have_kept ? kept : NULL, &dc); /* NULL: none (said) */
		if (r < 0)
			goto out;
	}
	if ((a->n_seeds > 0 && ca_image_index(im)) || a->cache || dc) {
		/* a blob's chunks found in seed files are cloned from them
		 * where the file system can (casync's --reflink=yes) */
		if (kind == CA_IMAGE_BLOB_INDEX && a->n_seeds > 0 && !a->no_reflink &&
		    (r = ca_reflink_new(ca_digest_type_from_flags(ca_index_feature_flags(ca_image_index(im))), &reflink)) <
		            0) {
			ca_log_error_errno(r, "%s", in);
			goto out;
		}
		r = cache_seeds(ca_image_chunksrc(im), ca_image_index(im), a, &seed_tmp, reflink, dc);
		if (r < 0)
			goto out;
	}
	struct ca_image_extract_opts o = {
		.path = a->path, .threads = a->threads, .no_delete = a->no_delete, .uid_shift = a->uid_shift,
		.overlay_xattrs = a->overlay_xattrs,
		.undo_immutable = a->undo_immutable, .no_holes = a->no_holes,
		.clone = reflink ? ca_reflink_clone : NULL, .clone_userdata = reflink,
		.cancel = a->cancel,
		.progress_start = a->progress_start, .progress = a->progress, .progress_end = a->progress_end,
		.progress_userdata = a->progress_userdata,
	};
	r = ca_image_extract(im, out, &o); /* logs its errors */
	/* seed directories: casync's --hardlink=yes links the files they have
	 * identically, its --reflink=yes shares the blocks they have */
	if (r == 0 && (a->hardlink || !a->no_reflink) && kind != CA_IMAGE_BLOB_INDEX && a->n_seeds > 0) {
		struct ca_seed_tree_stats hs;
		struct ca_seed_tree_opts so = { .hardlink = a->hardlink, .reflink = !a->no_reflink,
		                                .feature_flags = ca_image_feature_flags(im),
		                                .subtree = a->path };
		r = ca_seed_tree_apply(out, a->seeds, a->n_seeds, &so, &hs);
		if (r == 0 && hs.linked_files)
			ca_log_info("%llu files (%llu bytes) hard-linked to the seeds",
			            (unsigned long long)hs.linked_files, (unsigned long long)hs.linked_bytes);
		if (r == 0 && hs.cloned_bytes)
			ca_log_info("%llu bytes shared with the seeds (reflinked)", (unsigned long long)hs.cloned_bytes);
	}
	if (r == 0 && reflink && ca_reflink_bytes(reflink))
		ca_log_info("%llu bytes shared with the seeds (reflinked), not written",
		            (unsigned long long)ca_reflink_bytes(reflink));
	/* a fetch stuck after an interrupt still uses the image: the exit frees it */
	busy = r == -EBUSY;
out:
	ca_delta_client_free(dc);
	if (!busy) {
		ca_image_free(im);
		ca_reflink_free(reflink);
	}
	seed_cleanup(seed_tmp);
	return r;
}

