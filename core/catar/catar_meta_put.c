/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_meta_put.c - a node's ENTRY and metadata records from struct
 * ca_meta_info: one function per record type, sizes from format.h. What
 * to store was decided when the info was gathered; this only writes it.
 */
#include "config.h"

#include <string.h>
#include <sys/stat.h>

#include "catar/catar_meta.h"
#include "format/format.h"

static int put_header(struct ca_buf *out, uint64_t size, uint64_t type)
{
	struct ca_format_header h;
	ca_le64_write(&h.size, size);
	ca_le64_write(&h.type, type);
	return ca_buf_append(out, &h, sizeof(h), SIZE_MAX);
}

/* A record of a header and len bytes of data. */
static int put_blob(struct ca_buf *out, uint64_t type, const void *data, size_t len)
{
	int r = put_header(out, sizeof(struct ca_format_header) + len, type);
	return r < 0 ? r : ca_buf_append(out, data, len, SIZE_MAX);
}

/* A record holding a NUL-terminated string; none when s is NULL. */
static int put_string(struct ca_buf *out, uint64_t type, const char *s)
{
	return s ? put_blob(out, type, s, strlen(s) + 1) : 0;
}

static int put_entry(const struct ca_meta_info *i, struct ca_buf *out)
{
	struct ca_format_entry e;
	ca_le64_write(&e.header.size, sizeof(e));
	ca_le64_write(&e.header.type, CA_FORMAT_ENTRY);
	ca_le64_write(&e.feature_flags, i->feature_flags);
	ca_le64_write(&e.mode, i->mode);
	ca_le64_write(&e.flags, i->flags);
	ca_le64_write(&e.uid, i->uid);
	ca_le64_write(&e.gid, i->gid);
	ca_le64_write(&e.mtime, i->mtime);
	return ca_buf_append(out, &e, sizeof(e), SIZE_MAX);
}

static int put_xattr(const struct ca_meta_xattr *x, struct ca_buf *out)
{
	size_t nl = strlen(x->name) + 1;
	int r = put_header(out, sizeof(struct ca_format_header) + nl + x->size, CA_FORMAT_XATTR);
	if (r == 0)
		r = ca_buf_append(out, x->name, nl, SIZE_MAX);
	if (r == 0)
		r = ca_buf_append(out, x->value, x->size, SIZE_MAX);
	return r;
}

static int put_fcaps(const struct ca_meta_info *i, struct ca_buf *out)
{
	return i->fcaps ? put_blob(out, CA_FORMAT_FCAPS, i->fcaps, i->fcaps_size) : 0;
}

static int put_projid(const struct ca_meta_info *i, struct ca_buf *out)
{
	struct ca_format_quota_projid q;
	if (i->quota_projid == 0)
		return 0;
	ca_le64_write(&q.header.size, sizeof(q));
	ca_le64_write(&q.header.type, CA_FORMAT_QUOTA_PROJID);
	ca_le64_write(&q.projid, i->quota_projid);
	return ca_buf_append(out, &q, sizeof(q), SIZE_MAX);
}

static int put_device(const struct ca_meta_info *i, struct ca_buf *out)
{
	struct ca_format_device d;
	ca_le64_write(&d.header.size, sizeof(d));
	ca_le64_write(&d.header.type, CA_FORMAT_DEVICE);
	ca_le64_write(&d.major, i->device_major);
	ca_le64_write(&d.minor, i->device_minor);
	return ca_buf_append(out, &d, sizeof(d), SIZE_MAX);
}

/* The node's last record: the PAYLOAD header (the caller appends the
 * content), SYMLINK, DEVICE, or nothing. */
static int put_tail(const struct ca_meta_info *i, struct ca_buf *out)
{
	switch (i->mode & S_IFMT) {
	case S_IFREG:
		return put_header(out, sizeof(struct ca_format_header) + i->payload_size, CA_FORMAT_PAYLOAD);
	case S_IFLNK:
		return put_string(out, CA_FORMAT_SYMLINK, i->symlink_target);
	case S_IFBLK:
	case S_IFCHR:
		return put_device(i, out);
	default:
		return 0;
	}
}

int ca_meta_put(const struct ca_meta_info *i, struct ca_buf *out)
{
	int r = put_entry(i, out);
	if (r == 0)
		r = put_string(out, CA_FORMAT_USER, i->user_name);
	if (r == 0)
		r = put_string(out, CA_FORMAT_GROUP, i->group_name);
	for (size_t k = 0; r == 0 && k < i->n_xattrs; k++)
		r = put_xattr(&i->xattrs[k], out);
	if (r == 0)
		r = ca_acl_put_records(&i->acl_access, &i->acl_default, out);
	if (r == 0)
		r = put_string(out, CA_FORMAT_SELINUX, i->selinux);
	if (r == 0)
		r = put_fcaps(i, out);
	if (r == 0)
		r = put_projid(i, out);
	if (r == 0)
		r = put_tail(i, out);
	return r;
}
