/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-catar-enc.c - GOODBYE layout, SipHash vectors, .caexclude rules, and
 * the smallest archive from the format reference, encoded in memory. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "catar/catar_enc.h"
#include "base/digest.h"
#include "catar/exclude.h"
#include "format/format.h"
#include "format/siphash.h"
#include "tap.h"

/* casync's own statement of the layout (reference 6.3): for a sub-array
 * of n sorted items with height e, the root is item p-1 when
 * n >= p-1+p/2 (p = 2^(e-1)), else item n-p/2; left part to 2i+1, right
 * part to 2i+2. */
static void casync_layout(size_t first, size_t n, size_t slot, size_t *out, size_t total)
{
	if (n == 0)
		return;
	unsigned e = 0;
	while (((size_t)1 << e) <= n)
		e++; /* floor(log2 n) + 1 */
	size_t p = (size_t)1 << (e - 1);
	size_t k = n >= p - 1 + p / 2 ? p - 1 : n - p / 2;
	if (slot < total)
		out[slot] = first + k;
	casync_layout(first, k, 2 * slot + 1, out, total);
	casync_layout(first + k + 1, n - k - 1, 2 * slot + 2, out, total);
}

static size_t inorder(const size_t *perm, size_t n, size_t i, size_t *seq, size_t pos)
{
	if (i >= n)
		return pos;
	pos = inorder(perm, n, 2 * i + 1, seq, pos);
	seq[pos++] = perm[i];
	return inorder(perm, n, 2 * i + 2, seq, pos);
}

static void test_layout(void)
{
	size_t *a = malloc(2001 * sizeof(size_t)), *b = malloc(2001 * sizeof(size_t)), *s = malloc(2001 * sizeof(size_t));
	size_t bad_casync = 0, bad_order = 0;
	for (size_t n = 0; n <= 2000; n++) {
		ca_catar_goodbye_layout(n, a);
		casync_layout(0, n, 0, b, n);
		if (n && memcmp(a, b, n * sizeof(size_t)))
			bad_casync++;
		inorder(a, n, 0, s, 0);
		for (size_t i = 0; i < n; i++)
			if (s[i] != i) {
				bad_order++;
				break;
			}
	}
	check_int(bad_casync, ==, 0);
	check_int(bad_order, ==, 0);
	free(a);
	free(b);
	free(s);
}

static void test_siphash(void)
{
	uint8_t key[16], msg[15];
	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 15; i++)
		msg[i] = (uint8_t)i;
	check_u64(ca_siphash24(msg, 15, key), ==, UINT64_C(0xa129ca6149be45e5));
	check_u64(ca_goodbye_hash("a", 1), ==, UINT64_C(0x51ba5a19e058c7ad));
}

/* excluded(rules-text, path, is_dir) walking down the components */
static int excluded(const char *rules, const char *path, bool is_dir)
{
	struct ca_exclude_rules *r = NULL;
	struct ca_exclude_set cur = CA_EXCLUDE_SET_INIT, next = CA_EXCLUDE_SET_INIT;
	char *lines = strdup(rules), *save = NULL, *p = strdup(path), *comp, *s2 = NULL;
	int res = -1;
	ca_exclude_rules_new(&r);
	for (char *l = strtok_r(lines, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (ca_exclude_add_line(r, l, &cur) < 0)
			goto out;
	for (comp = strtok_r(p, "/", &s2); comp; comp = strtok_r(NULL, "/", &s2)) {
		bool last = !s2 || !*s2;
		ca_exclude_set_clear(&next);
		res = ca_exclude_test(&cur, comp, last ? is_dir : true, &next);
		if (res != 0)
			break;
		struct ca_exclude_set t = cur;
		cur = next;
		next = t;
	}
out:
	ca_exclude_set_release(&cur);
	ca_exclude_set_release(&next);
	ca_exclude_rules_free(r);
	free(lines);
	free(p);
	return res;
}

static void test_exclude(void)
{
	const char *rules = "*.log\n!keep/f.log\ncache/\n/anch\nsub/deeper/*.bin";
	check_int(excluded(rules, "a.log", false), ==, 1);
	check_int(excluded(rules, "x/y/z.log", false), ==, 1);
	check_int(excluded(rules, "keep/f.log", false), ==, 0);
	check_int(excluded(rules, "keep/g.log", false), ==, 1);
	check_int(excluded(rules, ".hidden.log", false), ==, 0); /* FNM_PERIOD */
	check_int(excluded(rules, "cache", true), ==, 1);
	check_int(excluded(rules, "cache", false), ==, 0);
	check_int(excluded(rules, "x/cache", true), ==, 0); /* "cache/" has a slash: anchored */
	check_int(excluded(rules, "anch", false), ==, 1);
	check_int(excluded(rules, "x/anch", false), ==, 0);
	check_int(excluded(rules, "sub/deeper/q.bin", false), ==, 1);
	check_int(excluded(rules, "sub/q.bin", false), ==, 0);
	check_int(excluded(rules, "plain", false), ==, 0);

	struct ca_exclude_rules *r = NULL;
	struct ca_exclude_set s = CA_EXCLUDE_SET_INIT;
	ca_exclude_rules_new(&r);
	check_int(ca_exclude_add_line(r, "/", &s), ==, -EINVAL);
	check_int(ca_exclude_add_line(r, "!", &s), ==, -EINVAL);
	check_int(ca_exclude_add_line(r, "a/./b", &s), ==, -EINVAL);
	check_int(ca_exclude_add_line(r, "../b", &s), ==, -EINVAL);
	check_int(ca_exclude_add_line(r, "a//b", &s), ==, 0);
	ca_exclude_set_release(&s);

	/* file parsing: blanks stripped, comments and empty lines skipped, NUL ends a line */
	char tmpl[] = "/tmp/cafs-test-excl.XXXXXX";
	int fd = mkstemp(tmpl);
	static const char text[] = "  *.tmp\t\n# comment\n\nfoo\0bar\n";
	check_int(write(fd, text, sizeof(text) - 1), ==, (ssize_t)sizeof(text) - 1);
	lseek(fd, 0, SEEK_SET);
	check_int(ca_exclude_load_fd(r, fd, &s), ==, 0);
	check_int(s.n, ==, 3);
	check_int(ca_exclude_test(&s, "x.tmp", false, NULL), ==, 1);
	check_int(ca_exclude_test(&s, "bar", false, NULL), ==, 1);
	check_int(ca_exclude_test(&s, "foo", false, NULL), ==, 1);
	check_int(ca_exclude_test(&s, "# comment", false, NULL), ==, 0);
	close(fd);
	unlink(tmpl);

	/* a line of 65536 characters is refused, as casync refuses it */
	ca_exclude_set_clear(&s);
	char tmpl2[] = "/tmp/cafs-test-excl.XXXXXX";
	fd = mkstemp(tmpl2);
	char *big = malloc(65537);
	memset(big, 'a', 65536);
	big[65536] = '\n';
	check_int(write(fd, big, 65537), ==, 65537);
	lseek(fd, 0, SEEK_SET);
	check_int(ca_exclude_load_fd(r, fd, &s), ==, -ENOBUFS);
	free(big);
	close(fd);
	unlink(tmpl2);
	ca_exclude_set_release(&s);
	ca_exclude_rules_free(r);
}

static int sink(void *userdata, const void *p, size_t n)
{
	return ca_buf_append(userdata, p, n, 1 << 20);
}

static void test_smallest(void)
{
	char dir[] = "/tmp/cafs-test-small.XXXXXX";
	char path[256];
	struct ca_buf out = CA_BUF_INIT;
	uint8_t d[CA_CHUNK_ID_SIZE];
	char hex[65];
	struct ca_digest *dg = NULL;

	if (geteuid() != 0) {
		tap_skip("the smallest archive", "needs root (root-owned files)");
		return;
	}
	check(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/a", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	check_int(write(fd, "hi\n", 3), ==, 3);
	fchmod(fd, 0644);
	close(fd);
	chmod(dir, 0755);
	struct timespec ts[2] = { { 1577836800, 0 }, { 1577836800, 0 } };
	utimensat(AT_FDCWD, path, ts, 0);
	utimensat(AT_FDCWD, dir, ts, 0);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	struct ca_catar_enc_opts o = { .feature_flags = CA_FORMAT_DEFAULT, .write = sink, .userdata = &out, .root_name = dir };
	uint64_t size = 0;
	check_int(ca_catar_encode(dfd, &o, &size), ==, 0);
	check_u64(size, ==, 229);
	check_u64(out.size, ==, 229);
	ca_digest_new(CA_DIGEST_SHA512_256, &dg);
	ca_digest_once(dg, out.data, out.size, d);
	ca_id_to_hex(d, hex);
	check_str(hex, "23a1ac3d4ec147f2685c8963dc1c05fb4ee78ca297d080419d83a4cffc57a900");
	/* the GOODBYE item: offset 101, size 101 */
	check_u64(ca_le64_read(out.data + 165 + 16), ==, 101);
	check_u64(ca_le64_read(out.data + 165 + 24), ==, 101);
	/* non-normalized flags are refused */
	out.size = 0;
	o.feature_flags = CA_FORMAT_DEFAULT | CA_FORMAT_WITH_PERMISSIONS;
	check_int(ca_catar_encode(dfd, &o, NULL), ==, -EINVAL);
	ca_digest_free(dg);
	ca_buf_release(&out);
	close(dfd);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_siphash();
	test_layout();
	test_exclude();
	test_smallest();
	return tap_done();
}
