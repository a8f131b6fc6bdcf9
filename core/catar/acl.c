/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * acl.c - POSIX ACLs: archive records <-> struct ca_acl <-> kernel xattr.
 *
 * We read and write the xattr ourselves instead of going through libacl:
 * the format is a stable kernel ABI, and libacl would cost a path lookup
 * per call and a library dependency for a few dozen lines.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "catar/acl.h"
#include "format/format.h"
#include "base/log.h"

/* linux/posix_acl_xattr.h and linux/posix_acl.h, which not every libc
 * installation ships together */
#define XATTR_VERSION 2u
#define XATTR_HEADER 4u
#define XATTR_ENTRY 8u
#define TAG_USER_OBJ 0x01u
#define TAG_USER 0x02u
#define TAG_GROUP_OBJ 0x04u
#define TAG_GROUP 0x08u
#define TAG_MASK 0x10u
#define TAG_OTHER 0x20u
#define ID_UNDEFINED UINT32_MAX
#define PERM_BITS 7u

void ca_acl_init(struct ca_acl *a)
{
	memset(a, 0, sizeof(*a));
	a->user_obj = a->group_obj = a->other = a->mask = CA_ACL_NO_MASK;
}

void ca_acl_release(struct ca_acl *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n_users; i++)
		free(a->users[i].name);
	for (size_t i = 0; i < a->n_groups; i++)
		free(a->groups[i].name);
	free(a->users);
	free(a->groups);
	ca_acl_init(a);
}

bool ca_acl_is_empty(const struct ca_acl *a)
{
	return a->user_obj == CA_ACL_NO_MASK && a->group_obj == CA_ACL_NO_MASK && a->other == CA_ACL_NO_MASK &&
	       a->mask == CA_ACL_NO_MASK && !a->n_users && !a->n_groups;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static int cmp_id(const void *a, const void *b)
{
	const struct ca_acl_entry *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->perm < y->perm ? -1 : x->perm > y->perm;
}

static int cmp_record(const void *a, const void *b)
{
	const struct ca_acl_entry *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (!x->name != !y->name)
		return x->name ? 1 : -1;
	if (x->name) {
		int k = strcmp(x->name, y->name);
		if (k)
			return k;
	}
	return x->perm < y->perm ? -1 : x->perm > y->perm;
}

static void sort_entries(struct ca_acl_entry *v, size_t n, int (*cmp)(const void *, const void *))
{
	/* qsort's pointer must not be NULL, even for zero items */
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp);
}

void ca_acl_sort_records(struct ca_acl *a)
{
	sort_entries(a->users, a->n_users, cmp_record);
	sort_entries(a->groups, a->n_groups, cmp_record);
}

static int add_named(struct ca_acl_entry **list, size_t *n, uint64_t id, uint64_t perm)
{
	struct ca_acl_entry *v = realloc(*list, (*n + 1) * sizeof(**list));
	if (!v)
		return -ENOMEM;
	*list = v;
	v[(*n)++] = (struct ca_acl_entry){ .id = id, .perm = perm };
	return 0;
}

static int set_obj(uint64_t *slot, uint64_t perm, size_t off)
{
	if (*slot != CA_ACL_NO_MASK)
		return ca_log_debug_errno(EBADMSG, "acl: xattr entry at %zu: object entry repeated", off);
	*slot = perm;
	return 0;
}

int ca_acl_from_xattr(const void *value, size_t size, struct ca_acl *ret)
{
	const uint8_t *p = value;
	int r = 0;

	ca_acl_init(ret);
	if (size < XATTR_HEADER || (size - XATTR_HEADER) % XATTR_ENTRY)
		return ca_log_debug_errno(EBADMSG, "acl: xattr of %zu bytes: not a header plus whole entries", size);
	if (le32(p) != XATTR_VERSION)
		return ca_log_debug_errno(EBADMSG, "acl: xattr version %u, not %u", le32(p), XATTR_VERSION);
	for (size_t off = XATTR_HEADER; off < size && r == 0; off += XATTR_ENTRY) {
		unsigned tag = p[off] | p[off + 1] << 8;
		uint64_t perm = (p[off + 2] | p[off + 3] << 8) & PERM_BITS;
		uint32_t id = le32(p + off + 4);
		switch (tag) {
		case TAG_USER_OBJ:
			r = set_obj(&ret->user_obj, perm, off);
			break;
		case TAG_GROUP_OBJ:
			r = set_obj(&ret->group_obj, perm, off);
			break;
		case TAG_MASK:
			r = set_obj(&ret->mask, perm, off);
			break;
		case TAG_OTHER:
			r = set_obj(&ret->other, perm, off);
			break;
		case TAG_USER:
		case TAG_GROUP:
			if (id == ID_UNDEFINED)
				return ca_log_debug_errno(EBADMSG, "acl: xattr entry at %zu: named entry without id", off);
			r = tag == TAG_USER ? add_named(&ret->users, &ret->n_users, id, perm)
			                    : add_named(&ret->groups, &ret->n_groups, id, perm);
			break;
		default:
			return ca_log_debug_errno(EBADMSG, "acl: xattr entry at %zu: unknown tag 0x%x", off, tag);
		}
	}
	if (r < 0)
		return r;
	sort_entries(ret->users, ret->n_users, cmp_id);
	sort_entries(ret->groups, ret->n_groups, cmp_id);
	return 0;
}

static bool perm_ok(uint64_t p)
{
	return p <= PERM_BITS;
}

static bool named_ok(const struct ca_acl_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!perm_ok(v[i].perm) || v[i].id >= ID_UNDEFINED || (i > 0 && v[i].id <= v[i - 1].id))
			return false;
	return true;
}

static uint8_t *put_entry(uint8_t *e, unsigned tag, uint64_t perm, uint64_t id)
{
	e[0] = (uint8_t)tag;
	e[1] = (uint8_t)(tag >> 8);
	e[2] = (uint8_t)perm;
	e[3] = 0;
	put_le32(e + 4, (uint32_t)id);
	return e + XATTR_ENTRY;
}

int ca_acl_to_xattr(const struct ca_acl *a, uint8_t **ret, size_t *ret_size)
{
	if (!perm_ok(a->user_obj) || !perm_ok(a->group_obj) || !perm_ok(a->other) ||
	    (a->mask != CA_ACL_NO_MASK && !perm_ok(a->mask)) ||
	    ((a->n_users || a->n_groups) && a->mask == CA_ACL_NO_MASK) || !named_ok(a->users, a->n_users) ||
	    !named_ok(a->groups, a->n_groups))
		return -EINVAL;
	/* users + groups are bounded by what the caller could allocate */
	size_t n = 3 + (a->mask != CA_ACL_NO_MASK) + a->n_users + a->n_groups;
	size_t size = XATTR_HEADER + XATTR_ENTRY * n;
	uint8_t *buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	put_le32(buf, XATTR_VERSION);
	uint8_t *e = put_entry(buf + XATTR_HEADER, TAG_USER_OBJ, a->user_obj, ID_UNDEFINED);
	for (size_t i = 0; i < a->n_users; i++)
		e = put_entry(e, TAG_USER, a->users[i].perm, a->users[i].id);
	e = put_entry(e, TAG_GROUP_OBJ, a->group_obj, ID_UNDEFINED);
	for (size_t i = 0; i < a->n_groups; i++)
		e = put_entry(e, TAG_GROUP, a->groups[i].perm, a->groups[i].id);
	if (a->mask != CA_ACL_NO_MASK)
		e = put_entry(e, TAG_MASK, a->mask, ID_UNDEFINED);
	put_entry(e, TAG_OTHER, a->other, ID_UNDEFINED);
	*ret = buf;
	*ret_size = size;
	return 0;
}

static int named_from_node(const struct ca_catar_node *n, enum ca_catar_acl_kind kind, struct ca_acl_entry **list,
                           size_t *count)
{
	struct ca_catar_acl_entry a;
	size_t cursor = 0;
	while (ca_catar_node_next_acl(n, kind, &cursor, &a)) {
		int r = add_named(list, count, a.id, a.permissions);
		if (r < 0)
			return r;
	}
	return 0;
}

int ca_acl_from_node(const struct ca_catar_node *n, bool dflt, struct ca_acl *ret)
{
	int r;
	ca_acl_init(ret);
	if (dflt) {
		if (!n->has_acl_default)
			return -ENODATA;
		ret->user_obj = n->acl_default_user_obj;
		ret->group_obj = n->acl_default_group_obj;
		ret->other = n->acl_default_other;
		ret->mask = n->acl_default_mask;
		r = named_from_node(n, CA_CATAR_ACL_DEFAULT_USER, &ret->users, &ret->n_users);
		if (r == 0)
			r = named_from_node(n, CA_CATAR_ACL_DEFAULT_GROUP, &ret->groups, &ret->n_groups);
		return r;
	}
	if (!n->n_acl_user && !n->n_acl_group && !n->has_acl_group_obj)
		return -ENODATA;
	/* with an extended ACL, stat's group bits are the mask */
	ret->user_obj = (n->mode >> 6) & PERM_BITS;
	ret->group_obj = n->has_acl_group_obj ? n->acl_group_obj : (n->mode >> 3) & PERM_BITS;
	ret->mask = (n->mode >> 3) & PERM_BITS;
	ret->other = n->mode & PERM_BITS;
	r = named_from_node(n, CA_CATAR_ACL_USER, &ret->users, &ret->n_users);
	if (r == 0)
		r = named_from_node(n, CA_CATAR_ACL_GROUP, &ret->groups, &ret->n_groups);
	return r;
}

int ca_acl_node_xattr(const struct ca_catar_node *n, bool dflt, uint8_t **ret, size_t *ret_size)
{
	struct ca_acl a;
	int r = ca_acl_from_node(n, dflt, &a);
	if (r == 0)
		r = ca_acl_to_xattr(&a, ret, ret_size);
	ca_acl_release(&a);
	return r;
}

/* ---- archive records ---- */

static int put_named_records(struct ca_buf *out, uint64_t type, const struct ca_acl_entry *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct ca_format_acl_entry rec;
		size_t nl = v[i].name ? strlen(v[i].name) + 1 : 0;
		ca_le64_write(&rec.header.size, sizeof(rec) + nl);
		ca_le64_write(&rec.header.type, type);
		ca_le64_write(&rec.id, v[i].id);
		ca_le64_write(&rec.permissions, v[i].perm);
		int r = ca_buf_append(out, &rec, sizeof(rec), SIZE_MAX);
		if (r == 0 && nl)
			r = ca_buf_append(out, v[i].name, nl, SIZE_MAX);
		if (r < 0)
			return r;
	}
	return 0;
}

static int put_group_obj(struct ca_buf *out, const struct ca_acl *a)
{
	struct ca_format_acl_group_obj rec;
	/* without a mask, the mode's group bits are the group entry */
	if (a->group_obj == CA_ACL_NO_MASK || a->mask == CA_ACL_NO_MASK)
		return 0;
	ca_le64_write(&rec.header.size, sizeof(rec));
	ca_le64_write(&rec.header.type, CA_FORMAT_ACL_GROUP_OBJ);
	ca_le64_write(&rec.permissions, a->group_obj);
	return ca_buf_append(out, &rec, sizeof(rec), SIZE_MAX);
}

static int put_default(struct ca_buf *out, const struct ca_acl *d)
{
	struct ca_format_acl_default rec;
	if (d->user_obj == CA_ACL_NO_MASK && d->group_obj == CA_ACL_NO_MASK && d->other == CA_ACL_NO_MASK &&
	    d->mask == CA_ACL_NO_MASK)
		return 0;
	ca_le64_write(&rec.header.size, sizeof(rec));
	ca_le64_write(&rec.header.type, CA_FORMAT_ACL_DEFAULT);
	ca_le64_write(&rec.user_obj_permissions, d->user_obj);
	ca_le64_write(&rec.group_obj_permissions, d->group_obj);
	ca_le64_write(&rec.other_permissions, d->other);
	ca_le64_write(&rec.mask_permissions, d->mask);
	return ca_buf_append(out, &rec, sizeof(rec), SIZE_MAX);
}

int ca_acl_put_records(const struct ca_acl *access, const struct ca_acl *dflt, struct ca_buf *out)
{
	int r = put_named_records(out, CA_FORMAT_ACL_USER, access->users, access->n_users);
	if (r == 0)
		r = put_named_records(out, CA_FORMAT_ACL_GROUP, access->groups, access->n_groups);
	if (r == 0)
		r = put_group_obj(out, access);
	if (r == 0)
		r = put_default(out, dflt);
	if (r == 0)
		r = put_named_records(out, CA_FORMAT_ACL_DEFAULT_USER, dflt->users, dflt->n_users);
	if (r == 0)
		r = put_named_records(out, CA_FORMAT_ACL_DEFAULT_GROUP, dflt->groups, dflt->n_groups);
	return r;
}
