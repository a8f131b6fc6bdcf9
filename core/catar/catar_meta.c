/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_meta.c - one node's metadata, read the way casync reads it, into
 * struct ca_meta_info (catar_meta_put.c writes its records).
 *
 * Where casync goes through a library (libacl, libselinux) we read the same
 * xattr the library reads and decode it ourselves; the result is the same
 * and it saves a path lookup per file. The xattr listing, when we have it,
 * tells us whether an ACL or label exists at all.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <linux/msdos_fs.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "catar/acl.h"
#include "catar/catar_meta.h"
#include "format/feature.h"
#include "format/format.h"

#define CHATTR_MASK  UINT64_C(0x3ff0000)
#define FAT_MASK     UINT64_C(0xe000)
#define UID_FLAGS    (CA_FORMAT_WITH_16BIT_UIDS | CA_FORMAT_WITH_32BIT_UIDS)
#define XLIST_MAX    (16u << 20)
#define XVAL_MAX     (1u << 20)

/* statfs magics */
#define M_MSDOS  0x4d44u
#define M_EXT4   0xef53u
#define M_XFS    0x58465342u
#define M_FUSE   0x65735546u
#define M_BTRFS  0x9123683eu

static const uint32_t virtual_fs_magic[] = {
	0x42494e4du, /* binfmt_misc */
	0x63677270u, /* cgroup2 */
	0x0027e0ebu, /* cgroup */
	0x62656570u, /* configfs */
	0x64626720u, /* debugfs */
	0x00001cd1u, /* devpts */
	0xde5e81e4u, /* efivarfs */
	0x65735543u, /* fusectl */
	0x958458f6u, /* hugetlbfs */
	0x19800202u, /* mqueue */
	0x6e667364u, /* nfsd */
	0x00009fa0u, /* proc */
	0x6165676cu, /* pstore */
	0x67596969u, /* rpc_pipefs */
	0x73636673u, /* securityfs */
	0xf97cff8cu, /* selinuxfs */
	0x43415d53u, /* smackfs */
	0x62656572u, /* sysfs */
};

/* errors casync takes as "this filesystem or node has none of that" */
static bool errno_unsupported(int e)
{
	return e == ENOTTY || e == ENOSYS || e == EBADF || e == EOPNOTSUPP || e == EINVAL;
}

int ca_meta_ctx_init(struct ca_meta_ctx *c, uint64_t flags)
{
	memset(c, 0, sizeof(*c));
	c->flags = flags;
	if (flags & CA_FORMAT_WITH_NSEC_TIME)
		c->time_granularity = 1;
	else if (flags & CA_FORMAT_WITH_USEC_TIME)
		c->time_granularity = 1000;
	else if (flags & CA_FORMAT_WITH_SEC_TIME)
		c->time_granularity = 1000000000;
	else if (flags & CA_FORMAT_WITH_2SEC_TIME)
		c->time_granularity = 2000000000;
	else
		c->time_granularity = UINT64_MAX;
	long s = sysconf(_SC_GETPW_R_SIZE_MAX);
	long g = sysconf(_SC_GETGR_R_SIZE_MAX);
	c->pwbuf_size = (size_t)(s > g ? s : g);
	if (c->pwbuf_size < 4096)
		c->pwbuf_size = 4096;
	c->pwbuf = malloc(c->pwbuf_size);
	return c->pwbuf ? 0 : -ENOMEM;
}

void ca_meta_ctx_done(struct ca_meta_ctx *c)
{
	ca_buf_release(&c->xlist);
	ca_buf_release(&c->xval);
	ca_buf_release(&c->acl);
	ca_buf_release(&c->scratch);
	free(c->cached_user);
	free(c->cached_group);
	free(c->pwbuf);
	c->cached_user = c->cached_group = c->pwbuf = NULL;
}

bool ca_meta_shall_enumerate(const struct ca_meta_node *n)
{
	if (!S_ISDIR(n->st.st_mode) && !S_ISREG(n->st.st_mode))
		return false;
	for (size_t i = 0; i < sizeof(virtual_fs_magic) / sizeof(virtual_fs_magic[0]); i++)
		if ((uint32_t)n->magic == virtual_fs_magic[i])
			return false;
	return true;
}

int ca_meta_read_chattr(struct ca_meta_ctx *c, struct ca_meta_node *n)
{
	if (n->chattr_read || n->fd < 0 || (!S_ISDIR(n->st.st_mode) && !S_ISREG(n->st.st_mode)))
		return 0;
	if (!(c->flags & (CHATTR_MASK | CA_FORMAT_EXCLUDE_NODUMP)))
		return 0;
	int v = 0;
	if (ioctl(n->fd, FS_IOC_GETFLAGS, &v) < 0) {
		if (!errno_unsupported(errno))
			return -errno;
		v = 0;
	}
	n->chattr = (unsigned)v;
	n->chattr_read = true;
	return 0;
}

/* ---- owner names ---- */

/* casync's rule: nothing for id 0; the name when known; when unknown,
 * nothing if ids are stored, else the id in decimal. */
static int lookup_name(struct ca_meta_ctx *c, bool group, unsigned id, char **ret)
{
	/* casync treats 65535 and 2^32-1 as "no id" (16- and 32-bit -1) */
	bool invalid = id == UINT16_MAX || id == UINT32_MAX;
	*ret = NULL;
	if (id == 0)
		return 0;
	if (invalid && !group)
		return -EINVAL;
	for (;;) {
		int r;
		const char *name = NULL;
		if (group) {
			struct group gr, *res = NULL;
			r = getgrgid_r(id, &gr, c->pwbuf, c->pwbuf_size, &res);
			if (r == 0 && res)
				name = res->gr_name;
		} else {
			struct passwd pw, *res = NULL;
			r = getpwuid_r(id, &pw, c->pwbuf, c->pwbuf_size, &res);
			if (r == 0 && res)
				name = res->pw_name;
		}
		if (name) {
			*ret = strdup(name);
			return *ret ? 0 : -ENOMEM;
		}
		if (r == ERANGE && c->pwbuf_size < (64u << 20)) {
			char *b = realloc(c->pwbuf, c->pwbuf_size * 2);
			if (!b)
				return -ENOMEM;
			c->pwbuf = b;
			c->pwbuf_size *= 2;
			continue;
		}
		if (c->flags & UID_FLAGS)
			return 0;
		if (invalid)
			return -EINVAL;
		if (asprintf(ret, "%u", id) < 0) {
			*ret = NULL;
			return -ENOMEM;
		}
		return 0;
	}
}

static int owner_names(struct ca_meta_ctx *c, const struct stat *st)
{
	int r;
	if (!c->user_cached || c->cached_uid != st->st_uid) {
		free(c->cached_user);
		c->cached_user = NULL;
		c->user_cached = false;
		r = lookup_name(c, false, st->st_uid, &c->cached_user);
		if (r < 0)
			return r;
		c->cached_uid = st->st_uid;
		c->user_cached = true;
	}
	if (!c->group_cached || c->cached_gid != st->st_gid) {
		free(c->cached_group);
		c->cached_group = NULL;
		c->group_cached = false;
		r = lookup_name(c, true, st->st_gid, &c->cached_group);
		if (r < 0)
			return r;
		c->cached_gid = st->st_gid;
		c->group_cached = true;
	}
	return 0;
}

/* ---- xattrs ---- */

static bool xattr_name_stored(const char *s)
{
	const char *dot = strchr(s, '.');
	if (!dot || dot == s || !dot[1] || strlen(s) > 255)
		return false;
	return !strncmp(s, "user.", 5) || !strncmp(s, "trusted.", 8);
}

static bool list_has(const struct ca_buf *l, const char *name)
{
	for (size_t i = 0; i < l->size;) {
		const char *q = (const char *)l->data + i;
		size_t k = strnlen(q, l->size - i);
		if (!strcmp(q, name))
			return true;
		i += k + 1;
	}
	return false;
}

/* One value into c->xval: 1 found, 0 absent, negative errno. path is used
 * when fd < 0 (follow says whether to follow a final symlink). */
static int get_xattr(struct ca_meta_ctx *c, int fd, const char *path, bool follow, const char *name)
{
	int r = ca_buf_reserve(&c->xval, 4096, XVAL_MAX);
	if (r < 0)
		return r;
	for (;;) {
		ssize_t l = fd >= 0 ? fgetxattr(fd, name, c->xval.data, c->xval.cap) :
		            follow ? getxattr(path, name, c->xval.data, c->xval.cap) :
		                     lgetxattr(path, name, c->xval.data, c->xval.cap);
		if (l >= 0) {
			c->xval.size = (size_t)l;
			return 1;
		}
		if (errno != ERANGE)
			return -errno;
		l = fd >= 0 ? fgetxattr(fd, name, NULL, 0) :
		    follow ? getxattr(path, name, NULL, 0) : lgetxattr(path, name, NULL, 0);
		if (l < 0)
			return -errno;
		r = ca_buf_reserve(&c->xval, (size_t)l + 1, XVAL_MAX);
		if (r < 0)
			return r;
	}
}

static int list_xattrs(struct ca_meta_ctx *c, int fd)
{
	int r = ca_buf_reserve(&c->xlist, 4096, XLIST_MAX);
	if (r < 0)
		return r;
	for (;;) {
		ssize_t l = flistxattr(fd, (char *)c->xlist.data, c->xlist.cap);
		if (l >= 0) {
			c->xlist.size = (size_t)l;
			return 1;
		}
		if (errno == EOPNOTSUPP || errno == EBADF)
			return 0;
		if (errno != ERANGE)
			return -errno;
		l = flistxattr(fd, NULL, 0);
		if (l < 0)
			return -errno;
		r = ca_buf_reserve(&c->xlist, (size_t)l + 1, XLIST_MAX);
		if (r < 0)
			return r;
	}
}

/* ---- gathering: everything one node's records say, read once ---- */

struct xattr_ref {
	size_t name_off, val_off, val_len; /* into the scratch buffer */
};

/* What a gather needs besides the info it fills. */
struct gather {
	struct ca_meta_ctx *c;
	struct ca_meta_node *n;
	struct ca_meta_info *info;
	uint32_t fat;
	bool subvol, subvol_ro;
	bool listed; /* c->xlist holds the node's xattr names */
	/* how nodes without an fd are reached: an O_PATH fd and its /proc path */
	int path_fd;
	char proc_path[sizeof("/proc/self/fd/") + 3 * sizeof(int)];
	/* xattrs in the scratch buffer, which may move while it grows */
	struct xattr_ref *xr;
	size_t n_xr;
	bool have_fcaps;
	struct xattr_ref fcaps;
};

void ca_meta_info_init(struct ca_meta_info *i)
{
	memset(i, 0, sizeof(*i));
	ca_acl_init(&i->acl_access);
	ca_acl_init(&i->acl_default);
}

void ca_meta_info_release(struct ca_meta_info *i)
{
	ca_acl_release(&i->acl_access);
	ca_acl_release(&i->acl_default);
	free(i->xattrs);
	free(i->selinux);
	free(i->symlink_target);
	ca_meta_info_init(i);
}

static uint64_t fixup_mode(uint64_t flags, mode_t m)
{
	if (S_ISLNK(m))
		return S_IFLNK | 0777;
	if (flags & (CA_FORMAT_WITH_PERMISSIONS | CA_FORMAT_WITH_ACL))
		return m & (S_IFMT | 07777);
	bool dir = S_ISDIR(m);
	if (flags & CA_FORMAT_WITH_READ_ONLY)
		return (m & S_IFMT) | ((m & 0222) ? (dir ? 0777 : 0666) : (dir ? 0555 : 0444));
	return (m & S_IFMT) | (dir ? 0777 : 0666);
}

static int gather_fat(struct gather *g)
{
	const struct ca_meta_node *n = g->n;
	if ((!S_ISREG(n->st.st_mode) && !S_ISDIR(n->st.st_mode)) || !(g->c->flags & FAT_MASK) || n->fd < 0 ||
	    ((uint32_t)n->magic != M_MSDOS && (uint32_t)n->magic != M_FUSE))
		return 0;
	if (ioctl(n->fd, FAT_IOCTL_GET_ATTRIBUTES, &g->fat) < 0) {
		g->fat = 0;
		if (!errno_unsupported(errno))
			return -errno;
	}
	return 0;
}

static int gather_subvol(struct gather *g)
{
	const struct ca_meta_node *n = g->n;
	uint64_t bf = 0;
	if (!S_ISDIR(n->st.st_mode) || !(g->c->flags & CA_FORMAT_WITH_SUBVOLUME) || (uint32_t)n->magic != M_BTRFS ||
	    n->st.st_ino != 256)
		return 0;
	if (ioctl(n->fd, BTRFS_IOC_SUBVOL_GETFLAGS, &bf) < 0)
		return -errno;
	g->subvol = true;
	g->subvol_ro = !!(bf & BTRFS_SUBVOL_RDONLY);
	return 0;
}

/* Nodes without an fd are reached the way casync reaches them: an O_PATH
 * fd (on which the kernel may refuse flistxattr: then they have no
 * xattrs) and its /proc path for ACLs. */
static int open_path(struct gather *g)
{
	const struct ca_meta_node *n = g->n;
	if (n->fd < 0 && !S_ISLNK(n->st.st_mode) &&
	    (g->c->flags & (CA_FORMAT_WITH_XATTRS | CA_FORMAT_WITH_FCAPS | CA_FORMAT_WITH_ACL))) {
		g->path_fd = openat(n->parent_fd, n->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_PATH);
		if (g->path_fd < 0)
			return -errno;
	}
	snprintf(g->proc_path, sizeof(g->proc_path), "/proc/self/fd/%d", n->fd >= 0 ? n->fd : g->path_fd);
	return 0;
}

/* One listed xattr (its value in c->xval) into the scratch buffer: name,
 * NUL, value. */
static int keep_xattr(struct gather *g, const char *name, size_t k, bool is_caps)
{
	struct ca_meta_ctx *c = g->c;
	struct xattr_ref ref = { c->scratch.size, c->scratch.size + k + 1, c->xval.size };
	int r = ca_buf_append(&c->scratch, name, k + 1, SIZE_MAX);
	if (r == 0)
		r = ca_buf_append(&c->scratch, c->xval.data, c->xval.size, SIZE_MAX);
	if (r < 0)
		return r;
	if (is_caps) {
		g->have_fcaps = true;
		g->fcaps = ref;
		return 0;
	}
	struct xattr_ref *v = realloc(g->xr, (g->n_xr + 1) * sizeof(*g->xr));
	if (!v)
		return -ENOMEM;
	g->xr = v;
	g->xr[g->n_xr++] = ref;
	return 0;
}

static int cmp_xattr(const void *a, const void *b)
{
	const struct ca_meta_xattr *x = a, *y = b;
	return strcmp(x->name, y->name);
}

/* The kept xattrs as the info's records, now that the scratch buffer
 * stopped moving; sorted by name as casync stores them. */
static int xattrs_to_info(struct gather *g)
{
	const uint8_t *base = g->c->scratch.data;
	struct ca_meta_info *i = g->info;
	if (g->have_fcaps && (g->c->flags & CA_FORMAT_WITH_FCAPS)) {
		i->fcaps = base + g->fcaps.val_off;
		i->fcaps_size = g->fcaps.val_len;
	}
	if (!g->n_xr || !(g->c->flags & CA_FORMAT_WITH_XATTRS))
		return 0;
	i->xattrs = calloc(g->n_xr, sizeof(*i->xattrs));
	if (!i->xattrs)
		return -ENOMEM;
	for (size_t k = 0; k < g->n_xr; k++)
		i->xattrs[k] = (struct ca_meta_xattr){ (const char *)base + g->xr[k].name_off, base + g->xr[k].val_off,
			                               g->xr[k].val_len };
	i->n_xattrs = g->n_xr;
	qsort(i->xattrs, i->n_xattrs, sizeof(*i->xattrs), cmp_xattr);
	return 0;
}

static int gather_xattrs(struct gather *g)
{
	struct ca_meta_ctx *c = g->c;
	const struct ca_meta_node *n = g->n;
	bool isreg = S_ISREG(n->st.st_mode);
	if (!(c->flags & (CA_FORMAT_WITH_XATTRS | CA_FORMAT_WITH_FCAPS)) || S_ISLNK(n->st.st_mode))
		return 0;
	int r = list_xattrs(c, n->fd >= 0 ? n->fd : g->path_fd);
	if (r < 0)
		return r;
	g->listed = r > 0;
	for (size_t off = 0; g->listed && off < c->xlist.size;) {
		const char *q = (const char *)c->xlist.data + off;
		size_t k = strnlen(q, c->xlist.size - off);
		off += k + 1;
		bool is_caps = isreg && !strcmp(q, "security.capability");
		if (!xattr_name_stored(q) && !is_caps)
			continue;
		r = n->fd >= 0 ? get_xattr(c, n->fd, NULL, true, q) : get_xattr(c, -1, g->proc_path, true, q);
		if (r == -ENODATA)
			continue; /* went away meanwhile */
		if (r < 0)
			return r;
		r = keep_xattr(g, q, k, is_caps);
		if (r < 0)
			return r;
	}
	return xattrs_to_info(g);
}

/* Named ACL entries as casync stores them: ids only with uid flags, names
 * only with USER_NAMES; the ids casync reads as "none" are refused. */
static int acl_ids(struct ca_meta_ctx *c, struct ca_acl_entry *v, size_t n, bool group)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t id = v[k].id;
		if (id == UINT16_MAX || ca_uid_shift_encode(&c->uid_shift, id, &v[k].id) < 0)
			return -EINVAL;
		if ((c->flags & CA_FORMAT_WITH_16BIT_UIDS) && v[k].id > UINT16_MAX)
			return -EPROTONOSUPPORT;
		if (!(c->flags & UID_FLAGS))
			v[k].id = 0;
		if (c->flags & CA_FORMAT_WITH_USER_NAMES) {
			int r = lookup_name(c, group, (unsigned)id, &v[k].name);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* One ACL, read through the fd when open, else the /proc path. */
static int read_acl(struct gather *g, const char *xname, struct ca_acl *a)
{
	struct ca_meta_ctx *c = g->c;
	int r = get_xattr(c, g->n->fd, g->proc_path, true, xname);
	if (r == -ENODATA || r == -EOPNOTSUPP || r == -EBADF)
		return 0;
	if (r < 0)
		return r;
	r = ca_acl_from_xattr(c->xval.data, c->xval.size, a);
	if (r == 0)
		r = acl_ids(c, a->users, a->n_users, false);
	if (r == 0)
		r = acl_ids(c, a->groups, a->n_groups, true);
	if (r == 0)
		ca_acl_sort_records(a);
	return r;
}

static int gather_acls(struct gather *g)
{
	const struct ca_buf *list = &g->c->xlist;
	mode_t m = g->n->st.st_mode;
	int r = 0;
	if (!(g->c->flags & CA_FORMAT_WITH_ACL) || S_ISLNK(m))
		return 0;
	if (!g->listed || list_has(list, CA_ACL_XATTR_ACCESS))
		r = read_acl(g, CA_ACL_XATTR_ACCESS, &g->info->acl_access);
	if (r == 0 && S_ISDIR(m) && (!g->listed || list_has(list, CA_ACL_XATTR_DEFAULT)))
		r = read_acl(g, CA_ACL_XATTR_DEFAULT, &g->info->acl_default);
	return r;
}

static int gather_selinux(struct gather *g)
{
	struct ca_meta_ctx *c = g->c;
	const struct ca_meta_node *n = g->n;
	char lpath[PATH_MAX];
	int r;
	if (!(c->flags & CA_FORMAT_WITH_SELINUX) || (g->listed && !list_has(&c->xlist, "security.selinux")))
		return 0;
	if (n->fd >= 0) {
		r = get_xattr(c, n->fd, NULL, true, "security.selinux");
	} else {
		/* the label of a symlink itself, not of its target */
		snprintf(lpath, sizeof(lpath), "/proc/self/fd/%d/%s", n->parent_fd, n->name);
		r = get_xattr(c, -1, lpath, false, "security.selinux");
	}
	if (r < 0)
		return r == -ENODATA || r == -EOPNOTSUPP ? 0 : r;
	if (r > 0 && c->xval.size > 0) {
		g->info->selinux = strndup((const char *)c->xval.data, c->xval.size);
		if (!g->info->selinux)
			return -ENOMEM;
	}
	return 0;
}

static int gather_projid(struct gather *g)
{
	const struct ca_meta_node *n = g->n;
	uint32_t magic = (uint32_t)n->magic;
	struct fsxattr fa;
	if ((!S_ISREG(n->st.st_mode) && !S_ISDIR(n->st.st_mode)) || !(g->c->flags & CA_FORMAT_WITH_QUOTA_PROJID) ||
	    n->fd < 0 || (magic != M_EXT4 && magic != M_XFS && magic != M_FUSE))
		return 0;
	if (ioctl(n->fd, FS_IOC_FSGETXATTR, &fa) < 0)
		return errno_unsupported(errno) ? 0 : -errno;
	g->info->quota_projid = fa.fsx_projid;
	return 0;
}

/* The ENTRY fields (owner ids, flags, mode, mtime) and the owner names. */
static int gather_entry(struct gather *g)
{
	struct ca_meta_ctx *c = g->c;
	struct ca_meta_info *i = g->info;
	const uint64_t f = c->flags;
	const struct stat *st = &g->n->st;
	bool isreg = S_ISREG(st->st_mode), isdir = S_ISDIR(st->st_mode);

	i->feature_flags = f;
	if (f & CA_FORMAT_WITH_USER_NAMES) {
		int r = owner_names(c, st);
		if (r < 0)
			return r;
		i->user_name = c->cached_user;
		i->group_name = c->cached_group;
	}
	if (f & UID_FLAGS) {
		if (st->st_uid == UINT16_MAX || st->st_uid == UINT32_MAX || st->st_gid == UINT16_MAX ||
		    st->st_gid == UINT32_MAX)
			return -EINVAL;
		/* casync stores shifted ids, and checks those */
		if (ca_uid_shift_encode(&c->uid_shift, st->st_uid, &i->uid) < 0 ||
		    ca_uid_shift_encode(&c->uid_shift, st->st_gid, &i->gid) < 0)
			return -EINVAL;
		if ((f & CA_FORMAT_WITH_16BIT_UIDS) && (i->uid > UINT16_MAX || i->gid > UINT16_MAX))
			return -EPROTONOSUPPORT;
	}
	if (isreg || isdir) {
		if (f & CHATTR_MASK)
			i->flags |= ca_feature_from_chattr(g->n->chattr) & f;
		if (f & FAT_MASK)
			i->flags |= ((g->fat & ATTR_HIDDEN ? CA_FORMAT_WITH_FLAG_HIDDEN : 0) |
			             (g->fat & ATTR_SYS ? CA_FORMAT_WITH_FLAG_SYSTEM : 0) |
			             (g->fat & ATTR_ARCH ? CA_FORMAT_WITH_FLAG_ARCHIVE : 0)) & f;
	}
	if (isdir && (f & CA_FORMAT_WITH_SUBVOLUME))
		i->flags |= ((g->subvol ? CA_FORMAT_WITH_SUBVOLUME : 0) |
		             (g->subvol_ro ? CA_FORMAT_WITH_SUBVOLUME_RO : 0)) & f;
	i->mode = fixup_mode(f, st->st_mode);
	if (c->time_granularity != UINT64_MAX) {
		i->mtime = (uint64_t)st->st_mtim.tv_sec * UINT64_C(1000000000) + (uint64_t)st->st_mtim.tv_nsec;
		i->mtime = i->mtime / c->time_granularity * c->time_granularity;
	}
	return 0;
}

static int read_target(const struct ca_meta_node *n, char **ret)
{
	size_t cap = 256;
	for (;;) {
		char *t = realloc(*ret, cap);
		if (!t)
			return -ENOMEM;
		*ret = t;
		ssize_t l = readlinkat(n->parent_fd, n->name, t, cap);
		if (l < 0)
			return -errno;
		if ((size_t)l < cap) {
			t[l] = 0;
			return 0;
		}
		if (cap >= 65536)
			return -ENAMETOOLONG;
		cap *= 2;
	}
}

/* What the node's last record needs: file size, link target, device. */
static int gather_tail(struct gather *g)
{
	const struct ca_meta_node *n = g->n;
	mode_t m = n->st.st_mode;
	if (S_ISREG(m))
		g->info->payload_size = ca_meta_shall_enumerate(n) ? (uint64_t)n->st.st_size : 0;
	if (S_ISBLK(m) || S_ISCHR(m)) {
		g->info->device_major = major(n->st.st_rdev);
		g->info->device_minor = minor(n->st.st_rdev);
	}
	return S_ISLNK(m) ? read_target(n, &g->info->symlink_target) : 0;
}

static int gather(struct gather *g)
{
	int r = ca_meta_read_chattr(g->c, g->n);
	if (r == 0)
		r = gather_fat(g);
	if (r == 0)
		r = gather_subvol(g);
	if (r == 0)
		r = open_path(g);
	if (r == 0)
		r = gather_xattrs(g);
	if (r == 0)
		r = gather_acls(g);
	if (r == 0)
		r = gather_selinux(g);
	if (r == 0)
		r = gather_projid(g);
	if (r == 0)
		r = gather_entry(g);
	if (r == 0)
		r = gather_tail(g);
	return r;
}

int ca_meta_serialize(struct ca_meta_ctx *c, struct ca_meta_node *n, struct ca_buf *out)
{
	struct ca_meta_info info;
	struct gather g = { .c = c, .n = n, .info = &info, .path_fd = -1 };
	int r;

	ca_meta_info_init(&info);
	c->scratch.size = 0;
	r = gather(&g);
	if (r == 0)
		r = ca_meta_put(&info, out);
	if (g.path_fd >= 0)
		close(g.path_fd);
	free(g.xr);
	ca_meta_info_release(&info);
	return r;
}
