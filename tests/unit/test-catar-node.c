/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-catar-node.c - the record table of ca_catar_node_parse, one rule at
 * a time: each malformed node fails with -EBADMSG and a debug message
 * naming the record, its offset and the check ("catar: USER at 64: out of
 * order or repeated"); valid nodes parse, and a short buffer asks for
 * exactly the bytes it needs.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "catar/catar_node.h"
#include "format/feature.h"
#include "format/format.h"
#include "base/log.h"
#include "tap.h"

static char last[512];

static void capture(void *userdata, enum ca_log_level level, const char *line)
{
	snprintf(last, sizeof(last), "%s", line);
}

struct node {
	uint8_t b[4096];
	size_t n;
};

static void put(struct node *x, const void *p, size_t len)
{
	memcpy(x->b + x->n, p, len);
	x->n += len;
}

static void put_u64(struct node *x, uint64_t v)
{
	uint8_t b[8];
	ca_le64_write(b, v);
	put(x, b, 8);
}

/* A record: header (size = 16 + len) and len bytes. */
static void rec(struct node *x, uint64_t type, const void *data, size_t len)
{
	put_u64(x, sizeof(struct ca_format_header) + len);
	put_u64(x, type);
	put(x, data, len);
}

static void rec_u64(struct node *x, uint64_t type, uint64_t v)
{
	uint8_t b[8];
	ca_le64_write(b, v);
	rec(x, type, b, 8);
}

static const uint64_t FLAGS = CA_FORMAT_WITH_32BIT_UIDS | CA_FORMAT_WITH_NSEC_TIME | CA_FORMAT_WITH_PERMISSIONS |
                              CA_FORMAT_WITH_SYMLINKS | CA_FORMAT_WITH_XATTRS | CA_FORMAT_WITH_ACL |
                              CA_FORMAT_WITH_FCAPS | CA_FORMAT_WITH_QUOTA_PROJID | CA_FORMAT_WITH_USER_NAMES;

static void entry(struct node *x, uint64_t flags, uint64_t mode)
{
	x->n = 0;
	put_u64(x, sizeof(struct ca_format_entry));
	put_u64(x, CA_FORMAT_ENTRY);
	put_u64(x, ca_feature_normalize(flags));
	put_u64(x, mode);
	put_u64(x, 0); /* flags */
	put_u64(x, 1000);
	put_u64(x, 1000);
	put_u64(x, 0); /* mtime */
}

static int parse(const struct node *x, uint64_t limit)
{
	struct ca_catar_node n;
	size_t need = 0;
	last[0] = 0;
	return ca_catar_node_parse(x->b, x->n, 0, limit, UINT64_MAX, &n, &need);
}

#define check_bad(x, limit, want)                                                                        \
	do {                                                                                             \
		check_int(parse(x, limit), ==, -EBADMSG);                                                \
		check_str(strstr(last, want) ? want : last, want);                                       \
	} while (0)

static void test_valid(void)
{
	struct node x;
	struct ca_catar_node n;
	size_t need = 0;

	tap_diag("valid nodes");
	entry(&x, FLAGS, S_IFREG | 0644);
	rec(&x, CA_FORMAT_USER, "alice", 6);
	rec(&x, CA_FORMAT_GROUP, "staff", 6);
	rec(&x, CA_FORMAT_XATTR, "user.a\0v", 8);
	rec(&x, CA_FORMAT_XATTR, "user.b\0", 7);
	rec(&x, CA_FORMAT_FCAPS, "\1", 1);
	rec_u64(&x, CA_FORMAT_QUOTA_PROJID, 7);
	rec(&x, CA_FORMAT_PAYLOAD, "hi", 2);
	check_int(parse(&x, x.n), ==, 0);
	check_int(ca_catar_node_parse(x.b, x.n, 0, UINT64_MAX, UINT64_MAX, &n, &need), ==, 0);
	check_str(n.user_name, "alice");
	check_int(n.n_xattrs, ==, 2);
	check_u64(n.quota_projid, ==, 7);
	check_u64(n.payload_size, ==, 2);
	check_int(n.meta_size, ==, x.n - 2);

	/* a short buffer asks for the next record whole */
	check_int(ca_catar_node_parse(x.b, 70, 0, UINT64_MAX, UINT64_MAX, &n, &need), ==, -EAGAIN);
	check_int(need, ==, sizeof(struct ca_format_entry) + 16);
	check_int(ca_catar_node_parse(x.b, 80, 0, UINT64_MAX, UINT64_MAX, &n, &need), ==, -EAGAIN);
	check_int(need, ==, sizeof(struct ca_format_entry) + 16 + 6);

	entry(&x, FLAGS, S_IFLNK | 0777);
	rec(&x, CA_FORMAT_USER, "alice", 6);
	rec(&x, CA_FORMAT_GROUP, "staff", 6);
	rec(&x, CA_FORMAT_SYMLINK, "target", 7);
	check_int(ca_catar_node_parse(x.b, x.n, 0, x.n, UINT64_MAX, &n, &need), ==, 0);
	check_str(n.symlink_target, "target");
}

static void test_entry(void)
{
	struct node x;

	tap_diag("ENTRY checks");
	entry(&x, FLAGS, S_IFREG | 0644);
	check_bad(&x, 10, "ENTRY at 0: node smaller than an ENTRY");
	x.b[8] ^= 1;
	check_bad(&x, UINT64_MAX, "ENTRY at 0: not an ENTRY record");
	entry(&x, FLAGS, S_IFREG | 0644);
	x.b[0] = 72;
	check_bad(&x, UINT64_MAX, "ENTRY at 0: wrong size");
	entry(&x, FLAGS & ~CA_FORMAT_WITH_SYMLINKS, S_IFLNK | 0777);
	check_bad(&x, UINT64_MAX, "ENTRY at 0: mode not allowed by the feature flags");
	entry(&x, FLAGS, S_IFREG | 0644);
	ca_le64_write(x.b + 40, UINT32_MAX);
	check_bad(&x, UINT64_MAX, "ENTRY at 0: uid or gid out of range");
}

static void test_records(void)
{
	struct node x;
	uint8_t acl[16] = { 0 };

	tap_diag("record rules: order, size, feature flag, node type, content");
	entry(&x, FLAGS, S_IFREG | 0644);
	rec(&x, CA_FORMAT_GROUP, "staff", 6);
	rec(&x, CA_FORMAT_USER, "alice", 6);
	check_bad(&x, UINT64_MAX, "USER at 86: out of order or repeated");

	entry(&x, FLAGS, S_IFREG | 0644);
	rec(&x, CA_FORMAT_USER, "alice", 6);
	rec(&x, CA_FORMAT_USER, "bob", 4);
	check_bad(&x, UINT64_MAX, "USER at 86: out of order or repeated");

	entry(&x, FLAGS, S_IFREG | 0644);
	rec(&x, CA_FORMAT_USER, "root", 5);
	check_bad(&x, UINT64_MAX, "USER at 64: not a valid user or group name");

	entry(&x, FLAGS & ~CA_FORMAT_WITH_XATTRS, S_IFREG | 0644);
	rec(&x, CA_FORMAT_XATTR, "user.a\0v", 8);
	check_bad(&x, UINT64_MAX, "XATTR at 64: present without its feature flag");

	entry(&x, FLAGS, S_IFREG | 0644);
	rec(&x, CA_FORMAT_XATTR, "user.b\0", 7);
	rec(&x, CA_FORMAT_XATTR, "user.a\0", 7);
	check_bad(&x, UINT64_MAX, "XATTR at 87: names not in strictly increasing order");

	entry(&x, FLAGS, S_IFREG | 0644);
	rec(&x, CA_FORMAT_XATTR, "nodot\0", 6);
	check_bad(&x, UINT64_MAX, "XATTR at 64: name missing, too long, or without a dot");

	entry(&x, FLAGS, S_IFDIR | 0755);
	rec(&x, CA_FORMAT_FCAPS, "\1", 1);
	check_bad(&x, UINT64_MAX, "FCAPS at 64: not allowed for this node type");

	entry(&x, FLAGS, S_IFREG | 0644);
	rec(&x, CA_FORMAT_ACL_DEFAULT, acl, 0);
	check_bad(&x, UINT64_MAX, "ACL_DEFAULT at 64: not allowed for this node type");

	entry(&x, FLAGS, S_IFDIR | 0755);
	rec(&x, CA_FORMAT_ACL_DEFAULT, acl, 16);
	check_bad(&x, UINT64_MAX, "ACL_DEFAULT at 64: size out of range for the type");

	entry(&x, FLAGS, S_IFREG | 0644);
	rec_u64(&x, CA_FORMAT_ACL_GROUP_OBJ, 8);
	check_bad(&x, UINT64_MAX, "ACL_GROUP_OBJ at 64: permissions beyond rwx");

	entry(&x, FLAGS, S_IFREG | 0644);
	ca_le64_write(acl, 42);
	ca_le64_write(acl + 8, 4);
	rec(&x, CA_FORMAT_ACL_USER, acl, 16);
	rec(&x, CA_FORMAT_ACL_USER, acl, 16);
	check_bad(&x, UINT64_MAX, "ACL_USER at 96: entries not in strictly increasing order");

	entry(&x, FLAGS, S_IFREG | 0644);
	rec(&x, CA_FORMAT_ACL_USER, acl, 16);
	rec(&x, CA_FORMAT_PAYLOAD, "", 0);
	check_bad(&x, UINT64_MAX, "ENTRY at 0: named ACL entries without ACL_GROUP_OBJ");

	entry(&x, FLAGS, S_IFREG | 0644);
	rec_u64(&x, CA_FORMAT_QUOTA_PROJID, 0);
	check_bad(&x, UINT64_MAX, "QUOTA_PROJID at 64: project id 0");

	entry(&x, FLAGS, S_IFREG | 0644);
	rec_u64(&x, UINT64_C(0x1234), 0);
	check_bad(&x, UINT64_MAX, "record at 64: unknown type 0000000000001234");

	entry(&x, FLAGS, S_IFREG | 0644);
	rec(&x, CA_FORMAT_SYMLINK, "t", 2);
	check_bad(&x, UINT64_MAX, "SYMLINK at 64: not allowed for this node type");

	entry(&x, FLAGS, S_IFLNK | 0777);
	rec(&x, CA_FORMAT_SYMLINK, "t\0u", 4);
	check_bad(&x, UINT64_MAX, "SYMLINK at 64: target not one NUL-terminated string");

	entry(&x, FLAGS, S_IFREG | 0644);
	rec(&x, CA_FORMAT_FILENAME, "a", 2);
	check_bad(&x, UINT64_MAX, "FILENAME at 64: not allowed for this node type");

	entry(&x, FLAGS, S_IFREG | 0644);
	rec(&x, CA_FORMAT_PAYLOAD, "hi", 2);
	check_bad(&x, x.n + 1, "PAYLOAD at 64: size does not fill the node");
	check_bad(&x, x.n - 1, "PAYLOAD at 64: crosses the end of the node");

	entry(&x, FLAGS, S_IFDIR | 0755);
	check_bad(&x, x.n, "ENTRY at 0: directory without GOODBYE");
}

static void test_filename(void)
{
	struct node x;
	const char *name;
	size_t need;

	tap_diag("FILENAME checks");
	x.n = 0;
	rec(&x, CA_FORMAT_FILENAME, "a/b", 4);
	last[0] = 0;
	check_int(ca_catar_filename_parse(x.b, x.n, 1234, &name, &need), ==, -EBADMSG);
	check_str(strstr(last, "FILENAME at 1234: name contains '/'") ? "ok" : last, "ok");
	x.n = 0;
	rec(&x, CA_FORMAT_FILENAME, "..", 3);
	check_int(ca_catar_filename_parse(x.b, x.n, 0, &name, &need), ==, -EBADMSG);
	check_str(strstr(last, "name is \"..\"") || strstr(last, "name is \".\"") ? "ok" : last, "ok");
	x.n = 0;
	rec(&x, CA_FORMAT_FILENAME, "ab", 2);
	check_int(ca_catar_filename_parse(x.b, x.n, 0, &name, &need), ==, -EBADMSG);
	check_str(strstr(last, "name not NUL-terminated") ? "ok" : last, "ok");
	x.n = 0;
	rec(&x, CA_FORMAT_FILENAME, "ab", 3);
	check_int(ca_catar_filename_parse(x.b, 18, 0, &name, &need), ==, -EAGAIN);
	check_int(need, ==, 19);
	check_int(ca_catar_filename_parse(x.b, x.n, 0, &name, &need), ==, 19);
	check_str(name, "ab");
}

int main(void)
{
	struct ca_logger lg = { capture, NULL, CA_LOG_DEBUG };
	ca_log_use(&lg);
	test_valid();
	test_entry();
	test_records();
	test_filename();
	ca_log_use(NULL);
	return tap_done();
}
