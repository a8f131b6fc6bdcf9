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

static int put_header(struct ca_buf *out, uint64_t size, uint64_t type)
{
	uint8_t h[16];
	ca_le64_write(h, size);
	ca_le64_write(h + 8, type);
	return ca_buf_append(out, h, 16, SIZE_MAX);
}

static int put_u64(struct ca_buf *out, uint64_t v)
{
	uint8_t b[8];
	ca_le64_write(b, v);
	return ca_buf_append(out, b, 8, SIZE_MAX);
}

struct xattr_ref {
	size_t name_off, val_off, val_len; /* into the scratch buffer */
};

static int cmp_xattr(const void *a, const void *b, void *base)
{
	const struct xattr_ref *x = a, *y = b;
	return strcmp((const char *)base + x->name_off, (const char *)base + y->name_off);
}

/* ---- ACLs ---- */

struct acl_item {
	uint64_t id, perm;
	char *name; /* NULL: none */
};

struct acl_info {
	struct acl_item *user, *group;
	size_t n_user, n_group;
	uint64_t user_obj, group_obj, other, mask; /* UINT64_MAX: absent */
};

static void acl_info_free(struct acl_info *a)
{
	for (size_t i = 0; i < a->n_user; i++)
		free(a->user[i].name);
	for (size_t i = 0; i < a->n_group; i++)
		free(a->group[i].name);
	free(a->user);
	free(a->group);
	memset(a, 0, sizeof(*a));
	a->user_obj = a->group_obj = a->other = a->mask = UINT64_MAX;
}

static int cmp_acl(const void *a, const void *b)
{
	const struct acl_item *x = a, *y = b;
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

#define ACL_XATTR_VERSION 2u
enum { TAG_USER_OBJ = 1, TAG_USER = 2, TAG_GROUP_OBJ = 4, TAG_GROUP = 8, TAG_MASK = 0x10, TAG_OTHER = 0x20 };

/* Decode a system.posix_acl_* value (as libacl would) into a. */
static int parse_acl(struct ca_meta_ctx *c, const uint8_t *p, size_t len, struct acl_info *a)
{
	if (len < 4 || (len - 4) % 8 || (p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24) != ACL_XATTR_VERSION)
		return -EINVAL;
	for (size_t off = 4; off < len; off += 8) {
		unsigned tag = p[off] | p[off + 1] << 8;
		uint64_t perm = (p[off + 2] | p[off + 3] << 8) & 7u;
		uint32_t id = p[off + 4] | p[off + 5] << 8 | p[off + 6] << 16 | (uint32_t)p[off + 7] << 24;
		struct acl_item **list;
		size_t *n;
		switch (tag) {
		case TAG_USER_OBJ:
			a->user_obj = perm;
			continue;
		case TAG_GROUP_OBJ:
			a->group_obj = perm;
			continue;
		case TAG_OTHER:
			a->other = perm;
			continue;
		case TAG_MASK:
			a->mask = perm;
			continue;
		case TAG_USER:
			list = &a->user;
			n = &a->n_user;
			break;
		case TAG_GROUP:
			list = &a->group;
			n = &a->n_group;
			break;
		default:
			return -EINVAL;
		}
		if (id == UINT32_MAX || id == UINT16_MAX)
			return -EINVAL;
		if ((c->flags & CA_FORMAT_WITH_16BIT_UIDS) && id > UINT16_MAX)
			return -EPROTONOSUPPORT;
		struct acl_item *v = realloc(*list, (*n + 1) * sizeof(**list));
		if (!v)
			return -ENOMEM;
		*list = v;
		v[*n] = (struct acl_item){ .id = (c->flags & UID_FLAGS) ? id : 0, .perm = perm };
		(*n)++;
		if (c->flags & CA_FORMAT_WITH_USER_NAMES) {
			int r = lookup_name(c, tag == TAG_GROUP, id, &v[*n - 1].name);
			if (r < 0)
				return r;
		}
	}
	/* qsort's pointer must not be NULL, even for zero items */
	if (a->n_user)
		qsort(a->user, a->n_user, sizeof(*a->user), cmp_acl);
	if (a->n_group)
		qsort(a->group, a->n_group, sizeof(*a->group), cmp_acl);
	return 0;
}

/* Read one ACL: fd when open, else through the /proc path of path_fd. */
static int read_acl(struct ca_meta_ctx *c, int fd, const char *proc_path, const char *xname, struct acl_info *a)
{
	int r = get_xattr(c, fd, proc_path, true, xname);
	if (r == -ENODATA || r == -EOPNOTSUPP || r == -EBADF)
		return 0;
	if (r < 0)
		return r;
	return parse_acl(c, c->xval.data, c->xval.size, a);
}

static int put_acl_list(struct ca_buf *out, uint64_t type, const struct acl_item *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t nl = v[i].name ? strlen(v[i].name) + 1 : 0;
		int r = put_header(out, 32 + nl, type);
		if (r == 0)
			r = put_u64(out, v[i].id);
		if (r == 0)
			r = put_u64(out, v[i].perm);
		if (r == 0 && nl)
			r = ca_buf_append(out, v[i].name, nl, SIZE_MAX);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- the whole record set ---- */

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

int ca_meta_serialize(struct ca_meta_ctx *c, struct ca_meta_node *n, struct ca_buf *out)
{
	const uint64_t f = c->flags;
	const mode_t m = n->st.st_mode;
	const bool isreg = S_ISREG(m), isdir = S_ISDIR(m), islnk = S_ISLNK(m);
	struct acl_info acc, def;
	struct xattr_ref *xr = NULL;
	size_t n_xr = 0, fcaps_off = 0, fcaps_len = 0;
	bool have_fcaps = false, listed = false;
	char *label = NULL, *target = NULL;
	char proc_path[64];
	int path_fd = -1, r;
	uint32_t fat = 0, projid = 0;
	bool subvol = false, subvol_ro = false;

	memset(&acc, 0, sizeof(acc));
	memset(&def, 0, sizeof(def));
	acl_info_free(&acc);
	acl_info_free(&def);
	c->scratch.size = 0;

	r = ca_meta_read_chattr(c, n);
	if (r < 0)
		goto out;
	if ((isreg || isdir) && (f & FAT_MASK) && n->fd >= 0 &&
	    ((uint32_t)n->magic == M_MSDOS || (uint32_t)n->magic == M_FUSE)) {
		if (ioctl(n->fd, FAT_IOCTL_GET_ATTRIBUTES, &fat) < 0) {
			if (!errno_unsupported(errno)) {
				r = -errno;
				goto out;
			}
			fat = 0;
		}
	}
	if (isdir && (f & CA_FORMAT_WITH_SUBVOLUME) && (uint32_t)n->magic == M_BTRFS && n->st.st_ino == 256) {
		uint64_t bf = 0;
		if (ioctl(n->fd, BTRFS_IOC_SUBVOL_GETFLAGS, &bf) < 0) {
			r = -errno;
			goto out;
		}
		subvol = true;
		subvol_ro = !!(bf & BTRFS_SUBVOL_RDONLY);
	}

	/* Nodes without an fd are reached the way casync reaches them: an
	 * O_PATH fd (on which the kernel may refuse flistxattr: then they
	 * have no xattrs) and its /proc path for ACLs. */
	if (n->fd < 0 && !islnk && (f & (CA_FORMAT_WITH_XATTRS | CA_FORMAT_WITH_FCAPS | CA_FORMAT_WITH_ACL))) {
		path_fd = openat(n->parent_fd, n->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_PATH);
		if (path_fd < 0) {
			r = -errno;
			goto out;
		}
	}
	snprintf(proc_path, sizeof(proc_path), "/proc/self/fd/%d", n->fd >= 0 ? n->fd : path_fd);

	if ((f & (CA_FORMAT_WITH_XATTRS | CA_FORMAT_WITH_FCAPS)) && !islnk) {
		r = list_xattrs(c, n->fd >= 0 ? n->fd : path_fd);
		if (r < 0)
			goto out;
		listed = r > 0;
		for (size_t i = 0; listed && i < c->xlist.size;) {
			const char *q = (const char *)c->xlist.data + i;
			size_t k = strnlen(q, c->xlist.size - i);
			i += k + 1;
			bool is_caps = isreg && !strcmp(q, "security.capability");
			if (!xattr_name_stored(q) && !is_caps)
				continue;
			r = n->fd >= 0 ? get_xattr(c, n->fd, NULL, true, q) : get_xattr(c, -1, proc_path, true, q);
			if (r == -ENODATA)
				continue; /* went away meanwhile */
			if (r < 0)
				goto out;
			size_t noff = c->scratch.size;
			r = ca_buf_append(&c->scratch, q, k + 1, SIZE_MAX);
			if (r == 0)
				r = ca_buf_append(&c->scratch, c->xval.data, c->xval.size, SIZE_MAX);
			if (r < 0)
				goto out;
			if (is_caps) {
				have_fcaps = true;
				fcaps_off = noff + k + 1;
				fcaps_len = c->xval.size;
				continue;
			}
			struct xattr_ref *v = realloc(xr, (n_xr + 1) * sizeof(*xr));
			if (!v) {
				r = -ENOMEM;
				goto out;
			}
			xr = v;
			xr[n_xr++] = (struct xattr_ref){ noff, noff + k + 1, c->xval.size };
		}
		if (n_xr > 1)
			qsort_r(xr, n_xr, sizeof(*xr), cmp_xattr, c->scratch.data);
	}

	if ((f & CA_FORMAT_WITH_ACL) && !islnk) {
		if (!listed || list_has(&c->xlist, "system.posix_acl_access")) {
			r = read_acl(c, n->fd, proc_path, "system.posix_acl_access", &acc);
			if (r < 0)
				goto out;
		}
		if (isdir && (!listed || list_has(&c->xlist, "system.posix_acl_default"))) {
			r = read_acl(c, n->fd, proc_path, "system.posix_acl_default", &def);
			if (r < 0)
				goto out;
		}
	}

	if (f & CA_FORMAT_WITH_SELINUX) {
		if (!listed || list_has(&c->xlist, "security.selinux")) {
			char lpath[PATH_MAX];
			if (n->fd >= 0) {
				r = get_xattr(c, n->fd, NULL, true, "security.selinux");
			} else {
				snprintf(lpath, sizeof(lpath), "/proc/self/fd/%d/%s", n->parent_fd, n->name);
				r = get_xattr(c, -1, lpath, false, "security.selinux");
			}
			if (r > 0 && c->xval.size > 0) {
				label = strndup((const char *)c->xval.data, c->xval.size);
				if (!label) {
					r = -ENOMEM;
					goto out;
				}
			} else if (r < 0 && r != -ENODATA && r != -EOPNOTSUPP) {
				goto out;
			}
		}
	}

	if (f & CA_FORMAT_WITH_USER_NAMES) {
		r = owner_names(c, &n->st);
		if (r < 0)
			goto out;
	}

	if ((isreg || isdir) && (f & CA_FORMAT_WITH_QUOTA_PROJID) && n->fd >= 0 &&
	    ((uint32_t)n->magic == M_EXT4 || (uint32_t)n->magic == M_XFS || (uint32_t)n->magic == M_FUSE)) {
		struct fsxattr fa;
		if (ioctl(n->fd, FS_IOC_FSGETXATTR, &fa) < 0) {
			if (!errno_unsupported(errno)) {
				r = -errno;
				goto out;
			}
		} else {
			projid = fa.fsx_projid;
		}
	}

	uint64_t uid = 0, gid = 0;
	if (f & UID_FLAGS) {
		if (n->st.st_uid == UINT16_MAX || n->st.st_uid == UINT32_MAX || n->st.st_gid == UINT16_MAX ||
		    n->st.st_gid == UINT32_MAX) {
			r = -EINVAL;
			goto out;
		}
		if ((f & CA_FORMAT_WITH_16BIT_UIDS) && (n->st.st_uid > UINT16_MAX || n->st.st_gid > UINT16_MAX)) {
			r = -EPROTONOSUPPORT;
			goto out;
		}
		uid = n->st.st_uid;
		gid = n->st.st_gid;
	}

	uint64_t eflags = 0;
	if (isreg || isdir) {
		if (f & CHATTR_MASK)
			eflags |= ca_feature_from_chattr(n->chattr) & f;
		if (f & FAT_MASK)
			eflags |= ((fat & ATTR_HIDDEN ? CA_FORMAT_WITH_FLAG_HIDDEN : 0) |
			           (fat & ATTR_SYS ? CA_FORMAT_WITH_FLAG_SYSTEM : 0) |
			           (fat & ATTR_ARCH ? CA_FORMAT_WITH_FLAG_ARCHIVE : 0)) & f;
	}
	if (isdir && (f & CA_FORMAT_WITH_SUBVOLUME))
		eflags |= ((subvol ? CA_FORMAT_WITH_SUBVOLUME : 0) | (subvol_ro ? CA_FORMAT_WITH_SUBVOLUME_RO : 0)) & f;

	uint64_t mtime = 0;
	if (c->time_granularity != UINT64_MAX) {
		mtime = (uint64_t)n->st.st_mtim.tv_sec * UINT64_C(1000000000) + (uint64_t)n->st.st_mtim.tv_nsec;
		mtime = mtime / c->time_granularity * c->time_granularity;
	}

	if (islnk) {
		size_t cap = 256;
		for (;;) {
			char *t = realloc(target, cap);
			if (!t) {
				r = -ENOMEM;
				goto out;
			}
			target = t;
			ssize_t l = readlinkat(n->parent_fd, n->name, target, cap);
			if (l < 0) {
				r = -errno;
				goto out;
			}
			if ((size_t)l < cap) {
				target[l] = 0;
				break;
			}
			if (cap >= 65536) {
				r = -ENAMETOOLONG;
				goto out;
			}
			cap *= 2;
		}
	}

	/* ENTRY */
	r = put_header(out, 64, CA_FORMAT_ENTRY);
	if (r == 0)
		r = put_u64(out, f);
	if (r == 0)
		r = put_u64(out, fixup_mode(f, m));
	if (r == 0)
		r = put_u64(out, eflags);
	if (r == 0)
		r = put_u64(out, uid);
	if (r == 0)
		r = put_u64(out, gid);
	if (r == 0)
		r = put_u64(out, mtime);
	if (r < 0)
		goto out;

	if ((f & CA_FORMAT_WITH_USER_NAMES) && c->cached_user) {
		size_t l = strlen(c->cached_user) + 1;
		r = put_header(out, 16 + l, CA_FORMAT_USER);
		if (r == 0)
			r = ca_buf_append(out, c->cached_user, l, SIZE_MAX);
		if (r < 0)
			goto out;
	}
	if ((f & CA_FORMAT_WITH_USER_NAMES) && c->cached_group) {
		size_t l = strlen(c->cached_group) + 1;
		r = put_header(out, 16 + l, CA_FORMAT_GROUP);
		if (r == 0)
			r = ca_buf_append(out, c->cached_group, l, SIZE_MAX);
		if (r < 0)
			goto out;
	}
	if (f & CA_FORMAT_WITH_XATTRS) {
		for (size_t i = 0; i < n_xr; i++) {
			size_t total = xr[i].val_off + xr[i].val_len - xr[i].name_off;
			r = put_header(out, 16 + total, CA_FORMAT_XATTR);
			if (r == 0)
				r = ca_buf_append(out, c->scratch.data + xr[i].name_off, total, SIZE_MAX);
			if (r < 0)
				goto out;
		}
	}
	r = put_acl_list(out, CA_FORMAT_ACL_USER, acc.user, acc.n_user);
	if (r == 0)
		r = put_acl_list(out, CA_FORMAT_ACL_GROUP, acc.group, acc.n_group);
	if (r < 0)
		goto out;
	/* with a mask, stat's group bits are the mask: the group entry needs its own record */
	if (acc.group_obj != UINT64_MAX && acc.mask != UINT64_MAX) {
		r = put_header(out, 24, CA_FORMAT_ACL_GROUP_OBJ);
		if (r == 0)
			r = put_u64(out, acc.group_obj);
		if (r < 0)
			goto out;
	}
	if (def.user_obj != UINT64_MAX || def.group_obj != UINT64_MAX || def.other != UINT64_MAX ||
	    def.mask != UINT64_MAX) {
		r = put_header(out, 48, CA_FORMAT_ACL_DEFAULT);
		if (r == 0)
			r = put_u64(out, def.user_obj);
		if (r == 0)
			r = put_u64(out, def.group_obj);
		if (r == 0)
			r = put_u64(out, def.other);
		if (r == 0)
			r = put_u64(out, def.mask);
		if (r < 0)
			goto out;
	}
	r = put_acl_list(out, CA_FORMAT_ACL_DEFAULT_USER, def.user, def.n_user);
	if (r == 0)
		r = put_acl_list(out, CA_FORMAT_ACL_DEFAULT_GROUP, def.group, def.n_group);
	if (r < 0)
		goto out;
	if (label) {
		size_t l = strlen(label) + 1;
		r = put_header(out, 16 + l, CA_FORMAT_SELINUX);
		if (r == 0)
			r = ca_buf_append(out, label, l, SIZE_MAX);
		if (r < 0)
			goto out;
	}
	if (have_fcaps && (f & CA_FORMAT_WITH_FCAPS)) {
		r = put_header(out, 16 + fcaps_len, CA_FORMAT_FCAPS);
		if (r == 0)
			r = ca_buf_append(out, c->scratch.data + fcaps_off, fcaps_len, SIZE_MAX);
		if (r < 0)
			goto out;
	}
	if (projid != 0) {
		r = put_header(out, 24, CA_FORMAT_QUOTA_PROJID);
		if (r == 0)
			r = put_u64(out, projid);
		if (r < 0)
			goto out;
	}
	if (isreg) {
		uint64_t size = ca_meta_shall_enumerate(n) ? (uint64_t)n->st.st_size : 0;
		r = put_header(out, 16 + size, CA_FORMAT_PAYLOAD);
	} else if (islnk) {
		size_t l = strlen(target) + 1;
		r = put_header(out, 16 + l, CA_FORMAT_SYMLINK);
		if (r == 0)
			r = ca_buf_append(out, target, l, SIZE_MAX);
	} else if (S_ISBLK(m) || S_ISCHR(m)) {
		r = put_header(out, 32, CA_FORMAT_DEVICE);
		if (r == 0)
			r = put_u64(out, major(n->st.st_rdev));
		if (r == 0)
			r = put_u64(out, minor(n->st.st_rdev));
	}
out:
	if (path_fd >= 0)
		close(path_fd);
	acl_info_free(&acc);
	acl_info_free(&def);
	free(xr);
	free(label);
	free(target);
	return r;
}
