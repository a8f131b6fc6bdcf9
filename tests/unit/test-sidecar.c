/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-sidecar - the metadata sidecar (core/image/sidecar.c): built from a
 * varied archive, every entry equals what random access loads from the
 * archive (fields, xattrs, ACL counts, children and their order, lookups);
 * building twice gives the same bytes; and the reader refuses, cleanly,
 * truncation, a flipped byte anywhere, another index or archive size,
 * a wrong version, an oversized body, trailing bytes after the frame.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "catar-testtree.h"
#include "catar/catar_attr.h"
#include "catar/catar_ra.h"
#include "image/image_make.h"
#include "base/log.h"
#include "image/sidecar.h"
#include "tap.h"

static char dir[256];

/* Entry i agrees with random access; returns the kinds of attribute
 * records random access found in it. */
static unsigned same_node(struct ca_catar_ra *ra, const struct ca_sidecar *sc, size_t i)
{
	struct ca_catar_node s;
	struct ca_catar_ra_node *rn = NULL;
	ca_sidecar_node(sc, i, &s);
	int r = ca_catar_ra_load(ra, s.entry_offset, s.end_offset, &rn);
	check_int(r, ==, 0);
	if (r < 0)
		return 0;
	const struct ca_catar_node *a = ca_catar_ra_node_get(rn);
	struct stat st1, st2;
	ca_catar_node_stat(a, &st1);
	ca_catar_node_stat(&s, &st2);
	int same = st1.st_mode == st2.st_mode && st1.st_uid == st2.st_uid && st1.st_gid == st2.st_gid &&
	           st1.st_size == st2.st_size && st1.st_mtim.tv_sec == st2.st_mtim.tv_sec &&
	           st1.st_mtim.tv_nsec == st2.st_mtim.tv_nsec && st1.st_rdev == st2.st_rdev &&
	           a->payload_offset == s.payload_offset && a->payload_size == s.payload_size &&
	           a->meta_size == s.meta_size && a->n_xattrs == s.n_xattrs && a->n_acl_user == s.n_acl_user &&
	           a->has_acl_default == s.has_acl_default && a->flags == s.flags &&
	           (!a->symlink_target || !strcmp(a->symlink_target, s.symlink_target));
	if (S_ISDIR(a->mode))
		same = same && a->goodbye_offset == s.goodbye_offset && a->n_children == s.n_children &&
		       a->children_offset == s.children_offset;
	char l1[4096], l2[4096];
	size_t n1 = 0, n2 = 0;
	same = same && ca_catar_node_listxattr(a, NULL, l1, sizeof(l1), &n1) ==
	                   ca_catar_node_listxattr(&s, NULL, l2, sizeof(l2), &n2) &&
	       n1 == n2 && memcmp(l1, l2, n1) == 0;
	check(same);
	if (!same)
		printf("#   entry %zu (%s) differs\n", i, s.name);
	if (S_ISDIR(a->mode)) {
		struct ca_catar_child *c = NULL;
		size_t n = 0;
		check_int(ca_catar_ra_list(ra, a, &c, &n), ==, 0);
		check_int(n, ==, ca_sidecar_n_children(sc, i));
		for (size_t k = 0; k < n && k < ca_sidecar_n_children(sc, i); k++) {
			struct ca_catar_node cn;
			size_t j;
			ca_sidecar_node(sc, ca_sidecar_child(sc, i, k), &cn);
			if (cn.filename_offset != c[k].filename_offset || cn.end_offset != c[k].end_offset ||
			    ca_sidecar_lookup(sc, i, cn.name, strlen(cn.name), &j) != 0 || j != ca_sidecar_child(sc, i, k) ||
			    ca_sidecar_parent(sc, j) != i) {
				check(!"child agrees");
				break;
			}
		}
		free(c);
	}
	unsigned sources = ca_catar_node_xattr_sources(a);
	ca_catar_ra_node_unref(rn);
	return sources;
}

static int parse_copy(const uint8_t *p, size_t n, const uint8_t *digest, uint64_t size)
{
	struct ca_sidecar *sc = NULL;
	uint8_t *copy = malloc(n ? n : 1);
	memcpy(copy, p, n);
	int r = ca_sidecar_parse(copy, n, digest, size, &sc);
	ca_sidecar_free(sc);
	free(copy);
	return r;
}

int main(void)
{
	char path[512], tar[512];
	struct ca_image_make_opts o;
	uint8_t d[CA_CHUNK_ID_SIZE], digest[CA_CHUNK_ID_SIZE], other[CA_CHUNK_ID_SIZE];
	snprintf(dir, sizeof(dir), "%s/cafs-sidecar.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir) || tt_make_tree(dir, 0) != 0) {
		printf("1..0 # SKIP cannot build the test tree\n");
		return 0;
	}
	ca_log_set_level(CA_LOG_ERROR);
	snprintf(path, sizeof(path), "%s/tree", dir);
	snprintf(tar, sizeof(tar), "%s/t.catar", dir);
	ca_image_make_opts_init(&o);
	check_int(ca_image_make(tar, path, &o, d, NULL), ==, 0);

	struct tt_reader t = { .fd = open(tar, O_RDONLY | O_CLOEXEC) };
	struct stat st;
	fstat(t.fd, &st);
	struct ca_catar_source src = { .read = tt_read, .userdata = &t, .size = (uint64_t)st.st_size,
		                       .index_flags = UINT64_MAX };
	memset(digest, 0x11, sizeof(digest));
	memset(other, 0x22, sizeof(other));
	struct ca_buf b1 = CA_BUF_INIT, b2 = CA_BUF_INIT;
	check_int(ca_sidecar_build(&src, digest, &b1), ==, 0);
	check_int(ca_sidecar_build(&src, digest, &b2), ==, 0);
	check(b1.size == b2.size && memcmp(b1.data, b2.data, b1.size) == 0);

	struct ca_sidecar *sc = NULL;
	struct ca_catar_ra *ra = NULL;
	check_int(ca_sidecar_parse(b1.data, b1.size, digest, (uint64_t)st.st_size, &sc), ==, 0);
	check_int(ca_catar_ra_open(&src, &ra), ==, 0);
	if (sc && ra) {
		check_int(ca_sidecar_count(sc), >, 400);
		unsigned sources = 0;
		for (size_t i = 0; i < ca_sidecar_count(sc); i++)
			sources |= same_node(ra, sc, i);
		/* the kinds of records any entry has, as random access finds them
		 * (user.* xattrs and ACLs where the file system took them) */
		check_int(ca_sidecar_xattr_sources(sc), ==, sources);
		check((sources & ~((1u << CA_XATTR_RECORD) | (1u << CA_XATTR_ACL))) == 0);
		size_t i;
		struct ca_catar_node n;
		check_int(ca_sidecar_lookup_path(sc, "/sub//deeper/./x", &i), ==, 0);
		ca_sidecar_node(sc, i, &n);
		check_str(n.name, "x");
		check_int(ca_sidecar_lookup_path(sc, "sub/nope", &i), ==, -ENOENT);
		check_int(ca_sidecar_lookup_path(sc, "a.txt/x", &i), ==, -ENOTDIR);
		check_int(ca_sidecar_lookup_path(sc, "sub/..", &i), ==, -EINVAL);
		check_int(ca_sidecar_find(sc, 1, &i), ==, -ENOENT);
	}
	ca_catar_ra_free(ra);
	ca_sidecar_free(sc);

	/* refusals */
	const uint8_t *p = b1.data;
	size_t n = b1.size;
	check_int(parse_copy(p, n, other, (uint64_t)st.st_size), ==, -ESTALE);
	check_int(parse_copy(p, n, digest, (uint64_t)st.st_size + 1), ==, -ESTALE);
	check_int(parse_copy(p, n, NULL, UINT64_MAX), ==, 0);
	int all_bad = 1;
	for (size_t k = 0; k < n; k++) {
		int r = parse_copy(p, k, digest, (uint64_t)st.st_size);
		all_bad &= r == -EBADMSG;
	}
	check(all_bad); /* every truncation */
	uint8_t *m = malloc(n + 16);
	all_bad = 1;
	for (size_t k = 0; k < n; k++) {
		if (k >= 16 && k < 48)
			continue; /* the index digest: another index, -ESTALE */
		memcpy(m, p, n);
		m[k] ^= 0x40;
		int r = parse_copy(m, n, NULL, UINT64_MAX);
		/* a bit of the frame that does not change what it decodes to
		 * (the checksum covers the decoded body) may pass */
		int fine = r == -EBADMSG || (r == 0 && k >= CA_SIDECAR_HEADER_SIZE);
		if (!fine)
			printf("#   flipped byte %zu: %d\n", k, r);
		all_bad &= fine;
	}
	check(all_bad); /* every flipped byte refused, or harmless */
	memcpy(m, p, n);
	memset(m + n, 0, 16);
	check_int(parse_copy(m, n + 16, NULL, UINT64_MAX), ==, -EBADMSG); /* bytes after the frame */
	memcpy(m, p, n);
	ca_le64_write(m + 72, (uint64_t)1 << 40);
	check_int(parse_copy(m, n, NULL, UINT64_MAX), ==, -EBADMSG); /* a body beyond the cap */
	memcpy(m, p, n);
	m[8] = 2;
	check_int(parse_copy(m, n, NULL, UINT64_MAX), ==, -EBADMSG); /* another version */
	free(m);

	/* an archive with no attribute anywhere: none */
	char plain[512], ptar[512];
	snprintf(plain, sizeof(plain), "%s/plain", dir);
	snprintf(ptar, sizeof(ptar), "%s/p.catar", dir);
	check_int(testdata_sh("mkdir -p '%s/d' && echo x > '%s/d/f' && ln -s d/f '%s/l'", plain, plain, plain), ==, 0);
	check_int(ca_image_make(ptar, plain, &o, d, NULL), ==, 0);
	struct tt_reader pt = { .fd = open(ptar, O_RDONLY | O_CLOEXEC) };
	fstat(pt.fd, &st);
	struct ca_catar_source psrc = { .read = tt_read, .userdata = &pt, .size = (uint64_t)st.st_size,
		                        .index_flags = UINT64_MAX };
	struct ca_buf b3 = CA_BUF_INIT;
	check_int(ca_sidecar_build(&psrc, digest, &b3), ==, 0);
	check_int(ca_sidecar_parse(b3.data, b3.size, digest, (uint64_t)st.st_size, &sc), ==, 0);
	if (sc)
		check_int(ca_sidecar_xattr_sources(sc), ==, 0);
	ca_sidecar_free(sc);
	ca_buf_release(&b3);
	close(pt.fd);

	char *s1 = ca_sidecar_name_for("/a/x.caidx"), *s2 = ca_sidecar_name_for("http://h/x.caidx?t=1#f");
	check_str(s1, "/a/x.caidx.cameta");
	check_str(s2, "http://h/x.caidx.cameta?t=1#f");
	free(s1);
	free(s2);
	/* in a file:// URL, as in a path, "?" is part of the name */
	s1 = ca_sidecar_name_for("file:///x/y?.caidx");
	check_str(s1, "file:///x/y?.caidx.cameta");
	free(s1);

	ca_buf_release(&b1);
	ca_buf_release(&b2);
	close(t.fd);
	testdata_sh("rm -rf '%s'", dir);
	return tap_done();
}
