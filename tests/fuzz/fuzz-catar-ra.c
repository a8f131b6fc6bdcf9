/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-catar-ra - random access into a .catar (catar_ra.c), as the mount
 * and libcafs use it, over arbitrary bytes held in memory.
 *
 * Walks the tree the way a file manager would: list each directory, load
 * each child, stat it, list and get its xattrs, look it up again by name
 * and by path and by (entry, end) offsets (each must find the same node),
 * read files at several offsets. Every refusal must be a clean error
 * (-EBADMSG, -ENOENT, -ENOTDIR; -ENOMEM/-EFBIG/-E2BIG for a memory cap).
 * Differential: an archive the streaming decoder accepts must be walked
 * by random access without any error, node for node (catar_dec.h).
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "catar/catar_attr.h"
#include "catar/catar_dec.h"
#include "catar/catar_ra.h"
#include "fuzz.h"

#define NODES_MAX 3000u

static void readahead_hint(void *userdata, uint64_t off, uint64_t len)
{
	(void)userdata;
	(void)off;
	(void)len;
}

static bool clean(int r)
{
	return r == -EBADMSG || r == -ENOENT || r == -ENOTDIR || r == -ENOMEM || r == -EFBIG || r == -E2BIG;
}

struct walk {
	struct ca_catar_ra *ra;
	unsigned nodes;
	bool capped; /* the walk stopped early: nodes is not the whole tree */
	uint64_t seed;
	char path[4096];
};

/* stat and the xattr calls: whatever they say must be self-consistent */
static void attrs(const struct ca_catar_node *n)
{
	struct stat st;
	size_t len = 0, got = 0;
	ca_catar_node_stat(n, &st);
	fuzz_check(st.st_mode == (mode_t)n->mode, "stat mode");
	int r = ca_catar_node_listxattr(n, NULL, NULL, 0, &len);
	if (r < 0) {
		fuzz_check(r == -ENOMEM, "listxattr size: %d", r);
		return;
	}
	char *names = malloc(len + 1);
	if (!names)
		return;
	r = ca_catar_node_listxattr(n, NULL, names, len, &got);
	fuzz_check(r == 0 && got == len, "listxattr: %d, %zu of %zu", r, got, len);
	if (len > 0) {
		r = ca_catar_node_listxattr(n, NULL, names, len - 1, &got);
		fuzz_check(r == -ERANGE, "listxattr into a short buffer: %d", r);
	}
	for (size_t i = 0; i < len;) {
		const char *name = names + i;
		size_t nl = strnlen(name, len - i);
		fuzz_check(nl < len - i && nl > 0, "listxattr: names not NUL-separated");
		size_t vlen = 0, vgot = 0;
		r = ca_catar_node_getxattr(n, NULL, name, NULL, 0, &vlen);
		fuzz_check(r == 0 || r == -ENOMEM, "getxattr(%s) of a listed name: %d", name, r);
		if (r == 0) {
			uint8_t *v = malloc(vlen + 1);
			if (v) {
				r = ca_catar_node_getxattr(n, NULL, name, v, vlen, &vgot);
				fuzz_check((r == 0 && vgot == vlen) || r == -ENOMEM, "getxattr(%s): %d", name, r);
				free(v);
			}
		}
		i += nl + 1;
	}
	size_t vlen;
	r = ca_catar_node_getxattr(n, NULL, "user.fuzz-absent\x01", NULL, 0, &vlen);
	fuzz_check(r == -ENODATA || r == -ENOMEM, "getxattr of an absent name: %d", r);
	free(names);
}

static int read_file(struct walk *w, const struct ca_catar_node *n)
{
	uint8_t buf[5000];
	uint64_t size = n->payload_size;
	uint64_t offs[4] = { 0, size ? size - 1 : 0, size, size ? fuzz_rand(&w->seed) % size : 0 };
	for (int i = 0; i < 4; i++) {
		size_t len = 1 + (size_t)(fuzz_rand(&w->seed) % sizeof(buf));
		ssize_t k = ca_catar_ra_read(w->ra, n, buf, len, offs[i]);
		if (k < 0)
			return (int)k;
		uint64_t left = offs[i] < size ? size - offs[i] : 0;
		fuzz_check((uint64_t)k == (left < len ? left : len), "read %zu at %llu of %llu: %zd", len,
		           (unsigned long long)offs[i], (unsigned long long)size, k);
	}
	return 0;
}

static int walk_dir(struct walk *w, const struct ca_catar_node *dir, size_t plen, unsigned depth)
{
	struct ca_catar_child *c = NULL;
	size_t n = 0;
	int r = ca_catar_ra_list(w->ra, dir, &c, &n);
	if (r < 0)
		return r;
	ca_catar_ra_prefetch_children(w->ra, c, n);
	for (size_t i = 0; i < n && r == 0; i++) {
		struct ca_catar_ra_node *cn = NULL, *again = NULL;
		if (++w->nodes > NODES_MAX || depth > 200) {
			w->capped = true;
			break;
		}
		r = ca_catar_ra_load_child(w->ra, &c[i], &cn);
		if (r < 0)
			break;
		const struct ca_catar_node *node = ca_catar_ra_node_get(cn);
		fuzz_check(node->filename_offset == c[i].filename_offset && node->end_offset == c[i].end_offset,
		           "child %zu is not where the listing said", i);
		attrs(node);
		/* by name */
		r = ca_catar_ra_lookup(w->ra, dir, node->name, strlen(node->name), &again);
		fuzz_check(r == 0 || clean(r), "lookup: %d", r);
		if (r == 0)
			fuzz_check(ca_catar_ra_node_get(again)->entry_offset == node->entry_offset,
			           "lookup(%s) found another node", node->name);
		ca_catar_ra_node_unref(again);
		again = NULL;
		/* by offsets (an inode number and its end) */
		if (r == 0)
			r = ca_catar_ra_load(w->ra, node->entry_offset, node->end_offset, &again);
		if (r == 0)
			fuzz_check(ca_catar_ra_node_get(again)->mode == node->mode, "load by offsets: another mode");
		ca_catar_ra_node_unref(again);
		again = NULL;
		/* by path */
		size_t nl = strlen(node->name);
		if (r == 0 && plen + 1 + nl < sizeof(w->path)) {
			size_t p2 = plen;
			if (p2)
				w->path[p2++] = '/';
			memcpy(w->path + p2, node->name, nl + 1);
			r = ca_catar_ra_lookup_path(w->ra, w->path, &again);
			if (r == 0)
				fuzz_check(ca_catar_ra_node_get(again)->entry_offset == node->entry_offset,
				           "lookup_path(%s) found another node", w->path);
			ca_catar_ra_node_unref(again);
			if (r == 0 && S_ISDIR(node->mode))
				r = walk_dir(w, node, p2 + nl, depth + 1);
			w->path[plen] = 0;
		}
		if (r == 0 && S_ISREG(node->mode))
			r = read_file(w, node);
		if (r == 0 && !S_ISDIR(node->mode)) {
			struct ca_catar_ra_node *x = NULL;
			r = ca_catar_ra_lookup(w->ra, node, "x", 1, &x);
			fuzz_check(r == -ENOTDIR, "lookup in a non-directory: %d", r);
			r = 0;
		}
		ca_catar_ra_node_unref(cn);
	}
	/* names that are not there, or cannot be */
	static const char *absent[] = { "", ".", "..", "a/b", "\xff\xfe-not-there" };
	for (size_t k = 0; k < sizeof(absent) / sizeof(*absent) && r == 0; k++) {
		struct ca_catar_ra_node *x = NULL;
		int q = ca_catar_ra_lookup(w->ra, dir, absent[k], strlen(absent[k]), &x);
		fuzz_check(q == -ENOENT || (q < 0 && clean(q)) || (q == 0 && k == 4), "lookup(\"%s\"): %d", absent[k], q);
		ca_catar_ra_node_unref(x);
	}
	free(c);
	return r;
}

/* The streaming decoder's verdict and node count (0 when it refuses). */
static unsigned stream_nodes(const struct ca_catar_source *src)
{
	struct ca_catar_dec *d;
	unsigned nodes = 0;
	int r;
	if (ca_catar_dec_new(src, &d) < 0)
		return 0;
	while ((r = ca_catar_dec_next(d, NULL)) > 0)
		nodes += r == CA_CATAR_DEC_NODE;
	ca_catar_dec_free(d);
	return r == 0 ? nodes : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_mem rd = { data, size, 0 };
	struct ca_catar_source src = { fuzz_mem_read, readahead_hint, &rd, size, UINT64_MAX };
	struct walk w = { .seed = fuzz_hash(data, size) };
	struct ca_catar_ra_node *root = NULL, *again = NULL;
	fuzz_log_quiet();

	unsigned accepted = stream_nodes(&src);
	int r = ca_catar_ra_open(&src, &w.ra);
	if (r < 0) {
		fuzz_check(clean(r), "open: %d", r);
		fuzz_check(!accepted, "the stream decoder accepts what random access cannot open (%d)", r);
		return 0;
	}
	r = ca_catar_ra_root(w.ra, &root);
	fuzz_check(r == 0, "root after open: %d", r);
	attrs(ca_catar_ra_node_get(root));
	r = ca_catar_ra_lookup_path(w.ra, "/", &again);
	fuzz_check(r == 0 && ca_catar_ra_node_get(again)->entry_offset == 0, "lookup_path(/): %d", r);
	ca_catar_ra_node_unref(again);
	r = walk_dir(&w, ca_catar_ra_node_get(root), 0, 0);
	fuzz_check(r == 0 || clean(r), "walk: %d", r);
	if (accepted && !w.capped)
		fuzz_check(r == 0 && w.nodes + 1 == accepted,
		           "the stream decoder accepts %u nodes, random access walked %u and ended with %d", accepted,
		           w.nodes + 1, r);
	ca_catar_ra_node_unref(root);
	ca_catar_ra_free(w.ra);
	return 0;
}
