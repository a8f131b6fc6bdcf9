/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar_meta.c - one node's metadata, read the way casync reads it, and
 * its ENTRY + metadata records.
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

#include "acl.h"
#include "catar_meta.h"
#include "feature.h"
#include "format.h"

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

struct xattr_ref {
	size_t name_off, val_off, val_len; /* into the scratch buffer */
};

static int cmp_xattr(const void *a, const void *b, void *base)
{
	const struct xattr_ref *x = a, *y = b;
	return strcmp((const char *)base + x->name_off, (const char *)base + y->name_off);
}

/* ---- gathering: everything one node's records say, read once ---- */

struct meta_info {
	uint64_t mode, eflags, uid, gid, mtime;
	uint32_t fat, projid;
	bool subvol, subvol_ro;
	struct xattr_ref *xr; /* user./trusted. xattrs, sorted by name */
	size_t n_xr;
	bool have_fcaps;
	size_t fcaps_off, fcaps_len; /* into the scratch buffer */
	bool listed;                 /* c->xlist holds the node's xattr names */
	struct ca_acl acc, def;
	char *label, *target; /* NULL when none */
	/* how nodes without an fd are reached: an O_PATH fd and its /proc path */
	int path_fd;
	char proc_path[64];
};

static void info_init(struct meta_info *i)
{
	memset(i, 0, sizeof(*i));
	ca_acl_init(&i->acc);
	ca_acl_init(&i->def);
	i->path_fd = -1;
}

static void info_release(struct meta_info *i)
{
	if (i->path_fd >= 0)
		close(i->path_fd);
	ca_acl_release(&i->acc);
	ca_acl_release(&i->def);
	free(i->xr);
	free(i->label);
	free(i->target);
	info_init(i);
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

static int gather_fat(struct ca_meta_ctx *c, const struct ca_meta_node *n, struct meta_info *i)
{
	if ((!S_ISREG(n->st.st_mode) && !S_ISDIR(n->st.st_mode)) || !(c->flags & FAT_MASK) || n->fd < 0 ||
	    ((uint32_t)n->magic != M_MSDOS && (uint32_t)n->magic != M_FUSE))
		return 0;
	if (ioctl(n->fd, FAT_IOCTL_GET_ATTRIBUTES, &i->fat) < 0) {
		i->fat = 0;
		if (!errno_unsupported(errno))
			return -errno;
	}
	return 0;
}

static int gather_subvol(struct ca_meta_ctx *c, const struct ca_meta_node *n, struct meta_info *i)
{
	uint64_t bf = 0;
	if (!S_ISDIR(n->st.st_mode) || !(c->flags & CA_FORMAT_WITH_SUBVOLUME) || (uint32_t)n->magic != M_BTRFS ||
	    n->st.st_ino != 256)
		return 0;
	if (ioctl(n->fd, BTRFS_IOC_SUBVOL_GETFLAGS, &bf) < 0)
		return -errno;
	i->subvol = true;
	i->subvol_ro = !!(bf & BTRFS_SUBVOL_RDONLY);
	return 0;
}

/* Nodes without an fd are reached the way casync reaches them: an O_PATH
 * fd (on which the kernel may refuse flistxattr: then they have no
 * xattrs) and its /proc path for ACLs. */
static int open_path(struct ca_meta_ctx *c, const struct ca_meta_node *n, struct meta_info *i)
{
	if (n->fd < 0 && !S_ISLNK(n->st.st_mode) &&
	    (c->flags & (CA_FORMAT_WITH_XATTRS | CA_FORMAT_WITH_FCAPS | CA_FORMAT_WITH_ACL))) {
		i->path_fd = openat(n->parent_fd, n->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_PATH);
		if (i->path_fd < 0)
			return -errno;
	}
	snprintf(i->proc_path, sizeof(i->proc_path), "/proc/self/fd/%d", n->fd >= 0 ? n->fd : i->path_fd);
	return 0;
}

/* One listed xattr into the scratch buffer (name, NUL, value) and, unless
 * it is the file capability, into i->xr. */
static int keep_xattr(struct ca_meta_ctx *c, struct meta_info *i, const char *name, size_t k, bool is_caps)
{
	size_t noff = c->scratch.size;
	int r = ca_buf_append(&c->scratch, name, k + 1, SIZE_MAX);
	if (r == 0)
		r = ca_buf_append(&c->scratch, c->xval.data, c->xval.size, SIZE_MAX);
	if (r < 0)
		return r;
	if (is_caps) {
		i->have_fcaps = true;
		i->fcaps_off = noff + k + 1;
		i->fcaps_len = c->xval.size;
		return 0;
	}
	struct xattr_ref *v = realloc(i->xr, (i->n_xr + 1) * sizeof(*i->xr));
	if (!v)
		return -ENOMEM;
	i->xr = v;
	i->xr[i->n_xr++] = (struct xattr_ref){ noff, noff + k + 1, c->xval.size };
	return 0;
}

static int gather_xattrs(struct ca_meta_ctx *c, const struct ca_meta_node *n, struct meta_info *i)
{
	bool isreg = S_ISREG(n->st.st_mode);
	if (!(c->flags & (CA_FORMAT_WITH_XATTRS | CA_FORMAT_WITH_FCAPS)) || S_ISLNK(n->st.st_mode))
		return 0;
	int r = list_xattrs(c, n->fd >= 0 ? n->fd : i->path_fd);
	if (r < 0)
		return r;
	i->listed = r > 0;
	for (size_t off = 0; i->listed && off < c->xlist.size;) {
		const char *q = (const char *)c->xlist.data + off;
		size_t k = strnlen(q, c->xlist.size - off);
		off += k + 1;
		bool is_caps = isreg && !strcmp(q, "security.capability");
		if (!xattr_name_stored(q) && !is_caps)
			continue;
		r = n->fd >= 0 ? get_xattr(c, n->fd, NULL, true, q) : get_xattr(c, -1, i->proc_path, true, q);
		if (r == -ENODATA)
			continue; /* went away meanwhile */
		if (r < 0)
			return r;
		r = keep_xattr(c, i, q, k, is_caps);
		if (r < 0)
			return r;
	}
	if (i->n_xr > 1)
		qsort_r(i->xr, i->n_xr, sizeof(*i->xr), cmp_xattr, c->scratch.data);
	return 0;
}

/* Named ACL entries as casync stores them: ids only with uid flags, names
 * only with USER_NAMES; the ids casync reads as "none" are refused. */
static int acl_ids(struct ca_meta_ctx *c, struct ca_acl_entry *v, size_t n, bool group)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t id = v[k].id;
		if (id == UINT16_MAX)
			return -EINVAL;
		if ((c->flags & CA_FORMAT_WITH_16BIT_UIDS) && id > UINT16_MAX)
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
static int read_acl(struct ca_meta_ctx *c, int fd, const char *proc_path, const char *xname, struct ca_acl *a)
{
	int r = get_xattr(c, fd, proc_path, true, xname);
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

static int gather_acls(struct ca_meta_ctx *c, const struct ca_meta_node *n, struct meta_info *i)
{
	int r = 0;
	if (!(c->flags & CA_FORMAT_WITH_ACL) || S_ISLNK(n->st.st_mode))
		return 0;
	if (!i->listed || list_has(&c->xlist, CA_ACL_XATTR_ACCESS))
		r = read_acl(c, n->fd, i->proc_path, CA_ACL_XATTR_ACCESS, &i->acc);
	if (r == 0 && S_ISDIR(n->st.st_mode) && (!i->listed || list_has(&c->xlist, CA_ACL_XATTR_DEFAULT)))
		r = read_acl(c, n->fd, i->proc_path, CA_ACL_XATTR_DEFAULT, &i->def);
	return r;
}

static int gather_selinux(struct ca_meta_ctx *c, const struct ca_meta_node *n, struct meta_info *i)
{
	char lpath[PATH_MAX];
	int r;
	if (!(c->flags & CA_FORMAT_WITH_SELINUX) || (i->listed && !list_has(&c->xlist, "security.selinux")))
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
		i->label = strndup((const char *)c->xval.data, c->xval.size);
		if (!i->label)
			return -ENOMEM;
	}
	return 0;
}

static int gather_projid(struct ca_meta_ctx *c, const struct ca_meta_node *n, struct meta_info *i)
{
	struct fsxattr fa;
	uint32_t magic = (uint32_t)n->magic;
	if ((!S_ISREG(n->st.st_mode) && !S_ISDIR(n->st.st_mode)) || !(c->flags & CA_FORMAT_WITH_QUOTA_PROJID) ||
	    n->fd < 0 || (magic != M_EXT4 && magic != M_XFS && magic != M_FUSE))
		return 0;
	if (ioctl(n->fd, FS_IOC_FSGETXATTR, &fa) < 0)
		return errno_unsupported(errno) ? 0 : -errno;
	i->projid = fa.fsx_projid;
	return 0;
}

/* The ENTRY fields: owner ids (and names), flags, mode, mtime. */
static int gather_entry(struct ca_meta_ctx *c, const struct ca_meta_node *n, struct meta_info *i)
{
	const uint64_t f = c->flags;
	const struct stat *st = &n->st;
	bool isreg = S_ISREG(st->st_mode), isdir = S_ISDIR(st->st_mode);

	if (f & CA_FORMAT_WITH_USER_NAMES) {
		int r = owner_names(c, st);
		if (r < 0)
			return r;
	}
	if (f & UID_FLAGS) {
		if (st->st_uid == UINT16_MAX || st->st_uid == UINT32_MAX || st->st_gid == UINT16_MAX ||
		    st->st_gid == UINT32_MAX)
			return -EINVAL;
		if ((f & CA_FORMAT_WITH_16BIT_UIDS) && (st->st_uid > UINT16_MAX || st->st_gid > UINT16_MAX))
			return -EPROTONOSUPPORT;
		i->uid = st->st_uid;
		i->gid = st->st_gid;
	}
	if (isreg || isdir) {
		if (f & CHATTR_MASK)
			i->eflags |= ca_feature_from_chattr(n->chattr) & f;
		if (f & FAT_MASK)
			i->eflags |= ((i->fat & ATTR_HIDDEN ? CA_FORMAT_WITH_FLAG_HIDDEN : 0) |
			              (i->fat & ATTR_SYS ? CA_FORMAT_WITH_FLAG_SYSTEM : 0) |
			              (i->fat & ATTR_ARCH ? CA_FORMAT_WITH_FLAG_ARCHIVE : 0)) & f;
	}
	if (isdir && (f & CA_FORMAT_WITH_SUBVOLUME))
		i->eflags |= ((i->subvol ? CA_FORMAT_WITH_SUBVOLUME : 0) |
		              (i->subvol_ro ? CA_FORMAT_WITH_SUBVOLUME_RO : 0)) & f;
	i->mode = fixup_mode(f, st->st_mode);
	if (c->time_granularity != UINT64_MAX) {
		i->mtime = (uint64_t)st->st_mtim.tv_sec * UINT64_C(1000000000) + (uint64_t)st->st_mtim.tv_nsec;
		i->mtime = i->mtime / c->time_granularity * c->time_granularity;
	}
	return 0;
}

static int gather_target(const struct ca_meta_node *n, struct meta_info *i)
{
	size_t cap = 256;
	if (!S_ISLNK(n->st.st_mode))
		return 0;
	for (;;) {
		char *t = realloc(i->target, cap);
		if (!t)
			return -ENOMEM;
		i->target = t;
		ssize_t l = readlinkat(n->parent_fd, n->name, i->target, cap);
		if (l < 0)
			return -errno;
		if ((size_t)l < cap) {
			i->target[l] = 0;
			return 0;
		}
		if (cap >= 65536)
			return -ENAMETOOLONG;
		cap *= 2;
	}
}

static int gather(struct ca_meta_ctx *c, struct ca_meta_node *n, struct meta_info *i)
{
	int r = ca_meta_read_chattr(c, n);
	if (r == 0)
		r = gather_fat(c, n, i);
	if (r == 0)
		r = gather_subvol(c, n, i);
	if (r == 0)
		r = open_path(c, n, i);
	if (r == 0)
		r = gather_xattrs(c, n, i);
	if (r == 0)
		r = gather_acls(c, n, i);
	if (r == 0)
		r = gather_selinux(c, n, i);
	if (r == 0)
		r = gather_projid(c, n, i);
	if (r == 0)
		r = gather_entry(c, n, i);
	if (r == 0)
		r = gather_target(n, i);
	return r;
}

/* ---- emitting: one function per record type ---- */

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

static int put_entry(struct ca_meta_ctx *c, const struct meta_info *i, struct ca_buf *out)
{
	struct ca_format_entry e;
	ca_le64_write(&e.header.size, sizeof(e));
	ca_le64_write(&e.header.type, CA_FORMAT_ENTRY);
	ca_le64_write(&e.feature_flags, c->flags);
	ca_le64_write(&e.mode, i->mode);
	ca_le64_write(&e.flags, i->eflags);
	ca_le64_write(&e.uid, i->uid);
	ca_le64_write(&e.gid, i->gid);
	ca_le64_write(&e.mtime, i->mtime);
	return ca_buf_append(out, &e, sizeof(e), SIZE_MAX);
}

static int put_owner_names(struct ca_meta_ctx *c, struct ca_buf *out)
{
	if (!(c->flags & CA_FORMAT_WITH_USER_NAMES))
		return 0;
	int r = put_string(out, CA_FORMAT_USER, c->cached_user);
	return r < 0 ? r : put_string(out, CA_FORMAT_GROUP, c->cached_group);
}

static int put_xattrs(struct ca_meta_ctx *c, const struct meta_info *i, struct ca_buf *out)
{
	if (!(c->flags & CA_FORMAT_WITH_XATTRS))
		return 0;
	for (size_t k = 0; k < i->n_xr; k++) {
		/* name, NUL and value lie together in the scratch buffer */
		const struct xattr_ref *x = &i->xr[k];
		int r = put_blob(out, CA_FORMAT_XATTR, c->scratch.data + x->name_off, x->val_off + x->val_len - x->name_off);
		if (r < 0)
			return r;
	}
	return 0;
}

static int put_fcaps(struct ca_meta_ctx *c, const struct meta_info *i, struct ca_buf *out)
{
	if (!i->have_fcaps || !(c->flags & CA_FORMAT_WITH_FCAPS))
		return 0;
	return put_blob(out, CA_FORMAT_FCAPS, c->scratch.data + i->fcaps_off, i->fcaps_len);
}

static int put_projid(const struct meta_info *i, struct ca_buf *out)
{
	struct ca_format_quota_projid q;
	if (i->projid == 0)
		return 0;
	ca_le64_write(&q.header.size, sizeof(q));
	ca_le64_write(&q.header.type, CA_FORMAT_QUOTA_PROJID);
	ca_le64_write(&q.projid, i->projid);
	return ca_buf_append(out, &q, sizeof(q), SIZE_MAX);
}

static int put_device(const struct ca_meta_node *n, struct ca_buf *out)
{
	struct ca_format_device d;
	ca_le64_write(&d.header.size, sizeof(d));
	ca_le64_write(&d.header.type, CA_FORMAT_DEVICE);
	ca_le64_write(&d.major, major(n->st.st_rdev));
	ca_le64_write(&d.minor, minor(n->st.st_rdev));
	return ca_buf_append(out, &d, sizeof(d), SIZE_MAX);
}

/* The node's last record: the PAYLOAD header (its content follows from
 * the caller), SYMLINK, DEVICE, or nothing (directories, fifos, sockets). */
static int put_tail(const struct ca_meta_node *n, const struct meta_info *i, struct ca_buf *out)
{
	mode_t m = n->st.st_mode;
	if (S_ISREG(m)) {
		uint64_t size = ca_meta_shall_enumerate(n) ? (uint64_t)n->st.st_size : 0;
		return put_header(out, sizeof(struct ca_format_header) + size, CA_FORMAT_PAYLOAD);
	}
	if (S_ISLNK(m))
		return put_string(out, CA_FORMAT_SYMLINK, i->target);
	if (S_ISBLK(m) || S_ISCHR(m))
		return put_device(n, out);
	return 0;
}

/* The records in the order format.h lays them out. */
static int emit(struct ca_meta_ctx *c, const struct ca_meta_node *n, const struct meta_info *i, struct ca_buf *out)
{
	int r = put_entry(c, i, out);
	if (r == 0)
		r = put_owner_names(c, out);
	if (r == 0)
		r = put_xattrs(c, i, out);
	if (r == 0)
		r = ca_acl_put_records(&i->acc, &i->def, out);
	if (r == 0)
		r = put_string(out, CA_FORMAT_SELINUX, i->label);
	if (r == 0)
		r = put_fcaps(c, i, out);
	if (r == 0)
		r = put_projid(i, out);
	if (r == 0)
		r = put_tail(n, i, out);
	return r;
}

int ca_meta_serialize(struct ca_meta_ctx *c, struct ca_meta_node *n, struct ca_buf *out)
{
	struct meta_info info;
	int r;

	info_init(&info);
	c->scratch.size = 0;
	r = gather(c, n, &info);
	if (r == 0)
		r = emit(c, n, &info, out);
	info_release(&info);
	return r;
}
