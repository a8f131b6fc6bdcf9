/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cafs/ops.h - whole-image work: make an image, extract one, fill a cache.
 *
 * What these make is what casync makes from the same input: the same index
 * and the same chunk files, byte for byte. Each may take long: it reports
 * progress through a callback (called from any of the library's threads,
 * possibly concurrently) and stops with -ECANCELED soon after
 * cafs_ctx_cancel(), leaving no partial output behind.
 */
#ifndef CAFS_OPS_H
#define CAFS_OPS_H

#include <stddef.h>
#include <stdint.h>

#include <cafs/context.h>
#include <cafs/image.h>

#ifdef __cplusplus
extern "C" {
#endif

/* done of total bytes (total 0 when unknown). */
typedef void (*cafs_progress_fn)(void *userdata, uint64_t done, uint64_t total);

/* Zero-initialize: all zero is casync's defaults. Names are those the
 * cafs command's make options take (cafs(1)). */
struct cafs_make_options {
	size_t size; /* sizeof(struct cafs_make_options): see cafs/context.h */
	/* where chunks go: a directory, a file:// URL or an S3 bucket
	 * (s3+https://host/bucket/path); NULL: default.castr beside out */
	const char *store;
	uint64_t chunk_size_min; /* 0: avg / 4 */
	uint64_t chunk_size_avg; /* 0: 64 KiB */
	uint64_t chunk_size_max; /* 0: avg * 4 */
	unsigned threads;        /* 0: one per CPU */
	cafs_progress_fn progress;
	void *progress_userdata;
	const char *compression; /* of chunks: "zstd", "xz", "gzip"; NULL: zstd */
	const char *digest;      /* "sha512-256" or "sha256"; NULL: sha512-256 */
	/* an archive's features, comma-separated names as casync's --with and
	 * --without take them ("unix", "best", "xattrs,acl", ...): with
	 * replaces the default set, without removes from it; NULL: neither */
	const char *with;
	const char *without;
	const char *profile; /* a prefetch profile copied beside the index made; NULL: none */
};

#define CAFS_DIGEST_SIZE 32

/* Make out from input: out.caibx from a regular file or block device,
 * out.caidx or out.catar from a directory (every metadata casync archives
 * by default). out is a path, a file:// URL, or an index in an S3 bucket
 * (made in a temporary directory, then uploaded; credentials from the
 * environment, as for the cafs command). digest (may be NULL) receives the
 * digest of the whole stream, what `casync make` prints. -EINVAL (logged)
 * for an unknown name, an out of unknown suffix, or a URL that cannot be
 * written; -EOPNOTSUPP for a compression built without its library. */
int cafs_make(struct cafs_ctx *ctx, const char *out, const char *input, const struct cafs_make_options *o,
              uint8_t digest[CAFS_DIGEST_SIZE]);

struct cafs_extract_options {
	size_t size; /* sizeof(struct cafs_extract_options): see cafs/context.h */
	const char *path; /* an archive's directory to extract instead of its root; NULL: all */
	unsigned threads; /* 0: one per CPU */
	cafs_progress_fn progress;
	void *progress_userdata;
};

/* Extract img to dest: a blob to a file (or a block device, written in
 * place), an archive to a directory (made if missing; nothing is written
 * outside it, and a new directory appears whole or not at all).
 * -EBUSY after cafs_ctx_cancel when a transfer is stuck where no cancel
 * reaches (a hung NFS server): the call returns anyway, and the image is
 * then never freed (a stuck thread may still use it). */
int cafs_image_extract(struct cafs_image *img, const char *dest, const struct cafs_extract_options *o);

struct cafs_fill_options {
	size_t size; /* sizeof(struct cafs_fill_options): see cafs/context.h */
	unsigned threads;        /* transfers in flight; 0: 8 */
	uint64_t rate_limit_bps; /* 0: no limit */
	cafs_progress_fn progress;
	void *progress_userdata;
};

/* Fetch every chunk of img that its cache lacks (img must have been opened
 * with a cache), so that it can later be opened offline. 0 when every
 * chunk is in the cache; CAFS_ECHUNKMISSING (or another error) when some
 * could not be fetched: each is logged (the first 20, then how many more),
 * the others are kept. */
int cafs_image_fill_cache(struct cafs_image *img, const struct cafs_fill_options *o);

#ifdef __cplusplus
}
#endif

#endif
