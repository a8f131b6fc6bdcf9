/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_tree_read.c - listing and describing archives (.catar/.caidx): cafs
 * list, cafs mtree, the archive half of cafs digest, casync stat, and the
 * same of a directory's archive stream (the casync front end). The walks
 * are core's (image/tree_walk.h: the streaming decoder for a whole
 * archive, random access for a PATH, the metadata sidecar when there is
 * one); this file prints what they hand over, in casync's formats.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <linux/fs.h>

#include "cmd.h"
#include "format/feature.h"
#include "image/image_make.h"
#include "base/json_out.h"
#include "base/log.h"
#include "image/tree_walk.h"

/* list/mtree --cache and --offline (NULL: no cache) */
struct cache_args {
	const char *dir;
	bool offline;
};

/* sequential: the image will be read whole, front to back (no PATH), so a
 * remote .catar may be streamed from a server that ignores Range */
static int image_open(struct ca_image **ret, const char *path, char **stores, size_t n_stores,
                      const struct cafs_trusted_keys *tk, bool sequential, const struct cache_args *c)
{
	struct ca_image_opts io = { .stores = stores, .n_stores = n_stores, .lru_bytes = CA_TREE_WALK_LRU,
	                            .sequential = sequential };
	cafs_trusted_keys_apply(tk, &io);
	if (c && c->dir) {
		io.cache_mode = CA_CACHE_DIR;
		io.cache_dir = c->dir;
	}
	io.offline = c && c->offline;
	*ret = NULL;
	return ca_image_open(path, &io, ret); /* logs */
}

/* ---- printing: casync's list and mtree formats ---- */

static void format_mode(uint64_t m, char out[11])
{
	switch (m & S_IFMT) {
	case S_IFSOCK: out[0] = 's'; break;
	case S_IFDIR: out[0] = 'd'; break;
	case S_IFBLK: out[0] = 'b'; break;
	case S_IFCHR: out[0] = 'c'; break;
	case S_IFLNK: out[0] = 'l'; break;
	case S_IFIFO: out[0] = 'p'; break;
	default: out[0] = '-';
	}
	out[1] = m & 0400 ? 'r' : '-';
	out[2] = m & 0200 ? 'w' : '-';
	out[3] = (m & S_ISUID) ? (m & 0100 ? 's' : 'S') : (m & 0100 ? 'x' : '-');
	out[4] = m & 0040 ? 'r' : '-';
	out[5] = m & 0020 ? 'w' : '-';
	out[6] = (m & S_ISGID) ? (m & 0010 ? 's' : 'S') : (m & 0010 ? 'x' : '-');
	out[7] = m & 0004 ? 'r' : '-';
	out[8] = m & 0002 ? 'w' : '-';
	out[9] = (S_ISDIR(m) && (m & S_ISVTX)) ? (m & 0001 ? 't' : 'T') : (m & 0001 ? 'x' : '-');
	out[10] = 0;
}

/* mtree(5) escaping as casync does it: octal for space, controls, non-ASCII, '\\' and '#' */
static void put_escaped(const char *s, size_t n, FILE *f)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= ' ' || c >= 127 || c == '\\' || c == '#')
			fprintf(f, "\\%03o", c);
		else
			fputc(c, f);
	}
}

static void put_path(const char *path)
{
	if (!*path)
		fputc('.', stdout);
	else
		put_escaped(path, strlen(path), stdout);
}

struct printer {
	bool mtree, long_format, json;
	const char *digest_label; /* mtree: the contents' digest field's name (--digest) */
};

static const char *user_of(const struct ca_catar_node *n, bool group)
{
	const char *name = group ? n->group_name : n->user_name;
	if (!(n->feature_flags & CA_FORMAT_WITH_USER_NAMES))
		return NULL;
	if (name)
		return name;
	/* root's name is implied when ids are stored (casync does not write it) */
	if ((n->feature_flags & (CA_FORMAT_WITH_16BIT_UIDS | CA_FORMAT_WITH_32BIT_UIDS)) && (group ? n->gid : n->uid) == 0)
		return "root";
	return NULL;
}

/* Everything but a regular file's digest and the line end. */
static void print_node(const struct printer *p, const struct ca_catar_node *n, const char *path)
{
	char mode[11];
	uint64_t f = n->feature_flags, m = n->mode;
	bool ids = f & (CA_FORMAT_WITH_16BIT_UIDS | CA_FORMAT_WITH_32BIT_UIDS);
	bool times = f & (CA_FORMAT_WITH_NSEC_TIME | CA_FORMAT_WITH_USEC_TIME | CA_FORMAT_WITH_SEC_TIME |
	                  CA_FORMAT_WITH_2SEC_TIME);
	const char *user = user_of(n, false), *group = user_of(n, true);

	if (!p->mtree) {
		format_mode(m, mode);
		if (!p->long_format) {
			printf("%s ", mode);
			put_path(path);
			return;
		}
		char when[32] = "-";
		int64_t ns = (int64_t)n->mtime; /* signed: before 1970 is negative */
		time_t t = (time_t)(ns / 1000000000 - (ns % 1000000000 < 0));
		struct tm tm;
		if (times && gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		char owner[64], grp[64];
		if (user)
			snprintf(owner, sizeof(owner), "%s", user);
		else
			snprintf(owner, sizeof(owner), "%" PRIu64, n->uid);
		if (group)
			snprintf(grp, sizeof(grp), "%s", group);
		else
			snprintf(grp, sizeof(grp), "%" PRIu64, n->gid);
		if (S_ISBLK(m) || S_ISCHR(m))
			printf("%s %-8s %-8s %4" PRIu64 ", %4" PRIu64 " %s ", mode, owner, grp, n->device_major,
			       n->device_minor, when);
		else
			printf("%s %-8s %-8s %10" PRIu64 " %s ", mode, owner, grp, S_ISREG(m) ? n->payload_size : 0, when);
		put_path(path);
		if (S_ISLNK(m)) {
			fputs(" -> ", stdout);
			put_escaped(n->symlink_target, strlen(n->symlink_target), stdout);
		}
		return;
	}

	put_path(path);
	printf(" type=%s", S_ISLNK(m) ? "link" : S_ISDIR(m) ? "dir" : S_ISREG(m) ? "file" : S_ISSOCK(m) ? "socket" :
	                   S_ISCHR(m) ? "char" : S_ISBLK(m) ? "block" : "fifo");
	printf(" mode=%04o", (unsigned)(m & 07777));
	if (S_ISREG(m))
		printf(" size=%" PRIu64, n->payload_size);
	if (S_ISLNK(m)) {
		fputs(" link=", stdout);
		put_escaped(n->symlink_target, strlen(n->symlink_target), stdout);
	}
	if (S_ISBLK(m) || S_ISCHR(m))
		printf(" device=linux,%" PRIu64 ",%" PRIu64, n->device_major, n->device_minor);
	if (ids)
		printf(" uid=%" PRIu64 " gid=%" PRIu64, n->uid, n->gid);
	if (user) {
		fputs(" uname=", stdout);
		put_escaped(user, strlen(user), stdout);
	}
	if (group) {
		fputs(" gname=", stdout);
		put_escaped(group, strlen(group), stdout);
	}
	static const struct {
		uint64_t flag;
		const char *name;
	} table[] = {
		{ CA_FORMAT_WITH_FLAG_HIDDEN, "hidden" },   { CA_FORMAT_WITH_FLAG_SYSTEM, "system" },
		{ CA_FORMAT_WITH_FLAG_ARCHIVE, "archive" }, { CA_FORMAT_WITH_FLAG_APPEND, "sappend" },
		{ CA_FORMAT_WITH_FLAG_NODUMP, "nodump" },   { CA_FORMAT_WITH_FLAG_IMMUTABLE, "simmutable" },
	};
	const char *sep = " flags=";
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (!(f & table[i].flag))
			continue;
		/* casync prints every flag as set for nodes that cannot carry
		 * flags (its query fails and yields all bits): reproduced so
		 * the output compares equal; it is not data (reference gotcha 19) */
		bool set = (S_ISREG(m) || S_ISDIR(m)) ? (n->flags & table[i].flag) != 0 : true;
		printf("%s%s%s", sep, set ? "" : "no", table[i].name);
		sep = ",";
	}
	if (times)
		printf(" time=%" PRIu64 ".%09" PRIu64, n->mtime / UINT64_C(1000000000), n->mtime % UINT64_C(1000000000));
}

static void print_digest_end(const struct printer *p, const uint8_t d[CA_CHUNK_ID_SIZE])
{
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	ca_id_to_hex(d, hex);
	printf(" %s=%s\n", p->digest_label, hex);
}

/* list --json: one object per entry and line, every key always there
 * (null when the archive does not carry it; docs/json.md) */
static void print_json(const struct ca_catar_node *n, const char *path)
{
	uint64_t f = n->feature_flags, m = n->mode;
	bool ids = f & (CA_FORMAT_WITH_16BIT_UIDS | CA_FORMAT_WITH_32BIT_UIDS);
	bool times = f & (CA_FORMAT_WITH_NSEC_TIME | CA_FORMAT_WITH_USEC_TIME | CA_FORMAT_WITH_SEC_TIME |
	                  CA_FORMAT_WITH_2SEC_TIME);
	const char *user = user_of(n, false), *group = user_of(n, true);
	putchar('{');
	cafs_json_name("path", *path ? path : ".");
	printf(",\"type\":\"%s\",\"mode\":\"%04o\"",
	       S_ISLNK(m) ? "symlink" : S_ISDIR(m) ? "directory" : S_ISREG(m) ? "file" : S_ISSOCK(m) ? "socket" :
	       S_ISCHR(m) ? "char" : S_ISBLK(m) ? "block" : "fifo", (unsigned)(m & 07777));
	if (S_ISREG(m))
		printf(",\"size\":%" PRIu64, n->payload_size);
	else
		printf(",\"size\":null");
	if (ids)
		printf(",\"uid\":%" PRIu64 ",\"gid\":%" PRIu64, n->uid, n->gid);
	else
		printf(",\"uid\":null,\"gid\":null");
	fputs(",", stdout);
	if (user)
		cafs_json_name("user", user);
	else
		fputs("\"user\":null", stdout);
	fputs(",", stdout);
	if (group)
		cafs_json_name("group", group);
	else
		fputs("\"group\":null", stdout);
	if (times)
		printf(",\"mtime_ns\":%" PRId64, (int64_t)n->mtime);
	else
		printf(",\"mtime_ns\":null");
	fputs(",", stdout);
	if (S_ISLNK(m))
		cafs_json_name("target", n->symlink_target);
	else
		fputs("\"target\":null", stdout);
	if (S_ISBLK(m) || S_ISCHR(m))
		printf(",\"device\":[%" PRIu64 ",%" PRIu64 "]}\n", n->device_major, n->device_minor);
	else
		printf(",\"device\":null}\n");
}

/* One list or mtree line (ca_tree_walk's callback). */
static int print_entry(void *userdata, const struct ca_tree_entry *e)
{
	const struct printer *p = userdata;
	if (p->json) {
		print_json(e->node, e->path);
		return 0;
	}
	print_node(p, e->node, e->path);
	if (e->digest)
		print_digest_end(p, e->digest);
	else
		putchar('\n');
	return 0;
}

/* what list and mtree are asked to do */
struct list_request {
	struct cafs_request base;
	bool mtree;
	char **stores;
	size_t n_stores;
	bool long_format, flat;   /* -l, --recursive=no */
	bool json;                /* list --json */
	const char *digest_label; /* mtree --digest: the contents' field name */
	struct cafs_trusted_keys trusted;
	struct cache_args cache;  /* --cache, --offline */
	const char *in, *sub;
};

static void list_init(struct cafs_request *q)
{
	((struct list_request *)q)->digest_label = "sha512256digest";
}

static void mtree_init(struct cafs_request *q)
{
	list_init(q);
	((struct list_request *)q)->mtree = true;
}

static int list_set(struct cafs_request *q, int id, const char *arg)
{
	struct list_request *l = (struct list_request *)q;
	const char *cmd = l->mtree ? "mtree" : "list";
	enum ca_digest_type label;
	switch (id) {
	case CAFS_OPT_STORE: {
		char **ns = realloc(l->stores, (l->n_stores + 1) * sizeof(char *));
		if (!ns)
			return ca_log_error_errno(ENOMEM, "%s", cmd), 1;
		l->stores = ns;
		l->stores[l->n_stores++] = (char *)arg;
		return 0;
	}
	case CAFS_OPT_LONG:
		l->long_format = true;
		return 0;
	case CAFS_OPT_JSON:
		if (l->mtree)
			return cafs_usage_error(cmd, "--json is for list");
		l->json = true;
		return 0;
	case CAFS_OPT_CACHE:
		l->cache.dir = arg;
		return 0;
	case CAFS_OPT_OFFLINE:
		l->cache.offline = true;
		return 0;
	case CAFS_OPT_RECURSIVE:
		/* list only: mtree has no such option (casync ignores it there) */
		if (l->mtree || (strcmp(arg, "yes") && strcmp(arg, "no")))
			return cafs_usage_error(cmd, l->mtree ? "--recursive is for list" : "expected yes or no, got '%s'",
			                        arg);
		l->flat = !strcmp(arg, "no");
		return 0;
	case CAFS_TRUST_OPTION_IDS:
		return cafs_trust_option(cmd, id, arg, &l->trusted);
	case CAFS_OPT_DIGEST:
		/* casync names the field after --digest, whatever
		 * digest the archive's contents are hashed with */
		if (!l->mtree || ca_digest_type_parse(arg, &label) < 0)
			return cafs_usage_error(cmd, l->mtree ? "unknown digest '%s'" : "--digest is for mtree", arg);
		l->digest_label = label == CA_DIGEST_SHA256 ? "sha256digest" : "sha512256digest";
		return 0;
	default:
		return 0;
	}
}

static int list_operands(struct cafs_request *q, int n, char **arg)
{
	struct list_request *l = (struct list_request *)q;
	if (n < 1 || n > 2)
		return cafs_usage_error(l->mtree ? "mtree" : "list", "expected IN.catar|IN.caidx [PATH]");
	l->in = arg[0];
	l->sub = n == 2 ? arg[1] : NULL;
	return 0;
}

static void list_release(struct cafs_request *q)
{
	struct list_request *l = (struct list_request *)q;
	cafs_trusted_keys_release(&l->trusted);
	free(l->stores);
}

static int list_run(struct cafs_request *q)
{
	struct list_request *l = (struct list_request *)q;
	const char *cmd = l->mtree ? "mtree" : "list", *in = l->in, *sub = l->sub;
	struct printer p = { .mtree = l->mtree, .digest_label = l->digest_label, .long_format = l->long_format,
		             .json = l->json };
	/* casync hashes contents with the archive's digest, and labels the
	 * field after --digest (sha512256digest by default) */
	struct ca_tree_walk_opts o = { .path = sub, .flat = l->flat, .digests = l->mtree };
	struct ca_image *im = NULL;
	int r;

	enum ca_image_kind k = ca_location_image_kind(in);
	if (k != CA_IMAGE_ARCHIVE && k != CA_IMAGE_ARCHIVE_INDEX)
		return cafs_usage_error(cmd, "%s: input must end in .catar or .caidx", in);
	r = image_open(&im, in, l->stores, l->n_stores, &l->trusted, !sub, &l->cache);
	if (r == 0)
		r = ca_tree_walk(im, &o, print_entry, &p); /* logs */
	ca_image_free(im);
	if (fflush(stdout) != 0 && r >= 0)
		r = ca_log_error_errno(EIO, "stdout");
	return r < 0 ? 1 : 0;
}

/* ---- stat: one entry, in casync stat's format ---- */

static void print_stat(const struct ca_catar_node *n, const char *path, const uint8_t *digest, const uint8_t *hl)
{
	static const struct {
		unsigned flag;
		char code;
	} chattr[] = {
		{ FS_SYNC_FL, 'S' },  { FS_DIRSYNC_FL, 'D' }, { FS_IMMUTABLE_FL, 'i' }, { FS_APPEND_FL, 'a' },
		{ FS_NODUMP_FL, 'd' }, { FS_NOATIME_FL, 'A' }, { FS_COMPR_FL, 'c' },     { FS_NOCOMP_FL, 'N' },
		{ FS_NOCOW_FL, 'C' },  { FS_PROJINHERIT_FL, 'P' },
	};
	static const struct {
		uint64_t flag;
		char code;
	} fat[] = {
		{ CA_FORMAT_WITH_FLAG_HIDDEN, 'h' }, { CA_FORMAT_WITH_FLAG_SYSTEM, 's' }, { CA_FORMAT_WITH_FLAG_ARCHIVE, 'a' },
	};
	uint64_t f = n->feature_flags, m = n->mode;
	const char *user = user_of(n, false), *group = user_of(n, true);
	bool ids = f & (CA_FORMAT_WITH_16BIT_UIDS | CA_FORMAT_WITH_32BIT_UIDS);
	char mode[11];

	format_mode(m, mode);
	fputs("    File: ", stdout);
	put_path(path);
	printf("\n    Mode: %s\n", mode);
	/* casync shows the attributes of files and directories, all bits
	 * clear for features the archive does not carry */
	if (S_ISREG(m) || S_ISDIR(m)) {
		unsigned k = ca_feature_to_chattr(n->flags & f);
		fputs("FileAttr: ", stdout);
		for (size_t i = 0; i < sizeof(chattr) / sizeof(chattr[0]); i++)
			putchar(k & chattr[i].flag ? chattr[i].code : '-');
		fputs("\n FATAttr: ", stdout);
		for (size_t i = 0; i < sizeof(fat) / sizeof(fat[0]); i++)
			putchar(n->flags & f & fat[i].flag ? fat[i].code : '-');
		putchar('\n');
	}
	printf("  Offset: %" PRIu64 "\n", n->entry_offset);
	if (f & (CA_FORMAT_WITH_NSEC_TIME | CA_FORMAT_WITH_USEC_TIME | CA_FORMAT_WITH_SEC_TIME | CA_FORMAT_WITH_2SEC_TIME)) {
		time_t t = (time_t)(n->mtime / UINT64_C(1000000000));
		struct tm tm;
		char d[128];
		/* local time, as casync */
		if (localtime_r(&t, &tm) && strftime(d, sizeof(d), "%Y-%m-%d %H:%M:%S", &tm) > 0)
			printf("    Time: %s.%09" PRIu64 "\n", d, n->mtime % UINT64_C(1000000000));
	}
	if (S_ISREG(m))
		printf("    Size: %" PRIu64 "\n", n->payload_size);
	for (int g = 0; g < 2; g++) {
		const char *name = g ? group : user;
		if (!ids && !name)
			continue;
		fputs(g ? "   Group: " : "    User: ", stdout);
		if (name)
			put_escaped(name, strlen(name), stdout);
		if (ids && name)
			printf(" (%" PRIu64 ")\n", g ? n->gid : n->uid);
		else if (ids)
			printf("%" PRIu64 "\n", g ? n->gid : n->uid);
		else
			putchar('\n');
	}
	/* the record is there only for a non-zero id */
	if ((f & CA_FORMAT_WITH_QUOTA_PROJID) && n->quota_projid)
		printf("  ProjID: %" PRIu64 "\n", n->quota_projid);
	if (S_ISLNK(m)) {
		fputs("  Target: ", stdout);
		put_escaped(n->symlink_target, strlen(n->symlink_target), stdout);
		putchar('\n');
	}
	if (S_ISBLK(m) || S_ISCHR(m))
		printf("  Device: %" PRIu64 ":%" PRIu64 "\n", n->device_major, n->device_minor);
	size_t cursor = 0;
	struct ca_catar_xattr x;
	while (ca_catar_node_next_xattr(n, &cursor, &x)) {
		fputs("   XAttr: ", stdout);
		put_escaped(x.name, strlen(x.name), stdout);
		fputs(" \u2192 ", stdout);
		put_escaped((const char *)x.value, x.size, stdout);
		putchar('\n');
	}
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	if (digest) {
		ca_id_to_hex(digest, hex);
		printf("  Digest: %s\n", hex);
	}
	if (hl) {
		ca_id_to_hex(hl, hex);
		printf("HLDigest: %s\n", hex);
	}
}

static int print_stat_entry(void *userdata, const struct ca_tree_entry *e)
{
	(void)userdata;
	print_stat(e->node, e->path, e->digest, e->hl_digest);
	return 0;
}

int cafs_stat_archive(const char *in, char **stores, size_t n_stores, const char *sub,
                      const struct cafs_trusted_keys *tk)
{
	struct ca_image *im = NULL;
	int r = image_open(&im, in, stores, n_stores, tk, false, NULL);
	if (r == 0)
		r = ca_tree_stat(im, sub, print_stat_entry, NULL); /* logs */
	if (r == 0 && fflush(stdout) != 0)
		r = ca_log_error_errno(EIO, "stdout");
	ca_image_free(im);
	return r < 0 ? 1 : 0;
}

int cafs_digest_archive(const char *path, char **stores, size_t n_stores, const char *sub,
                        const struct cafs_trusted_keys *tk)
{
	struct ca_image *im = NULL;
	uint8_t out[CA_CHUNK_ID_SIZE];
	int r = image_open(&im, path, stores, n_stores, tk, !(sub && *sub), NULL);
	if (r == 0)
		r = ca_tree_digest(im, sub, out); /* logs */
	if (r == 0)
		cafs_print_digest(out);
	ca_image_free(im);
	return r < 0 ? 1 : 0;
}

/* ---- list, mtree and stat of a directory: its archive stream, unwritten ---- */

/* stat of the root: the first entry, and the walk stops there */
static int print_root_stat(void *userdata, const struct ca_tree_entry *e)
{
	(void)userdata;
	print_stat(e->node, "", NULL, NULL);
	return 1;
}

int cafs_tree_read_dir(const char *verb, const char *dir, const struct ca_image_make_opts *mo, bool flat,
                       const char *digest_label)
{
	struct ca_image_dir_stream *ds = NULL;
	struct ca_catar_source s;
	struct printer p = { .mtree = !strcmp(verb, "mtree"),
	                     .digest_label = digest_label ? digest_label : "sha512256digest" };
	struct ca_tree_walk_opts o = { .flat = flat, .digests = p.mtree };
	int r = ca_image_dir_stream_open(dir, mo, &ds, &s); /* logs */
	if (r < 0)
		return 1;
	if (!strcmp(verb, "stat")) {
		r = ca_tree_walk_stream(&s, mo->digest, NULL, print_root_stat, NULL);
		r = r == 1 ? 0 : r == 0 ? -EBADMSG : r; /* the root is always there */
	} else {
		r = ca_tree_walk_stream(&s, mo->digest, &o, print_entry, &p);
	}
	r = ca_image_dir_stream_close(ds, r); /* says why the stream ended early */
	if (r == 0 && fflush(stdout) != 0)
		r = ca_log_error_errno(EIO, "stdout");
	return r < 0 ? 1 : 0;
}

/* ---- the commands' options and help ---- */

static const struct cafs_option list_options[] = {
	{ "store", 's', "DIR|URL", CAFS_OPT_STORE,
	  .help = "chunk store (repeatable; default: default.castr beside IN)" },
	{ "long", 'l', NULL, CAFS_OPT_LONG,
	  .help = "owner, size and time too" },
	{ "recursive", 0, "no", CAFS_OPT_RECURSIVE,
	  .help = "only the top (IN's root or PATH) and its entries" },
	CAFS_OPTIONS_TRUST,
	{ "cache", 0, "DIR", CAFS_OPT_CACHE,
	  .help = "keep fetched chunks and a URL's index here, and use them" },
	{ "offline", 0, NULL, CAFS_OPT_OFFLINE,
	  .help = "only the cache: nothing is downloaded" },
	{ "json", 0, NULL, CAFS_OPT_JSON,
	  .help = "one JSON object per entry and line (docs/json.md)" },
	{ "digest", 0, "NAME", .id = CAFS_OPT_DIGEST }, /* mtree's: refused by name */
	{ NULL },
};

const struct cafs_command cafs_command_list = {
	.name = "list",
	.synopsis = "list [OPTIONS] IN.catar|IN.caidx [PATH]",
	.options = list_options,
	.help_column = 26,
	.help_tail = "Prints 'MODE PATH' per entry, as casync list does. With PATH only that\n"
	  "subtree, found by random access (only the chunks on the way are read).\n",
	.request_size = sizeof(struct list_request),
	.init = list_init,
	.set = list_set,
	.operands = list_operands,
	.run = list_run,
	.release = list_release,
};

static const struct cafs_option mtree_options[] = {
	{ "store", 's', "DIR|URL", CAFS_OPT_STORE,
	  .help = "chunk store (repeatable; default: default.castr beside IN)" },
	{ "long", 0, NULL, CAFS_OPT_LONG,
	  .help = "accepted, as for list; has no effect (no short form here)" },
	CAFS_OPTIONS_TRUST,
	{ "cache", 0, "DIR", CAFS_OPT_CACHE,
	  .help = "keep fetched chunks and a URL's index here, and use them" },
	{ "offline", 0, NULL, CAFS_OPT_OFFLINE,
	  .help = "only the cache: nothing is downloaded" },
	{ "digest", 0, "NAME", CAFS_OPT_DIGEST,
	  .help = "name the contents' digest field after NAME (sha256:\n"
	  "sha256digest), as casync does; the digest is the archive's" },
	{ "recursive", 0, "no", .id = CAFS_OPT_RECURSIVE }, /* list's: refused by name */
	{ NULL },
};

const struct cafs_command cafs_command_mtree = {
	.name = "mtree",
	.synopsis = "mtree [OPTIONS] IN.catar|IN.caidx [PATH]",
	.options = mtree_options,
	.help_column = 26,
	.help_tail = "Prints the tree in BSD mtree(5) format, as casync mtree does.\n",
	.request_size = sizeof(struct list_request),
	.init = mtree_init,
	.set = list_set,
	.operands = list_operands,
	.run = list_run,
	.release = list_release,
};

