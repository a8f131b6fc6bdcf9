/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-acl.c - the ACL codec (core/catar/acl.h): kernel xattr values decode and
 * encode back byte for byte, archive records become the xattr the kernel
 * expects (minimal, extended, default ACLs; named users and groups in
 * order), records come out in casync's order, and malformed input fails
 * with -EBADMSG or -EINVAL, never a crash.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "catar/acl.h"
#include "base/buf.h"
#include "catar/catar_node.h"
#include "format/feature.h"
#include "format/format.h"
#include "tap.h"

enum { USER_OBJ = 1, USER = 2, GROUP_OBJ = 4, GROUP = 8, MASK = 0x10, OTHER = 0x20 };
#define NOID UINT32_MAX

struct xent {
	unsigned tag, perm;
	uint32_t id;
};

/* A kernel xattr value from entries, into buf; returns its size. */
static size_t xattr_of(uint8_t *buf, const struct xent *e, size_t n)
{
	buf[0] = 2;
	buf[1] = buf[2] = buf[3] = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t *p = buf + 4 + 8 * i;
		p[0] = (uint8_t)e[i].tag;
		p[1] = (uint8_t)(e[i].tag >> 8);
		p[2] = (uint8_t)e[i].perm;
		p[3] = 0;
		p[4] = (uint8_t)e[i].id;
		p[5] = (uint8_t)(e[i].id >> 8);
		p[6] = (uint8_t)(e[i].id >> 16);
		p[7] = (uint8_t)(e[i].id >> 24);
	}
	return 4 + 8 * n;
}

/* decode then encode: the same bytes */
static void check_round_trip(const struct xent *e, size_t n)
{
	uint8_t in[4 + 8 * 16], *out = NULL;
	size_t size = xattr_of(in, e, n), out_size = 0;
	struct ca_acl a;
	check_int(ca_acl_from_xattr(in, size, &a), ==, 0);
	check_int(ca_acl_to_xattr(&a, &out, &out_size), ==, 0);
	check_int(out_size, ==, size);
	check(out && !memcmp(out, in, size));
	free(out);
	ca_acl_release(&a);
}

static void test_round_trips(void)
{
	static const struct xent minimal[] = { { USER_OBJ, 6, NOID }, { GROUP_OBJ, 4, NOID }, { OTHER, 4, NOID } };
	static const struct xent named[] = {
		{ USER_OBJ, 7, NOID }, { USER, 4, 1000 },  { USER, 6, 4242 },  { GROUP_OBJ, 5, NOID },
		{ GROUP, 1, 100 },     { GROUP, 7, 4343 }, { MASK, 7, NOID },  { OTHER, 0, NOID },
	};
	static const struct xent mask_only[] = {
		{ USER_OBJ, 7, NOID }, { GROUP_OBJ, 7, NOID }, { MASK, 5, NOID }, { OTHER, 5, NOID }
	};
	tap_diag("round trips: minimal, named users and groups, mask without named entries");
	check_round_trip(minimal, 3);
	check_round_trip(named, 8);
	check_round_trip(mask_only, 4);
}

static void test_decode(void)
{
	/* out of order on input (only the kernel's writer sorts): sorted by id after */
	static const struct xent shuffled[] = {
		{ OTHER, 4, NOID }, { USER, 2, 30 },     { GROUP, 1, 9 },      { USER, 4, 10 },
		{ MASK, 7, NOID },  { USER_OBJ, 6, NOID }, { GROUP_OBJ, 5, NOID }, { GROUP, 3, 8 },
	};
	static const struct xent sorted[] = {
		{ USER_OBJ, 6, NOID }, { USER, 4, 10 }, { USER, 2, 30 }, { GROUP_OBJ, 5, NOID },
		{ GROUP, 3, 8 },       { GROUP, 1, 9 }, { MASK, 7, NOID }, { OTHER, 4, NOID },
	};
	uint8_t in[4 + 8 * 8], want[4 + 8 * 8], *out = NULL;
	size_t size = xattr_of(in, shuffled, 8), out_size = 0;
	struct ca_acl a;

	tap_diag("decode: fields, ordering");
	check_int(ca_acl_from_xattr(in, size, &a), ==, 0);
	check_u64(a.user_obj, ==, 6);
	check_u64(a.group_obj, ==, 5);
	check_u64(a.mask, ==, 7);
	check_u64(a.other, ==, 4);
	check_int(a.n_users, ==, 2);
	check_int(a.n_groups, ==, 2);
	check_u64(a.users[0].id, ==, 10);
	check_u64(a.users[1].id, ==, 30);
	check_u64(a.groups[0].id, ==, 8);
	check(a.users[0].name == NULL);
	check_int(ca_acl_to_xattr(&a, &out, &out_size), ==, 0);
	check_int(out_size, ==, xattr_of(want, sorted, 8));
	check(out && !memcmp(out, want, out_size));
	free(out);
	ca_acl_release(&a);
	check(ca_acl_is_empty(&a));

	/* permission bits above rwx are not ours to keep */
	static const struct xent wide[] = { { USER_OBJ, 0xff, NOID }, { GROUP_OBJ, 4, NOID }, { OTHER, 4, NOID } };
	size = xattr_of(in, wide, 3);
	check_int(ca_acl_from_xattr(in, size, &a), ==, 0);
	check_u64(a.user_obj, ==, 7);
	ca_acl_release(&a);
}

static void test_malformed(void)
{
	static const struct xent two_owners[] = { { USER_OBJ, 6, NOID }, { USER_OBJ, 6, NOID } };
	static const struct xent bad_tag[] = { { USER_OBJ, 6, NOID }, { 0x40, 6, NOID } };
	static const struct xent no_id[] = { { USER_OBJ, 6, NOID }, { USER, 6, NOID } };
	uint8_t in[4 + 8 * 4];
	struct ca_acl a;
	size_t size;

	tap_diag("malformed xattr values: -EBADMSG");
	check_int(ca_acl_from_xattr(in, 0, &a), ==, -EBADMSG);
	ca_acl_release(&a);
	check_int(ca_acl_from_xattr("\2\0\0", 3, &a), ==, -EBADMSG);
	ca_acl_release(&a);
	size = xattr_of(in, two_owners, 2);
	check_int(ca_acl_from_xattr(in, size - 1, &a), ==, -EBADMSG); /* torn entry */
	ca_acl_release(&a);
	in[0] = 1; /* version 1 */
	check_int(ca_acl_from_xattr(in, size, &a), ==, -EBADMSG);
	ca_acl_release(&a);
	size = xattr_of(in, two_owners, 2);
	check_int(ca_acl_from_xattr(in, size, &a), ==, -EBADMSG);
	ca_acl_release(&a);
	size = xattr_of(in, bad_tag, 2);
	check_int(ca_acl_from_xattr(in, size, &a), ==, -EBADMSG);
	ca_acl_release(&a);
	size = xattr_of(in, no_id, 2);
	check_int(ca_acl_from_xattr(in, size, &a), ==, -EBADMSG);
	ca_acl_release(&a);
	/* an ACL without owner entries decodes (the kernel checks), but cannot be encoded */
	check_int(ca_acl_from_xattr("\2\0\0\0", 4, &a), ==, 0);
	check(ca_acl_is_empty(&a));
	ca_acl_release(&a);

	/* every truncation and every single-byte corruption of a good value
	 * either decodes or fails with -EBADMSG */
	static const struct xent good[] = { { USER_OBJ, 7, NOID }, { USER, 4, 1000 }, { MASK, 7, NOID },
		                            { OTHER, 0, NOID } };
	uint8_t g[4 + 8 * 4];
	size_t gs = xattr_of(g, good, 4);
	unsigned bad = 0;
	for (size_t cut = 0; cut < gs; cut++) {
		int r = ca_acl_from_xattr(g, cut, &a);
		bad += r != 0 && r != -EBADMSG;
		ca_acl_release(&a);
	}
	for (size_t i = 0; i < gs; i++)
		for (unsigned v = 0; v < 256; v += 17) {
			uint8_t m[sizeof(g)];
			memcpy(m, g, gs);
			m[i] = (uint8_t)v;
			int r = ca_acl_from_xattr(m, gs, &a);
			bad += r != 0 && r != -EBADMSG;
			ca_acl_release(&a);
		}
	check_int(bad, ==, 0);
}

static void test_encode_invalid(void)
{
	struct ca_acl a;
	struct ca_acl_entry users[2] = { { 5, 4, NULL }, { 5, 6, NULL } };
	uint8_t *out = NULL;
	size_t out_size = 0;

	tap_diag("ACLs the kernel would refuse: -EINVAL");
	ca_acl_init(&a);
	check_int(ca_acl_to_xattr(&a, &out, &out_size), ==, -EINVAL); /* no owner entries */
	a.user_obj = a.group_obj = a.other = 7;
	check_int(ca_acl_to_xattr(&a, &out, &out_size), ==, 0);
	check_int(out_size, ==, 4 + 3 * 8);
	free(out);
	out = NULL;
	a.users = users;
	a.n_users = 1;
	check_int(ca_acl_to_xattr(&a, &out, &out_size), ==, -EINVAL); /* named entry, no mask */
	a.mask = 8;
	check_int(ca_acl_to_xattr(&a, &out, &out_size), ==, -EINVAL); /* mask beyond rwx */
	a.mask = 7;
	a.n_users = 2;
	check_int(ca_acl_to_xattr(&a, &out, &out_size), ==, -EINVAL); /* the same id twice */
	users[1].id = 4;
	check_int(ca_acl_to_xattr(&a, &out, &out_size), ==, -EINVAL); /* ids decreasing */
	users[1].id = UINT32_MAX;
	check_int(ca_acl_to_xattr(&a, &out, &out_size), ==, -EINVAL); /* id beyond 32 bits */
	users[1].id = 6;
	check_int(ca_acl_to_xattr(&a, &out, &out_size), ==, 0);
	free(out);
	check(out_size == 4 + 6 * 8);
}

/* ---- archive records ---- */

static const uint64_t FLAGS = CA_FORMAT_WITH_32BIT_UIDS | CA_FORMAT_WITH_NSEC_TIME |
                              CA_FORMAT_WITH_PERMISSIONS | CA_FORMAT_WITH_ACL | CA_FORMAT_WITH_USER_NAMES;

/* An ENTRY for a directory or file, the ACL records, and the tail a parse needs. */
static int node_bytes(struct ca_buf *b, uint64_t mode, const struct ca_acl *acc, const struct ca_acl *def)
{
	struct ca_format_entry e;
	memset(&e, 0, sizeof(e));
	ca_le64_write(&e.header.size, sizeof(e));
	ca_le64_write(&e.header.type, CA_FORMAT_ENTRY);
	ca_le64_write(&e.feature_flags, ca_feature_normalize(FLAGS));
	ca_le64_write(&e.mode, mode);
	ca_le64_write(&e.uid, 1);
	ca_le64_write(&e.gid, 1);
	int r = ca_buf_append(b, &e, sizeof(e), SIZE_MAX);
	static const char user[] = "daemon";
	struct ca_format_header h;
	for (int k = 0; r == 0 && k < 2; k++) {
		ca_le64_write(&h.size, sizeof(h) + sizeof(user));
		ca_le64_write(&h.type, k ? CA_FORMAT_GROUP : CA_FORMAT_USER);
		r = ca_buf_append(b, &h, sizeof(h), SIZE_MAX);
		if (r == 0)
			r = ca_buf_append(b, user, sizeof(user), SIZE_MAX);
	}
	if (r == 0)
		r = ca_acl_put_records(acc, def, b);
	ca_le64_write(&h.size, sizeof(h));
	ca_le64_write(&h.type, S_ISDIR(mode) ? CA_FORMAT_GOODBYE : CA_FORMAT_PAYLOAD);
	if (r == 0)
		r = ca_buf_append(b, &h, sizeof(h), SIZE_MAX);
	return r;
}

static int parse(const struct ca_buf *b, struct ca_catar_node *n)
{
	size_t need = 0;
	return ca_catar_node_parse(b->data, b->size, 0, UINT64_MAX, UINT64_MAX, n, &need);
}

static void test_records(void)
{
	struct ca_acl acc, def, got;
	struct ca_buf b = { 0 };
	struct ca_catar_node n;
	uint8_t *x = NULL;
	size_t xs = 0;

	tap_diag("records: minimal ACL is the mode only");
	ca_acl_init(&acc);
	ca_acl_init(&def);
	check_int(node_bytes(&b, S_IFREG | 0640, &acc, &def), ==, 0);
	check_int(b.size, ==, sizeof(struct ca_format_entry) + 2 * (16 + 7) + 16);
	check_int(parse(&b, &n), ==, 0);
	check_int(ca_acl_node_xattr(&n, false, &x, &xs), ==, -ENODATA);
	check_int(ca_acl_node_xattr(&n, true, &x, &xs), ==, -ENODATA);

	tap_diag("records: named users and groups, mask in the mode, casync's order");
	static const struct xent access[] = {
		{ USER_OBJ, 7, NOID }, { USER, 4, 4242 }, { USER, 6, 1000 }, { GROUP_OBJ, 5, NOID },
		{ GROUP, 1, 4343 },    { MASK, 6, NOID }, { OTHER, 4, NOID },
	};
	uint8_t in[4 + 8 * 8];
	size_t size = xattr_of(in, access, 7);
	check_int(ca_acl_from_xattr(in, size, &acc), ==, 0);
	acc.users[1].name = strdup("alice"); /* id 4242 */
	ca_acl_sort_records(&acc);
	check_u64(acc.users[0].id, ==, 1000);
	check_str(acc.users[1].name, "alice");
	b.size = 0;
	/* the mode's group bits carry the mask (6) */
	check_int(node_bytes(&b, S_IFREG | 0764, &acc, &def), ==, 0);
	check_int(parse(&b, &n), ==, 0);
	check_int(n.n_acl_user, ==, 2);
	check_int(n.n_acl_group, ==, 1);
	check(n.has_acl_group_obj && n.acl_group_obj == 5);
	check_int(ca_acl_node_xattr(&n, false, &x, &xs), ==, 0);
	/* the kernel's value again, sorted by id */
	static const struct xent sorted[] = {
		{ USER_OBJ, 7, NOID }, { USER, 6, 1000 }, { USER, 4, 4242 }, { GROUP_OBJ, 5, NOID },
		{ GROUP, 1, 4343 },    { MASK, 6, NOID }, { OTHER, 4, NOID },
	};
	uint8_t want[4 + 8 * 8];
	check_int(xs, ==, xattr_of(want, sorted, 7));
	check(x && !memcmp(x, want, xs));
	free(x);
	x = NULL;
	check_int(ca_acl_from_node(&n, false, &got), ==, 0);
	check_u64(got.mask, ==, 6);
	check_u64(got.users[1].id, ==, 4242);
	check(got.users[1].name == NULL); /* ids only: the kernel has no names */
	ca_acl_release(&got);
	ca_acl_release(&acc);

	tap_diag("records: mask without named entries keeps ACL_GROUP_OBJ");
	acc.user_obj = 7;
	acc.group_obj = 0;
	acc.mask = 5;
	acc.other = 0;
	b.size = 0;
	check_int(node_bytes(&b, S_IFREG | 0750, &acc, &def), ==, 0);
	check_int(parse(&b, &n), ==, 0);
	check(n.has_acl_group_obj && n.acl_group_obj == 0);
	check_int(ca_acl_node_xattr(&n, false, &x, &xs), ==, 0);
	check_int(xs, ==, 4 + 4 * 8);
	free(x);
	x = NULL;
	ca_acl_release(&acc);

	tap_diag("records: default ACL on a directory, with and without mask");
	static const struct xent dflt[] = {
		{ USER_OBJ, 7, NOID }, { USER, 5, 4242 }, { GROUP_OBJ, 5, NOID }, { GROUP, 7, 4343 },
		{ MASK, 7, NOID },     { OTHER, 5, NOID },
	};
	size = xattr_of(in, dflt, 6);
	check_int(ca_acl_from_xattr(in, size, &def), ==, 0);
	b.size = 0;
	check_int(node_bytes(&b, S_IFDIR | 0755, &acc, &def), ==, 0);
	check_int(parse(&b, &n), ==, 0);
	check(n.has_acl_default);
	check_int(n.n_acl_default_user, ==, 1);
	check_int(n.n_acl_default_group, ==, 1);
	check_int(ca_acl_node_xattr(&n, false, &x, &xs), ==, -ENODATA);
	check_int(ca_acl_node_xattr(&n, true, &x, &xs), ==, 0);
	check_int(xs, ==, size);
	check(x && !memcmp(x, in, size));
	free(x);
	x = NULL;
	ca_acl_release(&def);
	static const struct xent dflt_min[] = { { USER_OBJ, 7, NOID }, { GROUP_OBJ, 5, NOID }, { OTHER, 0, NOID } };
	size = xattr_of(in, dflt_min, 3);
	check_int(ca_acl_from_xattr(in, size, &def), ==, 0);
	b.size = 0;
	check_int(node_bytes(&b, S_IFDIR | 0755, &acc, &def), ==, 0);
	check_int(parse(&b, &n), ==, 0);
	check(n.has_acl_default && n.acl_default_mask == CA_ACL_NO_MASK);
	check_int(ca_acl_node_xattr(&n, true, &x, &xs), ==, 0);
	check_int(xs, ==, size);
	check(x && !memcmp(x, in, size));
	free(x);
	ca_acl_release(&def);
	ca_buf_release(&b);
}

int main(void)
{
	test_round_trips();
	test_decode();
	test_malformed();
	test_encode_invalid();
	test_records();
	return tap_done();
}
