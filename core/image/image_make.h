/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * image_make.h - make an image, as `casync make` does: the whole
 * orchestration behind `cafs make` and the library's "make an image".
 *
 *   OUT.caibx  <- a regular file, a block device or a pipe (stdin): its
 *                 bytes go through the make pipeline (make.h)
 *   OUT.caidx  <- a directory: the catar encoder's stream (catar_enc.h)
 *                 goes through the make pipeline
 *   OUT.catar  <- a directory: the catar stream written to OUT (atomic:
 *                 under a temporary name, renamed when complete)
 *
 * What OUT is comes from its suffix (location.h). Chunks go to the store
 * (default: default.castr beside OUT, as casync). The digest returned is
 * the one `casync make` prints: of the blob, or of the catar stream.
 *
 * Where: OUT and the store are each a local path, a file:// URL or an S3
 * bucket (s3+http(s)://, s3.h; credentials from the environment). An
 * index for a bucket is made in a private temporary directory, then
 * uploaded; its default store is default.castr beside it in the bucket.
 * Other URLs are refused (as casync, which pushes only over ssh), and so
 * is a failover group as the store (it is read from, not written to).
 *
 * Errors: 0 or a negative errno. Every failure but -ECANCELED is logged
 * as one line, "cafs: <what>: <why>" (the input, OUT, the store, or
 * "digest"); -ECANCELED (the cancel flag was raised) is returned silently,
 * since whoever raised it knows why. On any failure OUT is not created
 * (nor replaced); chunks already written to the store stay (they are
 * valid and a later make reuses them).
 *
 * Threads: the make pipeline and the digest run threads of their own, all
 * joined before return; the caller's thread feeds them. Callbacks are
 * called from the caller's thread. No global state: any number of makes
 * may run at once (into different outputs).
 */
#ifndef CA_IMAGE_MAKE_H
#define CA_IMAGE_MAKE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/digest.h"
#include "format/format.h"
#include "base/location.h"
#include "store/make.h"
#include "catar/uidshift.h"

struct ca_image_make_opts {
	/* a local path (only a name, with store_writer); NULL: default.castr beside OUT (unused for .catar) */
	const char *store;
	uint64_t chunk_min, chunk_avg, chunk_max;
	enum ca_digest_type digest;
	/* feature flags of an archive, by casync's rules:
	 * --with replaces the default set, --without removes bits */
	uint64_t with;      /* meaningful when with_set */
	bool with_set;
	uint64_t without;
	bool exclude_nodump, exclude_submounts, exclude_file;
	struct ca_uid_shift uid_shift; /* archives: casync's --uid-shift/--uid-range (uidshift.h) */
	unsigned threads; /* make pipeline workers; 0 = number of CPUs */
	bool no_sidecar;  /* .caidx: no X.caidx.cameta beside it (sidecar.h) */
	/* progress_start (may be NULL) is called once before any byte is read,
	 * with the input's size (0 if unknown: a pipe, a directory); then
	 * progress (may be NULL) now and then with the bytes made so far; then
	 * progress_end (may be NULL) once, before anything is logged on failure
	 * (so that a progress bar can be erased first) or before returning. */
	void (*progress_start)(void *userdata, uint64_t total);
	void (*progress)(void *userdata, uint64_t bytes);
	void (*progress_end)(void *userdata);
	void *progress_userdata;
	/* when non-NULL and it becomes non-zero (a signal handler sets it),
	 * make stops and returns -ECANCELED */
	const volatile sig_atomic_t *cancel;
	enum ca_compression compression; /* chunks (compress.h); NONE (0): zstd */
	/* chunks go here instead of store (borrowed; store_writer.h); NULL:
	 * ca_image_make opens the store itself. store then only names it in
	 * messages, and no metadata sidecar is made (it is written only beside
	 * a local index) */
	struct ca_store_writer *store_writer;
	/* a prefetch profile file (profile.h) checked before the work and
	 * copied beside the index made; NULL: none. Not for a .catar. */
	const char *profile;
	/* with store_writer, still make the sidecar beside the (local) index:
	 * set by ca_image_make itself for an index bound for a registry, which
	 * uploads it beside the index (oci.h) */
	bool writer_sidecar;
};

/* casync's defaults: chunks 16/64/256 KiB, SHA-512/256, the default
 * feature set, .caexclude files and nodump flags honoured. */
void ca_image_make_opts_init(struct ca_image_make_opts *o);

/* `cafs meta make`: the metadata sidecar of the existing archive index
 * at in (a .caidx, read through stores; none: its default store), written
 * to out (NULL: beside in, INDEX.caidx.cameta; in must then be local).
 * The old sidecar is what is being replaced: it is not loaded. Logs its
 * errors; 0 or a negative errno. */
int ca_image_make_sidecar_of(const char *in, char *const *stores, size_t n_stores, const char *out);

/* `cafs sign`: what the signature of an index is made with */
struct ca_image_sign_opts {
	const char *secret_key; /* a minisign secret key file (minisign -G) */
	/* asked once for the key's password when it is encrypted: fills buf
	 * (NUL-terminated, at most size bytes); 0, or -1 when none is given */
	int (*password)(char *buf, size_t size, void *userdata);
	void *userdata;
	bool legacy;                   /* minisign -S -l instead of the prehashed signature */
	const char *name;              /* the file name it is published under (NULL: path's) */
	const char *trusted_comment;   /* more signed text (NULL: none) */
	const char *untrusted_comment; /* NULL: minisign's */
};
/* Sign the local index file at path: writes path.minisig as minisign -S
 * does (trust.h, ca_trust_sign_file). The key and password are wiped
 * after use. Logs its errors; 0 or a negative errno. path may also be an
 * index in a registry (oci+http(s)://.../NAME.caidx, oci.h): it is
 * fetched, signed under its name, and NAME.minisig uploaded beside it. */
int ca_image_sign(const char *path, const struct ca_image_sign_opts *o);

/* The make options a command line names, checked here by the lower
 * layers' own rules, so a front end needs none of their headers. */
/* --chunk-size (casync's AVG or MIN:AVG:MAX) into o's chunk sizes: 0 or -EINVAL. */
int ca_image_make_set_chunk_size(struct ca_image_make_opts *o, const char *s);
/* --with/--without NAME (a feature or a group, feature.h) into o: 0 or -EINVAL. */
int ca_image_make_set_feature(struct ca_image_make_opts *o, const char *name, bool with);
/* --compression NAME into o: 0, -EINVAL (no such name), -EOPNOTSUPP
 * (built without its library), or another negative errno. */
int ca_image_make_set_compression(struct ca_image_make_opts *o, const char *name);

/* What ca_image_make refuses before any work because out and o do not
 * go together (a URL it cannot write, an unknown suffix, a .catar for a
 * bucket, a profile for a .catar): -EINVAL with msg set to the one-line
 * reason (the caller's usage error), nothing logged. -EINVAL with msg
 * empty: refused and logged (a failover group as the store). 0: fine. */
int ca_image_make_check(const char *out, const struct ca_image_make_opts *o, char *msg, size_t len);

/* Make out (kind by suffix) from input: a path, or "-" for standard input
 * (a blob only). ret_digest gets the stream digest; ret_stats (may be
 * NULL) the pipeline's counters (for a .catar only bytes is set). The
 * output gets the input's read/write mode bits (0644 for a pipe or a
 * device), as with casync. -EINVAL (logged) for what ca_image_make_check
 * refuses. */
int ca_image_make(const char *out, const char *input, const struct ca_image_make_opts *o,
                  uint8_t ret_digest[CA_CHUNK_ID_SIZE], struct ca_make_stats *ret_stats);

/* The digest `casync [--digest=D] digest DIR` prints: that of the .catar
 * stream of dir with the default feature set (its digest bit as D says),
 * hashed with D, made without writing it anywhere. Logs as ca_image_make. */
/* The .catar stream `make OUT.catar dir` would write with o (feature
 * flags, exclusions, uid shift; progress, store and chunking unused),
 * written to fd and nowhere else: list, mtree and stat of a directory read
 * it from a pipe, with no copy of the tree on disk. Logs as ca_image_make;
 * once o->cancel is raised (the reader has what it wants and closes its
 * end), a failed write is -ECANCELED, silent. */
int ca_image_encode_dir(const char *dir, const struct ca_image_make_opts *o, int fd);

int ca_image_digest_dir(const char *dir, enum ca_digest_type digest, const volatile sig_atomic_t *cancel,
                        uint8_t ret_digest[CA_CHUNK_ID_SIZE]);

/* The digest `casync digest X.caibx` prints: of the blob, read back
 * chunk by chunk from the image opened at path with io (source.h), hashed
 * with the index's digest. Logs its errors (a missing chunk by its id). */
struct ca_image_opts;
int ca_image_digest_blob(const char *path, const struct ca_image_opts *io, uint8_t ret_digest[CA_CHUNK_ID_SIZE]);

/* The stream ca_image_encode_dir writes, as a source for the streaming
 * decoder (catar_ra.h ca_catar_source; read forward only): encoded on a
 * thread of its own into a pipe, so that list, mtree and stat of a
 * directory read it with no copy of the tree on disk. o as for
 * ca_image_encode_dir (its cancel and progress unused). Logs. */
struct ca_image_dir_stream;
struct ca_catar_source;
int ca_image_dir_stream_open(const char *dir, const struct ca_image_make_opts *o, struct ca_image_dir_stream **ret,
                             struct ca_catar_source *ret_src);
/* Stop the encoder (the reader may have stopped early), wait for it and
 * free ds. Returns the encoder's error if it failed (logged by it), else
 * reader_r, logged as "<dir>: its archive stream" if it is a failure. */
int ca_image_dir_stream_close(struct ca_image_dir_stream *ds, int reader_r);

/* The digest `casync digest FILE` prints: of the file's bytes (path, or
 * "-" for standard input), hashed with t. Logs its errors. */
int ca_image_digest_file(const char *path, enum ca_digest_type t, uint8_t ret_digest[CA_CHUNK_ID_SIZE]);

#endif
