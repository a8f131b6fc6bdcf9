/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-catar-fuzz - mutations of a small casync archive must be rejected
 * cleanly (-EBADMSG, or for a lookup -ENOENT/-ENOTDIR) or decode to a
 * result, by both the streaming decoder and random access; never a crash
 * or a hang (alarm). Plus: every truncation is rejected, crafted names
 * ("..", ".", "", "a/", embedded NUL) and absurd sizes and offsets are
 * rejected, and whatever the stream accepts random access accepts too.
 */
#include "config.h"

#include <signal.h>

#include "catar-testtree.h"
#include "catar/catar_dec.h"
#include "catar/catar_ra.h"
#include "format/siphash.h"
#include "tap.h"

static uint8_t *arch;
static size_t arch_size;

/* Decode everything, reading every payload. 0 or the error. */
static int stream_all(const uint8_t *p, size_t n)
{
	struct tt_reader rd = { .mem = p, .mem_size = n };
	struct ca_catar_source src = { tt_read, NULL, &rd, n, UINT64_MAX };
	struct ca_catar_dec *d;
	uint8_t buf[1000];
	int r = ca_catar_dec_new(&src, &d);
	if (r < 0)
		return r;
	for (unsigned steps = 0;; steps++) {
		const struct ca_catar_node *node;
		if (steps > 100000) {
			r = -ELOOP; /* a hang in the making */
			break;
		}
		r = ca_catar_dec_next(d, &node);
		if (r <= 0)
			break;
		ssize_t k;
		if (r == CA_CATAR_DEC_NODE && S_ISREG(node->mode))
			while ((k = ca_catar_dec_read_payload(d, buf, sizeof(buf))) > 0)
				;
	}
	ca_catar_dec_free(d);
	return r;
}

struct walk {
	struct ca_catar_ra *ra;
	unsigned ops;
};

static int ra_dir(struct walk *w, const struct ca_catar_node *dir, unsigned depth)
{
	struct ca_catar_child *c;
	size_t n;
	uint8_t buf[4096];
	if (depth > 64 || ++w->ops > 100000)
		return -ELOOP;
	int r = ca_catar_ra_list(w->ra, dir, &c, &n);
	if (r < 0)
		return r;
	/* load every child first (names and hashes checked), then look each up */
	struct ca_catar_ra_node **nodes = calloc(n ? n : 1, sizeof(*nodes));
	if (!nodes)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++)
		r = ca_catar_ra_load_child(w->ra, &c[i], &nodes[i]);
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct ca_catar_ra_node *again;
		const struct ca_catar_node *node = ca_catar_ra_node_get(nodes[i]);
		/* the lookup by name finds the same node */
		r = ca_catar_ra_lookup(w->ra, dir, node->name, strlen(node->name), &again);
		if (r == 0) {
			if (ca_catar_ra_node_get(again)->entry_offset != node->entry_offset)
				r = -ENOTUNIQ;
			ca_catar_ra_node_unref(again);
		}
		if (r == 0 && S_ISREG(node->mode))
			for (uint64_t off = 0; r == 0 && off < node->payload_size;) {
				ssize_t k = ca_catar_ra_read(w->ra, node, buf, sizeof(buf), off);
				if (k <= 0)
					r = k < 0 ? (int)k : -EIO;
				off += k > 0 ? (uint64_t)k : 0;
			}
		if (r == 0 && S_ISDIR(node->mode))
			r = ra_dir(w, node, depth + 1);
	}
	for (size_t i = 0; nodes && i < n; i++)
		ca_catar_ra_node_unref(nodes[i]);
	free(nodes);
	free(c);
	return r;
}

static int ra_all(const uint8_t *p, size_t n)
{
	struct tt_reader rd = { .mem = p, .mem_size = n };
	struct ca_catar_source src = { tt_read, NULL, &rd, n, UINT64_MAX };
	struct walk w = { 0 };
	int r = ca_catar_ra_open(&src, &w.ra);
	if (r < 0)
		return r;
	struct ca_catar_ra_node *root;
	ca_catar_ra_root(w.ra, &root);
	r = ra_dir(&w, ca_catar_ra_node_get(root), 0);
	ca_catar_ra_node_unref(root);
	ca_catar_ra_free(w.ra);
	return r;
}

static bool clean(int r)
{
	return r == 0 || r == -EBADMSG || r == -ENOENT || r == -ENOTDIR;
}

/* where the records are, from a walk of the intact archive */
struct rec {
	uint64_t f, entry, payload, goodbye, end;
	char name[256];
	bool dir;
};
static struct rec recs[64];
static size_t n_recs;

static void locate(void)
{
	struct tt_reader rd = { .mem = arch, .mem_size = arch_size };
	struct ca_catar_source src = { tt_read, NULL, &rd, arch_size, UINT64_MAX };
	struct ca_catar_dec *d;
	const struct ca_catar_node *n;
	int r;
	ca_catar_dec_new(&src, &d);
	while ((r = ca_catar_dec_next(d, &n)) > 0 && n_recs < 64) {
		if (r == CA_CATAR_DEC_DIR_END) {
			for (size_t i = 0; i < n_recs; i++)
				if (recs[i].entry == n->entry_offset) {
					recs[i].goodbye = n->goodbye_offset;
					recs[i].end = n->end_offset;
				}
			continue;
		}
		struct rec *x = &recs[n_recs++];
		x->f = n->filename_offset;
		x->entry = n->entry_offset;
		x->payload = S_ISREG(n->mode) ? n->payload_offset - 16 : 0;
		x->dir = S_ISDIR(n->mode);
		snprintf(x->name, sizeof(x->name), "%s", n->name);
	}
	ca_catar_dec_free(d);
}

static const struct rec *find(const char *name)
{
	for (size_t i = 0; i < n_recs; i++)
		if (!strcmp(recs[i].name, name))
			return &recs[i];
	return NULL;
}

/* The root's GOODBYE item for the child whose FILENAME is at f. */
static uint8_t *root_item(uint8_t *p, uint64_t f)
{
	const struct rec *root = &recs[0];
	uint64_t g = root->goodbye, n = (root->end - g - 40) / 24;
	for (uint64_t i = 0; i < n; i++) {
		uint8_t *it = p + g + 16 + i * 24;
		if (g - ca_le64_read(it) == f)
			return it;
	}
	return NULL;
}

/* Both decoders must reject this mutation with -EBADMSG. */
static void expect_bad(uint8_t *p, const char *what)
{
	int s = stream_all(p, arch_size), a = ra_all(p, arch_size);
	check_int(s, ==, -EBADMSG);
	check_int(a, ==, -EBADMSG);
	if (s != -EBADMSG || a != -EBADMSG)
		tap_diag(what);
}

/* Rename a child in place (same length), fixing its hash so only the name is wrong. */
static void crafted_name(const char *orig, const char *bad, size_t len)
{
	uint8_t *p = malloc(arch_size);
	memcpy(p, arch, arch_size);
	const struct rec *r = find(orig);
	check(r != NULL);
	if (r) {
		memcpy(p + r->f + 16, bad, len);
		uint8_t *it = root_item(p, r->f);
		check(it != NULL);
		if (it)
			ca_le64_write(it + 16, ca_goodbye_hash(bad, strnlen(bad, len)));
		char what[64];
		snprintf(what, sizeof(what), "name %s -> %.*s", orig, (int)len, bad);
		expect_bad(p, what);
	}
	free(p);
}

static void set64(uint64_t off, uint64_t v, const char *what)
{
	uint8_t *p = malloc(arch_size);
	memcpy(p, arch, arch_size);
	ca_le64_write(p + off, v);
	expect_bad(p, what);
	free(p);
}

/* in-order fill of the implicit tree: the Eytzinger layout */
static void eytz(const uint8_t (*sorted)[24], size_t n, size_t i, size_t *next, uint8_t (*out)[24])
{
	if (i >= n)
		return;
	eytz(sorted, n, 2 * i + 1, next, out);
	memcpy(out[i], sorted[(*next)++], 24);
	eytz(sorted, n, 2 * i + 2, next, out);
}

static int cmp_item_f(const void *a, const void *b)
{
	/* by FILENAME position: offsets count backwards, so descending offset */
	uint64_t x = ca_le64_read(a), y = ca_le64_read(b);
	return x > y ? -1 : x < y;
}

/* Every root item gets the hash of one child's name (a table full of
 * collisions, laid out as casync would): random access must still find
 * that child by checking names on both sides of equal hashes, and nothing
 * else; the stream decoder sees hashes that do not match names. */
static void collisions(void)
{
	const struct rec *root = &recs[0];
	uint64_t g = root->goodbye, n = (root->end - g - 40) / 24;
	uint8_t (*items)[24] = malloc(n * 24), (*tree)[24] = malloc(n * 24);
	unsigned found = 0, absent = 0, tried = 0;
	for (size_t c = 1; c < n_recs; c++) {
		if (strchr(recs[c].name, '/') || recs[c].f == UINT64_MAX)
			continue;
		/* only the root's children */
		bool child = false;
		for (uint64_t i = 0; i < n; i++)
			child |= g - ca_le64_read(arch + g + 16 + i * 24) == recs[c].f;
		if (!child)
			continue;
		uint8_t *p = malloc(arch_size);
		memcpy(p, arch, arch_size);
		uint64_t h = ca_goodbye_hash(recs[c].name, strlen(recs[c].name));
		for (uint64_t i = 0; i < n; i++) {
			memcpy(items[i], p + g + 16 + i * 24, 24);
			ca_le64_write(items[i] + 16, h);
		}
		qsort(items, n, 24, cmp_item_f);
		size_t next = 0;
		eytz((const uint8_t (*)[24])items, n, 0, &next, tree);
		memcpy(p + g + 16, tree, n * 24);

		struct tt_reader rd = { .mem = p, .mem_size = arch_size };
		struct ca_catar_source src = { tt_read, NULL, &rd, arch_size, UINT64_MAX };
		struct ca_catar_ra *ra;
		struct ca_catar_ra_node *rn, *x;
		tried++;
		if (ca_catar_ra_open(&src, &ra) == 0) {
			ca_catar_ra_root(ra, &rn);
			if (ca_catar_ra_lookup(ra, ca_catar_ra_node_get(rn), recs[c].name, strlen(recs[c].name), &x) == 0) {
				found += ca_catar_ra_node_get(x)->entry_offset == recs[c].entry;
				ca_catar_ra_node_unref(x);
			}
			const char *other = strcmp(recs[c].name, "ab") ? "ab" : "e";
			absent += ca_catar_ra_lookup(ra, ca_catar_ra_node_get(rn), other, strlen(other), &x) == -ENOENT;
			ca_catar_ra_node_unref(rn);
			ca_catar_ra_free(ra);
		}
		check_int(stream_all(p, arch_size), ==, -EBADMSG);
		free(p);
	}
	check(tried > 5);
	check_int(found, ==, tried);
	check_int(absent, ==, tried);
	free(items);
	free(tree);
}

int main(void)
{
	char base[256], cmd_tree[300], catar[300], path[340];
	if (!testdata_have("casync")) {
		printf("1..0 # SKIP casync not installed\n");
		return 0;
	}
	alarm(300); /* a hang fails the test instead of stalling make check */
	snprintf(base, sizeof(base), "%s/cafs-catar-fuzz.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(base))
		return check(!"mkdtemp"), tap_done();
	snprintf(cmd_tree, sizeof(cmd_tree), "%s/tree", base);
	snprintf(catar, sizeof(catar), "%s/s.catar", base);
	check_int(tt_make_tree(base, 1), ==, 0);
	/* short names to rename in place */
	check_int(testdata_sh("cd '%s' && echo 1 > ab && echo 2 > e", cmd_tree), ==, 0);
	snprintf(path, sizeof(path), "%s/sub/rand.bin", cmd_tree);
	check_int(testdata_write_file(path, 300, 43), ==, 0);
	check_int(testdata_sh("casync make '%s' '%s' >/dev/null", catar, cmd_tree), ==, 0);
	arch = tt_slurp(catar, &arch_size);
	check(arch && arch_size > 1000);
	if (!arch)
		return tap_done();
	testdata_sh("rm -rf '%s'", base);

	check_int(stream_all(arch, arch_size), ==, 0);
	check_int(ra_all(arch, arch_size), ==, 0);
	locate();
	check(n_recs > 10);

	/* bit flips and byte smashes everywhere */
	uint8_t *p = malloc(arch_size);
	unsigned unclean = 0, inconsistent = 0, tried = 0, accepted = 0;
	for (size_t i = 0; i < arch_size; i++) {
		static const int kinds[] = { -1, -2, 0, 1, 2, 3, 4, 5, 6, 7 };
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			int kind = kinds[k];
			memcpy(p, arch, arch_size);
			p[i] = kind == -1 ? 0xff : kind == -2 ? 0x00 : p[i] ^ (uint8_t)(1u << kind);
			if (p[i] == arch[i])
				continue;
			tried++;
			int s = stream_all(p, arch_size), a = ra_all(p, arch_size);
			if (!clean(s) || !clean(a)) {
				if (unclean++ < 5) {
					char msg[100];
					snprintf(msg, sizeof(msg), "byte %zu kind %d: stream %d ra %d", i, kind, s, a);
					tap_diag(msg);
				}
			}
			if (s == 0) {
				accepted++;
				if (a != 0 && inconsistent++ < 5) {
					char msg[100];
					snprintf(msg, sizeof(msg), "byte %zu kind %d: stream accepts, ra %d", i, kind, a);
					tap_diag(msg);
				}
			}
		}
	}
	char msg[100];
	snprintf(msg, sizeof(msg), "%u mutations of a %zu-byte archive, %u still decode", tried, arch_size, accepted);
	tap_diag(msg);
	check_int(unclean, ==, 0);
	check_int(inconsistent, ==, 0);

	/* every truncation is an error for both */
	unsigned trunc_ok = 0;
	for (size_t n = 0; n < arch_size; n++) {
		int s = stream_all(arch, n), a = ra_all(arch, n);
		trunc_ok += s == -EBADMSG && a == -EBADMSG;
	}
	check_int(trunc_ok, ==, arch_size);
	/* and bytes after the end */
	memcpy(p, arch, arch_size);
	uint8_t *longer = malloc(arch_size + 24);
	memcpy(longer, arch, arch_size);
	memset(longer + arch_size, 0, 24);
	check_int(stream_all(longer, arch_size + 24), ==, -EBADMSG);
	free(longer);
	free(p);

	/* crafted names, hash fixed so only the name is wrong */
	crafted_name("ab", "..", 2);
	crafted_name("ab", "a/", 2);
	crafted_name("ab", "/b", 2);
	crafted_name("ab", "a\0", 2);
	crafted_name("e", ".", 1);
	crafted_name("e", "\0", 1);

	collisions();

	/* absurd sizes and offsets */
	const struct rec *ab = find("ab"), *sub = find("sub"), *root = &recs[0];
	if (ab && sub) {
		set64(ab->f, 16, "FILENAME size 16 (empty name)");
		set64(ab->f, 17, "FILENAME size 17");
		set64(ab->f, UINT64_MAX, "FILENAME size max");
		set64(ab->entry, 65, "ENTRY size 65");
		set64(ab->entry, UINT64_MAX, "ENTRY size max");
		set64(ab->payload, UINT64_MAX, "PAYLOAD size max");
		set64(ab->payload, UINT64_C(1) << 63, "PAYLOAD size 2^63");
		set64(ab->payload, 15, "PAYLOAD size 15");
		set64(ab->payload, ca_le64_read(arch + ab->payload) + 1, "PAYLOAD size +1");
		uint8_t *it = root_item(arch, ab->f);
		check(it != NULL);
		if (it) {
			uint64_t at = (uint64_t)(it - arch);
			set64(at, 0, "item offset 0");
			set64(at, UINT64_MAX, "item offset max");
			set64(at, root->goodbye + 1, "item offset before the archive");
			set64(at, ca_le64_read(it) + 1, "item offset +1");
			set64(at + 8, 0, "item size 0");
			set64(at + 8, UINT64_MAX, "item size max");
			set64(at + 8, ca_le64_read(it + 8) - 1, "item size -1");
		}
		uint64_t tail = root->end - 24;
		set64(tail, UINT64_MAX, "tail entry offset max");
		set64(tail, 0, "tail entry offset 0");
		set64(tail + 8, UINT64_MAX, "tail size max");
		set64(tail + 8, 40, "tail size 40");
		set64(tail + 8, root->end, "tail size = archive");
		set64(tail + 16, 0, "tail marker");
		uint64_t stail = sub->end - 24;
		set64(stail, ca_le64_read(arch + stail) + 24, "sub tail entry offset +24");
		set64(stail + 8, ca_le64_read(arch + stail + 8) + 24, "sub tail size +24");
		set64(sub->goodbye, UINT64_MAX, "sub GOODBYE size max");
		set64(root->entry + 8 + 8, UINT64_MAX, "root feature flags max");
		set64(ab->entry + 16 + 8, 0777 | 0170000, "mode with an unknown type");
		set64(ab->entry + 16 + 24, 65535, "uid 65535");
		/* all ones is an mtime of -1 ns, which casync writes: read, not refused */
		uint8_t *m = malloc(arch_size);
		memcpy(m, arch, arch_size);
		ca_le64_write(m + ab->entry + 16 + 40, UINT64_MAX);
		check_int(stream_all(m, arch_size), ==, 0);
		check_int(ra_all(m, arch_size), ==, 0);
		free(m);
	}

	free(arch);
	return tap_done();
}
