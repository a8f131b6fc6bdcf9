/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_node.c - parse and validate one node's ENTRY and metadata records.
 *
 * One table, record_kinds, holds what casync's decoder enforces per record
 * type: its place in the order, its size bounds, the feature flag and node
 * types it needs, and the handler that checks its content; the parse loop
 * only applies it. Every rejection names its check (ca_catar_corrupt).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "catar/catar_node.h"
#include "format/feature.h"
#include "base/log.h"

#define HDR sizeof(struct ca_format_header)

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

/* t is signed ns (before 1970 negative, so -1 ns is all ones: casync's
 * reader refuses that one, though its writer makes it). */
static bool valid_mtime(uint64_t f, uint64_t t)
{
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

int ca_catar_filename_parse(const uint8_t *buf, size_t len, uint64_t offset, const char **ret_name, size_t *ret_need)
{
	if (len < HDR) {
		*ret_need = HDR;
		return -EAGAIN;
	}
	uint64_t size = ca_le64_read(buf), type = ca_le64_read(buf + 8);
	if (type != CA_FORMAT_FILENAME)
		return ca_catar_corrupt("FILENAME", offset, "not a FILENAME record");
	if (size < HDR + 2 || size > HDR + CA_FORMAT_NAME_MAX + 1)
		return ca_catar_corrupt("FILENAME", offset, "name empty or longer than 255 bytes");
	if (len < size) {
		*ret_need = size;
		return -EAGAIN;
	}
	if (buf[size - 1] != 0)
		return ca_catar_corrupt("FILENAME", offset, "name not NUL-terminated");
	const char *name = (const char *)buf + HDR;
	size_t n = size - HDR - 1;
	if (memchr(name, 0, n))
		return ca_catar_corrupt("FILENAME", offset, "name contains NUL");
	if (memchr(name, '/', n))
		return ca_catar_corrupt("FILENAME", offset, "name contains '/'");
	if (!ca_catar_filename_is_valid(name, n))
		return ca_catar_corrupt("FILENAME", offset, "name is \".\" or \"..\"");
	*ret_name = name;
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
	const struct ca_format_acl_entry *ea = (const void *)a, *eb = (const void *)b;
	uint64_t ia = ca_le64_read(&ea->id), ib = ca_le64_read(&eb->id);
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
	uint64_t pa = ca_le64_read(&ea->permissions), pb = ca_le64_read(&eb->permissions);
	return pa < pb ? -1 : pa > pb;
}

static bool perm_ok(uint64_t p)
{
	return p <= 7;
}

int ca_catar_corrupt(const char *record, uint64_t offset, const char *why)
{
	return ca_log_debug_errno(EBADMSG, "catar: %s at %" PRIu64 ": %s", record, offset, why);
}

/* ---- the record table ---- */

/* What a node's parse knows so far. */
struct parse {
	const uint8_t *buf;
	size_t len;
	uint64_t limit, f, m;
	struct ca_catar_node *n;
	size_t pos;                      /* the current record, from the ENTRY */
	enum stage stage;                /* the last metadata record's */
	size_t prev_rec[ST_QUOTA_PROJID + 1]; /* where the last record of each stage was */
	bool have_user, have_group, have_tail;
};

/* Node types a record may belong to. */
#define T_REG (1u << 0)
#define T_DIR (1u << 1)
#define T_LNK (1u << 2)
#define T_DEV (1u << 3)
#define T_OTHER (1u << 4) /* fifo, socket */
#define T_ANY (T_REG | T_DIR | T_LNK | T_DEV | T_OTHER)
#define T_NOT_LNK (T_ANY & ~T_LNK)

enum record_class {
	C_META, /* a metadata record, at its stage */
	C_TAIL, /* SYMLINK, DEVICE, PAYLOAD: ends the node's own records */
	C_END,  /* FILENAME, GOODBYE: the children, or the parent's next record */
};

struct record_kind {
	uint64_t type;
	const char *name;
	enum record_class cls;
	enum stage stage;    /* C_META: the order position */
	bool repeatable;     /* C_META: may follow a record of its own kind */
	uint64_t min, max;   /* bounds on the record's size, header included */
	uint64_t feature;    /* the feature flag it needs, 0 for none */
	unsigned types;      /* T_*: the node types it may belong to */
	bool header_only;    /* only the header must be in the buffer (PAYLOAD) */
	/* checks the content and fills the node: 0 or ca_catar_corrupt() */
	int (*handle)(struct parse *p, const struct record_kind *k, const uint8_t *rec, uint64_t size);
};

static uint64_t here(const struct parse *p)
{
	return p->n->entry_offset + p->pos;
}

static int bad(const struct parse *p, const struct record_kind *k, const char *why)
{
	return ca_catar_corrupt(k->name, here(p), why);
}

static int on_owner(struct parse *p, const struct record_kind *k, const uint8_t *rec, uint64_t size)
{
	if (!valid_user_name(rec + HDR, size - HDR))
		return bad(p, k, "not a valid user or group name");
	if (k->stage == ST_USER) {
		p->n->user_name = (const char *)rec + HDR;
		p->have_user = true;
	} else {
		p->n->group_name = (const char *)rec + HDR;
		p->have_group = true;
	}
	return 0;
}

static int on_xattr(struct parse *p, const struct record_kind *k, const uint8_t *rec, uint64_t size)
{
	struct ca_catar_node *n = p->n;
	if (!valid_xattr(rec, size))
		return bad(p, k, "name missing, too long, or without a dot inside");
	if (p->stage == ST_XATTR &&
	    strcmp((const char *)rec + HDR, (const char *)p->buf + p->prev_rec[ST_XATTR] + HDR) <= 0)
		return bad(p, k, "names not in strictly increasing order");
	if (n->n_xattrs++ == 0)
		n->_xattr_begin = p->pos;
	n->_xattr_end = p->pos + size;
	return 0;
}

static int on_acl_entry(struct parse *p, const struct record_kind *k, const uint8_t *rec, uint64_t size)
{
	struct ca_catar_node *n = p->n;
	enum ca_catar_acl_kind kind = k->stage == ST_ACL_USER ? CA_CATAR_ACL_USER :
	                              k->stage == ST_ACL_GROUP ? CA_CATAR_ACL_GROUP :
	                              k->stage == ST_ACL_DEFAULT_USER ? CA_CATAR_ACL_DEFAULT_USER :
	                                                                CA_CATAR_ACL_DEFAULT_GROUP;
	size_t *count = kind == CA_CATAR_ACL_USER ? &n->n_acl_user : kind == CA_CATAR_ACL_GROUP ? &n->n_acl_group :
	                kind == CA_CATAR_ACL_DEFAULT_USER ? &n->n_acl_default_user : &n->n_acl_default_group;
	const struct ca_format_acl_entry *e = (const void *)rec;
	const size_t base = sizeof(*e);
	if (size > base && !(p->f & CA_FORMAT_WITH_USER_NAMES))
		return bad(p, k, "a name without the user-names feature");
	if (size > base && !valid_user_name(rec + base, size - base))
		return bad(p, k, "not a valid user or group name");
	if (!valid_id(p->f, ca_le64_read(&e->id)))
		return bad(p, k, "id out of range for the feature flags");
	if (!perm_ok(ca_le64_read(&e->permissions)))
		return bad(p, k, "permissions beyond rwx");
	if (p->stage == k->stage) {
		const uint8_t *prev = p->buf + p->prev_rec[k->stage];
		if (acl_compare(prev, ca_le64_read(prev), rec, size) >= 0)
			return bad(p, k, "entries not in strictly increasing order");
	}
	if ((*count)++ == 0)
		n->_acl_begin[kind] = p->pos;
	n->_acl_end[kind] = p->pos + size;
	return 0;
}

static int on_acl_group_obj(struct parse *p, const struct record_kind *k, const uint8_t *rec, uint64_t size)
{
	const struct ca_format_acl_group_obj *g = (const void *)rec;
	p->n->acl_group_obj = ca_le64_read(&g->permissions);
	if (!perm_ok(p->n->acl_group_obj))
		return bad(p, k, "permissions beyond rwx");
	p->n->has_acl_group_obj = true;
	return 0;
}

static int on_acl_default(struct parse *p, const struct record_kind *k, const uint8_t *rec, uint64_t size)
{
	const struct ca_format_acl_default *d = (const void *)rec;
	struct ca_catar_node *n = p->n;
	n->has_acl_default = true;
	n->acl_default_user_obj = ca_le64_read(&d->user_obj_permissions);
	n->acl_default_group_obj = ca_le64_read(&d->group_obj_permissions);
	n->acl_default_other = ca_le64_read(&d->other_permissions);
	n->acl_default_mask = ca_le64_read(&d->mask_permissions);
	if (!perm_ok(n->acl_default_user_obj) || !perm_ok(n->acl_default_group_obj) ||
	    !perm_ok(n->acl_default_other) || (n->acl_default_mask != CA_ACL_NO_MASK && !perm_ok(n->acl_default_mask)))
		return bad(p, k, "permissions beyond rwx");
	return 0;
}

static int on_selinux(struct parse *p, const struct record_kind *k, const uint8_t *rec, uint64_t size)
{
	if (!is_cstring(rec + HDR, size - HDR))
		return bad(p, k, "label not one NUL-terminated string");
	p->n->selinux = (const char *)rec + HDR;
	return 0;
}

static int on_fcaps(struct parse *p, const struct record_kind *k, const uint8_t *rec, uint64_t size)
{
	p->n->fcaps = rec + HDR;
	p->n->fcaps_size = size - HDR;
	return 0;
}

static int on_quota_projid(struct parse *p, const struct record_kind *k, const uint8_t *rec, uint64_t size)
{
	const struct ca_format_quota_projid *q = (const void *)rec;
	p->n->quota_projid = ca_le64_read(&q->projid);
	if (p->n->quota_projid == 0 || p->n->quota_projid > UINT32_MAX)
		return bad(p, k, "project id 0 or beyond 32 bits");
	return 0;
}

static int on_symlink(struct parse *p, const struct record_kind *k, const uint8_t *rec, uint64_t size)
{
	if (!is_cstring(rec + HDR, size - HDR))
		return bad(p, k, "target not one NUL-terminated string");
	p->n->symlink_target = (const char *)rec + HDR;
	p->pos += size;
	return 0;
}

static int on_device(struct parse *p, const struct record_kind *k, const uint8_t *rec, uint64_t size)
{
	const struct ca_format_device *d = (const void *)rec;
	p->n->device_major = ca_le64_read(&d->major);
	p->n->device_minor = ca_le64_read(&d->minor);
	/* the kernel's dev_t: 12 bits of major, 20 of minor */
	if (p->n->device_major >= (UINT64_C(1) << 12) || p->n->device_minor >= (UINT64_C(1) << 20))
		return bad(p, k, "major or minor out of range");
	p->pos += size;
	return 0;
}

static int on_payload(struct parse *p, const struct record_kind *k, const uint8_t *rec, uint64_t size)
{
	/* the content is not parsed: the node ends after the header */
	p->n->payload_offset = here(p) + HDR;
	p->n->payload_size = size - HDR;
	if (p->n->payload_offset + p->n->payload_size < p->n->payload_offset)
		return bad(p, k, "payload wraps around the offset space");
	p->pos += HDR;
	return 0;
}

#define ACL_ENTRY_MAX (sizeof(struct ca_format_acl_entry) + CA_FORMAT_NAME_MAX + 1)
#define ACL_ENTRY(t, n, st)                                                                               \
	{ t, n, C_META, st, true, sizeof(struct ca_format_acl_entry), ACL_ENTRY_MAX, CA_FORMAT_WITH_ACL,      \
	  (st) >= ST_ACL_DEFAULT ? T_DIR : T_NOT_LNK, false, on_acl_entry }

/* Every record a node may hold, in archive order (format.h). The user and
 * group names need 2 bytes at least: one character and the NUL. */
static const struct record_kind record_kinds[] = {
	{ CA_FORMAT_USER, "USER", C_META, ST_USER, false, HDR + 2, HDR + CA_FORMAT_NAME_MAX + 1,
	  CA_FORMAT_WITH_USER_NAMES, T_ANY, false, on_owner },
	{ CA_FORMAT_GROUP, "GROUP", C_META, ST_GROUP, false, HDR + 2, HDR + CA_FORMAT_NAME_MAX + 1,
	  CA_FORMAT_WITH_USER_NAMES, T_ANY, false, on_owner },
	/* the shortest xattr: "a.b", NUL, empty value */
	{ CA_FORMAT_XATTR, "XATTR", C_META, ST_XATTR, true, HDR + 4,
	  HDR + CA_FORMAT_XATTR_NAME_MAX + 1 + CA_FORMAT_XATTR_SIZE_MAX, CA_FORMAT_WITH_XATTRS, T_NOT_LNK, false,
	  on_xattr },
	ACL_ENTRY(CA_FORMAT_ACL_USER, "ACL_USER", ST_ACL_USER),
	ACL_ENTRY(CA_FORMAT_ACL_GROUP, "ACL_GROUP", ST_ACL_GROUP),
	{ CA_FORMAT_ACL_GROUP_OBJ, "ACL_GROUP_OBJ", C_META, ST_ACL_GROUP_OBJ, false,
	  sizeof(struct ca_format_acl_group_obj), sizeof(struct ca_format_acl_group_obj), CA_FORMAT_WITH_ACL,
	  T_NOT_LNK, false, on_acl_group_obj },
	{ CA_FORMAT_ACL_DEFAULT, "ACL_DEFAULT", C_META, ST_ACL_DEFAULT, false, sizeof(struct ca_format_acl_default),
	  sizeof(struct ca_format_acl_default), CA_FORMAT_WITH_ACL, T_DIR, false, on_acl_default },
	ACL_ENTRY(CA_FORMAT_ACL_DEFAULT_USER, "ACL_DEFAULT_USER", ST_ACL_DEFAULT_USER),
	ACL_ENTRY(CA_FORMAT_ACL_DEFAULT_GROUP, "ACL_DEFAULT_GROUP", ST_ACL_DEFAULT_GROUP),
	{ CA_FORMAT_SELINUX, "SELINUX", C_META, ST_SELINUX, false, HDR + 2, HDR + CA_FORMAT_SELINUX_MAX,
	  CA_FORMAT_WITH_SELINUX, T_ANY, false, on_selinux },
	{ CA_FORMAT_FCAPS, "FCAPS", C_META, ST_FCAPS, false, HDR + 1, HDR + CA_FORMAT_FCAPS_MAX, CA_FORMAT_WITH_FCAPS,
	  T_REG, false, on_fcaps },
	{ CA_FORMAT_QUOTA_PROJID, "QUOTA_PROJID", C_META, ST_QUOTA_PROJID, false,
	  sizeof(struct ca_format_quota_projid), sizeof(struct ca_format_quota_projid), CA_FORMAT_WITH_QUOTA_PROJID,
	  T_REG | T_DIR, false, on_quota_projid },
	{ CA_FORMAT_SYMLINK, "SYMLINK", C_TAIL, ST_ENTRY, false, HDR + 2, HDR + CA_FORMAT_SYMLINK_MAX + 1, 0, T_LNK,
	  false, on_symlink },
	{ CA_FORMAT_DEVICE, "DEVICE", C_TAIL, ST_ENTRY, false, sizeof(struct ca_format_device),
	  sizeof(struct ca_format_device), 0, T_DEV, false, on_device },
	{ CA_FORMAT_PAYLOAD, "PAYLOAD", C_TAIL, ST_ENTRY, false, HDR, UINT64_MAX, 0, T_REG, true, on_payload },
	{ CA_FORMAT_FILENAME, "FILENAME", C_END, ST_ENTRY, false, 0, UINT64_MAX, 0, T_DIR | T_OTHER, true, NULL },
	{ CA_FORMAT_GOODBYE, "GOODBYE", C_END, ST_ENTRY, false, 0, UINT64_MAX, 0, T_DIR | T_OTHER, true, NULL },
};

static const struct record_kind *record_kind(uint64_t type)
{
	for (size_t i = 0; i < sizeof(record_kinds) / sizeof(record_kinds[0]); i++)
		if (record_kinds[i].type == type)
			return &record_kinds[i];
	return NULL;
}

static unsigned node_type(uint64_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return T_REG;
	case S_IFDIR:
		return T_DIR;
	case S_IFLNK:
		return T_LNK;
	case S_IFBLK:
	case S_IFCHR:
		return T_DEV;
	default:
		return T_OTHER;
	}
}

/* ---- the parse ---- */

static int parse_entry(struct parse *p)
{
	const struct ca_format_entry *e = (const void *)p->buf;
	struct ca_catar_node *n = p->n;
	uint64_t at = n->entry_offset;

	if (ca_le64_read(&e->header.type) != CA_FORMAT_ENTRY)
		return ca_catar_corrupt("ENTRY", at, "not an ENTRY record");
	if (ca_le64_read(&e->header.size) != sizeof(*e))
		return ca_catar_corrupt("ENTRY", at, "wrong size");
	p->f = ca_le64_read(&e->feature_flags);
	if (!ca_feature_is_valid(p->f))
		return ca_catar_corrupt("ENTRY", at, "invalid feature flags");
	n->feature_flags = p->f;
	n->mode = p->m = ca_le64_read(&e->mode);
	n->flags = ca_le64_read(&e->flags);
	n->uid = ca_le64_read(&e->uid);
	n->gid = ca_le64_read(&e->gid);
	n->mtime = ca_le64_read(&e->mtime);
	if (!valid_mode(p->f, p->m, n->flags))
		return ca_catar_corrupt("ENTRY", at, "mode not allowed by the feature flags");
	if (n->flags & ~(p->f & ENTRY_FLAG_BITS))
		return ca_catar_corrupt("ENTRY", at, "flags outside the feature flags");
	if (!valid_id(p->f, n->uid) || !valid_id(p->f, n->gid))
		return ca_catar_corrupt("ENTRY", at, "uid or gid out of range for the feature flags");
	if (!valid_mtime(p->f, n->mtime))
		return ca_catar_corrupt("ENTRY", at, "mtime finer than the time granularity");
	p->pos = sizeof(*e);
	return 0;
}

/* One record at p->pos: 1 when it ends the node's records, 0 to go on,
 * -EAGAIN (with *ret_need) or -EBADMSG. */
static int parse_record(struct parse *p, size_t *ret_need)
{
	if (p->limit - p->pos < HDR)
		return ca_catar_corrupt("record", here(p), "header crosses the end of the node");
	if (p->len - p->pos < HDR) {
		*ret_need = p->pos + HDR;
		return -EAGAIN;
	}
	const uint8_t *rec = p->buf + p->pos;
	uint64_t size = ca_le64_read(rec), type = ca_le64_read(rec + 8);
	const struct record_kind *k = record_kind(type);
	if (!k)
		return ca_log_debug_errno(EBADMSG, "catar: record at %" PRIu64 ": unknown type %016" PRIx64, here(p),
		                          type);
	if (!(k->types & node_type(p->m)))
		return bad(p, k, "not allowed for this node type");
	if (k->cls == C_END)
		return 1; /* not ours: the children, or the parent's next record */
	if (size < k->min || size > k->max)
		return bad(p, k, "size out of range for the type");
	if (size > p->limit - p->pos)
		return bad(p, k, "crosses the end of the node");
	if (k->cls == C_META) {
		if (p->pos + size > CA_CATAR_META_MAX)
			return bad(p, k, "metadata records too large in total");
		if (k->stage < p->stage || (k->stage == p->stage && !k->repeatable))
			return bad(p, k, "out of order or repeated");
		if (k->feature && !(p->f & k->feature))
			return bad(p, k, "present without its feature flag");
	}
	uint64_t need = k->header_only ? HDR : size;
	if (p->len - p->pos < need) {
		*ret_need = p->pos + need;
		return -EAGAIN;
	}
	size_t at = p->pos;
	int r = k->handle(p, k, rec, size);
	if (r < 0)
		return r;
	if (k->cls == C_TAIL) {
		p->have_tail = true; /* the handler moved pos past what it consumed */
		return 1;
	}
	p->prev_rec[k->stage] = at;
	p->stage = k->stage;
	p->pos += size;
	return 0;
}

/* What the records say must fit the node type (casync's checks). */
static int check_node(const struct parse *p)
{
	const struct ca_catar_node *n = p->n;
	uint64_t f = p->f, m = p->m, at = n->entry_offset;

	if ((f & CA_FORMAT_WITH_USER_NAMES) && !(f & UID_FLAGS) && (!p->have_user || !p->have_group))
		return ca_catar_corrupt("ENTRY", at, "USER or GROUP missing (names without ids)");
	if ((S_ISREG(m) || S_ISLNK(m) || S_ISBLK(m) || S_ISCHR(m)) && !p->have_tail)
		return ca_catar_corrupt("ENTRY", at, "PAYLOAD, SYMLINK or DEVICE missing");
	if (S_ISDIR(m) && p->pos == p->limit)
		return ca_catar_corrupt("ENTRY", at, "directory without GOODBYE");
	if ((n->n_acl_user || n->n_acl_group) && !n->has_acl_group_obj)
		return ca_catar_corrupt("ENTRY", at, "named ACL entries without ACL_GROUP_OBJ");
	if ((n->n_acl_default_user || n->n_acl_default_group) &&
	    (!n->has_acl_default || n->acl_default_mask == CA_ACL_NO_MASK))
		return ca_catar_corrupt("ENTRY", at, "named default ACL entries without ACL_DEFAULT or its mask");
	/* with a known range, leaf nodes must fill it exactly */
	if (p->limit != UINT64_MAX && S_ISREG(m) && n->payload_size != p->limit - p->pos)
		return ca_catar_corrupt("PAYLOAD", n->payload_offset - HDR, "size does not fill the node");
	if (p->limit != UINT64_MAX && !S_ISREG(m) && !S_ISDIR(m) && p->pos != p->limit)
		return ca_catar_corrupt("ENTRY", at, "bytes after the node's last record");
	return 0;
}

int ca_catar_node_parse(const uint8_t *buf, size_t len, uint64_t entry_offset, uint64_t limit,
                        uint64_t archive_flags, struct ca_catar_node *n, size_t *ret_need)
{
	struct parse p = { .buf = buf, .len = len, .limit = limit, .n = n, .stage = ST_ENTRY };
	int r;

	memset(n, 0, sizeof(*n));
	n->entry_offset = entry_offset;
	n->end_offset = limit == UINT64_MAX ? UINT64_MAX : entry_offset + limit;
	n->filename_offset = UINT64_MAX;
	n->name = "";
	n->goodbye_offset = n->n_children = UINT64_MAX;
	n->acl_default_mask = CA_ACL_NO_MASK;
	n->_meta = buf;

	if (limit < sizeof(struct ca_format_entry))
		return ca_catar_corrupt("ENTRY", entry_offset, "node smaller than an ENTRY");
	if (len < sizeof(struct ca_format_entry)) {
		*ret_need = sizeof(struct ca_format_entry);
		return -EAGAIN;
	}
	r = parse_entry(&p);
	if (r < 0)
		return r;
	if (archive_flags != UINT64_MAX && p.f != archive_flags)
		return ca_catar_corrupt("ENTRY", entry_offset, "feature flags differ from the archive's");
	/* a fifo or socket may end exactly at the end of a known range */
	while (r == 0 && p.pos != limit)
		r = parse_record(&p, ret_need);
	if (r < 0)
		return r;
	r = check_node(&p);
	if (r < 0)
		return r;
	if (S_ISDIR(p.m))
		n->children_offset = entry_offset + p.pos;
	n->meta_size = p.pos;
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
	const struct ca_format_acl_entry *e = (const void *)rec;
	ret->id = ca_le64_read(&e->id);
	ret->permissions = ca_le64_read(&e->permissions);
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
