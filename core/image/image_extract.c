/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * image_extract.c - extract an image: a blob through the parallel blob
 * extractor, an archive through the streaming decoder and the tree
 * extractor, with the archive reader between the image and the decoder.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "image/archive_reader.h"
#include "catar/catar_dec.h"
#include "catar/catar_extract.h"
#include "store/extract.h"
#include "image/image_extract.h"
#include "base/log.h"

int ca_image_extract_check_dest(enum ca_image_kind kind, const char *dest)
{
	struct stat st;
	if (kind != CA_IMAGE_BLOB_INDEX)
		return 0;
	/* a regular file is replaced by rename, which would swap a device node
	 * or a FIFO for a regular file; block devices are written in place.
	 * casync refuses the rest too. */
	if (strcmp(dest, "-") && stat(dest, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		ca_log_error("%s: not a regular file or block device", dest);
		return -EEXIST;
	}
	return 0;
}

static void progress_start(const struct ca_image_extract_opts *o, uint64_t total)
{
	if (o->progress_start)
		o->progress_start(o->progress_userdata, total);
}

static void progress_end(const struct ca_image_extract_opts *o)
{
	if (o->progress_end)
		o->progress_end(o->progress_userdata);
}

static int extract_blob(struct ca_image *im, const char *dest, const struct ca_image_extract_opts *o)
{
	struct ca_index *idx = ca_image_index(im);
	struct ca_extract_opts eo = { .threads = o->threads, .progress = o->progress,
	                              .progress_userdata = o->progress_userdata, .cancel = o->cancel,
	                              .no_holes = o->no_holes, .clone = o->clone,
	                              .clone_userdata = o->clone_userdata };
	progress_start(o, ca_index_blob_size(idx));
	int r = ca_extract_blob(idx, ca_image_chunksrc(im), dest, &eo); /* logs its errors */
	progress_end(o);
	return r;
}

static int extract_archive(struct ca_image *im, const char *dest, const struct ca_image_extract_opts *o)
{
	struct ca_archive_reader_opts ro = { .cancel = o->cancel };
	struct ca_archive_reader *a = NULL;
	struct ca_catar_dec *d = NULL;
	struct ca_catar_source s;
	int r = ca_archive_reader_new(im, &ro, &a);
	if (r < 0) {
		ca_log_error_errno(r, "%s", ca_image_name(im));
		goto out;
	}
	ca_archive_reader_stream(a, &s);
	if (o->path && (r = ca_archive_reader_subtree(a, o->path, &s)) < 0)
		goto out;
	r = ca_catar_dec_new(&s, &d);
	if (r < 0) {
		ca_archive_reader_report(a, r, NULL);
		goto out;
	}
	struct ca_catar_extract_opts xo = { .archive_name = ca_image_name(im), .no_delete = o->no_delete,
		                            .overlay_xattrs = o->overlay_xattrs, .cancel = o->cancel,
		                            .progress = o->progress, .progress_userdata = o->progress_userdata,
		                            .uid_shift = o->uid_shift, .undo_immutable = o->undo_immutable,
		                            .no_holes = o->no_holes };
	progress_start(o, 0);
	r = ca_catar_extract(d, dest, &xo); /* the reader explained its own failures */
	progress_end(o);
out:
	ca_catar_dec_free(d);
	/* a decode-ahead thread stuck in a fetch still uses the image */
	if (ca_archive_reader_free(a) == -EBUSY)
		r = -EBUSY;
	return r;
}

int ca_image_extract(struct ca_image *im, const char *dest, const struct ca_image_extract_opts *o)
{
	static const struct ca_image_extract_opts none = { 0 };
	enum ca_image_kind kind = ca_image_kind(im);
	int r;
	if (!o)
		o = &none;
	if (kind == CA_IMAGE_BLOB_INDEX && o->path)
		return ca_log_error_errno(EINVAL, "%s: PATH is for archives (.catar, .caidx)", ca_image_name(im));
	r = ca_image_extract_check_dest(kind, dest);
	if (r < 0)
		return r;
	if (kind == CA_IMAGE_BLOB_INDEX)
		return extract_blob(im, dest, o);
	return extract_archive(im, dest, o);
}
