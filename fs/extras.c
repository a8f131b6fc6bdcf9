/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extras.c - profiles, prefetch and the kept index's digest (extras.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "extras.h"

int fs_extras_record(struct fs_extras *x)
{
	int r = ca_profile_rec_new(&x->rec);
	if (r < 0)
		ca_log_error_errno(r, "mount");
	return r;
}

/* The profile to replay (see fs_extras_prefetch). */
static int open_profile(struct ca_image *im, const char *source, const char *profile,
                        const struct ca_image_opts *io, struct ca_buf *kept, struct ca_profile **ret)
{
	*ret = NULL;
	if (profile && !strcmp(profile, "none"))
		return 0;
	if (!profile) /* (its bytes kept for a restarted server) */
		return ca_source_open_profile_kept(source, ca_image_index(im), io, ret, kept);
	int r = ca_profile_load(profile, ret);
	if (r == -EBADMSG)
		ca_log_warning("%s: not a valid prefetch profile: ignored", profile);
	else if (r == -ENOMEM)
		return ca_log_error_errno(r, "%s", profile);
	else if (r < 0)
		ca_log_warning_errno(r, "%s: prefetch profile ignored", profile);
	return 0;
}

int fs_extras_prefetch(struct fs_extras *x, struct ca_image *im, const char *source, const char *profile,
                       bool fill, const struct ca_image_opts *io, struct ca_buf *kept)
{
	struct ca_profile *prof = NULL;
	size_t *order = NULL, n = 0, skipped = 0;
	struct ca_index *idx = ca_image_index(im);
	int r = idx ? open_profile(im, source, profile, io, kept, &prof) : 0;
	if (r == 0 && prof) {
		r = ca_profile_resolve(prof, idx, ca_image_sidecar(im), &order, &n, &skipped);
		if (r < 0)
			ca_log_error_errno(r, "%s", source);
		else
			ca_log_info("prefetch profile: %zu chunks (%zu of %zu items name nothing in this image)", n,
			            skipped, ca_profile_count(prof));
		if (r == 0 && ca_image_sidecar(im) && !x->rec && (r = fs_warm_new(prof, &x->warm)) < 0)
			ca_log_error_errno(r, "%s", source);
	}
	ca_profile_free(prof);
	if (r == 0 && (n > 0 || fill)) {
		r = ca_prefetch_start(ca_image_chunksrc(im), idx, order, n, fill, &x->pf);
		if (r < 0)
			ca_log_error_errno(r, "%s", source);
	} else {
		free(order);
	}
	return r;
}

int fs_extras_write_profile(struct fs_extras *x, struct ca_image *im, const char *path)
{
	uint8_t digest[CA_CHUNK_ID_SIZE];
	size_t size;
	const void *bytes = ca_index_data(ca_image_index(im), &size);
	int r = ca_sidecar_index_digest(bytes, size, digest);
	if (r < 0)
		return ca_log_error_errno(r, "%s", path);
	return ca_profile_rec_write(x->rec, path, digest, ca_image_sidecar(im));
}

void fs_extras_stop(struct fs_extras *x)
{
	ca_prefetch_stop(x->pf); /* its workers read through the image */
	x->pf = NULL;
	fs_warm_release(x->warm); /* a thread still warming starts no further file */
	x->warm = NULL;
}

void fs_extras_release(struct fs_extras *x)
{
	fs_extras_stop(x);
	ca_profile_rec_free(x->rec);
	x->rec = NULL;
}

void fs_index_sha256(const void *data, size_t size, char hex[FS_SHA256_HEX_SIZE])
{
	struct ca_digest *dg = NULL;
	uint8_t sum[CA_CHUNK_ID_SIZE];
	if (ca_digest_new(CA_DIGEST_SHA256, &dg) == 0 && ca_digest_once(dg, data, size, sum) == 0)
		ca_id_to_hex(sum, hex);
	else
		strcpy(hex, "?");
	ca_digest_free(dg);
}

char *fs_stores_map(const char *s, char *(*fn)(const char *member))
{
	return ca_failover_map(s, fn);
}
