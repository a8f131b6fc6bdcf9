/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* catar_node.c - parse and validate one node's ENTRY and metadata records. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "catar_node.h"
#include "feature.h"

#define HDR 16u

/* The position of each metadata record in the order casync writes them;
 * a node's records must come in increasing stage, repeating only where a
 * kind may occur several times. */
enum stage {
	ST_ENTRY,
	ST_USER,
	ST_GROUP,
	ST_XATTR,
	ST_ACL_USER,
	ST_ACL_GROUP,
	ST_ACL_GROUP_OBJ,
	ST_ACL_DEFAULT,
	ST_ACL_DEFAULT_USER,
	ST_ACL_DEFAULT_GROUP,
	ST_SELINUX,
	ST_FCAPS,
	ST_QUOTA_PROJID,
};

#define UID_FLAGS (CA_FORMAT_WITH_16BIT_UIDS | CA_FORMAT_WITH_32BIT_UIDS)
#define ENTRY_FLAG_BITS                                                                                 \
	(CA_FORMAT_WITH_FLAG_HIDDEN | CA_FORMAT_WITH_FLAG_SYSTEM | CA_FORMAT_WITH_FLAG_ARCHIVE |          \
	 CA_FORMAT_WITH_FLAG_APPEND | CA_FORMAT_WITH_FLAG_NOATIME | CA_FORMAT_WITH_FLAG_COMPR |           \
	 CA_FORMAT_WITH_FLAG_NOCOW | CA_FORMAT_WITH_FLAG_NODUMP | CA_FORMAT_WITH_FLAG_DIRSYNC |           \
	 CA_FORMAT_WITH_FLAG_IMMUTABLE | CA_FORMAT_WITH_FLAG_SYNC | CA_FORMAT_WITH_FLAG_NOCOMP |          \
	 CA_FORMAT_WITH_FLAG_PROJINHERIT | CA_FORMAT_WITH_SUBVOLUME | CA_FORMAT_WITH_SUBVOLUME_RO)

static bool valid_mode(uint64_t f, uint64_t m, uint64_t eflags)
{
	if (m & ~(uint64_t)(S_IFMT | 07777))
		return false;
	switch (m & S_IFMT) {
	case S_IFREG:
	case S_IFDIR:
		break;
	case S_IFSOCK:
		if (!(f & CA_FORMAT_WITH_SOCKETS))
			return false;
		break;
	case S_IFIFO:
		if (!(f & CA_FORMAT_WITH_FIFOS))
			return false;
		break;
	case S_IFBLK:
	case S_IFCHR:
		if (!(f & CA_FORMAT_WITH_DEVICE_NODES))
			return false;
		break;
	case S_IFLNK:
		if (!(f & CA_FORMAT_WITH_SYMLINKS))
			return false;
		break;
	default:
		return false;
	}
	if (!S_ISDIR(m) && (eflags & (CA_FORMAT_WITH_SUBVOLUME | CA_FORMAT_WITH_SUBVOLUME_RO)))
		return false;
	if (eflags != 0 && !S_ISREG(m) && !S_ISDIR(m))
		return false;
	if (S_ISLNK(m))
		return (m & 07777) == 0777;
	if (f & (CA_FORMAT_WITH_PERMISSIONS | CA_FORMAT_WITH_ACL))
		return true;
	if ((m & 07777) == (S_ISDIR(m) ? 0777u : 0666u))
		return true;
	return (f & CA_FORMAT_WITH_READ_ONLY) && (m & 07777) == (S_ISDIR(m) ? 0555u : 0444u);
}

static bool valid_id(uint64_t f, uint64_t id)
{
	if (f & CA_FORMAT_WITH_16BIT_UIDS)
		return id < UINT16_MAX;
	if (f & CA_FORMAT_WITH_32BIT_UIDS)
		return id < UINT32_MAX && id != UINT16_MAX;
	return id == 0;
}

static bool valid_mtime(uint64_t f, uint64_t t)
{
	if (t == UINT64_MAX)
		return false;
	if (f & CA_FORMAT_WITH_NSEC_TIME)
		return true;
	if (f & CA_FORMAT_WITH_USEC_TIME)
		return t % UINT64_C(1000) == 0;
	if (f & CA_FORMAT_WITH_SEC_TIME)
		return t % UINT64_C(1000000000) == 0;
	if (f & CA_FORMAT_WITH_2SEC_TIME)
		return t % UINT64_C(2000000000) == 0;
	return t == 0;
}

/* A NUL-terminated string filling exactly n bytes (NUL included), no
 * embedded NUL. */
static bool is_cstring(const uint8_t *p, size_t n)
{
	return n >= 1 && p[n - 1] == 0 && !memchr(p, 0, n - 1);
}

/* casync's rule [A-Za-z_][A-Za-z0-9_-]*, not "root" or "0" (implied by id
 * 0). We also accept '.' after the first character: real passwd files
 * have such names (casync refuses them, reference gotcha 10). n counts
 * the NUL. */
static bool valid_user_name(const uint8_t *p, size_t n)
{
	if (n < 2 || n > CA_FORMAT_NAME_MAX + 1 || !is_cstring(p, n))
		return false;
	if (!((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z') || p[0] == '_'))
		return false;
	for (size_t i = 1; i < n - 1; i++) {
		uint8_t c = p[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-' || c == '.'))
			return false;
	}
	return strcmp((const char *)p, "root") != 0;
}

bool ca_catar_filename_is_valid(const char *name, size_t len)
{
	if (len == 0 || len > CA_FORMAT_NAME_MAX)
		return false;
	if (memchr(name, '/', len) || memchr(name, 0, len))
		return false;
	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
		return false;
	return true;
}

int ca_catar_filename_parse(const uint8_t *buf, size_t len, const char **ret_name, size_t *ret_need)
{
	if (len < HDR) {
		*ret_need = HDR;
		return -EAGAIN;
	}
	uint64_t size = ca_le64_read(buf), type = ca_le64_read(buf + 8);
	if (type != CA_FORMAT_FILENAME || size < HDR + 2 || size > HDR + CA_FORMAT_NAME_MAX + 1)
		return -EBADMSG;
	if (len < size) {
		*ret_need = size;
		return -EAGAIN;
	}
	if (buf[size - 1] != 0 || !ca_catar_filename_is_valid((const char *)buf + HDR, size - HDR - 1))
		return -EBADMSG;
	*ret_name = (const char *)buf + HDR;
	return (int)size;
}

static bool valid_xattr(const uint8_t *rec, size_t size)
{
	const uint8_t *name = rec + HDR;
	size_t avail = size - HDR;
	const uint8_t *nul = memchr(name, 0, avail < 256 ? avail : 256);
	if (!nul)
		return false;
	size_t n = (size_t)(nul - name);
	const uint8_t *dot = memchr(name, '.', n);
	return n <= CA_FORMAT_XATTR_NAME_MAX && dot && dot != name && dot != nul - 1;
}

/* casync's order for ACL_USER/ACL_GROUP records: id, no name before a
 * name, name, permissions. */
static int acl_compare(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	uint64_t ia = ca_le64_read(a + HDR), ib = ca_le64_read(b + HDR);
	if (ia != ib)
		return ia < ib ? -1 : 1;
	bool ha = an > sizeof(struct ca_format_acl_entry), hb = bn > sizeof(struct ca_format_acl_entry);
	if (ha != hb)
		return ha ? 1 : -1;
	if (ha) {
		int r = strcmp((const char *)a + sizeof(struct ca_format_acl_entry),
		               (const char *)b + sizeof(struct ca_format_acl_entry));
		if (r)
			return r;
	}
	uint64_t pa = ca_le64_read(a + HDR + 8), pb = ca_le64_read(b + HDR + 8);
	return pa < pb ? -1 : pa > pb;
}

static bool valid_acl_entry(uint64_t f, const uint8_t *rec, size_t size)
{
	const size_t base = sizeof(struct ca_format_acl_entry);
	if (size < base || size > base + CA_FORMAT_NAME_MAX + 1)
		return false;
	if (size > base && (!(f & CA_FORMAT_WITH_USER_NAMES) || !valid_user_name(rec + base, size - base)))
		return false;
	return valid_id(f, ca_le64_read(rec + HDR)) && ca_le64_read(rec + HDR + 8) <= 7;
}

static bool perm_ok(uint64_t p)
{
	return p <= 7;
}

int ca_catar_node_parse(const uint8_t *buf, size_t len, uint64_t entry_offset, uint64_t limit,
                        uint64_t archive_flags, struct ca_catar_node *n, size_t *ret_need)
{
	const struct ca_format_entry *e = (const void *)buf;
	enum stage stage = ST_ENTRY;
	size_t pos, prev_rec[ST_QUOTA_PROJID + 1] = { 0 };
	bool have_user = false, have_group = false, terminated = false, have_tail = false;
	uint64_t f, m;

	memset(n, 0, sizeof(*n));
	n->entry_offset = entry_offset;
	n->end_offset = limit == UINT64_MAX ? UINT64_MAX : entry_offset + limit;
	n->filename_offset = UINT64_MAX;
	n->name = "";
	n->goodbye_offset = n->n_children = UINT64_MAX;
	n->acl_default_mask = CA_ACL_NO_MASK;
	n->_meta = buf;

	if (limit < sizeof(*e))
		return -EBADMSG;
	if (len < sizeof(*e)) {
		*ret_need = sizeof(*e);
		return -EAGAIN;
	}
	if (ca_le64_read(&e->header.size) != sizeof(*e) || ca_le64_read(&e->header.type) != CA_FORMAT_ENTRY)
		return -EBADMSG;
	f = ca_le64_read(&e->feature_flags);
	if (!ca_feature_is_valid(f) || (archive_flags != UINT64_MAX && f != archive_flags))
		return -EBADMSG;
	n->feature_flags = f;
	n->mode = m = ca_le64_read(&e->mode);
	n->flags = ca_le64_read(&e->flags);
	n->uid = ca_le64_read(&e->uid);
	n->gid = ca_le64_read(&e->gid);
	n->mtime = ca_le64_read(&e->mtime);
	if (!valid_mode(f, m, n->flags) || (n->flags & ~(f & ENTRY_FLAG_BITS)) || !valid_id(f, n->uid) ||
	    !valid_id(f, n->gid) || !valid_mtime(f, n->mtime))
		return -EBADMSG;

	pos = sizeof(*e);
	while (!terminated) {
		if (pos == limit)
			break; /* fifo/socket at the end of a known range */
		if (limit - pos < HDR)
			return -EBADMSG;
		if (len - pos < HDR) {
			*ret_need = pos + HDR;
			return -EAGAIN;
		}
		const uint8_t *rec = buf + pos;
		uint64_t size = ca_le64_read(rec), type = ca_le64_read(rec + 8);
		enum stage st;
		uint64_t max;

		switch (type) {
		case CA_FORMAT_USER: st = ST_USER; max = HDR + CA_FORMAT_NAME_MAX + 1; break;
		case CA_FORMAT_GROUP: st = ST_GROUP; max = HDR + CA_FORMAT_NAME_MAX + 1; break;
		case CA_FORMAT_XATTR:
			st = ST_XATTR;
			max = HDR + CA_FORMAT_XATTR_NAME_MAX + 1 + CA_FORMAT_XATTR_SIZE_MAX;
			break;
		case CA_FORMAT_ACL_USER: st = ST_ACL_USER; max = 32 + CA_FORMAT_NAME_MAX + 1; break;
		case CA_FORMAT_ACL_GROUP: st = ST_ACL_GROUP; max = 32 + CA_FORMAT_NAME_MAX + 1; break;
		case CA_FORMAT_ACL_GROUP_OBJ: st = ST_ACL_GROUP_OBJ; max = 24; break;
		case CA_FORMAT_ACL_DEFAULT: st = ST_ACL_DEFAULT; max = 48; break;
		case CA_FORMAT_ACL_DEFAULT_USER: st = ST_ACL_DEFAULT_USER; max = 32 + CA_FORMAT_NAME_MAX + 1; break;
		case CA_FORMAT_ACL_DEFAULT_GROUP: st = ST_ACL_DEFAULT_GROUP; max = 32 + CA_FORMAT_NAME_MAX + 1; break;
		case CA_FORMAT_SELINUX: st = ST_SELINUX; max = HDR + CA_FORMAT_SELINUX_MAX; break;
		case CA_FORMAT_FCAPS: st = ST_FCAPS; max = HDR + CA_FORMAT_FCAPS_MAX; break;
		case CA_FORMAT_QUOTA_PROJID: st = ST_QUOTA_PROJID; max = 24; break;
		case CA_FORMAT_SYMLINK:
			if (!S_ISLNK(m) || size < HDR + 2 || size > HDR + CA_FORMAT_SYMLINK_MAX + 1 || size > limit - pos)
				return -EBADMSG;
			if (len - pos < size) {
				*ret_need = pos + size;
				return -EAGAIN;
			}
			if (!is_cstring(rec + HDR, size - HDR))
				return -EBADMSG;
			n->symlink_target = (const char *)rec + HDR;
			pos += size;
			terminated = have_tail = true;
			continue;
		case CA_FORMAT_DEVICE:
			if ((!S_ISBLK(m) && !S_ISCHR(m)) || size != sizeof(struct ca_format_device) || size > limit - pos)
				return -EBADMSG;
			if (len - pos < size) {
				*ret_need = pos + size;
				return -EAGAIN;
			}
			n->device_major = ca_le64_read(rec + HDR);
			n->device_minor = ca_le64_read(rec + HDR + 8);
			if (n->device_major >= (UINT64_C(1) << 12) || n->device_minor >= (UINT64_C(1) << 20))
				return -EBADMSG;
			pos += size;
			terminated = have_tail = true;
			continue;
		case CA_FORMAT_PAYLOAD:
			if (!S_ISREG(m) || size < HDR || size > limit - pos)
				return -EBADMSG;
			n->payload_offset = entry_offset + pos + HDR;
			n->payload_size = size - HDR;
			if (n->payload_offset + n->payload_size < n->payload_offset)
				return -EBADMSG;
			pos += HDR;
			terminated = have_tail = true;
			continue;
		case CA_FORMAT_FILENAME:
		case CA_FORMAT_GOODBYE:
			/* the children of a directory, or (fifo, socket) the parent's next record */
			terminated = true;
			continue;
		default:
			return -EBADMSG;
		}

		/* a metadata record */
		if (size < HDR || size > max || size > limit - pos || pos + size > CA_CATAR_META_MAX)
			return -EBADMSG;
		bool repeatable = st == ST_XATTR || st == ST_ACL_USER || st == ST_ACL_GROUP ||
		                  st == ST_ACL_DEFAULT_USER || st == ST_ACL_DEFAULT_GROUP;
		if (st < stage || (st == stage && !repeatable))
			return -EBADMSG;
		if (len - pos < size) {
			*ret_need = pos + size;
			return -EAGAIN;
		}
		switch (st) {
		case ST_USER:
		case ST_GROUP:
			if (!(f & CA_FORMAT_WITH_USER_NAMES) || !valid_user_name(rec + HDR, size - HDR))
				return -EBADMSG;
			if (st == ST_USER) {
				n->user_name = (const char *)rec + HDR;
				have_user = true;
			} else {
				n->group_name = (const char *)rec + HDR;
				have_group = true;
			}
			break;
		case ST_XATTR:
			if (!(f & CA_FORMAT_WITH_XATTRS) || size < HDR + 4 || !valid_xattr(rec, size))
				return -EBADMSG;
			if (stage == ST_XATTR &&
			    strcmp((const char *)rec + HDR, (const char *)buf + prev_rec[ST_XATTR] + HDR) <= 0)
				return -EBADMSG;
			if (n->n_xattrs++ == 0)
				n->_xattr_begin = pos;
			n->_xattr_end = pos + size;
			break;
		case ST_ACL_USER:
		case ST_ACL_GROUP:
		case ST_ACL_DEFAULT_USER:
		case ST_ACL_DEFAULT_GROUP: {
			int k = st == ST_ACL_USER ? CA_CATAR_ACL_USER : st == ST_ACL_GROUP ? CA_CATAR_ACL_GROUP :
			        st == ST_ACL_DEFAULT_USER ? CA_CATAR_ACL_DEFAULT_USER : CA_CATAR_ACL_DEFAULT_GROUP;
			size_t *cnt = k == CA_CATAR_ACL_USER ? &n->n_acl_user : k == CA_CATAR_ACL_GROUP ? &n->n_acl_group :
			              k == CA_CATAR_ACL_DEFAULT_USER ? &n->n_acl_default_user : &n->n_acl_default_group;
			if (!(f & CA_FORMAT_WITH_ACL) || !valid_acl_entry(f, rec, size))
				return -EBADMSG;
			if (stage == st) {
				const uint8_t *prev = buf + prev_rec[st];
				if (acl_compare(prev, ca_le64_read(prev), rec, size) >= 0)
					return -EBADMSG;
			}
			if ((*cnt)++ == 0)
				n->_acl_begin[k] = pos;
			n->_acl_end[k] = pos + size;
			break;
		}
		case ST_ACL_GROUP_OBJ:
			if (!(f & CA_FORMAT_WITH_ACL) || size != 24 || !perm_ok(ca_le64_read(rec + HDR)))
				return -EBADMSG;
			n->has_acl_group_obj = true;
			n->acl_group_obj = ca_le64_read(rec + HDR);
			break;
		case ST_ACL_DEFAULT:
			if (!(f & CA_FORMAT_WITH_ACL) || size != 48)
				return -EBADMSG;
			n->has_acl_default = true;
			n->acl_default_user_obj = ca_le64_read(rec + HDR);
			n->acl_default_group_obj = ca_le64_read(rec + HDR + 8);
			n->acl_default_other = ca_le64_read(rec + HDR + 16);
			n->acl_default_mask = ca_le64_read(rec + HDR + 24);
			if (!perm_ok(n->acl_default_user_obj) || !perm_ok(n->acl_default_group_obj) ||
			    !perm_ok(n->acl_default_other) ||
			    (n->acl_default_mask != CA_ACL_NO_MASK && !perm_ok(n->acl_default_mask)))
				return -EBADMSG;
			break;
		case ST_SELINUX:
			if (!(f & CA_FORMAT_WITH_SELINUX) || size < HDR + 2 || !is_cstring(rec + HDR, size - HDR))
				return -EBADMSG;
			n->selinux = (const char *)rec + HDR;
			break;
		case ST_FCAPS:
			if (!(f & CA_FORMAT_WITH_FCAPS) || size < HDR + 1)
				return -EBADMSG;
			n->fcaps = rec + HDR;
			n->fcaps_size = size - HDR;
			break;
		case ST_QUOTA_PROJID:
			if (!(f & CA_FORMAT_WITH_QUOTA_PROJID) || size != 24)
				return -EBADMSG;
			n->quota_projid = ca_le64_read(rec + HDR);
			if (n->quota_projid == 0 || n->quota_projid > UINT32_MAX)
				return -EBADMSG;
			break;
		default:
			return -EBADMSG;
		}
		prev_rec[st] = pos;
		stage = st;
		pos += size;
	}

	/* what the records say must fit the node type (casync's checks) */
	if ((f & CA_FORMAT_WITH_USER_NAMES) && !(f & UID_FLAGS) && (!have_user || !have_group))
		return -EBADMSG;
	if ((S_ISREG(m) || S_ISLNK(m) || S_ISBLK(m) || S_ISCHR(m)) && !have_tail)
		return -EBADMSG; /* PAYLOAD, SYMLINK or DEVICE missing */
	if (S_ISDIR(m) && pos == limit)
		return -EBADMSG; /* a directory always ends with its GOODBYE */
	if (n->fcaps && !S_ISREG(m))
		return -EBADMSG;
	if (n->quota_projid && !S_ISREG(m) && !S_ISDIR(m))
		return -EBADMSG;
	bool any_acl = n->n_acl_user || n->n_acl_group || n->has_acl_group_obj || n->has_acl_default ||
	               n->n_acl_default_user || n->n_acl_default_group;
	if (S_ISLNK(m) && (n->n_xattrs || any_acl))
		return -EBADMSG;
	if ((n->n_acl_user || n->n_acl_group) && !n->has_acl_group_obj)
		return -EBADMSG;
	if ((n->n_acl_default_user || n->n_acl_default_group) &&
	    (!n->has_acl_default || n->acl_default_mask == CA_ACL_NO_MASK))
		return -EBADMSG;
	if ((n->has_acl_default || n->n_acl_default_user || n->n_acl_default_group) && !S_ISDIR(m))
		return -EBADMSG;
	/* with a known range, leaf nodes must fill it exactly */
	if (limit != UINT64_MAX) {
		if (S_ISREG(m) && n->payload_size != limit - pos)
			return -EBADMSG;
		if (!S_ISREG(m) && !S_ISDIR(m) && pos != limit)
			return -EBADMSG;
	}
	if (S_ISDIR(m))
		n->children_offset = entry_offset + pos;
	n->meta_size = pos;
	return 0;
}

bool ca_catar_node_next_xattr(const struct ca_catar_node *n, size_t *cursor, struct ca_catar_xattr *ret)
{
	size_t pos = *cursor ? *cursor : n->_xattr_begin;
	if (!n->n_xattrs || pos >= n->_xattr_end)
		return false;
	const uint8_t *rec = n->_meta + pos;
	size_t size = (size_t)ca_le64_read(rec);
	size_t nl = strlen((const char *)rec + HDR);
	ret->name = (const char *)rec + HDR;
	ret->value = rec + HDR + nl + 1;
	ret->size = size - HDR - nl - 1;
	*cursor = pos + size;
	return true;
}

bool ca_catar_node_next_acl(const struct ca_catar_node *n, enum ca_catar_acl_kind kind, size_t *cursor,
                            struct ca_catar_acl_entry *ret)
{
	size_t cnt = kind == CA_CATAR_ACL_USER ? n->n_acl_user : kind == CA_CATAR_ACL_GROUP ? n->n_acl_group :
	             kind == CA_CATAR_ACL_DEFAULT_USER ? n->n_acl_default_user : n->n_acl_default_group;
	if ((unsigned)kind > CA_CATAR_ACL_DEFAULT_GROUP || !cnt)
		return false;
	size_t pos = *cursor ? *cursor : n->_acl_begin[kind];
	if (pos >= n->_acl_end[kind])
		return false;
	const uint8_t *rec = n->_meta + pos;
	size_t size = (size_t)ca_le64_read(rec);
	ret->id = ca_le64_read(rec + HDR);
	ret->permissions = ca_le64_read(rec + HDR + 8);
	ret->name = size > sizeof(struct ca_format_acl_entry) ? (const char *)rec + sizeof(struct ca_format_acl_entry)
	                                                       : NULL;
	*cursor = pos + size;
	return true;
}

static const void *moved(const void *p, const uint8_t *old, size_t size, const uint8_t *copy)
{
	if (!p || (const uint8_t *)p < old || (const uint8_t *)p >= old + size)
		return p;
	return copy + ((const uint8_t *)p - old);
}

void ca_catar_node_rebase(struct ca_catar_node *n, const uint8_t *copy)
{
	const uint8_t *old = n->_meta;
	size_t s = n->meta_size;
	n->name = moved(n->name, old, s, copy);
	n->user_name = moved(n->user_name, old, s, copy);
	n->group_name = moved(n->group_name, old, s, copy);
	n->selinux = moved(n->selinux, old, s, copy);
	n->fcaps = moved(n->fcaps, old, s, copy);
	n->symlink_target = moved(n->symlink_target, old, s, copy);
	n->_meta = copy;
}
