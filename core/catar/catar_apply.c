/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* catar_apply.c - put an archive entry's metadata on what extract created. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "catar/acl.h"
#include "catar/catar_extract_int.h"
#include "format/feature.h"
#include "base/log.h"
#include "catar/xattr_policy.h"

int ca_ex_fail(struct ex *x, int r, const char *path)
{
	if (r == -EXDEV) {
		ca_log_error("%s%s%s: something is mounted there: not removed", x->dest, *path ? "/" : "", path);
		return r;
	}
	return ca_log_error_errno(r, "%s%s%s", x->dest, *path ? "/" : "", path);
}

mode_t ca_ex_keep_mode(const struct ex *x, const struct ca_catar_node *n, gid_t gid)
{
	mode_t m = (mode_t)(n->mode & 07777);
	bool ids = x->flags & UID_FLAGS;
	if (x->as_root)
		return m;
	if (!ids || n->uid != (uint64_t)x->euid)
		m &= (mode_t)~S_ISUID;
	if (!ids || n->gid != (uint64_t)gid)
		m &= (mode_t)~S_ISGID;
	return m;
}

int ca_ex_skip_uncreatable(struct ex *x, const struct ca_catar_node *n, const char *path, int r)
{
	const char *what = S_ISCHR(n->mode) ? "a character device" : S_ISBLK(n->mode) ? "a block device" :
	                   S_ISFIFO(n->mode) ? "a FIFO" : "a socket";
	ca_log_error_errno(r, "%s%s%s: cannot create %s here, skipped", x->dest, *path ? "/" : "", path, what);
	x->uncreatable++;
	return 0;
}

void ca_ex_warn_once(bool *flag, int r, const char *what)
{
	if (*flag)
		return;
	*flag = true;
	if (r)
		ca_log_warning_errno(r, "cannot restore %s, skipping them", what);
	else
		ca_log_warning("cannot restore %s, skipping them", what);
}

/* "/proc/self/fd/N/name": reaches name in the directory fd without
 * resolving anything but the final component (l* calls don't follow it). */
static void proc_path(char *out, size_t n, int dfd, const char *name)
{
	snprintf(out, n, "/proc/self/fd/%d/%s", dfd, name);
}

/* One ACL xattr: on the node itself (fd), else through its /proc path
 * (follows the final component, as libacl's acl_set_file did; callers
 * never pass a symlink). */
static int set_acl(const struct ex *x, const struct ca_catar_node *n, bool dflt, int fd, const char *ppath)
{
	const char *name = dflt ? CA_ACL_XATTR_DEFAULT : CA_ACL_XATTR_ACCESS;
	uint8_t *v = NULL;
	size_t size = 0;
	int r;
	if (x->o->uid_shift.on) {
		/* --uid-shift: the entries' ids too */
		struct ca_acl a;
		r = ca_acl_from_node(n, dflt, &a);
		for (size_t i = 0; r == 0 && i < a.n_users + a.n_groups; i++) {
			struct ca_acl_entry *e = i < a.n_users ? &a.users[i] : &a.groups[i - a.n_users];
			r = ca_uid_shift_decode(&x->o->uid_shift, e->id, &e->id);
		}
		if (r == 0)
			r = ca_acl_to_xattr(&a, &v, &size);
		ca_acl_release(&a);
	} else {
		r = ca_acl_node_xattr(n, dflt, &v, &size);
	}
	if (r < 0)
		return r;
	if ((fd >= 0 ? fsetxattr(fd, name, v, size, 0) : setxattr(ppath, name, v, size, 0)) < 0)
		r = -errno;
	free(v);
	return r;
}

/* The access ACL (only when it has named entries or a mask: otherwise the
 * mode is the whole story) and, for directories, the default ACL, which
 * an existing directory loses when the archive has none. */
static int apply_acls(struct ex *x, const struct ca_catar_node *n, int fd, const char *ppath, bool fresh)
{
	int r = 0;
	if (!(x->flags & CA_FORMAT_WITH_ACL))
		return 0;
	r = set_acl(x, n, false, fd, ppath);
	if (r == -ENODATA)
		r = 0;
	if (r == 0 && S_ISDIR(n->mode)) {
		r = set_acl(x, n, true, fd, ppath);
		if (r == -ENODATA) {
			r = 0;
			/* as libacl's acl_delete_def_file: none, or no ACLs here, is fine */
			if (!fresh && removexattr(ppath, CA_ACL_XATTR_DEFAULT) < 0 && errno != ENODATA &&
			    errno != ENOTSUP && errno != EOPNOTSUPP)
				r = -errno;
		}
	}
	if (r == -ENOTSUP || r == -EOPNOTSUPP) {
		ca_ex_warn_once(&x->warned_acl, r, "ACLs");
		r = 0;
	}
	return r;
}

/* One attribute the policy refused: a debug line, counted for the one
 * warning at the end (ca_ex_report_skipped). */
static void skip_xattr(struct ex *x, const char *name, const char *why)
{
	const char *path = ca_catar_dec_path(x->dec);
	ca_log_debug("%s%s%s: extended attribute %s skipped: %s", x->dest, *path ? "/" : "", path, name, why);
	x->xattr_skipped++;
	size_t i = 0;
	while (i < EX_SKIP_NAMES && x->skip_names[i] && strcmp(x->skip_names[i], name))
		i++;
	if (i < EX_SKIP_NAMES && !x->skip_names[i])
		x->skip_names[i] = strdup(name); /* NULL (no memory) only shortens the message */
	else if (i == EX_SKIP_NAMES)
		x->skip_more = true;
}

void ca_ex_report_skipped(struct ex *x)
{
	char list[512] = "";
	size_t len = 0;
	if (!x->xattr_skipped)
		return;
	for (size_t i = 0; i < EX_SKIP_NAMES && x->skip_names[i] && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", x->skip_names[i]);
	ca_log_warning("%" PRIu64 " extended attribute%s skipped by policy: %s%s (man cafs: SECURITY)", x->xattr_skipped,
	               x->xattr_skipped == 1 ? "" : "s", list, x->skip_more ? ", ..." : "");
}

static int set_one(int fd, const char *ppath, const char *name, const void *v, size_t size)
{
	return (fd >= 0 ? fsetxattr(fd, name, v, size, 0) : lsetxattr(ppath, name, v, size, 0)) < 0 ? -errno : 0;
}

/* The generic records and the SELinux label, as far as the policy allows. */
static int apply_xattrs(struct ex *x, const struct ca_catar_node *n, int fd, const char *ppath)
{
	struct ca_catar_xattr xa;
	size_t cur = 0;
	const char *why;
	while (ca_catar_node_next_xattr(n, &cur, &xa)) {
		if ((why = ca_xattr_policy_refuses(&x->policy, n->feature_flags, CA_XATTR_RECORD, xa.name))) {
			skip_xattr(x, xa.name, why);
			continue;
		}
		int k = set_one(fd, ppath, xa.name, xa.value, xa.size);
		if (k == -ENOTSUP || k == -EPERM) {
			ca_ex_warn_once(&x->warned_xattr, -k, "extended attributes");
			continue;
		}
		if (k < 0)
			return k;
	}
	if (!n->selinux)
		return 0;
	if ((why = ca_xattr_policy_refuses(&x->policy, n->feature_flags, CA_XATTR_SELINUX, "security.selinux"))) {
		skip_xattr(x, "security.selinux", why);
		return 0;
	}
	int k = set_one(fd, ppath, "security.selinux", n->selinux, strlen(n->selinux) + 1);
	if (k < 0)
		ca_ex_warn_once(&x->warned_selinux, -k, "SELinux labels");
	return 0;
}

void ca_ex_apply_chattr(struct ex *x, const struct ca_catar_node *n, int fd, bool fresh)
{
	unsigned mask = ca_feature_to_chattr(x->flags), want = ca_feature_to_chattr(x->flags & n->flags), cur = 0;
	if (!mask || (fresh && !want))
		return;
	if (ioctl(fd, FS_IOC_GETFLAGS, &cur) < 0) {
		if (want)
			ca_ex_warn_once(&x->warned_chattr, errno, "file attributes (chattr)");
		return;
	}
	unsigned next = (cur & ~mask) | want;
	if (next != cur && ioctl(fd, FS_IOC_SETFLAGS, &next) < 0)
		ca_ex_warn_once(&x->warned_chattr, errno, "file attributes (chattr)");
}

void ca_ex_apply_projid(struct ex *x, const struct ca_catar_node *n, int fd, bool fresh_zero)
{
	struct fsxattr fa;
	if (!(x->flags & CA_FORMAT_WITH_QUOTA_PROJID) || fd < 0 || (fresh_zero && !n->quota_projid))
		return;
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) < 0) {
		if (n->quota_projid)
			ca_ex_warn_once(&x->warned_projid, errno, "quota project ids");
		return;
	}
	if (fa.fsx_projid == n->quota_projid)
		return;
	fa.fsx_projid = (uint32_t)n->quota_projid;
	if (ioctl(fd, FS_IOC_FSSETXATTR, &fa) < 0)
		ca_ex_warn_once(&x->warned_projid, errno, "quota project ids");
}

void ca_ex_node_times(const struct ca_catar_node *n, struct timespec ts[2])
{
	/* the u64 holds a signed count: times before 1970 are negative */
	int64_t t = (int64_t)n->mtime, sec = t / 1000000000, nsec = t % 1000000000;
	if (nsec < 0) {
		nsec += 1000000000;
		sec--;
	}
	ts[0].tv_sec = ts[1].tv_sec = (time_t)sec;
	ts[0].tv_nsec = ts[1].tv_nsec = (long)nsec;
}

/* Owner, mode, xattrs, ACLs, fcaps, times; the same order for every type
 * (chown clears setuid bits and capabilities, so it goes first). fd is the
 * node itself (files, directories) or -1 (use dfd + name). */
/* have_uid/have_gid/have_mode: what the node has now (the chown and chmod
 * are skipped when they match); have_mode (mode_t)-1 when unknown. */
int ca_ex_apply_meta(struct ex *x, const struct ca_catar_node *n, int fd, int dfd, const char *name, bool fresh,
                      uid_t have_uid, gid_t have_gid, mode_t have_mode)
{
	char ppath[64 + 256];
	bool lnk = S_ISLNK(n->mode);
	int r;

	if (fd >= 0)
		snprintf(ppath, sizeof(ppath), "/proc/self/fd/%d", fd);
	else
		proc_path(ppath, sizeof(ppath), dfd, name);

	if (x->flags & UID_FLAGS) {
		if (x->as_root && (n->uid != (uint64_t)have_uid || n->gid != (uint64_t)have_gid)) {
			int k = fd >= 0 ? fchown(fd, (uid_t)n->uid, (gid_t)n->gid)
			                : fchownat(dfd, name, (uid_t)n->uid, (gid_t)n->gid, AT_SYMLINK_NOFOLLOW);
			if (k < 0)
				return -errno;
		} else if (!x->as_root && (n->uid != (uint64_t)x->euid || n->gid != (uint64_t)x->egid)) {
			ca_ex_warn_once(&x->warned_owner, 0, "file owners (not running as root)");
		}
	}
	mode_t keep = ca_ex_keep_mode(x, n, have_gid);
	if (!lnk && (keep != have_mode || (n->mode & 07000))) {
		int k = fd >= 0 ? fchmod(fd, keep) : fchmodat(dfd, name, keep, 0);
		if (k < 0)
			return -errno;
	}
	if (!lnk) {
		r = apply_xattrs(x, n, fd, ppath);
		if (r < 0)
			return r;
		r = apply_acls(x, n, fd, ppath, fresh);
		if (r < 0)
			return r;
	}
	if (n->fcaps && !ca_xattr_policy_refuses(&x->policy, n->feature_flags, CA_XATTR_FCAPS, "security.capability")) {
		int k = fd >= 0 ? fsetxattr(fd, "security.capability", n->fcaps, n->fcaps_size, 0) : -1;
		if (k < 0)
			ca_ex_warn_once(&x->warned_xattr, errno, "file capabilities");
	}
	if (x->flags & TIME_FLAGS) {
		struct timespec ts[2];
		ca_ex_node_times(n, ts);
		int k = fd >= 0 ? futimens(fd, ts) : utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW);
		if (k < 0)
			return -errno;
	}
	return 0;
}

/* Nothing to restore but owner, mode and times. */
bool ca_ex_plain_meta(const struct ex *x, const struct ca_catar_node *n)
{
	struct ca_catar_xattr xa;
	size_t cur = 0;
	if (n->selinux || n->fcaps || ca_catar_node_next_xattr(n, &cur, &xa))
		return false;
	if ((x->flags & CA_FORMAT_WITH_ACL) &&
	    (n->n_acl_user || n->n_acl_group || n->has_acl_group_obj || n->has_acl_default))
		return false;
	if ((x->flags & CA_FORMAT_WITH_QUOTA_PROJID) && n->quota_projid)
		return false;
	return ca_feature_to_chattr(x->flags & n->flags) == 0;
}
