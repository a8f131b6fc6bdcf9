/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * store_writer.h - where make puts chunks: the seam between the make
 * pipeline and a kind of store. A local directory (store.h) and an S3
 * bucket (s3.h) are the two backends; make knows only this interface.
 *
 * has() says whether a chunk is there (1), is not (0), or may be (0 too:
 * a backend that cannot tell cheaply, e.g. S3, finds out in put). put()
 * stores one compressed chunk: 1 written (or queued to be), 0 already
 * there, negative errno. finish() makes everything put durable (a local
 * store: syncfs; S3: every upload answered) and returns the first error;
 * ret_skipped/ret_skipped_bytes count chunks put() reported as written
 * that turned out to be there already (may be NULL). put may be called
 * from several threads at once; finish and free from one.
 */
#ifndef CA_STORE_WRITER_H
#define CA_STORE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "chunk/compress.h"
#include "format/format.h"

struct ca_store_writer_ops {
	const char *kind;
	int (*has)(void *be, const uint8_t id[CA_CHUNK_ID_SIZE]);
	int (*put)(void *be, struct ca_codec *codec, const uint8_t id[CA_CHUNK_ID_SIZE], const void *p, size_t n);
	int (*finish)(void *be, uint64_t *ret_skipped, uint64_t *ret_skipped_bytes);
	void (*free)(void *be);
};

struct ca_store_writer;

/* Wrap a backend; the writer owns be (freed with ops->free, also when
 * this fails). location names the store in messages (copied). */
int ca_store_writer_new(const struct ca_store_writer_ops *ops, void *be, const char *location,
                        struct ca_store_writer **ret);
/* A local store at path (opened as ca_store_open does: made by the first write). */
int ca_store_writer_open_local(const char *path, struct ca_store_writer **ret);
void ca_store_writer_free(struct ca_store_writer *w); /* accepts NULL */

const char *ca_store_writer_location(const struct ca_store_writer *w);
int ca_store_writer_has(struct ca_store_writer *w, const uint8_t id[CA_CHUNK_ID_SIZE]);
int ca_store_writer_put(struct ca_store_writer *w, struct ca_codec *codec, const uint8_t id[CA_CHUNK_ID_SIZE],
                        const void *p, size_t n);
int ca_store_writer_finish(struct ca_store_writer *w, uint64_t *ret_skipped, uint64_t *ret_skipped_bytes);

/* Any store a make may write: a local path (or file://), an s3+http(s)
 * URL (s3.h; its credentials from the environment) or an oci+http(s)
 * registry repository (oci.h). Other URLs are -EPROTONOSUPPORT. Defined
 * in the network library (s3_store.c). */
struct ca_http_opts;
int ca_store_writer_open(const char *location, const struct ca_http_opts *http, struct ca_store_writer **ret);

#endif
