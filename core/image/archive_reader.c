/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * archive_reader.c - an image's byte stream as archive readers want it:
 * random access with one error line, or sequential with readahead,
 * decode-ahead, an optional digest and an optional subtree window.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "image/archive_reader.h"
#include "store/blob_stream.h"
#include "catar/catar_node.h"
#include "base/digest_pipe.h"
#include "base/log.h"
#include "image/sidecar.h"

/* sequential reads of a .caidx ask the chunk source this far ahead */
#define STREAM_READAHEAD (16u << 20)
#define STREAM_AHEAD_CHUNKS 16 /* decompressed ahead of a sequential reader */

struct ca_archive_reader {
	struct ca_image *im;
	const char *name;              /* the image as given, for messages */
	struct ca_blob *blob;          /* the image's, NULL for a .catar */
	struct ca_blob_stream *stream; /* sequential readers of a .caidx, once started */
	const volatile sig_atomic_t *cancel;
	uint64_t size, index_flags;
	uint64_t end; /* a sequential reader stops here (extract of a subtree): nothing is fetched past it */
	/* sequential use: readahead mark, and an optional digest of every byte read */
	uint64_t ra_mark, next_off;
	struct ca_digest_pipe *digest; /* hashed on its own thread while the decoder goes on */
	int digest_error;
	uint64_t window_base; /* the subtree's ENTRY: offset 0 of its source */
	bool no_readahead;
	bool local_chunks; /* every chunk is in a local store: the stream's threads alone decode ahead */
	bool io_logged; /* a read error was reported (one reader thread) */
};

/* Whether every backend of the image's chunk source is a local store: then
 * nothing is gained by the chunk source's read-ahead threads (there is no
 * download to start early) and they cost a hop per chunk: six threads
 * decoding on two cores, each chunk handed over twice, woken per chunk. */
static bool chunks_local(struct ca_image *im)
{
	struct ca_chunksrc *src = ca_image_chunksrc(im);
	if (!src)
		return false;
	for (size_t i = 0; i < ca_chunksrc_n_backends(src); i++) {
		const struct ca_chunk_backend_ops *ops;
		ca_chunksrc_backend(src, i, &ops);
		if (ops != ca_chunksrc_store_backend())
			return false;
	}
	return true;
}

int ca_archive_reader_new(struct ca_image *im, const struct ca_archive_reader_opts *o,
                          struct ca_archive_reader **ret)
{
	struct ca_archive_reader *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->im = im;
	a->name = ca_image_name(im);
	a->blob = ca_image_blob(im);
	a->size = ca_image_size(im);
	a->index_flags = ca_image_index_flags(im);
	a->end = UINT64_MAX;
	a->local_chunks = a->blob && chunks_local(im);
	if (o) {
		a->no_readahead = o->no_readahead;
		a->cancel = o->cancel;
	}
	*ret = a;
	return 0;
}

int ca_archive_reader_free(struct ca_archive_reader *a)
{
	if (!a)
		return 0;
	/* a fetch stuck after a cancel still uses the stream: leave it all */
	if (ca_blob_stream_free(a->stream) < 0)
		return -EBUSY;
	ca_digest_pipe_finish(a->digest, NULL);
	free(a);
	return 0;
}

static ssize_t read_done(struct ca_archive_reader *a, ssize_t k, size_t len, uint64_t off)
{
	/* cancelled: nothing to explain, and looking for the culprit chunk
	 * could hang on what the read was stuck in */
	if (k < 0 && k != -ECANCELED && !a->io_logged) {
		a->io_logged = true;
		ca_image_log_read_error(a->im, (int)k, off, len);
	}
	return k;
}

static ssize_t random_read(void *userdata, void *buf, size_t len, uint64_t off)
{
	struct ca_archive_reader *a = userdata;
	return read_done(a, ca_image_pread(a->im, buf, len, off), len, off);
}

static void random_readahead(void *userdata, uint64_t off, uint64_t len)
{
	struct ca_archive_reader *a = userdata;
	ca_image_readahead(a->im, off, len);
}

/* For the streaming decoder: reads arrive in order; keep the chunk source
 * busy ahead of them, and feed the digest if one is wanted. */
static void stream_ahead(struct ca_archive_reader *a, size_t len, uint64_t off)
{
	if (a->blob && !a->no_readahead) {
		if (!a->local_chunks && off + len > a->ra_mark && off < a->end) {
			ca_blob_readahead(a->blob, off, a->end - off < STREAM_READAHEAD ? a->end - off : STREAM_READAHEAD);
			a->ra_mark = off + STREAM_READAHEAD / 2;
		}
		/* without a thread (it could not start), read in this one */
		if (!a->stream && ca_blob_stream_new(a->blob, STREAM_AHEAD_CHUNKS, 0, a->cancel, &a->stream) == 0)
			ca_blob_stream_set_end(a->stream, a->end);
	} else if (!a->no_readahead && !ca_image_local_path(a->im) && off + len > a->ra_mark && off < a->end) {
		/* a remote .catar: its block cache downloads ahead (never blocks) */
		ca_image_readahead(a->im, off, a->end - off < STREAM_READAHEAD ? a->end - off : STREAM_READAHEAD);
		a->ra_mark = off + STREAM_READAHEAD / 2;
	}
}

/* What the stream read (k bytes of buf at off) goes to the digest. */
static void stream_digest(struct ca_archive_reader *a, const void *buf, ssize_t k, uint64_t off)
{
	if (k > 0 && a->digest) {
		if (off != a->next_off) /* the decoder skipped bytes: the digest would be wrong */
			a->digest_error = -EIO;
		else if (ca_digest_pipe_push(a->digest, buf, (size_t)k) < 0)
			a->digest_error = -EIO;
		a->next_off = off + (uint64_t)k;
	}
}

static ssize_t stream_read(void *userdata, void *buf, size_t len, uint64_t off)
{
	struct ca_archive_reader *a = userdata;
	ssize_t k;
	stream_ahead(a, len, off);
	if (a->stream)
		k = read_done(a, ca_blob_stream_read(a->stream, buf, len, off), len, off);
	else
		k = random_read(a, buf, len, off);
	stream_digest(a, buf, k, off);
	return k;
}

/* The decoder's payloads straight from the decoded chunks (extract writes
 * them from there): only with the stream's threads. */
static ssize_t stream_peek(void *userdata, size_t len, uint64_t off, const void **ret)
{
	struct ca_archive_reader *a = userdata;
	*ret = NULL;
	stream_ahead(a, len, off);
	if (!a->stream)
		return -EOPNOTSUPP;
	ssize_t k = read_done(a, ca_blob_stream_peek(a->stream, len, off, ret), len, off);
	stream_digest(a, *ret, k, off);
	return k;
}

void ca_archive_reader_random(struct ca_archive_reader *a, struct ca_catar_source *ret)
{
	*ret = (struct ca_catar_source){
		.read = random_read,
		.readahead = random_readahead,
		.userdata = a,
		.size = a->size,
		.index_flags = a->index_flags,
	};
}

void ca_archive_reader_stream(struct ca_archive_reader *a, struct ca_catar_source *ret)
{
	*ret = (struct ca_catar_source){
		.read = stream_read,
		.readahead = random_readahead,
		.userdata = a,
		.size = a->size,
		.index_flags = a->index_flags,
		.peek = stream_peek,
	};
}

int ca_archive_reader_report(const struct ca_archive_reader *a, int r, const char *path)
{
	const char *sep = path && *path ? ": " : "";
	if (r == -ECANCELED || (a->io_logged && r != -EBADMSG))
		return r; /* the canceller knows; or log_read_error said it */
	if (r == -EBADMSG)
		return ca_log_error_errno(r, "%s%s%s: not a valid archive", a->name, sep, path ? path : "");
	return ca_log_error_errno(r, "%s%s%s", a->name, sep, path ? path : "");
}

/* One directory of an archive, as an archive of its own: its ENTRY to
 * its GOODBYE (whose offsets are all relative) is the serialization of
 * that directory alone. */
static ssize_t window_read(void *userdata, void *buf, size_t len, uint64_t off)
{
	struct ca_archive_reader *a = userdata;
	return stream_read(a, buf, len, a->window_base + off);
}

static ssize_t window_peek(void *userdata, size_t len, uint64_t off, const void **ret)
{
	struct ca_archive_reader *a = userdata;
	return stream_peek(a, len, a->window_base + off, ret);
}

static void window_readahead(void *userdata, uint64_t off, uint64_t len)
{
	struct ca_archive_reader *a = userdata;
	ca_image_readahead(a->im, a->window_base + off, len);
}

/* The subtree's range from the image's metadata sidecar: no read at all.
 * 1 when there is no sidecar. */
static int sidecar_subtree(struct ca_archive_reader *a, const char *path, struct ca_catar_node *ret)
{
	const struct ca_sidecar *sc = ca_image_sidecar(a->im);
	size_t i;
	if (!sc)
		return 1;
	int r = ca_sidecar_lookup_path(sc, path, &i);
	if (r < 0)
		return r == -ENOMEM ? r : -ENOENT;
	ca_sidecar_node(sc, i, ret);
	return 0;
}

int ca_archive_reader_subtree(struct ca_archive_reader *a, const char *path, struct ca_catar_source *ret)
{
	struct ca_catar_ra *ra = NULL;
	struct ca_catar_ra_node *node = NULL;
	struct ca_catar_source rs;
	struct ca_catar_node scn;
	const struct ca_catar_node *n;
	ca_archive_reader_random(a, &rs);
	int r = sidecar_subtree(a, path, &scn);
	if (r == 0) {
		n = &scn;
		goto found;
	}
	if (r == -ENOENT) {
		ca_log_error("%s: %s: not in the archive", a->name, path);
		goto out;
	}
	/* found by random access: a few reads per component */
	r = ca_catar_ra_open(&rs, &ra);
	if (r < 0) {
		ca_archive_reader_report(a, r, NULL);
		goto out;
	}
	r = ca_catar_ra_lookup_path(ra, path, &node);
	if (r == -ENOENT || r == -ENOTDIR || r == -EINVAL) {
		ca_log_error("%s: %s: not in the archive", a->name, path);
		r = -ENOENT;
		goto out;
	}
	if (r < 0) {
		ca_archive_reader_report(a, r, path);
		goto out;
	}
	n = ca_catar_ra_node_get(node);
found:
	if (!S_ISDIR(n->mode)) {
		ca_log_error("%s: %s: not a directory (extract takes one)", a->name, path);
		r = -ENOTDIR;
		goto out;
	}
	a->window_base = n->entry_offset;
	a->end = n->end_offset;
	*ret = (struct ca_catar_source){
		.read = window_read,
		.readahead = window_readahead,
		.userdata = a,
		.size = n->end_offset - n->entry_offset,
		.index_flags = a->index_flags,
		.peek = window_peek,
	};
out:
	ca_catar_ra_node_unref(node);
	ca_catar_ra_free(ra);
	return r;
}

int ca_archive_reader_digest_start(struct ca_archive_reader *a, enum ca_digest_type type)
{
	if (a->digest)
		return -EBUSY;
	a->next_off = a->window_base; /* a subtree's stream starts at its ENTRY */
	a->digest_error = 0;
	return ca_digest_pipe_new(type, &a->digest);
}

int ca_archive_reader_digest_finish(struct ca_archive_reader *a, uint8_t ret_digest[CA_CHUNK_ID_SIZE])
{
	if (!a->digest)
		return -EINVAL;
	int r = a->digest_error;
	/* finish even after an error: it stops the pipe's thread */
	int k = ca_digest_pipe_finish(a->digest, r == 0 ? ret_digest : NULL);
	a->digest = NULL;
	return r < 0 ? r : k;
}
