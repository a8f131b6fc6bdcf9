/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_tree_read.c - listing and describing archives (.catar/.caidx): cafs
 * list, cafs mtree, and the archive half of cafs digest (extract is
 * core/image/image_extract.c, called by cmd_blob.c). All read through the core's
 * archive reader.
 *
 * Whole-archive walks go through the streaming decoder (which validates
 * everything); `list`/`mtree` with a PATH use random access, so only the
 * bytes (chunks) on the way to PATH and under it are read.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>

#include "image/archive_reader.h"
#include "catar/catar_dec.h"
#include "cmd.h"
#include "format/feature.h"
#include "image/image_make.h"
#include "base/log.h"
#include "image/sidecar.h"

/* An opened archive image and its reader (core/image/archive_reader.h). */
struct archive {
	struct ca_image *im;
	struct ca_archive_reader *rd;
	const char *path; /* as given, for messages */
};

/* list/mtree --cache and --offline (NULL: no cache) */
struct cache_args {
	const char *dir;
	bool offline;
};

/* sequential: only the stream source will read (no PATH), so a remote
 * .catar may be streamed from a server that ignores Range */
static int archive_open_cached(struct archive *a, const char *path, char **stores, size_t n_stores,
                               const struct cafs_trusted_keys *tk, bool no_readahead, bool sequential,
                               const struct cache_args *c)
{
	struct ca_image_opts io = { .stores = stores, .n_stores = n_stores, .lru_bytes = CA_ARCHIVE_READER_LRU,
	                            .sequential = sequential };
	cafs_trusted_keys_apply(tk, &io);
	if (c && c->dir) {
		io.cache_mode = CA_CACHE_DIR;
		io.cache_dir = c->dir;
	}
	io.offline = c && c->offline;
	struct ca_archive_reader_opts ro = { .no_readahead = no_readahead };
	*a = (struct archive){ .path = path };
	int r = ca_image_open(path, &io, &a->im); /* logs */
	if (r == 0 && (r = ca_archive_reader_new(a->im, &ro, &a->rd)) < 0)
		ca_log_error_errno(r, "%s", path);
	return r;
}

static int archive_open(struct archive *a, const char *path, char **stores, size_t n_stores,
                        const struct cafs_trusted_keys *tk, bool no_readahead, bool sequential)
{
	return archive_open_cached(a, path, stores, n_stores, tk, no_readahead, sequential, NULL);
}

static void archive_close(struct archive *a)
{
	/* a fetch stuck after an interrupt still uses the image: the exit frees it */
	if (ca_archive_reader_free(a->rd) == 0)
		ca_image_free(a->im);
}

static int report(const struct archive *a, int r, const char *path)
{
	return ca_archive_reader_report(a->rd, r, path);
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
	bool mtree, long_format;
	bool flat; /* list --recursive=no: the top and its entries, as casync */
	struct ca_digest *digest; /* mtree: file content digests */
	const char *digest_label;  /* mtree: the field's name (--digest) */
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

/* ---- list/mtree over the whole archive: the streaming decoder ---- */

/* An archive's error, logged; for a directory's stream (a == NULL), left
 * to cafs_tree_read_dir, which knows whether its encoder said why. */
static int walk_report(struct archive *a, int r, const char *path)
{
	return a ? report(a, r, path) : r;
}

/* The walk over s; a: the archive it reads, NULL for a directory's stream */
static int walk_source(struct archive *a, const struct ca_catar_source *src, const struct printer *p)
{
	struct ca_catar_dec *d = NULL;
	const struct ca_catar_source s = *src;
	uint8_t *buf = NULL;
	int r = ca_catar_dec_new(&s, &d);
	if (r < 0)
		return walk_report(a, r, NULL);
	if (p->mtree && !(buf = malloc(1 << 20))) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		const struct ca_catar_node *n;
		r = ca_catar_dec_next(d, &n);
		if (r < 0) {
			walk_report(a, r, ca_catar_dec_path(d));
			goto out;
		}
		if (r == CA_CATAR_DEC_DONE)
			break;
		if (r != CA_CATAR_DEC_NODE)
			continue;
		/* list skips payloads anyway: below the top level, just go on */
		if (p->flat && strchr(ca_catar_dec_path(d), '/'))
			continue;
		print_node(p, n, ca_catar_dec_path(d));
		if (!p->mtree || !S_ISREG(n->mode)) {
			putchar('\n');
			continue;
		}
		ssize_t k;
		while ((k = ca_catar_dec_read_payload(d, buf, 1 << 20)) > 0)
			ca_digest_update(p->digest, buf, (size_t)k);
		if (k < 0) {
			putchar('\n');
			r = (int)k;
			walk_report(a, r, ca_catar_dec_path(d));
			goto out;
		}
		uint8_t out[CA_CHUNK_ID_SIZE];
		ca_digest_final(p->digest, out);
		print_digest_end(p, out);
	}
	r = 0;
out:
	free(buf);
	ca_catar_dec_free(d);
	return r;
}

static int walk_stream(struct archive *a, const struct printer *p)
{
	struct ca_catar_source s;
	ca_archive_reader_stream(a->rd, &s);
	return walk_source(a, &s, p);
}

/* ---- list/mtree of a subtree: random access ---- */

struct ra_walk {
	struct archive *a;
	struct ca_catar_ra *ra;         /* NULL: walking the metadata sidecar */
	const struct ca_sidecar *sc;
	struct ca_catar_source src;     /* sidecar walks read payloads here */
	const struct printer *p;
	char *path;
	size_t len, cap;
	uint8_t *buf;
};

/* Up to 1 MiB of a file's content at off into w->buf. */
static ssize_t payload_read(struct ra_walk *w, const struct ca_catar_node *n, uint64_t off)
{
	if (w->ra)
		return ca_catar_ra_read(w->ra, n, w->buf, 1 << 20, off);
	size_t len = n->payload_size - off < (1u << 20) ? (size_t)(n->payload_size - off) : (1u << 20);
	return w->src.read(w->src.userdata, w->buf, len, n->payload_offset + off);
}

static int ra_print(struct ra_walk *w, const struct ca_catar_node *n)
{
	print_node(w->p, n, w->path);
	if (!w->p->mtree || !S_ISREG(n->mode)) {
		putchar('\n');
		return 0;
	}
	uint64_t off = 0;
	while (off < n->payload_size) {
		ssize_t k = payload_read(w, n, off);
		if (k <= 0) {
			putchar('\n');
			return k < 0 ? (int)k : -EBADMSG;
		}
		ca_digest_update(w->p->digest, w->buf, (size_t)k);
		off += (uint64_t)k;
	}
	uint8_t out[CA_CHUNK_ID_SIZE];
	ca_digest_final(w->p->digest, out);
	print_digest_end(w->p, out);
	return 0;
}

static int path_push(struct ra_walk *w, const char *name)
{
	size_t n = strlen(name), need = w->len + 1 + n + 1;
	if (need > w->cap) {
		size_t c = w->cap ? w->cap : 256;
		while (c < need)
			c *= 2;
		char *np = realloc(w->path, c);
		if (!np)
			return -ENOMEM;
		w->path = np;
		w->cap = c;
	}
	if (w->len)
		w->path[w->len++] = '/';
	memcpy(w->path + w->len, name, n + 1);
	w->len += n;
	return 0;
}

/* w->path = sub as casync prints it: components joined by single slashes */
static int path_set(struct ra_walk *w, const char *sub)
{
	int r;
	for (const char *q = sub; *q;) {
		q += strspn(q, "/");
		size_t l = strcspn(q, "/");
		if (l == 0)
			break;
		if (!(l == 1 && q[0] == '.')) {
			char comp[CA_FORMAT_NAME_MAX + 1];
			snprintf(comp, sizeof(comp), "%.*s", (int)l, q);
			r = path_push(w, comp);
			if (r < 0)
				return r;
		}
		q += l;
	}
	return w->path ? 0 : path_push(w, "");
}

static int ra_walk_dir(struct ra_walk *w, const struct ca_catar_node *dir, unsigned depth)
{
	struct ca_catar_child *c = NULL;
	size_t n = 0;
	int r;
	if (depth > CA_CATAR_DEPTH_MAX)
		return -EBADMSG;
	r = ca_catar_ra_list(w->ra, dir, &c, &n);
	if (r < 0)
		return r;
	ca_catar_ra_prefetch_children(w->ra, c, n);
	for (size_t i = 0; i < n; i++) {
		struct ca_catar_ra_node *child;
		size_t saved = w->len;
		r = ca_catar_ra_load_child(w->ra, &c[i], &child);
		if (r < 0)
			break;
		const struct ca_catar_node *cn = ca_catar_ra_node_get(child);
		r = path_push(w, cn->name);
		if (r == 0)
			r = ra_print(w, cn);
		if (r == 0 && S_ISDIR(cn->mode) && !w->p->flat)
			r = ra_walk_dir(w, cn, depth + 1);
		ca_catar_ra_node_unref(child);
		w->len = saved;
		w->path[w->len] = 0;
		if (r < 0)
			break;
	}
	free(c);
	return r;
}

static int walk_subtree(struct archive *a, const struct printer *p, const char *sub)
{
	struct ra_walk w = { .a = a, .p = p };
	struct ca_catar_ra_node *node = NULL;
	struct ca_catar_source s;
	ca_archive_reader_random(a->rd, &s);
	int r = ca_catar_ra_open(&s, &w.ra);
	if (r < 0)
		return report(a, r, NULL);
	w.buf = malloc(1 << 20);
	if (!w.buf) {
		r = report(a, -ENOMEM, NULL);
		goto out;
	}
	r = ca_catar_ra_lookup_path(w.ra, sub, &node);
	if (r == -ENOENT || r == -ENOTDIR || r == -EINVAL) {
		ca_log_error("%s: %s: not in the archive", a->path, sub);
		goto out;
	}
	if (r < 0) {
		report(a, r, sub);
		goto out;
	}
	r = path_set(&w, sub);
	if (r < 0)
		goto out;
	const struct ca_catar_node *n = ca_catar_ra_node_get(node);
	r = ra_print(&w, n);
	if (r == 0 && S_ISDIR(n->mode))
		r = ra_walk_dir(&w, n, 0);
	if (r < 0)
		report(a, r, w.path);
out:
	ca_catar_ra_node_unref(node);
	ca_catar_ra_free(w.ra);
	free(w.buf);
	free(w.path);
	return r;
}

/* ---- list/mtree from the metadata sidecar: no chunk but mtree's payloads ---- */

static int sc_walk_dir(struct ra_walk *w, size_t dir, unsigned depth)
{
	int r = 0;
	if (depth > CA_CATAR_DEPTH_MAX)
		return -EBADMSG;
	for (size_t i = 0; r == 0 && i < ca_sidecar_n_children(w->sc, dir); i++) {
		size_t c = ca_sidecar_child(w->sc, dir, i), saved = w->len;
		struct ca_catar_node cn;
		ca_sidecar_node(w->sc, c, &cn);
		r = path_push(w, cn.name);
		if (r == 0)
			r = ra_print(w, &cn);
		if (r == 0 && S_ISDIR(cn.mode) && !w->p->flat)
			r = sc_walk_dir(w, c, depth + 1);
		w->len = saved;
		w->path[w->len] = 0;
	}
	return r;
}

static int walk_sidecar(struct archive *a, const struct printer *p, const char *sub)
{
	struct ra_walk w = { .a = a, .p = p, .sc = ca_image_sidecar(a->im) };
	struct ca_catar_node n;
	size_t i;
	ca_archive_reader_random(a->rd, &w.src);
	int r = ca_sidecar_lookup_path(w.sc, sub, &i);
	if (r == -ENOENT || r == -ENOTDIR || r == -EINVAL) {
		ca_log_error("%s: %s: not in the archive", a->path, sub);
		return r;
	}
	w.buf = malloc(1 << 20);
	r = w.buf ? path_set(&w, sub) : -ENOMEM;
	if (r == 0) {
		ca_sidecar_node(w.sc, i, &n);
		r = ra_print(&w, &n);
	}
	if (r == 0 && S_ISDIR(n.mode))
		r = sc_walk_dir(&w, i, 0);
	if (r < 0)
		report(a, r, w.path);
	free(w.buf);
	free(w.path);
	return r;
}

/* what list and mtree are asked to do */
struct list_request {
	struct cafs_request base;
	bool mtree;
	char **stores;
	size_t n_stores;
	bool long_format, flat;   /* -l, --recursive=no */
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
	case CAFS_OPT_ALLOW_DOWNGRADE:
	case CAFS_OPT_SIGNED_NAME:
		return cafs_trust_policy_option(cmd, id, arg, &l->trusted);
	case CAFS_OPT_TRUSTED_KEY:
		return cafs_trusted_key_add(cmd, &l->trusted, arg);
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
	bool mtree = l->mtree;
	struct printer p = { .mtree = mtree, .digest_label = l->digest_label, .long_format = l->long_format,
		             .flat = l->flat };
	struct cache_args ca = l->cache;
	struct archive a = { 0 };
	int r;

	enum ca_image_kind k = ca_location_image_kind(in);
	if (k != CA_IMAGE_ARCHIVE && k != CA_IMAGE_ARCHIVE_INDEX)
		return cafs_usage_error(cmd, "%s: input must end in .catar or .caidx", in);
	/* list skips payloads: fetching them ahead would be waste */
	r = archive_open_cached(&a, in, l->stores, l->n_stores, &l->trusted, !mtree, !sub, &ca);
	if (r == 0 && mtree)
		/* casync hashes contents with the archive's digest, and labels
		 * the field after --digest (sha512256digest by default) */
		r = ca_digest_new(ca_digest_type_from_flags(ca_image_feature_flags(a.im)), &p.digest);
	if (r == 0 && ca_image_sidecar(a.im))
		r = walk_sidecar(&a, &p, sub ? sub : "");
	else if (r == 0)
		r = sub ? walk_subtree(&a, &p, sub) : walk_stream(&a, &p);
	ca_digest_free(p.digest);
	archive_close(&a);
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

/* casync's "hardlink digest" of a non-directory: its serialization from
 * ENTRY through the PAYLOAD/SYMLINK/DEVICE header, then its contents (what
 * two hardlinked copies share); the content alone is the payload digest. */
static int stat_digests(struct ra_walk *w, const struct ca_catar_source *s, const struct ca_catar_node *n,
                        uint8_t payload[CA_CHUNK_ID_SIZE], uint8_t hl[CA_CHUNK_ID_SIZE])
{
	enum ca_digest_type t = ca_digest_type_from_flags(n->feature_flags);
	struct ca_digest *dp = NULL, *dh = NULL;
	uint64_t off = 0;
	int r;
	w->buf = malloc(1 << 20);
	r = w->buf ? 0 : -ENOMEM;
	if (r == 0)
		r = ca_digest_new(t, &dp);
	if (r == 0)
		r = ca_digest_new(t, &dh);
	while (r == 0 && off < n->meta_size) {
		size_t want = n->meta_size - off < (1 << 20) ? (size_t)(n->meta_size - off) : (size_t)1 << 20;
		ssize_t k = s->read(s->userdata, w->buf, want, n->entry_offset + off);
		if (k <= 0)
			r = k < 0 ? (int)k : -EBADMSG;
		else if ((r = ca_digest_update(dh, w->buf, (size_t)k)) == 0)
			off += (uint64_t)k;
	}
	for (off = 0; r == 0 && S_ISREG(n->mode) && off < n->payload_size;) {
		ssize_t k = ca_catar_ra_read(w->ra, n, w->buf, 1 << 20, off);
		if (k <= 0)
			r = k < 0 ? (int)k : -EBADMSG;
		else if ((r = ca_digest_update(dp, w->buf, (size_t)k)) == 0 &&
		         (r = ca_digest_update(dh, w->buf, (size_t)k)) == 0)
			off += (uint64_t)k;
	}
	if (r == 0)
		r = ca_digest_final(dp, payload);
	if (r == 0)
		r = ca_digest_final(dh, hl);
	ca_digest_free(dp);
	ca_digest_free(dh);
	return r;
}

int cafs_stat_archive(const char *in, char **stores, size_t n_stores, const char *sub,
                      const struct cafs_trusted_keys *tk)
{
	struct archive a;
	struct ra_walk w = { 0 };
	struct ca_catar_ra_node *node = NULL;
	struct ca_catar_source s;
	uint8_t digest[CA_CHUNK_ID_SIZE], hl[CA_CHUNK_ID_SIZE];
	int r = archive_open(&a, in, stores, n_stores, tk, true, false);
	if (r < 0)
		goto out;
	w.a = &a;
	ca_archive_reader_random(a.rd, &s);
	r = ca_catar_ra_open(&s, &w.ra);
	if (r < 0) {
		report(&a, r, NULL);
		goto out;
	}
	r = path_set(&w, sub ? sub : "");
	if (r == 0)
		r = ca_catar_ra_lookup_path(w.ra, w.path, &node);
	if (r == -ENOENT || r == -ENOTDIR || r == -EINVAL) {
		ca_log_error("%s: %s: not in the archive", in, w.path);
		goto out;
	}
	if (r < 0) {
		report(&a, r, w.path);
		goto out;
	}
	const struct ca_catar_node *n = ca_catar_ra_node_get(node);
	if (!S_ISDIR(n->mode)) {
		r = stat_digests(&w, &s, n, digest, hl);
		if (r < 0) {
			report(&a, r, w.path);
			goto out;
		}
	}
	/* casync has a payload digest for regular files only */
	print_stat(n, w.path, S_ISREG(n->mode) ? digest : NULL, S_ISDIR(n->mode) ? NULL : hl);
	if (fflush(stdout) != 0)
		r = ca_log_error_errno(EIO, "stdout");
out:
	ca_catar_ra_node_unref(node);
	ca_catar_ra_free(w.ra);
	free(w.buf);
	free(w.path);
	if (a.im)
		archive_close(&a);
	return r < 0 ? 1 : 0;
}

/* digest IN PATH of a file: its contents' digest, as casync's payload digest */
static int digest_payload(struct archive *a, const char *sub, uint8_t ret[CA_CHUNK_ID_SIZE])
{
	struct ra_walk w = { .a = a };
	struct ca_catar_ra_node *node = NULL;
	struct ca_catar_source s;
	uint8_t hl[CA_CHUNK_ID_SIZE];
	int r;
	ca_archive_reader_random(a->rd, &s);
	r = ca_catar_ra_open(&s, &w.ra);
	if (r == 0)
		r = path_set(&w, sub);
	if (r == 0)
		r = ca_catar_ra_lookup_path(w.ra, w.path, &node);
	if (r == -ENOENT || r == -ENOTDIR || r == -EINVAL) {
		ca_log_error("%s: %s: not in the archive", a->path, w.path ? w.path : sub);
		r = -ENOENT;
	} else if (r < 0) {
		report(a, r, w.path);
	} else if (S_ISDIR(ca_catar_ra_node_get(node)->mode)) {
		r = 1; /* a directory: the digest of its stream, by the caller */
	} else if (!S_ISREG(ca_catar_ra_node_get(node)->mode)) {
		r = ca_log_error_errno(ENOTTY, "%s: %s: not a file or directory", a->path, w.path);
	} else if ((r = stat_digests(&w, &s, ca_catar_ra_node_get(node), ret, hl)) < 0) {
		report(a, r, w.path);
	}
	ca_catar_ra_node_unref(node);
	ca_catar_ra_free(w.ra);
	free(w.buf);
	free(w.path);
	return r;
}

int cafs_digest_archive(const char *path, char **stores, size_t n_stores, const char *sub,
                        const struct cafs_trusted_keys *tk)
{
	struct archive a;
	struct ca_catar_dec *d = NULL;
	uint8_t out[CA_CHUNK_ID_SIZE], *buf = NULL;
	struct ca_catar_source s;
	int r = archive_open(&a, path, stores, n_stores, tk, false, !(sub && *sub));
	if (r < 0)
		goto out;
	if (sub && *sub) {
		/* casync: a file's contents, or the stream of a directory */
		r = digest_payload(&a, sub, out);
		if (r == 0)
			cafs_print_digest(out);
		if (r <= 0)
			goto out;
		r = ca_archive_reader_subtree(a.rd, sub, &s); /* logs */
		if (r < 0)
			goto out;
	} else {
		ca_archive_reader_stream(a.rd, &s);
	}
	r = ca_archive_reader_digest_start(a.rd, ca_digest_type_from_flags(ca_image_feature_flags(a.im)));
	if (r < 0) {
		report(&a, r, NULL);
		goto out;
	}
	buf = malloc(1 << 20);
	if (!buf || (r = ca_catar_dec_new(&s, &d)) < 0) {
		r = report(&a, buf ? r : -ENOMEM, NULL);
		goto out;
	}
	for (;;) {
		r = ca_catar_dec_next(d, NULL);
		if (r <= 0)
			break;
		ssize_t k;
		while ((k = ca_catar_dec_read_payload(d, buf, 1 << 20)) > 0)
			;
		if (k < 0 && k != -EINVAL) { /* -EINVAL: not a regular file */
			r = (int)k;
			break;
		}
	}
	/* the stream skipped no byte (-EIO if it did) */
	if (r == 0)
		r = ca_archive_reader_digest_finish(a.rd, out);
	if (r < 0) {
		report(&a, r, ca_catar_dec_path(d));
		goto out;
	}
	cafs_print_digest(out);
out:
	free(buf);
	ca_catar_dec_free(d);
	archive_close(&a);
	return r < 0 ? 1 : 0;
}

/* ---- list, mtree and stat of a directory: its archive stream, unwritten ---- */

/* stat of the root: its ENTRY, the first event */
static int stat_root(const struct ca_catar_source *s)
{
	struct ca_catar_dec *d = NULL;
	const struct ca_catar_node *n;
	int r = ca_catar_dec_new(s, &d);
	if (r == 0)
		r = ca_catar_dec_next(d, &n);
	if (r == CA_CATAR_DEC_NODE) {
		print_stat(n, "", NULL, NULL);
		r = 0;
	} else if (r >= 0) {
		r = -EBADMSG;
	}
	ca_catar_dec_free(d);
	return r;
}

int cafs_tree_read_dir(const char *verb, const char *dir, const struct ca_image_make_opts *mo, bool flat,
                       const char *digest_label)
{
	struct ca_image_dir_stream *ds = NULL;
	struct ca_catar_source s;
	struct printer p = { .mtree = !strcmp(verb, "mtree"), .flat = flat,
	                     .digest_label = digest_label ? digest_label : "sha512256digest" };
	int r = p.mtree ? ca_digest_new(mo->digest, &p.digest) : 0;
	if (r < 0) {
		ca_log_error_errno(r, "%s", dir);
		goto out;
	}
	r = ca_image_dir_stream_open(dir, mo, &ds, &s); /* logs */
	if (r < 0)
		goto out;
	if (!strcmp(verb, "stat"))
		r = stat_root(&s);
	else
		r = walk_source(NULL, &s, &p);
	r = ca_image_dir_stream_close(ds, r); /* says why the stream ended early */
	if (r == 0 && fflush(stdout) != 0)
		r = ca_log_error_errno(EIO, "stdout");
out:
	ca_digest_free(p.digest);
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
	{ "trusted-key", 0, "FILE", CAFS_OPT_TRUSTED_KEY,
	  .help = "only an index signed by this minisign key (repeatable;\n"
	  "see SECURITY in cafs(1))" },
	{ "allow-downgrade", 0, NULL, CAFS_OPT_ALLOW_DOWNGRADE,
	  .help = "accept an index signed before the newest accepted" },
	{ "signed-name", 0, "NAME", CAFS_OPT_SIGNED_NAME,
	  .help = "the file name its signature must give (default: IN's)" },
	{ "cache", 0, "DIR", CAFS_OPT_CACHE,
	  .help = "keep fetched chunks and a URL's index here, and use them" },
	{ "offline", 0, NULL, CAFS_OPT_OFFLINE,
	  .help = "only the cache: nothing is downloaded" },
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
	{ "trusted-key", 0, "FILE", CAFS_OPT_TRUSTED_KEY,
	  .help = "only an index signed by this minisign key (repeatable;\n"
	  "see SECURITY in cafs(1))" },
	{ "allow-downgrade", 0, NULL, CAFS_OPT_ALLOW_DOWNGRADE,
	  .help = "accept an index signed before the newest accepted" },
	{ "signed-name", 0, "NAME", CAFS_OPT_SIGNED_NAME,
	  .help = "the file name its signature must give (default: IN's)" },
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

