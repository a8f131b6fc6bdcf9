/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-catar-ra - random access and the streaming decoder against archives
 * casync made of a varied tree: every path is looked up through a counting
 * reader and compared with lstat() of the source; reads per path component
 * are bounded; directory listings, file contents, casync's ENTRY offsets,
 * a .caidx read through the blob, concurrent lookups, and a full stream walk.
 */
#include "config.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "store/blob.h"
#include "catar-testtree.h"
#include "catar/catar_dec.h"
#include "catar/catar_ra.h"
#include "store/chunksrc.h"
#include "format/index.h"
#include "store/store.h"
#include "tap.h"

static char base[256];
static char paths[1024][300];
static size_t n_paths;

static void collect(const char *root, const char *rel)
{
	char full[1024];
	snprintf(full, sizeof(full), "%s%s%s", root, *rel ? "/" : "", rel);
	DIR *d = opendir(full);
	struct dirent *de;
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n_paths >= sizeof(paths) / sizeof(paths[0]))
			break;
		char *p = paths[n_paths++];
		snprintf(p, sizeof(paths[0]), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		if (de->d_type == DT_DIR) {
			char sub[512];
			snprintf(sub, sizeof(sub), "%s", p);
			collect(root, sub);
		}
	}
	closedir(d);
}

static unsigned components(const char *p)
{
	unsigned n = 1;
	for (; *p; p++)
		n += *p == '/';
	return n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_node(const struct ca_catar_node *n, const char *src, struct ca_catar_ra *ra)
{
	struct stat st;
	if (lstat(src, &st) < 0) {
		check(!"lstat");
		return;
	}
	check_u64(n->mode, ==, st.st_mode);
	check_u64(n->uid, ==, st.st_uid);
	check_u64(n->gid, ==, st.st_gid);
	check_u64(n->mtime, ==, (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec);
	if (S_ISREG(st.st_mode)) {
		check_u64(n->payload_size, ==, st.st_size);
		size_t size = 0;
		uint8_t *want = tt_slurp(src, &size);
		uint8_t *got = malloc(size + 1);
		ssize_t k = ca_catar_ra_read(ra, n, got, size + 1, 0);
		check_int(k, ==, (ssize_t)size);
		check(want && k == (ssize_t)size && memcmp(want, got, size) == 0);
		if (size > 2000) { /* a read in the middle */
			k = ca_catar_ra_read(ra, n, got, 1000, 777);
			check(k == 1000 && memcmp(want + 777, got, 1000) == 0);
		}
		check_int(ca_catar_ra_read(ra, n, got, 10, size), ==, 0);
		free(want);
		free(got);
	} else if (S_ISLNK(st.st_mode)) {
		char t[4096];
		ssize_t l = readlink(src, t, sizeof(t) - 1);
		t[l < 0 ? 0 : l] = 0;
		check_str(n->symlink_target, t);
	} else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		check_u64(n->device_major, ==, major(st.st_rdev));
		check_u64(n->device_minor, ==, minor(st.st_rdev));
	}
	/* user.* xattrs: same names and values */
	if (!S_ISLNK(st.st_mode)) {
		char list[4096];
		ssize_t l = llistxattr(src, list, sizeof(list));
		size_t want = 0;
		for (ssize_t i = 0; l > 0 && i < l; i += strlen(list + i) + 1)
			if (!strncmp(list + i, "user.", 5))
				want++;
		check_int(n->n_xattrs, ==, want);
		struct ca_catar_xattr xa;
		size_t cur = 0;
		while (ca_catar_node_next_xattr(n, &cur, &xa)) {
			char v[256];
			ssize_t vl = lgetxattr(src, xa.name, v, sizeof(v));
			check(vl == (ssize_t)xa.size && memcmp(v, xa.value, xa.size) == 0);
		}
	}
}

/* casync stat's "Offset:" is the ENTRY offset */
static uint64_t casync_offset(const char *archive, const char *path)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "casync stat '%s' '%s' 2>/dev/null", archive, path);
	FILE *f = popen(cmd, "r");
	char line[512];
	uint64_t off = UINT64_MAX;
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "Offset: ");
		if (p)
			off = strtoull(p + 8, NULL, 10);
	}
	if (f)
		pclose(f);
	return off;
}

struct thread_arg {
	struct ca_catar_ra *ra;
	int failures;
};

static void *lookup_thread(void *p)
{
	struct thread_arg *a = p;
	for (int round = 0; round < 20; round++)
		for (size_t i = 0; i < n_paths; i++) {
			struct ca_catar_ra_node *n;
			if (ca_catar_ra_lookup_path(a->ra, paths[i], &n) < 0)
				a->failures++;
			else
				ca_catar_ra_node_unref(n);
		}
	return NULL;
}

static void test_catar(const char *archive, const char *tree)
{
	struct tt_reader rd = { .fd = open(archive, O_RDONLY | O_CLOEXEC) };
	struct stat st;
	struct ca_catar_ra *ra = NULL;
	fstat(rd.fd, &st);
	struct ca_catar_source src = { tt_read, tt_readahead, &rd, (uint64_t)st.st_size, UINT64_MAX };
	check_int(ca_catar_ra_open(&src, &ra), ==, 0);
	if (!ra)
		return;
	check_int(rd.reads, <=, 2);
	unsigned max_reads_x100 = 0;

	struct ca_catar_ra_node *root;
	check_int(ca_catar_ra_root(ra, &root), ==, 0);
	check_u64(ca_catar_ra_node_get(root)->entry_offset, ==, 0);
	check_node(ca_catar_ra_node_get(root), tree, ra);

	for (size_t i = 0; i < n_paths; i++) {
		struct ca_catar_ra_node *n = NULL;
		char src_path[1100], msg[600];
		snprintf(src_path, sizeof(src_path), "%.299s/%.299s", tree, paths[i]);
		snprintf(msg, sizeof(msg), "path %.500s", paths[i]);
		unsigned failed_before = tap_failed;
		rd.reads = 0;
		rd.bytes = 0;
		int r = ca_catar_ra_lookup_path(ra, paths[i], &n);
		check_int(r, ==, 0);
		if (r < 0)
			continue;
		/* per component: GOODBYE items, the candidate's FILENAME+ENTRY window,
		 * and the GOODBYE tail of a child directory */
		unsigned c = components(paths[i]);
		check_int(rd.reads, <=, 3 * c);
		if (rd.reads * 100 / c > max_reads_x100)
			max_reads_x100 = rd.reads * 100 / c;
		check_int(rd.bytes, <=, c * (16u * 1024u));
		const struct ca_catar_node *node = ca_catar_ra_node_get(n);
		if (S_ISREG(node->mode) && node->payload_size < 1000) {
			/* a small file's content came with its ENTRY: no second read */
			char tmp[1000];
			unsigned before = rd.reads;
			check_int(ca_catar_ra_read(ra, node, tmp, sizeof(tmp), 0), ==, node->payload_size);
			check_int(rd.reads, ==, before);
		}
		const char *slash = strrchr(paths[i], '/');
		check_str(node->name, slash ? slash + 1 : paths[i]);
		check_node(node, src_path, ra);

		/* a reload from (entry, end) gives the same node */
		struct ca_catar_ra_node *again;
		check_int(ca_catar_ra_load(ra, node->entry_offset, node->end_offset, &again), ==, 0);
		check_u64(ca_catar_ra_node_get(again)->mode, ==, node->mode);
		ca_catar_ra_node_unref(again);

		if (S_ISDIR(node->mode)) {
			/* the listing: readdir's names in strcmp order, each loading to the same node */
			struct ca_catar_child *ch = NULL;
			size_t nch = 0;
			check_int(ca_catar_ra_list(ra, node, &ch, &nch), ==, 0);
			char *names[512];
			size_t nn = 0;
			DIR *d = opendir(src_path);
			struct dirent *de;
			while (d && (de = readdir(d)) && nn < 512)
				if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
					names[nn++] = strdup(de->d_name);
			if (d)
				closedir(d);
			qsort(names, nn, sizeof(char *), cmp_str);
			check_int(nch, ==, nn);
			rd.readaheads = 0;
			ca_catar_ra_prefetch_children(ra, ch, nch);
			check_int(rd.readaheads, <=, nch ? nch : 0);
			for (size_t k = 0; k < nch && k < nn; k++) {
				struct ca_catar_ra_node *cn;
				check_int(ca_catar_ra_load_child(ra, &ch[k], &cn), ==, 0);
				check_str(ca_catar_ra_node_get(cn)->name, names[k]);
				ca_catar_ra_node_unref(cn);
			}
			for (size_t k = 0; k < nn; k++)
				free(names[k]);
			free(ch);
		}
		ca_catar_ra_node_unref(n);
		if (tap_failed != failed_before)
			tap_diag(msg);
	}
	char msg[100];
	snprintf(msg, sizeof(msg), "at most %u.%02u reads per path component", max_reads_x100 / 100,
	         max_reads_x100 % 100);
	tap_diag(msg);

	/* casync's ENTRY offsets */
	struct ca_catar_ra_node *x;
	if (ca_catar_ra_lookup_path(ra, "sub/deeper/x", &x) == 0) {
		check_u64(ca_catar_ra_node_get(x)->entry_offset, ==, casync_offset(archive, "sub/deeper/x"));
		ca_catar_ra_node_unref(x);
	}
	if (ca_catar_ra_lookup_path(ra, "big/f123", &x) == 0) {
		check_u64(ca_catar_ra_node_get(x)->entry_offset, ==, casync_offset(archive, "big/f123"));
		ca_catar_ra_node_unref(x);
	}

	/* what is not there */
	check_int(ca_catar_ra_lookup_path(ra, "nonexistent", &x), ==, -ENOENT);
	check_int(ca_catar_ra_lookup_path(ra, "big/f999", &x), ==, -ENOENT);
	check_int(ca_catar_ra_lookup_path(ra, "a.txt/x", &x), ==, -ENOTDIR);
	check_int(ca_catar_ra_lookup_path(ra, "sub/../a.txt", &x), ==, -EINVAL);
	check_int(ca_catar_ra_lookup(ra, ca_catar_ra_node_get(root), "a/b", 3, &x), ==, -ENOENT);
	check_int(ca_catar_ra_lookup_path(ra, "//sub/./deeper//", &x), ==, 0);
	ca_catar_ra_node_unref(x);
	check_int(ca_catar_ra_lookup_path(ra, "", &x), ==, 0);
	check_u64(ca_catar_ra_node_get(x)->entry_offset, ==, 0);
	ca_catar_ra_node_unref(x);

	/* threads share one archive: no cursor, no shared state */
	pthread_t th[4];
	struct thread_arg ta[4];
	for (int i = 0; i < 4; i++) {
		ta[i] = (struct thread_arg){ ra, 0 };
		pthread_create(&th[i], NULL, lookup_thread, &ta[i]);
	}
	int failures = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		failures += ta[i].failures;
	}
	check_int(failures, ==, 0);

	ca_catar_ra_node_unref(root);
	ca_catar_ra_free(ra);
	close(rd.fd);
}

static void test_stream(const char *archive, const char *tree)
{
	struct tt_reader rd = { .fd = open(archive, O_RDONLY | O_CLOEXEC) };
	struct stat st;
	struct ca_catar_dec *d = NULL;
	fstat(rd.fd, &st);
	struct ca_catar_source src = { tt_read, NULL, &rd, (uint64_t)st.st_size, UINT64_MAX };
	check_int(ca_catar_dec_new(&src, &d), ==, 0);
	size_t nodes = 0, found = 0, dir_ends = 0, content_ok = 0, files = 0;
	int r;
	const struct ca_catar_node *n;
	uint8_t buf[8192];
	while ((r = ca_catar_dec_next(d, &n)) > 0) {
		if (r == CA_CATAR_DEC_DIR_END) {
			dir_ends++;
			continue;
		}
		const char *p = ca_catar_dec_path(d);
		nodes++;
		for (size_t i = 0; i < n_paths; i++)
			if (!strcmp(paths[i], p)) {
				found++;
				break;
			}
		if (S_ISREG(n->mode)) {
			char src_path[1100];
			size_t size = 0;
			snprintf(src_path, sizeof(src_path), "%s/%s", tree, p);
			uint8_t *want = tt_slurp(src_path, &size);
			size_t at = 0;
			bool same = want != NULL;
			ssize_t k;
			/* read in odd sizes: the window and the direct path both get used */
			while ((k = ca_catar_dec_read_payload(d, buf, at % 2 ? 4099 : sizeof(buf))) > 0) {
				if (at + (size_t)k > size || memcmp(want + at, buf, (size_t)k))
					same = false;
				at += (size_t)k;
			}
			files++;
			content_ok += same && at == size && k == 0;
			free(want);
		}
	}
	check_int(r, ==, CA_CATAR_DEC_DONE);
	check_int(nodes, ==, n_paths + 1);
	check_int(found, ==, n_paths);
	check_int(content_ok, ==, files);
	check_int(ca_catar_dec_offset(d), ==, st.st_size);
	/* every byte read once, in large blocks */
	check_u64(rd.bytes, <=, (uint64_t)st.st_size);
	ca_catar_dec_free(d);

	/* a stream whose caller skips payloads reads less than the archive */
	rd.bytes = 0;
	check_int(ca_catar_dec_new(&src, &d), ==, 0);
	size_t dirs = 0;
	while ((r = ca_catar_dec_next(d, &n)) > 0)
		dirs += r == CA_CATAR_DEC_DIR_END;
	check_int(r, ==, 0);
	check_int(dirs, ==, dir_ends);
	ca_catar_dec_free(d);
	close(rd.fd);
}

/* The same archive as .caidx, read through the index, store and blob. */
static void test_caidx(const char *caidx, const char *store_path, const char *catar)
{
	struct ca_index *idx = NULL;
	struct ca_store *store = NULL;
	struct ca_chunksrc *cs = NULL;
	struct ca_blob *blob = NULL;
	struct ca_catar_ra *ra = NULL, *ra2 = NULL;
	check_int(ca_index_open(caidx, &idx), ==, 0);
	check_int(ca_store_open(store_path, &store), ==, 0);
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 1 << 20, &cs), ==, 0);
	if (!idx || !store || !cs)
		return;
	check_int(ca_chunksrc_add_store(cs, store), ==, 0);
	check_int(ca_blob_new(idx, cs, &blob), ==, 0);
	check(ca_index_n_chunks(idx) > 3);
	struct ca_catar_source src = { (ca_range_read_fn)ca_blob_read, (ca_range_readahead_fn)ca_blob_readahead, blob,
		                       ca_blob_size(blob), ca_index_feature_flags(idx) };
	check_int(ca_catar_ra_open(&src, &ra), ==, 0);

	struct tt_reader rd = { .fd = open(catar, O_RDONLY | O_CLOEXEC) };
	struct stat st;
	fstat(rd.fd, &st);
	struct ca_catar_source src2 = { tt_read, NULL, &rd, (uint64_t)st.st_size, UINT64_MAX };
	check_int(ca_catar_ra_open(&src2, &ra2), ==, 0);
	check_u64(ca_blob_size(blob), ==, st.st_size);
	size_t same = 0;
	for (size_t i = 0; ra && ra2 && i < n_paths; i++) {
		struct ca_catar_ra_node *a = NULL, *b = NULL;
		if (ca_catar_ra_lookup_path(ra, paths[i], &a) == 0 && ca_catar_ra_lookup_path(ra2, paths[i], &b) == 0 &&
		    ca_catar_ra_node_get(a)->entry_offset == ca_catar_ra_node_get(b)->entry_offset &&
		    ca_catar_ra_node_get(a)->end_offset == ca_catar_ra_node_get(b)->end_offset)
			same++;
		ca_catar_ra_node_unref(a);
		ca_catar_ra_node_unref(b);
	}
	check_int(same, ==, n_paths);
	struct ca_catar_ra_node *f;
	if (ra && ca_catar_ra_lookup_path(ra, "sub/rand.bin", &f) == 0) {
		const struct ca_catar_node *n = ca_catar_ra_node_get(f);
		uint8_t *a = malloc(n->payload_size), *b = malloc(n->payload_size);
		check_int(ca_catar_ra_read(ra, n, a, n->payload_size, 0), ==, n->payload_size);
		check_int(pread(rd.fd, b, n->payload_size, n->payload_offset), ==, n->payload_size);
		check(memcmp(a, b, n->payload_size) == 0);
		free(a);
		free(b);
		ca_catar_ra_node_unref(f);
	}
	/* the index's flags must equal every ENTRY's */
	struct ca_catar_ra *bad = NULL;
	src.index_flags ^= CA_FORMAT_WITH_FIFOS;
	check_int(ca_catar_ra_open(&src, &bad), ==, -EBADMSG);
	struct ca_catar_dec *d = NULL;
	check_int(ca_catar_dec_new(&src, &d), ==, 0);
	check_int(ca_catar_dec_next(d, NULL), ==, -EBADMSG);
	ca_catar_dec_free(d);

	ca_catar_ra_free(ra);
	ca_catar_ra_free(ra2);
	close(rd.fd);
	ca_blob_free(blob);
	ca_chunksrc_free(cs);
	ca_index_free(idx);
}

int main(void)
{
	if (!testdata_have("casync")) {
		printf("1..0 # SKIP casync not installed\n");
		return 0;
	}
	snprintf(base, sizeof(base), "%s/cafs-catar-ra.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(base)) {
		check(!"mkdtemp");
		return tap_done();
	}
	char tree[300], catar[300], caidx[300], store[300];
	snprintf(tree, sizeof(tree), "%s/tree", base);
	snprintf(catar, sizeof(catar), "%s/t.catar", base);
	snprintf(caidx, sizeof(caidx), "%s/t.caidx", base);
	snprintf(store, sizeof(store), "%s/t.castr", base);
	check_int(tt_make_tree(base, 0), ==, 0);
	check_int(testdata_sh("casync make '%s' '%s' >/dev/null", catar, tree), ==, 0);
	check_int(testdata_sh("casync make --chunk-size=4096:16384:65536 --store='%s' '%s' '%s' >/dev/null", store, caidx,
	                 tree),
	          ==, 0);
	collect(tree, "");
	check(n_paths > 400);

	test_catar(catar, tree);
	test_stream(catar, tree);
	test_caidx(caidx, store, catar);

	testdata_sh("rm -rf '%s'", base);
	return tap_done();
}
